//! `memory.search` (`openhuman.memory_tree_search`): keyword (BM25) hits with highlighted
//! snippets, optionally filtered.

use openhuman_schema::params;
use serde::Serialize;

use super::filter_params::{self, FilterParams};
use super::{ChunkSummary, Operation, QUERY_CHARS};
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
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    pub query: String,
    pub hits: Vec<SearchHit>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    #[serde(flatten)]
    pub chunk: ChunkSummary,
    /// The BM25 score.
    pub score: f64,
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
    /// BM25 hits for `p.query`, best first, with highlighted snippets.
    pub fn search(&self, p: SearchParams) -> Result<SearchResult, MemoryError> {
        let filter = filter_params::compile(&p.filter)?;
        filter.settle_entities(&self.inner)?;
        let inner = &self.inner;
        let conn = inner.read_conn()?;
        let k = p.limit;
        // A filter may drop candidates, so it ranks a wider pool.
        let pool = if filter.is_empty() { k } else { (k * 4).max(100) };
        let hits = search::rank(inner, &conn, &p.query, Mode::Keyword, &filter, k, pool, None)?.hits;
        let terms = inner.fts.query_terms(&p.query).words;
        let hits = search::load_hits(&conn, hits)?
            .iter()
            .map(|(c, h)| SearchHit { chunk: ChunkSummary::with_snippet(c, &terms), score: h.score })
            .collect();
        Ok(SearchResult { query: p.query, hits })
    }
}
