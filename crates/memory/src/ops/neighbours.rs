//! `openhuman.memory_neighbours` (a hit in context on the dashboard): the chunks just before and
//! after one in its source, by their order in the source, each with its id, position, time,
//! title and a preview.

use openhuman_schema::params;
use rusqlite::OptionalExtension;
use serde::Serialize;

use super::{ID_CHARS, Operation};
use crate::error::no_chunk;
use crate::util::preview;
use crate::{MemoryEngine, MemoryError};

params! {
    /// Which chunk, and how many on each side.
    pub struct NeighboursParams {
        chunk_id: String = string("A chunk id from search, recall or browse.").required().max_chars(ID_CHARS),
        #[serde(skip_serializing_if = "Option::is_none")]
        around: Option<usize> = int("Chunks on each side (default 2).", 1, 5),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NeighboursResult {
    pub chunk_id: String,
    pub source_id: String,
    pub before: Vec<Neighbour>,
    pub after: Vec<Neighbour>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Neighbour {
    pub chunk_id: String,
    pub seq_in_source: i64,
    pub timestamp_ms: i64,
    pub title: Option<String>,
    pub preview: String,
}

pub struct Neighbours;

impl Operation for Neighbours {
    const METHOD: &'static str = "openhuman.memory_neighbours";
    type Params = NeighboursParams;
    type Output = NeighboursResult;
    fn run(engine: &MemoryEngine, p: NeighboursParams) -> Result<NeighboursResult, MemoryError> {
        engine.neighbours(p)
    }
}

impl MemoryEngine {
    /// Up to `around` (default 2) chunks of the same source on each side of one.
    pub fn neighbours(&self, p: NeighboursParams) -> Result<NeighboursResult, MemoryError> {
        let id = p.chunk_id.trim();
        let around = p.around.unwrap_or(2) as i64;
        let conn = self.inner.read_conn()?;
        let (source_id, seq): (String, i64) = conn
            .prepare_cached("SELECT source_id, seq_in_source FROM chunks WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| no_chunk(id))?;
        let side = |sql: &str| -> Result<Vec<Neighbour>, MemoryError> {
            let mut rows: Vec<Neighbour> = conn
                .prepare_cached(sql)?
                .query_map(rusqlite::params![source_id, seq, around], |r| {
                    let content: String = r.get(4)?;
                    Ok(Neighbour {
                        chunk_id: r.get(0)?,
                        seq_in_source: r.get(1)?,
                        timestamp_ms: r.get(2)?,
                        title: r.get(3)?,
                        preview: preview(content.trim(), 300),
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            rows.sort_by_key(|n| n.seq_in_source);
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
        Ok(NeighboursResult { chunk_id: id.to_string(), source_id, before, after })
    }
}
