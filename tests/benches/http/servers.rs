//! The two servers under test, as processes: the daemon (`openhumand-mcp serve --http --port 0`,
//! release build, fresh temporary home, started with the test library's daemon builder) and the
//! rmcp peer (tests/bench-peers/rmcp-server, built on demand into the workspace's target
//! directory). Also the machine facts the report prints, read from Linux's /proc ("n/a"
//! elsewhere).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use openhuman_tests::Daemon;

use super::Result;

/// Bound on a server's start (until it listens) and on its exit once asked to stop.
const WAIT: Duration = Duration::from_secs(30);

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo_root().join("target"))
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn exe(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// `cargo build --release` of the workspace (a no-op when fresh): the daemon measured is the one
/// checked out, never a stale build.
pub fn build_daemon() -> Result<PathBuf> {
    let built = cargo().args(["build", "--release"]).current_dir(repo_root()).stdout(Stdio::null()).status()?;
    if !built.success() {
        return Err(format!("`cargo build --release` failed ({built})").into());
    }
    let daemon = exe(&target_dir().join("release"), "openhumand-mcp");
    if !daemon.is_file() {
        return Err(format!("{} is missing after `cargo build --release`", daemon.display()).into());
    }
    Ok(daemon)
}

/// Builds the rmcp peer with its own lock file into `target/bench-peers` (minutes the first time).
pub fn build_peer() -> Result<PathBuf> {
    let manifest = repo_root().join("tests/bench-peers/rmcp-server/Cargo.toml");
    let dir = target_dir().join("bench-peers");
    let built = cargo()
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .status()?;
    if !built.success() {
        return Err(format!("building the rmcp peer ({}) failed ({built})", manifest.display()).into());
    }
    Ok(exe(&dir.join("release"), "rmcp-bench-peer"))
}

/// A server process and the address it listens on.
pub struct Server {
    pub name: &'static str,
    pub addr: SocketAddr,
    process: Process,
}

enum Process {
    /// Started, read and stopped by the test library's daemon builder.
    Daemon(Daemon),
    /// The peer: its stdin stays open while it runs, and its output is drained by a thread (a
    /// full pipe would block it), the last lines kept for error reports.
    Peer { child: Child, stdin: Option<ChildStdin>, log: Arc<Mutex<Vec<String>>> },
}

impl Server {
    /// `openhumand-mcp serve --http --port 0` under `home` (the builder reads the address from
    /// its log).
    pub fn daemon(bin: &Path, home: &Path) -> Result<Server> {
        // The benchmark client sends no token: loopback only, told so explicitly.
        let daemon = Daemon::builder(home)
            .bin(bin)
            .http()
            .env("OPENHUMAN_MCP_HTTP_ALLOW_NO_TOKEN", "true")
            .wait(WAIT)
            .try_start()?;
        Ok(Server { name: "openhumand-mcp", addr: daemon.http_addr(), process: Process::Daemon(daemon) })
    }

    /// The rmcp peer serving `payload` (a JSON file); prints `listening on ADDR` on stdout.
    pub fn peer(bin: &Path, payload: &Path) -> Result<Server> {
        let name = "rmcp";
        let mut cmd = Command::new(bin);
        cmd.arg("--payload").arg(payload).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = cmd.spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        // Its stdin stays open while it runs: closing it is how the peer is stopped.
        let stdin = child.stdin.take();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let keep = log.clone();
        std::thread::spawn(move || {
            let mut found = false;
            for line in BufReader::new(stdout).lines().map_while(std::io::Result::ok) {
                if !found && let Some(addr) = line.strip_prefix("listening on ") {
                    found = true;
                    let _ = tx.send(addr.to_string());
                }
                let mut log = keep.lock().unwrap_or_else(PoisonError::into_inner);
                log.push(line);
                let excess = log.len().saturating_sub(40);
                log.drain(..excess);
            }
        });
        match rx.recv_timeout(WAIT) {
            Ok(addr) => Ok(Server { name, addr: addr.parse()?, process: Process::Peer { child, stdin, log } }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let tail = log.lock().map(|l| l.join("\n")).unwrap_or_default();
                Err(format!("{name} did not say where it listens within {} s:\n{tail}", WAIT.as_secs()).into())
            }
        }
    }

    pub fn pid(&self) -> u32 {
        match &self.process {
            Process::Daemon(d) => d.pid(),
            Process::Peer { child, .. } => child.id(),
        }
    }

    /// Asks the server to stop (`openhumand-mcp stop`; the peer: its stdin closes) and waits,
    /// bounded, for it to exit; kills it when it does not.
    pub fn stop(self) -> Result<()> {
        let (mut child, stdin) = match self.process {
            Process::Daemon(d) => return Ok(d.stop()?),
            Process::Peer { child, stdin, .. } => (child, stdin),
        };
        drop(stdin);
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let status = child.wait();
            let _ = tx.send(());
            (child, status)
        });
        if rx.recv_timeout(WAIT).is_err() {
            return Err(format!("{} did not exit within {} s of being asked to stop", self.name, WAIT.as_secs()).into());
        }
        let (_, status) = waiter.join().map_err(|_| "waiter panicked")?;
        let status = status?;
        if !status.success() {
            return Err(format!("{} exited with {status}", self.name).into());
        }
        Ok(())
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        match &self.process {
            Process::Daemon(d) => {
                let log = d.log();
                let lines: Vec<&str> = log.lines().collect();
                lines[lines.len().saturating_sub(40)..].join("\n")
            }
            Process::Peer { log, .. } => log.lock().map(|l| l.join("\n")).unwrap_or_default(),
        }
    }
}

/// User + system CPU time of a process so far (/proc/<pid>/stat, in USER_HZ ticks of 10 ms).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "cpu n/a".to_string());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|k| k.parse::<u64>().ok()))
        .map_or_else(|| "memory n/a".to_string(), |kib| format!("{} GiB", kib / (1024 * 1024)));
    format!("{cpus} cpus, {model}, {mem}, {} {}", std::env::consts::OS, std::env::consts::ARCH)
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".to_string())
}

/// Output of a small command run in the repository (`git`, `date`), or "n/a".
pub fn run_text(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(|| "n/a".to_string(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}
