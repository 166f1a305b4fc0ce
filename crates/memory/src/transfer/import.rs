//! Loading an export into a store, empty or in use, through the engine's write path (batches of
//! `write_tx`: one change sequence each, the indexes brought up to date and the batch searchable
//! before the next). Idempotent: what the store already holds is left as it is, so a second
//! import of the same export adds nothing.
//!
//! An item (a document, a file, a note, a learning: a chunk `origin`) the store already holds in
//! another version keeps the store's version: the export's chunks of it are skipped and reported
//! as conflicts. Everything else keyed (sources, notes, items, files, links…) is added only when
//! its key is new. Entities are recomputed from the chunks' text (an entity new to the store takes
//! its exported display name); audit rows are added unless an identical row is there. The import writes no audit row of its own: the caller records one
//! for the whole run.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, Transaction, params_from_iter};
use serde::Serialize;
use serde_json::{Map, Value};

use super::{FORMAT, FORMAT_VERSION, Load, MANIFEST, TABLES, Table};
use crate::entities;
use crate::error::{MemoryError, ResultExt};
use crate::store::{self, NewChunk};
use crate::types::SourceKind;
use crate::util::now_ms;
use crate::write_api::write_tx;
use crate::{Inner, MemoryEngine};

/// What the store held when the import began.
struct Before {
    /// Items (chunk origins): the export's version of one of these is a conflict.
    origins: HashSet<String>,
    /// Entities: their display names stay the store's.
    entities: HashSet<String>,
}

/// Records per write transaction.
const BATCH: usize = 500;
/// Conflicting items named in the summary (the count has them all).
const CONFLICTS_NAMED: usize = 20;

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportSummary {
    pub format_version: u64,
    /// Records read per file.
    pub read: BTreeMap<String, u64>,
    /// Records added per file; the rest were in the store already. For entities, which are
    /// counted again from the chunks, the display names taken from the file.
    pub added: BTreeMap<String, u64>,
    /// Items the store holds in another version, kept as they are (their exported chunks and
    /// tags skipped): how many, and the first few ids.
    pub conflicts: u64,
    pub conflicts_named: Vec<String>,
    pub duration_ms: u64,
}

impl ImportSummary {
    /// Records added in all.
    pub fn added_total(&self) -> u64 {
        self.added.values().sum()
    }
}

impl MemoryEngine {
    /// Loads the export in `dir` (written by [`MemoryEngine::export`]).
    pub fn import(&self, dir: &Path) -> Result<ImportSummary, MemoryError> {
        let started = Instant::now();
        let (version, expected, with_contexts) = read_manifest(dir)?;
        // Check every file against the manifest before anything is written.
        for t in TABLES {
            let path = dir.join(t.file);
            let n = count_lines(&path)?;
            let want = expected.get(t.file).copied().unwrap_or(0);
            if n != want {
                return Err(MemoryError::InvalidParams(format!(
                    "{} holds {n} records but the manifest says {want}: the export is incomplete or was edited; \
                     export again",
                    path.display()
                )));
            }
        }
        let before = {
            let conn = self.inner.read_conn()?;
            let set = |sql: &str| -> Result<HashSet<String>, MemoryError> {
                Ok(conn.prepare(sql)?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?)
            };
            Before {
                origins: set("SELECT DISTINCT origin FROM chunks")?,
                entities: set("SELECT id FROM entities WHERE chunk_count > 0")?,
            }
        };
        let mut summary = ImportSummary { format_version: version, ..ImportSummary::default() };
        let mut found = Found::default();
        for t in TABLES {
            if matches!(t.load, Load::Entities) {
                // The imported chunks' text is read for entities in the background: let a short
                // backlog finish, so that the names below meet the entities they name.
                entities::settle(&self.inner)?;
            }
            let (read, added) = load_table(&self.inner, dir, t, &before, &mut found)?;
            summary.read.insert(t.file.to_string(), read);
            summary.added.insert(t.file.to_string(), added);
        }
        let Found { conflicts, chats } = found;
        if !with_contexts && !chats.is_empty() {
            let chats: Vec<String> = chats.into_iter().collect();
            crate::sync::contexts_after_import(&self.inner, &chats)?;
        }
        let mut named: Vec<String> = conflicts.into_iter().collect();
        named.sort();
        summary.conflicts = named.len() as u64;
        named.truncate(CONFLICTS_NAMED);
        summary.conflicts_named = named;
        summary.duration_ms = started.elapsed().as_millis() as u64;
        Ok(summary)
    }
}

fn not_an_export(dir: &Path, why: &str) -> MemoryError {
    MemoryError::InvalidParams(format!(
        "{} is not an export this build can import ({why}); make one with `openhumand-mcp export <dir>`",
        dir.display()
    ))
}

