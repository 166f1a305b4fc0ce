//! `TransformerEmbedder`: one BERT-family sentence encoder from a model directory, as the memory
//! engine's `Embedder`. Opening reads only the small files (config, pooling, sequence length,
//! the weights' sha256 from the install manifest or by hashing); the weights and tokenizer load
//! on first use (or `load()`), so opening the memory store stays fast.
//!
//! Embedding follows sentence-transformers: tokenize with `[CLS]`/`[SEP]`, cut at the model's
//! `max_seq_length` (`sentence_bert_config.json`, else 512 or the position table if smaller),
//! run the encoder, pool (mean over real tokens, or the `[CLS]` token, as the pooling config
//! says), L2-normalise. A batch is sorted by length and run in groups of similar length, so
//! short texts are not padded to the longest one; a group holds up to [`GROUP_TOKENS`] padded
//! tokens, so short texts go many at a time and long ones a few.
//!
//! Queries come first: `embed` (the background fill's batches) runs on a thread pool of its own,
//! so a query's matrix products (on the caller's thread and candle's global pool) never queue
//! behind the fill's; `embed_query` marks itself in flight, and the fill waits before each group
//! until no query is running, so a query shares the cores with at most the one group already
//! started.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use openhuman_memory::embed::{EmbedError, Embedder};
use rayon::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use super::encoder::{Encoder, Precision};
use super::error::TransformerError;
use super::store::MANIFEST;

/// Padded tokens (rows × longest row) run through the encoder at once: 16 texts of 256 tokens,
/// 64 of 64. Larger groups gain little on a CPU and make a query wait longer for the group in
/// progress.
pub const GROUP_TOKENS: usize = 4096;

/// Most texts in one group, however short.
const GROUP_ROWS: usize = 256;

/// How many windows of `max_seq_length` tokens a text is read in by default; the rest of a
/// longer text is cut. Chunks are at most ~500 estimated tokens (about 700 word pieces), so three
/// windows of a 256-token model cover them; four leave room for code or a language that splits
/// finely. One window is what sentence-transformers does: only a text's start counts.
pub const DEFAULT_WINDOWS: usize = 4;

/// The most windows `with_windows` takes (`memory.embeddings.transformer_windows` is checked
/// against the same bound).
const MAX_WINDOWS: usize = 16;

/// The deep tier's weight in hybrid ranking (see `Embedder::fusion_weight`), for chat and the
/// rest alike, unless the model directory's [`RANKING_FILE`] says otherwise.
const TRANSFORMER_FUSION_WEIGHT: f64 = 0.4;

/// Optional file of a model directory with the weights measured for that model:
/// `{"fusion_weight": 0.8, "chat_fusion_weight": 0.4}` (either may be left out).
/// `tools/onnx-import/convert.py` writes it.
pub(crate) const RANKING_FILE: &str = "openhuman-ranking.json";

/// How long the fill waits for running queries before it goes on anyway, so a steady stream of
/// queries slows the fill without stopping it.
const QUERY_WAIT: Duration = Duration::from_millis(500);

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean over the real (unpadded) tokens: all-MiniLM-L6-v2 and most sentence-transformers.
    Mean,
    /// The `[CLS]` token's vector: the BGE family.
    Cls,
}

impl Pooling {
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
        }
    }
}

/// What opening found in the directory.
#[derive(Debug, Clone)]
struct Spec {
    config: Config,
    pooling: Pooling,
    max_len: usize,
    /// Most windows of `max_len` tokens a text is read in (see [`windows`]).
    windows: usize,
    /// Prefix for queries (`config_sentence_transformers.json` `prompts.query`), if any.
    query_prompt: Option<String>,
}

struct Loaded {
    model: Encoder,
    tokenizer: Tokenizer,
    /// The ids the tokenizer puts before and after a text (`[CLS]`, `[SEP]`), repeated around
    /// every window; `None` when its template is not one id on each side, and then a text is
    /// read in one window, cut at `max_seq_length`.
    frame: Option<(u32, u32)>,
}

