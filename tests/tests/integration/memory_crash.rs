//! Crash safety of the memory engine (a crash never leaves the database
//! inconsistent): the daemon is killed with SIGKILL in the middle of a 100k-chunk ingest; after
//! a restart the database passes SQLite's integrity check, the indexes hold exactly the
//! committed chunks, every committed file is found whole and no other, and running the same
//! ingest again skips what is in and adds the rest.
//!
//! Input shape: chat exports, one message per chunk (messages three hours apart, so the chat
//! ingester never packs two into one chunk), each carrying a unique token. Short messages keep
//! the debug build's ingest at seconds per ten thousand chunks; many files keep the ingester's
//! transactions (about 2,000 chunks, whole files) small, so the kill lands between many of them.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use openhuman_tests::{Daemon, Home, Peer, kill, wait_exit};
use serde_json::{Value, json};

const FILES: usize = 100;
const PER_FILE: usize = 1_000;
const TOTAL: usize = FILES * PER_FILE;
/// The kill waits until at least this many chunks are committed, so the restart has a real
/// backlog to replay into the indexes.
const KILL_AFTER: i64 = 10_000;
/// Bound on the long phases (ingest, catch-up) of a debug build on two busy cores.
const LONG_WAIT: Duration = Duration::from_secs(150);

fn token(n: usize) -> String {
    format!("crashtok{n}")
}

const WORDS: &[&str] = &[
    "alpha", "river", "stone", "garden", "window", "letter", "market", "summer", "orange", "bridge", "candle",
    "forest", "silver", "meadow", "harbor", "lantern", "pepper", "castle", "violet", "thunder",
];

/// `FILES` chat exports of `PER_FILE` messages; message `n` holds `token(n)`.
fn write_corpus(dir: &Path) {
    let mut n = 0usize;
    for f in 0..FILES {
        let mut text = String::with_capacity(PER_FILE * 140);
        for _ in 0..PER_FILE {
            let words: Vec<&str> = (0..8).map(|j| WORDS[(n * 7 + j * 3) % WORDS.len()]).collect();
            let line = json!({
                "ts": 1_700_000_000 + n as i64 * 3 * 3600,
                "from": format!("user{}", n % 5),
                "text": format!("{} {}", token(n), words.join(" ")),
                "channel": format!("room{f:03}"),
            });
            text.push_str(&line.to_string());
            text.push('\n');
            n += 1;
        }
        std::fs::write(dir.join(format!("room{f:03}.jsonl")), text).unwrap();
    }
}

/// Calls `method` on a fresh socket connection (core methods need no MCP handshake).
fn core(home: &Home, method: &str, params: Value) -> Value {
    Peer::socket(&home.socket()).call(method, params)
}

