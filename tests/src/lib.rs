//! Test support for driving the real binaries: a temp `OPENHUMAN_HOME`, a daemon started and
//! stopped by the test, and line-protocol clients over a child's stdio or the daemon socket.
//! Every wait is bounded (a hang fails the test instead of blocking CI), and when a test fails
//! the daemon's log is printed.
#![allow(clippy::print_stderr, unsafe_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Upper bound for any single wait in the tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// Directory holding the binaries under test (`OPENHUMAN_BIN_DIR`, else `target/debug`).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPENHUMAN_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    target.join("debug")
}

pub fn bin(name: &str) -> PathBuf {
    build_binaries();
    let p = bin_dir().join(name);
    assert!(p.exists(), "{} is missing: run `cargo build --workspace` first (or set OPENHUMAN_BIN_DIR)", p.display());
    p
}

/// Brings the debug binaries up to date, once per test process. `cargo test` builds the test
/// harnesses but not the other packages' binaries, and a stale daemon would test old code. Skipped
/// when `OPENHUMAN_BIN_DIR` points at binaries built elsewhere.
pub fn build_binaries() {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if std::env::var_os("OPENHUMAN_BIN_DIR").is_some() {
        return;
    }
    BUILT.get_or_init(|| {
        // Cargo sets CARGO for the processes it runs; the lock on the target directory is free
        // once the test binaries run.
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let status = Command::new(cargo)
            .args(["build", "--workspace", "--bins", "--locked", "--quiet"])
            .current_dir(root)
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build --workspace --bins failed");
    });
}

pub fn daemon_bin() -> PathBuf {
    bin("openhumand-mcp")
}

pub fn shim_bin() -> PathBuf {
    bin("openhuman-mcp-shim")
}

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
        self.path().join("run/mcp.sock")
    }
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.path().join("config.toml"), text).expect("write config");
    }
    pub fn log(&self) -> String {
        let mut out = String::new();
        for name in ["logs/openhumand-mcp.log", "logs/daemon-autostart.log"] {
            if let Ok(t) = std::fs::read_to_string(self.path().join(name)) {
                out.push_str(&format!("--- {name}\n{t}"));
            }
        }
        out
    }
    /// A command for the daemon binary with this home.
    pub fn daemon_cmd(&self) -> Command {
        let mut c = Command::new(daemon_bin());
        c.env("OPENHUMAN_HOME", self.path()).env_remove("RUST_LOG");
        for (k, _) in std::env::vars() {
            if k.starts_with("OPENHUMAN_") && k != "OPENHUMAN_HOME" && k != "OPENHUMAN_BIN_DIR" {
                c.env_remove(k);
            }
        }
        c
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

pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid we own and a valid signal number.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// Waits (bounded) for a child to exit.
pub fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(start.elapsed() < limit, "process {} did not exit within {limit:?}", child.id());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Lines from a reader, delivered through a channel so reads can time out.
pub struct Lines {
    rx: Receiver<String>,
}

impl Lines {
    pub fn spawn<R: Read + Send + 'static>(r: R) -> Lines {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(r);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line.trim_end().to_string()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Lines { rx }
    }
    /// The next line; panics after `WAIT`. None at EOF.
    pub fn next(&self) -> Option<String> {
        match self.rx.recv_timeout(WAIT) {
            Ok(l) => Some(l),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!("no line within {WAIT:?}"),
        }
    }
    pub fn next_json(&self) -> Value {
        let line = self.next().expect("stream ended while waiting for a message");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }
    /// Every remaining line until EOF.
    pub fn rest(&self) -> Vec<String> {
        std::iter::from_fn(|| self.next()).collect()
    }
}

/// A JSON-RPC peer over some writer + line reader (a child's stdio or a socket).
pub struct Peer {
    w: Box<dyn Write + Send>,
    pub lines: Lines,
    next_id: i64,
    /// Notifications seen while waiting for responses.
    pub notifications: Vec<Value>,
}

