//! Large JSON exports read element by element: a conversations array or a channel's messages
//! is never held as one JSON tree, only one element at a time (an export of hundreds of
//! megabytes would otherwise take gigabytes as `serde_json::Value`s).

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use crate::error::FormatError;

/// A JSON array whose elements go to `each` (with their index) as they are read; usable as the
/// value of a map entry through `MapAccess::next_value_seed`.
pub(crate) struct Elements<F>(pub F);

impl<'de, F: FnMut(usize, Value)> Visitor<'de> for Elements<F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            (self.0)(i, v);
            i += 1;
        }
        Ok(())
    }
}

impl<'de, F: FnMut(usize, Value)> DeserializeSeed<'de> for Elements<F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

/// The file's bytes without a UTF-8 byte-order mark, which JSON readers refuse.
pub(crate) fn without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes)
}

/// Reads a file that is one JSON value with `visitor`; an error names what the file should be.
pub(crate) fn read<'de, V: Visitor<'de>>(bytes: &'de [u8], what: &str, visitor: V) -> Result<V::Value, FormatError> {
    let mut de = serde_json::Deserializer::from_slice(without_bom(bytes));
    let value = de.deserialize_any(visitor).and_then(|v| de.end().map(|()| v));
    value.map_err(|e| FormatError::malformed(format!("not {what}: {e}")))
}
