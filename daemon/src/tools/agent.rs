//! `agent.list_subagents`: the registry's agents with what they need and whether they can be
//! dispatched over MCP under the current config (and if not, why); `agent.run_subagent`: one
//! fresh run of an agent (Act policy, listed only when an LLM is configured; see
//! `tools::subagent`).

use futures::FutureExt;
use serde_json::{Value, json};

use super::subagent as runner;
use super::{Annotations, Policy, ToolDef, ToolFailure, always};
use crate::agents::dispatchability;
use openhuman_mcp::args::{ArgSpec, Field};

/// An agent run changes things in the world (through its model and the web) and is not
/// repeatable.
const RUN_ANNOTATIONS: Annotations =
    Annotations { read_only: false, destructive: Some(true), idempotent: Some(false), open_world: true };
/// Longest prompt accepted for one run.
const PROMPT_CHARS: usize = 64 * 1024;

pub(crate) fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
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
        },
        ToolDef {
            name: "agent.run_subagent",
            title: "Run a subagent",
            description: "Run one of OpenHuman's subagents (see agent.list_subagents) on a prompt: a fresh \
                      single-turn session in which the agent may call its read tools (memory, web) a bounded \
                      number of times, then answers. Returns the agent's final text, the tool steps it took and \
                      its session tag. Sends progress per step when asked; cancelling stops the run.",
            policy: Policy::Act,
            annotations: RUN_ANNOTATIONS,
            args: ArgSpec::new(vec![
                Field::string("agent_id", "The agent to run, e.g. researcher (ids from agent.list_subagents).")
                    .required()
                    .max_chars(64),
                Field::string("prompt", "The task or question for the agent.").required().max_chars(PROMPT_CHARS),
            ]),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "agent_id": { "type": "string" },
                    "response": { "type": "string" },
                    "steps": { "type": "array", "items": { "type": "object", "properties": {
                        "tool": { "type": "string" }, "arguments": {}, "ok": { "type": "boolean" },
                        "error": { "type": "string" }
                    }, "required": ["tool", "arguments", "ok"] } },
                    "session": { "type": "string" },
                    "model": { "type": "string" }
                },
                "required": ["agent_id", "response", "steps", "session"]
            })),
            available: openhuman_providers::llm::configured,
            handler: |state, args, ctx| {
                async move {
                    let agent_id = args["agent_id"].as_str().unwrap_or_default().trim().to_string();
                    let prompt = args["prompt"].as_str().unwrap_or_default().to_string();
                    runner::run(state, &agent_id, &prompt, ctx).await.map_err(ToolFailure::Tool)
                }
                .boxed()
            },
        },
    ]
}
