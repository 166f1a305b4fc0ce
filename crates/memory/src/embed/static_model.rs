//! The built-in offline embedder: a static token-embedding table distilled
//! from all-MiniLM-L6-v2 and fitted to its sentence embeddings (see
//! `tools/distill-embedder/`).
//!
//! Embedding a text is: BERT uncased WordPiece tokenisation, look up one row
//! per token, sum, L2-normalise. No network, no runtime model files: the table
//! and the vocabulary are compiled into the binary.
//!
//! Table format (little-endian): a 32-byte header — magic `OHSE`, u32
//! version (1), u32 rows, u32 dims, u32 quantisation (1 = int8 with one scale
//! per row), 12 reserved bytes — then `rows` f32 scales, then `rows * dims`
//! int8 values. Row `i` is `int8[i] * scale[i]`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::Embedder;
use super::wordpiece::WordPiece;
use crate::MemoryError;

/// Model id written into the signature of every vector.
pub const MODEL_ID: &str = "minilm-l6-v2-static";

static TABLE: &[u8] = include_bytes!("../../assets/embedder/table.bin");
static VOCAB: &str = include_str!("../../assets/embedder/vocab.txt");
/// The table's recorded digest. Hashing 7.9 MB on every start cost a quarter of a cold start; the
/// `table_matches_manifest` test proves the record is the table's real digest.
static MANIFEST: &str = include_str!("../../assets/embedder/manifest.json");

const MAGIC: &[u8; 4] = b"OHSE";
const VERSION: u32 = 1;
const QUANT_INT8_ROW_SCALE: u32 = 1;
const HEADER_LEN: usize = 32;
/// Hex digits of the table's sha256 kept in the signature.
const SHA_PREFIX: usize = 12;

/// Fails the table check unless `ok`; `msg` says what is wrong with it.
fn ensure(ok: bool, msg: impl FnOnce() -> String) -> Result<(), MemoryError> {
    if ok { Ok(()) } else { Err(MemoryError::Corrupt(msg())) }
}

/// An embedding table whose sizes do not fit this platform.
fn corrupt(e: impl std::fmt::Display) -> MemoryError {
    MemoryError::Corrupt(format!("embedding table: {e}"))
}

/// A static (per-token) embedding model.
pub struct StaticModel {
    tokenizer: WordPiece,
    dims: usize,
    scales: Vec<f32>,
    /// `rows * dims` int8 values, stored as bytes.
    weights: Cow<'static, [u8]>,
    /// Rows never pooled: `[UNK]`, and any all-zero row.
    skip: Vec<bool>,
    sha256: String,
    signature: String,
    /// The vocabulary's whole words [`neighbours`](Self::neighbours) chooses from, built on
    /// first use.
    words: OnceLock<Vec<WordRow>>,
    /// Words already asked about, with their nearest words (positions in `words`).
    near_cache: Mutex<HashMap<Box<str>, Nearest>>,
}

/// A word's nearest words: positions in [`StaticModel::words`] and cosines, best first.
type Nearest = Vec<(u32, f32)>;

/// A whole word of the vocabulary: its row and the inverse of the row's length in int8 units.
struct WordRow {
    id: u32,
    inv_norm: f32,
    word: Box<str>,
}

/// Whole words shorter than this are never offered as neighbours (abbreviations and fragments).
const NEIGHBOUR_MIN_CHARS: usize = 3;
/// How many nearest words are kept for a word asked about.
const NEIGHBOURS_KEPT: usize = 16;
/// The cache of words asked about is emptied when it holds this many.
const NEIGHBOUR_CACHE: usize = 4096;

