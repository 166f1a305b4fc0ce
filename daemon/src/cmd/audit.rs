//! `audit`: the write-audit log, newest first, as `openhuman.audit_query` answers it (through
//! `via`: the running daemon, else the store opened here), one line a row or JSON Lines.

use std::time::Duration;

use anyhow::Result;
use openhuman_common::Paths;
use serde_json::json;

use super::out;
use crate::EXIT_OK;
use crate::cli::AuditArgs;
use crate::via::Via;

pub(crate) fn run(paths: &Paths, args: &AuditArgs) -> Result<i32> {
    let params = json!({
        "limit": args.limit, "tool": args.tool, "client": args.client, "since": args.since, "failed": args.failed,
    });
    let via = Via::open(paths)?;
    let result = via.method("openhuman.audit_query", params, Some(Duration::from_secs(30)));
    via.finish();
    let rows = result?["rows"].as_array().cloned().unwrap_or_default();
    for r in &rows {
        if args.json {
            out(&r.to_string());
            continue;
        }
        let ts = chrono::DateTime::from_timestamp_millis(r["ts_ms"].as_i64().unwrap_or(0))
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        let outcome = if r["success"] == true {
            format!("ok {}", r["result_id"].as_str().unwrap_or(""))
        } else {
            format!("FAILED {}", r["error"].as_str().unwrap_or(""))
        };
        out(&format!(
            "{ts} {:<14} {:<20} {outcome} {}",
            r["tool"].as_str().unwrap_or("?"),
            r["source"].as_str().unwrap_or("?"),
            r["args_summary"]
        ));
    }
    if rows.is_empty() && !args.json {
        out("no audit rows match");
    }
    Ok(EXIT_OK)
}
