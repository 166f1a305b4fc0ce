//! The shared store: memory kept in a database server that several daemons write, with this
//! daemon's SQLite file as a local mirror of it.
//!
//! The storage interface is [`SharedStore`]. The embedded engine has none: its SQLite file is
//! the truth. With one (the `openhuman-postgres` crate implements it for PostgreSQL) the
//! server holds the truth and an ordered change log, and the local SQLite file becomes one more
//! derived index beside tantivy and the vectors, which keeps reads local and fast:
//!
//! - **A write** takes the server's write lock ([`SharedStore::begin`]), first applies the
//!   changes other daemons committed since this one last looked, then runs in a local SQLite
//!   transaction while a pre-update hook records every row it writes ([`Recorder`]). The
//!   recorded rows, reduced to each key's final state ([`ChangeSet`]), are committed to the
//!   server with their change-log entry; only then does the local transaction commit. A server
//!   that cannot be reached fails the write and rolls the local transaction back, so nothing is
//!   acknowledged that the server does not hold.
//! - **Other daemons** are woken by the server (`wait`), read the log after the last change
//!   they applied, and apply each change in a local transaction (`apply`), which feeds their
//!   indexes through the usual change sequence.
//! - **A new or rebuilt mirror** is loaded from a consistent snapshot of the server's tables
//!   (`load_snapshot`), then follows the log.
//!
//! Ordering: every write holds the server's lock from before it reads the log until its commit,
//! so changes commit in log order and every writer has applied all earlier changes first. A
//! write's rows are committed as one log entry per scope (see `visibility`), and each daemon
//! reads only the entries its person may: a copy holds what its person may read, and takes
//! new row ids above the server's highest (`SharedWrite::row_ids`), hidden rows included. Local-only tables (the change sequence, the
//! indexes' positions, tombstones) are never shipped.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql, Transaction, params_from_iter};
use serde::{Deserialize, Serialize};

use super::error::MemoryError;
use super::seq;

mod log;
pub use log::{DevicePosition, LogStatus};

/// One value of a row, as SQLite stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Cell {
    pub(crate) fn from_ref(v: ValueRef<'_>) -> Cell {
        match v {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Int(i),
            ValueRef::Real(f) => Cell::Real(f),
            ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
        }
    }

    /// The integer in the cell, if it holds one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Cell::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl ToSql for Cell {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Cell::Null => ValueRef::Null,
            Cell::Int(i) => ValueRef::Integer(*i),
            Cell::Real(f) => ValueRef::Real(*f),
            Cell::Text(t) => ValueRef::Text(t.as_bytes()),
            Cell::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// A column's declared type, which decides its type on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affinity {
    Integer,
    Real,
    Text,
    Blob,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub affinity: Affinity,
}

/// A table the shared store holds: its columns in SQLite's order and its primary key.
#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// Indexes into `columns`, in key order.
    pub pk: Vec<usize>,
}

/// What one committed write changed: per table, the keys it deleted and the rows it left
/// (whole). Applying the deletes and then the upserts of every table gives the write's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChangeSet {
    pub tables: Vec<TableChanges>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TableChanges {
    pub table: String,
    pub deletes: Vec<Vec<Cell>>,
    pub upserts: Vec<Vec<Cell>>,
}

impl ChangeSet {
    pub fn is_empty(&self) -> bool {
        self.tables.iter().all(|t| t.deletes.is_empty() && t.upserts.is_empty())
    }

    pub fn rows(&self) -> usize {
        self.tables.iter().map(|t| t.deletes.len() + t.upserts.len()).sum()
    }
}

/// Who may read a part of a write (see `visibility`): the person it belongs to (the role the
/// writing daemon connects as) and its visibility as stored (`team`, `person`,
/// `machine:<name>`, `group:<role>`). The server enforces it on the rows and on the log.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope {
    pub person: Option<String>,
    pub visibility: String,
}

impl Scope {
    /// Everyone with access to the store.
    pub fn team(person: Option<String>) -> Scope {
        Scope { person, visibility: TEAM.into() }
    }

    pub fn is_team(&self) -> bool {
        self.visibility == TEAM
    }
}

/// The visibility every member of the store reads.
pub const TEAM: &str = "team";

/// One part of a write: the rows of one scope, committed as one log entry of that scope.
#[derive(Debug, Clone)]
pub struct Part {
    pub scope: Scope,
    pub changes: ChangeSet,
}

