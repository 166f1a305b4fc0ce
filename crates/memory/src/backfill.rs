//! The background embedding threads, one per vector tier: each gives a vector of its tier
//! to every chunk that lacks one — after bulk ingest (which leaves embedding here so that it
//! overlaps with parsing and inserting), after a change of embedder, a large catch-up on open,
//! an embedder failure, and for the deep tier after every write that adds chunks. A thread
//! embeds without holding the writer lock and takes the lock only to store the vectors of
//! chunks that still exist (rowids are never reused, so a rowid's text cannot change in
//! between). It holds only a weak reference to the engine between passes, and stops at the
//! next batch once the last engine handle is dropped. When the deep tier's thread finds
//! nothing left to embed it re-checks coverage, which is what lets queries switch to it. The
//! deep tier's thread takes the missing chunks a window at a time, shortest text first, so that
//! each batch holds texts of about one length and its encoder pads little.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use super::embed::embed_text;
use super::error::wrong_count;
use super::locks::{read, write};
use super::sql::rarray;
use super::tier::{Tier, TierKind};
use super::vectors::normalize;
use super::writer::exclusive;
use super::{Inner, MemoryError, lock};

/// Starts every tier's thread that is not running.
pub(crate) fn start(inner: &Arc<Inner>) {
    start_tier(inner, TierKind::Fast);
    if inner.deep.is_some() {
        start_tier(inner, TierKind::Deep);
    }
}

/// Starts one tier's thread unless it is running. A running thread re-checks the tier's
/// `needs_fill` under the same lock before it stops, so no request is lost.
pub(crate) fn start_tier(inner: &Arc<Inner>, kind: TierKind) {
    let Some(tier) = inner.tier(kind) else { return };
    let mut bg = lock(&tier.background);
    if bg.running {
        return;
    }
    if let Some(h) = bg.handle.take() {
        let _ = h.join();
    }
    tier.needs_fill.store(true, Ordering::Relaxed);
    let weak = Arc::downgrade(inner);
    let name = match kind {
        TierKind::Fast => "memory-embed",
        TierKind::Deep => "memory-embed-deep",
    };
    match std::thread::Builder::new().name(name.into()).spawn(move || run(&weak, kind)) {
        Ok(h) => {
            bg.handle = Some(h);
            bg.running = true;
        }
        Err(e) => tracing::warn!(tier = kind.name(), error = %e, "could not start the background embedding thread"),
    }
}

/// Waits for the threads (if any) to finish their current work.
pub(crate) fn wait(inner: &Inner) {
    for tier in inner.tiers() {
        wait_tier(tier);
    }
}

pub(crate) fn wait_tier(tier: &Tier) {
    loop {
        let handle = lock(&tier.background).handle.take();
        match handle {
            Some(h) => {
                let _ = h.join();
            }
            None => return,
        }
    }
}

