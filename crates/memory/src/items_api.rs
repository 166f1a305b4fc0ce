//! `memory.fetch` (raw hits in keyword/vector/hybrid mode) and `memory.list` (stored
//! items, newest first, with their total), both with opaque cursors (see `cursor`): fetch's
//! holds an offset into the ranked list, list's the last item's (time, rowid) keyset position.

use rusqlite::params_from_iter;
use serde::Deserialize;
use serde_json::{Value, json};

use super::cursor::{Cursor, decode, encode, fingerprint, keyset_rowid};
use super::filter::Filter;
use super::params::{bounded, invalid, parse, required};
use super::search::{self, CHUNK_COLUMNS, ChunkRow, Mode, chunk_from_row};
use super::util::ms_to_rfc3339;
use super::{MemoryEngine, MemoryError};

/// Ranked results beyond this position are not paged (each ranker contributes this many
/// candidates, which also keeps every page of one query ranked from the same lists).
const FETCH_WINDOW: usize = 1000;
const MAX_LIMIT: usize = 100;

#[derive(Deserialize)]
struct FetchParams {
    query: String,
    mode: Option<String>,
    filter: Option<Value>,
    limit: Option<i64>,
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct ListParams {
    filter: Option<Value>,
    limit: Option<i64>,
    cursor: Option<String>,
}

fn item_json(c: &ChunkRow, score: Option<f64>) -> Value {
    let mut meta = c.metadata.clone();
    meta.insert("source_id".into(), json!(c.source_id));
    meta.insert("source_ref".into(), json!(c.source_ref));
    meta.insert("item_id".into(), json!(c.origin));
    meta.insert("tags".into(), json!(c.tags));
    if let Some(o) = &c.owner {
        meta.insert("owner".into(), json!(o));
    }
    let mut m = serde_json::Map::new();
    m.insert("id".into(), json!(c.id));
    m.insert("kind".into(), json!(c.kind));
    m.insert("source".into(), json!(c.provenance));
    if let Some(t) = &c.title {
        m.insert("title".into(), json!(t));
    }
    m.insert("content".into(), json!(c.content));
    m.insert("score".into(), json!(score));
    m.insert("metadata".into(), Value::Object(meta));
    m.insert("observed_at".into(), json!(ms_to_rfc3339(c.timestamp_ms)));
    Value::Object(m)
}

impl MemoryEngine {
    /// `{query, mode?, filter?, limit?, cursor?}` → `{items, next_cursor?, vector_tier?}`
    /// (`vector_tier`: `fast` or `deep`, the vector tier that ranked them, when one did).
    pub fn fetch(&self, p: Value) -> Result<Value, MemoryError> {
        let p: FetchParams = parse(p, &["query", "mode", "filter", "limit", "cursor"], "params")?;
        let query = required("query", &p.query)?;
        let mode_name = p.mode.as_deref().unwrap_or("hybrid");
        let mode = Mode::parse(mode_name)
            .ok_or_else(|| invalid(format!("mode must be keyword, vector or hybrid, got `{mode_name}`")))?;
        let filter = Filter::parse(p.filter.as_ref())?;
        filter.settle_entities(&self.inner)?;
        let limit = bounded("limit", p.limit, 10, 1, MAX_LIMIT)?;
        let fp = fingerprint(&["fetch", query, mode_name, &filter.canonical()]);
        let offset = decode(&p.cursor, &fp)?.and_then(|c| c.o).unwrap_or(0);
        if offset >= FETCH_WINDOW {
            return Ok(json!({ "items": [] }));
        }
        let want = (offset + limit + 1).min(FETCH_WINDOW);
        let inner = &self.inner;
        let conn = inner.read_conn()?;
        let ranked = search::rank(inner, &conn, query, mode, &filter, want, FETCH_WINDOW, None)?;
        let hits = ranked.hits;
        let more = hits.len() > offset + limit;
        let page: Vec<_> = hits.into_iter().skip(offset).take(limit).collect();
        let items: Vec<Value> =
            search::load_hits(&conn, page)?.iter().map(|(c, h)| item_json(c, Some(h.score))).collect();
        let mut out = json!({ "items": items });
        if let Some(tier) = ranked.tier {
            out["vector_tier"] = json!(tier.name());
        }
        if more {
            out["next_cursor"] = json!(encode(&Cursor { h: fp, o: Some(offset + limit), ..Cursor::default() }));
        }
        Ok(out)
    }

    /// `{filter?, limit?, cursor?}` → `{items, total, next_cursor?}`: stored items, newest
    /// first (rowid breaks ties), `total` counting every item the filter matches.
    pub fn list(&self, p: Value) -> Result<Value, MemoryError> {
        let p: ListParams = parse(p, &["filter", "limit", "cursor"], "params")?;
        let filter = Filter::parse(p.filter.as_ref())?;
        filter.settle_entities(&self.inner)?;
        let limit = bounded("limit", p.limit, 10, 1, MAX_LIMIT)?;
        let fp = fingerprint(&["list", &filter.canonical()]);
        let after = decode(&p.cursor, &fp)?;
        let conn = self.inner.read_conn()?;
        let (pred, mut args) = filter.sql();
        let total: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM chunks c WHERE {pred}"))?
            .query_row(params_from_iter(args.iter().map(|a| a.as_ref())), |r| r.get(0))?;
        let mut sql = format!("SELECT {CHUNK_COLUMNS} FROM chunks c WHERE {pred}");
        if let Some(after) = after {
            let (t, r) = keyset_rowid(&after)?;
            args.push(Box::new(t));
            args.push(Box::new(r));
            let (a, b) = (args.len() - 1, args.len());
            sql.push_str(&format!(" AND (c.timestamp_ms < ?{a} OR (c.timestamp_ms = ?{a} AND c.rowid < ?{b}))"));
        }
        args.push(Box::new(limit as i64 + 1));
        sql.push_str(&format!(" ORDER BY c.timestamp_ms DESC, c.rowid DESC LIMIT ?{}", args.len()));
        let mut rows: Vec<ChunkRow> = conn
            .prepare_cached(&sql)?
            .query_map(params_from_iter(args.iter().map(|a| a.as_ref())), chunk_from_row)?
            .collect::<rusqlite::Result<_>>()?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        search::attach_tags(&conn, &mut rows)?;
        let items: Vec<Value> = rows.iter().map(|c| item_json(c, None)).collect();
        let mut out = json!({ "items": items, "total": total });
        if let (true, Some(last)) = (more, rows.last()) {
            let c = Cursor { h: fp, t: Some(last.timestamp_ms), r: Some(last.rowid), ..Cursor::default() };
            out["next_cursor"] = json!(encode(&c));
        }
        Ok(out)
    }
}
