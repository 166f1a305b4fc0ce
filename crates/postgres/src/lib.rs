//! PostgreSQL as the shared memory store (`[memory] engine = "postgres"`): the memory crate's
//! `SharedStore` over a PostgreSQL server.
//!
//! On the server: one table per shared table of the engine, with the same columns (SQLite's
//! INTEGER, REAL, TEXT and BLOB as `bigint`, `double precision`, `text` and `bytea`) and key;
//! `oh_changes`, the change log (`seq bigserial`, the machine, the time, the change set as
//! JSON, and the person and visibility of its rows); `oh_meta` (schema version, the version
//! of the row-level security set up, the cluster's random id, `base_seq`, where the log
//! starts after a store was moved in whole, and `pruned_through`, how far `log` pruned it);
//! `oh_devices`, each daemon's position in the log (`log`); and `oh_row_ids` (see
//! [`visibility`], which also holds the policies keyed to the connecting role). Every write
//! holds the transaction-scoped advisory lock [`WRITE_LOCK`] from before it reads the log until
//! it commits — one log entry per scope of its rows — and announces its position with
//! `NOTIFY openhuman_changes`. No extension is needed; the chunks' vectors are kept once per
//! model in a table of their own (`vectors`), with pgvector when the server has it.
//!
//! Connections: one for writes and reads, one for `LISTEN`, each made again on the next call
//! after it failed, over TLS when the URL's `sslmode` asks (rustls; the system's roots plus an
//! optional CA file). They run on the store's own one-thread tokio runtime, and every call waits
//! at most `connect_timeout` to connect and `request_timeout` for an answer: a server that hangs
//! (or a network that drops packets) fails the call instead of holding the writer for ever.

mod log;
mod tls;
mod vectors;

pub use vectors::VECTORS_TABLE;
pub mod visibility;

use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
pub use log::{LogWindow, PRUNE_LOCK};
use openhuman_memory::shared::{
    Affinity, Cell, Change, ChangeSet, Feed, LogStatus, OUTCOME_UNKNOWN, Part, RowSink, RowSource, Scope, SharedError,
    SharedInfo, SharedStore, SharedVectors, SharedWrite, Table, VectorStorage,
};
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, Config, GenericClient};

/// The advisory lock every write takes (an arbitrary constant: "openhuman" in ASCII, folded).
pub const WRITE_LOCK: i64 = 0x6f70_656e_6875_6d61;
/// The channel changes are announced on.
const CHANNEL: &str = "openhuman_changes";
/// Rows fetched at a time from a snapshot.
const SNAPSHOT_BATCH: i32 = 5_000;

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// A libpq-style URL (`postgres://user:pass@host:port/db?sslmode=require`).
    pub url: String,
    /// PEM file of certificate authorities to trust besides the system's.
    pub ca_file: Option<std::path::PathBuf>,
    pub connect_timeout: Duration,
    /// The longest wait for one answer of the server (a statement, a batch of a snapshot).
    pub request_timeout: Duration,
    /// How much of the change log is kept.
    pub log: LogWindow,
    /// This daemon's machine, which rows private to a machine are read on (the connections'
    /// `openhuman.machine` setting).
    pub machine: Option<String>,
}

/// A failure to set the store up (a URL that does not parse, a CA file that cannot be read).
#[derive(Debug, thiserror::Error)]
pub enum PgSetupError {
    #[error("the PostgreSQL URL does not parse ({0}); it looks like postgres://user@host:5432/dbname")]
    Url(String),
    #[error("reading the CA file {path}: {error}")]
    CaFile { path: String, error: String },
    #[error("starting the PostgreSQL client's runtime: {0}")]
    Runtime(String),
}

/// The `LISTEN` connection: notifications arrive on `wake` (closed when the connection ends).
struct Listener {
    _client: Client,
    wake: tokio::sync::mpsc::UnboundedReceiver<()>,
}

pub struct PgStore {
    config: Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    describe: String,
    rt: tokio::runtime::Runtime,
    request_timeout: Duration,
    client: Mutex<Option<Client>>,
    listener: Mutex<Option<Listener>>,
    /// The connection of `checkpoint` (positions, pruning), so that upkeep never waits for a
    /// write of this daemon nor holds one up.
    upkeep: Mutex<Option<Client>>,
    window: LogWindow,
    /// When this daemon last tried to prune the log.
    last_prune: Mutex<Option<Instant>>,
    /// The shared tables as the last `migrate` set them up.
    tables: Mutex<Vec<Table>>,
    /// How the server stores vectors, as the last `migrate` found.
    vector_storage: Mutex<VectorStorage>,
    machine: Option<String>,
    /// The connection's role, as the last `migrate` found it.
    person: Mutex<Option<String>>,
}

