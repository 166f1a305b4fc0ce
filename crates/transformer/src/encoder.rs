//! The BERT encoder the tier runs: the same arithmetic as `candle_transformers`' `BertModel`
//! (which the tests compare it with), laid out for fewer passes over the large tensors, since on
//! a CPU those passes and their allocations cost as much as the matrix products:
//!
//! - one matrix product for the query, key and value projections (their weights side by side),
//!   on the tokens of the whole group as one matrix;
//! - the attention scale folded into the query weights at load, so the scores are not divided;
//! - the padding mask and the softmax as one pass over each row of scores, in place, where
//!   the generic steps make six passes and four copies of the batch × heads × length² scores,
//!   and the exact GELU in place, both with a vectorised `exp` (`kernels`);
//! - the token-type embedding as one row (every text is segment 0), added with the positions;
//! - a query's few tokens projected as weights × tokensᵀ: the matrix kernels work in tiles of
//!   up to 64 rows (AVX-512), so a product with 8 rows on the left wastes most of each tile, and
//!   the weights' 384–1,536 rows fill them;
//! - on a CPU with AVX-512 VNNI, the background fill's projections in 8-bit integers (`int8`),
//!   where queries keep `f32`.

use candle_core::{D, DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};
use candle_transformers::models::bert::{Config, HiddenAct};

use crate::int8::QuantLinear;
use crate::kernels;

struct Layer {
    qkv: Proj,
    attention_out: Proj,
    attention_norm: LayerNorm,
    up: Proj,
    down: Proj,
    norm: LayerNorm,
}

/// A linear layer, with its 8-bit form when the fill runs in 8 bits.
struct Proj {
    linear: Linear,
    quant: Option<QuantLinear>,
}

impl Proj {
    fn new(linear: Linear, quantise: bool) -> Result<Proj> {
        let quant = if quantise {
            let (outputs, inputs) = linear.weight().dims2()?;
            let weight = linear.weight().flatten_all()?.to_vec1::<f32>()?;
            let bias = linear.bias().map(|b| b.to_vec1::<f32>()).transpose()?;
            QuantLinear::new(&weight, outputs, inputs, bias.as_deref())
        } else {
            None
        };
        Ok(Proj { linear, quant })
    }
}

/// How the projections run: [`Precision::Int8`] where the CPU allows (the fill), else `f32`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Precision {
    F32,
    Int8,
}

pub(crate) struct Encoder {
    words: Embedding,
    /// The position table plus the token-type embedding of segment 0.
    positions: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    act: HiddenAct,
}

/// Rows of tokens below which [`project`] puts the weights on the left.
const FEW_ROWS: usize = 64;

/// `x · Wᵀ + b` of `proj` for the rows of `x` (a tensor of its own: the caller may change it
/// in place).
fn project(proj: &Proj, x: &Tensor, precision: Precision) -> Result<Tensor> {
    if let (Precision::Int8, Some(q)) = (precision, &proj.quant) {
        let (rows, _) = x.dims2()?;
        let x = x.contiguous()?;
        let (storage, layout) = x.storage_and_layout();
        let candle_core::Storage::Cpu(candle_core::CpuStorage::F32(data)) = &*storage else {
            candle_core::bail!("8-bit projections take f32 tensors on the CPU")
        };
        let y = q.forward(&data[layout.start_offset()..layout.start_offset() + x.elem_count()], rows);
        return Tensor::from_vec(y, (rows, q.outputs()), x.device());
    }
    let linear = &proj.linear;
    if x.dim(0)? >= FEW_ROWS {
        let y = x.matmul(&linear.weight().t()?)?;
        if let Some(b) = linear.bias() {
            kernels::add_in_place(&y, b)?;
        }
        return Ok(y);
    }
    let y = linear.weight().matmul(&x.t()?)?.t()?;
    match linear.bias() {
        Some(b) => y.broadcast_add(b),
        None => y.contiguous(),
    }
}

impl Encoder {
    /// Reads the weights of a BERT checkpoint (under `bert.`, `<model_type>.` or no prefix), with
    /// the projections' 8-bit forms when `quantise` (only where [`crate::int8::available`]).
    pub(crate) fn load(vb: VarBuilder, config: &Config, quantise: bool) -> Result<Encoder> {
        let mut tried = Vec::new();
        let mut prefixes = vec![String::new(), "bert".to_string()];
        prefixes.extend(config.model_type.clone());
        for prefix in prefixes {
            let vb = if prefix.is_empty() { vb.clone() } else { vb.pp(&prefix) };
            match Encoder::load_at(vb, config, quantise) {
                Ok(encoder) => return Ok(encoder),
                Err(e) => tried.push(e),
            }
        }
        Err(tried.swap_remove(0))
    }

