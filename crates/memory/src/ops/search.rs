//! `memory.search` (`openhuman.memory_tree_search`): keyword (BM25) hits with highlighted
//! snippets, optionally filtered; only what is current (a version a newer one replaced is left
//! to recall and `memory.history`), as of `as_of` when given; without the hits below the
//! relevance floor (`min_relevance`).

use openhuman_schema::params;
use serde::Serialize;

use super::filter_params::{self, FilterParams};
use super::ranking::Shaping;
use super::{AS_OF_DOC, ChunkSummary, Operation, PREFER_PROJECT_DOC, PROJECT_BOOST_DOC, QUERY_CHARS};
use crate::search::{self, Mode};
use crate::{MemoryEngine, MemoryError};

params! {
    /// What to search for.
    pub struct SearchParams {
        query: String = string("Keywords to search for (BM25).").required().max_chars(QUERY_CHARS),
        k as limit = int("How many hits (default 10).", 1, 50).default_int(10),
        limit: usize = int("How many hits (default 10); `k` is another name for it.", 1, 50).default_int(10),
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<FilterParams> = object("Restrict the hits.", FilterParams::spec()),
        #[serde(skip_serializing_if = "Option::is_none")]
        prefer_project: Option<String> = string(PREFER_PROJECT_DOC).max_chars(crate::project::MAX_BYTES),
        #[serde(skip_serializing_if = "Option::is_none")]
        project_boost: Option<f64> = number(PROJECT_BOOST_DOC, 0.0, 1.0),
        #[serde(skip_serializing_if = "Option::is_none")]
        as_of: Option<String> = string(AS_OF_DOC).max_chars(64),
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_relevance: Option<f64> = number(
            "Leave out hits whose relevance (the share of the query's word weight they hold) is below this, \
             0 to 1 (default 0.1; 0 keeps every hit).",
            0.0,
            1.0,
        ),
    }
}

/// The relevance a search hit needs by default: the share of the query's word weight (by
/// inverse document frequency) its text holds. Calibrated on the development sets (see
/// BENCHMARKS.md): it costs nothing measurable there, and a hit matching only one common
/// word of a longer question stays out.
pub const SEARCH_MIN_RELEVANCE: f64 = 0.1;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    pub query: String,
    pub hits: Vec<SearchHit>,
    /// Hits among the best `k` left out for falling below `min_relevance`.
    pub held_back: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    #[serde(flatten)]
    pub chunk: ChunkSummary,
    /// The BM25 score.
    pub score: f64,
    /// How well the hit is backed, in `0..=1` (what `min_relevance` is compared with).
    pub relevance: f64,
}

impl SearchParams {
    /// A search for `query` with the default size and no filter.
    pub fn of(query: impl Into<String>) -> SearchParams {
        SearchParams {
            query: query.into(),
            limit: 10,
            filter: None,
            prefer_project: None,
            project_boost: None,
            as_of: None,
            min_relevance: None,
        }
    }
}

pub struct Search;

impl Operation for Search {
    const METHOD: &'static str = "openhuman.memory_tree_search";
    type Params = SearchParams;
    type Output = SearchResult;
    fn run(engine: &MemoryEngine, p: SearchParams) -> Result<SearchResult, MemoryError> {
        engine.search(p)
    }
}

impl MemoryEngine {
    /// BM25 hits for `p.query`, best first, with highlighted snippets; those of the best `k`
    /// below the relevance floor are left out and counted.
    pub fn search(&self, p: SearchParams) -> Result<SearchResult, MemoryError> {
        let shape = Shaping::of(&p.prefer_project, p.project_boost, &p.as_of)?;
        let mut filter = filter_params::compile(&p.filter)?;
        shape.narrow(&mut filter);
        filter.settle_entities(&self.inner)?;
        let inner = &self.inner;
        let _query = inner.foreground.query();
        let conn = inner.read_conn()?;
        let k = p.limit;
        let want = shape.want(k);
        // A filter may drop candidates, so it ranks a wider pool.
        let pool = if filter.is_empty() { want } else { (want * 4).max(100) };
        let ranked = search::rank(inner, &conn, &p.query, Mode::Keyword, &filter, want, pool, None)?;
        let hits = shape.boost(&conn, ranked.hits, Mode::Keyword, k)?;
        let terms = inner.fts.query_terms(&p.query).words;
        // What is current (as of `as_of`): a replaced version is for recall and memory.history.
        let mut loaded = shape.current_only(shape.mark(&conn, search::load_hits(&conn, hits)?)?);
        loaded.truncate(k);
        let min = p.min_relevance.unwrap_or(SEARCH_MIN_RELEVANCE);
        let (kept, held_back) = search::apply_floor(&ranked.judge, loaded, min);
        let hits = kept
            .iter()
            .map(|(c, h, r)| SearchHit { chunk: ChunkSummary::with_snippet(c, &terms), score: h.score, relevance: *r })
            .collect();
        Ok(SearchResult { query: p.query, hits, held_back })
    }
}
