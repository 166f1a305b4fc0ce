//! The deep vector tier: filled in the background, answering only once it covers every chunk,
//! handing queries back to the fast tier after writes, a failing query embedding or a change of
//! deep model, and keeping its progress across restarts.

use super::Json;
use super::Wire;
use crate::ops;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::super::embed::{EmbedError, Embedder};
use super::super::{MemoryEngine, MemoryOptions};
use super::{TestEmbedder, corpus, put};

/// A deep embedder for tests: the hashed bag of words of `TestEmbedder` under its own
/// signature, counting the texts it embeds, with switches to fail document batches, to fail
/// queries, or to fail after `budget` more calls.
struct Deep {
    inner: Arc<TestEmbedder>,
    embedded: AtomicUsize,
    fail: AtomicBool,
    fail_queries: AtomicBool,
    budget: AtomicUsize,
}

impl Deep {
    fn new(signature: &str) -> Arc<Deep> {
        Arc::new(Deep {
            inner: TestEmbedder::new(signature),
            embedded: AtomicUsize::new(0),
            fail: AtomicBool::new(false),
            fail_queries: AtomicBool::new(false),
            budget: AtomicUsize::new(usize::MAX),
        })
    }
}

impl Embedder for Deep {
    fn signature(&self) -> &str {
        self.inner.signature()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let spent = self.budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1));
        if self.fail.load(Ordering::Relaxed) || spent.is_err() {
            return Err(EmbedError("deep test embedder switched off".into()));
        }
        self.embedded.fetch_add(texts.len(), Ordering::Relaxed);
        self.inner.embed(texts)
    }
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        if self.fail_queries.load(Ordering::Relaxed) {
            return Err(EmbedError("deep test embedder refuses queries".into()));
        }
        Ok(self.inner.embed(&[query])?.remove(0))
    }
}

fn open_deep(dir: &Path, deep: &Arc<Deep>) -> MemoryEngine {
    MemoryEngine::open(MemoryOptions {
        data_dir: dir.to_path_buf(),
        embedder: TestEmbedder::new("test-hash/64"),
        deep: Some(deep.clone() as Arc<dyn Embedder>),
        shared: None,
    })
    .expect("open memory engine")
}

/// The tier `memory.recall` and `memory.fetch` (vector mode) report for a query.
fn answering(m: &MemoryEngine) -> (Value, Value) {
    let recall = m.wire::<ops::Recall>(json!({"query": "sourdough bread"})).unwrap();
    let fetch = m.wire::<ops::Fetch>(json!({"query": "sourdough bread", "mode": "vector"})).unwrap();
    assert_eq!(recall["chunks"][0]["title"], "Sourdough bread", "{recall}");
    (recall["vector_tier"].clone(), fetch["vector_tier"].clone())
}

fn deep_stats(m: &MemoryEngine) -> (u64, u64, bool) {
    let s = m.stats().unwrap().json();
    let d = &s["vectors"]["deep"];
    (d["covered"].as_u64().unwrap(), d["total"].as_u64().unwrap(), d["answering"].as_bool().unwrap())
}

#[test]
fn the_deep_tier_answers_only_once_it_covers_every_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let deep = Deep::new("deep-a/64");
    deep.fail.store(true, Ordering::Relaxed);
    let m = open_deep(dir.path(), &deep);
    corpus(&m);
    m.wait_background();
    // Nothing embedded by the deep tier: the fast tier answers, and says so.
    assert_eq!(deep_stats(&m), (0, 5, false));
    assert_eq!(answering(&m), (json!("fast"), json!("fast")));
    let tiers = m.tiers().unwrap();
    assert_eq!((tiers[0].covered, tiers[0].answering, tiers[1].covered), (5, true, 0));
    // A later write retries; once every chunk is covered the deep tier answers.
    deep.fail.store(false, Ordering::Relaxed);
    put(&m, "late", "Late", "written after the deep embedder came back", &[]);
    m.wait_background();
    assert_eq!(deep_stats(&m), (6, 6, true));
    assert_eq!(answering(&m), (json!("deep"), json!("deep")));
    // Keyword search reports no tier.
    assert_eq!(m.wire::<ops::Search>(json!({"query": "bread"})).unwrap().get("vector_tier"), None);
    assert_eq!(m.wire::<ops::Fetch>(json!({"query": "bread", "mode": "keyword"})).unwrap().get("vector_tier"), None);
    assert_eq!(m.check().unwrap().vectors.deep.map(|d| d.missing), Some(0));
}

