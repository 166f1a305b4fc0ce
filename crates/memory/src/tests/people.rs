//! People, bots and topics end to end: mail headers and chat senders become people, linked
//! addresses and names merge (recorded, and undone by `split_entity`), automated senders become
//! bots, phrases stay out, and a store made by an older extractor is extracted again on open.

use super::Json;
use super::Wire;
use crate::ops;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::import::ingest;
use super::{audit, ids, open, put};

fn mbox(dir: &Path, messages: &[(&str, &str, &str)]) -> std::path::PathBuf {
    let mut text = String::new();
    for (i, (from, to, body)) in messages.iter().enumerate() {
        text.push_str(&format!(
            "From sender@example.com Mon Jan  1 10:0{i}:00 2024\nFrom: {from}\nTo: {to}\nSubject: note {i}\n\
             Message-ID: <m{i}@example.com>\nDate: Mon, 1 Jan 2024 10:0{i}:00 +0000\n\n{body}\n\n"
        ));
    }
    let path = dir.join("mail.mbox");
    fs::write(&path, text).unwrap();
    path
}

/// A new store in `data` with `messages` ingested from one mbox in `files`.
fn mail_store(data: &Path, files: &Path, messages: &[(&str, &str, &str)]) -> crate::MemoryEngine {
    let m = open(data);
    ingest(&m, &mbox(files, messages));
    m
}

fn top(m: &crate::MemoryEngine, kind: &str) -> Value {
    m.wire::<ops::TopEntities>(json!({"kind": kind, "k": 50})).unwrap()
}

fn merged(v: &Value, id: &str) -> Vec<String> {
    let e = v["entities"].as_array().unwrap().iter().find(|e| e["entity_id"] == id).expect(id);
    e.get("merged")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| m["entity_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn mail_senders_are_people_linked_names_merge_and_a_split_undoes_it() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let m = mail_store(
        data.path(),
        files.path(),
        &[
            (
                "Ada Lovelace <ada@work.example>",
                "Bob Jones <bob@example.org>",
                "The Correlation Error and Monte Carlo runs.\nBob Jones will check.",
            ),
            ("Ada Lovelace <ada@home.example>", "bob@example.org", "Breaking Changes below.\nWhere Each Item Goes."),
            ("A. Lovelace <ada@work.example>", "Bob Jones <bob@example.org>", "Later."),
            ("GitHub <notifications@github.com>", "ada@work.example", "New comment on the issue."),
            ("\"dependabot[bot]\" <support@example.com>", "ada@work.example", "Bump serde."),
        ],
    );
    let people = top(&m, "person");
    assert_eq!(ids(&people, "entities", "entity_id"), ["person:ada-lovelace", "person:bob-jones"]);
    let ada = &people["entities"][0];
    assert_eq!((ada["display_name"].as_str(), ada["mention_count"].as_i64()), (Some("Ada Lovelace"), Some(3 + 2)));
    // Both addresses are hers, and the other spelling of her name was merged for sharing one.
    assert_eq!(
        merged(&people, "person:ada-lovelace"),
        ["email:ada@home.example", "email:ada@work.example", "person:a-lovelace"]
    );
    let reason = ada["merged"][2]["reason"].as_str().unwrap();
    assert_eq!(reason, "both wrote as ada@work.example");
    assert_eq!(ids(&top(&m, "bot"), "entities", "entity_id"), ["bot:dependabot-bot", "bot:github"]);

    // The merge is undone: the spelling is its own person again, and stays so when the
    // store is extracted anew.
    let r = m.split_entity("person:a-lovelace", audit("memory.split_entity")).unwrap().json();
    assert_eq!(r, json!({"entity_id": "person:a-lovelace", "split_from": "person:ada-lovelace"}));
    let people = top(&m, "person");
    assert_eq!(ids(&people, "entities", "entity_id"), ["person:ada-lovelace", "person:bob-jones", "person:a-lovelace"]);
    assert_eq!(merged(&people, "person:ada-lovelace"), ["email:ada@home.example", "email:ada@work.example"]);
    assert!(m.split_entity("person:a-lovelace", audit("memory.split_entity")).is_err(), "nothing left to split");
    drop(m);
    reset_extractor(data.path());
    let m = open(data.path());
    m.wait_background();
    assert_eq!(
        ids(&top(&m, "person"), "entities", "entity_id"),
        ["person:ada-lovelace", "person:bob-jones", "person:a-lovelace"]
    );
}

