//! The in-memory vector index: a row-major int8 matrix (one f32 scale per row) of unit-length
//! embeddings keyed by chunk rowid, held like the other per-row arrays in blocks of 65,536
//! rows that are never copied as it grows (`slab`), searched by an exact scan (cosine = dot product
//! of normalised vectors), split across threads when the matrix is large. The scan is bound by
//! memory bandwidth, so int8 rows (a quarter of f32's bytes) make it faster and the index
//! smaller (256 MB instead of 1 GB at 1M 256-d rows); the rounding moves cosines by about 0.005.
//! ANN graphs were measured to take 7–115 s to build per 20–100k vectors, which ingest cannot
//! afford. Disk keeps the same int8 rows and scales (`vecfile`).
//!
//! Past [`PREFILTER_MIN_ROWS`] rows a full int8 pass is bound by memory bandwidth (256 MB per
//! query at 1M rows, ~24 ms here), so the scan runs in two stages: each row also keeps its
//! sign bits (one bit a component, an eighth of the int8 row), the query is scored against
//! those bits exactly (Σ ±q, through per-byte lookup tables), and only the best
//! [`candidates`] rows (1/128 of them at 1M, a fixed number past 2M rows a thread) are scored
//! on their int8 rows. On the SciFact development claims (28,581 chunks,
//! `examples/sign_prefilter.rs`), re-scoring the best 1/128 by sign keeps 98% of the exact
//! top 10; below the threshold every row is scored exactly.
//! The table lookups cost ~8 ns a row, so at embedding widths a cheaper pass comes first: the
//! Hamming distance between the signs of the row's first 128 components and the query's lets
//! through only the nearest 1/16 of the rows. Those signs are kept in an array of their own
//! (16 bytes a row), so the pass streams half of every code: at millions of rows it is bound
//! by memory bandwidth, and the rest of a kept row's code is fetched ahead of its score. The
//! signs are taken against the mean of the first [`PREFILTER_MIN_ROWS`] rows, and the query's
//! part along that mean is left out: embeddings share a common direction, which would otherwise
//! set the same bits in most rows. On SciFact the passes keep 97% of the exact top 10 (98% when
//! the Hamming pass read whole codes and kept 1/8, which took a quarter longer at 10M rows).
//!
//! Past [`ANN_MIN_ROWS`] rows the tier's worker thread (`ann`) groups the rows into the lists
//! of an inverted file; an unrestricted search then scans only the lists nearest the query
//! plus the rows not yet filed, which keeps a search at 10M rows to a few hundred thousand
//! int8 rows. A restricted search (filters) always scores its rows exactly.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) mod ann;
mod slab;

use ann::{ANN_MIN_ROWS, AnnStats, Ivf, Job, Lists, PENDING, Signal};
use slab::Slab;

pub(crate) struct VectorIndex {
    dims: usize,
    /// Each row's `dims` quantised components (all per-row arrays are [`Slab`]s: blocks that
    /// are never copied as the index grows).
    data: Slab<i8>,
    /// One scale per row: component = data * scale.
    scales: Slab<f32>,
    /// The first [`head_bytes`] of each row's sign code (bit `k` of byte `j` is set when
    /// component `8j + k`, less the centre's, is not negative), `len * head_bytes(dims)`: the
    /// part the Hamming pass reads, contiguous within a block so that it streams.
    heads: Slab<u8>,
    /// The rest of each row's sign code, [`tail_bytes`] a row.
    tails: Slab<u8>,
    /// What the sign codes are taken against: the mean of the first [`PREFILTER_MIN_ROWS`]
    /// rows once the index holds that many (before, zero). Embeddings share a common
    /// direction, and signs against it say little about how rows differ.
    centre: Option<Vec<f32>>,
    rowids: Slab<i64>,
    pos: RowMap,
    /// Which IVF list each row is in (all pending until an IVF is trained).
    lists: Lists,
    ivf: Option<Arc<Ivf>>,
    /// Wakes the tier's `ann` worker.
    signal: Arc<Signal>,
    /// Where the IVF persists (the tier's directory) and the embedder it is for.
    ann_dir: Option<(PathBuf, String)>,
    /// The IVF changed since it was written (trained, calibrated).
    ann_unsaved: bool,
    /// Rows filed since the IVF was last written, and how many that write held.
    filed_since_save: usize,
    saved_rows: usize,
    /// [`ANN_MIN_ROWS`], smaller in tests.
    ann_min_rows: usize,
}

/// Row positions by rowid. Chunk rowids are SQLite's, dense from 1, so a position is kept in a
/// slab indexed by rowid: 4 bytes a rowid, where a hash map took ~30 bytes a row (~300 MB at
/// 10M rows) and twice that while it grew. A rowid far past the dense range, or a negative
/// one, is kept in a map instead.
struct RowMap {
    dense: Slab<u32>,
    sparse: HashMap<i64, u32>,
    len: usize,
}

impl Default for RowMap {
    fn default() -> Self {
        RowMap { dense: Slab::new(1), sparse: HashMap::new(), len: 0 }
    }
}

/// An empty slot of [`RowMap::dense`].
const NO_ROW: u32 = u32::MAX;

impl RowMap {
    fn get(&self, rowid: i64) -> Option<usize> {
        let slot = usize::try_from(rowid).ok().filter(|r| *r < self.dense.len()).map_or(NO_ROW, |r| self.dense.at(r));
        if slot != NO_ROW {
            return Some(slot as usize);
        }
        if self.sparse.is_empty() { None } else { self.sparse.get(&rowid).map(|p| *p as usize) }
    }

    /// Sets `rowid`'s position (it holds none, or moves).
    fn insert(&mut self, rowid: i64, pos: usize) {
        let pos = u32::try_from(pos).expect("fewer than 2^32 vectors in one index");
        let r = usize::try_from(rowid).ok();
        let dense_reach = 2 * (self.len + 64 * 1024);
        match r {
            Some(r) if r < self.dense.len() || r < dense_reach => {
                while r >= self.dense.len() {
                    self.dense.push(&[NO_ROW]);
                }
                if self.dense.at(r) == NO_ROW && self.sparse.remove(&rowid).is_none() {
                    self.len += 1;
                }
                self.dense.row_mut(r)[0] = pos;
            }
            _ => {
                if self.sparse.insert(rowid, pos).is_none() {
                    self.len += 1;
                }
            }
        }
    }

    fn remove(&mut self, rowid: i64) -> Option<usize> {
        let dense = usize::try_from(rowid).ok().filter(|r| *r < self.dense.len() && self.dense.at(*r) != NO_ROW);
        let pos = match dense {
            Some(r) => Some(std::mem::replace(&mut self.dense.row_mut(r)[0], NO_ROW)),
            None => self.sparse.remove(&rowid),
        }?;
        self.len -= 1;
        Some(pos as usize)
    }

    fn clear(&mut self) {
        *self = RowMap::default();
    }
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

/// [`dot_i8i8`] on AVX-512: thirty-two components widened to 16 bits, multiplied and summed in
/// pairs into 32-bit lanes per instruction (eight rounds at 256 dimensions where the baseline
/// target's SSE2 takes thirty-two).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[allow(unsafe_code, reason = "unaligned 32-byte loads from slices known to hold them")]
fn dot_i8i8_avx512(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm512_add_epi32, _mm512_cvtepi8_epi16, _mm512_madd_epi16,
        _mm512_reduce_add_epi32, _mm512_setzero_si512,
    };
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = _mm512_setzero_si512();
    let mut ca = a.chunks_exact(32);
    let mut cb = b.chunks_exact(32);
    for (x, y) in (&mut ca).zip(&mut cb) {
        // SAFETY: `x` and `y` are 32 bytes each; the loads have no alignment requirement.
        let (x, y) = unsafe {
            (_mm256_loadu_si256(x.as_ptr().cast::<__m256i>()), _mm256_loadu_si256(y.as_ptr().cast::<__m256i>()))
        };
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_cvtepi8_epi16(x), _mm512_cvtepi8_epi16(y)));
    }
    let mut s = _mm512_reduce_add_epi32(acc);
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        s += i32::from(*x) * i32::from(*y);
    }
    s
}

/// The int8 dot product for this CPU, chosen once: [`dot_i8i8_avx512`] where the CPU has
/// AVX-512BW, else [`dot_i8i8`]. Every int8 scan (exact, gathered, background) calls it.
#[allow(unsafe_code, reason = "selects a function compiled for AVX-512 once the CPU is known to have it")]
fn int8_dot() -> fn(&[i8], &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx512_bw() {
        // SAFETY: `dot_i8i8_avx512` requires `avx512f` and `avx512bw`, which `has_avx512_bw`
        // detected on this CPU.
        return |a, b| unsafe { dot_i8i8_avx512(a, b) };
    }
    dot_i8i8
}

/// Symmetric int8 quantisation with one scale for the row.
pub(crate) fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
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

