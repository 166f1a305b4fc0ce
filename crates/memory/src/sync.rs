//! Keeps the derived indexes in step with SQLite: opening (with catch-up after a crash
//! or a deleted index directory), applying each committed write, and full rebuilds.
//! Chunks left without a vector (bulk ingest, a large catch-up, a new embedder, an
//! embedder failure, and every new chunk for the deep tier) are embedded by `backfill`.
//!
//! Protocol: a transaction that changes chunks takes `db_seq + 1`; inserted chunks carry
//! it in `change_seq`, deleted ones leave a tombstone with it. An index that has applied
//! sequence `s` catches up by deleting tombstoned rowids with `seq > s` and adding chunks
//! with `change_seq > s`. Rowids are never reused, so replays are idempotent.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use super::embed::embed_text;
use super::error::{MemoryError, ResultExt, wrong_count};
use super::fts::Fts;
use super::locks::{read, write};
use super::seq::db_seq;
use super::tier::{EMBED_BATCH, Tier, TierKind, TierLog};
use super::types::ReindexSummary;
use super::util::{CHAT_CONTEXT_MAX, after_stamp, cut_at_word, now_ms};
use super::vecfile::VecFile;
use super::vectors::{VectorIndex, normalize};
use super::writer::{WriteState, exclusive};
use super::{Inner, MemoryEngine, MemoryOptions, lock, schema};

/// Above this many chunks to embed, `open()` leaves embedding to the background thread
/// so that start-up stays fast.
const OPEN_EMBED_LIMIT: usize = 2_000;

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

