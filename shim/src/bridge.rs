//! The stdio <-> socket bridge. State it keeps, and nothing more: the client's `initialize`
//! request and `notifications/initialized` (to replay after a reconnect), and the ids of requests
//! in flight (to answer them with an error if the daemon goes away). Requests the daemon sends the
//! client (elicitation, sampling) pass to stdout like notifications, and the client's responses
//! to them pass to the daemon: neither is a request of the client, so neither is tracked.
//!
//! Threads: the main thread reads stdin and queues each line for the forwarder thread, which
//! writes it to the daemon (connecting first when needed); one reader thread per connection
//! copies daemon lines to stdout. Each connection has a generation number; when it ends, every
//! request sent on it and still unanswered gets a -32603 error, and the bridge reconnects
//! (autostarting if allowed), replays the handshake silently and carries on.
//!
//! EOF on stdin ends the shim within `EOF_GRACE` whatever state it is in (mid-line, after an
//! over-long line, requests in flight, the daemon restarting): answers that come in time are
//! delivered, requests still unanswered then get a -32603 error, and the shim exits.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use interprocess::local_socket::Stream;
use interprocess::local_socket::traits::Stream as _;
use openhuman_common::codes;
use serde_json::{Value, json};

use crate::{Options, autostart};

/// Adds where the client runs — its working directory and the git root above it — to an
/// `initialize` request's `params._meta` under [`openhuman_common::WORKSPACE_META`], unless
/// the client set that key itself. Returns whether the request changed.
fn with_workspace(req: &mut serde_json::Map<String, Value>) -> bool {
    let Ok(cwd) = std::env::current_dir() else { return false };
    let Some(Value::Object(params)) = req.get_mut("params") else { return false };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    let Value::Object(meta) = meta else { return false };
    if meta.contains_key(openhuman_common::WORKSPACE_META) {
        return false;
    }
    let git_root = cwd.ancestors().find(|d| d.join(".git").exists()).map(|d| d.to_string_lossy().into_owned());
    let mut here = json!({ "cwd": cwd.to_string_lossy() });
    if let Some(root) = git_root {
        here["git_root"] = json!(root);
    }
    meta.insert(openhuman_common::WORKSPACE_META.to_string(), here);
    true
}

/// Ids of the shim's own replayed `initialize` requests start with this; their replies are eaten.
const REPLAY_PREFIX: &str = "openhuman-shim-replay-";
/// How long a new connection may take to answer the replayed handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// After stdin ends, how long answers to requests in flight are waited for. Past it the shim
/// answers what is left with an error and exits: a client that closed stdin is gone or done,
/// and must never be kept waiting on a request the daemon will not answer (or a daemon that is
/// restarting).
const EOF_GRACE: Duration = Duration::from_millis(700);
/// Lines read from stdin and not yet sent to the daemon, at most.
const QUEUED_LINES: usize = 64;

/// Why a new connection was not taken.
enum Probe {
    /// It failed (closed, refused a write): another connection may do better.
    Failed(String),
    /// It did not answer in time: the daemon is overloaded or stuck.
    Silent,
}

struct Conn {
    stream: Option<Arc<Stream>>,
    generation: u64,
}

#[derive(Default)]
struct Inflight {
    /// Request id (as JSON text) -> generation of the connection it was sent on.
    ids: HashMap<String, u64>,
    /// Generations whose connection has ended (ids sent on them can no longer be answered).
    closed_upto: u64,
    /// Ids of `subscriptions/listen` requests: streams answered only when they end, so EOF on
    /// stdin does not wait for them.
    streams: HashSet<String>,
    /// Set once stdin has ended and every line read from it has been sent (or answered).
    forwarded_all: bool,
}

struct Handshake {
    initialize: Option<Value>,
    initialized: Option<String>,
}

struct Bridge {
    opts: Options,
    conn: Mutex<Conn>,
    inflight: Mutex<Inflight>,
    drained: Condvar,
    handshake: Mutex<Handshake>,
    /// Buffered: replies that arrive together leave in one write.
    stdout: Mutex<io::BufWriter<Box<dyn Write + Send>>>,
    /// Set once a request had to be answered with "daemon unreachable".
    unreachable: Mutex<bool>,
}

