//! Argument schemas, declared once and used twice: rendered as the JSON Schema in `tools/list`
//! and applied as the validator of every wire call. Validation rejects rather than clamps:
//! unknown names, blank strings, out-of-range numbers, over-long or over-count arrays are all
//! errors that name the argument and the bound. A field may be an alias of another (an older
//! name clients still send): it is checked under its own name and handed on under the other.

use openhuman_common::truncate_bytes;
use serde_json::{Map, Value, json};

/// Why arguments were refused: names the argument and the bound, e.g. "missing required
/// argument `query`" or "`limit` must be at most 100 (got 500)".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgError(pub String);

#[derive(Debug, Clone)]
pub enum ArgKind {
    Str { max_chars: usize, one_of: Option<&'static [&'static str]> },
    Int { min: i64, max: i64, default: Option<i64> },
    Num { min: f64, max: f64 },
    Bool,
    StrList { min_items: usize, max_items: usize, max_item_chars: usize, one_of: Option<&'static [&'static str]> },
    Object(ArgSpec),
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    pub kind: ArgKind,
    /// The field this one is another name for: its value is checked here and handed on under
    /// that name; sending both is an error.
    pub alias_of: Option<&'static str>,
}

/// Default cap on a free-text argument: large enough for documents, small enough to bound memory.
/// Like every string bound here (and JSON Schema's `maxLength`) it counts characters, not bytes.
pub const DEFAULT_MAX_CHARS: usize = 1024 * 1024;

impl Field {
    fn of(name: &'static str, description: &'static str, kind: ArgKind) -> Field {
        Field { name, description, required: false, kind, alias_of: None }
    }
    pub fn string(name: &'static str, description: &'static str) -> Field {
        Field::of(name, description, ArgKind::Str { max_chars: DEFAULT_MAX_CHARS, one_of: None })
    }
    pub fn one_of(name: &'static str, description: &'static str, values: &'static [&'static str]) -> Field {
        Field::of(name, description, ArgKind::Str { max_chars: 256, one_of: Some(values) })
    }
    pub fn int(name: &'static str, description: &'static str, min: i64, max: i64) -> Field {
        Field::of(name, description, ArgKind::Int { min, max, default: None })
    }
    pub fn number(name: &'static str, description: &'static str, min: f64, max: f64) -> Field {
        Field::of(name, description, ArgKind::Num { min, max })
    }
    pub fn boolean(name: &'static str, description: &'static str) -> Field {
        Field::of(name, description, ArgKind::Bool)
    }
    pub fn list(name: &'static str, description: &'static str, max_items: usize, max_item_chars: usize) -> Field {
        Field::of(name, description, ArgKind::StrList { min_items: 0, max_items, max_item_chars, one_of: None })
    }
    pub fn object(name: &'static str, description: &'static str, spec: ArgSpec) -> Field {
        Field::of(name, description, ArgKind::Object(spec))
    }
    /// Makes this field another name for `canonical` (which must be a field of the same spec).
    pub fn alias_of(mut self, canonical: &'static str) -> Field {
        self.alias_of = Some(canonical);
        self
    }
    pub fn required(mut self) -> Field {
        self.required = true;
        self
    }
    /// The longest accepted value, in characters (JSON Schema's `maxLength`).
    pub fn max_chars(mut self, n: usize) -> Field {
        if let ArgKind::Str { max_chars, .. } = &mut self.kind {
            *max_chars = n;
        }
        self
    }
    pub fn default_int(mut self, d: i64) -> Field {
        if let ArgKind::Int { default, .. } = &mut self.kind {
            *default = Some(d);
        }
        self
    }
    pub fn min_items(mut self, n: usize) -> Field {
        if let ArgKind::StrList { min_items, .. } = &mut self.kind {
            *min_items = n;
        }
        self
    }
    pub fn items_one_of(mut self, values: &'static [&'static str]) -> Field {
        if let ArgKind::StrList { one_of, .. } = &mut self.kind {
            *one_of = Some(values);
        }
        self
    }
}

/// An object's fields. Order is the order of `properties` in the rendered schema.
#[derive(Debug, Clone, Default)]
pub struct ArgSpec {
    pub fields: Vec<Field>,
}

impl ArgSpec {
    pub fn new(fields: Vec<Field>) -> ArgSpec {
        ArgSpec { fields }
    }

    pub fn none() -> ArgSpec {
        ArgSpec::default()
    }

