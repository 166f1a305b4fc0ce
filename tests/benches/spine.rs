//! The spine benchmark: what the process boundaries of openhuman-mcp cost, each figure beside a
//! baseline measured in the same run. Run it with
//!
//! ```text
//! cargo build --release && cargo bench -p openhuman-tests --bench spine
//! ```
//!
//! It builds and drives the release binaries against a daemon it starts itself in a fresh
//! temporary `OPENHUMAN_HOME` (`stdio` processes get a fresh home of their own), and prints:
//!
//! 1. cold start: spawn `openhuman-mcp-shim` → `initialize` answered (daemon warm), beside
//!    `openhumand-mcp stdio` doing the same and `true` (spawn + exit) as the floor;
//! 2. the shim hop: sequential `ping` round trips through one shim session, one `stdio` process
//!    and one direct socket connection, and what the shim adds;
//! 3. throughput: pipelined `tools/call core.list_tools` on one socket session, beside pipelined
//!    `ping` (the dispatcher floor), the same `tools/call` stream through a shim, and
//!    `tools/call memory.search` (a result computed on every call; `core.list_tools` depends only
//!    on the config, so the daemon keeps its serialised result until the config is reloaded);
//!
//! plus binary sizes and the shim's peak RSS. Samples of the compared variants are interleaved
//! (round robin), so a noisy neighbour on a shared machine hits all of them alike; the bench's own
//! client threads run on the same cores as what they measure. Targets are printed as PASS/MISS
//! for the reader; nothing here asserts on time.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

// The bench target is this one file; its helpers sit beside it, in `spine/`.
#[path = "spine/support.rs"]
mod support;

use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{
    Binaries, DAEMON, Daemon, INITIALIZE, Result, SHIM, Session, Stats, cpu_time, expect_result, list_tools,
    memory_search, ms, ping, proc_status_kib, ratio, signed_us, thousands, us,
};

const COMMAND: &str = "cargo build --release && cargo bench -p openhuman-tests --bench spine";

/// Cold starts per variant (after `SPAWN_WARMUP` unrecorded ones).
const SPAWN_RUNS: usize = 200;
const SPAWN_WARMUP: usize = 10;
/// Sequential pings: warm-up per session, then `PING_ROUNDS` interleaved rounds of `PING_BATCH`.
const PING_WARMUP: usize = 1_000;
const PING_ROUNDS: usize = 50;
const PING_BATCH: usize = 100;
/// Pipelined requests per run, and runs per variant (interleaved; the median run is reported).
/// A variant slower than `PIPELINE_CALLS` per `PIPELINE_SPAN` (judged by its warm-up run) gets
/// fewer calls, at least `PIPELINE_MIN_CALLS`, so a slow build still finishes in minutes.
const PIPELINE_CALLS: usize = 50_000;
const PIPELINE_MIN_CALLS: usize = 5_000;
const PIPELINE_SPAN: Duration = Duration::from_secs(2);
const PIPELINE_RUNS: usize = 3;

fn main() {
    if let Err(e) = run() {
        eprintln!("spine bench failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let bins = Binaries::build_and_locate()?;
    let (daemon_bytes, shim_bytes) = (support::size_of(&bins.daemon), support::size_of(&bins.shim));
    // Short and fresh: the socket path must fit in sun_path (104 bytes on macOS).
    let home = tempfile::Builder::new().prefix("oh-bench-").tempdir_in(std::env::temp_dir())?;
    let load_before = support::loadavg();
    println!("# openhuman-mcp spine benchmark");
    println!("command : {COMMAND}");
    println!("date    : {} UTC", support::utc_now());
    println!("machine : {}", support::machine());
    println!("git     : {}", support::git_state());
    println!("load    : {load_before} (1/5/15 min, before)");
    println!("binaries: {DAEMON} {} bytes, {SHIM} {} bytes (release)", thousands(daemon_bytes), thousands(shim_bytes));

    let setup = Setup { bins: &bins, daemon_home: home.path().join("daemon"), stdio_home: home.path().join("stdio") };
    std::fs::create_dir_all(&setup.daemon_home)?;
    std::fs::create_dir_all(&setup.stdio_home)?;
    let daemon = support::start_daemon(&bins, &setup.daemon_home)?;
    let outcome = measure(&setup, &daemon);
    let stopped = daemon.stop();
    outcome?;
    stopped?;
    println!("load    : {} (1/5/15 min, after)", support::loadavg());
    Ok(())
}

/// Where each variant runs. The shim and socket clients share the daemon's home; `stdio`
/// processes get a home of their own, as a user without a daemon has: a `stdio` process in a live
/// daemon's home contends with it for the memory store.
struct Setup<'a> {
    bins: &'a Binaries,
    daemon_home: PathBuf,
    stdio_home: PathBuf,
}

impl Setup<'_> {
    fn shim(&self) -> Command {
        self.bins.command(&self.bins.shim, &self.daemon_home, &[])
    }

    fn stdio(&self) -> Command {
        self.bins.command(&self.bins.daemon, &self.stdio_home, &["stdio"])
    }
}

