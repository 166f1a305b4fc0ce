//! Tests of the memory engine through its public methods, on temporary directories,
//! with a small deterministic embedder (hashed bag of words) so that vector results are
//! predictable and no model is needed.

mod facts;
mod import;
mod import_mail;
mod index;
mod ingest;
mod keyword;
mod mail_reading;
mod people;
mod personal;
mod read;
mod sessions;
mod tiers;
mod transfer;
mod watched;
mod write;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::embed::{EmbedError, Embedder};
use super::ops::{self, Operation};
use super::{AuditRow, MemoryEngine, MemoryError, MemoryOptions, PutDocument};

/// Any result as the JSON a client would read.
pub(crate) trait Json {
    fn json(&self) -> Value;
}

impl<T: serde::Serialize> Json for T {
    fn json(&self) -> Value {
        serde_json::to_value(self).expect("results serialise")
    }
}

/// Runs an operation from JSON arguments, the way a wire call does (schema check, typed call,
/// the result as JSON), so tests assert what a client sees.
pub(crate) trait Wire {
    fn wire<O: Operation>(&self, args: Value) -> Result<Value, MemoryError>;
}

impl Wire for MemoryEngine {
    fn wire<O: Operation>(&self, args: Value) -> Result<Value, MemoryError> {
        let args = match args {
            Value::Object(m) => m,
            Value::Null => serde_json::Map::new(),
            other => return Err(MemoryError::InvalidParams(format!("arguments must be an object, not {other}"))),
        };
        ops::run_json::<O>(self, &args)
    }
}

/// Hashes each lowercase word to one of `dims` buckets with a sign: texts sharing words
/// point the same way. `fail` makes it return errors, to test degraded paths.
pub(crate) struct TestEmbedder {
    signature: String,
    dims: usize,
    pub fail: AtomicBool,
}

impl TestEmbedder {
    pub fn new(signature: &str) -> Arc<Self> {
        Arc::new(TestEmbedder { signature: signature.to_string(), dims: 64, fail: AtomicBool::new(false) })
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

impl Embedder for TestEmbedder {
    fn signature(&self) -> &str {
        &self.signature
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(EmbedError("test embedder switched off".into()));
        }
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; self.dims];
                for w in t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                    let h = fnv(&w.to_lowercase());
                    let sign = if h & 1 == 0 { 1.0 } else { -1.0 };
                    v[(h >> 1) as usize % self.dims] += sign;
                }
                v
            })
            .collect())
    }
}

/// The built-in static model, as the daemon holds it (the tests whose thresholds were
/// calibrated on its vectors).
pub(crate) fn builtin() -> Arc<dyn Embedder> {
    super::embed::builtin().expect("the built-in model loads")
}

pub(crate) fn open_with(dir: &Path, embedder: Arc<dyn Embedder>) -> MemoryEngine {
    MemoryEngine::open(MemoryOptions { data_dir: dir.to_path_buf(), embedder, deep: None, shared: None })
        .expect("open memory engine")
}

pub(crate) fn open(dir: &Path) -> MemoryEngine {
    open_with(dir, TestEmbedder::new("test-hash/64"))
}

pub(crate) fn audit(tool: &str) -> AuditRow {
    AuditRow {
        ts_ms: 1_700_000_000_000,
        tool: tool.into(),
        source: "mcp:test".into(),
        client_info: json!({"name": "Test", "version": "1"}),
        args_summary: json!({"n": 1}),
        machine: None,
        ..AuditRow::default()
    }
}

pub(crate) fn put(m: &MemoryEngine, key: &str, title: &str, content: &str, tags: &[&str]) -> Value {
    m.put_document(
        PutDocument {
            key: key.into(),
            title: Some(title.into()),
            content: content.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            source: "mcp:test".into(),
            ..PutDocument::default()
        },
        audit("memory.store"),
    )
    .expect("put_document")
    .json()
}

pub(crate) fn put_doc(m: &MemoryEngine, doc: PutDocument) -> Value {
    m.put_document(doc, audit("memory.store")).expect("put_document").json()
}

