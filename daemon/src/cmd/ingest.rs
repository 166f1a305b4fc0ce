//! `ingest`: files and folders into memory by `openhuman.memory_ingest` through `via` (the
//! running daemon, the store's single writer, else the store opened here), so either way it is
//! validated, refused in `readonly` and audited alike; a progress bar on a terminal, then what
//! was read, passed over and failed.

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result};
use openhuman_common::Paths;
use serde_json::{Value, json};

use super::out;
use crate::cli::{IngestArgs, IngestKind};
use crate::via::Via;
use crate::{EXIT_FAILURE, EXIT_OK};

pub(crate) fn run(paths: &Paths, args: &IngestArgs) -> Result<i32> {
    let mut files = Vec::new();
    for p in &args.paths {
        let abs = std::fs::canonicalize(p).with_context(|| format!("cannot read {}", p.display()))?;
        files.push(abs);
    }
    let kind = args.kind.map(IngestKind::as_str);
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} files, {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let show = |p: &Value| {
        if let Some(b) = &bar {
            b.set_length(p["total"].as_f64().unwrap_or(0.0) as u64);
            b.set_position(p["progress"].as_f64().unwrap_or(0.0) as u64);
            b.set_message(p["message"].as_str().unwrap_or("").to_string());
        }
    };
    let via = Via::open(paths)?;
    let result = via.method_with("openhuman.memory_ingest", json!({ "paths": files, "kind": kind }), None, show);
    // In process, only the fast tier is waited for: the deep tier's fill (slow) goes on in the
    // daemon later, from where this one stops.
    via.finish();
    let summary = result?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let failed = summary["files_failed"].as_array().cloned().unwrap_or_default();
    for f in &failed {
        let _ = writeln!(
            std::io::stderr(),
            "error: {}: {}",
            f["path"].as_str().unwrap_or("?"),
            f["error"].as_str().unwrap_or("?")
        );
    }
    out(&format!(
        "ingested {} file(s), {} unchanged, {} unsupported, {} failed, {} deleted file(s) removed; {} chunks added, {} \
         removed in {} ms",
        summary["files_ingested"],
        summary["files_unchanged"],
        summary["files_unsupported"],
        failed.len(),
        summary["files_removed"],
        summary["chunks_added"],
        summary["chunks_removed"],
        summary["duration_ms"]
    ));
    for line in passed_over(&summary) {
        out(&line);
    }
    let (moved, detached) = (&summary["annotations_moved"], &summary["annotations_detached"]);
    if moved.as_u64().unwrap_or(0) + detached.as_u64().unwrap_or(0) > 0 {
        out(&format!(
            "tags and notes: {moved} passage(s) followed to their new place, {detached} kept detached (their text is gone)"
        ));
    }
    Ok(if failed.is_empty() { EXIT_OK } else { EXIT_FAILURE })
}

/// The lines of an ingest summary that say what was passed over: the unsupported files by name
/// (the summary names the first few; the count has them all), then each reason lines,
/// messages or files were skipped for, with how many and where the first one was.
fn passed_over(summary: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    let total = summary["files_unsupported"].as_u64().unwrap_or(0);
    let named: Vec<&str> = summary["unsupported"].as_array().into_iter().flatten().filter_map(|p| p.as_str()).collect();
    if total > 0 {
        let more = total.saturating_sub(named.len() as u64);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        lines.push(format!("unsupported ({total}, no importer reads them): {}{tail}", named.join(", ")));
    }
    for s in summary["skipped"].as_array().into_iter().flatten() {
        let count = s["count"].as_u64().unwrap_or(0);
        let unit = s["unit"].as_str().unwrap_or("item");
        let plural = if count == 1 { "" } else { "s" };
        lines.push(format!(
            "skipped {count} {unit}{plural}: {} (first: {})",
            s["reason"].as_str().unwrap_or("?"),
            s["first"].as_str().unwrap_or("?")
        ));
    }
    lines
}
