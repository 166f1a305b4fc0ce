//! The watched-folder benchmark: how long an edit takes to become searchable, and what the
//! daemon costs while it watches 10,000 files and nothing changes. Run it with
//!
//! ```text
//! cargo build --release && cargo bench -p openhuman-tests --bench watch
//! ```
//!
//! (`OPENHUMAN_BENCH_BIN_DIR=target/debug` measures the debug binaries instead; the report names
//! the directory.) It does not build anything itself. In a fresh temporary `OPENHUMAN_HOME` it
//! writes 10,000 small Markdown files in 100 folders, configures them as one watched source and
//! starts the daemon, which reads them all (the initial sync is timed). Once the background
//! embedding is done and the work that follows a large sync has settled (reported apart), it
//! samples the daemon's user + system CPU time from /proc/<pid>/stat over an idle window. Then, for each debounce setting, it writes new files and edits existing ones
//! one at a time and polls `memory.search` over the socket until the new word is found: edit →
//! searchable latency, p50/p90/p99/max. Nothing here asserts on time.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

#[path = "spine/support.rs"]
#[allow(dead_code)]
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Daemon, Result, Session, Stats, cpu_time, git_state, loadavg, machine, ms, utc_now};

const FILES: usize = 10_000;
const FOLDERS: usize = 100;
const IDLE: Duration = Duration::from_secs(30);
const SETTLE: Duration = Duration::from_secs(120);
const EDITS: usize = 60;
const DEBOUNCES_MS: &[u64] = &[300, 50];
const WAIT: Duration = Duration::from_secs(600);

fn bin_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os("OPENHUMAN_BENCH_BIN_DIR")
        .map(|d| {
            let d = PathBuf::from(d);
            if d.is_absolute() { d } else { root.join(d) }
        })
        .unwrap_or_else(|| root.join("target/release"))
}

