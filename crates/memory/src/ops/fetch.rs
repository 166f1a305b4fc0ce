//! `memory.fetch` (`openhuman.memory_fetch`): raw ranked hits with full metadata, by keyword,
//! vector or hybrid ranking, filtered, paged with a cursor holding an offset into the ranked
//! list.

use openhuman_schema::params;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::filter_params::{self, FilterParams};
use super::{CURSOR_DOC, Operation, QUERY_CHARS};
use crate::cursor::{Cursor, decode, encode, fingerprint};
use crate::search::{self, ChunkRow, Mode};
use crate::tier::TierKind;
use crate::util::ms_to_rfc3339;
use crate::{MemoryEngine, MemoryError};

/// Ranked results beyond this position are not paged (each ranker contributes this many
/// candidates, which also keeps every page of one query ranked from the same lists).
const FETCH_WINDOW: usize = 1000;

params! {
    /// What to fetch hits for, how to rank them, and where the page starts.
    pub struct FetchParams {
        query: String = string("What to fetch hits for.").required().max_chars(QUERY_CHARS),
        #[serde(skip_serializing_if = "Option::is_none")]
        mode: Option<String> =
            one_of("keyword (BM25), vector (semantic) or hybrid (default).", &["keyword", "vector", "hybrid"]),
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<FilterParams> = object("Restrict the hits.", FilterParams::spec()),
        limit: usize = int("Page size (default 10).", 1, 100).default_int(10),
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String> = string(CURSOR_DOC).max_chars(1024),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FetchResult {
    pub items: Vec<Item>,
    /// The vector tier that ranked the items, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_tier: Option<TierKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A stored item as `memory.fetch` and `memory.list` return it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    pub id: String,
    pub kind: String,
    /// The provenance label of whoever wrote it.
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub content: String,
    /// The ranking's score (none in a listing).
    pub score: Option<f64>,
    /// What ingest recorded, plus the chunk's source, item, tags and owner.
    pub metadata: Map<String, Value>,
    pub observed_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// A newer chunk replaced this one (see `memory.history`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded: Option<crate::search::Superseded>,
}

impl Item {
    pub(crate) fn of(c: &ChunkRow, score: Option<f64>) -> Item {
        let mut metadata = c.metadata.clone();
        metadata.insert("source_id".into(), json!(c.source_id));
        metadata.insert("source_ref".into(), json!(c.source_ref));
        metadata.insert("item_id".into(), json!(c.origin));
        metadata.insert("tags".into(), json!(c.tags));
        if let Some(o) = &c.owner {
            metadata.insert("owner".into(), json!(o));
        }
        Item {
            id: c.id.clone(),
            kind: c.kind.clone(),
            source: c.provenance.clone(),
            title: c.title.clone(),
            content: c.content.clone(),
            score,
            metadata,
            observed_at: ms_to_rfc3339(c.timestamp_ms),
            project: c.project.clone(),
            superseded: c.superseded.clone(),
        }
    }
}

pub struct Fetch;

impl Operation for Fetch {
    const METHOD: &'static str = "openhuman.memory_fetch";
    type Params = FetchParams;
    type Output = FetchResult;
    fn run(engine: &MemoryEngine, p: FetchParams) -> Result<FetchResult, MemoryError> {
        engine.fetch(p)
    }
}

impl MemoryEngine {
    /// A page of ranked hits for `p.query`.
    pub fn fetch(&self, p: FetchParams) -> Result<FetchResult, MemoryError> {
        let mode_name = p.mode.as_deref().unwrap_or("hybrid");
        let mode = Mode::parse(mode_name).ok_or_else(|| {
            MemoryError::InvalidParams(format!("mode must be keyword, vector or hybrid, got `{mode_name}`"))
        })?;
        let filter = filter_params::compile(&p.filter)?;
        filter.settle_entities(&self.inner)?;
        let limit = p.limit;
        let fp = fingerprint(&["fetch", &p.query, mode_name, &filter.canonical()]);
        let offset = decode(&p.cursor, &fp)?.and_then(|c| c.o).unwrap_or(0);
        if offset >= FETCH_WINDOW {
            return Ok(FetchResult { items: Vec::new(), vector_tier: None, next_cursor: None });
        }
        let want = (offset + limit + 1).min(FETCH_WINDOW);
        let inner = &self.inner;
        let conn = inner.read_conn()?;
        let ranked = search::rank(inner, &conn, &p.query, mode, &filter, want, FETCH_WINDOW, None)?;
        let hits = ranked.hits;
        let more = hits.len() > offset + limit;
        let page: Vec<_> = hits.into_iter().skip(offset).take(limit).collect();
        let items = search::load_hits(&conn, page)?.iter().map(|(c, h)| Item::of(c, Some(h.score))).collect();
        let next_cursor = more.then(|| encode(&Cursor { h: fp, o: Some(offset + limit), ..Cursor::default() }));
        Ok(FetchResult { items, vector_tier: ranked.tier, next_cursor })
    }
}
