//! Writes, the security policy and the audit log through real sessions: every write tool's
//! success and rejection paths, readonly and rate-limit denials across sessions, provenance,
//! audit rows without bodies, kill -9 in the middle of writes, and a flood of rejections.

use openhuman_tests::{ChildPeer, Daemon, Home, Peer, WAIT, kill, rpc_error, tool_err_text, tool_ok, wait_exit};
use serde_json::{Value, json};

/// Audit rows as `audit --json` prints them (through the daemon when it is up).
fn audit_rows(home: &Home, extra: &[&str]) -> Vec<Value> {
    let out = home.daemon_cmd().args(["audit", "--json", "--limit", "100000"]).args(extra).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn session(home: &Home, client: &str) -> ChildPeer {
    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize(client);
    s
}

#[test]
fn write_tools_succeed_are_searchable_at_once_and_audited_without_bodies() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut s = session(&home, "Claude Desktop");
    let body = "Zebra crossings near the old library need repainting before spring";
    let stored = s.peer.tool(
        "memory.store",
        json!({"title": "Town errands", "content": body, "namespace": "home", "tags": ["errands"]}),
    );
    assert_eq!(tool_ok(&stored)["key"], "mcp-store-town-errands");
    // Found at once by every read path.
    let hits = s.peer.tool("memory.search", json!({"query": "zebra repainting"}));
    let hit = &hits["structuredContent"]["hits"][0];
    let chunk_id = hit["chunk_id"].as_str().expect("stored doc is searchable").to_string();
    let chunk = s.peer.tool("tree.read_chunk", json!({"chunk_id": chunk_id}));
    assert_eq!(chunk["structuredContent"]["source"], "mcp:claude-desktop", "provenance: {chunk}");
    let recalled = s.peer.tool("memory.recall", json!({"query": "pedestrian street markings"}));
    assert!(
        recalled["structuredContent"]["chunks"].as_array().unwrap().iter().any(|c| c["chunk_id"] == chunk_id.as_str())
    );
    let fetched = s.peer.tool("memory.fetch", json!({"query": "zebra", "mode": "keyword"}));
    assert!(!fetched["structuredContent"]["items"].as_array().unwrap().is_empty());
    let listed = s.peer.tool("memory.list", json!({"filter": {"sources": ["mcp:claude-desktop"]}}));
    assert!(!listed["structuredContent"]["items"].as_array().unwrap().is_empty());
    // Same title again: an update of the same document, not a second one.
    let again =
        s.peer.tool("memory.store", json!({"title": "Town errands", "content": "Buy stamps", "namespace": "home"}));
    assert_eq!(again["structuredContent"]["status"], "updated", "{again}");
    assert!(
        s.peer.tool("memory.search", json!({"query": "zebra"}))["structuredContent"]["hits"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let chunk_id = s.peer.tool("memory.search", json!({"query": "stamps"}))["structuredContent"]["hits"][0]["chunk_id"]
        .as_str()
        .unwrap()
        .to_string();

    let note = s.peer.tool("memory.note", json!({"chunk_id": chunk_id, "note_text": "Post office closes at five"}));
    tool_ok(&note);
    let tag = s.peer.tool("tree.tag", json!({"chunk_id": chunk_id, "tags": ["urgent", "town"]}));
    tool_ok(&tag);
    let read = s.peer.tool("tree.read_chunk", json!({"chunk_id": chunk_id}));
    let tags = read["structuredContent"]["tags"].as_array().unwrap();
    assert!(tags.contains(&json!("urgent")) && tags.contains(&json!("town")), "{read}");
    assert!(read["structuredContent"]["notes"].to_string().contains("Post office"), "{read}");
    let browsed = s.peer.tool("tree.browse", json!({"k": 50}));
    assert!(
        browsed["structuredContent"]["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["chunk_id"] == chunk_id.as_str() && c["tags"].as_array().unwrap().contains(&json!("urgent")))
    );
    assert!(
        !s.peer.tool("memory.search", json!({"query": "post office"}))["structuredContent"]["hits"]
            .as_array()
            .unwrap()
            .is_empty(),
        "notes are searchable"
    );

    let learned = s
        .peer
        .tool("memory.learn", json!({"text": "Prefers oat milk in coffee", "kind": "preference", "confidence": 0.9}));
    let learning_id = learned["structuredContent"]["id"].as_str().expect("learn returns an id").to_string();
    assert!(
        !s.peer.tool("memory.search", json!({"query": "oat milk"}))["structuredContent"]["hits"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let forgot = s.peer.tool("memory.forget", json!({"ids": [learning_id, "nonexistent-id"]}));
    assert_eq!(forgot["structuredContent"]["deleted"], json!([learning_id]), "{forgot}");
    assert_eq!(forgot["structuredContent"]["not_found"], json!(["nonexistent-id"]));
    assert!(
        s.peer.tool("memory.search", json!({"query": "oat milk"}))["structuredContent"]["hits"]
            .as_array()
            .unwrap()
            .is_empty(),
        "forgotten everywhere"
    );
    assert!(
        s.peer.tool("memory.recall", json!({"query": "oat milk coffee preference"}))["structuredContent"]["chunks"]
            .to_string()
            .find("oat milk")
            .is_none()
    );

    let rows = audit_rows(&home, &[]);
    let tools: Vec<&str> = rows.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    for t in ["memory.store", "memory.note", "tree.tag", "memory.learn", "memory.forget"] {
        assert!(tools.contains(&t), "{t} audited: {tools:?}");
    }
    for r in &rows {
        assert_eq!(r["source"], "mcp:claude-desktop");
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(r["client_info"]["name"], "Claude Desktop");
        let text = r.to_string();
        for body in ["Zebra", "stamps", "Post office", "oat milk"] {
            assert!(!text.contains(body), "audit row holds a body ({body}): {text}");
        }
    }
    let store = rows.iter().find(|r| r["tool"] == "memory.store").unwrap();
    assert_eq!(store["args_summary"]["title"], "Town errands");
    assert!(store["args_summary"]["content_bytes"].as_u64().is_some());
    assert!(store["result_id"].as_str().is_some());
    // The daemon's log holds no bodies either.
    assert!(!home.log().contains("Zebra") && !home.log().contains("oat milk"));
}

#[test]
fn rejections_are_errors_and_audited() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut s = session(&home, "Cursor");
    let long_tag = "t".repeat(129);
    let many: Vec<String> = (0..51).map(|i| format!("t{i}")).collect();
    let ids: Vec<String> = (0..101).map(|i| format!("id{i}")).collect();
    let cases = [
        ("memory.store", json!({"title": " ", "content": "x"}), "argument `title` must not be blank"),
        (
            "memory.store",
            json!({"title": "t", "content": "x", "namespace": "Bad NS!"}),
            "argument `namespace` may hold only",
        ),
        ("memory.store", json!({"title": "t", "content": "x", "extra": 1}), "unknown argument: `extra`"),
        ("tree.tag", json!({"chunk_id": "c", "tags": many}), "argument `tags` has 51 items; the limit is 50"),
        (
            "tree.tag",
            json!({"chunk_id": "c", "tags": [long_tag]}),
            "argument `tags[0]` is 129 characters long; the limit is 128",
        ),
        ("tree.tag", json!({"chunk_id": "c", "tags": []}), "argument `tags` needs at least 1 item"),
        ("tree.tag", json!({"chunk_id": "0123456789abcdef0123456789abcdef", "tags": ["x"]}), "no chunk"),
        ("memory.note", json!({"chunk_id": "0123456789abcdef0123456789abcdef", "note_text": "hi"}), "no chunk"),
        ("memory.learn", json!({"text": "x", "confidence": 1.5}), "argument `confidence` must be between 0 and 1"),
        ("memory.learn", json!({"text": "x", "kind": "whim"}), "argument `kind` must be one of"),
        ("memory.forget", json!({"ids": []}), "argument `ids` needs at least 1 item"),
        ("memory.forget", json!({"ids": ids}), "argument `ids` has 101 items; the limit is 100"),
    ];
    for (tool, args, want) in &cases {
        let text = tool_err_text(&s.peer.tool(tool, args.clone()));
        assert!(text.contains(want), "{tool} {args}: {text}");
    }
    let rows = audit_rows(&home, &["--failed"]);
    assert_eq!(rows.len(), cases.len(), "one row per attempt: {rows:?}");
    assert!(
        rows.iter()
            .all(|r| r["success"] == false && r["source"] == "mcp:cursor" && !r["error"].as_str().unwrap().is_empty())
    );
    let by_tool = audit_rows(&home, &["--tool", "tree.tag", "--client", "cursor"]);
    assert_eq!(by_tool.len(), 4);
}

#[test]
fn readonly_policy_denies_every_act_tool_with_an_audit_row() {
    let home = Home::new();
    home.write_config("[autonomy]\nlevel = \"readonly\"\n");
    let _d = Daemon::start(&home);
    let mut s = session(&home, "Zed");
    for (tool, args) in [
        ("memory.store", json!({"title": "t", "content": "c"})),
        ("memory.learn", json!({"text": "x"})),
        ("memory.forget", json!({"ids": ["a"]})),
    ] {
        let r = s.peer.request("tools/call", json!({"name": tool, "arguments": args}));
        let (code, message) = rpc_error(&r);
        assert_eq!(code, -32602, "{r}");
        assert!(message.starts_with("[policy-blocked]"), "{r}");
    }
    // Reads still work.
    tool_ok(&s.peer.tool("memory.search", json!({"query": "x"})));
    let rows = audit_rows(&home, &[]);
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r["success"] == false && r["error"].as_str().unwrap().starts_with("[policy-blocked]")));
}

#[test]
fn rate_limit_spans_sessions() {
    let home = Home::new();
    home.write_config("[autonomy]\nmax_actions_per_hour = 3\n");
    let _d = Daemon::start(&home);
    let mut a = session(&home, "A");
    let mut b = session(&home, "B");
    for i in 0..2 {
        tool_ok(&a.peer.tool("memory.learn", json!({"text": format!("fact {i}")})));
    }
    tool_ok(&b.peer.tool("memory.learn", json!({"text": "fact b"})));
    let denied = b.peer.request("tools/call", json!({"name": "memory.learn", "arguments": {"text": "one too many"}}));
    let (code, message) = rpc_error(&denied);
    assert_eq!(code, -32602, "{denied}");
    assert!(message.contains("max_actions_per_hour = 3"), "{denied}");
    let denied =
        a.peer.request("tools/call", json!({"name": "memory.store", "arguments": {"title": "x", "content": "y"}}));
    assert!(rpc_error(&denied).1.starts_with("[policy-blocked] rate limit"), "{denied}");
    let sources: Vec<String> =
        audit_rows(&home, &[]).iter().map(|r| r["source"].as_str().unwrap().to_string()).collect();
    assert_eq!(sources.iter().filter(|s| *s == "mcp:a").count(), 3);
    assert_eq!(sources.iter().filter(|s| *s == "mcp:b").count(), 2);
}

#[test]
fn kill_nine_during_writes_loses_no_acknowledged_write() {
    let home = Home::new();
    let mut acknowledged: Vec<String> = Vec::new();
    for round in 0..3 {
        let d = Daemon::start(&home);
        let mut p = Peer::socket(&home.socket());
        p.initialize("crash-test");
        // Pipeline a burst, read some replies, then kill the daemon mid-stream.
        let ids: Vec<(Value, String)> = (0..60)
            .map(|i| {
                let title = format!("crash round {round} item {i}");
                let id = p.start("tools/call", json!({"name": "memory.store", "arguments": {"title": title, "content": format!("payload {round} {i} kiwifruit")}}));
                (id, title)
            })
            .collect();
        // Replies come in any order: note each acknowledged title as it arrives.
        let mut note = |line: &str| {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["result"]["isError"] == false
                && let Some((_, title)) = ids.iter().find(|(id, _)| *id == v["id"])
            {
                acknowledged.push(title.clone());
            }
        };
        for _ in 0..20 {
            note(&p.lines.next().expect("a reply"));
        }
        kill(d.pid(), libc::SIGKILL);
        // Whatever else was answered before the kill counts too.
        while let Some(line) = p.lines.next() {
            note(&line);
        }
        drop(d);
    }
    let _d = Daemon::start(&home);
    let mut s = session(&home, "checker");
    let listed = s.peer.tool("memory.list", json!({"limit": 100, "filter": {"sources": ["mcp:crash-test"]}}));
    let mut titles: Vec<String> = listed["structuredContent"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["title"].as_str().map(str::to_string))
        .collect();
    let mut cursor = listed["structuredContent"]["next_cursor"].as_str().map(str::to_string);
    while let Some(c) = cursor {
        let page =
            s.peer.tool("memory.list", json!({"limit": 100, "cursor": c, "filter": {"sources": ["mcp:crash-test"]}}));
        titles.extend(
            page["structuredContent"]["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| i["title"].as_str().map(str::to_string)),
        );
        cursor = page["structuredContent"]["next_cursor"].as_str().map(str::to_string);
    }
    let audited: Vec<String> = audit_rows(&home, &["--tool", "memory.store"])
        .iter()
        .filter(|r| r["success"] == true)
        .map(|r| r["args_summary"]["title"].as_str().unwrap().to_string())
        .collect();
    assert!(acknowledged.len() >= 60, "the test must see acknowledged writes: {}", acknowledged.len());
    for t in &acknowledged {
        assert!(titles.contains(t), "acknowledged write lost: {t}");
        assert!(audited.contains(t), "acknowledged write has no audit row: {t}");
    }
    // Nothing half-written: every stored item has its audit row and vice versa.
    for t in &titles {
        assert!(audited.contains(t), "item without audit row: {t}");
    }
    let found = s.peer.tool("memory.search", json!({"query": "kiwifruit", "k": 50}));
    assert!(!found["structuredContent"]["hits"].as_array().unwrap().is_empty());
}

#[test]
fn a_flood_of_rejected_writes_keeps_the_daemon_responsive_and_every_row_lands() {
    let home = Home::new();
    let mut d = Daemon::start(&home);
    let mut flood = Peer::socket(&home.socket());
    flood.initialize("flood");
    let mut steady = Peer::socket(&home.socket());
    steady.initialize("steady");
    const N: usize = 10_000;
    let mut batch = String::new();
    for i in 0..N {
        batch.push_str(&json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "memory.store", "arguments": {"title": "t"}}}).to_string());
        batch.push('\n');
    }
    let writer = std::thread::spawn(move || {
        flood.send_raw(batch.as_bytes());
        let mut errors = 0;
        for _ in 0..N {
            let v = flood.lines.next_json();
            if v["result"]["isError"] == true {
                errors += 1;
            }
        }
        errors
    });
    // Pings are answered while the flood is processed.
    for _ in 0..20 {
        assert_eq!(steady.call("ping", json!({})), json!({}));
    }
    assert_eq!(writer.join().unwrap(), N);
    // A graceful stop flushes the audit writer; then count the rows on disk.
    kill(d.pid(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut d.child, WAIT).code(), Some(0));
    let rows = audit_rows(&home, &["--failed", "--client", "flood"]);
    assert_eq!(rows.len(), N);
    assert!(rows[0]["error"].as_str().unwrap().contains("missing required argument `content`"));
}

