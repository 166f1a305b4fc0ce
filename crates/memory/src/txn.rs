//! The one way the engine writes: [`WriteTx`], a SQLite transaction on the writer connection
//! that, with a shared store, also holds the server's write lock and ships what it wrote to
//! the server before it commits locally (see `shared`).

use std::ops::Deref;
use std::sync::atomic::Ordering;

use rusqlite::Transaction;

use super::error::MemoryError;
use super::shared::{self, Feed, Recorder, SharedWrite};
use super::writer::WriteState;
use super::{Inner, SharedLink, seq, visibility};

/// A write transaction. Dropped without `commit`, it rolls back (locally and on the server).
pub(crate) struct WriteTx<'a> {
    tx: Option<Transaction<'a>>,
    shared: Option<Shared<'a>>,
}

struct Shared<'a> {
    remote: Box<dyn SharedWrite + 'a>,
    recorder: &'a Recorder,
    link: &'a SharedLink,
}

impl<'a> Deref for WriteTx<'a> {
    type Target = Transaction<'a>;
    fn deref(&self) -> &Transaction<'a> {
        self.tx.as_ref().expect("transaction present until commit")
    }
}

impl WriteState {
    /// Begins a write. With a shared store: takes its write lock, applies what other daemons
    /// committed since this copy last looked, then records this write's rows.
    pub(crate) fn transaction<'a>(&'a mut self, inner: &'a Inner) -> Result<WriteTx<'a>, MemoryError> {
        let WriteState { conn, recorder, .. } = self;
        let (Some(link), Some(recorder)) = (inner.shared.as_ref(), recorder.as_ref()) else {
            return Ok(WriteTx { tx: Some(conn.transaction()?), shared: None });
        };
        warn_stray(recorder, conn)?;
        if !link.attached.load(Ordering::Relaxed) {
            return Err(MemoryError::SharedUnavailable(format!(
                "this daemon has not reached {} since it started",
                link.store.describe()
            )));
        }
        let mut remote = link.store.begin().map_err(|e| link.failed(e))?;
        let tx = conn.transaction()?;
        let applied = shared::local_value(&tx, shared::APPLIED)?.unwrap_or(0);
        let caught_up = match remote.feed(applied).map_err(|e| link.failed(e))? {
            Feed::Snapshot => {
                return Err(MemoryError::SharedUnavailable(
                    "this daemon's copy of the shared memory is being loaded again; try the write again shortly".into(),
                ));
            }
            Feed::Changes(changes) => {
                if let Some(last) = changes.last().map(|c| c.seq) {
                    let seq = seq::bump_seq(&tx)?;
                    for c in &changes {
                        shared::apply(&tx, &recorder.tables, c, seq)?;
                    }
                    shared::set_local_value(&tx, shared::APPLIED, last)?;
                    Some(last)
                } else {
                    None
                }
            }
        };
        if let Some(last) = caught_up {
            // `applied` moves when what was applied is searchable too: the follower's job.
            link.head.fetch_max(last, Ordering::Relaxed);
        }
        // Rows this copy cannot see hold row ids too: new rows take ids above all of them.
        for (table, high) in remote.row_ids().map_err(|e| link.failed(e))? {
            raise_row_id(&tx, &table, high)?;
        }
        visibility::local_write(&tx, true)?;
        if let Some(v) = visibility::requested() {
            visibility::force(&tx, &v)?;
        }
        recorder.clear(&tx)?;
        Ok(WriteTx { tx: Some(tx), shared: Some(Shared { remote, recorder, link }) })
    }
}

impl WriteTx<'_> {
    /// Commits: with a shared store, on the server first (a failure there rolls this write
    /// back and is the error), then here.
    pub(crate) fn commit(mut self) -> Result<(), MemoryError> {
        let tx = self.tx.take().expect("transaction present until commit");
        let Some(Shared { remote, recorder, link }) = self.shared.take() else {
            tx.commit()?;
            return Ok(());
        };
        let changes = recorder.finish(&tx)?;
        visibility::local_write(&tx, false)?;
        if changes.is_empty() {
            drop(remote);
            tx.commit()?;
            return Ok(());
        }
        let person = crate::lock(&link.person).clone();
        let parts = visibility::split(&tx, &recorder.tables, person.as_deref(), changes)?;
        match remote.commit(&link.machine, &parts) {
            Ok(seq) => {
                shared::set_local_value(&tx, shared::APPLIED, seq)?;
                tx.commit()?;
                link.head.fetch_max(seq, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                drop(tx);
                Err(link.failed(e))
            }
        }
    }
}

/// Makes the next row id this copy gives a row of `table` at least `high + 1`: through
/// `sqlite_sequence` for an `AUTOINCREMENT` table, else through the local `meta` value
/// [`shared::row_id_floor`] names, which the table's inserts read (`audit`).
fn raise_row_id(tx: &Transaction<'_>, table: &str, high: i64) -> rusqlite::Result<()> {
    let auto: bool = tx
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1 AND sql LIKE '%AUTOINCREMENT%')",
        )?
        .query_row([table], |r| r.get(0))?;
    if !auto {
        return shared::set_local_value(tx, &shared::row_id_floor(table), high);
    }
    let n = tx
        .prepare_cached("UPDATE sqlite_sequence SET seq = max(seq, ?2) WHERE name = ?1")?
        .execute(rusqlite::params![table, high])?;
    if n == 0 {
        tx.prepare_cached("INSERT INTO sqlite_sequence (name, seq) VALUES (?1, ?2)")?
            .execute(rusqlite::params![table, high])?;
    }
    Ok(())
}

/// Reports writes to shared tables that bypassed [`WriteTx`] (the server does not have them),
/// and forgets them.
pub(crate) fn warn_stray(recorder: &Recorder, conn: &rusqlite::Connection) -> Result<(), MemoryError> {
    let stray = recorder.stray(conn)?;
    if !stray.is_empty() {
        tracing::error!(
            tables = ?stray,
            "rows were written outside the shared store's transaction; this copy differs from the server until `reindex`"
        );
        recorder.clear(conn)?;
    }
    Ok(())
}
