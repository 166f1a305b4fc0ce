//! The crate's one error type, [`FormatError`]: why a file could not be read as the format its
//! kind says. Every message is complete on its own and goes to users verbatim.

/// Why a file is not readable as its format; the message says how it falls short.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The bytes are not text in any encoding this crate reads (binary data).
    #[error(
        "not text: neither UTF-8 nor another text encoding (read as {encoding} it holds control bytes; binary data?)"
    )]
    NotText { encoding: &'static str },
    /// A PDF whose pages hold no text (a scan); nothing is guessed by OCR.
    #[error("the PDF has no text layer (a scanned image?); nothing to ingest")]
    NoTextLayer,
    /// The file is not in the shape of its format; the message names the shape and the fault.
    #[error("{0}")]
    Malformed(String),
}

impl FormatError {
    pub(crate) fn malformed(message: impl Into<String>) -> FormatError {
        FormatError::Malformed(message.into())
    }
}
