//! The engine's own checks of what Rust callers hand its write methods (the typed operations'
//! parameters are checked by their schema at the wire, see `ops`): each refusal names the
//! parameter.

use super::MemoryError;

pub(crate) fn invalid(msg: impl Into<String>) -> MemoryError {
    MemoryError::InvalidParams(msg.into())
}

/// A required string that must not be blank.
pub(crate) fn required<'a>(name: &str, s: &'a str) -> Result<&'a str, MemoryError> {
    if s.trim().is_empty() {
        return Err(invalid(format!("{name} must not be blank")));
    }
    Ok(s)
}
