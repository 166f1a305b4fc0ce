//! Codex CLI's session logs: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, one JSON
//! object per line (matched against the rollout shapes Codex CLI 0.4x through 0.7x writes, and
//! the older one without `payload`).
//!
//! A line is `{timestamp, type, payload}`. `session_meta` (the first) says the session's `id`,
//! `cwd` and `git.branch`; `turn_context` may move the `cwd`. `response_item` carries the
//! conversation by `payload.type`: `message` (role `user` or `assistant`, `content` a string or
//! `input_text`/`output_text` blocks; the `developer`/`system` roles and the context blocks
//! Codex injects as user messages — `<environment_context>`, `<user_instructions>`, AGENTS.md —
//! keep nothing), `function_call` / `custom_tool_call` / `local_shell_call` (the tool's name and
//! the files and command of its arguments, `apply_patch` file headers included),
//! `function_call_output` / `custom_tool_call_output` (the output, condensed); `reasoning` is
//! never kept. `event_msg` repeats what the items say for the terminal, and `compacted` and
//! `ghost_snapshot` hold no new words: all known, nothing kept. Older logs wrote the item itself
//! as the line (no `payload`) and began with a bare `{id, timestamp}` meta line; both are read.
//! Records have no ids of their own: a turn's id is a hash of its line.

use serde_json::Value;

use crate::agent_log::{
    Record, Role, SessionContext, ToolCall, Turn, condense, line_id, output_text, patch_files, str_field, tool_call,
};
use crate::error::FormatError;
use crate::when;

/// Opening words of the user messages Codex writes itself.
const INJECTED: &[&str] =
    &["<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>"];

pub(crate) fn read_line(line: &[u8]) -> Result<Record, FormatError> {
    let v: Value = serde_json::from_slice(line).map_err(|e| FormatError::malformed(format!("invalid JSON: {e}")))?;
    if !v.is_object() {
        return Err(FormatError::malformed("a record that is not a JSON object"));
    }
    let ts = v.get("timestamp").and_then(when::from_json);
    let kind = v.get("type").and_then(Value::as_str);
    let Some(payload) = v.get("payload") else {
        // The older layout: the item is the line; the first line is `{id, timestamp, …}`.
        return match kind {
            None if v.get("record_type").is_some() => Ok(Record::Ignored),
            None if v.get("id").is_some() => Ok(Record::Context(SessionContext {
                session_id: str_field(&v, "id"),
                cwd: str_field(&v, "cwd"),
                branch: v.get("git").and_then(|g| str_field(g, "branch")),
            })),
            None => Err(FormatError::malformed("a record without a `type`")),
            Some(_) => item(&v, ts, line),
        };
    };
    match kind {
        Some("session_meta") => Ok(Record::Context(SessionContext {
            session_id: str_field(payload, "id"),
            cwd: str_field(payload, "cwd"),
            branch: payload.get("git").and_then(|g| str_field(g, "branch")),
        })),
        Some("turn_context") => {
            Ok(Record::Context(SessionContext { cwd: str_field(payload, "cwd"), ..SessionContext::default() }))
        }
        Some("response_item") => item(payload, ts, line),
        Some("event_msg" | "compacted") => Ok(Record::Ignored),
        Some(other) => Ok(Record::Unknown(other.to_string())),
        None => Err(FormatError::malformed("a record without a `type`")),
    }
}