#[test]
fn tool_registry_and_diagnostics_over_the_socket() {
    let home = Home::new();
    home.write_config(
        "[autonomy]\nlevel = \"readonly\"\n\
         [[capability_providers]]\nid = \"Acme Tools\"\ntrust_state = \"trusted\"\nenabled = true\n\
         [[capability_providers]]\nid = \"Side Project\"\nenabled = true\n",
    );
    let _d = Daemon::start(&home);
    let mut s = session(&home, "Dash");
    let denied = s.peer.request("tools/call", json!({"name": "memory.learn", "arguments": {"text": "x"}}));
    assert_eq!(rpc_error(&denied).0, -32602, "{denied}");
    let mut p = Peer::socket(&home.socket());
    let list = p.call("openhuman.tool_registry_list", json!({}));
    let entries = list["tools"].as_array().unwrap();
    let search = entries.iter().find(|e| e["tool_id"] == "memory.search").expect("memory.search listed");
    assert_eq!(search["kind"], "mcp_tool");
    assert_eq!(search["policy"], "read");
    assert!(search["allowed_agents"].as_array().unwrap().iter().any(|a| a == "researcher"));
    assert!(entries.iter().any(|e| e["tool_id"] == "openhuman.memory_tree_search" && e["kind"] == "core_method"));
    let store = p.call("openhuman.tool_registry_get", json!({"tool_id": "memory.store"}));
    assert_eq!(store["policy"], "act");
    assert!(store["tags"].as_array().unwrap().contains(&json!("write")));
    let missing = p.request("openhuman.tool_registry_get", json!({"tool_id": "nope"}));
    assert_eq!(rpc_error(&missing).0, -32602, "{missing}");
    let diag = p.call("openhuman.tool_registry_diagnostics", json!({}));
    assert_eq!(diag["policy"]["level"], "readonly");
    assert_eq!(diag["write_surfaces"].as_array().unwrap().len(), 6);
    assert_eq!(diag["writes_last_24h"]["failed"], 1);
    let denial = &diag["recent_denials"][0];
    assert_eq!(denial["tool"], "memory.learn");
    assert!(denial["error"].as_str().unwrap().starts_with("[policy-blocked]"));
    let prov = &diag["capability_providers"];
    assert_eq!(prov["configured"], 2);
    assert_eq!(prov["eligible"], 1);
    assert_eq!(prov["providers"][0]["id"], "acme-tools");
    assert_eq!(prov["providers"][1]["eligible"], false);
    // The same core methods the MCP tools map onto are callable by name.
    let hits = p.call("openhuman.memory_tree_search", json!({"query": "anything"}));
    assert!(hits["hits"].is_array());
    let bad = p.request("openhuman.memory_tree_search", json!({"query": "x", "k": 99}));
    assert!(rpc_error(&bad).1.contains("between 1 and 50"), "{bad}");
}

