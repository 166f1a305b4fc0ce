//! Documents (what `openhuman_formats` reads from Markdown, text, HTML and PDF files) →
//! document chunks, one source per file; a PDF's chunks say their page. Markdown's front-matter `tags:` and inline `#tags`
//! become the chunks' own tags, and its `[[wiki links]]` go with the source to the `links`
//! table (see `vault`).

use std::path::Path;

use openhuman_formats::{Body, Document, TextFormat};
use serde_json::{Map, Value, json};

use crate::chunker::{Format, chunk_text};
use crate::store::{NewChunk, NewSource};
use crate::types::SourceKind;
use crate::vault;

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

/// The chunks and source of a document; each page of a paged one is chunked apart.
pub(crate) fn parse(doc: Document, path: &Path, mtime_ms: i64, origin: &str) -> (Vec<NewChunk>, Vec<NewSource>) {
    let format = match doc.format {
        TextFormat::Markdown => Format::Markdown,
        TextFormat::Plain => Format::Plain,
    };
    let pages = match doc.body {
        Body::Text(text) => return parse_titled(&text, path, format, doc.title, mtime_ms, origin),
        Body::Pages(pages) => pages,
    };
    let mut chunks = Vec::new();
    let mut sources = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let (page_chunks, s) = parse_titled(page, path, format, doc.title.clone(), mtime_ms, origin);
        for mut chunk in page_chunks {
            chunk.seq = chunks.len() as i64;
            chunk.metadata.insert("page".into(), json!(i + 1));
            chunks.push(chunk);
        }
        if sources.is_empty() {
            sources = s;
        }
    }
    (chunks, sources)
}

/// The chunks and source of one text. A title found elsewhere (an HTML `<title>`) wins; None
/// takes the front matter's, then looks for a level-one heading, then takes the file name.
fn parse_titled(
    text: &str,
    path: &Path,
    format: Format,
    title: Option<String>,
    mtime_ms: i64,
    origin: &str,
) -> (Vec<NewChunk>, Vec<NewSource>) {
    let markdown = format == Format::Markdown;
    let fm = if markdown { vault::front_matter(text) } else { vault::FrontMatter::default() };
    let text = &text[fm.body_start..];
    let title = title
        .filter(|t| !t.trim().is_empty())
        .or_else(|| fm.title.clone())
        .unwrap_or_else(|| title_of(text, path, format));
    let mut all_tags = fm.tags.clone();
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
            let mut tags = fm.tags.clone();
            if markdown {
                for t in vault::inline_tags(&piece.content) {
                    if !tags.contains(&t) {
                        tags.push(t.clone());
                    }
                    if !all_tags.contains(&t) {
                        all_tags.push(t);
                    }
                }
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
                tags,
                project: None,
            }
        })
        .collect();
    let mut meta = Map::new();
    meta.insert("file_path".into(), json!(path_str));
    if !all_tags.is_empty() {
        meta.insert("tags".into(), json!(all_tags));
    }
    if markdown {
        let links: Vec<Value> = vault::wiki_links(text)
            .into_iter()
            .map(|l| json!({ "target": l.target, "heading": l.heading, "alias": l.alias }))
            .collect();
        meta.insert(crate::links::META_KEY.into(), Value::Array(links));
    }
    let source = NewSource { source_id, kind: SourceKind::Document, display_name: title, metadata: meta };
    (chunks, vec![source])
}