/// Takes the store's lock (`data_dir/LOCK`), held for as long as the returned file lives. One
/// process owns a store: a second writer would interleave vector-log records and fight over
/// tantivy's writer lock; a restore or a move must not run beside it. The OS drops the lock
/// when the process dies.
pub(crate) fn lock_store(dir: &Path) -> Result<std::fs::File, MemoryError> {
    let path = dir.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(MemoryError::InUse(dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(e).context("locking the memory store"),
    }
}

pub(crate) fn open(opts: MemoryOptions) -> Result<Inner, MemoryError> {
    let dir = &opts.data_dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock_file = lock_store(dir)?;
    let mut conn = schema::open_connection(&dir.join("memory.db"))?;
    conn.pragma_update(None, "wal_autocheckpoint", super::checkpoint::WRITER_CHECKPOINT_PAGES)?;
    schema::migrate(&mut conn)?;
    // A copy of a shared store takes its entities from the server: extracting them again here
    // would write outside the shared store's transactions.
    if opts.shared.is_none() {
        super::entities::begin_reextract(&mut conn)?;
    }
    let seq = db_seq(&conn)?;
    let recorder = match &opts.shared {
        Some(o) => {
            let tables = super::shared::catalog(&conn)?;
            let recorder = super::shared::Recorder::install(&mut conn, tables)?;
            super::visibility::install(&conn, &o.visibility, &o.machine)?;
            Some(recorder)
        }
        None => None,
    };
    let shared = opts.shared.map(|o| super::SharedLink {
        store: o.store,
        engine: o.engine,
        machine: o.machine,
        person: Default::default(),
        applied: Default::default(),
        head: Default::default(),
        connected: Default::default(),
        attached: Default::default(),
        joining: Default::default(),
        joined: Default::default(),
        last_error: Default::default(),
        follower: Default::default(),
        log: Default::default(),
        vectors: Default::default(),
        search_in_database: o.vector_search_in_database,
    });

    let (fts, fts_writer, fts_durable) = Fts::open(&dir.join("fts"))?;
    let (fast, fast_log, fast_durable) = load_tier(&conn, dir, TierKind::Fast, opts.embedder, seq)?;
    let deep = match opts.deep {
        Some(e) => Some(load_tier(&conn, dir, TierKind::Deep, e, seq)?),
        None => None,
    };

    // An index ahead of the database belongs to another (restored or replaced)
    // database: start it over.
    let mut fts_applied = fts_durable.min(read_state(&conn, "fts")?.unwrap_or(0));
    if fts_durable > seq {
        tracing::warn!(index = fts_durable, db = seq, "full-text index is ahead of the database; rebuilding it");
        fts_writer.delete_all_documents()?;
        fts_applied = 0;
    }
    let (deep, deep_log, deep_durable) = match deep {
        Some((t, l, d)) => (Some(t), Some(l), d),
        None => (None, None, 0),
    };
    let ws = WriteState {
        conn,
        fts_writer,
        fts_applied,
        fts_committed: fts_durable,
        fast: fast_log,
        deep: deep_log,
        recorder,
    };
    let inner = Inner {
        _lock: lock_file,
        data_dir: dir.clone(),
        writer: Mutex::new(ws),
        readers: Mutex::new(Vec::new()),
        fts,
        fast,
        deep,
        stopping: AtomicBool::new(false),
        group_commit: GroupCommit::default(),
        checkpointer: Default::default(),
        entities: Default::default(),
        foreground: Default::default(),
        shared,
    };
    {
        let mut ws = exclusive(&inner);
        let behind = (seq - ws.fts_applied, seq - ws.fast.applied);
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
        // A copy of a shared store takes its chunks as the server has them.
        if inner.shared.is_none() {
            upgrade_contexts(&inner, &mut ws)?;
        }
        sync_vectors(&inner, &mut ws, Some(OPEN_EMBED_LIMIT))?;
        for (tier, durable) in
            std::iter::once((&inner.fast, fast_durable)).chain(inner.deep.as_ref().map(|d| (d, deep_durable)))
        {
            purge_ghost_vectors(tier, &mut ws)?;
            let log = ws.log(tier.kind).expect("a configured tier has a log");
            if log.file.should_compact() || durable > seq {
                let applied = log.applied;
                log.file.compact(&read(&tier.vectors), applied)?;
            }
            tier.update_coverage(&ws.conn)?;
        }
        prune_tombstones(&mut ws)?;
    }
    Ok(inner)
}

/// Loads one tier's vectors; returns the tier, its log (with the sequence it may resume from)
/// and the sequence its files were durable at.
fn load_tier(
    conn: &Connection,
    dir: &Path,
    kind: TierKind,
    embedder: Arc<dyn super::embed::Embedder>,
    seq: i64,
) -> Result<(Tier, TierLog, i64), MemoryError> {
    let signature = embedder.signature().to_string();
    let (mut vectors, file, durable): (VectorIndex, VecFile, i64) =
        VecFile::load(&dir.join(kind.dir()), &signature, embedder.dims())?;
    // An index ahead of the database belongs to another (restored or replaced) database:
    // start it over.
    let mut applied = durable.min(read_state(conn, kind.dir())?.unwrap_or(0));
    if durable > seq {
        tracing::warn!(
            tier = kind.name(),
            index = durable,
            db = seq,
            "vector index is ahead of the database; rebuilding it"
        );
        vectors.clear();
        applied = 0;
    }
    Ok((Tier::new(kind, embedder, vectors), TierLog { file, applied }, durable))
}

/// Drops vectors of chunks that no longer exist. The vector log is not fsynced, so after
/// a power loss it can be older than tombstones already pruned; such stale rows would
/// only waste result slots, but they are cheap to find once at open.
fn purge_ghost_vectors(tier: &Tier, ws: &mut WriteState) -> Result<(), MemoryError> {
    let live: HashSet<i64> =
        ws.conn.prepare("SELECT rowid FROM chunks")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    let mut ix = write(&tier.vectors);
    let ghosts: Vec<i64> = ix.rowids().filter(|r| !live.contains(r)).collect();
    if ghosts.is_empty() {
        return Ok(());
    }
    tracing::info!(tier = tier.kind.name(), count = ghosts.len(), "dropping vectors of deleted chunks");
    let log = ws.log(tier.kind).expect("a configured tier has a log");
    for g in ghosts {
        ix.remove(g);
        log.file.delete(g)?;
    }
    let applied = log.applied;
    log.file.commit(applied)?;
    Ok(())
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
            "SELECT rowid, title, json_extract(metadata, '$.heading'), content, change_seq, \
             json_extract(metadata, '$.context') FROM chunks WHERE change_seq > ?1",
        )?;
        let mut rows = stmt.query([from])?;
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(0)?;
            let title: Option<String> = r.get(1)?;
            let heading: Option<String> = r.get(2)?;
            let content: String = r.get(3)?;
            let change_seq: i64 = r.get(4)?;
            let context: Option<String> = r.get(5)?;
            if change_seq <= dedupe_until {
                inner.fts.delete(&ws.fts_writer, rowid);
            }
            inner.fts.add(&ws.fts_writer, rowid, title.as_deref(), heading.as_deref(), &content, context.as_deref())?;
        }
        ws.fts_applied = target;
        inner.checkpointer.schedule(&inner.db_path());
    }
    if commit && ws.fts_committed != ws.fts_applied {
        let applied = ws.fts_applied;
        inner.fts.commit(&mut ws.fts_writer, applied)?;
        ws.fts_committed = applied;
        write_state(&ws.conn, "fts", applied, "")?;
    }
    Ok(())
}