fn request(id: usize, method: &str, params: Value) -> String {
    format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn call(s: &mut Session, id: &mut usize, method: &str, params: Value) -> Result<Value> {
    *id += 1;
    let line = s.round_trip(&request(*id, method, params))?.to_string();
    let v: Value = serde_json::from_str(&line)?;
    if v.get("error").is_some() {
        return Err(format!("{method} failed: {line}").into());
    }
    Ok(v["result"].clone())
}

fn found(s: &mut Session, id: &mut usize, word: &str) -> Result<bool> {
    let r = call(s, id, "tools/call", json!({"name": "memory.search", "arguments": {"query": word, "k": 1}}))?;
    Ok(r["structuredContent"]["hits"].as_array().is_some_and(|h| !h.is_empty()))
}

/// Polls `f` until it is true; an error past `WAIT`.
fn until(what: &str, mut f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    let start = Instant::now();
    loop {
        if f()? {
            return Ok(start.elapsed());
        }
        if start.elapsed() > WAIT {
            return Err(format!("timed out waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn config(dir: &Path, debounce: u64) -> String {
    format!(
        "[autonomy]\nmax_actions_per_hour = 4000000000\n[memory]\nwatch_debounce_ms = {debounce}\n\
         [[memory.sources]]\npath = {:?}\n",
        dir.to_string_lossy()
    )
}

fn main() -> Result<()> {
    let bins = bin_dir();
    let daemon_bin = bins.join("openhumand-mcp");
    if !daemon_bin.is_file() {
        return Err(format!("{} is missing: build first (see the header of this bench)", daemon_bin.display()).into());
    }
    let home = tempfile::Builder::new().prefix("oh-bench-").tempdir_in(std::env::temp_dir())?;
    let vault = tempfile::Builder::new().prefix("oh-vault-").tempdir_in(std::env::temp_dir())?;
    let dir = vault.path().canonicalize()?;
    for i in 0..FILES {
        let folder = dir.join(format!("f{:03}", i % FOLDERS));
        std::fs::create_dir_all(&folder)?;
        std::fs::write(
            folder.join(format!("note{i:05}.md")),
            format!("# Note {i}\n\nBenchmark note number {i} about topic t{} and item k{i}q.\n", i % 37),
        )?;
    }
    std::fs::write(home.path().join("config.toml"), config(&dir, DEBOUNCES_MS[0]))?;
    println!("watch benchmark, {}", utc_now());
    println!("binaries: {} ; commit {} ; {}", bins.display(), git_state(), machine());
    println!("load average at start: {}", loadavg());

    let started = Instant::now();
    let daemon = Daemon::builder(home.path()).bin(&daemon_bin).wait(Duration::from_secs(60)).try_start()?;
    let pid = daemon.pid();
    let mut s = Session::socket(&daemon.socket())?;
    s.handshake()?;
    let mut id = 0;
    until("the initial sync of every file", || {
        let st = call(&mut s, &mut id, "openhuman.daemon_status", json!({}))?;
        Ok(st["watch"]["sources"][0]["files"].as_u64() == Some(FILES as u64))
    })?;
    let initial = started.elapsed();
    until("the background embedding", || {
        let st = call(&mut s, &mut id, "openhuman.daemon_status", json!({}))?;
        let fast = &st["vectors"]["fast"];
        Ok(fast["covered"].is_u64() && fast["covered"] == fast["total"])
    })?;
    let embedded = started.elapsed();
    println!(
        "initial sync of {FILES} files (daemon start → all in memory): {:.1} s; with vectors: {:.1} s",
        initial.as_secs_f64(),
        embedded.as_secs_f64()
    );

    // What follows the sync (index merges, compaction) settles first: 2 s windows until one uses
    // at most one 10 ms tick, at most SETTLE.
    let settle_from = cpu_time(pid).ok_or("no /proc/<pid>/stat (Linux only)")?;
    let settle_start = Instant::now();
    loop {
        let a = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
        std::thread::sleep(Duration::from_secs(2));
        let b = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
        if b.saturating_sub(a) <= Duration::from_millis(10) || settle_start.elapsed() > SETTLE {
            break;
        }
    }
    let settled = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
    println!(
        "after the initial sync: {} of CPU in {:.0} s until a 2 s window used at most one tick",
        ms(settled.saturating_sub(settle_from)),
        settle_start.elapsed().as_secs_f64()
    );
    // Idle: nobody calls, nothing changes.
    let before = cpu_time(pid).ok_or("no /proc/<pid>/stat (Linux only)")?;
    std::thread::sleep(IDLE);
    let after = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
    let idle = after.saturating_sub(before);
    println!(
        "idle CPU while watching {FILES} files: {} over {} s = {:.3}% of one core (utime+stime, 10 ms ticks)",
        ms(idle),
        IDLE.as_secs(),
        idle.as_secs_f64() / IDLE.as_secs_f64() * 100.0
    );

    for (round, debounce) in DEBOUNCES_MS.iter().enumerate() {
        if round > 0 {
            std::fs::write(home.path().join("config.toml"), config(&dir, *debounce))?;
            call(&mut s, &mut id, "openhuman.config_reload", json!({}))?;
            // The watcher restarts and walks the folder again (no file changed, nothing is read).
            until("the watcher to settle", || {
                let st = call(&mut s, &mut id, "openhuman.daemon_status", json!({}))?;
                Ok(st["watch"]["sources"][0]["state"] == "watching")
            })?;
        }
        let mut samples = Vec::with_capacity(EDITS);
        for n in 0..EDITS {
            let word = format!("zq{debounce}w{n}x");
            let path = if n % 2 == 0 {
                dir.join(format!("f{:03}", n % FOLDERS)).join(format!("new-{debounce}-{n}.md"))
            } else {
                dir.join(format!("f{:03}", n % FOLDERS)).join(format!("note{n:05}.md"))
            };
            let text = format!("# Edited {n}\n\nThis note now mentions {word} and nothing else of note.\n");
            let t0 = Instant::now();
            std::fs::write(&path, text)?;
            until(&format!("`{word}` to be searchable"), || found(&mut s, &mut id, &word))?;
            samples.push(t0.elapsed());
        }
        let st = Stats::of(samples);
        println!(
            "edit → searchable, debounce {debounce} ms, {EDITS} writes (half new files, half edits): \
             p50 {} p90 {} p99 {} max {}",
            ms(st.pct(50.0)),
            ms(st.pct(90.0)),
            ms(st.pct(99.0)),
            ms(st.pct(100.0))
        );
    }
    println!("load average at end: {}", loadavg());
    drop(s);
    daemon.stop()?;
    Ok(())
}
