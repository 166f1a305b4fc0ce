//! Line-protocol clients: `Lines` (a reader's lines through a channel, so every read is bounded),
//! `Peer` (JSON-RPC over a writer and `Lines`: a socket or a child's stdio) and `ChildPeer` (a
//! child process speaking the protocol on its stdio).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::WAIT;
use crate::process::wait_exit;

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
        self.next_within(WAIT).unwrap_or_else(|e| panic!("{e}"))
    }
    /// The next line, None at EOF; an error when none came within `limit`.
    pub fn next_within(&self, limit: Duration) -> Result<Option<String>, String> {
        match self.rx.recv_timeout(limit) {
            Ok(l) => Ok(Some(l)),
            Err(RecvTimeoutError::Disconnected) => Ok(None),
            Err(RecvTimeoutError::Timeout) => Err(format!("no line within {limit:?}")),
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

/// The writing side of a socket peer. Dropping it closes the connection for both sides: the
/// reader thread holds a clone of the socket, so closing this handle alone would leave the
/// daemon a connection that never ends.
struct SocketWriter(UnixStream);

impl Write for SocketWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Drop for SocketWriter {
    fn drop(&mut self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
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
        Peer::new(Box::new(SocketWriter(s)), Lines::spawn(r))
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
    /// The names `tools/list` offers.
    pub fn tool_names(&mut self) -> Vec<String> {
        let list = self.call("tools/list", json!({}));
        let tools = list["tools"].as_array().unwrap_or_else(|| panic!("tools/list has no tools: {list}"));
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_else(|| panic!("a tool without a name: {t}")).to_string())
            .collect()
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
