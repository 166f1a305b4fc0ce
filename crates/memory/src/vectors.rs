//! The in-memory vector index: one contiguous row-major int8 matrix (one f32 scale per row) of
//! unit-length embeddings keyed by chunk rowid, searched by an exact scan (cosine = dot product
//! of normalised vectors), split across threads when the matrix is large. The scan is bound by
//! memory bandwidth, so int8 rows (a quarter of f32's bytes) make it faster and the index
//! smaller (256 MB instead of 1 GB at 1M 256-d rows); the rounding moves cosines by about 0.005.
//! ANN graphs were measured to take 7–115 s to build per 20–100k vectors, which ingest cannot
//! afford. Disk keeps f32 (`vecfile`).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

pub(crate) struct VectorIndex {
    dims: usize,
    /// `len * dims` quantised components.
    data: Vec<i8>,
    /// One scale per row: component = data * scale.
    scales: Vec<f32>,
    rowids: Vec<i64>,
    pos: HashMap<i64, usize>,
}

/// Dot product with eight independent accumulators: the compiler turns this into SIMD
/// code, ~4x faster than a plain iterator sum (which is one serial dependency chain).
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]);
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        s += x * y;
    }
    s
}

/// Integer dot product of two int8 rows; i16 products summed in i32 lanes vectorise well even
/// on baseline x86-64 (SSE2 `pmaddwd`), unlike int8→f32 conversions.
#[inline]
fn dot_i8i8(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0i32; 16];
    let mut ca = a.chunks_exact(16);
    let mut cb = b.chunks_exact(16);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    let mut s: i32 = acc.iter().sum();
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        s += i32::from(*x) * i32::from(*y);
    }
    s
}

/// Symmetric int8 quantisation with one scale for the row.
fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.iter_mut().for_each(|q| *q = 0);
        return 0.0;
    }
    let scale = max / 127.0;
    for (q, x) in out.iter_mut().zip(v) {
        *q = (x / scale).round().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// Scales `v` to unit length (a zero vector stays zero and never matches).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in v.iter_mut() {
            *x /= norm;
        }
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// Min-heap entry: the smallest score of the current top-k sits on top.
#[derive(PartialEq)]
struct Entry(f32, usize);

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then_with(|| self.1.cmp(&other.1))
    }
}

impl VectorIndex {
    pub fn new(dims: usize) -> Self {
        VectorIndex { dims, data: Vec::new(), scales: Vec::new(), rowids: Vec::new(), pos: HashMap::new() }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.rowids.len()
    }

    pub fn contains(&self, rowid: i64) -> bool {
        self.pos.contains_key(&rowid)
    }

    /// Inserts a vector that is already unit length (as read back from disk).
    pub fn upsert_normalized(&mut self, rowid: i64, v: &[f32]) {
        let d = self.dims;
        let i = match self.pos.get(&rowid) {
            Some(&i) => i,
            None => {
                let i = self.rowids.len();
                self.pos.insert(rowid, i);
                self.rowids.push(rowid);
                self.data.resize((i + 1) * d, 0);
                self.scales.push(0.0);
                i
            }
        };
        let n = v.len().min(d);
        self.scales[i] = quantize(&v[..n], &mut self.data[i * d..i * d + n]);
    }

    /// Removes `rowid`; the last row moves into its slot so the matrix stays dense.
    pub fn remove(&mut self, rowid: i64) -> bool {
        let Some(i) = self.pos.remove(&rowid) else {
            return false;
        };
        let last = self.rowids.len() - 1;
        if i != last {
            let moved = self.rowids[last];
            self.rowids[i] = moved;
            self.pos.insert(moved, i);
            self.data.copy_within(last * self.dims..(last + 1) * self.dims, i * self.dims);
            self.scales[i] = self.scales[last];
        }
        self.rowids.pop();
        self.scales.pop();
        self.data.truncate(last * self.dims);
        true
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.scales.clear();
        self.rowids.clear();
        self.pos.clear();
    }