/// The manifest's format version, record count per file, and whether its lone chat messages
/// carry their context.
fn read_manifest(dir: &Path) -> Result<(u64, BTreeMap<String, u64>, bool), MemoryError> {
    let path = dir.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(not_an_export(dir, "it has no manifest.json, so the export is missing or did not finish"));
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let m: Value = serde_json::from_str(&text).map_err(|_| not_an_export(dir, "its manifest.json is not JSON"))?;
    if m["format"] != FORMAT {
        return Err(not_an_export(dir, "its manifest.json names another format"));
    }
    let version = m["version"].as_u64().ok_or_else(|| not_an_export(dir, "its manifest.json has no version"))?;
    if version > FORMAT_VERSION {
        return Err(MemoryError::InvalidParams(format!(
            "{} was made by a newer openhumand-mcp (export format {version}; this build reads up to \
             {FORMAT_VERSION}); upgrade openhumand-mcp to import it",
            dir.display()
        )));
    }
    let mut counts = BTreeMap::new();
    for t in TABLES {
        let n = m["files"][t.file]["records"]
            .as_u64()
            .ok_or_else(|| not_an_export(dir, &format!("its manifest.json does not list {}", t.file)))?;
        counts.insert(t.file.to_string(), n);
    }
    Ok((version, counts, m["chat_context"] == true))
}

fn count_lines(path: &Path) -> Result<u64, MemoryError> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut n = 0;
    for line in BufReader::new(file).lines() {
        if !line.with_context(|| format!("reading {}", path.display()))?.trim().is_empty() {
            n += 1;
        }
    }
    Ok(n)
}

