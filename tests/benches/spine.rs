//! The spine benchmark: what the process boundaries of openhuman-mcp cost, each figure beside a
//! baseline measured in the same run. Run it with
//!
//! ```text
//! cargo build --release && cargo bench -p openhuman-tests --bench spine
//! ```
//!
//! It drives the release binaries against a daemon it starts itself in a fresh temporary
//! `OPENHUMAN_HOME`, and prints:
//!
//! 1. cold start: spawn `openhuman-mcp-shim` → `initialize` answered (daemon warm), beside
//!    `openhumand-mcp stdio` doing the same and `true` (spawn + exit) as the floor;
//! 2. the shim hop: sequential `ping` round trips through one shim session, one `stdio` process
//!    and one direct socket connection, and what the shim adds;
//! 3. throughput: pipelined `tools/call core.list_tools` on one socket session, beside pipelined
//!    `ping` (the dispatcher floor);
//!
//! plus binary sizes and the shim's peak RSS. Samples of the compared variants are interleaved
//! (round robin), so a noisy neighbour on a shared machine hits all of them alike. Targets are
//! printed as PASS/MISS for the reader; nothing here asserts on time.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

use std::error::Error;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const COMMAND: &str = "cargo build --release && cargo bench -p openhuman-tests --bench spine";
const DAEMON: &str = "openhumand-mcp";
const SHIM: &str = "openhuman-mcp-shim";

/// Cold starts per variant (after `SPAWN_WARMUP` unrecorded ones).
const SPAWN_RUNS: usize = 200;
const SPAWN_WARMUP: usize = 10;
/// Sequential pings: warm-up per session, then `PING_ROUNDS` interleaved rounds of `PING_BATCH`.
const PING_WARMUP: usize = 1_000;
const PING_ROUNDS: usize = 50;
const PING_BATCH: usize = 100;
/// Pipelined requests per run, and runs per method (alternating; the median run is reported).
const PIPELINE_CALLS: usize = 50_000;
const PIPELINE_RUNS: usize = 3;
/// Bound on waiting for the daemon to answer, and to exit after `stop`.
const DAEMON_WAIT: Duration = Duration::from_secs(30);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn ping(id: usize) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
}

fn list_tools(id: usize) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"core.list_tools\",\"arguments\":{{}}}}}}\n"
    )
}

