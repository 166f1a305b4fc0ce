//! The engine's side of a shared store (see `shared`): joining a server at open, following its
//! change log on a background thread, loading the mirror again from a snapshot, where things
//! stand for `status`, and moving a store between the embedded engine and a server.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::error::MemoryError;
use super::shared::{self, Cell, Feed, SharedError, SharedStore, Table};
use super::sync;
use super::writer::{WriteState, exclusive};
use super::{Inner, MemoryEngine, SharedLink, lock, schema, seq, write};

impl SharedLink {
    /// Turns a failure of the server into the engine's error, and remembers it for `status`.
    pub(crate) fn failed(&self, e: SharedError) -> MemoryError {
        if e.unreachable {
            self.connected.store(false, Ordering::Relaxed);
        }
        *lock(&self.last_error) = Some(e.message.clone());
        shared::shared_error(e)
    }

    fn ok(&self) {
        self.connected.store(true, Ordering::Relaxed);
        *lock(&self.last_error) = None;
    }
}

/// What joining the server did.
#[derive(Debug, PartialEq)]
enum Joined {
    /// The local mirror already was a copy of this server.
    Already,
    /// The mirror was loaded from a snapshot: its indexes need a rebuild.
    Loaded,
    /// The mirror needs a snapshot, and the caller asked to leave that for later.
    Deferred,
}

/// Joins the server: brings its schema up to date, and makes sure the local mirror is a copy
/// of it (loading a snapshot into an empty or foreign mirror, unless `load` is false). A store
/// that holds memory of its own (an embedded store) is never overwritten: that is what
/// `move_to_shared` is for.
fn attach(inner: &Inner, link: &SharedLink, load: bool) -> Result<Joined, MemoryError> {
    let mut ws = exclusive(inner);
    let ws: &mut WriteState = &mut ws;
    let recorder = ws.recorder.as_ref().ok_or_else(|| MemoryError::Other("shared store without a recorder".into()))?;
    let info = link.store.migrate(schema::SCHEMA_VERSION, &recorder.tables).map_err(|e| link.failed(e))?;
    link.head.fetch_max(info.head, Ordering::Relaxed);
    let person = link.store.person();
    super::visibility::set_person(&ws.conn, person.as_deref())?;
    *lock(&link.person) = person;
    let mine = shared::local_value(&ws.conn, shared::CLUSTER)?;
    if mine == Some(info.cluster) {
        link.attached.store(true, Ordering::Relaxed);
        link.ok();
        return Ok(Joined::Already);
    }
    if mine.is_none() && holds_memory(&ws.conn)? {
        return Err(MemoryError::Shared(format!(
            "this home already holds memory of its own (an embedded store), so it cannot become a copy of {}; \
             move it in with `openhumand-mcp migrate-store --to postgres`, or use an empty home",
            link.store.describe()
        )));
    }
    link.ok();
    if !load {
        return Ok(Joined::Deferred);
    }
    let at = shared::load_snapshot(&mut ws.conn, recorder, link.store.as_ref(), info.cluster)?;
    link.applied.store(at, Ordering::Relaxed);
    link.attached.store(true, Ordering::Relaxed);
    tracing::info!(position = at, server = %link.store.describe(), "memory copy loaded from the shared store");
    Ok(Joined::Loaded)
}

/// How long opening waits for a new copy's first snapshot before the daemon serves anyway.
/// A small shared memory loads within it, so the first answers are complete; a large one
/// (minutes at a million chunks) goes on loading in the background, since an MCP client gives
/// up on a server that takes that long to start (the shim waits 15 s for an autostarted daemon).
const JOIN_WAIT: Duration = Duration::from_secs(5);

/// The follower's side of joining: a new copy (also one whose server could not be reached
/// at open) loads its snapshot and rebuilds its indexes, refusing writes meanwhile.
/// One `attach`, so the server's schema is checked once: writes are refused from the start
/// (a copy that turns out to be current takes them again at the follower's next step).
fn join(inner: &Arc<Inner>, link: &SharedLink) -> Result<(), MemoryError> {
    link.joining.store(true, Ordering::Relaxed);
    if attach(inner, link, true)? == Joined::Loaded {
        sync::reindex(inner)?;
    }
    Ok(())
}