/// Failed attempts are audited as failures, and what the caller sent that looks like a
/// credential (a namespace, an unknown argument name, an id) reaches neither the audit rows nor
/// the log.
#[test]
fn failed_writes_are_audited_as_failures_without_secrets() {
    let home = Home::new();
    let d = Daemon::start(&home);
    let mut s = session(&home, "Cursor");
    // Upper case makes it an invalid namespace.
    let key = "ghp_ABCdefghijklmnopqrstu12345";
    let forgot = s.peer.tool("memory.forget", json!({"ids": ["nonexistent-id"]}));
    assert!(tool_err_text(&forgot).contains("nonexistent-id"), "{forgot}");
    for (tool, args) in [
        ("memory.store", json!({"title": "t", "content": "c", "namespace": key})),
        ("memory.store", json!({"title": "t", "content": "c", key: "x"})),
        ("memory.forget", json!({"ids": [key]})),
        ("memory.note", json!({"chunk_id": key, "note_text": "n"})),
    ] {
        let r = s.peer.tool(tool, args);
        assert_eq!(r["isError"], true, "{tool}: {r}");
    }
    let rows = audit_rows(&home, &[]);
    assert_eq!(rows.len(), 5, "{rows:#?}");
    assert!(rows.iter().all(|r| r["success"] == false), "{rows:#?}");
    let text = serde_json::to_string(&rows).unwrap();
    assert!(!text.contains(key), "a secret in the audit rows: {text}");
    d.stop().unwrap();
    assert!(!home.log().contains(key), "a secret in the log");
}

