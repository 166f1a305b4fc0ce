//! The reliability suite, against the real daemon:
//!
//! - fuzzing: rounds of adversarial messages from a seeded generator (`openhuman_tests::fuzz`)
//!   over the socket and over HTTP (plus raw HTTP that is not HTTP); after every round the
//!   daemon answers `ping`, a real tool call and odd ids exactly, on a fresh connection, and its
//!   resident memory stays bounded;
//! - `kill -9` loops while several sessions write with `memory.store` (every other round with an
//!   ingest running under them): every write that was acknowledged is searchable after the
//!   restarts and has its audit row, and the store passes its integrity check;
//! - a load run: many sessions (socket and HTTP) doing mixed calls with zero unexpected errors,
//!   resident memory and open descriptors flat between the end of a warm-up and the end of the
//!   run, and descriptors back where they were once the sessions leave.
//!
//! Each test prints its figures. `OPENHUMAN_RELIABILITY_SCALE=N` (default 1) multiplies rounds,
//! kills and load; `OPENHUMAN_RELIABILITY_SEED` changes the fuzz seed (BENCHMARKS.md has a
//! longer run). Nothing here asserts on time.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use openhuman_tests::fuzz::{self, ODD_IDS, Rng};
use openhuman_tests::http::Client;
use openhuman_tests::{Daemon, Home, Peer, WAIT, kill, open_fds, rss_kib, tool_ok, wait_exit};
use serde_json::{Value, json};

/// How much more than the bounded form to do.
fn scale() -> usize {
    std::env::var("OPENHUMAN_RELIABILITY_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}

fn seed() -> u64 {
    std::env::var("OPENHUMAN_RELIABILITY_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_0012)
}

/// Line and body limit of the fuzzed daemon: small, so messages past it are cheap to send.
const MAX_BYTES: usize = 256 * 1024;

/// Growth of resident memory allowed between the warm-up and the end (a leak or an unbounded
/// buffer shows as far more; allocator noise as far less).
const RSS_SLACK_KIB: u64 = 128 * 1024;

/// Writes no hourly policy limit gets in the way of.
const UNLIMITED: &str = "[autonomy]\nmax_actions_per_hour = 4000000000\n";

/// A raw socket connection that reports a closed daemon instead of panicking.
struct Conn {
    w: UnixStream,
    r: BufReader<UnixStream>,
}

impl Conn {
    fn open(home: &Home) -> Conn {
        let w = UnixStream::connect(home.socket()).expect("connect to the daemon");
        w.set_read_timeout(Some(WAIT)).unwrap();
        let r = BufReader::new(w.try_clone().unwrap());
        Conn { w, r }
    }

    fn send(&mut self, bytes: &[u8]) -> bool {
        self.w.write_all(bytes).and_then(|()| self.w.write_all(b"\n")).is_ok()
    }

    /// The next reply as JSON; None when the daemon closed the connection.
    fn next(&mut self) -> Option<Value> {
        read_reply(&mut self.r)
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Option<Value> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !self.send(msg.to_string().as_bytes()) {
            return None;
        }
        self.next()
    }

    fn initialize(&mut self, client: &str) {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client}});
        let r = self.call(0, "initialize", params).expect("initialize answered");
        assert!(r.get("result").is_some(), "{r}");
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }
}

/// The next reply line as JSON; None when the connection ended (a line cut off by a killed
/// daemon counts as the end, not as a bad reply).
fn read_reply(r: &mut BufReader<UnixStream>) -> Option<Value> {
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) if !line.ends_with('\n') => None,
        Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("a reply is not JSON ({e}): {line}"))),
    }
}

/// After a fuzz round: a fresh connection is served — ping, a real tool call that finds
/// `token`, and odd ids answered exactly as written.
fn assert_socket_serves(home: &Home, token: &str) {
    let mut p = Peer::socket(&home.socket());
    p.initialize("reliability-check");
    assert_eq!(p.call("ping", json!({})), json!({}));
    let hits = p.tool("memory.search", json!({"query": token}));
    assert_eq!(tool_ok(&hits)["hits"].as_array().map(Vec::len), Some(1), "{hits}");
    for id in ODD_IDS {
        p.send_raw(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes());
        let reply = p.lines.next().expect("a reply");
        if id.starts_with('"') {
            let sent: Value = serde_json::from_str(id).unwrap();
            let got: Value = serde_json::from_str(&reply).unwrap();
            assert_eq!(got["id"], sent, "{reply}");
        } else {
            assert!(reply.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},")), "id {id}: {reply}");
        }
    }
}

