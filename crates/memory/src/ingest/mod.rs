//! Importing files and folders: documents (Markdown, text in any common encoding, HTML, PDF),
//! e-mail (`.eml`, mbox and Mailman/pipermail archives, Maildir folders) and chats (chat lines
//! as JSON Lines or an array, ChatGPT and Claude exports, Slack export folders,
//! DiscordChatExporter JSON, WhatsApp `.txt`). Folders are walked recursively (hidden entries
//! skipped but for Maildir++ folders, in name order); `openhuman_formats` decides what each
//! file is (from its place and content first, its extension second; a `kind` names the family
//! to read files as) and reads it, and this module chunks and stores what it yields. A file whose
//! content hash matches its last ingest is skipped; a changed file replaces its chunks. A file
//! that gave nothing (no text, no message, a parse error) is not recorded in `files` — its old
//! chunks, if any, are removed —, so the next ingest or watch sync reads it again: only a file
//! that was stored counts as unchanged. Files
//! are parsed outside the writer lock and written in batches of about `BATCH_CHUNKS` chunks,
//! one transaction per batch; the full-text index is committed every `FTS_COMMIT_CHUNKS`
//! chunks and at the end, so ingested text is searchable by keywords when the call returns.
//! Vectors are computed by the background thread meanwhile (`IngestSummary::vectors_pending`
//! says how many were still to do; `MemoryEngine::wait_background` waits for them), and what
//! the chunks' text mentions (entities) is read by the entity thread once the call ends. Whatever
//! is passed over — a bad line, a message without a time, an unsupported file — is counted
//! with its reason (`Skips`), and unsupported files are named; one bad file never stops the
//! others.

mod chat;
pub use chat::{ChatChunk, ChatChunking};
mod docs;
mod mail;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rusqlite::{OptionalExtension, Transaction, params};

use super::error::{MemoryError, ResultExt};
use super::locks::read;
use super::store::{self, NewChunk, NewSource};
use super::types::{FileError, IngestProgress, IngestSummary, Skipped, UNSUPPORTED_NAMED};
use super::util::{now_ms, sha256_hex};
use super::{Inner, anchor, entities, project, write};
use openhuman_formats::{Detected, FileKind, Parsed as Read, Skips, detect};

const BATCH_CHUNKS: usize = 2_000;
const FTS_COMMIT_CHUNKS: usize = 100_000;

/// Whether a walked file would be read: its content or, failing that, its extension names a
/// format memory knows (what `ingest` decides, without a `kind` override).
pub(crate) fn supported(p: &Path) -> bool {
    matches!(detect(p, None, false), Detected::Read(_))
}

/// What a parsed file will write.
enum Parsed {
    Chunks(Vec<NewChunk>, Vec<NewSource>),
    Mail(Vec<openhuman_formats::MailMessage>),
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
    skips: &mut Skips,
) -> (Vec<(PathBuf, FileKind)>, Vec<PathBuf>) {
    struct Walk<'a> {
        kind: Option<&'a str>,
        out: Vec<(PathBuf, FileKind)>,
        summary: &'a mut IngestSummary,
        skips: &'a mut Skips,
    }
    impl Walk<'_> {
        fn file(&mut self, p: PathBuf, named: bool) {
            self.summary.files_seen += 1;
            match detect(&p, self.kind, named) {
                Detected::Read(k) => self.out.push((p, k)),
                Detected::Skip(reason) => self.skips.file(reason, &p),
                Detected::Unsupported => {
                    self.summary.files_unsupported += 1;
                    if self.summary.unsupported.len() < UNSUPPORTED_NAMED {
                        self.summary.unsupported.push(p);
                    }
                }
            }
        }

        fn dir(&mut self, dir: &Path) {
            let entries = match std::fs::read_dir(dir) {
                Ok(e) => e,
                Err(e) => {
                    self.summary.files_failed.push(FileError { path: dir.to_path_buf(), error: e.to_string() });
                    return;
                }
            };
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let p = e.path();
                // Symlinked folders are not followed: they can loop.
                let Ok(ft) = e.file_type() else { continue };
                // Hidden entries are skipped, but for Maildir++ folders (`.Sent/cur`, `.Sent/new`).
                let maildir_folder = ft.is_dir() && p.join("cur").is_dir() && p.join("new").is_dir();
                if e.file_name().to_string_lossy().starts_with('.') && !maildir_folder {
                    self.skips.file("hidden (its name starts with a dot; not looked into)", &p);
                    continue;
                }
                if ft.is_dir() {
                    self.dir(&p);
                } else if p.is_file() {
                    self.file(p, false);
                } else if p.is_dir() {
                    self.skips.file("symlinked folder (not followed: it could loop)", &p);
                } else {
                    self.skips.file("not a regular file (a socket, a pipe or a broken link)", &p);
                }
            }
        }
    }
    let mut w = Walk { kind, out: Vec::new(), summary, skips };
    let mut roots = Vec::new();
    for p in paths {
        let p = std::path::absolute(p).unwrap_or_else(|_| p.clone());
        roots.push(p.clone());
        if p.is_dir() {
            w.dir(&p);
        } else if p.is_file() {
            w.file(p, true);
        } else if std::fs::symlink_metadata(&p).is_err() && ingested(&p) {
            // A file ingested before and deleted since: pruned below, not an error.
        } else {
            w.summary.files_seen += 1;
            w.summary.files_failed.push(FileError { path: p, error: "no such file or folder".into() });
        }
    }
    (w.out, roots)
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or_else(now_ms)
}

