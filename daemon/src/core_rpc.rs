//! The core JSON-RPC methods (`openhuman.*`) that MCP tools map onto. Each method
//! declares its parameter schema once; callers (MCP tools, the socket's control surface, HTTP
//! `/rpc`) go through `invoke`, which validates params against that schema before running it.
//! Memory methods run on the blocking pool: the engine is synchronous (SQLite, tantivy).

use std::sync::{Arc, LazyLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use crate::state::AppState;
use openhuman_mcp::args::{ArgSpec, Field};
use openhuman_memory::{MemoryEngine, MemoryError};

/// Why a core method failed; the MCP layer turns all but `Internal` into readable tool errors.
#[derive(Debug)]
pub enum CoreError {
    InvalidParams(String),
    NotFound(String),
    /// The backend is switched off or unavailable; the message names the key to set.
    Unavailable(String),
    Internal(anyhow::Error),
}

impl std::fmt::Display for CoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoreError::InvalidParams(m) | CoreError::NotFound(m) | CoreError::Unavailable(m) => f.write_str(m),
            CoreError::Internal(e) => write!(f, "internal error: {e:#}"),
        }
    }
}

impl From<MemoryError> for CoreError {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::InvalidParams(m) => CoreError::InvalidParams(m),
            MemoryError::NotFound(m) => CoreError::NotFound(m),
            e => CoreError::Internal(e.into()),
        }
    }
}

pub type CoreHandler = fn(AppState, Map<String, Value>) -> BoxFuture<'static, Result<Value, CoreError>>;

pub struct CoreMethod {
    pub name: &'static str,
    pub params: ArgSpec,
    pub handler: CoreHandler,
}

/// Memory-engine calls that may run at once: two per core. Each running call holds a blocking
/// thread and a pooled SQLite connection, so without a bound a burst of concurrent calls grows
/// both to the size of the burst; past it, calls wait here without a thread.
/// The permit moves into the blocking task, so a cancelled call keeps its slot until the work
/// it started has stopped.
static MEMORY_SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Arc::new(Semaphore::new((cores * 2).max(4)))
});

/// Runs a synchronous memory-engine method on the blocking pool.
pub fn memory_call(
    state: AppState,
    params: Map<String, Value>,
    f: fn(&MemoryEngine, Value) -> Result<Value, MemoryError>,
) -> BoxFuture<'static, Result<Value, CoreError>> {
    async move {
        let engine = state.memory().map_err(CoreError::Unavailable)?;
        let slot = MEMORY_SLOTS.clone().acquire_owned().await.map_err(|e| CoreError::Internal(e.into()))?;
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            f(&engine, Value::Object(params))
        })
        .await
        .map_err(|e| CoreError::Internal(anyhow::anyhow!("memory task failed: {e}")))?
        .map_err(CoreError::from)
    }
    .boxed()
}

/// The `filter` object of recall/fetch/list.
pub fn filter_spec() -> ArgSpec {
    const KINDS: &[&str] = &["document", "conversation", "learning", "note", "email", "chat"];
    let mut fields = vec![
        Field::list("kinds", "Only these kinds of items.", 6, 32).items_one_of(KINDS),
        Field::list("sources", "Only items written by these provenance labels, e.g. mcp:cursor.", 50, 256),
        Field::list("source_ids", "Only items from these sources (ids from tree.list_sources).", 100, 512),
        Field::list("tags_any", "Only items carrying at least one of these tags.", 50, 128),
        Field::string("observed_after", "RFC 3339 time; only items observed after it.").max_bytes(64),
        Field::string("observed_before", "RFC 3339 time; only items observed before it.").max_bytes(64),
    ];
    for (name, desc) in [
        ("workspace", "Exact workspace."),
        ("folder", "Exact folder."),
        ("file_path", "Exact file path."),
        ("language", "Exact language."),
        ("repo", "Exact repository."),
        ("commit", "Exact commit."),
        ("url", "Exact URL."),
        ("thread_id", "Exact thread id."),
        ("agent_id", "Exact agent id."),
    ] {
        fields.push(Field::string(name, desc).max_bytes(2048));
    }
    ArgSpec::new(fields)
}

const QUERY_BYTES: usize = 4096;
const ID_BYTES: usize = 256;