/// Reads one file in batches and loads each batch in one write; returns (read, added).
fn load_table(
    inner: &Arc<Inner>,
    dir: &Path,
    t: &Table,
    before: &Before,
    found: &mut Found,
) -> Result<(u64, u64), MemoryError> {
    let path = dir.join(t.file);
    let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let (mut read, mut added) = (0, 0);
    let mut batch: Vec<(usize, Map<String, Value>)> = Vec::with_capacity(BATCH);
    let mut lines = BufReader::new(file).lines().enumerate();
    loop {
        let next = lines.next();
        let done = next.is_none();
        if let Some((i, line)) = next {
            let line = line.with_context(|| format!("reading {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let rec = match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(m)) => m,
                _ => return Err(bad_line(&path, i + 1, "not a JSON object")),
            };
            batch.push((i + 1, rec));
            read += 1;
            if batch.len() < BATCH {
                continue;
            }
        }
        if !batch.is_empty() {
            let records = std::mem::take(&mut batch);
            added += write_tx(inner, None, |tx, seq, _now| {
                let n = load_batch(tx, seq, t, &path, &records, before, found)?;
                Ok((n, String::new()))
            })?;
        }
        batch.clear();
        if done {
            return Ok((read, added));
        }
    }
}

/// What loading meets on the way: the items in conflict with the store's, and the chats
/// (source ids) chunks were added to.
#[derive(Default)]
struct Found {
    conflicts: HashSet<String>,
    chats: HashSet<String>,
}

fn bad_line(path: &Path, line: usize, why: &str) -> MemoryError {
    MemoryError::InvalidParams(format!(
        "line {line} of {} is {why}; the export is damaged, export again",
        path.display()
    ))
}

fn load_batch(
    tx: &Transaction<'_>,
    seq: i64,
    t: &Table,
    path: &Path,
    records: &[(usize, Map<String, Value>)],
    before: &Before,
    found: &mut Found,
) -> Result<u64, MemoryError> {
    let mut added = 0;
    match t.load {
        Load::Chunks => {
            for (line, rec) in records {
                let id = text(rec, "id").ok_or_else(|| bad_line(path, *line, "a chunk without an id"))?;
                let exists = tx.prepare_cached("SELECT 1 FROM chunks WHERE id = ?1")?.exists([id])?;
                let chunk = new_chunk(rec).ok_or_else(|| bad_line(path, *line, "not a chunk record"))?;
                if exists {
                    continue;
                }
                if before.origins.contains(&chunk.origin) {
                    found.conflicts.insert(chunk.origin.clone());
                    continue;
                }
                if chunk.kind == SourceKind::Chat && !found.chats.contains(&chunk.source_id) {
                    found.chats.insert(chunk.source_id.clone());
                }
                let created = rec.get("created_at_ms").and_then(Value::as_i64).unwrap_or(chunk.timestamp_ms);
                added += store::insert_chunks_as(tx, seq, std::iter::once((&chunk, id.to_string(), created)), now_ms())?
                    .len() as u64;
            }
        }
        Load::Tags => {
            let mut retag: Vec<i64> = Vec::new();
            for (line, rec) in records {
                let (Some(chunk), Some(tag)) = (text(rec, "chunk_id"), text(rec, "tag")) else {
                    return Err(bad_line(path, *line, "not a tag record"));
                };
                let key = text(rec, "origin_key").unwrap_or("");
                let rowid: Option<i64> = tx
                    .prepare_cached("SELECT rowid FROM chunks WHERE id = ?1")?
                    .query_row([chunk], |r| r.get(0))
                    .optional()?;
                // A chunk skipped as a conflict takes its tags with it.
                let Some(rowid) = rowid else { continue };
                let n = tx
                    .prepare_cached(
                        "INSERT OR IGNORE INTO chunk_tags (chunk_rowid, tag, origin_key) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(rusqlite::params![rowid, tag, key])? as u64;
                if n > 0 && key.is_empty() && retag.last() != Some(&rowid) {
                    retag.push(rowid);
                }
                added += n;
            }
            // A chunk's own tags are topics: its entities are extracted again with them.
            retag.sort_unstable();
            retag.dedup();
            entities::reindex(tx, &retag, now_ms())?;
        }
        Load::Plain | Load::Audit => {
            let cols = t.columns.join(", ");
            let marks: Vec<String> = (1..=t.columns.len()).map(|i| format!("?{i}")).collect();
            let sql = if t.load == Load::Plain {
                format!("INSERT OR IGNORE INTO {} ({cols}) VALUES ({})", t.table, marks.join(", "))
            } else {
                let same: Vec<String> = t.columns.iter().zip(&marks).map(|(c, m)| format!("{c} IS {m}")).collect();
                format!(
                    "INSERT INTO {table} ({cols}) SELECT {} WHERE NOT EXISTS (SELECT 1 FROM {table} WHERE {})",
                    marks.join(", "),
                    same.join(" AND "),
                    table = t.table
                )
            };
            let mut stmt = tx.prepare_cached(&sql)?;
            for (line, rec) in records {
                let values: Vec<SqlValue> =
                    t.columns.iter().map(|c| sql_value(rec.get(*c), t.json.contains(c))).collect();
                added += stmt
                    .execute(params_from_iter(values))
                    .map_err(|e| bad_line(path, *line, &format!("not a record of {} ({e})", t.table)))?
                    as u64;
            }
        }
        Load::Entities => {
            for (line, rec) in records {
                let (Some(id), Some(name)) = (text(rec, "id"), text(rec, "display_name")) else {
                    return Err(bad_line(path, *line, "not an entity record"));
                };
                if before.entities.contains(id) {
                    continue;
                }
                let renamed = tx
                    .prepare_cached("UPDATE entities SET display_name = ?2 WHERE id = ?1 AND display_name != ?2")?
                    .execute([id, name])?;
                // An entity whose chunks' text is not read yet: the name waits for it (a row
                // without chunks is listed nowhere, and extraction keeps a stored name).
                let kind = text(rec, "kind").unwrap_or("topic");
                tx.prepare_cached(
                    "INSERT OR IGNORE INTO entities (id, kind, display_name, mention_count, chunk_count)
                     VALUES (?1, ?2, ?3, 0, 0)",
                )?
                .execute([id, kind, name])?;
                added += renamed as u64;
            }
        }
    }
    Ok(added)
}

fn text<'a>(rec: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    rec.get(key).and_then(Value::as_str)
}

/// A chunk record as the engine's insert takes it (its own tags come from `tags.jsonl`).
fn new_chunk(rec: &Map<String, Value>) -> Option<NewChunk> {
    let s = |k: &str| text(rec, k).map(str::to_string);
    Some(NewChunk {
        kind: SourceKind::parse(text(rec, "source_kind")?)?,
        source_id: s("source_id")?,
        source_ref: s("source_ref")?,
        origin: s("origin")?,
        owner: s("owner"),
        provenance: s("provenance")?,
        timestamp_ms: rec.get("timestamp_ms")?.as_i64()?,
        seq: rec.get("seq_in_source")?.as_i64()?,
        title: s("title"),
        content: s("content")?,
        metadata: match rec.get("metadata") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        },
        tags: Vec::new(),
        // Exports before projects existed have none: the chunk's metadata may still name one.
        project: s("project"),
    })
}

/// A JSON value as SQLite stores it; a JSON column gets its JSON text back.
fn sql_value(v: Option<&Value>, is_json: bool) -> SqlValue {
    match v {
        None | Some(Value::Null) => SqlValue::Null,
        Some(v) if is_json => SqlValue::Text(v.to_string()),
        Some(Value::Bool(b)) => SqlValue::Integer(i64::from(*b)),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or_default()),
        },
        Some(Value::String(s)) => SqlValue::Text(s.clone()),
        Some(other) => SqlValue::Text(other.to_string()),
    }
}