/// Polls `memory_stats` until `done` holds for it; panics after `limit`.
fn wait_stats(home: &Home, limit: Duration, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let stats = core(home, "openhuman.memory_stats", json!({}));
        if done(&stats) {
            return stats;
        }
        assert!(start.elapsed() < limit, "{what} did not happen within {limit:?}: {stats}");
        // Each poll already waits for the writer lock; this only keeps a fast loop off the CPU.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `openhumand-mcp ingest DIR` (through the running daemon), bounded; returns stdout.
fn ingest_cli(home: &Home, dir: &Path) -> String {
    let mut child = home
        .daemon_cmd()
        .arg("ingest")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_exit(&mut child, LONG_WAIT);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(status.success(), "ingest failed ({status}): {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The search hits whose own text holds `token` (each message is a chunk of its own, three hours
/// after the one before, so the next message of the room holds it as its context too).
fn search_hits(s: &mut Peer, token: &str) -> usize {
    let r = s.tool("memory.search", json!({"query": token, "k": 5}));
    let hits = r["structuredContent"]["hits"].as_array().unwrap();
    hits.iter().filter(|h| h["snippet"].as_str().unwrap_or("").contains(token)).count()
}

fn browse_total(s: &mut Peer) -> u64 {
    s.tool("tree.browse", json!({"k": 1}))["structuredContent"]["total"].as_u64().unwrap()
}

/// Waits for the background embedder, then checks the database and both indexes.
fn assert_consistent(home: &Home, chunks: usize) {
    wait_stats(home, LONG_WAIT, "embedding every chunk", |s| s["vectors"]["missing"] == 0);
    let check = core(home, "openhuman.memory_check", json!({}));
    assert_eq!(check["ok"], true, "{check}");
    assert_eq!(check["integrity_check"], json!(["ok"]), "{check}");
    assert_eq!(check["chunks"], chunks, "{check}");
    assert_eq!(check["fts"]["docs"], chunks, "{check}");
    assert_eq!(check["vectors"]["count"], chunks, "{check}");
}

#[test]
fn sigkill_during_a_100k_chunk_ingest_loses_nothing_committed() {
    let home = Home::new();
    let data = tempfile::tempdir().unwrap();
    write_corpus(data.path());

    let mut daemon = Daemon::start(&home);
    let mut ingest = Peer::socket(&home.socket());
    ingest.start("openhuman.memory_ingest", json!({"paths": [data.path()]}));
    let at_kill = wait_stats(&home, LONG_WAIT, "the first commits", |s| s["chunks"].as_i64() >= Some(KILL_AFTER));
    kill(daemon.pid(), libc::SIGKILL);
    wait_exit(&mut daemon.child, Duration::from_secs(20));
    drop(daemon);
    assert_eq!(ingest.lines.next(), None, "the ingest must have been cut short, not finished");

    let _daemon = Daemon::start(&home);
    let check = core(&home, "openhuman.memory_check", json!({}));
    assert_eq!(check["integrity_check"], json!(["ok"]), "{check}");
    assert_eq!(check["foreign_key_violations"], 0, "{check}");
    // The full-text index is caught up by the time the daemon is ready.
    assert_eq!(check["fts"]["current"], true, "{check}");
    let committed = check["chunks"].as_u64().unwrap() as usize;
    assert!(
        committed >= at_kill["chunks"].as_u64().unwrap() as usize && committed < TOTAL,
        "killed mid-ingest: {committed} of {TOTAL} chunks committed, {} seen before the kill",
        at_kill["chunks"]
    );

    let mut s = Peer::socket(&home.socket());
    s.initialize("crash test");
    assert_eq!(browse_total(&mut s), committed as u64);
    // Files are written whole, in name order: every file up to the last committed one is found
    // by its first and last token, and nothing after it.
    assert_eq!(committed % PER_FILE, 0, "whole files only: {committed}");
    let files_in = committed / PER_FILE;
    for f in 0..FILES {
        let want = usize::from(f < files_in);
        for n in [f * PER_FILE, f * PER_FILE + PER_FILE - 1] {
            assert_eq!(search_hits(&mut s, &token(n)), want, "token {n} of file {f} ({files_in} files committed)");
        }
    }
    // Hybrid recall works on the recovered store too.
    let recall = s.tool("memory.recall", json!({"query": token(0), "k": 3}));
    assert!(!recall["structuredContent"]["chunks"].as_array().unwrap().is_empty(), "{recall}");
    assert_consistent(&home, committed);

    // The same ingest again: what went in is skipped, the rest is added.
    let out = ingest_cli(&home, data.path());
    let summary = format!(
        "ingested {} file(s), {files_in} unchanged, 0 unsupported, 0 failed, 0 deleted file(s) removed; {} chunks \
         added, 0 removed",
        FILES - files_in,
        TOTAL - committed
    );
    assert!(out.contains(&summary), "expected {summary:?} in {out}");
    assert_eq!(browse_total(&mut s), TOTAL as u64);
    for n in [0, committed - 1, committed, TOTAL - 1] {
        assert_eq!(search_hits(&mut s, &token(n)), 1, "token {n}");
    }
    assert_consistent(&home, TOTAL);
}
