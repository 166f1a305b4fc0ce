//! `tree.read_chunk` (`openhuman.memory_tree_get_chunk`): one chunk in full, with its source,
//! time, tags, entities, notes, metadata and the links of the note it belongs to.

use openhuman_schema::params;
use rusqlite::OptionalExtension;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{ID_CHARS, Operation};
use crate::error::no_chunk;
use crate::links::{Backlink, Link};
use crate::search::{self, CHUNK_COLUMNS, chunk_from_row};
use crate::util::ms_to_rfc3339;
use crate::{MemoryEngine, MemoryError, entities};

params! {
    /// Which chunk to read.
    pub struct ReadChunkParams {
        chunk_id: String = string("A chunk id from search, recall or browse.").required().max_chars(ID_CHARS),
    }
}

impl ReadChunkParams {
    pub fn of(chunk_id: impl Into<String>) -> ReadChunkParams {
        ReadChunkParams { chunk_id: chunk_id.into() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chunk {
    pub chunk_id: String,
    pub source_kind: String,
    pub source_id: String,
    pub source_ref: String,
    /// The stored item (document, message, note) the chunk is part of.
    pub item_id: String,
    pub owner: Option<String>,
    /// The provenance label of whoever wrote it (`mcp:cursor`, `ingest`, …).
    pub source: String,
    pub timestamp_ms: i64,
    pub observed_at: String,
    pub seq_in_source: i64,
    pub title: Option<String>,
    pub content: String,
    pub token_count: i64,
    pub tags: Vec<String>,
    /// What ingest recorded about the chunk; its keys depend on the format it came from.
    pub metadata: Map<String, Value>,
    pub entity_ids: Vec<String>,
    pub notes: Vec<Note>,
    pub created_at_ms: i64,
    pub links: Vec<Link>,
    pub backlinks: Vec<Backlink>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    pub id: String,
    pub text: String,
    pub key: String,
    pub source: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

pub struct ReadChunk;

impl Operation for ReadChunk {
    const METHOD: &'static str = "openhuman.memory_tree_get_chunk";
    type Params = ReadChunkParams;
    type Output = Chunk;
    fn run(engine: &MemoryEngine, p: ReadChunkParams) -> Result<Chunk, MemoryError> {
        engine.read_chunk(p)
    }
}

impl MemoryEngine {
    /// The whole chunk with metadata, tags, entity ids and notes.
    pub fn read_chunk(&self, p: ReadChunkParams) -> Result<Chunk, MemoryError> {
        let id = p.chunk_id.trim();
        entities::settle(&self.inner)?;
        let conn = self.inner.read_conn()?;
        let sql = format!("SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.id = ?1");
        let mut c =
            conn.prepare_cached(&sql)?.query_row([id], chunk_from_row).optional()?.ok_or_else(|| no_chunk(id))?;
        search::attach_tags(&conn, std::slice::from_mut(&mut c))?;
        let entity_ids: Vec<String> = conn
            .prepare_cached("SELECT entity_id FROM chunk_entities WHERE chunk_rowid = ?1 ORDER BY entity_id")?
            .query_map([c.rowid], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let notes: Vec<Note> = conn
            .prepare_cached(
                "SELECT item_id, text, key, provenance, created_at_ms, updated_at_ms FROM notes WHERE chunk_id = ?1
                 ORDER BY created_at_ms",
            )?
            .query_map([&c.id], |r| {
                Ok(Note {
                    id: r.get(0)?,
                    text: r.get(1)?,
                    key: r.get(2)?,
                    source: r.get(3)?,
                    created_at_ms: r.get(4)?,
                    updated_at_ms: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let file_path = c.metadata.get("file_path").and_then(Value::as_str);
        let (links, backlinks) = crate::links::of_source(&conn, &c.source_id, file_path)?;
        Ok(Chunk {
            observed_at: ms_to_rfc3339(c.timestamp_ms),
            chunk_id: c.id,
            source_kind: c.kind,
            source_id: c.source_id,
            source_ref: c.source_ref,
            item_id: c.origin,
            owner: c.owner,
            source: c.provenance,
            timestamp_ms: c.timestamp_ms,
            seq_in_source: c.seq_in_source,
            title: c.title,
            content: c.content,
            token_count: c.token_count,
            tags: c.tags,
            metadata: c.metadata,
            entity_ids,
            notes,
            created_at_ms: c.created_at_ms,
            links,
            backlinks,
        })
    }
}
