//! PostgreSQL as the shared store: a throwaway PostgreSQL 15 server (`openhuman_tests::postgres`)
//! and several daemons, each in its own home, pointed at one database. A write on one is found on
//! the others; a daemon that was down catches up, and `reindex` rebuilds from PostgreSQL alone;
//! concurrent upserts and ingests store one copy; reads go on while PostgreSQL is down or does not
//! answer, writes fail clearly (in bounded time) and work again once it is back; `kill -9` of the
//! server or of a daemon during writes loses no acknowledged write or audit row; `migrate-store`
//! moves a store both ways with checked counts; the policy's rate limit and the audit log span
//! machines. The first test checks the server harness itself. Without PostgreSQL's programs the
//! tests say they skip (under `CI` they fail). `OPENHUMAN_RELIABILITY_SCALE=N` makes the kill -9
//! loops N times longer.

use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

mod visibility;

use openhuman_tests::postgres::{PgServer, psql_url};
use openhuman_tests::{Daemon, Home, Peer, WAIT, kill, rpc_error, tool_err_text, tool_ok, wait_exit};
use serde_json::{Value, json};

#[test]
fn the_throwaway_server_starts_answers_survives_a_crash_restarts_and_freezes() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("harness");
    assert!(url.starts_with("postgres://") && url.ends_with("/harness?sslmode=disable"), "{url}");
    assert_eq!(pg.psql("harness", "SELECT 1"), "1");
    pg.psql("harness", "CREATE TABLE t (v int); INSERT INTO t VALUES (41), (1)");
    pg.kill9();
    assert!(pg.postmaster_pid().is_none(), "the server is gone after kill9");
    pg.start_again();
    assert_eq!(pg.psql("harness", "SELECT 1"), "1");
    assert_eq!(pg.psql("harness", "SELECT sum(v) FROM t"), "42", "committed rows survive the crash");
    pg.stop();
    assert!(pg.postmaster_pid().is_none() && !pg.answers());
    pg.start_again();
    assert_eq!(pg.psql("harness", "SELECT count(*) FROM t"), "2");
    pg.freeze();
    assert!(!pg.answers(), "a frozen server does not answer");
    pg.thaw();
    assert!(pg.answers());
    assert_eq!(pg.psql("harness", "SELECT count(*) FROM t"), "2");
}

/// The environment variable holding the URL (the default of `[memory.postgres].url_env`).
const URL_ENV: &str = "OPENHUMAN_POSTGRES_URL";

/// Writes no hourly policy limit gets in the way of.
pub(crate) const UNLIMITED: &str = "[autonomy]\nmax_actions_per_hour = 4000000000\n";

/// One machine: a home whose memory lives in the shared database, and its daemon when it runs.
pub(crate) struct Machine {
    pub(crate) home: Home,
    /// Its name in audit rows (`machine`).
    name: String,
    /// The variable the config names (`url_env`) and the URL it holds.
    env: (&'static str, String),
    daemon: Option<Daemon>,
}

impl Machine {
    /// A home in postgres mode named `name` in audit rows, `extra` appended to its config.
    pub(crate) fn new(url: &str, name: &str, extra: &str) -> Machine {
        Machine::with_url_env(url, name, URL_ENV, extra)
    }

    fn with_url_env(url: &str, name: &str, url_env: &'static str, extra: &str) -> Machine {
        let home = Home::new();
        home.write_config(&format!(
            "[memory]\nengine = \"postgres\"\n\n[memory.postgres]\nurl_env = \"{url_env}\"\nmachine = \"{name}\"\n\n{extra}"
        ));
        Machine { home, name: name.to_string(), env: (url_env, url.to_string()), daemon: None }
    }

    /// Starts it and returns it, for chaining.
    pub(crate) fn started(mut self) -> Machine {
        self.start();
        self
    }

    pub(crate) fn start(&mut self) {
        assert!(self.daemon.is_none(), "already running");
        self.daemon = Some(Daemon::builder(&self.home).env(self.env.0, &self.env.1).start());
    }

    /// A clean stop (`openhumand-mcp stop`).
    pub(crate) fn stop(&mut self) {
        self.daemon.take().expect("not running").stop().unwrap_or_else(|e| panic!("{e}"));
    }

    /// A socket session of client `client`.
    pub(crate) fn session(&self, client: &str) -> Peer {
        let mut p = Peer::socket(&self.home.socket());
        p.initialize(client);
        p
    }

    /// A command of the daemon binary in this home, with the URL in its environment.
    fn cmd(&self) -> Command {
        let mut c = self.home.daemon_cmd();
        c.env(self.env.0, &self.env.1);
        c
    }

    /// Runs a command; (exit code, stdout, stderr).
    pub(crate) fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd().args(args).output().expect("run openhumand-mcp");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }

