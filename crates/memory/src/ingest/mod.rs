//! Importing files and folders: Markdown/text documents, e-mail (`.eml`, mbox) and chat
//! exports (`.jsonl`). Folders are walked recursively (hidden entries skipped, in name
//! order). A `kind` decides how files named on the command line are read, and how
//! walked files with an unrecognised extension are read. A file whose content hash matches its last ingest is skipped; a changed file
//! replaces its chunks. Files are parsed outside the writer lock and written in batches
//! of about `BATCH_CHUNKS` chunks, one transaction per batch; the full-text index is
//! committed every `FTS_COMMIT_CHUNKS` chunks and at the end, so ingested text is
//! searchable by keywords when the call returns. Vectors are computed by the background
//! thread meanwhile (`IngestSummary::vectors_pending` says how many were still to do;
//! `MemoryEngine::wait_background` waits for them).

mod chat;
mod docs;
mod mail;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rusqlite::{OptionalExtension, params};

use super::error::{MemoryError, ResultExt};
use super::store::{self, NewChunk, NewSource};
use super::sync::{self, read};
use super::types::{FileError, IngestProgress, IngestSummary};
use super::util::{now_ms, sha256_hex};
use super::{Inner, anchor, backfill, lock};

const BATCH_CHUNKS: usize = 2_000;
const FTS_COMMIT_CHUNKS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum FileKind {
    Markdown,
    Text,
    Email,
    Chat,
}

impl FileKind {
    fn name(self) -> &'static str {
        match self {
            FileKind::Markdown | FileKind::Text => "document",
            FileKind::Email => "email",
            FileKind::Chat => "chat",
        }
    }

    fn from_path(p: &Path) -> Option<FileKind> {
        let ext = p.extension()?.to_string_lossy().to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" => Some(FileKind::Markdown),
            "txt" => Some(FileKind::Text),
            "eml" | "mbox" => Some(FileKind::Email),
            "jsonl" => Some(FileKind::Chat),
            _ => None,
        }
    }

    /// The kind a `--kind` override gives a file.
    fn forced(kind: &str, p: &Path) -> FileKind {
        match kind {
            "email" => FileKind::Email,
            "chat" => FileKind::Chat,
            _ if FileKind::from_path(p) == Some(FileKind::Markdown) => FileKind::Markdown,
            _ => FileKind::Text,
        }
    }
}

/// Whether a walked file of this name would be read (its extension names a known format).
pub(crate) fn supported(p: &Path) -> bool {
    FileKind::from_path(p).is_some()
}

/// What a parsed file will write.
enum Parsed {
    Chunks(Vec<NewChunk>, Vec<NewSource>),
    Mail(Vec<mail::MailMessage>),
}

struct Pending {
    path: PathBuf,
    origin: String,
    hash: String,
    size: u64,
    kind: FileKind,
    parsed: Parsed,
}

