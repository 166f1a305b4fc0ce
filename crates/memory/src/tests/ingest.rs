//! Ingest of documents, e-mail (eml, mbox) and chat exports, incremental re-ingest, and
//! per-file failures.

use super::Json;
use super::Wire;
use crate::ops;
use std::cell::RefCell;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::super::{IngestSummary, MemoryEngine, MemoryError};
use super::open;

fn ingest(m: &MemoryEngine, paths: &[&Path], kind: Option<&str>) -> IngestSummary {
    let paths: Vec<_> = paths.iter().map(|p| p.to_path_buf()).collect();
    m.ingest_paths(&paths, kind, &|_| {}).expect("ingest")
}

const EML_ROOT: &str = "From: Alice Smith <alice@example.com>\r\nTo: Me <me@example.com>\r\nSubject: Budget review\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\nMessage-ID: <root@example.com>\r\n\r\nCan we review the budget on Friday?\r\n";
const EML_REPLY: &str = "From: Me <me@example.com>\r\nTo: Alice Smith <alice@example.com>\r\nSubject: Re: Budget review\r\nDate: Mon, 1 Jan 2024 11:00:00 +0000\r\nMessage-ID: <reply@example.com>\r\nIn-Reply-To: <root@example.com>\r\nReferences: <root@example.com>\r\n\r\nFriday works for me.\r\n\r\nOn Mon, Alice wrote:\r\n> Can we review the budget on Friday?\r\n";

const MBOX: &str = "From bob@example.org Tue Jan  2 09:00:00 2024\nFrom: Bob Jones <bob@example.org>\nTo: me@example.com\nSubject: Garden plans\nDate: Tue, 2 Jan 2024 09:00:00 +0000\nMessage-ID: <g1@example.org>\n\nShall we plant tomatoes this spring?\n\nFrom carol@example.net Wed Jan  3 09:00:00 2024\nFrom: Carol <carol@example.net>\nTo: me@example.com\nSubject: Re: Garden plans\nDate: Wed, 3 Jan 2024 09:00:00 +0000\nMessage-ID: <g2@example.net>\nReferences: <g1@example.org>\n\nYes, and basil too.\n\nFrom dan@example.com Thu Jan  4 09:00:00 2024\nFrom: Dan <dan@example.com>\nTo: me@example.com\nSubject: Invoice\nDate: Thu, 4 Jan 2024 09:00:00 +0000\nMessage-ID: <inv@example.com>\n\nYour invoice is attached.\n";

const CHAT: &str = r#"{"ts": "2024-03-01T10:00:00Z", "from": "ann", "text": "standup at ten?", "channel": "team"}
{"ts": 1709287260, "from": "ben", "text": "yes, standup at ten", "channel": "team"}
not json at all
{"ts": 1709300000000, "from": "ann", "text": "lunch later", "channel": "random"}
{"from": "ann", "text": "no timestamp", "channel": "team"}
{"ts": "2024-03-02T10:00:00Z", "from": "ann", "text": "next day, new chunk", "channel": "team"}
"#;

