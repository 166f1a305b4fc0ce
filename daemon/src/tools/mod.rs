//! The MCP tool catalog and `tools/list` / `tools/call`. Each tool family lives in its own file
//! and contributes `ToolDef`s; this file owns listing (which tools are usable under the current
//! config), the call path (tool lookup → argument validation → policy → handler), and turning
//! handler outcomes into MCP results with the protocol crate's result shapes.

mod agent;
mod catalog;
mod confirm;
mod memory;
mod scope;
pub(crate) mod subagent;
mod web;
pub(crate) mod write;

use std::sync::{Arc, LazyLock, Mutex, Weak};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use openhuman_config::Config;
use openhuman_mcp::args::ArgSpec;
use openhuman_mcp::tool::{self, Description};
pub(crate) use openhuman_mcp::tool::{Annotations, ToolFailure, ToolOutcome};
use openhuman_mcp::{Payload, RequestCtx, RpcError};

use crate::clients::Who;
use crate::state::AppState;
use openhuman_config::clients::Kind;

/// What a tool needs from the security policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    Read,
    Act,
}

pub(crate) type Handler = fn(AppState, Map<String, Value>, RequestCtx) -> BoxFuture<'static, ToolOutcome>;

pub(crate) struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub policy: Policy,
    pub annotations: Annotations,
    pub args: ArgSpec,
    pub output_schema: Option<Value>,
    /// Whether the tool is usable (and so listed) under a config.
    pub available: fn(&Config) -> bool,
    pub handler: Handler,
}

impl ToolDef {
    /// The `tools/list` entry.
    pub(crate) fn to_json(&self) -> Value {
        Description {
            name: self.name,
            title: self.title,
            description: self.description,
            args: &self.args,
            annotations: self.annotations,
            output_schema: self.output_schema.as_ref(),
        }
        .to_json()
    }
}

/// Arguments `call` validated against a tool's schema, as the parameter type that schema was
/// declared with (`what` names the tool in the message of the one way this fails: a Rust type
/// narrower than its schema).
pub(crate) fn typed<P: openhuman_schema::Params>(what: &str, args: Map<String, Value>) -> Result<P, ToolFailure> {
    P::from_checked(args).map_err(|e| ToolFailure::Tool(format!("invalid arguments for {what}: {e}")))
}

pub(crate) fn always(_: &Config) -> bool {
    true
}

static ALL: LazyLock<Vec<ToolDef>> = LazyLock::new(|| {
    let mut all = Vec::new();
    all.extend(catalog::tools());
    all.extend(memory::tools());
    all.extend(write::tools());
    all.extend(agent::tools());
    all.extend(web::tools());
    all
});

/// Every tool this build knows, usable or not.
pub(crate) fn all_tools() -> &'static [ToolDef] {
    &ALL
}

/// The tools listed under `config`, in catalog order.
pub(crate) fn listed(config: &Config) -> Vec<&'static ToolDef> {
    ALL.iter().filter(|t| (t.available)(config)).collect()
}

/// Each tool's `tools/list` entry, rendered once: schemas never depend on config.
static RENDERED: LazyLock<Vec<Value>> = LazyLock::new(|| ALL.iter().map(ToolDef::to_json).collect());

impl ToolDef {
    /// The cached `tools/list` entry of this tool.
    pub(crate) fn rendered(&self) -> &'static Value {
        let i = ALL.iter().position(|t| std::ptr::eq(t, self)).unwrap_or_default();
        &RENDERED[i]
    }
}

pub(crate) fn listed_names(config: &Config) -> Vec<&'static str> {
    listed(config).into_iter().map(|t| t.name).collect()
}

/// The `tools/list` entries under the current config, in catalog order.
pub(crate) fn list(state: &AppState) -> Vec<Value> {
    listed(&state.config()).into_iter().map(|t| t.rendered().clone()).collect()
}

/// The `tools/list` entries `who` sees: [`list`] narrowed to its client entry's set, in the
/// same (catalog) order, so the order is one across calls, reloads, clients and transports.
pub(crate) fn list_for(state: &AppState, who: &Who) -> Vec<Value> {
    let config = state.config();
    listed(&config)
        .into_iter()
        .filter(|t| who.sees(&config, Kind::Tool, t.name))
        .map(|t| t.rendered().clone())
        .collect()
}

