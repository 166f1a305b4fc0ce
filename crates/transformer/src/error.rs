//! `TransformerError`: why a model directory could not be used, installed or run. Every
//! message names the file or directory and says what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TransformerError {
    /// A file could not be read, written or listed.
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    /// The directory or archive does not hold a usable model (a file missing, a config that
    /// does not parse, an unsupported pooling).
    #[error("{0}")]
    Invalid(String),
    /// The weights or tokenizer were found but could not be loaded or run.
    #[error("{0}")]
    Model(String),
    /// No installed model of that name.
    #[error("{0}")]
    NotFound(String),
}

impl TransformerError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| TransformerError::Io { what, path, source }
    }
}
