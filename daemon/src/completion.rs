//! `completion/complete` for the daemon's prompt arguments and resource-template variables:
//! `recall_context`'s `topic` from the entity and topic names in memory, its `token_budget` from
//! a few round budgets, a source id of `openhuman://source/{id}` from the stored sources, a
//! memory id of `openhuman://memory/{id}` from the stored chunk ids. Free-text arguments (a
//! subagent's task) get no suggestions. What memory holds is offered only past the gate of the
//! tool that would show it (`tree.top_entities`, `tree.list_sources`, `memory.list`).

use openhuman_mcp::RpcError;
use openhuman_mcp::prompts::{CompleteRequest, Completion, CompletionRef, MAX_COMPLETIONS};
use openhuman_memory::Completable;

use crate::engine::{MethodError, blocking};
use crate::state::AppState;

/// `token_budget` suggestions: round numbers within the accepted range.
const BUDGETS: &[usize] = &[500, 1000, 2000, 4000, 8000, 16000, 32000];

pub(crate) async fn complete(state: AppState, request: CompleteRequest) -> Result<Completion, RpcError> {
    let prefix = request.value.as_str();
    let (what, gate) = match (&request.reference, request.argument.as_str()) {
        (CompletionRef::Prompt(p), "topic") if p == crate::prompts::RECALL => (Completable::Topic, "tree.top_entities"),
        (CompletionRef::Prompt(p), "token_budget") if p == crate::prompts::RECALL => {
            let values: Vec<String> =
                BUDGETS.iter().map(usize::to_string).filter(|b| b.starts_with(prefix.trim())).collect();
            return Ok(Completion { values, total: None });
        }
        (CompletionRef::Resource(t), "id") if t == crate::live_resources::SOURCE_TEMPLATE => {
            (Completable::Source, "tree.list_sources")
        }
        (CompletionRef::Resource(t), "id") if t == crate::live_resources::MEMORY_TEMPLATE => {
            (Completable::Chunk, "memory.list")
        }
        _ => return Ok(Completion::default()),
    };
    crate::tools::admit_as(&state, gate)?;
    let engine = crate::engine::engine(&state).await.map_err(|e| RpcError::internal(e.to_string()))?;
    let prefix = prefix.to_string();
    let found = blocking(move || engine.complete(what, &prefix, MAX_COMPLETIONS).map_err(MethodError::from))
        .await
        .map_err(|e| match e {
            MethodError::InvalidParams(m) => RpcError::invalid_params(m),
            other => {
                tracing::error!("completion failed: {other:#}");
                RpcError::internal("completion failed; the daemon log has details")
            }
        })?;
    Ok(Completion { values: found.values, total: u64::try_from(found.total).ok() })
}
