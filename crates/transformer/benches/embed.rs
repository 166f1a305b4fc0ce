//! The transformer tier's own costs, on this machine, with a real model: load time, the
//! process's RSS with the model loaded, query-embedding latency (one short query at a time, as
//! recall does) idle and while the fill runs, and background-fill throughput in chunks per
//! second, four ways in the same run, alternating: *before* (batches of 32 in corpus order, each
//! one encoder run, candle splitting only its matrix products across the cores: the deep tier's
//! fill as it was) and *now* (each window of 1,024 chunks sorted by length, then batches of 32,
//! each run as groups of at most 4,096 padded tokens side by side, one per core, every chunk read
//! to its end in windows of the model's token limit, the projections in 8 bits on a CPU with
//! AVX-512 VNNI), *now, cut* (the same, each chunk cut at the limit, as
//! `memory.embeddings.transformer_windows = 1` does and *before* did) and *now, f32* (*now* with
//! every projection in `f32`, as *before*). Run
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

// The daemon's allocator: the encoder allocates and frees large tensors all the time, and the
// page faults that costs depend on the allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
/// Chunks the deep tier's thread sorts by length at a time (`backfill`'s `SORT_WINDOW`).
const WINDOW: usize = 1024;

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

/// CPU seconds this process has used (user and system, all threads), from `/proc/self/stat`
/// (Linux; 0 elsewhere). Unlike wall time it does not grow when other processes share the cores.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // Clock ticks of 1/100 s, as Linux reports them to user space.
    (field(11) + field(12)) / 100.0
}

fn chunks() -> (Vec<String>, String) {
    if let Some(path) = std::env::var_os("OPENHUMAN_BENCH_CORPUS") {
        let text = std::fs::read_to_string(&path).expect("read OPENHUMAN_BENCH_CORPUS");
        let docs: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| {
                let text = v["text"].as_str()?;
                Some(match v["title"].as_str().filter(|t| !t.is_empty()) {
                    Some(t) => format!("{t}\n{text}"),
                    None => text.to_string(),
                })
            })
            .take(chunk_count())
            .collect();
        return (docs, format!("the first {} titles and texts of {}", chunk_count(), PathBuf::from(path).display()));
    }
    let words = ["memory", "retrieval", "vector", "model", "chunk", "query", "ranking", "search", "index"];
    let docs = (0..chunk_count())
        .map(|i| (0..300).map(|j| words[(i * 7 + j * 13 + j / 5) % words.len()]).collect::<Vec<_>>().join(" "))
        .collect();
    (docs, "synthetic 300-word paragraphs".to_string())
}

/// `OPENHUMAN_BENCH_CHUNKS` or 1,024.
fn chunk_count() -> usize {
    std::env::var("OPENHUMAN_BENCH_CHUNKS").ok().and_then(|n| n.parse().ok()).unwrap_or(CHUNKS)
}

/// Batches of 32 in the order given (rowid order).
fn fill_rowid_order(e: &TransformerEmbedder, texts: &[&str]) {
    for batch in texts.chunks(BATCH) {
        e.embed(batch).expect("embed");
    }
}

/// Windows sorted by length (characters, as `backfill` sorts), then batches of 32.
fn fill_by_length(e: &TransformerEmbedder, texts: &[&str]) {
    for window in texts.chunks(WINDOW) {
        let mut sorted = window.to_vec();
        sorted.sort_by_key(|t| t.len());
        for batch in sorted.chunks(BATCH) {
            e.embed(batch).expect("embed");
        }
    }
}