    /// The JSON Schema for `inputSchema`: `type: object`, `additionalProperties: false`.
    pub fn json_schema(&self) -> Value {
        let mut props = Map::new();
        let mut required = Vec::new();
        for f in &self.fields {
            props.insert(f.name.to_string(), field_schema(f));
            if f.required {
                required.push(Value::from(f.name));
            }
        }
        let mut schema = json!({ "type": "object", "properties": props, "additionalProperties": false });
        if !required.is_empty() {
            schema["required"] = Value::Array(required);
        }
        schema
    }

    /// Validates `args` (absent or null = `{}`), filling integer defaults.
    pub fn validate(&self, args: &Map<String, Value>) -> Result<Map<String, Value>, ArgError> {
        self.validate_at("", args).map_err(ArgError)
    }

    fn validate_at(&self, prefix: &str, args: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        let mut unknown: Vec<&str> =
            args.keys().map(String::as_str).filter(|k| !self.fields.iter().any(|f| f.name == *k)).collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            let mut accepted: Vec<&str> = self.fields.iter().map(|f| f.name).collect();
            accepted.sort_unstable();
            let place =
                if prefix.is_empty() { String::new() } else { format!(" in `{}`", &prefix[..prefix.len() - 1]) };
            let accepted = if accepted.is_empty() {
                "it takes no arguments".to_string()
            } else {
                format!("accepted: {}", accepted.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "))
            };
            return Err(format!(
                "unknown argument{}{place}: {}; {accepted}",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "),
            ));
        }
        let mut out = Map::new();
        let given = |name: &str| args.get(name).filter(|v| !v.is_null());
        for f in self.fields.iter().filter(|f| f.alias_of.is_none()) {
            // The value sent under this field's name or under one of its aliases (not both).
            let mut sent = given(f.name).map(|v| (f, v));
            for alias in self.fields.iter().filter(|a| a.alias_of == Some(f.name)) {
                let Some(v) = given(alias.name) else { continue };
                if let Some((first, _)) = sent {
                    return Err(format!(
                        "pass either `{prefix}{}` or `{prefix}{}` (two names for one argument), not both",
                        first.name, alias.name
                    ));
                }
                sent = Some((alias, v));
            }
            match sent {
                Some((under, v)) => {
                    out.insert(f.name.to_string(), check(&format!("{prefix}{}", under.name), &under.kind, v)?);
                }
                None if f.required => return Err(format!("missing required argument `{prefix}{}`", f.name)),
                None => {
                    if let ArgKind::Int { default: Some(d), .. } = f.kind {
                        out.insert(f.name.to_string(), Value::from(d));
                    }
                }
            }
        }
        Ok(out)
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(path: &str, kind: &ArgKind, v: &Value) -> Result<Value, String> {
    match kind {
        ArgKind::Str { max_chars, one_of } => {
            let s = v.as_str().ok_or_else(|| format!("argument `{path}` must be a string (got {})", type_name(v)))?;
            check_str(path, s, *max_chars, *one_of)?;
            Ok(v.clone())
        }
        ArgKind::Int { min, max, .. } => {
            let n = match v {
                Value::Number(n) => {
                    n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15).map(|f| f as i64))
                }
                _ => None,
            }
            .ok_or_else(|| format!("argument `{path}` must be an integer (got {})", short(v)))?;
            if n < *min || n > *max {
                return Err(range_msg(path, *min as f64, *max as f64, &n.to_string()));
            }
            Ok(Value::from(n))
        }
        ArgKind::Num { min, max } => {
            let n = v.as_f64().ok_or_else(|| format!("argument `{path}` must be a number (got {})", short(v)))?;
            if !n.is_finite() || n < *min || n > *max {
                return Err(range_msg(path, *min, *max, &n.to_string()));
            }
            Ok(v.clone())
        }
        ArgKind::Bool => {
            v.as_bool().ok_or_else(|| format!("argument `{path}` must be true or false (got {})", short(v)))?;
            Ok(v.clone())
        }
        ArgKind::StrList { min_items, max_items, max_item_chars, one_of } => {
            let items = v
                .as_array()
                .ok_or_else(|| format!("argument `{path}` must be an array of strings (got {})", type_name(v)))?;
            if items.len() > *max_items {
                return Err(format!("argument `{path}` has {} items; the limit is {max_items}", items.len()));
            }
            if items.len() < *min_items {
                return Err(format!(
                    "argument `{path}` needs at least {min_items} item{} (got {})",
                    if *min_items == 1 { "" } else { "s" },
                    items.len()
                ));
            }
            for (i, item) in items.iter().enumerate() {
                let p = format!("{path}[{i}]");
                let s = item
                    .as_str()
                    .ok_or_else(|| format!("argument `{p}` must be a string (got {})", type_name(item)))?;
                check_str(&p, s, *max_item_chars, *one_of)?;
            }
            Ok(v.clone())
        }
        ArgKind::Object(spec) => {
            let map =
                v.as_object().ok_or_else(|| format!("argument `{path}` must be an object (got {})", type_name(v)))?;
            Ok(Value::Object(spec.validate_at(&format!("{path}."), map)?))
        }
    }
}

