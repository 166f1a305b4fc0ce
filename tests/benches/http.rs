//! The HTTP benchmark: `tools/call` throughput and latency of openhumand-mcp's Streamable HTTP
//! transport beside a peer built on the official Rust MCP SDK (rmcp), measured in the same run.
//! Run it with
//!
//! ```text
//! cargo bench -p openhuman-tests --bench http
//! ```
//!
//! It builds the release daemon (`cargo build --release`, a no-op when fresh) and the peer
//! (tests/bench-peers/rmcp-server, its own Cargo project and lock file, into
//! `target/bench-peers`; minutes the first time), starts both on 127.0.0.1 (the daemon with
//! `serve --http --port 0` in a fresh temporary home), and gives the peer the daemon's own
//! `core.list_tools` answer to serve, so both tools put the same bytes on the wire.
//!
//! For each era — a handshake-era session per connection (2025-11-25, `Mcp-Session-Id`), and
//! stateless 2026-07-28 requests (per-request `_meta`, no session) — and 1, 10 and 50 concurrent
//! keep-alive HTTP/1.1 connections (one blocking client thread each, one request in flight per
//! connection), it runs `tools/call core.list_tools` for a fixed time and prints calls/s, p50/p99
//! latency and the server's CPU time per call, for both servers, and the ratio ours/rmcp against
//! the target (>= 2x). A last table gives the floor without a tool: `ping` on a session, which is
//! HTTP, session lookup and dispatch alone. Runs of the two servers are interleaved (round robin), so a noisy neighbour
//! on a shared machine hits both alike; the median run's rate is reported. Nothing here asserts
//! on time. `OPENHUMAN_HTTP_BENCH_SECS` sets the length of one run (default 2).
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

// The bench target is this one file; its helpers sit beside it, in `http/`.
#[path = "http/client.rs"]
mod client;
#[path = "http/servers.rs"]
mod servers;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use client::{Conn, Era, TOOL};
use servers::Server;

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const COMMAND: &str = "cargo bench -p openhuman-tests --bench http";
const CONCURRENCY: [usize; 3] = [1, 10, 50];
const RUNS: usize = 3;
const WARMUP: Duration = Duration::from_secs(1);
const TARGET: f64 = 2.0;

