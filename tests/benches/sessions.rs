//! The agent-sessions benchmark: how fast the daemon catches up on a large body of Claude Code
//! session logs, what it costs while it watches 1,000 of them and nothing changes, and how long an
//! appended turn takes to become searchable. Run it with
//!
//! ```text
//! cargo build --release && cargo bench -p openhuman-tests --bench sessions
//! ```
//!
//! (`OPENHUMAN_BENCH_BIN_DIR=target/debug` measures the debug binaries instead;
//! `OPENHUMAN_BENCH_SESSION_MB` sets the size of the generated logs, 1024 by default.) It builds
//! nothing itself. In a fresh temporary home it generates 1,000 session logs in Claude Code's
//! on-disk format across 40 project folders — each turn a user prompt, an assistant message with a
//! thinking block, text and tool calls (Edit, Bash, Read), a tool result of a few KiB of output, and
//! now and then the bookkeeping records (`file-history-snapshot`, `summary`) — with a seeded
//! generator, so every run writes the same bytes. It configures them as one `claude-code` source
//! and starts the daemon, which reads them all: the catch-up is timed from start until `status`
//! shows every file read, and reported as MB/s of log and turns/s. Once the work that follows has
//! settled it samples the daemon's user + system CPU from /proc/<pid>/stat over 30 idle seconds.
//! Then it appends 60 turns, one at a time, to logs picked round the set, and polls
//! `memory.search` over the socket until each new word is found: append → searchable latency with
//! the default debounce (300 ms), p50/p90/p99/max. The baseline, measured in the same run before
//! the daemon starts, is the floor any reader pays: every log read and each line parsed as JSON
//! by this process on one thread. Nothing here asserts on time.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark's report is its output")]

#[path = "spine/support.rs"]
#[allow(dead_code)]
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Daemon, Result, Session, Stats, cpu_time, git_state, loadavg, machine, ms, utc_now};

const FILES: usize = 1_000;
const PROJECTS: usize = 40;
const IDLE: Duration = Duration::from_secs(30);
const SETTLE: Duration = Duration::from_secs(300);
const APPENDS: usize = 60;
const WAIT: Duration = Duration::from_secs(3600);

fn bin_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os("OPENHUMAN_BENCH_BIN_DIR")
        .map(|d| {
            let d = PathBuf::from(d);
            if d.is_absolute() { d } else { root.join(d) }
        })
        .unwrap_or_else(|| root.join("target/release"))
}

/// A small seeded generator (xorshift), so every run writes the same logs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "parser",
    "config",
    "index",
    "token",
    "cache",
    "request",
    "handler",
    "schema",
    "migration",
    "socket",
    "daemon",
    "watcher",
    "chunk",
    "vector",
    "search",
    "error",
    "retry",
    "timeout",
    "buffer",
    "stream",
    "test",
    "build",
    "release",
    "branch",
    "commit",
    "review",
    "refactor",
    "module",
    "crate",
    "function",
    "struct",
    "field",
    "value",
    "option",
    "result",
    "panic",
    "lock",
    "thread",
    "queue",
    "batch",
    "the",
    "a",
    "we",
    "should",
    "now",
    "then",
    "because",
    "so",
    "it",
    "this",
    "that",
    "fails",
    "passes",
    "rename",
    "extract",
    "inline",
    "document",
    "explain",
    "why",
    "how",
    "where",
    "which",
    "fix",
    "add",
];

fn sentence(r: &mut Rng, words: usize) -> String {
    let mut s: Vec<String> = (0..words).map(|_| WORDS[r.below(WORDS.len())].to_string()).collect();
    // Rarer, code-like tokens, as real sessions name identifiers.
    s.push(format!("fn_{}_{}", WORDS[r.below(40)], r.below(500)));
    s.join(" ")
}

fn line(v: Value) -> String {
    v.to_string() + "\n"
}

