//! Keeping what a user attached to a file's chunks — tags written with `memory.tag` and notes
//! written with `memory.note` — when the file changes and its chunks are replaced.
//!
//! Before a file's old chunks are deleted, the annotated ones are remembered with their text.
//! After the new chunks are inserted, each annotated old chunk is matched to the new chunk that
//! holds the same text (the same content exactly, else the one sharing the most words, if at
//! least [`MIN_OVERLAP`] of them), and its tags and notes move there. When nothing matches —
//! the passage was deleted or rewritten — the annotations are kept *detached*: the tags and the
//! chunk's text go to the `detached` tables, its notes stay (still searchable) and say
//! `"anchor": "detached"` in their metadata. A later version of the file that brings the text
//! back re-attaches them the same way. Deleting the file or the item (`memory.forget`) is what
//! removes them.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, params};

use super::sql::rarray;
use super::util::preview;

/// The share of words (Jaccard over distinct lowercased words) a rewritten passage must keep
/// for its annotations to follow it.
pub(crate) const MIN_OVERLAP: f64 = 0.5;

/// One chunk with annotations, live (about to be replaced) or detached earlier.
pub(crate) struct Annotated {
    chunk_id: String,
    content: String,
    source_ref: String,
    /// (tag, origin key) pairs the user wrote; the chunk's own tags come back with the file.
    tags: Vec<(String, String)>,
    /// Item ids of the notes on it.
    notes: Vec<String>,
}

/// What happened to annotated chunks during one file's re-ingest.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Annotated chunks whose tags and notes moved to a new chunk.
    pub moved: usize,
    /// Annotated chunks left without a match (kept detached).
    pub detached: usize,
}

