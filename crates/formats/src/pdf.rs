//! PDF files → the text of each page, extracted by `pdf-extract` (pure Rust, on `lopdf`). A PDF
//! with no text layer (a scan) is an error that says so; nothing is guessed by OCR.

use crate::error::FormatError;

/// The text of each page, in order.
pub(crate) fn pages(bytes: &[u8]) -> Result<Vec<String>, FormatError> {
    // The extractor has panicked on malformed files in the past; one bad PDF must not take
    // the whole ingest down with it.
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| FormatError::malformed("the PDF reader failed on this file (malformed PDF?)"))?
        .map_err(|e| FormatError::malformed(format!("not a readable PDF: {e}")))?;
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(FormatError::NoTextLayer);
    }
    Ok(pages)
}