/// One socket round: `n` adversarial lines after a handshake, replies read as they come (each
/// must be JSON), then a marker ping whose answer ends the round. Returns the replies seen.
fn fuzz_socket_round(home: &Home, rng: &mut Rng, n: usize) -> usize {
    let mut conn = Conn::open(home);
    conn.initialize("fuzz");
    let Conn { w: mut conn, r: mut reader } = conn;
    let replies = std::thread::spawn(move || {
        let mut seen = 0;
        loop {
            let Some(reply) = read_reply(&mut reader) else {
                panic!("the daemon closed a fuzzed session after {seen} replies")
            };
            seen += 1;
            if reply["id"] == "end-of-round" {
                return seen;
            }
        }
    });
    let mut send = |bytes: &[u8]| conn.write_all(bytes).and_then(|()| conn.write_all(b"\n")).is_ok();
    for _ in 0..n {
        let (_, bytes) = fuzz::message(rng, MAX_BYTES);
        assert!(send(&bytes), "the daemon stopped reading a fuzzed session");
    }
    send(br#"{"jsonrpc":"2.0","id":"end-of-round","method":"ping"}"#);
    replies.join().expect("the round's replies")
}

const BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn http_initialize(c: &Client) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz"}}});
    let r = c.send("POST", "/mcp", &[BOTH, JSON], body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    r.header("mcp-session-id").expect("a session id").to_string()
}

/// One HTTP round: `n` adversarial bodies with varied headers and paths (no answer may be a 5xx
/// other than a refusal under load, and a JSON answer must be JSON), then a few byte streams
/// that are not HTTP at all. Returns the statuses seen, counted.
fn fuzz_http_round(c: &Client, rng: &mut Rng, n: usize, statuses: &mut std::collections::BTreeMap<u16, usize>) {
    let sid = http_initialize(c);
    for _ in 0..n {
        let (_, body) = fuzz::message(rng, MAX_BYTES);
        let mut headers = vec![BOTH, JSON];
        if rng.chance(70) {
            headers.push(("Mcp-Session-Id", &sid));
        } else if rng.chance(20) {
            headers.push(("Mcp-Session-Id", "not-a-session"));
        }
        if rng.chance(10) {
            headers[0] = ("Accept", *rng.pick(&["text/html", "*/*", "application/json", ""]));
        }
        if rng.chance(10) {
            headers.push(("MCP-Protocol-Version", *rng.pick(&["2025-06-18", "1999-01-01", "", "2026-07-28"])));
        }
        let path = *rng.pick(&["/mcp", "/mcp", "/mcp", "/", "/rpc"]);
        let r = c.send("POST", path, &headers, &body);
        assert!(
            r.status < 500 || r.status == 503,
            "{} {path}: {} for {}",
            r.status,
            r.text(),
            String::from_utf8_lossy(&body)
        );
        if r.header("content-type") == Some("application/json") {
            assert!(serde_json::from_slice::<Value>(&r.body).is_ok(), "not JSON: {}", r.text());
        }
        *statuses.entry(r.status).or_default() += 1;
    }
    for _ in 0..5 {
        let mut s = std::net::TcpStream::connect(c.addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        let mut junk: Vec<u8> = (0..1 + rng.below(4096)).map(|_| rng.next_u64() as u8).collect();
        if rng.chance(50) {
            junk.splice(0..0, b"POST /mcp HTTP/1.1\r\nContent-Length: 99999999\r\n".iter().copied());
        }
        let _ = s.write_all(&junk);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut answer);
        assert!(answer.is_empty() || answer.starts_with(b"HTTP/1.1 4"), "{}", String::from_utf8_lossy(&answer));
    }
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let r = c.send("POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", &sid)], ping.as_bytes());
    assert_eq!(r.status, 200, "the round's session still works: {}", r.text());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory.search", "arguments": {"query": "fuzzanchor"}}});
    let r = c.send("POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", &sid)], call.to_string().as_bytes());
    assert_eq!(r.json()["result"]["isError"], false, "{}", r.text());
}