/// Embeds `(rowid, text)` pairs with the fast tier and stores the vectors; on embedder
/// failure the rows are left without vectors for the background thread to retry. Chunks this
/// copy did not write take their vectors from the shared store when it has them (`sharedvec`).
fn embed_rows(inner: &Inner, ws: &mut WriteState, rows: &[(i64, String)]) -> Result<bool, MemoryError> {
    let foreign = inner.shared.as_ref().is_some_and(|l| !l.vectors.local_write.load(Ordering::Relaxed));
    for part in rows.chunks(super::sharedvec::FETCH_BATCH) {
        let fetched = super::sharedvec::fetch(inner, &inner.fast, part, foreign);
        if !fetched.is_empty() {
            // As the copy that made them stored them: unit length already, not normalised again.
            let mut ix = write(&inner.fast.vectors);
            for (rowid, v) in fetched.iter() {
                ix.upsert_normalized(*rowid, v);
                ws.fast.file.upsert(*rowid, v)?;
            }
        }
        let todo: Vec<(i64, String)> = part.iter().filter(|(r, _)| !fetched.contains_key(r)).cloned().collect();
        if !embed_here(inner, ws, &todo)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `embed_rows`' own embedding, of rows the shared store had no vector for.
fn embed_here(inner: &Inner, ws: &mut WriteState, rows: &[(i64, String)]) -> Result<bool, MemoryError> {
    let tier = &inner.fast;
    for batch in rows.chunks(EMBED_BATCH) {
        let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
        let vecs = match tier.embedder.embed(&texts) {
            Ok(v) if v.len() == batch.len() => v,
            Ok(v) => return Err(wrong_count(v.len(), batch.len())),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "embedding failed; chunks stay keyword-only until retried");
                return Ok(false);
            }
        };
        let dims = tier.embedder.dims();
        let mut ix = write(&tier.vectors);
        let mut made = Vec::new();
        for ((rowid, text), mut v) in batch.iter().zip(vecs) {
            v.resize(dims, 0.0);
            normalize(&mut v);
            ix.upsert_normalized(*rowid, &v);
            ws.fast.file.upsert(*rowid, &v)?;
            made.push((*rowid, text.as_str(), v));
        }
        drop(ix);
        super::sharedvec::embedded_here(inner, TierKind::Fast, made);
    }
    Ok(true)
}