/// One entry of the shared change log.
#[derive(Debug, Clone)]
pub struct Change {
    pub seq: i64,
    pub changes: ChangeSet,
}

/// Where the log stands for a daemon that has applied changes up to `after`.
#[derive(Debug)]
pub enum Feed {
    /// The changes after it, in order (empty when it is up to date).
    Changes(Vec<Change>),
    /// The log no longer reaches back that far (a bulk load happened after it): the mirror
    /// must be loaded again from a snapshot.
    Snapshot,
}

/// A failure of the shared store. `unreachable` tells a server that could not be reached (or
/// went away) from one that refused what it was asked.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct SharedError {
    pub message: String,
    pub unreachable: bool,
}

/// Where a snapshot's rows go: a batch of one table's rows at a time.
pub type RowSink<'a> = dyn FnMut(&Table, Vec<Vec<Cell>>) -> Result<(), MemoryError> + 'a;
/// Sends a batch of one table's rows to the server.
pub type RowSend<'a> = dyn FnMut(Vec<Vec<Cell>>) -> Result<(), SharedError> + 'a;
/// Hands a table's rows to the server, batch by batch, through the sender it is given.
pub type RowSource<'a> = dyn FnMut(&Table, &mut RowSend<'_>) -> Result<(), MemoryError> + 'a;

/// The shared store's server side. Implementations keep their connections themselves and
/// reconnect on the next call after a failure.
pub trait SharedStore: Send + Sync {
    /// What the store is, for messages ("PostgreSQL at host:port/db"), never with credentials.
    fn describe(&self) -> String;
    /// Brings the server's schema up to `version` with these tables (created, or given the
    /// columns they lack); refuses a server written by a newer schema.
    fn migrate(&self, version: i64, tables: &[Table]) -> Result<SharedInfo, SharedError>;
    /// Takes the server's write lock (held until the returned write commits or is dropped).
    fn begin(&self) -> Result<Box<dyn SharedWrite + '_>, SharedError>;
    /// Changes after `after`, at most `limit`, without taking the write lock.
    fn feed(&self, after: i64, limit: usize) -> Result<Feed, SharedError>;
    /// Blocks until another daemon may have committed a change, or `timeout` passed.
    fn wait(&self, timeout: Duration) -> Result<(), SharedError>;
    /// The newest change in the log.
    fn head(&self) -> Result<i64, SharedError>;
    /// Every row of `tables`, as one consistent snapshot, handed over in batches; returns the
    /// log position the snapshot is at.
    fn snapshot(&self, tables: &[Table], sink: &mut RowSink<'_>) -> Result<i64, SharedError>;
    /// Replaces everything the server holds with `rows` (table by table, in batches through
    /// `source`), as one transaction, and starts the log after it. For moving a store in.
    fn replace_all(&self, machine: &str, tables: &[Table], source: &mut RowSource<'_>) -> Result<i64, SharedError>;
    /// Rows per table, for checking a move.
    fn counts(&self, tables: &[Table]) -> Result<Vec<(String, i64)>, SharedError>;
    /// The person this daemon writes as (the server's name for the connection's role), known
    /// after `migrate`; None: the store has no persons (everything is everyone's).
    fn person(&self) -> Option<String> {
        None
    }
    /// Records on the server that `machine` has applied the log up to `applied`, prunes the
    /// log to its window when that is due (whichever daemon gets there first), and says where
    /// the log stands. The follower calls it every few seconds, not per change. A store that
    /// keeps no such record answers None.
    fn checkpoint(&self, machine: &str, applied: i64) -> Result<Option<LogStatus>, SharedError> {
        let _ = (machine, applied);
        Ok(None)
    }
    /// The store's vectors of chunks, when it keeps them (see [`SharedVectors`]).
    fn vectors(&self) -> Option<&dyn SharedVectors> {
        None
    }
}

/// How a shared store keeps vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorStorage {
    /// Not set up (before `migrate`, or a store without chunks).
    None,
    /// The server's vector type (PostgreSQL's pgvector extension).
    Pgvector,
    /// Plain bytes (f32, little-endian).
    Bytes,
}

/// One chunk's vector of one model, as the shared store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedVector {
    /// The chunk's rowid (the same on every copy).
    pub chunk: i64,
    /// A hash of the text that was embedded (see `sharedvec::text_hash`): a vector of a text
    /// that has changed since is not taken.
    pub text_hash: i64,
    pub vector: Vec<f32>,
}

