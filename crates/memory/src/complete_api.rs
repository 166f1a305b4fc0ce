//! Prefix completion of what a user names when filling in a prompt or a resource URI: topics
//! (entity display names, most mentioned first, matched without regard to ASCII case), source ids
//! and chunk ids (matched exactly, in id order, by an index range). Each answer carries the
//! values and how many matched in all.

use super::{MemoryEngine, MemoryError, entities};

/// What is being completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completable {
    /// Entity display names (topics, people, organisations, …) with chunks in memory.
    Topic,
    /// Ids of sources that hold chunks.
    Source,
    /// Chunk ids (the ids of stored memory items).
    Chunk,
}

/// Most values one completion returns.
const MAX_LIMIT: usize = 1000;

/// The `LIKE` pattern matching text that starts with `prefix` (`\` escapes).
fn like_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// The exclusive upper end of the ids starting with `prefix` under binary collation: no valid
/// UTF-8 sorts after U+10FFFF.
fn prefix_end(prefix: &str) -> String {
    format!("{prefix}\u{10FFFF}")
}

/// Completions of a prefix: the best few, and how many match in all.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Completions {
    pub values: Vec<String>,
    pub total: i64,
}

impl MemoryEngine {
    /// Up to `limit` values starting with `prefix`, best first, and the number of all that match.
    pub fn complete(&self, what: Completable, prefix: &str, limit: usize) -> Result<Completions, MemoryError> {
        let limit = limit.clamp(1, MAX_LIMIT) as i64;
        if what == Completable::Topic {
            entities::settle(&self.inner)?;
        }
        let conn = self.inner.read_conn()?;
        // Topics match a LIKE pattern (?1); ids an index range [?1, ?2). ?3 is the limit. The
        // topic query names ?2 only so that every query binds the same parameters.
        let (from, order) = match what {
            Completable::Topic => (
                "FROM entities WHERE chunk_count > 0 AND display_name LIKE ?1 ESCAPE '\\' AND ?2 = ?2",
                "GROUP BY display_name ORDER BY max(mention_count) DESC, display_name",
            ),
            Completable::Source => (
                "FROM sources s WHERE source_id >= ?1 AND source_id < ?2
                 AND EXISTS (SELECT 1 FROM chunks c WHERE c.source_id = s.source_id)",
                "ORDER BY source_id",
            ),
            Completable::Chunk => ("FROM chunks WHERE id >= ?1 AND id < ?2", "ORDER BY id"),
        };
        let (column, count) = match what {
            Completable::Topic => ("display_name", "count(DISTINCT display_name)"),
            Completable::Source => ("source_id", "count(*)"),
            Completable::Chunk => ("id", "count(*)"),
        };
        let start = if what == Completable::Topic { like_prefix(prefix) } else { prefix.to_string() };
        let end = prefix_end(prefix);
        let values: Vec<String> = conn
            .prepare_cached(&format!("SELECT {column} {from} {order} LIMIT ?3"))?
            .query_map(rusqlite::params![start, end, limit], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let total: i64 = conn
            .prepare_cached(&format!("SELECT {count} {from}"))?
            .query_row(rusqlite::params![start, end], |r| r.get(0))?;
        Ok(Completions { values, total })
    }
}