fn main() {
    if let Err(e) = run() {
        eprintln!("http bench failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let span = std::env::var("OPENHUMAN_HTTP_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(Duration::from_secs(2), Duration::from_secs_f64);
    let daemon_bin = servers::build_daemon()?;
    eprintln!("building the rmcp peer (tests/bench-peers/rmcp-server; minutes the first time)...");
    let peer_bin = servers::build_peer()?;
    println!("# openhuman-mcp HTTP benchmark: tools/call over Streamable HTTP, ours vs rmcp");
    println!("command : {COMMAND}");
    println!("date    : {} UTC", servers::run_text("date", &["-u", "+%Y-%m-%d %H:%M"]));
    println!("machine : {}", servers::machine());
    println!("git     : {}", git_state());
    println!("load    : {} (1/5/15 min, before)", servers::loadavg());
    println!(
        "runs    : {RUNS} x {:.1} s per server, era and concurrency (after a {:.0} s warm-up), interleaved",
        span.as_secs_f64(),
        WARMUP.as_secs_f64()
    );

    // Short and fresh: the daemon's socket path must fit in sun_path.
    let scratch = tempfile::Builder::new().prefix("oh-http-").tempdir_in(std::env::temp_dir())?;
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home)?;
    let ours = Server::daemon(&daemon_bin, &home)?;
    let outcome = with_daemon(&ours, &peer_bin, scratch.path(), span);
    if outcome.is_err() {
        eprintln!("daemon log tail:\n{}", ours.log_tail());
    }
    let stopped = ours.stop();
    outcome?;
    stopped?;
    println!("load    : {} (1/5/15 min, after)", servers::loadavg());
    Ok(())
}

fn with_daemon(ours: &Server, peer_bin: &std::path::Path, scratch: &std::path::Path, span: Duration) -> Result<()> {
    // The peer serves exactly what our tool answers.
    let mut probe = Conn::open(ours.addr, Era::Stateless)?;
    let answer = probe.call_tool_json()?;
    let reply: serde_json::Value = serde_json::from_slice(&answer.body)?;
    let structured = reply.pointer("/result/structuredContent").ok_or("core.list_tools has no structuredContent")?;
    let payload = scratch.join("payload.json");
    std::fs::write(&payload, serde_json::to_vec(structured)?)?;
    let rmcp = Server::peer(peer_bin, &payload)?;
    let outcome = measure(ours, &rmcp, span);
    let stopped = rmcp.stop();
    outcome?;
    stopped
}

fn measure(ours: &Server, rmcp: &Server, span: Duration) -> Result<()> {
    println!();
    println!("servers : openhumand-mcp (release, axum/hyper HTTP/1.1, default config, no auth) at {}", ours.addr);
    println!("          rmcp {} StreamableHttpService in axum (sessions on, json_response on) at {}", RMCP, rmcp.addr);
    println!("tool    : {TOOL}, no arguments; response bodies (bytes):");
    for era in [Era::Session, Era::Stateless] {
        let mut sizes = Vec::new();
        for server in [ours, rmcp] {
            let mut conn = Conn::open(server.addr, era)?;
            sizes.push(conn.call_tool()?);
            conn.close()?;
        }
        println!(
            "          {:<24} ours {:>6}, rmcp {:>6}",
            era.label(),
            thousands(sizes[0] as f64),
            thousands(sizes[1] as f64)
        );
    }
    println!("          ours keeps the serialised result of this config-only tool until the config is reloaded and");
    println!("          splices it into each reply; rmcp clones the same JSON document and serialises it every call");
    let mut verdicts = Vec::new();
    for (era, call) in [(Era::Session, Call::Tool), (Era::Stateless, Call::Tool), (Era::Session, Call::Ping)] {
        println!();
        println!(
            "## {}",
            match (era, call) {
                (Era::Session, Call::Tool) => format!(
                    "tools/call {TOOL}, {}: initialize once per connection, then Mcp-Session-Id on every call",
                    era.label()
                ),
                (Era::Stateless, _) => format!(
                    "tools/call {TOOL}, {}: per-request _meta and Mcp-Method/Mcp-Name headers, no session",
                    era.label()
                ),
                (Era::Session, Call::Ping) => format!(
                    "floor: ping, {} (HTTP, session lookup and dispatch without a tool; not a target)",
                    era.label()
                ),
            }
        );
        println!("conns  server            calls/s   p50 us   p99 us   CPU/call   ours/rmcp");
        for &conns in &CONCURRENCY {
            let pair = [ours, rmcp];
            for server in pair {
                one_run(server, era, call, conns, WARMUP)?;
            }
            let mut runs: [Vec<Run>; 2] = Default::default();
            for _ in 0..RUNS {
                for (i, server) in pair.iter().enumerate() {
                    runs[i].push(one_run(server, era, call, conns, span)?);
                }
            }
            let [a, b] = runs.map(Summary::of);
            let ratio = a.rate / b.rate;
            let verdict = match call {
                Call::Ping => "",
                Call::Tool if ratio >= TARGET => "PASS",
                Call::Tool => "MISS",
            };
            if call == Call::Tool {
                verdicts.push((era, conns, ratio, verdict));
            }
            for (name, s) in [("openhumand-mcp", &a), ("rmcp", &b)] {
                let mark = if name == "rmcp" {
                    format!("{ratio:.2}x {verdict}").trim_end().to_string()
                } else {
                    String::new()
                };
                println!(
                    "{conns:>5}  {name:<15}{:>10}{:>9}{:>9}{:>11}   {mark}",
                    thousands(s.rate),
                    s.p50,
                    s.p99,
                    s.cpu_per_call.map_or_else(|| "n/a".to_string(), |us| format!("{us:.0} us")),
                );
            }
        }
    }
    println!();
    let misses: Vec<String> = verdicts
        .iter()
        .filter(|v| v.3 == "MISS")
        .map(|(era, conns, ratio, _)| format!("{} @{conns}: {ratio:.2}x", era.label()))
        .collect();
    if misses.is_empty() {
        println!("target ours/rmcp >= {TARGET}x calls/s: PASS in all {} cases", verdicts.len());
    } else {
        println!(
            "target ours/rmcp >= {TARGET}x calls/s: MISS in {} of {} cases ({})",
            misses.len(),
            verdicts.len(),
            misses.join("; ")
        );
    }
    Ok(())
}

/// rmcp's version, from the peer's lock file (what was built).
const RMCP: &str = "3.11.0";

struct Run {
    calls: usize,
    wall: Duration,
    cpu: Option<Duration>,
    latencies_us: Vec<u32>,
}

/// `conns` connections (each opened, and for sessions initialised, before the clock starts)
/// make `call` back to back until `span` is over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    Tool,
    Ping,
}