/// `tools/call` after the protocol layer checked its params: tool lookup → the caller's set
/// (`[clients]`) → OAuth scope → argument validation → (Act) policy at the caller's level →
/// handler. A success comes back as final JSON text shaped for the request's era; failures as
/// values.
pub(crate) async fn call(
    state: AppState,
    name: String,
    arguments: Map<String, Value>,
    ctx: RequestCtx,
) -> Result<Payload, RpcError> {
    let config = state.config();
    // Only the named tool's availability is worked out (some checks read the environment).
    let known = ALL.iter().find(|t| t.name == name);
    let who = Who::of(&ctx);
    // Outside the caller's set is refused before anything else is said of the tool.
    if let Some(t) = known
        && let Err(denial) = who.admit(&config, Kind::Tool, t.name)
    {
        let summary = if write::AUDITED.contains(&t.name) { write::summarize(t.name, &arguments) } else { json!({}) };
        return Err(crate::clients::refuse(&state, &ctx, t.name, summary, &denial));
    }
    let Some(tool) = known.filter(|t| (t.available)(&config)) else {
        let hint = if known.is_some() {
            format!("it exists but is not available under the current configuration ({})", unavailable(&name, &config))
        } else {
            "tools/list shows the available tools".to_string()
        };
        return Err(
            RpcError::invalid_params(format!("unknown tool `{name}`: {hint}")).with_data(json!({ "tool": name }))
        );
    };
    // Every attempt of a write tool leaves one audit row; failures are recorded here, a success
    // by the write's own transaction.
    let audited = write::AUDITED.contains(&tool.name);
    let reject = |msg: &str| {
        if audited {
            let mut row = write::audit_row(tool.name, &ctx, &arguments);
            row.success = false;
            // Error texts quote what was sent (a bad namespace, unknown argument names).
            row.error = Some(openhuman_common::redact(msg, None));
            state.audit().record(row);
        }
    };
    // An OAuth token must grant the tool's scope (read, or act for writes, agents and web).
    if let Err(e) = scope::admit(&config, &ctx, tool) {
        reject(&e.message);
        return Err(e);
    }
    let args = match tool.args.validate(&arguments) {
        Ok(a) => a,
        Err(msg) => {
            let msg = format!("invalid arguments for {name}: {msg}");
            reject(&msg);
            return Ok(tool::error(&msg).into());
        }
    };
    if tool.policy == Policy::Act
        && let Err(denial) = state.limiter().admit_at_level(&config, &who.level(&config), acts_elsewhere(&state))
    {
        tracing::info!(tool = tool.name, source = %ctx.source, "act call denied by policy");
        let text = denial.to_string();
        reject(&text);
        return Err(RpcError::invalid_params(text).with_data(json!({ "tool": name, "policy": "act" })));
    }
    let modern = ctx.era.is_modern();
    let cacheable = CONFIG_ONLY.contains(&tool.name);
    // Their results follow the caller's set too: one entry per client entry (None: no entry).
    let set = who.entry(&config).map(|m| m.entry.to_string());
    if cacheable && let Some(text) = RESULTS.get(&config, set.as_deref(), tool.name, modern) {
        return Ok(Payload::Json(text));
    }
    match (tool.handler)(state.clone(), args, ctx.clone()).await {
        Ok(value) => {
            let lead = LEAD_TEXT.iter().find(|(t, _)| *t == tool.name).and_then(|(_, f)| value[*f].as_str());
            let text: Arc<str> = tool::result(&value, lead, modern).into();
            if cacheable {
                RESULTS.put(&config, set, tool.name, modern, text.clone());
            }
            Ok(Payload::Json(text))
        }
        Err(ToolFailure::Tool(msg)) => {
            reject(&msg);
            Ok(tool::error(&msg).into())
        }
        Err(ToolFailure::Rpc(e)) => {
            reject(&e.message);
            Err(e)
        }
    }
}

/// The gate `tools/call` puts before `tool`, for another surface that reads what the tool reads
/// (prompts, completions): the tool must be listed under the current config, and an Act tool
/// must be admitted by the policy. Err is the refusal, as `tools/call` would give it.
pub(crate) fn admit_as(state: &AppState, tool: &str) -> Result<(), RpcError> {
    let config = state.config();
    let Some(t) = ALL.iter().find(|t| t.name == tool) else {
        return Err(RpcError::internal(format!("no tool `{tool}` to check the policy of")));
    };
    if !(t.available)(&config) {
        return Err(RpcError::invalid_params(format!(
            "`{tool}` is not available under the current configuration ({})",
            unavailable(tool, &config)
        )));
    }
    if t.policy == Policy::Act
        && let Err(denial) = state.limiter().admit_shared(&config, acts_elsewhere(state))
    {
        return Err(RpcError::invalid_params(denial.to_string()).with_data(json!({ "tool": tool, "policy": "act" })));
    }
    Ok(())
}