impl PgStore {
    /// Parses the URL and prepares TLS; connects on first use.
    pub fn new(opts: &PgOptions) -> Result<PgStore, PgSetupError> {
        let mut config = Config::from_str(&opts.url).map_err(|e| PgSetupError::Url(e.to_string()))?;
        config.connect_timeout(opts.connect_timeout);
        config.application_name("openhumand-mcp");
        // `ADD COLUMN IF NOT EXISTS` of a column that exists is a NOTICE, not news.
        config.options("-c client_min_messages=warning");
        let tls = tls::connector(opts.ca_file.as_deref())?;
        let describe = describe(&config);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("postgres-io")
            .enable_all()
            .build()
            .map_err(|e| PgSetupError::Runtime(e.to_string()))?;
        Ok(PgStore {
            config,
            tls,
            describe,
            rt,
            request_timeout: opts.request_timeout,
            client: Mutex::new(None),
            listener: Mutex::new(None),
            upkeep: Mutex::new(None),
            window: opts.log,
            last_prune: Mutex::new(None),
            tables: Mutex::new(Vec::new()),
            vector_storage: Mutex::new(VectorStorage::None),
            machine: opts.machine.clone(),
            person: Mutex::new(None),
        })
    }

    /// Runs `fut`, waiting at most `limit`, on this thread. The connections' I/O and the timers
    /// run on the store's own runtime thread (entered here so the timer registers with it), so
    /// this works from any thread, inside another runtime or not.
    fn wait_for<T>(
        &self,
        limit: Duration,
        fut: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, SharedError> {
        let _entered = self.rt.enter();
        match futures::executor::block_on(tokio::time::timeout(limit, fut)) {
            Ok(r) => r.map_err(|e| failure(&self.describe, &e)),
            Err(_) => Err(SharedError {
                message: format!("{}: no answer within {} s", self.describe, limit.as_secs()),
                unreachable: true,
            }),
        }
    }

    /// A new connection, its I/O driven by the runtime; `notify` gets its notifications.
    fn connect(&self, notify: Option<tokio::sync::mpsc::UnboundedSender<()>>) -> Result<Client, SharedError> {
        let limit = self.config.get_connect_timeout().copied().unwrap_or(Duration::from_secs(5));
        let (client, mut conn) = self
            .wait_for(limit, self.config.connect(self.tls.clone()))
            .map_err(|e| SharedError { unreachable: true, ..e })?;
        self.rt.spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
            while let Some(m) = messages.next().await {
                match m {
                    Ok(AsyncMessage::Notification(_)) => {
                        if let Some(tx) = &notify {
                            let _ = tx.send(());
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        });
        if let Some(m) = &self.machine {
            self.wait_for(
                self.request_timeout,
                client.execute("SELECT set_config($1, $2, false)", &[&visibility::MACHINE_SETTING, m]),
            )?;
        }
        Ok(client)
    }

    /// The write-and-read connection, made if needed.
    fn client(&self) -> Result<MutexGuard<'_, Option<Client>>, SharedError> {
        self.connection(&self.client)
    }

    /// The connection in `slot`, made if needed.
    fn connection<'a>(&self, slot: &'a Mutex<Option<Client>>) -> Result<MutexGuard<'a, Option<Client>>, SharedError> {
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|c| c.is_closed()) {
            *guard = None;
            *guard = Some(self.connect(None)?);
        }
        Ok(guard)
    }

    /// Runs `f` on the connection, bounded by the request timeout; a failure that is not the
    /// server's answer drops the connection, so the next call connects again.
    fn with<T>(&self, f: impl AsyncFnOnce(&mut Client) -> Result<T, tokio_postgres::Error>) -> Result<T, SharedError> {
        self.with_in(&self.client, f)
    }

    /// `with` on the connection in `slot`.
    fn with_in<T>(
        &self,
        slot: &Mutex<Option<Client>>,
        f: impl AsyncFnOnce(&mut Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, SharedError> {
        let mut guard = self.connection(slot)?;
        let client = guard.as_mut().expect("connected above");
        let out = self.wait_for(self.request_timeout, f(client));
        if out.as_ref().is_err_and(|e| e.unreachable) {
            *guard = None;
        }
        out
    }
}

fn describe(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("PostgreSQL at {host}:{port}/{}", config.get_dbname().unwrap_or("(default database)"))
}

/// A server's answer (an SQL error) is a refusal; anything else (I/O, a closed connection)
/// means the server could not be reached, and so does a server that answers that it is going
/// away or not yet there: a connection ended by a shutdown or a restart (SQLSTATE class 57,
/// "operator intervention"), a broken connection (class 08), or any FATAL error, which ends the
/// session.
fn failure(what: &str, e: &tokio_postgres::Error) -> SharedError {
    let unreachable = match e.as_db_error() {
        None => true,
        Some(db) => {
            let code = db.code().code();
            code.starts_with("57") || code.starts_with("08") || matches!(db.severity(), "FATAL" | "PANIC")
        }
    };
    SharedError { message: format!("{what}: {}", chain(e)), unreachable }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn pg_type(a: Affinity) -> &'static str {
    match a {
        Affinity::Integer => "bigint",
        Affinity::Real => "double precision",
        Affinity::Text => "text",
        Affinity::Blob => "bytea",
    }
}

fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// One column of a batch as a typed array parameter.
enum ColumnValues {
    Int(Vec<Option<i64>>),
    Real(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
    Blob(Vec<Option<Vec<u8>>>),
}

impl ColumnValues {
    fn new(a: Affinity, n: usize) -> ColumnValues {
        match a {
            Affinity::Integer => ColumnValues::Int(Vec::with_capacity(n)),
            Affinity::Real => ColumnValues::Real(Vec::with_capacity(n)),
            Affinity::Text => ColumnValues::Text(Vec::with_capacity(n)),
            Affinity::Blob => ColumnValues::Blob(Vec::with_capacity(n)),
        }
    }

    /// Adds a value, converted as SQLite's affinity would have stored it.
    fn push(&mut self, c: &Cell) {
        match self {
            ColumnValues::Int(v) => v.push(match c {
                Cell::Int(i) => Some(*i),
                Cell::Real(f) => Some(*f as i64),
                Cell::Text(t) => t.parse().ok(),
                Cell::Null | Cell::Blob(_) => None,
            }),
            ColumnValues::Real(v) => v.push(match c {
                Cell::Int(i) => Some(*i as f64),
                Cell::Real(f) => Some(*f),
                Cell::Text(t) => t.parse().ok(),
                Cell::Null | Cell::Blob(_) => None,
            }),
            ColumnValues::Text(v) => v.push(match c {
                Cell::Null => None,
                Cell::Int(i) => Some(i.to_string()),
                Cell::Real(f) => Some(f.to_string()),
                Cell::Text(t) => Some(t.clone()),
                Cell::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
            }),
            ColumnValues::Blob(v) => v.push(match c {
                Cell::Null => None,
                Cell::Blob(b) => Some(b.clone()),
                Cell::Text(t) => Some(t.as_bytes().to_vec()),
                Cell::Int(i) => Some(i.to_string().into_bytes()),
                Cell::Real(f) => Some(f.to_string().into_bytes()),
            }),
        }
    }

    fn param(&self) -> &(dyn ToSql + Sync) {
        match self {
            ColumnValues::Int(v) => v,
            ColumnValues::Real(v) => v,
            ColumnValues::Text(v) => v,
            ColumnValues::Blob(v) => v,
        }
    }
}

/// Builds the array parameters of `rows` for the columns `cols` of `t`.
fn arrays(t: &Table, cols: &[usize], rows: &[Vec<Cell>], from_key: bool) -> Vec<ColumnValues> {
    let mut out: Vec<ColumnValues> =
        cols.iter().map(|&i| ColumnValues::new(t.columns[i].affinity, rows.len())).collect();
    for row in rows {
        for (n, &i) in cols.iter().enumerate() {
            // A key row holds only the key's cells, in key order.
            let cell = if from_key { row.get(n) } else { row.get(i) };
            out[n].push(cell.unwrap_or(&Cell::Null));
        }
    }
    out
}

fn unnest_of(t: &Table, cols: &[usize]) -> String {
    let parts: Vec<String> =
        cols.iter().enumerate().map(|(n, &i)| format!("${}::{}[]", n + 1, pg_type(t.columns[i].affinity))).collect();
    format!("unnest({})", parts.join(", "))
}

/// Deletes rows by key, then writes rows whole (insert, or update every column but the key);
/// a table whose rows follow a chunk gets `scope` in its scope columns (none: the team's).
async fn apply_rows(
    c: &impl GenericClient,
    t: &Table,
    deletes: &[Vec<Cell>],
    upserts: &[Vec<Cell>],
    scope: Option<&Scope>,
) -> Result<(), tokio_postgres::Error> {
    if !deletes.is_empty() {
        let keys: Vec<String> = t.pk.iter().map(|&i| ident(&t.columns[i].name)).collect();
        let sql = format!(
            "DELETE FROM {} WHERE ({}) IN (SELECT * FROM {})",
            ident(&t.name),
            keys.join(", "),
            unnest_of(t, &t.pk)
        );
        let params = arrays(t, &t.pk, deletes, true);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.param()).collect();
        c.execute(sql.as_str(), &refs).await?;
    }
    if !upserts.is_empty() {
        let all: Vec<usize> = (0..t.columns.len()).collect();
        let mut cols: Vec<String> = t.columns.iter().map(|c| ident(&c.name)).collect();
        let keys: Vec<String> = t.pk.iter().map(|&i| cols[i].clone()).collect();
        let scoped = visibility::scoped(t);
        let (person, vis) = match scope {
            Some(s) if scoped => (s.person.clone(), Some(s.visibility.clone())),
            _ => (None, None),
        };
        let mut select = "u.*".to_string();
        if scoped {
            cols.extend(visibility::SCOPE_COLUMNS.iter().map(|c| c.to_string()));
            let n = all.len();
            select.push_str(&format!(", ${}::text, ${}::text", n + 1, n + 2));
        }
        let sets: Vec<String> =
            (0..cols.len()).filter(|i| !t.pk.contains(i)).map(|i| format!("{0} = EXCLUDED.{0}", cols[i])).collect();
        let action = if sets.is_empty() { "NOTHING".to_string() } else { format!("UPDATE SET {}", sets.join(", ")) };
        let sql = format!(
            "INSERT INTO {} ({}) SELECT {select} FROM {} u ON CONFLICT ({}) DO {action}",
            ident(&t.name),
            cols.join(", "),
            unnest_of(t, &all),
            keys.join(", ")
        );
        let params = arrays(t, &all, upserts, false);
        let mut refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.param()).collect();
        if scoped {
            refs.push(&person);
            refs.push(&vis);
        }
        c.execute(sql.as_str(), &refs).await?;
    }
    Ok(())
}