impl VectorIndex {
    pub fn new(dims: usize) -> Self {
        VectorIndex {
            dims,
            data: Slab::new(dims),
            scales: Slab::new(1),
            heads: Slab::new(head_bytes(dims)),
            tails: Slab::new(tail_bytes(dims)),
            centre: None,
            rowids: Slab::new(1),
            pos: RowMap::default(),
            lists: Lists::default(),
            ivf: None,
            signal: Arc::new(Signal::default()),
            ann_dir: None,
            ann_unsaved: false,
            filed_since_save: 0,
            saved_rows: 0,
            ann_min_rows: ANN_MIN_ROWS,
        }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.rowids.len()
    }

    pub fn contains(&self, rowid: i64) -> bool {
        self.pos.get(rowid).is_some()
    }

    /// Inserts a vector that is already unit length.
    pub fn upsert_normalized(&mut self, rowid: i64, v: &[f32]) {
        let mut row = vec![0i8; self.dims];
        let n = v.len().min(self.dims);
        let scale = quantize(&v[..n], &mut row[..n]);
        self.upsert_quantised(rowid, scale, &row);
    }

    /// Inserts a row as [`quantize`] left it (as read back from disk): `row * scale` is the unit
    /// vector.
    pub fn upsert_quantised(&mut self, rowid: i64, scale: f32, row: &[i8]) {
        let d = self.dims;
        let i = match self.pos.get(rowid) {
            None => {
                let i = self.rowids.len();
                self.pos.insert(rowid, i);
                self.rowids.push(&[rowid]);
                self.data.push(&vec![0; d]);
                self.heads.push(&[0; HEAD_BYTES][..head_bytes(d)]);
                self.tails.push(&vec![0; tail_bytes(d)]);
                self.scales.push(&[0.0]);
                self.lists.push(i);
                i
            }
            // A changed vector may belong to another list.
            Some(i) => {
                self.lists.move_to(i, PENDING);
                i
            }
        };
        if self.ivf.is_some() || self.rowids.len() >= self.ann_min_rows {
            self.signal.wake();
        }
        let n = row.len().min(d);
        let held = self.data.row_mut(i);
        held[..n].copy_from_slice(&row[..n]);
        held[n..].iter_mut().for_each(|x| *x = 0);
        self.scales.row_mut(i)[0] = scale;
        if self.centre.is_none() && self.rowids.len() >= PREFILTER_MIN_ROWS {
            self.take_centre();
        } else {
            self.code_row(i);
        }
    }

    /// Writes row `i`'s sign code from its int8 row and the centre.
    fn code_row(&mut self, i: usize) {
        let d = self.dims;
        let (hb, tb) = (head_bytes(d), tail_bytes(d));
        let mut code = vec![0u8; hb + tb];
        let row = self.data.row(i);
        match &self.centre {
            Some(c) => {
                let scale = self.scales.at(i);
                pack_signs(row.iter().zip(c).map(|(x, m)| f32::from(*x) * scale >= *m), &mut code);
            }
            None => pack_signs(row.iter().map(|x| *x >= 0), &mut code),
        }
        self.heads.row_mut(i).copy_from_slice(&code[..hb]);
        self.tails.row_mut(i).copy_from_slice(&code[hb..]);
    }

    /// Sets the centre to the mean of the rows held and writes every row's code against it.
    fn take_centre(&mut self) {
        let d = self.dims;
        let mut mean = vec![0f64; d];
        for (i, row) in self.data.rows().enumerate() {
            let s = self.scales.at(i);
            mean.iter_mut().zip(row).for_each(|(m, x)| *m += f64::from(*x) * f64::from(s));
        }
        let n = self.rowids.len().max(1) as f64;
        self.centre = Some(mean.iter().map(|m| (m / n) as f32).collect());
        for i in 0..self.rowids.len() {
            self.code_row(i);
        }
    }

    /// The query the sign passes rank for: `q` without its part along the centre, which adds
    /// the same amount to every row's score and would only set bits that say nothing.
    fn sign_query(&self, q: &[f32]) -> Vec<f32> {
        match &self.centre {
            Some(c) => {
                let cc = dot(c, c);
                let a = if cc > 0.0 { dot(q, c) / cc } else { 0.0 };
                q.iter().zip(c).map(|(x, m)| x - a * m).collect()
            }
            None => q.to_vec(),
        }
    }

    /// Removes `rowid`; the last row moves into its slot so the matrix stays dense.
    pub fn remove(&mut self, rowid: i64) -> bool {
        let Some(i) = self.pos.remove(rowid) else {
            return false;
        };
        let last = self.rowids.len() - 1;
        self.lists.remove(i, last);
        if i != last {
            let moved = self.rowids.at(last);
            self.pos.insert(moved, i);
            self.rowids.copy_row(last, i);
            self.data.copy_row(last, i);
            self.heads.copy_row(last, i);
            self.tails.copy_row(last, i);
            self.scales.copy_row(last, i);
        }
        self.rowids.pop();
        self.scales.pop();
        self.data.pop();
        self.heads.pop();
        self.tails.pop();
        true
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.scales.clear();
        self.heads.clear();
        self.tails.clear();
        self.centre = None;
        self.rowids.clear();
        self.pos.clear();
        self.lists = Lists::default();
        self.ivf = None;
    }

    /// Rows as `(rowid, unit vector)` (dequantised).
    #[cfg(test)]
    pub fn rows(&self) -> impl Iterator<Item = (i64, Vec<f32>)> + '_ {
        self.quantised_rows().map(|(r, s, q)| (r, q.iter().map(|x| f32::from(*x) * s).collect()))
    }

    /// Rows as `(rowid, scale, int8 row)`, as held, for persistence.
    pub fn quantised_rows(&self) -> impl Iterator<Item = (i64, f32, &[i8])> + '_ {
        (0..self.len()).map(|i| (self.rowids.at(i), self.scales.at(i), self.data.row(i)))
    }

    /// The vector of `rowid` (dequantised), if held.
    pub fn get(&self, rowid: i64) -> Option<Vec<f32>> {
        let i = self.pos.get(rowid)?;
        let s = self.scales.at(i);
        Some(self.data.row(i).iter().map(|x| f32::from(*x) * s).collect())
    }

    /// The rowids held, in storage order.
    pub fn rowids(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.rowids.at(i))
    }

    /// The `limit` most similar rows to `query` as `(rowid, cosine)`, best first;
    /// only among `restrict` when given. A large unrestricted scan is split across up to
    /// `SCAN_THREADS` threads: it is bound by memory bandwidth and one core does not
    /// saturate it. Past `PREFILTER_MIN_ROWS` rows each part is pre-ranked by sign bits first.
    pub fn search(&self, query: &[f32], limit: usize, restrict: Option<&[i64]>) -> Vec<(i64, f32)> {
        if limit == 0 || self.dims == 0 || query.len() != self.dims {
            return Vec::new();
        }
        // The query is quantised too, so the exact scan is integer arithmetic throughout.
        let (q, query) = Quantised::unit(query);
        let best = match restrict {
            Some(rows) => self.exact(&query, limit, rows.iter().filter_map(|r| self.pos.get(*r))),
            None => match self.answering_ivf() {
                Some(ivf) => self.search_ivf(ivf, &q, &query, limit),
                _ => {
                    let n = self.rowids.len();
                    let signs = (n >= PREFILTER_MIN_ROWS).then(|| SignTable::new(&self.sign_query(&q)));
                    split(n, limit, |range: Range<usize>| match &signs {
                        Some(table) => self.two_stage(&query, table, limit, Rows::Span(range)),
                        None => self.exact(&query, limit, range),
                    })
                }
            },
        };
        self.ranked(best, limit)
    }

    /// `(position, cosine)` pairs as the best `limit` `(rowid, cosine)`, best first.
    fn ranked(&self, best: Vec<(usize, f32)>, limit: usize) -> Vec<(i64, f32)> {
        let mut out: Vec<(i64, f32)> = best.into_iter().map(|(i, s)| (self.rowids.at(i), s)).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(limit);
        out
    }

    /// The IVF when unrestricted searches scan its lists: it covers some rows, and its probed
    /// lists read less than the sign pre-rank over every row ([`ivf_pays`]).
    fn answering_ivf(&self) -> Option<&Ivf> {
        self.ivf.as_deref().filter(|ivf| self.uses_ivf() && ivf_pays(ivf))
    }

    /// The exact top `k` rowids for `query` over every row, best first (diagnostics measure
    /// [`Self::search`] against it).
    #[cfg(test)]
    pub(crate) fn exact_top(&self, query: &[f32], k: usize) -> Vec<i64> {
        let (_, query) = Quantised::unit(query);
        let best = split(self.rowids.len(), k, |r| self.exact(&query, k, r));
        self.ranked(best, k).into_iter().map(|(r, _)| r).collect()
    }

    /// The mean and standard deviation of `query`'s cosine with up to `n` rows spread evenly
    /// over the index, and how many rows that was: how similar an arbitrary chunk of this store
    /// is to the query, the level a related chunk has to stand out from. `None` when the index
    /// holds no row.
    pub fn background(&self, query: &[f32], n: usize) -> Option<(f32, f32, usize)> {
        let len = self.rowids.len();
        if len == 0 || n == 0 || self.dims == 0 || query.len() != self.dims {
            return None;
        }
        let (_, Quantised { row: qi, scale: q_scale }) = Quantised::unit(query);
        let step = len.div_ceil(n).max(1);
        let dot_i8 = int8_dot();
        let sims: Vec<f64> = (0..len)
            .step_by(step)
            .map(|i| (dot_i8(&qi, self.data.row(i)) as f32 * q_scale * self.scales.at(i)) as f64)
            .collect();
        let mean = sims.iter().sum::<f64>() / sims.len() as f64;
        let var = sims.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / sims.len() as f64;
        Some((mean as f32, var.sqrt() as f32, sims.len()))
    }

    /// The best `limit` of the row positions `rows` by their int8 rows, as `(position,
    /// cosine)`, unordered.
    fn exact(&self, q: &Quantised, limit: usize, rows: impl Iterator<Item = usize>) -> Vec<(usize, f32)> {
        let dot_i8 = int8_dot();
        let mut best = Best::new(limit);
        for i in rows {
            best.offer(dot_i8(&q.row, self.data.row(i)) as f32 * q.scale * self.scales.at(i), i);
        }
        best.into_vec()
    }

    /// [`Self::exact`] over the rows of `rows` that score best against their sign bits: the
    /// query's dot product with each row's sign vector ranks them, and at embedding widths
    /// only the rows whose code heads are within a Hamming distance of the query's that about
    /// [`HAMMING_SHARE`] times [`candidates`] rows reach are scored so (the distance costs a
    /// few instructions a row and reads 16 bytes, the dot product 32 table lookups).
    fn two_stage(&self, q: &Quantised, table: &SignTable, limit: usize, rows: Rows<'_>) -> Vec<(usize, f32)> {
        let mut picked: Vec<usize> = self.pre_rank(table, limit, rows).into_vec().into_iter().map(|(i, _)| i).collect();
        picked.sort_unstable();
        self.exact_gathered(q, limit, &picked)
    }

    /// The sign passes of [`Self::two_stage`]: the best [`candidates`] of `rows` by sign score.
    fn pre_rank(&self, table: &SignTable, limit: usize, rows: Rows<'_>) -> Best {
        let hb = head_bytes(self.dims);
        let n = rows.len();
        let want = candidates(limit, n);
        let mut pre = Best::new(want);
        if self.dims >= HAMMING_MIN_DIMS && n >= 4 * HAMMING_SHARE * want {
            let code = &table.code[..hb];
            let cut = hamming_cut(&self.heads, code, rows.iter(), want * HAMMING_SHARE);
            let mut near = Near { ix: self, table, pre: &mut pre, batch: Vec::with_capacity(NEAR_BATCH) };
            let mut keep = |i: usize| near.push(i);
            match rows {
                Rows::Span(span) => hamming_span(&self.heads, code, span, cut, &mut keep),
                Rows::Listed(_) => hamming_within(&self.heads, code, rows.iter(), cut, &mut keep),
            }
            near.flush();
        } else {
            for i in rows.iter() {
                pre.offer(table.score(self.heads.row(i), self.tails.row(i)), i);
            }
        }
        pre
    }

    /// [`Self::exact`] over scattered row positions, in ascending order (`rows` sorted). Each
    /// row is a cache miss (a few hundred nanoseconds at millions of rows), and one row's dot
    /// product is too long for the CPU to run far enough ahead to overlap the next rows'
    /// misses, so the loop reads the rows [`GATHER_AHEAD`] positions on first: their loads
    /// are in flight while this row is scored (half the time of the plain loop at 2M rows).
    fn exact_gathered(&self, q: &Quantised, limit: usize, rows: &[usize]) -> Vec<(usize, f32)> {
        let dot_i8 = int8_dot();
        let d = self.dims;
        let mut best = Best::new(limit);
        for (k, &i) in rows.iter().enumerate() {
            if let Some(&j) = rows.get(k + GATHER_AHEAD) {
                let row = self.data.row(j);
                for at in (0..d).step_by(64) {
                    prefetch(&row[at]);
                }
            }
            best.offer(dot_i8(&q.row, self.data.row(i)) as f32 * q.scale * self.scales.at(i), i);
        }
        best.into_vec()
    }
}

