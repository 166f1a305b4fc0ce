//! Gemini CLI's session logs: `~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json`, one
//! JSON document per session that the client rewrites whole after every message (matched
//! against the chat-recording shape Gemini CLI 0.20 and later writes; the `logs.json` beside
//! `chats/` repeats only the user's side of the same sessions and is not read).
//!
//! The document is `{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`; each
//! message has an `id`, a `timestamp`, a `type` — `user`, `gemini` (the model), or `info`,
//! `error`, `warning` (notices, nothing kept) — and `content` as a string or a list of parts
//! with `text`. A `gemini` message's `toolCalls` give the tool's `name`, the files and command
//! of its `args`, and its output (`result[].functionResponse.response`, else `resultDisplay`),
//! condensed; its `thoughts` are never kept. The document names no working directory: the
//! project is found by the caller (the hash is sha256 of the project's root path).

use serde_json::Value;

use crate::agent_log::{Role, SessionContext, Turn, condense, output_text, str_field, tool_call};
use crate::error::FormatError;
use crate::when;

/// One session document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiSession {
    pub context: SessionContext,
    pub project_hash: Option<String>,
    pub turns: Vec<Turn>,
    /// Messages of a type this reader does not know, by type.
    pub unknown: Vec<String>,
    /// Messages without an id or content, passed over.
    pub malformed: usize,
}

pub fn read_session(bytes: &[u8]) -> Result<GeminiSession, FormatError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| FormatError::malformed(format!("invalid JSON: {e}")))?;
    let Some(messages) = v.get("messages").and_then(Value::as_array) else {
        return Err(FormatError::malformed("a Gemini CLI session without `messages`"));
    };
    let mut out = GeminiSession {
        context: SessionContext { session_id: str_field(&v, "sessionId"), ..SessionContext::default() },
        project_hash: str_field(&v, "projectHash"),
        turns: Vec::new(),
        unknown: Vec::new(),
        malformed: 0,
    };
    for m in messages {
        let role = match m.get("type").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("gemini" | "model" | "assistant") => Role::Assistant,
            Some("info" | "error" | "warning") => continue,
            Some(other) => {
                out.unknown.push(other.to_string());
                continue;
            }
            None => {
                out.malformed += 1;
                continue;
            }
        };
        let Some(id) = str_field(m, "id") else {
            out.malformed += 1;
            continue;
        };
        let text = match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                parts.iter().filter_map(|p| str_field(p, "text")).collect::<Vec<_>>().join("\n\n")
            }
            Some(Value::Object(p)) => p.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
            _ => String::new(),
        };
        let mut turn = Turn {
            id,
            role,
            ts_ms: m.get("timestamp").and_then(when::from_json),
            text,
            tools: Vec::new(),
            outputs: Vec::new(),
        };
        for call in m.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
            let name = str_field(call, "name").unwrap_or_else(|| "tool".into());
            turn.tools.push(tool_call(&name, call.get("args").unwrap_or(&Value::Null)));
            let mut output = String::new();
            for r in call.get("result").and_then(Value::as_array).into_iter().flatten() {
                if let Some(resp) = r.get("functionResponse").and_then(|f| f.get("response")) {
                    output.push_str(&output_text(resp));
                }
            }
            if output.is_empty() {
                output = call.get("resultDisplay").map(output_text).unwrap_or_default();
            }
            if !output.trim().is_empty() {
                turn.outputs.push((Some(name), condense(&output)));
            }
        }
        out.turns.push(turn);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_document_is_read() {
        let doc = br#"{"sessionId":"g-1","projectHash":"79b6","startTime":"2025-10-18T14:57:28.974Z","lastUpdated":"2025-10-18T14:58:07.161Z","messages":[
            {"id":"m1","timestamp":"2025-10-18T14:57:28.974Z","type":"user","content":"List the files"},
            {"id":"m2","timestamp":"2025-10-18T14:57:35.000Z","type":"gemini","content":"Here they are.","thoughts":[{"subject":"Plan","description":"private musing","timestamp":"x"}],
             "toolCalls":[{"id":"t1","name":"run_shell_command","args":{"command":"ls -la"},"result":[{"functionResponse":{"id":"t1","name":"run_shell_command","response":{"output":"a.txt\nb.txt"}}}],"status":"success"}]},
            {"id":"m3","timestamp":"2025-10-18T14:57:36.000Z","type":"info","content":"Request cancelled."},
            {"id":"m4","type":"hologram","content":"?"},
            {"type":"user","content":"no id"}
        ]}"#;
        let s = read_session(doc).unwrap();
        assert_eq!(s.context.session_id.as_deref(), Some("g-1"));
        assert_eq!(s.project_hash.as_deref(), Some("79b6"));
        assert_eq!(s.turns.len(), 2);
        assert_eq!((s.turns[1].role, s.turns[1].text.as_str()), (Role::Assistant, "Here they are."));
        assert_eq!(s.turns[1].tools[0].command.as_deref(), Some("ls -la"));
        assert_eq!(s.turns[1].outputs[0].1, "a.txt\nb.txt");
        assert!(!format!("{s:?}").contains("private musing"));
        assert_eq!((s.unknown.as_slice(), s.malformed), (&["hologram".to_string()][..], 1));
        assert!(read_session(b"{\"sessionId\":\"x\",\"messages\":[").is_err());
    }
}
