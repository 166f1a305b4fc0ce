//! The memory engine: a personal store of chunks (documents, e-mail, chat, notes,
//! learnings) with keyword, semantic and hybrid search.
//!
//! SQLite (`data_dir/memory.db`) is the source of truth. Derived indexes follow it:
//! tantivy for BM25 (`data_dir/fts/`) and an exact-scan vector matrix per vector tier
//! (`data_dir/vectors/` for the fast tier every chunk gets at once; `data_dir/vectors-deep/`
//! for the optional deep tier, a slower and better embedder filled in the background). Every change to chunks happens in one SQLite transaction that
//! takes a new change sequence number; the indexes record the last sequence they
//! applied, so after a crash `open()` replays what they missed, and `reindex()` rebuilds
//! them from scratch. Writes are serialised through one writer connection; reads use a
//! small pool of connections and never wait for a writer (WAL).
//!
//! Map: `schema` (tables, migrations), `store` (write-side SQL), `write` (the write protocol:
//! every write asks it), `writer` (the writer's state and its one lock), `sync` (index
//! catch-up, group commit, rebuild), `seq`, `locks`, `sql` (leaf helpers), `tier` (the two vector tiers and which one answers), `backfill` (background
//! embedding), `fts`, `vectors` + `vecfile` (derived indexes),
//! `search` (ranking and fusion), `ops/` (the operations: one file each with its parameter
//! type, declared once with `params!`, its result type and its engine function; the daemon's
//! tools and methods are built from their `Operation` impls), `filter` (the SQL predicate an
//! operation's `filter` compiles to), `page` (the one keyset paging), `cursor`, `stats`,
//! `params` (checks of what Rust callers hand the write calls), `write_api` (the write calls
//! and their typed results), `complete_api` (prefix completion of topics and ids), `foreground` (searches and recalls in
//! progress, which the entity thread stands aside for), `audit`, `ingest/` (files, mail, chat, read by `openhuman_formats`), `watched` (per-batch sync of a watched folder's changed
//! paths, renames followed in place), `sessions` (coding agents' session logs tailed as they grow), `vault` (front-matter tags, `#tags`, `[[wiki links]]`),
//! `links` (links between sources), `transfer` (export and import as JSON Lines with a
//! Markdown reading copy; backup and restore of the database file), `chunker`, `entities`, `snippet`,
//! `error` (`MemoryError`, the one error type of the crate).

// The unit tests run on the daemon's allocator: how memory grows (the vector index's blocks)
// depends on it.
#[cfg(test)]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod embed;

mod anchor;
mod audit;
mod backfill;
mod checkpoint;
mod chunker;
mod claims;
mod complete_api;
mod cursor;
mod dates;
mod entities;
mod error;
mod facts;
mod filter;
mod follow;
mod foreground;
mod fts;
mod ingest;
mod links;
mod locks;
pub mod ops;
mod page;
mod params;
pub mod project;
mod schema;
mod search;
mod seq;
mod sessions;
pub mod shared;
mod sharedvec;
mod snippet;
mod sql;
mod stats;
mod store;
mod sync;
mod tier;
mod transfer;
mod txn;
mod types;
mod util;
mod vault;
mod vecfile;
mod vectors;
pub mod visibility;
mod watched;
mod write;
mod write_api;
mod writer;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

pub use complete_api::{Completable, Completions};
pub use error::MemoryError;
pub use follow::{MoveSummary, SharedStatus, move_to_embedded, move_to_shared, shared_tables};
pub use ops::Operation;
pub use sharedvec::SharedVectorStatus;
pub use stats::{FtsStats, Stats, VectorStats};
pub use sync::{Check, FtsCheck, VectorCheck};
pub use vectors::ann::AnnStats;
/// The schema version of the store this build writes (and of a shared store's tables).
pub const SCHEMA_VERSION: i64 = schema::SCHEMA_VERSION;
pub use fts::word_stems;
pub use ingest::{ChatChunk, ChatChunking};
pub use openhuman_formats::{Channel, ChatMsg};
pub use tier::{TierKind, TierProgress};
pub use transfer::{
    BackupSummary, ExportSummary, FORMAT_VERSION as EXPORT_FORMAT_VERSION, ImportSummary, RestoreSummary, backup,
    restore,
};
pub use types::{
    AuditQuery, AuditRow, FileError, IngestProgress, IngestSummary, PutDocument, ReindexSummary, Skipped, SourceKind,
    UNSUPPORTED_NAMED,
};
pub use util::estimate_tokens;

