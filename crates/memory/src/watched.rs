//! Keeping files that someone watches in step with memory, one batch of changed paths at a time:
//! the entry points a folder watcher calls (`sync_files`, `file_states`).
//!
//! A batch names paths that changed: present ones are (re-)ingested through `ingest` (unchanged
//! content is skipped by its hash there), and missing ones — files, or folders that held files —
//! are removed with their chunks. Before that, a new document whose content hash equals that of
//! a document gone in the same batch is taken for a rename: its chunks move to the new path in
//! place (same rows, so no re-embedding and no index work; chunk ids are recomputed for the new
//! path, and tags, notes and links follow them). Mail and chat files are re-read instead, since
//! their sources are threads and channels, not files.
//!
//! Every file synced here records its size and modification time, so a watcher that was not
//! running can compare `file_states` with the disk and re-read only what differs.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::MemoryError;
use super::types::{IngestSummary, SourceKind};
use super::util::{chunk_id, now_ms, sha256_hex};
use super::{Inner, MemoryEngine, anchor, ingest, links, write};

/// What the store remembers of one ingested file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileState {
    pub path: PathBuf,
    pub size: u64,
    /// Modification time (ms since the epoch) when last synced; 0 when it was ingested by a
    /// version that did not record it.
    pub mtime_ms: i64,
}

/// The outcome of one `sync_files` batch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncSummary {
    #[serde(flatten)]
    pub ingest: IngestSummary,
    /// Files followed to a new path without being read again (`from`, `to`).
    pub moved: Vec<(PathBuf, PathBuf)>,
}

/// Size and modification time (ms) of a file on disk.
pub fn disk_state(meta: &std::fs::Metadata) -> (u64, i64) {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    (meta.len(), mtime)
}

/// Whether a file found in a folder would be read (its extension names a format memory knows).
pub fn is_supported_file(path: &Path) -> bool {
    ingest::supported(path)
}

impl MemoryEngine {
    /// The ingested files at or under `root`, with the size and time they had when synced.
    pub fn file_states(&self, root: &Path) -> Result<Vec<FileState>, MemoryError> {
        let conn = self.inner.read_conn()?;
        let paths = ingest::ingested_under(&conn, root)?;
        let mut q = conn.prepare_cached("SELECT size, mtime_ms FROM files WHERE path = ?1")?;
        let mut out = Vec::with_capacity(paths.len());
        for p in paths {
            let (size, mtime_ms): (i64, i64) = q.query_row([&p], |r| Ok((r.get(0)?, r.get(1)?)))?;
            out.push(FileState { path: PathBuf::from(p), size: size as u64, mtime_ms });
        }
        Ok(out)
    }

    /// How many ingested files are at or under `root` (one query; `file_states` reads each).
    pub fn file_count(&self, root: &Path) -> Result<usize, MemoryError> {
        let conn = self.inner.read_conn()?;
        Ok(ingest::ingested_under(&conn, root)?.len())
    }

    /// Brings memory in step with `paths` (absolute; each a file, a folder, or a path that no
    /// longer exists): see the module documentation. `kind` forces one format for the files
    /// named, as `ingest_paths` does.
    pub fn sync_files(&self, paths: &[PathBuf], kind: Option<&str>) -> Result<SyncSummary, MemoryError> {
        sync_files(&self.inner, paths, kind)
    }
}

fn sync_files(inner: &Arc<Inner>, paths: &[PathBuf], kind: Option<&str>) -> Result<SyncSummary, MemoryError> {
    let mut present = Vec::new();
    let mut gone: Vec<String> = Vec::new();
    {
        let conn = inner.read_conn()?;
        for p in paths {
            match std::fs::metadata(p) {
                Ok(m) if m.is_file() => present.push((p.clone(), disk_state(&m))),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    for stored in ingest::ingested_under(&conn, p)? {
                        if std::fs::symlink_metadata(&stored).is_err() {
                            gone.push(stored);
                        }
                    }
                }
                Err(_) => present.push((p.clone(), (0, 0))),
            }
        }
    }
    gone.sort();
    gone.dedup();
    let moved = find_moves(inner, &present, &gone)?;
    let mut summary = SyncSummary::default();
    if !moved.is_empty() {
        write::plain(inner, |tx| {
            let now = now_ms();
            for (from, to) in &moved {
                move_file(tx, from, to, now)?;
            }
            Ok(())
        })?;
        summary.moved = moved.iter().map(|(f, t)| (PathBuf::from(f), t.clone())).collect();
    }
    let moved_to: Vec<&PathBuf> = moved.iter().map(|(_, t)| t).collect();
    let mut rest: Vec<PathBuf> =
        present.iter().filter(|(p, _)| !moved_to.contains(&p)).map(|(p, _)| p.clone()).collect();
    rest.extend(gone.iter().filter(|g| !moved.iter().any(|(f, _)| f == *g)).map(PathBuf::from));
    if !rest.is_empty() {
        summary.ingest = ingest::ingest_paths(inner, &rest, kind, &|_| {})?;
    }
    // Sizes and times as seen before reading: a file changed since is newer than what is
    // recorded, so the next comparison reads it again. A file that failed keeps what it had, so
    // the next walk tries it again (one that gave nothing has no row at all).
    let failed: HashSet<&Path> = summary.ingest.files_failed.iter().map(|f| f.path.as_path()).collect();
    write::plain(inner, |tx| {
        for (p, (size, mtime)) in present.iter().filter(|(p, _)| !failed.contains(p.as_path())) {
            tx.prepare_cached("UPDATE files SET mtime_ms = ?2, size = ?3 WHERE path = ?1")?.execute(params![
                p.to_string_lossy(),
                mtime,
                *size as i64
            ])?;
        }
        Ok(())
    })?;
    Ok(summary)
}

