//! SQLite's WAL checkpoints, off the write path. In WAL mode with `synchronous=NORMAL` a commit
//! only appends to the log; the fsyncs happen when the log is copied back into the database
//! (a checkpoint). SQLite runs one inside whichever commit crosses its threshold, so a writer
//! waited for two fsyncs every few dozen small writes. Here the writer's own threshold is
//! raised to [`WRITER_CHECKPOINT_PAGES`] (a backstop) and a passive checkpoint runs on a
//! short-lived connection of its own about a second after writes, while writes go on.
//! Durability is unchanged: a committed transaction is in the log either way, and a process
//! crash loses nothing; as before, a power loss can lose the commits since the last fsync.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::util::Deferred;

/// Pages of log after which the writer checkpoints itself, if the background has not.
pub(crate) const WRITER_CHECKPOINT_PAGES: i64 = 8192;
/// How long after a write the background checkpoint runs (writes in between share it).
const CHECKPOINT_AFTER: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Checkpointer {
    later: Deferred,
}

impl Checkpointer {
    /// Checkpoints `db` [`CHECKPOINT_AFTER`] from now, unless one is already waiting.
    pub fn schedule(&self, db: &Path) {
        let db = db.to_path_buf();
        // Without a thread nothing is lost: the writer's backstop checkpoints.
        let _ = self.later.request("wal-checkpoint", CHECKPOINT_AFTER, move || {
            if let Err(e) = checkpoint(&db) {
                // The writer's backstop checkpoints if these keep failing.
                tracing::debug!(error = %e, "background WAL checkpoint failed");
            }
        });
    }
}

fn checkpoint(db: &Path) -> rusqlite::Result<()> {
    // Never create: a store closed and removed meanwhile has nothing to checkpoint.
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(Duration::from_millis(200))?;
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_background_checkpoint_copies_the_log_into_the_database() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("t.db");
        let writer = Connection::open(&db).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3);").unwrap();
        writer.execute_batch(&"INSERT INTO t VALUES (randomblob(500));".repeat(100)).unwrap();
        let size = || std::fs::metadata(&db).unwrap().len();
        let before = size();
        checkpoint(&db).unwrap();
        // The pages were in the log only; the checkpoint copied them into the database file.
        assert!(size() > before + 40_000, "database file {before} -> {} bytes", size());
        let n: i64 = Connection::open(&db).unwrap().query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 103);
    }
}