pub use facts::Version;
/// Every module takes mutexes this way (see `locks`).
pub(crate) use locks::lock;
pub use openhuman_formats::Agent;
pub use search::Superseded;
pub use sessions::{SessionRules, SessionStats, SessionSync, session_file_excluded};
pub use watched::{FileState, SyncSummary, disk_state, is_supported_file};
pub use write_api::{
    Forgotten, ForgottenProject, Learned, Noted, Resolved, ResolvedChunk, ResolvedId, Split, Stored, Tagged,
};

/// Where the engine keeps its files and which embedders it uses.
pub struct MemoryOptions {
    pub data_dir: PathBuf,
    /// The fast tier: every chunk gets its vector when it is written.
    pub embedder: Arc<dyn embed::Embedder>,
    /// The optional deep tier: a slower, better embedder whose vectors a background thread
    /// fills in; queries use it once it covers every chunk.
    pub deep: Option<Arc<dyn embed::Embedder>>,
    /// A database server holding the memory that several daemons share; the local store is
    /// then its copy (see `shared`). None: the local store is the memory.
    pub shared: Option<SharedOptions>,
}

/// How the engine reaches a shared store.
pub struct SharedOptions {
    pub store: Arc<dyn shared::SharedStore>,
    /// The engine's name in config (`"postgres"`), for `status`.
    pub engine: &'static str,
    /// How this daemon is named in the change log and in audit rows.
    pub machine: String,
    /// Vector recall takes its candidates from the server's index of the shared vectors
    /// (pgvector) instead of the local one, when the server has it.
    pub vector_search_in_database: bool,
    /// Which visibility new chunks take (see `visibility`).
    pub visibility: visibility::VisibilityRules,
}

/// The engine's link to its shared store.
pub(crate) struct SharedLink {
    pub store: Arc<dyn shared::SharedStore>,
    pub engine: &'static str,
    pub machine: String,
    /// The person this daemon writes as (the server's role), once the server answered.
    pub person: Mutex<Option<String>>,
    /// The last change of the server's log applied here.
    pub applied: std::sync::atomic::AtomicI64,
    /// The newest change seen on the server.
    pub head: std::sync::atomic::AtomicI64,
    pub connected: std::sync::atomic::AtomicBool,
    /// The local copy is known to be a copy of this server.
    pub attached: std::sync::atomic::AtomicBool,
    /// A new copy loading its first snapshot in the background (see `follow::start`): writes
    /// are refused until it has, and `joined` is told when it has.
    pub joining: std::sync::atomic::AtomicBool,
    pub joined: (Mutex<()>, std::sync::Condvar),
    pub last_error: Mutex<Option<String>>,
    pub follower: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The server's last answer about its change log (`SharedStore::checkpoint`).
    pub log: Mutex<Option<shared::LogStatus>>,
    /// Vectors taken from and given to the shared store (see `sharedvec`).
    pub vectors: sharedvec::VectorShare,
    /// `SharedOptions::vector_search_in_database`.
    pub search_in_database: bool,
}

/// A cloneable handle to one open memory store. When the last handle is dropped the
/// background thread is stopped and joined, so the store is closed (and its lock
/// released) by the time the drop returns.
#[derive(Clone)]
pub struct MemoryEngine {
    inner: Arc<Inner>,
    _owner: Arc<Owner>,
}

/// Shared by all handles (the background thread holds only the engine's `Inner`).
struct Owner {
    inner: Arc<Inner>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.inner.stopping.store(true, std::sync::atomic::Ordering::Relaxed);
        backfill::wait(&self.inner);
        entities::wait(&self.inner);
        follow::wait(&self.inner);
    }
}

/// State shared by all handles.
/// Fields drop in order: the index writer (with its merges) before the index's last flush
/// (`Fts`'s drop), and the store's lock last of all.
pub(crate) struct Inner {
    data_dir: PathBuf,
    /// The only connection that writes, with the index writers; held for the whole of
    /// a write so the indexes apply changes in commit order.
    writer: Mutex<writer::WriteState>,
    readers: Mutex<Vec<Connection>>,
    fts: fts::Fts,
    /// The fast vector tier (always present).
    fast: tier::Tier,
    /// The deep vector tier, when one is configured.
    deep: Option<tier::Tier>,
    /// Set when the last handle goes: the background threads stop at their next batch.
    stopping: std::sync::atomic::AtomicBool,
    /// Writers waiting for the keyword index to make their writes searchable.
    group_commit: sync::GroupCommit,
    /// WAL checkpoints in the background, off the write path.
    checkpointer: checkpoint::Checkpointer,
    /// The shared store, when the memory lives on a server (see `shared`).
    shared: Option<SharedLink>,
    /// The thread that reads written chunks' text for entities, and extracts them again after
    /// an extractor upgrade (see `entities`).
    entities: entities::Extraction,
    /// Searches and recalls in progress, which the entity thread stands aside for.
    foreground: foreground::Foreground,
    /// Held (OS file lock on `data_dir/LOCK`) for as long as the store is open.
    _lock: std::fs::File,
}