fn read_cell(row: &tokio_postgres::Row, i: usize, a: Affinity) -> Result<Cell, tokio_postgres::Error> {
    Ok(match a {
        Affinity::Integer => row.try_get::<_, Option<i64>>(i)?.map_or(Cell::Null, Cell::Int),
        Affinity::Real => row.try_get::<_, Option<f64>>(i)?.map_or(Cell::Null, Cell::Real),
        Affinity::Text => row.try_get::<_, Option<String>>(i)?.map_or(Cell::Null, Cell::Text),
        Affinity::Blob => row.try_get::<_, Option<Vec<u8>>>(i)?.map_or(Cell::Null, Cell::Blob),
    })
}

async fn meta_value(c: &impl GenericClient, name: &str) -> Result<Option<i64>, tokio_postgres::Error> {
    Ok(c.query_opt("SELECT value FROM oh_meta WHERE name = $1", &[&name]).await?.map(|r| r.get(0)))
}

async fn head_of(c: &impl GenericClient) -> Result<i64, tokio_postgres::Error> {
    let newest: i64 = c.query_one("SELECT coalesce(max(seq), 0)::bigint FROM oh_changes", &[]).await?.get(0);
    Ok(newest.max(log::horizon(c).await?))
}

/// The log after `after`: its changes, or `Snapshot` when it starts later (the inner error is
/// a change that does not read). The changes are read before the horizon: a prune that
/// committed in between moves the horizon past `after` and the answer is `Snapshot`, so a
/// change pruned under the reader is never silently missing.
async fn feed_of(
    c: &impl GenericClient,
    after: i64,
    limit: Option<i64>,
) -> Result<Result<Feed, String>, tokio_postgres::Error> {
    let rows = c
        .query(
            "SELECT seq, changes FROM oh_changes WHERE seq > $1 ORDER BY seq LIMIT $2",
            &[&after, &limit.unwrap_or(i64::MAX)],
        )
        .await?;
    if after < log::horizon(c).await? {
        return Ok(Ok(Feed::Snapshot));
    }
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let seq: i64 = r.get(0);
        let text: String = r.get(1);
        match serde_json::from_str::<ChangeSet>(&text) {
            Ok(changes) => out.push(Change { seq, changes }),
            Err(e) => {
                return Ok(Err(format!(
                    "change {seq} of the log does not read ({e}); was it written by a newer openhumand-mcp?"
                )));
            }
        }
    }
    Ok(Ok(Feed::Changes(out)))
}

