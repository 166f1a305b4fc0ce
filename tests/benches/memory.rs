//! The memory benchmark: the embedded memory engine measured through the real release daemon over
//! its MCP socket, each figure beside a baseline run in the same process over the same data. Run
//!
//! ```text
//! cargo build --release && cargo bench -p openhuman-tests --bench memory            # 100k chunks
//! cargo build --release && cargo bench -p openhuman-tests --bench memory -- 1000000 # 1M chunks
//! # Millions of short mails (one chunk each) about 2,000 topics, release profile without LTO
//! # (quicker to build); ~4.1 GiB of store and ~1.6 GiB of corpus and baseline per million:
//! OPENHUMAN_BENCH_PROFILE=fast MEMORY_BENCH_FORMAT=mbox MEMORY_BENCH_PARAGRAPHS=1 \
//!   MEMORY_BENCH_TOPICS=2000 MEMORY_BENCH_DIR=/big/disk \
//!   cargo bench --profile fast -p openhuman-tests --bench memory -- 10000000
//! ```
//!
//! (`MEMORY_BENCH_CHUNKS` sets the size too; `MEMORY_BENCH_DIR` where the corpus and stores go,
//! about 6 GB per million 300-word chunks; `MEMORY_BENCH_PARAGRAPHS` (1–5) sets 60 words a
//! paragraph per section — Markdown sections are merged into chunks of ~300 tokens, so fewer
//! paragraphs make fewer chunks unless the corpus is mail; `MEMORY_BENCH_FORMAT=mbox` writes
//! each section as one mail; `MEMORY_BENCH_TOPICS` gives the sections topics (see
//! `memory/corpus.rs`); `MEMORY_BENCH_KEEP=1` leaves them there, to profile the store, and
//! `MEMORY_BENCH_REUSE=<the kept dir>` times only the queries on it, with the binaries of the
//! checkout it runs in, to compare two commits on one large store.) It
//! writes a synthetic corpus (`memory/corpus.rs`: Zipf word frequencies, ~300-word chunks),
//! starts `openhumand-mcp serve` in a fresh home and prints:
//!
//! 1. ingest rate: `openhuman.memory_ingest` over the socket (chunks/s until it returns, and until
//!    every chunk also has its vector), beside SQLite FTS5 inserting the same chunks;
//! 2. `memory.search` p50/p99 for rare and for common words, beside FTS5 `bm25()` top 10;
//! 3. `memory.recall` (hybrid) p50/p99, beside a one-thread brute-force cosine top 10 over the
//!    vectors the daemon stored;
//! 4. the daemon's peak and current RSS (VmHWM/VmRSS);
//! 5. past 131,072 chunks, the approximate vector index (IVF): when it covered every vector, its
//!    lists and probes, and its recall@10 against the exact scan as the daemon measured it
//!    (`openhuman.memory_stats`), then the same recall measured here: the top 10 of the
//!    daemon's probed lists, recomputed from its `ann.bin` and vectors, against brute force;
//! 6. the store's size on disk by component (SQLite, tantivy, vectors, ANN index).
//!
//! Targets (set for 1M chunks) are printed as PASS/MISS for the reader; nothing asserts on time.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

#[path = "memory/baseline.rs"]
mod baseline;
#[path = "memory/corpus.rs"]
mod corpus;
// The process, session and /proc helpers are the spine benchmark's; not all of them are used here.
#[allow(dead_code)]
#[path = "spine/support.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Binaries, Daemon, Result, Session, Stats};

const COMMAND: &str = "cargo build --release && cargo bench -p openhuman-tests --bench memory [-- CHUNKS]";
const DEFAULT_CHUNKS: usize = 100_000;
/// Timed calls per query class (after `WARMUP` untimed ones); a baseline class stops early once
/// it has spent `BASELINE_SPAN`, with at least `MIN_RUNS` samples.
const RUNS: usize = 200;
const WARMUP: usize = 10;
const MIN_RUNS: usize = 10;
const BASELINE_SPAN: Duration = Duration::from_secs(20);
/// Bound on waiting for background embedding (and the approximate index) after the ingest call
/// returned: an hour, or a millisecond a chunk for the largest stores.
fn embed_wait(chunks: usize) -> Duration {
    Duration::from_secs(3600).max(Duration::from_millis(chunks as u64))
}

/// Targets at 1M chunks; past 5M chunks those set for 10M (recall p50 ≤ 30 ms, RSS ≤ 4 GiB).
const TARGET_SEARCH_P50_MS: f64 = 5.0;
const TARGET_INGEST_PER_S: f64 = 5_000.0;