#[test]
fn writes_hand_queries_back_to_the_fast_tier_until_the_deep_one_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let deep = Deep::new("deep-a/64");
    let m = open_deep(dir.path(), &deep);
    corpus(&m);
    m.wait_background();
    assert_eq!(answering(&m).0, "deep");
    // A new chunk without a deep vector: the fast tier answers until the fill covers it.
    deep.fail.store(true, Ordering::Relaxed);
    put(&m, "new", "New", "a chunk the deep tier has not seen", &[]);
    m.wait_background();
    assert_eq!(deep_stats(&m), (5, 6, false));
    assert_eq!(answering(&m).0, "fast");
    // Deleting the uncovered chunk makes the deep tier whole again without embedding anything.
    m.forget(&["doc:default/new".into()], "mcp:test", super::audit("memory.forget")).unwrap().json();
    m.wait_background();
    assert_eq!(deep_stats(&m), (5, 5, true));
    assert_eq!(answering(&m).0, "deep");
    // A deep embedder that fails on the query hands it to the fast tier.
    deep.fail_queries.store(true, Ordering::Relaxed);
    assert_eq!(answering(&m).0, "fast");
}

#[test]
fn deep_vectors_survive_a_restart_and_a_model_change_reembeds_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let a = Deep::new("deep-a/64");
    let m = open_deep(dir.path(), &a);
    corpus(&m);
    m.wait_background();
    assert_eq!(a.embedded.load(Ordering::Relaxed), 5);
    drop(m);
    // Same model: covered at once, nothing embedded again.
    let m = open_deep(dir.path(), &a);
    m.wait_background();
    assert_eq!((deep_stats(&m), a.embedded.load(Ordering::Relaxed)), ((5, 5, true), 5));
    drop(m);
    // Another model: its vectors start from nothing, and the fast tier answers meanwhile with
    // every chunk still found.
    let b = Deep::new("deep-b/64");
    b.fail.store(true, Ordering::Relaxed);
    let m = open_deep(dir.path(), &b);
    m.wait_background();
    assert_eq!(deep_stats(&m), (0, 5, false));
    assert_eq!(answering(&m), (json!("fast"), json!("fast")));
    assert_eq!(m.stats().unwrap().json()["vectors"]["count"], 5);
    drop(m);
    b.fail.store(false, Ordering::Relaxed);
    let m = open_deep(dir.path(), &b);
    m.wait_background();
    assert_eq!(deep_stats(&m), (5, 5, true));
    assert_eq!(m.stats().unwrap().json()["vectors"]["deep"]["model"], "deep-b/64");
    assert_eq!(answering(&m).0, "deep");
    // Switching the deep tier off leaves the fast tier answering alone.
    drop(m);
    let m = super::open(dir.path());
    assert_eq!(m.stats().unwrap().json()["vectors"].get("deep"), None);
    assert_eq!(answering(&m), (json!("fast"), json!("fast")));
}

#[test]
fn a_restart_during_a_model_change_keeps_the_vectors_already_made() {
    let dir = tempfile::tempdir().unwrap();
    let a = Deep::new("deep-a/64");
    let m = open_deep(dir.path(), &a);
    // Enough chunks for three deep batches (32 per embedder call).
    for i in 0..70 {
        put(&m, &format!("k{i}"), &format!("Note {i}"), &format!("note number {i} about topic {}", i % 7), &[]);
    }
    // reindex writes a snapshot of model A, which model B must not let shadow its own log.
    m.reindex().unwrap();
    m.wait_background();
    assert_eq!(deep_stats(&m), (70, 70, true));
    drop(m);
    let b = Deep::new("deep-b/64");
    b.budget.store(1, Ordering::Relaxed);
    let m = open_deep(dir.path(), &b);
    m.wait_background();
    assert_eq!(deep_stats(&m), (32, 70, false));
    drop(m);
    b.budget.store(usize::MAX, Ordering::Relaxed);
    let m = open_deep(dir.path(), &b);
    m.wait_background();
    assert_eq!(deep_stats(&m), (70, 70, true));
    assert_eq!(b.embedded.load(Ordering::Relaxed), 70, "the 32 vectors made before the restart were kept");
}

