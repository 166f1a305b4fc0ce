//! Write methods: upserts, notes, tags, learnings, forget, and their audit rows.

use super::Json;
use super::Wire;
use crate::ops;
use serde_json::json;

use super::super::{AuditQuery, AuditRow, MemoryError, PutDocument};
use super::{audit, chunk_of, ids, open, put};

#[test]
fn put_document_creates_updates_and_detects_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let r = put(&m, "plan", "Plan", "first version about kites", &["a"]);
    assert_eq!(
        (r["status"].as_str(), r["id"].as_str(), r["namespace"].as_str()),
        (Some("created"), Some("doc:default/plan"), Some("default"))
    );
    let first_ids = r["chunk_ids"].clone();
    // Visible at once to every reader.
    assert_eq!(
        ids(&m.wire::<ops::Search>(json!({"query": "kites"})).unwrap(), "hits", "chunk_id"),
        [first_ids[0].as_str().unwrap()]
    );
    assert_eq!(put(&m, "plan", "Plan", "first version about kites", &["a"])["status"], "unchanged");
    let r = put(&m, "plan", "Plan", "second version about balloons", &["a"]);
    assert_eq!(r["status"], "updated");
    assert_ne!(r["chunk_ids"], first_ids);
    assert_eq!(m.wire::<ops::Search>(json!({"query": "kites"})).unwrap()["hits"], json!([]));
    assert_eq!(m.wire::<ops::Fetch>(json!({"query": "kites", "mode": "vector"})).unwrap()["items"], json!([]));
    assert_eq!(ids(&m.wire::<ops::Search>(json!({"query": "balloons"})).unwrap(), "hits", "chunk_id").len(), 1);
    assert_eq!(m.stats().unwrap().json()["chunks"], 1);
    // A long document is chunked, each chunk carrying the document's metadata.
    let long = (0..12).map(|i| format!("## Part {i}\n\n{}", "word ".repeat(150))).collect::<Vec<_>>().join("\n\n");
    let r = put(&m, "long", "Long", &long, &[]);
    assert!(r["chunk_ids"].as_array().unwrap().len() >= 4, "{r}");
    // Blank content is refused before anything is written.
    let err = m.put_document(
        PutDocument { key: "x".into(), content: " ".into(), source: "s".into(), ..Default::default() },
        audit("memory.store"),
    );
    assert!(matches!(err, Err(MemoryError::InvalidParams(ref s)) if s == "content must not be blank"));
}

#[test]
fn writes_commit_their_audit_row_and_failures_write_none() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let r = put(&m, "k", "T", "text", &[]);
    let chunk = chunk_of(&m, "k");
    m.add_note(&chunk, "a note", "mcp-note-x", "mcp:test", audit("memory.note")).unwrap().json();
    assert!(m.add_note("ffffffffffffffffffffffffffffffff", "n", "k2", "mcp:test", audit("memory.note")).is_err());
    let rows = m.query_audit(AuditQuery::default()).unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let store_row = rows.iter().find(|r| r.tool == "memory.store").unwrap();
    assert!(store_row.success);
    assert_eq!(store_row.result_id.as_deref(), r["id"].as_str());
    assert_eq!(store_row.client_info, json!({"name": "Test", "version": "1"}));
    // Rejections come in through record_audit; errors are cut to 1024 bytes.
    let rejected = AuditRow { success: false, error: Some("é".repeat(1000)), ..audit("tree.tag") };
    m.record_audit(&[rejected]).unwrap();
    let failed = m.query_audit(AuditQuery { failed_only: true, ..Default::default() }).unwrap();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].error.as_ref().unwrap().len() <= 1024);
    assert_eq!(m.query_audit(AuditQuery { tool: Some("memory.note".into()), ..Default::default() }).unwrap().len(), 1);
    assert_eq!(
        m.query_audit(AuditQuery { client: Some("test".into()), limit: Some(1), ..Default::default() }).unwrap().len(),
        1
    );
    assert_eq!(m.query_audit(AuditQuery { client: Some("cursor".into()), ..Default::default() }).unwrap().len(), 0);
}

