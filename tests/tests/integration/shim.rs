//! The shim against real daemons: sessions, autostart under a lock, surviving a daemon killed
//! mid-request, EOF handling, and clear errors when no daemon can be had.

use openhuman_tests::{ChildPeer, Daemon, Home, freeze, kill, processes_matching, rpc_error, tool_ok};
use serde_json::json;

#[test]
fn session_through_shim_lists_calls_and_reads() {
    let home = Home::new();
    let daemon = Daemon::start(&home);
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    let init = shim.peer.initialize("Claude Desktop");
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    let tools = shim.peer.call("tools/list", json!({}));
    assert!(tools["tools"].as_array().unwrap().iter().all(|t| t["inputSchema"]["additionalProperties"] == false));
    let agents = shim.peer.tool("agent.list_subagents", json!({}));
    let list = tool_ok(&agents)["agents"].as_array().unwrap();
    assert!(list.len() >= 12);
    let orchestrator = list.iter().find(|a| a["id"] == "orchestrator").expect("orchestrator");
    assert_eq!(orchestrator["dispatchable_over_mcp"], false);
    assert!(orchestrator["reason"].as_str().unwrap().contains("[llm]"), "{orchestrator}");
    let integrations = list.iter().find(|a| a["id"] == "integrations").expect("integrations");
    assert!(integrations["reason"].as_str().unwrap().contains("toolkit"));
    let text = shim.peer.call("resources/read", json!({"uri": "openhuman://prompts/agents/planner"}));
    assert!(text["contents"][0]["text"].as_str().unwrap().len() > 200);
    let (status, rest) = shim.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "{rest:?}");
    // The daemon the test started is still the one serving.
    assert_eq!(home.daemon_pid(), Some(daemon.pid()));
}

#[test]
fn killed_daemon_fails_inflight_request_then_shim_continues_on_a_new_one() {
    let home = Home::new();
    let mut cmd = home.shim_cmd();
    cmd.arg("-v");
    let mut shim = ChildPeer::spawn(cmd);
    shim.peer.initialize("Cursor");
    let first = home.daemon_pid().expect("shim autostarted a daemon");
    // Freeze the daemon, then wait for the shim to report the request forwarded: it is then
    // certainly in flight when the daemon dies.
    freeze(first);
    let id = shim.peer.start("tools/list", json!({}));
    let marker = format!("forwarded request {id} ");
    loop {
        let line = shim.stderr.next().expect("shim stderr ended");
        if line.contains(&marker) {
            break;
        }
    }
    kill(first, libc::SIGKILL);
    let reply = shim.peer.wait(&id);
    assert_eq!(rpc_error(&reply), (-32603, "daemon restarted; request not completed"), "{reply}");
    // The shim reconnects to a fresh daemon and replays the handshake without telling the client.
    let tools = shim.peer.call("tools/list", json!({}));
    assert!(tools["tools"].is_array());
    let second = home.daemon_pid().expect("a new daemon");
    assert_ne!(first, second);
    let (status, rest) = shim.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "the replayed initialize must not reach the client: {rest:?}");
}

#[test]
fn twenty_shims_started_together_make_exactly_one_daemon() {
    let home = Home::new();
    let shims: Vec<ChildPeer> = (0..20).map(|_| ChildPeer::spawn(home.shim_cmd())).collect();
    let handles: Vec<_> = shims
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            std::thread::spawn(move || {
                let r = s.peer.initialize(&format!("client {i}"));
                assert_eq!(r["serverInfo"]["name"], "openhuman-core");
                s.peer.call("ping", json!({}));
                s
            })
        })
        .collect();
    let shims: Vec<ChildPeer> = handles.into_iter().map(|h| h.join().expect("shim thread")).collect();
    let home_str = home.path().to_string_lossy().to_string();
    let daemons = processes_matching(&["openhumand-mcp", &home_str, "serve"]);
    assert_eq!(daemons.len(), 1, "daemons: {daemons:?}");
    assert_eq!(home.daemon_pid(), Some(daemons[0]));
    for s in shims {
        let (status, _) = s.finish();
        assert!(status.success());
    }
}

