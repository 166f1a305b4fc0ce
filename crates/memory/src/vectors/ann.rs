//! The approximate vector index of a tier: an inverted file (IVF). Rows are grouped into lists
//! by their nearest centroid ("leaf"); a query scores every leaf centroid and scans only the
//! rows of the best `probes` leaves, exactly, on their int8 rows, plus the rows not yet placed
//! in a leaf (the pending list). Our own code rather than a graph crate: the HNSW and usearch
//! builds measured 7–115 s per 20–100k vectors, days at 10M rows on two cores, while an IVF
//! trains on a sample in seconds and places a row with a few hundred dot products.
//!
//! - Training ([`train`]) is a two-level spherical k-means over a sample of the rows: `g`
//!   coarse groups, then each group's sample split into leaves in proportion to its size. A
//!   row is placed by scoring the groups and then the leaves of its best [`GROUP_PROBES`]
//!   groups, so placing costs ~`3·sqrt(leaves)` dot products instead of `leaves`.
//! - The [`Worker`] thread of the tier does all of it off the write path: it trains when the
//!   index passes [`ANN_MIN_ROWS`] rows, retrains when it has grown 4× since, or when rows
//!   placed since training sit clearly farther from their centroids than the trained ones
//!   did (drift); it places pending rows in batches (copying them under a read lock, taking
//!   the write lock only to file them); then it calibrates `probes` on rows of the index used
//!   as queries (twice the smallest count whose recall@10 against the exact scan is at least
//!   [`TARGET_RECALL`], as rows find their neighbours more easily than other queries do) and persists the index (`ann.bin` in the tier's directory) — again when
//!   an eighth more rows were filed since, and when the tier closes.
//! - Writers only append a row to the pending list, so ingest pays nothing; a search scans the
//!   pending rows exactly (sign-prefiltered when there are many, as after a retrain).
//! - On open the file's leaves are applied to the rows that still exist; rows it does not
//!   cover (written after it, or its version or embedder differ) are pending until the worker
//!   places them, and a file of another version or embedder is discarded and the index
//!   retrained. Nothing is lost: every row is always in one leaf or pending.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};

use serde::Serialize;

use super::slab::Slab;
use super::{VectorIndex, dot, normalize};
use crate::locks::{lock, read, write};

/// Below this many rows a search scans every row (under ~4 ms) and no IVF is trained.
pub(crate) const ANN_MIN_ROWS: usize = 128 * 1024;
/// The recall@10 against the exact scan that calibration aims at (above the 0.95 promised,
/// for the sampling error of calibrating on 100 queries).
pub(crate) const TARGET_RECALL: f64 = 0.98;
/// Groups whose leaves are scored when placing a row.
const GROUP_PROBES: usize = 3;
/// Retrain once the index holds this many times the rows it was trained on.
const GROWTH: usize = 4;
/// Rows placed per round of the worker (one read lock to copy them, one write lock to file).
const PLACE_BATCH: usize = 2048;
/// Queries calibration measures recall on.
const CALIBRATION_QUERIES: usize = 100;
const KMEANS_ITERS: usize = 8;
/// A drop of the mean cosine of newly placed rows to their centroid this far below the
/// training sample's mean counts as drift.
const DRIFT: f32 = 0.05;
/// The on-disk format; a file of another version is discarded and the index retrained (3: the
/// leaves are ranked for the centred query, so probes calibrated before are not reused).
pub(crate) const ANN_VERSION: u32 = 3;
const MAGIC: &[u8; 8] = b"OHANN001";
const FILE: &str = "ann.bin";

/// The list id of rows not yet placed in a leaf.
pub(crate) const PENDING: u32 = u32::MAX;

/// Leaves for an index of `rows` rows: about 2·√rows, so a leaf holds ~√rows/2 rows.
pub(crate) fn leaves_for(rows: usize) -> usize {
    ((rows as f64).sqrt() * 2.0).round().clamp(16.0, 8192.0) as usize
}

/// Trained centroids (immutable once built; shared with the worker) and the tuned probe count.
pub(crate) struct Ivf {
    dims: usize,
    /// `leaves * dims`, unit length.
    leaves: Vec<f32>,
    /// `groups * dims`, unit length.
    groups: Vec<f32>,
    /// The leaf ids of each group.
    members: Vec<Vec<u32>>,
    /// Rows in the index when trained.
    pub trained_rows: usize,
    /// Mean cosine of the training sample to its leaf.
    fit: f32,
    /// The sample's mean row. Rows and centroids live in the space centred on it: vectors of one
    /// embedder share a large common component, and only what is left after removing it tells
    /// rows apart. A query's ranking is unchanged by it (`q·x = q·(x − mean) + q·mean`).
    mean: Vec<f32>,
    /// Leaves a query scans; 0 until calibrated (then the search scans a default).
    probes: AtomicUsize,
    /// Measured recall@10 at `probes`, in millionths.
    recall_ppm: AtomicU32,
    /// Rows placed since training and the sum of their cosines to their leaf, for drift.
    placed: AtomicU64,
    placed_fit_micro: AtomicU64,
}

impl Ivf {
    pub fn leaf_count(&self) -> usize {
        self.members.iter().map(Vec::len).sum()
    }

    pub fn probes(&self) -> usize {
        match self.probes.load(Ordering::Relaxed) {
            0 => (self.leaf_count() / 16).max(8),
            p => p,
        }
    }

    fn calibrated(&self) -> bool {
        self.probes.load(Ordering::Relaxed) != 0
    }

    pub fn recall(&self) -> Option<f64> {
        self.calibrated().then(|| f64::from(self.recall_ppm.load(Ordering::Relaxed)) / 1e6)
    }

    /// Counts a row placed since training, with its fit, for [`Self::drifted`].
    fn note_placed(&self, fit: f32) {
        self.placed.fetch_add(1, Ordering::Relaxed);
        self.placed_fit_micro.fetch_add((fit.max(0.0) * 1e6) as u64, Ordering::Relaxed);
    }