/// One turn of a session: user prompt, assistant (thinking, text, tool calls), tool result.
fn turn(r: &mut Rng, n: &mut usize, session: &str, cwd: &str, out: &mut String) {
    let ts = format!("2026-11-{:02}T{:02}:{:02}:{:02}.000Z", 1 + r.below(28), r.below(24), r.below(60), r.below(60));
    let mut base = |kind: &str, content: Value| {
        *n += 1;
        json!({"parentUuid": format!("{session}-{}", *n - 1), "isSidechain": false, "userType": "external",
               "cwd": cwd, "sessionId": session, "version": "2.1.1", "gitBranch": "main", "type": kind,
               "uuid": format!("{session}-{n}"), "timestamp": ts, "message": {"role": kind, "content": content}})
    };
    let k = 12 + r.below(30);
    let prompt = sentence(r, k);
    out.push_str(&line(base("user", json!(prompt))));
    let file = format!("{cwd}/src/{}.rs", WORDS[r.below(40)]);
    let k = 150 + r.below(100);
    let thinking = sentence(r, k);
    let k = 40 + r.below(80);
    let text = sentence(r, k);
    out.push_str(&line(base(
        "assistant",
        json!([{"type": "thinking", "thinking": thinking, "signature": "sig"},
               {"type": "text", "text": text},
               {"type": "tool_use", "id": "t", "name": "Edit", "input": {"file_path": file, "old_string": sentence(r, 8), "new_string": sentence(r, 8)}},
               {"type": "tool_use", "id": "u", "name": "Bash", "input": {"command": format!("cargo test -p {}", WORDS[r.below(40)])}}]),
    )));
    let k = 30 + r.below(40);
    let output: String = (0..k).map(|i| format!("test {} ... ok ({i})\n", sentence(r, 5))).collect();
    out.push_str(&line(base("user", json!([{"type": "tool_result", "tool_use_id": "u", "content": output}]))));
    if r.below(10) == 0 {
        out.push_str(&line(json!({"type": "file-history-snapshot", "messageId": format!("{session}-{n}"), "snapshot": {"trackedFileBackups": {}}})));
    }
}

fn generate(root: &Path, projects: &Path, total_bytes: u64) -> Result<(u64, usize)> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let per_file = total_bytes / FILES as u64;
    let (mut written, mut turns) = (0u64, 0usize);
    for f in 0..FILES {
        let p = f % PROJECTS;
        let cwd = projects.join(format!("project-{p:02}"));
        let cwd_s = cwd.to_string_lossy().into_owned();
        let encoded: String = cwd_s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let dir = root.join(encoded);
        std::fs::create_dir_all(&dir)?;
        let session = format!("s{f:04}");
        let mut text = String::new();
        let mut n = 0;
        while (text.len() as u64) < per_file {
            turn(&mut r, &mut n, &session, &cwd_s, &mut text);
            turns += 1;
        }
        written += text.len() as u64;
        std::fs::write(dir.join(format!("{session}.jsonl")), text)?;
    }
    for p in 0..PROJECTS {
        std::fs::create_dir_all(projects.join(format!("project-{p:02}/.git")))?;
    }
    Ok((written, turns))
}

