//! Keeps the derived indexes in step with SQLite: opening (with catch-up after a crash
//! or a deleted index directory), applying each committed write, and full rebuilds.
//! Chunks left without a vector (bulk ingest, a large catch-up, a new embedder, an
//! embedder failure) are embedded by `backfill`.
//!
//! Protocol: a transaction that changes chunks takes `db_seq + 1`; inserted chunks carry
//! it in `change_seq`, deleted ones leave a tombstone with it. An index that has applied
//! sequence `s` catches up by deleting tombstoned rowids with `seq > s` and adding chunks
//! with `change_seq > s`. Rowids are never reused, so replays are idempotent.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use tantivy::IndexWriter;

use super::backfill;
use super::embed::EmbedError;
use super::error::{MemoryError, ResultExt};
use super::fts::Fts;
use super::store::db_seq;
use super::types::ReindexSummary;
use super::util::now_ms;
use super::vecfile::VecFile;
use super::vectors::normalize;
use super::{Inner, MemoryEngine, MemoryOptions, lock, schema};

/// Above this many chunks to embed, `open()` leaves embedding to the background thread
/// so that start-up stays fast.
const OPEN_EMBED_LIMIT: usize = 2_000;
pub(crate) const EMBED_BATCH: usize = 128;

pub(crate) struct WriteState {
    pub conn: Connection,
    pub fts_writer: IndexWriter,
    /// Highest sequence added to the tantivy writer (possibly not yet committed).
    pub fts_applied: i64,
    /// Sequence of the last tantivy commit.
    pub fts_committed: i64,
    pub vec_file: VecFile,
    pub vec_applied: i64,
}

fn read_state(conn: &Connection, name: &str) -> rusqlite::Result<Option<i64>> {
    conn.query_row("SELECT seq FROM index_state WHERE name = ?1", [name], |r| r.get(0)).optional()
}

fn write_state(conn: &Connection, name: &str, seq: i64, detail: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO index_state (name, seq, updated_at_ms, detail) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(name) DO UPDATE SET seq = excluded.seq, updated_at_ms = excluded.updated_at_ms, detail = excluded.detail",
    )?
    .execute(params![name, seq, now_ms(), detail])?;
    Ok(())
}

pub(crate) fn open(opts: MemoryOptions) -> Result<Inner, MemoryError> {
    let dir = &opts.data_dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // One process owns the indexes: a second writer would interleave vector-log records
    // and fight over tantivy's writer lock. The OS drops the lock when the process dies.
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("LOCK"))
        .with_context(|| format!("creating {}", dir.join("LOCK").display()))?;
    match lock_file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(MemoryError::InUse(dir.clone())),
        Err(std::fs::TryLockError::Error(e)) => return Err(e).context("locking the memory store"),
    }
    let mut conn = schema::open_connection(&dir.join("memory.db"))?;
    schema::migrate(&mut conn)?;
    let seq = db_seq(&conn)?;

    let (fts, fts_writer, fts_durable) = Fts::open(&dir.join("fts"))?;
    let signature = opts.embedder.signature().to_string();
    let dims = opts.embedder.dims();
    let (vectors, vec_file, vec_durable) = VecFile::load(&dir.join("vectors"), &signature, dims)?;

    // An index ahead of the database belongs to another (restored or replaced)
    // database: start it over.
    let mut fts_applied = fts_durable.min(read_state(&conn, "fts")?.unwrap_or(0));
    if fts_durable > seq {
        tracing::warn!(index = fts_durable, db = seq, "full-text index is ahead of the database; rebuilding it");
        fts_writer.delete_all_documents()?;
        fts_applied = 0;
    }
    let mut vectors = vectors;
    let mut vec_applied = vec_durable.min(read_state(&conn, "vectors")?.unwrap_or(0));
    if vec_durable > seq {
        tracing::warn!(index = vec_durable, db = seq, "vector index is ahead of the database; rebuilding it");
        vectors.clear();
        vec_applied = 0;
    }
    let ws = WriteState { conn, fts_writer, fts_applied, fts_committed: fts_durable, vec_file, vec_applied };
    let inner = Inner {
        _lock: lock_file,
        data_dir: dir.clone(),
        embedder: opts.embedder,
        writer: Mutex::new(ws),
        readers: Mutex::new(Vec::new()),
        fts,
        vectors: RwLock::new(vectors),
        background: Mutex::new(backfill::Background::default()),
        needs_fill: AtomicBool::new(false),
        stopping: AtomicBool::new(false),
        group_commit: GroupCommit::default(),
    };
    {
        let mut ws = lock(&inner.writer);
        let behind = (seq - ws.fts_applied, seq - ws.vec_applied);
        if behind != (0, 0) {
            tracing::info!(fts_behind = behind.0, vectors_behind = behind.1, "catching indexes up with the database");
        }
        // The fts commit must happen even at seq 0 when documents were wiped above.
        sync_fts(&inner, &mut ws, true)?;
        if ws.fts_committed != ws.fts_applied || fts_durable > seq {
            let applied = ws.fts_applied;
            inner.fts.commit(&mut ws.fts_writer, applied)?;
            ws.fts_committed = applied;
        }
        sync_vectors(&inner, &mut ws, Some(OPEN_EMBED_LIMIT))?;
        purge_ghost_vectors(&inner, &mut ws)?;
        if ws.vec_file.should_compact() || vec_durable > seq {
            let applied = ws.vec_applied;
            ws.vec_file.compact(&read(&inner.vectors), applied)?;
        }
        prune_tombstones(&mut ws)?;
    }
    Ok(inner)
}

