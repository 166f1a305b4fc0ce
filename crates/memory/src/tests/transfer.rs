//! Export and import, backup and restore, on the engine: what goes out comes back the same, a
//! second import adds nothing, and an item the store holds in another version keeps the store's.

use super::Json;
use super::Wire;
use crate::ops;
use serde_json::{Value, json};

use super::{audit, chunk_of, corpus, open, put};

/// Every read method's answer that an import must reproduce.
fn answers(m: &crate::MemoryEngine) -> Vec<Value> {
    let chunk = chunk_of(m, "bread");
    vec![
        m.wire::<ops::Search>(json!({"query": "sourdough bread"})).unwrap(),
        m.wire::<ops::Recall>(json!({"query": "baking bread at home"})).unwrap(),
        m.wire::<ops::List>(json!({"limit": 100})).unwrap(),
        m.wire::<ops::ListSources>(json!({})).unwrap(),
        m.wire::<ops::TopEntities>(json!({})).unwrap(),
        m.wire::<ops::ReadChunk>(json!({"chunk_id": chunk})).unwrap(),
    ]
}

fn populate(m: &crate::MemoryEngine) {
    corpus(m);
    let bread = chunk_of(m, "bread");
    m.tag_chunk(&bread, &["favourite".into()], "mcp-tag-x", "mcp:test", audit("tree.tag")).unwrap().json();
    m.add_note(
        &bread,
        "Try rye flour next time, see https://example.com/rye",
        "mcp-note-x",
        "mcp:test",
        audit("memory.note"),
    )
    .unwrap();
    m.learn("The user bakes on Sundays", "fact", Some(0.8), "mcp:test", audit("memory.learn")).unwrap().json();
}

#[test]
fn an_export_imports_into_a_fresh_store_unchanged_and_twice_adds_nothing() {
    let (a, b, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = open(a.path());
    populate(&src);
    let dir = out.path().join("export");
    let summary = src.export(&dir).unwrap();
    assert_eq!(summary.records["chunks.jsonl"], 7, "{summary:?}");
    assert!(summary.markdown_files >= 6, "{summary:?}");
    assert!(dir.join("manifest.json").is_file());
    let dst = open(b.path());
    let first = dst.import(&dir).unwrap();
    assert_eq!(first.added["chunks.jsonl"], 7, "{first:?}");
    assert_eq!(first.conflicts, 0);
    assert_eq!(answers(&src), answers(&dst));
    let again = dst.import(&dir).unwrap();
    assert_eq!(again.added_total(), 0, "{again:?}");
    assert_eq!(answers(&src), answers(&dst));
    // An export is refused when it is incomplete.
    std::fs::write(dir.join("notes.jsonl"), "").unwrap();
    let err = dst.import(&dir).unwrap_err().to_string();
    assert!(err.contains("notes.jsonl") && err.contains("manifest"), "{err}");
    assert!(src.export(&dir).unwrap_err().to_string().contains("not empty"));
}

#[test]
fn a_live_store_keeps_its_own_version_of_an_item() {
    let (a, b, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = open(a.path());
    populate(&src);
    let dir = out.path().join("e");
    src.export(&dir).unwrap();
    let dst = open(b.path());
    put(&dst, "bread", "Sourdough bread", "A different bread text.", &[]);
    let s = dst.import(&dir).unwrap();
    assert_eq!(s.conflicts, 1, "{s:?}");
    assert_eq!(s.conflicts_named, vec!["doc:default/bread".to_string()]);
    let bread = dst.wire::<ops::ReadChunk>(json!({"chunk_id": chunk_of(&dst, "bread")})).unwrap();
    assert_eq!(bread["content"], "A different bread text.");
    assert_eq!(dst.stats().unwrap().json()["chunks"], 7, "the others came in (the note is kept too)");
}

#[test]
fn a_backup_restores_over_newer_data_and_keeps_the_old_as_a_side_file() {
    let (a, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = out.path().join("m.backup");
    {
        let m = open(a.path());
        populate(&m);
        let b = crate::backup(a.path(), &file).unwrap();
        assert_eq!(b.chunks, 7);
        assert!(crate::restore(a.path(), &file, false).unwrap_err().to_string().contains("in use"));
        m.forget(&["doc:default/rust".into()], "mcp:test", audit("memory.forget")).unwrap().json();
        put(&m, "new", "New", "stored after the backup", &[]);
    }
    let r = crate::restore(a.path(), &file, false).unwrap();
    assert!(r.previous.as_ref().is_some_and(|p| p.is_file()), "{r:?}");
    let m = open(a.path());
    assert_eq!(m.stats().unwrap().json()["chunks"], 7);
    assert_eq!(m.wire::<ops::Search>(json!({"query": "backup"})).unwrap()["hits"], json!([]));
    assert_eq!(m.wire::<ops::Search>(json!({"query": "ownership"})).unwrap()["hits"].as_array().unwrap().len(), 1);
    let err = crate::restore(a.path(), &a.path().join("LOCK"), false).unwrap_err().to_string();
    assert!(err.contains("not a memory backup"), "{err}");
}

#[test]
fn a_backup_during_writes_is_one_consistent_snapshot() {
    let (a, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = open(a.path());
    let writer = {
        let m = m.clone();
        std::thread::spawn(move || {
            for i in 0..200 {
                put(&m, &format!("k{i}"), &format!("Doc {i}"), &format!("entry number {i} of the log"), &["log"]);
            }
        })
    };
    let mut last = 0;
    for i in 0..5 {
        let file = out.path().join(format!("b{i}"));
        let b = crate::backup(a.path(), &file).unwrap();
        assert!(b.chunks >= last, "{b:?}");
        last = b.chunks;
        // Every document's chunk, key, source and audit row come from the same moment.
        let conn = rusqlite::Connection::open(&file).unwrap();
        let one = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        let chunks = one("SELECT count(*) FROM chunks");
        assert_eq!(chunks, b.chunks);
        assert_eq!(one("SELECT count(*) FROM kv WHERE kind = 'document'"), chunks);
        assert_eq!(one("SELECT count(*) FROM sources"), chunks);
        assert_eq!(one("SELECT count(*) FROM mcp_audit"), chunks);
        assert_eq!(one("SELECT count(*) FROM chunk_tags"), chunks);
    }
    writer.join().unwrap();
}

#[test]
fn an_entity_keeps_its_name_when_the_chunk_that_named_it_is_gone() {
    let (a, b, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = open(a.path());
    put(&src, "first", "First", "Write to Bob@Example.COM about the kiln.", &[]);
    put(&src, "second", "Second", "Later: write to bob@example.com again.", &[]);
    let names = |m: &crate::MemoryEngine| m.wire::<ops::TopEntities>(json!({"kind": "email"})).unwrap();
    // The entity thread reads a chunk's text after the write; an entity answer waits for it.
    assert_eq!(names(&src)["entities"][0]["display_name"], "Bob@Example.COM");
    src.forget(&["doc:default/first".into()], "mcp:test", audit("memory.forget")).unwrap().json();
    let dir = out.path().join("e");
    src.export(&dir).unwrap();
    let dst = open(b.path());
    dst.import(&dir).unwrap();
    assert_eq!(names(&src)["entities"][0]["display_name"], "Bob@Example.COM");
    assert_eq!(names(&src), names(&dst));
}