/// Drops from `tier` the chunks deleted after its applied sequence; returns how many chunks
/// were added after it (still without a vector of this tier).
fn apply_deletions(ws: &mut WriteState, tier: &Tier) -> Result<i64, MemoryError> {
    let log = ws.log(tier.kind).expect("a configured tier has a log");
    let from = log.applied;
    let tombs: Vec<i64> = ws
        .conn
        .prepare_cached("SELECT chunk_rowid FROM tombstones WHERE seq > ?1")?
        .query_map([from], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let log = ws.log(tier.kind).expect("a configured tier has a log");
    let mut ix = write(&tier.vectors);
    for r in &tombs {
        if ix.remove(*r) {
            log.file.delete(*r)?;
        }
    }
    drop(ix);
    Ok(ws.conn.prepare_cached("SELECT count(*) FROM chunks WHERE change_seq > ?1")?.query_row([from], |r| r.get(0))?)
}

/// Applies database changes after each tier's applied sequence to its index and commits them
/// to its vector log. The fast tier embeds new chunks here; with `embed_limit`, a larger backlog
/// is left to the background thread. The deep tier only drops deleted chunks: its new vectors
/// always come from the background thread.
pub(crate) fn sync_vectors(inner: &Inner, ws: &mut WriteState, embed_limit: Option<usize>) -> Result<(), MemoryError> {
    let target = db_seq(&ws.conn)?;
    if let Some(deep) = &inner.deep {
        sync_deep(deep, ws, target)?;
    }
    let from = ws.fast.applied;
    if target <= from {
        return Ok(());
    }
    let pending = apply_deletions(ws, &inner.fast)?;
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
    ws.fast.file.commit(target)?;
    ws.fast.applied = target;
    write_state(&ws.conn, TierKind::Fast.dir(), target, inner.fast.embedder.signature())?;
    if !complete {
        inner.fast.needs_fill.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// The deep tier's part of `sync_vectors`: deletions now, new chunks to the background.
fn sync_deep(deep: &Tier, ws: &mut WriteState, target: i64) -> Result<(), MemoryError> {
    let Some(log) = ws.deep.as_ref() else { return Ok(()) };
    if target <= log.applied {
        return Ok(());
    }
    let added = apply_deletions(ws, deep)?;
    if added > 0 {
        deep.covered.store(false, Ordering::Relaxed);
        deep.needs_fill.store(true, Ordering::Relaxed);
    } else if !deep.covered.load(Ordering::Relaxed) {
        // Deleting the chunks that lacked a deep vector can make the tier whole.
        deep.update_coverage(&ws.conn)?;
    }
    let log = ws.deep.as_mut().expect("checked above");
    log.file.commit(target)?;
    log.applied = target;
    write_state(&ws.conn, TierKind::Deep.dir(), target, deep.embedder.signature())?;
    Ok(())
}

/// Compacts each tier's vector log that has grown past its snapshot.
pub(crate) fn compact_if_due(inner: &Inner, ws: &mut WriteState) -> Result<(), MemoryError> {
    for tier in inner.tiers() {
        let log = ws.log(tier.kind).expect("a configured tier has a log");
        if log.file.should_compact() {
            let applied = log.applied;
            log.file.compact(&read(&tier.vectors), applied)?;
        }
    }
    Ok(())
}

/// Drops tombstones every index has applied.
pub(crate) fn prune_tombstones(ws: &mut WriteState) -> rusqlite::Result<()> {
    let upto = ws.fts_committed.min(ws.fast.applied).min(ws.deep.as_ref().map_or(i64::MAX, |d| d.applied));
    ws.conn.prepare_cached("DELETE FROM tombstones WHERE seq <= ?1")?.execute([upto])?;
    Ok(())
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
            let mut ws = exclusive(inner);
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
    let mut ws = exclusive(inner);
    ws.fts_writer.delete_all_documents()?;
    // Treat everything as new: nothing is left in the writer to de-duplicate against.
    ws.fts_applied = 0;
    ws.fts_committed = 0;
    write(&inner.fast.vectors).clear();
    inner.fast.rescan.store(true, Ordering::Relaxed);
    ws.fast.applied = 0;
    sync_fts(inner, &mut ws, false)?;
    let applied = ws.fts_applied;
    inner.fts.commit(&mut ws.fts_writer, applied)?;
    ws.fts_committed = applied;
    write_state(&ws.conn, "fts", applied, "")?;
    sync_vectors(inner, &mut ws, None)?;
    let applied = ws.fast.applied;
    ws.fast.file.compact(&read(&inner.fast.vectors), applied)?;
    // The deep tier starts over too, in the background; the fast tier answers meanwhile.
    let seq = db_seq(&ws.conn)?;
    if let (Some(deep), Some(log)) = (&inner.deep, ws.deep.as_mut()) {
        write(&deep.vectors).clear();
        log.applied = seq;
        log.file.compact(&read(&deep.vectors), log.applied)?;
        deep.covered.store(false, Ordering::Relaxed);
        deep.rescan.store(true, Ordering::Relaxed);
        deep.needs_fill.store(true, Ordering::Relaxed);
    }
    prune_tombstones(&mut ws)?;
    let chunks: i64 = ws.conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
    Ok(ReindexSummary {
        chunks: chunks as usize,
        fts_docs: inner.fts.num_docs(),
        vectors: read(&inner.fast.vectors).len(),
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Index positions for `stats`.
pub(crate) fn positions(inner: &Inner) -> (i64, i64, i64) {
    let ws = exclusive(inner);
    let seq = db_seq(&ws.conn).unwrap_or(-1);
    (seq, ws.fts_committed, ws.fast.applied)
}

impl MemoryEngine {
    /// Checks the store after a crash or on request: SQLite's `integrity_check` and
    /// `foreign_key_check`, and whether both indexes hold exactly the database's chunks.
    pub fn check(&self) -> Result<Check, MemoryError> {
        check(&self.inner)
    }
}

/// What `check` found: SQLite's own checks, and whether the indexes hold the database's chunks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    /// Everything below is as it should be.
    pub ok: bool,
    pub integrity_check: Vec<String>,
    pub foreign_key_violations: usize,
    pub chunks: usize,
    pub db_seq: i64,
    pub fts: FtsCheck,
    /// The fast tier, with the deep tier inside when there is one. Vectors may lag behind while
    /// the background thread embeds; `missing` says how far.
    pub vectors: VectorCheck,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FtsCheck {
    pub seq: i64,
    pub docs: u64,
    /// The keyword index has applied every change and holds every chunk.
    pub current: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VectorCheck {
    pub seq: i64,
    pub count: usize,
    pub missing: usize,
    /// Vectors of chunks that no longer exist.
    pub ghosts: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deep: Option<Box<VectorCheck>>,
}

fn check(inner: &Inner) -> Result<Check, MemoryError> {
    let conn = inner.read_conn()?;
    let integrity: Vec<String> =
        conn.prepare("PRAGMA integrity_check")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    let foreign_key_violations = conn.prepare("PRAGMA foreign_key_check")?.query_map([], |_| Ok(()))?.count();
    // Counts and positions under the writer lock, so that no write lands between them.
    let (chunks, seq, fts_seq, fts_docs, tiers) = {
        let mut ws = exclusive(inner);
        let live: HashSet<i64> = ws
            .conn
            .prepare("SELECT rowid FROM chunks")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut tiers = Vec::new();
        for tier in inner.tiers() {
            let applied = ws.log(tier.kind).map_or(0, |l| l.applied);
            let ix = read(&tier.vectors);
            let ghosts = ix.rowids().filter(|r| !live.contains(r)).count();
            tiers.push((applied, ix.len(), ghosts));
        }
        (live.len(), db_seq(&ws.conn)?, ws.fts_committed, inner.fts.num_docs(), tiers)
    };
    let (vec_seq, vectors, ghosts) = tiers[0];
    let sqlite_ok = integrity == ["ok"] && foreign_key_violations == 0;
    let fts_current = fts_seq == seq && fts_docs == chunks as u64;
    let tier_ghosts: usize = tiers.iter().map(|t| t.2).sum();
    let deep = tiers.get(1).map(|&(seq, count, ghosts)| {
        Box::new(VectorCheck { seq, count, missing: chunks.saturating_sub(count), ghosts, deep: None })
    });
    Ok(Check {
        ok: sqlite_ok && fts_current && tier_ghosts == 0,
        integrity_check: integrity,
        foreign_key_violations,
        chunks,
        db_seq: seq,
        fts: FtsCheck { seq: fts_seq, docs: fts_docs, current: fts_current },
        vectors: VectorCheck { seq: vec_seq, count: vectors, missing: chunks.saturating_sub(vectors), ghosts, deep },
    })
}

/// Where a store records that its lone chat messages have their context ([`upgrade_contexts`]).
const CONTEXT_DONE: &str = "chat_context";

/// Gives the lone chat messages of a store written before they kept their context (see
/// `ingest::chat`) the last line of the chunk before them in their thread, once: the keyword
/// index first (each such chunk indexed again with it), then the chunks' metadata and the mark
/// that it is done, in one transaction, so a stop in between does it again at the next open.
pub(crate) fn upgrade_contexts(inner: &Inner, ws: &mut WriteState) -> Result<(), MemoryError> {
    let done: bool =
        ws.conn.query_row("SELECT EXISTS (SELECT 1 FROM meta WHERE name = ?1)", [CONTEXT_DONE], |r| r.get(0))?;
    if done {
        return Ok(());
    }
    match_lone_messages(inner, ws, None)
}

/// After importing an export written before contexts: the lone messages of the chats it added
/// to (`chats`, source ids) get theirs as [`upgrade_contexts`] gives a store's at open (the
/// store's own mark says nothing of what was imported into it). A copy of a shared store is
/// left as the server has it.
pub(crate) fn contexts_after_import(inner: &Inner, chats: &[String]) -> Result<(), MemoryError> {
    if inner.shared.is_some() {
        return Ok(());
    }
    let mut ws = exclusive(inner);
    // The imported chunks are in the index before their entries are replaced.
    sync_fts(inner, &mut ws, true)?;
    match_lone_messages(inner, &mut ws, Some(chats))
}

/// [`upgrade_contexts`]' pass: every lone chat message without a context (of the sources
/// `only`, when given) gets the last line of the chunk before it in its thread, in the keyword
/// index first, then in its metadata.
fn match_lone_messages(inner: &Inner, ws: &mut WriteState, only: Option<&[String]>) -> Result<(), MemoryError> {
    let mut found: Vec<(i64, String)> = Vec::new();
    {
        let mut q = ws.conn.prepare(
            "SELECT rowid, title, json_extract(metadata, '$.heading'), content, prev FROM ( \
               SELECT rowid, title, metadata, content, LAG(content) OVER ( \
                 PARTITION BY source_id, json_extract(metadata, '$.thread_id') ORDER BY timestamp_ms, rowid) AS prev \
               FROM chunks WHERE source_kind = 'chat' AND (?1 IS NULL OR source_id IN rarray(?2))) \
             WHERE prev IS NOT NULL AND instr(content, char(10)) = 0 AND json_extract(metadata, '$.context') IS NULL",
        )?;
        let mut rows = q.query(rusqlite::params![only.map(|_| 1), super::sql::rarray(only.unwrap_or_default())])?;
        while let Some(r) = rows.next()? {
            let (rowid, title, heading, content, prev): (i64, Option<String>, Option<String>, String, String) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
            let Some(context) = last_message(&prev) else { continue };
            inner.fts.delete(&ws.fts_writer, rowid);
            inner.fts.add(&ws.fts_writer, rowid, title.as_deref(), heading.as_deref(), &content, Some(&context))?;
            found.push((rowid, context));
        }
    }
    if !found.is_empty() {
        let applied = ws.fts_applied;
        inner.fts.commit(&mut ws.fts_writer, applied)?;
        ws.fts_committed = applied;
        tracing::info!(chunks = found.len(), "chat messages stored alone now matched with the message before them");
    }
    let tx = ws.conn.transaction()?;
    {
        let mut set =
            tx.prepare("UPDATE chunks SET metadata = json_set(metadata, '$.context', ?2) WHERE rowid = ?1")?;
        for (rowid, context) in &found {
            set.execute(rusqlite::params![rowid, context])?;
        }
    }
    tx.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?1, 1)", [CONTEXT_DONE])?;
    tx.commit()?;
    Ok(())
}

/// The message a stored chat chunk ends with, as a context: its last line without the
/// `[YYYY-MM-DD HH:MM] ` stamp.
fn last_message(content: &str) -> Option<String> {
    let line = content.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    Some(cut_at_word(after_stamp(line).unwrap_or(line).to_string(), CHAT_CONTEXT_MAX))
}

#[cfg(test)]
mod tests {
    use super::last_message;

    #[test]
    fn a_stored_chunk_gives_its_last_message_without_the_stamp() {
        let packed = "[2024-03-01 09:00] Ana: Morning!\n[2024-03-01 09:02] Ben: Is the boiler fixed?";
        assert_eq!(last_message(packed).as_deref(), Some("Ben: Is the boiler fixed?"));
        assert_eq!(last_message("[x] y\nplain line").as_deref(), Some("plain line"));
        assert_eq!(last_message("  \n"), None);
    }
}