#[test]
fn documents_are_chunked_and_reingest_is_incremental() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let notes = src.path().join("notes");
    fs::create_dir_all(notes.join("sub")).unwrap();
    fs::create_dir_all(src.path().join(".hidden")).unwrap();
    fs::write(notes.join("a.md"), "# Alpha\n\nAlpha talks about comets.\n\n## More\n\nComet tails.\n").unwrap();
    fs::write(notes.join("sub/b.txt"), "Plain text about meteors.\n\nSecond paragraph.").unwrap();
    fs::write(notes.join("skip.bin"), [0u8, 1, 2]).unwrap();
    fs::write(src.path().join(".hidden/c.md"), "hidden").unwrap();
    let m = open(data.path());
    let progress = RefCell::new(Vec::new());
    let s = m.ingest_paths(&[src.path().to_path_buf()], None, &|p| progress.borrow_mut().push(p.files_done)).unwrap();
    assert_eq!((s.files_seen, s.files_ingested, s.files_unsupported, s.chunks_added), (3, 2, 1, 2), "{s:?}");
    assert_eq!(*progress.borrow(), vec![1, 2]);
    m.wait_background();
    let stats = m.stats().unwrap().json();
    assert_eq!(stats["vectors"]["count"], stats["chunks"], "{stats}");
    let hit = &m.wire::<ops::Search>(json!({"query": "comets"})).unwrap()["hits"][0];
    assert_eq!(hit["title"], "Alpha");
    assert_eq!(hit["source_kind"], "document");
    assert!(hit["source_ref"].as_str().unwrap().ends_with("a.md"));
    let fp = hit["source_ref"].as_str().unwrap();
    let r = m.wire::<ops::Fetch>(json!({"query": "comets", "filter": {"file_path": fp}})).unwrap();
    assert_eq!(r["items"].as_array().unwrap().len(), 1);
    let before = m.wire::<ops::Search>(json!({"query": "meteors"})).unwrap()["hits"][0]["chunk_id"].clone();

    // Unchanged: nothing happens.
    let s = ingest(&m, &[src.path()], None);
    assert_eq!((s.files_unchanged, s.files_ingested, s.chunks_added, s.chunks_removed), (2, 0, 0, 0), "{s:?}");
    // Changed: its chunks are replaced; the other file's chunk ids stay the same.
    fs::write(notes.join("a.md"), "# Alpha\n\nNow about asteroids.\n").unwrap();
    let s = ingest(&m, &[src.path()], None);
    assert_eq!((s.files_unchanged, s.files_ingested, s.chunks_added, s.chunks_removed), (1, 1, 1, 1), "{s:?}");
    assert_eq!(m.wire::<ops::Search>(json!({"query": "comets"})).unwrap()["hits"], json!([]));
    assert_eq!(m.wire::<ops::Search>(json!({"query": "asteroids"})).unwrap()["hits"].as_array().unwrap().len(), 1);
    assert_eq!(m.wire::<ops::Search>(json!({"query": "meteors"})).unwrap()["hits"][0]["chunk_id"], before);
}

#[test]
fn unreadable_files_are_reported_and_the_rest_continue() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    fs::write(src.path().join("bad.md"), [0x00, 0x01, 0xfe, 0x81]).unwrap();
    fs::write(src.path().join("good.md"), "good words").unwrap();
    fs::write(src.path().join("junk.eml"), "").unwrap();
    let missing = src.path().join("missing.md");
    let m = open(data.path());
    let s = ingest(&m, &[src.path(), &missing], None);
    assert_eq!(s.files_ingested, 1);
    let mut failed: Vec<(String, String)> = s
        .files_failed
        .iter()
        .map(|f| (f.path.file_name().unwrap().to_string_lossy().into_owned(), f.error.clone()))
        .collect();
    failed.sort();
    let names: Vec<&str> = failed.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names, ["bad.md", "junk.eml", "missing.md"], "{failed:?}");
    assert!(failed[0].1.contains("UTF-8"), "{failed:?}");
    let bad_kind = m.ingest_paths(&[], Some("video"), &|_| {});
    assert!(matches!(bad_kind, Err(MemoryError::InvalidParams(_))), "{bad_kind:?}");
}

#[test]
fn email_threads_join_across_files_and_name_the_other_party() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    fs::write(src.path().join("1.eml"), EML_ROOT).unwrap();
    fs::write(src.path().join("2.eml"), EML_REPLY).unwrap();
    fs::write(src.path().join("box.mbox"), MBOX).unwrap();
    let m = open(data.path());
    let s = ingest(&m, &[src.path()], None);
    assert_eq!((s.files_ingested, s.chunks_added), (3, 5), "{s:?}");
    let r = m.wire::<ops::ListSources>(json!({"user_email_hint": "ME@example.com"})).unwrap();
    let sources: Vec<(String, String, i64)> = r["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["source_id"].as_str().unwrap().into(),
                s["display_name"].as_str().unwrap().into(),
                s["chunk_count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [
            ("thread:inv@example.com".to_string(), "Invoice — Dan".to_string(), 1),
            ("thread:g1@example.org".into(), "Garden plans — Bob Jones".into(), 2),
            ("thread:root@example.com".into(), "Budget review — Alice Smith".into(), 2),
        ]
    );
    assert_eq!(r["sources"][2]["subject"], "Budget review");
    // The reply's quoted text and "wrote:" line are not stored again.
    let reply = m.wire::<ops::Browse>(json!({"source_ids": ["thread:root@example.com"]})).unwrap();
    let newest = &reply["chunks"][0];
    let full = m.wire::<ops::ReadChunk>(json!({"chunk_id": newest["chunk_id"]})).unwrap();
    let content = full["content"].as_str().unwrap();
    assert!(content.starts_with("Subject: Re: Budget review\nFrom: Me <me@example.com>"), "{content}");
    assert!(
        content.contains("Friday works for me.") && !content.contains("> Can we") && !content.contains("wrote:"),
        "{content}"
    );
    assert_eq!(full["source_ref"], "reply@example.com");
    assert_eq!(full["owner"], "me@example.com");
    assert_eq!(full["metadata"]["thread_id"], "thread:root@example.com");
    assert_eq!(full["timestamp_ms"], 1_704_106_800_000i64);
    let r = m
        .wire::<ops::Fetch>(
            json!({"query": "budget", "filter": {"thread_id": "thread:root@example.com", "kinds": ["email"]}}),
        )
        .unwrap();
    assert_eq!(r["items"].as_array().unwrap().len(), 2);
    // A later file replying into a known thread joins it.
    fs::write(
        src.path().join("3.eml"),
        "From: Alice Smith <alice@example.com>\nSubject: Re: Budget review\nMessage-ID: <late@example.com>\nIn-Reply-To: <reply@example.com>\n\nGreat.\n",
    )
    .unwrap();
    ingest(&m, &[src.path()], None);
    let r = m.wire::<ops::Browse>(json!({"source_ids": ["thread:root@example.com"]})).unwrap();
    assert_eq!(r["total"], 3);
}