/// The rows a two-stage scan covers: a span of positions, or listed ones (the IVF's pending
/// rows).
enum Rows<'a> {
    Span(Range<usize>),
    Listed(&'a [u32]),
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match self {
            Rows::Span(r) => r.len(),
            Rows::Listed(l) => l.len(),
        }
    }

    fn iter(&self) -> impl ExactSizeIterator<Item = usize> + Clone + '_ {
        match self {
            Rows::Span(r) => either::Either::Left(r.clone()),
            Rows::Listed(l) => either::Either::Right(l.iter().map(|p| *p as usize)),
        }
    }
}

/// The rows the Hamming pass keeps, scored on their whole sign codes in batches: each kept
/// row's tail is a cache miss (~100 ns at millions of rows), so a batch's tails are read
/// [`GATHER_AHEAD`] rows ahead of their scores, which overlaps the misses; the head is copied
/// while the pass has it in cache.
struct Near<'a, 'b> {
    ix: &'a VectorIndex,
    table: &'a SignTable,
    pre: &'b mut Best,
    batch: Vec<(usize, [u8; HEAD_BYTES])>,
}

/// Kept rows a [`Near`] batch holds.
const NEAR_BATCH: usize = 256;

impl Near<'_, '_> {
    #[inline]
    fn push(&mut self, i: usize) {
        let hb = head_bytes(self.ix.dims);
        let mut head = [0u8; HEAD_BYTES];
        head[..hb].copy_from_slice(self.ix.heads.row(i));
        self.batch.push((i, head));
        if self.batch.len() == NEAR_BATCH {
            self.flush();
        }
    }

    #[allow(unsafe_code, reason = "calls a function compiled for AVX-512 once the CPU is known to have it")]
    fn flush(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if has_avx512_bw() {
            // SAFETY: `flush_avx512` requires `avx512f` and `avx512bw`, which `has_avx512_bw`
            // checked.
            unsafe { self.flush_avx512() };
            return;
        }
        let table = self.table;
        self.score_batch(|head, tail| table.score(head, tail));
    }

    /// [`Near::flush`] with the sign score as masked 16-bit additions: the doubled query in
    /// fixed point, thirty-two components a 32-bit word of the code, added on the lanes whose
    /// bits are set (eight instructions a row at 256 dimensions; the f32 form took sixteen).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    #[allow(unsafe_code, reason = "unaligned 64-byte loads from a slice known to hold them")]
    fn flush_avx512(&mut self) {
        use std::arch::x86_64::{
            _mm512_loadu_si512, _mm512_madd_epi16, _mm512_mask_add_epi16, _mm512_reduce_add_epi32, _mm512_set1_epi16,
            _mm512_setzero_si512,
        };
        let table = self.table;
        let ones = _mm512_set1_epi16(1);
        self.score_batch(|head, tail| {
            let mut acc = _mm512_setzero_si512();
            let words = head.chunks_exact(4).chain(tail.chunks_exact(4));
            for (w, lane) in words.zip(table.fixed.chunks_exact(32)) {
                // SAFETY: `lane` is 32 `i16`, 64 bytes; the load has no alignment requirement.
                let lane = unsafe { _mm512_loadu_si512(lane.as_ptr().cast()) };
                acc = _mm512_mask_add_epi16(acc, u32::from_le_bytes([w[0], w[1], w[2], w[3]]), acc, lane);
            }
            // Pairs of lanes summed into 32 bits, then the sixteen sums.
            let sum = _mm512_reduce_add_epi32(_mm512_madd_epi16(acc, ones));
            table.base + table.unit * sum as f32
        });
    }

    /// Offers each batched row's `score(head, tail)` and empties the batch; the tails are
    /// fetched [`GATHER_AHEAD`] rows ahead of their scores.
    #[inline(always)]
    fn score_batch(&mut self, score: impl Fn(&[u8], &[u8]) -> f32) {
        let ix = self.ix;
        let (hb, tb) = (head_bytes(ix.dims), tail_bytes(ix.dims));
        let ahead = |k: usize| {
            if let Some(&(j, _)) = self.batch.get(k).filter(|_| tb > 0) {
                prefetch(&ix.tails.row(j)[0]);
            }
        };
        (0..GATHER_AHEAD).for_each(ahead);
        for k in 0..self.batch.len() {
            ahead(k + GATHER_AHEAD);
            let (i, head) = self.batch[k];
            self.pre.offer(score(&head[..hb], ix.tails.row(i)), i);
        }
        self.batch.clear();
    }
}