/// Marks the store as made by the first extractor, with a phrase it would have kept.
fn reset_extractor(dir: &Path) {
    let conn = rusqlite::Connection::open(dir.join("memory.db")).unwrap();
    conn.execute_batch(
        "UPDATE meta SET value = 0 WHERE name = 'entities_version';
         INSERT INTO entities (id, kind, display_name, mention_count, chunk_count)
         VALUES ('person:correlation-error', 'person', 'Correlation Error', 99, 9);",
    )
    .unwrap();
}

#[test]
fn a_templated_chat_sender_is_a_bot_and_that_can_be_undone() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let mut lines = String::new();
    for i in 0..220 {
        lines.push_str(&format!(
            "{{\"ts\": {}, \"from\": \"Deploy Watcher\", \"text\": \"Deployed build {i} to production\"}}\n",
            1_700_000_000 + i * 60
        ));
    }
    let words = ["lunch", "review", "tests", "release", "docs", "bug", "meeting", "plan", "idea", "coffee"];
    for (i, w) in words.iter().enumerate() {
        lines.push_str(&format!(
            "{{\"ts\": {}, \"from\": \"ann\", \"text\": \"{w} now? said Ann Byrne\"}}\n",
            1_700_000_000 + i as i64 * 61
        ));
    }
    let path = files.path().join("ops.jsonl");
    fs::write(&path, lines).unwrap();
    ingest(&m, &path);
    assert_eq!(ids(&top(&m, "person"), "entities", "entity_id"), ["person:ann", "person:ann-byrne"]);
    let bots = top(&m, "bot");
    assert_eq!(ids(&bots, "entities", "entity_id"), ["bot:deploy-watcher"]);
    let reason = bots["entities"][0]["merged"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("different openings"), "{reason}");
    m.split_entity("person:deploy-watcher", audit("memory.split_entity")).unwrap().json();
    assert_eq!(top(&m, "bot")["entities"], json!([]));
    assert_eq!(top(&m, "person")["entities"][0]["entity_id"], "person:deploy-watcher");
    // Forgetting the file leaves no name behind: no person, no merge.
    let origin = format!("file:{}", std::path::absolute(&path).unwrap().display());
    m.forget(&[origin], "mcp:test", audit("memory.forget")).unwrap().json();
    assert_eq!(m.wire::<ops::TopEntities>(json!({})).unwrap()["total"], 0);
    let conn = rusqlite::Connection::open(data.path().join("memory.db")).unwrap();
    let left: i64 = conn.query_row("SELECT count(*) FROM entity_aliases", [], |r| r.get(0)).unwrap();
    let people: i64 = conn.query_row("SELECT count(*) FROM people", [], |r| r.get(0)).unwrap();
    assert_eq!((left, people), (0, 0));
}

#[test]
fn an_older_store_is_extracted_again_when_opened() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    put(&m, "a", "Notes", "Met Dr. Grace Hopper about compilers and compilers.", &["history"]);
    drop(m);
    reset_extractor(data.path());
    let m = open(data.path());
    // The old entities are gone at once; the new ones come from a background thread.
    assert!(ids(&top(&m, "person"), "entities", "entity_id").iter().all(|id| id != "person:correlation-error"));
    m.wait_background();
    assert_eq!(ids(&top(&m, "person"), "entities", "entity_id"), ["person:grace-hopper"]);
    let topics = ids(&top(&m, "topic"), "entities", "entity_id");
    assert!(
        topics.contains(&"topic:history".to_string()) && topics.contains(&"topic:compiler".to_string()),
        "{topics:?}"
    );
    assert_eq!(m.stats().unwrap().json()["entities"], m.wire::<ops::TopEntities>(json!({})).unwrap()["total"]);
    // Done once: the next open has nothing to do.
    drop(m);
    let conn = rusqlite::Connection::open(data.path().join("memory.db")).unwrap();
    let version: i64 =
        conn.query_row("SELECT value FROM meta WHERE name = 'entities_version'", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 2);
}

#[test]
fn a_name_in_the_text_counts_once_its_person_wrote_even_later() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let path = mbox(
        files.path(),
        &[
            ("Ada Lovelace <ada@work.example>", "team@example.org", "Ask Zoltan Kiraly about it."),
            ("Zoltan Kiraly <zk@example.net>", "team@example.org", "Here."),
        ],
    );
    ingest(&m, &path);
    let people = top(&m, "person");
    let zk = people["entities"].as_array().unwrap().iter().find(|e| e["entity_id"] == "person:zoltan-kiraly").unwrap();
    assert_eq!((zk["mention_count"].as_i64(), zk["chunk_count"].as_i64()), (Some(2), Some(2)), "{people}");
}

