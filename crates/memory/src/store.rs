//! Write-side SQL: inserting chunks with their tags, filter metadata and people (what their
//! text mentions is extracted after the write, see `entities`), and
//! deleting them with tombstones, all inside the caller's transaction. Every function
//! here takes the transaction's `db_seq` so the derived indexes can follow the change.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value};

use super::sql::rarray;
use super::types::SourceKind;
use super::util::{chunk_id, estimate_tokens};
use super::{entities, facts, links, project};

/// Metadata keys that filters match exactly; copied into `chunk_meta` for indexed lookups.
pub(crate) const FILTER_META_KEYS: &[&str] =
    &["workspace", "folder", "file_path", "language", "repo", "commit", "url", "thread_id", "agent_id"];

/// A chunk about to be written. Its id is derived from kind, source, sequence and content.
#[derive(Debug, Clone)]
pub(crate) struct NewChunk {
    pub kind: SourceKind,
    pub source_id: String,
    pub source_ref: String,
    /// What the chunk was written from: `file:<path>`, a document/note/learning item id.
    /// Re-ingest and upserts replace chunks by origin.
    pub origin: String,
    pub owner: Option<String>,
    pub provenance: String,
    pub timestamp_ms: i64,
    pub seq: i64,
    pub title: Option<String>,
    pub content: String,
    pub metadata: Map<String, Value>,
    pub tags: Vec<String>,
    /// The project (see `project`); none: `metadata.project` if it names one.
    pub project: Option<String>,
}

impl NewChunk {
    pub fn id(&self) -> String {
        chunk_id(self.kind, &self.source_id, &self.source_ref, self.seq, &self.content)
    }