impl StaticModel {
    /// The model compiled into this binary. Parsed once, on first use.
    pub fn builtin() -> Result<&'static StaticModel, MemoryError> {
        static BUILTIN: OnceLock<Result<StaticModel, String>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let sha = serde_json::from_str::<serde_json::Value>(MANIFEST)
                    .ok()
                    .and_then(|m| m["table_sha256"].as_str().map(str::to_string));
                StaticModel::build(MODEL_ID, Cow::Borrowed(TABLE), VOCAB, sha).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| MemoryError::Corrupt(format!("built-in embedder: {e}")))
    }

    /// Builds a model from a table in the format above and its `vocab.txt`.
    pub fn from_parts(model_id: &str, table: Cow<'static, [u8]>, vocab: &str) -> Result<Self, MemoryError> {
        StaticModel::build(model_id, table, vocab, None)
    }

    /// As `from_parts`, trusting `sha256` (hex) as the table's digest when given.
    fn build(
        model_id: &str,
        table: Cow<'static, [u8]>,
        vocab: &str,
        sha256: Option<String>,
    ) -> Result<Self, MemoryError> {
        ensure(table.len() >= HEADER_LEN, || "embedding table too short".to_string())?;
        ensure(&table[..4] == MAGIC, || "embedding table: bad magic".to_string())?;
        let word = |i: usize| {
            let at = 4 + 4 * i;
            u32::from_le_bytes([table[at], table[at + 1], table[at + 2], table[at + 3]])
        };
        let (version, rows, dims, quant) = (word(0), word(1), word(2), word(3));
        ensure(version == VERSION, || format!("embedding table: unsupported version {version}"))?;
        ensure(quant == QUANT_INT8_ROW_SCALE, || format!("embedding table: unsupported quantisation {quant}"))?;
        let rows = usize::try_from(rows).map_err(corrupt)?;
        let dims = usize::try_from(dims).map_err(corrupt)?;
        ensure(dims > 0, || "embedding table: zero dimensions".to_string())?;
        let scales_len = rows.checked_mul(4).ok_or_else(|| corrupt("size overflow"))?;
        let weights_len = rows.checked_mul(dims).ok_or_else(|| corrupt("size overflow"))?;
        ensure(table.len() == HEADER_LEN + scales_len + weights_len, || {
            format!("embedding table: {} bytes, expected {}", table.len(), HEADER_LEN + scales_len + weights_len)
        })?;

        let tokenizer = WordPiece::from_vocab(vocab)?;
        ensure(tokenizer.vocab_size() == rows, || {
            format!("vocabulary has {} tokens, embedding table {rows} rows", tokenizer.vocab_size())
        })?;

        let sha256 = sha256.unwrap_or_else(|| hex::encode(Sha256::digest(&table[..])));
        let signature = format!("{model_id}/{dims}/{}", &sha256[..SHA_PREFIX]);
        let scales: Vec<f32> = table[HEADER_LEN..HEADER_LEN + scales_len]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        ensure(scales.iter().all(|s| s.is_finite()), || "embedding table: non-finite scale".to_string())?;
        let start = HEADER_LEN + scales_len;
        let weights = match table {
            Cow::Borrowed(t) => Cow::Borrowed(&t[start..]),
            Cow::Owned(mut t) => {
                t.drain(..start);
                Cow::Owned(t)
            }
        };
        let unk = usize::try_from(tokenizer.unk()).map_err(corrupt)?;
        let skip = (0..rows)
            .map(|r| r == unk || scales[r] == 0.0 || weights[r * dims..(r + 1) * dims].iter().all(|&b| b == 0))
            .collect();
        Ok(Self {
            tokenizer,
            dims,
            scales,
            weights,
            skip,
            sha256,
            signature,
            words: OnceLock::new(),
            near_cache: Mutex::default(),
        })
    }

    /// The row of token `id` as int8 values.
    fn row(&self, id: usize) -> &[u8] {
        &self.weights[id * self.dims..(id + 1) * self.dims]
    }

    /// The words whose rows point most nearly the way `word`'s does: at most `max` (and at most
    /// [`NEIGHBOURS_KEPT`]), each with a cosine of at least `min_cos`, best first. Only lowercase
    /// ASCII words of the vocabulary are offered (no word pieces, nothing shorter than
    /// [`NEIGHBOUR_MIN_CHARS`]); `word`, given lowercased, must be a whole word of the
    /// vocabulary itself, or there are none. Fitted to sentence embeddings, the table puts
    /// "depart" next to "leave", "lisbon" next to "portugal" and "tenant" next to "landlord",
    /// though it also keeps inflections ("leaving") that a stemmer already folds. A word's
    /// first call scans the vocabulary's rows (about 20,000 dot products of 256 int8 values,
    /// ~1 ms); later ones read a cache.
    pub fn neighbours(&self, word: &str, min_cos: f32, max: usize) -> Vec<(&str, f32)> {
        let words = self.words.get_or_init(|| self.word_rows());
        let cached = self.near_cache.lock().ok().and_then(|c| c.get(word).cloned());
        let near = match cached {
            Some(near) => near,
            None => {
                let near = self.scan_neighbours(words, word);
                if let Ok(mut cache) = self.near_cache.lock() {
                    if cache.len() >= NEIGHBOUR_CACHE {
                        cache.clear();
                    }
                    cache.insert(word.into(), near.clone());
                }
                near
            }
        };
        near.iter().take_while(|n| n.1 >= min_cos).take(max).map(|&(i, cos)| (&*words[i as usize].word, cos)).collect()
    }

    /// The vocabulary's whole words [`Self::neighbours`] offers, by id.
    fn word_rows(&self) -> Vec<WordRow> {
        let mut words: Vec<WordRow> = self
            .tokenizer
            .words()
            .filter(|(w, id)| {
                w.len() >= NEIGHBOUR_MIN_CHARS
                    && w.bytes().all(|b| b.is_ascii_lowercase())
                    && !self.skip.get(*id as usize).copied().unwrap_or(true)
            })
            .map(|(w, id)| {
                let norm = dot(self.row(id as usize), self.row(id as usize)) as f32;
                WordRow { id, inv_norm: 1.0 / norm.sqrt(), word: w.into() }
            })
            .collect();
        words.sort_by_key(|w| w.id);
        words
    }

    /// Full sha256 (hex) of the embedding table.
    pub fn table_sha256(&self) -> &str {
        &self.sha256
    }

    /// The tokeniser, e.g. to count tokens.
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// Embeds one text. Infallible: a text without any known token (empty,
    /// whitespace, only unknown symbols) gets the zero vector.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut ids = Vec::new();
        let mut out = vec![0.0; self.dims];
        self.embed_into(text, &mut ids, &mut out);
        out
    }

    fn embed_into(&self, text: &str, ids: &mut Vec<u32>, acc: &mut [f32]) {
        self.sum_into(text, ids, acc);
        normalise(acc);
    }

    /// The sum of `text`'s token rows into `acc` (cleared first).
    fn sum_into(&self, text: &str, ids: &mut Vec<u32>, acc: &mut [f32]) {
        ids.clear();
        self.tokenizer.encode_into(text, ids);
        acc.fill(0.0);
        let dims = self.dims;
        for &id in ids.iter() {
            let id = id as usize;
            if self.skip.get(id).copied().unwrap_or(true) {
                continue;
            }
            let scale = self.scales[id];
            let row = &self.weights[id * dims..(id + 1) * dims];
            for (a, &q) in acc.iter_mut().zip(row) {
                *a += scale * f32::from(q as i8);
            }
        }
    }

    /// [`Embedder::line_windows`]: each line is tokenised and summed once, and a window is the
    /// sum of its lines' sums.
    pub fn line_window_vectors(&self, text: &str, width: usize) -> Vec<Vec<f32>> {
        let mut ids = Vec::new();
        let lines: Vec<Vec<f32>> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let mut acc = vec![0.0; self.dims];
                self.sum_into(l, &mut ids, &mut acc);
                acc
            })
            .collect();
        let before = width.max(1) / 2;
        let after = width.max(1) - 1 - before;
        (0..lines.len())
            .map(|i| {
                let mut acc = vec![0.0; self.dims];
                for line in &lines[i.saturating_sub(before)..(i + after + 1).min(lines.len())] {
                    acc.iter_mut().zip(line).for_each(|(a, v)| *a += v);
                }
                normalise(&mut acc);
                acc
            })
            .collect()
    }

    /// The [`NEIGHBOURS_KEPT`] nearest of `words` to `word` (positions in `words`, cosines), best
    /// first.
    fn scan_neighbours(&self, words: &[WordRow], word: &str) -> Nearest {
        let Some(id) = self.tokenizer.word_id(word).map(|i| i as usize) else { return Vec::new() };
        if self.skip.get(id).copied().unwrap_or(true) {
            return Vec::new();
        }
        let own = self.row(id);
        let own_inv = 1.0 / (dot(own, own) as f32).sqrt();
        let mut best: Vec<(u32, f32)> = words
            .iter()
            .enumerate()
            .filter(|(_, w)| w.id as usize != id)
            .map(|(i, w)| (i as u32, dot(own, self.row(w.id as usize)) as f32 * own_inv * w.inv_norm))
            .collect();
        let keep = NEIGHBOURS_KEPT.min(best.len());
        if keep < best.len() {
            best.select_nth_unstable_by(keep, |a, b| b.1.total_cmp(&a.1));
            best.truncate(keep);
        }
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        best
    }
}

