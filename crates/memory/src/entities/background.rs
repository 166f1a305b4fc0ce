//! The entity thread: what a chunk's text mentions, read off the write path, and extraction
//! again when the stored entities were made by an older extractor.
//!
//! A write stores a chunk's people, chat channel and own tags in its own transaction
//! (`index_chunk` without the text). Scanning its prose (names, addresses, handles, hashtags,
//! organisations, topic words) is what costs, so this thread does it for every chunk past the
//! `entities_text_upto` mark: it reads a batch of chunks and scans them without the writer
//! lock, then adds their entities and moves the mark in one transaction per batch. Rowids are
//! never reused and a write commits rowids above every committed one, so the mark alone says
//! which chunks are left, and a store closed half way goes on from the mark when it opens.
//!
//! A bulk ingest holds the thread back until it ends (`Bulk`): making the chunks searchable
//! comes first. Before each batch it stands aside, for at most a second, while searches and
//! recalls are going on (`foreground`): answering comes first too. Tools that answer from
//! entities first let a short backlog finish (`settle`).
//!
//! When the stored entities were made by another extractor version, `begin_reextract` wipes
//! them at open and this thread rebuilds them from the chunks before it reads any new text.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use super::index::{Stored, index_text, load, register_parties, reindex};
use super::{TextFacts, people, scan};
use crate::error::MemoryError;
use crate::sql::rarray;
use crate::util::now_ms;
use crate::writer::exclusive;
use crate::{Inner, lock};

/// Bumped whenever extraction changes what it finds; a store made by an older extractor is
/// extracted again when it is opened. 0 was the phrase-based extractor; 2 leaves generic words
/// out of topics and machine senders (by their mail headers) out of people, and links chat
/// handles to their person.
pub(crate) const EXTRACTOR_VERSION: i64 = 2;

/// The `meta` row: the text of every chunk up to this rowid has been read.
const TEXT_UPTO: &str = "entities_text_upto";

/// Chunks per transaction (both kinds of work): the writer lock is let go between batches.
const BATCH: usize = 1_000;

/// Before each batch the thread stands aside while searches and recalls are going on, for at
/// most this long: a batch takes about 0.15 s, so under a steady stream of queries the thread
/// still does a batch a second or so, and most queries run without it.
const YIELD_BOUND: Duration = Duration::from_secs(1);

/// A tool that answers from entities waits for the thread when at most this many chunks'
/// text is unread (about a second of work), and for at most `SETTLE_WAIT`; past that it
/// answers from what is extracted so far.
const SETTLE_MAX_PENDING: i64 = 10_000;
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// The thread's state, shared by the engine's handles.
#[derive(Default)]
pub(crate) struct Extraction {
    state: Mutex<State>,
    /// Notified when the thread stops.
    stopped: Condvar,
    /// Bulk ingests in progress.
    bulk: AtomicUsize,
}

#[derive(Default)]
struct State {
    handle: Option<JoinHandle<()>>,
    /// True from spawn until the thread has decided, under this lock, to stop.
    running: bool,
    /// Set by `start` while the thread runs: it looks for work once more before it stops.
    again: bool,
}

/// Counts a bulk ingest in progress until dropped; the last one to end starts the thread.
pub(crate) struct Bulk<'a>(&'a Arc<Inner>);

impl<'a> Bulk<'a> {
    pub(crate) fn enter(inner: &'a Arc<Inner>) -> Bulk<'a> {
        inner.entities.bulk.fetch_add(1, Ordering::SeqCst);
        Bulk(inner)
    }
}

impl Drop for Bulk<'_> {
    fn drop(&mut self) {
        if self.0.entities.bulk.fetch_sub(1, Ordering::SeqCst) == 1 {
            start(self.0);
        }
    }
}

