//! A tool set per client through the real daemon: two clients that give different names see
//! different `tools/list`, resources and prompts over the socket and over HTTP (handshake and
//! stateless), in one fixed order; a call, read or prompt outside the set is refused naming the
//! entry and its key, and audited; a readonly entry refuses writes; a reload tells the session
//! whose set changed (and not the others); `register --tools --readonly` writes the entry and
//! the running daemon takes it at once, `register --remove` takes it out again.

use openhuman_tests::http::Client;
use openhuman_tests::{Daemon, Home, Peer, rpc_error, tool_ok};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[clients.reader]
names = ["Reader App"]
tools = ["core.*", "memory.search", "memory.recall"]
resources = ["openhuman://prompts/*"]
prompts = ["recall_context"]
level = "readonly"

[clients.writer]
names = ["writer-app"]
deny_tools = ["memory.forget"]
"#;

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    let items = list[key].as_array().unwrap_or_else(|| panic!("no {key} in {list}"));
    items.iter().map(|i| i[field].as_str().unwrap_or_default().to_string()).collect()
}

/// The audit rows a socket peer reads back, newest first.
fn audit(p: &mut Peer) -> Vec<Value> {
    p.call("openhuman.audit_query", json!({"limit": 20}))["rows"].as_array().cloned().unwrap_or_default()
}

/// Whether `sub` is `full` with some names left out, in `full`'s order.
fn in_order(sub: &[String], full: &[String]) -> bool {
    let mut rest = full.iter();
    sub.iter().all(|n| rest.any(|f| f == n))
}