fn measure(setup: &Setup, daemon: &Daemon) -> Result<()> {
    cold_start(setup)?;
    shim_hop(setup, &daemon.socket())?;
    pipelined(setup, daemon)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 1. Cold start

fn cold_start(setup: &Setup) -> Result<()> {
    let (mut t_shim, mut t_stdio, mut t_true, mut hwm) = (vec![], vec![], vec![], vec![]);
    for i in 0..SPAWN_WARMUP + SPAWN_RUNS {
        let (a, rss) = spawn_to_initialized(setup.shim())?;
        let (b, _) = spawn_to_initialized(setup.stdio())?;
        let c = spawn_to_exit("true")?;
        if i >= SPAWN_WARMUP {
            t_shim.push(a);
            t_stdio.push(b);
            t_true.push(c);
            hwm.extend(rss);
        }
    }
    let (s, d, f) = (Stats::of(t_shim), Stats::of(t_stdio), Stats::of(t_true));
    println!();
    println!("## 1. cold spawn -> initialize answered (daemon warm), {SPAWN_RUNS} runs each, interleaved");
    println!("{:<34}{:>10}{:>10}", "", "median", "p90");
    let target = if s.pct(50.0) <= Duration::from_millis(5) { "PASS" } else { "MISS" };
    println!("{:<34}{:>10}{:>10}   target median <= 5 ms: {target}", SHIM, ms(s.pct(50.0)), ms(s.pct(90.0)));
    println!(
        "{:<34}{:>10}{:>10}   shim/stdio: {:.2}x median, {:.2}x p90",
        format!("{DAEMON} stdio (baseline)"),
        ms(d.pct(50.0)),
        ms(d.pct(90.0)),
        ratio(s.pct(50.0), d.pct(50.0)),
        ratio(s.pct(90.0), d.pct(90.0))
    );
    println!("{:<34}{:>10}{:>10}   floor: spawn + exit", "true (floor)", ms(f.pct(50.0)), ms(f.pct(90.0)));
    if hwm.is_empty() {
        println!("shim peak RSS: n/a (no /proc)");
    } else {
        hwm.sort_unstable();
        println!(
            "shim peak RSS (VmHWM once initialize is answered): median {} KiB, max {} KiB",
            hwm[hwm.len() / 2],
            hwm[hwm.len() - 1]
        );
    }
    Ok(())
}

/// Spawn → write `initialize` → its answer read. Also returns the child's VmHWM (KiB) then.
fn spawn_to_initialized(mut cmd: Command) -> Result<(Duration, Option<u64>)> {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    stdin.write_all(format!("{INITIALIZE}\n").as_bytes())?;
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    let elapsed = start.elapsed();
    let hwm = proc_status_kib(child.id(), "VmHWM:");
    expect_result(&line, "initialize")?;
    drop(stdin);
    io::copy(&mut stdout, &mut io::sink())?;
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("{:?} exited with {status}", cmd.get_program()).into());
    }
    Ok((elapsed, hwm))
}

fn spawn_to_exit(program: &str) -> Result<Duration> {
    let mut cmd = Command::new(program);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let start = Instant::now();
    cmd.spawn()?.wait()?;
    Ok(start.elapsed())
}

