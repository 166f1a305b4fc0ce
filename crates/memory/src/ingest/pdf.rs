//! PDF files → document chunks: the text of each page, extracted by `pdf-extract` (pure Rust,
//! on `lopdf`), chunked as plain text with the page number in each chunk's metadata. A PDF with
//! no text layer (a scan) is an error that says so; nothing is guessed by OCR.

use std::path::Path;

use serde_json::json;

use super::docs;
use crate::chunker::Format;
use crate::error::MemoryError;
use crate::store::{NewChunk, NewSource};

pub(crate) fn parse(
    bytes: &[u8],
    path: &Path,
    mtime_ms: i64,
    origin: &str,
) -> Result<(Vec<NewChunk>, Vec<NewSource>), MemoryError> {
    // The extractor has panicked on malformed files in the past; one bad PDF must not take
    // the whole ingest down with it.
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| MemoryError::Parse("the PDF reader failed on this file (malformed PDF?)".into()))?
        .map_err(|e| MemoryError::Parse(format!("not a readable PDF: {e}")))?;
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(MemoryError::Parse("the PDF has no text layer (a scanned image?); nothing to ingest".into()));
    }
    let mut chunks = Vec::new();
    let mut sources = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let (page_chunks, s) = docs::parse_titled(page, path, Format::Plain, None, mtime_ms, origin);
        for mut chunk in page_chunks {
            chunk.seq = chunks.len() as i64;
            chunk.metadata.insert("page".into(), json!(i + 1));
            chunks.push(chunk);
        }
        if sources.is_empty() {
            sources = s;
        }
    }
    Ok((chunks, sources))
}