fn main() {
    if let Err(e) = run() {
        eprintln!("spine bench failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let bins = Binaries::locate()?;
    // Short and fresh: the socket path must fit in sun_path (104 bytes on macOS).
    let home = tempfile::Builder::new().prefix("oh-bench-").tempdir_in(std::env::temp_dir())?;
    let load_before = loadavg();
    println!("# openhuman-mcp spine benchmark");
    println!("command : {COMMAND}");
    println!("date    : {} UTC", utc_now());
    println!("machine : {}", machine());
    println!("git     : {}", git_state());
    println!("load    : {load_before} (1/5/15 min, before)");
    println!(
        "binaries: {DAEMON} {} bytes, {SHIM} {} bytes (release)",
        thousands(size_of(&bins.daemon)),
        thousands(size_of(&bins.shim))
    );

    let daemon = Daemon::start(&bins, home.path())?;
    let outcome = measure(&bins, home.path(), &daemon);
    let stopped = daemon.stop();
    outcome?;
    stopped?;
    println!("load    : {} (1/5/15 min, after)", loadavg());
    Ok(())
}

fn measure(bins: &Binaries, home: &Path, daemon: &Daemon) -> Result<()> {
    cold_start(bins, home)?;
    shim_hop(bins, home, &daemon.socket)?;
    pipelined(&daemon.socket, daemon.pid)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 1. Cold start

fn cold_start(bins: &Binaries, home: &Path) -> Result<()> {
    let shim = || bins.command(&bins.shim, home, &[]);
    let stdio = || bins.command(&bins.daemon, home, &["stdio"]);
    let (mut t_shim, mut t_stdio, mut t_true, mut hwm) = (vec![], vec![], vec![], vec![]);
    for i in 0..SPAWN_WARMUP + SPAWN_RUNS {
        let (a, rss) = spawn_to_initialized(shim())?;
        let (b, _) = spawn_to_initialized(stdio())?;
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

fn shim_hop(bins: &Binaries, home: &Path, socket: &Path) -> Result<()> {
    let mut sessions = [
        Session::child(bins.command(&bins.shim, home, &[]))?,
        Session::child(bins.command(&bins.daemon, home, &["stdio"]))?,
        Session::socket(socket)?,
    ];
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
    println!("added by the shim vs direct socket (the hop itself): p50 {}, p99 {}", hop(50.0), hop(99.0));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 3. Pipelined throughput

struct PipelineRun {
    elapsed: Duration,
    bytes: u64,
    daemon_cpu: Option<Duration>,
}

/// A request kind of the pipelined runs: its label and how to write request `id`.
type Method = (&'static str, fn(usize) -> String);

fn pipelined(socket: &Path, daemon_pid: u32) -> Result<()> {
    let methods: [Method; 2] = [("tools/call core.list_tools", list_tools), ("ping (dispatcher floor)", ping)];
    let mut runs: [Vec<PipelineRun>; 2] = Default::default();
    // A short unrecorded run per method first: it warms the daemon's allocator and worker threads.
    for (_, make) in &methods {
        pipeline_once(socket, daemon_pid, *make, PIPELINE_CALLS / 10)?;
    }
    for _ in 0..PIPELINE_RUNS {
        for ((_, make), out) in methods.iter().zip(runs.iter_mut()) {
            out.push(pipeline_once(socket, daemon_pid, *make, PIPELINE_CALLS)?);
        }
    }
    println!();
    println!(
        "## 3. pipelined requests on one socket session: {PIPELINE_CALLS} per run, median of {PIPELINE_RUNS} runs"
    );
    println!("{:<34}{:>10}{:>10}{:>13}{:>20}", "", "calls/s", "us/call", "reply bytes", "daemon CPU");
    let mut rates = Vec::new();
    for ((name, _), mut rs) in methods.iter().zip(runs) {
        rs.sort_by_key(|r| r.elapsed);
        let r = &rs[rs.len() / 2];
        let rate = PIPELINE_CALLS as f64 / r.elapsed.as_secs_f64();
        let cpu = r
            .daemon_cpu
            .map_or("n/a".to_string(), |c| format!("{:.1} us/call", c.as_secs_f64() * 1e6 / PIPELINE_CALLS as f64));
        println!(
            "{name:<34}{:>10}{:>10.1}{:>13}{:>20}",
            thousands(rate as u64),
            1e6 / rate,
            thousands(r.bytes / PIPELINE_CALLS as u64),
            cpu
        );
        rates.push(rate);
    }
    let target = if rates[0] >= 20_000.0 { "PASS" } else { "MISS" };
    println!("tools/call rate / ping rate: {:.2}   target tools/call >= 20,000 calls/s: {target}", rates[0] / rates[1]);
    Ok(())
}

/// One connection: handshake, then `n` requests written by one thread while this one reads.
fn pipeline_once(socket: &Path, daemon_pid: u32, make: fn(usize) -> String, n: usize) -> Result<PipelineRun> {
    let mut session = Session::socket(socket)?;
    session.handshake()?;
    // Requests are formatted before the clock starts: the client's formatting is not measured.
    let mut requests = Vec::with_capacity(n * 128);
    for id in 1..=n {
        requests.extend_from_slice(make(id).as_bytes());
    }
    let Session { mut writer, mut reader, .. } = session;
    let cpu_before = cpu_time(daemon_pid);
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
            return Err("the daemon closed the connection during the pipelined run".into());
        }
        bytes += line.len() as u64;
        // The envelope is `{"jsonrpc":"2.0","id":N,"result":...`: a cheap look at its head.
        let head = &line[..line.len().min(48)];
        if !head.windows(8).any(|w| w == b"\"result\"") {
            errors += 1;
        }
    }
    let elapsed = start.elapsed();
    let cpu_after = cpu_time(daemon_pid);
    let writer = sender.join().map_err(|_| "writer thread panicked")??;
    drop(writer);
    if errors > 0 {
        return Err(format!(
            "{errors} of {n} pipelined replies were not results; first kind seen: {}",
            String::from_utf8_lossy(&line[..line.len().min(300)])
        )
        .into());
    }
    Ok(PipelineRun { elapsed, bytes, daemon_cpu: cpu_before.zip(cpu_after).map(|(a, b)| b.saturating_sub(a)) })
}

// ---------------------------------------------------------------------------------------------
// Sessions, daemon, binaries

/// One line-protocol session: a child's stdin/stdout or a socket connection.
struct Session {
    writer: Box<dyn Write + Send>,
    reader: BufReader<Box<dyn Read + Send>>,
    child: Option<Child>,
    line: String,
}

impl Session {
    fn child(mut cmd: Command) -> Result<Session> {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn()?;
        Ok(Session {
            writer: Box::new(child.stdin.take().ok_or("no stdin")?),
            reader: BufReader::with_capacity(64 * 1024, Box::new(child.stdout.take().ok_or("no stdout")?)),
            child: Some(child),
            line: String::new(),
        })
    }

    fn socket(path: &Path) -> Result<Session> {
        let (r, w) = connect(path)?;
        Ok(Session { writer: w, reader: BufReader::with_capacity(64 * 1024, r), child: None, line: String::new() })
    }

    fn handshake(&mut self) -> Result<()> {
        let reply = self.round_trip(&format!("{INITIALIZE}\n"))?;
        expect_result(reply, "initialize")?;
        self.writer.write_all(format!("{INITIALIZED}\n").as_bytes())?;
        Ok(())
    }

    /// Writes one request line (in one write) and reads one reply line.
    fn round_trip(&mut self, request: &str) -> Result<&str> {
        self.writer.write_all(request.as_bytes())?;
        self.line.clear();
        if self.reader.read_line(&mut self.line)? == 0 {
            return Err("the session closed before answering".into());
        }
        Ok(&self.line)
    }

    fn close(self) -> Result<()> {
        let Session { writer, mut reader, child, .. } = self;
        drop(writer);
        if let Some(mut child) = child {
            io::copy(&mut reader, &mut io::sink())?;
            child.wait()?;
        }
        Ok(())
    }
}

#[cfg(unix)]
type Halves = (Box<dyn Read + Send>, Box<dyn Write + Send>);

#[cfg(unix)]
fn connect(path: &Path) -> Result<Halves> {
    let stream = std::os::unix::net::UnixStream::connect(path)?;
    Ok((Box::new(stream.try_clone()?), Box::new(stream)))
}

#[cfg(not(unix))]
fn connect(_path: &Path) -> Result<(Box<dyn Read + Send>, Box<dyn Write + Send>)> {
    Err("this benchmark connects to the daemon's Unix socket; it runs on Linux and macOS".into())
}

fn expect_result(line: &str, what: &str) -> Result<()> {
    if line.contains("\"result\"") {
        Ok(())
    } else {
        Err(format!("{what} was not answered with a result: {}", line.trim_end()).into())
    }
}

struct Binaries {
    daemon: PathBuf,
    shim: PathBuf,
}

impl Binaries {
    /// The release binaries under the workspace's target directory (`CARGO_TARGET_DIR` if set).
    fn locate() -> Result<Binaries> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().ok_or("the tests crate has no parent directory")?;
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
        let dir = target.join("release");
        let exe = |name: &str| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        let bins = Binaries { daemon: exe(DAEMON), shim: exe(SHIM) };
        for b in [&bins.daemon, &bins.shim] {
            if !b.is_file() {
                return Err(format!(
                    "{} is missing: build the release binaries first with `cargo build --release` \
                     (the benchmark measures them, not the bench profile)",
                    b.display()
                )
                .into());
            }
        }
        Ok(bins)
    }

    /// A command for `exe` rooted in `home`, with no logging override from the caller's shell.
    fn command(&self, exe: &Path, home: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(exe);
        cmd.args(args).env("OPENHUMAN_HOME", home).env_remove("RUST_LOG");
        cmd
    }
}

/// `openhumand-mcp serve` started by the bench; `stop` (or drop, as a last resort) ends it.
struct Daemon {
    child: Child,
    pid: u32,
    socket: PathBuf,
    stop_cmd: Command,
    log: PathBuf,
}

impl Daemon {
    fn start(bins: &Binaries, home: &Path) -> Result<Daemon> {
        let log = home.join("serve.log");
        let out = std::fs::File::create(&log)?;
        let child = bins
            .command(&bins.daemon, home, &["serve"])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()?;
        let mut daemon = Daemon {
            pid: child.id(),
            child,
            socket: home.join("run").join("mcp.sock"),
            stop_cmd: bins.command(&bins.daemon, home, &["stop"]),
            log,
        };
        let start = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            // Ready means answering a ping, not merely having bound the socket.
            let answered = Session::socket(&daemon.socket)
                .and_then(|mut s| s.round_trip(&ping(1)).map(|l| l.contains("\"result\"")));
            if let Ok(true) = answered {
                return Ok(daemon);
            }
            if let Some(status) = daemon.child.try_wait()? {
                return Err(format!("{DAEMON} serve exited with {status}:\n{}", daemon.log_text()).into());
            }
            if start.elapsed() > DAEMON_WAIT {
                return Err(format!(
                    "{DAEMON} serve did not answer within {} s:\n{}",
                    DAEMON_WAIT.as_secs(),
                    daemon.log_text()
                )
                .into());
            }
            // Readiness poll of a just-spawned process: short, growing pauses.
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `openhumand-mcp stop`, then a bounded wait for the process to exit.
    fn stop(mut self) -> Result<()> {
        let status = self.stop_cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        if !status.success() {
            return Err(format!("{DAEMON} stop exited with {status}").into());
        }
        let start = Instant::now();
        while start.elapsed() < DAEMON_WAIT {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(format!("{DAEMON} did not exit within {} s of `stop`", DAEMON_WAIT.as_secs()).into())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics and formatting

struct Stats(Vec<Duration>);

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        samples.sort_unstable();
        Stats(samples)
    }

    /// Nearest-rank percentile.
    fn pct(&self, p: f64) -> Duration {
        let n = self.0.len();
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.0[rank.clamp(1, n) - 1]
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

fn signed_us(a: Duration, b: Duration) -> String {
    format!("{:+.1} us", (a.as_secs_f64() - b.as_secs_f64()) * 1e6)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn size_of(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Machine facts (Linux /proc; "n/a" elsewhere)

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "cpu model n/a".to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| format!(", kernel {}", k.trim()))
        .unwrap_or_default();
    format!("{cpus} cpus (nproc), {model}, {} {}{kernel}", std::env::consts::OS, std::env::consts::ARCH)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".to_string())
}

/// `<short commit>` plus a note when the tracked files differ from it.
fn git_state() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&root)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(s) if !s.is_empty() => format!("{rev} + uncommitted changes"),
            _ => rev,
        },
        None => "n/a".to_string(),
    }
}

/// A line of /proc/<pid>/status in KiB (`VmHWM:` is the peak resident set size).
fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// User + system CPU time of a process, from /proc/<pid>/stat (in USER_HZ = 100 ticks per second,
/// the value Linux reports to user space on every architecture it supports).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The current UTC date and time, `YYYY-MM-DD HH:MM`.
fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
}
