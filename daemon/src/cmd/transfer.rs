//! Your data out and back: `export` and `import` (JSON Lines with a manifest, plus a Markdown
//! copy; `openhuman.memory_export`/`memory_import` through `via`, so the daemon does them when
//! it runs), and `backup` and `restore` (the database as one SQLite file; the memory engine's
//! `backup` reads a consistent snapshot beside a serving daemon, `restore` needs the store
//! closed and refuses while a daemon serves the home).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use openhuman_common::Paths;
use openhuman_memory::MemoryError;
use serde_json::{Value, json};

use super::out;
use crate::EXIT_OK;
use crate::cli::{BackupArgs, DirArgs, RestoreArgs};
use crate::via::{self, Via};

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display()))
}

/// A count from a summary's per-file map.
fn n(map: &Value, file: &str) -> u64 {
    map[file].as_u64().unwrap_or(0)
}

/// Runs `method` on the export directory of `args`; the summary, or None once printed as JSON.
fn on_dir(paths: &Paths, args: &DirArgs, method: &str) -> Result<Option<(PathBuf, Value)>> {
    let dir = absolute(&args.dir)?;
    let via = Via::open(paths)?;
    let result = via.method(method, json!({ "dir": dir }), None);
    via.finish();
    let s = result?;
    if args.json {
        out(&s.to_string());
        return Ok(None);
    }
    Ok(Some((dir, s)))
}

pub(crate) fn export(paths: &Paths, args: &DirArgs) -> Result<i32> {
    let Some((dir, s)) = on_dir(paths, args, "openhuman.memory_export")? else { return Ok(EXIT_OK) };
    let r = &s["records"];
    out(&format!(
        "exported {} chunks from {} sources ({} tags, {} notes, {} learnings, {} entities, {} audit rows) to {} in {} ms",
        n(r, "chunks.jsonl"),
        n(r, "sources.jsonl"),
        n(r, "tags.jsonl"),
        n(r, "notes.jsonl"),
        n(r, "learnings.jsonl"),
        n(r, "entities.jsonl"),
        n(r, "audit.jsonl"),
        dir.display(),
        s["duration_ms"]
    ));
    out(&format!("a readable copy is in {} ({} Markdown files)", dir.join("markdown").display(), s["markdown_files"]));
    Ok(EXIT_OK)
}

pub(crate) fn import(paths: &Paths, args: &DirArgs) -> Result<i32> {
    let Some((dir, s)) = on_dir(paths, args, "openhuman.memory_import")? else { return Ok(EXIT_OK) };
    let (read, added) = (&s["read"], &s["added"]);
    let total: u64 = added.as_object().into_iter().flatten().filter_map(|(_, v)| v.as_u64()).sum();
    if total == 0 {
        out(&format!("nothing to import: memory already holds everything in {}", dir.display()));
    } else {
        out(&format!(
            "imported {} of {} chunks, {} of {} sources, {} tags, {} notes, {} learnings, {} audit rows in {} ms",
            n(added, "chunks.jsonl"),
            n(read, "chunks.jsonl"),
            n(added, "sources.jsonl"),
            n(read, "sources.jsonl"),
            n(added, "tags.jsonl"),
            n(added, "notes.jsonl"),
            n(added, "learnings.jsonl"),
            n(added, "audit.jsonl"),
            s["duration_ms"]
        ));
    }
    if s["conflicts"].as_u64().unwrap_or(0) > 0 {
        let named: Vec<&str> =
            s["conflicts_named"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        out(&format!(
            "{} item(s) memory holds in another version were kept as they are: {}",
            s["conflicts"],
            named.join(", ")
        ));
    }
    Ok(EXIT_OK)
}

pub(crate) fn backup(paths: &Paths, args: &BackupArgs) -> Result<i32> {
    let file = absolute(&args.file)?;
    let s = openhuman_memory::backup(&paths.data_dir, &file)?;
    out(&format!(
        "backed up {} chunks ({} bytes, schema {}) to {} in {} ms",
        s.chunks,
        s.bytes,
        s.schema_version,
        file.display(),
        s.duration_ms
    ));
    Ok(EXIT_OK)
}

pub(crate) fn restore(paths: &Paths, args: &RestoreArgs) -> Result<i32> {
    let file = absolute(&args.file)?;
    via::stopped(paths, "restore")?;
    let s = openhuman_memory::restore(&paths.data_dir, &file, args.discard_current).map_err(|e| match e {
        MemoryError::InUse(dir) => anyhow::anyhow!(
            "the memory store in {} is open in another process (a daemon or an `openhumand-mcp stdio` session); \
             stop it, then run restore again",
            dir.display()
        ),
        other => other.into(),
    })?;
    out(&format!(
        "restored {} chunks (schema {}) from {}; the search indexes are rebuilt when the store next opens",
        s.chunks,
        s.schema_version,
        file.display()
    ));
    if let Some(p) = s.previous {
        out(&format!("the replaced database is kept as {} (restore it the same way to go back)", p.display()));
    }
    Ok(EXIT_OK)
}