#[test]
fn a_half_done_extraction_goes_on_where_it_was() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    put(&m, "a", "Notes", "Met Dr. Grace Hopper.", &[]);
    put(&m, "b", "More", "Then Dr. Ada Byron.", &[]);
    drop(m);
    // As a store closed after the first chunk of the second pass leaves it: the second chunk's
    // entities not written yet, the first's kept.
    let conn = rusqlite::Connection::open(data.path().join("memory.db")).unwrap();
    let (first, last): (i64, i64) =
        conn.query_row("SELECT min(rowid), max(rowid) FROM chunks", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    conn.execute_batch(&format!(
        "UPDATE meta SET value = 0 WHERE name = 'entities_version';
         INSERT INTO meta (name, value) VALUES ('entities_reextract_to', 1), ('entities_reextract_pass', 1),
             ('entities_reextract_after', {first}), ('entities_reextract_upto', {last});
         DELETE FROM chunk_entities WHERE chunk_rowid = {last};
         DELETE FROM entities WHERE id = 'person:ada-byron';"
    ))
    .unwrap();
    drop(conn);
    let m = open(data.path());
    m.wait_background();
    let people = ids(&top(&m, "person"), "entities", "entity_id");
    assert_eq!(people, ["person:ada-byron", "person:grace-hopper"], "the first chunk was not extracted twice");
    assert_eq!(top(&m, "person")["entities"][1]["mention_count"], 1);
}

/// Everything `top_entities` lists, with counts.
fn all_entities(m: &crate::MemoryEngine) -> Value {
    m.wire::<ops::TopEntities>(json!({"k": 50})).unwrap()
}

#[test]
fn text_read_after_the_write_counts_as_a_full_extraction_and_only_once() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    // A sender named in the text of her own message and of another (and a recipient of it: four
    // mentions in two chunks), a hashtag, an address both in a header and in the text, and
    // repeated topic words.
    let m = mail_store(
        data.path(),
        files.path(),
        &[
            (
                "Ada Lovelace <ada@work.example>",
                "Bob Jones <bob@example.org>",
                "Ada Lovelace here: the kiln firing needs a kiln log. #pottery\nWrite to bob@example.org.",
            ),
            ("Bob Jones <bob@example.org>", "ada@work.example", "Ada Lovelace asked about glaze; glaze tests run."),
        ],
    );
    let written = all_entities(&m);
    let ada = written["entities"].as_array().unwrap().iter().find(|e| e["entity_id"] == "person:ada-lovelace");
    assert_eq!(ada.map(|e| (e["mention_count"].clone(), e["chunk_count"].clone())), Some((json!(4), json!(2))));
    for id in ["topic:pottery", "topic:kiln", "topic:glaze", "email:bob@example.org"] {
        assert!(written["entities"].as_array().unwrap().iter().any(|e| e["entity_id"] == id), "{id}: {written}");
    }
    put(&m, "n", "Note", "A note on #pottery and kiln shelves, kiln wash.", &["studio"]);
    let written = all_entities(&m);
    drop(m);
    // The same chunks extracted in one go (as after an extractor upgrade) give the same.
    let conn = rusqlite::Connection::open(data.path().join("memory.db")).unwrap();
    conn.execute("UPDATE meta SET value = 0 WHERE name = 'entities_version'", []).unwrap();
    drop(conn);
    let m = open(data.path());
    m.wait_background();
    assert_eq!(all_entities(&m), written);
    drop(m);
    // A store made before text was read in the background (no mark) is not read twice.
    let conn = rusqlite::Connection::open(data.path().join("memory.db")).unwrap();
    conn.execute("DELETE FROM meta WHERE name = 'entities_text_upto'", []).unwrap();
    drop(conn);
    let m = open(data.path());
    m.wait_background();
    assert_eq!(all_entities(&m), written);
}

#[test]
fn text_is_read_while_queries_keep_coming() {
    // The entity thread stands aside for searches and recalls, but only for a while: with a
    // query that never ends, the text of two batches' worth of mail is still read.
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let _query = m.inner.foreground.query();
    let n = 1_500;
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "From ada@example.com Mon Jan  1 10:00:00 2024\nFrom: Ada <ada@example.com>\nTo: bob@example.org\n\
             Subject: firing {i}\nMessage-ID: <k{i}@example.com>\nDate: Mon, 1 Jan 2024 10:00:00 +0000\n\n\
             Kiln firing number {i} went well. #pottery\n\n"
        ));
    }
    let path = files.path().join("kiln.mbox");
    fs::write(&path, text).unwrap();
    ingest(&m, &path);
    m.wait_background();
    let topics = all_entities(&m);
    let pottery = topics["entities"].as_array().unwrap().iter().find(|e| e["entity_id"] == "topic:pottery");
    assert_eq!(pottery.and_then(|e| e["chunk_count"].as_i64()), Some(n), "{topics}");
}
