//! Vectors shared through the shared store (see `shared::SharedVectors`): each chunk is
//! embedded once per model for the whole team instead of once per device.
//!
//! - **Taking.** When this copy indexes chunks it did not write itself — a change another
//!   daemon committed, a snapshot loaded by a new or rebuilt copy, `reindex` — each tier first
//!   asks the server for the vectors its model (the embedder's signature) has there and embeds
//!   only the chunks it finds none for, or whose vector was made from other text
//!   ([`text_hash`]). The fast tier asks inside the index step (one query per thousand
//!   chunks), the background threads before they embed a batch. A local write never asks: its
//!   chunks are new to the server.
//! - **Giving.** Every vector embedded here is queued with its rowid and text hash, and a thread
//!   of its own, [`start`], uploads the queue in batches: writes never wait for the server's
//!   vector table. A server that cannot be reached keeps the queue for the next try. Once per
//!   run, when the server is set up, the thread also queues every vector the server lacks for
//!   this model ([`reconcile`]): a store moved in, a queue lost with a stopped daemon, a model
//!   the server has not seen.
//! - **Exactly the same ranking.** The queue keeps the unit vector exactly as it went into the
//!   index, and a vector taken goes into the index as it is (not normalised again), so a copy that
//!   takes a vector holds the very codes and scale of the copy that made it. Past
//!   [`QUEUE_BYTES`] of queued vectors, and for `reconcile`, only the rowid is queued and the
//!   vector is read back from the index at upload (its 8-bit codes expanded: what the index
//!   itself reloads after compaction).
//! - A device with another model neither finds nor overwrites anything of this one's.
//!
//! Live changes are usually indexed by the other daemons before the writer's upload lands, so
//! those are embedded by each daemon as before (the built-in model takes microseconds); the
//! saving is in a copy that joins or catches up later, and in the deep tier's backlog.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;

use super::locks::read;
use super::shared::{SharedVector, SharedVectors, VectorStorage};
use super::sql::rarray;
use super::tier::{Tier, TierKind};
use super::{Inner, MemoryError, lock};

/// Chunks per request for vectors to the server.
pub(crate) const FETCH_BATCH: usize = 1_000;
/// Vectors per upload.
const UPLOAD_BATCH: usize = 1_000;
/// Batches a stopping daemon still uploads before it gives up on the rest (`reconcile` at the
/// next start queues them again).
const FLUSH_AT_STOP: usize = 20;
/// Queued vectors kept whole up to this many bytes; past it only their rowids are.
const QUEUE_BYTES: usize = 64 << 20;
/// The longest pause between tries against a server that failed.
const MAX_PAUSE: Duration = Duration::from_secs(30);

