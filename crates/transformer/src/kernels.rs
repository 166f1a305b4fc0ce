//! Element-wise steps of the encoder, in place and in a form the compiler vectorises: the
//! exact (erf) GELU of the feed-forward layers, the padding mask and softmax of the attention
//! scores, and the bias and residual adds.
//!
//! candle runs GELU and softmax through scalar `libm` calls (`erff`, `expf`) and writes every
//! step's result to a new tensor; on the deep tier's fill those steps and the page clearing of
//! their allocations were most of the CPU time the matrix products left. Here
//! `exp` is a range reduction to `2^n · e^r` with `|r| ≤ ln2/2` and a degree-6 polynomial for
//! `e^r`, and `erf` is the Abramowitz–Stegun rational form 7.1.26 (1.5e-7 in exact arithmetic)
//! over that `exp`; measured in `f32` against `libm`, `exp` is within 3e-7 relative and `erf`
//! within 6e-7 absolute (a few units in the last place): branch-free arithmetic on `f32` lanes,
//! compiled for the widest vectors the CPU has (`pulp` picks AVX2 or AVX-512 at run time). Every
//! op overwrites the tensor it is given, which must be one the caller alone holds (a fresh
//! result of the previous step), contiguous and `f32`.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, InplaceOp1, InplaceOp2, Layout, Result, Tensor};
use pulp::{Simd, WithSimd};

/// `e^x` for `f32`, to within 3e-7 relative; 0 below `-87.3` (where `e^x` leaves `f32`'s
/// normal range), `+inf` above `88` (the encoder only takes it of numbers ≤ 0).
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that `n · LN2_HI` is exact for the `n` that occur.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding and taking away 1.5 · 2^23 rounds to the nearest integer (|t| < 2^22) in plain
    // SSE2, where `round` is a call to libm that keeps the loop from being vectorised.
    const ROUNDER: f32 = 12_582_912.0;
    let clamped = x.clamp(-87.3, 88.0);
    let n = (clamped * LOG2_E + ROUNDER) - ROUNDER;
    let r = (clamped - n * LN2_HI) - n * LN2_LO;
    // Taylor terms of e^r up to r^6 / 720, in Horner form.
    let p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    let y = p * scale;
    if x < -87.3 {
        0.0
    } else if x > 88.0 {
        f32::INFINITY
    } else {
        y
    }
}

/// `erf(x)` for `f32`, to within 6e-7 absolute (Abramowitz and Stegun, 7.1.26).
#[inline(always)]
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [0.254_829_6, -0.284_496_74, 1.421_413_8, -1.453_152, 1.061_405_4];
    let a = x.abs();
    let t = 1.0 / (1.0 + P * a);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// GELU with the exact (erf) form: `x · (1 + erf(x / √2)) / 2`.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Where the contiguous `f32` values of `storage` under `layout` lie, or an error naming `op`.
fn span(storage: &CpuStorage, layout: &Layout, op: &str) -> Result<std::ops::Range<usize>> {
    match (storage, layout.contiguous_offsets()) {
        (CpuStorage::F32(_), Some((start, end))) => Ok(start..end),
        (CpuStorage::F32(_), None) => candle_core::bail!("{op}: the tensor must be contiguous"),
        (other, _) => candle_core::bail!("{op}: f32 only, got {:?}", other.dtype()),
    }
}

/// The values of a tensor an op changes (see [`span`]).
fn values<'a>(storage: &'a mut CpuStorage, layout: &Layout, op: &str) -> Result<&'a mut [f32]> {
    let at = span(storage, layout, op)?;
    match storage {
        CpuStorage::F32(v) => Ok(&mut v[at]),
        _ => unreachable!("span checked the type"),
    }
}

/// The values of a tensor an op reads (see [`span`]).
fn read<'a>(storage: &'a CpuStorage, layout: &Layout, op: &str) -> Result<&'a [f32]> {
    let at = span(storage, layout, op)?;
    match storage {
        CpuStorage::F32(v) => Ok(&v[at]),
        _ => unreachable!("span checked the type"),
    }
}

/// The loops, as `pulp` operations: `dispatch` runs them inside a function compiled for the
/// CPU's vector extensions, which they are inlined into (a closure would not be).
struct Gelu<'a>(&'a mut [f32]);

impl WithSimd for Gelu<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        self.0.iter_mut().for_each(|v| *v = gelu(*v));
    }
}

struct Softmax<'a> {
    scores: &'a mut [f32],
    /// Each text's key bias (`len` numbers a text), added to every row of the text's scores.
    bias: &'a [f32],
    len: usize,
}

