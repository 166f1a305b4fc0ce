//! Opaque page cursors shared by every listing that pages (`memory.fetch`, `memory.list`,
//! `tree.browse`, `tree.top_entities`, `tree.list_sources`). A cursor is base64url of a small
//! JSON object: a fingerprint of what is being paged (method and filter), plus either an offset
//! into a ranked list or the keyset position of the last row returned (its sort value and a
//! tie-breaker). A cursor from another listing or filter is refused rather than silently paging
//! something else; a damaged one is refused with the advice to start again without it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::MemoryError;
use super::params::invalid;
use super::util::sha256_hex;

/// The longest cursor accepted, in characters (the schemas say the same).
pub(crate) const MAX_CHARS: usize = 1024;

#[derive(Serialize, Deserialize, Default, Debug, PartialEq)]
pub(crate) struct Cursor {
    /// Fingerprint of what is being paged.
    pub h: String,
    /// Offset into a ranked list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o: Option<usize>,
    /// Keyset: the last row's sort value (a time or a count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t: Option<i64>,
    /// Keyset tie-breaker when it is a number (a rowid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r: Option<i64>,
    /// Keyset tie-breaker when it is text (a source or entity id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<String>,
}

/// A short hash of what a cursor pages, so a cursor only continues its own listing.
pub(crate) fn fingerprint(parts: &[&str]) -> String {
    sha256_hex(parts.join("\u{1f}").as_bytes())[..16].to_string()
}

pub(crate) fn encode(c: &Cursor) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(c).unwrap_or_default())
}

/// The cursor in `s` (none when absent), checked against the fingerprint `expect`.
pub(crate) fn decode(s: &Option<String>, expect: &str) -> Result<Option<Cursor>, MemoryError> {
    let Some(s) = s else { return Ok(None) };
    let bad = || {
        invalid(
            "cursor is not valid; pass next_cursor from the previous page unchanged, or start again without a cursor",
        )
    };
    if s.len() > MAX_CHARS {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(s.trim()).map_err(|_| bad())?;
    let c: Cursor = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if c.h != expect {
        return Err(invalid("cursor belongs to a different query, filter or listing; start again without a cursor"));
    }
    Ok(Some(c))
}

/// The keyset position of a cursor as (sort value, numeric tie-breaker); a cursor of this
/// listing without one is damaged.
pub(crate) fn keyset_rowid(c: &Cursor) -> Result<(i64, i64), MemoryError> {
    match (c.t, c.r) {
        (Some(t), Some(r)) => Ok((t, r)),
        _ => Err(damaged()),
    }
}

/// The keyset position of a cursor as (sort value, text tie-breaker).
pub(crate) fn keyset_key(c: &Cursor) -> Result<(i64, String), MemoryError> {
    match (c.t, &c.k) {
        (Some(t), Some(k)) => Ok((t, k.clone())),
        _ => Err(damaged()),
    }
}

fn damaged() -> MemoryError {
    invalid("cursor is not valid for this listing; start again without a cursor")
}
