//! Coding agents' session logs with the real daemon: logs in Claude Code's, Codex CLI's and
//! Gemini CLI's on-disk formats under a temporary HOME, turns appended while the daemon runs
//! and found by search; a last line still being written not read until it is complete; a
//! rewritten log read again without duplicates; a malformed line counted in `status`;
//! thinking and secrets absent from every file the daemon writes; an excluded project not read;
//! the metadata each turn carries; a restart resuming where it stopped; `forget --session`;
//! and the offer `register` makes. Every wait polls with a deadline; nothing asserts on time.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use openhuman_tests::{Daemon, Home, Peer};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);
const SECRET: &str = "sk-proj-Qw3rTy7Ui9Op2As4Df6Gh8Jk";

fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The stored chunks (content and metadata) holding every word of `words`, by keyword.
fn holding(peer: &mut Peer, words: &str) -> Vec<Value> {
    let r = peer.tool("memory.fetch", json!({"query": words, "mode": "keyword", "limit": 100}));
    r["structuredContent"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|i| i["content"].as_str().is_some_and(|c| c.to_lowercase().contains(&words.to_lowercase())))
        .collect()
}

fn found(peer: &mut Peer, word: &str) -> Value {
    poll(&format!("`{word}` to be searchable"), || holding(peer, word).into_iter().next())
}

fn status(home: &Home) -> Value {
    let out = home.daemon_cmd().args(["status", "--json"]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("status: {}", String::from_utf8_lossy(&out.stdout)))
}

fn session_status(home: &Home, i: usize) -> Value {
    status(home)["watch"]["sources"][i]["sessions"].clone()
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn claude(uuid: &str, kind: &str, content: Value, cwd: &Path, session: &str) -> String {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd, "sessionId": session,
        "version": "2.1.1", "gitBranch": "feature/otters", "type": kind, "uuid": uuid,
        "timestamp": "2026-11-30T10:00:00.000Z", "message": {"role": kind, "content": content},
    })
    .to_string()
        + "\n"
}