/// Whether the server already holds everything `migrate` would set up for `tables` at
/// `version`: then it runs no DDL, which only the tables' owner may.
async fn is_current(c: &impl GenericClient, version: i64, tables: &[Table]) -> Result<bool, tokio_postgres::Error> {
    let there: bool = c
        .query_one(
            "SELECT to_regclass('oh_meta') IS NOT NULL AND to_regclass('oh_row_ids') IS NOT NULL
                AND to_regclass('oh_devices') IS NOT NULL
                AND (to_regclass('chunks') IS NULL OR to_regclass('oh_vectors') IS NOT NULL)",
            &[],
        )
        .await?
        .get(0);
    if !there
        || meta_value(c, "schema_version").await?.unwrap_or(0) < version
        || meta_value(c, "rls_version").await?.unwrap_or(0) < visibility::RLS_VERSION
    {
        return Ok(false);
    }
    let rows = c
        .query(
            "SELECT t.relname::text, a.attname::text FROM pg_attribute a JOIN pg_class t ON t.oid = a.attrelid
             WHERE t.relnamespace = current_schema()::regnamespace AND a.attnum > 0 AND NOT a.attisdropped",
            &[],
        )
        .await?;
    let have: std::collections::HashSet<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    Ok(tables.iter().all(|t| {
        let scope = if visibility::scoped(t) { &visibility::SCOPE_COLUMNS[..] } else { &[][..] };
        t.columns
            .iter()
            .map(|c| c.name.as_str())
            .chain(scope.iter().copied())
            .all(|c| have.contains(&(t.name.clone(), c.to_string())))
    }))
}

