//! The write methods: document upserts, notes, tags, learnings and forgetting. Each
//! runs in one SQLite transaction together with its audit row, then brings
//! the indexes up to date before returning, so the change is searchable at once.
//! Failed writes roll back and write no audit row: the caller records the rejection.

use std::sync::Arc;

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::chunker::{Format, chunk_text};
use super::error::no_chunk;
use super::params::{invalid, required};
use super::store::{self, FILTER_META_KEYS, NewChunk, NewSource};
use super::types::{AuditRow, PutDocument, SourceKind};
use super::util::{now_ms, sha256_hex};
use super::{Inner, MemoryEngine, MemoryError, anchor, audit, entities, facts, write};

/// What `put_document` did: the item, its chunks, and whether it was new, changed or the same.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stored {
    pub id: String,
    pub key: String,
    pub namespace: String,
    pub chunk_ids: Vec<String>,
    /// `created`, `updated`, `unchanged` or `merged` (a near-identical memory was refreshed
    /// instead of storing a second one; `merged_into` names it).
    pub status: &'static str,
    /// The item this write was merged into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
    /// Chunks this write superseded (they stay stored, marked; `memory.history` lists them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
}

/// What `add_note` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Noted {
    pub id: String,
    /// The note's own (searchable) chunk.
    pub note_chunk_id: String,
    pub chunk_id: String,
    pub key: String,
    /// `created`, `updated`, or `merged` (the same note again: refreshed, `merged_into` names it).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
    /// The chunks this note replaced (the same subject and attribute with another value).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
}

/// The chunk's tags after `tag_chunk`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tagged {
    pub chunk_id: String,
    pub key: String,
    pub tags: Vec<String>,
}

/// The learning `learn` stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Learned {
    pub id: String,
    pub chunk_id: String,
    pub kind: String,
    pub confidence: Option<f64>,
    /// `created`, or `merged` when the same learning was already stored (`id` is then that one).
    pub status: &'static str,
    /// Chunks this learning superseded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
}

/// Which ids `forget` deleted and which named nothing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forgotten {
    pub deleted: Vec<String>,
    pub not_found: Vec<String>,
    /// Older versions of what was forgotten that stay stored, still marked superseded (forget
    /// them too, or the whole item, to remove them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history_kept: Vec<String>,
}

/// What `forget_project` deleted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForgottenProject {
    pub project: String,
    /// Items (documents, files, notes, learnings, conversations) deleted whole.
    pub items: usize,
    pub chunks: usize,
}

/// The entity `split_entity` made stand alone, and the one it was merged into.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Split {
    pub entity_id: String,
    pub split_from: String,
}

/// What each id of `resolve_ids` names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    pub ids: Vec<ResolvedId>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedId {
    pub id: String,
    pub chunk_count: usize,
    /// At most 100, in source order.
    pub chunks: Vec<ResolvedChunk>,
    /// Notes on those chunks (a forget takes them too).
    pub notes: i64,
    /// Bare records (a learning, a document's key) the id names when it has no chunks.
    pub records: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedChunk {
    pub chunk_id: String,
    pub kind: String,
    pub source_id: String,
    pub title: Option<String>,
    pub preview: String,
}

const MAX_TAGS: usize = 50;
const MAX_TAG_BYTES: usize = 128;
const LEARNING_KINDS: &[&str] = &["preference", "fact", "procedure", "correction", "other"];