/// Drops vectors of chunks that no longer exist. The vector log is not fsynced, so after
/// a power loss it can be older than tombstones already pruned; such stale rows would
/// only waste result slots, but they are cheap to find once at open.
fn purge_ghost_vectors(inner: &Inner, ws: &mut WriteState) -> Result<(), MemoryError> {
    let live: HashSet<i64> =
        ws.conn.prepare("SELECT rowid FROM chunks")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    let mut ix = write(&inner.vectors);
    let ghosts: Vec<i64> = ix.rowids().filter(|r| !live.contains(r)).collect();
    if ghosts.is_empty() {
        return Ok(());
    }
    tracing::info!(count = ghosts.len(), "dropping vectors of deleted chunks");
    for g in ghosts {
        ix.remove(g);
        ws.vec_file.delete(g)?;
    }
    let applied = ws.vec_applied;
    ws.vec_file.commit(applied)?;
    Ok(())
}

pub(crate) fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Adds to tantivy what the database committed after `fts_applied`; commits (and makes
/// it searchable) when `commit` is set.
pub(crate) fn sync_fts(inner: &Inner, ws: &mut WriteState, commit: bool) -> Result<(), MemoryError> {
    let target = db_seq(&ws.conn)?;
    let from = ws.fts_applied;
    if target > from {
        // Rows at or below the last durable commit may already be in the index.
        let dedupe_until = ws.fts_committed;
        let mut tomb = ws.conn.prepare_cached("SELECT chunk_rowid FROM tombstones WHERE seq > ?1")?;
        let rows = tomb.query_map([from], |r| r.get::<_, i64>(0))?;
        for r in rows {
            inner.fts.delete(&ws.fts_writer, r?);
        }
        let mut stmt = ws.conn.prepare_cached(
            "SELECT rowid, title, json_extract(metadata, '$.heading'), content, change_seq FROM chunks WHERE change_seq > ?1",
        )?;
        let mut rows = stmt.query([from])?;
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(0)?;
            let title: Option<String> = r.get(1)?;
            let heading: Option<String> = r.get(2)?;
            let content: String = r.get(3)?;
            let change_seq: i64 = r.get(4)?;
            if change_seq <= dedupe_until {
                inner.fts.delete(&ws.fts_writer, rowid);
            }
            inner.fts.add(&ws.fts_writer, rowid, title.as_deref(), heading.as_deref(), &content)?;
        }
        ws.fts_applied = target;
    }
    if commit && ws.fts_committed != ws.fts_applied {
        let applied = ws.fts_applied;
        inner.fts.commit(&mut ws.fts_writer, applied)?;
        ws.fts_committed = applied;
        write_state(&ws.conn, "fts", applied, "")?;
    }
    Ok(())
}

