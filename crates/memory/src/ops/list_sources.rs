//! `tree.list_sources` (`openhuman.memory_tree_list_sources`): the sources in memory with chunk
//! counts and last activity, most recent first (source id breaks ties). A mail thread is named
//! "Subject — Name", the name of its first participant who is not the user (without a hint
//! about the user: the thread's first sender).

use openhuman_schema::params;
use rusqlite::OptionalExtension;
use serde::Serialize;
use serde_json::Value;

use super::{CURSOR_DOC, Operation};
use crate::cursor::{decode, fingerprint, keyset_key};
use crate::{MemoryEngine, MemoryError, page};

/// Page size of `tree.list_sources`: by default and at most.
const SOURCES_PAGE: i64 = 200;

params! {
    /// Where the page of sources starts, and who the user is.
    pub struct ListSourcesParams {
        #[serde(skip_serializing_if = "Option::is_none")]
        user_email_hint: Option<String> = string(
            "Your own e-mail address, so mail threads are named after the other party."
        ).max_chars(320),
        limit: usize = int("Page size, most recent first (default 200).", 1, SOURCES_PAGE).default_int(SOURCES_PAGE),
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String> = string(CURSOR_DOC).max_chars(1024),
    }
}

impl ListSourcesParams {
    /// The `limit` most recently active sources.
    pub fn recent(limit: usize) -> ListSourcesParams {
        ListSourcesParams { limit, ..ListSourcesParams::default() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourcesPage {
    pub sources: Vec<SourceRow>,
    pub total: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceRow {
    pub source_id: String,
    pub source_kind: String,
    pub display_name: String,
    pub chunk_count: i64,
    pub last_activity_ms: i64,
    /// A mail thread's subject (mail only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<Value>,
    /// A mail thread's participants as ingest recorded them (mail only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub participants: Option<Value>,
    /// The file a document came from, so it can be read again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// When the file was last read (file-backed sources only; null when never recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synced_at_ms: Option<Option<i64>>,
}

pub struct ListSources;

impl Operation for ListSources {
    const METHOD: &'static str = "openhuman.memory_tree_list_sources";
    type Params = ListSourcesParams;
    type Output = SourcesPage;
    fn run(engine: &MemoryEngine, p: ListSourcesParams) -> Result<SourcesPage, MemoryError> {
        engine.list_sources(p)
    }
}

impl MemoryEngine {
    /// A page of sources, most recently active first.
    pub fn list_sources(&self, p: ListSourcesParams) -> Result<SourcesPage, MemoryError> {
        let hint = p.user_email_hint.as_deref().map(|h| h.trim().to_ascii_lowercase());
        let limit = p.limit;
        let fp = fingerprint(&["sources"]);
        let after = decode(&p.cursor, &fp)?.map(|c| keyset_key(&c)).transpose()?;
        let (after_t, after_id) = after.map_or((None, None), |(t, id)| (Some(t), Some(id)));
        let conn = self.inner.read_conn()?;
        let total: i64 = conn
            .prepare_cached(
                "SELECT count(*) FROM sources s WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.source_id = s.source_id)",
            )?
            .query_row([], |r| r.get(0))?;
        let mut rows: Vec<(SourceRow, i64, String)> = conn
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
                let (mut subject, mut participants) = (None, None);
                if kind == "email" {
                    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    let who = match hint.as_deref() {
                        Some(h) => other_party(&meta, Some(h)),
                        None => Some(text("started_by")).filter(|s| !s.is_empty()).or_else(|| other_party(&meta, None)),
                    };
                    if let Some(name) = who {
                        display = crate::util::mail_title(&text("subject"), &name);
                    }
                    subject = Some(meta.get("subject").cloned().unwrap_or(Value::Null));
                    participants = Some(meta.get("participants").cloned().unwrap_or(Value::Array(Vec::new())));
                }
                let (id, last) = (r.get::<_, String>(0)?, r.get::<_, i64>(5)?);
                let row = SourceRow {
                    source_id: id.clone(),
                    source_kind: kind,
                    display_name: display,
                    chunk_count: r.get(4)?,
                    last_activity_ms: last,
                    subject,
                    participants,
                    file_path: meta.get("file_path").and_then(Value::as_str).map(str::to_string),
                    synced_at_ms: None,
                };
                Ok((row, last, id))
            })?
            .collect::<rusqlite::Result<_>>()?;
        // When each file-backed source was last read from its file.
        let mut synced = conn.prepare_cached("SELECT ingested_at_ms FROM files WHERE path = ?1")?;
        for (row, _, _) in rows.iter_mut() {
            if let Some(path) = &row.file_path {
                row.synced_at_ms = Some(synced.query_row([path], |r| r.get(0)).optional()?);
            }
        }
        let (sources, next_cursor) = page::keyed(rows, limit, &fp);
        Ok(SourcesPage { sources, total, next_cursor })
    }
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