#[test]
fn notes_are_searchable_upserted_by_key_and_shown_on_the_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    put(&m, "k", "Trip", "We flew to Lisbon.", &[]);
    let chunk = chunk_of(&m, "k");
    let n = m
        .add_note(&chunk, "remember the pastel de nata", "mcp-note-1", "mcp:test", audit("memory.note"))
        .unwrap()
        .json();
    assert_eq!(n["status"], "created");
    let hits = m.wire::<ops::Search>(json!({"query": "pastel"})).unwrap();
    assert_eq!(hits["hits"][0]["source_kind"], "note");
    let n2 =
        m.add_note(&chunk, "remember the sardines", "mcp-note-1", "mcp:test", audit("memory.note")).unwrap().json();
    assert_eq!(n2["status"], "updated");
    assert_eq!(m.wire::<ops::Search>(json!({"query": "pastel"})).unwrap()["hits"], json!([]));
    let c = m.wire::<ops::ReadChunk>(json!({"chunk_id": chunk})).unwrap();
    assert_eq!(c["notes"].as_array().unwrap().len(), 1);
    assert_eq!(c["notes"][0]["text"], "remember the sardines");
    let err = m.add_note("00000000000000000000000000000000", "x", "k", "mcp:test", audit("memory.note")).unwrap_err();
    assert!(matches!(err, MemoryError::NotFound(_)));
}

#[test]
fn tags_replace_per_key_and_filter_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    put(&m, "k", "T", "tagged text", &["own"]);
    let chunk = chunk_of(&m, "k");
    let tag = |tags: &[&str], key: &str| {
        let tags: Vec<String> = tags.iter().map(|s| s.to_string()).collect();
        m.tag_chunk(&chunk, &tags, key, "mcp:test", audit("tree.tag"))
    };
    assert_eq!(tag(&["a", "b"], "mcp-tag-1").unwrap().json()["tags"], json!(["a", "b", "own"]));
    assert_eq!(tag(&["c"], "mcp-tag-1").unwrap().json()["tags"], json!(["c", "own"]));
    assert_eq!(tag(&["d"], "other").unwrap().json()["tags"], json!(["c", "d", "own"]));
    let r = m.wire::<ops::Fetch>(json!({"query": "tagged", "filter": {"tags_any": ["c"]}})).unwrap();
    assert_eq!(r["items"].as_array().unwrap().len(), 1);
    let cases: &[(&[&str], &str)] = &[(&[], "at least one"), (&[" "], "tags[0] must not be blank")];
    for (tags, want) in cases {
        let err = tag(tags, "k").unwrap_err();
        assert!(matches!(err, MemoryError::InvalidParams(ref s) if s.contains(want)), "{err:?}");
    }
    let long = "x".repeat(129);
    assert!(tag(&[long.as_str()], "k").is_err());
    let many: Vec<String> = (0..51).map(|i| i.to_string()).collect();
    assert!(m.tag_chunk(&chunk, &many, "k", "mcp:test", audit("tree.tag")).is_err());
}

#[test]
fn learnings_are_new_items_with_validated_fields() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let a = m
        .learn("User prefers tabs over spaces", "preference", Some(0.9), "mcp:test", audit("memory.learn"))
        .unwrap()
        .json();
    let b =
        m.learn("User prefers tabs over spaces", "preference", None, "mcp:test", audit("memory.learn")).unwrap().json();
    assert_ne!(a["id"], b["id"]);
    let r = m.wire::<ops::Fetch>(json!({"query": "tabs", "filter": {"kinds": ["learning"]}})).unwrap();
    assert_eq!(r["items"].as_array().unwrap().len(), 2);
    assert_eq!(r["items"][0]["metadata"]["learning_kind"], "preference");
    assert!(m.learn("x", "opinion", None, "s", audit("memory.learn")).is_err());
    assert!(m.learn("x", "fact", Some(1.5), "s", audit("memory.learn")).is_err());
    assert!(m.learn(" ", "fact", None, "s", audit("memory.learn")).is_err());
}