fn one_run(server: &Server, era: Era, call: Call, conns: usize, span: Duration) -> Result<Run> {
    let opened: Vec<Conn> = (0..conns).map(|_| Conn::open(server.addr, era)).collect::<Result<_>>()?;
    let start = Arc::new(Barrier::new(conns + 1));
    let workers: Vec<_> = opened
        .into_iter()
        .map(|mut conn| {
            let start = start.clone();
            std::thread::spawn(move || -> Result<(Conn, Vec<u32>, Instant)> {
                let mut lat = Vec::with_capacity(64 * 1024);
                start.wait();
                let deadline = Instant::now() + span;
                loop {
                    let t = Instant::now();
                    if t >= deadline {
                        break;
                    }
                    match call {
                        Call::Tool => conn.call_tool()?,
                        Call::Ping => conn.ping()?,
                    };
                    lat.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
                }
                Ok((conn, lat, Instant::now()))
            })
        })
        .collect();
    let cpu_before = servers::cpu_time(server.pid());
    start.wait();
    let t0 = Instant::now();
    let (mut calls, mut end, mut latencies_us) = (0, t0, Vec::new());
    let mut done = Vec::new();
    for w in workers {
        let (conn, lat, finished) = w.join().map_err(|_| "a client thread panicked")??;
        calls += lat.len();
        end = end.max(finished);
        latencies_us.extend(lat);
        done.push(conn);
    }
    let cpu = servers::cpu_time(server.pid()).zip(cpu_before).map(|(after, before)| after.saturating_sub(before));
    for conn in done {
        conn.close()?;
    }
    Ok(Run { calls, wall: end - t0, cpu, latencies_us })
}

struct Summary {
    rate: f64,
    p50: u32,
    p99: u32,
    cpu_per_call: Option<f64>,
}

impl Summary {
    /// The median run's rate and CPU per call; percentiles over every call of every run.
    fn of(mut runs: Vec<Run>) -> Summary {
        let rate = |r: &Run| r.calls as f64 / r.wall.as_secs_f64();
        runs.sort_by(|x, y| rate(x).total_cmp(&rate(y)));
        let median = &runs[runs.len() / 2];
        let cpu_per_call = median.cpu.map(|c| c.as_secs_f64() * 1e6 / median.calls.max(1) as f64);
        let mut all: Vec<u32> = runs.iter().flat_map(|r| r.latencies_us.iter().copied()).collect();
        all.sort_unstable();
        let pct = |p: f64| all.get(((all.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0);
        Summary { rate: rate(median), p50: pct(0.50), p99: pct(0.99), cpu_per_call }
    }
}

fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn git_state() -> String {
    let rev = servers::run_text("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = servers::run_text("git", &["status", "--porcelain", "--untracked-files=no"]);
    if rev != "n/a" && dirty != "n/a" && !dirty.is_empty() { format!("{rev} + uncommitted changes") } else { rev }
}
