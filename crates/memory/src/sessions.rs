//! Coding agents' session logs as memory, read as they grow (`sync_session_files`, what the
//! daemon's watcher calls for a `claude-code`, `codex` or `gemini` source).
//!
//! Each log file has a row in `session_files`: the byte offset read up to (always just after a
//! newline), fingerprints of the bytes before it (sha256 of the first and of the last 4 KiB
//! before the offset), the session's context (id, working directory, branch, project) as read
//! so far, and what was passed over. A sync of an appending log (Claude Code, Codex CLI) reads
//! only the bytes after the offset when the file is at least as long and both fingerprints
//! still match; otherwise (truncated, rewritten, or unknown) it reads the file once from the
//! start. A last line without its newline is still being written: it is left for the next sync.
//! A line that is not JSON or not in its type's shape is counted as `malformed`, a record type
//! the reader does not know as `unknown`; neither stops the file. Gemini CLI rewrites its whole
//! document, so a change reads it whole; a document that does not parse (caught mid-write)
//! waits for the next change.
//!
//! Every turn becomes chunks of kind `chat` whose id comes from the agent's own record id (the
//! source, `session:<session id>`, and the ref `<log path>#<record id>`), so reading the same
//! records again writes nothing new; on a re-read a turn whose text changed replaces its old
//! chunks, and a turn gone from a rewritten log stays in memory (as when an agent deletes old
//! logs). Text is redacted (`scrub`) before it is written; thinking never reaches here (the
//! readers drop it); tool outputs arrive condensed. A turn of a project on the source's
//! exclude list, or of a session that was forgotten (`forget session:<id>`, recorded in
//! `forgotten_sessions`), is not stored.
//!
//! - `scrub` the redaction of secrets.

mod scrub;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openhuman_formats::{Agent, Record, Role, SessionContext, Turn};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};
use serde_json::{Map, json};

use crate::chunker::{Format, MAX_TOKENS, chunk_text};
use crate::error::MemoryError;
use crate::store::{self, NewChunk, NewSource};
use crate::types::{FileError, SourceKind};
use crate::util::{estimate_tokens, now_ms, sha256_hex};
use crate::watched::{FileState, disk_state};
use crate::{Inner, MemoryEngine, entities, write};

pub(crate) use scrub::scrub;

/// Bytes each fingerprint covers.
const PRINT_BYTES: u64 = 4096;
/// Chunks written per transaction while catching up.
const BATCH_CHUNKS: usize = 2_000;
/// While catching up, the keyword index commits after this many chunks (and at the end).
const FTS_COMMIT_CHUNKS: usize = 100_000;
/// A sync with at most this many new chunks is one write acknowledged once searchable (and
/// embedded); a larger one goes in bulk batches, embedded in the background.
const LIVE_CHUNKS: usize = 64;

/// What a source keeps out.
#[derive(Debug, Clone, Default)]
pub struct SessionRules {
    /// Projects (absolute folders) whose sessions are not read: a session whose project or
    /// working directory is at or under one of them.
    pub exclude_projects: Vec<PathBuf>,
}

/// What one `sync_session_files` call did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionSync {
    /// Files that had new bytes (or a new document) and were read.
    pub files_read: usize,
    /// Files read again from the start (truncated, rewritten, or first seen).
    pub files_reread: usize,
    pub bytes_read: u64,
    pub turns_added: usize,
    pub chunks_added: usize,
    /// Chunks replaced because their turn's text changed.
    pub chunks_removed: usize,
    pub malformed: usize,
    pub unknown: usize,
    /// Turns not stored: of an excluded project or a forgotten session.
    pub excluded: usize,
    /// Log files that went away: their state is dropped, what was read from them stays.
    pub files_gone: usize,
    pub files_failed: Vec<FileError>,
    /// Chunks written in bulk whose vectors the background thread computes.
    pub bulk: bool,
}

/// What memory has read of one source's logs, for `status`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionStats {
    pub files: usize,
    pub sessions: usize,
    pub turns: u64,
    pub malformed: u64,
    pub unknown: u64,
    pub excluded: u64,
    /// Bytes after the offset of files whose last line is still being written.
    pub waiting_bytes: u64,
}