    /// Rows as `(rowid, unit vector)` (dequantised), for persistence.
    pub fn rows(&self) -> impl Iterator<Item = (i64, Vec<f32>)> + '_ {
        self.rowids
            .iter()
            .copied()
            .zip(self.data.chunks_exact(self.dims.max(1)).zip(&self.scales))
            .map(|(r, (q, s))| (r, q.iter().map(|x| f32::from(*x) * s).collect()))
    }

    /// The rowids held, in storage order.
    pub fn rowids(&self) -> impl Iterator<Item = i64> + '_ {
        self.rowids.iter().copied()
    }

    /// The `limit` most similar rows to `query` as `(rowid, cosine)`, best first;
    /// only among `restrict` when given. A large unrestricted scan is split across up to
    /// `SCAN_THREADS` threads: it is bound by memory bandwidth and one core does not
    /// saturate it, and queries are rare next to their cost (~1 GB read at 1M rows).
    pub fn search(&self, query: &[f32], limit: usize, restrict: Option<&[i64]>) -> Vec<(i64, f32)> {
        if limit == 0 || self.dims == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let mut q = query.to_vec();
        normalize(&mut q);
        let best = match restrict {
            Some(rows) => self.top(&q, limit, rows.iter().filter_map(|r| self.pos.get(r).copied())),
            None => {
                let n = self.rowids.len();
                let threads = scan_threads(n);
                if threads <= 1 {
                    self.top(&q, limit, 0..n)
                } else {
                    let per = n.div_ceil(threads);
                    std::thread::scope(|s| {
                        let parts: Vec<_> = (0..threads)
                            .map(|t| {
                                let q = &q;
                                s.spawn(move || self.top(q, limit, t * per..((t + 1) * per).min(n)))
                            })
                            .collect();
                        // A part whose thread failed to run is scanned here instead.
                        let mut all = Vec::with_capacity(threads * limit);
                        for (t, h) in parts.into_iter().enumerate() {
                            match h.join() {
                                Ok(part) => all.extend(part),
                                Err(_) => all.extend(self.top(&q, limit, t * per..((t + 1) * per).min(n))),
                            }
                        }
                        all
                    })
                }
            }
        };
        let mut out: Vec<(i64, f32)> = best.into_iter().map(|(i, s)| (self.rowids[i], s)).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(limit);
        out
    }

    /// The best `limit` of the row positions `rows` as `(position, cosine)`, unordered.
    fn top(&self, q: &[f32], limit: usize, rows: impl Iterator<Item = usize>) -> Vec<(usize, f32)> {
        let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(limit + 1);
        // The query is quantised too, so the scan is integer arithmetic throughout.
        let mut qi = vec![0i8; q.len()];
        let q_scale = quantize(q, &mut qi);
        for i in rows {
            let s = dot_i8i8(&qi, &self.data[i * self.dims..(i + 1) * self.dims]) as f32 * q_scale * self.scales[i];
            if heap.len() < limit {
                heap.push(Entry(s, i));
            } else if heap.peek().is_some_and(|m| s > m.0) {
                heap.pop();
                heap.push(Entry(s, i));
            }
        }
        heap.into_iter().map(|Entry(s, i)| (i, s)).collect()
    }
}

/// Rows per scan thread below which another thread costs more than it saves.
const ROWS_PER_THREAD: usize = 64 * 1024;
const SCAN_THREADS: usize = 4;