/// Text that represents a chunk to the embedder.
pub(crate) fn embed_text(title: Option<&str>, content: &str) -> String {
    match title {
        Some(t) if !t.is_empty() => format!("{t}\n{content}"),
        _ => content.to_string(),
    }
}

/// The embedder answered a batch of `texts` texts with `vectors` vectors.
pub(crate) fn wrong_count(vectors: usize, texts: usize) -> MemoryError {
    MemoryError::Embed(EmbedError(format!("embedder returned {vectors} vectors for {texts} texts")))
}

/// Embeds `(rowid, text)` pairs and stores the vectors; on embedder failure the rows are
/// left without vectors for the background thread to retry.
fn embed_rows(inner: &Inner, ws: &mut WriteState, rows: &[(i64, String)]) -> Result<bool, MemoryError> {
    for batch in rows.chunks(EMBED_BATCH) {
        let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
        let vecs = match inner.embedder.embed(&texts) {
            Ok(v) if v.len() == batch.len() => v,
            Ok(v) => return Err(wrong_count(v.len(), batch.len())),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "embedding failed; chunks stay keyword-only until retried");
                return Ok(false);
            }
        };
        let dims = inner.embedder.dims();
        let mut ix = write(&inner.vectors);
        for ((rowid, _), mut v) in batch.iter().zip(vecs) {
            v.resize(dims, 0.0);
            normalize(&mut v);
            ix.upsert_normalized(*rowid, &v);
            ws.vec_file.upsert(*rowid, &v)?;
        }
    }
    Ok(true)
}