    /// True when rows placed since training fit their leaves clearly worse than the sample did.
    fn drifted(&self) -> bool {
        let n = self.placed.load(Ordering::Relaxed);
        if (n as usize) < self.trained_rows / 4 || n == 0 {
            return false;
        }
        let mean = self.placed_fit_micro.load(Ordering::Relaxed) as f64 / 1e6 / n as f64;
        (mean as f32) < self.fit - DRIFT
    }

    /// The leaves ordered by their centroid's similarity to the unit query `q`, best first,
    /// the best `n` of them. The query is centred like the rows were when they were placed:
    /// ranked uncentred, every query leans towards the leaves that lie along the common
    /// component, whatever it is about (on 300k mails of 2,000 topics, 1,096 leaves, the leaf
    /// of a row query's exact neighbour came first for 28% of them uncentred, 38% centred).
    pub fn nearest_leaves(&self, q: &[f32], n: usize) -> Vec<u32> {
        let d = self.dims;
        let q = &centred(q, &self.mean);
        let mut scored: Vec<(f32, u32)> =
            self.leaves.chunks_exact(d).enumerate().map(|(i, c)| (dot(q, c), i as u32)).collect();
        let n = n.min(scored.len());
        if n == 0 {
            return Vec::new();
        }
        if n < scored.len() {
            scored.select_nth_unstable_by(n - 1, |a, b| b.0.total_cmp(&a.0));
            scored.truncate(n);
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().map(|(_, i)| i).collect()
    }

    /// The leaf for unit row `v` and the cosine of its centred direction to it (through the best
    /// groups).
    fn place(&self, v: &[f32]) -> (u32, f32) {
        let d = self.dims;
        let v = &centred(v, &self.mean);
        let mut groups: Vec<(f32, usize)> =
            self.groups.chunks_exact(d).enumerate().map(|(i, c)| (dot(v, c), i)).collect();
        let take = GROUP_PROBES.min(groups.len());
        if take < groups.len() {
            groups.select_nth_unstable_by(take - 1, |a, b| b.0.total_cmp(&a.0));
        }
        let mut best = (0u32, f32::NEG_INFINITY);
        for &(_, g) in &groups[..take] {
            for &leaf in &self.members[g] {
                let s = dot(v, &self.leaves[leaf as usize * d..(leaf as usize + 1) * d]);
                if s > best.1 {
                    best = (leaf, s);
                }
            }
        }
        best
    }
}

/// Which list each row position is in, and the lists: `lists[leaf]` and `pending` hold row
/// positions; `place[pos]` (its list, its slot there) says where, so moving or removing a row
/// is O(1).
pub(crate) struct Lists {
    pub lists: Vec<Vec<u32>>,
    pub pending: Vec<u32>,
    place: Slab<u32>,
}

impl Default for Lists {
    fn default() -> Self {
        Lists { lists: Vec::new(), pending: Vec::new(), place: Slab::new(2) }
    }
}

impl Lists {
    fn list_mut(&mut self, l: u32) -> &mut Vec<u32> {
        if l == PENDING { &mut self.pending } else { &mut self.lists[l as usize] }
    }

    pub fn list_of(&self, pos: usize) -> u32 {
        self.place.row(pos)[0]
    }

    fn slot(&self, pos: usize) -> usize {
        self.place.row(pos)[1] as usize
    }

    /// A new row at position `pos` (the end), pending.
    pub fn push(&mut self, pos: usize) {
        debug_assert_eq!(pos, self.place.len());
        self.place.push(&[PENDING, self.pending.len() as u32]);
        self.pending.push(pos as u32);
    }

    fn detach(&mut self, pos: usize) {
        let (l, s) = (self.list_of(pos), self.slot(pos));
        let list = self.list_mut(l);
        list.swap_remove(s);
        if let Some(&moved) = list.get(s) {
            self.place.row_mut(moved as usize)[1] = s as u32;
        }
    }

    fn attach(&mut self, pos: usize, l: u32) {
        let list = self.list_mut(l);
        let s = list.len() as u32;
        list.push(pos as u32);
        self.place.row_mut(pos).copy_from_slice(&[l, s]);
    }

    /// Files row `pos` under list `l`.
    pub fn move_to(&mut self, pos: usize, l: u32) {
        if self.list_of(pos) != l {
            self.detach(pos);
            self.attach(pos, l);
        }
    }

    /// Removes row `pos` when the row at `last` moves into its slot (as the matrix does).
    pub fn remove(&mut self, pos: usize, last: usize) {
        self.detach(pos);
        if pos != last {
            let (l, s) = (self.list_of(last), self.slot(last));
            self.list_mut(l)[s] = pos as u32;
            self.place.copy_row(last, pos);
        }
        self.place.pop();
    }

    /// `leaves` empty lists and every one of `rows` rows pending.
    pub fn reset(&mut self, leaves: usize, rows: usize) {
        self.lists = vec![Vec::new(); leaves];
        self.pending = (0..rows as u32).collect();
        self.place.clear();
        for pos in 0..rows as u32 {
            self.place.push(&[PENDING, pos]);
        }
    }
}

/// Wakes the worker: set by writers when there is work, by the owner to stop it.
#[derive(Default)]
pub(crate) struct Signal {
    state: Mutex<(bool, bool)>,
    cv: Condvar,
}

impl Signal {
    pub fn wake(&self) {
        lock(&self.state).0 = true;
        self.cv.notify_one();
    }

    fn stop(&self) {
        lock(&self.state).1 = true;
        self.cv.notify_one();
    }

    fn stopping(&self) -> bool {
        lock(&self.state).1
    }

