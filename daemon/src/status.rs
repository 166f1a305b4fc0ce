//! What `status` says: the lines rendered from `openhuman.daemon_status`'s answer, for the
//! terminal (`openhumand-mcp status`) and the dashboard's status page alike, so the two never
//! disagree. Also the part of that answer that needs the disk: the store's size (counted with
//! the rest of the store's figures by `store_counts`).

use std::path::Path;

use serde_json::Value;

/// The status lines, in order: the headline, clients, store and indexes, embedding tiers,
/// policy, dashboard, watched folders, problems.
pub(crate) fn lines(s: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let problems: Vec<&str> = s["problems"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let state = if problems.is_empty() { "is running" } else { "is running but NOT READY" };
    out.push(format!(
        "openhumand-mcp {} {state}: pid {}, up {}, {} session(s), socket {}",
        s["version"].as_str().unwrap_or("?"),
        s["pid"],
        duration(s["uptime_ms"].as_u64().unwrap_or(0) / 1000),
        s["sessions"],
        s["socket"].as_str().unwrap_or("?"),
    ));
    let clients: Vec<String> = s["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} over {} ({} session{})",
                c["client"].as_str().unwrap_or("?"),
                c["transport"].as_str().unwrap_or("?"),
                c["sessions"],
                if c["sessions"] == 1 { "" } else { "s" }
            )
        })
        .collect();
    if !clients.is_empty() {
        out.push(format!("clients connected: {}", clients.join(", ")));
    }
    if s["memory"]["opening"] == true {
        out.push("memory store: still opening (memory tools answer once it is open)".to_string());
    }
    let store = &s["store"];
    if store["counting"] == true {
        out.push("store: counting its chunks (a store of millions takes a few seconds; ask again)".to_string());
    } else if let Some(e) = store["error"].as_str() {
        out.push(format!("store: could not be counted ({e})"));
    } else if store.is_object() {
        out.push(format!(
            "store: {} on disk, {} chunks from {} sources, {} entities, {} audit rows{}",
            bytes(store["bytes"].as_u64().unwrap_or(0)),
            store["chunks"],
            store["sources"],
            store["entities"],
            store["audit_rows"],
            store["counted_ms_ago"]
                .as_u64()
                .map(|ms| format!(
                    " (counted {} ago; a large store is counted again every {} s)",
                    duration(ms / 1000),
                    crate::store_counts::RECOUNT_AFTER.as_secs()
                ))
                .unwrap_or_default(),
        ));
        let ix = &store["index"];
        let behind = ix["db_seq"].as_i64().unwrap_or(0) - ix["fts_seq"].as_i64().unwrap_or(0);
        out.push(format!(
            "keyword index: {} documents, {}; fast vectors: {} of {} chunks embedded",
            ix["fts_docs"],
            if behind <= 0 { "up to date".to_string() } else { format!("{behind} change(s) behind") },
            ix["vectors"],
            store["chunks"],
        ));
        if let Some(projects) = store["projects"].as_array().filter(|p| !p.is_empty()) {
            let shown: Vec<String> = projects
                .iter()
                .take(5)
                .map(|p| format!("{} ({})", p["project"].as_str().unwrap_or("?"), p["chunks"]))
                .collect();
            let more = projects.len().saturating_sub(shown.len());
            out.push(format!(
                "projects: {}{}",
                shown.join(", "),
                if more > 0 { format!(" and {more} more (memory.projects lists them)") } else { String::new() }
            ));
        }
    }
    let deep = &s["vectors"]["deep"];
    if deep.is_object() {
        out.push(format!(
            "deep embedding tier {}: {} of {} chunks embedded{}",
            deep["model"].as_str().unwrap_or("?"),
            deep["covered"],
            deep["total"],
            if deep["answering"] == true {
                "; it answers vector queries"
            } else {
                "; the fast tier answers vector queries until it covers them all"
            }
        ));
    }
    let shared = &s["memory"]["shared"];
    if shared.is_object() {
        out.push(format!(
            "shared memory: {} as \"{}\"{}, {}; change {} of {} applied here{}",
            shared["server"].as_str().unwrap_or("?"),
            shared["machine"].as_str().unwrap_or("?"),
            shared["person"].as_str().map(|p| format!(" (person {p})")).unwrap_or_default(),
            if shared["connected"] == true { "connected" } else { "NOT connected (reads from this copy; writes fail)" },
            shared["applied_seq"],
            shared["head_seq"],
            shared["last_error"].as_str().map(|e| format!(" (last error: {e})")).unwrap_or_default(),
        ));
        if shared["joining"] == true {
            out.push(
                "shared memory: a new copy, still loading its snapshot (reads answer from what has arrived; writes are \
                 refused until it is done)"
                    .to_string(),
            );
        }
        out.extend(shared_log(&shared["log"]));
        for v in shared["vectors"].as_array().into_iter().flatten() {
            out.push(format!(
                "shared vectors, {} tier ({}, stored as {}): {} taken from the server, {} embedded here, {} uploaded, {} \
                 waiting to upload",
                v["tier"].as_str().unwrap_or("?"),
                v["model"].as_str().unwrap_or("?"),
                v["storage"].as_str().unwrap_or("?"),
                v["fetched"],
                v["embedded"],
                v["uploaded"],
                v["upload_pending"],
            ));
        }
    }
    let policy = &s["policy"];
    if policy.is_object() {
        out.push(format!(
            "policy: autonomy {}, {} of {} act calls used in the last hour",
            policy["level"].as_str().unwrap_or("?"),
            policy["act_calls_last_hour"],
            policy["max_actions_per_hour"],
        ));
    }
    match s["dashboard"].as_str() {
        Some(url) => out.push(format!("dashboard: {url} (`openhumand-mcp ui` opens it)")),
        None => out.push("dashboard: off (the HTTP port is off; see [mcp.http])".to_string()),
    }
    if s["watch"]["readonly"] == true && s["watch"]["sources"].as_array().is_some_and(|l| !l.is_empty()) {
        out.push("watched folders are not synced: [autonomy].level is readonly".to_string());
    }
    for w in s["watch"]["sources"].as_array().into_iter().flatten() {
        out.push(format!("watching {}: {}", w["path"].as_str().unwrap_or("?"), describe(w)));
    }
    for p in problems {
        out.push(format!("problem: {p}"));
    }
    out
}

