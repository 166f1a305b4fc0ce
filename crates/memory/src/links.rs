//! Links between sources: the `[[wiki links]]` of Markdown notes, kept in the `links` table
//! (one row per linking source, target, heading and alias) and shown by `tree.read_chunk`.
//!
//! A link names a note the way its author wrote it (`Note`, `folder/Note`), so targets are
//! resolved when read, not when written: a note created after the one linking to it is found,
//! and a renamed note is found under its new name by links that use the new name. A target
//! resolves to the ingested file whose path ends in `/<target>.md` (or `.markdown`), compared
//! without regard to ASCII case, preferring the one nearest the linking note.

use rusqlite::{Connection, params};
use serde_json::{Map, Value};

use super::sql::rarray;

/// The key under which an ingested source's metadata carries its links to `upsert_source`,
/// which moves them into the table (they are not kept in the metadata).
pub(crate) const META_KEY: &str = "wiki_links";

/// Replaces the links of `source_id` with those in `metadata[META_KEY]`, removing the key.
/// Metadata without the key leaves the source's links as they are.
pub(crate) fn take_from_metadata(
    conn: &Connection,
    source_id: &str,
    metadata: &mut Map<String, Value>,
) -> rusqlite::Result<()> {
    let Some(Value::Array(links)) = metadata.remove(META_KEY) else { return Ok(()) };
    conn.prepare_cached("DELETE FROM links WHERE source_id = ?1")?.execute([source_id])?;
    let mut ins = conn.prepare_cached(
        "INSERT OR IGNORE INTO links (source_id, target, heading, alias, target_key) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for l in &links {
        let field = |k: &str| l.get(k).and_then(Value::as_str).unwrap_or_default();
        let target = field("target");
        if !target.is_empty() {
            ins.execute(params![source_id, target, field("heading"), field("alias"), target_key(target)])?;
        }
    }
    Ok(())
}

/// The note name a target ends in, lowercased: what a file's stem is matched against.
fn target_key(target: &str) -> String {
    target.rsplit('/').next().unwrap_or(target).trim().to_lowercase()
}

/// Drops the links of sources that are gone.
pub(crate) fn delete_for(conn: &Connection, source_ids: &[String]) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM links WHERE source_id IN rarray(?1)")?.execute([rarray(source_ids)])?;
    Ok(())
}

/// Moves a source's links to its new id (its file was renamed).
pub(crate) fn rename(conn: &Connection, old: &str, new: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE OR REPLACE links SET source_id = ?2 WHERE source_id = ?1")?.execute([old, new])?;
    Ok(())
}

fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// Length of the common directory prefix of two paths: the tie-break between notes of one name.
fn nearness(a: &str, b: &str) -> usize {
    a.split('/').zip(b.split('/')).take_while(|(x, y)| x == y).count()
}

/// The ingested file a link from the note at `from_path` to `target` points at, if any.
fn resolve(conn: &Connection, from_path: &str, target: &str) -> rusqlite::Result<Option<String>> {
    let t = escape_like(target.trim());
    let candidates: Vec<String> = conn
        .prepare_cached(
            "SELECT path FROM files WHERE path LIKE ?1 ESCAPE '\\' OR path LIKE ?2 ESCAPE '\\' ORDER BY path LIMIT 50",
        )?
        .query_map(params![format!("%/{t}.md"), format!("%/{t}.markdown")], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(candidates.into_iter().max_by_key(|p| (nearness(p, from_path), std::cmp::Reverse(p.len()))))
}

/// A `[[wiki link]]` of a note, with the source it resolves to (none when no ingested note has
/// that name).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Link {
    pub target: String,
    pub heading: String,
    pub alias: String,
    pub source_id: Option<String>,
}

/// A note whose link names this one.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Backlink {
    pub source_id: String,
    pub target: String,
}

/// The links and backlinks of the source `source_id` (whose file, if it is one, is
/// `file_path`): its outgoing links with the source each resolves to, and the sources whose
/// links name this note.
pub(crate) fn of_source(
    conn: &Connection,
    source_id: &str,
    file_path: Option<&str>,
) -> rusqlite::Result<(Vec<Link>, Vec<Backlink>)> {
    let rows: Vec<(String, String, String)> = conn
        .prepare_cached(
            "SELECT target, heading, alias FROM links WHERE source_id = ?1 ORDER BY target, heading, alias",
        )?
        .query_map([source_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let from = file_path.unwrap_or_default();
    let mut links = Vec::with_capacity(rows.len());
    for (target, heading, alias) in rows {
        let resolved = resolve(conn, from, &target)?.map(|p| format!("file:{p}"));
        links.push(Link { target, heading, alias, source_id: resolved });
    }
    let mut backlinks = Vec::new();
    if let Some(path) = file_path {
        let name = std::path::Path::new(path).file_stem().map(|s| s.to_string_lossy().to_lowercase());
        if let Some(name) = name {
            let rows: Vec<(String, String)> = conn
                .prepare_cached(
                    "SELECT DISTINCT source_id, target FROM links WHERE target_key = ?1 ORDER BY source_id",
                )?
                .query_map([&name], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (from_source, target) in rows {
                let from_path = from_source.strip_prefix("file:").unwrap_or(&from_source);
                // Only links that resolve here: another folder's note of the same name may win.
                if resolve(conn, from_path, &target)?.as_deref() == Some(path) {
                    backlinks.push(Backlink { source_id: from_source, target });
                }
            }
        }
    }
    Ok((links, backlinks))
}
