//! The change log's upkeep on the server: each daemon's position (`oh_devices`), pruning the log
//! to its window, and the figures `status` shows.
//!
//! A change is pruned once it is older than the window's days *and* not among its newest rows,
//! oldest first, in short transactions that take only [`PRUNE_LOCK`] (tried, never waited for):
//! writers, which hold [`WRITE_LOCK`](crate::WRITE_LOCK), are never held up, and two daemons
//! pruning at once leave it to whichever got the lock. Each batch moves `pruned_through` in
//! `oh_meta` in the same transaction as its delete, so a reader that finds it at or below its
//! position also found every change after that position (`feed_of` reads the log first, the
//! horizon second). The newest change is never pruned, so the log always says where it stands.

use std::time::Duration;

use openhuman_memory::shared::{DevicePosition, LogStatus};
use tokio_postgres::{Client, GenericClient};

/// How much of the change log the server keeps (`[memory.postgres]` `log_keep_days`,
/// `log_keep_rows`, `log_prune_every_secs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogWindow {
    /// Changes younger than this many days (by the clock of the daemon that wrote them) stay.
    pub keep_days: u64,
    /// The newest this many changes stay whatever their age (at least one always does).
    pub keep_rows: u64,
    /// How often a daemon tries to prune.
    pub prune_every: Duration,
}

impl Default for LogWindow {
    fn default() -> Self {
        LogWindow { keep_days: 7, keep_rows: 10_000, prune_every: Duration::from_secs(300) }
    }
}

/// The advisory lock of a daemon pruning the log (tried, never waited for).
pub const PRUNE_LOCK: i64 = crate::WRITE_LOCK + 1;
/// Changes deleted per pruning transaction.
const PRUNE_BATCH: i64 = 5_000;
const DAY_MS: i64 = 86_400_000;

/// The table of positions, created with the others.
pub(crate) const SET_UP: &str = "CREATE TABLE IF NOT EXISTS oh_devices (
    machine text PRIMARY KEY,
    applied_seq bigint NOT NULL,
    seen_at_ms bigint NOT NULL
);";

/// The server's clock, in milliseconds since 1970.
const SERVER_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// Every change up to here is gone from the log (pruned, or older than a store moved in whole).
pub(crate) async fn horizon(c: &impl GenericClient) -> Result<i64, tokio_postgres::Error> {
    Ok(c.query_one(
        "SELECT coalesce(max(value), 0)::bigint FROM oh_meta WHERE name IN ('base_seq', 'pruned_through')",
        &[],
    )
    .await?
    .get(0))
}

/// Records a daemon's position, prunes when `prune` says it is due, and reads the figures.
pub(crate) async fn checkpoint(
    c: &mut Client,
    machine: &str,
    applied: i64,
    window: &LogWindow,
    prune: bool,
) -> Result<LogStatus, tokio_postgres::Error> {
    c.execute(
        &format!(
            "INSERT INTO oh_devices (machine, applied_seq, seen_at_ms) VALUES ($1, $2, {SERVER_MS})
             ON CONFLICT (machine) DO UPDATE SET applied_seq = EXCLUDED.applied_seq, seen_at_ms = EXCLUDED.seen_at_ms"
        ),
        &[&machine, &applied],
    )
    .await?;
    if prune {
        let now = crate::now_ms();
        let deleted = prune_log(c, window, now).await?;
        if deleted > 0 {
            tracing::info!(
                deleted,
                keep_days = window.keep_days,
                keep_rows = window.keep_rows,
                "pruned the shared change log"
            );
        }
    }
    status(c, window).await
}

/// Deletes the changes outside the window, oldest first, a batch per transaction; returns how
/// many. Stops at once when another daemon holds [`PRUNE_LOCK`].
pub(crate) async fn prune_log(c: &mut Client, window: &LogWindow, now_ms: i64) -> Result<i64, tokio_postgres::Error> {
    let cutoff = now_ms.saturating_sub((window.keep_days as i64).saturating_mul(DAY_MS));
    let keep = window.keep_rows.clamp(1, i64::MAX as u64) as i64;
    let mut deleted = 0;
    loop {
        let tx = c.transaction().await?;
        let got: bool = tx.query_one("SELECT pg_try_advisory_xact_lock($1)", &[&PRUNE_LOCK]).await?.get(0);
        if !got {
            return Ok(deleted);
        }
        // The newest change that may go by its count: the one just before the newest `keep`.
        let Some(by_rows) = tx
            .query_opt("SELECT seq FROM oh_changes ORDER BY seq DESC OFFSET $1 LIMIT 1", &[&keep])
            .await?
            .map(|r| r.get::<_, i64>(0))
        else {
            return Ok(deleted);
        };
        // And by its age: everything before the first change inside the window (a change
        // stamped late by a clock behind the others keeps the ones after it).
        let by_age = tx
            .query_opt("SELECT seq FROM oh_changes WHERE at_ms >= $1 ORDER BY seq LIMIT 1", &[&cutoff])
            .await?
            .map_or(i64::MAX, |r| r.get::<_, i64>(0) - 1);
        let through = by_rows.min(by_age);
        let oldest: Option<i64> = tx.query_one("SELECT min(seq) FROM oh_changes", &[]).await?.get(0);
        let Some(oldest) = oldest.filter(|o| *o <= through) else {
            return Ok(deleted);
        };
        let upto = through.min(oldest.saturating_add(PRUNE_BATCH - 1));
        let n = tx.execute("DELETE FROM oh_changes WHERE seq <= $1", &[&upto]).await?;
        tx.execute(
            "INSERT INTO oh_meta (name, value) VALUES ('pruned_through', $1)
             ON CONFLICT (name) DO UPDATE SET value = greatest(oh_meta.value, EXCLUDED.value)",
            &[&upto],
        )
        .await?;
        tx.commit().await?;
        deleted += n as i64;
        if upto >= through {
            return Ok(deleted);
        }
    }
}

/// The log's size and bounds, the window, and every daemon's position.
async fn status(c: &Client, window: &LogWindow) -> Result<LogStatus, tokio_postgres::Error> {
    let r = c
        .query_one(
            &format!(
                "SELECT count(*)::bigint, min(seq), max(seq), pg_total_relation_size('oh_changes')::bigint, {SERVER_MS}
                 FROM oh_changes"
            ),
            &[],
        )
        .await?;
    let (rows, oldest_seq, newest_seq): (i64, Option<i64>, Option<i64>) = (r.get(0), r.get(1), r.get(2));
    let (bytes, checked_at_ms): (Option<i64>, i64) = (r.get(3), r.get(4));
    let horizon_seq = horizon(c).await?;
    let head = newest_seq.unwrap_or(horizon_seq).max(horizon_seq);
    let devices = c
        .query("SELECT machine, applied_seq, seen_at_ms FROM oh_devices ORDER BY machine", &[])
        .await?
        .into_iter()
        .map(|r| {
            let applied_seq: i64 = r.get(1);
            DevicePosition {
                machine: r.get(0),
                applied_seq,
                lag: (head - applied_seq).max(0),
                seen_at_ms: r.get(2),
                behind_horizon: applied_seq < horizon_seq,
            }
        })
        .collect();
    Ok(LogStatus {
        rows,
        oldest_seq,
        newest_seq,
        bytes,
        horizon_seq,
        keep_days: window.keep_days,
        keep_rows: window.keep_rows,
        devices,
        checked_at_ms,
    })
}
