//! What `search` and `recall` share beyond the ranker: the preferred project's boost and
//! `as_of`, the answer as of a date.
//!
//! - `prefer_project` (the daemon fills in the session's project when the caller names none):
//!   a hit of that project gains `project_boost` — added to the blended score of recall (where
//!   the best hit scores 1), multiplied into search's BM25 score as `1 + project_boost`. The
//!   rankers are asked for three times the hits first, so a project's chunk just outside the
//!   top can move in. `project_boost` 0 turns it off.
//! - `as_of` (RFC 3339): only chunks observed by then, and a chunk counts as superseded only by
//!   a replacement observed by then.
//!
//! Whatever the ranking, a current version comes before the versions it replaced (see
//! `current_first`); `memory.search` answers with current versions only (and superseded chat
//! chunks, marked: a conversation holds more than the fact), `memory.recall` with the replaced
//! ones too, marked.

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;

use super::filter_params::project_arg;
use crate::MemoryError;
use crate::facts;
use crate::filter::Filter;
use crate::search::{self, ChunkRow, Hit, Mode};
use crate::sql::rarray;
use crate::util::rfc3339_to_ms;

/// What a chunk of the preferred project gains by default (the daemon's
/// `memory.project_boost` sets another default).
pub const DEFAULT_PROJECT_BOOST: f64 = 0.2;

/// The shaping of one search or recall.
pub(crate) struct Shaping {
    prefer: Option<String>,
    boost: f64,
    pub as_of: Option<i64>,
}

impl Shaping {
    pub fn of(prefer: &Option<String>, boost: Option<f64>, as_of: &Option<String>) -> Result<Shaping, MemoryError> {
        let as_of = match as_of {
            Some(t) => Some(as_of_ms(t).ok_or_else(|| {
                MemoryError::InvalidParams(format!(
                    "as_of must be a date (2024-05-01) or an RFC 3339 time such as 2024-05-01T00:00:00Z, got `{}`",
                    t.chars().take(64).collect::<String>()
                ))
            })?),
            None => None,
        };
        Ok(Shaping {
            prefer: project_arg("prefer_project", prefer)?,
            boost: boost.unwrap_or(DEFAULT_PROJECT_BOOST),
            as_of,
        })
    }

    fn boosting(&self) -> Option<&str> {
        self.prefer.as_deref().filter(|_| self.boost > 0.0)
    }

    /// How many hits to ask the rankers for, to return `k`.
    pub fn want(&self, k: usize) -> usize {
        if self.boosting().is_some() { (k * 3).max(30) } else { k }
    }

    /// The filter with `as_of` as its latest time.
    pub fn narrow(&self, filter: &mut Filter) {
        if let Some(t) = self.as_of {
            filter.before_ms = Some(filter.before_ms.map_or(t, |b| b.min(t)));
        }
    }

