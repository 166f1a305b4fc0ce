//! The background embedding thread: gives a vector to every chunk that lacks one —
//! after bulk ingest (which leaves embedding here so that it overlaps with parsing and
//! inserting), after a change of embedder, a large catch-up on open, or an embedder
//! failure. It embeds without holding the writer lock and takes the lock only to store
//! the vectors of chunks that still exist (rowids are never reused, so a rowid's text
//! cannot change in between). It holds only a weak reference to the engine between
//! batches, and stops at the next batch once the last engine handle is dropped.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use super::store::rarray;
use super::sync::{EMBED_BATCH, embed_text, read, write, wrong_count};
use super::vectors::normalize;
use super::{Inner, MemoryError, lock};

/// Rows embedded per round trip through the writer lock.
const FILL_BATCH: usize = EMBED_BATCH * 4;

#[derive(Default)]
pub(crate) struct Background {
    handle: Option<JoinHandle<()>>,
    /// True from spawn until the thread has decided, under this lock, to stop.
    running: bool,
}

/// Starts the thread unless it is running. A running thread re-checks
/// `Inner::needs_fill` under the same lock before it stops, so no request is lost.
pub(crate) fn start(inner: &Arc<Inner>) {
    let mut bg = lock(&inner.background);
    if bg.running {
        return;
    }
    if let Some(h) = bg.handle.take() {
        let _ = h.join();
    }
    inner.needs_fill.store(true, Ordering::Relaxed);
    let weak = Arc::downgrade(inner);
    match std::thread::Builder::new().name("memory-embed".into()).spawn(move || run(&weak)) {
        Ok(h) => {
            bg.handle = Some(h);
            bg.running = true;
        }
        Err(e) => tracing::warn!(error = %e, "could not start the background embedding thread"),
    }
}

/// Waits for the thread (if any) to finish its current work.
pub(crate) fn wait(inner: &Inner) {
    loop {
        let handle = lock(&inner.background).handle.take();
        match handle {
            Some(h) => {
                let _ = h.join();
            }
            None => return,
        }
    }
}

fn run(weak: &Weak<Inner>) {
    let started = Instant::now();
    let mut done = 0usize;
    // Rowids only grow, so after one full scan only newer rows need looking at.
    let mut scanned_to = 0i64;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.stopping.load(Ordering::Relaxed) {
            lock(&inner.background).running = false;
            return;
        }
        inner.needs_fill.store(false, Ordering::Relaxed);
        let result = missing(&inner, scanned_to).and_then(|rows| {
            if let Some(&last) = rows.last() {
                scanned_to = last;
            }
            let mut n = 0;
            for batch in rows.chunks(FILL_BATCH) {
                if inner.stopping.load(Ordering::Relaxed) || !fill(&inner, batch)? {
                    // The embedder failed: stop; a later write or open retries.
                    return Ok(None);
                }
                n += batch.len();
            }
            Ok(Some(n))
        });
        let (stop, failed) = match result {
            Ok(Some(0)) => (true, false),
            Ok(Some(n)) => {
                done += n;
                (false, false)
            }
            Ok(None) => (true, true),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "background embedding stopped");
                (true, true)
            }
        };
        if stop {
            let mut bg = lock(&inner.background);
            // New work arrived while this pass ran: take it, unless embedding fails.
            if inner.needs_fill.load(Ordering::Relaxed) && !failed && !inner.stopping.load(Ordering::Relaxed) {
                continue;
            }
            bg.running = false;
            drop(bg);
            if done > 0 && !inner.stopping.load(Ordering::Relaxed) {
                compact(&inner);
                tracing::info!(chunks = done, secs = started.elapsed().as_secs_f64(), "background embedding done");
            }
            return;
        }
    }
}

/// Rowids above `after` that have no vector, ascending.
fn missing(inner: &Inner, after: i64) -> Result<Vec<i64>, MemoryError> {
    let conn = inner.read_conn()?;
    let mut stmt = conn.prepare_cached("SELECT rowid FROM chunks WHERE rowid > ?1 ORDER BY rowid")?;
    let ix = read(&inner.vectors);
    let mut out = Vec::new();
    let mut rows = stmt.query([after])?;
    while let Some(r) = rows.next()? {
        let rowid: i64 = r.get(0)?;
        if !ix.contains(rowid) {
            out.push(rowid);
        }
    }
    Ok(out)
}

/// Embeds one batch and stores the vectors of the rows that still exist; false when
/// the embedder failed.
fn fill(inner: &Inner, batch: &[i64]) -> Result<bool, MemoryError> {
    let rows: Vec<(i64, String)> = inner
        .read_conn()?
        .prepare_cached("SELECT rowid, title, content FROM chunks WHERE rowid IN rarray(?1)")?
        .query_map([rarray(batch)], |r| {
            Ok((r.get(0)?, embed_text(r.get::<_, Option<String>>(1)?.as_deref(), &r.get::<_, String>(2)?)))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let texts: Vec<&str> = rows.iter().map(|(_, t)| t.as_str()).collect();
    let mut vecs = Vec::with_capacity(rows.len());
    for part in texts.chunks(EMBED_BATCH) {
        match inner.embedder.embed(part) {
            Ok(v) if v.len() == part.len() => vecs.extend(v),
            Ok(v) => return Err(wrong_count(v.len(), part.len())),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "embedding failed; chunks stay keyword-only until retried");
                return Ok(false);
            }
        }
    }
    let dims = inner.embedder.dims();
    let mut ws = lock(&inner.writer);
    let alive: HashSet<i64> = ws
        .conn
        .prepare_cached("SELECT rowid FROM chunks WHERE rowid IN rarray(?1)")?
        .query_map([rarray(batch)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    {
        let mut ix = write(&inner.vectors);
        for ((rowid, _), mut v) in rows.iter().zip(vecs) {
            if !alive.contains(rowid) {
                continue;
            }
            v.resize(dims, 0.0);
            normalize(&mut v);
            ix.upsert_normalized(*rowid, &v);
            ws.vec_file.upsert(*rowid, &v)?;
        }
    }
    let applied = ws.vec_applied;
    ws.vec_file.commit(applied)?;
    Ok(true)
}

fn compact(inner: &Inner) {
    let mut ws = lock(&inner.writer);
    if ws.vec_file.should_compact() {
        let applied = ws.vec_applied;
        if let Err(e) = ws.vec_file.compact(&read(&inner.vectors), applied) {
            tracing::warn!(error = %format!("{e:#}"), "compacting the vector file failed");
        }
    }
}
