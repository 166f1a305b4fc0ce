//! The memory engine through real sessions: ingest from the command line (directly and through
//! a running daemon), then every memory read tool over the shim, with bounds, filters, paging
//! and not-found cases, and a burst of pipelined reads.

use std::path::Path;

use openhuman_tests::{ChildPeer, Daemon, Home, tool_err_text, tool_ok};
use serde_json::{Value, json};

const EML: &str = "From: Alice Smith <alice@example.com>\r\nTo: Me <me@example.org>\r\nSubject: Budget review\r\n\
Message-ID: <budget-1@example.com>\r\nDate: Mon, 02 Nov 2026 09:00:00 +0000\r\n\r\nHi,\r\n\r\nthe quarterly budget \
review is on Thursday. The figures are at https://example.com/budget and I tagged it #finance.\r\n\r\nAlice\r\n";

/// A small corpus: two notes, one e-mail and one chat export.
fn corpus(dir: &Path) {
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(
        dir.join("notes/vehicles.md"),
        "# Vehicles\n\nMy car needs new tyres before the winter trip. The sedan's engine was serviced at the garage in March.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("notes/cooking.md"),
        "# Recipes\n\nBake the sourdough loaf at 230 degrees for forty minutes with steam.\n",
    )
    .unwrap();
    std::fs::write(dir.join("budget.eml"), EML).unwrap();
    std::fs::write(
        dir.join("eng.jsonl"),
        "{\"ts\":\"2026-11-01T10:00:00Z\",\"from\":\"bob\",\"text\":\"The deploy of the payments service went fine @carol #release\",\"channel\":\"eng\"}\n\
         {\"ts\":\"2026-11-01T10:05:00Z\",\"from\":\"carol\",\"text\":\"Great, closing the incident ticket now\",\"channel\":\"eng\"}\n",
    )
    .unwrap();
}

