//! `tree.top_entities` (`openhuman.memory_tree_top_entities`): the most-mentioned canonical
//! entities, optionally of one kind, by mention count then id (the keyset a cursor continues
//! from). Topics alone rank by how distinctive they are: the chunks a topic is one of, times
//! the square of how rare its word is in the store, so words every chunk uses sink, and a word
//! whose text more than one chunk in `GENERIC_SHARE` holds (in a store of at least `GENERIC_MIN_DOCS`
//! chunks) is left out: what so much of a store says is no subject of it. People and bots carry
//! the names and addresses merged into them.

use openhuman_schema::params;
use serde::Serialize;

use super::{CURSOR_DOC, Operation};
use crate::cursor::{decode, fingerprint, keyset_key};
use crate::{MemoryEngine, MemoryError, entities, page};

/// Topics ranked by distinctiveness: this many of the most widespread are scored.
const TOPIC_CANDIDATES: i64 = 2_000;
/// A topic word in more than one chunk in this many is generic in this store…
const GENERIC_SHARE: f64 = 8.0;
/// …once the store has this many chunks (in a small one, a shared word may be its subject).
const GENERIC_MIN_DOCS: f64 = 200.0;

params! {
    /// Which entities to list, and where the page starts.
    pub struct TopEntitiesParams {
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<String> = one_of(
            "Only this kind of entity.",
            &["email", "url", "handle", "topic", "person", "bot", "org"]
        ),
        k as limit = int("Page size (default 10).", 1, 50).default_int(10),
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String> = string(CURSOR_DOC).max_chars(1024),
        limit: usize = int("Page size (default 10); `k` is another name for it.", 1, 50).default_int(10),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntitiesPage {
    pub entities: Vec<EntityRow>,
    pub total: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntityRow {
    pub entity_id: String,
    pub kind: String,
    pub display_name: String,
    pub mention_count: i64,
    pub chunk_count: i64,
    /// A topic's distinctiveness (topics only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The names and addresses merged into a person or bot, each with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<MergedName>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergedName {
    pub entity_id: String,
    pub reason: String,
}

pub struct TopEntities;

impl Operation for TopEntities {
    const METHOD: &'static str = "openhuman.memory_tree_top_entities";
    type Params = TopEntitiesParams;
    type Output = EntitiesPage;
    fn run(engine: &MemoryEngine, p: TopEntitiesParams) -> Result<EntitiesPage, MemoryError> {
        engine.top_entities(p)
    }
}

impl MemoryEngine {
    /// A page of the most-mentioned entities (topics: the most distinctive).
    pub fn top_entities(&self, p: TopEntitiesParams) -> Result<EntitiesPage, MemoryError> {
        let k = p.limit;
        let kind = p.kind.as_deref().unwrap_or("");
        let fp = fingerprint(&["entities", kind]);
        let after = decode(&p.cursor, &fp)?.map(|c| keyset_key(&c)).transpose()?;
        entities::settle(&self.inner)?;
        let conn = self.inner.read_conn()?;
        // ?1 the kind (empty: every kind), ?2/?3 the keyset position (none: the first page).
        let pred = "chunk_count > 0 AND (?1 = '' OR kind = ?1)";
        let total: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM entities WHERE {pred}"))?
            .query_row([kind], |r| r.get(0))?;
        let (after_n, after_id) = after.map_or((None, None), |(n, id)| (Some(n), Some(id)));
        let row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(EntityRow, i64, String)> {
            let e = EntityRow {
                entity_id: r.get(0)?,
                kind: r.get(1)?,
                display_name: r.get(2)?,
                mention_count: r.get(3)?,
                chunk_count: r.get(4)?,
                score: None,
                merged: Vec::new(),
            };
            let (n, id) = (e.mention_count, e.entity_id.clone());
            Ok((e, n, id))
        };
        let mut rows: Vec<(EntityRow, i64, String)> = if kind == "topic" {
            // Every candidate is scored, then the keyset (score in thousandths, id) applies.
            let docs = self.inner.fts.num_docs().max(1) as f64;
            let mut scored: Vec<(EntityRow, i64, String)> = conn
                .prepare_cached(
                    "SELECT id, kind, display_name, mention_count, chunk_count FROM entities
                     WHERE kind = 'topic' AND chunk_count > 0 ORDER BY chunk_count DESC, id LIMIT ?1",
                )?
                .query_map([TOPIC_CANDIDATES], row)?
                .collect::<rusqlite::Result<Vec<_>>>()?
                .into_iter()
                .filter_map(|(mut e, _, id)| {
                    let chunks = e.chunk_count.max(1) as f64;
                    let used = self.inner.fts.doc_freq(&e.display_name) as f64;
                    if docs >= GENERIC_MIN_DOCS && used * GENERIC_SHARE > docs {
                        return None;
                    }
                    let df = used.max(chunks);
                    // Rarity counts twice: once for the word's weight in each chunk it is a
                    // topic of (tf-idf), once for how few chunks share it (a subject, not a
                    // word of every kind of text).
                    let idf = (docs / df).ln().max(0.0);
                    let score = chunks * idf * idf;
                    e.score = Some((score * 1000.0).round() / 1000.0);
                    Some((e, (score * 1000.0) as i64, id))
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
        for (e, _, id) in &mut rows {
            if id.starts_with("person:") || id.starts_with("bot:") {
                e.merged = merged
                    .query_map([&*id], |r| Ok(MergedName { entity_id: r.get(0)?, reason: r.get(1)? }))?
                    .collect::<rusqlite::Result<_>>()?;
            }
        }
        let (entities, next_cursor) = page::keyed(rows, k, &fp);
        Ok(EntitiesPage { entities, total, next_cursor })
    }
}
