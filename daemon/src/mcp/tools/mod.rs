//! The MCP tool catalog and `tools/list` / `tools/call`. Each tool family lives in its own file
//! and contributes `ToolDef`s; this file owns listing (which tools are usable under the current
//! config), the call path (params shape → policy → argument validation → handler), and turning
//! handler outcomes into MCP results.

mod agent;
pub mod args;
mod core;
mod memory;
pub mod write;

use std::sync::LazyLock;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::context::RequestCtx;
use super::protocol::RpcError;
use crate::config::Config;
use crate::state::AppState;
use args::ArgSpec;

/// What a tool needs from the security policy (SPEC §10).
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

pub fn listed_names(config: &Config) -> Vec<&'static str> {
    listed(config).into_iter().map(|t| t.name).collect()
}

/// `tools/list`: one page, deterministic order.
pub fn list(state: &AppState, params: &Map<String, Value>) -> Result<Value, RpcError> {
    super::reject_cursor(params)?;
    let tools: Vec<Value> = listed(&state.config()).into_iter().map(ToolDef::to_json).collect();
    Ok(json!({ "tools": tools }))
}

/// `tools/call`: shape of params → tool lookup → argument validation → handler.
pub async fn call(state: AppState, params: Map<String, Value>, ctx: RequestCtx) -> Result<Value, RpcError> {
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
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(RpcError::invalid_params("`params.arguments` must be an object of named arguments"));
        }
    };
    let config = state.config();
    let Some(tool) = listed(&config).into_iter().find(|t| t.name == name) else {
        let hint = if ALL.iter().any(|t| t.name == name) {
            "it exists but is not available under the current configuration (see the README for the key that enables it)"
        } else {
            "tools/list shows the available tools"
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
            return Ok(tool_error(&msg));
        }
    };
    if tool.policy == Policy::Act
        && let Err(denial) = state.limiter().admit(&config)
    {
        tracing::info!(tool = tool.name, source = %ctx.source, "act call denied by policy");
        reject(&denial);
        return Err(RpcError::invalid_params(denial).with_data(json!({ "tool": name, "policy": "act" })));
    }
    drop(config);
    match (tool.handler)(state.clone(), args, ctx.clone()).await {
        Ok(value) => Ok(tool_result(value)),
        Err(ToolFailure::Tool(msg)) => {
            reject(&msg);
            Ok(tool_error(&msg))
        }
        Err(ToolFailure::Rpc(e)) => {
            reject(&e.message);
            Err(e)
        }
    }
}

/// A successful result: the JSON as text content and as `structuredContent`.
pub fn tool_result(value: Value) -> Value {
    let text = serde_json::to_string(&value).unwrap_or_default();
    json!({ "content": [{ "type": "text", "text": text }], "structuredContent": value, "isError": false })
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
}
