//! Derived indexes: rebuild equals original, repair of an index that is behind or gone,
//! the rebuild of a full-text index built by an older version, a torn vector log, and
//! re-embedding after a change of embedder.

use super::Json;
use super::Wire;
use crate::ops;
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
                m.wire::<ops::Search>(json!({"query": q})).unwrap()["hits"].clone(),
                m.wire::<ops::Recall>(json!({"query": q})).unwrap()["chunks"].clone(),
                m.wire::<ops::Fetch>(json!({"query": q, "mode": "vector"})).unwrap()["items"].clone(),
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
    m.forget(&["doc:default/garden".into()], "mcp:test", super::audit("memory.forget")).unwrap().json();
    let before = snapshot(&m);
    let s = m.reindex().unwrap();
    assert_eq!((s.chunks, s.fts_docs, s.vectors), (4, 4, 4));
    assert_eq!(snapshot(&m), before);
    drop(m);
    assert_eq!(snapshot(&open(dir.path())), before);
}

#[test]
fn a_keyword_index_not_flushed_before_a_reboot_is_rebuilt_from_the_database() {
    if !std::path::Path::new("/proc/sys/kernel/random/boot_id").exists() {
        return; // Without a boot id every commit is synced at once: nothing to lose.
    }
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    let before = snapshot(&m);
    drop(m);
    // What the disk can hold after the machine stopped between a commit and its flush: the
    // new meta.json, segment files whose pages never reached the disk (zeros), and a marker
    // from the earlier boot naming the meta.json it flushed last.
    let fts = dir.path().join("fts");
    for entry in std::fs::read_dir(&fts).unwrap() {
        let path = entry.unwrap().path();
        if path
            .extension()
            .is_some_and(|e| ["idx", "term", "store", "fast", "fieldnorm"].contains(&e.to_str().unwrap()))
        {
            let len = std::fs::metadata(&path).unwrap().len() as usize;
            std::fs::write(&path, vec![0u8; len]).unwrap();
        }
    }
    let marker = json!({"boot": "a boot before this one", "meta_sha256": "0".repeat(64)});
    std::fs::write(fts.join("SYNCED"), marker.to_string()).unwrap();
    let m = open(dir.path());
    assert_eq!(snapshot(&m), before);
    let s = m.stats().unwrap().json();
    assert_eq!(s["fts"]["seq"], s["db_seq"]);
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
    let s = m.stats().unwrap().json();
    assert_eq!(s["fts"]["seq"], s["db_seq"]);
    assert_eq!(s["vectors"]["seq"], s["db_seq"]);
    drop(m);
    // Index state rolled back: replay must not duplicate documents.
    rowback_index_state(dir.path(), "fts", 0);
    rowback_index_state(dir.path(), "vectors", 2);
    let m = open(dir.path());
    assert_eq!(m.stats().unwrap().json()["fts"]["docs"], 5);
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
    assert_eq!(m.stats().unwrap().json()["vectors"]["count"], 6);
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
    let s = m.stats().unwrap().json();
    assert_eq!((s["fts"]["docs"].as_i64(), s["vectors"]["count"].as_i64()), (Some(0), Some(0)), "{s}");
    assert_eq!(m.wire::<ops::Search>(json!({"query": "bread"})).unwrap()["hits"], json!([]));
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
    assert_eq!(m.stats().unwrap().json()["vectors"]["count"], 0);
    let r = m.wire::<ops::Recall>(json!({"query": "sourdough"})).unwrap();
    assert_eq!(r["chunks"][0]["title"], "Sourdough bread");
    assert_eq!(r["chunks"][0]["vector_score"], Value::Null);
    // Writes succeed while the embedder is down, and are searchable by keywords.
    put(&m, "late", "Late", "written while embedder failed", &[]);
    m.wait_background();
    assert_eq!(m.wire::<ops::Search>(json!({"query": "embedder"})).unwrap()["hits"].as_array().unwrap().len(), 1);
    drop(m);
    e2.fail.store(false, Ordering::Relaxed);
    let m = open_with(dir.path(), e2 as Arc<_>);
    m.wait_background();
    let s = m.stats().unwrap().json();
    assert_eq!(
        (s["vectors"]["count"].as_i64(), s["vectors"]["signature"].as_str()),
        (Some(6), Some("test-hash-v2/64"))
    );
    let r = m.wire::<ops::Recall>(json!({"query": "sourdough"})).unwrap();
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
    assert_eq!(m.stats().unwrap().json()["vectors"]["count"], 4);
    let r = m.wire::<ops::Fetch>(json!({"query": "sourdough bread", "mode": "vector", "limit": 10})).unwrap();
    assert!(r["items"].as_array().unwrap().iter().all(|i| i["title"] != "Sourdough bread"));
}

