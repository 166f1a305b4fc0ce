//! Reading a message off the wire, bounded and exact. A batch is counted while it is read and
//! refused past [`MAX_BATCH`] elements before any of them becomes a `Value`, so one line under
//! the line limit cannot turn into millions of values and futures. A request id is answered with
//! the very text the client sent: JSON numbers that an `f64` cannot hold (`3555727065.2172546`,
//! `18446744073709551616`) keep their text instead of coming back rounded.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// Most messages in one batch.
pub const MAX_BATCH: usize = 256;

/// A request id as it goes back to the client: the parsed value, or, for a number that parsing
/// would change, its original JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum Id {
    Value(Value),
    /// JSON text of a number that does not survive a trip through `f64`.
    Exact(Box<str>),
}

impl Id {
    pub fn null() -> Id {
        Id::Value(Value::Null)
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Id::Value(Value::Null))
    }

    /// The id as JSON text.
    pub fn write(&self, out: &mut String) {
        match self {
            Id::Value(v) => out.push_str(&serde_json::to_string(v).unwrap_or_default()),
            Id::Exact(text) => out.push_str(text),
        }
    }

    /// The id as a value (an exact id parsed again, so possibly rounded): for tests and logs.
    pub fn to_value(&self) -> Value {
        match self {
            Id::Value(v) => v.clone(),
            Id::Exact(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

impl From<Value> for Id {
    fn from(v: Value) -> Id {
        Id::Value(v)
    }
}

impl From<&Value> for Id {
    fn from(v: &Value) -> Id {
        Id::Value(v.clone())
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Id {
        Id::Value(n.into())
    }
}

/// One decoded message (an object, or a batch's array of them) and, where parsing changed a
/// numeric id, that id's original text (one slot per batch element; one for a single message).
#[derive(Debug, Clone)]
pub struct Incoming {
    pub value: Value,
    exact_ids: Vec<Option<Box<str>>>,
}

/// One message and, when parsing changed its numeric id, that id's original text.
pub type Part = (Value, Option<Box<str>>);

/// Why a line or body is not a message we read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("batch of more than {MAX_BATCH} messages; send at most {MAX_BATCH} per batch")]
    BatchTooLarge,
}

impl Incoming {
    /// A message built in memory (tests, the HTTP transport's own requests).
    pub fn from_value(value: Value) -> Incoming {
        Incoming { value, exact_ids: Vec::new() }
    }

    /// Decodes one JSON-RPC message or batch from `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Incoming, ReadError> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'[') {
            let value: Value = serde_json::from_slice(bytes)?;
            let exact = if has_inexact_id(&value) { exact_id_in(std::str::from_utf8(bytes).ok()) } else { None };
            return Ok(Incoming { value, exact_ids: vec![exact] });
        }
        let elements = serde_json::from_slice::<Bounded<'_>>(bytes).map_err(|e| {
            if e.to_string().starts_with(TOO_LARGE) { ReadError::BatchTooLarge } else { ReadError::Json(e) }
        })?;
        let mut values = Vec::with_capacity(elements.0.len());
        let mut exact_ids = Vec::with_capacity(elements.0.len());
        for raw in elements.0 {
            let value: Value = serde_json::from_str(raw.get())?;
            exact_ids.push(if has_inexact_id(&value) { exact_id_in(Some(raw.get())) } else { None });
            values.push(value);
        }
        Ok(Incoming { value: Value::Array(values), exact_ids })
    }

    /// Splits a batch into its elements (each with its exact id), or returns the one message.
    pub fn into_parts(self) -> Result<Vec<Part>, Part> {
        let mut ids = self.exact_ids.into_iter().chain(std::iter::repeat(None));
        match self.value {
            Value::Array(items) => Ok(items.into_iter().map(|v| (v, ids.next().flatten())).collect()),
            other => Err((other, ids.next().flatten())),
        }
    }
}

/// Whether `msg` (an object) has a numeric id that parsing may have changed: only floats can
/// (integers up to 2^64 - 1 are held exactly; larger ones and fractions become `f64`).
fn has_inexact_id(msg: &Value) -> bool {
    matches!(msg.get("id"), Some(Value::Number(n)) if n.is_f64())
}

/// The `id` member's text in one message's JSON text.
fn exact_id_in(text: Option<&str>) -> Option<Box<str>> {
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let only: IdOnly<'_> = serde_json::from_str(text?).ok()?;
    only.id.map(|raw| raw.get().into())
}

const TOO_LARGE: &str = "openhuman: batch too large";

/// A batch's elements as borrowed JSON text, refused past `MAX_BATCH` while it is read.
struct Bounded<'a>(Vec<&'a RawValue>);

impl<'de> Deserialize<'de> for Bounded<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Elements;
        impl<'de> Visitor<'de> for Elements {
            type Value = Bounded<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC batch (an array of messages)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bounded<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    if out.len() == MAX_BATCH {
                        return Err(de::Error::custom(TOO_LARGE));
                    }
                    out.push(raw);
                }
                Ok(Bounded(out))
            }
        }
        d.deserialize_seq(Elements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply_id(line: &str) -> String {
        let (value, exact) = Incoming::parse(line.as_bytes()).unwrap().into_parts().unwrap_err();
        let id = exact.map(Id::Exact).unwrap_or_else(|| Id::from(&value["id"]));
        let mut out = String::new();
        id.write(&mut out);
        out
    }

    #[test]
    fn ids_come_back_as_sent() {
        for id in [
            "3555727065.2172546",
            "18446744073709551616",
            "-0.1000000000000000055511",
            "1.0",
            "7",
            "\"a\"",
            "18446744073709551615",
        ] {
            assert_eq!(reply_id(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)), id);
        }
        let batch = Incoming::parse(br#"[{"id":2.50000000000000001,"method":"a"},{"id":3,"method":"b"}, 5]"#).unwrap();
        let parts = batch.into_parts().unwrap();
        assert_eq!(parts[0].1.as_deref(), Some("2.50000000000000001"));
        assert_eq!(parts[1].1, None);
        assert_eq!(parts[2].0, Value::from(5));
    }

    #[test]
    fn batches_are_counted_before_they_are_built() {
        let ok = format!("[{}]", vec!["{}"; MAX_BATCH].join(","));
        assert!(Incoming::parse(ok.as_bytes()).is_ok());
        let big = format!("[{}]", vec!["{}"; 2_700_000].join(","));
        assert!(matches!(Incoming::parse(big.as_bytes()), Err(ReadError::BatchTooLarge)));
        assert!(matches!(Incoming::parse(b"[1, {oops"), Err(ReadError::Json(_))));
        assert!(matches!(Incoming::parse(b"{oops"), Err(ReadError::Json(_))));
    }
}