    /// `status --json`'s `memory.shared` (its exit code is 1 while PostgreSQL is down).
    pub(crate) fn shared(&self) -> Value {
        let (_, out, err) = self.run(&["status", "--json"]);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("status --json ({e}): {out}{err}"));
        v["memory"]["shared"].clone()
    }

    /// Waits (bounded) until every change in PostgreSQL's log this machine's role may read, as
    /// the server has it now, is applied here. The daemon's own `head_seq` is only the newest it
    /// has seen, which lags a write another machine committed a moment ago.
    pub(crate) fn caught_up(&self) -> Value {
        let server: u64 = psql_url(&self.env.1, "SELECT coalesce(max(seq), 0) FROM oh_changes")
            .parse()
            .expect("the log's head is a number");
        let mut last = Value::Null;
        let done = eventually(|| {
            last = self.shared();
            last["connected"] == true
                && last["applied_seq"].as_u64().is_some_and(|a| a >= server)
                && last["applied_seq"] == last["head_seq"]
        });
        assert!(done, "machine {} did not catch up; memory.shared: {last}", self.name);
        last
    }

    /// `openhuman.memory_stats` of the running daemon.
    fn stats(&self) -> Value {
        Peer::socket(&self.home.socket()).call("openhuman.memory_stats", json!({}))
    }

    /// `audit --json` rows, newest first.
    fn audit(&self, extra: &[&str]) -> Vec<Value> {
        let (code, out, err) = self.run(&[&["audit", "--json", "--limit", "100000"], extra].concat());
        assert_eq!(code, 0, "audit failed: {err}");
        out.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    }
}

/// The hits of `memory.search` for `query`.
fn hits(p: &mut Peer, query: &str) -> Vec<Value> {
    let r = p.tool("memory.search", json!({"query": query, "k": 50}));
    tool_ok(&r)["hits"].as_array().cloned().unwrap_or_else(|| panic!("no hits array: {r}"))
}

/// Waits (bounded) until `memory.search` finds exactly `n` hits for `query`.
pub(crate) fn wait_hits(p: &mut Peer, query: &str, n: usize) {
    let mut seen = Vec::new();
    let done = eventually(|| {
        seen = hits(p, query);
        seen.len() == n
    });
    assert!(done, "{n} hit(s) for {query:?} expected; the last search found {seen:?}");
}

/// Polls `done` until it holds (true) or a bounded time has passed (false).
pub(crate) fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + WAIT * 2;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        // A poll of state another process changes; the condition decides, not the pause.
        std::thread::sleep(Duration::from_millis(25));
    }
    true
}

/// `eventually`, failing the test when it does not happen.
pub(crate) fn wait_until(what: &str, done: impl FnMut() -> bool) {
    assert!(eventually(done), "{what}: not within {:?}", WAIT * 2);
}

/// A server with database `db`, and machines `a` and `b` serving it with no rate limit.
fn pair(db: &str) -> Option<(PgServer, Machine, Machine)> {
    let pg = PgServer::start()?;
    let url = pg.create_db(db);
    let a = Machine::new(&url, "a", UNLIMITED).started();
    let b = Machine::new(&url, "b", UNLIMITED).started();
    Some((pg, a, b))
}

/// `memory.store` of a document whose content holds `token`.
fn store(p: &mut Peer, title: &str, token: &str) -> Value {
    p.tool("memory.store", json!({"title": title, "content": format!("{token} is written down for the team")}))
}