    fn load_at(vb: VarBuilder, config: &Config, quantise: bool) -> Result<Encoder> {
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        let e = vb.pp("embeddings");
        let words = embedding(config.vocab_size, h, e.pp("word_embeddings"))?;
        let positions = e.get((config.max_position_embeddings, h), "position_embeddings.weight")?;
        let segment = e.get((config.type_vocab_size, h), "token_type_embeddings.weight")?.narrow(0, 0, 1)?;
        let positions = positions.broadcast_add(&segment)?;
        let embedding_norm = layer_norm(h, config.layer_norm_eps, e.pp("LayerNorm"))?;
        let scale = 1.0 / ((h / config.num_attention_heads) as f64).sqrt();
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                let a = l.pp("attention");
                let part = |name: &str| -> Result<(Tensor, Tensor)> {
                    let p = a.pp("self").pp(name);
                    Ok((p.get((h, h), "weight")?, p.get(h, "bias")?))
                };
                let (qw, qb) = part("query")?;
                let (kw, kb) = part("key")?;
                let (vw, vb_) = part("value")?;
                let weight = Tensor::cat(&[(qw * scale)?, kw, vw], 0)?;
                let bias = Tensor::cat(&[(qb * scale)?, kb, vb_], 0)?;
                Ok(Layer {
                    qkv: Proj::new(Linear::new(weight, Some(bias)), quantise)?,
                    attention_out: Proj::new(linear(h, h, a.pp("output").pp("dense"))?, quantise)?,
                    attention_norm: layer_norm(h, config.layer_norm_eps, a.pp("output").pp("LayerNorm"))?,
                    up: Proj::new(linear(h, config.intermediate_size, l.pp("intermediate").pp("dense"))?, quantise)?,
                    down: Proj::new(linear(config.intermediate_size, h, l.pp("output").pp("dense"))?, quantise)?,
                    norm: layer_norm(h, config.layer_norm_eps, l.pp("output").pp("LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Encoder {
            words,
            positions,
            embedding_norm,
            layers,
            heads: config.num_attention_heads,
            act: config.hidden_act,
        })
    }

    /// The last hidden states, `(n, len, hidden)`, of token ids `(n, len)` whose real tokens are
    /// 1 in `mask` `(n, len)` (0 for padding), the projections run in `precision`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor, precision: Precision) -> Result<Tensor> {
        let (n, len) = ids.dims2()?;
        let x = self.words.forward(ids)?.broadcast_add(&self.positions.narrow(0, 0, len)?)?;
        let h = x.dim(D::Minus1)?;
        // Every token of the group as one row: each projection is one matrix product.
        let mut x = self.embedding_norm.forward(&x)?.reshape((n * len, h))?;
        // 0 where a key is a real token, a large negative number where it is padding.
        let bias = ((mask.ones_like()? - mask)? * f64::from(f32::MIN))?.to_dtype(DType::F32)?.contiguous()?;
        let (heads, dh) = (self.heads, h / self.heads);
        for layer in &self.layers {
            let qkv = project(&layer.qkv, &x, precision)?.reshape((n, len, 3, heads, dh))?;
            let part = |k: usize| qkv.narrow(2, k, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous();
            let (q, k, v) = (part(0)?, part(1)?, part(2)?);
            let scores = q.matmul(&k.t()?)?;
            kernels::masked_softmax_in_place(&scores, &bias)?;
            let context = scores.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((n * len, h))?;
            let attended = project(&layer.attention_out, &context, precision)?;
            kernels::add_in_place(&attended, &x)?;
            let attended = layer.attention_norm.forward(&attended)?;
            let up = project(&layer.up, &attended, precision)?;
            let up = match self.act {
                HiddenAct::Gelu => {
                    kernels::gelu_erf_in_place(&up)?;
                    up
                }
                HiddenAct::GeluApproximate => up.gelu()?,
                HiddenAct::Relu => up.relu()?,
            };
            let down = project(&layer.down, &up, precision)?;
            kernels::add_in_place(&down, &attended)?;
            x = layer.norm.forward(&down)?;
        }
        x.reshape((n, len, h))
    }
}