/// Starts the thread unless it runs (a running thread looks for work again before it stops,
/// so nothing written meanwhile is missed). Cheap when there is nothing to do.
pub(crate) fn start(inner: &Arc<Inner>) {
    let mut st = lock(&inner.entities.state);
    if st.running {
        st.again = true;
        return;
    }
    if let Some(h) = st.handle.take() {
        // It has stopped already: `running` is cleared just before the thread returns.
        let _ = h.join();
    }
    let weak = Arc::downgrade(inner);
    match std::thread::Builder::new().name("memory-entities".into()).spawn(move || run(&weak)) {
        Ok(h) => {
            st.handle = Some(h);
            st.running = true;
            st.again = false;
        }
        Err(e) => tracing::warn!(error = %e, "could not start the entity extraction thread"),
    }
}

/// Waits until the thread has stopped (its work done, or held back by a bulk ingest, or the
/// store closing).
pub(crate) fn wait(inner: &Inner) {
    let ex = &inner.entities;
    let mut st = lock(&ex.state);
    while st.running {
        st = ex.stopped.wait(st).unwrap_or_else(|e| e.into_inner());
    }
    let handle = st.handle.take();
    drop(st);
    if let Some(h) = handle {
        let _ = h.join();
    }
}

/// Before a tool answers from entities: when a short backlog of unread text is left and no
/// bulk ingest holds the thread back, waits (bounded) for the thread to read it, so that what
/// was just written is among the answer. Never call it holding the writer lock.
pub(crate) fn settle(inner: &Arc<Inner>) -> Result<(), MemoryError> {
    if inner.entities.bulk.load(Ordering::SeqCst) > 0 {
        return Ok(());
    }
    let pending: i64 = {
        let conn = inner.read_conn()?;
        if stored_version(&conn)? != Some(EXTRACTOR_VERSION) {
            // A store being extracted again answers from what is rebuilt so far.
            return Ok(());
        }
        conn.prepare_cached("SELECT count(*) FROM (SELECT 1 FROM chunks WHERE rowid > ?1 LIMIT ?2)")?
            .query_row(params![text_upto(&conn)?, SETTLE_MAX_PENDING + 1], |r| r.get(0))?
    };
    if pending == 0 || pending > SETTLE_MAX_PENDING {
        return Ok(());
    }
    start(inner);
    let ex = &inner.entities;
    let deadline = Instant::now() + SETTLE_WAIT;
    let mut st = lock(&ex.state);
    while st.running {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            tracing::debug!("answering before the entity thread caught up");
            break;
        }
        st = ex.stopped.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
    }
    Ok(())
}

/// The rowid up to which every chunk's text has been read (`index` extracts a chunk at or
/// below it in full).
pub(crate) fn text_upto(conn: &Connection) -> rusqlite::Result<i64> {
    meta(conn, TEXT_UPTO)
}

/// Why a run of the thread ended.
enum Ended {
    /// Nothing is left to read.
    Done,
    /// A bulk ingest is in progress; its end starts the thread again.
    Held,
    /// The store is closing.
    Closed,
}

fn run(weak: &Weak<Inner>) {
    loop {
        let ended = work(weak).unwrap_or_else(|e| {
            tracing::warn!(error = %format!("{e:#}"), "extracting entities failed; the next write or open retries");
            Ended::Done
        });
        let Some(inner) = weak.upgrade() else { return };
        let ex = &inner.entities;
        let mut st = lock(&ex.state);
        if st.again && matches!(ended, Ended::Done) && !inner.stopping.load(Ordering::Relaxed) {
            st.again = false;
            continue;
        }
        st.running = false;
        ex.stopped.notify_all();
        return;
    }
}