#[test]
fn fuzzed_socket_and_http_input_leaves_the_daemon_serving_with_bounded_memory() {
    let home = Home::new();
    home.write_config(&format!(
        "{UNLIMITED}[mcp]\nmax_line_bytes = {MAX_BYTES}\n[mcp.http]\nmax_body_bytes = {MAX_BYTES}\n"
    ));
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    let mut p = Peer::socket(&home.socket());
    p.initialize("setup");
    tool_ok(&p.tool("memory.store", json!({"title": "anchor", "content": "fuzzanchor survives the fuzz"})));
    drop(p);

    let rounds = 3 * scale();
    let (socket_lines, http_bodies) = (600, 150);
    let mut statuses = std::collections::BTreeMap::new();
    let (mut replies, mut warm_rss, mut peak_rss) = (0, 0, 0);
    for round in 0..rounds {
        let round_seed = seed().wrapping_add(round as u64);
        eprintln!("fuzz round {round} seed {round_seed}");
        let mut rng = Rng::new(round_seed);
        replies += fuzz_socket_round(&home, &mut rng, socket_lines);
        fuzz_http_round(&c, &mut rng, http_bodies, &mut statuses);
        assert_socket_serves(&home, "fuzzanchor");
        let rss = rss_kib(d.pid());
        peak_rss = peak_rss.max(rss);
        if round == 0 {
            warm_rss = rss;
        }
        assert!(rss <= warm_rss + RSS_SLACK_KIB, "RSS grew from {warm_rss} KiB to {rss} KiB by round {round}");
    }
    eprintln!(
        "fuzz: {rounds} rounds, {} socket lines ({replies} replies), {} HTTP bodies (statuses {statuses:?}) + {} raw; \
         RSS after round 1 {warm_rss} KiB, at the end {} KiB, peak {peak_rss} KiB",
        rounds * socket_lines,
        rounds * http_bodies,
        rounds * 5,
        rss_kib(d.pid())
    );
}

/// Chat exports for an ingest under the writes: `files` files of `per_file` one-line messages,
/// message `n` holding the word `ingest{tag}x{n}`.
fn write_corpus(dir: &Path, tag: usize, files: usize, per_file: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..files {
        let text: String = (0..per_file)
            .map(|i| {
                let n = f * per_file + i;
                let msg = json!({"ts": 1_700_000_000 + n as i64 * 3 * 3600, "from": "ann", "text": format!("ingest{tag}x{n} meadow lantern"), "channel": format!("c{f:03}")});
                format!("{msg}\n")
            })
            .collect();
        std::fs::write(dir.join(format!("c{f:03}.jsonl")), text).unwrap();
    }
}

/// Sessions that write until their connection dies; each acknowledged write's token is pushed
/// to `acked` as its reply arrives.
fn writers(
    home: &Home,
    round: usize,
    sessions: usize,
    acked: &Arc<Mutex<Vec<String>>>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..sessions)
        .map(|w| {
            let mut conn = Conn::open(home);
            conn.initialize(&format!("writer{w}"));
            let acked = acked.clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    let token = format!("acked{round}x{w}x{i}");
                    let args = json!({"title": token, "content": format!("{token} written under fire")});
                    let Some(r) = conn.call(i, "tools/call", json!({"name": "memory.store", "arguments": args})) else {
                        return;
                    };
                    if r["result"]["isError"] == false {
                        acked.lock().unwrap().push(token);
                    }
                }
            })
        })
        .collect()
}

