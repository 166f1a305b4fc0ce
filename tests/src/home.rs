//! A temporary `OPENHUMAN_HOME` per test: commands for the daemon and the shim rooted in it, its
//! socket and config, the daemon's log files (printed when a test fails), and the daemon still
//! running in it stopped when it is dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::binaries::{daemon_bin, shim_bin};
use crate::process::kill;

/// A fresh OPENHUMAN_HOME. Stops any daemon still running in it when dropped.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Default for Home {
    fn default() -> Self {
        Self::new()
    }
}

impl Home {
    pub fn new() -> Home {
        // Short paths: the socket path must fit in sun_path.
        let dir = tempfile::Builder::new().prefix("oh-").tempdir_in("/tmp").expect("tempdir");
        Home { dir }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn socket(&self) -> PathBuf {
        socket_path(self.path())
    }
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.path().join("config.toml"), text).expect("write config");
    }
    /// The daemon's log files in this home (its own and the shim's autostart log).
    pub fn log(&self) -> String {
        home_log(self.path())
    }
    /// A command for the daemon binary with this home.
    pub fn daemon_cmd(&self) -> Command {
        daemon_command(&daemon_bin(), self.path())
    }
    pub fn shim_cmd(&self) -> Command {
        let mut c = Command::new(shim_bin());
        c.env("OPENHUMAN_HOME", self.path()).env_remove("RUST_LOG");
        c
    }
    /// pid of the daemon answering in this home, if any.
    pub fn daemon_pid(&self) -> Option<u32> {
        let out = self.daemon_cmd().args(["status", "--json"]).output().ok()?;
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        v["pid"].as_u64().map(|p| p as u32)
    }
}

impl AsRef<Path> for Home {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("==== daemon logs for failed test ====\n{}", self.log());
        }
        if let Some(pid) = self.daemon_pid() {
            kill(pid, libc::SIGKILL);
        }
    }
}

/// The daemon's socket in `home`.
pub(crate) fn socket_path(home: &Path) -> PathBuf {
    home.join("run/mcp.sock")
}

/// The log files a daemon (and the shim's autostart) wrote in `home`, each under a `---` title.
pub(crate) fn home_log(home: &Path) -> String {
    let mut out = String::new();
    for name in ["logs/openhumand-mcp.log", "logs/daemon-autostart.log"] {
        if let Ok(t) = std::fs::read_to_string(home.join(name)) {
            out.push_str(&format!("--- {name}\n{t}"));
        }
    }
    out
}

/// `bin` (a daemon binary) rooted in `home`, with no logging or `OPENHUMAN_*` overrides from the
/// caller's environment.
pub(crate) fn daemon_command(bin: &Path, home: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("OPENHUMAN_HOME", home).env_remove("RUST_LOG");
    for (k, _) in std::env::vars() {
        if k.starts_with("OPENHUMAN_") && k != "OPENHUMAN_HOME" && k != "OPENHUMAN_BIN_DIR" {
            c.env_remove(k);
        }
    }
    c
}