fn query_latencies(e: &TransformerEmbedder, rounds: usize) -> Vec<f64> {
    let mut lat = Vec::new();
    for _ in 0..rounds {
        for q in QUERIES {
            let t = Instant::now();
            e.embed_query(q).expect("embed");
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    lat.sort_by(f64::total_cmp);
    lat
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
    let lat = query_latencies(&e, 10);
    println!(
        "query embedding, idle ({} calls): p50 {:.1} ms, p95 {:.1} ms",
        lat.len(),
        percentile(&lat, 50.0),
        percentile(&lat, 95.0)
    );

    let (docs, what) = chunks();
    let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    println!("fill: {} chunks ({what}), {} threads", refs.len(), candle_core::utils::get_num_threads());
    let before = TransformerEmbedder::open(&dir, "bench")
        .expect("open the model")
        .with_fill_layout(8192, false)
        .with_windows(1)
        .with_int8_fill(false);
    before.load().expect("load the model");
    let cut = TransformerEmbedder::open(&dir, "bench").expect("open the model").with_windows(1);
    cut.load().expect("load the model");
    let float = TransformerEmbedder::open(&dir, "bench").expect("open the model").with_int8_fill(false);
    float.load().expect("load the model");
    println!("the fill's projections in 8 bits on this CPU: {}", e.int8_fill());
    const NAMES: [&str; 4] = ["before", "now", "now, cut", "now, f32"];
    // Alternating, so that the machine's other load falls on both alike. Wall time says how fast
    // the fill goes on this machine now; CPU time, how much work it is (so on a machine shared
    // with other processes, the share of the cores each got does not decide the comparison).
    let (mut wall, mut cpu) = ([0.0f64; 4], [0.0f64; 4]);
    for round in 0..2 {
        for (which, name) in NAMES.into_iter().enumerate() {
            let (started, cpu0) = (Instant::now(), cpu_secs());
            match which {
                0 => fill_rowid_order(&before, &refs),
                1 => fill_by_length(&e, &refs),
                2 => fill_by_length(&cut, &refs),
                _ => fill_by_length(&float, &refs),
            }
            let (w, c) = (started.elapsed().as_secs_f64(), cpu_secs() - cpu0);
            wall[which] += w;
            cpu[which] += c;
            println!(
                "  round {round} {name}: {w:.1} s wall, {c:.1} CPU-s, {:.2} chunks/s, {:.0} CPU-ms a chunk, {:.2} cores",
                refs.len() as f64 / w,
                c * 1000.0 / refs.len() as f64,
                c / w
            );
        }
    }
    drop((before, cut, float));
    let n = 2.0 * refs.len() as f64;
    for (which, name) in NAMES.into_iter().enumerate() {
        println!(
            "fill {name}: {:.2} chunks/s, {:.0} CPU-ms a chunk, {:.2} cores busy",
            n / wall[which],
            cpu[which] * 1000.0 / n,
            cpu[which] / wall[which]
        );
    }
    println!("now / before: {:.2}x the chunks per second, {:.2}x less CPU a chunk", wall[0] / wall[1], cpu[0] / cpu[1]);
    println!(
        "now / now, f32: {:.2}x the chunks per second, {:.2}x less CPU a chunk (8-bit projections against f32)",
        wall[3] / wall[1],
        cpu[3] / cpu[1]
    );
    println!(
        "now, cut / before: {:.2}x the chunks per second; reading whole chunks costs {:.2}x the CPU of cutting them",
        wall[0] / wall[2],
        cpu[1] / cpu[2]
    );

    // Queries while the fill runs: the fill waits for a running query between its groups.
    let done = std::sync::atomic::AtomicBool::new(false);
    let busy = std::thread::scope(|s| {
        let filler = s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                fill_by_length(&e, &refs[..refs.len().min(256)]);
            }
        });
        let lat = query_latencies(&e, 5);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        filler.join().expect("fill thread");
        lat
    });
    let (rss, hwm) = rss_mb();
    println!(
        "query embedding, during the fill ({} calls): p50 {:.1} ms, p95 {:.1} ms; RSS {rss:.0} MB, peak {hwm:.0} MB",
        busy.len(),
        percentile(&busy, 50.0),
        percentile(&busy, 95.0)
    );
}