/// The session's context as persisted between syncs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Ctx {
    session_id: Option<String>,
    cwd: Option<String>,
    branch: Option<String>,
}

/// One `session_files` row.
#[derive(Debug, Clone, Default)]
struct FileRow {
    offset: u64,
    head: String,
    tail: String,
    ctx: Ctx,
    turns: u64,
    malformed: u64,
    unknown: u64,
    excluded: u64,
    waiting: u64,
    size: u64,
    mtime_ms: i64,
}

impl MemoryEngine {
    /// Reads what is new in `paths` (session logs of `agent`; a path that no longer exists
    /// drops its state): see the module documentation.
    pub fn sync_session_files(
        &self,
        agent: Agent,
        paths: &[PathBuf],
        rules: &SessionRules,
    ) -> Result<SessionSync, MemoryError> {
        sync(&self.inner, agent, paths, rules)
    }

    /// The session logs memory has read at or under `root`, with the size and time they had.
    pub fn session_file_states(&self, root: &Path) -> Result<Vec<FileState>, MemoryError> {
        let conn = self.inner.read_conn()?;
        let mut q = conn.prepare_cached("SELECT path, size, mtime_ms FROM session_files")?;
        let rows = q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (path, size, mtime_ms) = row?;
            let path = PathBuf::from(path);
            if path.starts_with(root) {
                out.push(FileState { path, size: size as u64, mtime_ms });
            }
        }
        Ok(out)
    }

    /// What has been read of the logs at or under `root`.
    pub fn session_stats(&self, root: &Path) -> Result<SessionStats, MemoryError> {
        let conn = self.inner.read_conn()?;
        let mut q = conn
            .prepare_cached("SELECT path, turns, malformed, unknown, excluded, waiting, context FROM session_files")?;
        let mut stats = SessionStats::default();
        let mut sessions = HashSet::new();
        let rows = q.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                [r.get::<_, i64>(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
                r.get::<_, String>(6)?,
            ))
        })?;
        for row in rows {
            let (path, n, ctx) = row?;
            if !Path::new(&path).starts_with(root) {
                continue;
            }
            stats.files += 1;
            stats.turns += n[0] as u64;
            stats.malformed += n[1] as u64;
            stats.unknown += n[2] as u64;
            stats.excluded += n[3] as u64;
            stats.waiting_bytes += n[4] as u64;
            if let Some(id) = serde_json::from_str::<Ctx>(&ctx).ok().and_then(|c| c.session_id) {
                sessions.insert(id);
            }
        }
        stats.sessions = sessions.len();
        Ok(stats)
    }
}

/// Whether a log is kept out by where it lies, before it is opened: a Claude Code project
/// folder named after an excluded project (its path with every other character than letters and
/// digits made `-`), or a Gemini CLI project folder named by the sha256 of an excluded path.
pub fn session_file_excluded(agent: Agent, root: &Path, path: &Path, rules: &SessionRules) -> bool {
    let Some(first) = path.strip_prefix(root).ok().and_then(|rel| rel.components().next()) else { return false };
    let dir = first.as_os_str().to_string_lossy();
    rules.exclude_projects.iter().any(|p| {
        let p = p.to_string_lossy();
        let p = p.trim_end_matches('/');
        match agent {
            Agent::ClaudeCode => {
                let encoded: String = p.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
                dir == encoded || dir.starts_with(&format!("{encoded}-"))
            }
            Agent::Gemini => dir == sha256_hex(p.as_bytes()),
            Agent::Codex => false,
        }
    })
}

/// The project of a working directory: the nearest folder at or above it holding `.git`, else
/// the directory itself.
fn project_of(cwd: &str, cache: &mut HashMap<String, String>) -> String {
    if let Some(p) = cache.get(cwd) {
        return p.clone();
    }
    let mut found = cwd.trim_end_matches('/').to_string();
    let mut dir = Some(Path::new(cwd));
    while let Some(d) = dir {
        if d.join(".git").exists() {
            found = d.to_string_lossy().into_owned();
            break;
        }
        dir = d.parent();
    }
    cache.insert(cwd.to_string(), found.clone());
    found
}

fn under(path: &str, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| Path::new(path).starts_with(r))
}

