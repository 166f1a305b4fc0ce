//! The MCP tool catalog and `tools/list` / `tools/call`. Each tool family lives in its own file
//! and contributes `ToolDef`s; this file owns listing (which tools are usable under the current
//! config), the call path (params shape → policy → argument validation → handler), and turning
//! handler outcomes into MCP results.

mod agent;
pub mod args;
mod core;
mod memory;
mod web;
pub mod write;

use std::sync::{Arc, LazyLock, Mutex, Weak};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::context::RequestCtx;
use super::protocol::{Payload, RpcError};
use crate::state::AppState;
use args::ArgSpec;
use openhuman_config::Config;

/// What a tool needs from the security policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Read,
    Act,
}

/// MCP tool annotations (hints for clients).
#[derive(Debug, Clone, Copy)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: bool,
}

impl Annotations {
    pub const READ: Annotations =
        Annotations { read_only: true, destructive: None, idempotent: None, open_world: false };
    pub const WEB: Annotations = Annotations { read_only: true, destructive: None, idempotent: None, open_world: true };

    fn to_json(self, title: &str) -> Value {
        let mut a = json!({ "title": title, "readOnlyHint": self.read_only, "openWorldHint": self.open_world });
        if let Some(d) = self.destructive {
            a["destructiveHint"] = Value::from(d);
        }
        if let Some(i) = self.idempotent {
            a["idempotentHint"] = Value::from(i);
        }
        a
    }
}

/// A failed tool call: either a tool-level failure (`isError: true`, the client's model reads the
/// text) or a protocol error.
#[derive(Debug)]
pub enum ToolFailure {
    Tool(String),
    Rpc(RpcError),
}

pub type ToolOutcome = Result<Value, ToolFailure>;
pub type Handler = fn(AppState, Map<String, Value>, RequestCtx) -> BoxFuture<'static, ToolOutcome>;

pub struct ToolDef {
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
    pub fn to_json(&self) -> Value {
        let mut t = json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.args.json_schema(),
            "annotations": self.annotations.to_json(self.title),
        });
        if let Some(s) = &self.output_schema {
            t["outputSchema"] = s.clone();
        }
        t
    }
}

pub fn always(_: &Config) -> bool {
    true
}

static ALL: LazyLock<Vec<ToolDef>> = LazyLock::new(|| {
    let mut all = Vec::new();
    all.extend(core::tools());
    all.extend(memory::tools());
    all.extend(write::tools());
    all.extend(agent::tools());
    all.extend(web::tools());
    #[cfg(test)]
    all.extend(test_tools::tools());
    all
});

/// Every tool this build knows, usable or not.
pub fn all_tools() -> &'static [ToolDef] {
    &ALL
}

/// The tools listed under `config`, in catalog order.
pub fn listed(config: &Config) -> Vec<&'static ToolDef> {
    ALL.iter().filter(|t| (t.available)(config)).collect()
}

/// Each tool's `tools/list` entry, rendered once: schemas never depend on config.
static RENDERED: LazyLock<Vec<Value>> = LazyLock::new(|| ALL.iter().map(ToolDef::to_json).collect());

impl ToolDef {
    /// The cached `tools/list` entry of this tool.
    pub fn rendered(&self) -> &'static Value {
        let i = ALL.iter().position(|t| std::ptr::eq(t, self)).unwrap_or_default();
        &RENDERED[i]
    }
}

pub fn listed_names(config: &Config) -> Vec<&'static str> {
    listed(config).into_iter().map(|t| t.name).collect()
}

/// `tools/list`: one page, deterministic order.
pub fn list(state: &AppState, params: &Map<String, Value>) -> Result<Value, RpcError> {
    super::reject_cursor(params)?;
    let tools: Vec<Value> = listed(&state.config()).into_iter().map(|t| t.rendered().clone()).collect();
    let mut m = Map::with_capacity(1);
    m.insert("tools".into(), Value::Array(tools));
    Ok(Value::Object(m))
}