/// `readonly` covers the control methods that write (ingest, reindex); every use of them is
/// audited.
#[test]
fn readonly_refuses_ingest_and_reindex_and_both_are_audited() {
    let home = Home::new();
    let notes = home.path().join("notes.md");
    std::fs::write(&notes, "# Garden\n\nThe quince tree needs pruning in February.\n").unwrap();
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    let ingest = json!({"paths": [notes.display().to_string()]});
    assert_eq!(p.call("openhuman.memory_ingest", ingest.clone())["files_ingested"], 1);
    home.write_config("[autonomy]\nlevel = \"readonly\"\n");
    assert_eq!(p.call("openhuman.config_reload", json!({}))["reloaded"], true);
    std::fs::write(&notes, "# Garden\n\nThe medlar tree needs pruning too.\n").unwrap();
    for (method, params) in [("openhuman.memory_ingest", ingest), ("openhuman.memory_reindex", json!({}))] {
        let r = p.request(method, params);
        let (code, msg) = rpc_error(&r);
        assert!(code == -32602 && msg.starts_with("[policy-blocked]"), "{method}: {r}");
    }
    let mut s = session(&home, "reader");
    let hits = s.peer.tool("memory.search", json!({"query": "medlar"}));
    assert_eq!(tool_ok(&hits)["hits"], json!([]), "nothing was ingested in readonly");
    let rows = audit_rows(&home, &[]);
    let summary: Vec<(String, bool)> =
        rows.iter().map(|r| (r["tool"].as_str().unwrap().to_string(), r["success"] == true)).collect();
    for want in [
        ("openhuman.memory_ingest".to_string(), true),
        ("openhuman.memory_ingest".to_string(), false),
        ("openhuman.memory_reindex".to_string(), false),
    ] {
        assert!(summary.contains(&want), "{want:?} in {summary:?}");
    }
}