/// The first snapshot of a new copy is loaded, indexed and caught up: writes are taken.
fn joined(inner: &Arc<Inner>, link: &SharedLink) {
    if !link.joining.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = super::sharedvec::start(inner) {
        tracing::warn!(error = %format!("{e:#}"), "sharing vectors through the shared store could not start");
    }
    let _held = lock(&link.joined.0);
    link.joining.store(false, Ordering::Relaxed);
    link.joined.1.notify_all();
    tracing::info!(
        position = link.applied.load(Ordering::Relaxed),
        "new memory copy loaded and indexed; taking writes"
    );
}

/// Whether the local store holds anything a user wrote.
fn holds_memory(conn: &rusqlite::Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM chunks) OR EXISTS (SELECT 1 FROM kv) OR EXISTS (SELECT 1 FROM learnings)
            OR EXISTS (SELECT 1 FROM mcp_audit)",
        [],
        |r| r.get(0),
    )
}

/// At open: one attempt to join the server (a server that cannot be reached leaves the copy
/// serving reads; the follower keeps trying), then the follower thread.
pub(crate) fn start(inner: &Arc<Inner>) -> Result<(), MemoryError> {
    let Some(link) = inner.shared.as_ref() else { return Ok(()) };
    link.applied.store(shared::local_value(&exclusive(inner).conn, shared::APPLIED)?.unwrap_or(0), Ordering::Relaxed);
    // A new copy's snapshot (everything its person may read, then every index rebuilt) is
    // loaded by the follower, so that a large shared memory does not keep the daemon from
    // serving; opening waits up to `JOIN_WAIT` for it.
    match attach(inner, link, false) {
        Ok(Joined::Deferred) => {
            link.joining.store(true, Ordering::Relaxed);
            tracing::info!(server = %link.store.describe(), "a new memory copy: loading a snapshot of the shared store");
        }
        Ok(_) => {}
        Err(MemoryError::SharedUnavailable(why)) => {
            tracing::warn!(error = %why, "the shared store cannot be reached; serving reads from this copy");
        }
        Err(e) => return Err(e),
    }
    if link.attached.load(Ordering::Relaxed) {
        // Caught up before the daemon says it is ready, so its first answers are current; a
        // tail that takes longer than `JOIN_WAIT` to apply is left to the follower, as a new
        // copy's snapshot is (writes catch up by themselves inside their transaction).
        if let Err(e) = catch_up(inner, Some(Instant::now() + JOIN_WAIT)) {
            tracing::warn!(error = %format!("{e:#}"), "catching up with the shared store failed; retrying in the background");
        }
    }
    let joining = link.joining.load(Ordering::Relaxed);
    if !joining {
        super::sharedvec::start(inner)?;
    }
    let weak = Arc::downgrade(inner);
    match std::thread::Builder::new().name("memory-follow".into()).spawn(move || follow(&weak)) {
        Ok(h) => *lock(&link.follower) = Some(h),
        Err(e) => {
            return Err(e).map_err(|e| MemoryError::Io { what: "starting the shared-store follower".into(), error: e });
        }
    }
    if joining {
        let held = lock(&link.joined.0);
        let (_held, waited) = link
            .joined
            .1
            .wait_timeout_while(held, JOIN_WAIT, |_| link.joining.load(Ordering::Relaxed))
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if waited.timed_out() {
            tracing::info!(
                wait_secs = JOIN_WAIT.as_secs(),
                "the new memory copy is still loading; serving reads meanwhile, writes are refused until it is done"
            );
        }
    }
    Ok(())
}