#[test]
fn each_client_sees_its_own_set_and_is_refused_outside_it() {
    let home = Home::new();
    home.write_config(CONFIG);
    let d = Daemon::builder(&home).http().start();
    let mut reader = Peer::socket(&home.socket());
    let caps = reader.initialize("Reader App")["capabilities"].clone();
    // Every list a client entry narrows is advertised as one that can change.
    for list in ["tools", "resources", "prompts"] {
        assert_eq!(caps[list]["listChanged"], true, "{caps}");
    }
    let mut writer = Peer::socket(&home.socket());
    writer.initialize("writer-app");
    let mut other = Peer::socket(&home.socket());
    other.initialize("someone-else");

    let all = other.tool_names();
    assert!(all.contains(&"memory.forget".to_string()) && all.contains(&"memory.store".to_string()), "{all:?}");
    let read_set = reader.tool_names();
    assert_eq!(read_set, ["core.list_tools", "core.tool_instructions", "memory.search", "memory.recall"]);
    let write_set = writer.tool_names();
    assert!(write_set.contains(&"memory.store".to_string()) && !write_set.contains(&"memory.forget".to_string()));
    assert_eq!(write_set.len() + 1, all.len(), "{write_set:?}");
    // One fixed order, the catalog's, for every client and every call.
    assert!(in_order(&read_set, &all) && in_order(&write_set, &all));
    assert_eq!(reader.tool_names(), read_set);
    assert_eq!(other.tool_names(), all);

    // core.list_tools agrees with tools/list.
    let catalog = tool_ok(&reader.tool("core.list_tools", json!({}))).clone();
    let listed = names(&catalog, "tools", "name");
    assert!(!listed.is_empty() && listed.iter().all(|n| read_set.contains(n)), "{listed:?}");
    let full_catalog = tool_ok(&other.tool("core.list_tools", json!({})))["count"].as_u64().unwrap();
    assert!(full_catalog > listed.len() as u64, "{full_catalog} vs {listed:?}");
    let md = tool_ok(&reader.tool("core.tool_instructions", json!({})))["markdown"].as_str().unwrap().to_string();
    assert!(md.contains("`memory.search`") && !md.contains("`tree.read_chunk`"), "{md}");

    // Outside the set: refused, naming the entry and the key, and audited.
    let refused =
        reader.request("tools/call", json!({"name": "tree.tag", "arguments": {"chunk_id": "x", "tags": ["a"]}}));
    let (code, msg) = rpc_error(&refused);
    assert_eq!(code, -32602);
    assert!(msg.starts_with("[policy-blocked]") && msg.contains("[clients.reader]"), "{msg}");
    assert!(msg.contains("`clients.reader.tools`") && msg.contains("`Reader App`"), "{msg}");
    assert_eq!(refused["error"]["data"]["client_entry"], "clients.reader", "{refused}");
    let row = audit(&mut other).into_iter().find(|r| r["tool"] == "tree.tag").expect("an audit row for the refusal");
    assert_eq!((row["success"].as_bool(), row["source"].as_str()), (Some(false), Some("mcp:reader-app")), "{row}");
    assert!(row["error"].as_str().unwrap().contains("clients.reader"), "{row}");

    // The readonly level refuses the writes it lets the client see; the writer stores.
    let read_only = reader.request("tools/call", json!({"name": "memory.search", "arguments": {"query": "x"}}));
    assert!(read_only.get("error").is_none(), "{read_only}");
    let stored =
        tool_ok(&writer.tool("memory.store", json!({"title": "Pier notes", "content": "Herons by the pier."}))).clone();
    assert!(stored["id"].is_string(), "{stored}");

    // Resources and prompts follow the set too.
    let resources = names(&reader.call("resources/list", json!({})), "resources", "uri");
    assert!(!resources.is_empty() && resources.iter().all(|u| u.starts_with("openhuman://prompts/")), "{resources:?}");
    assert!(names(&reader.call("resources/templates/list", json!({})), "resourceTemplates", "uriTemplate").is_empty());
    let denied = reader.request("resources/read", json!({"uri": "openhuman://memory"}));
    let (_, msg) = rpc_error(&denied);
    assert!(msg.contains("resource `openhuman://memory`") && msg.contains("`clients.reader.resources`"), "{msg}");
    let ok = reader.call("resources/read", json!({"uri": "openhuman://prompts/identity"}));
    assert!(ok["contents"][0]["text"].is_string(), "{ok}");
    assert_eq!(names(&reader.call("prompts/list", json!({})), "prompts", "name"), ["recall_context"]);
    let refused = reader.request("prompts/get", json!({"name": "agent.researcher", "arguments": {"task": "x"}}));
    let (_, msg) = rpc_error(&refused);
    assert!(msg.contains("prompt `agent.researcher`") && msg.contains("`clients.reader.prompts`"), "{msg}");
    let rows = audit(&mut other);
    assert!(rows.iter().any(|r| r["tool"] == "resources/read" && r["args_summary"]["uri"] == "openhuman://memory"));
    assert!(rows.iter().any(|r| r["tool"] == "prompts/get" && r["args_summary"]["prompt"] == "agent.researcher"));

    // Over HTTP the same names get the same sets, in the same order: a session and a stateless
    // request that names its client in `_meta`.
    let c = d.http_client();
    assert_eq!(http_session_tools(&c, "Reader App"), read_set);
    assert_eq!(http_stateless(&c, "writer-app", "tools/list", json!({})), write_set);
    assert_eq!(http_stateless(&c, "nobody", "tools/list", json!({})), all);
    let r =
        post(&c, &modern(7, "writer-app", "tools/call", json!({"name": "memory.forget", "arguments": {"ids": ["x"]}})));
    let (_, msg) = rpc_error(&r);
    assert!(msg.contains("[clients.writer]") && msg.contains("`clients.writer.deny_tools`"), "{msg}");

    // A reload that changes the reader's set tells the reader, and only the reader.
    home.write_config(&CONFIG.replace(r#""memory.recall"]"#, r#""memory.recall", "memory.store"]"#));
    assert!(d.reload().contains("tools_changed=true"));
    let told = reader.lines.next_json();
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    assert!(reader.tool_names().contains(&"memory.store".to_string()));
    assert_eq!(writer.tool_names(), write_set, "the same list, in the same order, after a reload");
    for p in [&mut writer, &mut other] {
        p.call("ping", json!({}));
        let heard: Vec<&Value> =
            p.notifications.iter().filter(|n| n["method"] == "notifications/tools/list_changed").collect();
        assert!(heard.is_empty(), "a session whose set did not change heard {heard:?}");
    }
    let denied =
        reader.request("tools/call", json!({"name": "memory.store", "arguments": {"title": "t", "content": "c"}}));
    let (code, msg) = rpc_error(&denied);
    assert_eq!(code, -32602);
    assert!(msg.starts_with("[policy-blocked]") && msg.contains("`clients.reader.level`"), "{msg}");
    let row = audit(&mut other).into_iter().find(|r| r["tool"] == "memory.store" && r["success"] == false);
    assert!(row.is_some_and(|r| r["error"].as_str().unwrap().contains("clients.reader")), "the denial is audited");
    d.stop().unwrap();
}

#[test]
fn register_writes_a_restricted_entry_the_running_daemon_takes_and_remove_takes_it_out() {
    let home = Home::new();
    let d = Daemon::start(&home);
    let mut cursor = Peer::socket(&home.socket());
    cursor.initialize("cursor-vscode");
    let before = cursor.tool_names();
    assert!(before.contains(&"memory.store".to_string()));
    // The client's own config goes under a HOME of the test's, never the user's.
    let user_home = home.path().join("user");
    std::fs::create_dir_all(&user_home).unwrap();
    let run = |args: &[&str]| {
        let out = home.daemon_cmd().env("HOME", &user_home).args(args).output().expect("run register");
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {text}");
        text
    };
    let said = run(&["register", "cursor", "--readonly", "--tools", "memory.*,core.list_tools"]);
    assert!(said.contains("[clients.cursor]") && said.contains("reloaded"), "{said}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("[clients.cursor]") && config.contains("\"cursor-vscode\""), "{config}");
    assert!(std::fs::read_to_string(user_home.join(".cursor/mcp.json")).unwrap().contains("openhuman"));
    assert_eq!(cursor.lines.next_json()["method"], "notifications/tools/list_changed");
    let after = cursor.tool_names();
    assert!(!after.is_empty() && after.iter().all(|n| n.starts_with("memory.") || n == "core.list_tools"), "{after:?}");
    let refused =
        cursor.request("tools/call", json!({"name": "memory.store", "arguments": {"title": "t", "content": "c"}}));
    let (_, msg) = rpc_error(&refused);
    assert!(msg.contains("`clients.cursor.level`"), "{msg}");
    let check = home.daemon_cmd().args(["config", "check"]).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));

    let said = run(&["register", "cursor", "--remove"]);
    assert!(said.contains("removed [clients.cursor]"), "{said}");
    assert!(!std::fs::read_to_string(home.path().join("config.toml")).unwrap().contains("clients"));
    assert!(!user_home.join(".cursor/mcp.json").exists(), "the file register created is gone again");
    assert_eq!(cursor.lines.next_json()["method"], "notifications/tools/list_changed");
    assert_eq!(cursor.tool_names(), before);
    d.stop().unwrap();
}

const BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

/// POST /mcp; a 2026-07-28 request with the headers that mirror its body, as clients send them.
fn post(c: &Client, body: &Value) -> Value {
    let method = body["method"].as_str().unwrap_or_default().to_string();
    let name = match method.as_str() {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        _ => None,
    };
    let mut h = vec![BOTH, JSON];
    if body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28" {
        h.push(("Mcp-Method", method.as_str()));
        if let Some(n) = name {
            h.push(("Mcp-Name", n));
        }
    }
    let r = c.send("POST", "/mcp", &h, body.to_string().as_bytes());
    assert!(r.status == 200 || r.status == 400, "{} {}", r.status, r.text());
    r.json()
}

fn modern(id: i64, client: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn http_stateless(c: &Client, client: &str, method: &str, params: Value) -> Vec<String> {
    names(&post(c, &modern(1, client, method, params))["result"], "tools", "name")
}

/// `tools/list` in an HTTP session opened as `client`.
fn http_session_tools(c: &Client, client: &str) -> Vec<String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client}}});
    let r = c.send("POST", "/mcp", &[BOTH, JSON], init.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let h = [BOTH, JSON, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(c.send("POST", "/mcp", &h, note.to_string().as_bytes()).status, 202);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let r = c.send("POST", "/mcp", &h, list.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let body = if r.header("content-type").is_some_and(|t| t.starts_with("text/event-stream")) {
        r.events().into_iter().map(|e| e.json()).find(|m| m["id"] == 1).expect("the reply")
    } else {
        r.json()
    };
    names(&body["result"], "tools", "name")
}