/// Asks the CPU to bring the cache line holding `at` in, without waiting for it (a plain read
/// would hold the loop until the line arrives).
#[inline(always)]
#[allow(unsafe_code, reason = "a prefetch hint reads nothing and cannot fault")]
fn prefetch<T>(at: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 CPU has; it is a hint that never
    // faults, and the address is that of a live reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(at).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// How many rows ahead [`VectorIndex::exact_gathered`] starts reading.
const GATHER_AHEAD: usize = 16;

/// The approximate index's side: what the `ann` worker does and sees.
impl VectorIndex {
    /// An unrestricted search goes through the IVF: the index is large enough and some rows
    /// are filed in lists.
    fn uses_ivf(&self) -> bool {
        self.rowids.len() >= self.ann_min_rows && self.lists.pending.len() < self.rowids.len()
    }

    /// The best rows of the lists nearest the unit query `q`, and of the pending rows.
    fn search_ivf(&self, ivf: &Ivf, q: &[f32], query: &Quantised, limit: usize) -> Vec<(usize, f32)> {
        let mut rows: Vec<u32> = Vec::new();
        for leaf in ivf.nearest_leaves(q, ivf.probes()) {
            rows.extend_from_slice(&self.lists.lists[leaf as usize]);
        }
        let mut best =
            split(rows.len(), limit, |r: Range<usize>| self.exact(query, limit, rows[r].iter().map(|p| *p as usize)));
        let pending = &self.lists.pending;
        let table = (pending.len() >= PREFILTER_MIN_ROWS).then(|| SignTable::new(&self.sign_query(q)));
        best.extend(split(pending.len(), limit, |r: Range<usize>| match &table {
            Some(t) => self.two_stage(query, t, limit, Rows::Listed(&pending[r])),
            None => self.exact(query, limit, pending[r].iter().map(|p| *p as usize)),
        }));
        best
    }

    pub(crate) fn signal(&self) -> Arc<Signal> {
        self.signal.clone()
    }

    /// Where the IVF persists; reads it from there if a usable one was written, filing the
    /// rows it covers (the others stay pending for the worker).
    pub(crate) fn attach_ann(&mut self, dir: &Path, signature: &str) {
        self.ann_dir = Some((dir.to_path_buf(), signature.to_string()));
        let Some((ivf, rows)) = ann::load(dir, signature, self.dims) else { return };
        self.lists.reset(ivf.leaf_count(), self.rowids.len());
        let mut filed = 0;
        for (rowid, leaf) in rows {
            if let Some(pos) = self.pos.get(rowid) {
                self.lists.move_to(pos, leaf);
                filed += 1;
            }
        }
        self.saved_rows = filed;
        self.ivf = Some(Arc::new(ivf));
    }

    /// The worker's next job, if any.
    pub(crate) fn next_job(&self) -> Option<Job> {
        let n = self.rowids.len();
        let train = match &self.ivf {
            None => n >= self.ann_min_rows,
            Some(ivf) => n >= self.ann_min_rows && ann::needs_retrain(ivf, n),
        };
        if train {
            return Some(Job::Train { sample: self.sample(ann::leaves_for(n) * 32), rows: n });
        }
        let ivf = self.ivf.as_ref()?;
        if !self.lists.pending.is_empty() {
            let take = self.lists.pending.len().min(ann::place_batch());
            let rows: Vec<(u32, i64)> =
                self.lists.pending[..take].iter().map(|&p| (p, self.rowids.at(p as usize))).collect();
            let mut vecs = Vec::with_capacity(take * self.dims);
            for &(p, _) in &rows {
                vecs.extend(self.unit_row(p as usize));
            }
            return Some(Job::Place { ivf: ivf.clone(), rows, vecs });
        }
        if ivf.recall().is_none() {
            return Some(Job::Calibrate { ivf: ivf.clone() });
        }
        if self.ann_dir.is_some() && (self.ann_unsaved || self.filed_since_save > (self.saved_rows / 8).max(64 * 1024))
        {
            return Some(Job::Persist);
        }
        None
    }

    /// Row `i` dequantised and scaled to unit length.
    fn unit_row(&self, i: usize) -> Vec<f32> {
        let mut v: Vec<f32> = self.data.row(i).iter().map(|x| f32::from(*x)).collect();
        normalize(&mut v);
        v
    }

    /// Up to `n` unit rows spread evenly over the index, as one matrix.
    fn sample(&self, n: usize) -> Vec<f32> {
        let len = self.rowids.len();
        let step = len.div_ceil(n.clamp(1, 128 * 1024)).max(1);
        (0..len).step_by(step).flat_map(|i| self.unit_row(i)).collect()
    }

    /// Starts filing every row under the lists of `ivf` (all pending until the worker files them).
    pub(crate) fn install(&mut self, ivf: Arc<Ivf>) {
        self.lists.reset(ivf.leaf_count(), self.rowids.len());
        self.ivf = Some(ivf);
        self.ann_unsaved = true;
    }

    /// Files `(position, rowid, leaf)` placements of `ivf`, skipping rows that moved, changed or
    /// went since they were copied, and all of them if another IVF was installed meanwhile.
    pub(crate) fn file(&mut self, ivf: &Arc<Ivf>, placed: &[(u32, i64, u32)]) {
        if !self.ivf.as_ref().is_some_and(|cur| Arc::ptr_eq(cur, ivf)) {
            return;
        }
        for &(pos, rowid, leaf) in placed {
            let pos = pos as usize;
            if pos < self.rowids.len() && self.rowids.at(pos) == rowid && self.lists.list_of(pos) == PENDING {
                self.lists.move_to(pos, leaf);
                self.filed_since_save += 1;
            }
        }
    }

    /// `n` rows spread over the index as calibration queries: `(position, unit vector)`.
    pub(crate) fn calibration_queries(&self, n: usize) -> Vec<(usize, Vec<f32>)> {
        let len = self.rowids.len();
        let step = len.div_ceil(n.max(1)).max(1);
        // Offset from the first row so queries are not all the oldest rows of a list.
        (step / 2..len).step_by(step).map(|i| (i, self.unit_row(i))).collect()
    }

    /// The list of each of the exact top `k` rows for the unit query `q`, leaving out the row
    /// at `skip` (the query itself).
    pub(crate) fn exact_top_lists(&self, q: &[f32], k: usize, skip: usize) -> Vec<u32> {
        let mut qi = vec![0i8; q.len()];
        let scale = quantize(q, &mut qi);
        let query = Quantised { row: qi, scale };
        let n = self.rowids.len();
        let mut hits = split(n, k + 1, |r: Range<usize>| self.exact(&query, k + 1, r));
        hits.retain(|h| h.0 != skip);
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        hits.into_iter().map(|(i, _)| self.lists.list_of(i)).collect()
    }

    /// The IVF or rows filed under it are not all in the file (what closing writes).
    pub(crate) fn ann_unsaved_rows(&self) -> bool {
        self.ann_dir.is_some()
            && self.ivf.as_ref().is_some_and(|i| i.recall().is_some())
            && (self.ann_unsaved || self.filed_since_save > 0)
    }

    pub(crate) fn mark_unsaved(&mut self) {
        self.ann_unsaved = true;
    }

    pub(crate) fn mark_saved(&mut self, rows: usize) {
        self.ann_unsaved = false;
        self.filed_since_save = 0;
        self.saved_rows = rows;
    }

    pub(crate) fn ann_dir(&self) -> Option<PathBuf> {
        self.ann_dir.as_ref().map(|d| d.0.clone())
    }

    /// What persisting needs: the embedder signature, the IVF and `(rowid, leaf)` of every
    /// filed row.
    pub(crate) fn ann_snapshot(&self) -> Option<ann::Snapshot> {
        let (_, sig) = self.ann_dir.as_ref()?;
        let ivf = self.ivf.clone()?;
        let mut rows = Vec::with_capacity(self.rowids.len());
        for (leaf, list) in self.lists.lists.iter().enumerate() {
            rows.extend(list.iter().map(|&p| (self.rowids.at(p as usize), leaf as u32)));
        }
        Some(ann::Snapshot { signature: sig.clone(), ivf, rows })
    }

    /// The approximate index's figures, when one is trained.
    pub(crate) fn ann_stats(&self) -> Option<AnnStats> {
        self.ivf
            .as_deref()
            .map(|ivf| ann::stats(ivf, self.lists.pending.len(), !self.ann_unsaved, self.answering_ivf().is_some()))
    }

    /// Trains an IVF from `rows` rows on (tests: [`ANN_MIN_ROWS`] makes them slow unoptimised).
    #[cfg(test)]
    pub(crate) fn set_ann_min_rows(&mut self, rows: usize) {
        self.ann_min_rows = rows;
    }

    /// Runs the worker's jobs on this thread until none is left (tests and tools).
    #[cfg(test)]
    pub(crate) fn settle(index: &std::sync::RwLock<VectorIndex>) {
        loop {
            let job = crate::locks::read(index).next_job();
            match job {
                Some(job) => {
                    ann::run_job(index, job, || false);
                }
                None => return,
            }
        }
    }
}

/// Whether scanning the IVF's probed lists reads less than the sign pre-rank does: that reads
/// 32 bytes a row plus the int8 rows of 1/128 of them (~34 bytes a row at 256 dimensions), the
/// probed lists 256 bytes for each of their rows. On vectors that form no clusters the
/// calibration asks for so many lists that the pre-rank is cheaper, and it answers instead.
fn ivf_pays(ivf: &Ivf) -> bool {
    ivf.probes().saturating_mul(8) <= ivf.leaf_count()
}

/// `part` over `0..n` split across up to `SCAN_THREADS` threads (one part each, their hits
/// concatenated): the scans are bound by memory bandwidth and one core does not saturate it.
fn split(n: usize, limit: usize, part: impl Fn(Range<usize>) -> Vec<(usize, f32)> + Sync) -> Vec<(usize, f32)> {
    let threads = scan_threads(n);
    if threads <= 1 {
        return part(0..n);
    }
    let per = n.div_ceil(threads);
    let range = |t: usize| t * per..((t + 1) * per).min(n);
    std::thread::scope(|s| {
        let part = &part;
        let parts: Vec<_> = (0..threads).map(|t| s.spawn(move || part(range(t)))).collect();
        // A part whose thread failed to run is scanned here instead.
        let mut all = Vec::with_capacity(threads * limit);
        for (t, h) in parts.into_iter().enumerate() {
            match h.join() {
                Ok(found) => all.extend(found),
                Err(_) => all.extend(part(range(t))),
            }
        }
        all
    })
}

/// A query quantised like the rows: `row * scale` is the unit query.
struct Quantised {
    row: Vec<i8>,
    scale: f32,
}

impl Quantised {
    /// `query` at unit length, and that quantised.
    fn unit(query: &[f32]) -> (Vec<f32>, Quantised) {
        let mut q = query.to_vec();
        normalize(&mut q);
        let mut row = vec![0i8; q.len()];
        let scale = quantize(&q, &mut row);
        (q, Quantised { row, scale })
    }
}

/// Past this many rows an unrestricted search is pre-ranked by sign bits; below it the full
/// int8 pass takes under ~4 ms and every row is scored exactly.
pub(crate) const PREFILTER_MIN_ROWS: usize = 128 * 1024;

/// How many rows of a part of `rows` the sign pass hands to the exact one: 1/128 of them up to
/// [`MAX_CANDIDATES`], and never fewer than 32 per hit asked for.
fn candidates(limit: usize, rows: usize) -> usize {
    limit.saturating_mul(32).max((rows / 128).min(MAX_CANDIDATES)).min(rows)
}

/// The most rows of one scan thread's part that the share of [`candidates`] re-scores: 1/128
/// of a part of 2M rows (a store of 4M on two threads). The exact top 10 of a query stands out
/// further from the rest the more rows there are, so its place in the sign order grows slower
/// than the part: on the 10M-row store of generated mail, 16,384 of each 5M-row part keep
/// recall@10 against the exact scan at 0.9935 (0.9990 at 1/128) in 15–16 ms instead of 23–24
/// (BENCHMARKS.md, "10M recall: a fixed number of rows re-scored"). Smaller stores, whose
/// figures the share was measured on (SciFact's rows, `examples/sign_prefilter.rs`), keep it.
const MAX_CANDIDATES: usize = 16 * 1024;

/// How many times [`candidates`] the Hamming pass over the code heads keeps for the sign-table
/// pass (`examples/sign_prefilter.rs` measures what each share keeps of the exact top 10).
const HAMMING_SHARE: usize = 8;

/// Below this many dimensions a sign code has too few bits for a Hamming distance to rank by
/// (distances tie in large groups), and the sign score ranks every row.
const HAMMING_MIN_DIMS: usize = 128;

/// Bytes of sign bits for a row of `dims` components, whole 64-bit words (the padding bits are
/// zero in every row and in the query, so they never count).
fn code_bytes(dims: usize) -> usize {
    dims.div_ceil(64) * 8
}

/// The head of a sign code, what the Hamming pass reads: the signs of the first 128
/// components. At 256 dimensions that halves the bytes a row costs the pass, which is bound by
/// memory bandwidth at millions of rows (two threads read ~15 GB/s here: 21 ms for the
/// 320 MB of whole codes at 10M rows).
const HEAD_BYTES: usize = 16;

fn head_bytes(dims: usize) -> usize {
    code_bytes(dims).min(HEAD_BYTES)
}

fn tail_bytes(dims: usize) -> usize {
    code_bytes(dims) - head_bytes(dims)
}

/// The number of bits in which two sign codes differ, a 64-bit word at a time. A plain loop:
/// an iterator's `fold` is compiled out of line, where it would not get `popcnt`.
#[inline(always)]
fn hamming(a: &[u8], b: &[u8]) -> u32 {
    let mut d = 0;
    for k in 0..a.len().min(b.len()) / 8 {
        d += (word(&a[8 * k..8 * k + 8]) ^ word(&b[8 * k..8 * k + 8])).count_ones();
    }
    d
}

#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// The smallest Hamming distance from `code` within which about `keep` of `rows` fall (at
/// least that share of them), judged on up to [`CUT_SAMPLE`] rows spread over them.
fn hamming_cut(signs: &Slab<u8>, code: &[u8], rows: impl ExactSizeIterator<Item = usize>, keep: usize) -> u32 {
    let n = rows.len();
    let cb = code.len();
    let mut counts = vec![0usize; cb * 8 + 1];
    let mut sampled = 0;
    for i in rows.step_by(n.div_ceil(CUT_SAMPLE).max(1)) {
        counts[hamming(code, signs.row(i)) as usize] += 1;
        sampled += 1;
    }
    // The share of the sample that has to fall within the cut.
    let need = (keep as f64 / n.max(1) as f64 * sampled as f64).ceil() as usize;
    let mut within = 0;
    for (d, c) in counts.iter().enumerate() {
        within += c;
        if within >= need {
            return d as u32;
        }
    }
    (cb * 8) as u32
}

/// Rows whose cut is judged on a sample of this many rows.
const CUT_SAMPLE: usize = 8192;

/// Calls `near` with each row of `rows` whose sign code differs from `code` in at most `cut`
/// bits.
#[inline(always)]
fn within_pass(
    signs: &Slab<u8>,
    code: &[u8],
    rows: impl Iterator<Item = usize>,
    cut: u32,
    near: &mut impl FnMut(usize),
) {
    for i in rows {
        if hamming(code, signs.row(i)) <= cut {
            near(i);
        }
    }
}

/// [`within_pass`] compiled for the `popcnt` instruction, for rows in any order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn within_pass_popcnt(
    signs: &Slab<u8>,
    code: &[u8],
    rows: impl Iterator<Item = usize>,
    cut: u32,
    near: &mut impl FnMut(usize),
) {
    within_pass(signs, code, rows, cut, near)
}

