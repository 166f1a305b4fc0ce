//! The typed way onto the memory engine for everything in the daemon that reads or writes it:
//! [`operate`] runs an engine operation (`openhuman_memory::ops`) on the bounded pool,
//! [`blocking`] runs other engine work there, and [`MethodError`] is how either fails. Tools,
//! methods, prompts, resources and the watcher all come through here; it knows no tool and no
//! method table.

use openhuman_memory::{MemoryEngine, MemoryError, Operation};

use crate::state::AppState;

/// Why a method failed. The MCP tools turn all but `Internal` into readable tool errors; the
/// socket and `/rpc` turn them into JSON-RPC errors.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MethodError {
    /// The caller's parameters are wrong; the message names the parameter.
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    NotFound(String),
    /// The backend is switched off or unavailable; the message names the key to set.
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error: {0:#}")]
    Internal(anyhow::Error),
}

impl From<MemoryError> for MethodError {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::InvalidParams(m) => MethodError::InvalidParams(m),
            MemoryError::NotFound(m) => MethodError::NotFound(m),
            other => MethodError::Internal(other.into()),
        }
    }
}

/// Runs `f` on the bounded blocking pool (see `pool`); a job that could not finish is an
/// internal error.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MethodError> + Send + 'static,
) -> Result<T, MethodError> {
    crate::pool::run(f).await.map_err(MethodError::Internal)?
}

/// The memory engine, or why there is none (naming the key to set), after waiting a while for
/// a store that is still opening.
pub(crate) async fn engine(state: &AppState) -> Result<MemoryEngine, MethodError> {
    state.memory_ready().await.map_err(MethodError::Unavailable)
}

/// Runs an engine operation on parameters its schema accepted (or that Rust code built), on the
/// bounded blocking path.
pub(crate) async fn operate<O: Operation>(state: &AppState, params: O::Params) -> Result<O::Output, MethodError> {
    let engine = engine(state).await?;
    blocking(move || O::run(&engine, params).map_err(MethodError::from)).await
}
