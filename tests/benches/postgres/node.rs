//! What the benchmarks on the shared store have in common: a device (a home with its config and
//! its daemon), the control calls they make over its socket, and the poll for background work.
//! Each benchmark uses part of it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Binaries, Daemon, Result, Session};

/// The variable a daemon takes its database URL from.
pub const URL_ENV: &str = "OPENHUMAN_POSTGRES_URL";
/// A benchmark writes far faster than the policy's default budget of actions allows.
const UNLIMITED: &str = "[autonomy]\nmax_actions_per_hour = 4000000000\n";
/// How long a daemon may take to start (a large store opens its indexes first).
const DAEMON_WAIT: Duration = Duration::from_secs(120);

/// A count from the command line, else from `var`, else `default` (`_` separators allowed).
pub fn number(arg: Option<String>, var: &str, default: usize) -> Result<usize> {
    match arg.or_else(|| std::env::var(var).ok()) {
        None => Ok(default),
        Some(s) => Ok(s.replace('_', "").parse().map_err(|_| format!("{var}: {s:?} is not a number"))?),
    }
}

/// A device of a benchmark: its home, the database URL when it uses PostgreSQL, and its daemon
/// while it runs.
pub struct Node {
    pub home: PathBuf,
    url: Option<String>,
    daemon: Option<Daemon>,
}

impl Node {
    /// A home `root/name` whose config uses the database at `url` (the embedded engine when
    /// `None`), with `postgres` as more lines of its `[memory.postgres]` table and `more` after
    /// it.
    pub fn configured(root: &Path, name: &str, url: Option<&str>, postgres: &str, more: &str) -> Result<Node> {
        let home = root.join(name);
        std::fs::create_dir_all(&home)?;
        let engine = match url {
            Some(_) => {
                format!("[memory]\nengine = \"postgres\"\n\n[memory.postgres]\nmachine = \"{name}\"\n{postgres}\n")
            }
            None => String::new(),
        };
        std::fs::write(home.join("config.toml"), engine + more + UNLIMITED)?;
        Ok(Node { home, url: url.map(str::to_string), daemon: None })
    }

    pub fn start(&mut self, bins: &Binaries) -> Result<()> {
        self.start_within(bins, DAEMON_WAIT)
    }

    /// `start`, allowing `wait` for the daemon to be ready: a new device loads the whole
    /// snapshot of the shared store and indexes it before it is (minutes at 1M chunks).
    pub fn start_within(&mut self, bins: &Binaries, wait: Duration) -> Result<()> {
        let mut b = Daemon::builder(&self.home).bin(&bins.daemon).wait(wait);
        if let Some(url) = &self.url {
            b = b.env(URL_ENV, url);
        }
        self.daemon = Some(b.try_start()?);
        Ok(())
    }

    pub fn stop(&mut self) -> Result<()> {
        if let Some(d) = self.daemon.take() {
            d.stop()?;
        }
        Ok(())
    }

    /// A session past the MCP handshake.
    pub fn session(&self) -> Result<Session> {
        let mut s = Session::socket(&self.home.join("run/mcp.sock"))?;
        s.handshake()?;
        Ok(s)
    }

    /// `openhuman.daemon_status`.
    pub fn status(&self) -> Result<Value> {
        let mut s = Session::socket(&self.home.join("run/mcp.sock"))?;
        call(&mut s, "openhuman.daemon_status", json!({}))
    }
}

/// A JSON-RPC call's result; an error reply is an error.
pub fn call(s: &mut Session, method: &str, params: Value) -> Result<Value> {
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string() + "\n";
    let reply: Value = serde_json::from_str(s.round_trip(&line)?)?;
    reply.get("result").cloned().ok_or_else(|| format!("{method} failed: {reply}").into())
}

/// Polls `probe` until it gives Some, bounded by `limit`; returns what it gave.
pub fn poll<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let started = Instant::now();
    loop {
        if let Some(v) = probe()? {
            return Ok(v);
        }
        if started.elapsed() > limit {
            return Err(format!("{what}: not within {limit:?}").into());
        }
        // Background work on another process's schedule: the probe decides when it is done.
        std::thread::sleep(Duration::from_millis(20));
    }
}