#[test]
fn a_write_on_one_daemon_is_found_on_the_others() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("three");
    let mut a = Machine::new(&url, "a", UNLIMITED);
    // `migrate` applies the schema and says which version it is at; again, it changes nothing.
    let version = |out: &str| -> u64 {
        let mut numbers = out.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok());
        numbers.next_back().unwrap_or_else(|| panic!("migrate prints the version: {out}"))
    };
    let (code, first, err) = a.run(&["migrate"]);
    assert_eq!(code, 0, "migrate failed: {first}{err}");
    let (code, again, err) = a.run(&["migrate"]);
    assert_eq!(code, 0, "migrate again failed: {again}{err}");
    assert_eq!(version(&first), version(&again), "{first}\n{again}");
    a.start();
    let b = Machine::new(&url, "b", UNLIMITED).started();
    // `url_env` names the variable: C reads the same URL from another one.
    let c = Machine::with_url_env(&url, "c", "TEAM_MEMORY_URL", UNLIMITED).started();
    let (mut pa, mut pb, mut pc) = (a.session("Writer"), b.session("Reader B"), c.session("Reader C"));
    assert!(hits(&mut pb, "quokka").is_empty());
    tool_ok(&store(&mut pa, "Island fauna", "quokka"));
    wait_hits(&mut pb, "quokka", 1);
    wait_hits(&mut pc, "quokka", 1);
    // And the other way round, with meaning as well as words.
    tool_ok(&pc.tool(
        "memory.store",
        json!({"title": "Car care", "content": "The sedan needs new winter tyres and an oil change"}),
    ));
    wait_hits(&mut pa, "tyres", 1);
    wait_hits(&mut pb, "tyres", 1);
    let car = hits(&mut pb, "tyres")[0]["chunk_id"].clone();
    let recalled = pb.tool("memory.recall", json!({"query": "automobile maintenance", "k": 3}));
    let chunks = tool_ok(&recalled)["chunks"].as_array().cloned().unwrap_or_default();
    assert!(chunks.iter().any(|c| c["chunk_id"] == car), "B recalls by meaning what C wrote: {recalled}");
    // A project and a superseded version travel with the chunks.
    for content in ["The wombat census is in May", "The wombat census moved to June"] {
        tool_ok(&pa.tool("memory.store", json!({"title": "Census", "content": content, "project": "/team/zoo"})));
    }
    wait_hits(&mut pb, "June", 1);
    let seen = pb.tool("memory.recall", json!({"query": "wombat census", "filter": {"project": "/team/zoo"}}));
    let seen = tool_ok(&seen)["chunks"].as_array().cloned().unwrap_or_default();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].get("superseded").is_none() && seen[1]["superseded"]["by"] == seen[0]["chunk_id"], "{seen:?}");
    for m in [&a, &b, &c] {
        let shared = m.caught_up();
        assert_eq!(shared["engine"], "postgres", "{shared}");
        assert!(shared["head_seq"].as_u64() >= Some(2), "{shared}");
        // B and C joined new: their first snapshot is in, and they take writes (C wrote).
        assert_eq!(shared["joining"], false, "{shared}");
    }
}

#[test]
fn a_daemon_that_was_down_catches_up_and_reindex_rebuilds_from_postgres_alone() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("catchup");
    let a = Machine::new(&url, "a", UNLIMITED).started();
    let mut b = Machine::new(&url, "b", UNLIMITED).started();
    b.caught_up();
    b.stop();
    let mut pa = a.session("Writer");
    for i in 0..50 {
        tool_ok(&store(&mut pa, &format!("Offline note {i}"), &format!("offline{i}word")));
    }
    b.start();
    let mut pb = b.session("Reader");
    wait_hits(&mut pb, "offline49word", 1);
    for i in 0..50 {
        assert_eq!(hits(&mut pb, &format!("offline{i}word")).len(), 1, "offline{i}word missing on B");
    }
    let shared = b.caught_up();
    assert!(shared["head_seq"].as_u64() >= Some(50), "{shared}");
    let chunks = b.stats()["chunks"].as_u64().expect("chunks");

    // B loses everything it keeps locally; `reindex` brings it back from PostgreSQL.
    drop(pb);
    b.stop();
    let data = b.home.path().join("data");
    for entry in std::fs::read_dir(&data).expect("B's data dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) }.expect("remove");
    }
    let (code, out, err) = b.run(&["reindex"]);
    assert_eq!(code, 0, "reindex failed: {out}{err}");
    let reindexed: u64 = out
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in reindex's output: {out}"));
    assert_eq!(reindexed, chunks, "reindex rebuilt every chunk from PostgreSQL: {out}");
    b.start();
    let mut pb = b.session("Reader");
    for i in 0..50 {
        assert_eq!(hits(&mut pb, &format!("offline{i}word")).len(), 1, "offline{i}word missing after reindex");
    }
}

/// A window so small the log is pruned to its newest few changes at every report.
const TINY_WINDOW: &str = "log_keep_days = 0\nlog_keep_rows = 3\nlog_prune_every_secs = 0\n\n";

/// Machine `name`'s position in the log, as `m`'s `status` reports it.
fn device(m: &Machine, name: &str) -> Value {
    let log = &m.shared()["log"];
    log["devices"].as_array().into_iter().flatten().find(|d| d["machine"] == name).cloned().unwrap_or(Value::Null)
}