/// The shared change log and each daemon's position in it.
fn shared_log(log: &Value) -> Vec<String> {
    if !log.is_object() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "shared change log: {} changes ({} to {}{}), keeping {} days and at least the newest {}; a copy behind change {} \
         is loaded again from a snapshot",
        log["rows"],
        log["oldest_seq"].as_i64().map_or("-".into(), |n| n.to_string()),
        log["newest_seq"].as_i64().map_or("-".into(), |n| n.to_string()),
        log["bytes"].as_u64().map(|b| format!(", {}", bytes(b))).unwrap_or_default(),
        log["keep_days"],
        log["keep_rows"],
        log["horizon_seq"],
    )];
    let now = log["checked_at_ms"].as_i64().unwrap_or(0);
    for d in log["devices"].as_array().into_iter().flatten() {
        let ago = (now - d["seen_at_ms"].as_i64().unwrap_or(now)).max(0) as u64 / 1000;
        out.push(format!(
            "  device \"{}\": change {} applied, {} behind, seen {} ago{}",
            d["machine"].as_str().unwrap_or("?"),
            d["applied_seq"],
            d["lag"],
            duration(ago),
            if d["behind_horizon"] == true { "; it reloads from a snapshot when it is back" } else { "" },
        ));
    }
    out
}

/// `3 d 4 h`, `2 h 5 min`, `12 min 3 s` or `40 s`.
fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else if m > 0 {
        format!("{m} min {s} s")
    } else {
        format!("{s} s")
    }
}

