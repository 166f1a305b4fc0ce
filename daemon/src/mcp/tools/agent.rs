//! `agent.list_subagents`: the registry's agents with what they need and whether they can be
//! dispatched over MCP under the current config (and if not, why).

use futures::FutureExt;
use serde_json::{Value, json};

use super::args::ArgSpec;
use super::{Annotations, Policy, ToolDef, always};
use crate::agents::dispatchability;

pub fn tools() -> Vec<ToolDef> {
    vec![ToolDef {
        name: "agent.list_subagents",
        title: "List subagents",
        description: "List OpenHuman's subagents (built-in and user-defined): id, name, description, the \
                      tools each may use, and whether it can be run over MCP right now (with the reason when not).",
        policy: Policy::Read,
        annotations: Annotations::READ,
        args: ArgSpec::none(),
        output_schema: Some(json!({
            "type": "object",
            "properties": {
                "count": { "type": "integer" },
                "agents": { "type": "array", "items": { "type": "object", "properties": {
                    "id": { "type": "string" }, "name": { "type": "string" }, "description": { "type": "string" },
                    "tools": { "type": "array", "items": { "type": "string" } },
                    "origin": { "type": "string", "enum": ["builtin", "user"] },
                    "dispatchable_over_mcp": { "type": "boolean" },
                    "reason": { "type": "string" }
                }, "required": ["id", "name", "description", "tools", "origin", "dispatchable_over_mcp"] } }
            },
            "required": ["count", "agents"]
        })),
        available: always,
        handler: |state, _args, _ctx| {
            async move {
                let config = state.config();
                let registry = state.agents();
                let agents: Vec<Value> = registry
                    .agents
                    .values()
                    .map(|a| {
                        let m = &a.manifest;
                        let mut v = json!({
                            "id": m.id, "name": m.name, "description": m.description, "tools": m.tools,
                            "max_iterations": m.max_iterations, "requires": m.requires, "origin": a.origin,
                        });
                        match dispatchability(a, &config) {
                            Ok(()) => v["dispatchable_over_mcp"] = Value::Bool(true),
                            Err(reason) => {
                                v["dispatchable_over_mcp"] = Value::Bool(false);
                                v["reason"] = Value::String(reason);
                            }
                        }
                        v
                    })
                    .collect();
                let mut out = json!({ "count": agents.len(), "agents": agents });
                if !registry.load_errors.is_empty() {
                    out["load_errors"] = json!(registry.load_errors);
                }
                Ok(out)
            }
            .boxed()
        },
    }]
}
