//! Watched folders: per-batch sync of changed paths, renames followed without re-embedding,
//! deletions, recorded file states, and Obsidian-style tags and wiki links.

use super::Json;
use super::Wire;
use crate::ops;
use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::super::MemoryEngine;
use super::super::embed::{EmbedError, Embedder};
use super::{TestEmbedder, open, open_with};

/// Counts the texts it embeds, so a test can tell a move from a re-read.
struct Counting {
    inner: Arc<TestEmbedder>,
    texts: AtomicUsize,
}

impl Embedder for Counting {
    fn signature(&self) -> &str {
        self.inner.signature()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts.fetch_add(texts.len(), Ordering::Relaxed);
        self.inner.embed(texts)
    }
}

fn hit(m: &MemoryEngine, query: &str) -> Option<Value> {
    let r = m.wire::<ops::Search>(json!({"query": query})).unwrap();
    r["hits"].as_array().and_then(|h| h.first().cloned())
}

#[test]
fn a_renamed_note_moves_with_its_tags_and_is_not_embedded_again() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let counter = Arc::new(Counting { inner: TestEmbedder::new("test-hash/64"), texts: AtomicUsize::new(0) });
    let m = open_with(data.path(), counter.clone());
    let old = src.path().join("orchard.md");
    fs::write(&old, "Apple trees need pruning in late winter before the buds open.\n").unwrap();
    let s = m.sync_files(std::slice::from_ref(&old), None).unwrap();
    assert_eq!(s.ingest.files_ingested, 1, "{s:?}");
    m.wait_background();
    let chunk = hit(&m, "pruning apple").unwrap()["chunk_id"].as_str().unwrap().to_string();
    m.tag_chunk(&chunk, &["trees".into()], "k1", "mcp:test", super::audit("memory.tag")).unwrap().json();
    let embedded = counter.texts.load(Ordering::Relaxed);

    let new = src.path().join("trees").join("orchard notes.md");
    fs::create_dir_all(new.parent().unwrap()).unwrap();
    fs::rename(&old, &new).unwrap();
    let s = m.sync_files(&[old.clone(), new.clone()], None).unwrap();
    assert_eq!(s.moved, vec![(old.clone(), new.clone())], "{s:?}");
    assert_eq!((s.ingest.chunks_added, s.ingest.files_removed), (0, 0), "{s:?}");
    m.wait_background();
    assert_eq!(counter.texts.load(Ordering::Relaxed), embedded, "a move must not embed again");

    let h = hit(&m, "pruning apple").unwrap();
    let moved = m.wire::<ops::ReadChunk>(json!({"chunk_id": h["chunk_id"]})).unwrap();
    assert_eq!(moved["metadata"]["file_path"], new.to_string_lossy().as_ref(), "{moved}");
    assert_eq!(moved["source_id"], format!("file:{}", new.display()));
    assert!(moved["tags"].as_array().unwrap().contains(&json!("trees")), "{moved}");
    assert_eq!(moved["title"], "orchard notes.md");
    let states = m.file_states(src.path()).unwrap();
    assert_eq!(states.len(), 1);
    assert_eq!(states[0].path, new);
    assert!(states[0].mtime_ms > 0 && states[0].size > 0, "{states:?}");

    // A folder removed: its files leave memory.
    fs::remove_dir_all(new.parent().unwrap()).unwrap();
    let s = m.sync_files(&[new.parent().unwrap().to_path_buf()], None).unwrap();
    assert_eq!(s.ingest.files_removed, 1, "{s:?}");
    assert!(hit(&m, "pruning apple").is_none());
    assert!(m.file_states(src.path()).unwrap().is_empty());
}