fn check_str(path: &str, s: &str, max_chars: usize, one_of: Option<&[&str]>) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err(format!("argument `{path}` must not be blank"));
    }
    // A string has no more characters than bytes, so only a long one is counted.
    if s.len() > max_chars {
        let chars = s.chars().count();
        if chars > max_chars {
            return Err(format!("argument `{path}` is {chars} characters long; the limit is {max_chars}"));
        }
    }
    if let Some(values) = one_of
        && !values.contains(&s)
    {
        return Err(format!(
            "argument `{path}` must be one of {} (got {:?})",
            values.join(", "),
            truncate_bytes(s, 64)
        ));
    }
    Ok(())
}

fn range_msg(path: &str, min: f64, max: f64, got: &str) -> String {
    if max >= i64::MAX as f64 {
        format!("argument `{path}` must be at least {min} (got {got})")
    } else {
        format!("argument `{path}` must be between {min} and {max} (got {got})")
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {:?}", truncate_bytes(s, 32)),
        other => type_name(other).to_string(),
    }
}

fn field_schema(f: &Field) -> Value {
    let mut s = match &f.kind {
        ArgKind::Str { max_chars, one_of } => {
            let mut s = json!({ "type": "string", "minLength": 1 });
            if *max_chars != DEFAULT_MAX_CHARS {
                s["maxLength"] = Value::from(*max_chars);
            }
            if let Some(values) = one_of {
                s["enum"] = json!(values);
            }
            s
        }
        ArgKind::Int { min, max, default } => {
            let mut s = json!({ "type": "integer", "minimum": min });
            if *max < i64::MAX {
                s["maximum"] = Value::from(*max);
            }
            if let Some(d) = default {
                s["default"] = Value::from(*d);
            }
            s
        }
        ArgKind::Num { min, max } => json!({ "type": "number", "minimum": min, "maximum": max }),
        ArgKind::Bool => json!({ "type": "boolean" }),
        ArgKind::StrList { min_items, max_items, max_item_chars, one_of } => {
            let mut item = json!({ "type": "string", "minLength": 1, "maxLength": max_item_chars });
            if let Some(values) = one_of {
                item["enum"] = json!(values);
            }
            let mut s = json!({ "type": "array", "items": item, "maxItems": max_items });
            if *min_items > 0 {
                s["minItems"] = Value::from(*min_items);
            }
            s
        }
        ArgKind::Object(spec) => spec.json_schema(),
    };
    s["description"] = Value::from(f.description);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ArgSpec {
        ArgSpec::new(vec![
            Field::string("query", "q").required(),
            Field::int("k", "k", 1, 50).default_int(10),
            Field::one_of("mode", "m", &["keyword", "vector", "hybrid"]),
            Field::number("confidence", "c", 0.0, 1.0),
            Field::list("tags", "t", 50, 128),
            Field::object(
                "filter",
                "f",
                ArgSpec::new(vec![Field::list("kinds", "k", 6, 32).items_one_of(&["document", "note"])]),
            ),
        ])
    }

    fn err(args: Value) -> String {
        spec().validate(args.as_object().unwrap()).unwrap_err().0
    }

    /// Each rejection names the argument and the bound; nothing is clamped or dropped.
    #[test]
    fn rejections_name_argument_and_bound() {
        let cases = [
            (json!({}), "missing required argument `query`"),
            (json!({"query": "  "}), "argument `query` must not be blank"),
            (
                json!({"query": "x", "zeta": 1, "alpha": 2}),
                "unknown arguments: `alpha`, `zeta`; accepted: `confidence`, `filter`, `k`, `mode`, `query`, `tags`",
            ),
            (json!({"query": "x", "k": 80}), "argument `k` must be between 1 and 50 (got 80)"),
            (json!({"query": "x", "k": 0}), "argument `k` must be between 1 and 50 (got 0)"),
            (json!({"query": "x", "k": "5"}), "argument `k` must be an integer (got the string \"5\")"),
            (json!({"query": "x", "k": 2.5}), "argument `k` must be an integer (got number)"),
            (
                json!({"query": "x", "mode": "fuzzy"}),
                "argument `mode` must be one of keyword, vector, hybrid (got \"fuzzy\")",
            ),
            (json!({"query": "x", "mode": ""}), "argument `mode` must not be blank"),
            (json!({"query": "x", "confidence": 1.5}), "argument `confidence` must be between 0 and 1 (got 1.5)"),
            (json!({"query": "x", "tags": vec!["a"; 51]}), "argument `tags` has 51 items; the limit is 50"),
            (
                json!({"query": "x", "tags": ["ok", "x".repeat(129)]}),
                "argument `tags[1]` is 129 characters long; the limit is 128",
            ),
            (json!({"query": "x", "tags": ["ok", 3]}), "argument `tags[1]` must be a string (got integer)"),
            (
                json!({"query": "x", "filter": {"kinds": ["mail"]}}),
                "argument `filter.kinds[0]` must be one of document, note (got \"mail\")",
            ),
            (json!({"query": "x", "filter": {"nope": 1}}), "unknown argument in `filter`: `nope`; accepted: `kinds`"),
            (json!({"query": 7}), "argument `query` must be a string (got integer)"),
        ];
        for (args, want) in cases {
            assert_eq!(err(args.clone()), want, "args: {args}");
        }
    }

    /// `maxLength` counts characters, as JSON Schema does: 128 two-byte characters fit.
    #[test]
    fn lengths_count_characters_not_bytes() {
        let accented = "é".repeat(128);
        assert!(spec().validate(json!({"query": "x", "tags": [accented]}).as_object().unwrap()).is_ok());
        let over = "é".repeat(129);
        assert_eq!(
            err(json!({"query": "x", "tags": [over]})),
            "argument `tags[0]` is 129 characters long; the limit is 128"
        );
        let title = ArgSpec::new(vec![Field::string("title", "t").max_chars(512)]);
        assert!(title.validate(json!({"title": "é".repeat(300)}).as_object().unwrap()).is_ok());
    }

    #[test]
    fn defaults_are_filled_and_valid_input_passes() {
        let out = spec().validate(json!({"query": "x"}).as_object().unwrap()).unwrap();
        assert_eq!(out["k"], 10);
        let out = spec().validate(json!({"query": "x", "k": 50, "confidence": 0}).as_object().unwrap()).unwrap();
        assert_eq!(out["k"], 50);
    }

    #[test]
    fn schema_is_closed_object_with_required() {
        let s = spec().json_schema();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], json!(["query"]));
        assert_eq!(s["properties"]["k"]["maximum"], 50);
        assert_eq!(s["properties"]["filter"]["additionalProperties"], false);
        assert_eq!(
            ArgSpec::none().json_schema(),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    /// An alias is checked under the name the caller used and handed on under the canonical
    /// name; both at once is refused.
    #[test]
    fn aliases_hand_their_value_to_the_canonical_field() {
        let spec = ArgSpec::new(vec![
            Field::int("limit", "l", 1, 50).default_int(10),
            Field::int("k", "old name of limit", 1, 50).alias_of("limit"),
        ]);
        let out = spec.validate(json!({"k": 7}).as_object().unwrap()).unwrap();
        assert_eq!(Value::Object(out), json!({"limit": 7}));
        let out = spec.validate(&Map::new()).unwrap();
        assert_eq!(Value::Object(out), json!({"limit": 10}));
        let e = spec.validate(json!({"k": 70}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.0, "argument `k` must be between 1 and 50 (got 70)");
        let e = spec.validate(json!({"k": 7, "limit": 8}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.0, "pass either `limit` or `k` (two names for one argument), not both");
        assert!(spec.json_schema()["properties"]["k"].is_object(), "an alias is listed like any field");
    }

    #[test]
    fn no_argument_tool_rejects_any_argument() {
        let e = ArgSpec::none().validate(json!({"x": 1}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.0, "unknown argument: `x`; it takes no arguments");
    }
}