fn run(weak: &Weak<Inner>, kind: TierKind) {
    let started = Instant::now();
    let mut done = 0usize;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let tier = inner.tier(kind).expect("a thread runs only for a configured tier");
        if inner.stopping.load(Ordering::Relaxed) {
            lock(&tier.background).running = false;
            return;
        }
        tier.needs_fill.store(false, Ordering::Relaxed);
        if tier.rescan.swap(false, Ordering::Relaxed) {
            tier.scanned_seq.store(0, Ordering::Relaxed);
        }
        let result = missing(&inner, tier, tier.scanned_seq.load(Ordering::Relaxed)).and_then(|(rows, seen)| {
            let mut n = 0;
            for window in rows.chunks(kind.sort_window()) {
                let window = by_length(&inner, kind, window)?;
                for batch in window.chunks(kind.fill_batch()) {
                    if inner.stopping.load(Ordering::Relaxed) || !fill(&inner, tier, batch)? {
                        // The embedder failed: stop; a later write or open retries from
                        // where this pass started.
                        return Ok(None);
                    }
                    n += batch.len();
                }
            }
            // A rescan asked for meanwhile wins over what this pass saw.
            if !tier.rescan.load(Ordering::Relaxed) {
                tier.scanned_seq.fetch_max(seen, Ordering::Relaxed);
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
                tracing::warn!(tier = kind.name(), error = %format!("{e:#}"), "background embedding stopped");
                (true, true)
            }
        };
        if stop {
            // Coverage first (writer lock, then this tier's lock, as writers do): a write
            // that lands after it clears the flag again and sets `needs_fill`.
            if !failed && kind == TierKind::Deep {
                let ws = exclusive(&inner);
                if let Err(e) = tier.update_coverage(&ws.conn) {
                    tracing::warn!(error = %format!("{e:#}"), "checking the deep tier's coverage failed");
                }
            }
            // Compacting takes the writer lock, so it happens before this thread says it stopped:
            // `start_tier` joins a stopped thread, and it may be called under the writer lock.
            if done > 0 && !inner.stopping.load(Ordering::Relaxed) {
                compact(&inner, tier);
            }
            let mut bg = lock(&tier.background);
            // New work arrived while this pass ran: take it, unless embedding fails.
            if tier.needs_fill.load(Ordering::Relaxed) && !failed && !inner.stopping.load(Ordering::Relaxed) {
                continue;
            }
            bg.running = false;
            drop(bg);
            if done > 0 && !inner.stopping.load(Ordering::Relaxed) {
                tracing::info!(
                    tier = kind.name(),
                    chunks = done,
                    secs = started.elapsed().as_secs_f64(),
                    "background embedding done"
                );
            }
            return;
        }
    }
}

/// Rowids of the chunks written after change sequence `after` that have no vector of `tier`,
/// ascending, and the highest sequence seen. The rows come from the `change_seq` index alone
/// (at 10M chunks ~120 MB, where the table is ~13 GB), and a later pass reads only its tail.
fn missing(inner: &Inner, tier: &Tier, after: i64) -> Result<(Vec<i64>, i64), MemoryError> {
    let conn = inner.read_conn()?;
    let mut stmt = conn.prepare_cached("SELECT rowid, change_seq FROM chunks WHERE change_seq > ?1")?;
    let mut rows = stmt.query([after])?;
    let mut out = Vec::new();
    let mut seen = after;
    let ix = read(&tier.vectors);
    while let Some(r) = rows.next()? {
        let rowid: i64 = r.get(0)?;
        seen = seen.max(r.get(1)?);
        if !ix.contains(rowid) {
            out.push(rowid);
        }
    }
    drop(ix);
    out.sort_unstable();
    Ok((out, seen))
}