fn item(p: &Value, ts: Option<i64>, line: &[u8]) -> Result<Record, FormatError> {
    let mut turn = Turn {
        id: line_id(line),
        role: Role::Assistant,
        ts_ms: ts,
        text: String::new(),
        tools: Vec::new(),
        outputs: Vec::new(),
    };
    match p.get("type").and_then(Value::as_str).unwrap_or_default() {
        "message" => {
            turn.role = match p.get("role").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("developer" | "system") => return Ok(Record::Ignored),
                other => return Ok(Record::Unknown(format!("message role {}", other.unwrap_or("(none)")))),
            };
            turn.text = match p.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(blocks)) => blocks
                    .iter()
                    .filter(|b| {
                        matches!(b.get("type").and_then(Value::as_str), Some("input_text" | "output_text" | "text"))
                    })
                    .filter_map(|b| str_field(b, "text"))
                    .collect::<Vec<_>>()
                    .join("\n\n"),
                _ => return Err(FormatError::malformed("a `message` without `content`")),
            };
            if turn.role == Role::User && INJECTED.iter().any(|m| turn.text.trim_start().starts_with(m)) {
                return Ok(Record::Ignored);
            }
        }
        "function_call" => {
            let name = str_field(p, "name").unwrap_or_else(|| "tool".into());
            let args = match p.get("arguments") {
                Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
                Some(other) => other.clone(),
                None => Value::Null,
            };
            let mut call = tool_call(&name, &args);
            if let Value::String(raw) = &args {
                patch_files(raw, &mut call.files);
            }
            turn.tools.push(call);
        }
        "custom_tool_call" => {
            let name = str_field(p, "name").unwrap_or_else(|| "tool".into());
            let mut call = ToolCall { name, ..ToolCall::default() };
            if let Some(input) = p.get("input").and_then(Value::as_str) {
                patch_files(input, &mut call.files);
            }
            turn.tools.push(call);
        }
        "local_shell_call" => {
            let action = p.get("action").unwrap_or(&Value::Null);
            turn.tools.push(tool_call("local_shell", action));
        }
        "function_call_output" | "custom_tool_call_output" => {
            turn.role = Role::Tool;
            let out = match p.get("output") {
                // The output is often itself JSON: `{"output": "...", "metadata": {...}}`.
                Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                    Ok(v @ Value::Object(_)) => output_text(&v),
                    _ => s.clone(),
                },
                Some(other) => output_text(other),
                None => String::new(),
            };
            turn.outputs.push((None, condense(&out)));
        }
        "reasoning" | "ghost_snapshot" | "web_search_call" | "compaction" => return Ok(Record::Ignored),
        other => return Ok(Record::Unknown(format!("response_item {other}"))),
    }
    Ok(Record::Turn(turn, SessionContext::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_lines_are_read() {
        let meta = br#"{"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"0199-abc","timestamp":"2025-10-29T00:59:38.308Z","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.46.0","git":{"commit_hash":"0e36","branch":"dev"}}}"#;
        let Record::Context(c) = read_line(meta).unwrap() else { panic!() };
        assert_eq!(
            (c.session_id.as_deref(), c.cwd.as_deref(), c.branch.as_deref()),
            (Some("0199-abc"), Some("/home/dev/app"), Some("dev"))
        );

        let env = br#"{"timestamp":"2025-10-29T00:59:38.317Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}"#;
        assert_eq!(read_line(env).unwrap(), Record::Ignored);

        let user = br#"{"timestamp":"2025-10-29T00:59:40.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"rename the flag"}]}}"#;
        let Record::Turn(t, _) = read_line(user).unwrap() else { panic!() };
        assert_eq!((t.role, t.text.as_str(), t.ts_ms), (Role::User, "rename the flag", Some(1_761_699_580_000)));
        assert_eq!(t.id, line_id(user));

        let call = br#"{"timestamp":"2025-10-29T00:59:41.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"rg -n flag src\"],\"workdir\":\"/home/dev/app\"}","call_id":"c1"}}"#;
        let Record::Turn(t, _) = read_line(call).unwrap() else { panic!() };
        assert_eq!(t.tools[0].command.as_deref(), Some("rg -n flag src"));

        let out = br#"{"timestamp":"2025-10-29T00:59:42.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"src/a.rs:3: flag\",\"metadata\":{\"exit_code\":0}}"}}"#;
        let Record::Turn(t, _) = read_line(out).unwrap() else { panic!() };
        assert_eq!((t.role, t.outputs[0].1.as_str()), (Role::Tool, "src/a.rs:3: flag"));

        let reasoning = br#"{"timestamp":"x","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"thinking hard"}],"encrypted_content":"gAAA"}}"#;
        assert_eq!(read_line(reasoning).unwrap(), Record::Ignored);
        assert_eq!(read_line(br#"{"timestamp":"x","type":"event_msg","payload":{"type":"user_message","message":"rename the flag"}}"#).unwrap(), Record::Ignored);
        assert_eq!(read_line(br#"{"type":"shiny","payload":{}}"#).unwrap(), Record::Unknown("shiny".into()));
        assert!(read_line(b"[1,2]").is_err());
    }

    #[test]
    fn the_older_layout_is_read() {
        let Record::Context(c) =
            read_line(br#"{"id":"old-1","timestamp":"2025-05-01T00:00:00Z","instructions":null}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(c.session_id.as_deref(), Some("old-1"));
        let Record::Turn(t, _) =
            read_line(br#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#)
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(t.text, "done");
        assert_eq!(read_line(br#"{"record_type":"state"}"#).unwrap(), Record::Ignored);
    }
}
