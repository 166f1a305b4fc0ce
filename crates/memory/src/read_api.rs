//! The tree-shaped read methods (`memory.search`, `memory.recall`, `tree.*`) and
//! `stats`: JSON parameters in, JSON results out.

use rusqlite::{OptionalExtension, params_from_iter};
use serde::Deserialize;
use serde_json::{Value, json};

use super::cursor::{Cursor, decode, encode, fingerprint, keyset_key, keyset_rowid};
use super::dates;
use super::filter::{Filter, parse_kinds};
use super::locks::read;
use super::params::{bounded, invalid, optional, parse, required, string_list};
use super::search::{self, CHUNK_COLUMNS, ChunkRow, Mode, chunk_from_row};
use super::snippet::{best_line, snippet};
use super::sync::positions;
use super::tier::{self, TierKind};
use super::types::SourceKind;
use super::util::{ms_to_rfc3339, preview};
use super::{Inner, MemoryEngine, MemoryError, entities, schema};

const MAX_K: usize = 50;
/// Page size of `tree.list_sources`: by default and at most (it used to be a hard cap).
const SOURCES_PAGE: usize = 200;
const ENTITY_KINDS: &[&str] = &["email", "url", "handle", "topic", "person", "bot", "org"];
/// Topics ranked by distinctiveness: this many of the most widespread are scored.
const TOPIC_CANDIDATES: i64 = 2_000;

