//! Stored entities: what `extract` finds in a chunk becomes rows of `entities` and
//! `chunk_entities`, its senders and recipients rows of `people` and `chunk_senders`, and
//! what links one person's names and addresses becomes `entity_aliases` (a merge: the alias
//! counts as the entity it points to, with the reason). `split` undoes a merge and keeps it
//! undone (`entity_splits`). `begin_reextract` and `start_reextract` run the extractor again
//! over every chunk, in the background, when the stored entities were made by an older one.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value};

use super::people::{self, ChunkView, Party};
use super::{Entity, scan};
use crate::error::MemoryError;
use crate::store::rarray;
use crate::types::SourceKind;
use crate::util::{now_ms, slug};
use crate::{Inner, lock};

/// Bumped whenever extraction changes what it finds; a store made by an older extractor is
/// extracted again when it is opened. 0 was the phrase-based extractor.
pub(crate) const EXTRACTOR_VERSION: i64 = 1;

/// A sender with at least this many messages…
const TEMPLATED_MIN_MESSAGES: i64 = 200;
/// …of which fewer than one in this many open differently sends templates: a bot. (People
/// repeat themselves too — a maintainer's changelog entries often open alike — so the bar is
/// high: at 200 messages, at most 9 different openings.)
const TEMPLATED_RATIO: i64 = 20;
/// Openings kept per sender: past this many it is not templated.
const OPENINGS_KEPT: i64 = 64;

fn kind_of(id: &str) -> &'static str {
    if id.starts_with("bot:") { "bot" } else { "person" }
}

/// The entity `id` counts as (itself when it was never merged).
fn resolve(conn: &Connection, id: &str) -> rusqlite::Result<String> {
    Ok(conn
        .prepare_cached("SELECT entity_id FROM entity_aliases WHERE alias = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
        .unwrap_or_else(|| id.to_string()))
}

fn is_split(conn: &Connection, alias: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM entity_splits WHERE alias = ?1")?.exists([alias])
}

fn link(conn: &Connection, alias: &str, into: &str, reason: &str, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO entity_aliases (alias, entity_id, reason, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![alias, into, reason, now])?;
    Ok(())
}

/// Makes `from` count as `into` from now on, moving its chunks, counts and sender statistics.
fn merge(conn: &Connection, from: &str, into: &str, reason: &str, now: i64) -> rusqlite::Result<()> {
    link(conn, from, into, reason, now)?;
    conn.prepare_cached("UPDATE entity_aliases SET entity_id = ?2 WHERE entity_id = ?1")?.execute([from, into])?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO entities (id, kind, display_name, mention_count, chunk_count)
         SELECT ?2, ?3, display_name, 0, 0 FROM entities WHERE id = ?1",
    )?
    .execute(params![from, into, kind_of(into)])?;
    move_chunk_rows(conn, "chunk_entities", &["mentions"], from, into)?;
    conn.prepare_cached(
        "UPDATE entities SET
            mention_count = (SELECT coalesce(sum(mentions), 0) FROM chunk_entities WHERE entity_id = ?1),
            chunk_count = (SELECT count(*) FROM chunk_entities WHERE entity_id = ?1)
         WHERE id = ?1",
    )?
    .execute([into])?;
    conn.prepare_cached("DELETE FROM entities WHERE id = ?1")?.execute([from])?;
    move_chunk_rows(conn, "chunk_senders", &["sent", "received"], from, into)?;
    conn.prepare_cached("INSERT OR IGNORE INTO people (entity_id, sent, received) VALUES (?1, 0, 0)")?
        .execute([into])?;
    conn.prepare_cached(
        "UPDATE people SET sent = (SELECT coalesce(sum(sent), 0) FROM chunk_senders WHERE entity_id = ?1),
            received = (SELECT coalesce(sum(received), 0) FROM chunk_senders WHERE entity_id = ?1)
         WHERE entity_id = ?1",
    )?
    .execute([into])?;
    conn.prepare_cached("DELETE FROM people WHERE entity_id = ?1")?.execute([from])?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO people_openings (entity_id, opening) SELECT ?2, opening FROM people_openings WHERE entity_id = ?1",
    )?
    .execute([from, into])?;
    conn.prepare_cached("DELETE FROM people_openings WHERE entity_id = ?1")?.execute([from])?;
    tracing::debug!(from, into, reason, "entities merged");
    Ok(())
}

