//! `core.list_tools` and `core.tool_instructions`: the catalog of tools a subagent gets (the
//! read tools usable right now, within the caller's `[clients]` set) as JSON, and the same catalog rendered as the markdown block that
//! is injected into prompt-guided agents that have no native tool calling.

use futures::FutureExt;
use serde_json::{Value, json};

use super::{Annotations, Policy, ToolDef, ToolOutcome, always};
use crate::agents::AGENT_TOOLS;
use crate::clients::Who;
use openhuman_config::Config;
use openhuman_config::clients::Kind;
use openhuman_mcp::args::ArgSpec;

pub(crate) fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "core.list_tools",
            title: "List agent tools",
            description: "List the tools that OpenHuman's subagents can call right now (read tools only), \
                          with their descriptions and JSON input schemas.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: ArgSpec::none(),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "count": { "type": "integer" },
                    "tools": { "type": "array", "items": { "type": "object", "properties": {
                        "name": { "type": "string" }, "description": { "type": "string" }, "parameters": { "type": "object" }
                    }, "required": ["name", "description", "parameters"] } }
                },
                "required": ["count", "tools"]
            })),
            available: always,
            handler: |state, _args, ctx| async move { list_tools(&state.config(), &Who::of(&ctx)) }.boxed(),
        },
        ToolDef {
            name: "core.tool_instructions",
            title: "Tool-use instructions",
            description: "The markdown tool-use block that OpenHuman injects into prompt-guided agents: \
                          the calling convention and every available agent tool with its parameters.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: ArgSpec::none(),
            output_schema: Some(json!({
                "type": "object",
                "properties": { "markdown": { "type": "string" }, "tool_count": { "type": "integer" } },
                "required": ["markdown", "tool_count"]
            })),
            available: always,
            handler: |state, _args, ctx| async move { instructions(&state.config(), &Who::of(&ctx)) }.boxed(),
        },
    ]
}

/// The agent tool catalog: the read tools subagents may use that are listed under `config`.
pub(crate) fn agent_catalog(config: &Config) -> Vec<&'static ToolDef> {
    super::listed(config).into_iter().filter(|t| t.policy == Policy::Read && AGENT_TOOLS.contains(&t.name)).collect()
}

/// [`agent_catalog`] as `who` sees it: within its client entry's set, as `tools/list` is.
fn catalog_for(config: &Config, who: &Who) -> Vec<&'static ToolDef> {
    agent_catalog(config).into_iter().filter(|t| who.sees(config, Kind::Tool, t.name)).collect()
}

fn list_tools(config: &Config, who: &Who) -> ToolOutcome {
    let tools: Vec<Value> = catalog_for(config, who)
        .into_iter()
        .map(|t| {
            let mut m = serde_json::Map::with_capacity(3);
            m.insert("name".into(), Value::from(t.name));
            m.insert("description".into(), Value::from(t.description));
            m.insert("parameters".into(), t.rendered()["inputSchema"].clone());
            Value::Object(m)
        })
        .collect();
    let mut out = serde_json::Map::with_capacity(2);
    out.insert("count".into(), Value::from(tools.len()));
    out.insert("tools".into(), Value::Array(tools));
    Ok(Value::Object(out))
}

pub(super) fn instructions(config: &Config, who: &Who) -> ToolOutcome {
    let tools = catalog_for(config, who);
    let mut md = String::from(
        "## Tool use\n\n\
         You can call tools to look things up before you answer. To call one, reply with exactly one \
         block of this form and nothing after it:\n\n\
         <tool_call>\n{\"name\": \"<tool name>\", \"arguments\": { ... }}\n</tool_call>\n\n\
         The result comes back in a <tool_result> block. Call one tool at a time, only with the \
         arguments listed for it, and stop calling tools once you can answer. Cite what you use: \
         memory chunks as [chunk:<id>], web pages by URL.\n\n### Available tools\n",
    );
    if tools.is_empty() {
        md.push_str("\nNo tools are available right now; answer from the conversation alone.\n");
    }
    for t in &tools {
        let schema = serde_json::to_string_pretty(&t.rendered()["inputSchema"]).unwrap_or_default();
        md.push_str(&format!(
            "\n#### `{}`\n\n{}\n\nArguments (JSON Schema):\n\n```json\n{}\n```\n",
            t.name, t.description, schema
        ));
    }
    Ok(json!({ "markdown": md, "tool_count": tools.len() }))
}