/// Scales `v` to unit length (the mean and the sum of rows have the same direction); the zero
/// vector when it has no length.
fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        let inv = 1.0 / norm;
        v.iter_mut().for_each(|x| *x *= inv);
    } else {
        v.fill(0.0);
    }
}

/// The dot product of two int8 rows (stored as bytes).
fn dot(a: &[u8], b: &[u8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| i32::from(x as i8) * i32::from(y as i8)).sum()
}

impl Embedder for StaticModel {
    fn signature(&self) -> &str {
        &self.signature
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, super::EmbedError> {
        let mut ids = Vec::new();
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0; self.dims];
                self.embed_into(t, &mut ids, &mut v);
                v
            })
            .collect())
    }

    /// A sum of token rows: see [`Embedder::bag_of_words`].
    fn bag_of_words(&self) -> bool {
        true
    }

    fn line_windows(&self, text: &str, width: usize) -> Option<Vec<Vec<f32>>> {
        Some(self.line_window_vectors(text, width))
    }

    /// A table lookup and a sum per token: pure CPU work, so every core helps a backlog.
    fn parallelism(&self) -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(4)
    }

    /// Chosen on the SciFact development claims: with the sentence-fitted table the blend
    /// stays above BM25 alone from 0.1 to 0.3 and peaks at 0.15 (the single-token table
    /// peaked near 0.1 and fell below BM25 past 0.2); a static table still keeps only
    /// part of its teacher's quality, hence a weight well under an HTTP embedder's 0.5.
    fn fusion_weight(&self) -> f64 {
        BUILTIN_FUSION_WEIGHT
    }
}

