//! Writing an export: every table of [`super::TABLES`] as JSON Lines, the Markdown tree, then
//! the manifest, all read in one read transaction, so the files agree with each other however
//! much is written meanwhile. The manifest is written last: a directory without one is an
//! export that did not finish, and `import` refuses it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::Connection;
use rusqlite::types::ValueRef;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{FORMAT, FORMAT_VERSION, MANIFEST, TABLES, Table, markdown};
use crate::error::{MemoryError, ResultExt};
use crate::util::{ms_to_rfc3339, now_ms};
use crate::{MemoryEngine, entities, schema};

/// What an export wrote.
#[derive(Debug, Clone, Serialize)]
pub struct ExportSummary {
    pub dir: PathBuf,
    pub format_version: u64,
    /// Records written per file.
    pub records: BTreeMap<String, u64>,
    /// Markdown files written (one per source).
    pub markdown_files: u64,
    pub duration_ms: u64,
}

impl MemoryEngine {
    /// Writes an export of the whole store into `dir`, which must be missing or empty.
    pub fn export(&self, dir: &Path) -> Result<ExportSummary, MemoryError> {
        let started = Instant::now();
        let created = prepare(dir)?;
        // The entities written are those of every chunk but a large unread backlog's.
        entities::settle(&self.inner)?;
        let conn = self.inner.read_conn()?;
        let result = write_export(&conn, dir);
        if result.is_err() && created {
            let _ = std::fs::remove_dir_all(dir);
        }
        let (records, markdown_files) = result?;
        Ok(ExportSummary {
            dir: dir.to_path_buf(),
            format_version: FORMAT_VERSION,
            records,
            markdown_files,
            duration_ms: started.elapsed().as_millis() as u64,
        })
    }
}

/// Makes `dir` (returning true) or checks that it is empty.
fn prepare(dir: &Path) -> Result<bool, MemoryError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(MemoryError::InvalidParams(format!(
                    "{} is not empty; export into a new or empty directory",
                    dir.display()
                )));
            }
            Ok(false)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            Ok(true)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", dir.display())),
    }
}

fn write_export(conn: &Connection, dir: &Path) -> Result<(BTreeMap<String, u64>, u64), MemoryError> {
    // One snapshot for every file: the first read fixes it, the rollback at drop ends it.
    let tx = conn.unchecked_transaction()?;
    let mut records = BTreeMap::new();
    for t in TABLES {
        records.insert(t.file.to_string(), dump(&tx, t, &dir.join(t.file))?);
    }
    let markdown_files = markdown::write(&tx, dir)?;
    let schema_version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let files: Map<String, Value> = records.iter().map(|(f, n)| (f.clone(), json!({ "records": n }))).collect();
    let manifest = json!({
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "schema_version": schema_version.max(schema::SCHEMA_VERSION),
        "exported_at": ms_to_rfc3339(now_ms()),
        "generator": format!("openhuman-memory {}", env!("CARGO_PKG_VERSION")),
        // Lone chat messages carry the message they answer (`metadata.context`); an export
        // without this mark was written before they did, and its import gives them theirs.
        "chat_context": true,
        "files": files,
        "markdown": { "dir": super::MARKDOWN_DIR, "files": markdown_files },
    });
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
    let path = dir.join(MANIFEST);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok((records, markdown_files))
}

/// Writes one table's rows to `path`, one JSON object per line; returns how many.
fn dump(conn: &Connection, t: &Table, path: &Path) -> Result<u64, MemoryError> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    let mut stmt = conn.prepare(t.select)?;
    let mut rows = stmt.query([])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let mut obj = Map::with_capacity(t.columns.len());
        for (i, col) in t.columns.iter().enumerate() {
            obj.insert((*col).to_string(), cell(r.get_ref(i)?, t.json.contains(col)));
        }
        let line = serde_json::to_string(&Value::Object(obj)).unwrap_or_default();
        writeln!(out, "{line}").with_context(|| format!("writing {}", path.display()))?;
        n += 1;
    }
    out.flush().with_context(|| format!("writing {}", path.display()))?;
    Ok(n)
}

/// A SQLite value as JSON; a column that holds JSON text is written as that JSON.
fn cell(v: ValueRef<'_>, is_json: bool) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => json!(n),
        ValueRef::Real(f) => json!(f),
        ValueRef::Text(b) => {
            let s = String::from_utf8_lossy(b);
            match is_json.then(|| serde_json::from_str::<Value>(&s).ok()).flatten() {
                Some(v) => v,
                None => Value::String(s.into_owned()),
            }
        }
        // The schema has no blob columns; one would be a damaged row, kept as hex.
        ValueRef::Blob(b) => Value::String(hex::encode(b)),
    }
}
