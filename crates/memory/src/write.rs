//! The write protocol: how the engine writes. Every write asks this module for it and never
//! takes the writer lock or touches an index itself: the lock is taken (`writer::exclusive`),
//! the transaction opened (`WriteTx`, which with a shared store ships the write to the server
//! before it commits here), committed, and the indexes brought up to date (`sync`).
//!
//! - [`run`]: one change, acknowledged once searchable: its rows go to the keyword index at once
//!   and concurrent writers share one index commit (`sync::wait_searchable`, the group commit);
//!   the fast tier embeds its chunks before the lock is let go.
//! - [`bulk`] and [`finish_bulk`]: ingest's batches. Each batch is one transaction whose rows go
//!   to the keyword index (committed only every so often) and whose deletions reach the vector
//!   indexes; embedding its chunks is left to the background threads, so that it overlaps with
//!   parsing and inserting the next batch. `finish_bulk` makes everything searchable at the end.
//! - [`plain`]: a write of rows no index derives from (audit rows, file bookkeeping): no change
//!   sequence, no index step.
//!
//! Crash safety is the sequence's: a transaction that changes chunks takes a new change
//! sequence, and an index that missed it catches up at the next write or open (see `sync`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rusqlite::Transaction;

use super::error::MemoryError;
use super::sync::{self, InFlight, wait_searchable};
use super::writer::{WriteState, exclusive};
use super::{Inner, backfill, entities, seq};

/// One write of indexed rows: `f` gets the transaction and its change sequence. Returns once
/// the write is committed and searchable; a failure of `f` rolls it back.
pub(crate) fn run<T>(
    inner: &Arc<Inner>,
    f: impl FnOnce(&Transaction<'_>, i64) -> Result<T, MemoryError>,
) -> Result<T, MemoryError> {
    refuse_while_joining(inner)?;
    let in_flight = InFlight::enter(inner);
    let mut guard = exclusive(inner);
    let ws: &mut WriteState = &mut guard;
    let (out, seq) = change(inner, ws, f)?;
    // This write's chunks are new to a shared store: it has no vectors of them to take.
    let local = inner.shared.as_ref().map(|l| &l.vectors.local_write);
    local.inspect(|l| l.store(true, Ordering::Relaxed));
    after_write(inner, ws);
    local.inspect(|l| l.store(false, Ordering::Relaxed));
    drop(guard);
    drop(in_flight);
    // Acknowledged only once searchable; concurrent writers share one index commit.
    wait_searchable(inner, seq)?;
    Ok(out)
}

/// One batch of a bulk write (ingest): `f` gets the transaction and its change sequence. The
/// keyword index gets the rows and commits them when `commit_fts` is set (else at a later
/// batch or `finish_bulk`); deletions reach the vector indexes, and new chunks are embedded
/// by the background threads, started here.
pub(crate) fn bulk<T>(
    inner: &Arc<Inner>,
    commit_fts: bool,
    f: impl FnOnce(&Transaction<'_>, i64) -> Result<T, MemoryError>,
) -> Result<T, MemoryError> {
    refuse_while_joining(inner)?;
    let mut guard = exclusive(inner);
    let ws: &mut WriteState = &mut guard;
    let (out, _) = change(inner, ws, f)?;
    sync::sync_fts(inner, ws, commit_fts)?;
    // Deletions reach the vector index now; embedding the new chunks is left to the
    // background thread so that it runs while the next batch is parsed and inserted.
    sync::sync_vectors(inner, ws, Some(0))?;
    drop(guard);
    backfill::start(inner);
    Ok(out)
}

/// Ends a bulk write: the keyword index commits what the batches left uncommitted (so it is
/// searchable when ingest returns), applied tombstones go, and grown vector logs are compacted.
pub(crate) fn finish_bulk(inner: &Inner) -> Result<(), MemoryError> {
    let mut ws = exclusive(inner);
    sync::sync_fts(inner, &mut ws, true)?;
    sync::prune_tombstones(&mut ws)?;
    sync::compact_if_due(inner, &mut ws)
}

/// Runs `f` in a transaction with a new change sequence and commits it (the writer is held);
/// returns what `f` returned and the sequence.
fn change<T>(
    inner: &Inner,
    ws: &mut WriteState,
    f: impl FnOnce(&Transaction<'_>, i64) -> Result<T, MemoryError>,
) -> Result<(T, i64), MemoryError> {
    let tx = ws.transaction(inner)?;
    let seq = seq::bump_seq(&tx)?;
    let out = f(&tx, seq)?;
    tx.commit()?;
    Ok((out, seq))
}

/// A write of rows no index derives from: one transaction, no change sequence, no index step.
pub(crate) fn plain<T>(
    inner: &Inner,
    f: impl FnOnce(&Transaction<'_>) -> Result<T, MemoryError>,
) -> Result<T, MemoryError> {
    let mut ws = exclusive(inner);
    let tx = ws.transaction(inner)?;
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Brings both indexes up to date after a committed write (`wait_searchable` then makes it
/// searchable). Index failures are logged, not returned: the write itself is durable, and the next
/// write or open replays what the indexes missed.
pub(crate) fn after_write(inner: &Arc<Inner>, ws: &mut WriteState) {
    // The keyword index gets the rows now and commits them in `wait_searchable`, once for
    // every write that is waiting by then.
    if let Err(e) = sync::sync_fts(inner, ws, false) {
        tracing::warn!(error = %format!("{e:#}"), "full-text index update failed; it will be retried");
        let _ = ws.fts_writer.rollback();
        ws.fts_applied = ws.fts_committed;
    }
    if let Err(e) = sync::sync_vectors(inner, ws, None) {
        tracing::warn!(error = %format!("{e:#}"), "vector index update failed; it will be retried");
    }
    if let Err(e) = sync::prune_tombstones(ws) {
        tracing::warn!(error = %e, "pruning tombstones failed");
    }
    for tier in inner.tiers() {
        if tier.needs_fill.load(Ordering::Relaxed) {
            backfill::start_tier(inner, tier.kind);
        }
    }
    entities::start(inner);
}

/// The error a write gets while this copy of a shared store loads a snapshot (`follow` sets
/// `joining`).
fn refuse_while_joining(inner: &Inner) -> Result<(), MemoryError> {
    match inner.shared.as_ref() {
        Some(link) if link.joining.load(Ordering::Relaxed) => Err(MemoryError::SharedLoading(format!(
            "this device is still loading its copy of the shared memory from {} (a new device, or one away longer \
             than the change log's window, copies everything it may read, then indexes it); writes are taken once \
             it has: try again shortly (`openhumand-mcp status` shows `joining` until then)",
            link.store.describe()
        ))),
        _ => Ok(()),
    }
}