/// [`within_pass`] over rows in any order (the IVF's pending rows), on `popcnt` when this CPU
/// has it.
#[allow(unsafe_code, reason = "calls a function compiled for `popcnt` once the CPU is known to have it")]
fn hamming_within(
    signs: &Slab<u8>,
    code: &[u8],
    rows: impl Iterator<Item = usize>,
    cut: u32,
    near: &mut impl FnMut(usize),
) {
    #[cfg(target_arch = "x86_64")]
    if has_popcnt() {
        // SAFETY: `within_pass_popcnt` requires only `popcnt`, which `has_popcnt` detected.
        return unsafe { within_pass_popcnt(signs, code, rows, cut, near) };
    }
    within_pass(signs, code, rows, cut, near)
}

/// [`within_pass`] over a span of rows, on the fastest instructions this CPU has for
/// [`HEAD_BYTES`]-byte codes: AVX-512's `vpopcntq` (four rows an instruction), else `popcnt`.
/// The heads stream a block of the slab at a time.
#[allow(unsafe_code, reason = "calls functions compiled for CPU features once the CPU is known to have them")]
fn hamming_span(heads: &Slab<u8>, code: &[u8], span: Range<usize>, cut: u32, near: &mut impl FnMut(usize)) {
    #[cfg(target_arch = "x86_64")]
    if code.len() == HEAD_BYTES {
        let avx512 = has_avx512_popcnt();
        if avx512 || has_popcnt() {
            for (first, piece) in heads.pieces(span) {
                if avx512 {
                    // SAFETY: `span_avx512` requires `avx512f` and `avx512vpopcntdq`, which
                    // `has_avx512_popcnt` detected on this CPU.
                    unsafe { span_avx512(piece, first, code, cut, near) };
                } else {
                    // SAFETY: `span_popcnt` requires only `popcnt`, which `has_popcnt` detected.
                    unsafe { span_popcnt(piece, first, code, cut, near) };
                }
            }
            return;
        }
    }
    within_pass(heads, code, span, cut, near)
}

/// [`within_pass`] for 16-byte codes on `popcnt` (one instruction a word where the baseline
/// x86-64 target, which does not assume it, needs about a dozen): `heads` are the contiguous
/// codes of the rows from `first` on.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn span_popcnt(heads: &[u8], first: usize, code: &[u8], cut: u32, near: &mut impl FnMut(usize)) {
    let q = [word(&code[0..8]), word(&code[8..16])];
    for (k, c) in heads.chunks_exact(HEAD_BYTES).enumerate() {
        if (word(&c[0..8]) ^ q[0]).count_ones() + (word(&c[8..16]) ^ q[1]).count_ones() <= cut {
            near(first + k);
        }
    }
}

