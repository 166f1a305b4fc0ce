//! The daemon socket: permissions, stale and live sockets, bad input of every kind (the daemon
//! answers, keeps the session and keeps serving others), protocol errors, and graceful stop.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use openhuman_tests::{Daemon, Home, Peer, WAIT, kill, rpc_error, tool_ok, wait_exit};
use serde_json::{Value, json};

fn line(s: &str) -> Vec<u8> {
    format!("{s}\n").into_bytes()
}

fn initialized(home: &Home) -> Peer {
    let mut p = Peer::socket(&home.socket());
    p.initialize("socket-test");
    p
}

#[test]
fn socket_is_private() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let sock = std::fs::metadata(home.socket()).unwrap().permissions().mode() & 0o777;
    let dir = std::fs::metadata(home.path().join("run")).unwrap().permissions().mode() & 0o777;
    assert_eq!(sock, 0o600, "socket mode {sock:o}");
    assert_eq!(dir, 0o700, "dir mode {dir:o}");
}

/// `--socket DIR/x.sock` leaves an existing DIR's mode alone (a shared 1777 dir stays so) and
/// makes only a directory it creates 0700; the socket is 0600 either way.
#[test]
fn a_socket_dir_it_did_not_create_keeps_its_mode() {
    let home = Home::new();
    let shared = home.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let sock = shared.join("x.sock");
    let d = Daemon::builder(&home).args(["--socket".as_ref(), sock.as_os_str()]).start();
    assert_eq!(std::fs::metadata(&shared).unwrap().permissions().mode() & 0o7777, 0o1777);
    assert_eq!(std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777, 0o600);
    drop(d);
    let fresh = home.path().join("fresh/sub");
    let sock = fresh.join("x.sock");
    let _d = Daemon::builder(&home).args(["--socket".as_ref(), sock.as_os_str()]).start();
    assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn stale_socket_is_replaced_and_live_one_refused() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("run")).unwrap();
    // A socket file nobody listens on: what a crashed daemon leaves behind.
    drop(std::os::unix::net::UnixListener::bind(home.socket()).unwrap());
    assert!(home.socket().exists());
    let _d = Daemon::start(&home);
    Peer::socket(&home.socket()).call("ping", json!({}));
    let out = home.daemon_cmd().arg("serve").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already serving"), "{err}");
    // The live daemon was not displaced.
    Peer::socket(&home.socket()).call("ping", json!({}));
}