static METHODS: LazyLock<Vec<CoreMethod>> = LazyLock::new(|| {
    vec![
        CoreMethod {
            name: "openhuman.memory_tree_search",
            params: ArgSpec::new(vec![
                Field::string("query", "Keywords to search for (BM25).").required().max_bytes(QUERY_BYTES),
                Field::int("k", "How many hits (default 10).", 1, 50).default_int(10),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::tree_search),
        },
        CoreMethod {
            name: "openhuman.memory_tree_recall",
            params: ArgSpec::new(vec![
                Field::string("query", "A question or description; matched by meaning and keywords.")
                    .required()
                    .max_bytes(QUERY_BYTES),
                Field::int("k", "How many chunks (default 10).", 1, 50).default_int(10),
                Field::object("filter", "Restrict what is recalled.", filter_spec()),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::tree_recall),
        },
        CoreMethod {
            name: "openhuman.memory_tree_get_chunk",
            params: ArgSpec::new(vec![
                Field::string("chunk_id", "A chunk id from search, recall or browse.").required().max_bytes(ID_BYTES),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::tree_get_chunk),
        },
        CoreMethod {
            name: "openhuman.memory_tree_list_chunks",
            params: ArgSpec::new(vec![
                Field::list("source_kinds", "Only these kinds.", 5, 32)
                    .items_one_of(&["document", "email", "chat", "note", "learning"]),
                Field::list("source_ids", "Only these sources.", 100, 512),
                Field::list("entity_ids", "Only chunks mentioning these entities, e.g. person:alice-smith.", 50, 512),
                Field::int("since_ms", "Only chunks at or after this time (ms since epoch).", 0, i64::MAX),
                Field::int("until_ms", "Only chunks before this time (ms since epoch).", 0, i64::MAX),
                Field::string("query", "Only chunks matching these keywords.").max_bytes(QUERY_BYTES),
                Field::int("k", "Page size (default 10).", 1, 50).default_int(10),
                Field::int("offset", "Items to skip (default 0).", 0, 1_000_000).default_int(0),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::tree_list_chunks),
        },
        CoreMethod {
            name: "openhuman.memory_tree_top_entities",
            params: ArgSpec::new(vec![
                Field::one_of(
                    "kind",
                    "Only this kind of entity.",
                    &["email", "url", "handle", "topic", "person", "org"],
                ),
                Field::int("k", "How many (default 10).", 1, 50).default_int(10),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::tree_top_entities),
        },
        CoreMethod {
            name: "openhuman.memory_tree_list_sources",
            params: ArgSpec::new(vec![
                Field::string(
                    "user_email_hint",
                    "Your own e-mail address, so mail threads are named after the other party.",
                )
                .max_bytes(320),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::tree_list_sources),
        },
        CoreMethod {
            name: "openhuman.memory_fetch",
            params: ArgSpec::new(vec![
                Field::string("query", "What to fetch hits for.").required().max_bytes(QUERY_BYTES),
                Field::one_of(
                    "mode",
                    "keyword (BM25), vector (semantic) or hybrid (default).",
                    &["keyword", "vector", "hybrid"],
                ),
                Field::object("filter", "Restrict the hits.", filter_spec()),
                Field::int("limit", "Page size (default 10).", 1, 100).default_int(10),
                Field::string("cursor", "next_cursor from the previous page.").max_bytes(1024),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::fetch),
        },
        CoreMethod {
            name: "openhuman.memory_items_list",
            params: ArgSpec::new(vec![
                Field::object("filter", "Restrict the items.", filter_spec()),
                Field::int("limit", "Page size (default 10).", 1, 100).default_int(10),
                Field::string("cursor", "next_cursor from the previous page.").max_bytes(1024),
            ]),
            handler: |s, p| memory_call(s, p, MemoryEngine::items_list),
        },
    ]
});

pub fn methods() -> &'static [CoreMethod] {
    &METHODS
}

pub fn find(name: &str) -> Option<&'static CoreMethod> {
    METHODS.iter().find(|m| m.name == name)
}

/// Validates `params` against the method's schema and runs it.
pub async fn invoke(state: AppState, name: &str, params: Map<String, Value>) -> Result<Value, CoreError> {
    let method = find(name).ok_or_else(|| CoreError::NotFound(format!("no core method {name}")))?;
    let params = method.params.validate(&params).map_err(|e| CoreError::InvalidParams(e.0))?;
    (method.handler)(state, params).await
}