/// `512 B`, `3.4 KiB`, `12.0 MiB`, `1.2 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: &[&str] = &["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Bytes of the files under the data directory that make up the store (the database, its log
/// and the indexes), leaving out installed models.
pub(crate) fn store_bytes(data_dir: &Path) -> u64 {
    fn walk(dir: &Path, top: bool) -> u64 {
        let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
        entries
            .flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() && !(top && e.file_name() == "models") => walk(&e.path(), false),
                Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
                _ => 0,
            })
            .sum()
    }
    walk(data_dir, true)
}

/// One line about a source's status (as `status_json` gives it), for people.
pub(crate) fn describe(s: &Value) -> String {
    let last = s["last_sync_ms"]
        .as_i64()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| "never".into());
    let mut line = format!(
        "{}, {} files in memory, last sync {last}, {} pending",
        s["state"].as_str().unwrap_or("?"),
        s["files"],
        s["pending"]
    );
    let n = &s["sessions"];
    if n.is_object() {
        line = format!(
            "{}, {} session logs ({} sessions, {} turns kept), last sync {last}, {} pending; passed over: {} malformed \
             lines, {} unknown records, {} excluded turns; {} bytes of last lines still being written",
            s["state"].as_str().unwrap_or("?"),
            n["files"],
            n["sessions"],
            n["turns"],
            s["pending"],
            n["malformed"],
            n["unknown"],
            n["excluded"],
            n["waiting_bytes"]
        );
    }
    if let Some(e) = s["last_error"].as_str() {
        line.push_str(&format!(", last error: {e}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_naturally() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 * 1024 + 400), "3.4 KiB");
        assert_eq!(bytes(12 * 1024 * 1024), "12.0 MiB");
        assert_eq!(duration(40), "40 s");
        assert_eq!(duration(12 * 60 + 3), "12 min 3 s");
        assert_eq!(duration(2 * 3600 + 5 * 60), "2 h 5 min");
        assert_eq!(duration(3 * 86_400 + 4 * 3600), "3 d 4 h");
    }

    #[test]
    fn the_shared_log_and_each_device_read_as_lines() {
        let log = serde_json::json!({
            "rows": 120, "oldest_seq": 881, "newest_seq": 1000, "bytes": 2048, "horizon_seq": 880,
            "keep_days": 7, "keep_rows": 100, "checked_at_ms": 100_000,
            "devices": [
                {"machine": "laptop", "applied_seq": 1000, "lag": 0, "seen_at_ms": 98_000, "behind_horizon": false},
                {"machine": "desk", "applied_seq": 12, "lag": 988, "seen_at_ms": 40_000, "behind_horizon": true},
            ],
        });
        let lines = shared_log(&log);
        assert_eq!(
            lines[0],
            "shared change log: 120 changes (881 to 1000, 2.0 KiB), keeping 7 days and at least the newest 100; \
             a copy behind change 880 is loaded again from a snapshot"
        );
        assert_eq!(lines[1], "  device \"laptop\": change 1000 applied, 0 behind, seen 2 s ago");
        assert_eq!(
            lines[2],
            "  device \"desk\": change 12 applied, 988 behind, seen 1 min 0 s ago; it reloads from a snapshot when \
             it is back"
        );
        assert!(shared_log(&serde_json::Value::Null).is_empty(), "no log reported yet: no lines");
    }

    #[test]
    fn a_copy_still_loading_its_snapshot_says_so() {
        let status = |joining: bool| {
            serde_json::json!({"memory": {"shared": {
                "server": "db.example:5432/team", "machine": "laptop", "connected": true,
                "applied_seq": 0, "head_seq": 40, "joining": joining,
            }}})
        };
        let loading = lines(&status(true));
        assert!(
            loading.iter().any(|l| l.contains("still loading its snapshot") && l.contains("writes are refused")),
            "{loading:?}"
        );
        let done = lines(&status(false));
        assert!(!done.iter().any(|l| l.contains("still loading")), "{done:?}");
    }
}