/// Tools whose result depends on nothing but the config: their results are kept, serialised,
/// until the config is reloaded.
const CONFIG_ONLY: &[&str] = &["core.list_tools", "core.tool_instructions"];

/// Serialised results of `CONFIG_ONLY` tools, by config, client entry, tool and era. An entry
/// names its config by a `Weak`, which keeps the allocation (and so the address) from being
/// reused while the entry exists; entries of configs no longer in use are dropped when the next
/// one is stored.
struct ResultCache(Mutex<Vec<CacheEntry>>);

struct CacheEntry {
    config: Weak<Config>,
    /// The `[clients]` entry whose set the result was made for; None for callers of none.
    set: Option<String>,
    tool: &'static str,
    modern: bool,
    text: Arc<str>,
}

static RESULTS: ResultCache = ResultCache(Mutex::new(Vec::new()));

impl ResultCache {
    fn get(&self, config: &Arc<Config>, set: Option<&str>, tool: &str, modern: bool) -> Option<Arc<str>> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let config = Arc::downgrade(config);
        entries.iter().find(|e| e.is(&config, set, tool, modern)).map(|e| e.text.clone())
    }

    fn put(&self, config: &Arc<Config>, set: Option<String>, tool: &'static str, modern: bool, text: Arc<str>) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|e| e.config.strong_count() > 0);
        let config = Arc::downgrade(config);
        if !entries.iter().any(|e| e.is(&config, set.as_deref(), tool, modern)) {
            entries.push(CacheEntry { config, set, tool, modern, text });
        }
    }
}

impl CacheEntry {
    fn is(&self, config: &Weak<Config>, set: Option<&str>, tool: &str, modern: bool) -> bool {
        self.tool == tool && self.modern == modern && self.set.as_deref() == set && Weak::ptr_eq(&self.config, config)
    }
}

/// Why a known tool is not listed under `config`: the key to set, where the tool's family knows it.
fn unavailable(name: &str, config: &Config) -> String {
    let specific = match name {
        "agent.run_subagent" => openhuman_providers::llm::usable(config).err().map(|e| e.to_string()),
        "searxng_search" | "web_search" | "web_answer" => web::unavailable(name, config),
        _ => None,
    };
    specific.unwrap_or_else(|| "docs/configuration.md names the key that enables it".to_string())
}

/// Tools whose result is prose: their content leads with that text (the field named here), then
/// carries the JSON as usual, so a client that shows only the first block shows the answer.
const LEAD_TEXT: &[(&str, &str)] = &[("agent.run_subagent", "response"), ("web_answer", "answer")];

/// Runs a listed read tool in-process for a subagent: the same lookup, argument validation and
/// handler as `tools/call`, without the MCP envelope. Only tools in `allowed` (the agent's
/// declared tools) that subagents may use at all are reachable, so an agent can never reach a
/// write tool or `agent.run_subagent`. Err is a text for the model to read.
pub(crate) async fn run_for_agent(
    state: &AppState,
    allowed: &[String],
    name: &str,
    arguments: Value,
    ctx: &RequestCtx,
) -> Result<Value, String> {
    if !allowed.iter().any(|a| a == name) {
        return Err(format!("tool `{name}` is not available to this agent; use one of: {}", allowed.join(", ")));
    }
    let config = state.config();
    // A subagent acts for the client that started it: it reaches no tool outside that set.
    if let Err(denial) = Who::of(ctx).admit(&config, Kind::Tool, name) {
        return Err(denial.to_string());
    }
    let Some(tool) = ALL.iter().find(|t| {
        t.name == name
            && t.policy == Policy::Read
            && crate::agents::AGENT_TOOLS.contains(&t.name)
            && (t.available)(&config)
    }) else {
        return Err(format!("tool `{name}` is not available under the current configuration"));
    };
    drop(config);
    let arguments = match arguments {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(format!("the arguments of `{name}` must be a JSON object (got {})", short_json(&other)));
        }
    };
    let args = tool.args.validate(&arguments).map_err(|msg| format!("invalid arguments for {name}: {msg}"))?;
    // Progress belongs to the run, not to the tools inside it.
    let mut inner = ctx.clone();
    inner.progress_token = None;
    match (tool.handler)(state.clone(), args, inner).await {
        Ok(v) => Ok(v),
        Err(ToolFailure::Tool(msg)) => Err(msg),
        Err(ToolFailure::Rpc(e)) => Err(e.message),
    }
}