/// The built-in table's weight in hybrid ranking (see [`Embedder::fusion_weight`]).
pub const BUILTIN_FUSION_WEIGHT: f64 = 0.15;

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> &'static StaticModel {
        StaticModel::builtin().unwrap()
    }

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn sim(a: &str, b: &str) -> f32 {
        let m = model();
        cos(&m.embed_one(a), &m.embed_one(b))
    }

    #[test]
    fn dims_and_signature() {
        let m = model();
        assert_eq!(m.dims(), 256);
        let v = m.embed(&["hello world", "another text"]).unwrap();
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|x| x.len() == 256));
        let sig = m.signature();
        assert!(sig.starts_with("minilm-l6-v2-static/256/"), "{sig}");
        assert_eq!(sig.len(), "minilm-l6-v2-static/256/".len() + SHA_PREFIX);
    }

    #[test]
    fn neighbours_are_words_of_like_meaning() {
        let m = model();
        let near = |w: &str| m.neighbours(w, 0.6, 5).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        assert!(near("portugal").contains(&"lisbon"), "{:?}", near("portugal"));
        assert!(near("leave").contains(&"depart"), "{:?}", near("leave"));
        assert!(near("landlord").contains(&"tenant"), "{:?}", near("landlord"));
        let all = m.neighbours("leave", 0.0, 100);
        assert_eq!(all.len(), NEIGHBOURS_KEPT);
        assert!(all.windows(2).all(|p| p[0].1 >= p[1].1), "best first: {all:?}");
        assert!(all.iter().all(|(w, _)| *w != "leave" && w.len() >= 3 && w.bytes().all(|b| b.is_ascii_lowercase())));
        assert!(m.neighbours("leave", 0.99, 5).is_empty());
        // A word the vocabulary lacks, or holds only as pieces, has none; asking twice gives the same.
        assert!(m.neighbours("qx7p2lzz", 0.0, 5).is_empty());
        assert_eq!(m.neighbours("portugal", 0.6, 5), m.neighbours("portugal", 0.6, 5));
    }

    #[test]
    fn table_matches_manifest() {
        let manifest: serde_json::Value =
            serde_json::from_str(include_str!("../../assets/embedder/manifest.json")).unwrap();
        let m = model();
        let real = hex::encode(Sha256::digest(TABLE));
        assert_eq!(manifest["table_sha256"].as_str(), Some(real.as_str()));
        assert_eq!(m.table_sha256(), real);
        assert_eq!(manifest["dims"].as_u64(), Some(m.dims() as u64));
        assert_eq!(manifest["vocab_size"].as_u64(), Some(m.tokenizer().vocab_size() as u64));
        assert_eq!(manifest["model_id"].as_str(), Some(MODEL_ID));
    }

    #[test]
    fn deterministic() {
        let m = model();
        let text = "The quick brown fox jumps over the lazy dog.";
        let a = m.embed(&[text, text]).unwrap();
        assert_eq!(a[0], a[1]);
        assert_eq!(a[0], m.embed_one(text));
    }

    #[test]
    fn a_line_is_read_with_the_lines_beside_it() {
        let m = model();
        let lines =
            ["Ana: morning!", "Ben: I signed up for a pottery class", "", "Ana: oh nice, where?", "Ben: downtown"];
        let text = lines.join("\n");
        let windows = m.line_window_vectors(&text, 3);
        assert_eq!(windows.len(), 4, "one window a non-blank line");
        let read = |from: usize, to: usize| {
            let kept: Vec<&str> = lines.iter().copied().filter(|l| !l.is_empty()).collect();
            m.embed_one(&kept[from..to].join("\n"))
        };
        assert!(cos(&windows[0], &read(0, 2)) > 0.9999, "the first line has no line before it");
        assert!(cos(&windows[1], &read(0, 3)) > 0.9999);
        assert!(cos(&windows[2], &read(1, 4)) > 0.9999, "a blank line is skipped");
        assert!(cos(&windows[3], &read(2, 4)) > 0.9999);
        assert_eq!(m.line_window_vectors(&text, 1).len(), 4);
        assert!(cos(&m.line_window_vectors(&text, 1)[1], &m.embed_one(lines[1])) > 0.9999);
        assert!(m.line_window_vectors("", 3).is_empty());
    }

    #[test]
    fn normalised() {
        let m = model();
        for t in ["a", "car", "Ünïcödé façade — naïve café", "你好世界", &"word ".repeat(2000)] {
            let v = m.embed_one(t);
            let n = cos(&v, &v).sqrt();
            assert!((n - 1.0).abs() < 1e-4, "{t:?}: norm {n}");
        }
    }

    #[test]
    fn empty_and_unknown_text_is_zero() {
        let m = model();
        let v = m.embed(&["", "   \n\t", "\u{1f600}\u{1f600}"]).unwrap();
        for x in &v {
            assert_eq!(x.len(), 256);
            assert!(x.iter().all(|&f| f == 0.0));
        }
        assert!(m.embed(&[]).unwrap().is_empty());
    }

    #[test]
    fn synonyms_closer_than_unrelated_words() {
        let near = sim("car", "automobile");
        let far = sim("car", "banana");
        assert!(near > far + 0.2, "car/automobile {near}, car/banana {far}");
    }

    #[test]
    fn paraphrases_closer_than_unrelated_sentences() {
        let para = sim("How do I reset my password?", "What are the steps to change a forgotten password?");
        let unrel = sim("How do I reset my password?", "Bananas are rich in potassium.");
        assert!(para > unrel + 0.2, "paraphrase {para}, unrelated {unrel}");
        let para = sim("The cat is sleeping on the sofa.", "A kitten naps on the couch.");
        let unrel = sim("The cat is sleeping on the sofa.", "The compiler rejected the generic type parameter.");
        assert!(para > unrel + 0.2, "paraphrase {para}, unrelated {unrel}");
    }

    #[test]
    fn matches_reference_tokenizer() {
        // Ids from the model's own tokenizer.json (Hugging Face tokenizers),
        // without [CLS]/[SEP].
        let t = model().tokenizer();
        for (text, want) in REFERENCE_IDS {
            assert_eq!(t.encode(text), *want, "{text:?}");
        }
    }

    const REFERENCE_IDS: &[(&str, &[u32])] = &[
        ("Hello, World!", &[7592, 1010, 2088, 999]),
        ("unaffable", &[14477, 20961, 3468]),
        ("H\u{e9}llo w\u{f6}rld \u{2014} na\u{ef}ve caf\u{e9} fa\u{e7}ade", &[7592, 2088, 1517, 15743, 7668, 8508]),
        ("\u{4f60}\u{597d}\u{ff0c}\u{4e16}\u{754c}", &[100, 100, 1989, 1745, 100]),
        ("\u{3a3}\u{38a}\u{3a3}\u{3a5}\u{3a6}\u{39f}\u{3a3}", &[1173, 18199, 29733, 29735, 29736, 29730, 29733]),
        ("\u{130}stanbul", &[9960]),
        ("l'\u{e9}t\u{e9} dernier", &[1048, 1005, 3802, 2063, 4315, 14862]),
        ("self-driving cars (2024)", &[2969, 1011, 4439, 3765, 1006, 16798, 2549, 1007]),
        ("Gr\u{f6}\u{df}e stra\u{df}e", &[24665, 2080, 17499, 2358, 27807]),
        ("e\u{301}clair", &[14925, 19771, 2099]),
        ("don't", &[2123, 1005, 1056]),
        ("$100.50 + 20%", &[1002, 2531, 1012, 2753, 1009, 2322, 1003]),
        (
            "\u{65e5}\u{672c}\u{8a9e}\u{306e}\u{30c6}\u{30ad}\u{30b9}\u{30c8}",
            &[1864, 1876, 1950, 1671, 30239, 30227, 30233, 30240],
        ),
        ("\u{d55c}\u{ad6d}\u{c5b4}", &[1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008]),
        ("\u{37e};", &[1025, 1025]),
        ("a\u{2028}b", &[1037, 1038]),
        ("a\u{a0}b\u{200b}c", &[1037, 4647]),
        ("r\u{e9}sum\u{e9}.pdf", &[13746, 1012, 11135]),
    ];

    #[test]
    fn rejects_bad_tables() {
        let vocab = "[PAD]\n[UNK]\nhello\n";
        let mut table = Vec::new();
        table.extend_from_slice(MAGIC);
        for w in [VERSION, 3, 2, QUANT_INT8_ROW_SCALE] {
            table.extend_from_slice(&w.to_le_bytes());
        }
        table.resize(HEADER_LEN, 0);
        for s in [0.0f32, 0.5, 0.25] {
            table.extend_from_slice(&s.to_le_bytes());
        }
        table.extend_from_slice(&[0, 0, 9, 9, 4, 0u8.wrapping_sub(4)]);
        let m = StaticModel::from_parts("tiny", Cow::Owned(table.clone()), vocab).unwrap();
        assert_eq!(m.dims(), 2);
        assert!(m.signature().starts_with("tiny/2/"));
        let v = m.embed_one("hello");
        assert!((v[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!((v[1] + std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!(m.embed_one("[UNK] unknown").iter().all(|&f| f == 0.0));

        assert!(StaticModel::from_parts("t", Cow::Owned(table[..table.len() - 1].to_vec()), vocab).is_err());
        assert!(StaticModel::from_parts("t", Cow::Owned(table.clone()), "[UNK]\nhello\n").is_err());
        let mut bad = table.clone();
        bad[0] = b'X';
        assert!(StaticModel::from_parts("t", Cow::Owned(bad), vocab).is_err());
    }
}
