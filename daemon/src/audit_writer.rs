//! The audit writer: rejected write attempts (bad arguments, policy denials, backend failures)
//! are queued here and written in batches by one thread that owns the job, off the request's
//! hot path. Successful writes do not come here: their row commits in the write's own
//! transaction. `flush` returns once every row queued before it is on disk; shutdown calls it.

use std::sync::mpsc::{Receiver, Sender, channel};

use openhuman_memory::{AuditRow, MemoryEngine};

enum Msg {
    Row(Box<AuditRow>),
    Flush(Sender<()>),
}

#[derive(Clone)]
pub(crate) struct AuditWriter {
    tx: Sender<Msg>,
}

/// The memory engine once the store has opened (None: there is none), blocking until then.
pub(crate) type EngineWhenOpen = Box<dyn FnOnce() -> Option<MemoryEngine> + Send>;

/// Rows written per transaction at most.
const BATCH: usize = 512;

impl AuditWriter {
    /// Starts the writer thread. `memory` gives the engine, blocking while the store is still
    /// opening; it is asked once, when the first rows are to be written. Without a memory store
    /// there is no audit table: rows are then logged (they hold no content) so the attempt is
    /// still on record.
    pub(crate) fn start(memory: EngineWhenOpen) -> AuditWriter {
        let (tx, rx) = channel();
        let spawned = std::thread::Builder::new().name("audit-writer".into()).spawn(move || run(rx, memory));
        if let Err(e) = spawned {
            tracing::error!("cannot start the audit writer thread: {e}");
        }
        AuditWriter { tx }
    }

    pub(crate) fn record(&self, row: AuditRow) {
        if self.tx.send(Msg::Row(Box::new(row))).is_err() {
            tracing::error!("audit writer is gone; a rejection row was not recorded");
        }
    }

    /// Blocks until every row queued so far is written.
    pub(crate) fn flush_blocking(&self) {
        let (done_tx, done_rx) = channel();
        if self.tx.send(Msg::Flush(done_tx)).is_ok() {
            let _ = done_rx.recv();
        }
    }

    pub(crate) async fn flush(&self) {
        let me = self.clone();
        let _ = crate::pool::run(move || me.flush_blocking()).await;
    }
}

fn run(rx: Receiver<Msg>, memory: EngineWhenOpen) {
    let mut memory = Some(memory);
    let mut engine: Option<MemoryEngine> = None;
    let mut batch: Vec<AuditRow> = Vec::new();
    let mut waiters: Vec<Sender<()>> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        // Take whatever else is already queued, up to a batch.
        while let Some(msg) = next.take() {
            match msg {
                Msg::Row(r) => batch.push(*r),
                Msg::Flush(w) => waiters.push(w),
            }
            if batch.len() < BATCH {
                next = rx.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            if let Some(get) = memory.take() {
                engine = get();
            }
            write(engine.as_ref(), &batch);
            batch.clear();
        }
        for w in waiters.drain(..) {
            let _ = w.send(());
        }
    }
}

fn write(engine: Option<&MemoryEngine>, rows: &[AuditRow]) {
    match engine {
        Some(e) => {
            if let Err(err) = e.record_audit(rows) {
                tracing::error!(rows = rows.len(), "audit rows could not be written: {err:#}");
            }
        }
        None => {
            for r in rows {
                tracing::warn!(tool = %r.tool, source = %r.source, error = ?r.error, "write attempt (no audit table: memory is off)");
            }
        }
    }
}
