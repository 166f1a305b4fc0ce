//! The daemon a test (or a benchmark) starts in the foreground: `DaemonBuilder` spawns
//! `openhumand-mcp serve` with its arguments and environment, reads its log until `daemon ready`
//! or `daemon degraded` (keeping the lines up to it, and the `HTTP transport listening … addr=`
//! address), and hands back a `Daemon`, which is killed on drop. This is the one place that starts
//! a daemon and waits for it.

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::WAIT;
use crate::binaries::daemon_bin;
use crate::home::{daemon_command, home_log, socket_path};
use crate::peer::Lines;
use crate::process::{exit_within, kill};

/// The log line the daemon writes once it serves.
const READY: &str = "daemon ready";
/// The line it writes instead when it serves but cannot do what its config asks.
const DEGRADED: &str = "daemon degraded";
/// The log line naming the address the HTTP transport bound, in an `addr=` field.
const HTTP_LISTENING: &str = "HTTP transport listening";

/// How to start a daemon: `Daemon::builder(&home)`, then any of `args`, `env`, `http`, `bin` and
/// `wait`, then `start` (panics on failure, for tests) or `try_start` (an error, for benchmarks).
#[must_use = "a builder does nothing until `start`"]
pub struct DaemonBuilder {
    home: PathBuf,
    bin: Option<PathBuf>,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    http: bool,
    wait: Duration,
    /// SIGXFSZ ignored, and this file-size limit when Some (see `disk`).
    file_size: Option<Option<u64>>,
}

impl DaemonBuilder {
    /// Adds arguments after `serve` (e.g. `--idle-timeout 1`).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets a variable in the daemon's environment (e.g. an API key named by `*_api_key_env`).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// `env` for each pair.
    pub fn envs<I, K, V>(self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        vars.into_iter().fold(self, |b, (k, v)| b.env(k, v))
    }

    /// Serves Streamable HTTP too (`--http --port 0`: a free loopback port); `Daemon::http_addr`
    /// is where it listens.
    pub fn http(mut self) -> Self {
        self.http = true;
        self
    }

    /// Starts the daemon so that `disk` can fill up under it: with SIGXFSZ ignored (a write
    /// past its file-size limit then fails with EFBIG instead of killing it), and with the
    /// limit already at 0 when the disk is to be full from the start in file-size mode.
    pub fn on_small_disk(mut self, disk: &crate::disk::SmallDisk) -> Self {
        self.file_size = Some(disk.start_limit());
        self
    }

    /// Runs this daemon binary instead of the debug build under test (benchmarks: release).
    pub fn bin(mut self, bin: impl Into<PathBuf>) -> Self {
        self.bin = Some(bin.into());
        self
    }

    /// Bounds the wait for `daemon ready` and for the exit after `Daemon::stop` (default `WAIT`).
    pub fn wait(mut self, limit: Duration) -> Self {
        self.wait = limit;
        self
    }

