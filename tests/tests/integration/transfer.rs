//! Your data out and back with the real binaries: a home filled through the tools and `ingest`
//! is exported (daemon running) and imported into a fresh home, whose every read tool then
//! answers as the first did; a second import (through the daemon) adds nothing; a backup taken
//! while the daemon serves is restored over later changes, and a restore is refused while a
//! daemon serves the home.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use openhuman_tests::{Daemon, Home, Peer, tool_ok};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/import")
}

/// Runs a command in `home`: (exit code, stdout, stderr).
fn run(home: &Home, args: &[&str]) -> (i32, String, String) {
    let out = home.daemon_cmd().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(home: &Home, args: &[&str]) -> String {
    let (code, out, err) = run(home, args);
    assert_eq!(code, 0, "{args:?}\n{out}\n{err}\n{}", home.log());
    out
}

fn peer(home: &Home) -> Peer {
    let mut p = Peer::socket(&home.socket());
    p.initialize("Transfer Test");
    p
}

/// Stores documents with tags, a tag and a note on a chunk and two learnings, then ingests the
/// fixture folder of every export format (through the running daemon).
pub(crate) fn populate(home: &Home, p: &mut Peer) {
    for (title, content, tags) in [
        ("Sourdough", "Sourdough bread rises with a wild yeast starter; bake at 230 degrees.", json!(["food"])),
        ("Garden plan", "Tomatoes need full sun. Ask Alice Smith <alice@example.com> for seeds.", json!(["home"])),
    ] {
        tool_ok(&p.tool("memory.store", json!({"title": title, "content": content, "tags": tags})));
    }
    let hit = p.tool("memory.search", json!({"query": "sourdough"}));
    let chunk = tool_ok(&hit)["hits"][0]["chunk_id"].as_str().unwrap().to_string();
    tool_ok(&p.tool("tree.tag", json!({"chunk_id": chunk, "tags": ["favourite", "weekend"]})));
    tool_ok(&p.tool("memory.note", json!({"chunk_id": chunk, "note_text": "Try rye flour next time"})));
    tool_ok(&p.tool("memory.learn", json!({"text": "The user bakes on Sundays", "kind": "fact", "confidence": 0.9})));
    tool_ok(&p.tool("memory.learn", json!({"text": "Prefers metric units", "kind": "preference"})));
    let out = ok(home, &["ingest", fixtures().to_str().unwrap()]);
    assert!(out.contains("ingested 34 file(s)"), "{out}");
}

/// Waits (bounded) until every chunk has its vector: an ingest through the daemon leaves
/// embedding to its background thread, and recall's answers depend on it.
pub(crate) fn embedded(p: &mut Peer) {
    let start = Instant::now();
    loop {
        let s = p.call("openhuman.memory_stats", json!({}));
        if s["vectors"]["missing"] == 0 {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "chunks were not embedded within 60 s: {s}");
        // Each poll already waits its turn at the engine; this only keeps the loop off the CPU.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Drops what may differ between two stores holding the same data: page cursors (they carry
/// the store's row numbers) and timings.
fn stable(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "next_cursor" | "duration_ms" | "took_ms"))
                .map(|(k, v)| (k.clone(), stable(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(stable).collect()),
        other => other.clone(),
    }
}

/// Every read tool's answer, and every chunk read whole.
pub(crate) fn answers(p: &mut Peer) -> Vec<(String, Value)> {
    let calls = [
        ("memory.search", json!({"query": "sourdough bread", "k": 20})),
        ("memory.search", json!({"query": "compost thermometer", "k": 20})),
        ("memory.recall", json!({"query": "what does the user bake", "k": 20})),
        ("memory.recall", json!({"query": "deploy release", "k": 20, "filter": {"kinds": ["chat"]}})),
        ("memory.recall", json!({"query": "favourite bread", "filter": {"tags_any": ["favourite"]}})),
        ("memory.list", json!({"limit": 100})),
        ("memory.fetch", json!({"query": "budget", "mode": "hybrid", "limit": 50})),
        ("tree.list_sources", json!({})),
        ("tree.top_entities", json!({"k": 50})),
        ("tree.browse", json!({"k": 50})),
    ];
    let mut out = Vec::new();
    for (tool, args) in calls {
        let r = p.tool(tool, args.clone());
        out.push((format!("{tool} {args}"), stable(tool_ok(&r))));
    }
    let listed = p.tool("memory.list", json!({"limit": 100}));
    for item in tool_ok(&listed)["items"].as_array().unwrap() {
        let id = item["id"].as_str().unwrap();
        let r = p.tool("tree.read_chunk", json!({"chunk_id": id}));
        out.push((format!("tree.read_chunk {id}"), stable(tool_ok(&r))));
    }
    out
}

pub(crate) fn assert_same(a: &[(String, Value)], b: &[(String, Value)]) {
    assert_eq!(a.len(), b.len());
    for ((call, x), (_, y)) in a.iter().zip(b) {
        assert_eq!(x, y, "{call} answers differently");
    }
}

/// The data counts of `openhuman.memory_stats` (not the audit log or index positions).
pub(crate) fn counts(p: &mut Peer) -> Value {
    let s = p.call("openhuman.memory_stats", json!({}));
    json!([s["chunks"], s["chunks_by_kind"], s["sources"], s["entities"], s["files"], s["annotations_detached"]])
}

#[test]
fn an_export_imports_into_a_fresh_home_and_every_read_tool_answers_the_same() {
    let (a, b) = (Home::new(), Home::new());
    let out_dir = tempfile::tempdir().unwrap();
    let export = out_dir.path().join("export");
    let da = Daemon::start(&a);
    let mut pa = peer(&a);
    populate(&a, &mut pa);
    embedded(&mut pa);
    let before = answers(&mut pa);
    let said = ok(&a, &["export", export.to_str().unwrap()]);
    assert!(said.contains("exported ") && said.contains("Markdown files"), "{said}");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(export.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], "openhuman-memory-export");
    assert_eq!(manifest["version"], 1);
    assert!(manifest["files"]["chunks.jsonl"]["records"].as_u64().unwrap() > 20, "{manifest}");
    assert!(manifest["files"]["learnings.jsonl"]["records"] == 2, "{manifest}");
    let md = std::fs::read_dir(export.join("markdown/document")).unwrap().count();
    assert!(md >= 2, "one Markdown file per document source");

    // Into a fresh home without a daemon: the store is opened directly.
    let said = ok(&b, &["import", export.to_str().unwrap()]);
    assert!(said.starts_with("imported "), "{said}");
    let db = Daemon::start(&b);
    let mut pb = peer(&b);
    embedded(&mut pb);
    assert_same(&before, &answers(&mut pb));
    assert_eq!(counts(&mut pa), counts(&mut pb));

    // Again, through the running daemon: nothing changes.
    let before_b = (answers(&mut pb), counts(&mut pb));
    let said = ok(&b, &["import", "--json", export.to_str().unwrap()]);
    let summary: Value = serde_json::from_str(&said).unwrap();
    let added: u64 = summary["added"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(added, 0, "{summary}");
    assert_same(&before_b.0, &answers(&mut pb));
    assert_eq!(before_b.1, counts(&mut pb));
    assert!(ok(&b, &["import", export.to_str().unwrap()]).contains("nothing to import"));
    // Each run is audited.
    let rows = ok(&b, &["audit", "--tool", "openhuman.memory_import"]);
    assert_eq!(rows.lines().count(), 3, "{rows}");
    drop((da, db));
}

#[test]
fn a_backup_taken_while_serving_restores_over_later_changes() {
    let home = Home::new();
    let files = tempfile::tempdir().unwrap();
    let backup = files.path().join("memory.backup");
    let d = Daemon::start(&home);
    let mut p = peer(&home);
    tool_ok(&p.tool("memory.store", json!({"title": "Kept", "content": "The lighthouse keeper logs the tides."})));
    tool_ok(&p.tool("memory.learn", json!({"text": "Likes lighthouses", "kind": "preference"})));
    let at_backup = answers(&mut p);
    let said = ok(&home, &["backup", backup.to_str().unwrap()]);
    assert!(said.starts_with("backed up 2 chunks"), "{said}");
    let (code, _, err) = run(&home, &["backup", backup.to_str().unwrap()]);
    assert!(code == 1 && err.contains("already exists"), "{err}");

    tool_ok(&p.tool("memory.store", json!({"title": "Later", "content": "Written after the backup was taken."})));
    tool_ok(&p.tool("memory.forget", json!({"ids": ["doc:default/mcp-store-kept"]})));
    let (code, _, err) = run(&home, &["restore", backup.to_str().unwrap()]);
    assert!(code == 1 && err.contains("openhumand-mcp stop"), "refused while serving: {err}");

    drop(p);
    d.stop().unwrap();
    let junk = files.path().join("notes.txt");
    std::fs::write(&junk, "not a database").unwrap();
    let (code, _, err) = run(&home, &["restore", junk.to_str().unwrap()]);
    assert!(code == 1 && err.contains("not a memory backup"), "{err}");
    let said = ok(&home, &["restore", backup.to_str().unwrap()]);
    assert!(said.contains("restored 2 chunks") && said.contains("before-restore-"), "{said}");
    // Without a daemon, backup and export open the store themselves.
    let again = files.path().join("again.backup");
    assert!(ok(&home, &["backup", again.to_str().unwrap()]).starts_with("backed up 2 chunks"));
    let export = files.path().join("export");
    assert!(ok(&home, &["export", export.to_str().unwrap()]).starts_with("exported 2 chunks from 2 sources"));
    assert!(export.join("manifest.json").is_file());
    let _d = Daemon::start(&home);
    let mut p = peer(&home);
    assert_same(&at_backup, &answers(&mut p));
    let later = p.tool("memory.search", json!({"query": "written after"}));
    assert_eq!(tool_ok(&later)["hits"], json!([]), "the later write is gone");
    // The replaced database was kept, and is itself a backup.
    let kept: Vec<_> = std::fs::read_dir(home.path().join("data"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("memory.db.before-restore-"))
        .collect();
    assert_eq!(kept.len(), 1);
}