/// Waits, bounded, until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT * 3;
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen in time");
        // A poll, not a wait for something to happen: the condition decides.
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn kill_nine_loops_during_writes_and_ingest_lose_no_acknowledged_write_or_its_audit_row() {
    let home = Home::new();
    home.write_config(UNLIMITED);
    let corpus = tempfile::tempdir().unwrap();
    let (files, per_file) = (40, 250);
    let acked = Arc::new(Mutex::new(Vec::new()));
    let rounds = 4 * scale();
    let mut cut_ingests = 0;
    for round in 0..rounds {
        let mut d = Daemon::start(&home);
        // Progress is read from the database file itself (a WAL reader beside the daemon's
        // writer): a stats call to the daemon would queue behind the ingest and the writers.
        let db = home.path().join("data/memory.db");
        let chunks = || {
            let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = rusqlite::Connection::open_with_flags(&db, flags).ok()?;
            conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get::<_, i64>(0)).ok().map(|n| n as u64)
        };
        let chunks_before = chunks().unwrap_or(0);
        // Every other round a fresh folder is being ingested when the kill comes.
        let ingest = (round % 2 == 0).then(|| {
            let dir = corpus.path().join(round.to_string());
            write_corpus(&dir, round, files, per_file);
            let mut p = Peer::socket(&home.socket());
            p.start("openhuman.memory_ingest", json!({"paths": [dir]}));
            p
        });
        let before = acked.lock().unwrap().len();
        let threads = writers(&home, round, 6, &acked);
        // The kill lands once writes are being acknowledged, and, in an ingest round, once a
        // fifth of the folder is in (so, most likely, before the rest is).
        let wanted = if ingest.is_some() { 5 } else { 25 };
        wait_until("acknowledged writes", || acked.lock().unwrap().len() >= before + wanted);
        if ingest.is_some() {
            let fifth = (files * per_file / 5) as u64;
            wait_until("ingest progress", || chunks().unwrap_or(0) >= chunks_before + fifth);
        }
        kill(d.pid(), libc::SIGKILL);
        wait_exit(&mut d.child, WAIT);
        for t in threads {
            t.join().expect("a writer");
        }
        if let Some(p) = ingest
            && p.lines.next().is_none()
        {
            cut_ingests += 1;
        }
    }
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    let check = p.call("openhuman.memory_check", json!({}));
    assert_eq!(check["integrity_check"], json!(["ok"]), "{check}");
    assert_eq!(check["fts"]["current"], true, "{check}");
    p.initialize("checker");
    let acked = acked.lock().unwrap().clone();
    for token in &acked {
        let hits = p.tool("memory.search", json!({"query": token}));
        assert_eq!(tool_ok(&hits)["hits"].as_array().map(Vec::len), Some(1), "acknowledged, then lost: {token}");
    }
    let out =
        home.daemon_cmd().args(["audit", "--json", "--limit", "1000000", "--tool", "memory.store"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let audited: std::collections::HashSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["success"] == true)
        .filter_map(|r| r["args_summary"]["title"].as_str().map(str::to_string))
        .collect();
    let unaudited: Vec<&String> = acked.iter().filter(|t| !audited.contains(*t)).collect();
    assert!(unaudited.is_empty(), "acknowledged writes without an audit row: {unaudited:?}");
    // The last interrupted ingest finishes on the recovered store (through the daemon, as the
    // command line does; bounded, since the folder is large for a debug build).
    let last_round = (rounds - 1) / 2 * 2;
    let mut ingest = home
        .daemon_cmd()
        .arg("ingest")
        .arg(corpus.path().join(last_round.to_string()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_exit(&mut ingest, WAIT * 8).success(), "the interrupted ingest did not finish");
    let last = format!("ingest{last_round}x{}", files * per_file - 1);
    let search = p.tool("memory.search", json!({"query": last}));
    assert_eq!(tool_ok(&search)["hits"].as_array().map(Vec::len), Some(1), "{search}");
    eprintln!(
        "kill -9: {rounds} kills ({} during an ingest, {cut_ingests} cut it short), {} acknowledged writes, each \
         searchable with its audit row after the restarts",
        rounds.div_ceil(2),
        acked.len()
    );
}

/// One load session's mixed calls: a store, a search that must find it, a recall, a list and a
/// ping. Returns how many replies were not what they should be.
fn mixed_calls(conn: &mut Conn, who: &str, i: usize) -> usize {
    let token = format!("load{who}n{i}");
    let calls = [
        (
            "tools/call",
            json!({"name": "memory.store", "arguments": {"title": token, "content": format!("{token} ember")}}),
        ),
        ("tools/call", json!({"name": "memory.search", "arguments": {"query": token}})),
        ("tools/call", json!({"name": "memory.recall", "arguments": {"query": "ember", "k": 3}})),
        ("tools/call", json!({"name": "memory.list", "arguments": {"limit": 5}})),
        ("ping", json!({})),
    ];
    let mut bad = 0;
    for (n, (method, params)) in calls.into_iter().enumerate() {
        let r = conn.call(n as u64, method, params).expect("the daemon answered");
        let ok = r.get("error").is_none()
            && r["result"]["isError"] != true
            && (n != 1 || r["result"]["structuredContent"]["hits"].as_array().map(Vec::len) == Some(1));
        if !ok {
            eprintln!("unexpected reply: {r}");
            bad += 1;
        }
    }
    bad
}

#[test]
fn many_sessions_with_mixed_calls_have_no_errors_and_flat_memory_and_descriptors() {
    let home = Home::new();
    home.write_config(UNLIMITED);
    let d = Daemon::builder(&home).http().start();
    let pid = d.pid();
    let fds_idle = open_fds(pid);
    let (sessions, warmup, rounds) = (24, 10, 30 * scale());
    let errors = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    // Sessions wait here after the warm-up and at the end, while the figures are taken.
    let gate = Arc::new(Barrier::new(sessions + 1));
    let threads: Vec<_> = (0..sessions)
        .map(|s| {
            let mut conn = Conn::open(&home);
            conn.initialize(&format!("load{s}"));
            let (errors, calls, gate) = (errors.clone(), calls.clone(), gate.clone());
            std::thread::spawn(move || {
                for i in 0..warmup + rounds {
                    if i == warmup {
                        gate.wait();
                        gate.wait();
                    }
                    errors.fetch_add(mixed_calls(&mut conn, &format!("s{s}"), i), Ordering::Relaxed);
                    calls.fetch_add(5, Ordering::Relaxed);
                }
                gate.wait();
                gate.wait();
            })
        })
        .collect();
    // HTTP sessions alongside, through the same gates' pace: one call each per round.
    let c = d.http_client();
    let http_sids: Vec<String> = (0..4).map(|_| http_initialize(&c)).collect();
    let http_call = |sid: &str, i: usize| {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "memory.search", "arguments": {"query": "ember"}}});
        let r = c.send("POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", sid)], body.to_string().as_bytes());
        usize::from(r.status != 200 || r.json()["result"]["isError"] != false)
    };
    gate.wait();
    let (rss_warm, fds_warm) = (rss_kib(pid), open_fds(pid));
    gate.wait();
    for i in 0..rounds {
        for sid in &http_sids {
            errors.fetch_add(http_call(sid, i), Ordering::Relaxed);
            calls.fetch_add(1, Ordering::Relaxed);
        }
    }
    gate.wait();
    let (rss_end, fds_end) = (rss_kib(pid), open_fds(pid));
    gate.wait();
    for t in threads {
        t.join().expect("a load session");
    }
    // Once the sessions are gone, so are their descriptors (one each; the store's own, opened
    // under load, stay).
    wait_until(&format!("descriptors released ({fds_end} at the end)"), || open_fds(pid) + sessions <= fds_end + 4);
    let fds_after = open_fds(pid);
    eprintln!(
        "load: {sessions} socket + {} HTTP sessions, {} calls, {} unexpected; RSS {rss_warm} KiB after warm-up, \
         {rss_end} KiB at the end; fds {fds_idle} idle, {fds_warm} after warm-up, {fds_end} at the end, {fds_after} \
         after the sessions left",
        http_sids.len(),
        calls.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed)
    );
    assert_eq!(errors.load(Ordering::Relaxed), 0, "unexpected errors under load");
    assert!(rss_end <= rss_warm + RSS_SLACK_KIB, "RSS grew from {rss_warm} KiB to {rss_end} KiB");
    assert!(fds_end <= fds_warm + 8, "descriptors grew from {fds_warm} to {fds_end}");
}