fn target_recall_p50_ms(chunks: usize) -> f64 {
    if chunks > 5_000_000 { 30.0 } else { 20.0 }
}

fn target_rss_mib(chunks: usize) -> f64 {
    if chunks > 5_000_000 { 4096.0 } else { 1536.0 }
}

/// Below this many vectors the daemon scans exactly and trains no approximate index.
const ANN_MIN_ROWS: usize = 128 * 1024;

fn main() {
    if let Err(e) = run() {
        eprintln!("memory bench failed: {e}");
        std::process::exit(1);
    }
}

fn chunks_wanted() -> Result<usize> {
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let v = arg.or_else(|| std::env::var("MEMORY_BENCH_CHUNKS").ok());
    match v {
        None => Ok(DEFAULT_CHUNKS),
        Some(s) => Ok(s.replace('_', "").parse().map_err(|_| format!("chunk count {s:?} is not a number"))?),
    }
}

fn run() -> Result<()> {
    if let Some(dir) = std::env::var_os("MEMORY_BENCH_REUSE") {
        return rerun(&Binaries::build_and_locate()?, Path::new(&dir));
    }
    let chunks = chunks_wanted()?;
    let bins = Binaries::build_and_locate()?;
    let scratch_root = std::env::var_os("MEMORY_BENCH_DIR").map(Into::into).unwrap_or_else(std::env::temp_dir);
    // Short: the socket path inside the home must fit in sun_path.
    let mut scratch = tempfile::Builder::new().prefix("oh-mb-").tempdir_in(scratch_root)?;
    if std::env::var_os("MEMORY_BENCH_KEEP").is_some() {
        scratch.disable_cleanup(true);
        println!("keeping : {}", scratch.path().display());
    }
    let (home, corpus_dir) = (scratch.path().join("h"), scratch.path().join("corpus"));
    std::fs::create_dir_all(&home)?;
    println!("# openhuman-mcp memory benchmark");
    println!("command : {COMMAND}");
    print_when_where();
    println!("load    : {} (1/5/15 min, before)", support::loadavg());
    println!(
        "profile : {} (OPENHUMAN_BENCH_PROFILE)",
        std::env::var("OPENHUMAN_BENCH_PROFILE").unwrap_or_else(|_| "release".to_string())
    );
    println!(
        "corpus  : {} chunks of ~{} Zipf words in {}; {} (MEMORY_BENCH_TOPICS)",
        chunks,
        corpus::words_per_chunk(),
        if corpus::is_mail() {
            format!(
                "{} mbox files of {} messages",
                chunks.div_ceil(corpus::MESSAGES_PER_MBOX),
                corpus::MESSAGES_PER_MBOX
            )
        } else {
            format!("{} Markdown files", chunks.div_ceil(10))
        },
        match corpus::topic_count() {
            0 => "no topics, uniform".to_string(),
            t => format!("{t} topics of {} words each", corpus::TOPIC_WORDS),
        }
    );

    let vocab = corpus::Vocabulary::new();
    let t = Instant::now();
    corpus::write(&corpus_dir, &vocab, chunks)?;
    println!("written : {:.1} s", t.elapsed().as_secs_f64());

    let daemon = support::start_daemon(&bins, &home)?;
    let ours = measure_daemon(&daemon, &corpus_dir, &vocab);
    let pid = daemon.pid();
    daemon.stop()?;
    let ours = ours?;
    println!("daemon  : pid {pid} stopped cleanly");
    let disk = disk_usage(&home.join("data"));

    let (fts5, fts5_insert) = baseline::Fts5::build(&scratch.path().join("fts5.db"), &vocab, chunks)?;
    let base_rare = time_baseline(&rare_words(&vocab), |w| fts5.search(w).map(drop))?;
    let base_common = time_baseline(&common_words(&vocab), |w| fts5.search(w).map(drop))?;
    drop(fts5);
    let (vectors, probes, base_recall) = brute_force_baseline(&home)?;
    let n = vectors.rows();
    let ann_check = baseline::ann_recall(&home.join("data/vectors"), &vectors, &probes[..probes.len().min(100)])?;
    println!("baseline: FTS5 over the same {chunks} chunks; brute force over {n} vectors of {} dims", vectors.dims);
    println!("load    : {} (1/5/15 min, after)", support::loadavg());
    println!();

    let fts5_rate = chunks as f64 / fts5_insert.as_secs_f64();
    println!("| metric | openhuman-mcp | baseline | ratio | target @1M | |");
    println!("|---|---|---|---|---|---|");
    row_rate("ingest, call returns (chunks/s)", ours.ingest_rate, fts5_rate, "FTS5 insert");
    row_rate("ingest, vectors done (chunks/s)", ours.embedded_rate, fts5_rate, "FTS5 insert");
    row_ms("memory.search rare word p50", ours.rare.pct(50.0), base_rare.pct(50.0), Some(TARGET_SEARCH_P50_MS));
    row_ms("memory.search rare word p99", ours.rare.pct(99.0), base_rare.pct(99.0), None);
    row_ms("memory.search common word p50", ours.common.pct(50.0), base_common.pct(50.0), Some(TARGET_SEARCH_P50_MS));
    row_ms("memory.search common word p99", ours.common.pct(99.0), base_common.pct(99.0), None);
    row_ms("memory.recall p50", ours.recall.pct(50.0), base_recall.pct(50.0), Some(target_recall_p50_ms(chunks)));
    row_ms("memory.recall p99", ours.recall.pct(99.0), base_recall.pct(99.0), None);
    let mib = |kib: Option<u64>| kib.map_or(f64::NAN, |k| k as f64 / 1024.0);
    let (hwm, rss) = (mib(ours.vm_hwm_kib), mib(ours.vm_rss_kib));
    let rss_target = target_rss_mib(chunks);
    println!("| daemon peak RSS (VmHWM) | {hwm:.0} MiB | | | ≤ {rss_target:.0} MiB | {} |", verdict(hwm <= rss_target));
    println!("| daemon RSS after queries (VmRSS) | {rss:.0} MiB | | | | |");
    // Whether the lists answer queries at all: when the probed lists would hold more than an
    // eighth of the rows, the sign pre-rank over every row does, and the recall below is the
    // lists', not the answers' (the memory crate's `kept_store_recall` diagnostic measures theirs).
    let lists_answer = ours.ann.as_ref().is_none_or(|a| a["answers"] != false);
    if let Some((probes, recall, queries)) = ann_check {
        let whose = if lists_answer { "" } else { "; the lists do not answer queries at this size" };
        println!(
            "| ANN recall@10 vs exact (bench, {queries} row queries, {probes} probes{whose}) | {recall:.3} | 1.000 (brute force) | | ≥ 0.95 | {} |",
            verdict(recall >= 0.95)
        );
    }
    println!();
    match &ours.ann {
        Some(a) => println!(
            "ann     : IVF of {} lists, {} probed; recall@10 vs exact {} (daemon's calibration); {} vectors pending; covered every vector {:.1} s after the ingest call started; {}",
            a["lists"],
            a["probes"],
            a["recall_at_10"],
            a["pending"],
            ours.ann_done.map_or(f64::NAN, |d| d.as_secs_f64()),
            if lists_answer {
                "queries scan the probed lists"
            } else {
                "queries are answered by the sign pre-rank over every row (the probed lists would hold more than an eighth of them)"
            }
        ),
        None => println!("ann     : none (below {ANN_MIN_ROWS} vectors every search is exact)"),
    }
    let total: u64 = disk.iter().map(|d| d.1).sum();
    let per_m = |b: u64| b as f64 / (1u64 << 30) as f64 / (chunks as f64 / 1e6);
    println!(
        "disk    : {} — total {:.2} GiB ({:.2} GiB per million chunks)",
        disk.iter()
            .map(|(n, b)| format!("{n} {:.2} GiB", *b as f64 / (1u64 << 30) as f64))
            .collect::<Vec<_>>()
            .join(", "),
        total as f64 / (1u64 << 30) as f64,
        per_m(total)
    );
    println!(
        "ingest: {} chunks added in {:.1} s (call), {:.1} s until every vector was stored; FTS5 inserted them in {:.1} s",
        ours.chunks_added,
        ours.ingest.as_secs_f64(),
        ours.embedded.as_secs_f64(),
        fts5_insert.as_secs_f64()
    );
    println!(
        "baselines: FTS5 `bm25()` top 10 (`{}` samples rare, `{}` common); brute force one-thread f32 scan, top 10",
        base_rare.len(),
        base_common.len()
    );
    Ok(())
}

