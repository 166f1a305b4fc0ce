//! The fill's projections in 8-bit integers, on a CPU with AVX-512 VNNI: `x · Wᵀ + b` with the
//! weights quantised once at load (per output row: `round(w / s)`, `s = max|w| / 127`) and each
//! row of `x` quantised as it comes (per token, the same rule, stored as `q + 128` so that it is
//! unsigned: `vpdpbusd` multiplies unsigned by signed bytes, four at a time into 32-bit sums).
//! The `+ 128` is taken back out with each output's sum of weights, so the integer part is exact
//! and the only rounding is the two quantisations.
//!
//! Before they are quantised, the rows of both `x` and `W` are turned by the same orthonormal
//! Hadamard matrix, 64 inputs at a time ([`rotate`]): the product is unchanged, and the few
//! channels in which a transformer's activations run 10–100× the rest are spread over their
//! block, so that one scale a row no longer rounds the other channels to a handful of steps.
//! With all-MiniLM-L6-v2 that took the cosine between a text's 8-bit and `f32` vectors from
//! 0.997 to 0.9997 (0.982 to 0.9985 for a two-letter text).
//!
//! One `vpdpbusd` does 64 multiply-adds where an `f32` FMA does 16, and the matrix products were
//! half of the fill's time; queries stay in `f32` (their few rows cost little, and a question's
//! vector is then exactly what it was). The products are tiled as 6 rows of tokens by 64 output
//! columns, 24 accumulators in registers, the weights packed so that one 64-byte load holds 4
//! inputs of 16 outputs; blocks of rows run in parallel on the caller's rayon pool. Elsewhere
//! than x86-64, and on CPUs without VNNI, [`available`] says no and the encoder stays in `f32`.

#![allow(unsafe_code, reason = "AVX-512 VNNI loads and stores within slices whose bounds are checked before")]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, __m512i, _mm512_add_ps, _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_loadu_ps, _mm512_loadu_si512,
    _mm512_mul_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_si512, _mm512_storeu_ps, _mm512_sub_epi32,
};

use rayon::prelude::*;

/// Rows of tokens one tile multiplies.
const ROWS: usize = 6;
/// Output columns of one tile: four vectors of 16.
const COLS: usize = 64;
/// Rows of tokens a parallel task takes (a multiple of [`ROWS`]).
const TASK_ROWS: usize = 48;

/// Whether this CPU runs the integer products.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// One linear layer's weights in 8 bits.
pub(crate) struct QuantLinear {
    outputs: usize,
    inputs: usize,
    /// Blocks of 16 outputs; in each, for every 4 inputs, 16 × 4 bytes (output-major).
    packed: Vec<i8>,
    /// Per output: its weights' scale.
    scales: Vec<f32>,
    /// Per output: 128 × the sum of its quantised weights (the unsigned rows' offset).
    offsets: Vec<i32>,
    bias: Vec<f32>,
}