/// [`within_pass`] for 16-byte codes on AVX-512: a 64-byte load holds four rows' codes, one
/// `vpopcntq` counts their eight words, a swap of neighbouring words sums each row's two,
/// and one compare against the cut leaves a bit a row. Most blocks hold no row within the
/// cut and cost no branch taken.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[allow(unsafe_code, reason = "an unaligned 64-byte load from a slice known to hold it")]
fn span_avx512(heads: &[u8], first: usize, code: &[u8], cut: u32, near: &mut impl FnMut(usize)) {
    use std::arch::x86_64::{
        _MM_PERM_BADC, _mm512_add_epi64, _mm512_cmple_epu64_mask, _mm512_loadu_si512, _mm512_popcnt_epi64,
        _mm512_set_epi64, _mm512_set1_epi64, _mm512_shuffle_epi32, _mm512_xor_si512,
    };
    let (q0, q1) = (word(&code[0..8]) as i64, word(&code[8..16]) as i64);
    // Lane 0 is the last argument: each row's first word meets the query's first.
    let query = _mm512_set_epi64(q1, q0, q1, q0, q1, q0, q1, q0);
    let cut_lanes = _mm512_set1_epi64(i64::from(cut));
    let mut blocks = heads.chunks_exact(4 * HEAD_BYTES);
    let mut row = first;
    for block in &mut blocks {
        // SAFETY: `block` is 64 bytes long; the load has no alignment requirement.
        let codes = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
        let counts = _mm512_popcnt_epi64(_mm512_xor_si512(codes, query));
        let sums = _mm512_add_epi64(counts, _mm512_shuffle_epi32::<_MM_PERM_BADC>(counts));
        // Even lanes: one per row.
        let mut within = _mm512_cmple_epu64_mask(sums, cut_lanes) & 0x55;
        while within != 0 {
            near(row + within.trailing_zeros() as usize / 2);
            within &= within - 1;
        }
        row += 4;
    }
    for (k, c) in blocks.remainder().chunks_exact(HEAD_BYTES).enumerate() {
        if (word(&c[0..8]) ^ q0 as u64).count_ones() + (word(&c[8..16]) ^ q1 as u64).count_ones() <= cut {
            near(row + k);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn has_popcnt() -> bool {
    static POPCNT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *POPCNT.get_or_init(|| std::arch::is_x86_feature_detected!("popcnt"))
}

#[cfg(target_arch = "x86_64")]
fn has_avx512_bw() -> bool {
    static AVX512BW: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX512BW.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw")
    })
}

#[cfg(target_arch = "x86_64")]
fn has_avx512_popcnt() -> bool {
    static AVX512: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX512.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
    })
}

/// Packs one bit a component (set: not negative) into `out`, eight a byte, low bit first.
fn pack_signs(not_negative: impl Iterator<Item = bool>, out: &mut [u8]) {
    out.iter_mut().for_each(|b| *b = 0);
    for (k, set) in not_negative.enumerate() {
        out[k / 8] |= u8::from(set) << (k % 8);
    }
}

/// The query's dot product with a row's sign vector (each component ±1), one table a byte:
/// entry `b` of table `j` is Σ ±q[8j + k] over the bits `k` of `b`. A row costs one lookup a
/// byte, 32 at 256 dimensions.
struct SignTable {
    tables: Vec<[f32; 256]>,
    /// The query's own sign bits, packed like a row's.
    code: Vec<u8>,
    /// Twice the query in fixed point (`unit` a step), zero-padded to whole codes, and minus
    /// the sum of its components: the score is `base` plus `unit` times the sum of the fixed
    /// components whose bits are set (what the AVX-512 pass adds, thirty-two components an
    /// instruction, instead of looking tables up). The step is as small as 16-bit lanes allow:
    /// a lane adds one component a 32-bit word of the code, so no sum can overflow.
    fixed: Vec<i16>,
    unit: f32,
    base: f32,
}

impl SignTable {
    fn new(q: &[f32]) -> Self {
        let tables = q
            .chunks(8)
            .map(|part| {
                let mut t = [0f32; 256];
                t[0] = -part.iter().sum::<f32>();
                for b in 1..256usize {
                    let low = b.trailing_zeros() as usize;
                    // Setting bit `low` turns -q into +q.
                    t[b] = t[b & (b - 1)] + 2.0 * part.get(low).copied().unwrap_or(0.0);
                }
                t
            })
            .collect();
        let mut code = vec![0u8; code_bytes(q.len())];
        pack_signs(q.iter().map(|x| *x >= 0.0), &mut code);
        // Each lane of the 16-bit sum takes one component of each 32-bit word of the code, so
        // `adds` components of at most `(i16::MAX - adds) / adds + 1/2` after rounding: their
        // sum stays under `i16::MAX`.
        let adds = code.len().div_ceil(4).max(1) as f32;
        let top = q.iter().fold(0f32, |m, x| m.max(2.0 * x.abs()));
        let unit = if top > 0.0 { top * adds / (f32::from(i16::MAX) - adds) } else { 1.0 };
        let mut fixed: Vec<i16> = q.iter().map(|x| (2.0 * x / unit).round() as i16).collect();
        fixed.resize(code.len() * 8, 0);
        SignTable { tables, code, fixed, unit, base: -q.iter().sum::<f32>() }
    }

    /// The score of the code whose head is `head` and tail `tail`.
    #[inline]
    fn score(&self, head: &[u8], tail: &[u8]) -> f32 {
        let h = head.len().min(self.tables.len());
        Self::part(&self.tables[..h], head) + Self::part(&self.tables[h..], tail)
    }

    #[inline]
    fn part(tables: &[[f32; 256]], code: &[u8]) -> f32 {
        // The code's padding bytes past the last component have no table.
        let code = &code[..tables.len().min(code.len())];
        // Four accumulators break the chain of additions.
        let mut acc = [0f32; 4];
        let mut tabs = tables.chunks_exact(4);
        let mut bytes = code.chunks_exact(4);
        for (t, b) in (&mut tabs).zip(&mut bytes) {
            for k in 0..4 {
                acc[k] += t[k][usize::from(b[k])];
            }
        }
        let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (t, b) in tabs.remainder().iter().zip(bytes.remainder()) {
            s += t[usize::from(*b)];
        }
        s
    }
}

/// The best `limit` of the scores offered. Scores above the current floor are buffered;
/// when the buffer holds twice `limit`, a linear-time selection keeps the best `limit` and
/// raises the floor to the lowest of them. Most rows of a large scan fall under the floor
/// after the first few thousand, so they cost one comparison (a binary heap's pops and
/// pushes were a third of the sign pass at 1M rows).
struct Best {
    limit: usize,
    items: Vec<(f32, usize)>,
    floor: f32,
}

impl Best {
    fn new(limit: usize) -> Self {
        Best { limit, items: Vec::with_capacity(2 * limit.max(16)), floor: f32::NEG_INFINITY }
    }

    #[inline]
    fn offer(&mut self, score: f32, i: usize) {
        if score > self.floor {
            self.items.push((score, i));
            if self.items.len() >= 2 * self.limit.max(16) {
                self.shrink();
            }
        }
    }

