//! Tools as MCP sees them: the `tools/list` entry (name, title, description, input schema from
//! an [`ArgSpec`], annotations, output schema) and the two result shapes of `tools/call` — a
//! success carrying its JSON both as text and as `structuredContent`, and an `isError` result
//! whose text the client's model can read and act on.

use serde_json::{Value, json};

use crate::args::ArgSpec;
use crate::protocol::RpcError;

/// MCP tool annotations (hints for clients).
#[derive(Debug, Clone, Copy)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: bool,
}

impl Annotations {
    pub const READ: Annotations =
        Annotations { read_only: true, destructive: None, idempotent: None, open_world: false };
    pub const WEB: Annotations = Annotations { read_only: true, destructive: None, idempotent: None, open_world: true };

    fn to_json(self, title: &str) -> Value {
        let mut a = json!({ "title": title, "readOnlyHint": self.read_only, "openWorldHint": self.open_world });
        if let Some(d) = self.destructive {
            a["destructiveHint"] = Value::from(d);
        }
        if let Some(i) = self.idempotent {
            a["idempotentHint"] = Value::from(i);
        }
        a
    }
}

/// What a tool is, as `tools/list` shows it.
pub struct Description<'a> {
    pub name: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub args: &'a ArgSpec,
    pub annotations: Annotations,
    pub output_schema: Option<&'a Value>,
}

impl Description<'_> {
    /// The `tools/list` entry.
    pub fn to_json(&self) -> Value {
        let mut t = json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.args.json_schema(),
            "annotations": self.annotations.to_json(self.title),
        });
        if let Some(s) = self.output_schema {
            t["outputSchema"] = s.clone();
        }
        t
    }
}

/// A failed tool call: either a tool-level failure (`isError: true`, the client's model reads the
/// text) or a protocol error.
#[derive(Debug)]
pub enum ToolFailure {
    Tool(String),
    Rpc(RpcError),
}

impl ToolFailure {
    /// The text a caller reads, whichever kind of failure this is.
    pub fn message(&self) -> &str {
        match self {
            ToolFailure::Tool(m) => m,
            ToolFailure::Rpc(e) => &e.message,
        }
    }
}

pub type ToolOutcome = Result<Value, ToolFailure>;

/// A successful result as final JSON text: `content` holds the JSON as a text block (after the
/// lead text, for tools whose answer is prose) and `structuredContent` holds the same JSON. The
/// value is serialised once; the text block is that serialisation as a JSON string. Results of
/// 2026-07-28 requests end with `"resultType":"complete"`.
pub fn result(value: &Value, lead: Option<&str>, modern: bool) -> String {
    let json = serde_json::to_string(value).unwrap_or_default();
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut out = String::with_capacity(json.len() * 2 + 96);
    out.push_str(r#"{"content":["#);
    if let Some(lead) = lead {
        out.push_str(r#"{"type":"text","text":"#);
        out.push_str(&quoted(lead));
        out.push_str("},");
    }
    out.push_str(r#"{"type":"text","text":"#);
    out.push_str(&quoted(&json));
    out.push_str(r#"}],"structuredContent":"#);
    out.push_str(&json);
    out.push_str(r#","isError":false"#);
    if modern {
        out.push_str(r#","resultType":"complete""#);
    }
    out.push('}');
    out
}

/// A tool-level failure the client's model can read and act on.
pub fn error(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_carries_its_json_as_text_and_as_structured_content() {
        let value = json!({ "answer": "Paris, \"the\" capital", "n": [1, 2], "nested": { "s": "a\nb" } });
        for modern in [false, true] {
            let r: Value = serde_json::from_str(&result(&value, None, modern)).unwrap();
            assert_eq!(r["structuredContent"], value);
            assert_eq!(r["isError"], false);
            let blocks = r["content"].as_array().unwrap();
            assert_eq!(blocks.len(), 1);
            assert_eq!(blocks[0]["type"], "text");
            assert_eq!(serde_json::from_str::<Value>(blocks[0]["text"].as_str().unwrap()).unwrap(), value);
            assert_eq!(r.get("resultType").is_some(), modern);
        }
        let r: Value = serde_json::from_str(&result(&value, value["answer"].as_str(), true)).unwrap();
        assert_eq!(r["content"][0]["text"], "Paris, \"the\" capital");
        assert_eq!(r["content"].as_array().unwrap().len(), 2);
        assert_eq!(r["resultType"], "complete");
    }
}