/// The server's tables for `tables`: created, or given the columns they lack, with their
/// row-level security (see `visibility`); a server already set up is only read. Also returns
/// the connection's role.
async fn set_up(
    c: &mut Client,
    version: i64,
    tables: &[Table],
) -> Result<Result<(SharedInfo, String, VectorStorage), i64>, tokio_postgres::Error> {
    let tx = c.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK]).await?;
    let has_meta: bool = tx.query_one("SELECT to_regclass('oh_meta') IS NOT NULL", &[]).await?.get(0);
    let found = if has_meta { meta_value(&tx, "schema_version").await?.unwrap_or(0) } else { 0 };
    if found > version {
        return Ok(Err(found));
    }
    if !is_current(&tx, version, tables).await? {
        create(&tx, version, tables).await?;
    }
    let cluster = meta_value(&tx, "cluster").await?.unwrap_or(0);
    let head = head_of(&tx).await?;
    let person: String = tx.query_one("SELECT current_user::text", &[]).await?.get(0);
    let storage = vectors::storage_of(&tx).await?;
    tx.commit().await?;
    Ok(Ok((SharedInfo { cluster, version, head }, person, storage)))
}

/// The DDL of `set_up`, idempotent.
async fn create(
    tx: &tokio_postgres::Transaction<'_>,
    version: i64,
    tables: &[Table],
) -> Result<(), tokio_postgres::Error> {
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS oh_meta (name text PRIMARY KEY, value bigint NOT NULL);
         CREATE TABLE IF NOT EXISTS oh_changes (
             seq bigserial PRIMARY KEY,
             machine text NOT NULL,
             at_ms bigint NOT NULL,
             changes text NOT NULL
         );",
    )
    .await?;
    tx.batch_execute(log::SET_UP).await?;
    // The log's change sets are written once and read a few times: lz4 is several times
    // faster than the default compression (a server built without it keeps the default).
    tx.batch_execute("SAVEPOINT lz4").await?;
    match tx.batch_execute("ALTER TABLE oh_changes ALTER COLUMN changes SET COMPRESSION lz4").await {
        Ok(()) => tx.batch_execute("RELEASE SAVEPOINT lz4").await?,
        Err(_) => tx.batch_execute("ROLLBACK TO SAVEPOINT lz4").await?,
    }
    tx.batch_execute(&visibility::base_sql()).await?;
    for t in tables {
        let cols: Vec<String> =
            t.columns.iter().map(|c| format!("{} {}", ident(&c.name), pg_type(c.affinity))).collect();
        let keys: Vec<String> = t.pk.iter().map(|&i| ident(&t.columns[i].name)).collect();
        let mut sql = format!(
            "CREATE TABLE IF NOT EXISTS {} ({}, PRIMARY KEY ({}));",
            ident(&t.name),
            cols.join(", "),
            keys.join(", ")
        );
        for c in &t.columns {
            sql.push_str(&format!(
                "ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {};",
                ident(&t.name),
                ident(&c.name),
                pg_type(c.affinity)
            ));
        }
        sql.push_str(&visibility::table_sql(t));
        tx.batch_execute(&sql).await?;
        if let Some(i) = visibility::row_id_column(t) {
            let sql = format!(
                "INSERT INTO oh_row_ids (tbl, high) SELECT $1, coalesce(max({}), 0) FROM {}
                 ON CONFLICT (tbl) DO UPDATE SET high = greatest(oh_row_ids.high, EXCLUDED.high)",
                ident(&t.columns[i].name),
                ident(&t.name)
            );
            tx.execute(sql.as_str(), &[&t.name]).await?;
        }
    }
    for (name, value) in [("schema_version", version), ("rls_version", visibility::RLS_VERSION)] {
        tx.execute(
            "INSERT INTO oh_meta (name, value) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET value = greatest(oh_meta.value, EXCLUDED.value)",
            &[&name, &value],
        )
        .await?;
    }
    tx.execute(
        "INSERT INTO oh_meta (name, value) VALUES ('cluster', (random() * 9e18)::bigint) ON CONFLICT (name) DO NOTHING",
        &[],
    )
    .await?;
    vectors::set_up(tx).await?;
    Ok(())
}

