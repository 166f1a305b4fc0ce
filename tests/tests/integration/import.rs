//! The importers end to end: `openhumand-mcp ingest` on the fixture folder of every export
//! format (`tests/fixtures/import/`) with the real binary in a temporary home, the printed
//! report (unsupported files named, skipped lines counted by reason), then the messages found
//! through the memory tools, by keyword and by date.

use std::path::{Path, PathBuf};

use openhuman_tests::{ChildPeer, Daemon, Home};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/import")
}

fn ingest(home: &Home, path: &Path) -> (i32, String, String) {
    let out = home.daemon_cmd().arg("ingest").arg(path).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The source ids of the chunks (or items) a tool's result lists under `key`.
fn sources(result: &Value, key: &str) -> Vec<String> {
    result["structuredContent"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no `{key}` in {result}"))
        .iter()
        .map(|c| c["source_id"].as_str().or(c["metadata"]["source_id"].as_str()).unwrap_or_default().to_string())
        .collect()
}

#[test]
fn every_export_format_ingests_and_is_found_by_date() {
    let home = Home::new();
    let (code, out, err) = ingest(&home, &fixtures());
    assert_eq!(code, 0, "no fixture fails\n{out}\n{err}");
    // 1 ChatGPT + 1 Claude + 3 Slack days + 1 Discord + 2 WhatsApp + 8 Maildir + 1 Mailman
    // + HTML + PDF + text + 2 chat files + 3 IRC logs + Telegram (JSON, and HTML in 2 pages) + Messenger + 2 Matrix rooms + an SMS backup + 2 Google Chat conversations.
    assert!(out.contains("ingested 34 file(s), 0 unchanged, 2 unsupported, 0 failed"), "{out}");
    assert!(
        out.contains("unsupported (2, no importer reads them): ")
            && out.contains("unsupported/diagram.png")
            && out.contains("unsupported/settings.json"),
        "unsupported files are named: {out}"
    );
    for line in [
        "skipped 3 lines: system line (no sender) (first: ",
        "skipped 1 line: invalid JSON (first: ",
        "skipped 1 line: no `ts` (first: ",
        "skipped 2 files: Slack export index (its names are used for the channel files)",
        "skipped 1 file: Maildir tmp/ file (a message still being delivered)",
        "skipped 1 message: Discord notice (GuildMemberJoin)",
    ] {
        assert!(out.contains(line), "`{line}` missing from\n{out}");
    }

    let _d = Daemon::start(&home);
    // Through the running daemon the report comes back in the rpc result: nothing changed,
    // but the unsupported files are still named.
    let (code, again, err) = ingest(&home, &fixtures());
    assert_eq!(code, 0, "{again}{err}");
    assert!(again.contains("ingested 0 file(s), 34 unchanged, 2 unsupported"), "{again}");
    assert!(again.contains("unsupported/diagram.png"), "{again}");

    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize("Import Test");
    let mailman = "thread:Pine.LNX.4.33.0111011115.A-100000@localhost";
    let hits = s.peer.tool("memory.search", json!({"query": "compost thermometer"}));
    assert!(sources(&hits, "hits").iter().any(|id| id == mailman), "{hits}");
    // The archive's own dates are stored: a date filter on 1 November 2001 finds the thread,
    // and one on the day the fixture was written to disk does not.
    let on_the_day = json!({"observed_after": "2001-11-01T00:00:00Z", "observed_before": "2001-11-01T23:59:59Z"});
    let r = s.peer.tool("memory.recall", json!({"query": "compost heap temperature", "filter": on_the_day}));
    assert!(sources(&r, "chunks").iter().any(|id| id == mailman), "{r}");
    let r = s.peer.tool("memory.fetch", json!({"query": "compost", "mode": "keyword", "filter": on_the_day}));
    assert!(sources(&r, "items").iter().all(|id| id == mailman) && !sources(&r, "items").is_empty(), "{r}");
    let later = json!({"observed_after": "2020-01-01T00:00:00Z"});
    let r = s.peer.tool("memory.fetch", json!({"query": "compost", "mode": "keyword", "filter": later}));
    assert!(!sources(&r, "items").iter().any(|id| id == mailman), "no message takes the file's time: {r}");
    // A chat line in `2024-01-08 09:30:00` form is found on its day, and a Slack thread reply
    // on the next day's file by its day.
    let jan8 = json!({"observed_after": "2024-01-08T00:00:00Z", "observed_before": "2024-01-08T23:59:59Z"});
    let r = s.peer.tool("memory.fetch", json!({"query": "kiln firmware", "mode": "keyword", "filter": jan8}));
    assert_eq!(sources(&r, "items"), ["chat:workshop"], "{r}");
    let mar5 = json!({"observed_after": "2024-03-05T00:00:00Z", "observed_before": "2024-03-05T23:59:59Z"});
    let r = s.peer.tool("memory.fetch", json!({"query": "shared drive", "mode": "keyword", "filter": mar5}));
    assert_eq!(sources(&r, "items"), ["slack:general"], "{r}");
}

/// The people memory names are the fixtures' senders and recipients — mail headers, Slack
/// users, WhatsApp and Discord senders — and the chat bots are bots, not people.
#[test]
fn top_entities_are_the_senders() {
    let home = Home::new();
    let (code, out, err) = ingest(&home, &fixtures());
    assert_eq!(code, 0, "{out}\n{err}");
    let _d = Daemon::start(&home);
    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize("People Test");
    let mut names = |kind: &str| -> Vec<String> {
        let r = s.peer.tool("tree.top_entities", json!({"kind": kind, "k": 50}));
        r["structuredContent"]["entities"]
            .as_array()
            .unwrap_or_else(|| panic!("no entities in {r}"))
            .iter()
            .map(|e| e["display_name"].as_str().unwrap().to_string())
            .collect()
    };
    let people = names("person");
    let senders = ["Owen Hale", "Priya Natarajan", "John J. Lee", "Ada Lovelace", "Rosa Diaz", "Tom Baker", "Ben"];
    for sender in senders {
        assert!(people.iter().any(|p| p == sender), "{sender} missing from {people:?}");
    }
    assert_eq!(people[..2], ["Owen Hale", "Priya Natarajan"], "the mail chain's two correspondents lead");
    let bots = names("bot");
    assert!(bots.iter().any(|b| b == "kiln-bot") && bots.iter().any(|b| b == "standup-bot"), "{bots:?}");
    assert!(people.iter().all(|p| !p.ends_with("-bot")), "{people:?}");
}