pub struct TransformerEmbedder {
    dir: PathBuf,
    name: String,
    spec: Spec,
    signature: String,
    loaded: OnceLock<Result<Loaded, String>>,
    group_tokens: usize,
    parallel_groups: bool,
    /// Whether the fill's projections run in 8 bits where the CPU can (`int8`); queries never do.
    int8_fill: bool,
    fusion_weight: f64,
    chat_fusion_weight: f64,
    queries: QueryGate,
    /// The fill's threads (built on first use): as many as candle would use.
    fill_pool: OnceLock<Option<rayon::ThreadPool>>,
    /// The weights' sha256, for the signature.
    sha: String,
}

/// Which model made a vector and how: name, width, pooling, token limit, windows (when more than
/// one: a cut text's vector differs from a whole one's) and the weights' hash.
fn signature(name: &str, spec: &Spec, sha: &str) -> String {
    let windows = if spec.windows > 1 { format!("w{}", spec.windows) } else { String::new() };
    format!("{name}/{}/{}-{}{windows}/{}", spec.config.hidden_size, spec.pooling.name(), spec.max_len, &sha[..12])
}

/// Queries in flight, which the fill waits for between groups.
#[derive(Default)]
struct QueryGate {
    running: Mutex<usize>,
    idle: Condvar,
}

struct InFlight<'a>(&'a QueryGate);

impl QueryGate {
    fn enter(&self) -> InFlight<'_> {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlight(self)
    }

    /// Returns once no query runs, or after `QUERY_WAIT`.
    fn wait_idle(&self) {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self.idle.wait_timeout_while(running, QUERY_WAIT, |n| *n > 0);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut n = self.0.running.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.0.idle.notify_all();
        }
    }
}

fn read_json(path: &Path) -> Result<Value, TransformerError> {
    let text = std::fs::read_to_string(path).map_err(TransformerError::io("cannot read", path))?;
    serde_json::from_str(&text)
        .map_err(|e| TransformerError::Invalid(format!("{} is not valid JSON: {e}", path.display())))
}

fn optional_json(path: &Path) -> Result<Option<Value>, TransformerError> {
    if path.is_file() { read_json(path).map(Some) } else { Ok(None) }
}

/// The blend weights for chunks other than chat and for chat: [`RANKING_FILE`]'s, each
/// defaulting to [`TRANSFORMER_FUSION_WEIGHT`].
fn ranking_weights(dir: &Path) -> Result<(f64, f64), TransformerError> {
    let path = dir.join(RANKING_FILE);
    let Some(file) = optional_json(&path)? else {
        return Ok((TRANSFORMER_FUSION_WEIGHT, TRANSFORMER_FUSION_WEIGHT));
    };
    let weight = |key: &str| match &file[key] {
        Value::Null => Ok(TRANSFORMER_FUSION_WEIGHT),
        v => v.as_f64().filter(|w| (0.0..=1.0).contains(w)).ok_or_else(|| {
            TransformerError::Invalid(format!("{}: `{key}` must be a number from 0 to 1", path.display()))
        }),
    };
    Ok((weight("fusion_weight")?, weight("chat_fusion_weight")?))
}

/// The pooling the sentence-transformers files ask for: the Pooling module named in
/// `modules.json`, else `1_Pooling/config.json`, else mean.
fn pooling(dir: &Path) -> Result<Pooling, TransformerError> {
    let mut config_path = dir.join("1_Pooling").join("config.json");
    if let Some(modules) = optional_json(&dir.join("modules.json"))? {
        let module = modules
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["type"].as_str().is_some_and(|t| t.ends_with(".Pooling") || t == "Pooling"));
        if let Some(path) = module.and_then(|m| m["path"].as_str()) {
            config_path = dir.join(path).join("config.json");
        }
    }
    let Some(c) = optional_json(&config_path)? else { return Ok(Pooling::Mean) };
    let on = |key: &str| c[key].as_bool().unwrap_or(false);
    if on("pooling_mode_cls_token") {
        Ok(Pooling::Cls)
    } else if on("pooling_mode_mean_tokens") {
        Ok(Pooling::Mean)
    } else {
        Err(TransformerError::Invalid(format!(
            "{} asks for a pooling other than mean or CLS, which is not supported",
            config_path.display()
        )))
    }
}

