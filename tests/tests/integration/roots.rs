//! MCP roots through the shim, with the real binaries: a client that declared `roots` is asked
//! `roots/list` on its first memory call that needs a project, and not again until it sends
//! `notifications/roots/list_changed`; its first `file://` root (the git root above it) is the
//! project of what it stores, unless the shim's working folder lies inside one of its roots;
//! search, recall and the `recall_context` prompt prefer that project; a client that declared
//! no roots is never asked.

use std::path::Path;

use openhuman_tests::{ChildPeer, Daemon, Home, Peer};
use serde_json::{Value, json};

use crate::facts::{repo, text};

fn uri(p: &Path) -> String {
    format!("file://{}", text(p).replace(' ', "%20"))
}

/// A shim session whose client runs in `cwd` and declares `capabilities`.
fn session(home: &Home, cwd: &Path, capabilities: Value) -> ChildPeer {
    let mut cmd = home.shim_cmd();
    cmd.current_dir(cwd);
    let mut s = ChildPeer::spawn(cmd);
    s.peer.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
               "clientInfo": {"name": "Roots Test", "version": "1"}}),
    );
    s.peer.notify("notifications/initialized", json!({}));
    s
}

/// Calls `tool`, answering every `roots/list` the server sends meanwhile with `roots`; returns
/// the result and how many times it asked.
fn call(peer: &mut Peer, tool: &str, args: Value, roots: &[&Path]) -> (Value, usize) {
    ask(peer, "tools/call", json!({"name": tool, "arguments": args}), roots)
}

/// Sends the request `method`, answering every `roots/list` meanwhile with `roots`.
fn ask(peer: &mut Peer, method: &str, params: Value, roots: &[&Path]) -> (Value, usize) {
    let id = peer.start(method, params.clone());
    let mut asked = 0;
    loop {
        let msg = peer.lines.next_json();
        if msg.get("id") == Some(&id) && msg.get("method").is_none() {
            assert!(msg.get("error").is_none(), "{method} {params} failed: {msg}");
            return (msg["result"].clone(), asked);
        }
        match msg.get("method").and_then(Value::as_str) {
            Some("roots/list") => {
                asked += 1;
                let list: Vec<Value> = roots.iter().map(|r| json!({"uri": uri(r), "name": "root"})).collect();
                peer.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": list}}));
            }
            Some(_) => peer.notifications.push(msg),
            None => panic!("unexpected message while waiting for {id}: {msg}"),
        }
    }
}

fn store(peer: &mut Peer, title: &str, roots: &[&Path]) -> (String, usize) {
    let (r, asked) = call(peer, "memory.store", json!({"title": title, "content": format!("{title}: notes.")}), roots);
    assert_eq!(r["structuredContent"]["status"], "created", "{r}");
    (r["structuredContent"]["id"].as_str().unwrap().to_string(), asked)
}

/// The project memory recorded for the document `id`.
fn project_of(peer: &mut Peer, title: &str, id: &str) -> Value {
    let (r, _) = call(peer, "memory.search", json!({"query": title, "project_boost": 0}), &[]);
    let hits = r["structuredContent"]["hits"].as_array().unwrap().clone();
    let hit = hits.iter().find(|h| h["source_id"] == id).unwrap_or_else(|| panic!("{id} not found: {r}"));
    hit["project"].clone()
}

#[test]
fn roots_name_a_sessions_project_and_are_asked_once_per_change() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let (_a, a) = repo();
    let (_b, b) = repo();
    // A client started outside both (as a GUI client starts in its home folder).
    let elsewhere = tempfile::Builder::new().prefix("oh-elsewhere-").tempdir().unwrap();
    let outside = elsewhere.path().canonicalize().unwrap();

    let mut s = session(&home, &outside, json!({"roots": {"listChanged": true}}));
    let (first, asked) = store(&mut s.peer, "Quince harbour", &[&a.join("src")]);
    assert_eq!(asked, 1, "the first call that needs a project asks");
    // The root is a folder inside repository `a`: the project is `a`, not the shim's folder.
    assert_eq!(project_of(&mut s.peer, "Quince harbour", &first), text(&a).as_str());
    let (_, asked) = store(&mut s.peer, "Quince lighthouse", &[&a]);
    assert_eq!(asked, 0, "the answer is kept for the session");
    // The client's roots change: the next call asks again, and stores into the new root.
    s.peer.notify("notifications/roots/list_changed", json!({}));
    let (moved, asked) = store(&mut s.peer, "Quince ferry", &[&b]);
    assert_eq!(asked, 1);
    assert_eq!(project_of(&mut s.peer, "Quince ferry", &moved), text(&b).as_str());
    // Search prefers the session's (new) project.
    let (r, _) = call(&mut s.peer, "memory.search", json!({"query": "Quince"}), &[&b]);
    assert_eq!(r["structuredContent"]["hits"][0]["source_id"], moved.as_str(), "{r}");
    // So do recall and the `recall_context` prompt, over a memory of the old project that the
    // words alone rank first.
    let (r, _) = call(
        &mut s.peer,
        "memory.store",
        json!({"title": "Quince", "content": "Quince: notes.", "project": text(&a)}),
        &[],
    );
    assert_eq!(r["structuredContent"]["status"], "created", "{r}");
    let (r, _) = call(&mut s.peer, "memory.recall", json!({"query": "Quince", "project_boost": 0}), &[&b]);
    assert_eq!(r["structuredContent"]["chunks"][0]["title"], "Quince", "{r}");
    let (r, _) = call(&mut s.peer, "memory.recall", json!({"query": "Quince"}), &[&b]);
    assert_eq!(r["structuredContent"]["chunks"][0]["title"], "Quince ferry", "{r}");
    let (got, _) =
        ask(&mut s.peer, "prompts/get", json!({"name": "recall_context", "arguments": {"topic": "Quince"}}), &[&b]);
    let packed = got["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(packed.contains("## [1] Quince ferry\n"), "the session's project first: {packed}");
    // A call that names its project is not held up by a question.
    s.peer.notify("notifications/roots/list_changed", json!({}));
    let (r, asked) = call(&mut s.peer, "memory.search", json!({"query": "Quince", "prefer_project": text(&a)}), &[]);
    assert_eq!(asked, 0, "{r}");

    // The shim's folder inside one of the roots wins over the first root.
    let mut inner = session(&home, &a.join("src/deep"), json!({"roots": {}}));
    let (id, asked) = store(&mut inner.peer, "Quince pier", &[&b, &a]);
    assert_eq!(asked, 1);
    assert_eq!(project_of(&mut inner.peer, "Quince pier", &id), text(&a).as_str());

    // Without the capability nothing is asked; the shim's folder is the project.
    let mut plain = session(&home, &outside, json!({}));
    let (id, asked) = store(&mut plain.peer, "Quince dock", &[&b]);
    assert_eq!(asked, 0, "a client without roots is never sent roots/list");
    assert_eq!(project_of(&mut plain.peer, "Quince dock", &id), text(&outside).as_str());
    assert!(plain.peer.notifications.iter().all(|n| n["method"] != "roots/list"));
}