/// Raises the server's highest row ids to those of `rows` (of `t`, if it keeps one).
async fn note_row_ids(c: &impl GenericClient, t: &Table, rows: &[Vec<Cell>]) -> Result<(), tokio_postgres::Error> {
    let Some(i) = visibility::row_id_column(t) else { return Ok(()) };
    let Some(high) = rows.iter().filter_map(|r| r.get(i).and_then(Cell::as_int)).max() else { return Ok(()) };
    c.execute(
        "INSERT INTO oh_row_ids (tbl, high) VALUES ($1, $2)
         ON CONFLICT (tbl) DO UPDATE SET high = greatest(oh_row_ids.high, EXCLUDED.high)",
        &[&t.name, &high],
    )
    .await?;
    Ok(())
}

impl SharedStore for PgStore {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn migrate(&self, version: i64, tables: &[Table]) -> Result<SharedInfo, SharedError> {
        let outcome = self.with(async |c| set_up(c, version, tables).await).map_err(|mut e| {
            if e.message.contains("must be owner") {
                e.message.push_str(
                    "; this role does not own the memory's tables: run `openhumand-mcp migrate` as the role that owns \
                     them first",
                );
            }
            e
        })?;
        let outcome = outcome.map(|(info, person, storage)| {
            *self.tables.lock().unwrap_or_else(|e| e.into_inner()) = tables.to_vec();
            *self.person.lock().unwrap_or_else(|e| e.into_inner()) = Some(person);
            *self.vector_storage.lock().unwrap_or_else(|e| e.into_inner()) = storage;
            info
        });
        outcome.map_err(|found| SharedError {
            message: format!(
                "{} holds memory of schema version {found}, newer than this build ({version}); upgrade openhumand-mcp",
                self.describe
            ),
            unreachable: false,
        })
    }

