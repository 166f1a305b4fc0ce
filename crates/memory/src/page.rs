//! The one keyset paging every listing uses. Chunk listings (`tree.browse`, `memory.list`) go
//! newest first with the rowid breaking ties, and continue after the last row's (time, rowid);
//! listings keyed by a number and a text id (entities by mentions, sources by last activity)
//! continue after the last row's (value, id). Either way a page asks for one row more than it
//! shows, and that row's presence is what makes a `next_cursor`.

use rusqlite::{Connection, params_from_iter};

use super::MemoryError;
use super::cursor::{Cursor, encode};
use super::filter::Filter;
use super::search::{self, CHUNK_COLUMNS, ChunkRow, chunk_from_row};

/// A page of chunks matching `filter`, newest first, after the keyset position `after` (or
/// `offset` rows in), with the count of every match. The cursor of the next page, when there
/// is one, carries the fingerprint `fp`.
pub(crate) struct ChunkPage {
    pub rows: Vec<ChunkRow>,
    pub total: i64,
    pub next_cursor: Option<String>,
}

pub(crate) fn chunks(
    conn: &Connection,
    filter: &Filter,
    limit: usize,
    after: Option<(i64, i64)>,
    offset: usize,
    fp: &str,
) -> Result<ChunkPage, MemoryError> {
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
    args.push(Box::new(limit as i64 + 1));
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
    let more = rows.len() > limit;
    rows.truncate(limit);
    search::attach_tags(conn, &mut rows)?;
    let next_cursor = match (more, rows.last()) {
        (true, Some(last)) => Some(encode(&Cursor {
            h: fp.to_string(),
            t: Some(last.timestamp_ms),
            r: Some(last.rowid),
            ..Cursor::default()
        })),
        _ => None,
    };
    Ok(ChunkPage { rows, total, next_cursor })
}

/// The page of a listing keyed by (sort value, text id): `rows` holds one more than `limit`
/// when more follow, and then the next cursor continues after the last row shown.
pub(crate) fn keyed<T>(mut rows: Vec<(T, i64, String)>, limit: usize, fp: &str) -> (Vec<T>, Option<String>) {
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = match (more, rows.last()) {
        (true, Some((_, t, id))) => {
            Some(encode(&Cursor { h: fp.to_string(), t: Some(*t), k: Some(id.clone()), ..Cursor::default() }))
        }
        _ => None,
    };
    (rows.into_iter().map(|(v, _, _)| v).collect(), next)
}