/// A client that cannot be asked gets `[autonomy].on_secret`'s answer for text that looks like a
/// secret: `ask` (the default) stores it redacted, `store` as sent, `drop` not at all; deletions
/// act at once. The audit row says what was decided and by whom, never the secret.
#[test]
fn the_secret_policy_decides_for_a_client_that_cannot_be_asked() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    p.initialize("no-elicitation");
    let key = format!("sk-{}", "Qw3".repeat(9));
    let text = format!("deploy with {key} tonight");
    let read_back = |p: &mut Peer, stored: &Value| {
        let chunk = stored["chunk_ids"][0].as_str().unwrap().to_string();
        p.tool("tree.read_chunk", json!({"chunk_id": chunk})).to_string()
    };
    let stored = p.tool("memory.store", json!({"title": "deploy", "content": text}));
    let chunk = read_back(&mut p, tool_ok(&stored));
    assert!(!chunk.contains(&key) && chunk.contains("[redacted]"), "{chunk}");
    for (policy, kept) in [("store", true), ("drop", false)] {
        home.write_config(&format!("[autonomy]\non_secret = \"{policy}\"\n"));
        assert_eq!(p.call("openhuman.config_reload", json!({}))["reloaded"], true);
        let r = p.tool("memory.store", json!({"title": format!("deploy {policy}"), "content": text}));
        if kept {
            assert!(read_back(&mut p, tool_ok(&r)).contains(&key), "on_secret = store keeps it");
        } else {
            assert!(tool_err_text(&r).contains("wrote nothing"), "{r}");
        }
    }
    let id = tool_ok(&stored)["id"].as_str().unwrap().to_string();
    let gone = p.tool("memory.forget", json!({"ids": [id]}));
    assert_eq!(tool_ok(&gone)["deleted"][0], json!(id), "no confirmation without a client that can ask");
    let rows = audit_rows(&home, &[]);
    let text = serde_json::to_string(&rows).unwrap();
    assert!(!text.contains(&key), "a secret in the audit rows: {text}");
    let decided: Vec<(Value, Value)> = rows
        .iter()
        .filter(|r| r["tool"] == "memory.store" && r["success"] == true)
        .map(|r| (r["args_summary"]["secret"].clone(), r["args_summary"]["secret_decided_by"].clone()))
        .collect();
    assert!(decided.contains(&(json!("redacted"), json!("policy"))), "{decided:?}");
    assert!(decided.contains(&(json!("stored_as_is"), json!("policy"))), "{decided:?}");
    let forget = rows.iter().find(|r| r["tool"] == "memory.forget").expect("the forget's row");
    assert_eq!(forget["args_summary"]["confirmation"], "not_asked", "{forget}");
}