/// Vectors of chunks kept once in the shared store, per model (the embedder's signature): a
/// device that embedded a chunk puts its vector there, and another with the same model takes it
/// instead of embedding the chunk again. Deleting a chunk deletes its vectors. Vectors are
/// derived data: they are not part of the change log.
pub trait SharedVectors: Send + Sync {
    /// How vectors are stored there (known after `migrate`).
    fn storage(&self) -> VectorStorage;
    /// Stores (or replaces) vectors of `model`; those of chunks the store no longer holds are
    /// left out.
    fn put(&self, model: &str, rows: &[SharedVector]) -> Result<(), SharedError>;
    /// The vectors of `model` the store holds for `chunks` (any order; missing ones absent).
    fn get(&self, model: &str, chunks: &[i64]) -> Result<Vec<SharedVector>, SharedError>;
    /// Every chunk the store holds a vector of `model` for.
    fn held(&self, model: &str) -> Result<Vec<i64>, SharedError>;
    /// Makes the store able to `search` `model`'s vectors of `dims` dimensions (an index built
    /// once; may take minutes on a large store). An error when the store cannot search.
    fn prepare_search(&self, model: &str, dims: usize) -> Result<(), SharedError>;
    /// The `limit` chunks whose `model` vectors are nearest `query` by cosine, as (chunk, cosine),
    /// best first (approximate: from the store's index).
    fn search(&self, model: &str, query: &[f32], limit: usize) -> Result<Vec<(i64, f32)>, SharedError>;
}

/// What the server says of itself after `migrate`.
#[derive(Debug, Clone, Copy)]
pub struct SharedInfo {
    /// A random number the server keeps for its life: a mirror made from another server is
    /// not continued.
    pub cluster: i64,
    pub version: i64,
    pub head: i64,
}

/// A write in progress on the server, holding its write lock.
pub trait SharedWrite {
    /// Changes after `after` (committed by others before this write took the lock).
    fn feed(&mut self, after: i64) -> Result<Feed, SharedError>;
    /// The highest row id of each table keyed by an allocated row id (`chunks`) that the
    /// server holds, rows this daemon cannot see included: a new row takes an id above it.
    fn row_ids(&mut self) -> Result<Vec<(String, i64)>, SharedError> {
        Ok(Vec::new())
    }
    /// Commits the parts, each as its own log entry naming `machine` and carrying its scope;
    /// returns the log position of the last.
    fn commit(self: Box<Self>, machine: &str, parts: &[Part]) -> Result<i64, SharedError>;
}

/// Tables that stay on this machine: the change sequence and the indexes' positions live in
/// `meta`/`index_state`, deleted rowids in `tombstones` until every index applied them, and how
/// far this machine read its agents' session logs in `session_files`.
const LOCAL_TABLES: &[&str] = &["index_state", "tombstones", "sqlite_sequence", "session_files"];

/// The `meta` rows that are the memory's (SQL condition); the others describe this copy (see
/// [`local_meta`]).
pub(crate) const SHARED_META: &str = "name <> 'db_seq' AND name NOT LIKE 'shared\\_%' ESCAPE '\\'";

/// `meta` rows that describe this copy rather than the memory.
fn local_meta(name: &str) -> bool {
    name == "db_seq" || name.starts_with("shared_")
}

/// Reads the tables to share from SQLite's own catalog, so a migration that adds a table or
/// column is shared without a second list to keep.
pub(crate) fn catalog(conn: &Connection) -> Result<Vec<Table>, MemoryError> {
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for name in names.into_iter().filter(|n| !LOCAL_TABLES.contains(&n.as_str())) {
        let mut columns = Vec::new();
        let mut pk: Vec<(i64, usize)> = Vec::new();
        let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{name}\")"))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let col: String = r.get(1)?;
            let ty: String = r.get(2)?;
            let key: i64 = r.get(5)?;
            if key > 0 {
                pk.push((key, columns.len()));
            }
            columns.push(Column { name: col, affinity: affinity(&ty) });
        }
        if pk.is_empty() {
            return Err(MemoryError::Other(format!("table {name} has no primary key and cannot be shared")));
        }
        pk.sort();
        out.push(Table { name, columns, pk: pk.into_iter().map(|(_, i)| i).collect() });
    }
    Ok(out)
}

