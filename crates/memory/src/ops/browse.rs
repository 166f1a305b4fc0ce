//! `tree.browse` (`openhuman.memory_tree_list_chunks`): chunks newest first, filtered, with the
//! total, paged by cursor (stable while chunks are added) or by offset. It takes the shared
//! `filter` and `limit`; its older top-level names (`source_kinds`, `source_ids`,
//! `entity_ids`, `since_ms`, `until_ms`, `k`) still work and mean the same conditions.

use openhuman_schema::params;
use serde::Serialize;

use super::filter_params::{self, FilterParams};
use super::{CURSOR_DOC, ChunkSummary, Operation, QUERY_CHARS};
use crate::cursor::{decode, fingerprint, keyset_rowid};
use crate::filter::Filter;
use crate::{MemoryEngine, MemoryError, page};

params! {
    /// Which chunks to list, and where the page starts.
    pub struct BrowseParams {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        source_kinds: Vec<String> =
            list("Only these kinds.", 5, 32).items_one_of(&["document", "email", "chat", "note", "learning"]),
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        source_ids: Vec<String> = list("Only these sources.", 100, 512),
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        entity_ids: Vec<String> =
            list("Only chunks mentioning these entities, e.g. person:alice-smith.", 50, 512),
        #[serde(skip_serializing_if = "Option::is_none")]
        since_ms: Option<i64> = int("Only chunks at or after this time (ms since epoch).", 0, i64::MAX),
        #[serde(skip_serializing_if = "Option::is_none")]
        until_ms: Option<i64> = int("Only chunks before this time (ms since epoch).", 0, i64::MAX),
        #[serde(skip_serializing_if = "Option::is_none")]
        query: Option<String> = string("Only chunks matching these keywords.").max_chars(QUERY_CHARS),
        k as limit = int("Page size (default 10).", 1, 50).default_int(10),
        offset: usize =
            int("Items to skip (default 0); cursor is the stable way to page.", 0, 1_000_000).default_int(0),
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String> = string(CURSOR_DOC).max_chars(1024),
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<FilterParams> = object(
            "Restrict the chunks listed, as every listing does (source_kinds, source_ids, entity_ids, since_ms and \
             until_ms are older names for parts of it).",
            FilterParams::spec()
        ),
        limit: usize = int("Page size (default 10); `k` is another name for it.", 1, 50).default_int(10),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrowseResult {
    pub chunks: Vec<BrowseRow>,
    /// Every chunk the filter matches.
    pub total: i64,
    pub offset: usize,
    /// The page size.
    pub k: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrowseRow {
    #[serde(flatten)]
    pub chunk: ChunkSummary,
    pub token_count: i64,
}

pub struct Browse;

impl Operation for Browse {
    const METHOD: &'static str = "openhuman.memory_tree_list_chunks";
    type Params = BrowseParams;
    type Output = BrowseResult;
    fn run(engine: &MemoryEngine, p: BrowseParams) -> Result<BrowseResult, MemoryError> {
        engine.browse(p)
    }
}

impl BrowseParams {
    /// The newest `limit` chunks of one source.
    pub fn of_source(source_id: impl Into<String>, limit: usize) -> BrowseParams {
        BrowseParams { source_ids: vec![source_id.into()], limit, ..BrowseParams::default() }
    }

    /// The shared filter these parameters describe: `filter`, with the older top-level names
    /// folded in (each may be given one way only).
    fn merged_filter(&self) -> Result<Filter, MemoryError> {
        let mut f = filter_params::compile(&self.filter)?;
        let both = |old: &str, new: &str| {
            MemoryError::InvalidParams(format!("pass either `{old}` or `filter.{new}` (the same condition), not both"))
        };
        if !self.source_kinds.is_empty() {
            if !f.kinds.is_empty() {
                return Err(both("source_kinds", "kinds"));
            }
            f.kinds = filter_params::kinds("source_kinds", &self.source_kinds)?;
        }
        for (old, new, from, into) in [
            ("source_ids", "source_ids", &self.source_ids, &mut f.source_ids),
            ("entity_ids", "entity_ids", &self.entity_ids, &mut f.entity_ids),
        ] {
            if !from.is_empty() {
                if !into.is_empty() {
                    return Err(both(old, new));
                }
                *into = from.clone();
            }
        }
        for (old, new, from, into) in [
            ("since_ms", "observed_after", self.since_ms, &mut f.after_ms),
            ("until_ms", "observed_before", self.until_ms, &mut f.before_ms),
        ] {
            if from.is_some() {
                if into.is_some() {
                    return Err(both(old, new));
                }
                *into = from;
            }
        }
        Ok(f)
    }
}

impl MemoryEngine {
    /// Filtered, paged listing, newest first (rowid breaks ties), with the total count and
    /// `next_cursor` when more follow. Pages by `cursor` or by `offset`, not both.
    pub fn browse(&self, p: BrowseParams) -> Result<BrowseResult, MemoryError> {
        let mut filter = p.merged_filter()?;
        let fp = fingerprint(&["browse", &filter.canonical(), p.query.as_deref().unwrap_or("")]);
        let after = decode(&p.cursor, &fp)?.map(|c| keyset_rowid(&c)).transpose()?;
        if after.is_some() && p.offset > 0 {
            return Err(MemoryError::InvalidParams("pass either offset or cursor, not both".into()));
        }
        filter.settle_entities(&self.inner)?;
        let inner = &self.inner;
        let mut terms = Vec::new();
        if let Some(q) = &p.query {
            let q = inner.fts.query_terms(q);
            filter.rowids = Some(inner.fts.matching_rowids(&q)?);
            terms = q.words;
        }
        let conn = inner.read_conn()?;
        let page = page::chunks(&conn, &filter, p.limit, after, p.offset, &fp)?;
        let chunks = page
            .rows
            .iter()
            .map(|c| BrowseRow {
                chunk: if terms.is_empty() {
                    ChunkSummary::with_preview(c)
                } else {
                    ChunkSummary::with_snippet(c, &terms)
                },
                token_count: c.token_count,
            })
            .collect();
        Ok(BrowseResult { chunks, total: page.total, offset: p.offset, k: p.limit, next_cursor: page.next_cursor })
    }
}