#[test]
fn a_daemon_away_past_the_log_window_comes_back_from_a_snapshot_with_every_write_and_delete() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("window");
    let extra = format!("{TINY_WINDOW}{UNLIMITED}");
    let a = Machine::new(&url, "a", &extra).started();
    let mut b = Machine::new(&url, "b", &extra).started();
    let mut pa = a.session("Writer");
    tool_ok(&store(&mut pa, "Kept note", "keptwordzeta"));
    let gone = tool_ok(&store(&mut pa, "Doomed note", "doomedwordzeta"))["id"].as_str().expect("an id").to_string();
    let mut pb = b.session("Reader");
    wait_hits(&mut pb, "doomedwordzeta", 1);
    let caught = b.caught_up()["applied_seq"].as_i64().expect("a position");
    // B's own status shows the server's answer to its own last report. Its position may still
    // move past `caught` (A's background work, such as entity rows, writes to the log after its
    // tool calls return), so what counts is that the server holds where B is now.
    let mut left_at = caught;
    wait_until("B's position reaches the server", || {
        left_at = b.shared()["applied_seq"].as_i64().unwrap_or(0);
        left_at >= caught && device(&b, "b")["applied_seq"].as_i64() == Some(left_at)
    });
    drop(pb);
    b.stop();

    // While B is away: a delete, and many more writes than the log keeps.
    tool_ok(&pa.tool("memory.forget", json!({"ids": [gone]})));
    for i in 0..20 {
        tool_ok(&store(&mut pa, &format!("Away note {i}"), &format!("away{i}wordzeta")));
    }
    let mut log = Value::Null;
    wait_until("the log is pruned past B's position and stays bounded", || {
        log = a.shared()["log"].clone();
        log["horizon_seq"].as_i64() > Some(left_at) && log["rows"].as_i64() <= Some(3)
    });
    let away = log["devices"].as_array().into_iter().flatten().find(|d| d["machine"] == "b").cloned();
    assert_eq!(away.as_ref().map(|d| d["behind_horizon"].clone()), Some(json!(true)), "status marks B: {log}");
    assert!(away.and_then(|d| d["lag"].as_i64()) > Some(20), "B's lag counts the changes it missed: {log}");
    let (_, text, _) = a.run(&["status"]);
    assert!(text.contains("shared change log:") && text.contains("device \"b\""), "status says so: {text}");

    // B comes back: the log no longer reaches its position, so it loads a snapshot and the tail.
    b.start();
    let mut pb = b.session("Reader");
    wait_hits(&mut pb, "away19wordzeta", 1);
    for i in 0..20 {
        assert_eq!(hits(&mut pb, &format!("away{i}wordzeta")).len(), 1, "away{i}wordzeta missing on B");
    }
    assert_eq!(hits(&mut pb, "keptwordzeta").len(), 1, "what B had is still there, once");
    assert!(hits(&mut pb, "doomedwordzeta").is_empty(), "the delete made while B was away holds on B");
    // And it follows the log again from there.
    tool_ok(&store(&mut pa, "After the return", "returnwordzeta"));
    wait_hits(&mut pb, "returnwordzeta", 1);
    b.caught_up();
    wait_until("B reports a position inside the window", || device(&a, "b")["behind_horizon"] == false);
    assert_eq!(b.stats()["chunks"], a.stats()["chunks"], "both copies hold the same chunks");
}