/// The rows of one window, shortest text first for a tier whose embedder pads a batch to its
/// longest text (the deep tier), so each batch holds texts of about one length; as given for the
/// others.
fn by_length(inner: &Inner, kind: TierKind, window: &[i64]) -> Result<Vec<i64>, MemoryError> {
    if kind.sort_window() <= kind.fill_batch() {
        return Ok(window.to_vec());
    }
    let mut rows: Vec<(i64, i64)> = inner
        .read_conn()?
        .prepare_cached(
            "SELECT rowid, length(content) + coalesce(length(title), 0) FROM chunks WHERE rowid IN rarray(?1)",
        )?
        .query_map([rarray(window)], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    rows.sort_by_key(|&(rowid, len)| (len, rowid));
    Ok(rows.into_iter().map(|(rowid, _)| rowid).collect())
}

/// Embeds one batch with `tier`'s embedder and stores the vectors of the rows that still
/// exist; false when the embedder failed.
fn fill(inner: &Inner, tier: &Tier, batch: &[i64]) -> Result<bool, MemoryError> {
    let rows: Vec<(i64, String)> = inner
        .read_conn()?
        .prepare_cached("SELECT rowid, title, content FROM chunks WHERE rowid IN rarray(?1)")?
        .query_map([rarray(batch)], |r| {
            Ok((r.get(0)?, embed_text(r.get::<_, Option<String>>(1)?.as_deref(), &r.get::<_, String>(2)?)))
        })?
        .collect::<rusqlite::Result<_>>()?;
    // Vectors the shared store has for this model are taken, not embedded again.
    let fetched = super::sharedvec::fetch(inner, tier, &rows, true);
    let rows: Vec<(i64, String)> = rows.into_iter().filter(|(r, _)| !fetched.contains_key(r)).collect();
    let texts: Vec<&str> = rows.iter().map(|(_, t)| t.as_str()).collect();
    let vecs = if texts.is_empty() {
        Vec::new()
    } else {
        let Some(vecs) = embed_parallel(tier, &texts)? else {
            return Ok(false);
        };
        vecs
    };
    let dims = tier.embedder.dims();
    let mut ws = exclusive(inner);
    let alive: HashSet<i64> = ws
        .conn
        .prepare_cached("SELECT rowid FROM chunks WHERE rowid IN rarray(?1)")?
        .query_map([rarray(batch)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let log = ws.log(tier.kind).expect("a configured tier has a log");
    let mut made = Vec::new();
    {
        let mut ix = write(&tier.vectors);
        // Taken vectors go in as the copy that made them stored them (unit length already).
        for (rowid, v) in fetched.iter().filter(|(r, _)| alive.contains(r)) {
            ix.upsert_normalized(*rowid, v);
            log.file.upsert(*rowid, v)?;
        }
        for ((rowid, text), mut v) in rows.iter().zip(vecs) {
            if !alive.contains(rowid) {
                continue;
            }
            v.resize(dims, 0.0);
            normalize(&mut v);
            ix.upsert_normalized(*rowid, &v);
            log.file.upsert(*rowid, &v)?;
            made.push((*rowid, text.as_str(), v));
        }
    }
    let applied = log.applied;
    log.file.commit(applied)?;
    drop(ws);
    super::sharedvec::embedded_here(inner, tier.kind, made);
    Ok(true)
}

/// Embeds `texts` in the tier's batches, split across up to the embedder's
/// [`crate::embed::Embedder::parallelism`] threads (one part each, in order); `None` when the embedder
/// failed (logged: the chunks wait for their vectors until retried).
fn embed_parallel(tier: &Tier, texts: &[&str]) -> Result<Option<Vec<Vec<f32>>>, MemoryError> {
    let batch = tier.kind.embed_batch();
    let embed_part = |part: &[&str]| -> Result<Option<Vec<Vec<f32>>>, MemoryError> {
        let mut vecs = Vec::with_capacity(part.len());
        for b in part.chunks(batch) {
            match tier.embedder.embed(b) {
                Ok(v) if v.len() == b.len() => vecs.extend(v),
                Ok(v) => return Err(wrong_count(v.len(), b.len())),
                Err(e) => {
                    tracing::warn!(
                        tier = tier.kind.name(),
                        error = %format!("{e:#}"),
                        "embedding failed; chunks wait for their vectors until retried"
                    );
                    return Ok(None);
                }
            }
        }
        Ok(Some(vecs))
    };
    let threads = tier.embedder.parallelism().clamp(1, texts.len().div_ceil(batch).max(1));
    if threads == 1 {
        return embed_part(texts);
    }
    let per = texts.len().div_ceil(threads);
    let parts: Vec<Result<Option<Vec<Vec<f32>>>, MemoryError>> = std::thread::scope(|s| {
        let embed_part = &embed_part;
        let handles: Vec<_> = texts.chunks(per).map(|part| (part, s.spawn(move || embed_part(part)))).collect();
        // A part whose thread could not finish is embedded here instead.
        handles.into_iter().map(|(part, h)| h.join().unwrap_or_else(|_| embed_part(part))).collect()
    });
    let mut vecs = Vec::with_capacity(texts.len());
    for part in parts {
        match part? {
            Some(v) => vecs.extend(v),
            None => return Ok(None),
        }
    }
    Ok(Some(vecs))
}

fn compact(inner: &Inner, tier: &Tier) {
    let mut ws = exclusive(inner);
    let Some(log) = ws.log(tier.kind) else { return };
    if log.file.should_compact() {
        let applied = log.applied;
        if let Err(e) = log.file.compact(&read(&tier.vectors), applied) {
            tracing::warn!(tier = tier.kind.name(), error = %format!("{e:#}"), "compacting the vector file failed");
        }
    }
}
