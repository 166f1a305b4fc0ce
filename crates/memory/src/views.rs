//! Read views a dashboard draws: `timeline` (chunks remembered per day or week, over the whole
//! store or for one entity's mentions) and `neighbours` (the chunks just before and after one
//! in its source, for reading a hit in context). JSON parameters in, JSON results out.

use rusqlite::OptionalExtension;
use serde::Deserialize;
use serde_json::{Value, json};

use super::params::{bounded, invalid, optional, parse, required};
use super::read_api::no_chunk;
use super::util::{ms_to_rfc3339, preview};
use super::{MemoryEngine, MemoryError};

const DAY_MS: i64 = 86_400_000;
/// The most buckets one timeline returns (the latest ones): a bit over a year of days.
const MAX_BUCKETS: usize = 400;
/// Neighbours each side at most.
const MAX_AROUND: usize = 5;

#[derive(Deserialize)]
struct TimelineParams {
    bucket: Option<String>,
    entity_id: Option<String>,
}

#[derive(Deserialize)]
struct NeighboursParams {
    chunk_id: String,
    around: Option<i64>,
}

impl MemoryEngine {
    /// `{bucket?: day|week, entity_id?}` → `{bucket, points: [{start_ms, start, chunks}]}`:
    /// how many chunks carry a time in each day (UTC) or week (starting Monday, UTC), oldest
    /// first, the latest 400 buckets at most; with `entity_id`, only chunks that mention it.
    /// Empty buckets are left out.
    pub fn timeline(&self, p: Value) -> Result<Value, MemoryError> {
        let p: TimelineParams = parse(p, &["bucket", "entity_id"], "params")?;
        let bucket = p.bucket.as_deref().unwrap_or("day");
        // Day 0 of the epoch was a Thursday: shifting by 3 days starts weeks on Mondays.
        let (width, shift) = match bucket {
            "day" => (DAY_MS, 0),
            "week" => (7 * DAY_MS, 3 * DAY_MS),
            other => return Err(invalid(format!("bucket must be day or week, got `{other}`"))),
        };
        let entity = optional("entity_id", &p.entity_id)?;
        let conn = self.inner.read_conn()?;
        let from = match entity {
            None => "chunks c".to_string(),
            Some(_) => "chunks c JOIN chunk_entities e ON e.chunk_rowid = c.rowid AND e.entity_id = ?3".to_string(),
        };
        let sql = format!(
            "SELECT (c.timestamp_ms + ?1) / ?2 AS b, count(*) FROM {from} WHERE c.timestamp_ms >= 0
             GROUP BY b ORDER BY b DESC LIMIT {MAX_BUCKETS}"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let row = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?));
        let mut rows: Vec<(i64, i64)> = match entity {
            None => stmt.query_map(rusqlite::params![shift, width], row)?.collect::<rusqlite::Result<_>>()?,
            Some(e) => stmt.query_map(rusqlite::params![shift, width, e], row)?.collect::<rusqlite::Result<_>>()?,
        };
        rows.reverse();
        let points: Vec<Value> = rows
            .into_iter()
            .map(|(b, n)| {
                let start = b * width - shift;
                json!({ "start_ms": start, "start": ms_to_rfc3339(start), "chunks": n })
            })
            .collect();
        Ok(json!({ "bucket": bucket, "entity_id": entity, "points": points }))
    }

    /// `{chunk_id, around?}` → `{chunk_id, source_id, before, after}`: up to `around` (default
    /// 2, at most 5) chunks of the same source on each side, by their order in the source, each
    /// with its id, position, time, title and a preview.
    pub fn neighbours(&self, p: Value) -> Result<Value, MemoryError> {
        let p: NeighboursParams = parse(p, &["chunk_id", "around"], "params")?;
        let id = required("chunk_id", &p.chunk_id)?.trim();
        let around = bounded("around", p.around, 2, 1, MAX_AROUND)? as i64;
        let conn = self.inner.read_conn()?;
        let (source_id, seq): (String, i64) = conn
            .prepare_cached("SELECT source_id, seq_in_source FROM chunks WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| no_chunk(id))?;
        let side = |sql: &str| -> Result<Vec<Value>, MemoryError> {
            let mut rows: Vec<Value> = conn
                .prepare_cached(sql)?
                .query_map(rusqlite::params![source_id, seq, around], |r| {
                    let content: String = r.get(4)?;
                    Ok(json!({
                        "chunk_id": r.get::<_, String>(0)?, "seq_in_source": r.get::<_, i64>(1)?,
                        "timestamp_ms": r.get::<_, i64>(2)?, "title": r.get::<_, Option<String>>(3)?,
                        "preview": preview(content.trim(), 300),
                    }))
                })?
                .collect::<rusqlite::Result<_>>()?;
            rows.sort_by_key(|v| v["seq_in_source"].as_i64());
            Ok(rows)
        };
        let before = side(
            "SELECT id, seq_in_source, timestamp_ms, title, content FROM chunks
             WHERE source_id = ?1 AND seq_in_source < ?2 ORDER BY seq_in_source DESC LIMIT ?3",
        )?;
        let after = side(
            "SELECT id, seq_in_source, timestamp_ms, title, content FROM chunks
             WHERE source_id = ?1 AND seq_in_source > ?2 ORDER BY seq_in_source LIMIT ?3",
        )?;
        Ok(json!({ "chunk_id": id, "source_id": source_id, "before": before, "after": after }))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn week_buckets_start_on_monday() {
        // 2026-11-30 is a Monday; 2026-12-06 (Sunday) falls in its week, 2026-12-07 does not.
        let monday = 1_795_996_800_000_i64;
        let (width, shift) = (7 * super::DAY_MS, 3 * super::DAY_MS);
        let bucket = |ms: i64| (ms + shift) / width;
        assert_eq!(bucket(monday) * width - shift, monday);
        assert_eq!(bucket(monday + 6 * super::DAY_MS + 1), bucket(monday));
        assert_ne!(bucket(monday + 7 * super::DAY_MS), bucket(monday));
    }
}