/// The chunks one file's read yields, with what they replace and the file's new state.
struct Yield {
    chunks: Vec<NewChunk>,
    sources: Vec<NewSource>,
    turns: usize,
    /// Rowids of chunks whose turn's text changed (a re-read only).
    replaced: Vec<i64>,
}

/// The chunks of one file waiting to be written, and the state to record with them.
struct Pending {
    path: String,
    read: Yield,
    row: FileRow,
}

fn sync(inner: &Arc<Inner>, agent: Agent, paths: &[PathBuf], rules: &SessionRules) -> Result<SessionSync, MemoryError> {
    let mut summary = SessionSync::default();
    let mut projects = HashMap::new();
    let forgotten: HashSet<String> = {
        let conn = inner.read_conn()?;
        let mut q = conn.prepare_cached("SELECT session_id FROM forgotten_sessions")?;
        q.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
    };
    let mut pending: Vec<Pending> = Vec::new();
    let mut pending_chunks = 0;
    let mut since_commit = 0;
    let mut bulk: Option<entities::Bulk> = None;
    for path in paths {
        let meta = match std::fs::metadata(path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => continue,
            Err(_) => {
                let p = path.to_string_lossy().into_owned();
                let n = write::plain(inner, |tx| {
                    Ok(tx.prepare_cached("DELETE FROM session_files WHERE path = ?1")?.execute([&p])?)
                })?;
                summary.files_gone += n;
                continue;
            }
        };
        let (size, mtime_ms) = disk_state(&meta);
        let p = path.to_string_lossy().into_owned();
        let old = load_row(&*inner.read_conn()?, &p)?;
        if old.as_ref().is_some_and(|o| o.size == size && o.mtime_ms == mtime_ms) {
            continue;
        }
        let read = if agent.appends() {
            read_lines(inner, agent, path, &p, old, (size, mtime_ms), rules, &forgotten, &mut projects, &mut summary)
        } else {
            read_document(inner, path, &p, old, (size, mtime_ms), rules, &forgotten, &mut projects, &mut summary)
        };
        match read {
            Ok(Some((read, row))) => {
                pending_chunks += read.chunks.len();
                pending.push(Pending { path: p, read, row });
            }
            Ok(None) => {}
            Err(e) => summary.files_failed.push(FileError { path: path.clone(), error: format!("{e:#}") }),
        }
        if pending_chunks >= BATCH_CHUNKS {
            bulk.get_or_insert_with(|| entities::Bulk::enter(inner));
            summary.bulk = true;
            since_commit += pending_chunks;
            let commit = since_commit >= FTS_COMMIT_CHUNKS;
            write_pending(inner, std::mem::take(&mut pending), Some(commit), &mut summary)?;
            if commit {
                since_commit = 0;
            }
            pending_chunks = 0;
        }
    }
    if !pending.is_empty() {
        let live = !summary.bulk && pending_chunks <= LIVE_CHUNKS;
        summary.bulk |= !live;
        write_pending(inner, pending, (!live).then_some(false), &mut summary)?;
    }
    if summary.bulk {
        write::finish_bulk(inner)?;
    }
    drop(bulk);
    Ok(summary)
}

/// Writes the pending files' chunks and states in one transaction: acknowledged once
/// searchable (`bulk` None), or as a bulk batch whose keyword index commits when `bulk` says
/// (`finish_bulk` commits the rest).
fn write_pending(
    inner: &Arc<Inner>,
    pending: Vec<Pending>,
    bulk: Option<bool>,
    summary: &mut SessionSync,
) -> Result<(), MemoryError> {
    let apply = |tx: &Transaction<'_>, seq: i64| -> Result<(usize, usize), MemoryError> {
        let now = now_ms();
        let (mut added, mut removed) = (0, 0);
        for p in &pending {
            removed += store::delete_chunks(tx, seq, &p.read.replaced)?;
            for s in &p.read.sources {
                store::upsert_source(tx, s, now)?;
            }
            let inserted = store::insert_chunks(tx, seq, &p.read.chunks, now)?;
            added += inserted.len();
            // A turn that updates an earlier turn's fact supersedes it (see `facts`).
            crate::facts::chat_written(tx, &inserted.iter().map(|i| i.0).collect::<Vec<_>>())?;
            save_row(tx, &p.path, &p.row, now)?;
        }
        Ok((added, removed))
    };
    let (added, removed) = match bulk {
        Some(commit) => write::bulk(inner, commit, apply)?,
        None => write::run(inner, apply)?,
    };
    summary.chunks_added += added;
    summary.chunks_removed += removed;
    summary.turns_added += pending.iter().map(|p| p.read.turns).sum::<usize>();
    Ok(())
}

