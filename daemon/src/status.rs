//! What `status` says: the lines rendered from `openhuman.daemon_status`'s answer, for the
//! terminal (`openhumand-mcp status`) and the dashboard's status page alike, so the two never
//! disagree. Also the part of that answer that needs the disk: the store's size.

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
    let store = &s["store"];
    if store.is_object() {
        out.push(format!(
            "store: {} on disk, {} chunks from {} sources, {} entities, {} audit rows",
            bytes(store["bytes"].as_u64().unwrap_or(0)),
            store["chunks"],
            store["sources"],
            store["entities"],
            store["audit_rows"],
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
}
