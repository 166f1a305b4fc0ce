//! Runs one subagent: a fresh session tagged `mcp:<agent_id>:<uuid>`, the agent's
//! prompt as system, the caller's prompt as user, then a bounded loop in which the model may call
//! the read tools the agent declares (those listed right now), each run in-process through the
//! same validation and handlers as `tools/call`. The last round still offers the tools (the
//! history refers to them) but asks for text, so a run makes at most `max_iterations` LLM calls.
//! Progress goes to the caller per step; cancellation drops the in-flight LLM request.

use serde_json::{Value, json};

use crate::state::AppState;
use crate::tools::{self, Policy};
use openhuman_mcp::RequestCtx;
use openhuman_providers::llm::{Llm, Message, Request, ToolSpec};

/// Longest tool result handed back to the model, in characters; the rest is cut with a note.
const RESULT_CHARS: usize = 16_000;

tokio::task_local! {
    /// The session tag of the subagent run the current task belongs to.
    static SESSION: String;
}

/// The subagent session the current task runs in, if any. Tools use it to skip work meant for
/// people (e.g. the LLM-written answer of `memory.recall`: the agent's own model reads the chunks).
pub(crate) fn current_session() -> Option<String> {
    SESSION.try_with(Clone::clone).ok()
}

/// A tool name as both LLM APIs accept it (`^[A-Za-z0-9_-]+$`): `memory.search` → `memory_search`.
pub(crate) fn wire_name(tool: &str) -> String {
    tool.replace('.', "_")
}

/// Runs `agent_id` on `prompt`. Err is a text for the caller (an `isError` result).
pub(crate) async fn run(state: AppState, agent_id: &str, prompt: &str, ctx: RequestCtx) -> Result<Value, String> {
    let registry = state.agents();
    let Some(agent) = registry.get(agent_id).cloned() else {
        let ids: Vec<&str> = registry.agents.keys().map(String::as_str).collect();
        return Err(format!("unknown agent `{agent_id}`; agent.list_subagents lists them: {}", ids.join(", ")));
    };
    drop(registry);
    let config = state.config();
    crate::agents::dispatchability(&agent, &config)
        .map_err(|why| format!("agent `{agent_id}` cannot be run over MCP: {why}"))?;
    let llm = Llm::from_config(&config).map_err(|e| e.to_string())?;
    let declared = &agent.manifest.tools;
    let tools: Vec<&tools::ToolDef> = tools::listed(&config)
        .into_iter()
        .filter(|t| {
            t.policy == Policy::Read
                && crate::agents::AGENT_TOOLS.contains(&t.name)
                && declared.iter().any(|d| d == t.name)
        })
        .collect();
    drop(config);
    let allowed: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    let specs: Vec<ToolSpec> = tools
        .iter()
        .map(|t| ToolSpec {
            name: wire_name(t.name),
            description: t.description.to_string(),
            parameters: t.args.json_schema(),
        })
        .collect();

    let session = format!("mcp:{agent_id}:{}", uuid::Uuid::new_v4());
    let max_rounds = agent.manifest.max_iterations.max(1);
    tracing::info!(agent = agent_id, %session, source = %ctx.source, model = %llm.label(), tools = ?allowed, "subagent run started");
    let outcome = SESSION
        .scope(
            session.clone(),
            rounds(&state, &ctx, &llm, &agent.prompt, prompt, agent_id, &allowed, &specs, max_rounds),
        )
        .await;
    match &outcome {
        Ok((_, steps)) => {
            tracing::info!(agent = agent_id, %session, source = %ctx.source, steps = steps.len(), "subagent run finished")
        }
        Err(e) => tracing::warn!(agent = agent_id, %session, source = %ctx.source, error = %e, "subagent run failed"),
    }
    let (response, steps) = outcome?;
    Ok(json!({ "agent_id": agent_id, "response": response, "steps": steps, "session": session, "model": llm.label() }))
}

#[allow(clippy::too_many_arguments)]
async fn rounds(
    state: &AppState,
    ctx: &RequestCtx,
    llm: &Llm,
    system: &str,
    prompt: &str,
    agent_id: &str,
    allowed: &[String],
    specs: &[ToolSpec],
    max_rounds: u32,
) -> Result<(String, Vec<Value>), String> {
    let mut messages = vec![Message::User(prompt.to_string())];
    let mut steps: Vec<Value> = Vec::new();
    let mut progress = 0.0;
    for round in 1..=max_rounds {
        let last = round == max_rounds;
        progress += 1.0;
        let what = format!("{agent_id}: asking {} (round {round} of at most {max_rounds})", llm.label());
        ctx.progress(progress, None, Some(&what)).await;
        let req = Request { system, messages: &messages, tools: specs, forbid_tools: last && !specs.is_empty() };
        // Cancellation drops this whole future (the dispatcher races it against the request's
        // token), which drops the in-flight HTTP request and closes its connection.
        let reply = llm.complete(&req).await.map_err(|e| e.to_string())?;
        if reply.calls.is_empty() || last {
            let text = reply.text.trim().to_string();
            if text.is_empty() {
                return Err(format!(
                    "{} gave no final answer after {round} round(s) and {} tool call(s)",
                    llm.label(),
                    steps.len()
                ));
            }
            return Ok((text, steps));
        }
        messages.push(Message::Assistant { text: reply.text.clone(), calls: reply.calls.clone() });
        for call in &reply.calls {
            let tool = allowed.iter().find(|a| wire_name(a) == call.name || **a == call.name);
            let result = match tool {
                Some(name) => tools::run_for_agent(state, allowed, name, call.arguments.clone(), ctx).await,
                None => Err(format!(
                    "there is no tool `{}` for this agent; available: {}",
                    call.name,
                    allowed.iter().map(|a| wire_name(a)).collect::<Vec<_>>().join(", ")
                )),
            };
            let tool_name = tool.cloned().unwrap_or_else(|| call.name.clone());
            let mut step = json!({ "tool": tool_name, "arguments": call.arguments, "ok": result.is_ok() });
            let (content, is_error) = match result {
                Ok(v) => (bounded(&serde_json::to_string(&v).unwrap_or_default()), false),
                Err(e) => {
                    step["error"] = json!(e);
                    (e, true)
                }
            };
            steps.push(step);
            progress += 1.0;
            let what = format!("{agent_id}: {tool_name} {}", if is_error { "failed" } else { "done" });
            ctx.progress(progress, None, Some(&what)).await;
            messages.push(Message::Tool { call_id: call.id.clone(), content, is_error });
        }
    }
    unreachable!("the last round always returns")
}

fn bounded(s: &str) -> String {
    let n = s.chars().count();
    if n <= RESULT_CHARS {
        return s.to_string();
    }
    let head: String = s.chars().take(RESULT_CHARS).collect();
    format!("{head}\n[truncated: {} more characters]", n - RESULT_CHARS)
}