/// One run: extraction again if it is due, then the text of every chunk past the mark.
fn work(weak: &Weak<Inner>) -> Result<Ended, MemoryError> {
    let due = {
        let Some(inner) = weak.upgrade() else { return Ok(Ended::Closed) };
        stored_version(&*inner.read_conn()?)? != Some(EXTRACTOR_VERSION)
    };
    if due {
        let started = Instant::now();
        match reextract_batches(weak)? {
            Some(chunks) => tracing::info!(
                chunks,
                version = EXTRACTOR_VERSION,
                ms = started.elapsed().as_millis() as u64,
                "entities extracted again"
            ),
            // The store closed first: the next open goes on where it was.
            None => return Ok(Ended::Closed),
        }
    }
    read_text(weak)
}

/// Waits (bounded) while searches and recalls are going on; a closing store does not wait.
fn stand_aside(inner: &Inner) {
    inner.foreground.yield_to(YIELD_BOUND, || inner.stopping.load(Ordering::Relaxed));
}

/// Reads the text of the chunks past the mark, a batch at a time: loaded and scanned without
/// the writer lock, written with the new mark in one transaction.
fn read_text(weak: &Weak<Inner>) -> Result<Ended, MemoryError> {
    let (started, mut chunks) = (Instant::now(), 0);
    let done = |chunks: usize, ended: Ended| {
        if chunks >= BATCH {
            tracing::info!(chunks, ms = started.elapsed().as_millis() as u64, "entities read from new text");
        }
        Ok(ended)
    };
    loop {
        let Some(inner) = weak.upgrade() else { return done(chunks, Ended::Closed) };
        if inner.stopping.load(Ordering::Relaxed) {
            return done(chunks, Ended::Closed);
        }
        if inner.entities.bulk.load(Ordering::SeqCst) > 0 {
            return done(chunks, Ended::Held);
        }
        stand_aside(&inner);
        let (last, facts) = {
            let conn = inner.read_conn()?;
            let rowids: Vec<i64> = conn
                .prepare_cached("SELECT rowid FROM chunks WHERE rowid > ?1 ORDER BY rowid LIMIT ?2")?
                .query_map(params![text_upto(&conn)?, BATCH as i64], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let Some(&last) = rowids.last() else { return done(chunks, Ended::Done) };
            let facts: Vec<(i64, TextFacts)> = load(&conn, &rowids, false)?
                .iter()
                .map(|s| (s.rowid, scan(people::read(&s.view()).1.into_iter())))
                .collect();
            (last, facts)
        };
        let mut ws = exclusive(&inner);
        let tx = ws.transaction(&inner)?;
        // Only this thread moves the mark on one machine, but with a shared store another
        // daemon's thread may have moved it since the batch was read (the transaction applied
        // its change): what is at or below the mark now is done. A chunk deleted since it was
        // read is left out.
        let mark = text_upto(&tx)?;
        let facts: Vec<(i64, TextFacts)> = facts.into_iter().filter(|(r, _)| *r > mark).collect();
        let ids: Vec<i64> = facts.iter().map(|(r, _)| *r).collect();
        let live: HashSet<i64> = tx
            .prepare_cached("SELECT rowid FROM chunks WHERE rowid IN rarray(?1)")?
            .query_map([rarray(&ids)], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for (rowid, f) in facts {
            if live.contains(&rowid) {
                index_text(&tx, rowid, f)?;
            }
        }
        set_meta(&tx, TEXT_UPTO, last.max(mark))?;
        tx.commit()?;
        chunks += ids.len();
    }
}

/// Starts extracting every chunk again when the stored entities were made by another
/// extractor version: entities, people and automatic merges are wiped here, at open, and
/// rebuilt from the chunks written until now by the background thread, so a large store opens
/// at once and its people fill in within minutes. Merges users split apart are kept and
/// honoured. Chunks written meanwhile are extracted as any new chunk is.
pub(crate) fn begin_reextract(conn: &mut Connection) -> Result<(), MemoryError> {
    // A store written before text was read in the background has the text of every chunk read.
    conn.execute(
        "INSERT OR IGNORE INTO meta (name, value) SELECT ?1, coalesce(max(rowid), 0) FROM chunks",
        [TEXT_UPTO],
    )?;
    if stored_version(conn)? == Some(EXTRACTOR_VERSION) {
        return Ok(());
    }
    // An extraction to this version that a closed store left half done goes on where it was.
    let resuming: Option<i64> =
        conn.query_row("SELECT value FROM meta WHERE name = 'entities_reextract_to'", [], |r| r.get(0)).optional()?;
    if resuming == Some(EXTRACTOR_VERSION) {
        return Ok(());
    }
    let tx = conn.transaction()?;
    tx.execute_batch(
        "DELETE FROM entities; DELETE FROM chunk_entities; DELETE FROM chunk_senders; DELETE FROM people;
         DELETE FROM people_openings; DELETE FROM entity_aliases;",
    )?;
    let upto: i64 = tx.query_row("SELECT coalesce(max(rowid), 0) FROM chunks", [], |r| r.get(0))?;
    set_meta(&tx, "entities_reextract_upto", upto)?;
    // The chunks up to `upto` are extracted in full by the passes; only later ones are new text.
    set_meta(&tx, TEXT_UPTO, upto)?;
    // Where the extraction is: pass 0 (senders and recipients) or 1 (everything), and the last
    // rowid done.
    set_meta(&tx, "entities_reextract_pass", 0)?;
    set_meta(&tx, "entities_reextract_after", 0)?;
    set_meta(&tx, "entities_reextract_to", EXTRACTOR_VERSION)?;
    if upto == 0 {
        finish_reextract(&tx)?;
    }
    tx.commit()?;
    Ok(())
}

fn stored_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row("SELECT value FROM meta WHERE name = 'entities_version'", [], |r| r.get(0)).optional()
}

fn meta(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Records the extraction as done: the version, and no progress rows.
fn finish_reextract(conn: &Connection) -> rusqlite::Result<()> {
    set_meta(conn, "entities_version", EXTRACTOR_VERSION)?;
    conn.execute("DELETE FROM meta WHERE name LIKE 'entities_reextract_%'", [])?;
    Ok(())
}

fn set_meta(conn: &Connection, name: &str, value: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![name, value])?;
    Ok(())
}

/// Two passes over the chunks up to `entities_reextract_upto`: everyone who wrote or received
/// anything is made known first, then every chunk is extracted. Each batch commits with its
/// position, so a store closed half way goes on from there when it is opened again. Returns
/// how many chunks this run extracted, or None when the store closed first.
fn reextract_batches(weak: &Weak<Inner>) -> Result<Option<usize>, MemoryError> {
    let mut chunks = 0;
    loop {
        let Some(inner) = weak.upgrade() else { return Ok(None) };
        if inner.stopping.load(Ordering::Relaxed) {
            return Ok(None);
        }
        stand_aside(&inner);
        let mut ws = exclusive(&inner);
        let tx = ws.transaction(&inner)?;
        let (pass, after, upto) = (
            meta(&tx, "entities_reextract_pass")?,
            meta(&tx, "entities_reextract_after")?,
            meta(&tx, "entities_reextract_upto")?,
        );
        let rowids: Vec<i64> = tx
            .prepare_cached("SELECT rowid FROM chunks WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid LIMIT ?3")?
            .query_map(params![after, upto, BATCH as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let now = now_ms();
        match rowids.last() {
            None if pass == 0 => {
                set_meta(&tx, "entities_reextract_pass", 1)?;
                set_meta(&tx, "entities_reextract_after", 0)?;
            }
            None => {
                finish_reextract(&tx)?;
                tx.commit()?;
                return Ok(Some(chunks));
            }
            Some(&last) => {
                if pass == 0 {
                    register_parties(&tx, load(&tx, &rowids, false)?.iter().map(Stored::view), now)?;
                } else {
                    reindex(&tx, &rowids, now)?;
                    chunks += rowids.len();
                }
                set_meta(&tx, "entities_reextract_after", last)?;
            }
        }
        tx.commit()?;
    }
}