/// Reads and parses one file; `Ok(None)` when it is unchanged since the last ingest. What the
/// file's importer passed over goes into `skips`.
fn prepare(
    inner: &Inner,
    path: &Path,
    kind: FileKind,
    ctx: &mut openhuman_formats::Context,
    skips: &mut Skips,
) -> Result<Option<Pending>, MemoryError> {
    let meta = std::fs::metadata(path).context("reading the file")?;
    let bytes = std::fs::read(path).context("reading the file")?;
    let hash = sha256_hex(&bytes);
    let path_str = path.to_string_lossy().into_owned();
    let origin = format!("file:{path_str}");
    // A row without chunks is what an older version recorded for a file that gave nothing: it
    // is read again, like any file not recorded.
    let old: Option<String> = inner
        .read_conn()?
        .prepare_cached("SELECT content_hash FROM files WHERE path = ?1 AND chunk_count > 0")?
        .query_row([&path_str], |r| r.get(0))
        .optional()?;
    if old.as_deref() == Some(hash.as_str()) {
        return Ok(None);
    }
    let mtime = mtime_ms(&meta);
    // Each importer counts what it passes over in its own list, merged only when the file
    // parsed: a file that fails is one error, not also a pile of skipped lines.
    let mut mine = Skips::default();
    let parsed = match openhuman_formats::parse(kind, &bytes, path, mtime, ctx, &mut mine)? {
        Read::Document(doc) => {
            let (chunks, sources) = docs::parse(doc, path, mtime, &origin);
            Parsed::Chunks(chunks, sources)
        }
        Read::Chat(channels) => {
            let (chunks, sources) = chat::pack(channels, path, &origin);
            Parsed::Chunks(chunks, sources)
        }
        Read::Mail(msgs) => Parsed::Mail(msgs),
    };
    let pending = Pending { path: path.to_path_buf(), origin, hash, size: meta.len(), kind, parsed };
    if pending_chunks(&pending) == 0 && mine.is_empty() {
        // Written all the same (an edit that emptied a file must remove its old chunks), but not
        // recorded: it is read again next time.
        mine.file("nothing to ingest in it (no text or messages)", path);
    }
    skips.merge(mine);
    Ok(Some(pending))
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
    links: &openhuman_formats::Links,
    summary: &mut IngestSummary,
    skips: &mut Skips,
    commit_fts: bool,
) -> Result<usize, MemoryError> {
    let written = write::bulk(inner, commit_fts, |tx, seq| write_files(tx, seq, &batch, links, summary, skips))?;
    summary.chunks_added += written;
    Ok(written)
}

