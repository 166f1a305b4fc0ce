//! Messages over the line limit and the end of the shim's stdin. A line over
//! `[mcp].max_line_bytes` is answered with its own id wherever the id stands in it (null when it
//! has none that can be read), with its size, the limit and what to do; the session goes on. The shim exits soon after its
//! stdin closes in every state: mid-line, after a discarded line, with requests in flight (the
//! daemon frozen), and while the daemon restarts.

use std::time::Duration;

use openhuman_tests::{ChildPeer, Daemon, Home, Peer, freeze, kill, wait_exit};
use serde_json::{Value, json};

const LIMIT: usize = 4096;
/// The shim waits 0.7 s for answers after EOF; this only tells an exit from a hang (before the
/// fix it waited for ever).
const EXIT_BOUND: Duration = Duration::from_secs(10);

fn small_limit() -> Home {
    let home = Home::new();
    home.write_config(&format!("[mcp]\nmax_line_bytes = {LIMIT}\n"));
    home
}

/// Where a test puts the id of a large request.
#[derive(Clone, Copy)]
enum At {
    First,
    /// After `params`, as the Python SDK 1.x writes it.
    Last,
    /// In a batch of one, which is not answered with an id.
    Batch,
}

/// A `memory.store` of `size` bytes of content with `id` where `at` says.
fn big_store(id: &str, size: usize, at: At) -> Vec<u8> {
    let params = format!(r#"{{"name":"memory.store","arguments":{{"title":"big","content":"{}"}}}}"#, "x".repeat(size));
    let line = match at {
        At::First => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#),
        At::Last => format!(r#"{{"method":"tools/call","params":{params},"jsonrpc":"2.0","id":{id}}}"#),
        At::Batch => format!(r#"[{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}]"#),
    };
    format!("{line}\n").into_bytes()
}

fn assert_too_large(reply: &Value, bytes: usize) {
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["error"]["data"], json!({ "max_line_bytes": LIMIT, "message_bytes": bytes - 1 }), "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&LIMIT.to_string()) && message.contains("openhumand-mcp ingest"), "{message}");
}

#[test]
fn an_over_long_line_is_answered_with_its_id_wherever_it_stands() {
    let home = small_limit();
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    p.initialize("oversized");
    for (id, at) in [(json!(41), At::First), (json!("big-one"), At::First), (json!(42), At::Last)] {
        let line = big_store(&id.to_string(), 1_000_000, at);
        p.send_raw(&line);
        assert_too_large(&p.wait(&id), line.len());
    }
    // A number is sent back as written, however large.
    p.send_raw(&big_store("18446744073709551616123", 10_000, At::Last));
    let raw = p.lines.next().expect("an answer");
    assert!(
        raw.starts_with(r#"{"jsonrpc":"2.0","id":18446744073709551616123,"error""#),
        "{}",
        &raw[..raw.len().min(200)]
    );
    // A batch has no one id to answer: null.
    let line = big_store("43", 100_000, At::Batch);
    p.send_raw(&line);
    let reply = p.lines.next_json();
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_too_large(&reply, line.len());
    // The session goes on.
    assert_eq!(p.call("ping", json!({})), json!({}));
}

/// Closes the shim's stdin and waits (bounded) for it to exit; returns its status and the
/// lines it wrote after.
fn close_and_exit(mut shim: ChildPeer) -> (std::process::ExitStatus, Vec<Value>) {
    shim.peer.close_write();
    let status = wait_exit(&mut shim.child, EXIT_BOUND);
    let rest = shim.peer.lines.rest().iter().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    (status, rest)
}

#[test]
fn the_shim_exits_after_eof_mid_line() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    shim.peer.initialize("mid-line");
    shim.peer.send_raw(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"memory.st"#);
    let (status, rest) = close_and_exit(shim);
    assert!(status.success(), "{status}");
    // The torn line is a parse error the daemon answers, or left unanswered; nothing else.
    assert!(rest.len() <= 1 && rest.iter().all(|r| r.get("error").is_some()), "{rest:?}");
}

#[test]
fn through_the_shim_an_over_long_request_gets_its_error_and_eof_still_ends_the_shim() {
    let home = small_limit();
    let _d = Daemon::start(&home);
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    shim.peer.initialize("over-long");
    for (id, at) in [(7, At::First), (8, At::Last)] {
        let line = big_store(&id.to_string(), 200_000, at);
        shim.peer.send_raw(&line);
        assert_too_large(&shim.peer.wait(&json!(id)), line.len());
    }
    // A batch: the daemon answers null and the shim still counts 9 as in flight.
    shim.peer.send_raw(&big_store("9", 200_000, At::Batch));
    assert_eq!(shim.peer.lines.next_json()["id"], Value::Null);
    let (status, rest) = close_and_exit(shim);
    assert!(status.success(), "{status}");
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!((&rest[0]["id"], &rest[0]["error"]["code"]), (&json!(9), &json!(-32603)), "{rest:?}");
}

#[test]
fn the_shim_exits_after_eof_with_a_request_in_flight_on_a_frozen_daemon() {
    let home = Home::new();
    let d = Daemon::start(&home);
    let mut cmd = home.shim_cmd();
    cmd.arg("-v");
    let mut shim = ChildPeer::spawn(cmd);
    shim.peer.initialize("in-flight");
    freeze(d.pid());
    let id = shim.peer.start("tools/list", json!({}));
    let marker = format!("forwarded request {id} ");
    while !shim.stderr.next().expect("shim stderr ended").contains(&marker) {}
    let (status, rest) = close_and_exit(shim);
    kill(d.pid(), libc::SIGCONT);
    assert!(status.success(), "{status}");
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], id, "{rest:?}");
    assert!(rest[0]["error"]["message"].as_str().unwrap_or_default().contains("stdin closed"), "{rest:?}");
}

#[test]
fn the_shim_exits_after_eof_while_the_daemon_restarts() {
    let home = Home::new();
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    shim.peer.initialize("restart");
    let first = home.daemon_pid().expect("shim autostarted a daemon");
    kill(first, libc::SIGKILL);
    // The shim notices, reconnects and starts a new daemon; EOF comes meanwhile.
    shim.peer.start("tools/list", json!({}));
    // Exiting is what counts here: whether the new daemon answered in time is not.
    let (_status, rest) = close_and_exit(shim);
    assert!(rest.len() <= 1, "{rest:?}");
}