/// SQLite's type-affinity rules, reduced to the four types the schema uses.
fn affinity(declared: &str) -> Affinity {
    let t = declared.to_ascii_uppercase();
    if t.contains("INT") {
        Affinity::Integer
    } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
        Affinity::Text
    } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
        Affinity::Real
    } else if t.is_empty() || t.contains("BLOB") {
        Affinity::Blob
    } else {
        Affinity::Integer
    }
}

/// Most key columns any shared table has (`chunk_tags`, `chunk_meta`: three).
const MAX_KEY: usize = 4;

/// Records which rows of the shared tables a transaction on the writer connection touched:
/// temporary triggers (this connection only) append each written or deleted key to the
/// temporary table `oh_touched`, which lives and rolls back with the transaction. At commit
/// every touched key is read back from its table — present: the row is shipped whole;
/// absent: its deletion is — so a change set is each key's final state.
pub(crate) struct Recorder {
    pub tables: Arc<Vec<Table>>,
}

impl Recorder {
    /// Creates the triggers on the writer connection.
    pub fn install(conn: &mut Connection, tables: Vec<Table>) -> Result<Recorder, MemoryError> {
        let mut sql = String::from("CREATE TEMP TABLE IF NOT EXISTS oh_touched (tbl TEXT NOT NULL, k1, k2, k3, k4);\n");
        for t in &tables {
            if t.pk.len() > MAX_KEY {
                return Err(MemoryError::Other(format!("table {} has a key too wide to share", t.name)));
            }
            let keys = |row: &str| -> String {
                let mut k: Vec<String> = t.pk.iter().map(|&i| format!("{row}.\"{}\"", t.columns[i].name)).collect();
                k.resize(MAX_KEY, "NULL".into());
                k.join(", ")
            };
            let only = |row: &str| {
                if t.name == "meta" {
                    format!("WHEN {row}.name <> 'db_seq' AND {row}.name NOT LIKE 'shared\\_%' ESCAPE '\\'")
                } else {
                    String::new()
                }
            };
            let n = &t.name;
            sql.push_str(&format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS \"oh_ins_{n}\" AFTER INSERT ON main.\"{n}\" {w} BEGIN
                   INSERT INTO oh_touched VALUES ('{n}', {k}); END;\n",
                w = only("NEW"),
                k = keys("NEW")
            ));
            sql.push_str(&format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS \"oh_del_{n}\" AFTER DELETE ON main.\"{n}\" {w} BEGIN
                   INSERT INTO oh_touched VALUES ('{n}', {k}); END;\n",
                w = only("OLD"),
                k = keys("OLD")
            ));
            sql.push_str(&format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS \"oh_upd_{n}\" AFTER UPDATE ON main.\"{n}\" {w} BEGIN
                   INSERT INTO oh_touched VALUES ('{n}', {old});
                   INSERT INTO oh_touched VALUES ('{n}', {new}); END;\n",
                w = only("NEW"),
                old = keys("OLD"),
                new = keys("NEW"),
            ));
        }
        conn.execute_batch(&sql)?;
        Ok(Recorder { tables: Arc::new(tables) })
    }

    /// Forgets what was touched so far in this transaction (rows the server sent, applied
    /// here, are not this write's).
    pub fn clear(&self, conn: &Connection) -> rusqlite::Result<()> {
        conn.prepare_cached("DELETE FROM temp.oh_touched")?.execute([])?;
        Ok(())
    }

    /// Keys touched outside a write transaction since the last clear (writes the server
    /// never got), by table.
    pub fn stray(&self, conn: &Connection) -> rusqlite::Result<Vec<String>> {
        conn.prepare_cached("SELECT DISTINCT tbl FROM temp.oh_touched")?.query_map([], |r| r.get(0))?.collect()
    }

    /// The change set of everything touched since the last clear, each key in its final
    /// state; clears.
    pub fn finish(&self, conn: &Connection) -> Result<ChangeSet, MemoryError> {
        let mut out: Vec<TableChanges> = Vec::new();
        let touched: Vec<String> = self.stray(conn)?;
        for name in touched {
            let Some(def) = self.table(&name) else { continue };
            // Each touched key joined to its row as it is now: one query per table.
            let n = def.pk.len();
            let keys: Vec<String> = (1..=n).map(|i| format!("k.k{i}")).collect();
            let cols: Vec<String> = def.columns.iter().map(|c| format!("t.\"{}\"", c.name)).collect();
            let on: Vec<String> = def
                .pk
                .iter()
                .enumerate()
                .map(|(j, &i)| format!("t.\"{}\" = k.k{}", def.columns[i].name, j + 1))
                .collect();
            let sql = format!(
                "SELECT {}, t.\"{}\" IS NULL, {} FROM (SELECT DISTINCT {} FROM temp.oh_touched WHERE tbl = ?1) k
                 LEFT JOIN main.\"{}\" t ON {}",
                keys.join(", "),
                def.columns[def.pk[0]].name,
                cols.join(", "),
                (1..=n).map(|i| format!("k{i}")).collect::<Vec<_>>().join(", "),
                def.name,
                on.join(" AND ")
            );
            let mut tc = TableChanges { table: name.clone(), ..Default::default() };
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query([&name])?;
            while let Some(r) = rows.next()? {
                if r.get::<_, bool>(n)? {
                    tc.deletes.push((0..n).map(|i| r.get_ref(i).map(Cell::from_ref)).collect::<Result<_, _>>()?);
                } else {
                    tc.upserts.push(
                        (0..def.columns.len())
                            .map(|i| r.get_ref(n + 1 + i).map(Cell::from_ref))
                            .collect::<Result<_, _>>()?,
                    );
                }
            }
            out.push(tc);
        }
        self.clear(conn)?;
        Ok(ChangeSet { tables: out })
    }

    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// Reads a `meta` value this copy keeps for itself.