#[test]
fn obsidian_front_matter_tags_inline_tags_and_wiki_links() {
    let data = tempfile::tempdir().unwrap();
    let vault = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let plan = vault.path().join("Plan.md");
    let daily = vault.path().join("journal").join("Daily.md");
    fs::create_dir_all(daily.parent().unwrap()).unwrap();
    fs::write(&plan, "---\ntags: [project, \"#q3\"]\n---\n# Plan\n\nShip the greenhouse sensors by autumn.\n").unwrap();
    fs::write(
        &daily,
        "# Monday\n\nTalked about [[Plan#Goals|the plan]] and [[Missing Note]]. #meeting\n\n```\n[[in code]] #nottag\n```\n",
    )
    .unwrap();
    let s = m.sync_files(&[plan.clone(), daily.clone()], None).unwrap();
    assert_eq!(s.ingest.files_ingested, 2, "{s:?}");

    let p = m.wire::<ops::ReadChunk>(json!({"chunk_id": hit(&m, "greenhouse sensors").unwrap()["chunk_id"]})).unwrap();
    let tags: Vec<&str> = p["tags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tags.contains(&"project") && tags.contains(&"q3"), "{p}");
    assert!(!p["content"].as_str().unwrap().contains("tags:"), "front matter is not text: {p}");
    assert_eq!(p["backlinks"][0]["source_id"], format!("file:{}", daily.display()), "{p}");

    let d = m.wire::<ops::ReadChunk>(json!({"chunk_id": hit(&m, "talked").unwrap()["chunk_id"]})).unwrap();
    let tags: Vec<&str> = d["tags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(tags, ["meeting"], "{d}");
    let links = d["links"].as_array().unwrap();
    assert_eq!(links.len(), 2, "{d}");
    let to_missing = links.iter().find(|l| l["target"] == "Missing Note").unwrap();
    assert!(to_missing["source_id"].is_null(), "{d}");
    let to_plan = links.iter().find(|l| l["target"] == "Plan").unwrap();
    assert_eq!(to_plan["heading"], "Goals");
    assert_eq!(to_plan["alias"], "the plan");
    assert_eq!(to_plan["source_id"], format!("file:{}", plan.display()));

    // The link target created later resolves; links removed from the note are gone.
    let missing = vault.path().join("Missing Note.md");
    fs::write(&missing, "Now it exists.\n").unwrap();
    fs::write(&daily, "# Monday\n\nNo links any more, just talk.\n").unwrap();
    m.sync_files(&[missing, daily.clone()], None).unwrap();
    let d = m.wire::<ops::ReadChunk>(json!({"chunk_id": hit(&m, "talk").unwrap()["chunk_id"]})).unwrap();
    assert!(d["links"].as_array().unwrap().is_empty(), "{d}");
    let p = m.wire::<ops::ReadChunk>(json!({"chunk_id": hit(&m, "greenhouse sensors").unwrap()["chunk_id"]})).unwrap();
    assert!(p["backlinks"].as_array().unwrap().is_empty(), "{p}");
}

#[test]
fn a_version_2_store_upgrades_and_its_files_are_not_read_again() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let note = src.path().join("old.md");
    fs::write(&note, "Lanterns were lit along the old canal.\n").unwrap();
    {
        // A store as the version before watched folders wrote it: no mtimes, no links table.
        let mut conn = super::super::schema::open_connection(&data.path().join("memory.db")).unwrap();
        super::super::schema::migrate_to(&mut conn, 2).unwrap();
        conn.execute(
            "INSERT INTO files (path, content_hash, size, kind, chunk_count, ingested_at_ms) VALUES (?1, 'x', 1, 'document', 0, 0)",
            [note.to_string_lossy()],
        )
        .unwrap();
    }
    let m = open(data.path());
    assert_eq!(m.stats().unwrap().json()["schema_version"], super::super::schema::SCHEMA_VERSION);
    let states = m.file_states(src.path()).unwrap();
    assert_eq!(states.len(), 1);
    assert_eq!(states[0].mtime_ms, 0, "unknown until the next sync");
    // The made-up hash differs from the file's: the sync reads it and records its time.
    let s = m.sync_files(std::slice::from_ref(&note), None).unwrap();
    assert_eq!(s.ingest.files_ingested, 1, "{s:?}");
    assert!(hit(&m, "lanterns").is_some());
    assert!(m.file_states(src.path()).unwrap()[0].mtime_ms > 0);
    let again = m.sync_files(std::slice::from_ref(&note), None).unwrap();
    assert_eq!((again.ingest.files_ingested, again.ingest.files_unchanged), (0, 1), "{again:?}");
}