#[test]
fn eof_waits_for_inflight_responses() {
    let home = Home::new();
    let _daemon = Daemon::start(&home);
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    shim.peer.initialize("eof-test");
    let ids: Vec<_> =
        (0..50).map(|_| shim.peer.start("tools/call", json!({"name": "core.tool_instructions"}))).collect();
    let (status, rest) = shim.finish();
    assert!(status.success());
    // Every request gets exactly one answer before the shim exits: the daemon's, or, for one
    // the daemon had not answered within the shim's grace after EOF (a loaded machine), the
    // shim's own error saying so. None is dropped and none is answered twice.
    let mut answered: Vec<serde_json::Value> = Vec::new();
    for line in rest {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let ok = v["result"]["isError"] == false;
        let grace = v["error"]["message"].as_str().is_some_and(|m| m.contains("stdin closed"));
        assert!(ok || grace, "{v}");
        answered.push(v["id"].clone());
    }
    let mut want: Vec<serde_json::Value> = ids.iter().map(|id| serde_json::json!(id)).collect();
    let key = |v: &serde_json::Value| v.to_string();
    answered.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(answered, want, "every request answered once before exit");
}

#[test]
fn without_daemon_and_autostart_each_request_gets_advice_and_exit_is_nonzero() {
    let home = Home::new();
    let mut cmd = home.shim_cmd();
    cmd.arg("--no-autostart");
    let mut shim = ChildPeer::spawn(cmd);
    let r = shim.peer.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
    );
    let (code, msg) = rpc_error(&r);
    assert_eq!(code, -32603, "{r}");
    assert!(msg.contains("openhumand-mcp serve"), "{msg}");
    let r = shim.peer.request("ping", json!({}));
    assert!(rpc_error(&r).1.contains("openhumand-mcp serve"), "{r}");
    let (status, _) = shim.finish();
    assert!(!status.success());
    assert!(home.daemon_pid().is_none(), "--no-autostart must not start a daemon");
}

#[test]
fn shim_help_goes_to_stdout_and_bad_flags_exit_2() {
    let home = Home::new();
    let out = home.shim_cmd().arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--no-autostart"));
    let out = home.shim_cmd().arg("--bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bogus"));
}

/// A daemon socket that takes connections and never answers (a daemon out of file descriptors,
/// or stuck): the shim says so on stderr after its handshake timeout instead of hanging, and
/// still exits when its stdin closes.
#[test]
fn a_silent_daemon_gets_a_clear_error_instead_of_a_hang() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("run")).unwrap();
    // Listening, never accepting: connects wait in the backlog, nothing is ever read.
    let _silent = std::os::unix::net::UnixListener::bind(home.socket()).unwrap();
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    shim.peer.start("ping", json!({}));
    let said = loop {
        let line = shim.stderr.next().expect("the shim ended without a word");
        if line.contains("did not answer the handshake") {
            break line;
        }
    };
    assert!(said.contains("overloaded or stuck"), "{said}");
    shim.peer.close_write();
    openhuman_tests::wait_exit(&mut shim.child, openhuman_tests::WAIT);
}

/// A config the daemon refuses: the client is told the daemon's own reason (the key, the range
/// in words, `config.toml`) in one line, every request the same, and the daemon is not started
/// again (its error is logged once) until the file changes; then it starts.
#[test]
fn a_broken_config_is_told_to_the_client_in_the_daemons_words() {
    let home = Home::new();
    let file = home.path().join("config.toml").display().to_string();
    home.write_config("[mcp.http]\nport = 99999\n");
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    let r = shim.peer.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
    );
    let (code, msg) = rpc_error(&r);
    assert_eq!(code, -32603, "{r}");
    assert!(msg.contains("could not start") && msg.contains("`mcp.http.port`"), "{msg}");
    assert!(msg.contains(&file) && msg.contains("a port number, 0–65535 (got 99999)"), "{msg}");
    assert!(!msg.contains('\n') && !msg.contains("ERROR"), "{msg}");
    let again = shim.peer.request("ping", json!({}));
    assert_eq!(rpc_error(&again).1, msg, "{again}");
    let (status, _) = shim.finish();
    assert!(!status.success());
    let log = std::fs::read_to_string(home.path().join("logs/daemon-autostart.log")).unwrap();
    assert_eq!(log.matches("mcp.http.port").count(), 1, "started once, said once: {log}");

    // Broken TOML is one line too; once the file is fixed the same shim starts the daemon.
    home.write_config("[mcp.http\n");
    let mut shim = ChildPeer::spawn(home.shim_cmd());
    let r = shim.peer.request("ping", json!({}));
    let msg = rpc_error(&r).1.to_string();
    assert!(msg.contains(&file) && msg.contains("not valid TOML at line 1") && !msg.contains('\n'), "{msg}");
    home.write_config("[mcp.http]\nport = 9302\n");
    let init = shim.peer.initialize("after the fix");
    assert!(init["serverInfo"]["name"].is_string(), "{init}");
    assert!(home.daemon_pid().is_some());
}