/// Replaces the full-text index with one as an older version built it, holding every chunk
/// and claiming in its commit payload (`layout`) to be up to date with the database. With
/// `same_schema`, the fields are today's but the analyzer is an old one (tantivy's default
/// tokenizer: no stemming, no folding), so only the layout number tells them apart; otherwise
/// the fields are layout 1's own: `title` and `body`.
fn write_old_index(dir: &std::path::Path, same_schema: bool, layout: u32) {
    use tantivy::schema::{IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};
    use tantivy::tokenizer::{LowerCaser, SimpleTokenizer, TextAnalyzer};
    let conn = rusqlite::Connection::open(dir.join("memory.db")).unwrap();
    let seq: i64 = conn.query_row("SELECT value FROM meta WHERE name = 'db_seq'", [], |r| r.get(0)).unwrap();
    let mut stmt = conn.prepare("SELECT rowid, title, content FROM chunks").unwrap();
    let rows: Vec<(i64, Option<String>, String)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    let fts = dir.join("fts");
    std::fs::remove_dir_all(&fts).unwrap();
    std::fs::create_dir_all(&fts).unwrap();
    let (schema, rowid, title, body) = if same_schema {
        let (schema, [rowid, text]) = crate::fts::schema();
        (schema, rowid, text, text)
    } else {
        let mut b = Schema::builder();
        let rowid = b.add_u64_field("rowid", NumericOptions::default().set_indexed().set_fast());
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer("default").set_index_option(IndexRecordOption::WithFreqs),
        );
        let title = b.add_text_field("title", text.clone());
        let body = b.add_text_field("body", text);
        (b.build(), rowid, title, body)
    };
    let index = tantivy::Index::create_in_dir(&fts, schema).unwrap();
    let old_analyzer = TextAnalyzer::builder(SimpleTokenizer::default()).filter(LowerCaser).build();
    index.tokenizers().register("oh_english", old_analyzer);
    let mut w: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
    for (r, t, c) in &rows {
        let mut doc = tantivy::TantivyDocument::default();
        doc.add_u64(rowid, *r as u64);
        if let Some(t) = t {
            doc.add_text(title, t);
        }
        doc.add_text(body, c);
        w.add_document(doc).unwrap();
    }
    let mut commit = w.prepare_commit().unwrap();
    commit.set_payload(&json!({"layout": layout, "seq": seq}).to_string());
    commit.commit().unwrap();
}

fn fts_payload(dir: &std::path::Path) -> Value {
    let index = tantivy::Index::open_in_dir(dir.join("fts")).unwrap();
    serde_json::from_str(&index.load_metas().unwrap().payload.unwrap()).unwrap()
}

#[test]
fn a_full_text_index_of_an_older_layout_is_rebuilt_on_open() {
    for same_schema in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let m = open(dir.path());
        corpus(&m);
        put(&m, "dev", "Roadmap", "The team is developing a parser.", &[]);
        let chunks = m.stats().unwrap().json()["chunks"].clone();
        drop(m);
        write_old_index(dir.path(), same_schema, 1);
        let old = fts_payload(dir.path());
        assert_eq!(old["layout"], 1);

        let m = open(dir.path());
        let s = m.stats().unwrap().json();
        assert_eq!((&s["chunks"], &s["fts"]["docs"], &s["fts"]["seq"]), (&chunks, &chunks, &s["db_seq"]), "{s}");
        assert!(m.check().unwrap().ok);
        // Only the new analyzer stems: `develop` finds `developing`.
        let r = m.wire::<ops::Search>(json!({"query": "develop"})).unwrap();
        assert_eq!(r["hits"][0]["title"], "Roadmap", "same schema: {same_schema}: {r}");
        assert_eq!(
            m.wire::<ops::Search>(json!({"query": "sourdough"})).unwrap()["hits"][0]["title"],
            "Sourdough bread"
        );
        drop(m);
        let new = fts_payload(dir.path());
        assert_eq!((new["layout"].as_u64(), &new["seq"]), (Some(u64::from(crate::fts::LAYOUT)), &old["seq"]));
        // Once rebuilt, it is kept.
        let m = open(dir.path());
        assert_eq!(m.stats().unwrap().json()["fts"]["docs"], chunks);
        assert_eq!(m.wire::<ops::Search>(json!({"query": "developers"})).unwrap()["hits"][0]["title"], "Roadmap");
    }
}

#[test]
fn an_index_built_before_folding_is_rebuilt_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put(&m, "fr", "Réunion de classe", "On prépare la réunion.", &[]);
    drop(m);
    write_old_index(dir.path(), true, 2);
    assert_eq!(fts_payload(dir.path())["layout"], 2);
    let m = open(dir.path());
    let r = m.wire::<ops::Search>(json!({"query": "reunion"})).unwrap();
    assert_eq!(r["hits"][0]["title"], "Réunion de classe", "{r}");
    drop(m);
    assert_eq!(fts_payload(dir.path())["layout"].as_u64(), Some(u64::from(crate::fts::LAYOUT)));
}