/// sha256 of the weights: from the install manifest when it matches the file's size, else
/// computed (a directory configured by path, not installed).
fn weights_sha256(dir: &Path) -> Result<String, TransformerError> {
    let weights = dir.join("model.safetensors");
    let size = std::fs::metadata(&weights).map_err(TransformerError::io("cannot read", &weights))?.len();
    if let Ok(Some(m)) = optional_json(&dir.join(MANIFEST))
        && m["weights_size"].as_u64() == Some(size)
        && let Some(sha) = m["weights_sha256"].as_str()
    {
        return Ok(sha.to_string());
    }
    sha256_file(&weights)
}

pub(crate) fn sha256_file(path: &Path) -> Result<String, TransformerError> {
    let mut f = std::fs::File::open(path).map_err(TransformerError::io("cannot read", path))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(TransformerError::io("cannot read", path))?;
    Ok(hex::encode(h.finalize()))
}

impl TransformerEmbedder {
    /// Opens the model in `dir` under `name` (which goes into the signature, so vectors say
    /// which model made them). Checks the files and reads the small ones; see `load`.
    pub fn open(dir: &Path, name: &str) -> Result<TransformerEmbedder, TransformerError> {
        for f in ["model.safetensors", "tokenizer.json", "config.json"] {
            if !dir.join(f).is_file() {
                return Err(TransformerError::Invalid(format!(
                    "{} has no {f}: a model directory holds model.safetensors, tokenizer.json and config.json",
                    dir.display()
                )));
            }
        }
        let config_path = dir.join("config.json");
        let config: Config = serde_json::from_value(read_json(&config_path)?).map_err(|e| {
            TransformerError::Invalid(format!("{} is not a BERT config this build can run: {e}", config_path.display()))
        })?;
        if config.model_type.as_deref().is_some_and(|t| t != "bert") {
            return Err(TransformerError::Invalid(format!(
                "{}: model_type {:?} is not supported (BERT-family encoders only)",
                config_path.display(),
                config.model_type.as_deref().unwrap_or("")
            )));
        }
        let st_max = optional_json(&dir.join("sentence_bert_config.json"))?
            .and_then(|c| c["max_seq_length"].as_u64())
            .map(|n| n as usize);
        let max_len = st_max.unwrap_or(512).min(config.max_position_embeddings).max(8);
        let query_prompt = optional_json(&dir.join("config_sentence_transformers.json"))?
            .and_then(|c| c["prompts"]["query"].as_str().map(str::to_string))
            .filter(|p| !p.is_empty());
        let pooling = pooling(dir)?;
        let (fusion_weight, chat_fusion_weight) = ranking_weights(dir)?;
        let sha = weights_sha256(dir)?;
        let spec = Spec { config, pooling, max_len, windows: DEFAULT_WINDOWS, query_prompt };
        let signature = signature(name, &spec, &sha);
        Ok(TransformerEmbedder {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            spec,
            signature,
            loaded: OnceLock::new(),
            group_tokens: GROUP_TOKENS,
            parallel_groups: true,
            int8_fill: true,
            fusion_weight,
            chat_fusion_weight,
            queries: QueryGate::default(),
            fill_pool: OnceLock::new(),
            sha,
        })
    }

    /// Reads a text in at most `n` windows of `max_seq_length` tokens (1 to `MAX_WINDOWS`, 16;
    /// default [`DEFAULT_WINDOWS`]). The count is part of the signature, so vectors made with
    /// another count are made again, not mixed. Set it before the first embedding or `load`:
    /// loading sets the tokenizer's cut from it.
    pub fn with_windows(mut self, n: usize) -> TransformerEmbedder {
        self.spec.windows = n.clamp(1, MAX_WINDOWS);
        self.signature = signature(&self.name, &self.spec, &self.sha);
        self
    }

    /// Sets how much hybrid ranking trusts this model against BM25 (`Embedder::fusion_weight`;
    /// default 0.4, `TRANSFORMER_FUSION_WEIGHT`, or what the directory's [`RANKING_FILE`] says),
    /// for chat chunks and the rest alike, clamped to `0..=1`. Ranking only: vectors and the
    /// signature stay the same.
    pub fn with_fusion_weight(mut self, w: f64) -> TransformerEmbedder {
        self.fusion_weight = w.clamp(0.0, 1.0);
        self.chat_fusion_weight = self.fusion_weight;
        self
    }

