//! `openhuman.memory_timeline` (the dashboard's timeline): how many chunks carry a time in each
//! day (UTC), week (starting Monday, UTC), month or year (UTC), oldest first, the latest 400
//! buckets at most;
//! with an entity, only the chunks that mention it. Empty buckets are left out.

use openhuman_schema::params;
use serde::Serialize;

use super::Operation;
use crate::util::ms_to_rfc3339;
use crate::{MemoryEngine, MemoryError};

const DAY_MS: i64 = 86_400_000;
/// The most buckets one timeline returns (the latest ones): a bit over a year of days.
const MAX_BUCKETS: usize = 400;

params! {
    /// Which buckets, over which chunks.
    pub struct TimelineParams {
        #[serde(skip_serializing_if = "Option::is_none")]
        bucket: Option<String> = one_of(
            "Count per day (default), week (from Monday), month or year, in UTC.",
            &["day", "week", "month", "year"]
        ),
        #[serde(skip_serializing_if = "Option::is_none")]
        entity_id: Option<String> =
            string("Only chunks mentioning this entity, e.g. person:alice-smith.").max_chars(512),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineResult {
    pub bucket: String,
    pub entity_id: Option<String>,
    pub points: Vec<TimelinePoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelinePoint {
    pub start_ms: i64,
    pub start: String,
    pub chunks: i64,
}

pub struct Timeline;

impl Operation for Timeline {
    const METHOD: &'static str = "openhuman.memory_timeline";
    type Params = TimelineParams;
    type Output = TimelineResult;
    fn run(engine: &MemoryEngine, p: TimelineParams) -> Result<TimelineResult, MemoryError> {
        engine.timeline(p)
    }
}

/// The SQL that gives the start (ms since epoch, UTC) of the bucket a chunk's time falls in.
/// Days and weeks are fixed widths from the epoch (day 0 was a Thursday, so shifting by 3 days
/// starts weeks on Mondays); months and years come from SQLite's calendar.
fn bucket_start(bucket: &str) -> Result<String, MemoryError> {
    let fixed = |width: i64, shift: i64| format!("((c.timestamp_ms + {shift}) / {width}) * {width} - {shift}");
    let calendar =
        |start: &str| format!("CAST(strftime('%s', c.timestamp_ms / 1000, 'unixepoch', '{start}') AS INTEGER) * 1000");
    match bucket {
        "day" => Ok(fixed(DAY_MS, 0)),
        "week" => Ok(fixed(7 * DAY_MS, 3 * DAY_MS)),
        "month" => Ok(calendar("start of month")),
        "year" => Ok(calendar("start of year")),
        other => Err(MemoryError::InvalidParams(format!("bucket must be day, week, month or year, got `{other}`"))),
    }
}

impl MemoryEngine {
    /// Chunks remembered per day or week.
    pub fn timeline(&self, p: TimelineParams) -> Result<TimelineResult, MemoryError> {
        let bucket = p.bucket.as_deref().unwrap_or("day");
        let start = bucket_start(bucket)?;
        let entity = p.entity_id.as_deref();
        let conn = self.inner.read_conn()?;
        let from = match entity {
            None => "chunks c".to_string(),
            Some(_) => "chunks c JOIN chunk_entities e ON e.chunk_rowid = c.rowid AND e.entity_id = ?1".to_string(),
        };
        let sql = format!(
            "SELECT {start} AS b, count(*) FROM {from} WHERE c.timestamp_ms >= 0
             GROUP BY b ORDER BY b DESC LIMIT {MAX_BUCKETS}"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let row = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?));
        let mut rows: Vec<(i64, i64)> = match entity {
            None => stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?,
            Some(e) => stmt.query_map(rusqlite::params![e], row)?.collect::<rusqlite::Result<_>>()?,
        };
        rows.reverse();
        let points = rows
            .into_iter()
            .map(|(start, n)| TimelinePoint { start_ms: start, start: ms_to_rfc3339(start), chunks: n })
            .collect();
        Ok(TimelineResult { bucket: bucket.to_string(), entity_id: p.entity_id, points })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn week_buckets_start_on_monday() {
        // 2026-11-30 is a Monday; 2026-12-06 (Sunday) falls in its week, 2026-12-07 does not.
        let monday = 1_795_996_800_000_i64;
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let start = |bucket: &str, ms: i64| -> i64 {
            let sql = format!("SELECT {} FROM (SELECT ?1 AS timestamp_ms) c", super::bucket_start(bucket).unwrap());
            conn.query_row(&sql, [ms], |r| r.get(0)).unwrap()
        };
        assert_eq!(start("week", monday), monday);
        assert_eq!(start("week", monday + 6 * super::DAY_MS + 1), monday);
        assert_eq!(start("week", monday + 7 * super::DAY_MS), monday + 7 * super::DAY_MS);
        // 2026-12-01 and the start of its year, 2026-01-01.
        assert_eq!(start("month", monday + super::DAY_MS + 5_000), monday + super::DAY_MS);
        assert_eq!(start("year", monday), 1_767_225_600_000);
        assert_eq!(start("day", monday + 5_000), monday);
    }
}