fn load_row(conn: &Connection, path: &str) -> Result<Option<FileRow>, MemoryError> {
    Ok(conn
        .prepare_cached(
            "SELECT byte_offset, head_print, tail_print, context, turns, malformed, unknown, excluded, waiting, size, mtime_ms
             FROM session_files WHERE path = ?1",
        )?
        .query_row([path], |r| {
            Ok(FileRow {
                offset: r.get::<_, i64>(0)? as u64,
                head: r.get(1)?,
                tail: r.get(2)?,
                ctx: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
                turns: r.get::<_, i64>(4)? as u64,
                malformed: r.get::<_, i64>(5)? as u64,
                unknown: r.get::<_, i64>(6)? as u64,
                excluded: r.get::<_, i64>(7)? as u64,
                waiting: r.get::<_, i64>(8)? as u64,
                size: r.get::<_, i64>(9)? as u64,
                mtime_ms: r.get(10)?,
            })
        })
        .optional()?)
}

fn save_row(tx: &Transaction<'_>, path: &str, row: &FileRow, now: i64) -> Result<(), MemoryError> {
    tx.prepare_cached(
        "INSERT INTO session_files (path, byte_offset, head_print, tail_print, context, turns, malformed, unknown,
            excluded, waiting, size, mtime_ms, updated_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT(path) DO UPDATE SET byte_offset = excluded.byte_offset, head_print = excluded.head_print,
            tail_print = excluded.tail_print, context = excluded.context, turns = excluded.turns,
            malformed = excluded.malformed, unknown = excluded.unknown, excluded = excluded.excluded,
            waiting = excluded.waiting, size = excluded.size, mtime_ms = excluded.mtime_ms,
            updated_at_ms = excluded.updated_at_ms",
    )?
    .execute(params![
        path,
        row.offset as i64,
        row.head,
        row.tail,
        serde_json::to_string(&row.ctx).unwrap_or_default(),
        row.turns as i64,
        row.malformed as i64,
        row.unknown as i64,
        row.excluded as i64,
        row.waiting as i64,
        row.size as i64,
        row.mtime_ms,
        now
    ])?;
    Ok(())
}

/// sha256 of `len` bytes of `file` from `at`.
fn print(file: &mut std::fs::File, at: u64, len: u64) -> std::io::Result<String> {
    file.seek(SeekFrom::Start(at))?;
    let mut buf = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut buf)?;
    Ok(sha256_hex(&buf))
}

/// The two fingerprints of the bytes before `offset`.
fn prints(file: &mut std::fs::File, offset: u64) -> std::io::Result<(String, String)> {
    let head = print(file, 0, offset.min(PRINT_BYTES))?;
    let tail_len = offset.min(PRINT_BYTES);
    let tail = print(file, offset - tail_len, tail_len)?;
    Ok((head, tail))
}