/// A pooled read connection, returned to the pool when dropped.
pub(crate) struct ReadConn<'a> {
    conn: Option<Connection>,
    pool: &'a Mutex<Vec<Connection>>,
}

impl std::ops::Deref for ReadConn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("connection present until drop")
    }
}

impl Drop for ReadConn<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            let mut pool = lock(self.pool);
            if pool.len() < 8 {
                pool.push(c);
            }
        }
    }
}

impl Inner {
    /// This daemon's name in audit rows, with a shared store.
    pub(crate) fn machine(&self) -> Option<&str> {
        self.shared.as_ref().map(|l| l.machine.as_str())
    }

    /// The person this daemon writes as, with a shared store that has persons.
    pub(crate) fn person(&self) -> Option<String> {
        self.shared.as_ref().and_then(|l| lock(&l.person).clone())
    }

    fn db_path(&self) -> PathBuf {
        self.data_dir.join("memory.db")
    }

    pub(crate) fn read_conn(&self) -> Result<ReadConn<'_>, MemoryError> {
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = schema::open_connection(&self.db_path())?;
                c.pragma_update(None, "query_only", true)?;
                c
            }
        };
        Ok(ReadConn { conn: Some(conn), pool: &self.readers })
    }
}

impl MemoryEngine {
    /// Opens (creating if needed) the store in `opts.data_dir`, migrates the schema and
    /// brings the indexes up to date with the database. Vectors of another embedder are
    /// recomputed on a background thread; until then recall uses BM25 for those chunks (fast
    /// tier) or the fast tier (deep tier).
    pub fn open(opts: MemoryOptions) -> Result<Self, MemoryError> {
        let inner = Arc::new(sync::open(opts)?);
        let engine = MemoryEngine { inner: inner.clone(), _owner: Arc::new(Owner { inner }) };
        follow::start(&engine.inner)?;
        backfill::start(&engine.inner);
        entities::start(&engine.inner);
        Ok(engine)
    }

    /// Blocks until background embedding (of both tiers) and the background extraction of
    /// entities (every written chunk's text read) have finished (used by tests, `eval` and the
    /// command line before it exits).
    pub fn wait_background(&self) {
        backfill::wait(&self.inner);
        entities::start(&self.inner);
        entities::wait(&self.inner);
    }

    /// Blocks until one tier's background embedding has finished (the command-line `ingest`
    /// waits for the fast tier only and leaves the deep tier's fill to the daemon).
    pub fn wait_background_tier(&self, kind: TierKind) {
        if let Some(tier) = self.inner.tier(kind) {
            backfill::wait_tier(tier);
        }
    }

    /// Rebuilds the full-text and vector indexes from the database (the deep tier's vectors
    /// are dropped and filled again in the background).
    pub fn reindex(&self) -> Result<ReindexSummary, MemoryError> {
        // With a shared store the local copy is itself derived: load it again from the server.
        self.reload_shared()?;
        let summary = sync::reindex(&self.inner)?;
        backfill::start(&self.inner);
        Ok(summary)
    }

    /// Counts and index positions, for `status` and diagnostics.
    pub fn stats(&self) -> Result<Stats, MemoryError> {
        stats::stats(&self.inner)
    }

    pub fn record_audit(&self, rows: &[AuditRow]) -> Result<(), MemoryError> {
        write::plain(&self.inner, |tx| {
            let person = self.inner.person();
            for r in rows {
                audit::insert(tx, r, self.inner.machine(), person.as_deref())?;
            }
            Ok(())
        })
    }

    pub fn query_audit(&self, q: AuditQuery) -> Result<Vec<AuditRow>, MemoryError> {
        audit::query(&*self.inner.read_conn()?, &q)
    }

    pub fn ingest_paths(
        &self,
        paths: &[PathBuf],
        kind: Option<&str>,
        progress: &dyn Fn(&IngestProgress),
    ) -> Result<IngestSummary, MemoryError> {
        ingest::ingest_paths(&self.inner, paths, kind, progress)
    }
}
