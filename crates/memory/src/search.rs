//! Ranking: BM25 (tantivy), vector similarity (exact scan) and their hybrid by
//! reciprocal-rank fusion (k = 60), with the filter applied to the fused list;
//! plus loading the ranked chunks' rows from SQLite.
//!
//! Filtering strategy: when a filter matches few chunks (≤ `RESTRICT_CAP`) both
//! rankers run only over those chunks; otherwise the rankers run unrestricted and the
//! fused candidates are filtered, widening the candidate pool until enough survive.

use std::collections::HashMap;

use rusqlite::{Connection, params_from_iter};
use serde_json::{Map, Value};

use super::filter::Filter;
use super::store::rarray;
use super::sync::read;
use super::tier::Ranked;
use super::{Inner, MemoryError};

const RRF_K: f64 = 60.0;
const RESTRICT_CAP: usize = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Keyword,
    Vector,
    Hybrid,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "keyword" => Some(Mode::Keyword),
            "vector" => Some(Mode::Vector),
            "hybrid" => Some(Mode::Hybrid),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub rowid: i64,
    /// BM25 score (keyword), cosine (vector) or fused RRF score (hybrid).
    pub score: f64,
    /// 1-based rank in the BM25 list.
    pub bm25_rank: Option<usize>,
    pub vector_score: Option<f32>,
}

/// Fuses ranked lists: each list contributes `1 / (k + rank)` for every chunk it holds.
fn fuse(mode: Mode, bm: &[(i64, f32)], vs: &[(i64, f32)]) -> Vec<Hit> {
    let mut hits: HashMap<i64, Hit> = HashMap::with_capacity(bm.len() + vs.len());
    for (i, &(rowid, score)) in bm.iter().enumerate() {
        let h = hits.entry(rowid).or_insert(Hit { rowid, score: 0.0, bm25_rank: None, vector_score: None });
        h.bm25_rank = Some(i + 1);
        h.score += match mode {
            Mode::Keyword => score as f64,
            _ => 1.0 / (RRF_K + (i + 1) as f64),
        };
    }
    // A vector at or below zero similarity is unrelated, whatever its rank.
    for (i, &(rowid, score)) in vs.iter().enumerate().filter(|(_, v)| v.1 > 0.0) {
        let h = hits.entry(rowid).or_insert(Hit { rowid, score: 0.0, bm25_rank: None, vector_score: None });
        h.vector_score = Some(score);
        h.score += match mode {
            Mode::Vector => score as f64,
            _ => 1.0 / (RRF_K + (i + 1) as f64),
        };
    }
    let mut out: Vec<Hit> = hits.into_values().collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.bm25_rank.unwrap_or(usize::MAX).cmp(&b.bm25_rank.unwrap_or(usize::MAX)))
            .then_with(|| b.rowid.cmp(&a.rowid))
    });
    out
}

/// The best `want` hits for `query`, taking `pool` candidates from each ranker first, and the
/// vector tier that ranked them.
pub(crate) fn rank(
    inner: &Inner,
    conn: &Connection,
    query: &str,
    mode: Mode,
    filter: &Filter,
    want: usize,
    pool: usize,
) -> Result<Ranked, MemoryError> {
    let terms = inner.fts.query_terms(query);
    // The deep tier once it covers every chunk, else the fast one; neither (keywords only)
    // when no embedder can embed the query.
    let qvec = if mode == Mode::Keyword { None } else { inner.query_vector(query) };
    let restrict = if filter.is_empty() { None } else { filter.matching_if_few(conn, RESTRICT_CAP)? };
    let mut pool = pool.max(want);
    loop {
        let bm = if mode == Mode::Vector { Vec::new() } else { inner.fts.search(&terms, pool, restrict.as_deref())? };
        let vs = match &qvec {
            Some((q, tier)) => read(&tier.vectors).search(q, pool, restrict.as_deref()),
            None => Vec::new(),
        };
        let exhausted = bm.len() < pool && vs.len() < pool;
        let mut fused = fuse(mode, &bm, &vs);
        if !filter.is_empty() && restrict.is_none() {
            let ids: Vec<i64> = fused.iter().map(|h| h.rowid).collect();
            let keep = filter.retain(conn, &ids)?;
            fused.retain(|h| keep.contains(&h.rowid));
        }
        if fused.len() >= want || exhausted || restrict.is_some() {
            fused.truncate(want);
            return Ok(Ranked { hits: fused, tier: qvec.map(|(_, t)| t.kind) });
        }
        pool *= 4;
    }
}