fn ingest(home: &Home, path: &Path) -> (i32, String, String) {
    let out = home.daemon_cmd().arg("ingest").arg(path).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn memory_tools_over_the_shim() {
    let home = Home::new();
    let data = tempfile::tempdir().unwrap();
    corpus(data.path());
    // A file that cannot be read as text: reported by name, the rest still goes in.
    std::fs::write(data.path().join("notes/binary.md"), [0x00, 0x01, 0xfe, 0x81]).unwrap();
    let (code, stdout, stderr) = ingest(&home, data.path());
    assert_eq!(code, 1, "one unreadable file makes the exit code 1\n{stdout}\n{stderr}");
    assert!(stderr.contains("binary.md") && stderr.contains("UTF-8"), "the unreadable file is named: {stderr}");
    assert!(stdout.contains("ingested 4 file(s)"), "the rest went in: {stdout}");

    let _d = Daemon::start(&home);
    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize("Memory Test");
    let names = s.peer.tool_names();
    for t in [
        "memory.search",
        "memory.recall",
        "tree.read_chunk",
        "tree.browse",
        "tree.top_entities",
        "tree.list_sources",
        "memory.fetch",
        "memory.list",
    ] {
        assert!(names.iter().any(|n| n == t), "{t} missing from {names:?}");
    }

    // Keyword search, then read the whole chunk it points at.
    let r = s.peer.tool("memory.search", json!({"query": "sourdough"}));
    let hit = &r["structuredContent"]["hits"][0];
    assert_eq!(hit["source_kind"], "document", "{r}");
    let id = hit["chunk_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    let chunk = s.peer.tool("tree.read_chunk", json!({"chunk_id": id}));
    assert!(chunk["structuredContent"]["content"].as_str().unwrap().contains("forty minutes"));
    let missing = s.peer.tool("tree.read_chunk", json!({"chunk_id": "0123456789abcdef0123456789abcdef"}));
    assert!(tool_err_text(&missing).contains("no chunk"));

    // Semantic recall finds the car note for a query that shares no word with it.
    let r = s.peer.tool("memory.recall", json!({"query": "automobile maintenance", "k": 3}));
    let chunks = r["structuredContent"]["chunks"].as_array().unwrap();
    let first_id = chunks[0]["chunk_id"].as_str().unwrap();
    let first = s.peer.tool("tree.read_chunk", json!({"chunk_id": first_id}));
    assert!(first["structuredContent"]["content"].as_str().unwrap().contains("car"), "{r}");
    assert!(!r["structuredContent"]["citations"].as_array().unwrap().is_empty());
    // Its chunk id reads back too.
    let again = s.peer.tool("tree.read_chunk", json!({"chunk_id": first_id}));
    tool_ok(&again);

    // Every bound is enforced with a message naming the argument.
    let cases = [
        ("memory.search", json!({"query": "x", "k": 0}), "argument `k` must be between 1 and 50 (got 0)"),
        ("memory.search", json!({"query": "x", "k": 51}), "argument `k` must be between 1 and 50 (got 51)"),
        ("memory.search", json!({"query": "  "}), "argument `query` must not be blank"),
        // `limit` is the shared name, `k` the older one: one of them at a time.
        (
            "memory.search",
            json!({"query": "x", "k": 3, "limit": 3}),
            "pass either `limit` or `k` (two names for one argument), not both",
        ),
        (
            "memory.recall",
            json!({"query": "x", "filter": {"kinds": ["fax"]}}),
            "argument `filter.kinds[0]` must be one of",
        ),
        ("memory.recall", json!({"query": "x", "filter": {"colour": "red"}}), "unknown argument in `filter`: `colour`"),
        ("memory.fetch", json!({"query": "x", "limit": 101}), "argument `limit` must be between 1 and 100 (got 101)"),
        (
            "memory.fetch",
            json!({"query": "x", "mode": "fuzzy"}),
            "argument `mode` must be one of keyword, vector, hybrid",
        ),
        ("tree.browse", json!({"since_ms": -1}), "argument `since_ms` must be at least 0"),
        ("tree.browse", json!({"offset": -5}), "argument `offset` must be between 0 and"),
        ("tree.top_entities", json!({"kind": "planet"}), "argument `kind` must be one of"),
        ("tree.read_chunk", json!({}), "missing required argument `chunk_id`"),
        ("memory.list", json!({"limit": 0}), "argument `limit` must be between 1 and 100 (got 0)"),
    ];
    for (tool, args, want) in cases {
        let r = s.peer.tool(tool, args.clone());
        let text = tool_err_text(&r);
        assert!(text.contains(want), "{tool} {args}: {text}");
    }

    // Browsing by kind, with paging and a stable total.
    let r = s.peer.tool("tree.browse", json!({"source_kinds": ["chat"], "k": 1}));
    let total = r["structuredContent"]["total"].as_u64().unwrap();
    assert!(total >= 1, "{r}");
    assert!(r["structuredContent"]["chunks"].as_array().unwrap().iter().all(|c| c["source_kind"] == "chat"));
    let all = s.peer.tool("tree.browse", json!({"k": 50}));
    let every = all["structuredContent"]["chunks"].as_array().unwrap();
    let times: Vec<i64> = every.iter().map(|c| c["timestamp_ms"].as_i64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first: {times:?}");
    if every.len() >= 2 {
        let p2 = s.peer.tool("tree.browse", json!({"k": 1, "offset": 1}));
        assert_eq!(p2["structuredContent"]["chunks"][0]["chunk_id"], every[1]["chunk_id"]);
    }

    // Entities and sources.
    let ents = s.peer.tool("tree.top_entities", json!({"kind": "email"}));
    let ids: Vec<&str> = ents["structuredContent"]["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entity_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"email:alice@example.com"), "{ids:?}");
    let by_entity = s.peer.tool("tree.browse", json!({"entity_ids": ["email:alice@example.com"]}));
    assert!(by_entity["structuredContent"]["chunks"].as_array().unwrap().iter().all(|c| c["source_kind"] == "email"));
    let sources = s.peer.tool("tree.list_sources", json!({"user_email_hint": "me@example.org"}));
    let list = sources["structuredContent"]["sources"].as_array().unwrap();
    assert!(
        list.iter().any(|src| src["source_kind"] == "email" && src["display_name"].as_str().unwrap().contains("Alice")),
        "{sources}"
    );

    // Fetch with a cursor; a cursor from another query is refused.
    let p1 = s.peer.tool("memory.fetch", json!({"query": "the", "mode": "keyword", "limit": 1}));
    let cursor = p1["structuredContent"]["next_cursor"].as_str().expect("a next page").to_string();
    let p2 = s.peer.tool("memory.fetch", json!({"query": "the", "mode": "keyword", "limit": 1, "cursor": cursor}));
    assert_ne!(p1["structuredContent"]["items"][0]["id"], p2["structuredContent"]["items"][0]["id"]);
    let bad = s.peer.tool("memory.fetch", json!({"query": "other", "limit": 1, "cursor": cursor}));
    assert!(tool_err_text(&bad).contains("cursor"));
    let filtered = s.peer.tool("memory.recall", json!({"query": "deploy", "filter": {"kinds": ["conversation"]}}));
    let fc = filtered["structuredContent"]["chunks"].as_array().unwrap();
    assert!(!fc.is_empty() && fc.iter().all(|c| c["source_kind"] == "chat"), "{filtered}");
    let listed = s.peer.tool("memory.list", json!({"limit": 2}));
    assert_eq!(listed["structuredContent"]["items"].as_array().unwrap().len(), 2);
}

#[test]
fn ingest_through_a_running_daemon_is_incremental() {
    let home = Home::new();
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("plan.md");
    std::fs::write(&file, "# Plan\n\nMigrate the warehouse inventory to the new ledger system.\n").unwrap();
    let _d = Daemon::start(&home);
    let (code, out, err) = ingest(&home, &file);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ingested 1 file(s), 0 unchanged"), "{out}");
    let (_, out, _) = ingest(&home, &file);
    assert!(out.contains("ingested 0 file(s), 1 unchanged"), "unchanged file is a no-op: {out}");
    std::fs::write(&file, "# Plan\n\nMove the greenhouse tomatoes to the south bed.\n").unwrap();
    let (_, out, _) = ingest(&home, &file);
    assert!(out.contains("ingested 1 file(s)") && !out.contains(" 0 removed"), "changed file replaced: {out}");
    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize("t");
    let hits = s.peer.tool("memory.search", json!({"query": "greenhouse"}));
    assert_eq!(hits["structuredContent"]["hits"].as_array().unwrap().len(), 1);
    let old = s.peer.tool("memory.search", json!({"query": "warehouse"}));
    assert!(old["structuredContent"]["hits"].as_array().unwrap().is_empty(), "old chunks are gone: {old}");
}

#[test]
fn memory_off_makes_memory_tools_say_which_key_to_set() {
    let home = Home::new();
    home.write_config("[memory]\nengine = \"off\"\n");
    let mut cmd = home.daemon_cmd();
    cmd.arg("stdio");
    let mut s = ChildPeer::spawn(cmd);
    s.peer.initialize("t");
    for (tool, args) in
        [("memory.search", json!({"query": "x"})), ("tree.list_sources", json!({})), ("memory.list", json!({}))]
    {
        let text = tool_err_text(&s.peer.tool(tool, args));
        assert!(text.contains("MEMORY_OFF") && text.contains("[memory].engine"), "{tool}: {text}");
    }
}

/// Open files of a process, from /proc.
#[cfg(target_os = "linux")]
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

#[cfg(target_os = "linux")]
#[test]
fn a_burst_of_memory_reads_runs_a_few_at_a_time_and_answers_all() {
    use std::io::{BufRead, BufReader, Write};

    let home = Home::new();
    let d = Daemon::start(&home);
    let mut p = openhuman_tests::Peer::socket(&home.socket());
    p.initialize("burst");
    p.tool("memory.search", json!({"query": "warm up"}));
    let before = open_files(d.pid());

    // 1,000 searches pipelined on one connection: far more than can usefully run at once.
    const N: usize = 1000;
    let stream = std::os::unix::net::UnixStream::connect(home.socket()).unwrap();
    let mut w = stream.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let mut out = String::from(
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\
             \"capabilities\":{},\"clientInfo\":{\"name\":\"burst\",\"version\":\"0\"}}}\n",
        );
        for id in 1..=N {
            out.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"memory.search\",\
                 \"arguments\":{{\"query\":\"burst {id}\"}}}}}}\n"
            ));
        }
        w.write_all(out.as_bytes()).unwrap();
    });
    let mut answered = std::collections::BTreeSet::new();
    for line in BufReader::new(stream).lines().take(N + 1) {
        let r: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if r["id"] != 0 {
            assert_eq!(r["result"]["isError"], false, "{r}");
            assert!(answered.insert(r["id"].as_u64().unwrap()), "answered twice: {r}");
        }
    }
    writer.join().unwrap();
    assert_eq!(answered.len(), N);

    // Memory calls run a few at a time, each on a pooled SQLite connection: the pool stays small
    // (unbounded, a burst like this one left ~70 more files open).
    let after = open_files(d.pid());
    assert!(after <= before + 16, "open files {before} -> {after}");
}