#[test]
fn concurrent_upserts_and_ingests_of_the_same_file_store_one_copy() {
    let Some((_pg, a, b)) = pair("upserts") else { return };
    // The same title and namespace from both machines at once, ten times over.
    let rounds = 10;
    let barrier = Arc::new(Barrier::new(2));
    let writers: Vec<_> = [(&a, "alpha"), (&b, "beta")]
        .into_iter()
        .map(|(m, side)| {
            let mut p = m.session(&format!("Writer {side}"));
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                for i in 0..rounds {
                    barrier.wait();
                    let args = json!({"title": format!("Shared list {i}"), "namespace": "team",
                                      "content": format!("upsert{i}word from {side}")});
                    tool_ok(&p.tool("memory.store", args));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("a writer");
    }
    a.caught_up();
    b.caught_up();
    let (mut pa, mut pb) = (a.session("Checker"), b.session("Checker"));
    for i in 0..rounds {
        let word = format!("upsert{i}word");
        let (on_a, on_b) = (hits(&mut pa, &word), hits(&mut pb, &word));
        assert_eq!(on_a.len(), 1, "one item for one key on A: {on_a:?}");
        assert_eq!(on_b.len(), 1, "one item for one key on B: {on_b:?}");
        assert_eq!(on_a[0]["snippet"], on_b[0]["snippet"], "A and B agree on which write won");
    }

    // One file ingested by both machines at once is stored once.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("handbook.md");
    let sections: String = (0..6)
        .map(|i| format!("# Part {i}\n\nThe handbook{i}word section explains how the team runs its on-call rota.\n\n"))
        .collect();
    std::fs::write(&file, sections).expect("write the file");
    let before = a.stats()["chunks"].as_u64().expect("chunks");
    let ingests: Vec<_> = [&a, &b]
        .into_iter()
        .map(|m| {
            let mut p = Peer::socket(&m.home.socket());
            let file = file.clone();
            std::thread::spawn(move || p.call("openhuman.memory_ingest", json!({"paths": [file]})))
        })
        .collect();
    let added: Vec<u64> = ingests
        .into_iter()
        .map(|t| t.join().expect("an ingest")["chunks_added"].as_u64().expect("chunks_added"))
        .collect();
    let once = *added.iter().max().expect("two ingests");
    assert!(once > 0, "the file was ingested: {added:?}");
    a.caught_up();
    b.caught_up();
    for m in [&a, &b] {
        let chunks = m.stats()["chunks"].as_u64().expect("chunks");
        assert_eq!(chunks, before + once, "the file is stored once ({added:?} chunks added by the two ingests)");
    }
    wait_hits(&mut pb, "handbook5word", 1);
    assert_eq!(hits(&mut pa, "handbook0word").len(), 1);
}

/// Retries a write on `pa` until PostgreSQL takes it again (the daemon reconnects by itself,
/// without a restart), then waits until `pb` finds it.
fn write_when_back(pa: &mut Peer, pb: &mut Peer, token: &str) {
    wait_until(&format!("a write of {token} once PostgreSQL is back"), || {
        store(pa, &format!("Back again {token}"), token)["isError"] == false
    });
    wait_hits(pb, token, 1);
}

#[test]
fn while_postgres_is_down_reads_answer_and_writes_fail_then_work_again_without_a_restart() {
    let Some((pg, a, b)) = pair("outage") else { return };
    let (mut pa, mut pb) = (a.session("Writer"), b.session("Reader"));
    tool_ok(&store(&mut pa, "Before the outage", "wombat"));
    wait_hits(&mut pb, "wombat", 1);

    pg.stop();
    assert_eq!(hits(&mut pa, "wombat").len(), 1, "search answers from the local index");
    let recalled = pa.tool("memory.recall", json!({"query": "wombat"}));
    assert!(tool_ok(&recalled)["chunks"].to_string().contains("chunk_id"), "recall answers: {recalled}");
    let refused = store(&mut pa, "During the outage", "platypus");
    let text = tool_err_text(&refused);
    assert!(text.contains("PostgreSQL"), "the error says what is wrong: {text}");
    assert!(hits(&mut pa, "platypus").is_empty(), "a refused write is not in memory");
    wait_until("A reports the lost connection", || a.shared()["connected"] == false);

    pg.start_again();
    write_when_back(&mut pa, &mut pb, "echidna");
    assert!(hits(&mut pb, "platypus").is_empty(), "the refused write never reached B");
    assert!(hits(&mut pa, "platypus").is_empty());
    assert_eq!(a.caught_up()["connected"], true);
}

/// How long a write may take to fail when PostgreSQL does not answer at all (its connect and
/// statement timeouts must end it before this).
const UNREACHABLE_WRITE_BOUND: Duration = Duration::from_secs(60);

#[test]
fn when_postgres_does_not_answer_reads_still_do_and_a_write_fails_in_bounded_time() {
    let Some((pg, a, b)) = pair("silent") else { return };
    let (mut pa, mut pb) = (a.session("Writer"), b.session("Reader"));
    tool_ok(&store(&mut pa, "Before the silence", "narwhal"));
    wait_hits(&mut pb, "narwhal", 1);

    // Connections stay open but nothing answers, as when the network drops packets.
    pg.freeze();
    assert_eq!(hits(&mut pa, "narwhal").len(), 1, "search does not wait for PostgreSQL");
    let id = pa.start(
        "tools/call",
        json!({"name": "memory.store", "arguments": {"title": "In the silence", "content": "beluga"}}),
    );
    let reply = pa.lines.next_within(UNREACHABLE_WRITE_BOUND).unwrap_or_else(|e| panic!("the write hangs: {e}"));
    let reply: Value = serde_json::from_str(&reply.expect("a reply")).expect("JSON");
    assert_eq!(reply["id"], id, "{reply}");
    let text = tool_err_text(&reply["result"]);
    assert!(text.contains("PostgreSQL"), "the error says what is wrong: {text}");
    assert!(hits(&mut pa, "beluga").is_empty(), "a failed write is not in memory");

    pg.thaw();
    write_when_back(&mut pa, &mut pb, "orca");
}

/// Crashes per kill -9 test: three, times `OPENHUMAN_RELIABILITY_SCALE` (as for the reliability
/// suite) for a longer run.
fn crash_rounds() -> usize {
    let scale = std::env::var("OPENHUMAN_RELIABILITY_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    3 * scale.max(1)
}

/// What a writer thread does with a refused write: its token and the tool's reply.
type OnRefusal = Arc<dyn Fn(String, &Value) + Send + Sync>;

/// `threads` threads writing to `m` until `stop`, tokens named by `prefix`, the round and the
/// machine; each acknowledged token is pushed to `acked`, each refused one handed to `refused`
/// with the tool's reply.
fn writer_threads(
    m: &Machine,
    threads: usize,
    prefix: &str,
    round: usize,
    stop: &Arc<AtomicBool>,
    acked: &Arc<Mutex<Vec<String>>>,
    refused: OnRefusal,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|w| {
            let mut p = m.session(&format!("writer{w}"));
            let (stop, acked, refused) = (stop.clone(), acked.clone(), refused.clone());
            let token_of = {
                let head = format!("{prefix}{round}{}x{w}x", m.name);
                move |i: usize| format!("{head}{i}")
            };
            std::thread::spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let token = token_of(i);
                    let reply = store(&mut p, &token, &token);
                    if reply["isError"] == false {
                        acked.lock().unwrap().push(token);
                    } else {
                        refused(token, &reply);
                    }
                }
            })
        })
        .collect()
}