fn request(id: usize, method: &str, params: Value) -> String {
    format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn call(s: &mut Session, id: &mut usize, method: &str, params: Value) -> Result<Value> {
    *id += 1;
    let line = s.round_trip(&request(*id, method, params))?.to_string();
    let v: Value = serde_json::from_str(&line)?;
    if v.get("error").is_some() {
        return Err(format!("{method} failed: {line}").into());
    }
    Ok(v["result"].clone())
}

fn found(s: &mut Session, id: &mut usize, word: &str) -> Result<bool> {
    let r = call(s, id, "tools/call", json!({"name": "memory.search", "arguments": {"query": word, "k": 1}}))?;
    let hits = r["structuredContent"]["hits"].as_array().cloned().unwrap_or_default();
    Ok(hits.first().is_some_and(|h| h.to_string().contains(word)))
}

fn until(what: &str, mut f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    let start = Instant::now();
    loop {
        if f()? {
            return Ok(start.elapsed());
        }
        if start.elapsed() > WAIT {
            return Err(format!("timed out waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn main() -> Result<()> {
    let bins = bin_dir();
    let daemon_bin = bins.join("openhumand-mcp");
    if !daemon_bin.is_file() {
        return Err(format!("{} is missing: build first (see the header of this bench)", daemon_bin.display()).into());
    }
    let mb: u64 = std::env::var("OPENHUMAN_BENCH_SESSION_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(1024);
    let home = tempfile::Builder::new().prefix("oh-bench-").tempdir_in(std::env::temp_dir())?;
    let user = tempfile::Builder::new().prefix("oh-sessions-").tempdir_in(std::env::temp_dir())?;
    let user_dir = user.path().canonicalize()?;
    let root = user_dir.join(".claude/projects");
    let gen_start = Instant::now();
    let (bytes, turns) = generate(&root, &user_dir.join("code"), mb * 1024 * 1024)?;
    println!("agent sessions benchmark, {}", utc_now());
    println!("binaries: {} ; commit {} ; {}", bins.display(), git_state(), machine());
    println!(
        "generated {FILES} Claude Code logs in {PROJECTS} projects: {:.1} MiB, {turns} turns ({} records), in {:.1} s",
        bytes as f64 / 1048576.0,
        turns * 3,
        gen_start.elapsed().as_secs_f64()
    );
    // The floor any reader pays, measured in this process: every log read and each line parsed
    // as JSON (one thread).
    let floor_start = Instant::now();
    let mut lines = 0usize;
    for d in std::fs::read_dir(&root)?.flatten() {
        for f in std::fs::read_dir(d.path())?.flatten() {
            let text = std::fs::read(f.path())?;
            for l in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let _: Value = serde_json::from_slice(l)?;
                lines += 1;
            }
        }
    }
    let floor = floor_start.elapsed();
    println!(
        "baseline, same run: read every log and parse its {lines} lines as JSON in this process: {:.1} s = {:.1} MiB/s",
        floor.as_secs_f64(),
        bytes as f64 / 1048576.0 / floor.as_secs_f64()
    );
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[autonomy]\nmax_actions_per_hour = 4000000000\n[[memory.sources]]\npath = {:?}\nkind = \"claude-code\"\n",
            root.to_string_lossy()
        ),
    )?;
    println!("load average at start: {}", loadavg());

    let started = Instant::now();
    let daemon = Daemon::builder(home.path()).bin(&daemon_bin).wait(Duration::from_secs(60)).try_start()?;
    let pid = daemon.pid();
    let mut s = Session::socket(&daemon.socket())?;
    s.handshake()?;
    let mut id = 0;
    until("the catch-up of every log", || {
        let st = call(&mut s, &mut id, "openhuman.daemon_status", json!({}))?;
        let src = &st["watch"]["sources"][0];
        Ok(src["sessions"]["files"].as_u64() == Some(FILES as u64) && src["state"] == "watching")
    })?;
    let caught_up = started.elapsed();
    let st = call(&mut s, &mut id, "openhuman.daemon_status", json!({}))?;
    let kept = st["watch"]["sources"][0]["sessions"]["turns"].as_u64().unwrap_or(0);
    println!(
        "first catch-up (daemon start → every log read and searchable by keyword): {:.1} s = {:.1} MiB/s of log, {:.0} \
         records kept/s ({kept} kept)",
        caught_up.as_secs_f64(),
        bytes as f64 / 1048576.0 / caught_up.as_secs_f64(),
        kept as f64 / caught_up.as_secs_f64()
    );
    until("the background embedding", || {
        let st = call(&mut s, &mut id, "openhuman.daemon_status", json!({}))?;
        let fast = &st["vectors"]["fast"];
        Ok(fast["covered"].is_u64() && fast["covered"] == fast["total"])
    })?;
    println!("with every vector: {:.1} s", started.elapsed().as_secs_f64());

    let settle_from = cpu_time(pid).ok_or("no /proc/<pid>/stat (Linux only)")?;
    let settle_start = Instant::now();
    loop {
        let a = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
        std::thread::sleep(Duration::from_secs(2));
        let b = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
        if b.saturating_sub(a) <= Duration::from_millis(10) || settle_start.elapsed() > SETTLE {
            break;
        }
    }
    let settled = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
    println!(
        "after the catch-up: {} of CPU in {:.0} s until a 2 s window used at most one tick",
        ms(settled.saturating_sub(settle_from)),
        settle_start.elapsed().as_secs_f64()
    );
    let before = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
    std::thread::sleep(IDLE);
    let after = cpu_time(pid).ok_or("no /proc/<pid>/stat")?;
    let idle = after.saturating_sub(before);
    println!(
        "idle CPU while watching {FILES} session logs: {} over {} s = {:.3}% of one core (utime+stime, 10 ms ticks)",
        ms(idle),
        IDLE.as_secs(),
        idle.as_secs_f64() / IDLE.as_secs_f64() * 100.0
    );

    let mut logs: Vec<PathBuf> = Vec::new();
    for d in std::fs::read_dir(&root)?.flatten() {
        for f in std::fs::read_dir(d.path())?.flatten() {
            logs.push(f.path());
        }
    }
    logs.sort();
    let mut samples = Vec::with_capacity(APPENDS);
    for n in 0..APPENDS {
        let word = format!("zqappend{n}x");
        let path = &logs[(n * 37) % logs.len()];
        let session = path.file_stem().unwrap().to_string_lossy().into_owned();
        let record = json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/bench",
            "sessionId": session, "version": "2.1.1", "gitBranch": "main", "type": "user",
            "uuid": format!("append-{n}"), "timestamp": "2026-12-01T12:00:00.000Z",
            "message": {"role": "user", "content": format!("please look at {word} next")}});
        let t0 = Instant::now();
        std::fs::OpenOptions::new().append(true).open(path)?.write_all(line(record).as_bytes())?;
        until(&format!("`{word}` to be searchable"), || found(&mut s, &mut id, &word))?;
        samples.push(t0.elapsed());
    }
    let st = Stats::of(samples);
    println!(
        "appended turn → searchable, default debounce (300 ms), {APPENDS} appends to {APPENDS} logs: p50 {} p90 {} p99 {} \
         max {}",
        ms(st.pct(50.0)),
        ms(st.pct(90.0)),
        ms(st.pct(99.0)),
        ms(st.pct(100.0))
    );
    println!("load average at end: {}", loadavg());
    drop(s);
    daemon.stop()?;
    Ok(())
}
