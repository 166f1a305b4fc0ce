//! The engine's one error type, [`MemoryError`], and the private `ResultExt` that adds to an
//! I/O or SQLite failure what the engine was doing when it failed.
//!
//! Every message is complete on its own: a variant that wraps a cause prints what failed (if
//! the engine knows more than the cause says) and the cause with its whole `source()` chain,
//! `: `-separated, as `anyhow`'s `{:#}` did. No variant reports its cause again as `source()`,
//! so `{e}`, `{e:#}` and the chain of an `anyhow::Error` made from it all print the same text,
//! each part once. The wrapped errors stay reachable through the variants' fields.

use std::error::Error as StdError;
use std::fmt;
use std::path::PathBuf;

use crate::embed::EmbedError;

/// Why an engine call failed. `InvalidParams` and `NotFound` are the caller's to fix and
/// their text goes to users verbatim; the other variants are failures of the store, its
/// files or the embedder.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The caller's parameters are wrong; the message names the parameter.
    #[error("{0}")]
    InvalidParams(String),
    /// What the caller asked for does not exist; the message says where ids come from.
    #[error("{0}")]
    NotFound(String),
    /// Another process holds the store's lock (`data_dir/LOCK`).
    #[error("the memory store in {} is in use by another process (is the daemon running?)", .0.display())]
    InUse(PathBuf),
    /// The database was written by a newer build of the engine.
    #[error(
        "the memory database has schema version {found}, newer than this build ({supported}); upgrade openhumand-mcp"
    )]
    SchemaTooNew { found: i64, supported: i64 },
    /// A SQLite call failed.
    #[error("{}", Chain(.0))]
    Sqlite(rusqlite::Error),
    /// A SQLite call failed while the engine was doing `what` (e.g. "opening <path>").
    #[error("{what}: {}", Chain(.error))]
    Database { what: String, error: rusqlite::Error },
    /// The full-text index (tantivy) failed.
    #[error("{}", Chain(.0))]
    Index(tantivy::TantivyError),
    /// A file operation failed while the engine was doing `what` (e.g. "creating <path>").
    #[error("{what}: {}", Chain(.error))]
    Io { what: String, error: std::io::Error },
    /// The embedder failed or answered with the wrong number of vectors.
    #[error("{}", Chain(.0))]
    Embed(EmbedError),
    /// A file given to ingest is not in the format of its kind; the message says how.
    #[error("{0}")]
    Parse(String),
    /// One of the engine's own files (an index, the embedding table) is damaged or of an
    /// unknown layout; the message names it.
    #[error("{0}")]
    Corrupt(String),
    /// A write was committed to the database but the keyword index could not commit it, so
    /// search does not find it yet. The index catches up from the database at the next write
    /// or start (or `reindex`) once the cause (say, a full disk) is gone.
    #[error(
        "saved, but not searchable yet: the keyword index could not be updated ({0}). It catches up by itself \
         once the cause is fixed (for a full disk, free space); `openhumand-mcp reindex` rebuilds it"
    )]
    NotSearchable(String),
    /// The shared store (a database server) cannot be reached: writes are refused, reads are
    /// answered from this daemon's copy.
    #[error(
        "the shared memory store is unreachable ({0}); nothing was saved. Reads still work from this machine's copy; \
         writes work again once the server is back (check it is running and `[memory.postgres] url_env`)"
    )]
    SharedUnavailable(String),
    /// This copy of the shared store is loading a snapshot (a new device, or one away past
    /// the change log's window): writes are refused until it is done, reads answer from it.
    #[error("{0}; nothing was saved")]
    SharedLoading(String),
    /// The shared store refused or failed an operation; the message says what.
    #[error("shared memory store: {0}")]
    Shared(String),
    /// The connection to the shared store went away while a write was committing, and whether
    /// the server holds it could not be asked: it may be saved or not.
    #[error(
        "the shared memory store went away while this write was committing ({0}). It may or may not have been \
         saved: once the server is back, search memory for it before writing it again. Reads still work from this \
         machine's copy"
    )]
    SharedUncertain(String),
    /// Another condition the engine detected itself (an internal invariant that did not hold).
    #[error("{0}")]
    Other(String),
}

impl From<rusqlite::Error> for MemoryError {
    fn from(e: rusqlite::Error) -> Self {
        MemoryError::Sqlite(e)
    }
}

impl From<tantivy::TantivyError> for MemoryError {
    fn from(e: tantivy::TantivyError) -> Self {
        MemoryError::Index(e)
    }
}

/// The embedder answered a batch of `texts` texts with `vectors` vectors.
pub(crate) fn wrong_count(vectors: usize, texts: usize) -> MemoryError {
    MemoryError::Embed(EmbedError(format!("embedder returned {vectors} vectors for {texts} texts")))
}

/// A file that is not in its format's shape is a parse failure, its message kept as it is.
impl From<openhuman_formats::FormatError> for MemoryError {
    fn from(e: openhuman_formats::FormatError) -> Self {
        MemoryError::Parse(e.to_string())
    }
}

impl From<EmbedError> for MemoryError {
    fn from(e: EmbedError) -> Self {
        MemoryError::Embed(e)
    }
}

/// Displays an error followed by its `source()` chain, `: `-separated.
struct Chain<'a>(&'a dyn StdError);

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

/// A cause that can be wrapped with what the engine was doing.
pub(crate) trait Cause {
    fn doing(self, what: String) -> MemoryError;
}

impl Cause for std::io::Error {
    fn doing(self, what: String) -> MemoryError {
        MemoryError::Io { what, error: self }
    }
}

impl Cause for rusqlite::Error {
    fn doing(self, what: String) -> MemoryError {
        MemoryError::Database { what, error: self }
    }
}

/// Adds what the engine was doing to an I/O or SQLite failure.
pub(crate) trait ResultExt<T> {
    fn context(self, what: &str) -> Result<T, MemoryError>;
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T, MemoryError>;
}

impl<T, E: Cause> ResultExt<T> for Result<T, E> {
    fn context(self, what: &str) -> Result<T, MemoryError> {
        self.map_err(|e| e.doing(what.to_string()))
    }

    fn with_context(self, what: impl FnOnce() -> String) -> Result<T, MemoryError> {
        self.map_err(|e| e.doing(what()))
    }
}

/// Message for a chunk id that does not exist.
pub(crate) fn no_chunk(id: &str) -> MemoryError {
    MemoryError::NotFound(format!("no chunk with id {id}; ids come from memory.search/recall/tree.browse"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_the_cause_chain_once() {
        let e = Err::<(), _>(std::io::Error::other("disk full")).context("writing x").unwrap_err();
        assert_eq!(e.to_string(), "writing x: disk full");
        assert!(e.source().is_none());
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        );
        let e = MemoryError::from(busy);
        assert_eq!(e.to_string(), "database is locked: Error code 5: database is locked");
        assert!(e.source().is_none());
        let e = MemoryError::InUse(PathBuf::from("/d"));
        assert_eq!(e.to_string(), "the memory store in /d is in use by another process (is the daemon running?)");
    }
}
