//! The memory read tools: `memory.search`, `memory.recall`, `memory.fetch`, `memory.list` and
//! the `tree.*` browsing tools. Each is an engine operation (`openhuman_memory::ops`): its
//! `inputSchema` is the operation's parameter type's schema, `tools/call` validates against it
//! once, and the handler calls the typed engine function. What is the tool's own is here: its
//! name, title, description and policy. When an LLM is configured, `memory.recall` also carries
//! an `answer` written only from the recalled chunks.

use futures::FutureExt;
use futures::future::BoxFuture;
use openhuman_mcp::RequestCtx;
use openhuman_memory::{Operation, ops};
use openhuman_providers::llm::{Llm, grounded};
use openhuman_schema::Params;
use serde_json::{Map, Value};

use super::{Annotations, Policy, ToolDef, ToolFailure, ToolOutcome, always};
use crate::engine::{self, MethodError};
use crate::state::AppState;

/// Every failure a caller can act on becomes an `isError` text; an internal one is logged and
/// points at the log.
fn failure(method: &'static str) -> impl Fn(MethodError) -> ToolFailure {
    move |e| match e {
        MethodError::Internal(e) => {
            tracing::error!(method, "core method failed: {e:#}");
            ToolFailure::Tool(format!("internal error in {method}: {e:#}; the daemon log has details"))
        }
        other => ToolFailure::Tool(other.to_string()),
    }
}

fn to_json(out: impl serde::Serialize) -> ToolOutcome {
    serde_json::to_value(out).map_err(|e| ToolFailure::Tool(format!("internal error: a result did not serialise: {e}")))
}

/// Adds `still_reading` to a search or recall result while a watched folder has not been read
/// through since the daemon started (a folder just added, or a first start on a large one): the
/// hits may miss what it holds, and a client can say so rather than answer as if memory had
/// nothing.
fn note_unread(state: &AppState, result: &mut Value) {
    let folders = state.watch().still_reading();
    if !folders.is_empty() {
        result["still_reading"] = serde_json::json!({
            "folders": folders,
            "note": "memory is still reading these watched folders; what they hold may be missing from \
                     these results. Ask again once `openhumand-mcp status` shows them watching.",
        });
    }
}

/// The tool of an engine operation: its arguments are the operation's parameter type, its call
/// the typed engine function.
fn run<O: Operation>(state: AppState, args: Map<String, Value>, _: RequestCtx) -> BoxFuture<'static, ToolOutcome> {
    async move {
        let params = super::typed::<O::Params>(O::METHOD, args)?;
        to_json(engine::operate::<O>(&state, params).await.map_err(failure(O::METHOD))?)
    }
    .boxed()
}

/// A read tool whose schema and handler come from the operation `O`.
fn read_tool<O: Operation>(name: &'static str, title: &'static str, description: &'static str) -> ToolDef {
    ToolDef {
        name,
        title,
        description,
        policy: Policy::Read,
        annotations: Annotations::READ,
        args: O::Params::spec(),
        output_schema: None,
        available: always,
        handler: run::<O>,
    }
}

fn caller() -> crate::workspace::Caller {
    if super::subagent::current_session().is_some() {
        crate::workspace::Caller::Subagent
    } else {
        crate::workspace::Caller::Client
    }
}

/// `memory.search`: the operation, with the session's project preferred (see `workspace`).
fn search(state: AppState, mut args: Map<String, Value>, ctx: RequestCtx) -> BoxFuture<'static, ToolOutcome> {
    async move {
        let boost = state.config().memory.project_boost;
        crate::workspace::prefer_session_project(&mut args, &ctx, caller(), boost).await;
        let mut result = run::<ops::Search>(state.clone(), args, ctx).await?;
        note_unread(&state, &mut result);
        Ok(result)
    }
    .boxed()
}

/// `memory.recall`: the operation's result, plus `answer` (or `answer_error`) when an LLM is
/// configured. Subagents get the plain result: their own model reads the chunks.
fn recall(state: AppState, mut args: Map<String, Value>, ctx: RequestCtx) -> BoxFuture<'static, ToolOutcome> {
    async move {
        let boost = state.config().memory.project_boost;
        crate::workspace::prefer_session_project(&mut args, &ctx, caller(), boost).await;
        let params = super::typed::<ops::RecallParams>("memory.recall", args)?;
        let query = params.query.clone();
        let recalled = engine::operate::<ops::Recall>(&state, params).await.map_err(failure(ops::Recall::METHOD))?;
        let answer =
            if openhuman_providers::llm::configured(&state.config()) && super::subagent::current_session().is_none() {
                Some(recall_answer(&state, &query, &recalled).await)
            } else {
                None
            };
        let mut result = to_json(recalled)?;
        note_unread(&state, &mut result);
        match answer {
            Some(Ok(answer)) => result["answer"] = Value::String(answer),
            Some(Err(e)) => result["answer_error"] = Value::String(e),
            None => {}
        }
        Ok(result)
    }
    .boxed()
}