pub(crate) fn local_value(conn: &Connection, name: &str) -> rusqlite::Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| r.get(0)).optional()
}

pub(crate) fn set_local_value(conn: &Connection, name: &str, value: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    )?
    .execute(rusqlite::params![name, value])?;
    Ok(())
}

/// The local `meta` value holding the highest row id the server holds for `table` (one keyed
/// by a row id without `AUTOINCREMENT`): a new row takes an id above it.
pub(crate) fn row_id_floor(table: &str) -> String {
    format!("shared_rowid_{table}")
}

/// The last change of the log this mirror has applied.
pub(crate) const APPLIED: &str = "shared_seq";
/// The server this mirror was made from (`SharedInfo::cluster`).
pub(crate) const CLUSTER: &str = "shared_cluster";

/// Applies a change another daemon committed to the local mirror, inside `tx`, with the local
/// change sequence `seq`: deleted chunks leave tombstones and new chunks carry `seq`, so the
/// indexes take them up as they take up local writes. Rows already present (a change this
/// daemon wrote itself, replayed after a crash) are overwritten with the same values.
pub(crate) fn apply(tx: &Transaction<'_>, tables: &[Table], change: &Change, seq: i64) -> Result<(), MemoryError> {
    for tc in &change.changes.tables {
        let Some(def) = tables.iter().find(|t| t.name == tc.table) else {
            return Err(MemoryError::Other(format!(
                "the shared store holds table {} that this build does not know; upgrade openhumand-mcp",
                tc.table
            )));
        };
        let is_chunks = def.name == "chunks";
        let key_cols: Vec<&str> = def.pk.iter().map(|&i| def.columns[i].name.as_str()).collect();
        let where_key = key_cols.iter().enumerate().map(|(n, c)| format!("\"{c}\" = ?{}", n + 1)).collect::<Vec<_>>();
        let delete_sql = format!("DELETE FROM \"{}\" WHERE {}", def.name, where_key.join(" AND "));
        for key in &tc.deletes {
            if is_chunks && let Some(rowid) = key.first().and_then(Cell::as_int) {
                tx.prepare_cached("INSERT INTO tombstones (seq, chunk_rowid) VALUES (?1, ?2)")?
                    .execute(rusqlite::params![seq, rowid])?;
            }
            tx.prepare_cached(&delete_sql)?.execute(params_from_iter(key.iter()))?;
        }
        if tc.upserts.is_empty() {
            continue;
        }
        let upsert_sql = upsert_sql(def);
        let change_seq = def.columns.iter().position(|c| c.name == "change_seq").filter(|_| is_chunks);
        let mut stmt = tx.prepare_cached(&upsert_sql)?;
        for row in &tc.upserts {
            if row.len() != def.columns.len() {
                return Err(MemoryError::Other(format!(
                    "a shared change to {} has {} columns where this build has {}; upgrade openhumand-mcp",
                    def.name,
                    row.len(),
                    def.columns.len()
                )));
            }
            match change_seq {
                Some(ci) => {
                    let mut r = row.clone();
                    r[ci] = Cell::Int(seq);
                    stmt.execute(params_from_iter(r.iter()))?;
                }
                None => {
                    stmt.execute(params_from_iter(row.iter()))?;
                }
            }
        }
    }
    Ok(())
}