fn scan_threads(rows: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (rows / ROWS_PER_THREAD).clamp(1, cores.min(SCAN_THREADS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive_for_all_tail_lengths() {
        for n in 0..40 {
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
            let b: Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32).collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-3, "n={n}");
        }
    }

    /// int8 rows keep the exact f32 ranking's top hits and cosines within rounding error.
    #[test]
    fn quantised_scan_agrees_with_f32() {
        let dims = 256;
        let mut x = 0x9e37_79b9_u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 20001) as f32 / 10000.0 - 1.0
        };
        let rows: Vec<Vec<f32>> = (0..2000)
            .map(|_| {
                let mut v: Vec<f32> = (0..dims).map(|_| rnd()).collect();
                normalize(&mut v);
                v
            })
            .collect();
        let mut ix = VectorIndex::new(dims);
        for (i, v) in rows.iter().enumerate() {
            ix.upsert_normalized(i as i64, v);
        }
        for _ in 0..20 {
            let mut q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
            normalize(&mut q);
            let mut exact: Vec<(i64, f32)> = rows.iter().enumerate().map(|(i, v)| (i as i64, dot(&q, v))).collect();
            exact.sort_by(|a, b| b.1.total_cmp(&a.1));
            let got = ix.search(&q, 10, None);
            assert_eq!(got[0].0, exact[0].0, "the best hit survives quantisation");
            let top: Vec<i64> = exact[..20].iter().map(|e| e.0).collect();
            assert!(got.iter().all(|g| top.contains(&g.0)), "hits come from the exact top 20");
            for g in &got {
                let e = exact.iter().find(|e| e.0 == g.0).unwrap().1;
                assert!((g.1 - e).abs() < 0.01, "cosine {} vs {e}", g.1);
            }
        }
        // Dequantised rows (what goes to disk) stay unit length within rounding.
        for (_, v) in ix.rows().take(50) {
            assert!((dot(&v, &v).sqrt() - 1.0).abs() < 0.01);
        }
    }

    #[test]
    fn search_remove_and_restrict() {
        struct Ix(VectorIndex);
        impl Ix {
            fn upsert(&mut self, rowid: i64, v: &[f32]) {
                let mut v = v.to_vec();
                normalize(&mut v);
                self.0.upsert_normalized(rowid, &v);
            }
            fn remove(&mut self, rowid: i64) -> bool {
                self.0.remove(rowid)
            }
            fn search(&self, q: &[f32], limit: usize, restrict: Option<&[i64]>) -> Vec<(i64, f32)> {
                self.0.search(q, limit, restrict)
            }
        }
        let mut ix = Ix(VectorIndex::new(3));
        ix.upsert(1, &[1.0, 0.0, 0.0]);
        ix.upsert(2, &[0.0, 1.0, 0.0]);
        ix.upsert(3, &[0.7, 0.7, 0.0]);
        let hits = ix.search(&[1.0, 0.1, 0.0], 2, None);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 3]);
        assert!(ix.remove(1));
        assert!(!ix.remove(1));
        assert_eq!(ix.search(&[1.0, 0.0, 0.0], 5, None)[0].0, 3);
        assert_eq!(ix.search(&[1.0, 0.0, 0.0], 5, Some(&[2])).len(), 1);
        ix.upsert(2, &[1.0, 0.0, 0.0]);
        assert_eq!(ix.search(&[1.0, 0.0, 0.0], 1, None)[0].0, 2);
        assert_eq!(ix.0.len(), 2);
    }

    #[test]
    fn split_scan_matches_a_single_pass() {
        let dims = 16;
        let mut ix = VectorIndex::new(dims);
        let mut x = 0x2545_f491_u64;
        let rows = ROWS_PER_THREAD * 2 + 7;
        for r in 0..rows {
            let mut v: Vec<f32> = (0..dims)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 2001) as f32 / 1000.0 - 1.0
                })
                .collect();
            normalize(&mut v);
            ix.upsert_normalized(r as i64 * 3, &v);
        }
        let q: Vec<f32> = (0..dims).map(|i| (i as f32 - 7.5) / 8.0).collect();
        let mut qn = q.clone();
        normalize(&mut qn);
        let single: Vec<(i64, f32)> = {
            let mut v: Vec<(i64, f32)> = ix.top(&qn, 10, 0..rows).into_iter().map(|(i, s)| (ix.rowids[i], s)).collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            v
        };
        assert_eq!(ix.search(&q, 10, None), single);
    }
}