pub fn run(opts: Options) -> ExitCode {
    let bridge = Arc::new(Bridge {
        opts,
        conn: Mutex::new(Conn { stream: None, generation: 0 }),
        inflight: Mutex::new(Inflight::default()),
        drained: Condvar::new(),
        handshake: Mutex::new(Handshake { initialize: None, initialized: None }),
        stdout: Mutex::new(io::BufWriter::with_capacity(64 * 1024, raw_stdout())),
        unreachable: Mutex::new(false),
    });
    // The forwarder connects and sends each line to the daemon, so stdin is read (and its end
    // seen) even while a connection is being made or the daemon restarts.
    let (lines, queued) = mpsc::sync_channel::<Vec<u8>>(QUEUED_LINES);
    {
        let forwarder = bridge.clone();
        let spawned = std::thread::Builder::new().name("forwarder".into()).spawn(move || {
            let bridge = forwarder;
            {
                let mut conn = bridge.conn.lock().expect("conn lock");
                if let Err(e) = bridge.reconnect(&mut conn) {
                    bridge.log(&e);
                }
            }
            for line in queued {
                bridge.forward(&line);
            }
            bridge.inflight.lock().expect("inflight lock").forwarded_all = true;
            bridge.drained.notify_all();
        });
        if let Err(e) = spawned {
            bridge.log(&format!("cannot start the forwarder thread: {e}"));
            return ExitCode::FAILURE;
        }
    }
    let stdin = io::stdin();
    let mut reader = BufReader::with_capacity(64 * 1024, stdin.lock());
    loop {
        let mut line = Vec::with_capacity(4096);
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {
                if lines.send(line).is_err() {
                    break;
                }
            }
            Err(e) => {
                bridge.log(&format!("stdin read failed: {e}"));
                break;
            }
        }
    }
    drop(lines);
    bridge.finish_after_eof();
    let _ = bridge.stdout.lock().expect("stdout lock").flush();
    if *bridge.unreachable.lock().expect("flag lock") { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

impl Bridge {
    /// After EOF on stdin: waits (at most `EOF_GRACE`) until every line has been sent and every
    /// request in flight answered, then answers what is still unanswered with an error. Open
    /// subscription streams have nobody left to deliver to and are not waited for.
    fn finish_after_eof(&self) {
        let deadline = Instant::now() + EOF_GRACE;
        let mut inflight = self.inflight.lock().expect("inflight lock");
        loop {
            let Inflight { ids, streams, .. } = &mut *inflight;
            ids.retain(|id, _| !streams.contains(id));
            if inflight.forwarded_all && inflight.ids.is_empty() {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            inflight = self.drained.wait_timeout(inflight, left).expect("inflight lock").0;
        }
        let abandoned: Vec<String> = inflight.ids.drain().map(|(id, _)| id).collect();
        drop(inflight);
        if !abandoned.is_empty() {
            self.debug(&format!("stdin closed; {} request(s) left unanswered", abandoned.len()));
        }
        let msg = format!(
            "stdin closed and the daemon did not answer within {} ms; the request was abandoned",
            EOF_GRACE.as_millis()
        );
        for id in &abandoned {
            let id: Value = serde_json::from_str(id).unwrap_or(Value::Null);
            self.emit_error(&id, codes::INTERNAL_ERROR, &msg);
        }
    }

    fn log(&self, msg: &str) {
        let _ = writeln!(io::stderr(), "openhuman-mcp-shim: {msg}");
    }

    fn debug(&self, msg: &str) {
        if self.opts.verbose {
            self.log(msg);
        }
    }

    fn emit(&self, line: &[u8]) {
        self.emit_then(line, true);
    }

    /// Writes one line; flushes unless the caller knows more lines follow at once.
    fn emit_then(&self, line: &[u8], flush: bool) {
        let mut out = self.stdout.lock().expect("stdout lock");
        let _ = out.write_all(line);
        if !line.ends_with(b"\n") {
            let _ = out.write_all(b"\n");
        }
        if flush {
            let _ = out.flush();
        }
    }

    fn emit_error(&self, id: &Value, code: i64, message: &str) {
        let v = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
        self.emit(v.to_string().as_bytes());
    }

    /// One line from the client: note what the handshake replay and in-flight tracking need,
    /// then send it to the daemon (reconnecting first when the connection is gone).
    fn forward(self: &Arc<Self>, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let mut parsed: Option<Value> = serde_json::from_slice(line).ok();
        let ids = request_ids(parsed.as_ref());
        // The client's `initialize` goes on with where the client runs (see `workspace`).
        let mut rewritten: Option<Vec<u8>> = None;
        if let Some(Value::Object(o)) = &mut parsed
            && o.get("method").and_then(Value::as_str) == Some("initialize")
            && with_workspace(o)
        {
            rewritten = Some(Value::Object(o.clone()).to_string().into_bytes());
        }
        let line: &[u8] = rewritten.as_deref().unwrap_or(line);
        if let Some(Value::Object(o)) = &parsed {
            match o.get("method").and_then(Value::as_str) {
                Some("initialize") if o.contains_key("id") => {
                    self.handshake.lock().expect("handshake lock").initialize = parsed.clone();
                }
                Some("notifications/initialized") => {
                    self.handshake.lock().expect("handshake lock").initialized =
                        Some(String::from_utf8_lossy(line).trim_end().to_string());
                }
                Some("subscriptions/listen") => {
                    self.inflight.lock().expect("inflight lock").streams.extend(ids.iter().cloned());
                }
                // A cancelled request gets no reply: stop waiting for one.
                Some("notifications/cancelled") => {
                    if let Some(id) = o.get("params").and_then(|p| p.get("requestId")) {
                        let mut inflight = self.inflight.lock().expect("inflight lock");
                        inflight.ids.remove(&id.to_string());
                        if inflight.ids.is_empty() {
                            self.drained.notify_all();
                        }
                    }
                }
                _ => {}
            }
        }
        let mut conn = self.conn.lock().expect("conn lock");
        for _attempt in 0..3 {
            if conn.stream.is_none()
                && let Err(e) = self.reconnect(&mut conn)
            {
                drop(conn);
                self.unreachable_reply(&ids, &e);
                return;
            }
            let generation = conn.generation;
            {
                let mut inflight = self.inflight.lock().expect("inflight lock");
                if inflight.closed_upto >= generation {
                    // The reader saw this connection end; get a new one before sending.
                    drop(inflight);
                    conn.stream = None;
                    continue;
                }
                for id in &ids {
                    inflight.ids.insert(id.clone(), generation);
                }
            }
            let stream = conn.stream.clone().expect("connected above");
            let mut w: &Stream = &stream;
            let sent = w.write_all(line).and_then(|_| if line.ends_with(b"\n") { Ok(()) } else { w.write_all(b"\n") });
            match sent {
                Ok(()) => {
                    if self.opts.verbose && !ids.is_empty() {
                        self.log(&format!("forwarded request {} on connection {generation}", ids.join(", ")));
                    }
                    return;
                }
                Err(e) => {
                    // The reader will answer these ids with an error when it sees the end of this
                    // connection; the line itself is not resent (it may have been partly read).
                    self.debug(&format!("write to daemon failed: {e}"));
                    conn.stream = None;
                    return;
                }
            }
        }
        drop(conn);
        self.unreachable_reply(&ids, &format!("the daemon connection keeps closing; {}", autostart::START_IT));
    }

    fn unreachable_reply(&self, ids: &[String], why: &str) {
        *self.unreachable.lock().expect("flag lock") = true;
        // Each reason says what to do (the daemon's own words when it could not start).
        let msg = format!("openhuman-mcp daemon unavailable: {why}");
        for id in ids {
            let id: Value = serde_json::from_str(id).unwrap_or(Value::Null);
            self.emit_error(&id, codes::INTERNAL_ERROR, &msg);
        }
    }

    /// Connects (autostarting when allowed), proves the connection live by replaying the
    /// handshake (or a ping, for clients without one) and reading its reply, then starts a
    /// reader thread. Called with the connection lock held.
    fn reconnect(self: &Arc<Self>, conn: &mut Conn) -> Result<(), String> {
        let mut why = String::new();
        // A daemon killed a moment ago can still accept a connection that then closes at once.
        for _ in 0..5 {
            let stream = Arc::new(autostart::connect(&self.opts)?);
            conn.generation += 1;
            let generation = conn.generation;
            let mut reader = BufReader::with_capacity(64 * 1024, ArcRead(stream.clone()));
            match self.probe(&stream, &mut reader, generation) {
                Ok(()) => {
                    conn.stream = Some(stream);
                    let bridge = self.clone();
                    std::thread::Builder::new()
                        .name(format!("daemon-reader-{generation}"))
                        .spawn(move || bridge.read_daemon(reader, generation))
                        .map_err(|e| format!("cannot start reader thread: {e}"))?;
                    return Ok(());
                }
                Err(Probe::Failed(e)) => {
                    self.debug(&format!("connection {generation} failed its handshake: {e}"));
                    why = e;
                }
                // A daemon that takes the connection but does not answer: trying again would
                // only wait again.
                Err(Probe::Silent) => {
                    return Err(format!(
                        "the daemon on {} did not answer the handshake within {} s: it is overloaded or stuck; \
                         `openhumand-mcp status` tells, `openhumand-mcp stop` (or killing it) lets a new one start",
                        self.opts.paths.socket.display(),
                        HANDSHAKE_TIMEOUT.as_secs()
                    ));
                }
            }
        }
        Err(format!(
            "the daemon keeps closing new connections ({why}); `openhumand-mcp stop` (or killing it) lets a new one start"
        ))
    }

    /// Replays the handshake on a new connection and waits (at most `HANDSHAKE_TIMEOUT` for
    /// each read and write) for its answer.
    fn probe(&self, stream: &Stream, reader: &mut BufReader<ArcRead>, generation: u64) -> Result<(), Probe> {
        let bounded = |t: Option<Duration>| {
            stream
                .set_recv_timeout(t)
                .and_then(|_| stream.set_send_timeout(t))
                .map_err(|e| Probe::Failed(e.to_string()))
        };
        bounded(Some(HANDSHAKE_TIMEOUT))?;
        self.replay(stream, reader, generation).map_err(|e| match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Probe::Silent,
            _ => Probe::Failed(e.to_string()),
        })?;
        // From here on the reader thread waits as long as requests take.
        bounded(None)
    }

    fn replay(&self, stream: &Stream, reader: &mut BufReader<ArcRead>, generation: u64) -> io::Result<()> {
        let probe_id = Value::from(format!("{REPLAY_PREFIX}{generation}"));
        let (init, initialized) = {
            let h = self.handshake.lock().expect("handshake lock");
            (h.initialize.clone(), h.initialized.clone())
        };
        let mut out = String::new();
        match init {
            Some(mut init) => {
                init["id"] = probe_id.clone();
                out.push_str(&format!("{init}\n"));
                if let Some(note) = initialized {
                    out.push_str(&format!("{note}\n"));
                }
            }
            None => out.push_str(&format!("{}\n", json!({"jsonrpc": "2.0", "id": probe_id, "method": "ping"}))),
        }
        let mut w: &Stream = stream;
        w.write_all(out.as_bytes())?;
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
            }
            if response_ids(&line).first() == Some(&probe_id.to_string()) {
                self.debug(&format!("connected (connection {generation})"));
                return Ok(());
            }
            // Anything else (a notification) belongs to the client.
            self.emit(&line);
        }
    }

    /// Copies daemon lines to stdout until the connection ends, then fails what was in flight
    /// on it and reconnects.
    fn read_daemon(self: Arc<Self>, mut reader: BufReader<ArcRead>, generation: u64) {
        let mut line = Vec::with_capacity(4096);
        let replayed = format!("\"{REPLAY_PREFIX}");
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if !line.ends_with(b"\n") {
                break; // a torn last line: the daemon died mid-write
            }
            let ids = response_ids(&line);
            if ids.first().is_some_and(|id| id.starts_with(&replayed)) {
                continue;
            }
            // More complete lines already buffered: let them share one write to stdout.
            let more = reader.buffer().contains(&b'\n');
            self.emit_then(&line, !more);
            if !ids.is_empty() {
                let mut inflight = self.inflight.lock().expect("inflight lock");
                for id in &ids {
                    inflight.ids.remove(id);
                }
                if inflight.ids.is_empty() {
                    self.drained.notify_all();
                }
            }
        }
        self.debug(&format!("daemon connection {generation} ended"));
        let orphans: Vec<String> = {
            let mut inflight = self.inflight.lock().expect("inflight lock");
            inflight.closed_upto = inflight.closed_upto.max(generation);
            let orphans: Vec<String> =
                inflight.ids.iter().filter(|(_, g)| **g <= generation).map(|(id, _)| id.clone()).collect();
            for id in &orphans {
                inflight.ids.remove(id);
            }
            orphans
        };
        for id in &orphans {
            let id: Value = serde_json::from_str(id).unwrap_or(Value::Null);
            self.emit_error(&id, codes::INTERNAL_ERROR, "daemon restarted; request not completed");
        }
        self.drained.notify_all();
        let mut conn = self.conn.lock().expect("conn lock");
        if conn.generation == generation {
            conn.stream = None;
            if let Err(e) = self.reconnect(&mut conn) {
                self.log(&format!("cannot reconnect to the daemon: {e}"));
            }
        }
    }
}

