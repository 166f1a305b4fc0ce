//! The export's reading copy: `markdown/<kind>/<name>.md`, one file per source, its chunks in
//! order with their titles, times, tags and the notes written on them. Only for people to read;
//! `import` uses the JSON Lines files.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};
use serde_json::{Map, Value};

use super::MARKDOWN_DIR;
use crate::error::{MemoryError, ResultExt};
use crate::store::meta_string;
use crate::util::{ms_to_rfc3339, sha256_hex, slug};

/// Writes the tree under `dir/markdown/`; returns how many files.
pub(crate) fn write(conn: &Connection, dir: &Path) -> Result<u64, MemoryError> {
    let root = dir.join(MARKDOWN_DIR);
    let mut stmt = conn.prepare(
        "SELECT source_id, id, title, content, timestamp_ms, provenance, metadata FROM chunks
         ORDER BY source_id, seq_in_source, timestamp_ms, rowid",
    )?;
    let mut rows = stmt.query([])?;
    let mut current: Option<(String, BufWriter<File>, PathBuf)> = None;
    let mut files = 0;
    while let Some(r) = rows.next()? {
        let source_id: String = r.get(0)?;
        if current.as_ref().is_none_or(|(s, _, _)| *s != source_id) {
            if let Some((_, mut w, path)) = current.take() {
                w.flush().with_context(|| format!("writing {}", path.display()))?;
            }
            let (w, path) = open_source(conn, &root, &source_id)?;
            current = Some((source_id.clone(), w, path));
            files += 1;
        }
        let Some((_, w, path)) = current.as_mut() else { continue };
        let chunk = Chunk {
            id: r.get(1)?,
            title: r.get(2)?,
            content: r.get(3)?,
            timestamp_ms: r.get(4)?,
            provenance: r.get(5)?,
            metadata: serde_json::from_str(&r.get::<_, String>(6)?).unwrap_or_default(),
        };
        let text = chunk.render(conn)?;
        w.write_all(text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some((_, mut w, path)) = current {
        w.flush().with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(files)
}

/// Creates the file of one source and writes its heading; names are the display name's slug
/// plus a short hash of the source id, so two sources never share a file.
fn open_source(conn: &Connection, root: &Path, source_id: &str) -> Result<(BufWriter<File>, PathBuf), MemoryError> {
    let (kind, display, metadata): (String, String, String) = conn
        .prepare_cached("SELECT source_kind, display_name, metadata FROM sources WHERE source_id = ?1")?
        .query_row([source_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?
        .unwrap_or_else(|| ("unknown".into(), source_id.to_string(), "{}".into()));
    let folder = root.join(slug(&kind));
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let mut name: String = slug(&display).chars().take(60).collect();
    if name.is_empty() {
        name = "source".into();
    }
    let path = folder.join(format!("{name}-{}.md", &sha256_hex(source_id.as_bytes())[..8]));
    let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::new(file);
    let mut head = format!("# {}\n\n- source: `{source_id}` ({kind})\n", one_line(&display));
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&metadata) {
        for (k, v) in &m {
            if let Some(s) = meta_string(v) {
                head.push_str(&format!("- {k}: {}\n", one_line(&s)));
            }
        }
    }
    w.write_all(head.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok((w, path))
}

struct Chunk {
    id: String,
    title: Option<String>,
    content: String,
    timestamp_ms: i64,
    provenance: String,
    metadata: Map<String, Value>,
}

impl Chunk {
    fn render(&self, conn: &Connection) -> Result<String, MemoryError> {
        let heading =
            self.metadata.get("heading").and_then(Value::as_str).or(self.title.as_deref()).unwrap_or("").to_string();
        let tags: Vec<String> = conn
            .prepare_cached(
                "SELECT DISTINCT t.tag FROM chunk_tags t JOIN chunks c ON c.rowid = t.chunk_rowid WHERE c.id = ?1
                 ORDER BY t.tag",
            )?
            .query_map([&self.id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut out = String::from("\n");
        if !heading.is_empty() {
            out.push_str(&format!("## {}\n\n", one_line(&heading)));
        }
        out.push_str(&format!("_{} · {} · chunk `{}`", ms_to_rfc3339(self.timestamp_ms), self.provenance, self.id));
        if !tags.is_empty() {
            out.push_str(&format!(" · tags: {}", tags.join(", ")));
        }
        out.push_str("_\n\n");
        out.push_str(self.content.trim_end());
        out.push('\n');
        let notes: Vec<(String, String)> = conn
            .prepare_cached("SELECT text, provenance FROM notes WHERE chunk_id = ?1 ORDER BY created_at_ms, item_id")?
            .query_map([&self.id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (text, by) in notes {
            out.push_str(&format!("\n> **Note** ({by}):\n"));
            for line in text.lines() {
                out.push_str(&format!("> {line}\n"));
            }
        }
        Ok(out)
    }
}

/// Text for a heading or list item: line breaks become spaces.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