// ---------------------------------------------------------------------------------------------
// 2. Shim hop

fn shim_hop(setup: &Setup, socket: &Path) -> Result<()> {
    let mut sessions = [Session::child(setup.shim())?, Session::child(setup.stdio())?, Session::socket(socket)?];
    let names = [format!("through {SHIM}"), format!("{DAEMON} stdio (baseline)"), "direct socket".to_string()];
    let mut samples: [Vec<Duration>; 3] = Default::default();
    let mut id = 1;
    for s in &mut sessions {
        s.handshake()?;
        for _ in 0..PING_WARMUP {
            s.round_trip(&ping(id))?;
            id += 1;
        }
    }
    for _ in 0..PING_ROUNDS {
        for (s, out) in sessions.iter_mut().zip(samples.iter_mut()) {
            for _ in 0..PING_BATCH {
                let line = ping(id);
                id += 1;
                let start = Instant::now();
                s.round_trip(&line)?;
                out.push(start.elapsed());
            }
        }
    }
    for s in sessions {
        s.close()?;
    }
    let [shim, stdio, direct] = samples.map(Stats::of);
    println!();
    println!(
        "## 2. sequential ping round trip, {} per session after {PING_WARMUP} warm-up, interleaved rounds",
        PING_ROUNDS * PING_BATCH
    );
    println!("{:<34}{:>10}{:>10}{:>10}", "", "p50", "p90", "p99");
    for (name, st) in names.iter().zip([&shim, &stdio, &direct]) {
        println!("{name:<34}{:>10}{:>10}{:>10}", us(st.pct(50.0)), us(st.pct(90.0)), us(st.pct(99.0)));
    }
    let added = |p: f64| signed_us(shim.pct(p), stdio.pct(p));
    let hop = |p: f64| signed_us(shim.pct(p), direct.pct(p));
    let pass = |p: f64| {
        if shim.pct(p) <= stdio.pct(p) + Duration::from_micros(50) { "PASS" } else { "MISS" }
    };
    println!(
        "added by the shim vs stdio: p50 {} ({}), p99 {} ({})   target <= 50 us",
        added(50.0),
        pass(50.0),
        added(99.0),
        pass(99.0)
    );
    let within = |p: f64| {
        if shim.pct(p) <= direct.pct(p) + Duration::from_micros(50) { "PASS" } else { "MISS" }
    };
    println!(
        "added by the shim vs direct socket (the hop itself): p50 {} ({}), p99 {} ({})",
        hop(50.0),
        within(50.0),
        hop(99.0),
        within(99.0)
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 3. Pipelined throughput

/// One pipelined variant: its label, how to open its session, and how to write request `id`.
struct Variant<'a> {
    name: String,
    open: Box<dyn Fn() -> Result<Session> + 'a>,
    make: fn(usize) -> String,
}

struct PipelineRun {
    elapsed: Duration,
    bytes: u64,
    daemon_cpu: Option<Duration>,
    shim_cpu: Option<Duration>,
}

fn pipelined(setup: &Setup, daemon: &Daemon) -> Result<()> {
    let socket = || Session::socket(&daemon.socket());
    let variants = [
        Variant { name: "tools/call core.list_tools".into(), open: Box::new(socket), make: list_tools },
        Variant { name: "ping (dispatcher floor)".into(), open: Box::new(socket), make: ping },
        Variant {
            name: format!("tools/call through {SHIM}"),
            open: Box::new(|| Session::child(setup.shim())),
            make: list_tools,
        },
        Variant { name: "tools/call memory.search (empty store)".into(), open: Box::new(socket), make: memory_search },
    ];
    // An unrecorded warm-up run of each first: it warms the daemon's allocator and worker
    // threads, and its rate sizes the recorded runs.
    let mut calls = Vec::new();
    for v in &variants {
        let warm = pipeline_once((v.open)()?, daemon.pid(), v.make, PIPELINE_MIN_CALLS)?;
        let rate = PIPELINE_MIN_CALLS as f64 / warm.elapsed.as_secs_f64();
        calls.push(((rate * PIPELINE_SPAN.as_secs_f64()) as usize).clamp(PIPELINE_MIN_CALLS, PIPELINE_CALLS));
    }
    let mut runs: [Vec<PipelineRun>; 4] = Default::default();
    for _ in 0..PIPELINE_RUNS {
        for ((v, n), out) in variants.iter().zip(&calls).zip(runs.iter_mut()) {
            out.push(pipeline_once((v.open)()?, daemon.pid(), v.make, *n)?);
        }
    }
    println!();
    println!("## 3. pipelined requests on one session, median of {PIPELINE_RUNS} runs");
    println!("{:<40}{:>8}{:>10}{:>10}{:>13}{:>13}", "", "calls", "calls/s", "us/call", "reply bytes", "daemon CPU");
    let mut rates = Vec::new();
    for ((v, n), mut rs) in variants.iter().zip(calls).zip(runs) {
        rs.sort_by_key(|r| r.elapsed);
        let r = &rs[rs.len() / 2];
        let rate = n as f64 / r.elapsed.as_secs_f64();
        let per_call = |cpu: Option<Duration>| {
            cpu.map_or("n/a".to_string(), |c| format!("{:.1} us", c.as_secs_f64() * 1e6 / n as f64))
        };
        print!(
            "{:<40}{:>8}{:>10}{:>10.1}{:>13}{:>13}",
            v.name,
            thousands(n as u64),
            thousands(rate as u64),
            1e6 / rate,
            thousands(r.bytes / n as u64),
            per_call(r.daemon_cpu)
        );
        match r.shim_cpu {
            Some(_) => println!("   shim CPU {}", per_call(r.shim_cpu)),
            None => println!(),
        }
        rates.push(rate);
    }
    let target = if rates[0] >= 20_000.0 { "PASS" } else { "MISS" };
    println!(
        "tools/call / ping: {:.2}x; through the shim / direct: {:.2}x   target tools/call >= 20,000 calls/s on the socket: {target}",
        rates[0] / rates[1],
        rates[2] / rates[0]
    );
    println!("(CPU per call: user + system time of the process over the run, 10 ms resolution)");
    Ok(())
}

/// One session: handshake, then `n` requests written by one thread while this one reads.
fn pipeline_once(mut session: Session, daemon_pid: u32, make: fn(usize) -> String, n: usize) -> Result<PipelineRun> {
    session.handshake()?;
    // Requests are formatted before the clock starts: the client's formatting is not measured.
    let mut requests = Vec::with_capacity(n * 128);
    for id in 1..=n {
        requests.extend_from_slice(make(id).as_bytes());
    }
    let shim_pid = session.pid();
    let Session { mut writer, mut reader, child, .. } = session;
    let cpu_before = (cpu_time(daemon_pid), shim_pid.and_then(cpu_time));
    let start = Instant::now();
    let sender = std::thread::spawn(move || -> io::Result<Box<dyn Write + Send>> {
        writer.write_all(&requests)?;
        writer.flush()?;
        Ok(writer)
    });
    let mut line = Vec::with_capacity(8192);
    let (mut bytes, mut errors) = (0u64, 0usize);
    for _ in 0..n {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Err("the session closed during the pipelined run".into());
        }
        bytes += line.len() as u64;
        // The envelope is `{"jsonrpc":"2.0","id":N,"result":...`: a cheap look at its head.
        let head = &line[..line.len().min(48)];
        if !head.windows(8).any(|w| w == b"\"result\"") {
            errors += 1;
        }
    }
    let elapsed = start.elapsed();
    let cpu_after = (cpu_time(daemon_pid), shim_pid.and_then(cpu_time));
    let writer = sender.join().map_err(|_| "writer thread panicked")??;
    if errors > 0 {
        return Err(format!(
            "{errors} of {n} pipelined replies were not results; the last: {}",
            String::from_utf8_lossy(&line[..line.len().min(300)])
        )
        .into());
    }
    Session { writer, reader, child, line: String::new() }.close()?;
    let spent = |a: Option<Duration>, b: Option<Duration>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
    Ok(PipelineRun {
        elapsed,
        bytes,
        daemon_cpu: spent(cpu_before.0, cpu_after.0),
        shim_cpu: spent(cpu_before.1, cpu_after.1),
    })
}