/// Reads through a shared stream handle, so the buffered reader can move between threads.
struct ArcRead(Arc<Stream>);

impl Read for ArcRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

/// Ids of the requests in a client message (one, or several in a batch), as JSON text.
fn request_ids(msg: Option<&Value>) -> Vec<String> {
    let is_request =
        |v: &Value| v.get("method").is_some() && v.get("id").is_some_and(|id| id.is_string() || id.is_number());
    match msg {
        Some(Value::Array(items)) => items.iter().filter(|v| is_request(v)).map(|v| v["id"].to_string()).collect(),
        Some(v) if is_request(v) => vec![v["id"].to_string()],
        _ => Vec::new(),
    }
}

/// The ids a daemon message answers (JSON text): one for a response, several for a batch reply,
/// none for a notification.
fn response_ids(line: &[u8]) -> Vec<String> {
    if let Some(id) = head_id(line) {
        return vec![id];
    }
    // Only `id` and `method` are read; the rest of a (possibly large) reply is skipped unparsed.
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let one = |h: Head| -> Option<String> {
        match (h.method, h.id) {
            (None, Some(id)) if !id.is_null() => Some(id.to_string()),
            _ => None,
        }
    };
    if line.first() == Some(&b'[') {
        return serde_json::from_slice::<Vec<Head>>(line)
            .map(|v| v.into_iter().filter_map(one).collect())
            .unwrap_or_default();
    }
    serde_json::from_slice::<Head>(line).ok().and_then(one).into_iter().collect()
}

