//! Parsing of the JSON parameters of the engine's methods: unknown keys are rejected
//! with all of their names, numbers outside their bounds are rejected (never clamped),
//! and blank strings are refused, each with a message that names the parameter.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::MemoryError;

pub(crate) fn invalid(msg: impl Into<String>) -> MemoryError {
    MemoryError::InvalidParams(msg.into())
}

/// Checks that `v` is an object (null counts as `{}`) whose keys are all in `allowed`.
pub(crate) fn check_keys<'a>(
    v: &'a Value,
    allowed: &[&str],
    what: &str,
) -> Result<Option<&'a Map<String, Value>>, MemoryError> {
    let obj = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        other => {
            return Err(invalid(format!("{what} must be an object, not {}", type_name(other))));
        }
    };
    let mut unknown: Vec<&str> = obj.keys().map(|k| k.as_str()).filter(|k| !allowed.contains(k)).collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        let mut allowed = allowed.to_vec();
        allowed.sort_unstable();
        return Err(invalid(format!(
            "unknown {what} key{} {} (allowed: {})",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", "),
            allowed.join(", ")
        )));
    }
    Ok(Some(obj))
}

/// Deserialises `v` into `T` after [`check_keys`].
pub(crate) fn parse<T: DeserializeOwned>(v: Value, allowed: &[&str], what: &str) -> Result<T, MemoryError> {
    check_keys(&v, allowed, what)?;
    let v = if v.is_null() { Value::Object(Map::new()) } else { v };
    serde_json::from_value(v).map_err(|e| invalid(format!("{what}: {e}")))
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A count parameter: `default` when absent, an error outside `min..=max`.
pub(crate) fn bounded(
    name: &str,
    v: Option<i64>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, MemoryError> {
    match v {
        None => Ok(default),
        Some(n) if n >= min as i64 && n <= max as i64 => Ok(n as usize),
        Some(n) => Err(invalid(format!("{name} must be between {min} and {max}, got {n}"))),
    }
}

/// A required string that must not be blank.
pub(crate) fn required<'a>(name: &str, s: &'a str) -> Result<&'a str, MemoryError> {
    if s.trim().is_empty() {
        return Err(invalid(format!("{name} must not be blank")));
    }
    Ok(s)
}

/// An optional string that, when present, must not be blank.
pub(crate) fn optional<'a>(name: &str, s: &'a Option<String>) -> Result<Option<&'a str>, MemoryError> {
    match s {
        Some(v) => required(name, v).map(Some),
        None => Ok(None),
    }
}

/// A list of non-blank strings of at most `max_len` entries.
pub(crate) fn string_list(name: &str, v: &Option<Vec<String>>, max_len: usize) -> Result<Vec<String>, MemoryError> {
    let Some(list) = v else { return Ok(Vec::new()) };
    if list.len() > max_len {
        return Err(invalid(format!("{name} has {} entries; at most {max_len} are allowed", list.len())));
    }
    for (i, s) in list.iter().enumerate() {
        if s.trim().is_empty() {
            return Err(invalid(format!("{name}[{i}] must not be blank")));
        }
    }
    Ok(list.clone())
}
