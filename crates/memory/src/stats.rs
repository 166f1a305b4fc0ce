//! `stats`: the store's counts and index positions, for `status` and diagnostics.

use std::collections::BTreeMap;

use serde::Serialize;

use super::locks::read;
use super::sync::positions;
use super::tier::{self, TierKind, TierProgress};
use super::{Inner, MemoryError, schema};

/// Counts and index positions of a store.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub schema_version: i64,
    pub chunks: i64,
    pub chunks_by_kind: BTreeMap<String, i64>,
    pub sources: i64,
    /// Entities some chunk still mentions.
    pub entities: i64,
    pub files: i64,
    /// Chunks whose user tags and notes are kept without their passage (see `anchor`).
    pub annotations_detached: i64,
    pub audit_rows: i64,
    pub db_seq: i64,
    pub fts: FtsStats,
    pub vectors: VectorStats,
}

#[derive(Debug, Clone, Serialize)]
pub struct FtsStats {
    /// The last change the keyword index applied.
    pub seq: i64,
    pub docs: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct VectorStats {
    /// The last change the fast tier applied.
    pub seq: i64,
    pub count: usize,
    pub dims: usize,
    pub signature: String,
    /// Chunks without a fast-tier vector yet.
    pub missing: usize,
    /// The deep tier's progress, when one is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deep: Option<TierProgress>,
    /// The fast tier's approximate index, once one is trained (past 131,072 vectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ann: Option<crate::vectors::ann::AnnStats>,
}

pub(crate) fn stats(inner: &Inner) -> Result<Stats, MemoryError> {
    let conn = inner.read_conn()?;
    let count = |sql: &str| -> Result<i64, MemoryError> { Ok(conn.query_row(sql, [], |r| r.get(0))?) };
    let mut chunks_by_kind = BTreeMap::new();
    let mut stmt = conn.prepare_cached("SELECT source_kind, count(*) FROM chunks GROUP BY source_kind ORDER BY 1")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        chunks_by_kind.insert(r.get(0)?, r.get(1)?);
    }
    let (db_seq, fts_seq, vec_seq) = positions(inner);
    let (vectors, ann) = {
        let ix = read(&inner.fast.vectors);
        (ix.len(), ix.ann_stats())
    };
    let chunks = count("SELECT count(*) FROM chunks")?;
    let fast = &inner.fast.embedder;
    let deep = tier::progress(inner, chunks as usize).into_iter().find(|t| t.tier == TierKind::Deep);
    Ok(Stats {
        schema_version: schema::SCHEMA_VERSION,
        chunks,
        chunks_by_kind,
        sources: count("SELECT count(*) FROM sources")?,
        entities: count("SELECT count(*) FROM entities WHERE chunk_count > 0")?,
        files: count("SELECT count(*) FROM files")?,
        annotations_detached: count("SELECT count(*) FROM detached")?,
        audit_rows: count("SELECT count(*) FROM mcp_audit")?,
        db_seq,
        fts: FtsStats { seq: fts_seq, docs: inner.fts.num_docs() },
        vectors: VectorStats {
            seq: vec_seq,
            count: vectors,
            dims: fast.dims(),
            signature: fast.signature().to_string(),
            missing: (chunks as usize).saturating_sub(vectors),
            deep,
            ann,
        },
    })
}