/// Applies database changes after `vec_applied` to the vector index and commits them to
/// the vector log. With `embed_limit`, a larger backlog is left to the background thread.
pub(crate) fn sync_vectors(inner: &Inner, ws: &mut WriteState, embed_limit: Option<usize>) -> Result<(), MemoryError> {
    let target = db_seq(&ws.conn)?;
    let from = ws.vec_applied;
    if target <= from {
        return Ok(());
    }
    let tombs: Vec<i64> = ws
        .conn
        .prepare_cached("SELECT chunk_rowid FROM tombstones WHERE seq > ?1")?
        .query_map([from], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    {
        let mut ix = write(&inner.vectors);
        for r in &tombs {
            if ix.remove(*r) {
                ws.vec_file.delete(*r)?;
            }
        }
    }
    let pending: i64 =
        ws.conn.prepare_cached("SELECT count(*) FROM chunks WHERE change_seq > ?1")?.query_row([from], |r| r.get(0))?;
    let complete = if embed_limit.is_none_or(|l| pending as usize <= l) {
        let rows: Vec<(i64, String)> = ws
            .conn
            .prepare_cached("SELECT rowid, title, content FROM chunks WHERE change_seq > ?1")?
            .query_map([from], |r| {
                Ok((r.get(0)?, embed_text(r.get::<_, Option<String>>(1)?.as_deref(), &r.get::<_, String>(2)?)))
            })?
            .collect::<rusqlite::Result<_>>()?;
        embed_rows(inner, ws, &rows)?
    } else {
        false
    };
    ws.vec_file.commit(target)?;
    ws.vec_applied = target;
    write_state(&ws.conn, "vectors", target, inner.embedder.signature())?;
    if !complete {
        inner.needs_fill.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// Drops tombstones every index has applied.
pub(crate) fn prune_tombstones(ws: &mut WriteState) -> rusqlite::Result<()> {
    let upto = ws.fts_committed.min(ws.vec_applied);
    ws.conn.prepare_cached("DELETE FROM tombstones WHERE seq <= ?1")?.execute([upto])?;
    Ok(())
}

/// Brings both indexes up to date after a committed write and makes it searchable.
/// Index failures are logged, not returned: the write itself is durable, and the next
/// write or open replays what the indexes missed.
pub(crate) fn after_write(inner: &Arc<Inner>, ws: &mut WriteState) {
    // The keyword index gets the rows now and commits them in `wait_searchable`, once for
    // every write that is waiting by then.
    if let Err(e) = sync_fts(inner, ws, false) {
        tracing::warn!(error = %format!("{e:#}"), "full-text index update failed; it will be retried");
        let _ = ws.fts_writer.rollback();
        ws.fts_applied = ws.fts_committed;
    }
    if let Err(e) = sync_vectors(inner, ws, None) {
        tracing::warn!(error = %format!("{e:#}"), "vector index update failed; it will be retried");
    }
    if let Err(e) = prune_tombstones(ws) {
        tracing::warn!(error = %e, "pruning tombstones failed");
    }
    if inner.needs_fill.load(Ordering::Relaxed) {
        backfill::start(inner);
    }
}

/// Where the group commit of the keyword index stands.
#[derive(Default)]
pub(crate) struct GroupCommit {
    state: Mutex<CommitState>,
    done: Condvar,
    /// Writes between taking their turn and handing their rows to the index writer: a commit
    /// started now would leave them for the next one.
    in_flight: AtomicUsize,
}

/// How long a waiting write holds the next index commit back for writes still in flight.
const GATHER: Duration = Duration::from_millis(20);

/// Counts a write in flight until dropped (also on error paths).
pub(crate) struct InFlight<'a>(&'a Inner);

impl<'a> InFlight<'a> {
    pub fn enter(inner: &'a Inner) -> InFlight<'a> {
        inner.group_commit.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(inner)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let group = &self.0.group_commit;
        if group.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last one in: whoever waits to commit may start now.
            let _st = lock(&group.state);
            group.done.notify_all();
        }
    }
}

#[derive(Default)]
struct CommitState {
    /// Every write at or below this change sequence is searchable.
    searchable: i64,
    /// A writer is committing the index for everyone waiting.
    running: bool,
    /// The last commit failed: writes up to this sequence get the error.
    failed: Option<(i64, String)>,
}

/// Returns once the write with change sequence `seq` (committed to SQLite, its rows handed to
/// the index writer by `after_write`) is searchable. Writes that arrive while one index
/// commit runs wait for it to end and are all made durable by the next one, so many writers
/// share each commit instead of paying one apiece: the first waiter to find no commit running
/// and no write in flight ([`InFlight`], or once it has waited [`GATHER`]) runs it, under the
/// writer lock, for every write applied so far.
pub(crate) fn wait_searchable(inner: &Inner, seq: i64) -> Result<(), MemoryError> {
    let group = &inner.group_commit;
    let since = Instant::now();
    let mut st = lock(&group.state);
    loop {
        if st.searchable >= seq {
            return Ok(());
        }
        if let Some((upto, why)) = &st.failed
            && *upto >= seq
        {
            return Err(MemoryError::NotSearchable(why.clone()));
        }
        if st.running {
            st = group.done.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        }
        // Let the writes already under way join this commit, for at most GATHER.
        let waited = since.elapsed();
        if group.in_flight.load(Ordering::SeqCst) > 0 && waited < GATHER {
            st = group.done.wait_timeout(st, GATHER - waited).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
            continue;
        }
        st.running = true;
        drop(st);
        let outcome = {
            let mut ws = lock(&inner.writer);
            let result = sync_fts(inner, &mut ws, true);
            if result.is_err() {
                // Start again from the last commit: the next writer re-adds what this one lost.
                let _ = ws.fts_writer.rollback();
                ws.fts_applied = ws.fts_committed;
            }
            (result, ws.fts_committed, db_seq(&ws.conn).unwrap_or(seq))
        };
        st = lock(&group.state);
        st.running = false;
        match outcome {
            (Ok(()), committed, _) => {
                st.searchable = st.searchable.max(committed);
                st.failed = None;
            }
            (Err(e), _, upto) => {
                tracing::warn!(error = %format!("{e:#}"), "full-text index commit failed; it will be retried");
                st.failed = Some((upto, format!("{e:#}")));
            }
        }
        group.done.notify_all();
    }
}

/// Rebuilds both indexes from the database under the writer lock.
pub(crate) fn reindex(inner: &Inner) -> Result<ReindexSummary, MemoryError> {
    let started = Instant::now();
    let mut ws = lock(&inner.writer);
    ws.fts_writer.delete_all_documents()?;
    // Treat everything as new: nothing is left in the writer to de-duplicate against.
    ws.fts_applied = 0;
    ws.fts_committed = 0;
    write(&inner.vectors).clear();
    ws.vec_applied = 0;
    sync_fts(inner, &mut ws, false)?;
    let applied = ws.fts_applied;
    inner.fts.commit(&mut ws.fts_writer, applied)?;
    ws.fts_committed = applied;
    write_state(&ws.conn, "fts", applied, "")?;
    sync_vectors(inner, &mut ws, None)?;
    let applied = ws.vec_applied;
    ws.vec_file.compact(&read(&inner.vectors), applied)?;
    prune_tombstones(&mut ws)?;
    let chunks: i64 = ws.conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
    Ok(ReindexSummary {
        chunks: chunks as usize,
        fts_docs: inner.fts.num_docs(),
        vectors: read(&inner.vectors).len(),
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Index positions for `stats`.
pub(crate) fn positions(inner: &Inner) -> (i64, i64, i64) {
    let ws = lock(&inner.writer);
    let seq = db_seq(&ws.conn).unwrap_or(-1);
    (seq, ws.fts_committed, ws.vec_applied)
}

impl MemoryEngine {
    /// Checks the store after a crash or on request: SQLite's `integrity_check` and
    /// `foreign_key_check`, and whether both indexes hold exactly the database's chunks.
    pub fn check(&self) -> Result<serde_json::Value, MemoryError> {
        check(&self.inner)
    }
}

fn check(inner: &Inner) -> Result<serde_json::Value, MemoryError> {
    let conn = inner.read_conn()?;
    let integrity: Vec<String> =
        conn.prepare("PRAGMA integrity_check")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    let foreign_key_violations = conn.prepare("PRAGMA foreign_key_check")?.query_map([], |_| Ok(()))?.count();
    // Counts and positions under the writer lock, so that no write lands between them.
    let (chunks, seq, fts_seq, fts_docs, vec_seq, vectors, ghosts) = {
        let ws = lock(&inner.writer);
        let live: HashSet<i64> = ws
            .conn
            .prepare("SELECT rowid FROM chunks")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let ix = read(&inner.vectors);
        let ghosts = ix.rowids().filter(|r| !live.contains(r)).count();
        (live.len(), db_seq(&ws.conn)?, ws.fts_committed, inner.fts.num_docs(), ws.vec_applied, ix.len(), ghosts)
    };
    let sqlite_ok = integrity == ["ok"] && foreign_key_violations == 0;
    let fts_current = fts_seq == seq && fts_docs == chunks as u64;
    Ok(serde_json::json!({
        "ok": sqlite_ok && fts_current && ghosts == 0,
        "integrity_check": integrity,
        "foreign_key_violations": foreign_key_violations,
        "chunks": chunks,
        "db_seq": seq,
        "fts": { "seq": fts_seq, "docs": fts_docs, "current": fts_current },
        // Vectors may lag behind while the background thread embeds; `missing` says how far.
        "vectors": { "seq": vec_seq, "count": vectors, "missing": chunks.saturating_sub(vectors),
                     "ghosts": ghosts },
    }))
}