    /// Sets the weight for chat chunks alone (`Embedder::chat_fusion_weight`), after
    /// [`with_fusion_weight`](Self::with_fusion_weight) when both are set.
    pub fn with_chat_fusion_weight(mut self, w: f64) -> TransformerEmbedder {
        self.chat_fusion_weight = w.clamp(0.0, 1.0);
        self
    }

    /// Sets the padded tokens per encoder run (default [`GROUP_TOKENS`]) and whether the fill
    /// runs its groups side by side (default) or one after another, each using every core only
    /// in the matrix products; for measuring one against the other.
    pub fn with_fill_layout(mut self, group_tokens: usize, parallel_groups: bool) -> TransformerEmbedder {
        self.group_tokens = group_tokens.max(1);
        self.parallel_groups = parallel_groups;
        self
    }

    /// Whether the fill runs its projections in 8-bit integers on a CPU with AVX-512 VNNI
    /// (default yes; queries stay in `f32` either way). The vectors of the two ways agree to a
    /// cosine of 0.998 or more (0.9997 for a sentence), so the signature is the same and a store
    /// filled one way is not filled again the other; for measuring one against the other.
    pub fn with_int8_fill(mut self, on: bool) -> TransformerEmbedder {
        self.int8_fill = on;
        self
    }

    /// Whether the fill runs in 8-bit integers here (see [`with_int8_fill`](Self::with_int8_fill)).
    pub fn int8_fill(&self) -> bool {
        self.int8_fill && crate::int8::available()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn pooling(&self) -> Pooling {
        self.spec.pooling
    }

    /// Longest input in tokens; longer texts are cut.
    pub fn max_len(&self) -> usize {
        self.spec.max_len
    }

    /// Loads the weights and tokenizer now (otherwise the first embedding does).
    pub fn load(&self) -> Result<(), TransformerError> {
        self.loaded().map(|_| ()).map_err(|e| TransformerError::Model(e.to_string()))
    }

    fn loaded(&self) -> Result<&Loaded, &str> {
        self.loaded
            .get_or_init(|| {
                let started = std::time::Instant::now();
                let loaded = load(&self.dir, &self.spec, self.int8_fill()).map_err(|e| e.to_string());
                match &loaded {
                    Ok(_) => tracing::info!(
                        model = %self.name,
                        ms = started.elapsed().as_millis() as u64,
                        int8_fill = self.int8_fill(),
                        "transformer model loaded"
                    ),
                    Err(e) => tracing::error!(model = %self.name, error = %e, "transformer model not loaded"),
                }
                loaded
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Embeds `texts`; `fill` (the background fill's call) makes it wait before each group while
    /// a query runs, and run the projections in 8 bits where the CPU can (`int8`).
    /// A text longer than the model's `max_seq_length` is read in windows (see [`windows`]),
    /// each encoded and pooled on its own; its vector is the windows' mean weighted by their
    /// tokens, so every part of a chunk counts, not only its first 256 tokens.
    fn run(&self, texts: &[&str], fill: bool) -> Result<Vec<Vec<f32>>, TransformerError> {
        let loaded = self.loaded().map_err(|e| TransformerError::Model(e.to_string()))?;
        let precision = if fill && self.int8_fill() { Precision::Int8 } else { Precision::F32 };
        let encodings = loaded
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| TransformerError::Model(format!("tokenizing failed: {e}")))?;
        // Every window of every text, with the text it belongs to.
        let mut rows: Vec<(usize, Vec<u32>)> = Vec::with_capacity(texts.len());
        for (i, e) in encodings.iter().enumerate() {
            for w in windows(e.get_ids(), self.spec.max_len, self.spec.windows, loaded.frame) {
                rows.push((i, w));
            }
        }
        let lens: Vec<usize> = rows.iter().map(|r| r.1.len()).collect();
        let encode = |group: &Vec<usize>| {
            if fill {
                self.queries.wait_idle();
            }
            let ids: Vec<&[u32]> = group.iter().map(|&i| rows[i].1.as_slice()).collect();
            encode_group(&loaded.model, self.spec.pooling, &ids, precision)
        };
        // The fill runs its groups side by side, one per core of its pool: every step of the
        // encoder (not only the matrix products candle splits) then uses all the cores. So that
        // a batch of short texts also keeps every core busy, it makes at least one group a core.
        let side_by_side = fill && self.parallel_groups && rayon::current_num_threads() > 1;
        let max_rows = if side_by_side { rows.len().div_ceil(rayon::current_num_threads()) } else { GROUP_ROWS };
        let groups = groups(&lens, self.group_tokens, max_rows);
        let vecs: Vec<Vec<Vec<f32>>> = if side_by_side && groups.len() > 1 {
            groups.par_iter().map(encode).collect::<Result<_, _>>()?
        } else {
            groups.iter().map(encode).collect::<Result<_, _>>()?
        };
        let dims = self.spec.config.hidden_size;
        let mut out = vec![vec![0f32; dims]; texts.len()];
        for (group, vs) in groups.iter().zip(vecs) {
            for (&r, v) in group.iter().zip(vs) {
                let (text, weight) = (rows[r].0, lens[r] as f32);
                out[text].iter_mut().zip(&v).for_each(|(o, x)| *o += weight * x);
            }
        }
        out.iter_mut().for_each(|v| normalise(v));
        Ok(out)
    }
}

/// The token-id rows a text is encoded in: the text itself when it fits `max_len`; otherwise its
/// content split into at most `most` windows of equal length, each framed with the tokenizer's
/// own first and last ids as the text was, so each is a valid input on its own. With one window
/// or without a known frame, the text cut at `max_len` (as sentence-transformers does).
pub(crate) fn windows(ids: &[u32], max_len: usize, most: usize, frame: Option<(u32, u32)>) -> Vec<Vec<u32>> {
    let Some((first, last)) = frame.filter(|_| ids.len() > max_len && max_len > 2 && most > 1) else {
        return vec![ids[..ids.len().min(max_len)].to_vec()];
    };
    let room = max_len - 2;
    let content = &ids[1..ids.len() - 1];
    let content = &content[..content.len().min(room * most)];
    let n = content.len().div_ceil(room);
    let size = content.len().div_ceil(n);
    content
        .chunks(size)
        .map(|w| {
            let mut row = Vec::with_capacity(w.len() + 2);
            row.push(first);
            row.extend_from_slice(w);
            row.push(last);
            row
        })
        .collect()
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// The texts (indexes into `lens`, their lengths in tokens) in encoder runs: longest first, each
/// run as many texts as fit `budget` padded tokens at its first (longest) text's length, at most
/// `max_rows` (and [`GROUP_ROWS`]).
pub(crate) fn groups(lens: &[usize], budget: usize, max_rows: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lens[i]));
    let mut out = Vec::new();
    let mut rest = &order[..];
    while let Some(&first) = rest.first() {
        let n = (budget / lens[first].max(1)).clamp(1, GROUP_ROWS.min(max_rows).max(1)).min(rest.len());
        out.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    out
}

fn load(dir: &Path, spec: &Spec, int8: bool) -> Result<Loaded, TransformerError> {
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).map_err(TransformerError::io("cannot read", &weights))?;
    let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
        .map_err(|e| TransformerError::Model(format!("{} is not a safetensors file: {e}", weights.display())))?;
    let model = Encoder::load(vb, &spec.config, int8).map_err(|e| {
        TransformerError::Model(format!(
            "{} does not fit {}: {e}",
            weights.display(),
            dir.join("config.json").display()
        ))
    })?;
    let tok_path = dir.join("tokenizer.json");
    let mut tokenizer = Tokenizer::from_file(&tok_path)
        .map_err(|e| TransformerError::Model(format!("{} cannot be loaded: {e}", tok_path.display())))?;
    tokenizer.with_padding(None);
    let frame = match tokenizer.encode("", true).map(|e| e.get_ids().to_vec()) {
        Ok(ids) if ids.len() == 2 => Some((ids[0], ids[1])),
        _ => None,
    };
    // Cut only past what the windows can hold (`windows` splits the rest); without a frame
    // to put around a window, at `max_seq_length`, where the tokenizer keeps its closing id.
    let cut = if frame.is_some() { spec.max_len.saturating_sub(2) * spec.windows + 2 } else { spec.max_len };
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: cut, ..TruncationParams::default() }))
        .map_err(|e| TransformerError::Model(format!("{}: {e}", tok_path.display())))?;
    Ok(Loaded { model, tokenizer, frame })
}

