//! Stored entities: what extraction finds in a chunk becomes rows of `entities` and
//! `chunk_entities`, its senders and recipients rows of `people` and `chunk_senders`, and
//! what links one person's names and addresses becomes `entity_aliases` (a merge: the alias
//! counts as the entity it points to, with the reason). `split` undoes a merge and keeps it
//! undone (`entity_splits`). A chunk written now gets its people, channel and tags here
//! (`index_chunk` without its text); what its text mentions is added by `background`.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value};

use super::background;
use super::people::{self, ChunkView, Party};
use super::{Entity, TextFacts, scan};
use crate::sql::rarray;
use crate::types::SourceKind;
use crate::util::{now_ms, slug};

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
    if p.automated || people::is_bot(&p.name, p.address.as_deref()) {
        return Ok(Some((format!("bot:{key}"), display)));
    }
    let base = format!("person:{key}");
    let mut id = resolve(conn, &base)?;
    // The export says this handle is this person's: `@ada` in any text counts as them.
    if let Some(h) = &p.handle {
        let alias = format!("handle:@{h}");
        let known = conn.prepare_cached("SELECT 1 FROM entity_aliases WHERE alias = ?1")?.exists([&alias])?;
        if !known && !is_split(conn, &alias)? && alias != id {
            link(conn, &alias, &id, &format!("{display} writes as @{h} in the export"), now)?;
        }
    }
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

/// The entities found in one chunk with their mentions; the first display name seen is kept.
#[derive(Default)]
struct Found(Vec<Entity>);

impl Found {
    fn add(&mut self, id: String, kind: &'static str, display: &str, n: u32) {
        match self.0.iter_mut().find(|e| e.id == id) {
            Some(e) => e.mentions += n,
            None => self.0.push(Entity { id, kind, display: display.to_string(), mentions: n }),
        }
    }

    /// What the chunk's prose mentions: addresses, links, handles, hashtags, organisations,
    /// names that something speaks for, and its topic words.
    fn add_text(&mut self, conn: &Connection, facts: TextFacts) -> rusqlite::Result<()> {
        for e in facts.entities {
            // A handle an export linked to its person counts as that person.
            let id = if e.kind == "handle" { resolve(conn, &e.id)? } else { e.id.clone() };
            if id != e.id {
                self.add(id.clone(), kind_of(&id), &e.display, e.mentions);
            } else {
                self.add(e.id, e.kind, &e.display, e.mentions);
            }
        }
        for n in facts.names {
            let variants = std::iter::once((n.id, n.display, n.given_name)).chain(n.alt);
            for (id, display, given_name) in variants {
                let id = resolve(conn, &id)?;
                let known = conn.prepare_cached("SELECT 1 FROM people WHERE entity_id = ?1")?.exists([&id])?;
                if known || n.titled || given_name {
                    self.add(id.clone(), kind_of(&id), &display, n.mentions);
                    break;
                }
            }
        }
        for (term, display, n) in facts.terms {
            // A word that is the name of someone who writes here (`Gina`) is that person.
            let person = format!("person:{}", slug(&term));
            if conn.prepare_cached("SELECT 1 FROM people WHERE entity_id = ?1")?.exists([&person])? {
                continue;
            }
            self.add(format!("topic:{}", slug(&term)), "topic", &display, n);
        }
        Ok(())
    }

    /// Adds the entities to chunk `rowid`: a chunk that already has one (its sender, also named
    /// in its text) adds the mentions to it.
    fn write(&self, conn: &Connection, rowid: i64) -> rusqlite::Result<()> {
        let mut ent = conn.prepare_cached(
            "INSERT INTO entities (id, kind, display_name, mention_count, chunk_count) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(id) DO UPDATE SET mention_count = mention_count + excluded.mention_count,
                chunk_count = chunk_count + excluded.chunk_count",
        )?;
        let mut chunk_ent = conn.prepare_cached(
            "INSERT OR IGNORE INTO chunk_entities (chunk_rowid, entity_id, mentions) VALUES (?1, ?2, ?3)",
        )?;
        for e in &self.0 {
            let new = chunk_ent.execute(params![rowid, e.id, e.mentions])?;
            if new == 0 {
                conn.prepare_cached(
                    "UPDATE chunk_entities SET mentions = mentions + ?3 WHERE chunk_rowid = ?1 AND entity_id = ?2",
                )?
                .execute(params![rowid, e.id, e.mentions])?;
            }
            ent.execute(params![e.id, e.kind, e.display, e.mentions, new as i64])?;
        }
        Ok(())
    }
}