    fn begin(&self) -> Result<Box<dyn SharedWrite + '_>, SharedError> {
        let guard = self.client()?;
        let mut w = PgWrite { store: self, guard, open: true };
        w.run(async |c| {
            c.batch_execute("BEGIN").await?;
            c.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK]).await?;
            Ok(())
        })?;
        Ok(Box::new(w))
    }

    fn feed(&self, after: i64, limit: usize) -> Result<Feed, SharedError> {
        let out = self.with(async |c| feed_of(c, after, Some(limit as i64)).await)?;
        out.map_err(|message| SharedError { message, unreachable: false })
    }

    fn wait(&self, timeout: Duration) -> Result<(), SharedError> {
        let mut guard = self.listener.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let (tx, wake) = tokio::sync::mpsc::unbounded_channel();
            let client = self.connect(Some(tx))?;
            self.wait_for(self.request_timeout, client.batch_execute(&format!("LISTEN {CHANNEL}")))?;
            *guard = Some(Listener { _client: client, wake });
            // A change committed since the caller last read the log, before LISTEN took effect
            // (after a restart of the server, say), was announced to nobody: return at once so
            // the caller reads the log again now that every later change will be announced.
            return Ok(());
        }
        let listener = guard.as_mut().expect("connected above");
        let _entered = self.rt.enter();
        let got = futures::executor::block_on(async {
            match tokio::time::timeout(timeout, listener.wake.recv()).await {
                Ok(Some(())) => {
                    // Take what else has arrived, so one wake-up covers a burst.
                    while listener.wake.try_recv().is_ok() {}
                    true
                }
                Ok(None) => false,
                Err(_) => true,
            }
        });
        if got {
            Ok(())
        } else {
            *guard = None;
            Err(SharedError {
                message: format!("{}: the notification connection closed", self.describe),
                unreachable: true,
            })
        }
    }

    fn head(&self) -> Result<i64, SharedError> {
        self.with(async |c| head_of(c).await)
    }

    fn snapshot(&self, tables: &[Table], sink: &mut RowSink<'_>) -> Result<i64, SharedError> {
        let mut guard = self.client()?;
        let client = guard.as_mut().expect("connected above");
        let run = (|| -> Result<Result<i64, String>, SharedError> {
            let tx = self.wait_for(
                self.request_timeout,
                client
                    .build_transaction()
                    .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                    .read_only(true)
                    .start(),
            )?;
            let at = self.wait_for(self.request_timeout, head_of(&tx))?;
            for t in tables {
                let cols: Vec<String> = t.columns.iter().map(|c| ident(&c.name)).collect();
                let sql = format!("SELECT {} FROM {}", cols.join(", "), ident(&t.name));
                let portal = self.wait_for(self.request_timeout, tx.bind(sql.as_str(), &[]))?;
                loop {
                    let rows = self.wait_for(self.request_timeout, tx.query_portal(&portal, SNAPSHOT_BATCH))?;
                    if rows.is_empty() {
                        break;
                    }
                    let mut batch = Vec::with_capacity(rows.len());
                    for r in &rows {
                        let mut cells = Vec::with_capacity(cols.len());
                        for (i, col) in t.columns.iter().enumerate() {
                            cells.push(read_cell(r, i, col.affinity).map_err(|e| failure(&self.describe, &e))?);
                        }
                        batch.push(cells);
                    }
                    if let Err(e) = sink(t, batch) {
                        return Ok(Err(format!("loading this copy from {}: {e:#}", self.describe)));
                    }
                }
            }
            self.wait_for(self.request_timeout, tx.commit())?;
            Ok(Ok(at))
        })();
        match run {
            Ok(Ok(at)) => Ok(at),
            Ok(Err(message)) => Err(SharedError { message, unreachable: false }),
            Err(e) => {
                if e.unreachable {
                    *guard = None;
                }
                Err(e)
            }
        }
    }

    fn replace_all(&self, machine: &str, tables: &[Table], source: &mut RowSource<'_>) -> Result<i64, SharedError> {
        let mut guard = self.client()?;
        let client = guard.as_mut().expect("connected above");
        // Moving a whole store in may take long: each statement gets the request timeout.
        let run = (|| -> Result<Result<i64, String>, SharedError> {
            let tx = self.wait_for(self.request_timeout, client.transaction())?;
            self.wait_for(self.request_timeout, tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK]))?;
            for t in tables {
                // CASCADE: the vectors of the chunks go too.
                self.wait_for(self.request_timeout, tx.batch_execute(&format!("TRUNCATE {} CASCADE", ident(&t.name))))?;
            }
            for t in tables {
                let outcome = source(t, &mut |rows| {
                    self.wait_for(self.request_timeout, async {
                        apply_rows(&tx, t, &[], &rows, None).await?;
                        note_row_ids(&tx, t, &rows).await
                    })
                });
                if let Err(e) = outcome {
                    return Ok(Err(format!("{e:#}")));
                }
            }
            let marker = serde_json::to_string(&ChangeSet::default()).unwrap_or_else(|_| "{}".into());
            let now = now_ms();
            let seq: i64 = self
                .wait_for(
                    self.request_timeout,
                    tx.query_one(
                        "INSERT INTO oh_changes (machine, at_ms, changes) VALUES ($1, $2, $3) RETURNING seq",
                        &[&machine, &now, &marker],
                    ),
                )?
                .get(0);
            self.wait_for(
                self.request_timeout,
                tx.execute(
                    "INSERT INTO oh_meta (name, value) VALUES ('base_seq', $1)
                     ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                    &[&seq],
                ),
            )?;
            let seq_text = seq.to_string();
            self.wait_for(self.request_timeout, tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &seq_text]))?;
            self.wait_for(self.request_timeout, tx.commit())?;
            Ok(Ok(seq))
        })();
        match run {
            Ok(Ok(seq)) => Ok(seq),
            Ok(Err(message)) => Err(SharedError { message, unreachable: false }),
            Err(e) => {
                if e.unreachable {
                    *guard = None;
                }
                Err(e)
            }
        }
    }

    fn checkpoint(&self, machine: &str, applied: i64) -> Result<Option<LogStatus>, SharedError> {
        let prune = {
            let mut last = self.last_prune.lock().unwrap_or_else(|e| e.into_inner());
            let due = last.is_none_or(|t| t.elapsed() >= self.window.prune_every);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        let window = self.window;
        self.with_in(&self.upkeep, async |c| log::checkpoint(c, machine, applied, &window, prune).await).map(Some)
    }

    fn vectors(&self) -> Option<&dyn SharedVectors> {
        Some(self)
    }

    fn counts(&self, tables: &[Table]) -> Result<Vec<(String, i64)>, SharedError> {
        self.with(async |c| {
            let mut out = Vec::with_capacity(tables.len());
            for t in tables {
                let n: i64 = c.query_one(&format!("SELECT count(*) FROM {}", ident(&t.name)), &[]).await?.get(0);
                out.push((t.name.clone(), n));
            }
            Ok(out)
        })
    }

    fn person(&self) -> Option<String> {
        self.person.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A write holding the server's lock; rolled back when dropped uncommitted.
struct PgWrite<'a> {
    store: &'a PgStore,
    guard: MutexGuard<'a, Option<Client>>,
    open: bool,
}

impl PgWrite<'_> {
    fn run<T>(&mut self, f: impl AsyncFnOnce(&Client) -> Result<T, tokio_postgres::Error>) -> Result<T, SharedError> {
        let store = self.store;
        let Some(client) = self.guard.as_ref() else {
            return Err(SharedError {
                message: format!("{}: the connection was lost", store.describe),
                unreachable: true,
            });
        };
        let out = store.wait_for(store.request_timeout, f(client));
        if let Err(e) = &out {
            self.open = false;
            if e.unreachable {
                *self.guard = None;
            } else if let Some(c) = self.guard.as_ref() {
                // The transaction is aborted: end it so the connection can serve the next one.
                if store.wait_for(store.request_timeout, c.batch_execute("ROLLBACK")).is_err() {
                    *self.guard = None;
                }
            }
        }
        out
    }
}

