//! The `mcp_audit` table: one row per write-tool attempt. Successful writes
//! insert their row inside their own transaction; rejections arrive in batches from the
//! daemon's audit writer through `MemoryEngine::record_audit`.

use rusqlite::{Connection, ToSql, params, params_from_iter};
use serde_json::Value;

use super::MemoryError;
use super::types::{AuditQuery, AuditRow};
use openhuman_common::truncate_bytes;

/// Longest error message kept, in bytes.
pub(crate) const MAX_ERROR_BYTES: usize = 1024;

/// Inserts a row; `machine` and `person` (this daemon's, with a shared store) win over the
/// row's own.
pub(crate) fn insert(
    conn: &Connection,
    r: &AuditRow,
    machine: Option<&str>,
    person: Option<&str>,
) -> rusqlite::Result<()> {
    let client = if r.client_info.is_null() { None } else { Some(r.client_info.to_string()) };
    let summary = if r.args_summary.is_null() { "{}".to_string() } else { r.args_summary.to_string() };
    conn.prepare_cached(
        "INSERT INTO mcp_audit (id, ts_ms, tool, source, client_info, success, error, result_id, args_summary, machine,
             person)
         VALUES ((SELECT max(coalesce(max(id), 0), coalesce((SELECT value FROM meta WHERE name = ?11), 0)) + 1
                  FROM mcp_audit), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        r.ts_ms,
        r.tool,
        r.source,
        client,
        r.success,
        r.error.as_deref().map(|e| truncate_bytes(e, MAX_ERROR_BYTES)),
        r.result_id,
        summary,
        machine.or(r.machine.as_deref()),
        person.or(r.person.as_deref()),
        // Rows other persons keep to themselves hold ids too (see `shared`).
        super::shared::row_id_floor("mcp_audit")
    ])?;
    Ok(())
}

pub(crate) fn query(conn: &Connection, q: &AuditQuery) -> Result<Vec<AuditRow>, MemoryError> {
    let mut sql = String::from(
        "SELECT ts_ms, tool, source, client_info, success, error, result_id, args_summary, machine, person FROM mcp_audit
         WHERE 1",
    );
    let mut args: Vec<Box<dyn ToSql>> = Vec::new();
    if let Some(t) = &q.tool {
        args.push(Box::new(t.clone()));
        sql.push_str(&format!(" AND tool = ?{}", args.len()));
    }
    if let Some(c) = &q.client {
        args.push(Box::new(c.clone()));
        args.push(Box::new(format!("mcp:{c}")));
        sql.push_str(&format!(" AND (source = ?{} OR source = ?{})", args.len() - 1, args.len()));
    }
    if let Some(s) = q.since_ms {
        args.push(Box::new(s));
        sql.push_str(&format!(" AND ts_ms >= ?{}", args.len()));
    }
    if q.failed_only {
        sql.push_str(" AND success = 0");
    }
    args.push(Box::new(q.limit.unwrap_or(50) as i64));
    sql.push_str(&format!(" ORDER BY ts_ms DESC, id DESC LIMIT ?{}", args.len()));
    let rows = conn
        .prepare(&sql)?
        .query_map(params_from_iter(args.iter().map(|a| a.as_ref())), |r| {
            let client: Option<String> = r.get(3)?;
            let summary: String = r.get(7)?;
            Ok(AuditRow {
                ts_ms: r.get(0)?,
                tool: r.get(1)?,
                source: r.get(2)?,
                client_info: client.and_then(|c| serde_json::from_str(&c).ok()).unwrap_or(Value::Null),
                success: r.get(4)?,
                error: r.get(5)?,
                result_id: r.get(6)?,
                args_summary: serde_json::from_str(&summary).unwrap_or(Value::Null),
                machine: r.get(8)?,
                person: r.get(9)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}