/// A chunk that arrives with a rowid below rows the deep tier already covers — what a mirror of
/// a shared store does when it applies another device's earlier write — still gets its deep
/// vector: the background thread goes by the change sequence, not by the rowid.
#[test]
fn a_chunk_arriving_below_covered_rowids_still_gets_a_deep_vector() {
    let dir = tempfile::tempdir().unwrap();
    let deep = Deep::new("deep-a/64");
    let m = open_deep(dir.path(), &deep);
    corpus(&m);
    // A copy of the first chunk under `rowid` with a fresh change sequence, as a mirror applies one.
    let arrive = |rowid: i64, id: &str| {
        let ws = crate::writer::exclusive(&m.inner);
        let seq = crate::seq::bump_seq(&ws.conn).unwrap();
        ws.conn
            .execute(
                "INSERT INTO chunks (rowid, id, source_kind, source_id, source_ref, origin, owner, provenance, \
                 timestamp_ms, seq_in_source, title, content, token_count, metadata, created_at_ms, change_seq) \
                 SELECT ?1, ?2, source_kind, source_id, source_ref, origin, owner, provenance, timestamp_ms, \
                 seq_in_source, title, content, token_count, metadata, created_at_ms, ?3 FROM chunks WHERE rowid = 1",
                rusqlite::params![rowid, id, seq],
            )
            .unwrap();
    };
    arrive(1_000, "from-elsewhere-late");
    put(&m, "after", "After", "a local write after the high rowid", &[]);
    m.wait_background();
    assert_eq!(deep_stats(&m), (7, 7, true));
    // Rowid 500 sits below every rowid the deep tier covers now.
    arrive(500, "from-elsewhere-early");
    put(&m, "trigger", "Trigger", "a local write that wakes the background fill", &[]);
    m.wait_background();
    assert_eq!(deep_stats(&m), (9, 9, true));
}

/// A packed chat chunk is read by its best few turns when the deep tier answers too: its model
/// cannot embed each window at query time, so the fast tier's table reads them and the window's
/// standing is carried to the deep tier's scale. Here the deep model (a bag of hashed words)
/// sees nothing of a question that shares no word with the turns that answer it, and those
/// turns are three of eight in a chunk about other things.
#[test]
fn the_deep_tier_reads_packed_chat_by_its_best_turns_too() {
    use crate::ChatChunking;
    let dir = tempfile::tempdir().unwrap();
    let deep = Deep::new("deep-a/256");
    let m = MemoryEngine::open(MemoryOptions {
        data_dir: dir.path().to_path_buf(),
        embedder: super::builtin(),
        deep: Some(deep.clone() as Arc<dyn Embedder>),
        shared: None,
    })
    .unwrap();
    let filler = [
        "Did you see the match last night?",
        "Yes, what a finish in extra time.",
        "The new bakery on the corner sells great croissants.",
        "I still owe you for the concert tickets.",
        "Traffic on the ring road was terrible this morning.",
        "My sister is moving to Lisbon in June.",
        "The printer at work jammed again.",
        "We should repaint the kitchen before winter.",
        "Have you finished that crime novel yet?",
        "The garden needs weeding after all this rain.",
    ];
    let answer = [
        "The puppy was sick all night.",
        "Poor thing, is he seeing the vet?",
        "Yes, the veterinarian checks him on Thursday and gives his vaccinations.",
    ];
    // Twenty conversations a day apart, eight turns each; the seventh holds the answer in its middle.
    let mut turns: Vec<(&str, String, i64)> = Vec::new();
    for day in 0..20_i64 {
        for t in 0..8_usize {
            let text = match (day, t) {
                (6, 3..=5) => answer[t - 3].to_string(),
                _ => format!("{} ({day}.{t})", filler[(day as usize * 3 + t) % filler.len()]),
            };
            let from = if t % 2 == 0 { "Ana" } else { "Ben" };
            turns.push((from, text, 1_700_000_000_000 + day * 86_400_000 + t as i64 * 60_000));
        }
    }
    let ch = super::channel("pets", turns.iter().map(|(from, text, ts)| (*from, text.as_str(), *ts)));
    let stored = m.put_chat(vec![ch], "chats/pets", ChatChunking::Packed).unwrap();
    assert_eq!(stored.len(), 20);
    m.wait_background();
    assert!(deep_stats(&m).2, "the deep tier answers");
    let r = m.wire::<ops::Recall>(json!({"query": "which animal doctor treats our dog", "k": 3})).unwrap();
    assert_eq!(r["vector_tier"], "deep", "{r}");
    assert_eq!(r["chunks"][0]["chunk_id"], stored[6].chunk_id.as_str(), "{r}");
}