/// Claude Code's folder name for a project.
fn encoded(p: &Path) -> String {
    p.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// Every byte the daemon wrote under its home (database, WAL, indexes, logs), as text.
fn everything_written(home: &Home) -> String {
    let mut out = Vec::new();
    let mut dirs = vec![home.path().to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.file_name().is_some_and(|n| n != "config.toml")
                && let Ok(bytes) = std::fs::read(&p)
            {
                out.extend_from_slice(&bytes);
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The daemon command with a user home of its own (and no agent folder overrides).
fn user_cmd(home: &Home, user: &Path) -> Command {
    let mut c = home.daemon_cmd();
    c.env("HOME", user).env_remove("XDG_CONFIG_HOME").env_remove("CLAUDE_CONFIG_DIR").env_remove("CODEX_HOME");
    c
}

fn run_ok(mut c: Command, args: &[&str]) -> String {
    let out = c.args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{args:?}: {text}");
    text
}

#[test]
fn claude_code_sessions_are_read_live() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let user = user.path().canonicalize().unwrap();
    let project = user.join("code/otter-app");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let cwd = project.join("src");
    std::fs::create_dir_all(&cwd).unwrap();
    let private = user.join("code/private-client");
    std::fs::create_dir_all(&private).unwrap();
    let logs = user.join(".claude/projects");
    let log = logs.join(encoded(&project)).join("sess-otter.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    // A session of the excluded project, in its own folder and under another folder's name.
    let hidden = logs.join(encoded(&private)).join("sess-private.jsonl");
    std::fs::create_dir_all(hidden.parent().unwrap()).unwrap();
    append(&hidden, &claude("p1", "user", json!("the quokka pricing sheet"), &private, "sess-private"));
    let stray = logs.join("-elsewhere").join("sess-stray.jsonl");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    append(&stray, &claude("s1", "user", json!("the wombat contract"), &private.join("docs"), "sess-stray"));

    append(
        &log,
        &claude("u1", "user", json!(format!("set up the zebrafish exporter; the key is {SECRET}")), &cwd, "sess-otter"),
    );
    append(
        &log,
        &claude(
            "a1",
            "assistant",
            json!([{"type": "thinking", "thinking": "privately pondering marmalade", "signature": "x"},
                   {"type": "text", "text": "The zebrafish exporter now reads its key from the environment."},
                   {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": cwd.join("export.rs"), "old_string": "a", "new_string": "b"}},
                   {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "cargo test -p exporter"}}]),
            &cwd,
            "sess-otter",
        ),
    );

    // Off until asked: `sources add --agent` writes the source.
    let said = run_ok(
        user_cmd(&home, &user),
        &["sources", "add", "--agent", "claude-code", "--exclude-project", &private.to_string_lossy()],
    );
    assert!(said.contains("reading Claude Code sessions from"), "{said}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("kind = \"claude-code\"") && config.contains("exclude_projects"), "{config}");

    let _d = Daemon::start(&home);
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Sessions Test");
    let exporter = found(&mut peer, "zebrafish exporter now reads");
    let meta = &exporter["metadata"];
    assert_eq!(meta["project"], json!(project.to_string_lossy()), "{exporter}");
    assert_eq!(meta["session_id"], "sess-otter");
    assert_eq!(meta["branch"], "feature/otters");
    assert_eq!(meta["agent"], "claude-code");
    assert_eq!(meta["files"], json!([cwd.join("export.rs").to_string_lossy()]));
    assert_eq!(meta["commands"], json!(["cargo test -p exporter"]));

    // Appended while running: searchable.
    append(&log, &claude("u2", "user", json!("now rename the heron module"), &cwd, "sess-otter"));
    found(&mut peer, "heron");

    // A last line still being written is not read; once complete it is.
    let line = claude("u3", "user", json!("and document the narwhal flag"), &cwd, "sess-otter");
    let (first, rest) = line.split_at(60);
    append(&log, first);
    poll("the partial line to be seen", || {
        (session_status(&home, 0)["waiting_bytes"].as_u64() == Some(60)).then_some(())
    });
    assert!(holding(&mut peer, "narwhal").is_empty(), "a partial line is not indexed");
    append(&log, rest);
    found(&mut peer, "narwhal");

    // A malformed line and an unknown record are counted, and the file goes on.
    append(&log, "{\"type\": \"user\", \"message\": \n");
    append(&log, "{\"type\":\"hologram\",\"uuid\":\"h1\"}\n");
    append(&log, &claude("u4", "user", json!("the pelican migration"), &cwd, "sess-otter"));
    found(&mut peer, "pelican");
    let s = session_status(&home, 0);
    assert_eq!((s["malformed"].as_u64(), s["unknown"].as_u64()), (Some(1), Some(1)), "{s}");
    let text = String::from_utf8_lossy(&home.daemon_cmd().args(["status"]).output().unwrap().stdout).into_owned();
    assert!(text.contains("1 malformed lines") && text.contains("1 unknown records"), "{text}");

    // Rewritten shorter (as a client compacting its log might): read again, nothing doubled.
    let kept: String = std::fs::read_to_string(&log).unwrap().lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, kept + &claude("u5", "user", json!("finally the walrus release"), &cwd, "sess-otter"))
        .unwrap();
    found(&mut peer, "walrus");
    assert_eq!(holding(&mut peer, "zebrafish exporter now reads").len(), 1, "no duplicate after the rewrite");
    assert_eq!(holding(&mut peer, "heron").len(), 1, "what the rewrite dropped stays, once");

    // The excluded project was not read, neither by its folder nor by a session's cwd.
    assert!(holding(&mut peer, "quokka").is_empty() && holding(&mut peer, "wombat").is_empty());
    let s = session_status(&home, 0);
    assert!(s["excluded"].as_u64() >= Some(1), "{s}");

    // Thinking and the secret are in no file the daemon wrote.
    let written = everything_written(&home);
    assert!(!written.contains("marmalade"), "thinking was stored");
    assert!(!written.contains(SECRET), "the secret was stored");
    assert!(!written.contains("quokka"), "the excluded project was stored");

    // A whole session forgotten in one audited command, and not read again.
    let said = run_ok(home.daemon_cmd(), &["forget", "--session", "sess-otter", "--yes"]);
    assert!(said.contains("forgot session:sess-otter"), "{said}");
    poll("the session to leave memory", || holding(&mut peer, "walrus").is_empty().then_some(()));
    append(&log, &claude("u6", "user", json!("one more ibis note"), &cwd, "sess-otter"));
    append(&stray, &claude("s2", "user", json!("a separate gannet note"), &user.join("code/other"), "sess-gannet"));
    found(&mut peer, "gannet");
    assert!(holding(&mut peer, "ibis").is_empty(), "a forgotten session is not read again");
    let audit = run_ok(home.daemon_cmd(), &["audit", "--tool", "memory.forget", "--json"]);
    assert!(audit.contains("session:sess-otter"), "{audit}");
}

#[test]
fn codex_and_gemini_sessions_resume_after_a_restart() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let user = user.path().canonicalize().unwrap();
    let rollout = user.join(".codex/sessions/2026/11/30/rollout-2026-11-30T09-00-00-cx1.jsonl");
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    let item = |ts: &str, payload: Value| {
        json!({"timestamp": ts, "type": "response_item", "payload": payload}).to_string() + "\n"
    };
    append(
        &rollout,
        &(json!({"timestamp":"2026-11-30T09:00:00.000Z","type":"session_meta","payload":{"id":"cx-1","cwd":"/srv/ledger","originator":"codex_cli_rs","cli_version":"0.77.0","git":{"commit_hash":"abc","branch":"main"}}}).to_string() + "\n"),
    );
    append(
        &rollout,
        &item(
            "2026-11-30T09:00:01.000Z",
            json!({"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}),
        ),
    );
    append(
        &rollout,
        &item(
            "2026-11-30T09:00:02.000Z",
            json!({"type":"message","role":"user","content":[{"type":"input_text","text":"why does the ocelot job fail"}]}),
        ),
    );
    append(
        &rollout,
        &item(
            "2026-11-30T09:00:03.000Z",
            json!({"type":"reasoning","summary":[{"type":"summary_text","text":"secretly considering tapioca"}],"encrypted_content":"gAAA"}),
        ),
    );
    append(
        &rollout,
        &item(
            "2026-11-30T09:00:04.000Z",
            json!({"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat jobs/ocelot.toml\"]}","call_id":"c1"}),
        ),
    );
    let long_output = format!("{}{}", "line of log output\n".repeat(400), "the final verdict: ocelot timeout");
    append(
        &rollout,
        &item("2026-11-30T09:00:05.000Z", json!({"type":"function_call_output","call_id":"c1","output":long_output})),
    );

    let chats = user.join(".gemini/tmp/5f2a9c/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let doc = chats.join("session-2026-11-30T09-00-g1.json");
    let mut session = json!({"sessionId":"g-1","projectHash":"5f2a9c","startTime":"2026-11-30T09:00:00.000Z","messages":[
        {"id":"m1","timestamp":"2026-11-30T09:00:00.000Z","type":"user","content":"explain the flamingo cache"}]});
    std::fs::write(&doc, session.to_string()).unwrap();

    for agent in ["codex", "gemini"] {
        run_ok(user_cmd(&home, &user), &["sources", "add", "--agent", agent]);
    }
    let d = Daemon::start(&home);
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Sessions Resume");
    let ocelot = found(&mut peer, "ocelot job fail");
    assert_eq!(
        (ocelot["metadata"]["session_id"].as_str(), ocelot["metadata"]["project"].as_str()),
        (Some("cx-1"), Some("/srv/ledger"))
    );
    assert_eq!(ocelot["metadata"]["branch"], "main");
    let output = found(&mut peer, "final verdict");
    let content = output["content"].as_str().unwrap();
    assert!(
        content.contains("bytes left out") && content.len() < 1500,
        "the output is condensed: {} bytes",
        content.len()
    );
    found(&mut peer, "flamingo");

    // Gemini rewrites its document: the new message is read, the old one not doubled.
    session["messages"].as_array_mut().unwrap().push(json!({"id":"m2","timestamp":"2026-11-30T09:00:09.000Z","type":"gemini","content":"The flamingo cache keeps thumbnails.","thoughts":[{"subject":"plan","description":"quietly weighing kumquats","timestamp":"x"}]}));
    std::fs::write(&doc, session.to_string()).unwrap();
    found(&mut peer, "thumbnails");
    assert_eq!(holding(&mut peer, "explain the flamingo").len(), 1);
    drop(peer);
    d.stop().unwrap();

    // Written while the daemon was down: read from where it stopped, nothing read twice.
    append(
        &rollout,
        &item(
            "2026-11-30T10:00:00.000Z",
            json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"raised the lynx timeout"}]}),
        ),
    );
    let _d = Daemon::start(&home);
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Sessions Resume");
    let lynx = found(&mut peer, "lynx timeout");
    assert_eq!(lynx["metadata"]["session_id"], "cx-1", "the session's context outlives the restart");
    assert_eq!(holding(&mut peer, "ocelot job fail").len(), 1);
    let written = everything_written(&home);
    assert!(!written.contains("tapioca") && !written.contains("kumquats"), "reasoning and thoughts are never stored");
}

