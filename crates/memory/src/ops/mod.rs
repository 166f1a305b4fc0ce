//! The engine's operations, one file each: its parameter type (declared once with
//! [`params!`](openhuman_schema::params), which gives the struct, its JSON Schema and its
//! validation), its result type, and the engine function that runs it. The daemon builds each
//! operation's MCP tool and `openhuman.memory_*` method from the [`Operation`] impl here, so a
//! new parameter is one line in one file.
//!
//! Every listing and ranking operation speaks one vocabulary: a `filter` object
//! ([`FilterParams`]: kinds, tags, time range, sources, entities, metadata), `limit` and an
//! opaque `cursor`. Older names clients still send (`k`, and `tree.browse`'s `source_kinds`,
//! `since_ms`, `until_ms`, `source_ids`, `entity_ids`) are documented aliases.
//!
//! - `filter_params` the shared `filter` object and its compilation to the engine's filter
//! - `hit`           the chunk summary every hit and listing row shares
//! - `search`, `recall`, `fetch`          ranking
//! - `read_chunk`, `neighbours`           one chunk and its context
//! - `browse`, `list`, `top_entities`, `list_sources`, `timeline`   listings and views
//! - `admin`         what ids name, the store's counts, its check
//! - `history`       a fact's versions; the projects chunks belong to
//! - `ranking`       what search and recall share: the preferred project's boost, `as_of`
//! - `write`         the write tools' parameters and the engine calls that run them for an author

mod admin;
mod browse;
mod fetch;
mod filter_params;
mod history;
mod hit;
mod list;
mod list_sources;
mod neighbours;
mod ranking;
mod read_chunk;
mod recall;
mod search;
mod timeline;
mod top_entities;
mod write;

pub use admin::{NoParams, Resolve, ResolveParams, StoreCheck, StoreStats};
pub use browse::{Browse, BrowseParams, BrowseResult, BrowseRow};
pub use fetch::{Fetch, FetchParams, FetchResult, Item};
pub use filter_params::FilterParams;
pub use history::{History, HistoryParams, HistoryResult, ProjectRow, Projects, ProjectsResult};
pub use hit::ChunkSummary;
pub use list::{List, ListParams, ListResult};
pub use list_sources::{ListSources, ListSourcesParams, SourceRow, SourcesPage};
pub use neighbours::{Neighbour, Neighbours, NeighboursParams, NeighboursResult};
pub use ranking::DEFAULT_PROJECT_BOOST;
pub use read_chunk::{Chunk, Note, ReadChunk, ReadChunkParams};
pub use recall::{Citation, DateRange, Recall, RecallHit, RecallParams, RecallResult, Turn};
pub use search::{Search, SearchHit, SearchParams, SearchResult};
pub use timeline::{Timeline, TimelineParams, TimelinePoint, TimelineResult};
pub use top_entities::{EntitiesPage, EntityRow, MergedName, TopEntities, TopEntitiesParams};
pub use write::{
    Author, ForgetParams, LEARN_KINDS, LearnParams, NoteParams, SplitEntityParams, StoreParams, TagParams,
    namespace_ok, slug,
};

use openhuman_schema::Params;
use serde::Serialize;

use super::{MemoryEngine, MemoryError};

/// One engine operation: the method name it answers on the socket and `/rpc`, its parameter
/// and result types, and the engine call. The daemon's tools and methods are generic over it.
pub trait Operation: 'static {
    /// The `openhuman.memory_*` method.
    const METHOD: &'static str;
    type Params: Params + Send + 'static;
    type Output: Serialize + Send + 'static;
    fn run(engine: &MemoryEngine, params: Self::Params) -> Result<Self::Output, MemoryError>;
}

/// The `prefer_project` argument of search and recall.
pub(crate) const PREFER_PROJECT_DOC: &str =
    "Rank this project's chunks higher (an absolute path; default: the session's project).";
/// The `project_boost` argument of search and recall.
pub(crate) const PROJECT_BOOST_DOC: &str = "What a chunk of prefer_project gains (0 to 1; recall adds it to the blended score, search multiplies by 1 + it; 0 turns it off; default 0.2 or the daemon's memory.project_boost).";
/// The `as_of` argument of search and recall.
pub(crate) const AS_OF_DOC: &str = "A date (2024-05-01, meaning the end of that day, UTC) or an RFC 3339 time: answer with what was current then \
     (chunks observed by then; replacements observed later ignored).";

/// Longest query text, in characters.
pub(crate) const QUERY_CHARS: usize = 4096;
/// Longest chunk or entity id, in characters.
pub(crate) const ID_CHARS: usize = 256;
/// The `cursor` argument's description: opaque, only ever a previous page's answer.
pub(crate) const CURSOR_DOC: &str = "next_cursor from the previous page, unchanged; omit it for the first page.";

/// Runs `O` from wire arguments: validated against its schema, then the engine call; the
/// result as JSON. The daemon's tools and methods do the same in two steps (validation at the
/// boundary, then the typed call); the engine's tests use this to assert what a client sees.
#[cfg(test)]
pub(crate) fn run_json<O: Operation>(
    engine: &MemoryEngine,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<serde_json::Value, MemoryError> {
    let params = O::Params::from_args(args).map_err(|e| MemoryError::InvalidParams(e.0))?;
    let out = O::run(engine, params)?;
    serde_json::to_value(out).map_err(|e| MemoryError::Other(format!("result of {} not serialisable: {e}", O::METHOD)))
}
