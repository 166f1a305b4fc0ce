//! A tool set per client: which `[clients.<name>]` entry a caller gets (by its authenticated
//! principal, else the `clientInfo.name` of its session or stateless request, else the `"*"`
//! entry), what it then sees of tools, resources and prompts, the autonomy level its calls run
//! under, and the refusal (a [`Denial`], audited) of a call outside its set. A caller no entry
//! matches sees everything at `[autonomy].level`, as with no `[clients]` at all. The matching
//! itself is `openhuman_config::clients`.

use serde_json::{Map, Value, json};

use openhuman_config::clients::{self, Caller, Kind, Matched};
use openhuman_config::{Config, clients::toml_key};
use openhuman_mcp::{RequestCtx, RpcError, Session};

use crate::policy::{Denial, Level};
use crate::state::AppState;

/// Who asks, as the daemon knows it: an authenticated principal and the client's own name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Who {
    /// `oauth:<client_id>` when the request came with an access token the server validated.
    pub principal: Option<String>,
    /// `clientInfo.name` as the client sent it.
    pub name: Option<String>,
}

impl Who {
    /// The caller of a request: the stateless era's `_meta` client, else its session's.
    pub(crate) fn of(ctx: &RequestCtx) -> Who {
        Who { principal: principal(ctx), name: name_in(ctx.client_info.as_ref()) }
    }

    /// The client of a handshake-era session (what a reload compares per session).
    pub(crate) fn of_session(session: &Session) -> Who {
        Who { principal: oauth_principal(session.auth().as_deref()), name: name_in(session.client_info().as_ref()) }
    }

    /// The entry that applies, if any.
    pub(crate) fn entry<'a>(&self, config: &'a Config) -> Option<Matched<'a>> {
        let caller = Caller { principal: self.principal.as_deref(), client_name: self.name.as_deref() };
        clients::resolve(&config.clients, caller)
    }

    /// Whether this caller sees `name` (a tool, a resource URI or template, a prompt).
    pub(crate) fn sees(&self, config: &Config, kind: Kind, name: &str) -> bool {
        self.entry(config).is_none_or(|m| m.profile.allows(kind, name))
    }

    /// Ok when `name` is in the caller's set; else the denial naming the entry and its keys.
    pub(crate) fn admit(&self, config: &Config, kind: Kind, name: &str) -> Result<(), Denial> {
        let Some(m) = self.entry(config) else { return Ok(()) };
        if m.profile.allows(kind, name) {
            return Ok(());
        }
        let (allow_key, deny_key) = kind.keys();
        let by = if m.by == clients::ANY_CLIENT {
            "being a client no other entry names".to_string()
        } else if m.by.contains(':') {
            format!("the principal `{}`", m.by)
        } else {
            format!("the client name `{}`", self.name.as_deref().unwrap_or(m.by))
        };
        Err(Denial::OutsideSet {
            kind: match kind {
                Kind::Tool => "tool",
                Kind::Resource => "resource",
                Kind::Prompt => "prompt",
            },
            name: name.to_string(),
            entry: entry_key(m.entry),
            by,
            allow_key,
            deny_key,
        })
    }

    /// The level this caller's Act calls run under.
    pub(crate) fn level(&self, config: &Config) -> Level {
        match self.entry(config) {
            Some(m) if m.profile.level.is_some() => {
                Level { level: m.profile.level.unwrap_or(config.autonomy.level), entry: Some(entry_key(m.entry)) }
            }
            _ => Level::global(config),
        }
    }
}

/// `clients.<name>` as the config file writes the table's key.
pub(crate) fn entry_key(entry: &str) -> String {
    format!("clients.{}", toml_key(entry))
}

/// The authenticated principal of a request: `oauth:<client_id>` when the HTTP transport
/// validated an OAuth access token that names its client, so `names = ["oauth:<client_id>"]` in
/// an entry matches that client whatever name it gives. The static bearer token, the socket and
/// stdio establish none. A per-token profile would be `token:<label>` the same way.
fn principal(ctx: &RequestCtx) -> Option<String> {
    oauth_principal(ctx.auth.as_deref())
}

fn oauth_principal(auth: Option<&openhuman_mcp::AuthInfo>) -> Option<String> {
    auth.and_then(|a| a.client_id.as_deref()).map(|id| format!("oauth:{id}"))
}

fn name_in(info: Option<&Value>) -> Option<String> {
    info.and_then(|i| i.get("name")).and_then(Value::as_str).map(str::to_string)
}

/// A refused call: its audit row (every refusal leaves one, whatever the tool; no arguments'
/// content, only `summary`) and the -32602 the client gets.
pub(crate) fn refuse(state: &AppState, ctx: &RequestCtx, what: &str, summary: Value, denial: &Denial) -> RpcError {
    let text = denial.to_string();
    tracing::info!(what, source = %ctx.source, "call outside the client's set refused");
    let row = openhuman_memory::AuditRow {
        ts_ms: chrono::Utc::now().timestamp_millis(),
        tool: what.to_string(),
        source: ctx.source.clone(),
        client_info: ctx.client_info.clone().unwrap_or(Value::Null),
        success: false,
        error: Some(text.clone()),
        result_id: None,
        args_summary: summary,
        machine: None,
        person: None,
    };
    state.audit().record(row);
    let mut data = Map::new();
    if let Denial::OutsideSet { kind, name, entry, .. } = denial {
        data.insert((*kind).into(), Value::from(name.as_str()));
        data.insert("client_entry".into(), Value::from(entry.as_str()));
    }
    data.insert("policy".into(), Value::from("client"));
    RpcError::invalid_params(text).with_data(Value::Object(data))
}

/// A short argument summary of a refused resource read or prompt: what was asked for, never
/// arguments' values.
pub(crate) fn asked(key: &str, value: &str) -> Value {
    json!({ key: openhuman_common::truncate_bytes(value, 256) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, text).unwrap();
        openhuman_config::load_with_env(&file, &[]).unwrap().config
    }

    fn who(name: &str) -> Who {
        Who { principal: None, name: Some(name.into()) }
    }

    #[test]
    fn refusals_name_the_entry_and_its_keys() {
        let c = config("[clients.cursor]\nnames = [\"cursor-vscode\"]\ntools = [\"memory.*\"]\nlevel = \"readonly\"\n");
        let w = who("Cursor-VSCode");
        assert!(w.admit(&c, Kind::Tool, "memory.search").is_ok());
        let text = w.admit(&c, Kind::Tool, "tree.tag").unwrap_err().to_string();
        assert!(text.starts_with(Denial::PREFIX), "{text}");
        for needle in ["tool `tree.tag`", "[clients.cursor]", "`Cursor-VSCode`", "`clients.cursor.tools`", "deny_tools"]
        {
            assert!(text.contains(needle), "{needle} in {text}");
        }
        assert_eq!(
            w.level(&c),
            Level { level: openhuman_config::AutonomyLevel::Readonly, entry: Some("clients.cursor".into()) }
        );
        let other = who("zed");
        assert!(other.admit(&c, Kind::Tool, "tree.tag").is_ok(), "no entry: today's behaviour");
        assert_eq!(other.level(&c), Level::global(&c));
    }

    #[test]
    fn the_star_entry_is_said_as_such() {
        let c = config("[clients.\"*\"]\ndeny_resources = [\"openhuman://memory*\"]\n");
        let text = who("anyone").admit(&c, Kind::Resource, "openhuman://memory/abc").unwrap_err().to_string();
        assert!(text.contains("[clients.\"*\"]") && text.contains("no other entry names"), "{text}");
        assert!(text.contains("`clients.\"*\".deny_resources`"), "{text}");
    }
}
