//! Mail and chat as people read them, through the real daemon: a folder holding a Latin-1
//! mailbox of one message, an Outlook-style thread whose every reply quotes the first message,
//! and a Slack export is ingested with `openhumand-mcp ingest`; then search finds the Latin-1
//! message by its accented words, the quoted sentence comes back once, hits and threads are
//! named "Subject — Sender", and `tree.top_entities` lists the people (a Slack handle counted
//! as its person, a bulk sender kept out) and no generic word as a topic.

use std::path::Path;

use openhuman_tests::{ChildPeer, Daemon, Home};
use serde_json::{Value, json};

const SENTENCE: &str = "The timer T3412 is restarted when the UE reselects a cell in another tracking area.";

fn latin1_mbox() -> Vec<u8> {
    b"From rene@example.fr Tue Mar  5 09:30:00 2024\n\
From: Ren\xe9 Fran\xe7ois <rene@example.fr>\nTo: Zo\xe9 <zoe@example.org>\nSubject: R\xe9union de classe\n\
Date: Tue, 5 Mar 2024 09:30:00 +0100\nMessage-ID: <r1@example.fr>\n\n\
Nous nous retrouvons \xe0 la caf\xe9t\xe9ria du lyc\xe9e samedi.\n"
        .to_vec()
}

/// The first message and eight replies, each on top of the whole thread so far (Outlook).
fn outlook_thread() -> String {
    let mut out = format!(
        "From ann@example.org Mon Jan  1 09:00:00 2024\nFrom: Ann Lee <ann@example.org>\nSubject: CR 1234\n\
         Date: Mon, 1 Jan 2024 09:00:00 +0000\nMessage-ID: <m0@example.org>\n\n{SENTENCE}\n\n"
    );
    let mut below = format!(
        "From: Ann Lee <ann@example.org>\nSent: Monday, 1 January 2024 09:00\nTo: ran2\nSubject: CR 1234\n\n{SENTENCE}\n"
    );
    for i in 1..=8 {
        let own = format!("Reply {i}: the proposal was checked again and point {i} holds.");
        out.push_str(&format!(
            "From p{i}@example.org Mon Jan  1 1{i}:00:00 2024\nFrom: Person {i} <p{i}@example.org>\nSubject: RE: CR 1234\n\
             Date: Mon, 1 Jan 2024 1{i}:00:00 +0000\nMessage-ID: <m{i}@example.org>\nIn-Reply-To: <m{}@example.org>\n\n\
             {own}\n\n-----Original Message-----\n{below}\n",
            i - 1
        ));
        below = format!(
            "From: Person {i} <p{i}@example.org>\nSent: Monday, 1 January 2024 1{i}:00\nTo: ran2\nSubject: RE: CR 1234\n\n\
             {own}\n\n-----Original Message-----\n{below}"
        );
    }
    out.push_str(
        "From news@shop.example Mon Jan  1 20:00:00 2024\nFrom: Shop News <news@shop.example>\nPrecedence: bulk\n\
         Subject: Deals\nMessage-ID: <n1@shop.example>\nDate: Mon, 1 Jan 2024 20:00:00 +0000\n\nBig deals this week.\n",
    );
    out
}

fn write_folder(dir: &Path) {
    std::fs::write(dir.join("latin1.mbox"), latin1_mbox()).unwrap();
    std::fs::write(dir.join("cr1234.mbox"), outlook_thread()).unwrap();
    let export = dir.join("slack");
    std::fs::create_dir_all(export.join("engine")).unwrap();
    std::fs::write(export.join("channels.json"), r#"[{"id": "C1", "name": "engine"}]"#).unwrap();
    std::fs::write(
        export.join("users.json"),
        r#"[{"id": "U1", "name": "adal", "real_name": "Ada Lovelace"}, {"id": "U2", "name": "cb", "real_name": "Charles Babbage"}]"#,
    )
    .unwrap();
    std::fs::write(
        export.join("engine/2024-01-02.json"),
        r#"[{"type": "message", "user": "U1", "ts": "1704189600.000100", "text": "I think the difference engine needs time, I want the drawings this time"},
            {"type": "message", "user": "U2", "ts": "1704189660.000200", "text": "thanks @adal, I think the difference engine drawings take time"}]"#,
    )
    .unwrap();
}

fn list<'a>(r: &'a Value, key: &str) -> &'a Vec<Value> {
    r["structuredContent"][key].as_array().unwrap_or_else(|| panic!("no `{key}` in {r}"))
}

#[test]
fn mail_and_chat_read_as_people_read_them() {
    let home = Home::new();
    let src = tempfile::tempdir().unwrap();
    write_folder(src.path());
    let out = home.daemon_cmd().arg("ingest").arg(src.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("ingested 3 file(s)") && !text.contains("nothing to ingest"), "{text}");

    let _d = Daemon::start(&home);
    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize("Mail Reading Test");

    let r = s.peer.tool("memory.search", json!({"query": "cafétéria du lycée"}));
    let hits = list(&r, "hits");
    assert_eq!(hits[0]["title"], "Réunion de classe — René François", "{r}");

    let r = s.peer.tool("memory.search", json!({"query": "timer T3412 restarted reselects tracking area", "k": 20}));
    let holding: Vec<&Value> =
        list(&r, "hits").iter().filter(|h| h["snippet"].as_str().unwrap_or("").contains("T3412")).collect();
    assert!((1..=3).contains(&holding.len()), "the quoted sentence comes back as at most 3 chunks: {r}");
    assert_eq!(holding[0]["title"], "CR 1234 — Ann Lee", "{r}");

    let r = s.peer.tool("tree.list_sources", json!({}));
    let names: Vec<&str> = list(&r, "sources").iter().filter_map(|x| x["display_name"].as_str()).collect();
    for name in ["CR 1234 — Ann Lee", "Réunion de classe — René François", "Deals — Shop News"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }

    let mut top = |kind: &str| -> Vec<Value> {
        let r = s.peer.tool("tree.top_entities", json!({"kind": kind, "k": 50}));
        list(&r, "entities").clone()
    };
    let people = top("person");
    let ids: Vec<&str> = people.iter().filter_map(|e| e["entity_id"].as_str()).collect();
    for id in ["person:ann-lee", "person:rene-francois", "person:ada-lovelace", "person:charles-babbage"] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    assert!(!ids.iter().any(|id| id.contains("shop")), "a bulk sender is no person: {ids:?}");
    let ada = people.iter().find(|e| e["entity_id"] == "person:ada-lovelace").unwrap();
    assert_eq!(ada["merged"][0]["entity_id"], "handle:@adal", "{ada}");
    assert_eq!(ada["mention_count"], 2, "her message and the @adal mention: {ada}");
    let topics: Vec<String> = top("topic").iter().filter_map(|e| e["entity_id"].as_str().map(str::to_string)).collect();
    assert!(topics.iter().any(|t| t == "topic:engine"), "{topics:?}");
    for generic in ["topic:time", "topic:think", "topic:want"] {
        assert!(!topics.iter().any(|t| t == generic), "{generic} in {topics:?}");
    }
}