fn short_json(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 80 { s } else { format!("{}…", s.chars().take(80).collect::<String>()) }
}

/// Act calls other daemons sharing this memory made in the last hour (0 for the embedded engine):
/// one rate limit for all of them.
fn acts_elsewhere(state: &AppState) -> usize {
    state.memory().map(|m| m.acts_elsewhere(3_600_000)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_well_formed() {
        let mut names = std::collections::BTreeSet::new();
        for t in all_tools() {
            assert!(names.insert(t.name), "duplicate tool {}", t.name);
            let j = t.to_json();
            assert_eq!(j["inputSchema"]["type"], "object", "{}", t.name);
            assert_eq!(j["inputSchema"]["additionalProperties"], false, "{}", t.name);
            assert!(!t.title.is_empty() && !t.description.is_empty(), "{}", t.name);
            if t.policy == Policy::Read {
                assert_eq!(j["annotations"]["readOnlyHint"], true, "{}", t.name);
            }
        }
    }

    #[test]
    fn per_tool_lists_name_real_tools() {
        let lead = LEAD_TEXT.iter().map(|(t, _)| t);
        for name in CONFIG_ONLY.iter().chain(lead).chain(write::AUDITED) {
            assert!(all_tools().iter().any(|t| t.name == *name), "{name} is not a tool");
        }
    }

    #[test]
    fn config_only_results_are_kept_per_config_and_era() {
        let a = Arc::new(Config::default());
        let b = Arc::new(Config::default());
        let cache = ResultCache(Mutex::new(Vec::new()));
        cache.put(&a, None, "core.list_tools", false, "{\"x\":1}".into());
        assert_eq!(cache.get(&a, None, "core.list_tools", false).as_deref(), Some("{\"x\":1}"));
        assert!(cache.get(&a, None, "core.list_tools", true).is_none(), "the other era has its own entry");
        assert!(cache.get(&a, Some("cursor"), "core.list_tools", false).is_none(), "each client entry has its own");
        assert!(cache.get(&b, None, "core.list_tools", false).is_none(), "a reloaded config starts empty");
        assert!(cache.get(&a, None, "core.tool_instructions", false).is_none());
        drop(a);
        cache.put(&b, None, "core.list_tools", false, "{}".into());
        let entries = cache.0.lock().unwrap();
        assert!(entries.iter().all(|e| e.config.strong_count() > 0), "entries of dropped configs are gone");
    }

    /// The whole catalog as clients see it in `tools/list` (every tool, listed or not). A change
    /// here is a change clients see: review the diff, then `UPDATE_EXPECT=1 cargo test`.
    #[test]
    fn catalog_snapshot() {
        let all: Vec<Value> = all_tools().iter().map(|t| t.rendered().clone()).collect();
        let text = serde_json::to_string_pretty(&all).unwrap() + "\n";
        expect_test::expect_file!["snapshots/catalog.json"].assert_eq(&text);
    }

    /// The tool-use block injected into prompt-guided agents, under the default config.
    #[test]
    fn tool_instructions_snapshot() {
        let out = catalog::instructions(&Config::default(), &Who::default()).unwrap();
        let md = out["markdown"].as_str().unwrap();
        expect_test::expect_file!["snapshots/tool_instructions.md"].assert_eq(md);
    }

    /// What a client's model reads when it gets arguments wrong: each text names the argument
    /// and the bound.
    #[test]
    fn argument_error_texts() {
        let cases = [
            ("memory.search", json!({})),
            ("memory.search", json!({"query": "x", "k": 500})),
            ("memory.search", json!({"query": "x", "limit": 5})),
            ("memory.search", json!({"query": "   "})),
            ("memory.recall", json!({"query": "x", "filter": {"kinds": ["films"]}})),
            ("memory.recall", json!({"query": "x", "filter": {"colour": "red"}})),
            ("memory.store", json!({"title": "t", "content": 5})),
            ("tree.tag", json!({"chunk_id": "c", "tags": "one"})),
            ("core.list_tools", json!({"verbose": true})),
        ];
        let mut out = String::new();
        for (name, args) in cases {
            let tool = all_tools().iter().find(|t| t.name == name).unwrap();
            let text = match tool.args.validate(args.as_object().unwrap()) {
                Ok(_) => "accepted".to_string(),
                Err(e) => e.to_string(),
            };
            out.push_str(&format!("{name} {args}\n  -> {text}\n"));
        }
        expect_test::expect_file!["snapshots/argument_errors.txt"].assert_eq(&out);
    }
}
