//! The transformer tier's own costs, on this machine, with a real model: load time, the
//! process's RSS with the model loaded, query-embedding latency (one short query at a time, as
//! recall does), and background-fill throughput (chunks per second in batches of 32, as the deep
//! tier's thread embeds them). Run
//!
//! ```text
//! OPENHUMAN_TEST_MODEL_DIR=<model dir> cargo bench -p openhuman-transformer --bench embed
//! ```
//!
//! (`tests/fixtures/fetch-minilm.sh` prints the variable for all-MiniLM-L6-v2; `--profile fast`
//! builds quicker than the release profile's LTO.) The chunks are the `text` fields of the first
//! 1,024 lines of `OPENHUMAN_BENCH_CORPUS` (a BEIR `corpus.jsonl`) when set, else synthetic
//! 300-word paragraphs. Threads: candle's pool, one per physical core (`RAYON_NUM_THREADS`
//! overrides). Nothing asserts on time.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

use std::path::PathBuf;
use std::time::Instant;

use openhuman_memory::embed::Embedder;
use openhuman_transformer::TransformerEmbedder;

const QUERIES: &[&str] = &[
    "automobile maintenance",
    "young dog behaviour",
    "vacation travel plans",
    "doctor appointment health checkup",
    "company earnings profit report",
    "bread recipe kitchen",
    "orchestra music practice",
    "weather forecast storm",
    "child education first day",
    "housing costs moving flat",
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
];
const CHUNKS: usize = 1024;
const BATCH: usize = 32;

fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn chunks() -> (Vec<String>, String) {
    if let Some(path) = std::env::var_os("OPENHUMAN_BENCH_CORPUS") {
        let text = std::fs::read_to_string(&path).expect("read OPENHUMAN_BENCH_CORPUS");
        let docs: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["text"].as_str().map(str::to_string))
            .take(CHUNKS)
            .collect();
        return (docs, format!("the first {CHUNKS} texts of {}", PathBuf::from(path).display()));
    }
    let words = ["memory", "retrieval", "vector", "model", "chunk", "query", "ranking", "search", "index"];
    let docs = (0..CHUNKS)
        .map(|i| (0..300).map(|j| words[(i * 7 + j * 13 + j / 5) % words.len()]).collect::<Vec<_>>().join(" "))
        .collect();
    (docs, "synthetic 300-word paragraphs".to_string())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

fn main() {
    let Some(dir) = std::env::var_os("OPENHUMAN_TEST_MODEL_DIR").map(PathBuf::from) else {
        eprintln!("set OPENHUMAN_TEST_MODEL_DIR to a model directory (tests/fixtures/fetch-minilm.sh prints it)");
        return;
    };
    let (rss_before, _) = rss_mb();
    let started = Instant::now();
    let e = TransformerEmbedder::open(&dir, "bench").expect("open the model");
    e.load().expect("load the model");
    let load_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (rss_loaded, _) = rss_mb();
    println!("model {} ({} threads)", e.signature(), candle_core::utils::get_num_threads());
    println!("load: {load_ms:.0} ms; RSS {rss_before:.0} MB before, {rss_loaded:.0} MB with the model loaded");

    // Query embedding: 10 rounds over the queries after one warm-up round.
    for q in QUERIES {
        e.embed_query(q).expect("embed");
    }
    let mut lat = Vec::new();
    for _ in 0..10 {
        for q in QUERIES {
            let t = Instant::now();
            e.embed_query(q).expect("embed");
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    lat.sort_by(f64::total_cmp);
    println!(
        "query embedding ({} calls): p50 {:.1} ms, p95 {:.1} ms",
        lat.len(),
        percentile(&lat, 50.0),
        percentile(&lat, 95.0)
    );

    let (docs, what) = chunks();
    let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    let started = Instant::now();
    for batch in refs.chunks(BATCH) {
        e.embed(batch).expect("embed");
    }
    let secs = started.elapsed().as_secs_f64();
    let (rss, hwm) = rss_mb();
    println!(
        "fill: {} chunks ({what}) in batches of {BATCH}: {secs:.1} s, {:.1} chunks/s; RSS {rss:.0} MB, peak {hwm:.0} MB",
        refs.len(),
        refs.len() as f64 / secs
    );
}
