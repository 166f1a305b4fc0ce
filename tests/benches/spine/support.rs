//! What the spine benchmark stands on: the protocol lines it speaks, line sessions over a child's
//! stdio or the daemon socket, the release binaries it builds (and the daemon it starts from them
//! with the test library's `Daemon` builder), percentiles and number formatting, and machine facts
//! read from Linux's /proc ("n/a" elsewhere).

use std::error::Error;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub use openhuman_tests::Daemon;

pub type Result<T> = std::result::Result<T, Box<dyn Error>>;

pub const DAEMON: &str = "openhumand-mcp";
pub const SHIM: &str = "openhuman-mcp-shim";

/// Bound on waiting for the daemon to answer, and to exit after `stop`: a daemon opening a kept
/// store of 10M chunks (`MEMORY_BENCH_REUSE`) took 110 s to answer.
const DAEMON_WAIT: Duration = Duration::from_secs(600);

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

pub fn ping(id: usize) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
}

pub fn list_tools(id: usize) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"core.list_tools\",\"arguments\":{{}}}}}}\n"
    )
}

/// A tool whose result is computed on every call: a search of the (empty) memory store.
pub fn memory_search(id: usize) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"memory.search\",\"arguments\":{{\"query\":\"pipelined benchmark {id}\"}}}}}}\n"
    )
}

// ---------------------------------------------------------------------------------------------
// Sessions, binaries, daemon

/// One line-protocol session: a child's stdin/stdout or a socket connection.
pub struct Session {
    pub writer: Box<dyn Write + Send>,
    pub reader: BufReader<Box<dyn Read + Send>>,
    pub child: Option<Child>,
    pub line: String,
}

impl Session {
    pub fn child(mut cmd: Command) -> Result<Session> {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn()?;
        Ok(Session {
            writer: Box::new(child.stdin.take().ok_or("no stdin")?),
            reader: BufReader::with_capacity(64 * 1024, Box::new(child.stdout.take().ok_or("no stdout")?)),
            child: Some(child),
            line: String::new(),
        })
    }

    pub fn socket(path: &Path) -> Result<Session> {
        let (r, w) = connect(path)?;
        Ok(Session { writer: w, reader: BufReader::with_capacity(64 * 1024, r), child: None, line: String::new() })
    }

    /// The child's process id (socket sessions have none).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn handshake(&mut self) -> Result<()> {
        let reply = self.round_trip(&format!("{INITIALIZE}\n"))?;
        expect_result(reply, "initialize")?;
        self.writer.write_all(format!("{INITIALIZED}\n").as_bytes())?;
        Ok(())
    }

    /// Writes one request line (in one write) and reads one reply line.
    pub fn round_trip(&mut self, request: &str) -> Result<&str> {
        self.writer.write_all(request.as_bytes())?;
        self.line.clear();
        if self.reader.read_line(&mut self.line)? == 0 {
            return Err("the session closed before answering".into());
        }
        Ok(&self.line)
    }

    pub fn close(self) -> Result<()> {
        let Session { writer, mut reader, child, .. } = self;
        drop(writer);
        if let Some(mut child) = child {
            io::copy(&mut reader, &mut io::sink())?;
            child.wait()?;
        }
        Ok(())
    }
}

type Halves = (Box<dyn Read + Send>, Box<dyn Write + Send>);

#[cfg(unix)]
fn connect(path: &Path) -> Result<Halves> {
    let stream = std::os::unix::net::UnixStream::connect(path)?;
    Ok((Box::new(stream.try_clone()?), Box::new(stream)))
}

#[cfg(not(unix))]
fn connect(_path: &Path) -> Result<Halves> {
    Err("this benchmark connects to the daemon's Unix socket; it runs on Linux and macOS".into())
}

pub fn expect_result(line: &str, what: &str) -> Result<()> {
    if line.contains("\"result\"") {
        Ok(())
    } else {
        Err(format!("{what} was not answered with a result: {}", line.trim_end()).into())
    }
}

pub struct Binaries {
    pub daemon: PathBuf,
    pub shim: PathBuf,
}

impl Binaries {
    /// Builds the release binaries (a no-op when they are fresh) and finds them under the
    /// workspace's target directory (`CARGO_TARGET_DIR` if set).
    pub fn build_and_locate() -> Result<Binaries> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().ok_or("the tests crate has no parent directory")?;
        // Measuring a stale binary would be worse than failing: build what is checked out.
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        // `OPENHUMAN_BENCH_PROFILE=fast` measures the release profile without LTO (quicker to
        // build on a small machine); release unless set.
        let profile = std::env::var("OPENHUMAN_BENCH_PROFILE").unwrap_or_else(|_| "release".to_string());
        let built = Command::new(cargo)
            // Exactly the documented command: a `-p` subset could unify features differently.
            .args(["build", "--profile", &profile])
            .current_dir(root)
            .stdout(Stdio::null())
            .status()?;
        if !built.success() {
            return Err(format!("`cargo build --profile {profile}` failed ({built})").into());
        }
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
        let dir = target.join(&profile);
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
    pub fn command(&self, exe: &Path, home: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(exe);
        cmd.args(args).env("OPENHUMAN_HOME", home).env_remove("RUST_LOG");
        cmd
    }
}

/// `openhumand-mcp serve` (the release build) in `home`, through the test library's daemon
/// builder; `Daemon::stop` (or drop, as a last resort) ends it.
pub fn start_daemon(bins: &Binaries, home: &Path) -> Result<Daemon> {
    Ok(Daemon::builder(home).bin(&bins.daemon).wait(DAEMON_WAIT).try_start()?)
}

// ---------------------------------------------------------------------------------------------
// Statistics and formatting

pub struct Stats(Vec<Duration>);

impl Stats {
    pub fn of(mut samples: Vec<Duration>) -> Stats {
        samples.sort_unstable();
        Stats(samples)
    }

    /// Nearest-rank percentile.
    pub fn pct(&self, p: f64) -> Duration {
        let n = self.0.len();
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.0[rank.clamp(1, n) - 1]
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

pub fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

pub fn signed_us(a: Duration, b: Duration) -> String {
    format!("{:+.1} us", (a.as_secs_f64() - b.as_secs_f64()) * 1e6)
}

pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

pub fn thousands(n: u64) -> String {
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

pub fn size_of(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Machine facts (Linux /proc; "n/a" elsewhere)

pub fn machine() -> String {
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

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".to_string())
}

/// `<short commit>` plus a note when the tracked files differ from it.
pub fn git_state() -> String {
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
pub fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// User + system CPU time of a process, from /proc/<pid>/stat (in USER_HZ = 100 ticks per second,
/// the value Linux reports to user space on every architecture it supports).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The current UTC date and time, `YYYY-MM-DD HH:MM`.
pub fn utc_now() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M").to_string()
}
