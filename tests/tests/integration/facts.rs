//! Projects, facts that change, duplicates and start-of-session context with the real binaries:
//! the shim tells the daemon where its client runs (the git root above its working folder), so
//! what a session stores belongs to that project and its searches prefer it; a fact stored
//! again under its title supersedes the old version (current first, `memory.history`, `as_of`);
//! the same fact stored twice is merged; `context` prints a project's context through the daemon
//! and in process; `register --hooks` installs the SessionStart hooks in a temporary HOME and
//! `register --remove` takes them out; `forget --project` deletes a project, audited.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use openhuman_tests::{ChildPeer, Daemon, Home};
use serde_json::{Value, json};

/// A folder that is a git repository's root (a `.git` folder is all that is looked for), with
/// `src/deep` in it.
pub(crate) fn repo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix("oh-repo-").tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

pub(crate) fn text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A shim session whose client runs in `cwd`.
fn session_in(home: &Home, cwd: &Path) -> ChildPeer {
    let mut cmd = home.shim_cmd();
    cmd.current_dir(cwd);
    let mut s = ChildPeer::spawn(cmd);
    s.peer.initialize("Facts Test");
    s
}

fn sc(r: &Value) -> &Value {
    &r["structuredContent"]
}

fn run(home: &Home, cwd: &Path, env: &[(&str, &Path)], args: &[&str]) -> (i32, String, String) {
    let mut cmd: Command = home.daemon_cmd();
    cmd.current_dir(cwd).args(args).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_session_stores_into_its_project_and_prefers_it_and_facts_change_over_the_wire() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let (_keep, root) = repo();
    let (_keep2, other) = repo();
    let project = text(&root);

    // Written from a session in a subfolder of the repository: the project is the git root.
    let mut s = session_in(&home, &root.join("src/deep"));
    let stored =
        s.peer.tool("memory.store", json!({"title": "Test runner", "content": "Tests run with cargo nextest here."}));
    assert_eq!(sc(&stored)["status"], "created", "{stored}");
    let hit = s.peer.tool("memory.search", json!({"query": "nextest"}));
    assert_eq!(sc(&hit)["hits"][0]["project"], project.as_str(), "{hit}");

    // Another project's note matches the same words better; this session still sees its own first.
    let mut t = session_in(&home, &other);
    // The same words in another project, stored later: it wins ties.
    t.peer.tool("memory.store", json!({"title": "Other runner", "content": "Tests run with cargo nextest here."}));
    let from_other = t.peer.tool("memory.search", json!({"query": "nextest"}));
    assert_eq!(sc(&from_other)["hits"][0]["project"], text(&other).as_str(), "{from_other}");
    let mine = s.peer.tool("memory.search", json!({"query": "nextest"}));
    let hits = sc(&mine)["hits"].as_array().unwrap();
    assert_eq!(hits[0]["project"], project.as_str(), "the session's project first: {mine}");
    let score = |h: &Value| h["score"].as_f64().unwrap();
    assert!((score(&hits[0]) / score(&hits[1]) - 1.2).abs() < 1e-6, "boosted by 0.2: {mine}");
    let off = s.peer.tool("memory.search", json!({"query": "nextest", "project_boost": 0}));
    let hits = sc(&off)["hits"].as_array().unwrap();
    assert_eq!(score(&hits[0]), score(&hits[1]), "no boost: {off}");
    let only = s.peer.tool("memory.recall", json!({"query": "nextest", "filter": {"project": text(&other)}}));
    assert!(sc(&only)["chunks"].as_array().unwrap().iter().all(|c| c["project"] == text(&other).as_str()), "{only}");
    let listed = s.peer.tool("memory.projects", json!({}));
    assert_eq!(sc(&listed)["projects"].as_array().unwrap().len(), 2, "{listed}");

    // A fact stored again under its title supersedes the old version.
    let v1 = s.peer.tool(
        "memory.store",
        json!({"title": "Deploy day", "content": "Deploys go out on Fridays.", "observed_at": "2025-01-10T00:00:00Z"}),
    );
    let v2 = s.peer.tool(
        "memory.store",
        json!({"title": "Deploy day", "content": "Deploys go out on Tuesdays now.", "observed_at": "2025-06-10T00:00:00Z"}),
    );
    let (old, new) = (sc(&v1)["chunk_ids"][0].clone(), sc(&v2)["chunk_ids"][0].clone());
    assert_eq!(sc(&v2)["supersedes"], json!([old]));
    let r = s.peer.tool("memory.recall", json!({"query": "when do deploys go out Fridays"}));
    let chunks = sc(&r)["chunks"].as_array().unwrap();
    let at = |id: &Value| chunks.iter().position(|c| &c["chunk_id"] == id).unwrap();
    assert!(at(&new) < at(&old), "current first: {r}");
    assert_eq!(chunks[at(&old)]["superseded"]["by"], new);
    let h = s.peer.tool("memory.history", json!({"id": old}));
    assert_eq!(sc(&h)["current"], new, "{h}");
    assert_eq!(sc(&h)["versions"].as_array().unwrap().len(), 2);
    let then = s.peer.tool("memory.recall", json!({"query": "deploys go out", "as_of": "2025-03-01T00:00:00Z"}));
    let then = sc(&then)["chunks"].as_array().unwrap().clone();
    assert_eq!(then[0]["chunk_id"], old, "as of March the Friday rule was current: {then:?}");
    assert!(then.iter().all(|c| c["chunk_id"] != new && c.get("superseded").is_none()));

    // The same fact again is merged, with its tags.
    let again = s.peer.tool(
        "memory.store",
        json!({"title": "Runner", "content": "tests run with cargo nextest here", "tags": ["ci"]}),
    );
    assert_eq!(sc(&again)["status"], "merged", "{again}");
    assert_eq!(sc(&again)["merged_into"], sc(&stored)["id"]);

    // `context` prints the project's current context through the running daemon.
    let (code, out, err) = run(&home, &root.join("src"), &[], &["context", "--budget", "500"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&project) && out.contains("Tuesdays") && !out.contains("Fridays"), "{out}");
    assert!(!out.contains("Other runner"), "only this project: {out}");
    let (_, hook, _) = run(&home, &root, &[], &["context", "--hook"]);
    let hook: Value = serde_json::from_str(hook.trim()).unwrap();
    assert_eq!(hook["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(hook["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("nextest"));
    // The same packing is a resource.
    let uri = format!("openhuman://context/{}", project.replace('/', "%2F"));
    let res = s.peer.call("resources/read", json!({"uri": uri}));
    assert!(res["contents"][0]["text"].as_str().unwrap().contains("Tuesdays"), "{res}");

    // Forgetting the whole project is one audited command.
    let (code, out, err) = run(&home, &root, &[], &["forget", "--project", &project, "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("forgot the project"), "{out}");
    let left = s.peer.tool("memory.search", json!({"query": "deploys", "filter": {"project": project}}));
    assert_eq!(sc(&left)["hits"], json!([]));
    let (_, audit, _) = run(&home, &root, &[], &["audit", "--json"]);
    assert!(audit.contains("openhuman.memory_forget_project"), "{audit}");
}

#[test]
fn context_runs_in_process_without_a_daemon() {
    let home = Home::new();
    let (_keep, root) = repo();
    let (code, out, err) = run(&home, &root, &[], &["context"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Nothing in the user's memory belongs to the project"), "{out}");
}

#[test]
fn hooks_are_installed_and_removed_in_the_clients_settings() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let env = [("HOME", user.path())];
    let claude = user.path().join(".claude/settings.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    std::fs::write(
        &claude,
        r#"{"model": "opus", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}"#,
    )
    .unwrap();
    let (code, out, err) = run(&home, user.path(), &env, &["register", "claude-code", "--hooks"]);
    assert_eq!(code, 0, "{out}{err}");
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    let groups = settings["hooks"]["SessionStart"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{settings}");
    let ours = groups[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(ours.ends_with("context --hook") && ours.contains("openhumand-mcp"), "{ours}");
    assert_eq!(groups[1]["matcher"], "startup|resume|clear|compact");
    // Again: still one hook of ours.
    run(&home, user.path(), &env, &["register", "claude-code", "--hooks"]);
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    assert_eq!(settings["hooks"]["SessionStart"].as_array().unwrap().len(), 2);

    let gemini = user.path().join(".gemini/settings.json");
    let (code, out, err) = run(&home, user.path(), &env, &["register", "gemini", "--hooks"]);
    assert_eq!(code, 0, "{out}{err}");
    let g: Value = serde_json::from_str(&std::fs::read_to_string(&gemini).unwrap()).unwrap();
    assert!(g["hooks"]["SessionStart"][0]["hooks"][0]["command"].as_str().unwrap().ends_with("context --hook"), "{g}");
    assert!(g["mcpServers"]["openhuman"].is_object(), "the MCP entry too: {g}");

    let (code, out, err) = run(&home, user.path(), &env, &["register", "claude-code", "--remove"]);
    assert_eq!(code, 0, "{out}{err}");
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    assert_eq!(
        settings,
        json!({"model": "opus", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}),
        "the user's own settings stay"
    );
    // Uninstall takes out the hook of a file it created, file and all.
    let (code, out, err) = run(&home, user.path(), &env, &["uninstall", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!gemini.exists(), "{out}");
}

#[test]
fn a_move_in_other_words_supersedes_where_the_user_lived_over_the_wire() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let (_keep, root) = repo();
    let mut s = session_in(&home, &root);
    let paris = s.peer.tool(
        "memory.store",
        json!({"title": "Home", "content": "I live in Paris.", "observed_at": "2024-01-10T00:00:00Z"}),
    );
    let asked = s.peer.tool(
        "memory.store",
        json!({"title": "Question", "content": "Do you live in Berlin?", "observed_at": "2024-06-10T00:00:00Z"}),
    );
    assert!(sc(&asked).get("supersedes").is_none(), "a question changes nothing: {asked}");
    let berlin = s.peer.tool(
        "memory.store",
        json!({"title": "News", "content": "We moved to Berlin last spring!", "observed_at": "2025-01-10T00:00:00Z"}),
    );
    let (old, new) = (sc(&paris)["chunk_ids"][0].clone(), sc(&berlin)["chunk_ids"][0].clone());
    assert_eq!(sc(&berlin)["supersedes"], json!([old]), "{berlin}");
    let r = s.peer.tool("memory.recall", json!({"query": "where do I live Paris Berlin"}));
    let chunks = sc(&r)["chunks"].as_array().unwrap();
    let at = |id: &Value| chunks.iter().position(|c| &c["chunk_id"] == id).unwrap();
    assert!(at(&new) < at(&old), "current first: {r}");
    assert_eq!(chunks[at(&old)]["superseded"]["reason"], "same_attribute", "{r}");
    let h = s.peer.tool("memory.history", json!({"id": new}));
    assert_eq!(sc(&h)["versions"][0]["chunk_id"], old, "{h}");
    assert_eq!(sc(&h)["current"], new);
    let then = s.peer.tool("memory.recall", json!({"query": "where do I live", "as_of": "2024-12-01T00:00:00Z"}));
    assert_eq!(sc(&then)["chunks"][0]["chunk_id"], old, "{then}");

    // A learning of the same attribute, another value, supersedes the one before it.
    let vim = s.peer.tool("memory.learn", json!({"text": "My favourite editor is Vim.", "kind": "preference"}));
    let helix = s.peer.tool("memory.learn", json!({"text": "My favourite editor is Helix", "kind": "preference"}));
    assert_eq!(sc(&helix)["supersedes"], json!([sc(&vim)["chunk_id"]]), "{helix}");
}