/// `tools/call`: shape of params → tool lookup → argument validation → handler. A success comes
/// back as final JSON text shaped for the request's era; failures as values.
pub async fn call(state: AppState, mut params: Map<String, Value>, ctx: RequestCtx) -> Result<Payload, RpcError> {
    let name = match params.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.clone(),
        Some(Value::String(_)) => {
            return Err(RpcError::invalid_params("`params.name` must not be blank"));
        }
        Some(_) => {
            return Err(RpcError::invalid_params("`params.name` must be a string naming a tool"));
        }
        None => {
            return Err(RpcError::invalid_params("missing `params.name`: the tool to call"));
        }
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(RpcError::invalid_params("`params.arguments` must be an object of named arguments"));
        }
    };
    let config = state.config();
    // Only the named tool's availability is worked out (some checks read the environment).
    let known = ALL.iter().find(|t| t.name == name);
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
            row.error = Some(msg.to_string());
            state.audit().record(row);
        }
    };
    let args = match tool.args.validate(&arguments) {
        Ok(a) => a,
        Err(msg) => {
            let msg = format!("invalid arguments for {name}: {msg}");
            reject(&msg);
            return Ok(tool_error(&msg).into());
        }
    };
    if tool.policy == Policy::Act
        && let Err(denial) = state.limiter().admit(&config)
    {
        tracing::info!(tool = tool.name, source = %ctx.source, "act call denied by policy");
        reject(&denial);
        return Err(RpcError::invalid_params(denial).with_data(json!({ "tool": name, "policy": "act" })));
    }
    let modern = ctx.era.is_modern();
    let cacheable = CONFIG_ONLY.contains(&tool.name);
    if cacheable && let Some(text) = RESULTS.get(&config, tool.name, modern) {
        return Ok(Payload::Json(text));
    }
    match (tool.handler)(state.clone(), args, ctx.clone()).await {
        Ok(value) => {
            let lead = LEAD_TEXT.iter().find(|(t, _)| *t == tool.name).and_then(|(_, f)| value[*f].as_str());
            let text: Arc<str> = tool_result(&value, lead, modern).into();
            if cacheable {
                RESULTS.put(&config, tool.name, modern, text.clone());
            }
            Ok(Payload::Json(text))
        }
        Err(ToolFailure::Tool(msg)) => {
            reject(&msg);
            Ok(tool_error(&msg).into())
        }
        Err(ToolFailure::Rpc(e)) => {
            reject(&e.message);
            Err(e)
        }
    }
}