/// Three writers on `m` (see [`writer_threads`]) counting refusals in `refused`.
fn writers(
    m: &Machine,
    round: usize,
    stop: &Arc<AtomicBool>,
    acked: &Arc<Mutex<Vec<String>>>,
    refused: &Arc<AtomicUsize>,
) -> Vec<std::thread::JoinHandle<()>> {
    let refused = refused.clone();
    writer_threads(
        m,
        3,
        "pgkill",
        round,
        stop,
        acked,
        Arc::new(move |_, _| {
            refused.fetch_add(1, Ordering::Relaxed);
        }),
    )
}

/// Every acknowledged token is found exactly once on each machine and has its audit row.
fn assert_all_present(machines: &[&Machine], acked: &[String]) {
    assert!(!acked.is_empty(), "the test must see acknowledged writes");
    for m in machines {
        m.caught_up();
        let mut p = m.session("checker");
        for token in acked {
            assert_eq!(hits(&mut p, token).len(), 1, "acknowledged, then lost on {}: {token}", m.name);
        }
    }
    let audited: HashSet<String> = machines[0]
        .audit(&["--tool", "memory.store"])
        .into_iter()
        .filter(|r| r["success"] == true)
        .filter_map(|r| r["args_summary"]["title"].as_str().map(str::to_string))
        .collect();
    let unaudited: Vec<&String> = acked.iter().filter(|t| !audited.contains(*t)).collect();
    assert!(unaudited.is_empty(), "acknowledged writes without an audit row: {unaudited:?}");
}

#[test]
fn kill_nine_of_postgres_during_writes_from_two_machines_loses_no_acknowledged_write() {
    let Some((pg, a, b)) = pair("crash") else { return };
    let acked = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(AtomicUsize::new(0));
    for round in 0..crash_rounds() {
        let stop = Arc::new(AtomicBool::new(false));
        // Both machines write at once, through the crash.
        let mut threads = writers(&a, round, &stop, &acked, &refused);
        threads.extend(writers(&b, round, &stop, &acked, &refused));
        let before = acked.lock().unwrap().len();
        wait_until("writes acknowledged", || acked.lock().unwrap().len() >= before + 10);
        pg.kill9();
        let refused_before = refused.load(Ordering::Relaxed);
        wait_until("writes refused while the server is down", || refused.load(Ordering::Relaxed) > refused_before);
        pg.start_again();
        let after = acked.lock().unwrap().len();
        wait_until("writes acknowledged again", || acked.lock().unwrap().len() >= after + 10);
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().expect("a writer");
        }
    }
    let acked = acked.lock().unwrap().clone();
    assert_all_present(&[&a, &b], &acked);
    eprintln!(
        "postgres kill -9: {} crashes, {} acknowledged writes all present on both machines, {} refused while down",
        crash_rounds(),
        acked.len(),
        refused.load(Ordering::Relaxed)
    );
}

/// Two writers on `m` (see [`writer_threads`]) keeping each refused token with the error's text.
fn writers_noting_refusals(
    m: &Machine,
    round: usize,
    stop: &Arc<AtomicBool>,
    acked: &Arc<Mutex<Vec<String>>>,
    refused: &Arc<Mutex<Vec<(String, String)>>>,
) -> Vec<std::thread::JoinHandle<()>> {
    let refused = refused.clone();
    writer_threads(
        m,
        2,
        "pgrestart",
        round,
        stop,
        acked,
        Arc::new(move |token, reply| {
            refused.lock().unwrap().push((token, tool_err_text(reply)));
        }),
    )
}