#[test]
fn forget_removes_from_database_and_every_index() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    put(&m, "secret", "Secret", "the launch code is zebra", &[]);
    put(&m, "other", "Other", "nothing to see", &[]);
    let chunk = chunk_of(&m, "secret");
    m.add_note(&chunk, "zebra note", "mcp-note-s", "mcp:test", audit("memory.note")).unwrap().json();
    let learning = m.learn("zebra facts", "fact", None, "mcp:test", audit("memory.learn")).unwrap().json();
    let ids_in = vec![chunk.clone(), learning["id"].as_str().unwrap().to_string(), "nope".to_string()];
    let r = m.forget(&ids_in, "mcp:test", audit("memory.forget")).unwrap().json();
    assert_eq!(r["deleted"], json!([chunk, learning["id"]]));
    assert_eq!(r["not_found"], json!(["nope"]));
    for mode in ["keyword", "vector", "hybrid"] {
        assert_eq!(
            m.wire::<ops::Fetch>(json!({"query": "zebra", "mode": mode})).unwrap()["items"],
            json!([]),
            "{mode}"
        );
    }
    assert!(matches!(m.wire::<ops::ReadChunk>(json!({"chunk_id": chunk})), Err(MemoryError::NotFound(_))));
    assert_eq!(m.stats().unwrap().json()["chunks"], 1);
    // The same holds after reopening (indexes on disk agree).
    drop(m);
    let m = open(dir.path());
    assert_eq!(m.wire::<ops::Fetch>(json!({"query": "zebra", "mode": "hybrid"})).unwrap()["items"], json!([]));
    let s = m.stats().unwrap().json();
    assert_eq!((s["fts"]["docs"].as_i64(), s["vectors"]["count"].as_i64()), (Some(1), Some(1)));
    // Forgetting a whole document by its item id, or by source id.
    let r = m.forget(&["doc:default/other".into()], "mcp:test", audit("memory.forget")).unwrap().json();
    assert_eq!(r["deleted"], json!(["doc:default/other"]));
    assert_eq!(m.stats().unwrap().json()["sources"], 0);
    assert!(m.forget(&[], "mcp:test", audit("memory.forget")).is_err());
    // Nothing found is a failure that commits nothing (no success row).
    let before = m.query_audit(AuditQuery::default()).unwrap().len();
    assert!(matches!(m.forget(&["nope".into()], "mcp:test", audit("memory.forget")), Err(MemoryError::NotFound(_))));
    assert_eq!(m.query_audit(AuditQuery::default()).unwrap().len(), before);
}

#[test]
fn concurrent_reads_and_writes_stay_consistent() {
    // Writers share index commits (a group commit); each must still be acknowledged only once
    // it is searchable and audited.
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    std::thread::scope(|s| {
        for t in 0..8 {
            let m = m.clone();
            s.spawn(move || {
                for i in 0..15 {
                    let key = format!("t{t}-{i}");
                    let r = put(&m, &key, "Concurrent", &format!("parallel write {t} {i}"), &[]);
                    // Read-your-writes from the same thread, through every reader.
                    let id = r["chunk_ids"][0].as_str().unwrap().to_string();
                    m.wire::<ops::ReadChunk>(json!({"chunk_id": id})).unwrap();
                    let hits = m
                        .wire::<ops::Fetch>(
                            json!({"query": format!("parallel {t} {i}"), "mode": "keyword", "limit": 100}),
                        )
                        .unwrap();
                    assert!(ids(&hits, "items", "id").contains(&id), "write {key} not searchable");
                }
            });
        }
        let reader = m.clone();
        s.spawn(move || {
            for _ in 0..30 {
                reader.wire::<ops::Recall>(json!({"query": "parallel write"})).unwrap();
                reader.wire::<ops::List>(json!({"limit": 5})).unwrap();
            }
        });
    });
    let s = m.stats().unwrap().json();
    assert_eq!(
        (s["chunks"].as_i64(), s["fts"]["docs"].as_i64(), s["vectors"]["count"].as_i64()),
        (Some(120), Some(120), Some(120))
    );
    let rows = m.query_audit(AuditQuery { limit: Some(1000), ..Default::default() }).unwrap();
    assert_eq!(rows.iter().filter(|r| r.success).count(), 120);
}