/// Waits for the follower to stop (the engine is closing).
pub(crate) fn wait(inner: &Inner) {
    super::sharedvec::stop(inner);
    if let Some(link) = inner.shared.as_ref() {
        let handle = lock(&link.follower).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

/// The follower: woken by the server (or every poll interval), applies the log's new changes.
/// A server that went away is retried with a growing pause, and the copy keeps serving.
fn follow(weak: &Weak<Inner>) {
    let mut pause = Duration::from_millis(200);
    let mut reported: Option<(Instant, i64)> = None;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.stopping.load(Ordering::Relaxed) {
            return;
        }
        let link = inner.shared.as_ref().expect("the follower runs only with a shared store");
        let attached = link.attached.load(Ordering::Relaxed);
        let step = if attached { catch_up(&inner, None).map(|_| ()) } else { join(&inner, link) };
        if attached && step.is_ok() {
            joined(&inner, link);
        }
        let was = link.connected.load(Ordering::Relaxed);
        match step {
            Ok(()) => {
                if !was {
                    tracing::info!(server = %link.store.describe(), "shared store reachable again; caught up");
                }
                link.ok();
                pause = Duration::from_millis(200);
                report(link, &mut reported);
                let store = link.store.clone();
                drop(inner);
                // Wait without holding the engine, so a closing store is not kept open.
                if store.wait(shared::FOLLOW_POLL).is_err() {
                    std::thread::sleep(pause);
                }
            }
            Err(e) => {
                if was {
                    tracing::warn!(error = %format!("{e:#}"), "following the shared store failed; retrying");
                }
                if !matches!(e, MemoryError::SharedUnavailable(_)) {
                    *lock(&link.last_error) = Some(format!("{e:#}"));
                }
                link.connected.store(false, Ordering::Relaxed);
                drop(inner);
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Least time between two reports of a position that moved, and the longest without one.
const REPORT_MOVED: Duration = Duration::from_secs(2);
const REPORT_IDLE: Duration = Duration::from_secs(10);

/// Tells the server where this copy stands (which also prunes the log when due) when the
/// position moved and the last report is `REPORT_MOVED` old, or it is `REPORT_IDLE` old: a
/// few small statements every few seconds, never per change. A failure is only remembered:
/// the next step of the follower finds out whether the server went away.
fn report(link: &SharedLink, reported: &mut Option<(Instant, i64)>) {
    let applied = link.applied.load(Ordering::Relaxed);
    let due = match *reported {
        None => true,
        Some((at, pos)) => {
            let age = at.elapsed();
            age >= REPORT_IDLE || (pos != applied && age >= REPORT_MOVED)
        }
    };
    if !due {
        return;
    }
    *reported = Some((Instant::now(), applied));
    match link.store.checkpoint(&link.machine, applied) {
        Ok(status) => *lock(&link.log) = status,
        Err(e) => tracing::warn!(error = %e.message, "reporting this copy's position to the shared store failed"),
    }
}

/// Applies every change of the log after this copy's position, in batches, each one local
/// transaction handed to the indexes and made searchable before the next; with `until`, no
/// batch is started after it (the rest is the follower's).
fn catch_up(inner: &Arc<Inner>, until: Option<Instant>) -> Result<usize, MemoryError> {
    let link = inner.shared.as_ref().expect("catch_up runs only with a shared store");
    let mut total = 0;
    loop {
        let after = link.applied.load(Ordering::Relaxed);
        let changes = match link.store.feed(after, shared::FEED_BATCH).map_err(|e| link.failed(e))? {
            Feed::Snapshot if until.is_some() => {
                // Before serving: a snapshot is minutes at a million chunks, so the follower
                // loads it, refusing writes meanwhile, as for a new copy.
                link.joining.store(true, Ordering::Relaxed);
                return Ok(total);
            }
            Feed::Snapshot => {
                tracing::info!(
                    position = after,
                    server = %link.store.describe(),
                    "this copy is behind the shared log's pruned horizon; loading it again from a snapshot"
                );
                reload(inner)?;
                continue;
            }
            Feed::Changes(c) => c,
        };
        if let Some(last) = changes.last() {
            link.head.fetch_max(last.seq, Ordering::Relaxed);
        }
        // Under the writer lock: apply what this copy lacks. A write may have applied some of
        // it while catching up inside its own transaction (`WriteTx`), and a write that is not
        // itself indexed (an entity batch, an audit row) leaves those chunks to be indexed here.
        let (searchable_at, mine) = {
            let mut guard = exclusive(inner);
            let ws: &mut WriteState = &mut guard;
            let recorder = ws.recorder.as_ref().expect("a shared store has a recorder");
            crate::txn::warn_stray(recorder, &ws.conn)?;
            let mine = shared::local_value(&ws.conn, shared::APPLIED)?.unwrap_or(0);
            let todo: Vec<_> = changes.iter().filter(|c| c.seq > mine).collect();
            if let Some(last) = todo.last().map(|c| c.seq) {
                let tx = ws.conn.transaction()?;
                let seq = seq::bump_seq(&tx)?;
                for c in &todo {
                    shared::apply(&tx, &recorder.tables, c, seq)?;
                }
                shared::set_local_value(&tx, shared::APPLIED, last)?;
                recorder.clear(&tx)?;
                tx.commit()?;
                total += todo.len();
                write::after_write(inner, ws);
                (Some(seq), last)
            } else {
                let db = seq::db_seq(&ws.conn)?;
                let behind = db > ws.fts_committed;
                if behind {
                    write::after_write(inner, ws);
                }
                (behind.then_some(db), mine)
            }
        };
        if let Some(seq) = searchable_at {
            sync::wait_searchable(inner, seq)?;
        }
        // Only now, with everything up to `mine` searchable, does `status` say so.
        link.applied.fetch_max(mine, Ordering::Relaxed);
        link.head.fetch_max(mine, Ordering::Relaxed);
        if changes.is_empty() {
            return Ok(total);
        }
        if until.is_some_and(|t| Instant::now() >= t) {
            tracing::info!(applied = total, "the rest of the shared log is applied in the background");
            return Ok(total);
        }
    }
}

/// Loads the copy again from a snapshot and rebuilds the indexes.
fn reload(inner: &Arc<Inner>) -> Result<(), MemoryError> {
    load_copy(inner, inner.shared.as_ref().expect("reload runs only with a shared store"))?;
    sync::reindex(inner)?;
    Ok(())
}

/// Replaces the local copy with a snapshot of the server (the indexes are the caller's).
fn load_copy(inner: &Inner, link: &SharedLink) -> Result<(), MemoryError> {
    let mut guard = exclusive(inner);
    let ws: &mut WriteState = &mut guard;
    let recorder = ws.recorder.as_ref().expect("a shared store has a recorder");
    let cluster = shared::local_value(&ws.conn, shared::CLUSTER)?.unwrap_or(0);
    let at = shared::load_snapshot(&mut ws.conn, recorder, link.store.as_ref(), cluster)?;
    link.applied.store(at, Ordering::Relaxed);
    Ok(())
}

impl MemoryEngine {
    /// With a shared store: loads this copy again from the server (`reindex` then rebuilds
    /// the indexes from it). Without one, nothing.
    pub(crate) fn reload_shared(&self) -> Result<(), MemoryError> {
        if self.inner.shared.is_none() {
            return Ok(());
        }
        let link = self.inner.shared.as_ref().expect("checked");
        if !link.attached.load(Ordering::Relaxed) {
            attach(&self.inner, link, true)?;
        }
        load_copy(&self.inner, link)
    }

    /// Successful tool writes other daemons sharing this memory recorded in the last
    /// `window_ms` (0 for the embedded engine), from this copy of the shared audit log.
    pub fn acts_elsewhere(&self, window_ms: i64) -> usize {
        let Some(me) = self.inner.machine() else { return 0 };
        let since = crate::util::now_ms() - window_ms;
        let counted = self.inner.read_conn().and_then(|c| {
            Ok(c.prepare_cached(
                "SELECT count(*) FROM mcp_audit WHERE ts_ms >= ?1 AND success = 1 AND source LIKE 'mcp:%'
                   AND machine IS NOT NULL AND machine <> ?2",
            )?
            .query_row(rusqlite::params![since, me], |r| r.get::<_, i64>(0))?)
        });
        counted.map(|n| n as usize).unwrap_or(0)
    }

    /// Where the shared store stands, for `status` (None for the embedded engine).
    pub fn shared_status(&self) -> Option<SharedStatus> {
        let link = self.inner.shared.as_ref()?;
        let applied_seq = link.applied.load(Ordering::Relaxed);
        Some(SharedStatus {
            engine: link.engine,
            server: link.store.describe(),
            machine: link.machine.clone(),
            person: lock(&link.person).clone(),
            connected: link.connected.load(Ordering::Relaxed),
            applied_seq,
            head_seq: link.head.load(Ordering::Relaxed).max(applied_seq),
            joining: link.joining.load(Ordering::Relaxed),
            last_error: lock(&link.last_error).clone(),
            log: lock(&link.log).clone(),
            vectors: super::sharedvec::status(&self.inner),
        })
    }
}

/// Where a daemon's copy of a shared store stands.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SharedStatus {
    /// The engine's name in config (`postgres`).
    pub engine: &'static str,
    /// The server, as the store describes it (no credentials).
    pub server: String,
    /// This daemon's name in the change log and audit rows.
    pub machine: String,
    /// The person it writes as (the server's role), once it reached the server.
    pub person: Option<String>,
    pub connected: bool,
    /// The last change of the server's log applied here, and the newest seen there.
    pub applied_seq: i64,
    pub head_seq: i64,
    /// A new copy loading its first snapshot: reads answer from what it has so far, writes
    /// are refused until it is done.
    pub joining: bool,
    pub last_error: Option<String>,
    /// The server's change log and every daemon's position in it, as last reported (None
    /// until this daemon has reported once).
    pub log: Option<shared::LogStatus>,
    /// Vectors shared through the store, per tier (empty when it keeps none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vectors: Vec<super::sharedvec::SharedVectorStatus>,
}

/// The tables a shared store holds for this build, from the schema's own migrations.
pub fn shared_tables() -> Result<Vec<Table>, MemoryError> {
    let mut conn = rusqlite::Connection::open_in_memory()?;
    tables_of(&mut conn)
}

/// The tables a store shares, read from a database file's schema (migrated first).
fn tables_of(conn: &mut rusqlite::Connection) -> Result<Vec<Table>, MemoryError> {
    schema::migrate(conn)?;
    shared::catalog(conn)
}

/// Rows per shared table of a database file.
fn local_counts(conn: &rusqlite::Connection, tables: &[Table]) -> Result<Vec<(String, i64)>, MemoryError> {
    tables
        .iter()
        .map(|t| {
            let n: i64 = if t.name == "meta" {
                conn.query_row(&format!("SELECT count(*) FROM meta WHERE {}", shared::SHARED_META), [], |r| r.get(0))?
            } else {
                conn.query_row(&format!("SELECT count(*) FROM \"{}\"", t.name), [], |r| r.get(0))?
            };
            Ok((t.name.clone(), n))
        })
        .collect()
}

/// The outcome of a move between engines: rows per table on each side.
#[derive(Debug, Clone)]
pub struct MoveSummary {
    pub counts: Vec<(String, i64, i64)>,
    pub position: i64,
}

impl MoveSummary {
    pub fn matches(&self) -> bool {
        self.counts.iter().all(|(_, a, b)| a == b)
    }
}

/// Moves the embedded store in `data_dir` into the shared store (which must be empty of
/// memory, or `replace` set), as one server transaction, and makes the local file its first
/// copy. The store must not be open.
pub fn move_to_shared(
    data_dir: &std::path::Path,
    server: &dyn SharedStore,
    machine: &str,
    replace: bool,
) -> Result<MoveSummary, MemoryError> {
    let _lock = sync::lock_store(data_dir)?;
    let mut conn = schema::open_connection(&data_dir.join("memory.db"))?;
    let tables = tables_of(&mut conn)?;
    let info = server.migrate(schema::SCHEMA_VERSION, &tables).map_err(shared::shared_error)?;
    let before = server.counts(&tables).map_err(shared::shared_error)?;
    let held: i64 = before.iter().filter(|(t, _)| t != "meta").map(|(_, n)| n).sum();
    if held > 0 && !replace {
        return Err(MemoryError::InvalidParams(format!(
            "{} already holds memory ({held} rows); moving this store in would replace it. Pass --replace to do \
             that, or join it with an empty home instead",
            server.describe()
        )));
    }
    let position = server
        .replace_all(machine, &tables, &mut |t, send| {
            let cols: Vec<String> = t.columns.iter().map(|c| format!("\"{}\"", c.name)).collect();
            let mut sql = format!("SELECT {} FROM \"{}\"", cols.join(", "), t.name);
            if t.name == "meta" {
                sql.push_str(&format!(" WHERE {}", shared::SHARED_META));
            }
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            let mut batch = Vec::with_capacity(2048);
            while let Some(r) = rows.next()? {
                batch.push((0..cols.len()).map(|i| r.get_ref(i).map(Cell::from_ref)).collect::<Result<Vec<_>, _>>()?);
                if batch.len() == 2048 {
                    send(std::mem::take(&mut batch)).map_err(shared::shared_error)?;
                }
            }
            if !batch.is_empty() {
                send(batch).map_err(shared::shared_error)?;
            }
            Ok(())
        })
        .map_err(shared::shared_error)?;
    let after = server.counts(&tables).map_err(shared::shared_error)?;
    let local = local_counts(&conn, &tables)?;
    shared::set_local_value(&conn, shared::APPLIED, position)?;
    shared::set_local_value(&conn, shared::CLUSTER, info.cluster)?;
    Ok(MoveSummary { counts: zip_counts(&local, &after), position })
}

/// Rewrites the store in `data_dir` as an embedded store holding everything the shared store
/// holds. The store must not be open; its indexes are rebuilt when it next opens.
pub fn move_to_embedded(data_dir: &std::path::Path, server: &dyn SharedStore) -> Result<MoveSummary, MemoryError> {
    std::fs::create_dir_all(data_dir)
        .map_err(|e| MemoryError::Io { what: format!("creating {}", data_dir.display()), error: e })?;
    let _lock = sync::lock_store(data_dir)?;
    let mut conn = schema::open_connection(&data_dir.join("memory.db"))?;
    let tables = tables_of(&mut conn)?;
    let info = server.migrate(schema::SCHEMA_VERSION, &tables).map_err(shared::shared_error)?;
    let recorder = shared::Recorder::install(&mut conn, tables.clone())?;
    let position = shared::load_snapshot(&mut conn, &recorder, server, info.cluster)?;
    conn.execute("DELETE FROM meta WHERE name LIKE 'shared\\_%' ESCAPE '\\'", [])?;
    // The indexes of whatever the file held before are stale: `open` rebuilds them.
    for dir in ["fts", "vectors", "vectors-deep"] {
        let p = data_dir.join(dir);
        if p.exists() {
            std::fs::remove_dir_all(&p)
                .map_err(|e| MemoryError::Io { what: format!("removing {}", p.display()), error: e })?;
        }
    }
    conn.execute("DELETE FROM index_state", [])?;
    let remote = server.counts(&tables).map_err(shared::shared_error)?;
    let local = local_counts(&conn, &tables)?;
    Ok(MoveSummary { counts: zip_counts(&remote, &local), position })
}

fn zip_counts(from: &[(String, i64)], to: &[(String, i64)]) -> Vec<(String, i64, i64)> {
    from.iter().map(|(t, n)| (t.clone(), *n, to.iter().find(|(u, _)| u == t).map(|(_, m)| *m).unwrap_or(-1))).collect()
}