    /// Keeps the best `limit` (ties go to the lower position) and raises the floor to the
    /// lowest of them.
    fn shrink(&mut self) {
        if self.items.len() <= self.limit {
            return;
        }
        if self.limit == 0 {
            self.items.clear();
            self.floor = f32::INFINITY;
            return;
        }
        self.items.select_nth_unstable_by(self.limit - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        self.items.truncate(self.limit);
        self.floor = self.items.iter().map(|e| e.0).fold(f32::INFINITY, f32::min);
    }

    /// The kept `(position, score)` pairs, unordered.
    fn into_vec(mut self) -> Vec<(usize, f32)> {
        self.shrink();
        self.items.into_iter().map(|(s, i)| (i, s)).collect()
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
pub(crate) mod tests {
    use super::*;

    /// Up to parts of 2M rows the sign passes hand 1/128 of a part to the exact one; past that
    /// a fixed number, so a search at 10M rows does not re-score and sign-score 2.5 times the
    /// rows it needs; and never fewer than 32 rows per hit asked for.
    #[test]
    fn the_rows_re_scored_grow_with_the_part_only_up_to_a_cap() {
        assert_eq!(candidates(10, 1_000_000), 7_812);
        assert_eq!(candidates(10, 2 * 1024 * 1024), MAX_CANDIDATES);
        assert_eq!(candidates(10, 5_000_000), MAX_CANDIDATES);
        assert_eq!(candidates(100, 200_000), 3_200);
        assert_eq!(candidates(1_000, 5_000_000), 32_000);
        assert_eq!(candidates(100, 1_000), 1_000);
    }

    #[test]
    fn dot_matches_naive_for_all_tail_lengths() {
        for n in 0..40 {
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
            let b: Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32).collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-3, "n={n}");
        }
    }

    /// Both int8 dot products agree with a plain sum at every length, full-scale values included.
    #[test]
    #[allow(unsafe_code, reason = "calls the AVX-512 form when this CPU has it")]
    fn int8_dots_match_a_plain_sum() {
        let mut rnd = xorshift(0x1d07);
        for n in 0..200 {
            let mut a: Vec<i8> = (0..n).map(|_| (rnd() * 127.0) as i8).collect();
            let b: Vec<i8> = (0..n).map(|_| (rnd() * 127.0) as i8).collect();
            if let Some(x) = a.first_mut() {
                *x = -127;
            }
            let naive: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
            assert_eq!(dot_i8i8(&a, &b), naive, "n={n}");
            #[cfg(target_arch = "x86_64")]
            if has_avx512_bw() {
                // SAFETY: the CPU has the features the function is compiled for.
                assert_eq!(unsafe { dot_i8i8_avx512(&a, &b) }, naive, "n={n}");
            }
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

    fn quantised(q: &[f32]) -> Quantised {
        let mut row = vec![0i8; q.len()];
        let scale = quantize(q, &mut row);
        Quantised { row, scale }
    }

    /// A reproducible stream of numbers in `-1..=1`.
    pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> f32 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        }
    }

    /// The table lookup is the dot product with the ±1 sign vector, whatever the width.
    #[test]
    fn sign_table_scores_the_sign_vector() {
        let mut rnd = xorshift(0x1234_5678);
        for dims in [1, 7, 8, 9, 31, 32, 33, 256, 384] {
            let q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
            let row: Vec<i8> = (0..dims).map(|_| (rnd() * 127.0) as i8).collect();
            let mut code = vec![0u8; code_bytes(dims)];
            pack_signs(row.iter().map(|x| *x >= 0), &mut code);
            let naive: f32 = q.iter().zip(&row).map(|(a, r)| if *r >= 0 { *a } else { -*a }).sum();
            let (head, tail) = code.split_at(head_bytes(dims));
            let got = SignTable::new(&q).score(head, tail);
            assert!((got - naive).abs() < 1e-3, "dims {dims}: {got} vs {naive}");
        }
    }

    /// Past the threshold the two-stage scan finds what the exact one finds, and the sign
    /// bits follow rows moved by a removal.
    #[test]
    fn prefiltered_scan_keeps_the_exact_best_hits() {
        let dims = 32;
        let mut rnd = xorshift(0x9e37_79b9);
        let mut ix = VectorIndex::new(dims);
        let rows = PREFILTER_MIN_ROWS + 1000;
        let mut v = vec![0f32; dims];
        for r in 0..rows {
            v.iter_mut().for_each(|x| *x = rnd());
            normalize(&mut v);
            ix.upsert_normalized(r as i64, &v);
        }
        for r in (0..rows as i64).step_by(7) {
            ix.remove(r);
        }
        let (hb, tb) = (head_bytes(dims), tail_bytes(dims));
        let centre = ix.centre.clone().expect("a centre past the threshold");
        for (i, row) in ix.data.rows().enumerate() {
            let mut code = vec![0u8; hb + tb];
            pack_signs(row.iter().zip(&centre).map(|(x, m)| f32::from(*x) * ix.scales.at(i) >= *m), &mut code);
            assert_eq!(code[..hb], *ix.heads.row(i), "row {i}");
            assert_eq!(code[hb..], *ix.tails.row(i), "row {i}");
        }
        let mut agree = 0;
        for _ in 0..10 {
            let mut q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
            normalize(&mut q);
            let exact: Vec<i64> = {
                let mut e: Vec<(i64, f32)> =
                    ix.exact(&quantised(&q), 10, 0..ix.len()).into_iter().map(|(i, s)| (ix.rowids.at(i), s)).collect();
                e.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                e.into_iter().map(|e| e.0).collect()
            };
            let got: Vec<i64> = ix.search(&q, 10, None).into_iter().map(|h| h.0).collect();
            assert!(got.iter().all(|r| r % 7 != 0), "a removed row came back");
            agree += got.iter().filter(|r| exact.contains(r)).count();
        }
        // Random 32-d rows are the hard case for sign bits (real embeddings keep ~97-99%).
        assert!(agree >= 80, "{agree} of 100 exact hits kept");
    }

    /// Positions by rowid, dense or far apart, through moves and removals.
    #[test]
    fn row_map_keeps_positions_of_any_rowid() {
        let mut m = RowMap::default();
        let far = 1_i64 << 40;
        for (pos, rowid) in [1_i64, 2, 70_000, far, -5, 3].into_iter().enumerate() {
            m.insert(rowid, pos);
        }
        assert_eq!(m.len, 6);
        assert_eq!([1, 2, 70_000, far, -5, 3].map(|r| m.get(r)), [0, 1, 2, 3, 4, 5].map(Some));
        assert_eq!(m.get(4), None);
        assert_eq!(m.get(far + 1), None);
        m.insert(2, 9);
        assert_eq!((m.get(2), m.len), (Some(9), 6), "a move keeps the count");
        assert_eq!(m.remove(far), Some(3));
        assert_eq!(m.remove(far), None);
        assert_eq!(m.remove(1), Some(0));
        assert_eq!((m.get(1), m.len), (None, 4));
        // A rowid kept apart before the dense range reached it is found and moved once it does.
        let mut m = RowMap::default();
        m.insert(500_000, 0);
        assert!(m.dense.len() < 500_000);
        for r in 0..300_000 {
            m.insert(r, r as usize + 1);
        }
        m.insert(500_000, 7);
        assert_eq!((m.get(500_000), m.len, m.sparse.len()), (Some(7), 300_001, 0));
        assert_eq!(m.remove(500_000), Some(7));
        assert_eq!(m.get(500_000), None);
    }

    /// The Hamming pass keeps the rows within the cut, on whichever instructions the CPU has
    /// or none, over any span, and the cut is the smallest distance that keeps the share asked
    /// for; a span may cross the end of a block of the slab.
    #[test]
    fn hamming_pass_keeps_rows_within_the_cut() {
        let mut rnd = xorshift(0x5eed_0001);
        let mut byte = || ((rnd() + 1.0) * 127.9) as u8;
        let block = slab::BLOCK_ROWS;
        for cb in [8usize, 16, 24, 32, 48] {
            let rows = block + 37;
            let dims = cb * 8;
            let mut signs = Slab::new(cb);
            for _ in 0..rows {
                signs.push(&(0..cb).map(|_| byte()).collect::<Vec<u8>>());
            }
            let code: Vec<u8> = (0..cb).map(|_| byte()).collect();
            let dist: Vec<u32> =
                (0..rows).map(|i| signs.row(i).iter().zip(&code).map(|(a, b)| (a ^ b).count_ones()).sum()).collect();
            // The cut is exact when every row is in its sample: judged on the first 500.
            let keep = 500 / 8;
            let cut = hamming_cut(&signs, &code, 0..500, keep);
            let within = |c: u32| dist[..500].iter().filter(|d| **d <= c).count();
            assert!(within(cut) >= keep && within(cut - 1) < keep, "dims {dims}: cut {cut}");
            for c in [cut - 3, cut, cut + 3] {
                let naive: Vec<usize> = (0..rows).filter(|i| dist[*i] <= c).collect();
                let mut plain = Vec::new();
                within_pass(&signs, &code, 0..rows, c, &mut |i| plain.push(i));
                assert_eq!(plain, naive, "dims {dims}, cut {c}");
                let mut listed = Vec::new();
                hamming_within(&signs, &code, 0..rows, c, &mut |i| listed.push(i));
                assert_eq!(listed, naive, "dims {dims}, cut {c}, rows in any order");
                // Spans that start and end inside a block of four rows.
                for span in [0..rows, 3..rows - 2, 5..6, 7..7, block - 5..block + 9, block + 1..rows] {
                    let mut dispatched = Vec::new();
                    hamming_span(&signs, &code, span.clone(), c, &mut |i| dispatched.push(i));
                    let naive: Vec<usize> = span.clone().filter(|i| dist[*i] <= c).collect();
                    assert_eq!(dispatched, naive, "dims {dims}, cut {c}, span {span:?}");
                }
            }
        }
    }

    /// At embedding widths the Hamming pass ranks first; rows close to the query survive it,
    /// the sign score and the exact pass.
    #[test]
    fn hamming_prefilter_keeps_rows_near_the_query() {
        let dims = 256;
        let mut rnd = xorshift(0x7777_0002);
        let mut q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
        normalize(&mut q);
        let rows = PREFILTER_MIN_ROWS + 5000;
        let planted: Vec<i64> = (0..10).map(|k| k * 13_001 + 5).collect();
        let mut ix = VectorIndex::new(dims);
        let mut v = vec![0f32; dims];
        for r in 0..rows as i64 {
            if planted.contains(&r) {
                // Cosine ~0.7 with the query; random rows stay under ~0.3.
                v.iter_mut().zip(&q).for_each(|(x, y)| *x = y + 0.06 * rnd());
            } else {
                v.iter_mut().for_each(|x| *x = rnd());
            }
            normalize(&mut v);
            ix.upsert_normalized(r, &v);
        }
        let mut got: Vec<i64> = ix.search(&q, 10, None).into_iter().map(|h| h.0).collect();
        got.sort_unstable();
        assert_eq!(got, planted);
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
            let mut v: Vec<(i64, f32)> =
                ix.exact(&quantised(&qn), 10, 0..rows).into_iter().map(|(i, s)| (ix.rowids.at(i), s)).collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            v
        };
        assert_eq!(ix.search(&q, 10, None), single);
    }