    /// Starts the daemon and waits until it is ready; panics with its output when it is not.
    pub fn start(self) -> Daemon {
        self.try_start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts the daemon and waits until it is ready; an error with its output when it exits
    /// first, does not get ready in time, or serves HTTP without saying where.
    pub fn try_start(self) -> Result<Daemon, String> {
        let bin = self.bin.clone().unwrap_or_else(daemon_bin);
        let mut cmd = daemon_command(&bin, &self.home);
        cmd.arg("serve");
        if self.http {
            cmd.args(["--http", "--port", "0"]);
        }
        cmd.args(&self.args).envs(self.envs.iter().map(|(k, v)| (k, v)));
        if let Some(limit) = self.file_size {
            use std::os::unix::process::CommandExt;
            // SAFETY: between fork and exec only async-signal-safe calls (signal, setrlimit).
            unsafe {
                cmd.pre_exec(move || {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    if let Some(bytes) = limit {
                        let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                        libc::getrlimit(libc::RLIMIT_FSIZE, &mut rl);
                        rl.rlim_cur = bytes.min(rl.rlim_max);
                        libc::setrlimit(libc::RLIMIT_FSIZE, &rl);
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", bin.display()))?;
        let stderr = Lines::spawn(child.stderr.take().expect("piped stderr"));
        let deadline = Instant::now() + self.wait;
        let mut startup_log = Vec::new();
        let mut http_addr = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match stderr.next_within(left) {
                Ok(Some(line)) => line,
                Ok(None) => {
                    let status = child.wait().map_or_else(|e| e.to_string(), |s| s.to_string());
                    return Err(format!(
                        "the daemon exited ({status}) before it was ready; its output:\n{}",
                        startup_log.join("\n")
                    ));
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "the daemon did not report ready within {:?}; its output:\n{}",
                        self.wait,
                        startup_log.join("\n")
                    ));
                }
            };
            if line.contains(READY) || line.contains(DEGRADED) {
                startup_log.push(line);
                break;
            }
            if line.contains(HTTP_LISTENING) {
                http_addr = line.split_whitespace().find_map(|w| w.strip_prefix("addr=")?.parse().ok());
            }
            startup_log.push(line);
        }
        let daemon = Daemon { child, stderr, startup_log, http_addr, home: self.home, bin, wait: self.wait };
        if self.http && daemon.http_addr.is_none() {
            return Err(format!(
                "the daemon was ready without logging its HTTP address; its output:\n{}",
                daemon.startup_log.join("\n")
            ));
        }
        Ok(daemon)
    }
}

/// A daemon started by the test in the foreground (`serve`), killed on drop.
pub struct Daemon {
    pub child: Child,
    /// Its log after `daemon ready`, read by `wait_log` and `reload`.
    stderr: Lines,
    startup_log: Vec<String>,
    http_addr: Option<SocketAddr>,
    home: PathBuf,
    bin: PathBuf,
    wait: Duration,
}

impl Daemon {
    /// A builder for a daemon in `home` (a `Home`, or any directory).
    pub fn builder(home: impl AsRef<Path>) -> DaemonBuilder {
        DaemonBuilder {
            home: home.as_ref().to_path_buf(),
            bin: None,
            args: Vec::new(),
            envs: Vec::new(),
            http: false,
            wait: WAIT,
            file_size: None,
        }
    }

    /// `serve` in `home`, as configured there, once it is ready.
    pub fn start(home: impl AsRef<Path>) -> Daemon {
        Daemon::builder(home).start()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The socket it serves.
    pub fn socket(&self) -> PathBuf {
        socket_path(&self.home)
    }

    /// Where its HTTP transport listens; panics for a daemon started without HTTP.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr.expect("the daemon serves no HTTP: start it with `.http()`")
    }

    /// An HTTP client for it that sends the bearer token the daemon generated in its home
    /// (`http-token`); without that file, one that sends none.
    pub fn http_client(&self) -> crate::http::Client {
        let file = self.home.join("http-token");
        match std::fs::read_to_string(&file) {
            Ok(t) => crate::http::Client::with_token(self.http_addr(), t.trim()),
            Err(_) => crate::http::Client::new(self.http_addr()),
        }
    }

    /// The log lines it wrote up to `daemon ready` (or `daemon degraded`).
    pub fn startup_log(&self) -> &[String] {
        &self.startup_log
    }

    /// Its log files (see `Home::log`).
    pub fn log(&self) -> String {
        home_log(&self.home)
    }

    /// Reads its log lines until one contains `needle`; returns it.
    pub fn wait_log(&self, needle: &str) -> String {
        loop {
            let line = self.stderr.next().unwrap_or_else(|| panic!("daemon log ended before {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// Sends SIGHUP and waits until the daemon logged the reload's outcome; returns that line.
    pub fn reload(&self) -> String {
        kill(self.pid(), libc::SIGHUP);
        loop {
            let line = self.stderr.next().expect("daemon log ended before the reload finished");
            if line.contains("config reloaded") || line.contains("config reload failed") {
                return line;
            }
        }
    }

    /// `openhumand-mcp stop`, then a bounded wait (the builder's `wait`) for a clean exit.
    pub fn stop(mut self) -> Result<(), String> {
        let out = daemon_command(&self.bin, &self.home)
            .arg("stop")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run {} stop: {e}", self.bin.display()))?;
        if !out.status.success() {
            return Err(format!("`stop` exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr)));
        }
        let status = exit_within(&mut self.child, self.wait)?;
        if !status.success() {
            return Err(format!("the daemon exited with {status} after `stop`:\n{}", self.log()));
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