impl Peer {
    pub fn new(w: Box<dyn Write + Send>, lines: Lines) -> Peer {
        Peer { w, lines, next_id: 100, notifications: Vec::new() }
    }
    pub fn socket(path: &Path) -> Peer {
        let s = UnixStream::connect(path).unwrap_or_else(|e| panic!("connect {}: {e}", path.display()));
        let r = s.try_clone().expect("clone");
        Peer::new(Box::new(s), Lines::spawn(r))
    }
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).expect("write");
        self.w.flush().expect("flush");
    }
    pub fn send(&mut self, v: &Value) {
        self.send_raw(format!("{v}\n").as_bytes());
    }
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
    /// Sends a request and returns its id.
    pub fn start(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }
    /// Waits for the response with `id`, keeping notifications aside.
    pub fn wait(&mut self, id: &Value) -> Value {
        loop {
            let msg = self.lines.next_json();
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return msg;
            }
            if msg.get("method").is_some() {
                self.notifications.push(msg);
            } else {
                panic!("unexpected message while waiting for {id}: {msg}");
            }
        }
    }
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.wait(&id)
    }
    /// `result` of a request, panicking on an error response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }
    pub fn initialize(&mut self, client: &str) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}),
        );
        self.notify("notifications/initialized", json!({}));
        r
    }
    pub fn tool(&mut self, name: &str, args: Value) -> Value {
        self.call("tools/call", json!({"name": name, "arguments": args}))
    }
    /// Closes the writing side (EOF for the peer).
    pub fn close_write(&mut self) {
        self.w = Box::new(std::io::sink());
    }
}

/// A child process speaking the protocol on its stdio (shim or `stdio` mode).
pub struct ChildPeer {
    pub child: Child,
    pub peer: Peer,
    pub stderr: Lines,
}

impl ChildPeer {
    pub fn spawn(mut cmd: Command) -> ChildPeer {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
        let stdin: ChildStdin = child.stdin.take().expect("stdin");
        let lines = Lines::spawn(child.stdout.take().expect("stdout"));
        let stderr = Lines::spawn(child.stderr.take().expect("stderr"));
        ChildPeer { child, peer: Peer::new(Box::new(stdin), lines), stderr }
    }
    /// Closes stdin and waits for exit; returns the status and any stdout lines left.
    pub fn finish(mut self) -> (ExitStatus, Vec<String>) {
        self.peer.close_write();
        let rest = self.peer.lines.rest();
        let status = wait_exit(&mut self.child, WAIT);
        (status, rest)
    }
}

impl Drop for ChildPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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

/// Processes whose command line contains every one of `needles` (Linux /proc scan).
pub fn processes_matching(needles: &[&str]) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if needles.iter().all(|n| cmdline.contains(n)) {
            out.push(pid);
        }
    }
    out
}

/// Stops a process (SIGSTOP) and waits until every one of its threads is really stopped:
/// `kill` returns before the signal has taken effect.
pub fn freeze(pid: u32) {
    kill(pid, libc::SIGSTOP);
    let start = Instant::now();
    loop {
        let all_stopped = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks.flatten().all(|t| {
                    let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                    // The state follows the parenthesised command name.
                    stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('T')).unwrap_or(false)
                })
            })
            .unwrap_or(false);
        if all_stopped {
            return;
        }
        assert!(start.elapsed() < WAIT, "process {pid} did not stop");
        std::thread::yield_now();
    }
}

/// Raw HTTP/1.1 for the Streamable HTTP transport tests: a daemon started with `--http` on a
/// free port, and a small blocking client (std `TcpStream`, `Connection: close`) that reads
/// plain, chunked and event-stream bodies. Every read is bounded by `WAIT`.
pub mod http {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::process::Stdio;

    use serde_json::Value;

    use super::{Daemon, Home, Lines, WAIT};

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
                let line =
                    stderr.next().unwrap_or_else(|| panic!("daemon exited before it was ready:\n{}", home.log()));
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