    /// The preferred project's hits boosted, best first, cut to `k`.
    pub fn boost(&self, conn: &Connection, mut hits: Vec<Hit>, mode: Mode, k: usize) -> Result<Vec<Hit>, MemoryError> {
        if let Some(project) = self.boosting() {
            let ids: Vec<i64> = hits.iter().map(|h| h.rowid).collect();
            let mine: std::collections::HashSet<i64> = conn
                .prepare_cached("SELECT rowid FROM chunks WHERE rowid IN rarray(?1) AND project = ?2")?
                .query_map(rusqlite::params![rarray(&ids), project], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for h in hits.iter_mut().filter(|h| mine.contains(&h.rowid)) {
                match mode {
                    Mode::Keyword => h.score *= 1.0 + self.boost,
                    _ => h.score += self.boost,
                }
            }
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.rowid.cmp(&a.rowid)));
        }
        hits.truncate(k);
        Ok(hits)
    }

    /// Only the hits nothing replaced (as of the date): what `memory.search` answers with. A
    /// chat chunk is a conversation, which says more than the one fact a later message updated:
    /// it stays listed, marked.
    pub fn current_only<H>(&self, hits: Vec<(ChunkRow, H)>) -> Vec<(ChunkRow, H)> {
        hits.into_iter().filter(|(c, _)| c.superseded.is_none() || c.kind == "chat").collect()
    }

    /// Loaded hits marked as of the date and with current versions first.
    pub fn order<H: Clone>(
        &self,
        conn: &Connection,
        hits: Vec<(ChunkRow, H)>,
    ) -> Result<Vec<(ChunkRow, H)>, MemoryError> {
        let hits = self.mark(conn, hits)?;
        current_first(conn, hits, self.as_of)
    }

    /// Loaded hits marked superseded as of the date (every load marks them as of now).
    pub fn mark<H>(&self, conn: &Connection, mut hits: Vec<(ChunkRow, H)>) -> Result<Vec<(ChunkRow, H)>, MemoryError> {
        if self.as_of.is_some() {
            let mut rows: Vec<ChunkRow> = hits.iter().map(|(c, _)| c.clone()).collect();
            search::attach_superseded(conn, &mut rows, self.as_of)?;
            for ((c, _), r) in hits.iter_mut().zip(rows) {
                c.superseded = r.superseded;
            }
        }
        Ok(hits)
    }
}

/// Puts every current version before the versions it replaced: a superseded hit whose
/// replacement ranks lower (or not at all) has the replacement moved (or loaded) just before it,
/// taking its ranking (`H`: the hit's scores).
fn current_first<H: Clone>(
    conn: &Connection,
    hits: Vec<(ChunkRow, H)>,
    as_of: Option<i64>,
) -> Result<Vec<(ChunkRow, H)>, MemoryError> {
    if hits.iter().all(|(c, _)| c.superseded.is_none()) {
        return Ok(hits);
    }
    let by_row: HashMap<i64, usize> = hits.iter().enumerate().map(|(i, (c, _))| (c.rowid, i)).collect();
    let mut slots: Vec<Option<(ChunkRow, H)>> = hits.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len() + 2);
    let mut placed: HashSet<i64> = HashSet::new();
    for i in 0..slots.len() {
        let Some((c, h)) = slots[i].take() else { continue };
        if c.superseded.is_some()
            && let Some(cur) = facts::current(conn, &c.id, as_of)?
            && cur != c.rowid
            && !placed.contains(&cur)
        {
            let moved = match by_row.get(&cur) {
                Some(&j) => slots[j].take().map(|(cc, _)| cc),
                None => {
                    let mut rows = search::load_chunks(conn, &[cur])?;
                    search::attach_superseded(conn, &mut rows, as_of)?;
                    rows.pop()
                }
            };
            if let Some(m) = moved {
                placed.insert(m.rowid);
                out.push((m, h.clone()));
            }
        }
        placed.insert(c.rowid);
        out.push((c, h));
    }
    Ok(out)
}

/// `as_of` as milliseconds: an RFC 3339 time, or a plain date (`YYYY-MM-DD`), which means the end
/// of that day in UTC, so what was current on that date includes what was observed during it.
fn as_of_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    rfc3339_to_ms(text).or_else(|| {
        let day = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
        let next = day.succ_opt()?.and_hms_opt(0, 0, 0)?.and_utc();
        Some(next.timestamp_millis() - 1)
    })
}

#[cfg(test)]
mod tests {
    use super::as_of_ms;

    #[test]
    fn as_of_takes_a_time_or_a_whole_day() {
        let day_end = as_of_ms("2025-06-01").unwrap();
        assert_eq!(day_end, as_of_ms("2025-06-02T00:00:00Z").unwrap() - 1, "a date means the end of that day");
        assert_eq!(as_of_ms(" 2025-06-01T12:00:00+02:00 "), as_of_ms("2025-06-01T10:00:00Z"));
        assert_eq!(as_of_ms("June 2025"), None);
        assert_eq!(as_of_ms("2025-13-01"), None);
    }
}