/// Turns a chat hit shows: the one that matches best, one before it and two after it.
const TURNS_BEFORE: usize = 1;
const TURNS_AFTER: usize = 2;
/// Characters kept of each turn.
const TURN_CHARS: usize = 500;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// The turns around the one in chat chunk `c` that matches `terms` best (its first turn when
/// none does): the answer to a question is usually the next turn, and it may have been packed
/// into the conversation's next chunk, so the window crosses into the neighbouring chunks of
/// the same conversation. Each turn is `{chunk_id, text}`.
fn chat_turns(conn: &rusqlite::Connection, c: &ChunkRow, terms: &[String]) -> Result<Vec<Value>, MemoryError> {
    let lines: Vec<&str> = c.content.lines().filter(|l| !l.trim().is_empty()).collect();
    let at = best_line(&lines.join("\n"), terms).unwrap_or(0);
    let turn = |id: &str, text: &str| json!({ "chunk_id": id, "text": preview(text, TURN_CHARS) });
    let neighbour = |later: bool| -> Result<Option<(String, String)>, MemoryError> {
        let sql = if later {
            "SELECT id, content FROM chunks WHERE source_id = ?1 AND (timestamp_ms, rowid) > (?2, ?3) \
             ORDER BY timestamp_ms, rowid LIMIT 1"
        } else {
            "SELECT id, content FROM chunks WHERE source_id = ?1 AND (timestamp_ms, rowid) < (?2, ?3) \
             ORDER BY timestamp_ms DESC, rowid DESC LIMIT 1"
        };
        Ok(conn
            .prepare_cached(sql)?
            .query_row(rusqlite::params![c.source_id, c.timestamp_ms, c.rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    };
    let mut out = Vec::new();
    if at < TURNS_BEFORE
        && let Some((id, text)) = neighbour(false)?
    {
        let prev: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        out.extend(prev[prev.len().saturating_sub(TURNS_BEFORE - at)..].iter().map(|l| turn(&id, l)));
    }
    let end = (at + TURNS_AFTER + 1).min(lines.len());
    out.extend(lines[at.saturating_sub(TURNS_BEFORE)..end].iter().map(|l| turn(&c.id, l)));
    let missing = at + TURNS_AFTER + 1 - end;
    if missing > 0
        && let Some((id, text)) = neighbour(true)?
    {
        out.extend(text.lines().filter(|l| !l.trim().is_empty()).take(missing).map(|l| turn(&id, l)));
    }
    Ok(out)
}

/// Message for a chunk id that does not exist.
pub(crate) fn no_chunk(id: &str) -> MemoryError {
    MemoryError::NotFound(format!("no chunk with id {id}; ids come from memory.search/recall/tree.browse"))
}

fn hit_json(c: &ChunkRow, terms: &[String]) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("chunk_id".into(), json!(c.id));
    m.insert("snippet".into(), json!(snippet(&c.content, terms)));
    m.insert("source_kind".into(), json!(c.kind));
    m.insert("source_id".into(), json!(c.source_id));
    m.insert("source_ref".into(), json!(c.source_ref));
    m.insert("title".into(), json!(c.title));
    m.insert("timestamp_ms".into(), json!(c.timestamp_ms));
    m.insert("tags".into(), json!(c.tags));
    m
}

#[derive(Deserialize)]
struct SearchParams {
    query: String,
    k: Option<i64>,
}

#[derive(Deserialize)]
struct RecallParams {
    query: String,
    k: Option<i64>,
    filter: Option<Value>,
}

#[derive(Deserialize)]
struct GetChunkParams {
    chunk_id: String,
}

#[derive(Deserialize)]
struct ListChunksParams {
    source_kinds: Option<Vec<String>>,
    source_ids: Option<Vec<String>>,
    entity_ids: Option<Vec<String>>,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
    query: Option<String>,
    k: Option<i64>,
    offset: Option<i64>,
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct TopEntitiesParams {
    kind: Option<String>,
    k: Option<i64>,
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct ListSourcesParams {
    user_email_hint: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

impl MemoryEngine {
    /// `{query, k?}` → BM25 hits with highlighted snippets.
    pub fn search(&self, p: Value) -> Result<Value, MemoryError> {
        let p: SearchParams = parse(p, &["query", "k"], "params")?;
        let query = required("query", &p.query)?;
        let k = bounded("k", p.k, 10, 1, MAX_K)?;
        let inner = &self.inner;
        let conn = inner.read_conn()?;
        let hits = search::rank(inner, &conn, query, Mode::Keyword, &Filter::default(), k, k, None)?.hits;
        let terms = inner.fts.query_terms(query).words;
        let out: Vec<Value> = search::load_hits(&conn, hits)?
            .iter()
            .map(|(c, h)| {
                let mut m = hit_json(c, &terms);
                m.insert("score".into(), json!(h.score));
                Value::Object(m)
            })
            .collect();
        Ok(json!({ "query": query, "hits": out }))
    }

    /// `{query, k?, filter?}` → hybrid recall: chunks with fused score, cosine and BM25
    /// rank, plus citations and the vector tier that ranked them (`fast`, `deep`, or null
    /// when no embedder could embed the query).
    pub fn recall(&self, p: Value) -> Result<Value, MemoryError> {
        let p: RecallParams = parse(p, &["query", "k", "filter"], "params")?;
        let query = required("query", &p.query)?;
        let k = bounded("k", p.k, 10, 1, MAX_K)?;
        let filter = Filter::parse(p.filter.as_ref())?;
        filter.settle_entities(&self.inner)?;
        let inner = &self.inner;
        let conn = inner.read_conn()?;
        let span = dates::span_in(query, now_ms());
        let pool = (k * 4).max(100);
        let ranked = search::rank(inner, &conn, query, Mode::Hybrid, &filter, k, pool, span.as_ref())?;
        let terms = inner.fts.query_terms(query).words;
        let mut chunks = Vec::new();
        let mut citations = Vec::new();
        for (c, h) in search::load_hits(&conn, ranked.hits)? {
            let c = &c;
            let mut m = hit_json(c, &terms);
            m.insert("score".into(), json!(h.score));
            m.insert("vector_score".into(), json!(h.vector_score));
            m.insert("bm25_rank".into(), json!(h.bm25_rank));
            m.insert("token_count".into(), json!(c.token_count));
            if span.is_some() {
                m.insert("in_date_range".into(), json!(h.in_span));
            }
            if c.kind == SourceKind::Chat.as_str() {
                m.insert("turns".into(), json!(chat_turns(&conn, c, &terms)?));
            }
            chunks.push(Value::Object(m));
            citations.push(json!({
                "chunk_id": c.id, "source_kind": c.kind, "source_id": c.source_id, "source_ref": c.source_ref,
            }));
        }
        let tier = ranked.tier.map(TierKind::name);
        let mut out = json!({ "query": query, "chunks": chunks, "citations": citations, "vector_tier": tier });
        if let Some(s) = span {
            // What the question was read to mean, so the caller can tell when a date was misread.
            out["date_range"] = json!({
                "text": s.text, "from": ms_to_rfc3339(s.from_ms), "until": ms_to_rfc3339(s.to_ms),
            });
        }
        Ok(out)
    }

    /// `{chunk_id}` → the whole chunk with metadata, tags, entity ids and notes.
    pub fn read_chunk(&self, p: Value) -> Result<Value, MemoryError> {
        let p: GetChunkParams = parse(p, &["chunk_id"], "params")?;
        let id = required("chunk_id", &p.chunk_id)?.trim();
        entities::settle(&self.inner)?;
        let conn = self.inner.read_conn()?;
        let sql = format!("SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.id = ?1");
        let mut c =
            conn.prepare_cached(&sql)?.query_row([id], chunk_from_row).optional()?.ok_or_else(|| no_chunk(id))?;
        search::attach_tags(&conn, std::slice::from_mut(&mut c))?;
        let entities: Vec<String> = conn
            .prepare_cached("SELECT entity_id FROM chunk_entities WHERE chunk_rowid = ?1 ORDER BY entity_id")?
            .query_map([c.rowid], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let notes: Vec<Value> = conn
            .prepare_cached(
                "SELECT item_id, text, key, provenance, created_at_ms, updated_at_ms FROM notes WHERE chunk_id = ?1
                 ORDER BY created_at_ms",
            )?
            .query_map([&c.id], |r| {
                Ok(json!({
                    "id": r.get::<_, String>(0)?, "text": r.get::<_, String>(1)?, "key": r.get::<_, String>(2)?,
                    "source": r.get::<_, String>(3)?, "created_at_ms": r.get::<_, i64>(4)?,
                    "updated_at_ms": r.get::<_, i64>(5)?,
                }))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let file_path = c.metadata.get("file_path").and_then(Value::as_str);
        let linked = crate::links::of_source(&conn, &c.source_id, file_path)?;
        Ok(json!({
            "chunk_id": c.id, "source_kind": c.kind, "source_id": c.source_id, "source_ref": c.source_ref,
            "item_id": c.origin, "owner": c.owner, "source": c.provenance, "timestamp_ms": c.timestamp_ms,
            "observed_at": ms_to_rfc3339(c.timestamp_ms), "seq_in_source": c.seq_in_source, "title": c.title,
            "content": c.content, "token_count": c.token_count, "tags": c.tags, "metadata": c.metadata,
            "entity_ids": entities, "notes": notes, "created_at_ms": c.created_at_ms,
            "links": linked["links"], "backlinks": linked["backlinks"],
        }))
    }

    /// Filtered, paged listing, newest first (rowid breaks ties), with the total count and
    /// `next_cursor` when more follow. Pages by `cursor` (keyset, stable while chunks are
    /// added) or by `offset`, not both.
    pub fn browse(&self, p: Value) -> Result<Value, MemoryError> {
        let allowed =
            ["source_kinds", "source_ids", "entity_ids", "since_ms", "until_ms", "query", "k", "offset", "cursor"];
        let p: ListChunksParams = parse(p, &allowed, "params")?;
        let k = bounded("k", p.k, 10, 1, MAX_K)?;
        let offset = bounded("offset", p.offset, 0, 0, i64::MAX as usize)?;
        let what = json!([p.source_kinds, p.source_ids, p.entity_ids, p.since_ms, p.until_ms, p.query]).to_string();
        let fp = fingerprint(&["browse", &what]);
        let after = decode(&p.cursor, &fp)?.map(|c| keyset_rowid(&c)).transpose()?;
        if after.is_some() && offset > 0 {
            return Err(invalid("pass either offset or cursor, not both"));
        }
        for (name, v) in [("since_ms", p.since_ms), ("until_ms", p.until_ms)] {
            if v.is_some_and(|v| v < 0) {
                return Err(invalid(format!("{name} must be >= 0")));
            }
        }
        let mut filter = Filter {
            kinds: parse_kinds("source_kinds", &string_list("source_kinds", &p.source_kinds, 16)?)?,
            source_ids: string_list("source_ids", &p.source_ids, 1000)?,
            entity_ids: string_list("entity_ids", &p.entity_ids, 1000)?,
            after_ms: p.since_ms,
            before_ms: p.until_ms,
            ..Filter::default()
        };
        filter.settle_entities(&self.inner)?;
        let inner = &self.inner;
        let mut terms = Vec::new();
        if let Some(q) = optional("query", &p.query)? {
            let q = inner.fts.query_terms(q);
            filter.rowids = Some(inner.fts.matching_rowids(&q)?);
            terms = q.words;
        }
        let conn = inner.read_conn()?;
        let (pred, mut args) = filter.sql();
        let total: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM chunks c WHERE {pred}"))?
            .query_row(params_from_iter(args.iter().map(|a| a.as_ref())), |r| r.get(0))?;
        let mut sql = format!("SELECT {CHUNK_COLUMNS} FROM chunks c WHERE {pred}");
        if let Some((t, r)) = after {
            args.push(Box::new(t));
            args.push(Box::new(r));
            let (a, b) = (args.len() - 1, args.len());
            sql.push_str(&format!(" AND (c.timestamp_ms < ?{a} OR (c.timestamp_ms = ?{a} AND c.rowid < ?{b}))"));
        }
        args.push(Box::new(k as i64 + 1));
        args.push(Box::new(offset as i64));
        sql.push_str(&format!(
            " ORDER BY c.timestamp_ms DESC, c.rowid DESC LIMIT ?{} OFFSET ?{}",
            args.len() - 1,
            args.len()
        ));
        let mut rows: Vec<ChunkRow> = conn
            .prepare_cached(&sql)?
            .query_map(params_from_iter(args.iter().map(|a| a.as_ref())), chunk_from_row)?
            .collect::<rusqlite::Result<_>>()?;
        let more = rows.len() > k;
        rows.truncate(k);
        search::attach_tags(&conn, &mut rows)?;
        let chunks: Vec<Value> = rows
            .iter()
            .map(|c| {
                let mut m = hit_json(c, &terms);
                if terms.is_empty() {
                    m.remove("snippet");
                    m.insert("preview".into(), json!(preview(c.content.trim(), 200)));
                }
                m.insert("token_count".into(), json!(c.token_count));
                Value::Object(m)
            })
            .collect();
        let mut out = json!({ "chunks": chunks, "total": total, "offset": offset, "k": k });
        if let (true, Some(last)) = (more, rows.last()) {
            let c = Cursor { h: fp, t: Some(last.timestamp_ms), r: Some(last.rowid), ..Cursor::default() };
            out["next_cursor"] = json!(encode(&c));
        }
        Ok(out)
    }

    /// Most-mentioned canonical entities, optionally of one kind: `{entities, total,
    /// next_cursor?}`, by mention count then id (the keyset a cursor continues from). Topics
    /// alone (`kind: topic`) rank by how distinctive they are: the chunks a topic is one of,
    /// times the log of how rare its word is in the store (tf-idf against the store's own
    /// document frequencies), so words every chunk uses sink. People and bots carry the names
    /// and addresses merged into them (`merged`, each with its reason; `memory.split_entity`
    /// undoes one).
    pub fn top_entities(&self, p: Value) -> Result<Value, MemoryError> {
        let p: TopEntitiesParams = parse(p, &["kind", "k", "cursor"], "params")?;
        let k = bounded("k", p.k, 10, 1, MAX_K)?;
        let kind = optional("kind", &p.kind)?;
        if let Some(kind) = kind
            && !ENTITY_KINDS.contains(&kind)
        {
            return Err(invalid(format!("kind must be one of {}, got `{kind}`", ENTITY_KINDS.join(", "))));
        }
        let fp = fingerprint(&["entities", kind.unwrap_or("")]);
        let after = decode(&p.cursor, &fp)?.map(|c| keyset_key(&c)).transpose()?;
        entities::settle(&self.inner)?;
        let conn = self.inner.read_conn()?;
        // ?1 the kind (empty: every kind), ?2/?3 the keyset position (none: the first page).
        let pred = "chunk_count > 0 AND (?1 = '' OR kind = ?1)";
        let kind = kind.unwrap_or("");
        let total: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM entities WHERE {pred}"))?
            .query_row([kind], |r| r.get(0))?;
        let (after_n, after_id) = after.map_or((None, None), |(n, id)| (Some(n), Some(id)));
        let row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(Value, i64, String)> {
            let (id, mentions) = (r.get::<_, String>(0)?, r.get::<_, i64>(3)?);
            let v = json!({
                "entity_id": id, "kind": r.get::<_, String>(1)?,
                "display_name": r.get::<_, String>(2)?, "mention_count": mentions,
                "chunk_count": r.get::<_, i64>(4)?,
            });
            Ok((v, mentions, id))
        };
        let mut rows: Vec<(Value, i64, String)> = if kind == "topic" {
            // Every candidate is scored, then the keyset (score in thousandths, id) applies.
            let docs = self.inner.fts.num_docs().max(1) as f64;
            let mut scored: Vec<(Value, i64, String)> = conn
                .prepare_cached(
                    "SELECT id, kind, display_name, mention_count, chunk_count FROM entities
                     WHERE kind = 'topic' AND chunk_count > 0 ORDER BY chunk_count DESC, id LIMIT ?1",
                )?
                .query_map([TOPIC_CANDIDATES], row)?
                .collect::<rusqlite::Result<Vec<_>>>()?
                .into_iter()
                .map(|(mut v, _, id)| {
                    let chunks = v["chunk_count"].as_i64().unwrap_or(0).max(1) as f64;
                    let word = v["display_name"].as_str().unwrap_or("");
                    let df = (self.inner.fts.doc_freq(word) as f64).max(chunks);
                    // Rarity counts twice: once for the word's weight in each chunk it is a
                    // topic of (tf-idf), once for how few chunks share it (a subject, not a
                    // word of every kind of text).
                    let idf = (docs / df).ln().max(0.0);
                    let score = chunks * idf * idf;
                    v["score"] = json!((score * 1000.0).round() / 1000.0);
                    ((v), (score * 1000.0) as i64, id)
                })
                .filter(|(_, s, id)| after_n.is_none_or(|n| *s < n || (*s == n && Some(id) > after_id.as_ref())))
                .collect();
            scored.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.2.cmp(&b.2)));
            scored.truncate(k + 1);
            scored
        } else {
            conn.prepare_cached(&format!(
                "SELECT id, kind, display_name, mention_count, chunk_count FROM entities WHERE {pred}
                 AND (?2 IS NULL OR mention_count < ?2 OR (mention_count = ?2 AND id > ?3))
                 ORDER BY mention_count DESC, id LIMIT ?4"
            ))?
            .query_map(rusqlite::params![kind, after_n, after_id, k as i64 + 1], row)?
            .collect::<rusqlite::Result<_>>()?
        };
        let mut merged =
            conn.prepare_cached("SELECT alias, reason FROM entity_aliases WHERE entity_id = ?1 ORDER BY alias")?;
        for (v, _, id) in &mut rows {
            if id.starts_with("person:") || id.starts_with("bot:") {
                let m: Vec<Value> = merged
                    .query_map([&*id], |r| {
                        Ok(json!({"entity_id": r.get::<_, String>(0)?, "reason": r.get::<_, String>(1)?}))
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                if !m.is_empty() {
                    v["merged"] = Value::Array(m);
                }
            }
        }
        Ok(keyset_page("entities", rows, k, total, fp))
    }

    /// Sources with chunk counts and last activity, most recent first (source id breaks
    /// ties): `{sources, total, next_cursor?}`. For e-mail threads the display name is the
    /// first participant who is not the user.
    pub fn list_sources(&self, p: Value) -> Result<Value, MemoryError> {
        let p: ListSourcesParams = parse(p, &["user_email_hint", "limit", "cursor"], "params")?;
        let hint = optional("user_email_hint", &p.user_email_hint)?.map(|h| h.trim().to_ascii_lowercase());
        let limit = bounded("limit", p.limit, SOURCES_PAGE, 1, SOURCES_PAGE)?;
        let fp = fingerprint(&["sources"]);
        let after = decode(&p.cursor, &fp)?.map(|c| keyset_key(&c)).transpose()?;
        let (after_t, after_id) = after.map_or((None, None), |(t, id)| (Some(t), Some(id)));
        let conn = self.inner.read_conn()?;
        let total: i64 = conn
            .prepare_cached(
                "SELECT count(*) FROM sources s WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.source_id = s.source_id)",
            )?
            .query_row([], |r| r.get(0))?;
        let rows: Vec<(Value, i64, String)> = conn
            .prepare_cached(
                "SELECT s.source_id, s.source_kind, s.display_name, s.metadata, a.n, a.last
                 FROM (SELECT source_id, count(*) AS n, max(timestamp_ms) AS last FROM chunks GROUP BY source_id) AS a
                 JOIN sources s ON s.source_id = a.source_id
                 WHERE ?1 IS NULL OR a.last < ?1 OR (a.last = ?1 AND s.source_id > ?2)
                 ORDER BY a.last DESC, s.source_id LIMIT ?3",
            )?
            .query_map(rusqlite::params![after_t, after_id, limit as i64 + 1], |r| {
                let kind: String = r.get(1)?;
                let mut display: String = r.get(2)?;
                let meta: Value = serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or(Value::Null);
                let mut extra = serde_json::Map::new();
                if kind == "email" {
                    if let Some(name) = other_party(&meta, hint.as_deref()) {
                        display = name;
                    }
                    extra.insert("subject".into(), meta.get("subject").cloned().unwrap_or(Value::Null));
                    extra.insert("participants".into(), meta.get("participants").cloned().unwrap_or(json!([])));
                }
                // The file a document came from, so it can be read again (`synced_at_ms`: when it
                // last was).
                if let Some(path) = meta.get("file_path").filter(|p| p.is_string()) {
                    extra.insert("file_path".into(), path.clone());
                }
                let mut m = serde_json::Map::new();
                let (id, last) = (r.get::<_, String>(0)?, r.get::<_, i64>(5)?);
                m.insert("source_id".into(), json!(id));
                m.insert("source_kind".into(), json!(kind));
                m.insert("display_name".into(), json!(display));
                m.insert("chunk_count".into(), json!(r.get::<_, i64>(4)?));
                m.insert("last_activity_ms".into(), json!(last));
                m.extend(extra);
                Ok((Value::Object(m), last, id))
            })?
            .collect::<rusqlite::Result<_>>()?;
        // When each file-backed source was last read from its file.
        let mut rows = rows;
        let mut synced = conn.prepare_cached("SELECT ingested_at_ms FROM files WHERE path = ?1")?;
        for (v, _, _) in rows.iter_mut() {
            if let Some(path) = v.get("file_path").and_then(Value::as_str).map(str::to_string) {
                let at: Option<i64> = synced.query_row([path], |r| r.get(0)).optional()?;
                v["synced_at_ms"] = json!(at);
            }
        }
        Ok(keyset_page("sources", rows, limit, total, fp))
    }
}

/// A page of a listing keyed by (sort value, text id): `rows` holds one more than `limit` when
/// more follow, and then the page carries a cursor at its last row.
fn keyset_page(list: &str, mut rows: Vec<(Value, i64, String)>, limit: usize, total: i64, fp: String) -> Value {
    let more = rows.len() > limit;
    rows.truncate(limit);
    let mut out = json!({ "total": total });
    if let (true, Some((_, t, id))) = (more, rows.last()) {
        out["next_cursor"] = json!(encode(&Cursor { h: fp, t: Some(*t), k: Some(id.clone()), ..Cursor::default() }));
    }
    out[list] = Value::Array(rows.into_iter().map(|(v, _, _)| v).collect());
    out
}

/// The first thread participant whose address is not `hint` (name, else address).
fn other_party(meta: &Value, hint: Option<&str>) -> Option<String> {
    let people = meta.get("participants")?.as_array()?;
    people
        .iter()
        .find(|p| {
            let email = p.get("email").and_then(Value::as_str).unwrap_or("");
            hint.is_none_or(|h| !email.eq_ignore_ascii_case(h))
        })
        .and_then(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .or_else(|| p.get("email").and_then(Value::as_str))
        })
        .map(str::to_string)
}

pub(crate) fn stats(inner: &Inner) -> Result<Value, MemoryError> {
    let conn = inner.read_conn()?;
    let count = |sql: &str| -> Result<i64, MemoryError> { Ok(conn.query_row(sql, [], |r| r.get(0))?) };
    let mut by_kind = serde_json::Map::new();
    let mut stmt = conn.prepare_cached("SELECT source_kind, count(*) FROM chunks GROUP BY source_kind ORDER BY 1")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        by_kind.insert(r.get(0)?, json!(r.get::<_, i64>(1)?));
    }
    let (db_seq, fts_seq, vec_seq) = positions(inner);
    let vectors = read(&inner.fast.vectors).len();
    let chunks = count("SELECT count(*) FROM chunks")?;
    let fast = &inner.fast.embedder;
    let mut out = json!({
        "schema_version": schema::SCHEMA_VERSION,
        "chunks": chunks,
        "chunks_by_kind": by_kind,
        "sources": count("SELECT count(*) FROM sources")?,
        "entities": count("SELECT count(*) FROM entities WHERE chunk_count > 0")?,
        "files": count("SELECT count(*) FROM files")?,
        // Chunks whose user tags and notes are kept without their passage (see `anchor`).
        "annotations_detached": count("SELECT count(*) FROM detached")?,
        "audit_rows": count("SELECT count(*) FROM mcp_audit")?,
        "db_seq": db_seq,
        "fts": { "seq": fts_seq, "docs": inner.fts.num_docs() },
        "vectors": { "seq": vec_seq, "count": vectors, "dims": fast.dims(),
                     "signature": fast.signature(), "missing": (chunks as usize).saturating_sub(vectors) },
    });
    if let Some(deep) = tier::progress(inner, chunks as usize).into_iter().find(|t| t.tier == TierKind::Deep) {
        out["vectors"]["deep"] = serde_json::to_value(deep).unwrap_or_default();
    }
    Ok(out)
}