impl QuantLinear {
    /// Quantises `weight` (`outputs × inputs`, row-major) and keeps `bias`; `None` when the shape
    /// does not tile (outputs and inputs multiples of 64, as BERT's 384, 768, 1,152 and 1,536 are).
    pub(crate) fn new(weight: &[f32], outputs: usize, inputs: usize, bias: Option<&[f32]>) -> Option<QuantLinear> {
        if outputs == 0
            || !outputs.is_multiple_of(COLS)
            || !inputs.is_multiple_of(ROTATE)
            || weight.len() != outputs * inputs
        {
            return None;
        }
        let quads = inputs / 4;
        let mut packed = vec![0i8; outputs * inputs];
        let mut scales = Vec::with_capacity(outputs);
        let mut offsets = Vec::with_capacity(outputs);
        let mut rotated = vec![0f32; inputs];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            rotated.copy_from_slice(row);
            rotate(&mut rotated);
            let row = &rotated;
            let scale = scale_of(row);
            let mut sum = 0i32;
            for (i, &w) in row.iter().enumerate() {
                let q = (w / scale).round().clamp(-127.0, 127.0) as i8;
                sum += i32::from(q);
                packed[(o / 16) * quads * 64 + (i / 4) * 64 + (o % 16) * 4 + i % 4] = q;
            }
            scales.push(scale);
            offsets.push(128 * sum);
        }
        let bias = bias.map_or_else(|| vec![0.0; outputs], <[f32]>::to_vec);
        Some(QuantLinear { outputs, inputs, packed, scales, offsets, bias })
    }

    pub(crate) fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x · Wᵀ + b` for the `rows` rows of `x` (`rows × inputs`, row-major). Call only where
    /// [`available`] said yes.
    pub(crate) fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.inputs, "input shape");
        assert!(available(), "int8 products need AVX-512 VNNI");
        let mut y = vec![0f32; rows * self.outputs];
        let task = |(t, out): (usize, &mut [f32])| {
            let first = t * TASK_ROWS;
            let n = out.len() / self.outputs;
            let (xq, row_scales) = quantise_rows(&x[first * self.inputs..(first + n) * self.inputs], self.inputs);
            // SAFETY: `available()` was checked above; every slice the tile reads and writes is
            // of the length it assumes (checked in `tiles`).
            #[cfg(target_arch = "x86_64")]
            unsafe {
                self.tiles(&xq, &row_scales, out)
            }
            #[cfg(not(target_arch = "x86_64"))]
            unreachable!("{} {} {}", xq.len(), row_scales.len(), out.len())
        };
        if rows > TASK_ROWS {
            y.par_chunks_mut(TASK_ROWS * self.outputs).enumerate().for_each(task);
        } else {
            task((0, &mut y));
        }
        y
    }

    #[cfg(target_arch = "x86_64")]
    /// Every tile of one block of rows: `xq` (`n × inputs`), their scales, and their outputs.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn tiles(&self, xq: &[u8], row_scales: &[f32], out: &mut [f32]) {
        let n = row_scales.len();
        assert!(xq.len() == n * self.inputs && out.len() == n * self.outputs);
        let block = (self.inputs / 4) * 64;
        for c in (0..self.outputs).step_by(COLS) {
            let weights = &self.packed[(c / 16) * block..(c / 16 + 4) * block];
            let mut r = 0;
            while r < n {
                let take = (n - r).min(ROWS);
                let xs = &xq[r * self.inputs..(r + take) * self.inputs];
                let ys = &mut out[r * self.outputs..(r + take) * self.outputs];
                let scales = &row_scales[r..r + take];
                // SAFETY: as for `tiles`; the tile's slices are of `take` rows.
                unsafe {
                    match take {
                        6 => self.tile::<6>(xs, scales, weights, c, ys),
                        5 => self.tile::<5>(xs, scales, weights, c, ys),
                        4 => self.tile::<4>(xs, scales, weights, c, ys),
                        3 => self.tile::<3>(xs, scales, weights, c, ys),
                        2 => self.tile::<2>(xs, scales, weights, c, ys),
                        _ => self.tile::<1>(xs, scales, weights, c, ys),
                    }
                }
                r += take;
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    /// `R` rows by the 64 outputs from `c`: `weights` are those outputs' four packed blocks.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn tile<const R: usize>(&self, xs: &[u8], scales: &[f32], weights: &[i8], c: usize, ys: &mut [f32]) {
        let k = self.inputs;
        let block = (k / 4) * 64;
        assert!(xs.len() == R * k && scales.len() == R && weights.len() == 4 * block && ys.len() == R * self.outputs);
        assert!(c + COLS <= self.outputs);
        let mut acc = [[_mm512_setzero_si512(); 4]; R];
        let w = weights.as_ptr();
        let x = xs.as_ptr();
        for q in 0..k / 4 {
            // SAFETY: `q * 64 + 64 <= block` and `j * block + block <= weights.len()`.
            let wv: [__m512i; 4] =
                std::array::from_fn(|j| unsafe { _mm512_loadu_si512(w.add(j * block + q * 64).cast()) });
            for (r, row) in acc.iter_mut().enumerate() {
                // SAFETY: `r * k + q * 4 + 4 <= R * k = xs.len()`.
                let a = unsafe { x.add(r * k + q * 4).cast::<i32>().read_unaligned() };
                let a = _mm512_set1_epi32(a);
                for (s, wj) in row.iter_mut().zip(&wv) {
                    *s = _mm512_dpbusd_epi32(*s, a, *wj);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            let rs = _mm512_set1_ps(scales[r]);
            for (j, s) in row.iter().enumerate() {
                let col = c + j * 16;
                // SAFETY: `col + 16 <= outputs`, the length of the per-output vectors and of a row of `ys`.
                unsafe {
                    let off = _mm512_loadu_si512(self.offsets.as_ptr().add(col).cast());
                    let v = _mm512_cvtepi32_ps(_mm512_sub_epi32(*s, off));
                    let ws = _mm512_loadu_ps(self.scales.as_ptr().add(col));
                    let b = _mm512_loadu_ps(self.bias.as_ptr().add(col));
                    let v = _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(v, rs), ws), b);
                    _mm512_storeu_ps(ys.as_mut_ptr().add(r * self.outputs + col), v);
                }
            }
        }
    }
}

/// Inputs rotated together (a power of two dividing every input width that is quantised).
const ROTATE: usize = 64;

/// `v` times the orthonormal Hadamard matrix of [`ROTATE`] inputs, block by block, in place.
/// Rotating the rows of both `x` and `W` leaves `x · Wᵀ` as it was, and spreads the few large
/// activations a transformer has in some channels over the whole block, so that one scale a
/// row loses less of the rest to rounding.
fn rotate(v: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512F (`available`).
        return unsafe { rotate_avx512(v) };
    }
    rotate_scalar(v);
}

/// [`rotate`] one pair at a time.
fn rotate_scalar(v: &mut [f32]) {
    let norm = 1.0 / (ROTATE as f32).sqrt();
    for block in v.chunks_exact_mut(ROTATE) {
        let mut h = 1;
        while h < ROTATE {
            for i in (0..ROTATE).step_by(2 * h) {
                for j in i..i + h {
                    let (a, b) = (block[j], block[j + h]);
                    block[j] = a + b;
                    block[j + h] = a - b;
                }
            }
            h *= 2;
        }
        block.iter_mut().for_each(|x| *x *= norm);
    }
}

/// [`rotate`] with each block in four vectors of 16: the strides of 32 and 16 add and subtract
/// whole vectors, the smaller ones each vector with its lanes swapped (`i ^ h`), the sum kept in
/// the lanes where `i & h == 0` and the difference in the others.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn rotate_avx512(v: &mut [f32]) {
    use std::arch::x86_64::_mm512_sub_ps;
    let norm = _mm512_set1_ps(1.0 / (ROTATE as f32).sqrt());
    let lanes = |h: i32| {
        let idx: [i32; 16] = std::array::from_fn(|i| i as i32 ^ h);
        // SAFETY: 16 `i32` make one 64-byte vector.
        unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) }
    };
    let swaps = [(lanes(8), 0xff00), (lanes(4), 0xf0f0), (lanes(2), 0xcccc), (lanes(1), 0xaaaa)];
    for block in v.chunks_exact_mut(ROTATE) {
        // SAFETY: a block holds 64 floats: four unaligned loads and stores of 16.
        let [a, b, c, d] = std::array::from_fn(|j| unsafe { _mm512_loadu_ps(block.as_ptr().add(16 * j)) });
        let (a, b, c, d) = (_mm512_add_ps(a, c), _mm512_add_ps(b, d), _mm512_sub_ps(a, c), _mm512_sub_ps(b, d));
        let mut out = [_mm512_add_ps(a, b), _mm512_sub_ps(a, b), _mm512_add_ps(c, d), _mm512_sub_ps(c, d)];
        for x in &mut out {
            for &(swap, mask) in &swaps {
                *x = within(*x, swap, mask);
            }
        }
        for (j, x) in out.into_iter().enumerate() {
            // SAFETY: as the loads.
            unsafe { _mm512_storeu_ps(block.as_mut_ptr().add(16 * j), _mm512_mul_ps(x, norm)) };
        }
    }
}

/// One butterfly stage inside a vector: lane `i` with lane `i ^ h` (`swap`), the sum where
/// `mask` is clear, the lower lane less the upper where it is set.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn within(x: __m512, swap: __m512i, mask: u16) -> __m512 {
    use std::arch::x86_64::{_mm512_mask_sub_ps, _mm512_permutexvar_ps};
    let swapped = _mm512_permutexvar_ps(swap, x);
    _mm512_mask_sub_ps(_mm512_add_ps(x, swapped), mask, swapped, x)
}

/// `max|v| / 127`, or 1 for a row of zeros.
fn scale_of(v: &[f32]) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max > 0.0 { max / 127.0 } else { 1.0 }
}

/// Each row of `x` (`inputs` wide) as `round(v / s) + 128` in a byte, with its scale `s`.
fn quantise_rows(x: &[f32], inputs: usize) -> (Vec<u8>, Vec<f32>) {
    let mut q = vec![0u8; x.len()];
    let mut scales = Vec::with_capacity(x.len() / inputs);
    let mut rotated = vec![0f32; inputs];
    for (row, out) in x.chunks_exact(inputs).zip(q.chunks_exact_mut(inputs)) {
        rotated.copy_from_slice(row);
        rotate(&mut rotated);
        let row = &rotated;
        let s = scale_of(row);
        let inv = 1.0 / s;
        // `v * inv` lies in [-127, 127]; + 128.5 then truncation rounds it, half up, to 1..=255.
        out.iter_mut().zip(row).for_each(|(o, v)| *o = (v * inv + 128.5) as u8);
        scales.push(s);
    }
    (q, scales)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reproducible spread of values with a few large ones, as activations have.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let v = (s as f32 / u32::MAX as f32) * 2.0 - 1.0;
                if i % 97 == 0 { v * 8.0 } else { v }
            })
            .collect()
    }

    fn reference(x: &[f32], w: &[f32], b: &[f32], rows: usize, outputs: usize, inputs: usize) -> Vec<f32> {
        let mut y = vec![0f32; rows * outputs];
        for r in 0..rows {
            for o in 0..outputs {
                let dot: f64 = (0..inputs).map(|i| f64::from(x[r * inputs + i]) * f64::from(w[o * inputs + i])).sum();
                y[r * outputs + o] = dot as f32 + b[o];
            }
        }
        y
    }

    #[test]
    fn integer_products_are_within_the_quantisation_of_the_float_ones() {
        if !available() {
            return;
        }
        // Rows that fill tiles and tasks and some that do not.
        for rows in [1, 5, 6, 7, 50, 97] {
            let (outputs, inputs) = (128, 192);
            let (x, w, b) = (values(rows * inputs, 1 + rows as u32), values(outputs * inputs, 7), values(outputs, 9));
            let q = QuantLinear::new(&w, outputs, inputs, Some(&b)).unwrap();
            let got = q.forward(&x, rows);
            let want = reference(&x, &w, &b, rows, outputs, inputs);
            for r in 0..rows {
                let (g, e) = (&got[r * outputs..(r + 1) * outputs], &want[r * outputs..(r + 1) * outputs]);
                let dot: f32 = g.iter().zip(e).map(|(a, b)| a * b).sum();
                let norm = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>().sqrt();
                let cos = dot / (norm(g) * norm(e));
                assert!(cos > 0.999, "row {r} of {rows}: cosine {cos}");
                let worst = g.iter().zip(e).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(worst < 0.05 * norm(e) / (outputs as f32).sqrt() * 4.0, "row {r}: off by {worst}");
            }
        }
    }

    #[test]
    fn the_rotation_is_its_own_inverse_and_the_vector_form_matches_the_scalar_one() {
        let x = values(4 * ROTATE, 11);
        let mut once = x.clone();
        rotate(&mut once);
        let mut scalar = x.clone();
        rotate_scalar(&mut scalar);
        for (a, b) in once.iter().zip(&scalar) {
            assert!((a - b).abs() < 1e-5, "{a} against {b}");
        }
        // The orthonormal Hadamard matrix is symmetric and orthogonal: twice is no rotation.
        rotate(&mut once);
        for (a, b) in once.iter().zip(&x) {
            assert!((a - b).abs() < 1e-5, "{a} against {b}");
        }
        // A spike in one channel is spread over its block.
        let mut spike = vec![0f32; ROTATE];
        spike[5] = 8.0;
        rotate(&mut spike);
        assert!(spike.iter().all(|v| (v.abs() - 1.0).abs() < 1e-6), "{spike:?}");
    }

    #[test]
    fn shapes_that_do_not_tile_stay_in_floats() {
        assert!(QuantLinear::new(&[0.0; 32 * 64], 32, 64, None).is_none());
        assert!(QuantLinear::new(&[0.0; 64 * 96], 64, 96, None).is_none());
        assert!(QuantLinear::new(&[0.0; 64 * 128], 64, 128, None).is_some());
    }
}