/// Reads an appending log from its offset (or from the start when it was rewritten).
#[allow(clippy::too_many_arguments)]
fn read_lines(
    inner: &Inner,
    agent: Agent,
    path: &Path,
    p: &str,
    old: Option<FileRow>,
    (size, mtime_ms): (u64, i64),
    rules: &SessionRules,
    forgotten: &HashSet<String>,
    projects: &mut HashMap<String, String>,
    summary: &mut SessionSync,
) -> Result<Option<(Yield, FileRow)>, MemoryError> {
    let mut file = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut row = match old {
        Some(o)
            if o.offset <= size
                && prints(&mut file, o.offset).map_err(|e| io(path, e))? == (o.head.clone(), o.tail.clone()) =>
        {
            o
        }
        Some(_) => {
            summary.files_reread += 1;
            FileRow::default()
        }
        None => FileRow::default(),
    };
    let counted = (row.malformed, row.unknown, row.excluded);
    // A re-read (from the start, with chunks of this file already stored) compares each turn
    // with what is stored.
    let stored = if row.offset == 0 { stored_turns(inner, p)? } else { HashMap::new() };
    row.size = size;
    row.mtime_ms = mtime_ms;
    file.seek(SeekFrom::Start(row.offset)).map_err(|e| io(path, e))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut ctx = SessionContext {
        session_id: row.ctx.session_id.clone(),
        cwd: row.ctx.cwd.clone(),
        branch: row.ctx.branch.clone(),
    };
    let mut out = Yield { chunks: Vec::new(), sources: Vec::new(), turns: 0, replaced: Vec::new() };
    let mut line = Vec::new();
    let mut pos = row.offset;
    let mut seen_sources = HashSet::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(|e| io(path, e))?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            // Still being written: read once its newline is there.
            break;
        }
        pos += n as u64;
        let body = line.trim_ascii();
        if body.is_empty() {
            continue;
        }
        match openhuman_formats::read_agent_line(agent, body) {
            Err(_) => row.malformed += 1,
            Ok(Record::Ignored) => {}
            Ok(Record::Unknown(_)) => row.unknown += 1,
            Ok(Record::Context(c)) => ctx.update(&c),
            Ok(Record::Turn(turn, c)) => {
                ctx.update(&c);
                if turn.is_empty() {
                    continue;
                }
                let kept = keep(agent, path, &turn, &ctx, None, rules, forgotten, projects, &stored, &mut out);
                if kept {
                    row.turns += 1;
                    out.turns += 1;
                    let sid = session_source(&ctx, path);
                    if seen_sources.insert(sid) {
                        out.sources.push(source(agent, path, &ctx, None, projects));
                    }
                } else {
                    row.excluded += 1;
                }
            }
        }
    }
    summary.bytes_read += pos - row.offset;
    summary.files_read += 1;
    row.offset = pos;
    row.waiting = size.saturating_sub(pos);
    let mut file = reader.into_inner();
    (row.head, row.tail) = prints(&mut file, pos).map_err(|e| io(path, e))?;
    row.ctx = Ctx { session_id: ctx.session_id.clone(), cwd: ctx.cwd.clone(), branch: ctx.branch.clone() };
    summary.malformed += (row.malformed - counted.0) as usize;
    summary.unknown += (row.unknown - counted.1) as usize;
    summary.excluded += (row.excluded - counted.2) as usize;
    Ok(Some((out, row)))
}