#[test]
fn restarts_of_postgres_during_writes_from_two_machines_lose_nothing_and_store_nothing_refused() {
    let Some((pg, a, b)) = pair("restarts") else { return };
    let acked = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(Mutex::new(Vec::new()));
    let mut reader = a.session("Reader");
    for round in 0..crash_rounds() {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = writers_noting_refusals(&a, round, &stop, &acked, &refused);
        threads.extend(writers_noting_refusals(&b, round, &stop, &acked, &refused));
        let before = acked.lock().unwrap().len();
        wait_until("writes acknowledged", || acked.lock().unwrap().len() >= before + 10);
        // A clean restart in two steps (as `pg_ctl restart -m fast`), writes going on throughout.
        pg.stop();
        let refused_before = refused.lock().unwrap().len();
        wait_until("writes refused while the server is down", || refused.lock().unwrap().len() > refused_before);
        let first = acked.lock().unwrap()[0].clone();
        assert_eq!(hits(&mut reader, &first).len(), 1, "reads answer from the local copy while PostgreSQL is down");
        pg.start_again();
        let after = acked.lock().unwrap().len();
        wait_until("writes acknowledged again", || acked.lock().unwrap().len() >= after + 10);
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().expect("a writer");
        }
    }
    let acked = acked.lock().unwrap().clone();
    let refused = refused.lock().unwrap().clone();
    assert_all_present(&[&a, &b], &acked);
    // A refusal names PostgreSQL and says what to do; what it calls not saved is nowhere.
    let unsure = refused.iter().filter(|(_, text)| text.contains("may or may not")).count();
    for m in [&a, &b] {
        let mut p = m.session("checker");
        for (token, text) in &refused {
            assert!(text.contains("PostgreSQL"), "the error names the server: {text}");
            if text.contains("may or may not") {
                assert!(text.contains("search memory for it"), "says what to do: {text}");
                assert!(!text.contains("internal error"), "{text}");
                continue;
            }
            assert!(
                text.contains("nothing was saved")
                    && text.contains("once the server is back")
                    && !text.contains("internal error"),
                "the error says what happened and what to do: {text}"
            );
            assert!(hits(&mut p, token).is_empty(), "refused as not saved, yet stored on {}: {token}", m.name);
        }
    }
    eprintln!(
        "postgres restarts: {} rounds, {} acknowledged writes all present on both machines, {} refused and absent, \
         {} refused with an unknown outcome",
        crash_rounds(),
        acked.len(),
        refused.len() - unsure,
        unsure
    );
}

#[test]
fn kill_nine_of_a_daemon_during_writes_loses_no_acknowledged_write() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("daemoncrash");
    let mut a = Machine::new(&url, "a", UNLIMITED);
    let b = Machine::new(&url, "b", UNLIMITED).started();
    let mut acked = Vec::new();
    for round in 0..crash_rounds() {
        a.start();
        let mut p = a.session("crash-test");
        // Pipeline a burst, read some replies, then kill the daemon mid-stream.
        let sent: Vec<(Value, String)> = (0..60)
            .map(|i| {
                let token = format!("dkill{round}x{i}");
                let args = json!({"title": token, "content": format!("{token} written under fire")});
                (p.start("tools/call", json!({"name": "memory.store", "arguments": args})), token)
            })
            .collect();
        let mut note = |line: &str| {
            let v: Value = serde_json::from_str(line).expect("a JSON reply");
            if v["result"]["isError"] == false
                && let Some((_, token)) = sent.iter().find(|(id, _)| *id == v["id"])
            {
                acked.push(token.clone());
            }
        };
        for _ in 0..15 {
            note(&p.lines.next().expect("a reply"));
        }
        let mut d = a.daemon.take().expect("running");
        kill(d.pid(), libc::SIGKILL);
        wait_exit(&mut d.child, WAIT);
        // Whatever else was answered before the kill counts too.
        while let Some(line) = p.lines.next() {
            note(&line);
        }
    }
    a.start();
    assert_all_present(&[&a, &b], &acked);
}

#[test]
fn migrate_store_moves_an_embedded_store_to_postgres_and_back_with_matching_counts() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("migrate");
    // An embedded home with documents, an ingested folder and audit rows.
    let embedded = Home::new();
    embedded.write_config(&format!("[memory.postgres]\nmachine = \"old-laptop\"\n\n{UNLIMITED}"));
    let notes = tempfile::tempdir().expect("tempdir");
    std::fs::write(notes.path().join("garden.md"), "# Garden\n\nThe quince tree needs pruning in February.\n")
        .expect("write");
    std::fs::write(notes.path().join("kitchen.md"), "# Kitchen\n\nDescale the kettle every month.\n").expect("write");
    let d = Daemon::start(&embedded);
    let mut p = Peer::socket(&embedded.socket());
    p.initialize("Filler");
    for i in 0..10 {
        tool_ok(&store(&mut p, &format!("Migrated note {i}"), &format!("migrated{i}word")));
    }
    p.call("openhuman.memory_ingest", json!({"paths": [notes.path()]}));
    let source = p.call("openhuman.memory_stats", json!({}));
    drop(p);
    d.stop().unwrap_or_else(|e| panic!("{e}"));

    let migrate = |home: &Home, to: &str| {
        let out = home.daemon_cmd().env(URL_ENV, &url).args(["migrate-store", "--to", to]).output().expect("run");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "migrate-store --to {to} failed ({}): {stdout}{stderr}", out.status);
        assert!(stdout.contains("chunks"), "per-table counts are printed: {stdout}");
    };
    migrate(&embedded, "postgres");

    // A machine in postgres mode finds all of it.
    let shared = Machine::new(&url, "desk", UNLIMITED).started();
    shared.caught_up();
    let mut p = shared.session("Reader");
    for word in ["migrated0word", "migrated9word", "quince", "kettle"] {
        assert_eq!(hits(&mut p, word).len(), 1, "{word} after migrate-store --to postgres");
    }
    let stats = shared.stats();
    assert_eq!(stats["chunks"], source["chunks"], "{stats}\n{source}");
    let stores = shared.audit(&["--tool", "memory.store"]);
    assert_eq!(stores.len(), 10, "the audit log moved too: {stores:?}");
    drop(p);

    // And back: a fresh home rewritten from PostgreSQL, then served embedded.
    let back = Machine::new(&url, "back", UNLIMITED);
    migrate(&back.home, "embedded");
    back.home.write_config(UNLIMITED);
    let _d = Daemon::start(&back.home);
    let mut p = Peer::socket(&back.home.socket());
    p.initialize("Reader");
    for word in ["migrated0word", "migrated9word", "quince", "kettle"] {
        assert_eq!(hits(&mut p, word).len(), 1, "{word} after migrate-store --to embedded");
    }
    assert_eq!(p.call("openhuman.memory_stats", json!({}))["chunks"], source["chunks"]);
}