/// A stable 64-bit hash (FNV-1a) of the text a vector was made from.
pub(crate) fn text_hash(text: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

fn slot(kind: TierKind) -> usize {
    match kind {
        TierKind::Fast => 0,
        TierKind::Deep => 1,
    }
}

#[derive(Default)]
struct Counts {
    fetched: AtomicU64,
    embedded: AtomicU64,
    uploaded: AtomicU64,
}

/// A vector to upload: its chunk, text hash and, unless the queue was full, the vector.
struct Pending {
    chunk: i64,
    text_hash: i64,
    vector: Option<Vec<f32>>,
}

#[derive(Default)]
struct Queue {
    /// Per tier (fast, deep).
    items: [Vec<Pending>; 2],
    /// Bytes of the vectors held in `items`.
    bytes: usize,
    stop: bool,
}

impl Queue {
    fn push(&mut self, kind: TierKind, chunk: i64, text_hash: i64, vector: Option<Vec<f32>>) {
        let vector = vector.filter(|v| self.bytes + v.len() * 4 <= QUEUE_BYTES);
        self.bytes += vector.as_ref().map_or(0, |v| v.len() * 4);
        self.items[slot(kind)].push(Pending { chunk, text_hash, vector });
    }

    fn take(&mut self, kind: TierKind, n: usize) -> Vec<Pending> {
        let items = &mut self.items[slot(kind)];
        let batch: Vec<Pending> = items.drain(..n.min(items.len())).collect();
        self.bytes -= batch.iter().map(|p| p.vector.as_ref().map_or(0, |v| v.len() * 4)).sum::<usize>();
        batch
    }

    fn put_back(&mut self, kind: TierKind, batch: Vec<Pending>) {
        self.bytes += batch.iter().map(|p| p.vector.as_ref().map_or(0, |v| v.len() * 4)).sum::<usize>();
        self.items[slot(kind)].splice(0..0, batch);
    }
}

/// The engine's state of shared vectors (part of its `SharedLink`).
#[derive(Default)]
pub(crate) struct VectorShare {
    /// Set while a local write brings the indexes up to date: its chunks are not on the server.
    pub local_write: AtomicBool,
    /// Shared with the upload thread, which waits on it without holding the engine.
    queue: Arc<Mutex<Queue>>,
    wake: Arc<Condvar>,
    uploader: Mutex<Option<std::thread::JoinHandle<()>>>,
    counts: [Counts; 2],
    last_error: Mutex<Option<String>>,
    /// Per tier: the server's index for `search_in_database` is built.
    search_ready: [AtomicBool; 2],
}

/// The shared store's vectors, when it keeps them and they are set up.
fn vectors(inner: &Inner) -> Option<(&dyn SharedVectors, &VectorShare)> {
    let link = inner.shared.as_ref()?;
    let v = link.store.vectors()?;
    (v.storage() != VectorStorage::None).then_some((v, &link.vectors))
}

/// The vectors of `rows` (rowid, embedded text) that `tier`'s model has on the server, for
/// chunks this copy did not write (`foreign`); empty without a shared store, or when the
/// server cannot answer (the caller then embeds them itself).
pub(crate) fn fetch(inner: &Inner, tier: &Tier, rows: &[(i64, String)], foreign: bool) -> HashMap<i64, Vec<f32>> {
    let mut out = HashMap::new();
    let Some((store, share)) = vectors(inner) else { return out };
    if !foreign || rows.is_empty() {
        return out;
    }
    let model = tier.embedder.signature();
    let dims = tier.embedder.dims();
    for part in rows.chunks(FETCH_BATCH) {
        let ids: Vec<i64> = part.iter().map(|(r, _)| *r).collect();
        match store.get(model, &ids) {
            Ok(found) => {
                let wanted: HashMap<i64, i64> = part.iter().map(|(r, t)| (*r, text_hash(t))).collect();
                for v in found {
                    if v.vector.len() == dims && wanted.get(&v.chunk) == Some(&v.text_hash) {
                        out.insert(v.chunk, v.vector);
                    }
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "shared vectors could not be read; embedding here");
                *lock(&share.last_error) = Some(e.message);
                break;
            }
        }
    }
    share.counts[slot(tier.kind)].fetched.fetch_add(out.len() as u64, Ordering::Relaxed);
    out
}

/// Counts vectors embedded here and queues them for upload (with a shared store that keeps
/// vectors): (rowid, embedded text, the unit vector as it went into the index).
pub(crate) fn embedded_here<'a>(
    inner: &Inner,
    kind: TierKind,
    rows: impl IntoIterator<Item = (i64, &'a str, Vec<f32>)>,
) {
    let Some((_, share)) = vectors(inner) else { return };
    let mut q = lock(&share.queue);
    let mut n = 0;
    for (chunk, text, v) in rows {
        q.push(kind, chunk, text_hash(text), Some(v));
        n += 1;
    }
    if n > 0 {
        share.counts[slot(kind)].embedded.fetch_add(n, Ordering::Relaxed);
        share.wake.notify_all();
    }
}

/// Starts the upload thread (with a shared store).
pub(crate) fn start(inner: &Arc<Inner>) -> Result<(), MemoryError> {
    let Some(link) = inner.shared.as_ref() else { return Ok(()) };
    if link.store.vectors().is_none() {
        return Ok(());
    }
    // Once: a new copy starts it when its first snapshot is in (`follow::joined`).
    let mut uploader = lock(&link.vectors.uploader);
    if uploader.is_some() {
        return Ok(());
    }
    let weak = Arc::downgrade(inner);
    let (queue, wake) = (link.vectors.queue.clone(), link.vectors.wake.clone());
    let handle = std::thread::Builder::new()
        .name("memory-vector-upload".into())
        .spawn(move || run(&weak, &queue, &wake))
        .map_err(|e| MemoryError::Io { what: "starting the shared-vector upload thread".into(), error: e })?;
    *uploader = Some(handle);
    Ok(())
}

/// Stops the upload thread after a last bounded flush (the engine is closing).
pub(crate) fn stop(inner: &Inner) {
    let Some(link) = inner.shared.as_ref() else { return };
    lock(&link.vectors.queue).stop = true;
    link.vectors.wake.notify_all();
    let handle = lock(&link.vectors.uploader).take();
    if let Some(h) = handle {
        let _ = h.join();
    }
}

/// The upload thread: holds the engine only while it works, never while it waits.
fn run(weak: &Weak<Inner>, queue: &Mutex<Queue>, wake: &Condvar) {
    let mut reconciled = false;
    let mut pause = Duration::from_millis(500);
    let mut flushed_at_stop = 0usize;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let Some(link) = inner.shared.as_ref() else { return };
        let share = &link.vectors;
        if !reconciled && vectors(&inner).is_some() && !lock(queue).stop {
            if link.search_in_database {
                prepare_search(&inner);
            }
            match reconcile_all(&inner) {
                Ok(n) => {
                    reconciled = true;
                    if n > 0 {
                        tracing::info!(vectors = n, "uploading vectors the shared store lacks");
                    }
                }
                Err(e) => *lock(&share.last_error) = Some(format!("{e:#}")),
            }
        }
        // The next batch, or a wait for one (bounded, so reconciling is retried).
        let (kind, batch) = {
            let mut q = lock(queue);
            let next = |q: &mut Queue| -> Option<(TierKind, Vec<Pending>)> {
                let kind = [TierKind::Fast, TierKind::Deep].into_iter().find(|k| !q.items[slot(*k)].is_empty())?;
                Some((kind, q.take(kind, UPLOAD_BATCH)))
            };
            match next(&mut q) {
                Some(b) if !q.stop || flushed_at_stop < FLUSH_AT_STOP => b,
                _ if q.stop => return,
                _ => {
                    drop(inner);
                    let wait = if reconciled { Duration::from_secs(60) } else { Duration::from_secs(2) };
                    let _unused = wake.wait_timeout(q, wait);
                    continue;
                }
            }
        };
        if lock(queue).stop {
            flushed_at_stop += 1;
        }
        match upload(&inner, kind, &batch) {
            Ok(n) => {
                share.counts[slot(kind)].uploaded.fetch_add(n as u64, Ordering::Relaxed);
                *lock(&share.last_error) = None;
                pause = Duration::from_millis(500);
            }
            Err(message) => {
                tracing::debug!(error = %message, "uploading vectors failed; retrying");
                *lock(&share.last_error) = Some(message);
                let mut q = lock(queue);
                q.put_back(kind, batch);
                if q.stop {
                    return;
                }
                drop(inner);
                let _unused = wake.wait_timeout(q, pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
}

/// Uploads one batch of a tier's vectors; returns how many went (chunks deleted here since are
/// skipped, and those deleted on the server are left out there).
fn upload(inner: &Inner, kind: TierKind, batch: &[Pending]) -> Result<usize, String> {
    let Some(tier) = inner.tier(kind) else { return Ok(0) };
    let Some((store, _)) = vectors(inner) else { return Err("the shared store is not set up yet".into()) };
    let rows: Vec<SharedVector> = {
        let ix = read(&tier.vectors);
        batch
            .iter()
            .filter(|p| ix.contains(p.chunk))
            .filter_map(|p| {
                let vector = p.vector.clone().or_else(|| ix.get(p.chunk))?;
                Some(SharedVector { chunk: p.chunk, text_hash: p.text_hash, vector })
            })
            .collect()
    };
    if rows.is_empty() {
        return Ok(0);
    }
    store.put(tier.embedder.signature(), &rows).map_err(|e| e.message)?;
    Ok(rows.len())
}

/// Builds the server's search index of each tier's model (`vector_search = "database"`).
fn prepare_search(inner: &Inner) {
    let Some((store, share)) = vectors(inner) else { return };
    for tier in inner.tiers() {
        let ready = &share.search_ready[slot(tier.kind)];
        if ready.load(Ordering::Relaxed) {
            continue;
        }
        match store.prepare_search(tier.embedder.signature(), tier.embedder.dims()) {
            Ok(()) => {
                ready.store(true, Ordering::Relaxed);
                tracing::info!(tier = tier.kind.name(), "vector recall runs in the shared store");
            }
            Err(e) => {
                tracing::warn!(error = %e, "vector recall stays local");
                *lock(&share.last_error) = Some(e.message);
            }
        }
    }
}

/// With `vector_search = "database"` and the server's index built: the `limit` nearest chunks
/// to `query` by `tier`'s vectors, from the server. None (the caller searches locally) otherwise,
/// or when the server fails.
pub(crate) fn search(inner: &Inner, tier: &Tier, query: &[f32], limit: usize) -> Option<Vec<(i64, f32)>> {
    let link = inner.shared.as_ref()?;
    if !link.search_in_database {
        return None;
    }
    let (store, share) = vectors(inner)?;
    if !share.search_ready[slot(tier.kind)].load(Ordering::Relaxed) {
        return None;
    }
    match store.search(tier.embedder.signature(), query, limit) {
        Ok(hits) => Some(hits),
        Err(e) => {
            tracing::warn!(error = %e, "vector search in the shared store failed; searching locally");
            None
        }
    }
}

fn reconcile_all(inner: &Inner) -> Result<usize, MemoryError> {
    let mut n = 0;
    for tier in inner.tiers() {
        n += reconcile(inner, tier)?;
    }
    Ok(n)
}

/// Queues the vectors this copy holds and the server lacks for `tier`'s model.
pub(crate) fn reconcile(inner: &Inner, tier: &Tier) -> Result<usize, MemoryError> {
    let Some((store, share)) = vectors(inner) else { return Ok(0) };
    let held: HashSet<i64> =
        store.held(tier.embedder.signature()).map_err(super::shared::shared_error)?.into_iter().collect();
    let queued: HashSet<i64> = lock(&share.queue).items[slot(tier.kind)].iter().map(|p| p.chunk).collect();
    let lacking: Vec<i64> = read(&tier.vectors).rowids().filter(|r| !held.contains(r) && !queued.contains(r)).collect();
    let conn = inner.read_conn()?;
    let mut items = Vec::with_capacity(lacking.len());
    let mut stmt = conn.prepare_cached("SELECT rowid, title, content FROM chunks WHERE rowid IN rarray(?1)")?;
    for part in lacking.chunks(FETCH_BATCH) {
        let rows = stmt.query_map([rarray(part)], |r| {
            let text = super::embed::embed_text(r.get::<_, Option<String>>(1)?.as_deref(), &r.get::<_, String>(2)?);
            Ok((r.get::<_, i64>(0)?, text_hash(&text)))
        })?;
        for r in rows {
            items.push(r?);
        }
    }
    let n = items.len();
    if n > 0 {
        let mut q = lock(&share.queue);
        for (chunk, hash) in items {
            q.push(tier.kind, chunk, hash, None);
        }
        share.wake.notify_all();
    }
    Ok(n)
}

/// Shared vectors of one tier, for `status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SharedVectorStatus {
    pub tier: TierKind,
    /// The embedder's signature: devices with the same one share vectors.
    pub model: String,
    /// How the server stores them (`pgvector`, `bytes`, or `none` before it is set up).
    pub storage: VectorStorage,
    /// Vectors taken from the server since this daemon started, instead of embedding.
    pub fetched: u64,
    /// Vectors embedded here since it started (with the server set up).
    pub embedded: u64,
    /// Vectors this daemon put on the server, and those still waiting to go.
    pub uploaded: u64,
    pub upload_pending: usize,
    /// Vector recall of this tier runs in the server (`vector_search = "database"`, index built).
    pub searched_in_database: bool,
    pub last_error: Option<String>,
}

/// Every tier's shared-vector figures (empty when the store keeps no vectors).
pub(crate) fn status(inner: &Inner) -> Vec<SharedVectorStatus> {
    let Some(link) = inner.shared.as_ref() else { return Vec::new() };
    let Some(store) = link.store.vectors() else { return Vec::new() };
    let share = &link.vectors;
    let q = lock(&share.queue);
    let error = lock(&share.last_error).clone();
    inner
        .tiers()
        .map(|t| {
            let c = &share.counts[slot(t.kind)];
            SharedVectorStatus {
                tier: t.kind,
                model: t.embedder.signature().to_string(),
                storage: store.storage(),
                fetched: c.fetched.load(Ordering::Relaxed),
                embedded: c.embedded.load(Ordering::Relaxed),
                uploaded: c.uploaded.load(Ordering::Relaxed),
                upload_pending: q.items[slot(t.kind)].len(),
                searched_in_database: share.search_ready[slot(t.kind)].load(Ordering::Relaxed),
                last_error: error.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::text_hash;

    #[test]
    fn the_text_hash_is_stable_and_tells_texts_apart() {
        // FNV-1a of the empty string is its offset basis; the value is part of the server's data.
        assert_eq!(text_hash(""), 0xcbf2_9ce4_8422_2325_u64 as i64);
        assert_eq!(text_hash("Quokka\nisland"), text_hash("Quokka\nisland"));
        assert_ne!(text_hash("Quokka\nisland"), text_hash("Quokka\nIsland"));
    }
}
