//! Agents' session logs: tailed from the offset, partial last lines left for later, rewrites
//! read again without duplicates, bad lines counted, secrets and thinking kept out, excluded
//! projects and forgotten sessions not read.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::{Agent, MemoryEngine, SessionRules};
use super::{Wire, audit, open};
use crate::ops;

fn claude_line(uuid: &str, kind: &str, content: Value, cwd: &str) -> String {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd, "sessionId": "sess-1",
        "version": "2.1.1", "gitBranch": "feature/x", "type": kind, "uuid": uuid,
        "timestamp": "2025-06-01T10:00:00.000Z", "message": {"role": kind, "content": content},
    })
    .to_string()
}

fn append(path: &Path, text: &str) {
    let mut f = fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn sync(m: &MemoryEngine, path: &PathBuf, rules: &SessionRules) -> super::super::SessionSync {
    m.sync_session_files(Agent::ClaudeCode, std::slice::from_ref(path), rules).unwrap()
}

/// The stored chunks whose text holds `word`, as `(chunk id, metadata)`, read from the database.
fn hits(m: &MemoryEngine, word: &str) -> Vec<Value> {
    let conn = m.inner.read_conn().unwrap();
    let mut q = conn.prepare("SELECT id, metadata FROM chunks WHERE content LIKE ?1").unwrap();
    q.query_map([format!("%{word}%")], |r| {
        let meta: String = r.get(1)?;
        Ok(json!({"chunk_id": r.get::<_, String>(0)?, "metadata": serde_json::from_str::<Value>(&meta).unwrap()}))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Everything the database holds, as text.
fn everything(m: &MemoryEngine) -> String {
    let conn = m.inner.read_conn().unwrap();
    let mut q = conn.prepare("SELECT content || ' ' || metadata || ' ' || coalesce(title, '') FROM chunks").unwrap();
    q.query_map([], |r| r.get::<_, String>(0)).unwrap().map(Result::unwrap).collect::<Vec<_>>().join("\n")
}

fn chunk_count(m: &MemoryEngine) -> i64 {
    m.stats().unwrap().chunks
}

#[test]
fn a_claude_code_log_is_tailed_and_rewrites_add_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(&dir.path().join("mem"));
    let project = dir.path().join("proj");
    fs::create_dir_all(project.join(".git")).unwrap();
    let cwd = project.join("sub").to_string_lossy().into_owned();
    let log_dir = dir.path().join("projects/-tmp-proj");
    fs::create_dir_all(&log_dir).unwrap();
    let log = log_dir.join("sess-1.jsonl");
    let rules = SessionRules::default();
    let secret = "sk-proj-Zq9Xw8Vu7Ts6Rq5Po4Nm3Lk2";
    append(
        &log,
        &format!(
            "{}\n",
            claude_line("u1", "user", json!(format!("configure the zebrafish exporter with {secret}")), &cwd)
        ),
    );
    append(
        &log,
        &format!(
            "{}\n",
            claude_line(
                "a1",
                "assistant",
                json!([{"type": "thinking", "thinking": "quietly pondering marmalade"},
                       {"type": "text", "text": "Done, the exporter reads the key."},
                       {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": format!("{cwd}/exporter.rs")}}]),
                &cwd
            )
        ),
    );
    append(&log, "{not json\n");
    append(&log, "{\"type\":\"hologram\",\"uuid\":\"h\"}\n");
    let s = sync(&m, &log, &rules);
    assert_eq!((s.turns_added, s.malformed, s.unknown), (2, 1, 1), "{s:?}");
    let h = hits(&m, "zebrafish");
    assert_eq!(h.len(), 1, "{h:?}");
    let text = everything(&m);
    assert!(!text.contains(secret) && text.contains("[redacted]"), "{text}");
    // Searchable through the search operation too.
    let r = m.wire::<ops::Search>(json!({"query": "zebrafish exporter"})).unwrap();
    assert_eq!(r["hits"][0]["chunk_id"], h[0]["chunk_id"], "{r}");
    assert!(hits(&m, "marmalade").is_empty(), "thinking is never stored");
    let done = hits(&m, "exporter reads");
    let meta = &done[0]["metadata"];
    assert_eq!(meta["project"], json!(project.to_string_lossy()));
    assert_eq!(
        (meta["session_id"].as_str(), meta["branch"].as_str(), meta["agent"].as_str()),
        (Some("sess-1"), Some("feature/x"), Some("claude-code"))
    );
    assert_eq!(meta["files"], json!([format!("{cwd}/exporter.rs")]));
    let before = chunk_count(&m);

    // A partial last line waits; once completed it is read, and only the new bytes are.
    let third = claude_line("u2", "user", json!("now wire the narwhal importer"), &cwd);
    let (a, b) = third.split_at(40);
    append(&log, a);
    let s = sync(&m, &log, &rules);
    assert_eq!(s.turns_added, 0);
    assert!(hits(&m, "narwhal").is_empty());
    append(&log, &format!("{b}\n"));
    let s = sync(&m, &log, &rules);
    assert_eq!((s.turns_added, s.bytes_read, s.files_reread), (1, third.len() as u64 + 1, 0), "{s:?}");
    assert_eq!(hits(&m, "narwhal").len(), 1);
    let after = chunk_count(&m);
    assert_eq!(after, before + 1);

    // Rewritten (same records, one changed) and truncated: read again, nothing doubled.
    let text = fs::read_to_string(&log).unwrap();
    let rewritten = text.replace("now wire the narwhal importer", "now wire the walrus importer");
    fs::write(&log, rewritten).unwrap();
    let s = sync(&m, &log, &rules);
    assert_eq!(s.files_reread, 1, "{s:?}");
    assert_eq!(chunk_count(&m), after, "the changed turn replaced its old chunk");
    assert!(hits(&m, "narwhal").is_empty() && hits(&m, "walrus").len() == 1);
    fs::write(
        &log,
        format!(
            "{}\n",
            claude_line("u1", "user", json!(format!("configure the zebrafish exporter with {secret}")), &cwd)
        ),
    )
    .unwrap();
    sync(&m, &log, &rules);
    assert_eq!(hits(&m, "zebrafish").len(), 1);
    assert_eq!(chunk_count(&m), after, "a turn gone from the log stays; none doubles");
    let stats = m.session_stats(dir.path()).unwrap();
    assert_eq!((stats.files, stats.sessions), (1, 1));

    // Forgotten: gone, and not read again when the log is rewritten.
    m.forget(&["session:sess-1".into()], "mcp:test", audit("memory.forget")).unwrap();
    assert!(hits(&m, "zebrafish").is_empty());
    fs::write(&log, format!("{}\n{}\n", claude_line("u9", "user", json!("zebrafish again"), &cwd), "")).unwrap();
    let s = sync(&m, &log, &rules);
    assert_eq!(s.excluded, 1, "{s:?}");
    assert!(hits(&m, "zebrafish").is_empty());
}

#[test]
fn excluded_projects_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(&dir.path().join("mem"));
    let secret_project = dir.path().join("clients/acme");
    let root = dir.path().join("projects");
    let encoded: String =
        secret_project.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let rules = SessionRules { exclude_projects: vec![secret_project.clone()] };
    let log = root.join(&encoded).join("s.jsonl");
    assert!(super::super::session_file_excluded(Agent::ClaudeCode, &root, &log, &rules));
    assert!(!super::super::session_file_excluded(Agent::ClaudeCode, &root, &root.join("-other/s.jsonl"), &rules));
    // Even when the file is read (a log elsewhere naming that project as its cwd), its turns are not kept.
    let other = root.join("-elsewhere/s.jsonl");
    fs::create_dir_all(other.parent().unwrap()).unwrap();
    append(
        &other,
        &format!(
            "{}\n",
            claude_line("x1", "user", json!("acme pricing quokka"), &secret_project.join("src").to_string_lossy())
        ),
    );
    let s = sync(&m, &other, &rules);
    assert_eq!((s.turns_added, s.excluded), (0, 1));
    assert!(hits(&m, "quokka").is_empty());
}

#[test]
fn codex_and_gemini_logs_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(&dir.path().join("mem"));
    let rules = SessionRules::default();
    let rollout = dir.path().join("sessions/2025/10/29/rollout-2025-10-29T00-59-38-abc.jsonl");
    fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    append(
        &rollout,
        &format!(
            "{}\n",
            json!({"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"cx-1","cwd":"/nowhere/app","git":{"branch":"dev"}}})
        ),
    );
    append(
        &rollout,
        &format!(
            "{}\n",
            json!({"timestamp":"2025-10-29T00:59:40.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"rename the ocelot flag"}]}})
        ),
    );
    let s = m.sync_session_files(Agent::Codex, std::slice::from_ref(&rollout), &rules).unwrap();
    assert_eq!(s.turns_added, 1);
    // The context of the first line is kept for lines appended later.
    append(
        &rollout,
        &format!(
            "{}\n",
            json!({"timestamp":"2025-10-29T00:59:41.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"renamed the lynx flag"}]}})
        ),
    );
    m.sync_session_files(Agent::Codex, std::slice::from_ref(&rollout), &rules).unwrap();
    let h = hits(&m, "lynx");
    let meta = &h[0]["metadata"];
    assert_eq!(
        (meta["session_id"].as_str(), meta["project"].as_str(), meta["branch"].as_str()),
        (Some("cx-1"), Some("/nowhere/app"), Some("dev"))
    );

    let doc = dir.path().join("tmp/79b6/chats/session-2025-10-18T14-57-g1.json");
    fs::create_dir_all(doc.parent().unwrap()).unwrap();
    let mut session = json!({"sessionId":"g-1","projectHash":"79b6","messages":[
        {"id":"m1","timestamp":"2025-10-18T14:57:28.974Z","type":"user","content":"explain the pelican cache"}]});
    fs::write(&doc, session.to_string()).unwrap();
    let s = m.sync_session_files(Agent::Gemini, std::slice::from_ref(&doc), &rules).unwrap();
    assert_eq!(s.turns_added, 1);
    session["messages"].as_array_mut().unwrap().push(json!({"id":"m2","timestamp":"2025-10-18T14:57:35.000Z","type":"gemini","content":"The pelican cache keeps pages.","thoughts":[{"subject":"s","description":"hidden armadillo"}]}));
    fs::write(&doc, session.to_string()).unwrap();
    let before = chunk_count(&m);
    m.sync_session_files(Agent::Gemini, std::slice::from_ref(&doc), &rules).unwrap();
    assert_eq!(chunk_count(&m), before + 1, "the whole document is read again, nothing doubles");
    assert!(hits(&m, "armadillo").is_empty());
    // Caught mid-write: waits.
    fs::write(&doc, "{\"sessionId\":\"g-1\",\"messages\":[").unwrap();
    let s = m.sync_session_files(Agent::Gemini, std::slice::from_ref(&doc), &rules).unwrap();
    assert_eq!((s.turns_added, s.malformed), (0, 0));
}

#[test]
fn a_later_turn_of_the_user_supersedes_an_earlier_statement() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(&dir.path().join("mem"));
    let project = dir.path().join("proj");
    fs::create_dir_all(project.join(".git")).unwrap();
    let cwd = project.to_string_lossy().into_owned();
    let log_dir = dir.path().join("projects/-tmp-proj");
    fs::create_dir_all(&log_dir).unwrap();
    let log = log_dir.join("sess-1.jsonl");
    let rules = SessionRules::default();
    let turn = |uuid: &str, text: &str, at: &str| {
        let mut v: Value = serde_json::from_str(&claude_line(uuid, "user", json!(text), &cwd)).unwrap();
        v["timestamp"] = json!(at);
        format!("{v}\n")
    };
    append(&log, &turn("u1", "My favourite editor is Vim, set up the config", "2025-01-01T10:00:00.000Z"));
    append(&log, &turn("a1", "Would you prefer Emacs?", "2025-01-01T10:00:05.000Z"));
    sync(&m, &log, &rules);
    append(&log, &turn("u2", "My favourite editor is Helix these days", "2025-03-01T10:00:00.000Z"));
    sync(&m, &log, &rules);
    let (vim, helix) = (hits(&m, "Vim")[0]["chunk_id"].clone(), hits(&m, "Helix")[0]["chunk_id"].clone());
    let h = m.wire::<ops::History>(json!({"id": vim})).unwrap();
    assert_eq!(h["current"], helix, "{h}");
    assert_eq!(h["versions"][0]["reason"], "same_attribute");
}