/// Moves the per-chunk rows of `table` (`chunk_entities` or `chunk_senders`) from entity
/// `from` to `into`, adding the `counts` columns where a chunk has both.
fn move_chunk_rows(conn: &Connection, table: &str, counts: &[&str], from: &str, into: &str) -> rusqlite::Result<()> {
    let sums: Vec<String> = counts.iter().map(|c| format!("{c} = t.{c} + f.{c}")).collect();
    conn.prepare_cached(&format!(
        "UPDATE {table} AS t SET {} FROM {table} AS f
         WHERE f.entity_id = ?1 AND t.entity_id = ?2 AND t.chunk_rowid = f.chunk_rowid",
        sums.join(", ")
    ))?
    .execute([from, into])?;
    conn.prepare_cached(&format!(
        "DELETE FROM {table} WHERE entity_id = ?1 AND chunk_rowid IN (SELECT chunk_rowid FROM {table} WHERE entity_id = ?2)"
    ))?
    .execute([from, into])?;
    conn.prepare_cached(&format!("UPDATE {table} SET entity_id = ?2 WHERE entity_id = ?1"))?.execute([from, into])?;
    Ok(())
}

/// The entity a header or chat sender is, with its display name. Two names seen with one
/// address are one person (the name seen first keeps the id; a person known only by the
/// address takes the name); merges a user split apart are not made again.
fn party_entity(conn: &Connection, p: &Party, now: i64) -> rusqlite::Result<Option<(String, String)>> {
    let (key, display) = match (&p.name, &p.address) {
        (n, _) if !n.is_empty() && !n.eq_ignore_ascii_case("unknown") => (slug(n), n.clone()),
        (_, Some(a)) => (slug(a), a.clone()),
        _ => return Ok(None),
    };
    if key.is_empty() {
        return Ok(None);
    }
    if people::is_bot(&p.name, p.address.as_deref()) {
        return Ok(Some((format!("bot:{key}"), display)));
    }
    let base = format!("person:{key}");
    let mut id = resolve(conn, &base)?;
    if let Some(addr) = &p.address {
        let alias = format!("email:{addr}");
        let known = conn
            .prepare_cached("SELECT entity_id FROM entity_aliases WHERE alias = ?1")?
            .query_row([&alias], |r| r.get::<_, String>(0))
            .optional()?;
        let address_only = format!("person:{}", slug(addr));
        match known {
            None if !is_split(conn, &alias)? => {
                link(conn, &alias, &id, &format!("{display} <{addr}> in a header"), now)?
            }
            Some(known) if known != id => {
                if base == address_only {
                    id = known;
                } else if !id.starts_with("bot:") && !known.starts_with("bot:") {
                    let (from, into) = if known == address_only { (known, id.clone()) } else { (id.clone(), known) };
                    if !is_split(conn, &from)? {
                        merge(conn, &from, &into, &format!("both wrote as {addr}"), now)?;
                        id = into;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Some((id, display)))
}

/// Makes the senders and recipients of `chunks` known before any of their text is read, so that
/// a name mentioned before the message its person wrote still counts (`index_chunk` counts a
/// name from the text when its person is known).
pub(crate) fn register_parties<'a>(
    conn: &Connection,
    chunks: impl Iterator<Item = ChunkView<'a>>,
    now: i64,
) -> rusqlite::Result<()> {
    for c in chunks {
        for p in people::read(&c).0 {
            if let Some((id, _)) = party_entity(conn, &p, now)? {
                conn.prepare_cached("INSERT OR IGNORE INTO people (entity_id, sent, received) VALUES (?1, 0, 0)")?
                    .execute([id])?;
            }
        }
    }
    Ok(())
}

/// Extracts the entities of one stored chunk (`rowid`) and writes them.
pub(crate) fn index_chunk(conn: &Connection, rowid: i64, c: &ChunkView<'_>, now: i64) -> rusqlite::Result<()> {
    let (parties, prose) = people::read(c);
    let facts = scan(prose.into_iter());
    let mut found: Vec<Entity> = Vec::new();
    let mut add = |id: String, kind: &'static str, display: &str, n: u32| match found.iter_mut().find(|e| e.id == id) {
        Some(e) => e.mentions += n,
        None => found.push(Entity { id, kind, display: display.to_string(), mentions: n }),
    };
    let mut senders: HashMap<String, (u32, u32, Vec<u64>)> = HashMap::new();
    for p in &parties {
        if let Some(addr) = &p.address {
            add(format!("email:{addr}"), "email", addr, p.sent + p.received);
        }
        if let Some((id, display)) = party_entity(conn, p, now)? {
            add(id.clone(), kind_of(&id), &display, p.sent + p.received);
            let s = senders.entry(id).or_default();
            s.0 += p.sent;
            s.1 += p.received;
            s.2.extend(&p.openings);
        }
    }
    for e in facts.entities {
        add(e.id, e.kind, &e.display, e.mentions);
    }
    for n in facts.names {
        let variants = std::iter::once((n.id, n.display, n.given_name)).chain(n.alt);
        for (id, display, given_name) in variants {
            let id = resolve(conn, &id)?;
            let known = conn.prepare_cached("SELECT 1 FROM people WHERE entity_id = ?1")?.exists([&id])?;
            if known || n.titled || given_name {
                add(id.clone(), kind_of(&id), &display, n.mentions);
                break;
            }
        }
    }
    for (term, display, n) in facts.terms {
        add(format!("topic:{}", slug(&term)), "topic", &display, n);
    }
    // A chat channel names what its conversations are about; a WhatsApp chat is named after
    // a person and an assistant conversation after its first question, so those are not.
    let platform = c.metadata.get("platform").and_then(Value::as_str);
    if c.kind == SourceKind::Chat
        && !matches!(platform, Some("whatsapp" | "chatgpt" | "claude"))
        && let Some(ch) = c.metadata.get("channel").and_then(Value::as_str).filter(|ch| !slug(ch).is_empty())
    {
        add(format!("topic:{}", slug(ch)), "topic", ch, 1);
    }
    for t in c.tags {
        let s = slug(t);
        if !s.is_empty() {
            add(format!("topic:{s}"), "topic", t, 1);
        }
    }
    let mut ent = conn.prepare_cached(
        "INSERT INTO entities (id, kind, display_name, mention_count, chunk_count) VALUES (?1, ?2, ?3, ?4, 1)
         ON CONFLICT(id) DO UPDATE SET mention_count = mention_count + excluded.mention_count, chunk_count = chunk_count + 1",
    )?;
    let mut chunk_ent = conn.prepare_cached(
        "INSERT OR IGNORE INTO chunk_entities (chunk_rowid, entity_id, mentions) VALUES (?1, ?2, ?3)",
    )?;
    for e in &found {
        ent.execute(params![e.id, e.kind, e.display, e.mentions])?;
        chunk_ent.execute(params![rowid, e.id, e.mentions])?;
    }
    for (id, (sent, received, openings)) in senders {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO chunk_senders (chunk_rowid, entity_id, sent, received) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![rowid, id, sent, received])?;
        conn.prepare_cached(
            "INSERT INTO people (entity_id, sent, received) VALUES (?1, ?2, ?3)
             ON CONFLICT(entity_id) DO UPDATE SET sent = sent + excluded.sent, received = received + excluded.received",
        )?
        .execute(params![id, sent, received])?;
        if sent > 0 && id.starts_with("person:") {
            note_openings(conn, &id, &openings, now)?;
        }
    }
    Ok(())
}

/// Records a person's message openings and, once they show a template sender, makes the
/// person a bot (`person:x` → `bot:x`, a merge that `split` can undo).
fn note_openings(conn: &Connection, id: &str, openings: &[u64], now: i64) -> rusqlite::Result<()> {
    let kept: i64 = conn
        .prepare_cached("SELECT count(*) FROM people_openings WHERE entity_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    if kept < OPENINGS_KEPT {
        let mut ins =
            conn.prepare_cached("INSERT OR IGNORE INTO people_openings (entity_id, opening) VALUES (?1, ?2)")?;
        for o in openings.iter().take((OPENINGS_KEPT - kept) as usize) {
            ins.execute(params![id, *o as i64])?;
        }
    }
    let sent: i64 =
        conn.prepare_cached("SELECT sent FROM people WHERE entity_id = ?1")?.query_row([id], |r| r.get(0))?;
    let distinct: i64 = conn
        .prepare_cached("SELECT count(*) FROM people_openings WHERE entity_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    if sent >= TEMPLATED_MIN_MESSAGES
        && distinct < OPENINGS_KEPT
        && distinct * TEMPLATED_RATIO < sent
        && !is_split(conn, id)?
    {
        let bot = format!("bot:{}", &id["person:".len()..]);
        let reason = format!("{sent} messages with {distinct} different openings");
        merge(conn, id, &bot, &reason, now)?;
    }
    Ok(())
}

/// Takes the given chunks' entities and sender counts back out (before the chunks are
/// deleted or extracted again). Returns the entities left without any chunk.
pub(crate) fn unindex_chunks(conn: &Connection, rowids: &[i64]) -> rusqlite::Result<Vec<String>> {
    if rowids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = rarray(rowids);
    let entities_of = |table: &str| -> rusqlite::Result<Vec<String>> {
        conn.prepare_cached(&format!("SELECT DISTINCT entity_id FROM {table} WHERE chunk_rowid IN rarray(?1)"))?
            .query_map([&ids], |r| r.get(0))?
            .collect()
    };
    let ents = entities_of("chunk_entities")?;
    let people = entities_of("chunk_senders")?;
    conn.prepare_cached(
        "UPDATE entities SET mention_count = mention_count - d.m, chunk_count = chunk_count - d.c
         FROM (SELECT entity_id, SUM(mentions) AS m, COUNT(*) AS c FROM chunk_entities
               WHERE chunk_rowid IN rarray(?1) GROUP BY entity_id) AS d
         WHERE entities.id = d.entity_id",
    )?
    .execute([&ids])?;
    let gone: Vec<String> = conn
        .prepare_cached("DELETE FROM entities WHERE id IN rarray(?1) AND chunk_count <= 0 RETURNING id")?
        .query_map([rarray(&ents)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    conn.prepare_cached("DELETE FROM chunk_entities WHERE chunk_rowid IN rarray(?1)")?.execute([&ids])?;
    conn.prepare_cached(
        "UPDATE people SET sent = sent - d.s, received = received - d.r
         FROM (SELECT entity_id, SUM(sent) AS s, SUM(received) AS r FROM chunk_senders
               WHERE chunk_rowid IN rarray(?1) GROUP BY entity_id) AS d
         WHERE people.entity_id = d.entity_id",
    )?
    .execute([&ids])?;
    let people = rarray(&people);
    conn.prepare_cached(
        "DELETE FROM people_openings WHERE entity_id IN
            (SELECT entity_id FROM people WHERE entity_id IN rarray(?1) AND sent <= 0 AND received <= 0)",
    )?
    .execute([&people])?;
    conn.prepare_cached("DELETE FROM people WHERE entity_id IN rarray(?1) AND sent <= 0 AND received <= 0")?
        .execute([&people])?;
    conn.prepare_cached("DELETE FROM chunk_senders WHERE chunk_rowid IN rarray(?1)")?.execute([&ids])?;
    Ok(gone)
}

/// Forgets the merges and address links of entities whose last chunk was deleted: the names
/// and addresses of forgotten mail stay nowhere. (Splits a user made are kept: they are
/// decisions, and only name what the user named.)
pub(crate) fn drop_aliases(conn: &Connection, gone: &[String]) -> rusqlite::Result<()> {
    if !gone.is_empty() {
        conn.prepare_cached("DELETE FROM entity_aliases WHERE entity_id IN rarray(?1) OR alias IN rarray(?1)")?
            .execute([rarray(gone)])?;
    }
    Ok(())
}

/// A stored chunk as extraction needs it.
struct Stored {
    rowid: i64,
    kind: SourceKind,
    title: Option<String>,
    content: String,
    metadata: Map<String, Value>,
    tags: Vec<String>,
}

impl Stored {
    fn view(&self) -> ChunkView<'_> {
        ChunkView {
            kind: self.kind,
            title: self.title.as_deref(),
            content: &self.content,
            metadata: &self.metadata,
            tags: &self.tags,
        }
    }
}

fn load(conn: &Connection, rowids: &[i64]) -> rusqlite::Result<Vec<Stored>> {
    let mut rows: Vec<Stored> = conn
        .prepare_cached(
            "SELECT rowid, source_kind, title, content, metadata FROM chunks WHERE rowid IN rarray(?1) ORDER BY rowid",
        )?
        .query_map([rarray(rowids)], |r| {
            let metadata = match serde_json::from_str::<Value>(&r.get::<_, String>(4)?) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            };
            Ok(Stored {
                rowid: r.get(0)?,
                kind: SourceKind::parse(&r.get::<_, String>(1)?).unwrap_or(SourceKind::Document),
                title: r.get(2)?,
                content: r.get(3)?,
                metadata,
                tags: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut tags = conn.prepare_cached("SELECT tag FROM chunk_tags WHERE chunk_rowid = ?1 AND origin_key = ''")?;
    for s in &mut rows {
        s.tags = tags.query_map([s.rowid], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    }
    Ok(rows)
}

/// Extracts the given stored chunks again (their own tags are topics, so an import that adds
/// them after the chunk calls this).
pub(crate) fn reindex(conn: &Connection, rowids: &[i64], now: i64) -> rusqlite::Result<()> {
    unindex_chunks(conn, rowids)?;
    let stored = load(conn, rowids)?;
    register_parties(conn, stored.iter().map(Stored::view), now)?;
    for s in &stored {
        index_chunk(conn, s.rowid, &s.view(), now)?;
    }
    Ok(())
}

/// Undoes the merge of `alias` (a `person:` or `bot:` id, or an `email:` address linked to a
/// person): it counts as itself again, its chunks are extracted again, and the merge is not
/// made again. Returns the entity it had been merged into, or None when it was not merged.
pub(crate) fn split(conn: &Connection, alias: &str) -> rusqlite::Result<Option<String>> {
    let Some(into) = conn
        .prepare_cached("SELECT entity_id FROM entity_aliases WHERE alias = ?1")?
        .query_row([alias], |r| r.get::<_, String>(0))
        .optional()?
    else {
        return Ok(None);
    };
    let now = now_ms();
    conn.prepare_cached("DELETE FROM entity_aliases WHERE alias = ?1")?.execute([alias])?;
    conn.prepare_cached("INSERT OR REPLACE INTO entity_splits (alias, entity_id, split_at_ms) VALUES (?1, ?2, ?3)")?
        .execute(params![alias, into, now])?;
    let rowids: Vec<i64> = conn
        .prepare_cached(
            "SELECT chunk_rowid FROM chunk_entities WHERE entity_id = ?1
             UNION SELECT chunk_rowid FROM chunk_senders WHERE entity_id = ?1",
        )?
        .query_map([&into], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    reindex(conn, &rowids, now)?;
    Ok(Some(into))
}

/// Starts extracting every chunk again when the stored entities were made by another
/// extractor version: entities, people and automatic merges are wiped here, at open, and
/// rebuilt from the chunks written until now by a background thread (`start_reextract`), so a
/// large store opens at once and its people fill in within minutes. Merges users split apart
/// are kept and honoured. Chunks written meanwhile are extracted as they are written.
pub(crate) fn begin_reextract(conn: &mut Connection) -> Result<(), MemoryError> {
    if stored_version(conn)? == Some(EXTRACTOR_VERSION) {
        return Ok(());
    }
    // An extraction to this version that a closed store left half done goes on where it was.
    let resuming: Option<i64> =
        conn.query_row("SELECT value FROM meta WHERE name = 'entities_reextract_to'", [], |r| r.get(0)).optional()?;
    if resuming == Some(EXTRACTOR_VERSION) {
        return Ok(());
    }
    let tx = conn.transaction()?;
    tx.execute_batch(
        "DELETE FROM entities; DELETE FROM chunk_entities; DELETE FROM chunk_senders; DELETE FROM people;
         DELETE FROM people_openings; DELETE FROM entity_aliases;",
    )?;
    let upto: i64 = tx.query_row("SELECT coalesce(max(rowid), 0) FROM chunks", [], |r| r.get(0))?;
    set_meta(&tx, "entities_reextract_upto", upto)?;
    // Where the extraction is: pass 0 (senders and recipients) or 1 (everything), and the last
    // rowid done.
    set_meta(&tx, "entities_reextract_pass", 0)?;
    set_meta(&tx, "entities_reextract_after", 0)?;
    set_meta(&tx, "entities_reextract_to", EXTRACTOR_VERSION)?;
    if upto == 0 {
        finish_reextract(&tx)?;
    }
    tx.commit()?;
    Ok(())
}

fn stored_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row("SELECT value FROM meta WHERE name = 'entities_version'", [], |r| r.get(0)).optional()
}

fn meta(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    Ok(conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| r.get(0)).optional()?.unwrap_or(0))
}

/// Records the extraction as done: the version, and no progress rows.
fn finish_reextract(conn: &Connection) -> rusqlite::Result<()> {
    set_meta(conn, "entities_version", EXTRACTOR_VERSION)?;
    conn.execute("DELETE FROM meta WHERE name LIKE 'entities_reextract_%'", [])?;
    Ok(())
}

fn set_meta(conn: &Connection, name: &str, value: i64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
        params![name, value],
    )?;
    Ok(())
}

/// Chunks extracted again per transaction: the writer lock is let go between batches.
const REEXTRACT_BATCH: usize = 1_000;

/// Starts the background extraction `begin_reextract` prepared, if one is due.
pub(crate) fn start_reextract(inner: &Arc<Inner>) {
    let due = inner.read_conn().and_then(|c| Ok(stored_version(&c)?)).map(|v| v != Some(EXTRACTOR_VERSION));
    if !due.unwrap_or(false) {
        return;
    }
    let weak = Arc::downgrade(inner);
    match std::thread::Builder::new().name("memory-entities".into()).spawn(move || reextract(&weak)) {
        Ok(h) => *lock(&inner.entities_thread) = Some(h),
        Err(e) => tracing::warn!(error = %e, "could not start extracting entities again"),
    }
}

/// Waits for the background extraction, if one runs.
pub(crate) fn wait(inner: &Inner) {
    let handle = lock(&inner.entities_thread).take();
    if let Some(h) = handle {
        let _ = h.join();
    }
}

fn reextract(weak: &Weak<Inner>) {
    let started = std::time::Instant::now();
    match reextract_batches(weak) {
        Ok(Some(chunks)) => tracing::info!(
            chunks,
            version = EXTRACTOR_VERSION,
            ms = started.elapsed().as_millis() as u64,
            "entities extracted again"
        ),
        // The store closed first: the next open starts over.
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %format!("{e:#}"), "extracting entities again failed; the next open retries"),
    }
}

/// Two passes over the chunks up to `entities_reextract_upto`: everyone who wrote or received
/// anything is made known first, then every chunk is extracted. Each batch commits with its
/// position, so a store closed half way goes on from there when it is opened again. Returns
/// how many chunks this run extracted, or None when the store closed first.
fn reextract_batches(weak: &Weak<Inner>) -> Result<Option<usize>, MemoryError> {
    let mut chunks = 0;
    loop {
        let Some(inner) = weak.upgrade() else { return Ok(None) };
        if inner.stopping.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut ws = lock(&inner.writer);
        let tx = ws.transaction(&inner)?;
        let (pass, after, upto) = (
            meta(&tx, "entities_reextract_pass")?,
            meta(&tx, "entities_reextract_after")?,
            meta(&tx, "entities_reextract_upto")?,
        );
        let rowids: Vec<i64> = tx
            .prepare_cached("SELECT rowid FROM chunks WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid LIMIT ?3")?
            .query_map(params![after, upto, REEXTRACT_BATCH as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let now = now_ms();
        match rowids.last() {
            None if pass == 0 => {
                set_meta(&tx, "entities_reextract_pass", 1)?;
                set_meta(&tx, "entities_reextract_after", 0)?;
            }
            None => {
                finish_reextract(&tx)?;
                tx.commit()?;
                return Ok(Some(chunks));
            }
            Some(&last) => {
                if pass == 0 {
                    register_parties(&tx, load(&tx, &rowids)?.iter().map(Stored::view), now)?;
                } else {
                    reindex(&tx, &rowids, now)?;
                    chunks += rowids.len();
                }
                set_meta(&tx, "entities_reextract_after", last)?;
            }
        }
        tx.commit()?;
    }
}
