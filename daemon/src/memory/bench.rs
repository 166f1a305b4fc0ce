//! A benchmark of the engine on a synthetic corpus (Zipf-distributed pseudo-words in
//! Markdown files of ~400-token sections): ingest throughput, then median latencies of
//! keyword search (rare word, common word, two common words), hybrid recall, vector
//! fetch and a filtered fetch, then reopen and reindex times. Called by a bench binary
//! or a test harness; it prints nothing and returns a JSON report.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::{MemoryEngine, MemoryOptions, embed::Embedder};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic, good enough for synthetic text.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ten", "ra", "vo", "sil", "dun", "pe", "ar", "qui", "zo", "bel", "nor", "fa", "gri", "hu", "jo",
    "ex", "ly", "mon", "tra", "ve", "wis",
];

/// Pseudo-words ranked by frequency, and the cumulative Zipf weights to sample them.
fn vocabulary(size: usize) -> (Vec<String>, Vec<f64>) {
    let mut words = Vec::with_capacity(size);
    let n = SYLLABLES.len();
    for i in 0..size {
        let (a, b, c) = (i % n, (i / n) % n, i / (n * n));
        let mut w = format!("{}{}", SYLLABLES[a], SYLLABLES[b]);
        if c > 0 {
            w.push_str(SYLLABLES[c % n]);
            w.push_str(&(c / n).to_string());
        }
        words.push(w);
    }
    let mut cum = Vec::with_capacity(size);
    let mut total = 0.0;
    for r in 0..size {
        total += 1.0 / (r as f64 + 1.0);
        cum.push(total);
    }
    (words, cum)
}

fn sample<'a>(rng: &mut Rng, words: &'a [String], cum: &[f64]) -> &'a str {
    let x = rng.unit() * cum[cum.len() - 1];
    let i = cum.partition_point(|c| *c < x).min(words.len() - 1);
    &words[i]
}

/// Writes `files` Markdown files of `sections` ~300-word sections each.
pub fn write_corpus(dir: &Path, files: usize, sections: usize) -> anyhow::Result<()> {
    let (words, cum) = vocabulary(30_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for f in 0..files {
        let sub = dir.join(format!("d{:03}", f / 1000));
        std::fs::create_dir_all(&sub)?;
        let mut text = format!("# Document {f}\n\n");
        for s in 0..sections {
            text.push_str(&format!("## Section {s} {}\n\n", sample(&mut rng, &words, &cum)));
            for _ in 0..5 {
                let para: Vec<&str> = (0..60).map(|_| sample(&mut rng, &words, &cum)).collect();
                text.push_str(&para.join(" "));
                text.push_str(".\n\n");
            }
        }
        std::fs::write(sub.join(format!("f{f}.md")), text)?;
    }
    Ok(())
}

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Ingests a corpus of about `chunks` chunks into `data_dir` and measures the engine.
pub fn run(data_dir: &Path, corpus_dir: &Path, embedder: Arc<dyn Embedder>, chunks: usize) -> anyhow::Result<Value> {
    let sections = 10;
    let files = chunks.div_ceil(sections);
    let t = Instant::now();
    write_corpus(corpus_dir, files, sections)?;
    let corpus_secs = t.elapsed().as_secs_f64();
    let opts = || MemoryOptions { data_dir: data_dir.to_path_buf(), embedder: embedder.clone() };
    let m = MemoryEngine::open(opts())?;
    let t = Instant::now();
    let s = m.ingest_paths(&[corpus_dir.to_path_buf()], None, &|_| {})?;
    let ingest_secs = t.elapsed().as_secs_f64();
    m.wait_background();
    let vectors_ready_secs = t.elapsed().as_secs_f64();
    let (words, _) = vocabulary(30_000);
    let (common, second, rare) = (&words[0], &words[1], &words[20_000]);
    let runs = 21;
    let search = |query: String| median_ms(runs, || drop(m.tree_search(json!({ "query": query, "k": 10 })).ok()));
    let report = json!({
        "chunks": s.chunks_added,
        "files": s.files_ingested,
        "corpus_write_secs": corpus_secs,
        "ingest_secs": ingest_secs,
        "ingest_chunks_per_sec": s.chunks_added as f64 / ingest_secs,
        "vectors_pending_at_return": s.vectors_pending,
        "vectors_ready_secs": vectors_ready_secs,
        "end_to_end_chunks_per_sec": s.chunks_added as f64 / vectors_ready_secs,
        "search_rare_ms": search(rare.clone()),
        "search_common_ms": search(common.clone()),
        "search_two_common_ms": search(format!("{common} {second}")),
        "recall_ms": median_ms(runs, || drop(m.tree_recall(json!({ "query": format!("{common} {rare}"), "k": 10 })).ok())),
        "fetch_vector_ms": median_ms(runs, || drop(m.fetch(json!({ "query": rare, "mode": "vector" })).ok())),
        "fetch_hybrid_filtered_ms": median_ms(runs, || {
            drop(m.fetch(json!({ "query": common, "filter": { "observed_after": "2000-01-01T00:00:00Z" } })).ok())
        }),
        "list_ms": median_ms(runs, || drop(m.items_list(json!({ "limit": 10 })).ok())),
    });
    drop(m);
    let t = Instant::now();
    let m = MemoryEngine::open(opts())?;
    let reopen_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    m.reindex()?;
    let reindex_secs = t.elapsed().as_secs_f64();
    let mut report = report;
    report["reopen_secs"] = json!(reopen_secs);
    report["reindex_secs"] = json!(reindex_secs);
    Ok(report)
}