/// Over the socket (as over stdio and the shim), a client that declared elicitation is asked
/// before `memory.forget` acts: a server→client request on the handshake versions, answered with
/// a JSON-RPC response; an `input_required` result in 2026-07-28, answered by a retry.
#[test]
fn a_client_that_can_be_asked_confirms_a_forget_in_either_era() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    let caps = json!({"elicitation": {}});
    p.call(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": caps, "clientInfo": {"name": "asker"}}),
    );
    p.notify("notifications/initialized", json!({}));
    let stored = |p: &mut Peer, title: &str| {
        let r = p.tool("memory.store", json!({"title": title, "content": "buy stamps"}));
        tool_ok(&r)["id"].as_str().unwrap().to_string()
    };
    let id = stored(&mut p, "errand");
    let call = p.start("tools/call", json!({"name": "memory.forget", "arguments": {"ids": [id]}}));
    let ask = p.lines.next_json();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert!(ask["params"]["message"].as_str().unwrap().contains(&id), "{ask}");
    p.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"confirm": true}}}));
    let done = p.wait(&call);
    assert_eq!(tool_ok(&done["result"])["deleted"][0], json!(id), "{done}");

    let id = stored(&mut p, "second errand");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": caps});
    let params = json!({"_meta": meta, "name": "memory.forget", "arguments": {"ids": [id]}});
    let first = p.call("tools/call", params.clone());
    assert_eq!(first["resultType"], "input_required", "{first}");
    let (key, request) = first["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let mut retry = params;
    retry["inputResponses"] = json!({ key.clone(): {"action": "accept", "content": {"confirm": true}} });
    retry["requestState"] = first["requestState"].clone();
    let done = p.call("tools/call", retry);
    assert_eq!((done["resultType"].as_str(), &done["structuredContent"]["deleted"][0]), (Some("complete"), &json!(id)));
    // Once: the interim round is not an attempt of its own in the audit log.
    let rows = audit_rows(&home, &[]);
    let forgets: Vec<&Value> = rows.iter().filter(|r| r["tool"] == "memory.forget").collect();
    assert_eq!(forgets.len(), 2, "{forgets:#?}");
    assert!(forgets.iter().all(|r| r["args_summary"]["confirmation"] == "accepted"), "{forgets:#?}");
}