#[test]
fn the_rate_limit_and_the_audit_log_are_shared_and_rows_name_machine_and_client() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_db("policy");
    let limit = "[autonomy]\nmax_actions_per_hour = 4\n";
    let a = Machine::new(&url, "laptop", limit).started();
    let b = Machine::new(&url, "desktop", limit).started();
    let (mut pa, mut pb) = (a.session("Claude Desktop"), b.session("Cursor"));
    for i in 0..2 {
        tool_ok(&pa.tool("memory.learn", json!({"text": format!("laptop fact {i}")})));
        tool_ok(&pb.tool("memory.learn", json!({"text": format!("desktop fact {i}")})));
    }
    // Four writes in all: the fifth is refused on either machine.
    for (p, who) in [(&mut pa, "laptop"), (&mut pb, "desktop")] {
        let denied = p.request("tools/call", json!({"name": "memory.learn", "arguments": {"text": "one too many"}}));
        let (code, message) = rpc_error(&denied);
        assert_eq!(code, -32602, "{who}: {denied}");
        assert!(message.starts_with("[policy-blocked] rate limit"), "{who}: {denied}");
    }
    // Either machine's audit log holds the rows of both.
    for m in [&a, &b] {
        let mut rows = Vec::new();
        wait_until("six audit rows", || {
            rows = m.audit(&["--tool", "memory.learn"]);
            rows.len() == 6
        });
        for (machine, source, client) in
            [("laptop", "mcp:claude-desktop", "Claude Desktop"), ("desktop", "mcp:cursor", "Cursor")]
        {
            let mine: Vec<&Value> = rows.iter().filter(|r| r["machine"] == machine).collect();
            assert_eq!(mine.len(), 3, "{machine}: {rows:#?}");
            assert!(mine.iter().all(|r| r["source"] == source && r["client_info"]["name"] == client), "{mine:#?}");
            assert_eq!(mine.iter().filter(|r| r["success"] == true).count(), 2, "{mine:#?}");
        }
    }
}

/// The same behaviour on both engines: a memory filled through the tools and `ingest` on one
/// machine answers every read tool the same on a second machine that only followed it, and an
/// export of that copy imported into an embedded home answers the same again.
#[test]
fn every_read_tool_answers_the_same_on_a_copy_and_on_the_embedded_engine() {
    use crate::transfer::{answers, assert_same, counts, embedded, populate};
    let Some((_pg, a, b)) = pair("behaviour") else { return };
    let mut pa = a.session("Behaviour");
    populate(&a.home, &mut pa);
    embedded(&mut pa);
    let on_a = answers(&mut pa);
    b.caught_up();
    let mut pb = b.session("Behaviour");
    embedded(&mut pb);
    assert_eq!(counts(&mut pa), counts(&mut pb), "the copy holds what the writer holds");
    assert_same(&on_a, &answers(&mut pb));

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("export");
    let (code, _, err) = b.run(&["export", out.to_str().unwrap()]);
    assert_eq!(code, 0, "export from the copy: {err}");
    let plain = Home::new();
    let (code, _, err) = {
        let o = plain.daemon_cmd().args(["import", out.to_str().unwrap()]).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert_eq!(code, 0, "import into an embedded home: {err}");
    let _d = Daemon::start(&plain);
    let mut pe = Peer::socket(&plain.socket());
    pe.initialize("Behaviour");
    embedded(&mut pe);
    assert_eq!(counts(&mut pa), counts(&mut pe), "the embedded engine holds the same");
    assert_same(&on_a, &answers(&mut pe));
}