pub(crate) fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            handler: search,
            ..read_tool::<ops::Search>(
                "memory.search",
                "Search memory (keywords)",
                "Keyword (BM25) search over everything in the user's memory: notes, documents, e-mail, \
                          chats, learnings. Returns chunk ids, scores and highlighted snippets; read a whole chunk \
                          with tree.read_chunk. The session's project ranks higher; only current versions of \
                          facts (memory.recall shows the replaced ones, marked); `as_of` searches a past date.",
            )
        },
        ToolDef {
            handler: recall,
            ..read_tool::<ops::Recall>(
                "memory.recall",
                "Recall from memory (meaning)",
                "Semantic recall: finds chunks that match the meaning of a question even without shared \
                          words (vector similarity blended with BM25), optionally filtered. A date in the question \
                          (\"9 July 2022\", \"2022-07-09\", \"last March\") favours chunks from then; chat hits \
                          carry the turns around the match (the reply included). Returns chunks with scores and \
                          citations. The session's project ranks higher; a fact replaced by a newer one is marked \
                          `superseded` and comes after it; `as_of` answers with what was current on a date.",
            )
        },
        read_tool::<ops::ReadChunk>(
            "tree.read_chunk",
            "Read a memory chunk",
            "Read one memory chunk in full, with its source, time, tags, entities, notes and metadata.",
        ),
        read_tool::<ops::Browse>(
            "tree.browse",
            "Browse memory",
            "List memory chunks newest first, filtered by source kind, source, mentioned entity, time \
                          range or keywords, with the total count; page on with next_cursor (or offset).",
        ),
        read_tool::<ops::TopEntities>(
            "tree.top_entities",
            "Top entities",
            "The most-mentioned people (mail senders and recipients, chat senders), bots, \
                          organisations, e-mail addresses, URLs, handles and topics in memory, optionally of one kind, \
                          with the total; page on with next_cursor. Topics alone rank by how distinctive they are. A \
                          person lists the names and addresses merged into it (`merged`, with the reason; \
                          memory.split_entity undoes one). Entity ids can filter tree.browse.",
        ),
        read_tool::<ops::ListSources>(
            "tree.list_sources",
            "List memory sources",
            "The sources in memory (files, mail threads, chat channels, MCP writes) with chunk counts \
                          and last activity, most recent first, with the total; page on with next_cursor.",
        ),
        read_tool::<ops::Fetch>(
            "memory.fetch",
            "Fetch raw memory hits",
            "Raw hits for a query with full metadata, by keyword, vector or hybrid ranking, filtered, \
                          paged with an opaque cursor.",
        ),
        read_tool::<ops::List>(
            "memory.list",
            "List stored items",
            "Stored memory items newest first, filtered, with the total, paged with an opaque cursor.",
        ),
        read_tool::<ops::History>(
            "memory.history",
            "History of a fact",
            "The versions of a fact, oldest first: every memory that replaced, or was replaced by, the one \
                          named (a chunk or item id), with when each was observed, what replaced it and why, and \
                          which is current.",
        ),
        read_tool::<ops::Projects>(
            "memory.projects",
            "List projects",
            "The projects memory holds chunks of (git roots or working directories), with counts and \
                          the latest time; a project filters search, recall, fetch and list (`filter.project`).",
        ),
    ]
}

/// Chunks of a recall result read in full for its answer (the best-ranked ones).
const RECALL_SOURCES: usize = 8;

/// The answer to a `memory.recall` question from its result's chunks (read in full), citing them
/// as `[chunk:<id>]`. No chunks: a fixed sentence, without asking the model.
async fn recall_answer(state: &AppState, question: &str, recall: &ops::RecallResult) -> Result<String, String> {
    let config = state.config();
    let llm = Llm::from_config(&config).map_err(|e| e.to_string())?;
    drop(config);
    let mut sources = Vec::new();
    for hit in recall.chunks.iter().take(RECALL_SOURCES) {
        let hit = &hit.chunk;
        // The snippet stands in when the chunk cannot be read (e.g. deleted since the search).
        let chunk = engine::operate::<ops::ReadChunk>(state, ops::ReadChunkParams::of(&hit.chunk_id)).await.ok();
        let text = chunk.as_ref().map(|c| c.content.clone()).or_else(|| hit.snippet.clone()).unwrap_or_default();
        let mut label: Vec<String> = Vec::new();
        for v in [hit.title.as_deref(), Some(hit.source_kind.as_str()), Some(hit.source_ref.as_str())] {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                label.push(v.to_string());
            }
        }
        if let Some(c) = &chunk {
            label.push(c.observed_at.clone());
        }
        sources.push(grounded::Source { cite: format!("chunk:{}", hit.chunk_id), label: label.join(" · "), text });
    }
    if sources.is_empty() {
        return Ok("Nothing in memory matches this question.".to_string());
    }
    grounded::answer(&llm, grounded::Style::Memory, question, &sources).await.map_err(|e| e.to_string())
}