/// `INSERT … ON CONFLICT (key) DO UPDATE` of every column but the key; a chunk's
/// `change_seq` is kept when the row exists (its text never changes in place).
fn upsert_sql(def: &Table) -> String {
    let cols: Vec<String> = def.columns.iter().map(|c| format!("\"{}\"", c.name)).collect();
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
    let key: Vec<&str> = def.pk.iter().map(|&i| cols[i].as_str()).collect();
    let sets: Vec<String> = def
        .columns
        .iter()
        .enumerate()
        .filter(|(i, c)| !(def.pk.contains(i) || def.name == "chunks" && c.name == "change_seq"))
        .map(|(_, c)| format!("\"{0}\" = excluded.\"{0}\"", c.name))
        .collect();
    let action = if sets.is_empty() { "NOTHING".to_string() } else { format!("UPDATE SET {}", sets.join(", ")) };
    format!(
        "INSERT INTO \"{}\" ({}) VALUES ({}) ON CONFLICT ({}) DO {action}",
        def.name,
        cols.join(", "),
        marks.join(", "),
        key.join(", ")
    )
}

/// Empties the shared tables of the local mirror and fills them from a snapshot of the server,
/// in one local transaction; every chunk takes a new local change sequence, so the caller
/// rebuilds the indexes afterwards. Returns the log position of the snapshot.
pub(crate) fn load_snapshot(
    conn: &mut Connection,
    recorder: &Recorder,
    store: &dyn SharedStore,
    cluster: i64,
) -> Result<i64, MemoryError> {
    let tx = conn.transaction()?;
    let seq = seq::bump_seq(&tx)?;
    for t in recorder.tables.iter() {
        if t.name == "meta" {
            tx.execute(&format!("DELETE FROM meta WHERE {SHARED_META}"), [])?;
        } else {
            tx.execute(&format!("DELETE FROM \"{}\"", t.name), [])?;
        }
    }
    tx.execute("DELETE FROM tombstones", [])?;
    let tables: Vec<Table> = recorder.tables.iter().cloned().collect();
    let at = store
        .snapshot(&tables, &mut |def, rows| {
            let sql = upsert_sql(def);
            let change_seq = def.columns.iter().position(|c| c.name == "change_seq").filter(|_| def.name == "chunks");
            let mut stmt = tx.prepare_cached(&sql)?;
            for mut row in rows {
                if def.name == "meta" && matches!(row.first(), Some(Cell::Text(n)) if local_meta(n)) {
                    continue;
                }
                if let Some(ci) = change_seq {
                    row[ci] = Cell::Int(seq);
                }
                stmt.execute(params_from_iter(row.iter()))?;
            }
            Ok(())
        })
        .map_err(shared_error)?;
    set_local_value(&tx, APPLIED, at)?;
    set_local_value(&tx, CLUSTER, cluster)?;
    recorder.clear(&tx)?;
    tx.commit()?;
    Ok(at)
}

/// Begins the message of a [`SharedError`] whose write may or may not have been committed (the
/// connection went away during the commit and the server could not be asked afterwards).
pub const OUTCOME_UNKNOWN: &str = "outcome unknown: ";

/// The engine's error for a failure of the shared store, saying what still works.
pub(crate) fn shared_error(e: SharedError) -> MemoryError {
    if let Some(why) = e.message.strip_prefix(OUTCOME_UNKNOWN) {
        MemoryError::SharedUncertain(why.to_string())
    } else if e.unreachable {
        MemoryError::SharedUnavailable(e.message)
    } else {
        MemoryError::Shared(e.message)
    }
}

/// How long the follower waits for a wake-up before looking at the log anyway.
pub(crate) const FOLLOW_POLL: Duration = Duration::from_millis(500);
/// Changes read from the log at a time while catching up.
pub(crate) const FEED_BATCH: usize = 256;