#[test]
fn chat_exports_group_by_channel_and_time() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let path = src.path().join("export.jsonl");
    fs::write(&path, CHAT).unwrap();
    let m = open(data.path());
    let s = ingest(&m, &[&path], None);
    assert_eq!((s.chunks_added, s.lines_skipped), (3, 2), "{s:?}");
    let r = m.wire::<ops::Browse>(json!({"source_ids": ["chat:team"], "filter": {"kinds": ["conversation"]}})).unwrap();
    assert_eq!(r["total"], 2);
    let first = m.wire::<ops::ReadChunk>(json!({"chunk_id": r["chunks"][1]["chunk_id"]})).unwrap();
    assert_eq!(
        first["content"],
        "[2024-03-01 10:00] ann: standup at ten?\n[2024-03-01 10:01] ben: yes, standup at ten"
    );
    assert_eq!(first["metadata"]["participants"], json!(["ann", "ben"]));
    assert_eq!(first["owner"], Value::Null);
    let r = m.wire::<ops::ListSources>(json!({})).unwrap();
    let names: Vec<&str> =
        r["sources"].as_array().unwrap().iter().map(|s| s["display_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["#team", "#random"]);
    // A forced kind reads any extension.
    let other = src.path().join("log.data");
    fs::write(&other, r#"{"ts": 1, "from": "x", "text": "forced chat", "channel": "c"}"#).unwrap();
    assert_eq!(ingest(&m, &[&other], Some("chat")).chunks_added, 1);
}

/// The id of the one chunk `query` finds first.
fn found(m: &MemoryEngine, query: &str) -> Option<String> {
    let r = m.wire::<ops::Search>(json!({"query": query})).unwrap();
    r["hits"][0]["chunk_id"].as_str().map(str::to_string)
}

const GARDEN: &str = "# Garden\n\n## Herbs\n\nThyme and rosemary grow by the south wall in dry soil.\n\n## Tools\n\nThe spade hangs in the shed next to the rake.\n";

#[test]
fn tags_and_notes_follow_their_text_when_the_file_changes() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let path = src.path().join("garden.md");
    fs::write(&path, GARDEN).unwrap();
    let m = open(data.path());
    ingest(&m, &[&path], None);
    let herbs = found(&m, "thyme rosemary").unwrap();
    m.tag_chunk(&herbs, &["plants".into()], "k1", "mcp:test", super::audit("memory.tag")).unwrap().json();
    m.add_note(&herbs, "water weekly in summer", "n1", "mcp:test", super::audit("memory.note")).unwrap().json();

    // An edit elsewhere moves the passage (new chunk id); its tag and note go with it.
    fs::write(&path, GARDEN.replace("## Herbs", "Planted in 2021.\n\n## Herbs").replace("spade", "shovel")).unwrap();
    let s = ingest(&m, &[&path], None);
    assert_eq!((s.annotations_moved, s.annotations_detached), (1, 0), "{s:?}");
    let now = found(&m, "thyme rosemary").unwrap();
    let chunk = m.wire::<ops::ReadChunk>(json!({"chunk_id": now})).unwrap();
    assert!(chunk["tags"].as_array().unwrap().contains(&json!("plants")), "{chunk}");
    assert_eq!(chunk["notes"][0]["text"], "water weekly in summer", "{chunk}");
    // A rewrite that keeps most of the words still counts as the same passage.
    let reworded = fs::read_to_string(&path).unwrap().replace("in dry soil", "in dry sandy soil");
    fs::write(&path, reworded).unwrap();
    assert_eq!(ingest(&m, &[&path], None).annotations_moved, 1);
    let now = found(&m, "thyme rosemary").unwrap();
    assert_eq!(
        m.wire::<ops::ReadChunk>(json!({"chunk_id": now})).unwrap()["notes"][0]["text"],
        "water weekly in summer"
    );

    // The passage deleted: the annotations are kept, detached, and the note says so.
    let without = GARDEN.replace("Thyme and rosemary grow by the south wall in dry soil.", "Nothing grows here yet.");
    fs::write(&path, &without).unwrap();
    let s = ingest(&m, &[&path], None);
    assert_eq!((s.annotations_moved, s.annotations_detached), (0, 1), "{s:?}");
    assert_eq!(m.stats().unwrap().json()["annotations_detached"], 1);
    let note = m.wire::<ops::Recall>(json!({"query": "water weekly in summer"})).unwrap();
    let note_id = note["chunks"][0]["chunk_id"].as_str().unwrap();
    let note = m.wire::<ops::ReadChunk>(json!({"chunk_id": note_id})).unwrap();
    assert_eq!(note["source_kind"], "note");
    assert_eq!(note["metadata"]["anchor"], "detached", "{note}");
    assert!(note["metadata"]["anchor_text"].as_str().unwrap().contains("Thyme"), "{note}");

    // The passage back: tags and note re-attach.
    fs::write(&path, GARDEN).unwrap();
    let s = ingest(&m, &[&path], None);
    assert_eq!((s.annotations_moved, s.annotations_detached), (1, 0), "{s:?}");
    assert_eq!(m.stats().unwrap().json()["annotations_detached"], 0);
    let back = m.wire::<ops::ReadChunk>(json!({"chunk_id": found(&m, "thyme rosemary").unwrap()})).unwrap();
    assert!(back["tags"].as_array().unwrap().contains(&json!("plants")), "{back}");
    assert_eq!(back["notes"][0]["text"], "water weekly in summer");
    let note = m.wire::<ops::ReadChunk>(json!({"chunk_id": note_id})).unwrap();
    assert!(note["metadata"].get("anchor").is_none(), "{note}");
    assert_eq!(note["metadata"]["chunk_id"], back["chunk_id"]);
}

#[test]
fn deleted_files_leave_memory_on_the_next_ingest_of_their_folder() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let keep = src.path().join("keep.md");
    let gone = src.path().join("sub").join("gone.md");
    fs::create_dir(src.path().join("sub")).unwrap();
    fs::write(&keep, "# Keep\n\nThe lighthouse lamp is trimmed nightly.\n").unwrap();
    fs::write(&gone, GARDEN).unwrap();
    let m = open(data.path());
    assert_eq!(ingest(&m, &[src.path()], None).files_ingested, 2);
    let herbs = found(&m, "thyme rosemary").unwrap();
    m.tag_chunk(&herbs, &["plants".into()], "k1", "mcp:test", super::audit("memory.tag")).unwrap().json();

    fs::remove_file(&gone).unwrap();
    let s = ingest(&m, &[src.path()], None);
    assert_eq!((s.files_removed, s.files_unchanged, s.annotations_detached), (1, 1, 1), "{s:?}");
    assert!(s.files_failed.is_empty(), "{s:?}");
    assert_eq!(found(&m, "thyme rosemary"), None);
    assert!(found(&m, "lighthouse").is_some());
    assert_eq!(m.stats().unwrap().json()["files"], 1);

    // Naming a deleted file removes it too; a path that was never ingested is an error, and
    // it does not stop the others.
    fs::remove_file(&keep).unwrap();
    let never = src.path().join("never.md");
    let s = ingest(&m, &[&keep, &never], None);
    assert_eq!(s.files_removed, 1, "{s:?}");
    assert_eq!(s.files_failed.len(), 1, "{s:?}");
    assert_eq!(found(&m, "lighthouse"), None);
}