/// Pairs each gone document with a new path holding the same bytes (same size first, then the
/// same hash). Only paths the store does not know yet can be the new place of a moved file.
fn find_moves(
    inner: &Inner,
    present: &[(PathBuf, (u64, i64))],
    gone: &[String],
) -> Result<Vec<(String, PathBuf)>, MemoryError> {
    if gone.is_empty() {
        return Ok(Vec::new());
    }
    let conn = inner.read_conn()?;
    let mut by_size: HashMap<i64, Vec<(String, String)>> = HashMap::new();
    for g in gone {
        let row: Option<(String, i64, String)> = conn
            .prepare_cached("SELECT content_hash, size, kind FROM files WHERE path = ?1")?
            .query_row([g], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        if let Some((hash, size, kind)) = row
            && kind == SourceKind::Document.as_str()
        {
            by_size.entry(size).or_default().push((g.clone(), hash));
        }
    }
    let mut moves = Vec::new();
    for (p, (size, _)) in present {
        let Some(candidates) = by_size.get_mut(&(*size as i64)) else { continue };
        if candidates.is_empty() {
            continue;
        }
        let known: bool = conn.prepare_cached("SELECT 1 FROM files WHERE path = ?1")?.exists([p.to_string_lossy()])?;
        if known {
            continue;
        }
        let Ok(bytes) = std::fs::read(p) else { continue };
        let hash = sha256_hex(&bytes);
        if let Some(i) = candidates.iter().position(|(_, h)| *h == hash) {
            let (from, _) = candidates.swap_remove(i);
            moves.push((from, p.clone()));
        }
    }
    Ok(moves)
}

fn file_name(p: &str) -> String {
    Path::new(p).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Moves one document's chunks, source, links and annotations from `from` to `to` in place.
fn move_file(tx: &Connection, from: &str, to: &Path, now: i64) -> Result<(), MemoryError> {
    let to_str = to.to_string_lossy().into_owned();
    let (old_origin, new_origin) = (format!("file:{from}"), format!("file:{to_str}"));
    let (old_name, new_name) = (file_name(from), file_name(&to_str));
    let folder = to.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    type Row = (i64, String, i64, String, Option<String>, String);
    let rows: Vec<Row> = tx
        .prepare_cached("SELECT rowid, id, seq_in_source, content, title, metadata FROM chunks WHERE origin = ?1")?
        .query_map([&old_origin], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (rowid, old_id, seq, content, title, metadata) in rows {
        let mut meta: Map<String, Value> = serde_json::from_str(&metadata).unwrap_or_default();
        meta.insert("file_path".into(), Value::from(to_str.clone()));
        meta.insert("folder".into(), Value::from(folder.clone()));
        // A title that was only the file's name follows the name.
        let title = match title {
            Some(t) if t == old_name => Some(new_name.clone()),
            other => other,
        };
        if let Some(t) = &title {
            meta.insert("title".into(), Value::from(t.clone()));
        }
        let new_id = chunk_id(SourceKind::Document, &new_origin, &to_str, seq, &content);
        tx.prepare_cached(
            "UPDATE chunks SET id = ?2, source_id = ?3, source_ref = ?4, origin = ?3, title = ?5, metadata = ?6
             WHERE rowid = ?1",
        )?
        .execute(params![rowid, new_id, new_origin, to_str, title, Value::Object(meta).to_string()])?;
        for (key, value) in [("file_path", &to_str), ("folder", &folder)] {
            tx.prepare_cached("UPDATE chunk_meta SET value = ?3 WHERE chunk_rowid = ?1 AND key = ?2")?
                .execute(params![rowid, key, value])?;
        }
        anchor::rename_chunk(tx, &old_id, &new_id)?;
    }
    let display: Option<String> = tx
        .prepare_cached("SELECT display_name FROM sources WHERE source_id = ?1")?
        .query_row([&old_origin], |r| r.get(0))
        .optional()?;
    if let Some(display) = display {
        let display = if display == old_name { new_name.clone() } else { display };
        tx.prepare_cached(
            "UPDATE OR REPLACE sources SET source_id = ?2, display_name = ?3,
                metadata = json_set(metadata, '$.file_path', ?4), updated_at_ms = ?5 WHERE source_id = ?1",
        )?
        .execute(params![old_origin, new_origin, display, to_str, now])?;
    }
    links::rename(tx, &old_origin, &new_origin)?;
    tx.prepare_cached("UPDATE detached SET origin = ?2, source_ref = ?3 WHERE origin = ?1")?
        .execute(params![old_origin, new_origin, to_str])?;
    tx.prepare_cached("UPDATE OR REPLACE files SET path = ?2, ingested_at_ms = ?3 WHERE path = ?1")?
        .execute(params![from, to_str, now])?;
    Ok(())
}