/// Collects the files under `paths`, each with the kind it will be read as, and the absolute
/// form of every path named (where files that were ingested before may have been deleted).
/// `ingested` says whether a path is in the `files` table, to tell a deleted file from a typo.
fn collect(
    paths: &[PathBuf],
    kind: Option<&str>,
    ingested: &dyn Fn(&Path) -> bool,
    summary: &mut IngestSummary,
) -> (Vec<(PathBuf, FileKind)>, Vec<PathBuf>) {
    fn walk(dir: &Path, kind: Option<&str>, out: &mut Vec<(PathBuf, FileKind)>, summary: &mut IngestSummary) {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                summary.files_failed.push(FileError { path: dir.to_path_buf(), error: e.to_string() });
                return;
            }
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let p = e.path();
            // Symlinked folders are not followed: they can loop.
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                walk(&p, kind, out, summary);
            } else if p.is_file() {
                summary.files_seen += 1;
                match FileKind::from_path(&p).or(kind.map(|k| FileKind::forced(k, &p))) {
                    Some(k) => out.push((p, k)),
                    None => summary.files_unsupported += 1,
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut roots = Vec::new();
    for p in paths {
        let p = std::path::absolute(p).unwrap_or_else(|_| p.clone());
        roots.push(p.clone());
        if p.is_dir() {
            walk(&p, kind, &mut out, summary);
        } else if p.is_file() {
            summary.files_seen += 1;
            match kind.map(|k| FileKind::forced(k, &p)).or(FileKind::from_path(&p)) {
                Some(k) => out.push((p, k)),
                None => summary.files_unsupported += 1,
            }
        } else if std::fs::symlink_metadata(&p).is_err() && ingested(&p) {
            // A file ingested before and deleted since: pruned below, not an error.
        } else {
            summary.files_seen += 1;
            summary.files_failed.push(FileError { path: p, error: "no such file or folder".into() });
        }
    }
    (out, roots)
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or_else(now_ms)
}

/// Reads and parses one file; `Ok(None)` when it is unchanged since the last ingest.
fn prepare(
    inner: &Inner,
    path: &Path,
    kind: FileKind,
    skipped_lines: &mut usize,
) -> Result<Option<Pending>, MemoryError> {
    let meta = std::fs::metadata(path).context("reading the file")?;
    let bytes = std::fs::read(path).context("reading the file")?;
    let hash = sha256_hex(&bytes);
    let path_str = path.to_string_lossy().into_owned();
    let origin = format!("file:{path_str}");
    let old: Option<String> = inner
        .read_conn()?
        .prepare_cached("SELECT content_hash FROM files WHERE path = ?1")?
        .query_row([&path_str], |r| r.get(0))
        .optional()?;
    if old.as_deref() == Some(hash.as_str()) {
        return Ok(None);
    }
    let mtime = mtime_ms(&meta);
    let parsed = match kind {
        FileKind::Markdown | FileKind::Text => {
            let text = utf8(bytes)?;
            let (c, s) = docs::parse(&text, path, kind == FileKind::Markdown, mtime, &origin);
            Parsed::Chunks(c, s)
        }
        FileKind::Chat => {
            let text = utf8(bytes)?;
            let (c, s, skipped) = chat::parse(&text, path, &origin);
            *skipped_lines += skipped;
            Parsed::Chunks(c, s)
        }
        FileKind::Email => Parsed::Mail(mail::parse_file(&bytes, path, mtime)?),
    };
    Ok(Some(Pending { path: path.to_path_buf(), origin, hash, size: meta.len(), kind, parsed }))
}

fn utf8(bytes: Vec<u8>) -> Result<String, MemoryError> {
    String::from_utf8(bytes).map_err(|e| MemoryError::Parse(format!("not UTF-8 text: {e}")))
}

fn pending_chunks(p: &Pending) -> usize {
    match &p.parsed {
        Parsed::Chunks(c, _) => c.len(),
        Parsed::Mail(m) => m.len(),
    }
}

/// Writes a batch of files in one transaction and applies it to the indexes.
fn write_batch(
    inner: &Arc<Inner>,
    batch: Vec<Pending>,
    summary: &mut IngestSummary,
    commit_fts: bool,
) -> Result<usize, MemoryError> {
    let mut guard = lock(&inner.writer);
    let ws = &mut *guard;
    let tx = ws.conn.transaction()?;
    let seq = store::bump_seq(&tx)?;
    let now = now_ms();
    let mut written = 0;
    let mut threads = mail::Threads::new(&tx);
    for p in &batch {
        let old = store::rowids_by_origin(&tx, &p.origin)?;
        let annotated = anchor::collect(&tx, &p.origin, &old)?;
        summary.chunks_removed += store::delete_chunks(&tx, seq, &old)?;
        let (chunks, sources) = match &p.parsed {
            Parsed::Chunks(c, s) => (c.clone(), s.clone()),
            Parsed::Mail(msgs) => mail::build(&tx, &mut threads, msgs, &p.path, &p.origin)?,
        };
        for s in &sources {
            store::upsert_source(&tx, s, now)?;
        }
        let inserted = store::insert_chunks(&tx, seq, &chunks, now)?;
        let n = inserted.len();
        if !annotated.is_empty() {
            let text: HashMap<String, &str> = chunks.iter().map(|c| (c.id(), c.content.as_str())).collect();
            let new: Vec<(i64, String, &str)> = inserted
                .iter()
                .map(|(rowid, id)| (*rowid, id.clone(), text.get(id).copied().unwrap_or_default()))
                .collect();
            let outcome = anchor::reattach(&tx, &p.origin, annotated, &new, now)?;
            summary.annotations_moved += outcome.moved;
            summary.annotations_detached += outcome.detached;
        }
        tx.prepare_cached(
            "INSERT INTO files (path, content_hash, size, kind, chunk_count, ingested_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(path) DO UPDATE SET content_hash = excluded.content_hash, size = excluded.size,
                kind = excluded.kind, chunk_count = excluded.chunk_count, ingested_at_ms = excluded.ingested_at_ms",
        )?
        .execute(params![p.path.to_string_lossy(), p.hash, p.size as i64, p.kind.name(), n as i64, now])?;
        written += n;
        summary.files_ingested += 1;
    }
    drop(threads);
    tx.commit()?;
    summary.chunks_added += written;
    sync::sync_fts(inner, ws, commit_fts)?;
    // Deletions reach the vector index now; embedding the new chunks is left to the
    // background thread so that it runs while the next batch is parsed and inserted.
    sync::sync_vectors(inner, ws, Some(0))?;
    drop(guard);
    backfill::start(inner);
    Ok(written)
}

/// The paths in the `files` table at or under `root`.
pub(crate) fn ingested_under(conn: &rusqlite::Connection, root: &Path) -> Result<Vec<String>, MemoryError> {
    let root = root.to_string_lossy();
    let escaped = root.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    let dir = if escaped.ends_with('/') { escaped } else { format!("{escaped}/") };
    Ok(conn
        .prepare_cached("SELECT path FROM files WHERE path = ?1 OR path LIKE ?2 ESCAPE '\\'")?
        .query_map(params![root, format!("{dir}%")], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Removes from memory the files at or under `roots` that were ingested before and no longer
/// exist. Tags and notes on their chunks are kept, detached (see `anchor`).
fn prune_deleted(inner: &Arc<Inner>, roots: &[PathBuf], summary: &mut IngestSummary) -> Result<(), MemoryError> {
    let mut gone = Vec::new();
    {
        let conn = inner.read_conn()?;
        for root in roots {
            for path in ingested_under(&conn, root)? {
                if matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
                    gone.push(path);
                }
            }
        }
    }
    gone.sort();
    gone.dedup();
    if gone.is_empty() {
        return Ok(());
    }
    let mut guard = lock(&inner.writer);
    let ws = &mut *guard;
    let tx = ws.conn.transaction()?;
    let seq = store::bump_seq(&tx)?;
    let now = now_ms();
    for path in &gone {
        let origin = format!("file:{path}");
        let old = store::rowids_by_origin(&tx, &origin)?;
        let annotated = anchor::collect(&tx, &origin, &old)?;
        summary.chunks_removed += store::delete_chunks(&tx, seq, &old)?;
        summary.annotations_detached += anchor::reattach(&tx, &origin, annotated, &[], now)?.detached;
        tx.prepare_cached("DELETE FROM files WHERE path = ?1")?.execute([path])?;
        summary.files_removed += 1;
    }
    tx.commit()?;
    sync::sync_vectors(inner, ws, Some(0))?;
    Ok(())
}

pub(crate) fn ingest_paths(
    inner: &Arc<Inner>,
    paths: &[PathBuf],
    kind: Option<&str>,
    progress: &dyn Fn(&IngestProgress),
) -> Result<IngestSummary, MemoryError> {
    if let Some(k) = kind
        && !["document", "email", "chat"].contains(&k)
    {
        return Err(MemoryError::InvalidParams(format!("unknown kind `{k}`: use document, email or chat")));
    }
    let started = Instant::now();
    let mut summary = IngestSummary::default();
    let known = |p: &Path| -> bool {
        let conn = inner.read_conn();
        conn.is_ok_and(|c| {
            c.prepare_cached("SELECT 1 FROM files WHERE path = ?1")
                .and_then(|mut q| q.exists([p.to_string_lossy()]))
                .unwrap_or(false)
        })
    };
    let (files, roots) = collect(paths, kind, &known, &mut summary);
    let mut state = IngestProgress { files_total: files.len(), ..IngestProgress::default() };
    let mut batch: Vec<Pending> = Vec::new();
    let mut batch_chunks = 0;
    let mut since_commit = 0;
    let mut skipped_lines = 0;
    for (path, fk) in files {
        match prepare(inner, &path, fk, &mut skipped_lines) {
            Ok(Some(p)) => {
                batch_chunks += pending_chunks(&p);
                batch.push(p);
            }
            Ok(None) => summary.files_unchanged += 1,
            Err(e) => summary.files_failed.push(FileError { path: path.clone(), error: format!("{e:#}") }),
        }
        if batch_chunks >= BATCH_CHUNKS {
            let commit = since_commit + batch_chunks >= FTS_COMMIT_CHUNKS;
            let n = write_batch(inner, std::mem::take(&mut batch), &mut summary, commit)?;
            since_commit = if commit { 0 } else { since_commit + n };
            state.chunks_written += n;
            batch_chunks = 0;
        }
        state.files_done += 1;
        state.current = Some(path);
        progress(&state);
    }
    if !batch.is_empty() {
        state.chunks_written += write_batch(inner, batch, &mut summary, true)?;
    }
    prune_deleted(inner, &roots, &mut summary)?;
    {
        let mut ws = lock(&inner.writer);
        sync::sync_fts(inner, &mut ws, true)?;
        sync::prune_tombstones(&mut ws)?;
        sync::compact_if_due(inner, &mut ws)?;
    }
    let chunks: i64 = inner.read_conn()?.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
    summary.vectors_pending = (chunks as usize).saturating_sub(read(&inner.fast.vectors).len());
    summary.lines_skipped = skipped_lines;
    summary.duration_ms = started.elapsed().as_millis() as u64;
    tracing::info!(
        files = summary.files_ingested,
        unchanged = summary.files_unchanged,
        failed = summary.files_failed.len(),
        chunks = summary.chunks_added,
        ms = summary.duration_ms,
        "ingest finished"
    );
    Ok(summary)
}