    /// A response read to its end.
    #[derive(Debug)]
    pub struct Response {
        pub status: u16,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
    }

    impl Response {
        pub fn header(&self, name: &str) -> Option<&str> {
            find(&self.headers, name)
        }
        pub fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }
        pub fn json(&self) -> Value {
            serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
        }
        /// The events of an event-stream body.
        pub fn events(&self) -> Vec<Event> {
            let mut r = BufReader::new(&self.body[..]);
            std::iter::from_fn(|| read_event(&mut r)).collect()
        }
    }

    /// One server-sent event (comments skipped; multi-line data joined with `\n`).
    #[derive(Debug, Default, Clone)]
    pub struct Event {
        pub id: Option<String>,
        pub event: Option<String>,
        pub retry: Option<u64>,
        pub data: String,
    }

    impl Event {
        pub fn json(&self) -> Value {
            serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {:?}", self.data))
        }
    }

    /// Reads the next event that has a data line; None at the end of the stream.
    fn read_event<R: BufRead>(r: &mut R) -> Option<Event> {
        let mut ev = Event::default();
        let mut data_lines = 0;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).expect("read event stream") == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if data_lines > 0 {
                    return Some(ev);
                }
                ev = Event::default();
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => ev.id = Some(value.to_string()),
                "event" => ev.event = Some(value.to_string()),
                "retry" => ev.retry = value.parse().ok(),
                "data" => {
                    if data_lines > 0 {
                        ev.data.push('\n');
                    }
                    ev.data.push_str(value);
                    data_lines += 1;
                }
                _ => {}
            }
        }
    }

    fn find<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// A client for one server address.
    #[derive(Clone, Copy)]
    pub struct Client {
        pub addr: SocketAddr,
    }

    impl Client {
        pub fn new(addr: SocketAddr) -> Client {
            Client { addr }
        }

        /// Sends one request and reads the whole response.
        pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
            let mut s = self.open(method, path, headers, body);
            let mut bytes = Vec::new();
            s.body.read_to_end(&mut bytes).expect("read body");
            Response { status: s.status, headers: s.headers, body: bytes }
        }

        /// Sends one request and returns once the response head arrived; the body is read as
        /// it comes (event streams).
        pub fn open(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Stream {
            let stream = TcpStream::connect(self.addr).expect("connect to the HTTP port");
            stream.set_read_timeout(Some(WAIT)).expect("read timeout");
            let mut head = format!("{method} {path} HTTP/1.1\r\n");
            if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
                head.push_str(&format!("Host: {}\r\n", self.addr));
            }
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
            let mut w = stream.try_clone().expect("clone");
            w.write_all(head.as_bytes()).expect("write head");
            w.write_all(body).expect("write body");
            w.flush().expect("flush");
            let mut r = BufReader::new(stream);
            let mut status_line = String::new();
            r.read_line(&mut status_line).expect("read status line");
            let status: u16 = status_line
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                r.read_line(&mut line).expect("read header");
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    headers.push((k.trim().to_string(), v.trim().to_string()));
                }
            }
            let mode = if find(&headers, "transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
                Mode::Chunked { left: 0, done: false }
            } else if let Some(n) = find(&headers, "content-length").and_then(|n| n.parse().ok()) {
                Mode::Length(n)
            } else {
                Mode::ToEof
            };
            Stream { status, headers, body: BufReader::new(Body { r, mode }) }
        }
    }

    /// A response whose body is read as it arrives.
    pub struct Stream {
        pub status: u16,
        pub headers: Vec<(String, String)>,
        body: BufReader<Body>,
    }

    impl Stream {
        pub fn header(&self, name: &str) -> Option<&str> {
            find(&self.headers, name)
        }
        /// The next event; None when the server ended the stream. Panics after `WAIT`.
        pub fn next_event(&mut self) -> Option<Event> {
            read_event(&mut self.body)
        }
        /// The next raw line of the body (comments included); None at its end.
        pub fn next_line(&mut self) -> Option<String> {
            let mut line = String::new();
            match self.body.read_line(&mut line).expect("read body line") {
                0 => None,
                _ => Some(line.trim_end_matches(['\r', '\n']).to_string()),
            }
        }
    }

    enum Mode {
        Chunked { left: usize, done: bool },
        Length(usize),
        ToEof,
    }

    /// The body bytes of a response, de-chunked.
    struct Body {
        r: BufReader<TcpStream>,
        mode: Mode,
    }

    impl Read for Body {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match &mut self.mode {
                Mode::ToEof => self.r.read(buf),
                Mode::Length(left) => {
                    if *left == 0 {
                        return Ok(0);
                    }
                    let n = (*left).min(buf.len());
                    let got = self.r.read(&mut buf[..n])?;
                    *left -= got;
                    Ok(got)
                }
                Mode::Chunked { left, done } => {
                    if *done {
                        return Ok(0);
                    }
                    if *left == 0 {
                        let mut size = String::new();
                        self.r.read_line(&mut size)?;
                        if size.trim().is_empty() {
                            // The CRLF after the previous chunk.
                            size.clear();
                            if self.r.read_line(&mut size)? == 0 {
                                // The server closed the connection without a last chunk.
                                *done = true;
                                return Ok(0);
                            }
                        }
                        let hex = size.trim().split(';').next().unwrap_or_default();
                        let n = usize::from_str_radix(hex, 16).map_err(|_| {
                            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad chunk size {size:?}"))
                        })?;
                        if n == 0 {
                            *done = true;
                            return Ok(0);
                        }
                        *left = n;
                    }
                    let n = (*left).min(buf.len());
                    let got = self.r.read(&mut buf[..n])?;
                    if got == 0 {
                        *done = true;
                    }
                    *left -= got;
                    Ok(got)
                }
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

/// Scripted HTTP/1.1 servers on loopback that stand in for LLM, search and embedding APIs. Each
/// records every request it gets (method, target, headers, body) so tests can assert exactly what
/// the daemon sent, and answers with whatever the test's handler returns — a status and body, or
/// a hang that holds the connection open until the client gives up (timeouts, cancellation).
pub mod fake {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde_json::Value;

    use super::WAIT;

    /// One request as received.
    #[derive(Debug, Clone)]
    pub struct Request {
        pub method: String,
        /// Path and query, as sent.
        pub target: String,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
    }

    impl Request {
        pub fn path(&self) -> &str {
            self.target.split('?').next().unwrap_or_default()
        }
        /// Query parameters, percent-decoded, in order.
        pub fn query(&self) -> Vec<(String, String)> {
            let Some((_, q)) = self.target.split_once('?') else { return Vec::new() };
            q.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (decode(k), decode(v))
                })
                .collect()
        }
        pub fn param(&self, name: &str) -> Option<String> {
            self.query().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
        }
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
        }
        pub fn json(&self) -> Value {
            serde_json::from_slice(&self.body)
                .unwrap_or_else(|e| panic!("request body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
        }
    }

    fn decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                    match u8::from_str_radix(hex, 16) {
                        Ok(b) => {
                            out.push(b);
                            i += 2;
                        }
                        Err(_) => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// What the server answers.
    pub enum Reply {
        /// A status with a JSON body.
        Json(u16, Value),
        /// A status, extra headers and a raw body with its content type.
        Raw { status: u16, headers: Vec<(String, String)>, content_type: String, body: Vec<u8> },
        /// No answer: hold the connection until the client closes it.
        Hang,
    }

    impl Reply {
        pub fn ok(v: Value) -> Reply {
            Reply::Json(200, v)
        }
        pub fn text(status: u16, content_type: &str, body: &str) -> Reply {
            Reply::Raw { status, headers: Vec::new(), content_type: content_type.to_string(), body: body.into() }
        }
        /// A JSON reply with extra headers (e.g. `Retry-After`).
        pub fn json_with(status: u16, headers: &[(&str, &str)], v: Value) -> Reply {
            Reply::Raw {
                status,
                headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                content_type: "application/json".to_string(),
                body: v.to_string().into_bytes(),
            }
        }
    }

    type Handler = Box<dyn FnMut(&Request) -> Reply + Send>;

    /// A running fake; it serves until the test process ends.
    pub struct Server {
        pub addr: SocketAddr,
        requests: Receiver<Request>,
        hangups: Receiver<()>,
    }

    impl Server {
        /// Starts a server that answers every request with `handler`'s reply (one request at a
        /// time across connections, so scripted sequences stay in order).
        pub fn start(handler: impl FnMut(&Request) -> Reply + Send + 'static) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake server");
            let addr = listener.local_addr().expect("addr");
            let handler: Arc<Mutex<Handler>> = Arc::new(Mutex::new(Box::new(handler)));
            let (req_tx, requests) = channel();
            let (hup_tx, hangups) = channel();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { continue };
                    let (handler, req_tx, hup_tx) = (handler.clone(), req_tx.clone(), hup_tx.clone());
                    std::thread::spawn(move || serve(stream, handler, req_tx, hup_tx));
                }
            });
            Server { addr, requests, hangups }
        }

        /// A server that answers the given replies in order (and 500 once they run out).
        pub fn scripted(replies: Vec<Reply>) -> Server {
            let mut replies = replies.into_iter();
            Server::start(move |_| {
                replies.next().unwrap_or_else(|| {
                    Reply::Json(500, serde_json::json!({"error": {"message": "fake server: script exhausted"}}))
                })
            })
        }

        pub fn url(&self) -> String {
            format!("http://{}", self.addr)
        }

        /// The next request received; panics after `WAIT`.
        pub fn next_request(&self) -> Request {
            self.requests.recv_timeout(WAIT).expect("the fake server got no request in time")
        }

        /// A request if one arrives within `wait`.
        pub fn try_request(&self, wait: Duration) -> Option<Request> {
            self.requests.recv_timeout(wait).ok()
        }

        /// Waits until the client closed a connection whose request was left hanging.
        pub fn wait_hangup(&self) {
            self.hangups.recv_timeout(WAIT).expect("the client did not close the hanging connection in time");
        }
    }

    fn serve(stream: TcpStream, handler: Arc<Mutex<Handler>>, req_tx: Sender<Request>, hup_tx: Sender<()>) {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
        let mut w = match stream.try_clone() {
            Ok(w) => w,
            Err(_) => return,
        };
        let mut r = BufReader::new(stream);
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let mut parts = line.split_whitespace();
            let (Some(method), Some(target)) = (parts.next(), parts.next()) else { return };
            let (method, target) = (method.to_string(), target.to_string());
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 {
                    return;
                }
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    headers.push((k.trim().to_string(), v.trim().to_string()));
                }
            }
            let len = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.parse::<usize>().ok())
                .unwrap_or(0);
            let mut body = vec![0; len];
            if r.read_exact(&mut body).is_err() {
                return;
            }
            let req = Request { method, target, headers, body };
            let reply = (handler.lock().unwrap_or_else(|e| e.into_inner()))(&req);
            let _ = req_tx.send(req);
            let (status, extra, content_type, body) = match reply {
                Reply::Json(status, v) => {
                    (status, Vec::new(), "application/json".to_string(), v.to_string().into_bytes())
                }
                Reply::Raw { status, headers, content_type, body } => (status, headers, content_type, body),
                Reply::Hang => {
                    // Hold the request until the client closes the connection.
                    let mut sink = [0u8; 1024];
                    loop {
                        match r.read(&mut sink) {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {}
                        }
                    }
                    let _ = hup_tx.send(());
                    return;
                }
            };
            let mut head =
                format!("HTTP/1.1 {status} Fake\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n", body.len());
            for (k, v) in extra {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            if w.write_all(head.as_bytes()).and_then(|_| w.write_all(&body)).and_then(|_| w.flush()).is_err() {
                return;
            }
        }
    }
}