/// Extracts the entities of one stored chunk (`rowid`) and writes them: who wrote and received
/// it, its chat channel and its own tags, and, with `text`, what its prose mentions (left to
/// `extract_text` on the background thread for a chunk just written).
pub(crate) fn index_chunk(
    conn: &Connection,
    rowid: i64,
    c: &ChunkView<'_>,
    now: i64,
    text: bool,
) -> rusqlite::Result<()> {
    let (parties, prose) = people::read(c);
    let mut found = Found::default();
    let mut senders: HashMap<String, (u32, u32, Vec<u64>)> = HashMap::new();
    for p in &parties {
        if let Some(addr) = &p.address {
            found.add(format!("email:{addr}"), "email", addr, p.sent + p.received);
        }
        if let Some((id, display)) = party_entity(conn, p, now)? {
            found.add(id.clone(), kind_of(&id), &display, p.sent + p.received);
            let s = senders.entry(id).or_default();
            s.0 += p.sent;
            s.1 += p.received;
            s.2.extend(&p.openings);
        }
    }
    if text {
        found.add_text(conn, scan(prose.into_iter()))?;
    }
    // A chat channel names what its conversations are about; a WhatsApp, Telegram, Messenger or
    // text-message chat, an IRC query log (no `#`), a Google Chat direct message (`DM …`) and
    // a Matrix room named after one of its people (Element's name for a direct chat, "Ana
    // Lima" or "Ana Lima and 2 others") are named after a person (or a group of friends), and
    // an assistant conversation after its first question, so those are not.
    let platform = c.metadata.get("platform").and_then(Value::as_str);
    let participants = || c.metadata.get("participants").and_then(Value::as_array).into_iter().flatten();
    let names_a_person = |ch: &str| match platform {
        Some("whatsapp" | "telegram" | "messenger" | "sms" | "chatgpt" | "claude") => true,
        Some("irc") => !ch.starts_with(['#', '&']),
        Some("gchat") => ch.starts_with("DM "),
        Some("matrix") => participants().filter_map(Value::as_str).any(|p| {
            !p.is_empty() && ch.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with(" and "))
        }),
        _ => false,
    };
    if c.kind == SourceKind::Chat
        && let Some(ch) = c.metadata.get("channel").and_then(Value::as_str).filter(|ch| !slug(ch).is_empty())
        && !names_a_person(ch)
    {
        found.add(format!("topic:{}", slug(ch)), "topic", ch, 1);
    }
    for t in c.tags {
        let s = slug(t);
        if !s.is_empty() {
            found.add(format!("topic:{s}"), "topic", t, 1);
        }
    }
    found.write(conn, rowid)?;
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

/// Adds what the prose of chunk `rowid` mentions (`facts`, scanned by the caller) to the
/// entities `index_chunk` gave it without its text.
pub(crate) fn index_text(conn: &Connection, rowid: i64, facts: TextFacts) -> rusqlite::Result<()> {
    let mut found = Found::default();
    found.add_text(conn, facts)?;
    found.write(conn, rowid)
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
pub(super) struct Stored {
    pub rowid: i64,
    kind: SourceKind,
    title: Option<String>,
    content: String,
    metadata: Map<String, Value>,
    tags: Vec<String>,
}

impl Stored {
    pub fn view(&self) -> ChunkView<'_> {
        ChunkView {
            kind: self.kind,
            title: self.title.as_deref(),
            content: &self.content,
            metadata: &self.metadata,
            tags: &self.tags,
        }
    }
}

/// The given chunks as extraction reads them; their own tags only `with_tags` (what a chunk's
/// text mentions does not depend on them).
pub(super) fn load(conn: &Connection, rowids: &[i64], with_tags: bool) -> rusqlite::Result<Vec<Stored>> {
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
    if !with_tags {
        return Ok(rows);
    }
    let mut tags = conn.prepare_cached("SELECT tag FROM chunk_tags WHERE chunk_rowid = ?1 AND origin_key = ''")?;
    for s in &mut rows {
        s.tags = tags.query_map([s.rowid], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    }
    Ok(rows)
}

/// Extracts the given stored chunks again (their own tags are topics, so an import that adds
/// them after the chunk calls this). The text of a chunk the background thread has not read
/// yet is left to it.
pub(crate) fn reindex(conn: &Connection, rowids: &[i64], now: i64) -> rusqlite::Result<()> {
    unindex_chunks(conn, rowids)?;
    let stored = load(conn, rowids, true)?;
    register_parties(conn, stored.iter().map(Stored::view), now)?;
    let text_upto = background::text_upto(conn)?;
    for s in &stored {
        index_chunk(conn, s.rowid, &s.view(), now, s.rowid <= text_upto)?;
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