#[test]
fn bad_input_gets_clear_errors_and_the_session_goes_on() {
    let home = Home::new();
    home.write_config("[mcp]\nmax_line_bytes = 4096\n");
    let _d = Daemon::start(&home);
    let mut p = initialized(&home);
    let cases: Vec<(Vec<u8>, i64)> = vec![
        (b"{not json\n".to_vec(), -32700),
        (b"\xff\xfe\x00garbage\n".to_vec(), -32700),
        ([b"{\"a\":\"".to_vec(), vec![b'x'; 10_000], b"\"}\n".to_vec()].concat(), -32700),
        // Nested deeper than the parser allows.
        ([vec![b'['; 2000], vec![b']'; 2000], b"\n".to_vec()].concat(), -32700),
        (b"[]\n".to_vec(), -32600),
        (b"42\n".to_vec(), -32600),
        (line(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), -32600),
        (line(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#), -32600),
        (line(r#"{"jsonrpc":"2.0","id":2,"method":7}"#), -32600),
        (line(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":5}"#), -32602),
        (line(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":3}}"#), -32602),
        (line(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}"#), -32602),
        (
            line(
                r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"core.list_tools","arguments":[1]}}"#,
            ),
            -32602,
        ),
        (line(r#"{"jsonrpc":"2.0","id":7,"method":"no/such"}"#), -32601),
        (line(r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"openhuman://nope"}}"#), -32002),
        (line(r#"{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":" "}}"#), -32602),
        (line(r#"{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"cursor":"zzz"}}"#), -32602),
        (line(r#"{"jsonrpc":"2.0","id":11,"method":"logging/setLevel","params":{"level":"loud"}}"#), -32602),
    ];
    for (bytes, code) in cases {
        p.send_raw(&bytes);
        let reply = p.lines.next_json();
        let (got, message) = rpc_error(&reply);
        assert_eq!(got, code, "input {:?} -> {reply}", String::from_utf8_lossy(&bytes[..bytes.len().min(80)]));
        assert!(!message.is_empty(), "{reply}");
        // The session is still usable after every bad message.
        assert_eq!(p.call("ping", json!({})), json!({}));
    }
}

#[test]
fn requests_before_initialize_are_refused_but_ping_and_discover_work() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    let r = p.request("tools/list", json!({}));
    let (code, message) = rpc_error(&r);
    assert_eq!(code, -32600, "{r}");
    assert!(message.contains("not initialized"), "{r}");
    assert_eq!(p.call("ping", json!({})), json!({}));
    let d = p.call("server/discover", json!({}));
    assert_eq!(d["supportedVersions"], json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]));
    assert_eq!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "openhuman-core");
    // Then fall back to the handshake on the same connection.
    let init = p.call("initialize", json!({"protocolVersion": "2099-01-01", "capabilities": {}}));
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(p.call("tools/list", json!({}))["tools"].is_array());
}

#[test]
fn stateless_2026_requests_need_no_handshake() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "Modern App", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": {}});
    let tools = p.call("tools/list", json!({"_meta": meta}));
    assert_eq!(tools["resultType"], "complete");
    assert_eq!(tools["cacheScope"], "private");
    assert!(tools["ttlMs"].as_u64().unwrap() > 0);
    let call = p.call("tools/call", json!({"_meta": meta, "name": "core.list_tools", "arguments": {}}));
    assert_eq!(call["resultType"], "complete");
    tool_ok(&call);
    let res = p.request("resources/read", json!({"_meta": meta, "uri": "openhuman://nope"}));
    assert_eq!(rpc_error(&res).0, -32602, "2026-07-28 reports unknown resources as invalid params: {res}");
    let bad = p.request("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2030-01-01"}}));
    assert_eq!(rpc_error(&bad).0, -32022, "{bad}");
    assert_eq!(bad["error"]["data"]["requested"], "2030-01-01");
    assert!(bad["error"]["data"]["supported"].as_array().unwrap().contains(&json!("2026-07-28")));
}

#[test]
fn batches_answer_in_order_and_skip_notifications() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    p.send(&json!([
        {"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "c", "method": "bogus"}
    ]));
    let reply = p.lines.next_json();
    let ids: Vec<&Value> = reply.as_array().unwrap().iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, vec!["a", "b", "c"]);
    assert_eq!(rpc_error(&reply[2]).0, -32601, "{reply}");
    // Only notifications: no reply at all (the next line is the ping's).
    p.send(&json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]));
    assert_eq!(p.call("ping", json!({})), json!({}));
}

#[test]
fn vanished_clients_and_many_sessions_do_not_disturb_others() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut steady = initialized(&home);
    for _ in 0..20 {
        let mut s = UnixStream::connect(home.socket()).unwrap();
        // Half a message, a full request, then gone.
        s.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#).unwrap();
        s.write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"core.tool_instructions\"}}\n{\"jsonr").unwrap();
        drop(s);
    }
    let sessions: Vec<Peer> = (0..30).map(|_| initialized(&home)).collect();
    assert_eq!(steady.call("ping", json!({})), json!({}));
    for mut s in sessions {
        assert!(s.call("tools/list", json!({}))["tools"].is_array());
    }
}

#[test]
fn cancel_of_an_unknown_id_and_unknown_notifications_are_harmless() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut p = initialized(&home);
    p.notify("notifications/cancelled", json!({"requestId": 12345, "reason": "test"}));
    p.notify("notifications/unknown", json!({}));
    assert_eq!(p.call("ping", json!({})), json!({}));
}

#[test]
fn sigterm_drains_removes_socket_and_exits_zero() {
    let home = Home::new();
    let mut d = Daemon::start(&home);
    let mut p = initialized(&home);
    p.call("ping", json!({}));
    kill(d.pid(), libc::SIGTERM);
    let status = wait_exit(&mut d.child, WAIT);
    assert_eq!(status.code(), Some(0));
    assert!(!home.socket().exists(), "socket left behind");
}

#[test]
fn idle_timeout_stops_an_unused_daemon() {
    let home = Home::new();
    let mut d = Daemon::builder(&home).args(["--idle-timeout", "1"]).start();
    let status = wait_exit(&mut d.child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(0));
    assert!(!home.socket().exists());
}

#[test]
fn status_and_stop_control_the_daemon() {
    let home = Home::new();
    let mut d = Daemon::start(&home);
    let _p = initialized(&home);
    let out = home.daemon_cmd().args(["status", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pid"], d.pid());
    assert_eq!(v["sessions"], 1, "the status connection itself is not counted: {v}");
    let out = home.daemon_cmd().arg("stop").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(wait_exit(&mut d.child, WAIT).code(), Some(0));
    let out = home.daemon_cmd().arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("openhumand-mcp serve"));
}

#[test]
fn socket_activation_serves_the_inherited_listener() {
    use std::os::fd::AsRawFd;
    let home = Home::new();
    // What systemd does: bind the socket, pass it to the daemon as an inherited fd.
    let path = home.path().join("activated.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let fd = listener.as_raw_fd();
    // SAFETY: fcntl on a descriptor this test owns; clearing FD_CLOEXEC lets the child inherit it.
    #[allow(unsafe_code)]
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
    }
    let mut d = Daemon::builder(&home).env("LISTEN_FDS", "1").env("LISTEN_FDS_FIRST_FD", fd.to_string()).start();
    assert!(d.startup_log().iter().all(|l| !l.contains("ERROR")), "{:#?}", d.startup_log());
    drop(listener);
    let mut p = Peer::socket(&path);
    p.initialize("activated");
    assert!(p.call("tools/list", json!({}))["tools"].is_array());
    assert!(!home.socket().exists(), "an activated daemon binds no socket of its own");
    kill(d.pid(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut d.child, WAIT).code(), Some(0));
}

/// One location rule: without a home, the socket sits beside the data whatever
/// XDG_RUNTIME_DIR says, so a command started without that variable (cron, ssh) finds the
/// daemon a login session started.
#[test]
fn the_socket_is_found_whatever_xdg_runtime_dir_says() {
    let user = tempfile::Builder::new().prefix("oh-u-").tempdir_in("/tmp").unwrap();
    let runtime = user.path().join("xdg-run");
    std::fs::create_dir_all(&runtime).unwrap();
    let cmd = |runtime_dir: Option<&std::path::Path>| {
        let mut c = std::process::Command::new(openhuman_tests::daemon_bin());
        c.env("HOME", user.path()).env_remove("RUST_LOG");
        for (k, _) in std::env::vars() {
            if k.starts_with("OPENHUMAN_") || k.starts_with("XDG_") {
                c.env_remove(k);
            }
        }
        if let Some(dir) = runtime_dir {
            c.env("XDG_RUNTIME_DIR", dir);
        }
        c
    };
    let mut serve = cmd(Some(&runtime));
    serve.arg("serve").stdin(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    // Killed however the test ends.
    struct Serving(std::process::Child);
    impl Drop for Serving {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut serving = Serving(serve.spawn().unwrap());
    let child = &mut serving.0;
    let log = openhuman_tests::Lines::spawn(child.stderr.take().unwrap());
    let ready = |l: Result<Option<String>, String>| l.unwrap().expect("the daemon's log ended early").contains("ready");
    while !ready(log.next_within(WAIT)) {}
    let socket = user.path().join(".local/share/openhuman/run/mcp.sock");
    assert!(socket.exists(), "the socket beside the data");
    let status = cmd(None).args(["status", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status.status.code(), Some(0), "{v}");
    assert_eq!(v["pid"], child.id());
    assert_eq!(v["socket"], socket.display().to_string());
    assert!(cmd(None).arg("stop").output().unwrap().status.success());
    assert_eq!(wait_exit(child, WAIT).code(), Some(0));
}

/// A daemon that cannot open its store serves (other tools work) but does not claim to be
/// ready, and `status` says why and exits 1.
#[test]
fn a_daemon_without_its_store_is_not_ready_and_status_says_why() {
    let home = Home::new();
    home.write_config("[memory.embeddings]\nprovider = \"ollama\"\n");
    let d = Daemon::start(&home);
    let last = d.startup_log().last().unwrap();
    assert!(last.contains("daemon degraded") && !last.contains("daemon ready"), "{last}");
    let out = home.daemon_cmd().arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("NOT READY") && text.contains("[memory.embeddings].model"), "{text}");
    let out = home.daemon_cmd().args(["status", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ready"], false, "{v}");
    assert_eq!(v["pid"], d.pid());
}

/// Ids come back exactly as sent, even numbers an `f64` cannot hold; a batch is capped and a
/// huge one refused before it is built (the daemon answers and keeps serving).
#[test]
fn odd_ids_come_back_unchanged_and_huge_batches_are_refused() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut p = initialized(&home);
    for id in ["3555727065.2172546", "18446744073709551616", "1.5e300"] {
        p.send_raw(&line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)));
        let reply = p.lines.next().unwrap();
        assert!(reply.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"#)), "{id}: {reply}");
    }
    p.send_raw(&line(r#"[{"jsonrpc":"2.0","id":0.30000000000000000001,"method":"ping"}]"#));
    let reply = p.lines.next().unwrap();
    assert!(reply.contains(r#""id":0.30000000000000000001"#), "{reply}");
    // 2.7 million elements in well under the 8 MiB line limit.
    let huge = format!("[{}]\n", vec!["{}"; 2_700_000].join(","));
    p.send_raw(huge.as_bytes());
    let r: Value = serde_json::from_str(&p.lines.next().unwrap()).unwrap();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("at most 256"), "{r}");
    assert_eq!(p.call("ping", json!({})), json!({}), "the session goes on");
}

/// `[mcp].max_socket_connections` bounds the connections open at once: one more is told so in
/// a JSON-RPC error line and closed, and a slot comes back when a client leaves.
#[test]
fn connections_beyond_the_socket_cap_are_told_to_retry_and_closed() {
    let home = Home::new();
    home.write_config("[mcp]\nmax_socket_connections = 2\n");
    let _d = Daemon::start(&home);
    // A raw stream, so that it can really be closed (a `Peer`'s reader thread holds its socket).
    let mut first = UnixStream::connect(home.socket()).unwrap();
    first.write_all(&line(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)).unwrap();
    let mut answer = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(&first), &mut answer).unwrap();
    assert!(answer.contains(r#""result":{}"#), "{answer}");
    let _second = initialized(&home);
    let mut third = Peer::socket(&home.socket());
    third.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    let refused = third.lines.next_json();
    let (_, message) = rpc_error(&refused);
    assert!(message.contains("max_socket_connections") && message.contains("retry"), "{refused}");
    assert_eq!(third.lines.next(), None, "closed after the line");
    first.shutdown(std::net::Shutdown::Both).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let mut p = Peer::socket(&home.socket());
        p.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        if p.lines.next_json()["result"] == json!({}) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no slot came back after a client left");
    }
}