/// Runs one group of token-id rows (padded with 0 to the longest) and pools each row.
fn encode_group(
    model: &Encoder,
    pooling: Pooling,
    rows: &[&[u32]],
    precision: Precision,
) -> Result<Vec<Vec<f32>>, TransformerError> {
    let err = |e: candle_core::Error| TransformerError::Model(format!("running the encoder failed: {e}"));
    let (n, len) = (rows.len(), rows.iter().map(|r| r.len()).max().unwrap_or(0).max(1));
    let mut ids = vec![0u32; n * len];
    let mut mask = vec![0f32; n * len];
    for (r, row) in rows.iter().enumerate() {
        ids[r * len..r * len + row.len()].copy_from_slice(row);
        mask[r * len..r * len + row.len()].iter_mut().for_each(|m| *m = 1.0);
    }
    let ids = Tensor::from_vec(ids, (n, len), &Device::Cpu).map_err(err)?;
    let mask = Tensor::from_vec(mask, (n, len), &Device::Cpu).map_err(err)?;
    let hidden = model.forward(&ids, &mask, precision).map_err(err)?;
    let pooled = match pooling {
        Pooling::Cls => hidden.narrow(1, 0, 1).and_then(|t| t.squeeze(1)).map_err(err)?,
        Pooling::Mean => {
            let m = mask.unsqueeze(2).map_err(err)?;
            let sum = hidden.broadcast_mul(&m).and_then(|t| t.sum(1)).map_err(err)?;
            let count = m.sum(1).and_then(|c| c.clamp(1e-9, f32::MAX)).map_err(err)?;
            sum.broadcast_div(&count).map_err(err)?
        }
    };
    let mut out: Vec<Vec<f32>> = pooled.to_vec2().map_err(err)?;
    out.iter_mut().for_each(|v| normalise(v));
    Ok(out)
}