struct Measured {
    chunks_added: u64,
    ingest: Duration,
    embedded: Duration,
    ingest_rate: f64,
    embedded_rate: f64,
    rare: Samples,
    common: Samples,
    recall: Samples,
    vm_hwm_kib: Option<u64>,
    vm_rss_kib: Option<u64>,
    /// `memory_stats`' `vectors.ann` once the index covered every vector, and when that was.
    ann: Option<Value>,
    ann_done: Option<Duration>,
}

fn measure_daemon(daemon: &Daemon, corpus_dir: &Path, vocab: &corpus::Vocabulary) -> Result<Measured> {
    let mut ctl = Session::socket(&daemon.socket())?;
    let started = Instant::now();
    let reply = call(&mut ctl, "openhuman.memory_ingest", json!({"paths": [corpus_dir]}))?;
    let ingest = started.elapsed();
    let chunks_added = reply["chunks_added"].as_u64().ok_or_else(|| format!("no chunks_added in {reply}"))?;
    let wait = embed_wait(chunks_added as usize);
    loop {
        let stats = call(&mut ctl, "openhuman.memory_stats", json!({}))?;
        if stats["vectors"]["missing"] == 0 {
            break;
        }
        if started.elapsed() > wait {
            return Err(format!("vectors still missing after {wait:?}: {stats}").into());
        }
        // A progress poll of a background job that runs for seconds to minutes.
        std::thread::sleep(Duration::from_millis(100));
    }
    let embedded = started.elapsed();
    // Progress on stderr as each phase ends, so a run cut short still leaves its figures.
    eprintln!(
        "progress: {chunks_added} chunks, call returned {:.1} s, every vector stored {:.1} s ({:.0} chunks/s), RSS {:?} KiB",
        ingest.as_secs_f64(),
        embedded.as_secs_f64(),
        chunks_added as f64 / embedded.as_secs_f64(),
        support::proc_status_kib(daemon.pid(), "VmRSS:")
    );
    // The approximate index is built in the background; searches are exact (and slower) on the
    // vectors it does not cover yet, so the query timings start once it covers them all.
    let mut ann = None;
    let mut ann_done = None;
    if chunks_added as usize >= ANN_MIN_ROWS {
        loop {
            let stats = call(&mut ctl, "openhuman.memory_stats", json!({}))?;
            let a = &stats["vectors"]["ann"];
            if a["pending"] == 0 && !a["recall_at_10"].is_null() {
                ann = Some(a.clone());
                ann_done = Some(started.elapsed());
                eprintln!("progress: ANN covers every vector at {:.1} s: {a}", started.elapsed().as_secs_f64());
                break;
            }
            if started.elapsed() > wait {
                return Err(format!("approximate index incomplete after {wait:?}: {stats}").into());
            }
            // A progress poll of a background job, as above.
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    let Queried { rare, common, recall } = time_queries(daemon, vocab)?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!(
        "progress: search rare p50 {:.2} ms, common p50 {:.2} ms; recall p50 {:.2} ms p99 {:.2} ms; VmHWM {:?} KiB; load {}",
        ms(rare.pct(50.0)),
        ms(common.pct(50.0)),
        ms(recall.pct(50.0)),
        ms(recall.pct(99.0)),
        support::proc_status_kib(daemon.pid(), "VmHWM:"),
        support::loadavg()
    );
    Ok(Measured {
        chunks_added,
        ingest,
        embedded,
        ingest_rate: chunks_added as f64 / ingest.as_secs_f64(),
        embedded_rate: chunks_added as f64 / embedded.as_secs_f64(),
        rare,
        common,
        recall,
        vm_hwm_kib: support::proc_status_kib(daemon.pid(), "VmHWM:"),
        vm_rss_kib: support::proc_status_kib(daemon.pid(), "VmRSS:"),
        ann,
        ann_done,
    })
}

struct Queried {
    rare: Samples,
    common: Samples,
    recall: Samples,
}

/// `memory.search` for rare and for common words, then `memory.recall`, each timed in one
/// MCP session.
fn time_queries(daemon: &Daemon, vocab: &corpus::Vocabulary) -> Result<Queried> {
    let mut s = Session::socket(&daemon.socket())?;
    s.handshake()?;
    let rare = time_tool(&mut s, "memory.search", &rare_words(vocab), |w| json!({"query": w, "k": 10}))?;
    let common = time_tool(&mut s, "memory.search", &common_words(vocab), |w| json!({"query": w, "k": 10}))?;
    let recall = time_tool(&mut s, "memory.recall", &recall_queries(vocab), |q| json!({"query": q, "k": 10}))?;
    Ok(Queried { rare, common, recall })
}

/// `MEMORY_BENCH_REUSE=<dir>`: the queries alone, with this checkout's binaries, against the
/// store an earlier run kept there (`MEMORY_BENCH_KEEP=1`; give the same `MEMORY_BENCH_TOPICS`,
/// so that the queries are the same). Two commits compare on one large store without building
/// it twice. The daemon first settles: at open it checks every chunk for a missing vector.
fn rerun(bins: &Binaries, dir: &Path) -> Result<()> {
    let home = dir.join("h");
    if !home.join("data").is_dir() {
        return Err(format!("{} holds no kept store: run once with MEMORY_BENCH_KEEP=1", dir.display()).into());
    }
    println!("# openhuman-mcp memory benchmark, queries on a kept store");
    println!("command : MEMORY_BENCH_REUSE={} {COMMAND}", dir.display());
    print_when_where();
    let vocab = corpus::Vocabulary::new();
    let started = Instant::now();
    let daemon = support::start_daemon(bins, &home)?;
    let pid = daemon.pid();
    let open = started.elapsed();
    let mut ctl = Session::socket(&daemon.socket())?;
    let stats = call(&mut ctl, "openhuman.memory_stats", json!({}))?;
    settle(pid);
    println!(
        "daemon  : socket up {:.1} s after start, settled after {:.1} s; load {}",
        open.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        support::loadavg()
    );
    println!("vectors : {}", stats["vectors"]);
    let q = time_queries(&daemon, &vocab);
    let (hwm, rss) = (support::proc_status_kib(pid, "VmHWM:"), support::proc_status_kib(pid, "VmRSS:"));
    daemon.stop()?;
    let q = q?;
    let (vectors, _, base_recall) = brute_force_baseline(&home)?;
    let n = vectors.rows();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!();
    println!("| metric | openhuman-mcp | baseline | ratio |");
    println!("|---|---|---|---|");
    for (name, samples) in [("memory.search rare word", &q.rare), ("memory.search common word", &q.common)] {
        println!("| {name} p50 / p99 | {:.2} / {:.2} ms | | |", ms(samples.pct(50.0)), ms(samples.pct(99.0)));
    }
    println!(
        "| memory.recall p50 / p99 | {:.2} / {:.2} ms | {:.2} / {:.2} ms (one-thread f32 brute force, {n} vectors) | {:.2}× |",
        ms(q.recall.pct(50.0)),
        ms(q.recall.pct(99.0)),
        ms(base_recall.pct(50.0)),
        ms(base_recall.pct(99.0)),
        ms(q.recall.pct(50.0)) / ms(base_recall.pct(50.0))
    );
    let mib = |kib: Option<u64>| kib.map_or(f64::NAN, |k| k as f64 / 1024.0);
    println!("| daemon peak RSS (VmHWM) / after the queries (VmRSS) | {:.0} / {:.0} MiB | | |", mib(hwm), mib(rss));
    Ok(())
}

/// The report's date, machine and commit lines.
fn print_when_where() {
    println!("date    : {} UTC", support::utc_now());
    println!("machine : {}", support::machine());
    println!("git     : {}", support::git_state());
}

/// The daemon's stored vectors, the rows used as queries, and a one-thread brute-force top 10
/// timed over them: recall's baseline.
fn brute_force_baseline(home: &Path) -> Result<(baseline::Vectors, Vec<usize>, Samples)> {
    let vectors = baseline::Vectors::load(&home.join("data/vectors"))?;
    let n = vectors.rows();
    let probes: Vec<usize> = (0..RUNS).map(|i| (i * 7919) % n.max(1)).collect();
    let timed = time_baseline(&probes, |&i| {
        std::hint::black_box(vectors.brute_force(vectors.row(i)));
        Ok(())
    })?;
    Ok((vectors, probes, timed))
}

/// Waits until the daemon `pid` uses under 5% of a core over a second (its background work at
/// open is done), for at most ten minutes.
fn settle(pid: u32) {
    let cpu_ticks = || -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // utime and stime are fields 14 and 15; the name in field 2 may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        let Some(before) = cpu_ticks() else { return };
        // A progress poll of the daemon's CPU use, a second at a time.
        std::thread::sleep(Duration::from_secs(1));
        let Some(after) = cpu_ticks() else { return };
        if after.saturating_sub(before) < 5 {
            return;
        }
    }
}

/// Bytes on disk under the daemon's data dir by component.
fn disk_usage(data: &Path) -> Vec<(&'static str, u64)> {
    fn size(p: &Path) -> u64 {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => {
                std::fs::read_dir(p).map(|d| d.flatten().map(|e| size(&e.path())).sum()).unwrap_or(0)
            }
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    let mut parts = vec![("SQLite", 0), ("tantivy", 0), ("vectors", 0), ("ANN index", 0), ("other", 0)];
    let Ok(entries) = std::fs::read_dir(data) else { return parts };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if name.starts_with("memory.db") {
            parts[0].1 += size(&path);
        } else if name == "fts" {
            parts[1].1 += size(&path);
        } else if name.starts_with("vectors") {
            let ann: u64 = ["ann.bin", "ann.bin.tmp"].iter().map(|f| size(&path.join(f))).sum();
            parts[3].1 += ann;
            parts[2].1 += size(&path) - ann;
        } else {
            parts[4].1 += size(&path);
        }
    }
    parts
}

/// `memory.recall`'s questions: a common content word and a rare one; on a corpus with topics,
/// two words of a topic and a rare one, as a person asks about something they wrote about.
fn recall_queries(vocab: &corpus::Vocabulary) -> Vec<String> {
    (0..RUNS)
        .map(|i| {
            let rare = &vocab.words[20_000 + i * 37];
            match vocab.topics.get((i * 7919) % vocab.topics.len().max(1)) {
                Some(topic) => format!(
                    "{} {} {rare}",
                    vocab.words[topic[i % topic.len()]],
                    vocab.words[topic[(i + 1) % topic.len()]]
                ),
                None => format!("{} {rare}", vocab.words[50 + i % 50]),
            }
        })
        .collect()
}

/// Words in about one chunk in a thousand (ranks 30,000+ of the Zipf vocabulary).
fn rare_words(vocab: &corpus::Vocabulary) -> Vec<String> {
    (0..RUNS).map(|i| vocab.words[30_000 + i * 97 % 20_000].clone()).collect()
}

/// The ten most frequent words: each is in nearly every chunk.
fn common_words(vocab: &corpus::Vocabulary) -> Vec<String> {
    (0..RUNS).map(|i| vocab.words[i % 10].clone()).collect()
}

/// Sorted samples with their count.
struct Samples {
    stats: Stats,
    n: usize,
}

impl Samples {
    fn of(v: Vec<Duration>) -> Samples {
        let n = v.len();
        Samples { stats: Stats::of(v), n }
    }
    fn pct(&self, p: f64) -> Duration {
        self.stats.pct(p)
    }
    fn len(&self) -> usize {
        self.n
    }
}

fn call(s: &mut Session, method: &str, params: Value) -> Result<Value> {
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string() + "\n";
    let reply: Value = serde_json::from_str(s.round_trip(&line)?)?;
    reply.get("result").cloned().ok_or_else(|| format!("{method} failed: {reply}").into())
}

fn time_tool<T>(s: &mut Session, tool: &str, inputs: &[T], args: impl Fn(&T) -> Value) -> Result<Samples> {
    let mut times = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        let params = json!({"name": tool, "arguments": args(input)});
        let t = Instant::now();
        let result = call(s, "tools/call", params)?;
        let took = t.elapsed();
        if result["isError"] == true {
            return Err(format!("{tool} returned an error: {result}").into());
        }
        if i >= WARMUP.min(inputs.len() / 2) {
            times.push(took);
        }
    }
    Ok(Samples::of(times))
}

fn time_baseline<T>(inputs: &[T], mut f: impl FnMut(&T) -> Result<()>) -> Result<Samples> {
    let mut times = Vec::with_capacity(inputs.len());
    let started = Instant::now();
    for input in inputs {
        let t = Instant::now();
        f(input)?;
        times.push(t.elapsed());
        if times.len() >= MIN_RUNS && started.elapsed() > BASELINE_SPAN {
            break;
        }
    }
    Ok(Samples::of(times))
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

fn row_rate(name: &str, ours: f64, base: f64, base_name: &str) {
    println!(
        "| {name} | {ours:.0} | {base:.0} ({base_name}) | {:.2}× | ≥ {TARGET_INGEST_PER_S:.0} | {} |",
        ours / base,
        verdict(ours >= TARGET_INGEST_PER_S)
    );
}

fn row_ms(name: &str, ours: Duration, base: Duration, target: Option<f64>) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (t, v) = match target {
        Some(t) => (format!("≤ {t} ms"), verdict(ms(ours) <= t)),
        None => (String::new(), ""),
    };
    println!("| {name} | {:.2} ms | {:.2} ms | {:.2}× | {t} | {v} |", ms(ours), ms(base), ms(ours) / ms(base));
}
