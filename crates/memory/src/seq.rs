//! The change sequence (`meta.db_seq`): every transaction that changes chunks takes the next
//! number, and each derived index records the last one it applied (see `sync`). Depends on no
//! other module, so the writers, the shared store's follower and the indexes can all use it.

use rusqlite::Connection;

/// Starts a new change sequence number for the current transaction.
pub(crate) fn bump_seq(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("UPDATE meta SET value = value + 1 WHERE name = 'db_seq' RETURNING value", [], |r| r.get(0))
}

/// The last change sequence taken.
pub(crate) fn db_seq(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT value FROM meta WHERE name = 'db_seq'", [], |r| r.get(0))
}
