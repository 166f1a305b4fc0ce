//! A daemon started by the test in the foreground (`serve`), killed on drop.

use std::net::SocketAddr;
use std::process::{Child, Stdio};

use crate::home::Home;
use crate::peer::Lines;
use crate::process::kill;

/// A daemon started by the test in the foreground (`serve`), killed on drop.
pub struct Daemon {
    pub child: Child,
    pub stderr: Lines,
}

impl Daemon {
    pub fn start(home: &Home) -> Daemon {
        Daemon::start_with(home, &[])
    }
    /// Starts `serve` with extra args and waits until it reports ready.
    pub fn start_with(home: &Home, args: &[&str]) -> Daemon {
        let mut child = home
            .daemon_cmd()
            .arg("serve")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn daemon");
        let stderr = Lines::spawn(child.stderr.take().expect("stderr"));
        loop {
            let line = stderr.next().unwrap_or_else(|| panic!("daemon exited before it was ready:\n{}", home.log()));
            if line.contains("daemon ready") {
                break;
            }
        }
        Daemon { child, stderr }
    }
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// Starts `serve --http --port 0` plus `args`, with `env` set, and returns the daemon
    /// and the address its HTTP transport bound (read from its log).
    pub fn start_http(home: &Home, args: &[&str], env: &[(&str, &str)]) -> (Daemon, SocketAddr) {
        let mut cmd = home.daemon_cmd();
        cmd.args(["serve", "--http", "--port", "0"]).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child =
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn daemon");
        let stderr = Lines::spawn(child.stderr.take().expect("stderr"));
        let mut addr = None;
        loop {
            let line = stderr.next().unwrap_or_else(|| panic!("daemon exited before it was ready:\n{}", home.log()));
            if line.contains("HTTP transport listening") {
                addr = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("addr="))
                    .and_then(|a| a.parse::<SocketAddr>().ok());
            }
            if line.contains("daemon ready") {
                break;
            }
        }
        let addr = addr.expect("the daemon logged the HTTP address before it was ready");
        (Daemon { child, stderr }, addr)
    }

    /// Reads the daemon's log lines until one contains `needle`; returns it.
    pub fn wait_log(&self, needle: &str) -> String {
        loop {
            let line = self.stderr.next().unwrap_or_else(|| panic!("daemon log ended before {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }
}

impl Daemon {
    /// Starts `serve` with `env` added to the daemon's environment (e.g. API keys named by
    /// `*_api_key_env`), and waits until it reports ready.
    pub fn start_env(home: &Home, env: &[(&str, &str)]) -> Daemon {
        Daemon::start_env_log(home, env).0
    }

    /// `start_env`, also returning the log lines the daemon wrote before it was ready.
    pub fn start_env_log(home: &Home, env: &[(&str, &str)]) -> (Daemon, Vec<String>) {
        let mut cmd = home.daemon_cmd();
        cmd.arg("serve");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child =
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn daemon");
        let stderr = Lines::spawn(child.stderr.take().expect("stderr"));
        let mut log = Vec::new();
        loop {
            let line = stderr
                .next()
                .unwrap_or_else(|| panic!("daemon exited before it was ready:\n{}\n{}", log.join("\n"), home.log()));
            if line.contains("daemon ready") {
                break;
            }
            log.push(line);
        }
        (Daemon { child, stderr }, log)
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
}
