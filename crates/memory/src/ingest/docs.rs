//! Document text → document chunks (one source per file): Markdown and plain text files, and
//! the text that `html` and `pdf` extract.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::chunker::{Format, chunk_text};
use crate::store::{NewChunk, NewSource};
use crate::types::SourceKind;

/// The first level-one heading, else the file name.
fn title_of(text: &str, path: &Path, format: Format) -> String {
    if format == Format::Markdown {
        let mut in_fence = false;
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("```") || t.starts_with("~~~") {
                in_fence = !in_fence;
            }
            if !in_fence && let Some(h) = line.strip_prefix("# ") {
                let h = h.trim().trim_end_matches('#').trim();
                if !h.is_empty() {
                    return h.to_string();
                }
            }
        }
    }
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

pub(crate) fn parse(
    text: &str,
    path: &Path,
    markdown: bool,
    mtime_ms: i64,
    origin: &str,
) -> (Vec<NewChunk>, Vec<NewSource>) {
    let format = if markdown { Format::Markdown } else { Format::Plain };
    parse_titled(text, path, format, None, mtime_ms, origin)
}

/// `parse` with a title found elsewhere (an HTML `<title>`, a PDF's metadata); None looks
/// for a level-one heading, then takes the file name.
pub(crate) fn parse_titled(
    text: &str,
    path: &Path,
    format: Format,
    title: Option<String>,
    mtime_ms: i64,
    origin: &str,
) -> (Vec<NewChunk>, Vec<NewSource>) {
    let title = title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| title_of(text, path, format));
    let path_str = path.to_string_lossy().into_owned();
    let folder = path.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let source_id = origin.to_string();
    let chunks = chunk_text(text, format)
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut metadata: Map<String, Value> = Map::new();
            metadata.insert("file_path".into(), json!(path_str));
            metadata.insert("folder".into(), json!(folder));
            metadata.insert("title".into(), json!(title));
            if let Some(h) = piece.heading {
                metadata.insert("heading".into(), json!(h));
            }
            NewChunk {
                kind: SourceKind::Document,
                source_id: source_id.clone(),
                source_ref: path_str.clone(),
                origin: origin.to_string(),
                owner: None,
                provenance: "ingest".into(),
                timestamp_ms: mtime_ms,
                seq: i as i64,
                title: Some(title.clone()),
                content: piece.content,
                metadata,
                tags: Vec::new(),
            }
        })
        .collect();
    let mut meta = Map::new();
    meta.insert("file_path".into(), json!(path_str));
    let source = NewSource { source_id, kind: SourceKind::Document, display_name: title, metadata: meta };
    (chunks, vec![source])
}