    /// The rows the Hamming pass keeps are scored, in batches and on whichever instructions
    /// the CPU has, as the table scores their whole codes, at every width.
    #[test]
    fn kept_rows_are_scored_as_the_table_scores_them() {
        let mut rnd = xorshift(0x0bad_cafe);
        for dims in [100, 128, 256, 384] {
            let mut ix = VectorIndex::new(dims);
            let rows = NEAR_BATCH * 2 + 37;
            let mut v = vec![0f32; dims];
            for r in 0..rows {
                v.iter_mut().for_each(|x| *x = rnd());
                normalize(&mut v);
                ix.upsert_normalized(r as i64, &v);
            }
            let mut q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
            normalize(&mut q);
            let table = SignTable::new(&q);
            let mut pre = Best::new(rows);
            let mut near = Near { ix: &ix, table: &table, pre: &mut pre, batch: Vec::with_capacity(NEAR_BATCH) };
            (0..rows).for_each(|i| near.push(i));
            near.flush();
            let mut got = pre.into_vec();
            got.sort_by_key(|g| g.0);
            assert_eq!(got.len(), rows, "dims {dims}");
            // The AVX-512 pass adds the query in fixed point: each component rounds by at most
            // half a step.
            let tolerance = 1e-4 + dims as f32 * table.unit / 2.0;
            for (i, score) in got {
                let want = table.score(ix.heads.row(i), ix.tails.row(i));
                assert!((score - want).abs() <= tolerance, "dims {dims}, row {i}: {score} vs {want}");
            }
        }
    }

    /// The fixed-point sign score cannot overflow its 16-bit lanes: a query whose components
    /// are all its largest, against a row whose every bit is set, fills every lane to the top.
    #[test]
    fn fixed_point_sign_scores_do_not_overflow() {
        for dims in [128, 256, 384] {
            let mut ix = VectorIndex::new(dims);
            let flat = vec![1.0 / (dims as f32).sqrt(); dims];
            ix.upsert_normalized(1, &flat);
            let table = SignTable::new(&flat);
            let mut pre = Best::new(1);
            let mut near = Near { ix: &ix, table: &table, pre: &mut pre, batch: Vec::with_capacity(NEAR_BATCH) };
            near.push(0);
            near.flush();
            let got = pre.into_vec();
            let want = table.score(ix.heads.row(0), ix.tails.row(0));
            // Every sign agrees with the query: the score is the sum of its components.
            let all = (dims as f32).sqrt();
            assert!((want - all).abs() < 1e-3, "dims {dims}: the table scores the row {want}");
            // Each component rounds by at most half a step, here all the same way.
            let tolerance = 1e-4 + dims as f32 * table.unit / 2.0;
            assert!((got[0].1 - want).abs() <= tolerance, "dims {dims}: {} vs {want}", got[0].1);
        }
    }

    /// Rows that share a strong common direction, as embeddings do, get codes against their
    /// mean once the index is large enough: each bit then splits the rows, where before it the
    /// common direction set most bits alike in every row.
    #[test]
    fn sign_codes_are_taken_against_the_rows_mean() {
        let dims = 256;
        let mut rnd = xorshift(0x00c0_ffee);
        let common: Vec<f32> = (0..dims).map(|_| rnd()).collect();
        let mut ix = VectorIndex::new(dims);
        let mut v = vec![0f32; dims];
        let agreeing = |ix: &VectorIndex| {
            // Components whose bit is the same in over 90% of the rows.
            let (hb, n) = (head_bytes(dims), ix.len());
            (0..hb * 8)
                .filter(|k| {
                    let set = (0..n).filter(|i| ix.heads.row(*i)[k / 8] >> (k % 8) & 1 == 1).count();
                    set * 10 > n * 9 || set * 10 < n
                })
                .count()
        };
        for r in 0..PREFILTER_MIN_ROWS + 100 {
            v.iter_mut().zip(&common).for_each(|(x, c)| *x = 3.0 * c + rnd());
            normalize(&mut v);
            ix.upsert_normalized(r as i64, &v);
            if r + 2 == PREFILTER_MIN_ROWS {
                assert!(ix.centre.is_none());
                assert!(agreeing(&ix) > 64, "the common direction sets {} of 128 bits alike", agreeing(&ix));
            }
        }
        assert!(ix.centre.is_some());
        assert_eq!(agreeing(&ix), 0);
        // A row near the query is still found through the centred passes.
        let mut q: Vec<f32> = common.iter().map(|c| 3.0 * c + rnd()).collect();
        normalize(&mut q);
        let near: Vec<f32> = q.iter().map(|x| x + 0.02 * rnd()).collect();
        ix.upsert_normalized(-1, &near);
        assert_eq!(ix.search(&q, 1, None)[0].0, -1);
    }

    /// Times an unrestricted search and its passes on `SCAN_DIAGNOSTIC_ROWS` synthetic 256-d
    /// rows (a common direction plus noise, as embeddings have), beside a plain read of the
    /// code heads on one and two threads (the memory's bandwidth):
    ///
    /// ```text
    /// SCAN_DIAGNOSTIC_ROWS=10000000 cargo test --profile fast -p openhuman-memory --lib -- \
    ///   --ignored scan_timing --nocapture
    /// ```
    #[test]
    #[ignore = "a diagnostic: prints scan timings at millions of rows"]
    #[allow(clippy::print_stdout, reason = "the diagnostic's table is its output")]
    fn scan_timing() {
        use std::time::Instant;
        let n: usize = std::env::var("SCAN_DIAGNOSTIC_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
        let dims = 256;
        let mut rnd = xorshift(0x5eed_0002);
        let common: Vec<f32> = (0..dims).map(|_| rnd()).collect();
        let mut ix = VectorIndex::new(dims);
        let mut v = vec![0f32; dims];
        let mut upserting = std::time::Duration::ZERO;
        for r in 0..n {
            v.iter_mut().zip(&common).for_each(|(x, c)| *x = 1.5 * c + rnd());
            normalize(&mut v);
            let t = Instant::now();
            ix.upsert_normalized(r as i64 + 1, &v);
            upserting += t.elapsed();
        }
        let queries: Vec<Vec<f32>> = (0..40)
            .map(|_| {
                let mut q: Vec<f32> = common.iter().map(|c| 0.8 * c + rnd()).collect();
                normalize(&mut q);
                q
            })
            .collect();
        let ms = |f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        };
        let read = |b: &[u8]| b.chunks_exact(8).fold(0u64, |a, c| a ^ word(c));
        let (mut reads, mut reads2, mut heads, mut one, mut whole) = (vec![], vec![], vec![], vec![], vec![]);
        let mut kept = 0;
        let (mut signed, mut rescore) = (vec![], vec![]);
        for q in &queries {
            reads.push(ms(&mut || {
                std::hint::black_box(ix.heads.pieces(0..n).fold(0, |a, (_, p)| a ^ read(p)));
            }));
            reads2.push(ms(&mut || {
                let half = |span: Range<usize>| ix.heads.pieces(span).fold(0, |a, (_, p)| a ^ read(p));
                std::thread::scope(|s| {
                    let other = s.spawn(|| half(0..n / 2));
                    std::hint::black_box((half(n / 2..n), other.join().ok()));
                });
            }));
            let table = SignTable::new(&ix.sign_query(q));
            let code = &table.code[..HEAD_BYTES];
            let cut = hamming_cut(&ix.heads, code, 0..n, candidates(10, n) * HAMMING_SHARE);
            heads.push(ms(&mut || {
                kept = 0;
                hamming_span(&ix.heads, code, 0..n, cut, &mut |_| kept += 1);
            }));
            let mut picked = Vec::new();
            signed.push(ms(&mut || {
                picked = ix.pre_rank(&table, 10, Rows::Span(0..n)).into_vec().into_iter().map(|(i, _)| i).collect();
                picked.sort_unstable();
            }));
            let query = quantised(q);
            rescore.push(ms(&mut || {
                std::hint::black_box(ix.exact_gathered(&query, 10, &picked));
            }));
            one.push(ms(&mut || {
                std::hint::black_box(ix.two_stage(&query, &table, 10, Rows::Span(0..n)));
            }));
            whole.push(ms(&mut || {
                std::hint::black_box(ix.search(q, 10, None));
            }));
        }
        let p50 = |mut t: Vec<f64>| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        };
        println!("{n} rows of {dims} dims, {} scan threads; the Hamming pass keeps {kept}", scan_threads(n));
        println!("upserts: {:.0} ns a row", upserting.as_secs_f64() * 1e9 / n as f64);
        // The tests run on the daemon's allocator (mimalloc): its peak is what the index costs.
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kib = |key: &str| status.lines().find(|l| l.starts_with(key)).unwrap_or(key).to_string();
        println!("memory after the upserts: {}; {}", kib("VmHWM"), kib("VmRSS"));
        println!("| pass (p50 of {} queries) | ms | ns a row |", queries.len());
        println!("|---|---|---|");
        for (name, t) in [
            ("read the code heads, one thread", reads),
            ("read the code heads, two threads", reads2),
            ("Hamming pass over the heads, one thread", heads),
            ("Hamming pass and sign scores of the rows it keeps, one thread", signed),
            ("exact re-score of the best 1/128, one thread", rescore),
            ("two-stage scan, one thread", one),
            ("search (split across the scan threads)", whole),
        ] {
            let t = p50(t);
            println!("| {name} | {t:.2} | {:.2} |", t * 1e6 / n as f64);
        }
    }
}