fn check_tags(tags: &[String]) -> Result<Vec<String>, MemoryError> {
    if tags.len() > MAX_TAGS {
        return Err(invalid(format!("tags has {} entries; at most {MAX_TAGS} are allowed", tags.len())));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for (i, t) in tags.iter().enumerate() {
        let t = t.trim();
        if t.is_empty() {
            return Err(invalid(format!("tags[{i}] must not be blank")));
        }
        if t.len() > MAX_TAG_BYTES {
            return Err(invalid(format!("tags[{i}] is {} bytes; at most {MAX_TAG_BYTES} are allowed", t.len())));
        }
        if !out.iter().any(|x| x == t) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

/// Runs `f` in a transaction with a new change sequence, commits it with the audit row
/// (success, `result_id` from `f`), then updates the indexes.
/// Without an audit row (`None`: a batch of an import, whose caller audits the whole) it is
/// otherwise the same path.
pub(crate) fn write_tx<T>(
    inner: &Arc<Inner>,
    audit_row: Option<AuditRow>,
    f: impl FnOnce(&Transaction<'_>, i64, i64) -> Result<(T, String), MemoryError>,
) -> Result<T, MemoryError> {
    write::run(inner, |tx, seq| {
        let (out, result_id) = f(tx, seq, now_ms())?;
        if let Some(mut audit_row) = audit_row {
            audit_row.success = true;
            audit_row.error = None;
            audit_row.result_id = Some(result_id);
            if audit_row.ts_ms == 0 {
                audit_row.ts_ms = now_ms();
            }
            audit::insert(tx, &audit_row, inner.machine(), inner.person().as_deref())?;
        }
        Ok(out)
    })
}

fn chunk_rowid(tx: &Transaction<'_>, chunk_id: &str) -> Result<i64, MemoryError> {
    tx.prepare_cached("SELECT rowid FROM chunks WHERE id = ?1")?
        .query_row([chunk_id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| no_chunk(chunk_id))
}

/// A write that says again what `r` says: `r` is refreshed (its time, the write's tags) and
/// named as what the write merged into.
#[allow(clippy::too_many_arguments)]
fn merge_into(
    tx: &Transaction<'_>,
    r: &facts::Related,
    ts: i64,
    tags: &[String],
    namespace: &str,
    key: &str,
    now: i64,
) -> Result<Stored, MemoryError> {
    tx.prepare_cached("UPDATE chunks SET timestamp_ms = max(timestamp_ms, ?2) WHERE rowid = ?1")?
        .execute(params![r.rowid, ts])?;
    for t in tags {
        tx.prepare_cached("INSERT OR IGNORE INTO chunk_tags (chunk_rowid, tag, origin_key) VALUES (?1, ?2, '')")?
            .execute(params![r.rowid, t])?;
    }
    tx.prepare_cached("UPDATE kv SET updated_at_ms = ?2 WHERE item_id = ?1")?.execute(params![r.origin, now])?;
    let (namespace, key): (String, String) = tx
        .prepare_cached("SELECT namespace, key FROM kv WHERE item_id = ?1 AND kind = 'document'")?
        .query_row([&r.origin], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?
        .unwrap_or_else(|| (namespace.to_string(), key.to_string()));
    Ok(Stored {
        id: r.origin.clone(),
        key,
        namespace,
        chunk_ids: vec![r.id.clone()],
        status: "merged",
        merged_into: Some(r.origin.clone()),
        supersedes: Vec::new(),
    })
}

/// A document stored again under its key with other text: its current chunks that the new
/// text does not repeat stay stored, superseded by the new chunk at the same place (else the
/// first); an older version the new text repeats becomes current again. Returns the chunks
/// superseded.
fn keep_versions(
    tx: &Transaction<'_>,
    seq: i64,
    old: &[i64],
    chunks: &[NewChunk],
    ts: i64,
) -> Result<Vec<String>, MemoryError> {
    let new_ids: Vec<String> = chunks.iter().map(NewChunk::id).collect();
    let rows: Vec<(i64, String, i64, bool)> = tx
        .prepare_cached(
            "SELECT rowid, id, seq_in_source, EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = chunks.id)
             FROM chunks WHERE rowid IN rarray(?1)",
        )?
        .query_map([crate::sql::rarray(old)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut again = Vec::new();
    let mut out = Vec::new();
    for (rowid, id, at, superseded) in rows {
        if new_ids.contains(&id) {
            if superseded {
                again.push(rowid);
            }
            continue;
        }
        if superseded {
            continue;
        }
        if let Some(by) = new_ids.get(at as usize).or(new_ids.first()) {
            facts::record(tx, &id, by, "same_key", None, ts)?;
            out.push(id);
        }
    }
    store::delete_chunks(tx, seq, &again)?;
    Ok(out)
}

/// One `(kind, namespace, key)` → item mapping of an upsert.
struct Kv<'a> {
    kind: &'a str,
    namespace: &'a str,
    key: &'a str,
    item: &'a str,
    hash: &'a str,
    provenance: &'a str,
}

fn upsert_kv(tx: &Transaction<'_>, kv: Kv<'_>, now: i64) -> rusqlite::Result<()> {
    let Kv { kind, namespace: ns, key, item, hash, provenance: prov } = kv;
    tx.prepare_cached(
        "INSERT INTO kv (kind, namespace, key, item_id, content_hash, provenance, created_at_ms, updated_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
         ON CONFLICT(kind, namespace, key) DO UPDATE SET item_id = excluded.item_id,
            content_hash = excluded.content_hash, provenance = excluded.provenance, updated_at_ms = excluded.updated_at_ms",
    )?
    .execute(params![kind, ns, key, item, hash, prov, now])?;
    Ok(())
}

impl MemoryEngine {
    /// Upserts a document by `(namespace, key)`, replacing its previous chunks.
    /// Returns `{id, key, namespace, chunk_ids, status: created|updated|unchanged}`.
    pub fn put_document(&self, w: PutDocument, audit: AuditRow) -> Result<Stored, MemoryError> {
        let key = required("key", &w.key)?.trim().to_string();
        required("content", &w.content)?;
        let source = required("source", &w.source)?.to_string();
        let namespace = match &w.namespace {
            Some(ns) => required("namespace", ns)?.trim().to_string(),
            None => "default".to_string(),
        };
        let title = w.title.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
        let tags = check_tags(&w.tags)?;
        for k in FILTER_META_KEYS {
            if let Some(v) = w.metadata.get(*k)
                && !(v.is_string() || v.is_number())
            {
                return Err(invalid(format!("metadata.{k} must be a string")));
            }
        }
        let item_id = format!("doc:{namespace}/{key}");
        let hash = sha256_hex(
            serde_json::to_string(&json!([title, w.content, tags, w.metadata, w.timestamp_ms]))
                .unwrap_or_default()
                .as_bytes(),
        );
        let ts = w.timestamp_ms.unwrap_or_else(now_ms);
        let project = match &w.project {
            Some(p) => Some(crate::project::normalize(p).ok_or_else(|| invalid("project must be an absolute path"))?),
            None => crate::project::from_metadata(&w.metadata),
        };
        let pieces = chunk_text(&w.content, Format::Markdown);
        // A short document is a fact: measured (outside the writer lock) against the stored ones.
        let probe = if w.track_facts && pieces.len() == 1 {
            facts::probe(&self.inner, title.as_deref(), &w.content)
        } else {
            None
        };
        write_tx(&self.inner, Some(audit), |tx, seq, now| {
            let old_hash: Option<String> = tx
                .prepare_cached("SELECT content_hash FROM kv WHERE kind = 'document' AND namespace = ?1 AND key = ?2")?
                .query_row(params![namespace, key], |r| r.get(0))
                .optional()?;
            let status = match &old_hash {
                Some(h) if *h == hash => "unchanged",
                Some(_) => "updated",
                None => "created",
            };
            let mut supersedes = Vec::new();
            // The chunk written as history of a later fact (it is not current, yet it is stored).
            let mut late: Option<String> = None;
            if status == "created"
                && let Some(probe) = &probe
            {
                match facts::judge(&self.inner, tx, probe, "document", project.as_deref(), &item_id)? {
                    facts::Verdict::Duplicate(r) => {
                        let out = merge_into(tx, &r, ts, &tags, &namespace, &key, now)?;
                        return Ok((out, r.origin));
                    }
                    // A document's subject is its title: another title is another fact.
                    facts::Verdict::Update(_) | facts::Verdict::New => {}
                }
            }
            if status == "unchanged" && w.track_facts {
                // Said again: the memory is as recent as its latest statement.
                tx.prepare_cached(
                    "UPDATE chunks SET timestamp_ms = max(timestamp_ms, ?2) WHERE origin = ?1
                     AND id NOT IN (SELECT old_id FROM supersessions)",
                )?
                .execute(params![item_id, ts])?;
            }
            if status != "unchanged" {
                let mut chunks = Vec::new();
                for (i, piece) in pieces.iter().enumerate() {
                    let mut metadata: Map<String, Value> = w.metadata.clone();
                    metadata.insert("namespace".into(), json!(namespace));
                    metadata.insert("key".into(), json!(key));
                    if let Some(t) = &title {
                        metadata.insert("title".into(), json!(t));
                    }
                    if let Some(h) = &piece.heading {
                        metadata.insert("heading".into(), json!(h));
                    }
                    chunks.push(NewChunk {
                        kind: SourceKind::Document,
                        source_id: item_id.clone(),
                        source_ref: key.clone(),
                        origin: item_id.clone(),
                        owner: None,
                        provenance: source.clone(),
                        timestamp_ms: ts,
                        seq: i as i64,
                        title: title.clone(),
                        content: piece.content.clone(),
                        metadata,
                        tags: tags.clone(),
                        project: project.clone(),
                    });
                }
                let old = store::rowids_by_origin(tx, &item_id)?;
                if w.track_facts && status == "updated" {
                    supersedes = keep_versions(tx, seq, &old, &chunks, ts)?;
                } else {
                    store::delete_chunks(tx, seq, &old)?;
                }
                store::insert_chunks(tx, seq, &chunks, now)?;
                if w.track_facts && status == "created" && chunks.len() == 1 {
                    // A new fact of the same subject and attribute, another value, supersedes.
                    let id = chunks[0].id();
                    for old in facts::updated_by_claims(tx, &w.content, project.as_deref(), &item_id, ts)? {
                        facts::record(tx, &old, &id, "same_attribute", None, ts)?;
                        supersedes.push(old);
                    }
                    // Observed before a fact that updates it: it goes in as that fact's history.
                    if let Some(by) = facts::later_by_claims(tx, &w.content, project.as_deref(), &item_id, ts)? {
                        let at: i64 = tx
                            .prepare_cached("SELECT timestamp_ms FROM chunks WHERE id = ?1")?
                            .query_row([&by], |r| r.get(0))?;
                        facts::record(tx, &id, &by, "same_attribute", None, at)?;
                        late = Some(id);
                    }
                }
                let display = title.clone().unwrap_or_else(|| key.clone());
                let src = NewSource {
                    source_id: item_id.clone(),
                    kind: SourceKind::Document,
                    display_name: display,
                    metadata: Map::new(),
                };
                store::upsert_source(tx, &src, now)?;
                let kv = Kv {
                    kind: "document",
                    namespace: &namespace,
                    key: &key,
                    item: &item_id,
                    hash: &hash,
                    provenance: &source,
                };
                upsert_kv(tx, kv, now)?;
            }
            let mut chunk_ids: Vec<String> = tx
                .prepare_cached(
                    "SELECT id FROM chunks WHERE origin = ?1 AND id NOT IN (SELECT old_id FROM supersessions)
                     ORDER BY seq_in_source",
                )?
                .query_map([&item_id], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            chunk_ids.extend(late);
            let out = Stored {
                id: item_id.clone(),
                key: key.clone(),
                namespace: namespace.clone(),
                chunk_ids,
                status,
                merged_into: None,
                supersedes,
            };
            Ok((out, item_id.clone()))
        })
    }

    /// Attaches a note to a chunk (one note per key: a second call replaces it). The note
    /// is itself a searchable chunk of kind `note`.
    pub fn add_note(
        &self,
        chunk_id: &str,
        note: &str,
        key: &str,
        source: &str,
        audit: AuditRow,
    ) -> Result<Noted, MemoryError> {
        let chunk_id = required("chunk_id", chunk_id)?.trim();
        let note = required("note_text", note)?.trim();
        let key = required("key", key)?.trim();
        let source = required("source", source)?;
        let item_id = format!("note:{key}");
        write_tx(&self.inner, Some(audit), |tx, seq, now| {
            let on = chunk_rowid(tx, chunk_id)?;
            let old = store::rowids_by_origin(tx, &item_id)?;
            let updated = !old.is_empty();
            let before: Option<String> = tx
                .prepare_cached("SELECT text FROM notes WHERE item_id = ?1 AND chunk_id = ?2")?
                .query_row(params![item_id, chunk_id], |r| r.get(0))
                .optional()?;
            if updated && before.is_some_and(|b| facts::folded(&b) == facts::folded(note)) {
                // The same note again: refreshed, not written twice.
                tx.prepare_cached("UPDATE chunks SET timestamp_ms = ?2 WHERE rowid IN rarray(?1)")?
                    .execute(params![crate::sql::rarray(&old), now])?;
                tx.prepare_cached("UPDATE notes SET updated_at_ms = ?2, provenance = ?3 WHERE item_id = ?1")?
                    .execute(params![item_id, now, source])?;
                let note_chunk_id: String =
                    tx.prepare_cached("SELECT id FROM chunks WHERE rowid = ?1")?.query_row([old[0]], |r| r.get(0))?;
                let out = Noted {
                    id: item_id.clone(),
                    note_chunk_id,
                    chunk_id: chunk_id.to_string(),
                    key: key.to_string(),
                    status: "merged",
                    merged_into: Some(item_id.clone()),
                    supersedes: Vec::new(),
                };
                return Ok((out, item_id.clone()));
            }
            let project: Option<String> =
                tx.prepare_cached("SELECT project FROM chunks WHERE rowid = ?1")?.query_row([on], |r| r.get(0))?;
            store::delete_chunks(tx, seq, &old)?;
            let mut metadata = Map::new();
            metadata.insert("chunk_id".into(), json!(chunk_id));
            metadata.insert("key".into(), json!(key));
            let chunk = NewChunk {
                kind: SourceKind::Note,
                source_id: item_id.clone(),
                source_ref: chunk_id.to_string(),
                origin: item_id.clone(),
                owner: None,
                provenance: source.to_string(),
                timestamp_ms: now,
                seq: 0,
                title: None,
                content: note.to_string(),
                metadata,
                tags: Vec::new(),
                project,
            };
            let note_chunk_id = chunk.id();
            store::insert_chunks(tx, seq, std::slice::from_ref(&chunk), now)?;
            // A note of the same subject and attribute, another value, supersedes.
            let mut supersedes = Vec::new();
            for old in facts::updated_by_claims(tx, note, chunk.project.as_deref(), &item_id, now)? {
                facts::record(tx, &old, &note_chunk_id, "same_attribute", None, now)?;
                supersedes.push(old);
            }
            let src = NewSource {
                source_id: item_id.clone(),
                kind: SourceKind::Note,
                display_name: format!("Note on {chunk_id}"),
                metadata: Map::new(),
            };
            store::upsert_source(tx, &src, now)?;
            let hash = sha256_hex(note.as_bytes());
            upsert_kv(
                tx,
                Kv { kind: "note", namespace: "", key, item: &item_id, hash: &hash, provenance: source },
                now,
            )?;
            tx.prepare_cached(
                "INSERT INTO notes (item_id, chunk_id, text, key, provenance, created_at_ms, updated_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
                 ON CONFLICT(item_id) DO UPDATE SET chunk_id = excluded.chunk_id, text = excluded.text,
                    provenance = excluded.provenance, updated_at_ms = excluded.updated_at_ms",
            )?
            .execute(params![item_id, chunk_id, note, key, source, now])?;
            let out = Noted {
                id: item_id.clone(),
                note_chunk_id,
                chunk_id: chunk_id.to_string(),
                key: key.to_string(),
                status: if updated { "updated" } else { "created" },
                merged_into: None,
                supersedes,
            };
            Ok((out, item_id.clone()))
        })
    }

    /// Sets the tags written under `key` on a chunk (replacing that key's earlier tags;
    /// the chunk's own tags and other keys' tags stay). Returns the chunk's tags.
    pub fn tag_chunk(
        &self,
        chunk_id: &str,
        tags: &[String],
        key: &str,
        source: &str,
        audit: AuditRow,
    ) -> Result<Tagged, MemoryError> {
        let chunk_id = required("chunk_id", chunk_id)?.trim();
        let key = required("key", key)?.trim();
        let source = required("source", source)?;
        if tags.is_empty() {
            return Err(invalid("tags must have at least one entry"));
        }
        let tags = check_tags(tags)?;
        write_tx(&self.inner, Some(audit), |tx, _seq, now| {
            let rowid = chunk_rowid(tx, chunk_id)?;
            tx.prepare_cached("DELETE FROM chunk_tags WHERE chunk_rowid = ?1 AND origin_key = ?2")?
                .execute(params![rowid, key])?;
            for t in &tags {
                tx.prepare_cached(
                    "INSERT OR IGNORE INTO chunk_tags (chunk_rowid, tag, origin_key) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![rowid, t, key])?;
            }
            let hash = sha256_hex(tags.join("\n").as_bytes());
            upsert_kv(
                tx,
                Kv { kind: "tag", namespace: "", key, item: chunk_id, hash: &hash, provenance: source },
                now,
            )?;
            let all: Vec<String> = tx
                .prepare_cached("SELECT DISTINCT tag FROM chunk_tags WHERE chunk_rowid = ?1 ORDER BY tag")?
                .query_map([rowid], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok((Tagged { chunk_id: chunk_id.to_string(), key: key.to_string(), tags: all }, chunk_id.to_string()))
        })
    }

    /// Stores one learning (always a new item).
    pub fn learn(
        &self,
        text: &str,
        kind: &str,
        confidence: Option<f64>,
        source: &str,
        audit: AuditRow,
    ) -> Result<Learned, MemoryError> {
        self.learn_with(text, kind, confidence, None, false, source, audit)
    }

    /// Stores one learning of `project`; with `track_facts` (see `facts`) the same learning
    /// already stored is refreshed instead (`status: merged`), and an update of a similar one
    /// supersedes it.
    #[allow(clippy::too_many_arguments)]
    pub fn learn_with(
        &self,
        text: &str,
        kind: &str,
        confidence: Option<f64>,
        project: Option<&str>,
        track_facts: bool,
        source: &str,
        audit: AuditRow,
    ) -> Result<Learned, MemoryError> {
        let text = required("text", text)?.trim();
        let source = required("source", source)?;
        if !LEARNING_KINDS.contains(&kind) {
            return Err(invalid(format!("kind must be one of {}, got `{kind}`", LEARNING_KINDS.join(", "))));
        }
        if let Some(c) = confidence
            && !(0.0..=1.0).contains(&c)
        {
            return Err(invalid(format!("confidence must be between 0 and 1, got {c}")));
        }
        let project = match project {
            Some(p) => Some(crate::project::normalize(p).ok_or_else(|| invalid("project must be an absolute path"))?),
            None => None,
        };
        let probe = if track_facts { facts::probe(&self.inner, None, text) } else { None };
        let item_id = format!("learning:{}", uuid::Uuid::new_v4().simple());
        write_tx(&self.inner, Some(audit), |tx, seq, now| {
            let mut update = None;
            if let Some(probe) = &probe {
                match facts::judge(&self.inner, tx, probe, "learning", project.as_deref(), &item_id)? {
                    facts::Verdict::Duplicate(r) => {
                        tx.prepare_cached("UPDATE chunks SET timestamp_ms = max(timestamp_ms, ?2) WHERE rowid = ?1")?
                            .execute(params![r.rowid, now])?;
                        let kind: String = tx
                            .prepare_cached("SELECT kind FROM learnings WHERE item_id = ?1")?
                            .query_row([&r.origin], |row| row.get(0))
                            .optional()?
                            .unwrap_or_else(|| kind.to_string());
                        let out = Learned {
                            id: r.origin.clone(),
                            chunk_id: r.id.clone(),
                            kind,
                            confidence,
                            status: "merged",
                            supersedes: Vec::new(),
                        };
                        return Ok((out, r.origin));
                    }
                    facts::Verdict::Update(r) => update = Some(r),
                    facts::Verdict::New => {}
                }
            }
            let mut metadata = Map::new();
            metadata.insert("learning_kind".into(), json!(kind));
            metadata.insert("confidence".into(), json!(confidence));
            let chunk = NewChunk {
                kind: SourceKind::Learning,
                source_id: "learnings".into(),
                source_ref: item_id.clone(),
                origin: item_id.clone(),
                owner: None,
                provenance: source.to_string(),
                timestamp_ms: now,
                seq: 0,
                title: None,
                content: text.to_string(),
                metadata,
                tags: Vec::new(),
                project: project.clone(),
            };
            let chunk_id = chunk.id();
            store::insert_chunks(tx, seq, std::slice::from_ref(&chunk), now)?;
            let mut supersedes = Vec::new();
            if let Some(r) = update {
                facts::record(tx, &r.id, &chunk_id, "similar", Some(r.cosine), now)?;
                supersedes.push(r.id);
            } else if track_facts {
                // The same subject and attribute with another value ("we moved to Berlin").
                for old in facts::updated_by_claims(tx, text, project.as_deref(), &item_id, now)? {
                    facts::record(tx, &old, &chunk_id, "same_attribute", None, now)?;
                    supersedes.push(old);
                }
            }
            let src = NewSource {
                source_id: "learnings".into(),
                kind: SourceKind::Learning,
                display_name: "Learnings".into(),
                metadata: Map::new(),
            };
            store::upsert_source(tx, &src, now)?;
            tx.prepare_cached(
                "INSERT INTO learnings (item_id, kind, confidence, text, provenance, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![item_id, kind, confidence, text, source, now])?;
            let out = Learned {
                id: item_id.clone(),
                chunk_id,
                kind: kind.to_string(),
                confidence,
                status: "created",
                supersedes,
            };
            Ok((out, item_id.clone()))
        })
    }

    /// Deletes for good. Each id may be a chunk id, an item id (`doc:…`, `note:…`,
    /// `learning:…`, `file:…`) or a source id; notes on forgotten chunks go with them.
    pub fn forget(&self, ids: &[String], source: &str, audit: AuditRow) -> Result<Forgotten, MemoryError> {
        required("source", source)?;
        if ids.is_empty() || ids.len() > 100 {
            return Err(invalid(format!("ids must have 1 to 100 entries, got {}", ids.len())));
        }
        for (i, id) in ids.iter().enumerate() {
            required(&format!("ids[{i}]"), id)?;
        }
        write_tx(&self.inner, Some(audit), |tx, seq, _now| {
            let mut deleted = Vec::new();
            let mut not_found = Vec::new();
            let mut history_kept = Vec::new();
            for id in ids {
                let id = id.trim();
                let (n, kept) = forget_one(tx, seq, id)?;
                history_kept.extend(kept);
                if n > 0 { deleted.push(id.to_string()) } else { not_found.push(id.to_string()) }
            }
            // Nothing to forget is a failed attempt: the transaction rolls back, and the caller
            // records the attempt as failed rather than this one committing a success row.
            if deleted.is_empty() {
                return Err(MemoryError::NotFound(format!(
                    "nothing was forgotten: no item or chunk has the id{} {}",
                    if not_found.len() == 1 { "" } else { "s" },
                    not_found.join(", ")
                )));
            }
            let result = deleted.join(",");
            history_kept.sort();
            history_kept.dedup();
            Ok((Forgotten { deleted, not_found, history_kept }, result))
        })
    }

    /// Deletes for good every item with a chunk in `project` (a normalised path; the items go
    /// whole: their chunks, notes on them, their records), in one audited transaction.
    pub fn forget_project(
        &self,
        project: &str,
        source: &str,
        audit: AuditRow,
    ) -> Result<ForgottenProject, MemoryError> {
        required("source", source)?;
        let project = crate::project::normalize(project)
            .ok_or_else(|| invalid("project must be an absolute path (a project's git root or working directory)"))?;
        write_tx(&self.inner, Some(audit), |tx, seq, _now| {
            let origins: Vec<String> = tx
                .prepare_cached("SELECT DISTINCT origin FROM chunks WHERE project = ?1 ORDER BY origin")?
                .query_map([&project], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            if origins.is_empty() {
                return Err(MemoryError::NotFound(format!(
                    "nothing was forgotten: no chunk belongs to the project {project} (status lists the projects)"
                )));
            }
            let mut chunks = 0;
            for origin in &origins {
                chunks += forget_one(tx, seq, origin)?.0;
            }
            let out = ForgottenProject { project: project.clone(), items: origins.len(), chunks };
            Ok((out, format!("project:{project}")))
        })
    }

    /// Undoes a merge of people: `entity_id` (a `person:` or `bot:` id, or an `email:` address
    /// linked to a person) counts as itself again, the chunks of the entity it was merged into
    /// are extracted again, and extraction never makes that merge again.
    pub fn split_entity(&self, entity_id: &str, audit: AuditRow) -> Result<Split, MemoryError> {
        required("entity_id", entity_id)?;
        let id = entity_id.trim().to_string();
        write_tx(&self.inner, Some(audit), |tx, _seq, _now| match entities::split(tx, &id)? {
            Some(into) => Ok((Split { entity_id: id.clone(), split_from: into }, id.clone())),
            None => Err(MemoryError::NotFound(format!(
                "`{id}` is not merged into another entity: nothing to split (tree.top_entities lists each \
                 person's merged names and addresses under `merged`)"
            ))),
        })
    }
}

/// The chunks `id` names for `forget`: the chunk with that id, else the chunks of the item
/// (origin) with that id, else those of the source with that id.
fn forget_targets(conn: &rusqlite::Connection, id: &str) -> Result<Vec<i64>, MemoryError> {
    let by_chunk: Vec<i64> = conn
        .prepare_cached("SELECT rowid FROM chunks WHERE id = ?1")?
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if !by_chunk.is_empty() {
        return Ok(by_chunk);
    }
    let by_origin = store::rowids_by_origin(conn, id)?;
    if !by_origin.is_empty() {
        return Ok(by_origin);
    }
    Ok(conn
        .prepare_cached("SELECT rowid FROM chunks WHERE source_id = ?1")?
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Chunks listed per id by [`MemoryEngine::resolve_ids`] (`chunk_count` has them all).
const RESOLVE_LISTED: usize = 100;

impl MemoryEngine {
    /// What each id names, read as `forget` reads ids (a chunk, else an item, else a source),
    /// without changing anything: `{ids: [{id, chunk_count, chunks: [{chunk_id, kind, source_id,
    /// title, preview}], notes, records}]}` — at most 100 chunks listed per id, in source order;
    /// `notes` the notes on those chunks (which a forget takes with them), `records` the bare
    /// records (a learning, a document's key) an id names when it has no chunks.
    pub fn resolve_ids(&self, ids: &[String]) -> Result<Resolved, MemoryError> {
        let conn = self.inner.read_conn()?;
        let mut out = Vec::new();
        for id in ids {
            let id = id.trim();
            let rowids = forget_targets(&conn, id)?;
            let chunks: Vec<ResolvedChunk> = conn
                .prepare_cached(
                    "SELECT id, source_kind, source_id, title, content FROM chunks WHERE rowid IN rarray(?1)
                     ORDER BY source_id, seq_in_source, rowid LIMIT ?2",
                )?
                .query_map(rusqlite::params![crate::sql::rarray(&rowids), RESOLVE_LISTED as i64], |r| {
                    let content: String = r.get(4)?;
                    Ok(ResolvedChunk {
                        chunk_id: r.get(0)?,
                        kind: r.get(1)?,
                        source_id: r.get(2)?,
                        title: r.get(3)?,
                        preview: crate::util::preview(content.trim(), 120),
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let notes: i64 = conn
                .prepare_cached(
                    "SELECT count(*) FROM notes WHERE chunk_id IN (SELECT id FROM chunks WHERE rowid IN rarray(?1))",
                )?
                .query_row([crate::sql::rarray(&rowids)], |r| r.get(0))?;
            let records: i64 = if rowids.is_empty() {
                conn.prepare_cached(
                    "SELECT (SELECT count(*) FROM kv WHERE item_id = ?1 AND kind != 'tag')
                          + (SELECT count(*) FROM learnings WHERE item_id = ?1)",
                )?
                .query_row([id], |r| r.get(0))?
            } else {
                0
            };
            out.push(ResolvedId { id: id.to_string(), chunk_count: rowids.len(), chunks, notes, records });
        }
        Ok(Resolved { ids: out })
    }
}

/// Deletes what `id` names; returns how many things went (chunks or bare records), and the
/// older versions of forgotten chunks that stay stored (still superseded, see `facts`).
fn forget_one(tx: &Transaction<'_>, seq: i64, id: &str) -> Result<(usize, Vec<String>), MemoryError> {
    let rowids = forget_targets(tx, id)?;
    if !rowids.is_empty() {
        // A forgotten agent session is not read from its log again.
        crate::sessions::forgotten(tx, id, now_ms())?;
    }
    let kept: Vec<String> = tx
        .prepare_cached(
            "SELECT s.old_id FROM supersessions s JOIN chunks n ON n.id = s.new_id JOIN chunks o ON o.id = s.old_id
             WHERE n.rowid IN rarray(?1) AND o.rowid NOT IN rarray(?1)",
        )?
        .query_map([crate::sql::rarray(&rowids)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    // Collect what hangs off the chunks before they go.
    let gone: Vec<(String, String)> = tx
        .prepare_cached("SELECT id, origin FROM chunks WHERE rowid IN rarray(?1)")?
        .query_map([crate::sql::rarray(&rowids)], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut n = store::delete_chunks(tx, seq, &rowids)?;
    let mut origins: Vec<String> = gone.iter().map(|g| g.1.clone()).collect();
    origins.push(id.to_string());
    origins.sort();
    origins.dedup();
    for (chunk_id, _) in &gone {
        // Notes about a forgotten chunk would keep what it said.
        let notes: Vec<String> = tx
            .prepare_cached("SELECT item_id FROM notes WHERE chunk_id = ?1")?
            .query_map([chunk_id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for note in notes {
            let rows = store::rowids_by_origin(tx, &note)?;
            store::delete_chunks(tx, seq, &rows)?;
            origins.push(note);
        }
        tx.prepare_cached("DELETE FROM kv WHERE kind = 'tag' AND item_id = ?1")?.execute([chunk_id])?;
    }
    for origin in &origins {
        let left: bool = tx.prepare_cached("SELECT 1 FROM chunks WHERE origin = ?1")?.exists([origin])?;
        if left {
            continue;
        }
        let mut bare = 0;
        bare += tx.prepare_cached("DELETE FROM kv WHERE item_id = ?1 AND kind != 'tag'")?.execute([origin])?;
        bare += tx.prepare_cached("DELETE FROM notes WHERE item_id = ?1")?.execute([origin])?;
        bare += tx.prepare_cached("DELETE FROM learnings WHERE item_id = ?1")?.execute([origin])?;
        if let Some(path) = origin.strip_prefix("file:") {
            bare += tx.prepare_cached("DELETE FROM files WHERE path = ?1")?.execute([path])?;
        }
        anchor::forget_origin(tx, origin)?;
        if origin == id && n == 0 {
            n = bare;
        }
    }
    Ok((n, kept))
}