impl WithSimd for Softmax<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let texts = self.bias.len() / self.len;
        // At least one text: `MaskedSoftmaxInPlace` checked the shapes.
        let rows_per_text = self.scores.len() / self.len / texts;
        for (r, row) in self.scores.chunks_exact_mut(self.len).enumerate() {
            let bias = &self.bias[(r / rows_per_text) * self.len..][..self.len];
            // Passes the compiler vectorises, each over one row in L1: a running sum or maximum
            // in one variable would be a chain it may not reorder.
            row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
            let max = lanes(row, f32::NEG_INFINITY, f32::max);
            row.iter_mut().for_each(|v| *v = exp(*v - max));
            let inv = 1.0 / lanes(row, 0.0, |a, b| a + b);
            row.iter_mut().for_each(|v| *v *= inv);
        }
    }
}

struct GeluInPlace;

impl InplaceOp1 for GeluInPlace {
    fn name(&self) -> &'static str {
        "gelu-erf-in-place"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        pulp::Arch::new().dispatch(Gelu(values(storage, layout, self.name())?));
        Ok(())
    }
}

/// `row` folded with `f` from `init`, over eight interleaved partial results.
#[inline(always)]
fn lanes(row: &[f32], init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [init; 8];
    let mut blocks = row.chunks_exact(8);
    for block in &mut blocks {
        for (a, v) in acc.iter_mut().zip(block) {
            *a = f(*a, *v);
        }
    }
    let rest = blocks.remainder().iter().fold(init, |a, v| f(a, *v));
    acc.iter().fold(rest, |a, v| f(a, *v))
}

struct MaskedSoftmaxInPlace;

impl InplaceOp2 for MaskedSoftmaxInPlace {
    fn name(&self) -> &'static str {
        "masked-softmax-in-place"
    }

    fn cpu_fwd(&self, scores: &mut CpuStorage, layout: &Layout, bias: &CpuStorage, bias_layout: &Layout) -> Result<()> {
        let len = layout.shape().dims().last().copied().unwrap_or(1).max(1);
        let bias = read(bias, bias_layout, self.name())?;
        let scores = values(scores, layout, self.name())?;
        let texts = bias.len() / len;
        if bias.len() != texts * len || texts == 0 || !(scores.len() / len).is_multiple_of(texts) {
            candle_core::bail!("{}: {} scores do not fit a bias of {} by {len}", self.name(), scores.len(), texts);
        }
        pulp::Arch::new().dispatch(Softmax { scores, bias, len });
        Ok(())
    }
}

struct AddInPlace;

impl InplaceOp2 for AddInPlace {
    fn name(&self) -> &'static str {
        "add-in-place"
    }

    fn cpu_fwd(&self, dst: &mut CpuStorage, layout: &Layout, src: &CpuStorage, src_layout: &Layout) -> Result<()> {
        let src = read(src, src_layout, self.name())?;
        let dst = values(dst, layout, self.name())?;
        if src.is_empty() || !dst.len().is_multiple_of(src.len()) {
            candle_core::bail!("{}: {} numbers cannot take {} added row by row", self.name(), dst.len(), src.len());
        }
        pulp::Arch::new().dispatch(Add { dst, src });
        Ok(())
    }
}

struct Add<'a> {
    dst: &'a mut [f32],
    src: &'a [f32],
}

impl WithSimd for Add<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for part in self.dst.chunks_exact_mut(self.src.len()) {
            part.iter_mut().zip(self.src).for_each(|(d, s)| *d += s);
        }
    }
}

/// Adds `src` to `dst` in place: a tensor of `dst`'s size (a residual), or one row repeated
/// over `dst`'s rows (a bias). `dst` must be the caller's alone, contiguous and `f32`.
pub(crate) fn add_in_place(dst: &Tensor, src: &Tensor) -> Result<()> {
    dst.inplace_op2(src, &AddInPlace)
}

/// Applies the exact GELU to `t` in place (see the module's note on what `t` must be).
pub(crate) fn gelu_erf_in_place(t: &Tensor) -> Result<()> {
    t.inplace_op1(&GeluInPlace)
}

