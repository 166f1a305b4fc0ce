//! The memory read tools: `memory.search`, `memory.recall`, `memory.fetch`,
//! `memory.list` and the `tree.*` browsing tools. Each one's arguments are its core method's
//! parameter schema; the call validates, then invokes the core method by name. When an LLM is
//! configured, `memory.recall` also carries an `answer` written only from the recalled chunks.

use futures::FutureExt;
use futures::future::BoxFuture;
use openhuman_providers::llm::{Llm, grounded};
use serde_json::{Map, Value, json};

use super::{Annotations, Policy, ToolDef, ToolFailure, ToolOutcome, always};
use crate::rpc::{self, Caller, MethodError};
use crate::state::AppState;

/// Calls a core method for a tool; every failure a caller can act on becomes an `isError` text.
pub fn via(state: AppState, method: &'static str, args: Map<String, Value>) -> BoxFuture<'static, ToolOutcome> {
    async move {
        rpc::invoke(state, method, args, Caller::default()).await.map_err(|e| match e {
            MethodError::Internal(e) => {
                tracing::error!(method, "core method failed: {e:#}");
                ToolFailure::Tool(format!("internal error in {method}: {e:#}; the daemon log has details"))
            }
            other => ToolFailure::Tool(other.to_string()),
        })
    }
    .boxed()
}

/// `memory.recall`: the core method's result, plus `answer` (or `answer_error`) when an LLM is
/// configured. Subagents get the plain result: their own model reads the chunks.
fn recall(state: AppState, args: Map<String, Value>) -> BoxFuture<'static, ToolOutcome> {
    async move {
        let query = args.get("query").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut result = via(state.clone(), "openhuman.memory_tree_recall", args).await?;
        if openhuman_providers::llm::configured(&state.config()) && super::subagent::current_session().is_none() {
            match recall_answer(&state, &query, &result).await {
                Ok(answer) => result["answer"] = Value::String(answer),
                Err(e) => result["answer_error"] = Value::String(e),
            }
        }
        Ok(result)
    }
    .boxed()
}

fn spec(method: &str) -> openhuman_mcp::args::ArgSpec {
    rpc::find(method).map(|m| m.params.clone()).unwrap_or_default()
}

pub fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "memory.search",
            title: "Search memory (keywords)",
            description: "Keyword (BM25) search over everything in the user's memory: notes, documents, e-mail, \
                          chats, learnings. Returns chunk ids, scores and highlighted snippets; read a whole chunk \
                          with tree.read_chunk.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_tree_search"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| via(s, "openhuman.memory_tree_search", a),
        },
        ToolDef {
            name: "memory.recall",
            title: "Recall from memory (meaning)",
            description: "Semantic recall: finds chunks that match the meaning of a question even without shared \
                          words (vector similarity blended with BM25), optionally filtered. A date in the question \
                          (\"9 July 2022\", \"2022-07-09\", \"last March\") favours chunks from then; chat hits \
                          carry the turns around the match (the reply included). Returns chunks with scores and \
                          citations.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_tree_recall"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| recall(s, a),
        },
        ToolDef {
            name: "tree.read_chunk",
            title: "Read a memory chunk",
            description: "Read one memory chunk in full, with its source, time, tags, entities, notes and metadata.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_tree_get_chunk"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| via(s, "openhuman.memory_tree_get_chunk", a),
        },
        ToolDef {
            name: "tree.browse",
            title: "Browse memory",
            description: "List memory chunks newest first, filtered by source kind, source, mentioned entity, time \
                          range or keywords, with the total count; page on with next_cursor (or offset).",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_tree_list_chunks"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| via(s, "openhuman.memory_tree_list_chunks", a),
        },
        ToolDef {
            name: "tree.top_entities",
            title: "Top entities",
            description: "The most-mentioned people (mail senders and recipients, chat senders), bots, \
                          organisations, e-mail addresses, URLs, handles and topics in memory, optionally of one kind, \
                          with the total; page on with next_cursor. Topics alone rank by how distinctive they are. A \
                          person lists the names and addresses merged into it (`merged`, with the reason; \
                          memory.split_entity undoes one). Entity ids can filter tree.browse.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_tree_top_entities"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| via(s, "openhuman.memory_tree_top_entities", a),
        },
        ToolDef {
            name: "tree.list_sources",
            title: "List memory sources",
            description: "The sources in memory (files, mail threads, chat channels, MCP writes) with chunk counts \
                          and last activity, most recent first, with the total; page on with next_cursor.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_tree_list_sources"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| via(s, "openhuman.memory_tree_list_sources", a),
        },
        ToolDef {
            name: "memory.fetch",
            title: "Fetch raw memory hits",
            description: "Raw hits for a query with full metadata, by keyword, vector or hybrid ranking, filtered, \
                          paged with an opaque cursor.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_fetch"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| via(s, "openhuman.memory_fetch", a),
        },
        ToolDef {
            name: "memory.list",
            title: "List stored items",
            description: "Stored memory items newest first, filtered, with the total, paged with an opaque cursor.",
            policy: Policy::Read,
            annotations: Annotations::READ,
            args: spec("openhuman.memory_items_list"),
            output_schema: None,
            available: always,
            handler: |s, a, _c| via(s, "openhuman.memory_items_list", a),
        },
    ]
}

/// Chunks of a recall result read in full for its answer (the best-ranked ones).
const RECALL_SOURCES: usize = 8;

/// The answer to a `memory.recall` question from its result's chunks (read in full), citing them
/// as `[chunk:<id>]`. No chunks: a fixed sentence, without asking the model.
async fn recall_answer(state: &AppState, question: &str, recall: &Value) -> Result<String, String> {
    let config = state.config();
    let llm = Llm::from_config(&config).map_err(|e| e.to_string())?;
    drop(config);
    let mut sources = Vec::new();
    for hit in recall["chunks"].as_array().into_iter().flatten().take(RECALL_SOURCES) {
        let Some(id) = hit["chunk_id"].as_str() else { continue };
        let mut p = Map::new();
        p.insert("chunk_id".into(), json!(id));
        // The snippet stands in when the chunk cannot be read (e.g. deleted since the search).
        let chunk = rpc::invoke(state.clone(), "openhuman.memory_tree_get_chunk", p, Caller::default()).await.ok();
        let text = chunk
            .as_ref()
            .and_then(|c| c["content"].as_str())
            .or_else(|| hit["snippet"].as_str())
            .unwrap_or_default()
            .to_string();
        let mut label: Vec<String> = Vec::new();
        for key in ["title", "source_kind", "source_ref"] {
            if let Some(v) = hit[key].as_str().filter(|v| !v.is_empty()) {
                label.push(v.to_string());
            }
        }
        if let Some(t) = chunk.as_ref().and_then(|c| c["observed_at"].as_str()) {
            label.push(t.to_string());
        }
        sources.push(grounded::Source { cite: format!("chunk:{id}"), label: label.join(" · "), text });
    }
    if sources.is_empty() {
        return Ok("Nothing in memory matches this question.".to_string());
    }
    grounded::answer(&llm, grounded::Style::Memory, question, &sources).await.map_err(|e| e.to_string())
}
