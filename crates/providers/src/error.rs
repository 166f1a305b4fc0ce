//! The error of every provider call. Its text is what the user (or the client's model) reads:
//! what failed, at which host, and what to do; keys and credential-like values never appear.

use crate::http::HttpError;

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The provider cannot be used under the current config; the text names the key to set.
    #[error("{0}")]
    NotConfigured(String),
    /// The call failed on the way or the service answered with an error (retries are done).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// An argument the caller passed is not one the provider accepts; the text lists valid ones.
    #[error("{0}")]
    InvalidInput(String),
    /// The service answered, but not with what its API documents.
    #[error("{0}")]
    BadReply(String),
}