#[test]
fn register_offers_sessions_and_turns_them_on_only_when_told() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let user = user.path().canonicalize().unwrap();
    std::fs::create_dir_all(user.join(".claude/projects")).unwrap();
    // No terminal: said, not done.
    let said = run_ok(user_cmd(&home, &user), &["register", "claude-code"]);
    assert!(
        said.contains("not read (off until you say yes)") && said.contains("sources add --agent claude-code"),
        "{said}"
    );
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap_or_default();
    assert!(!config.contains("claude-code"), "{config}");
    let said = run_ok(user_cmd(&home, &user), &["register", "claude-code", "--capture-sessions"]);
    assert!(said.contains("reading Claude Code sessions from"), "{said}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("kind = \"claude-code\""), "{config}");
    let listed = run_ok(user_cmd(&home, &user), &["sources", "list"]);
    assert!(listed.contains("kind claude-code"), "{listed}");
    run_ok(user_cmd(&home, &user), &["sources", "remove", "--agent", "claude-code"]);
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(!config.contains("claude-code"), "{config}");
    // An agent whose logs are not there cannot be added, and is not offered.
    let bare = tempfile::tempdir().unwrap();
    let out = user_cmd(&home, bare.path()).args(["sources", "add", "--agent", "codex"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Codex CLI session logs at"), "{out:?}");
    let said = run_ok(user_cmd(&home, bare.path()), &["register", "codex"]);
    assert!(!said.contains("sessions:"), "{said}");
}