/// One chunk row as the read methods present it.
#[derive(Debug, Clone)]
pub(crate) struct ChunkRow {
    pub rowid: i64,
    pub id: String,
    pub kind: String,
    pub source_id: String,
    pub source_ref: String,
    pub origin: String,
    pub owner: Option<String>,
    pub provenance: String,
    pub timestamp_ms: i64,
    pub seq_in_source: i64,
    pub title: Option<String>,
    pub content: String,
    pub token_count: i64,
    pub metadata: Map<String, Value>,
    pub created_at_ms: i64,
    pub tags: Vec<String>,
}

pub(crate) const CHUNK_COLUMNS: &str = "c.rowid, c.id, c.source_kind, c.source_id, c.source_ref, c.origin, c.owner, \
     c.provenance, c.timestamp_ms, c.seq_in_source, c.title, c.content, c.token_count, c.metadata, c.created_at_ms";

pub(crate) fn chunk_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChunkRow> {
    let meta: String = r.get(13)?;
    Ok(ChunkRow {
        rowid: r.get(0)?,
        id: r.get(1)?,
        kind: r.get(2)?,
        source_id: r.get(3)?,
        source_ref: r.get(4)?,
        origin: r.get(5)?,
        owner: r.get(6)?,
        provenance: r.get(7)?,
        timestamp_ms: r.get(8)?,
        seq_in_source: r.get(9)?,
        title: r.get(10)?,
        content: r.get(11)?,
        token_count: r.get(12)?,
        metadata: match serde_json::from_str(&meta) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        },
        created_at_ms: r.get(14)?,
        tags: Vec::new(),
    })
}

/// Fills in the tags (own and added) of each row.
pub(crate) fn attach_tags(conn: &Connection, rows: &mut [ChunkRow]) -> Result<(), MemoryError> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.rowid).collect();
    let mut tags: HashMap<i64, Vec<String>> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT chunk_rowid, tag FROM chunk_tags WHERE chunk_rowid IN rarray(?1) ORDER BY tag",
    )?;
    let mut q = stmt.query([rarray(&ids)])?;
    while let Some(r) = q.next()? {
        tags.entry(r.get(0)?).or_default().push(r.get(1)?);
    }
    for row in rows {
        row.tags = tags.remove(&row.rowid).unwrap_or_default();
    }
    Ok(())
}

/// Loads rows by rowid, in the given order (rowids no longer present are skipped).
pub(crate) fn load_chunks(conn: &Connection, rowids: &[i64]) -> Result<Vec<ChunkRow>, MemoryError> {
    let sql = format!("SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.rowid IN rarray(?1)");
    let mut by_id: HashMap<i64, ChunkRow> = conn
        .prepare_cached(&sql)?
        .query_map(params_from_iter([rarray(rowids)]), chunk_from_row)?
        .map(|r| r.map(|c| (c.rowid, c)))
        .collect::<rusqlite::Result<_>>()?;
    let mut out: Vec<ChunkRow> = rowids.iter().filter_map(|r| by_id.remove(r)).collect();
    attach_tags(conn, &mut out)?;
    Ok(out)
}

/// Loads the rows of ranked hits, keeping the ranking order and dropping hits whose
/// chunk was deleted in the meantime.
pub(crate) fn load_hits(conn: &Connection, hits: Vec<Hit>) -> Result<Vec<(ChunkRow, Hit)>, MemoryError> {
    let ids: Vec<i64> = hits.iter().map(|h| h.rowid).collect();
    let rows = load_chunks(conn, &ids)?;
    let mut by_row: HashMap<i64, Hit> = hits.into_iter().map(|h| (h.rowid, h)).collect();
    Ok(rows.into_iter().filter_map(|r| by_row.remove(&r.rowid).map(|h| (r, h))).collect())
}
