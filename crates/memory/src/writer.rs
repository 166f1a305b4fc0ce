//! The writer: the one SQLite connection that writes, the keyword index's writer and where
//! each index stands, behind one lock (`Inner::writer`). Holding it is what orders writes and
//! index steps, so it is taken in one place, [`exclusive`]: by the write protocol (`write`)
//! for every write, and by the engine's own index machinery (`sync`, `backfill`, `follow`,
//! the entity thread) for steps that must not interleave with a write.

use std::sync::MutexGuard;

use rusqlite::Connection;
use tantivy::IndexWriter;

use super::shared::Recorder;
use super::tier::{TierKind, TierLog};
use super::{Inner, lock};

/// What the writer lock guards: the writing connection and where each index stands.
pub(crate) struct WriteState {
    pub conn: Connection,
    pub fts_writer: IndexWriter,
    /// Highest sequence added to the tantivy writer (possibly not yet committed).
    pub fts_applied: i64,
    /// Sequence of the last tantivy commit.
    pub fts_committed: i64,
    /// The fast tier's vector log and applied sequence.
    pub fast: TierLog,
    /// The deep tier's, when one is configured.
    pub deep: Option<TierLog>,
    /// With a shared store: what the writer connection's hook records (see `shared`).
    pub recorder: Option<Recorder>,
}

impl WriteState {
    /// The vector log and applied sequence of a tier; None for a deep tier not configured.
    pub(crate) fn log(&mut self, kind: TierKind) -> Option<&mut TierLog> {
        match kind {
            TierKind::Fast => Some(&mut self.fast),
            TierKind::Deep => self.deep.as_mut(),
        }
    }
}

/// The writer, for as long as the guard lives. Callers outside the index machinery ask the
/// write protocol (`write`) for a write instead.
pub(crate) fn exclusive(inner: &Inner) -> MutexGuard<'_, WriteState> {
    lock(&inner.writer)
}