    /// The chunk as entity extraction reads it.
    pub fn view(&self) -> entities::ChunkView<'_> {
        entities::ChunkView {
            kind: self.kind,
            title: self.title.as_deref(),
            content: &self.content,
            metadata: &self.metadata,
            tags: &self.tags,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct NewSource {
    pub source_id: String,
    pub kind: SourceKind,
    pub display_name: String,
    pub metadata: Map<String, Value>,
}

/// A scalar metadata value as text (objects and arrays: none).
pub(crate) fn meta_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Inserts chunks; returns `(rowid, id)` of each chunk actually written. A chunk whose
/// id already exists is skipped (same kind, source, sequence and content = same chunk).
pub(crate) fn insert_chunks(
    conn: &Connection,
    seq: i64,
    chunks: &[NewChunk],
    now: i64,
) -> rusqlite::Result<Vec<(i64, String)>> {
    insert_chunks_as(conn, seq, chunks.iter().map(|c| (c, c.id(), now)), now)
}

/// Inserts chunks under the given ids and creation times (an import keeps both as exported: a
/// renamed file's chunks keep the ids they had); otherwise as [`insert_chunks`]. `now` dates
/// what entity extraction records (a merge of two names of one person).
pub(crate) fn insert_chunks_as<'a>(
    conn: &Connection,
    seq: i64,
    chunks: impl Iterator<Item = (&'a NewChunk, String, i64)>,
    now: i64,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut ins = conn.prepare_cached(
        "INSERT OR IGNORE INTO chunks (id, source_kind, source_id, source_ref, origin, owner, provenance, timestamp_ms,
            seq_in_source, title, content, token_count, metadata, created_at_ms, change_seq, project)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?;
    let mut tag =
        conn.prepare_cached("INSERT OR IGNORE INTO chunk_tags (chunk_rowid, tag, origin_key) VALUES (?1, ?2, '')")?;
    let mut meta =
        conn.prepare_cached("INSERT OR IGNORE INTO chunk_meta (key, value, chunk_rowid) VALUES (?1, ?2, ?3)")?;
    let chunks: Vec<(&NewChunk, String, i64)> = chunks.collect();
    entities::register_parties(conn, chunks.iter().map(|(c, _, _)| c.view()), now)?;
    let mut written = Vec::with_capacity(chunks.len());
    for (c, id, created_at_ms) in chunks {
        let metadata = Value::Object(c.metadata.clone()).to_string();
        let project = c.project.as_deref().and_then(project::normalize).or_else(|| project::from_metadata(&c.metadata));
        let n = ins.execute(params![
            id,
            c.kind.as_str(),
            c.source_id,
            c.source_ref,
            c.origin,
            c.owner,
            c.provenance,
            c.timestamp_ms,
            c.seq,
            c.title,
            c.content,
            estimate_tokens(&c.content) as i64,
            metadata,
            created_at_ms,
            seq,
            project
        ])?;
        if n == 0 {
            continue;
        }
        let rowid = conn.last_insert_rowid();
        for t in &c.tags {
            tag.execute(params![rowid, t])?;
        }
        for key in FILTER_META_KEYS {
            if let Some(v) = c.metadata.get(*key).and_then(meta_string) {
                meta.execute(params![key, v, rowid])?;
            }
        }
        // What the text mentions is read by the background thread (`entities`).
        entities::index_chunk(conn, rowid, &c.view(), now, false)?;
        written.push((rowid, id));
    }
    Ok(written)
}

/// Deletes the given chunks with everything hanging off them, leaving a tombstone per
/// chunk for the derived indexes. Sources left without chunks are removed.
pub(crate) fn delete_chunks(conn: &Connection, seq: i64, rowids: &[i64]) -> rusqlite::Result<usize> {
    if rowids.is_empty() {
        return Ok(0);
    }
    let ids = rarray(rowids);
    let sources: Vec<String> = conn
        .prepare_cached("SELECT DISTINCT source_id FROM chunks WHERE rowid IN rarray(?1)")?
        .query_map([&ids], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let gone = entities::unindex_chunks(conn, rowids)?;
    entities::drop_aliases(conn, &gone)?;
    conn.prepare_cached("DELETE FROM chunk_tags WHERE chunk_rowid IN rarray(?1)")?.execute([&ids])?;
    conn.prepare_cached("DELETE FROM chunk_meta WHERE chunk_rowid IN rarray(?1)")?.execute([&ids])?;
    facts::chunks_deleted(conn, rowids)?;
    conn.prepare_cached(
        "INSERT INTO tombstones (seq, chunk_rowid) SELECT ?1, rowid FROM chunks WHERE rowid IN rarray(?2)",
    )?
    .execute(params![seq, &ids])?;
    let n = conn.prepare_cached("DELETE FROM chunks WHERE rowid IN rarray(?1)")?.execute([&ids])?;
    let emptied: Vec<String> = conn
        .prepare_cached(
            "DELETE FROM sources WHERE source_id IN rarray(?1)
             AND NOT EXISTS (SELECT 1 FROM chunks WHERE chunks.source_id = sources.source_id) RETURNING source_id",
        )?
        .query_map([rarray(&sources)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    links::delete_for(conn, &emptied)?;
    Ok(n)
}

/// Rowids of the chunks written from `origin`.
pub(crate) fn rowids_by_origin(conn: &Connection, origin: &str) -> rusqlite::Result<Vec<i64>> {
    conn.prepare_cached("SELECT rowid FROM chunks WHERE origin = ?1")?.query_map([origin], |r| r.get(0))?.collect()
}

pub(crate) fn upsert_source(conn: &Connection, s: &NewSource, now: i64) -> rusqlite::Result<()> {
    let mut metadata = s.metadata.clone();
    links::take_from_metadata(conn, &s.source_id, &mut metadata)?;
    conn.prepare_cached(
        "INSERT INTO sources (source_id, source_kind, display_name, metadata, created_at_ms, updated_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)
         ON CONFLICT(source_id) DO UPDATE SET display_name = excluded.display_name,
            metadata = excluded.metadata, updated_at_ms = excluded.updated_at_ms",
    )?
    .execute(params![s.source_id, s.kind.as_str(), s.display_name, Value::Object(metadata).to_string(), now])?;
    Ok(())
}

pub(crate) fn source_metadata(conn: &Connection, source_id: &str) -> rusqlite::Result<Option<Map<String, Value>>> {
    let s: Option<String> = conn
        .prepare_cached("SELECT metadata FROM sources WHERE source_id = ?1")?
        .query_row([source_id], |r| r.get(0))
        .optional()?;
    Ok(s.and_then(|s| serde_json::from_str::<Value>(&s).ok()).and_then(|v| match v {
        Value::Object(m) => Some(m),
        _ => None,
    }))
}