/// The annotated chunks among `rowids` (the chunks of `origin` about to be deleted), plus
/// those detached from `origin` by earlier re-ingests.
pub(crate) fn collect(tx: &Connection, origin: &str, rowids: &[i64]) -> rusqlite::Result<Vec<Annotated>> {
    let mut out: Vec<Annotated> = Vec::new();
    if !rowids.is_empty() {
        let rows: Vec<(i64, String, String, String)> = tx
            .prepare_cached("SELECT rowid, id, content, source_ref FROM chunks WHERE rowid IN rarray(?1)")?
            .query_map([rarray(rowids)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (rowid, chunk_id, content, source_ref) in rows {
            let tags: Vec<(String, String)> = tx
                .prepare_cached("SELECT tag, origin_key FROM chunk_tags WHERE chunk_rowid = ?1 AND origin_key != ''")?
                .query_map([rowid], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let notes = notes_on(tx, &chunk_id)?;
            if !tags.is_empty() || !notes.is_empty() {
                out.push(Annotated { chunk_id, content, source_ref, tags, notes });
            }
        }
    }
    let detached: Vec<(String, String, String)> = tx
        .prepare_cached("SELECT chunk_id, content, source_ref FROM detached WHERE origin = ?1")?
        .query_map([origin], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (chunk_id, content, source_ref) in detached {
        let tags = tx
            .prepare_cached("SELECT tag, origin_key FROM detached_tags WHERE chunk_id = ?1")?
            .query_map([&chunk_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let notes = notes_on(tx, &chunk_id)?;
        out.push(Annotated { chunk_id, content, source_ref, tags, notes });
    }
    Ok(out)
}

fn notes_on(tx: &Connection, chunk_id: &str) -> rusqlite::Result<Vec<String>> {
    tx.prepare_cached("SELECT item_id FROM notes WHERE chunk_id = ?1")?.query_map([chunk_id], |r| r.get(0))?.collect()
}

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn overlap(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 { 0.0 } else { a.intersection(b).count() as f64 / union as f64 }
}

/// The index of the new chunk `old` belongs to, if any.
fn best_match(old: &Annotated, new: &[(i64, String, &str)], new_words: &[HashSet<String>]) -> Option<usize> {
    if let Some(i) = new.iter().position(|n| n.2 == old.content) {
        return Some(i);
    }
    let w = words(&old.content);
    new_words
        .iter()
        .enumerate()
        .map(|(i, nw)| (i, overlap(&w, nw)))
        .filter(|&(_, o)| o >= MIN_OVERLAP)
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
}

/// Moves each annotated chunk's tags and notes to its match among `new` (rowid, id, content),
/// or keeps them detached from `origin`. Runs in the re-ingest's transaction, after the old
/// chunks are deleted and the new ones inserted.
pub(crate) fn reattach(
    tx: &Connection,
    origin: &str,
    annotated: Vec<Annotated>,
    new: &[(i64, String, &str)],
    now: i64,
) -> rusqlite::Result<Outcome> {
    let mut outcome = Outcome::default();
    if annotated.is_empty() {
        return Ok(outcome);
    }
    let new_words: Vec<HashSet<String>> = new.iter().map(|n| words(n.2)).collect();
    for a in annotated {
        tx.prepare_cached("DELETE FROM detached_tags WHERE chunk_id = ?1")?.execute([&a.chunk_id])?;
        tx.prepare_cached("DELETE FROM detached WHERE chunk_id = ?1")?.execute([&a.chunk_id])?;
        match best_match(&a, new, &new_words) {
            Some(i) => {
                let (rowid, id, _) = &new[i];
                for (tag, key) in &a.tags {
                    tx.prepare_cached(
                        "INSERT OR IGNORE INTO chunk_tags (chunk_rowid, tag, origin_key) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![rowid, tag, key])?;
                }
                tx.prepare_cached("UPDATE kv SET item_id = ?2 WHERE kind = 'tag' AND item_id = ?1")?
                    .execute(params![a.chunk_id, id])?;
                for note in &a.notes {
                    point_note(tx, note, id, None)?;
                }
                outcome.moved += 1;
            }
            None => {
                tx.prepare_cached(
                    "INSERT INTO detached (chunk_id, origin, source_ref, content, detached_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![a.chunk_id, origin, a.source_ref, a.content, now])?;
                for (tag, key) in &a.tags {
                    tx.prepare_cached(
                        "INSERT OR IGNORE INTO detached_tags (chunk_id, tag, origin_key) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![a.chunk_id, tag, key])?;
                }
                for note in &a.notes {
                    point_note(tx, note, &a.chunk_id, Some(&a.content))?;
                }
                outcome.detached += 1;
            }
        }
    }
    Ok(outcome)
}

/// Points note `item` at `chunk_id`; `anchor_text` (the passage it was written on) marks it
/// detached, `None` attached. The note's own chunk carries the state in its metadata.
fn point_note(tx: &Connection, item: &str, chunk_id: &str, anchor_text: Option<&str>) -> rusqlite::Result<()> {
    tx.prepare_cached("UPDATE notes SET chunk_id = ?2 WHERE item_id = ?1")?.execute(params![item, chunk_id])?;
    let metadata: Option<String> = tx
        .prepare_cached("SELECT metadata FROM chunks WHERE origin = ?1")?
        .query_row([item], |r| r.get(0))
        .optional()?;
    let Some(metadata) = metadata else { return Ok(()) };
    let mut m: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&metadata).unwrap_or_default();
    m.insert("chunk_id".into(), chunk_id.into());
    match anchor_text {
        Some(text) => {
            m.insert("anchor".into(), "detached".into());
            m.insert("anchor_text".into(), preview(text, 300).into());
        }
        None => {
            m.remove("anchor");
            m.remove("anchor_text");
        }
    }
    tx.prepare_cached("UPDATE chunks SET metadata = ?2, source_ref = ?3 WHERE origin = ?1")?.execute(params![
        item,
        serde_json::Value::Object(m).to_string(),
        chunk_id
    ])?;
    Ok(())
}

/// A live chunk's id changed (its file moved): its user tags' and notes' references follow it.
pub(crate) fn rename_chunk(tx: &Connection, old: &str, new: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("UPDATE kv SET item_id = ?2 WHERE kind = 'tag' AND item_id = ?1")?.execute(params![old, new])?;
    for note in notes_on(tx, old)? {
        point_note(tx, &note, new, None)?;
    }
    Ok(())
}

/// Drops what is detached from `origin` (its file was deleted or the item forgotten).
pub(crate) fn forget_origin(tx: &Connection, origin: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM detached_tags WHERE chunk_id IN (SELECT chunk_id FROM detached WHERE origin = ?1)")?
        .execute([origin])?;
    tx.prepare_cached("DELETE FROM detached WHERE origin = ?1")?.execute([origin])?;
    Ok(())
}