/// A chat channel `id` between Ana and Ben of `msgs`: (speaker, text, time in ms).
pub(crate) fn channel<'a>(id: &str, msgs: impl IntoIterator<Item = (&'a str, &'a str, i64)>) -> crate::Channel {
    let mut ch = crate::Channel::new(format!("test:{id}"), "Ana and Ben".into(), id.into(), None);
    ch.msgs = msgs
        .into_iter()
        .enumerate()
        .map(|(i, (from, text, ts))| crate::ChatMsg {
            at: format!("T{i}"),
            ts,
            from: from.into(),
            text: text.into(),
            thread: None,
            handle: None,
        })
        .collect();
    ch
}

/// Chunk ids of a search/recall/fetch result, in order.
pub(crate) fn ids(v: &Value, list: &str, field: &str) -> Vec<String> {
    v[list].as_array().unwrap_or(&Vec::new()).iter().map(|h| h[field].as_str().unwrap_or("").to_string()).collect()
}

pub(crate) fn chunk_of(m: &MemoryEngine, key: &str) -> String {
    let r = m.wire::<ops::List>(json!({"limit": 100})).unwrap();
    r["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["key"] == key)
        .map(|i| i["id"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no chunk for key {key}"))
}

/// A small corpus about distinct topics, stored as documents.
pub(crate) fn corpus(m: &MemoryEngine) {
    let docs = [
        (
            "rust",
            "Rust ownership",
            "Rust uses ownership and borrowing to manage memory without a garbage collector.",
            &["lang"][..],
        ),
        (
            "tantivy",
            "Tantivy search",
            "Tantivy is a full-text search engine library with BM25 ranking, written in Rust.",
            &["search"][..],
        ),
        (
            "garden",
            "Tomato garden",
            "Tomatoes need full sun, regular watering and support stakes in the garden.",
            &["home"][..],
        ),
        (
            "bread",
            "Sourdough bread",
            "Sourdough bread rises with a wild yeast starter; bake at high heat.",
            &["home", "food"][..],
        ),
        ("sqlite", "SQLite WAL", "SQLite in WAL mode lets readers proceed while one writer commits.", &["db"][..]),
    ];
    for (key, title, content, tags) in docs {
        put(m, key, title, content, tags);
    }
}

#[test]
fn reopening_keeps_schema_and_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let m = open(dir.path());
        put(&m, "k", "Title", "hello world", &[]);
    }
    for _ in 0..2 {
        let m = open(dir.path());
        let s = m.stats().unwrap().json();
        assert_eq!(s["chunks"], 1);
        assert_eq!(s["schema_version"], super::schema::SCHEMA_VERSION);
    }
}

#[test]
fn migrations_are_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let mut conn = super::schema::open_connection(&path).unwrap();
    super::schema::migrate(&mut conn).unwrap();
    super::schema::migrate(&mut conn).unwrap();
    let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(v, super::schema::SCHEMA_VERSION);
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn chunk_ids_are_stable_and_field_sensitive() {
    use super::types::SourceKind;
    use super::util::chunk_id;
    let a = chunk_id(SourceKind::Document, "doc:default/k", "k", 0, "hello");
    assert_eq!(a.len(), 32);
    assert_eq!(a, chunk_id(SourceKind::Document, "doc:default/k", "k", 0, "hello"));
    let variants = [
        chunk_id(SourceKind::Note, "doc:default/k", "k", 0, "hello"),
        chunk_id(SourceKind::Document, "doc:default/k2", "k", 0, "hello"),
        chunk_id(SourceKind::Document, "doc:default/k", "k", 1, "hello"),
        chunk_id(SourceKind::Document, "doc:default/k", "k", 0, "hello!"),
        // The separator keeps field boundaries: moving bytes between fields changes the id.
        chunk_id(SourceKind::Document, "doc:default/k", "k0", 0, "hello"),
    ];
    for v in variants {
        assert_ne!(a, v);
    }
    // Same document in two stores gets the same chunk ids.
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let r1 = put(&open(d1.path()), "same", "T", "same content here", &[]);
    let r2 = put(&open(d2.path()), "same", "T", "same content here", &[]);
    assert_eq!(r1["chunk_ids"], r2["chunk_ids"]);
}

#[test]
fn a_second_open_of_the_same_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let second = MemoryEngine::open(MemoryOptions {
        data_dir: dir.path().to_path_buf(),
        embedder: TestEmbedder::new("x"),
        deep: None,
        shared: None,
    });
    let err = second.err().expect("second open must fail");
    assert!(matches!(err, MemoryError::InUse(_)), "{err:?}");
    assert!(err.to_string().contains("in use by another process"), "{err}");
    drop(m);
    open(dir.path());
}
