//! The write benchmark: how many `memory.store` calls per second the daemon acknowledges when
//! many sessions write at once, beside one session writing alone in the same run. Run it with
//!
//! ```text
//! cargo build --release && cargo bench -p openhuman-tests --bench writes
//! ```
//!
//! It starts the release daemon in a fresh temporary `OPENHUMAN_HOME` and, for 1, 8 and 64 socket
//! sessions, has every session call `memory.store` in a loop, each call waiting for its answer as
//! a client does. An answer means the document and its audit row are committed and searchable,
//! so after each phase the bench searches for a sample of what was stored and counts the audit
//! rows, and any miss fails the run. It prints calls per second, latency percentiles and the
//! ratio to one session. Nothing here asserts on time; the target is printed as PASS/MISS.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

// The spine benchmark's helpers; this bench uses a part of them.
#[path = "spine/support.rs"]
#[allow(dead_code)]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::{Binaries, Result, Session, Stats, expect_result, ms, thousands};

const COMMAND: &str = "cargo build --release && cargo bench -p openhuman-tests --bench writes";
/// (sessions, calls per session).
const PHASES: &[(usize, usize)] = &[(1, 300), (8, 100), (64, 40)];
/// Acknowledged stores per second with 64 sessions.
const TARGET: f64 = 1000.0;

fn store(id: usize, session: usize, n: usize) -> String {
    let args = serde_json::json!({
        "title": format!("bench write {session} {n}"),
        "content": format!("Write benchmark document zq{session}x{n}q from session {session}, call {n}."),
        "namespace": "bench",
    });
    let req = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "memory.store", "arguments": args}});
    format!("{req}\n")
}

fn search(id: usize, query: &str) -> String {
    let req = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "memory.search", "arguments": {"query": query, "k": 1}}});
    format!("{req}\n")
}

/// One phase: `sessions` threads, each storing `calls` documents; the latencies of every call.
fn phase(socket: &Path, sessions: usize, calls: usize, first: usize) -> Result<(Duration, Vec<Duration>)> {
    let mut opened = Vec::new();
    for _ in 0..sessions {
        let mut s = Session::socket(socket)?;
        s.handshake()?;
        opened.push(s);
    }
    let started = Instant::now();
    let workers: Vec<_> = opened
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            std::thread::spawn(move || -> std::result::Result<Vec<Duration>, String> {
                let mut lat = Vec::with_capacity(calls);
                for n in 0..calls {
                    let t = Instant::now();
                    let reply = s.round_trip(&store(n + 1, first + i, n)).map_err(|e| e.to_string())?;
                    lat.push(t.elapsed());
                    if !reply.contains("\"isError\":false") {
                        return Err(format!("session {i} call {n} was not stored: {}", reply.trim_end()));
                    }
                }
                s.close().map_err(|e| e.to_string())?;
                Ok(lat)
            })
        })
        .collect();
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.join().map_err(|_| "a writer thread panicked")??);
    }
    Ok((started.elapsed(), all))
}

/// Every stored document of the phase is searchable at once: checks the first and last call
/// of every session.
fn check_searchable(socket: &Path, sessions: usize, calls: usize, first: usize) -> Result<()> {
    let mut s = Session::socket(socket)?;
    s.handshake()?;
    for i in 0..sessions {
        for n in [0, calls - 1] {
            let token = format!("zq{}x{n}q", first + i);
            let reply = s.round_trip(&search(7, &token))?;
            expect_result(reply, "memory.search")?;
            if !reply.contains(&token) {
                return Err(format!("acknowledged write {token} is not searchable: {}", reply.trim_end()).into());
            }
        }
    }
    s.close()
}

/// Audit rows of `memory.store`, read with the CLI (through the daemon).
fn audit_rows(bins: &Binaries, home: &Path) -> Result<usize> {
    let out = bins
        .command(&bins.daemon, home, &["audit", "--tool", "memory.store", "--limit", "10000", "--json"])
        .output()?;
    if !out.status.success() {
        return Err(format!("audit failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().filter(|l| l.contains("\"success\":true")).count())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("writes bench failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let bins = Binaries::build_and_locate()?;
    let home = tempfile::Builder::new().prefix("oh-bench-").tempdir_in(std::env::temp_dir())?;
    println!("# openhuman-mcp write benchmark");
    println!("command : {COMMAND}");
    println!("date    : {} UTC", support::utc_now());
    println!("machine : {}", support::machine());
    println!("git     : {}", support::git_state());
    println!("load    : {} (1/5/15 min, before)", support::loadavg());
    // The policy's default rate limit (120 writes an hour) would refuse a benchmark.
    std::fs::write(home.path().join("config.toml"), "[autonomy]\nmax_actions_per_hour = 4000000000\n")?;
    let daemon = support::start_daemon(&bins, home.path())?;
    let socket = daemon.socket();
    let mut first = 0;
    let mut alone = 0.0;
    let mut written = 0;
    println!(
        "\n{:>8} {:>7} {:>10} {:>9} {:>9} {:>9} {:>12}",
        "sessions", "calls", "stores/s", "p50", "p99", "max", "× 1 session"
    );
    for &(sessions, calls) in PHASES {
        let (wall, lat) = phase(&socket, sessions, calls, first)?;
        check_searchable(&socket, sessions, calls, first)?;
        let n = lat.len();
        written += n;
        let rate = n as f64 / wall.as_secs_f64();
        if sessions == 1 {
            alone = rate;
        }
        let stats = Stats::of(lat);
        println!(
            "{sessions:>8} {:>7} {rate:>10.0} {:>9} {:>9} {:>9} {:>11.1}×",
            thousands(n as u64),
            ms(stats.pct(50.0)),
            ms(stats.pct(99.0)),
            ms(stats.pct(100.0)),
            rate / alone
        );
        if sessions == 64 {
            let verdict = if rate >= TARGET { "PASS" } else { "MISS" };
            println!("target  : ≥ {TARGET:.0} acknowledged stores/s with 64 sessions: {verdict}");
        }
        first += sessions;
    }
    let rows = audit_rows(&bins, home.path())?;
    println!("audit   : {rows} successful memory.store rows for {written} acknowledged calls");
    if rows != written {
        return Err(format!("{written} calls were acknowledged but {rows} audit rows say so").into());
    }
    daemon.stop()?;
    println!("load    : {} (1/5/15 min, after)", support::loadavg());
    Ok(())
}