/// A successful result as final JSON text: `content` holds the JSON as a text block (after the
/// lead text, for tools whose answer is prose) and `structuredContent` holds the same JSON. The
/// value is serialised once; the text block is that serialisation as a JSON string. Results of
/// 2026-07-28 requests end with `"resultType":"complete"`.
fn tool_result(value: &Value, lead: Option<&str>, modern: bool) -> String {
    let json = serde_json::to_string(value).unwrap_or_default();
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut out = String::with_capacity(json.len() * 2 + 96);
    out.push_str(r#"{"content":["#);
    if let Some(lead) = lead {
        out.push_str(r#"{"type":"text","text":"#);
        out.push_str(&quoted(lead));
        out.push_str("},");
    }
    out.push_str(r#"{"type":"text","text":"#);
    out.push_str(&quoted(&json));
    out.push_str(r#"}],"structuredContent":"#);
    out.push_str(&json);
    out.push_str(r#","isError":false"#);
    if modern {
        out.push_str(r#","resultType":"complete""#);
    }
    out.push('}');
    out
}

/// Tools whose result depends on nothing but the config: their results are kept, serialised,
/// until the config is reloaded.
const CONFIG_ONLY: &[&str] = &["core.list_tools", "core.tool_instructions"];

/// Serialised results of `CONFIG_ONLY` tools, by config, tool and era. An entry names its config
/// by a `Weak`, which keeps the allocation (and so the address) from being reused while the
/// entry exists; entries of configs no longer in use are dropped when the next one is stored.
struct ResultCache(Mutex<Vec<CacheEntry>>);

struct CacheEntry {
    config: Weak<Config>,
    tool: &'static str,
    modern: bool,
    text: Arc<str>,
}

static RESULTS: ResultCache = ResultCache(Mutex::new(Vec::new()));

impl ResultCache {
    fn get(&self, config: &Arc<Config>, tool: &str, modern: bool) -> Option<Arc<str>> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let config = Arc::downgrade(config);
        entries
            .iter()
            .find(|e| e.tool == tool && e.modern == modern && Weak::ptr_eq(&e.config, &config))
            .map(|e| e.text.clone())
    }

    fn put(&self, config: &Arc<Config>, tool: &'static str, modern: bool, text: Arc<str>) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|e| e.config.strong_count() > 0);
        let config = Arc::downgrade(config);
        if !entries.iter().any(|e| e.tool == tool && e.modern == modern && Weak::ptr_eq(&e.config, &config)) {
            entries.push(CacheEntry { config, tool, modern, text });
        }
    }
}

/// Why a known tool is not listed under `config`: the key to set, where the tool's family knows it.
fn unavailable(name: &str, config: &Config) -> String {
    let specific = match name {
        "agent.run_subagent" => openhuman_providers::llm::usable(config).err().map(|e| e.to_string()),
        "searxng_search" | "web_search" | "web_answer" => web::unavailable(name, config),
        _ => None,
    };
    specific.unwrap_or_else(|| "see the README for the key that enables it".to_string())
}

/// Tools whose result is prose: their content leads with that text (the field named here), then
/// carries the JSON as usual, so a client that shows only the first block shows the answer.
const LEAD_TEXT: &[(&str, &str)] = &[("agent.run_subagent", "response"), ("web_answer", "answer")];

/// Runs a listed read tool in-process for a subagent: the same lookup, argument validation and
/// handler as `tools/call`, without the MCP envelope. Only tools in `allowed` (the agent's
/// declared tools) that subagents may use at all are reachable, so an agent can never reach a
/// write tool or `agent.run_subagent`. Err is a text for the model to read.
pub async fn run_for_agent(
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

/// A tool-level failure the client's model can read and act on.
pub fn tool_error(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

/// A slow tool that exists only in unit-test builds, to exercise concurrency, progress and
/// cancellation in the dispatcher. It is never compiled into the binaries.
#[cfg(test)]
pub mod test_tools {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::FutureExt;
    use serde_json::json;

    use super::args::{ArgSpec, Field};
    use super::{Annotations, Policy, ToolDef, always};

    /// How many `test.sleep` runs were dropped before finishing (i.e. cancelled).
    pub static DROPPED: AtomicUsize = AtomicUsize::new(0);

    struct DropCounter(bool);
    impl Drop for DropCounter {
        fn drop(&mut self) {
            if !self.0 {
                DROPPED.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    pub fn tools() -> Vec<ToolDef> {
        vec![ToolDef {
            name: "test.sleep",
            title: "Sleep (tests only)",
            description: "Sleeps, reporting progress every step.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: ArgSpec::new(vec![Field::int("steps", "steps of 10 ms", 1, 100_000).required()]),
            output_schema: None,
            available: always,
            handler: |_state, args, ctx| {
                async move {
                    let mut guard = DropCounter(false);
                    let steps = args["steps"].as_i64().unwrap_or(1);
                    for i in 0..steps {
                        ctx.progress(i as f64, Some(steps as f64), Some("sleeping")).await;
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                    guard.0 = true;
                    Ok(json!({ "slept_steps": steps }))
                }
                .boxed()
            },
        }]
    }
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
    fn a_result_carries_its_json_as_text_and_as_structured_content() {
        let value = json!({ "answer": "Paris, \"the\" capital", "n": [1, 2], "nested": { "s": "a\nb" } });
        for modern in [false, true] {
            let r: Value = serde_json::from_str(&tool_result(&value, None, modern)).unwrap();
            assert_eq!(r["structuredContent"], value);
            assert_eq!(r["isError"], false);
            let blocks = r["content"].as_array().unwrap();
            assert_eq!(blocks.len(), 1);
            assert_eq!(blocks[0]["type"], "text");
            assert_eq!(serde_json::from_str::<Value>(blocks[0]["text"].as_str().unwrap()).unwrap(), value);
            assert_eq!(r.get("resultType").is_some(), modern);
        }
        let r: Value = serde_json::from_str(&tool_result(&value, value["answer"].as_str(), true)).unwrap();
        assert_eq!(r["content"][0]["text"], "Paris, \"the\" capital");
        assert_eq!(r["content"].as_array().unwrap().len(), 2);
        assert_eq!(r["resultType"], "complete");
    }

    #[test]
    fn config_only_results_are_kept_per_config_and_era() {
        let a = Arc::new(Config::default());
        let b = Arc::new(Config::default());
        let cache = ResultCache(Mutex::new(Vec::new()));
        cache.put(&a, "core.list_tools", false, "{\"x\":1}".into());
        assert_eq!(cache.get(&a, "core.list_tools", false).as_deref(), Some("{\"x\":1}"));
        assert!(cache.get(&a, "core.list_tools", true).is_none(), "the other era has its own entry");
        assert!(cache.get(&b, "core.list_tools", false).is_none(), "a reloaded config starts empty");
        assert!(cache.get(&a, "core.tool_instructions", false).is_none());
        drop(a);
        cache.put(&b, "core.list_tools", false, "{}".into());
        let entries = cache.0.lock().unwrap();
        assert!(entries.iter().all(|e| e.config.strong_count() > 0), "entries of dropped configs are gone");
    }
}