    /// Waits for work; false when told to stop.
    fn wait(&self) -> bool {
        let mut s = lock(&self.state);
        while !s.0 && !s.1 {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.0 = false;
        !s.1
    }
}

/// The tier's worker thread; dropping it stops and joins the thread.
pub(crate) struct Worker {
    signal: Arc<Signal>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    pub fn spawn(index: &Arc<RwLock<VectorIndex>>, name: &str) -> Worker {
        let signal = read(index).signal();
        let weak = Arc::downgrade(index);
        let sig = signal.clone();
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                while sig.wait() {
                    if !run_jobs(&weak, &sig) {
                        break;
                    }
                }
                // Closing: write what was filed since the last write, so a reopen finds it.
                if let Some(index) = weak.upgrade() {
                    let unsaved = read(&index).ann_unsaved_rows();
                    if unsaved {
                        run_job(&index, Job::Persist, || false);
                    }
                }
            })
            .map_err(|e| tracing::warn!(error = %e, "could not start the vector index thread; searches stay exact"))
            .ok();
        signal.wake();
        Worker { signal, handle }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.signal.stop();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// One unit of work for the worker, decided under a read lock.
pub(crate) enum Job {
    /// Train on these unit rows (`sample.len() / dims` of them) for an index of `rows` rows.
    Train {
        sample: Vec<f32>,
        rows: usize,
    },
    /// Place these pending rows: `(position, rowid)` and their unit vectors.
    Place {
        ivf: Arc<Ivf>,
        rows: Vec<(u32, i64)>,
        vecs: Vec<f32>,
    },
    Calibrate {
        ivf: Arc<Ivf>,
    },
    Persist,
}

/// Runs jobs until there is none; false when stopping or the index is gone.
fn run_jobs(weak: &Weak<RwLock<VectorIndex>>, sig: &Signal) -> bool {
    loop {
        if sig.stopping() {
            return false;
        }
        let Some(index) = weak.upgrade() else { return false };
        let job = read(&index).next_job();
        let Some(job) = job else { return true };
        if !run_job(&index, job, || sig.stopping()) {
            return false;
        }
    }
}

/// Runs `job`; false when `stop` said to stop in the middle.
pub(crate) fn run_job(index: &RwLock<VectorIndex>, job: Job, stop: impl Fn() -> bool) -> bool {
    match job {
        Job::Train { sample, rows } => {
            let dims = read(index).dims();
            let started = std::time::Instant::now();
            let Some(ivf) = train(&sample, dims, leaves_for(rows), rows, &stop) else { return false };
            tracing::info!(
                rows,
                leaves = ivf.leaf_count(),
                secs = started.elapsed().as_secs_f64(),
                "vector index trained; placing rows"
            );
            write(index).install(Arc::new(ivf));
        }
        Job::Place { ivf, rows, vecs } => {
            let d = ivf.dims;
            let placed: Vec<(u32, i64, u32)> = rows
                .iter()
                .zip(vecs.chunks_exact(d))
                .map(|(&(pos, rowid), v)| {
                    let (leaf, fit) = ivf.place(v);
                    ivf.note_placed(fit);
                    (pos, rowid, leaf)
                })
                .collect();
            write(index).file(&ivf, &placed);
        }
        Job::Calibrate { ivf } => {
            let queries = read(index).calibration_queries(CALIBRATION_QUERIES);
            // For each exact hit, the rank of its leaf among the query's leaves: it is found
            // whenever the query scans more leaves than that.
            let mut ranks = Vec::new();
            for (skip, q) in &queries {
                if stop() {
                    return false;
                }
                let order = ivf.nearest_leaves(q, ivf.leaf_count());
                let mut rank_of = vec![0u32; order.len()];
                for (r, l) in order.iter().enumerate() {
                    rank_of[*l as usize] = r as u32;
                }
                let lists = read(index).exact_top_lists(q, 10, *skip);
                for leaf in lists {
                    ranks.push(if leaf == PENDING { 0 } else { rank_of[leaf as usize] });
                }
            }
            ranks.sort_unstable();
            let (probes, recall) = if ranks.is_empty() {
                (ivf.probes(), 1.0)
            } else {
                let need = ((ranks.len() as f64 * TARGET_RECALL).ceil() as usize).clamp(1, ranks.len());
                // Twice what the sample needs, and at least 8: rows of the index sit close to
                // their own centroid, so a query that is not a row needs more lists than they do.
                let probes = (2 * (ranks[need - 1] as usize + 1)).max(8).min(ivf.leaf_count().max(1));
                let found = ranks.iter().filter(|r| (**r as usize) < probes).count();
                (probes, found as f64 / ranks.len() as f64)
            };
            ivf.recall_ppm.store((recall * 1e6) as u32, Ordering::Relaxed);
            ivf.probes.store(probes, Ordering::Relaxed);
            tracing::info!(probes, leaves = ivf.leaf_count(), recall, "vector index calibrated");
            write(index).mark_unsaved();
        }
        Job::Persist => {
            let (dir, snapshot) = {
                let ix = read(index);
                (ix.ann_dir(), ix.ann_snapshot())
            };
            if let (Some(dir), Some(Snapshot { signature, ivf, rows })) = (dir, snapshot) {
                match save(&dir, &signature, &ivf, &rows) {
                    Ok(()) => write(index).mark_saved(rows.len()),
                    Err(e) => {
                        tracing::warn!(error = %e, "writing the vector index file failed; it is rebuilt on open");
                        write(index).mark_saved(rows.len());
                    }
                }
            } else {
                write(index).mark_saved(0);
            }
        }
    }
    true
}

/// What persisting writes: the embedder signature, the IVF and `(rowid, leaf)` of every filed row.
pub(crate) struct Snapshot {
    pub signature: String,
    pub ivf: Arc<Ivf>,
    pub rows: Vec<(i64, u32)>,
}

/// Small deterministic generator for sampling and seeding.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Spherical k-means of the unit rows of `data` into `k` unit centroids; `None` if stopped.
fn kmeans(data: &[f32], dims: usize, k: usize, rng: &mut Rng, stop: &impl Fn() -> bool) -> Option<Vec<f32>> {
    let n = data.len() / dims;
    let k = k.clamp(1, n.max(1));
    let row = |i: usize| &data[i * dims..(i + 1) * dims];
    // Seeds spread over the sample (it is drawn evenly from the index, so this is no bias).
    let mut cents: Vec<f32> = Vec::with_capacity(k * dims);
    let step = (n / k).max(1);
    for c in 0..k {
        cents.extend_from_slice(row((c * step + (rng.next() as usize % step)) % n.max(1)));
    }
    let mut assign = vec![0usize; n];
    for _ in 0..KMEANS_ITERS {
        if stop() {
            return None;
        }
        for (i, a) in assign.iter_mut().enumerate() {
            let v = row(i);
            let mut best = (0, f32::NEG_INFINITY);
            for (c, cent) in cents.chunks_exact(dims).enumerate() {
                let s = dot(v, cent);
                if s > best.1 {
                    best = (c, s);
                }
            }
            *a = best.0;
        }
        let mut sums = vec![0f32; k * dims];
        let mut counts = vec![0usize; k];
        for (i, &a) in assign.iter().enumerate() {
            counts[a] += 1;
            for (s, x) in sums[a * dims..(a + 1) * dims].iter_mut().zip(row(i)) {
                *s += x;
            }
        }
        for c in 0..k {
            let out = &mut cents[c * dims..(c + 1) * dims];
            if counts[c] == 0 {
                // An empty centroid restarts on a random row.
                out.copy_from_slice(row(rng.next() as usize % n));
            } else {
                out.copy_from_slice(&sums[c * dims..(c + 1) * dims]);
                normalize(out);
            }
        }
    }
    Some(cents)
}

/// Trains an IVF of about `leaves` leaves on the unit rows of `sample`.
pub(crate) fn train(raw: &[f32], dims: usize, leaves: usize, rows: usize, stop: &impl Fn() -> bool) -> Option<Ivf> {
    let n = raw.len() / dims.max(1);
    let mut mean = vec![0f32; dims];
    for v in raw.chunks_exact(dims) {
        for (m, x) in mean.iter_mut().zip(v) {
            *m += x;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n.max(1) as f32);
    // Every eighth row of a large enough sample is held out of the k-means: the fit that drift
    // is judged against is theirs, as rows the centroids were not fitted to (the sample's own
    // rows sit closer to centroids made from them, and every row placed later would look like
    // drift, retraining for ever).
    let held_out = |i: usize| n >= 64 && i % 8 == 7;
    let mut sample = Vec::with_capacity(raw.len());
    let mut held = Vec::new();
    for (i, v) in raw.chunks_exact(dims).enumerate() {
        if held_out(i) { held.extend_from_slice(v) } else { sample.extend(centred(v, &mean)) }
    }
    let n = sample.len() / dims.max(1);
    let sample = &sample[..];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let g = (leaves as f64).sqrt().ceil().max(1.0) as usize;
    let groups = kmeans(sample, dims, g, &mut rng, stop)?;
    let g = groups.len() / dims;
    let mut by_group: Vec<Vec<f32>> = vec![Vec::new(); g];
    for v in sample.chunks_exact(dims) {
        let best = groups
            .chunks_exact(dims)
            .enumerate()
            .map(|(i, c)| (dot(v, c), i))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(0, |b| b.1);
        by_group[best].extend_from_slice(v);
    }
    let mut all = Vec::with_capacity(leaves * dims);
    let mut members = Vec::with_capacity(g);
    for part in &by_group {
        let m = part.len() / dims;
        if m == 0 {
            members.push(Vec::new());
            continue;
        }
        let want = ((leaves as f64 * m as f64 / n as f64).round() as usize).clamp(1, m);
        let cents = kmeans(part, dims, want, &mut rng, stop)?;
        let first = (all.len() / dims) as u32;
        let count = (cents.len() / dims) as u32;
        all.extend_from_slice(&cents);
        members.push((first..first + count).collect());
    }
    let mut ivf = Ivf {
        dims,
        leaves: all,
        groups,
        members,
        trained_rows: rows,
        fit: 0.0,
        mean,
        probes: AtomicUsize::new(0),
        recall_ppm: AtomicU32::new(0),
        placed: AtomicU64::new(0),
        placed_fit_micro: AtomicU64::new(0),
    };
    let judged: &[f32] = if held.is_empty() { raw } else { &held };
    let (fit, m) = judged.chunks_exact(dims).fold((0f64, 0usize), |(f, m), v| (f + f64::from(ivf.place(v).1), m + 1));
    ivf.fit = (fit / m.max(1) as f64) as f32;
    Some(ivf)
}

/// `v − mean`, scaled to unit length.
fn centred(v: &[f32], mean: &[f32]) -> Vec<f32> {
    let mut u: Vec<f32> = v.iter().zip(mean).map(|(x, m)| x - m).collect();
    normalize(&mut u);
    u
}

/// When the worker should retrain `ivf` for an index of `rows` rows: grown [`GROWTH`] times,
/// or drifted once it has grown a quarter since (so that retraining always ends: a drift that
/// a new training cannot cure waits for more rows).
pub(crate) fn needs_retrain(ivf: &Ivf, rows: usize) -> bool {
    let trained = ivf.trained_rows;
    rows >= trained.saturating_mul(GROWTH) || (rows >= trained.saturating_add(trained / 4) && ivf.drifted())
}

/// Rows per batch the worker places.
pub(crate) const fn place_batch() -> usize {
    PLACE_BATCH
}

/// What `stats` shows of a tier's approximate index.
#[derive(Debug, Clone, Serialize)]
pub struct AnnStats {
    /// Leaves (lists) of the IVF.
    pub lists: usize,
    /// Leaves a query scans.
    pub probes: usize,
    /// Recall@10 against the exact scan measured at calibration (rows of the index as queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_at_10: Option<f64>,
    /// Rows in the index when it was trained.
    pub trained_rows: usize,
    /// Rows not yet placed in a list (scanned exactly meanwhile).
    pub pending: usize,
    /// Whether unrestricted searches scan the probed lists. False before any row is filed, and
    /// when those lists would hold more than an eighth of the rows: the sign pre-rank over
    /// every row reads less and answers instead, and `recall_at_10` is the lists' figure, not
    /// that of the answers.
    pub answers: bool,
    /// The index file holds this training and calibration.
    pub saved: bool,
}

pub(crate) fn stats(ivf: &Ivf, pending: usize, saved: bool, answers: bool) -> AnnStats {
    AnnStats {
        saved,
        answers,
        lists: ivf.leaf_count(),
        probes: ivf.probes(),
        recall_at_10: ivf.recall(),
        trained_rows: ivf.trained_rows,
        pending,
    }
}

fn put_u32(w: &mut impl Write, x: u32) -> std::io::Result<()> {
    w.write_all(&x.to_le_bytes())
}

fn put_f32s(w: &mut impl Write, xs: &[f32]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(xs.len() * 4);
    for x in xs {
        buf.extend_from_slice(&x.to_le_bytes());
    }
    w.write_all(&buf)
}

/// Writes the IVF and the leaf of each `(rowid, leaf)` to `dir/ann.bin` (temporary file,
/// fsync, rename).
fn save(dir: &Path, signature: &str, ivf: &Ivf, rows: &[(i64, u32)]) -> std::io::Result<()> {
    let tmp = dir.join("ann.bin.tmp");
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
    w.write_all(MAGIC)?;
    put_u32(&mut w, ANN_VERSION)?;
    put_u32(&mut w, signature.len() as u32)?;
    w.write_all(signature.as_bytes())?;
    put_u32(&mut w, ivf.dims as u32)?;
    w.write_all(&(ivf.trained_rows as u64).to_le_bytes())?;
    put_f32s(&mut w, &[ivf.fit])?;
    put_f32s(&mut w, &ivf.mean)?;
    put_u32(&mut w, ivf.probes.load(Ordering::Relaxed) as u32)?;
    put_u32(&mut w, ivf.recall_ppm.load(Ordering::Relaxed))?;
    put_u32(&mut w, ivf.members.len() as u32)?;
    put_f32s(&mut w, &ivf.groups)?;
    for m in &ivf.members {
        put_u32(&mut w, m.len() as u32)?;
        for l in m {
            put_u32(&mut w, *l)?;
        }
    }
    put_u32(&mut w, (ivf.leaves.len() / ivf.dims.max(1)) as u32)?;
    put_f32s(&mut w, &ivf.leaves)?;
    w.write_all(&(rows.len() as u64).to_le_bytes())?;
    let mut buf = Vec::with_capacity(12 * 4096);
    for part in rows.chunks(4096) {
        buf.clear();
        for (rowid, leaf) in part {
            buf.extend_from_slice(&rowid.to_le_bytes());
            buf.extend_from_slice(&leaf.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    w.flush()?;
    w.get_ref().sync_all()?;
    drop(w);
    fs::rename(&tmp, dir.join(FILE))
}

struct Reader<R>(R);

impl<R: Read> Reader<R> {
    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        self.0.read_exact(&mut b).ok()?;
        Some(b)
    }
    fn u32(&mut self) -> Option<u32> {
        self.bytes::<4>().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.bytes::<8>().map(u64::from_le_bytes)
    }
    fn f32s(&mut self, n: usize) -> Option<Vec<f32>> {
        let mut raw = vec![0u8; n.checked_mul(4)?];
        self.0.read_exact(&mut raw).ok()?;
        Some(raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }
}

/// Reads `dir/ann.bin` if it is of this version, embedder and width: the IVF and the leaf of
/// each row it covers as `(rowid, leaf)`. `None` (and the file removed) otherwise.
pub(crate) fn load(dir: &Path, signature: &str, dims: usize) -> Option<(Ivf, Vec<(i64, u32)>)> {
    let path = dir.join(FILE);
    let f = File::open(&path).ok()?;
    let mut r = Reader(BufReader::with_capacity(1 << 20, f));
    let parsed = (|| -> Option<(Ivf, Vec<(i64, u32)>)> {
        if &r.bytes::<8>()? != MAGIC || r.u32()? != ANN_VERSION {
            return None;
        }
        let sl = r.u32()? as usize;
        if sl != signature.len() {
            return None;
        }
        let mut sig = vec![0u8; sl];
        r.0.read_exact(&mut sig).ok()?;
        if sig != signature.as_bytes() || r.u32()? as usize != dims || dims == 0 {
            return None;
        }
        let trained_rows = r.u64()? as usize;
        let fit = r.f32s(1)?[0];
        let mean = r.f32s(dims)?;
        let probes = r.u32()? as usize;
        let recall_ppm = r.u32()?;
        let g = r.u32()? as usize;
        let groups = r.f32s(g.checked_mul(dims)?)?;
        let mut members = Vec::with_capacity(g.min(1 << 16));
        for _ in 0..g {
            let m = r.u32()? as usize;
            members.push((0..m).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?);
        }
        let leaves = r.u32()? as usize;
        let leaf_data = r.f32s(leaves.checked_mul(dims)?)?;
        if members.iter().flatten().any(|l| *l as usize >= leaves) {
            return None;
        }
        let count = r.u64()? as usize;
        let mut rows = Vec::with_capacity(count.min(1 << 26));
        for _ in 0..count {
            let b = r.bytes::<12>()?;
            let rowid = i64::from_le_bytes(b[..8].try_into().ok()?);
            let leaf = u32::from_le_bytes(b[8..].try_into().ok()?);
            if leaf as usize >= leaves {
                return None;
            }
            rows.push((rowid, leaf));
        }
        let ivf = Ivf {
            dims,
            leaves: leaf_data,
            groups,
            members,
            trained_rows,
            fit,
            mean,
            probes: AtomicUsize::new(probes),
            recall_ppm: AtomicU32::new(recall_ppm),
            placed: AtomicU64::new(0),
            placed_fit_micro: AtomicU64::new(0),
        };
        Some((ivf, rows))
    })();
    if parsed.is_none() {
        tracing::info!(dir = %dir.display(), "vector index file is of another version or damaged; it is rebuilt");
        let _ = fs::remove_file(&path);
    }
    parsed
}

/// The memory benchmark's synthetic corpus, for the diagnostic below.
#[cfg(test)]
#[allow(dead_code, reason = "the benchmark's file; the diagnostic uses only its sections")]
#[path = "../../../../tests/benches/memory/corpus.rs"]
mod bench_corpus;

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit vectors around `centres` random centres (as embeddings of related texts cluster).
    struct Gen {
        rng: Rng,
        dims: usize,
        centres: Vec<Vec<f32>>,
    }

    impl Gen {
        fn new(dims: usize, centres: usize) -> Gen {
            let mut g = Gen { rng: Rng(0x9e37_79b9_7f4a_7c15), dims, centres: Vec::new() };
            g.centres = (0..centres).map(|_| g.noise(1.0)).collect();
            g
        }
        fn uniform(&mut self) -> f32 {
            (self.rng.next() % 20_001) as f32 / 10_000.0 - 1.0
        }
        fn noise(&mut self, amp: f32) -> Vec<f32> {
            let mut v: Vec<f32> = (0..self.dims).map(|_| self.uniform() * amp).collect();
            normalize(&mut v);
            v
        }
        fn vector(&mut self) -> Vec<f32> {
            self.spread(0.6)
        }
        /// A row of a random centre, `noise` times a unit of noise away from it.
        fn spread(&mut self, noise: f32) -> Vec<f32> {
            let c = self.rng.next() as usize % self.centres.len();
            let n = self.noise(1.0);
            let mut v: Vec<f32> = self.centres[c].iter().zip(&n).map(|(a, b)| a + noise * b).collect();
            normalize(&mut v);
            v
        }
    }

    /// Rows past which the tests' indexes train an IVF (the real threshold is slow unoptimised).
    const MIN_ROWS: usize = 20_000;

    fn build(rows: usize, dims: usize) -> (RwLock<VectorIndex>, Gen) {
        let mut g = Gen::new(dims, 400);
        let mut ix = VectorIndex::new(dims);
        ix.set_ann_min_rows(MIN_ROWS);
        for r in 0..rows {
            ix.upsert_normalized(r as i64 + 1, &g.vector());
        }
        (RwLock::new(ix), g)
    }

    fn ids(hits: &[(i64, f32)]) -> Vec<i64> {
        hits.iter().map(|h| h.0).collect()
    }

    /// Recall@10 of the unrestricted (IVF) search against the restricted one, which scores
    /// every row it is given exactly.
    fn recall(ix: &VectorIndex, queries: &[Vec<f32>]) -> f64 {
        let all: Vec<i64> = ix.rowids().collect();
        let mut found = 0;
        for q in queries {
            let exact = ids(&ix.search(q, 10, Some(&all)));
            let got = ids(&ix.search(q, 10, None));
            found += got.iter().filter(|r| exact.contains(r)).count();
        }
        found as f64 / (queries.len() * 10) as f64
    }

    #[test]
    fn small_stores_stay_exact() {
        let (ix, mut g) = build(MIN_ROWS - 1, 32);
        VectorIndex::settle(&ix);
        let ix = ix.into_inner().unwrap();
        assert!(ix.ann_stats().is_none(), "no IVF below the threshold");
        let all: Vec<i64> = ix.rowids().collect();
        for _ in 0..20 {
            let q = g.vector();
            assert_eq!(ix.search(&q, 10, None), ix.search(&q, 10, Some(&all)));
        }
    }

    /// The acceptance figure: recall@10 against the exact scan on 200k vectors is at least
    /// 0.95, on queries that are not rows of the index; the calibrated figure says so too.
    #[test]
    fn recall_at_10_on_200k_vectors() {
        let (ix, mut g) = build(200_000, 32);
        VectorIndex::settle(&ix);
        let ix = ix.into_inner().unwrap();
        let stats = ix.ann_stats().expect("an IVF past the threshold");
        assert_eq!(stats.pending, 0);
        assert!(stats.recall_at_10.unwrap() >= 0.95, "{stats:?}");
        assert!(stats.probes < stats.lists / 2, "a search scans a minority of the lists: {stats:?}");
        let queries: Vec<Vec<f32>> = (0..100).map(|_| g.vector()).collect();
        let r = recall(&ix, &queries);
        assert!(r >= 0.95, "recall@10 {r} ({stats:?})");
        assert!(stats.answers, "clustered rows: the probed lists answer ({stats:?})");
        // Calibrated to probe most lists, the lists read more than the sign pre-rank over every
        // row, which answers instead; the stats say so, and searches stay as good.
        let ivf = ix.ivf.clone().expect("a trained IVF");
        ivf.probes.store(ivf.leaf_count() / 2, Ordering::Relaxed);
        let stats = ix.ann_stats().expect("an IVF past the threshold");
        assert!(!stats.answers, "{stats:?}");
        let r = recall(&ix, &queries);
        assert!(r >= 0.95, "recall@10 {r} through the pre-rank");
    }

    /// Vectors of one embedder share a large common component (random pairs of the built-in
    /// model's mail vectors have a cosine near 0.9). Rows are filed in the space centred on it
    /// and a query is ranked there too: a row of the index ranks the leaf it is filed under
    /// first, as it would without the common component (84% here: a row is filed through its
    /// best three groups, not every leaf). Ranked uncentred, the common component steers
    /// queries to the leaves that lean along it: 66% here.
    #[test]
    fn a_common_component_does_not_steer_queries() {
        let dims = 32;
        let mut g = Gen::new(dims, 300);
        let common: Vec<f32> = g.noise(1.0).into_iter().map(|x| 2.0 * x).collect();
        let row = |g: &mut Gen| {
            let mut v: Vec<f32> = g.spread(1.5).iter().zip(&common).map(|(a, b)| a + b).collect();
            normalize(&mut v);
            v
        };
        let rows = 40_000;
        let leaves = leaves_for(rows);
        let sample: Vec<f32> = (0..leaves * 32).flat_map(|_| row(&mut g)).collect();
        let ivf = train(&sample, dims, leaves, rows, &|| false).expect("trained");
        let queries = 500;
        let first = (0..queries)
            .filter(|_| {
                let v = row(&mut g);
                ivf.nearest_leaves(&v, 1) == [ivf.place(&v).0]
            })
            .count();
        assert!(first * 100 >= queries * 80, "{first} of {queries} rows rank their own leaf first");
    }

    /// Rows drawn like the training sample are not drift, even with more clusters than leaves
    /// (as a real store's topics outnumber its lists), and drift alone never retrains an index
    /// that has not grown: the worker once retrained a clustered store for ever.
    #[test]
    fn rows_like_the_sample_are_not_drift() {
        let (dims, rows) = (64, 40_000);
        let mut g = Gen::new(dims, 1_500);
        let leaves = leaves_for(rows);
        let sample: Vec<f32> = (0..leaves * 32).flat_map(|_| g.spread(1.5)).collect();
        let ivf = train(&sample, dims, leaves, rows, &|| false).expect("trained");
        for _ in 0..rows / 2 {
            ivf.note_placed(ivf.place(&g.spread(1.5)).1);
        }
        let placed = ivf.placed_fit_micro.load(Ordering::Relaxed) as f64 / 1e6 / (rows / 2) as f64;
        assert!(
            !ivf.drifted(),
            "rows of the sample's distribution fit as the held-out rows did ({placed} against {})",
            ivf.fit
        );
        assert!(!needs_retrain(&ivf, rows + rows / 2), "no drift, no retraining before 4× growth");
        // Rows that fit no leaf at all are drift, which retrains only once the index has grown
        // a quarter.
        let drifting = train(&sample, dims, leaves, rows, &|| false).expect("trained");
        for _ in 0..rows / 2 {
            drifting.note_placed(0.0);
        }
        assert!(drifting.drifted());
        assert!(!needs_retrain(&drifting, rows), "drift alone never retrains at the trained size");
        assert!(needs_retrain(&drifting, rows + rows / 4), "drift retrains after a quarter's growth");
    }

    /// Deleted rows never come back, changed rows are found under their new vector (pending
    /// until re-filed, then in their new list), and rows added after training are searchable
    /// before the worker files them.
    #[test]
    fn deletes_updates_and_new_rows() {
        let (ix, mut g) = build(MIN_ROWS + 10_000, 24);
        VectorIndex::settle(&ix);
        let probe = g.vector();
        {
            let mut w = write(&ix);
            for r in (1..=MIN_ROWS as i64).step_by(3) {
                w.remove(r);
            }
            // Row 2 becomes the probe itself; a new row 0 is its twin.
            w.upsert_normalized(2, &probe);
            w.upsert_normalized(-7, &probe);
        }
        let check = |ix: &VectorIndex| {
            let hits = ids(&ix.search(&probe, 10, None));
            assert!(hits.contains(&2) && hits.contains(&-7), "{hits:?}");
            assert!(hits.iter().all(|r| *r <= 0 || (r - 1) % 3 != 0 || *r > MIN_ROWS as i64), "{hits:?}");
        };
        check(&read(&ix));
        assert!(read(&ix).ann_stats().unwrap().pending >= 2);
        VectorIndex::settle(&ix);
        assert_eq!(read(&ix).ann_stats().unwrap().pending, 0);
        check(&read(&ix));
        let queries: Vec<Vec<f32>> = (0..50).map(|_| g.vector()).collect();
        assert!(recall(&read(&ix), &queries) >= 0.95);
    }

    /// The index persists beside the vectors; reopening files every row it covered, the rows
    /// written after it (as after a crash) are pending and found, and a file of another
    /// embedder is discarded.
    #[test]
    fn reopen_files_rows_and_catches_up() {
        let dir = tempfile::tempdir().unwrap();
        let (ix, mut g) = build(MIN_ROWS + 5_000, 16);
        write(&ix).attach_ann(dir.path(), "model-a");
        VectorIndex::settle(&ix);
        assert!(dir.path().join(FILE).is_file());
        // Rows written after the file (the worker had not persisted them before a crash).
        let late: Vec<Vec<f32>> = (0..100).map(|_| g.vector()).collect();
        let mut reopened = VectorIndex::new(16);
        reopened.set_ann_min_rows(MIN_ROWS);
        for (rowid, v) in read(&ix).rows() {
            let mut v = v;
            normalize(&mut v);
            reopened.upsert_normalized(rowid, &v);
        }
        for (i, v) in late.iter().enumerate() {
            reopened.upsert_normalized(1_000_000 + i as i64, v);
        }
        reopened.attach_ann(dir.path(), "model-a");
        let stats = reopened.ann_stats().expect("the IVF is read back");
        assert_eq!(stats.pending, 100, "only the late rows wait: {stats:?}");
        assert!(stats.recall_at_10.is_some(), "calibration is kept");
        for (i, v) in late.iter().enumerate() {
            assert_eq!(reopened.search(v, 1, None)[0].0, 1_000_000 + i as i64);
        }
        let reopened = RwLock::new(reopened);
        VectorIndex::settle(&reopened);
        assert_eq!(read(&reopened).ann_stats().unwrap().pending, 0);
        for (i, v) in late.iter().enumerate() {
            assert_eq!(read(&reopened).search(v, 1, None)[0].0, 1_000_000 + i as i64);
        }
        let mut other = VectorIndex::new(16);
        for (rowid, v) in read(&ix).rows().take(10) {
            other.upsert_normalized(rowid, &v);
        }
        other.attach_ann(dir.path(), "model-b");
        assert!(other.ann_stats().is_none());
        assert!(!dir.path().join(FILE).exists(), "a foreign file is removed");
    }

    /// Moving and removing rows keeps every row in exactly one list, at the slot it records.
    #[test]
    fn lists_stay_consistent() {
        let mut l = Lists::default();
        for p in 0..10 {
            l.push(p);
        }
        l.reset(3, 10);
        for p in 0..10 {
            l.move_to(p, (p % 3) as u32);
        }
        l.move_to(4, PENDING);
        l.remove(2, 9);
        l.remove(0, 8);
        let rows = l.place.len();
        assert_eq!(rows, 8);
        let mut seen = vec![0; rows];
        for (li, list) in l.lists.iter().enumerate().map(|(i, x)| (i as u32, x)).chain([(PENDING, &l.pending)]) {
            for (s, &p) in list.iter().enumerate() {
                seen[p as usize] += 1;
                assert_eq!((l.list_of(p as usize), l.slot(p as usize)), (li, s));
            }
        }
        assert!(seen.iter().all(|c| *c == 1), "{seen:?}");
    }

    /// How many leaves a query must scan to find its exact top 10, on the memory benchmark's
    /// mails about topics (`MEMORY_BENCH_TOPICS`, 2,000 in its large runs), embedded by the
    /// built-in model: the share of the exact top 10 in the best `p` leaves, for rows of the
    /// index as queries (what the calibration uses) and for the benchmark's recall questions
    /// (two topic words and a rare word). Prints the table BENCHMARKS.md quotes:
    ///
    /// ```text
    /// MEMORY_BENCH_TOPICS=2000 IVF_DIAGNOSTIC_ROWS=300000 cargo test --profile fast \
    ///   -p openhuman-memory --lib -- --ignored leaves_a_query_needs --nocapture
    /// ```
    #[test]
    #[ignore = "a diagnostic: prints recall by leaves scanned on the benchmark's corpus"]
    #[allow(clippy::print_stdout, reason = "the diagnostic's table is its output")]
    fn leaves_a_query_needs() {
        use super::bench_corpus as corpus;
        let n: usize = std::env::var("IVF_DIAGNOSTIC_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(300_000);
        let model = crate::embed::StaticModel::builtin().expect("built-in model");
        let vocab = corpus::Vocabulary::new();
        let mut sections = corpus::Sections::new(&vocab);
        let (mut heading, mut body) = (String::new(), String::new());
        let mut ix = VectorIndex::new(model.embed_one("dims").len());
        for r in 0..n {
            sections.next_section(&mut heading, &mut body);
            let mut v = model.embed_one(&crate::embed::embed_text(Some(&heading), &body));
            normalize(&mut v);
            ix.upsert_normalized(r as i64 + 1, &v);
        }
        ix.set_ann_min_rows(n.min(100_000));
        let index = RwLock::new(ix);
        VectorIndex::settle(&index);
        let ix = index.into_inner().expect("index");
        let ivf = ix.ivf.clone().expect("an IVF");
        let leaves = ivf.leaf_count();
        println!("{n} rows, {leaves} leaves, calibrated probes {} (recall {:?})", ivf.probes(), ivf.recall());
        let rows: Vec<(Vec<f32>, Option<usize>)> =
            (0..100).map(|k| k * (n / 100) + 7).map(|i| (ix.unit_row(i), Some(i))).collect();
        let questions: Vec<(Vec<f32>, Option<usize>)> = (0..200)
            .map(|i| {
                let topic = &vocab.topics[(i * 7919) % vocab.topics.len().max(1)];
                let text = format!(
                    "{} {} {}",
                    vocab.words[topic[i % topic.len()]],
                    vocab.words[topic[(i + 1) % topic.len()]],
                    vocab.words[20_000 + i * 37]
                );
                let mut v = model.embed_one(&text);
                normalize(&mut v);
                (v, None)
            })
            .collect();
        let scans = [1, 2, 4, 8, 16, 32, 64, 128, 256, leaves / 8, leaves / 4];
        println!("| queries | {} |", scans.map(|p| format!("{p} leaves")).join(" | "));
        for (name, queries) in [("rows of the index", &rows), ("recall questions", &questions)] {
            let mut ranks = Vec::new();
            for (q, skip) in queries.iter() {
                let mut rank_of = vec![0usize; leaves];
                for (r, l) in ivf.nearest_leaves(q, leaves).iter().enumerate() {
                    rank_of[*l as usize] = r;
                }
                let mut qi = vec![0i8; q.len()];
                let scale = super::super::quantize(q, &mut qi);
                let mut hits = ix.exact(&super::super::Quantised { row: qi, scale }, 11, 0..n);
                hits.retain(|h| Some(h.0) != *skip);
                hits.sort_by(|a, b| b.1.total_cmp(&a.1));
                ranks.extend(hits.iter().take(10).map(|h| rank_of[ix.lists.list_of(h.0) as usize]));
            }
            let share = |p: usize| ranks.iter().filter(|r| **r < p).count() as f64 / ranks.len().max(1) as f64;
            println!("| {name} | {} |", scans.map(|p| format!("{:.3}", share(p))).join(" | "));
        }
    }
}
