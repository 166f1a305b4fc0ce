//! Derived indexes: rebuild equals original, repair of an index that is behind or gone,
//! a torn vector log, and re-embedding after a change of embedder.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::super::MemoryEngine;
use super::{TestEmbedder, corpus, open, open_with, put};

fn snapshot(m: &MemoryEngine) -> Vec<Value> {
    ["bread", "rust search", "garden sun", "WAL writer"]
        .iter()
        .flat_map(|q| {
            [
                m.search(json!({"query": q})).unwrap()["hits"].clone(),
                m.recall(json!({"query": q})).unwrap()["chunks"].clone(),
                m.fetch(json!({"query": q, "mode": "vector"})).unwrap()["items"].clone(),
            ]
        })
        .collect()
}

fn rowback_index_state(dir: &std::path::Path, name: &str, seq: i64) {
    let conn = rusqlite::Connection::open(dir.join("memory.db")).unwrap();
    conn.execute("UPDATE index_state SET seq = ?1 WHERE name = ?2", rusqlite::params![seq, name]).unwrap();
}

#[test]
fn reindex_reproduces_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    m.forget(&["doc:default/garden".into()], "mcp:test", super::audit("memory.forget")).unwrap();
    let before = snapshot(&m);
    let s = m.reindex().unwrap();
    assert_eq!((s.chunks, s.fts_docs, s.vectors), (4, 4, 4));
    assert_eq!(snapshot(&m), before);
    drop(m);
    assert_eq!(snapshot(&open(dir.path())), before);
}

#[test]
fn indexes_behind_the_database_are_repaired_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    let before = snapshot(&m);
    drop(m);
    // Whole index directories gone.
    std::fs::remove_dir_all(dir.path().join("fts")).unwrap();
    std::fs::remove_dir_all(dir.path().join("vectors")).unwrap();
    let m = open(dir.path());
    assert_eq!(snapshot(&m), before);
    let s = m.stats().unwrap();
    assert_eq!(s["fts"]["seq"], s["db_seq"]);
    assert_eq!(s["vectors"]["seq"], s["db_seq"]);
    drop(m);
    // Index state rolled back: replay must not duplicate documents.
    rowback_index_state(dir.path(), "fts", 0);
    rowback_index_state(dir.path(), "vectors", 2);
    let m = open(dir.path());
    assert_eq!(m.stats().unwrap()["fts"]["docs"], 5);
    assert_eq!(snapshot(&m), before);
}

#[test]
fn a_torn_vector_log_is_cut_and_replayed_from_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    let before = snapshot(&m);
    drop(m);
    let log = dir.path().join("vectors/vectors.log");
    let len = std::fs::metadata(&log).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    f.set_len(len - 30).unwrap();
    drop(f);
    let m = open(dir.path());
    assert_eq!(snapshot(&m), before);
    put(&m, "new", "New", "fresh vector after repair", &[]);
    drop(m);
    let m = open(dir.path());
    assert_eq!(m.stats().unwrap()["vectors"]["count"], 6);
}

#[test]
fn an_index_from_another_database_is_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    drop(m);
    std::fs::remove_file(dir.path().join("memory.db")).unwrap();
    let _ = std::fs::remove_file(dir.path().join("memory.db-wal"));
    let _ = std::fs::remove_file(dir.path().join("memory.db-shm"));
    let m = open(dir.path());
    let s = m.stats().unwrap();
    assert_eq!((s["fts"]["docs"].as_i64(), s["vectors"]["count"].as_i64()), (Some(0), Some(0)), "{s}");
    assert_eq!(m.search(json!({"query": "bread"})).unwrap()["hits"], json!([]));
}

#[test]
fn a_new_embedder_reembeds_in_the_background_and_failures_degrade_to_keywords() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    drop(m);
    let e2 = TestEmbedder::new("test-hash-v2/64");
    e2.fail.store(true, Ordering::Relaxed);
    let m = open_with(dir.path(), e2.clone() as Arc<_>);
    m.wait_background();
    // No vectors yet: recall still answers by keywords.
    assert_eq!(m.stats().unwrap()["vectors"]["count"], 0);
    let r = m.recall(json!({"query": "sourdough"})).unwrap();
    assert_eq!(r["chunks"][0]["title"], "Sourdough bread");
    assert_eq!(r["chunks"][0]["vector_score"], Value::Null);
    // Writes succeed while the embedder is down, and are searchable by keywords.
    put(&m, "late", "Late", "written while embedder failed", &[]);
    m.wait_background();
    assert_eq!(m.search(json!({"query": "embedder"})).unwrap()["hits"].as_array().unwrap().len(), 1);
    drop(m);
    e2.fail.store(false, Ordering::Relaxed);
    let m = open_with(dir.path(), e2 as Arc<_>);
    m.wait_background();
    let s = m.stats().unwrap();
    assert_eq!(
        (s["vectors"]["count"].as_i64(), s["vectors"]["signature"].as_str()),
        (Some(6), Some("test-hash-v2/64"))
    );
    let r = m.recall(json!({"query": "sourdough"})).unwrap();
    assert!(r["chunks"][0]["vector_score"].as_f64().unwrap() > 0.0);
}

#[test]
fn vectors_of_deleted_chunks_are_dropped_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    drop(m);
    // Simulate a vector file that missed deletions whose tombstones are already pruned.
    let conn = rusqlite::Connection::open(dir.path().join("memory.db")).unwrap();
    conn.execute("DELETE FROM chunks WHERE source_id = 'doc:default/bread'", []).unwrap();
    drop(conn);
    let m = open(dir.path());
    assert_eq!(m.stats().unwrap()["vectors"]["count"], 4);
    let r = m.fetch(json!({"query": "sourdough bread", "mode": "vector", "limit": 10})).unwrap();
    assert!(r["items"].as_array().unwrap().iter().all(|i| i["title"] != "Sourdough bread"));
}