/// Attention weights, in place: adds to each row of `scores` `(n, heads, len, len)` its text's
/// row of `bias` `(n, len)` (0 for a real key, a large negative number for padding) and takes
/// the softmax of the row — what `softmax(scores + bias)` gives, in one pass over the scores
/// and without the two tensors those steps would allocate.
pub(crate) fn masked_softmax_in_place(scores: &Tensor, bias: &Tensor) -> Result<()> {
    scores.inplace_op2(bias, &MaskedSoftmaxInPlace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n + 1` evenly spaced numbers from `lo` to `hi`.
    fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| lo + (hi - lo) * i as f32 / n as f32)
    }

    #[test]
    fn exp_is_within_its_bound_of_the_standard_one() {
        let mut worst = 0f64;
        for x in grid(-87.0, 87.9, 2_000_000) {
            let want = f64::from(x).exp();
            let rel = ((f64::from(exp(x)) - want) / want).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 3e-7, "worst relative error {worst:e}");
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(f32::MIN), 0.0);
        assert_eq!(exp(1000.0), f32::INFINITY);
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn erf_and_gelu_are_within_their_bounds_of_the_standard_ones() {
        let mut worst_erf = 0f32;
        let mut worst_gelu = 0f64;
        for x in grid(-12.0, 12.0, 2_000_000) {
            worst_erf = worst_erf.max((erf(x) - libm_erf(x)).abs());
            let want = 0.5 * f64::from(x) * (1.0 + f64::from(libm_erf(x * std::f32::consts::FRAC_1_SQRT_2)));
            worst_gelu = worst_gelu.max((f64::from(gelu(x)) - want).abs() / (1.0 + f64::from(x).abs()));
        }
        assert!(worst_erf < 6e-7, "worst absolute error of erf {worst_erf:e}");
        assert!(worst_gelu < 6e-7, "worst error of gelu, relative to 1 + |x|: {worst_gelu:e}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(gelu(-30.0), -0.0);
        assert_eq!(gelu(30.0), 30.0);
    }

    /// `erf` as candle computes it, the reference.
    fn libm_erf(x: f32) -> f32 {
        Tensor::new(&[x], &candle_core::Device::Cpu)
            .and_then(|t| t.erf())
            .and_then(|t| t.to_vec1::<f32>())
            .map(|v| v[0])
            .expect("candle's erf")
    }

    #[test]
    fn the_masked_softmax_matches_candles_and_gives_padding_no_weight() {
        let dev = candle_core::Device::Cpu;
        let (n, heads, len) = (3, 2, 37);
        let values: Vec<f32> = (0..n * heads * len * len).map(|i| ((i * 7919) % 101) as f32 / 9.0 - 5.0).collect();
        let scores = Tensor::from_vec(values, (n, heads, len, len), &dev).unwrap();
        // Text 1 has 30 real tokens, text 2 has 1; the rest is padding.
        let real = [len, 30, 1];
        let bias: Vec<f32> =
            (0..n).flat_map(|t| (0..len).map(move |j| if j < real[t] { 0.0 } else { f32::MIN })).collect();
        let bias = Tensor::from_vec(bias, (n, len), &dev).unwrap();
        let masked = scores.broadcast_add(&bias.reshape((n, 1, 1, len)).unwrap()).unwrap();
        let want = candle_nn::ops::softmax_last_dim(&masked)
            .and_then(|t| t.reshape((n * heads, len, len)))
            .and_then(|t| t.to_vec3::<f32>())
            .unwrap();
        let got = scores.copy().unwrap();
        masked_softmax_in_place(&got, &bias).unwrap();
        let got = got.reshape((n * heads, len, len)).unwrap().to_vec3::<f32>().unwrap();
        for (t, rows) in got.iter().enumerate() {
            for (g, w) in rows.iter().flatten().zip(want[t].iter().flatten()) {
                assert!((g - w).abs() < 1e-6, "{g} against {w}");
            }
            let text = t / heads;
            for row in rows {
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
                assert!(row[real[text]..].iter().all(|&p| p == 0.0), "padding gets no weight");
            }
        }
    }

    #[test]
    fn add_in_place_adds_a_tensor_or_a_row_to_every_row() {
        let dev = candle_core::Device::Cpu;
        let t = Tensor::from_vec((0..60).map(|i| i as f32).collect::<Vec<_>>(), (4, 15), &dev).unwrap();
        let row = Tensor::from_vec((0..15).map(|i| i as f32 * 0.5).collect::<Vec<_>>(), 15, &dev).unwrap();
        let got = t.copy().unwrap();
        add_in_place(&got, &row).unwrap();
        assert_eq!(got.to_vec2::<f32>().unwrap(), t.broadcast_add(&row).unwrap().to_vec2::<f32>().unwrap());
        let got = t.copy().unwrap();
        add_in_place(&got, &t).unwrap();
        assert_eq!(got.to_vec2::<f32>().unwrap(), (&t + &t).unwrap().to_vec2::<f32>().unwrap());
        let odd = Tensor::zeros(7, candle_core::DType::F32, &dev).unwrap();
        assert!(add_in_place(&t.copy().unwrap(), &odd).is_err(), "a row that does not fit is refused");
    }

    #[test]
    fn the_in_place_gelu_matches_candles() {
        let dev = candle_core::Device::Cpu;
        let values: Vec<f32> = (0..3000).map(|i| (i as f32 - 1500.0) / 200.0).collect();
        let t = Tensor::from_vec(values, (3, 1000), &dev).unwrap();
        let want = t.gelu_erf().unwrap().to_vec2::<f32>().unwrap();
        let got = t.copy().unwrap();
        gelu_erf_in_place(&got).unwrap();
        for (g, w) in got.to_vec2::<f32>().unwrap().iter().flatten().zip(want.iter().flatten()) {
            assert!((g - w).abs() < 1e-6, "{g} against {w}");
        }
    }
}
