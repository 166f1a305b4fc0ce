//! Claude Code's session logs: `~/.claude/projects/<encoded path>/<session id>.jsonl`, one JSON
//! object per line (matched against the shapes Claude Code 1.0.x through 2.1.x writes).
//!
//! A line of `type` `user` or `assistant` carries `uuid`, `parentUuid`, `sessionId`, `cwd`,
//! `gitBranch`, `timestamp` and a `message` whose `content` is a string or a list of blocks:
//! `text` (kept), `thinking` and `redacted_thinking` (dropped), `tool_use` (its name and the
//! files and command of its `input`), `tool_result` (its output, condensed), `image` (dropped).
//! A user line holding only tool results is the tool's turn. Lines marked `isMeta` (notices the
//! client injects) and the types `summary`, `system`, `file-history-snapshot`,
//! `queue-operation` and `progress` are known and keep nothing; any other type is unknown.

use serde_json::Value;

use crate::agent_log::{Record, Role, SessionContext, Turn, condense, line_id, output_text, str_field, tool_call};
use crate::error::FormatError;
use crate::when;

const KNOWN_IGNORED: &[&str] = &["summary", "system", "file-history-snapshot", "queue-operation", "progress"];

/// One line (without its newline).
pub(crate) fn read_line(line: &[u8]) -> Result<Record, FormatError> {
    let v: Value = serde_json::from_slice(line).map_err(|e| FormatError::malformed(format!("invalid JSON: {e}")))?;
    let Some(kind) = v.get("type").and_then(Value::as_str) else {
        return Err(FormatError::malformed("a record without a `type`"));
    };
    if KNOWN_IGNORED.contains(&kind) {
        return Ok(Record::Ignored);
    }
    let role = match kind {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => return Ok(Record::Unknown(other.to_string())),
    };
    let ctx = SessionContext {
        session_id: str_field(&v, "sessionId"),
        cwd: str_field(&v, "cwd"),
        branch: str_field(&v, "gitBranch"),
    };
    if v.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return Ok(Record::Context(ctx));
    }
    let Some(content) = v.get("message").and_then(|m| m.get("content")) else {
        return Err(FormatError::malformed(format!("a `{kind}` record without `message.content`")));
    };
    let mut turn = Turn {
        id: str_field(&v, "uuid").unwrap_or_else(|| line_id(line)),
        role,
        ts_ms: v.get("timestamp").and_then(when::from_json),
        text: String::new(),
        tools: Vec::new(),
        outputs: Vec::new(),
    };
    let mut texts: Vec<String> = Vec::new();
    match content {
        Value::String(s) => texts.push(s.clone()),
        Value::Array(blocks) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => texts.extend(str_field(b, "text")),
                    Some("tool_use") => {
                        let name = str_field(b, "name").unwrap_or_else(|| "tool".into());
                        turn.tools.push(tool_call(&name, b.get("input").unwrap_or(&Value::Null)));
                    }
                    Some("tool_result") => {
                        let out = output_text(b.get("content").unwrap_or(&Value::Null));
                        turn.outputs.push((None, condense(&out)));
                    }
                    // Thinking is never kept; images and documents have no text to keep.
                    _ => {}
                }
            }
        }
        _ => return Err(FormatError::malformed("`message.content` is neither text nor a list of blocks")),
    }
    turn.text = texts.join("\n\n");
    if role == Role::User && turn.text.trim().is_empty() && !turn.outputs.is_empty() {
        turn.role = Role::Tool;
    }
    Ok(Record::Turn(turn, ctx))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(line: &str) -> (Turn, SessionContext) {
        match read_line(line.as_bytes()).unwrap() {
            Record::Turn(t, c) => (t, c),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn text_tools_and_context_are_read_and_thinking_dropped() {
        let (t, c) = turn(
            r#"{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/me/proj","sessionId":"s-1","version":"2.1.1","gitBranch":"main","type":"user","message":{"role":"user","content":"fix the parser"},"uuid":"u-1","timestamp":"2025-06-01T10:00:00.000Z"}"#,
        );
        assert_eq!((t.id.as_str(), t.role, t.text.as_str()), ("u-1", Role::User, "fix the parser"));
        assert_eq!(t.ts_ms, Some(1_748_772_000_000));
        assert_eq!(
            (c.cwd.as_deref(), c.branch.as_deref(), c.session_id.as_deref()),
            (Some("/home/me/proj"), Some("main"), Some("s-1"))
        );

        let (t, _) = turn(
            r#"{"type":"assistant","uuid":"a-1","sessionId":"s-1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan","signature":"x"},{"type":"text","text":"Editing now."},{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/home/me/proj/src/p.rs","old_string":"a","new_string":"b"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"cargo test"}}]}}"#,
        );
        assert_eq!(t.text, "Editing now.");
        assert_eq!(t.tools[0].files, ["/home/me/proj/src/p.rs"]);
        assert_eq!(t.tools[1].command.as_deref(), Some("cargo test"));
        assert!(!format!("{t:?}").contains("secret plan"));

        let (t, _) = turn(
            r#"{"type":"user","uuid":"u-2","message":{"role":"user","content":[{"tool_use_id":"t2","type":"tool_result","content":[{"type":"text","text":"ok: 3 passed"}]}]}}"#,
        );
        assert_eq!((t.role, t.outputs[0].1.as_str()), (Role::Tool, "ok: 3 passed"));
    }

    #[test]
    fn other_records_are_ignored_unknown_or_malformed() {
        assert_eq!(read_line(br#"{"type":"summary","summary":"x","leafUuid":"u"}"#).unwrap(), Record::Ignored);
        assert_eq!(read_line(br#"{"type":"hologram"}"#).unwrap(), Record::Unknown("hologram".into()));
        assert!(read_line(b"{\"type\":\"user\"").is_err());
        assert!(read_line(br#"{"type":"user","uuid":"x"}"#).is_err());
        assert!(matches!(
            read_line(br#"{"type":"user","isMeta":true,"cwd":"/p","message":{"content":"caveat"}}"#).unwrap(),
            Record::Context(_)
        ));
    }
}