/// Reads a whole-document log (Gemini CLI).
#[allow(clippy::too_many_arguments)]
fn read_document(
    inner: &Inner,
    path: &Path,
    p: &str,
    old: Option<FileRow>,
    (size, mtime_ms): (u64, i64),
    rules: &SessionRules,
    forgotten: &HashSet<String>,
    projects: &mut HashMap<String, String>,
    summary: &mut SessionSync,
) -> Result<Option<(Yield, FileRow)>, MemoryError> {
    let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
    let hash = sha256_hex(&bytes);
    let mut row = old.unwrap_or_default();
    if row.head == hash {
        return Ok(None);
    }
    let session = match openhuman_formats::read_gemini_session(&bytes) {
        Ok(s) => s,
        Err(_) => {
            // Caught while the client rewrites it: the next change reads it whole.
            row.waiting = size;
            return Ok(None);
        }
    };
    summary.files_read += 1;
    summary.bytes_read += size;
    // The project: the `.project_root` file newer clients keep beside `chats/`.
    let project_root = path
        .parent()
        .and_then(Path::parent)
        .and_then(|d| std::fs::read_to_string(d.join(".project_root")).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let mut ctx = session.context.clone();
    if ctx.cwd.is_none() {
        ctx.cwd = project_root;
    }
    let stored = stored_turns(inner, p)?;
    let mut out = Yield { chunks: Vec::new(), sources: Vec::new(), turns: 0, replaced: Vec::new() };
    let (mut turns, mut excluded) = (0u64, 0u64);
    for turn in session.turns.iter().filter(|t| !t.is_empty()) {
        if keep(
            Agent::Gemini,
            path,
            turn,
            &ctx,
            session.project_hash.as_deref(),
            rules,
            forgotten,
            projects,
            &stored,
            &mut out,
        ) {
            turns += 1;
        } else {
            excluded += 1;
        }
    }
    out.turns = out.chunks.iter().map(|c| c.source_ref.as_str()).collect::<HashSet<_>>().len();
    if turns > 0 {
        out.sources.push(source(Agent::Gemini, path, &ctx, session.project_hash.as_deref(), projects));
    }
    row = FileRow {
        offset: size,
        head: hash,
        tail: String::new(),
        ctx: Ctx { session_id: ctx.session_id.clone(), cwd: ctx.cwd.clone(), branch: ctx.branch.clone() },
        turns,
        malformed: session.malformed as u64,
        unknown: session.unknown.len() as u64,
        excluded,
        waiting: 0,
        size,
        mtime_ms,
    };
    summary.malformed += session.malformed;
    summary.unknown += session.unknown.len();
    summary.excluded += excluded as usize;
    Ok(Some((out, row)))
}

fn io(path: &Path, e: std::io::Error) -> MemoryError {
    MemoryError::Io { what: format!("reading {}", path.display()), error: e }
}

/// The chunks already stored for each turn of the log at `p` (by source ref).
fn stored_turns(inner: &Inner, p: &str) -> Result<HashMap<String, Vec<(i64, String)>>, MemoryError> {
    let conn = inner.read_conn()?;
    let mut q = conn.prepare_cached("SELECT rowid, id, source_ref FROM chunks WHERE origin = ?1")?;
    let mut out: HashMap<String, Vec<(i64, String)>> = HashMap::new();
    let rows =
        q.query_map([origin(p)], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
    for row in rows {
        let (rowid, id, source_ref) = row?;
        out.entry(source_ref).or_default().push((rowid, id));
    }
    Ok(out)
}

fn origin(p: &str) -> String {
    format!("agent-log:{p}")
}

fn session_source(ctx: &SessionContext, path: &Path) -> String {
    match &ctx.session_id {
        Some(id) => format!("session:{id}"),
        None => format!("session:{}", path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default()),
    }
}

fn project(ctx: &SessionContext, projects: &mut HashMap<String, String>) -> Option<String> {
    ctx.cwd.as_deref().map(|c| project_of(c, projects))
}

fn title(agent: Agent, ctx: &SessionContext, projects: &mut HashMap<String, String>) -> String {
    let name = project(ctx, projects)
        .and_then(|p| Path::new(&p).file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "session".into());
    match &ctx.branch {
        Some(b) => format!("{} · {name} ({b})", agent.display()),
        None => format!("{} · {name}", agent.display()),
    }
}

fn source(
    agent: Agent,
    path: &Path,
    ctx: &SessionContext,
    project_hash: Option<&str>,
    projects: &mut HashMap<String, String>,
) -> NewSource {
    let project = project(ctx, projects);
    let mut metadata = context_metadata(agent, ctx, project.as_deref(), project_hash);
    metadata.insert("file_path".into(), json!(path.to_string_lossy()));
    NewSource {
        source_id: session_source(ctx, path),
        kind: SourceKind::Chat,
        display_name: title(agent, ctx, projects),
        metadata,
    }
}

/// What a session's source and each of its turns say of the session: agent, session id,
/// project, working directory, branch and, for Gemini, the project hash.
fn context_metadata(
    agent: Agent,
    ctx: &SessionContext,
    project: Option<&str>,
    project_hash: Option<&str>,
) -> Map<String, serde_json::Value> {
    let mut metadata = Map::new();
    metadata.insert("agent".into(), json!(agent.name()));
    let fields = [
        ("session_id", ctx.session_id.as_deref()),
        ("project", project),
        ("cwd", ctx.cwd.as_deref()),
        ("branch", ctx.branch.as_deref()),
        ("project_hash", project_hash),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            metadata.insert(key.into(), json!(v));
        }
    }
    metadata
}

/// The text a turn is stored as (before redaction).
fn turn_text(turn: &Turn) -> String {
    let mut out = String::new();
    let speaker = match turn.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool output",
    };
    if !turn.text.trim().is_empty() {
        out.push_str(&format!("{speaker}: {}\n", turn.text.trim()));
    }
    for t in &turn.tools {
        let mut line = format!("{} {}", if turn.role == Role::User { "user ran" } else { "ran" }, t.name);
        if !t.files.is_empty() {
            line.push_str(&format!(" on {}", t.files.join(", ")));
        }
        if let Some(c) = &t.command {
            line.push_str(&format!(": $ {c}"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    for (name, o) in &turn.outputs {
        if o.trim().is_empty() {
            continue;
        }
        match name {
            Some(n) => out.push_str(&format!("output of {n}: {o}\n")),
            None => out.push_str(&format!("tool output: {o}\n")),
        }
    }
    out.trim_end().to_string()
}

/// Adds the chunks of one turn to `out` unless its project is excluded or its session
/// forgotten (false). On a re-read, a turn stored with other text has its old chunks replaced.
#[allow(clippy::too_many_arguments)]
fn keep(
    agent: Agent,
    path: &Path,
    turn: &Turn,
    ctx: &SessionContext,
    project_hash: Option<&str>,
    rules: &SessionRules,
    forgotten: &HashSet<String>,
    projects: &mut HashMap<String, String>,
    stored: &HashMap<String, Vec<(i64, String)>>,
    out: &mut Yield,
) -> bool {
    let project = project(ctx, projects);
    if project.iter().chain(ctx.cwd.iter()).any(|p| under(p, &rules.exclude_projects)) {
        return false;
    }
    if ctx.session_id.as_ref().is_some_and(|id| forgotten.contains(id)) {
        return false;
    }
    let p = path.to_string_lossy();
    let source_ref = format!("{p}#{}", turn.id);
    let text = scrub(&turn_text(turn));
    let pieces: Vec<String> = if estimate_tokens(&text) <= MAX_TOKENS {
        vec![text]
    } else {
        chunk_text(&text, Format::Plain).into_iter().map(|c| c.content).collect()
    };
    let mut metadata = context_metadata(agent, ctx, project.as_deref(), project_hash);
    if let Some(id) = &ctx.session_id {
        // The session is the turn's thread, so `filter.thread_id` selects one session.
        metadata.insert("thread_id".into(), json!(id));
    }
    metadata.insert("role".into(), json!(turn.role.as_str()));
    metadata.insert("turn_id".into(), json!(turn.id));
    metadata.insert("file_path".into(), json!(p));
    let files: Vec<String> = turn.tools.iter().flat_map(|t| t.files.iter().map(|f| scrub(f))).collect();
    let commands: Vec<String> = turn.tools.iter().filter_map(|t| t.command.as_deref()).map(scrub).collect();
    if !files.is_empty() {
        metadata.insert("files".into(), json!(files));
    }
    if !commands.is_empty() {
        metadata.insert("commands".into(), json!(commands));
    }
    let source_id = session_source(ctx, path);
    let timestamp_ms = turn.ts_ms.unwrap_or_else(now_ms);
    let first = out.chunks.len();
    for (i, content) in pieces.into_iter().enumerate() {
        out.chunks.push(NewChunk {
            kind: SourceKind::Chat,
            source_id: source_id.clone(),
            source_ref: source_ref.clone(),
            origin: origin(&p),
            owner: match turn.role {
                Role::User => Some("user".into()),
                Role::Assistant => Some(agent.name().into()),
                Role::Tool => None,
            },
            provenance: "session".into(),
            timestamp_ms,
            seq: i as i64,
            title: Some(title(agent, ctx, projects)),
            content,
            metadata: metadata.clone(),
            tags: Vec::new(),
            // Lifted from `metadata.project` when the chunk is stored.
            project: None,
        });
    }
    if let Some(old) = stored.get(&source_ref) {
        let new: HashSet<String> = out.chunks[first..].iter().map(NewChunk::id).collect();
        out.replaced.extend(old.iter().filter(|(_, id)| !new.contains(id)).map(|(rowid, _)| *rowid));
    }
    true
}

/// Records that a session was forgotten (`id` is `session:<session id>`), so its log is not
/// read into memory again.
pub(crate) fn forgotten(tx: &Connection, id: &str, now: i64) -> rusqlite::Result<()> {
    if let Some(session) = id.strip_prefix("session:").filter(|s| !s.is_empty()) {
        tx.prepare_cached("INSERT OR IGNORE INTO forgotten_sessions (session_id, forgotten_at_ms) VALUES (?1, ?2)")?
            .execute(params![session, now])?;
    }
    Ok(())
}