/// The rows of a batch of files, in the batch's transaction; returns how many chunks it wrote.
fn write_files(
    tx: &Transaction<'_>,
    seq: i64,
    batch: &[Pending],
    links: &openhuman_formats::Links,
    summary: &mut IngestSummary,
    skips: &mut Skips,
) -> Result<usize, MemoryError> {
    let now = now_ms();
    let mut written = 0;
    let mut threads = mail::Threads::new(tx, links);
    let mut roots = project::Roots::default();
    for p in batch {
        let old = store::rowids_by_origin(tx, &p.origin)?;
        let annotated = anchor::collect(tx, &p.origin, &old)?;
        summary.chunks_removed += store::delete_chunks(tx, seq, &old)?;
        let (mut chunks, sources) = match &p.parsed {
            Parsed::Chunks(c, s) => (c.clone(), s.clone()),
            Parsed::Mail(msgs) => mail::build(tx, &mut threads, msgs, &p.path, &p.origin, skips)?,
        };
        // A file belongs to the git root above it (a chunk's own `metadata.project` wins).
        let file_project = roots.of_file(&p.path);
        for c in chunks.iter_mut().filter(|c| c.project.is_none() && project::from_metadata(&c.metadata).is_none()) {
            c.project.clone_from(&file_project);
        }
        for s in &sources {
            store::upsert_source(tx, s, now)?;
        }
        let inserted = store::insert_chunks(tx, seq, &chunks, now)?;
        let n = inserted.len();
        // A chat message that updates an earlier one's fact supersedes it (see `facts`).
        crate::facts::chat_written(tx, &inserted.iter().map(|i| i.0).collect::<Vec<_>>())?;
        if !annotated.is_empty() {
            let text: HashMap<String, &str> = chunks.iter().map(|c| (c.id(), c.content.as_str())).collect();
            let new: Vec<(i64, String, &str)> = inserted
                .iter()
                .map(|(rowid, id)| (*rowid, id.clone(), text.get(id).copied().unwrap_or_default()))
                .collect();
            let outcome = anchor::reattach(tx, &p.origin, annotated, &new, now)?;
            summary.annotations_moved += outcome.moved;
            summary.annotations_detached += outcome.detached;
        }
        if pending_chunks(p) == 0 {
            // Nothing came of it: not recorded, so the next run or watch sync tries again.
            tx.prepare_cached("DELETE FROM files WHERE path = ?1")?.execute([p.path.to_string_lossy()])?;
            continue;
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
    // The deletions reach the keyword index uncommitted: `finish_bulk` commits them.
    write::bulk(inner, false, |tx, seq| {
        let now = now_ms();
        for path in &gone {
            let origin = format!("file:{path}");
            let old = store::rowids_by_origin(tx, &origin)?;
            let annotated = anchor::collect(tx, &origin, &old)?;
            summary.chunks_removed += store::delete_chunks(tx, seq, &old)?;
            summary.annotations_detached += anchor::reattach(tx, &origin, annotated, &[], now)?.detached;
            tx.prepare_cached("DELETE FROM files WHERE path = ?1")?.execute([path])?;
            summary.files_removed += 1;
        }
        Ok(())
    })
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
    // The chunks' text is read for entities once the whole ingest is written.
    let _bulk = entities::Bulk::enter(inner);
    let mut summary = IngestSummary::default();
    let known = |p: &Path| -> bool {
        let conn = inner.read_conn();
        conn.is_ok_and(|c| {
            c.prepare_cached("SELECT 1 FROM files WHERE path = ?1")
                .and_then(|mut q| q.exists([p.to_string_lossy()]))
                .unwrap_or(false)
        })
    };
    let mut skips = Skips::default();
    let (files, roots) = collect(paths, kind, &known, &mut summary, &mut skips);
    // Mail threads are rooted before any message is written, whatever order the files and
    // messages come in: the links of every message of this ingest are read first.
    let mail_files = files.iter().filter(|(_, k)| *k == FileKind::Email).map(|(p, _)| p.as_path());
    let links = openhuman_formats::Links::scan(mail_files);
    let mut ctx = openhuman_formats::Context::default();
    let mut state = IngestProgress { files_total: files.len(), ..IngestProgress::default() };
    let mut batch: Vec<Pending> = Vec::new();
    let mut batch_chunks = 0;
    let mut since_commit = 0;
    for (path, fk) in files {
        match prepare(inner, &path, fk, &mut ctx, &mut skips) {
            Ok(Some(p)) => {
                batch_chunks += pending_chunks(&p);
                batch.push(p);
            }
            Ok(None) => summary.files_unchanged += 1,
            Err(e) => summary.files_failed.push(FileError { path: path.clone(), error: format!("{e:#}") }),
        }
        if batch_chunks >= BATCH_CHUNKS {
            let commit = since_commit + batch_chunks >= FTS_COMMIT_CHUNKS;
            let n = write_batch(inner, std::mem::take(&mut batch), &links, &mut summary, &mut skips, commit)?;
            since_commit = if commit { 0 } else { since_commit + n };
            state.chunks_written += n;
            batch_chunks = 0;
        }
        state.files_done += 1;
        state.current = Some(path);
        progress(&state);
    }
    if !batch.is_empty() {
        state.chunks_written += write_batch(inner, batch, &links, &mut summary, &mut skips, true)?;
    }
    prune_deleted(inner, &roots, &mut summary)?;
    write::finish_bulk(inner)?;
    let chunks: i64 = inner.read_conn()?.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
    summary.vectors_pending = (chunks as usize).saturating_sub(read(&inner.fast.vectors).len());
    summary.lines_skipped = skips.lines();
    summary.skipped = skips
        .into_list()
        .into_iter()
        .map(|s| Skipped { unit: s.unit.to_string(), reason: s.reason, count: s.count, first: s.first })
        .collect();
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