impl SharedWrite for PgWrite<'_> {
    fn feed(&mut self, after: i64) -> Result<Feed, SharedError> {
        let out = self.run(async |c| feed_of(c, after, None).await)?;
        out.map_err(|message| SharedError { message, unreachable: false })
    }

    fn row_ids(&mut self) -> Result<Vec<(String, i64)>, SharedError> {
        self.run(async |c| {
            let rows = c.query("SELECT tbl, high FROM oh_row_ids", &[]).await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn commit(mut self: Box<Self>, machine: &str, parts: &[Part]) -> Result<i64, SharedError> {
        let mut texts = Vec::with_capacity(parts.len());
        for p in parts {
            texts.push(
                serde_json::to_string(&p.changes)
                    .map_err(|e| SharedError { message: format!("encoding a change: {e}"), unreachable: false })?,
            );
        }
        let catalog = self.store.tables.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let all = parts.iter().flat_map(|p| p.changes.tables.iter());
        if let Some(tc) = all.clone().find(|tc| !catalog.iter().any(|t| t.name == tc.table)) {
            return Err(SharedError {
                message: format!(
                    "{}: table {} is not set up there (run `openhumand-mcp migrate`)",
                    self.store.describe, tc.table
                ),
                unreachable: false,
            });
        }
        let now = now_ms();
        let seq = self.run(async |c| {
            for p in parts {
                for tc in &p.changes.tables {
                    let t = catalog.iter().find(|t| t.name == tc.table).expect("checked above");
                    apply_rows(c, t, &tc.deletes, &tc.upserts, Some(&p.scope)).await?;
                    note_row_ids(c, t, &tc.upserts).await?;
                }
            }
            let mut last = None;
            for (p, text) in parts.iter().zip(&texts) {
                let seq: i64 = c
                    .query_one(
                        "INSERT INTO oh_changes (machine, at_ms, changes, person, visibility) VALUES ($1, $2, $3, $4, $5)
                         RETURNING seq",
                        &[&machine, &now, text, &p.scope.person, &p.scope.visibility],
                    )
                    .await?
                    .get(0);
                last = Some(seq);
            }
            let last = match last {
                Some(s) => s,
                None => head_of(c).await?,
            };
            c.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &last.to_string()]).await?;
            Ok(last)
        })?;
        let committed = self.run(async |c| c.batch_execute("COMMIT").await);
        self.open = false;
        match committed {
            Ok(()) => Ok(seq),
            Err(e) if e.unreachable => self.settle(seq, e),
            Err(e) => Err(e),
        }
    }
}

impl PgWrite<'_> {
    /// The connection went away while `COMMIT` was on its way: the server may have committed
    /// the write or not. A new connection asks whether the log holds its change (its `seq` is
    /// this write's alone): yes, it is saved; no, it is not. When even that cannot be asked,
    /// the error says the outcome is unknown rather than that nothing was saved.
    fn settle(&mut self, seq: i64, lost: SharedError) -> Result<i64, SharedError> {
        let store = self.store;
        let asked = store.connect(None).and_then(|c| {
            let found =
                store.wait_for(store.request_timeout, c.query_opt("SELECT 1 FROM oh_changes WHERE seq = $1", &[&seq]));
            *self.guard = Some(c);
            found
        });
        match asked {
            Ok(Some(_)) => Ok(seq),
            Ok(None) => Err(lost),
            Err(_) => Err(SharedError { message: format!("{OUTCOME_UNKNOWN}{}", lost.message), unreachable: true }),
        }
    }
}

impl Drop for PgWrite<'_> {
    fn drop(&mut self) {
        if self.open
            && let Some(c) = self.guard.as_ref()
            && self.store.wait_for(self.store.request_timeout, c.batch_execute("ROLLBACK")).is_err()
        {
            *self.guard = None;
        }
    }
}