impl Embedder for TransformerEmbedder {
    fn signature(&self) -> &str {
        &self.signature
    }

    fn dims(&self) -> usize {
        self.spec.config.hidden_size
    }

    /// Chosen with all-MiniLM-L6-v2 on the three development sets (BENCHMARKS.md): against the
    /// 0.5 an embedder that says nothing gets, 0.4 keeps SciFact's recall (nDCG@10 0.7358
    /// against 0.7356; 0.3 loses 0.007) and LoCoMo's default chunking (R@10 0.901 against
    /// 0.899), and lifts one turn a chunk from R@10 0.711 to 0.738, where a short turn gives
    /// the model little to read and keywords deserve more of the say.
    fn fusion_weight(&self) -> f64 {
        self.fusion_weight
    }

    fn chat_fusion_weight(&self) -> f64 {
        self.chat_fusion_weight
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let pool = self.fill_pool.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(candle_core::utils::get_num_threads())
                .thread_name(|i| format!("memory-embed-deep-{i}"))
                .build()
                .map_err(|e| tracing::warn!(error = %e, "no thread pool for the fill; it shares the query pool"))
                .ok()
        });
        let run = || self.run(texts, true);
        let out = match pool {
            Some(p) => p.install(run),
            None => run(),
        };
        out.map_err(|e| EmbedError(format!("transformer model {}: {e}", self.name)))
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let text = match &self.spec.query_prompt {
            Some(p) => format!("{p}{query}"),
            None => query.to_string(),
        };
        let _in_flight = self.queries.enter();
        let mut v =
            self.run(&[&text], false).map_err(|e| EmbedError(format!("transformer model {}: {e}", self.name)))?;
        Ok(v.swap_remove(0))
    }
}