/// The id of a response in the shape the daemon writes, `{"jsonrpc":"2.0","id":ID,"result":…`
/// (or `"error"`), read from the head alone: the body, often many kilobytes, is not scanned.
/// Anything else (batches, notifications, other key orders) is left to the full parse.
fn head_id(line: &[u8]) -> Option<String> {
    let rest = line.strip_prefix(br#"{"jsonrpc":"2.0","id":"#)?;
    let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<Value>();
    let id = values.next()?.ok()?;
    let after = &rest[values.byte_offset()..];
    let response = after.starts_with(br#","result":"#) || after.starts_with(br#","error":"#);
    (response && (id.is_string() || id.is_number())).then(|| id.to_string())
}

/// stdout without the standard library's line buffering (which flushes every line).
#[cfg(unix)]
fn raw_stdout() -> Box<dyn Write + Send> {
    use std::os::fd::AsFd;
    match io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(io::stdout()),
    }
}

#[cfg(not(unix))]
fn raw_stdout() -> Box<dyn Write + Send> {
    Box::new(io::stdout())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn response_ids_read_heads_and_fall_back_to_a_full_parse() {
        let big = "x\\\"".repeat(10_000);
        let cases: Vec<(String, Vec<&str>)> = vec![
            (format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{big}"}}}}"#), vec!["7"]),
            (r#"{"jsonrpc":"2.0","id":"a\"b","error":{"code":-32602,"message":"m"}}"#.into(), vec![r#""a\"b""#]),
            (r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#.into(), vec!["1.5"]),
            // Not the daemon's key order: the full parse still finds the id.
            (r#"{"id":3,"jsonrpc":"2.0","result":{}}"#.into(), vec!["3"]),
            (r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]"#.into(), vec!["1"]),
            (r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":4}}"#.into(), vec![]),
            (r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}"#.into(), vec![]),
            // A request from the daemon to the client (elicitation) answers nothing in flight.
            (r#"{"jsonrpc":"2.0","id":"oh-ask-1","method":"elicitation/create","params":{}}"#.into(), vec![]),
            (r#"{"id":7,"jsonrpc":"2.0","method":"sampling/createMessage","params":{}}"#.into(), vec![]),
        ];
        for (line, want) in cases {
            let got = response_ids(format!("{line}\n").as_bytes());
            assert_eq!(got, want, "{}", &line[..line.len().min(80)]);
        }
        // The client's answer to such a request is not a request of its own: nothing to track.
        let answer = json!({"jsonrpc": "2.0", "id": "oh-ask-1", "result": {"action": "accept"}});
        assert!(request_ids(Some(&answer)).is_empty());
        assert_eq!(request_ids(Some(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call"}))), vec!["3"]);
        let id = json!("openhuman-shim-replay-3").to_string();
        assert_eq!(head_id(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).as_bytes()), Some(id));
    }
}
