//! The session logs coding agents keep on disk, read one record at a time: what every agent's
//! reader yields (`Record`, `Turn`, `ToolCall`, `SessionContext`), which files hold sessions
//! (`Agent::is_session_file`), and the helpers the three readers share — pulling the files and
//! commands a tool call touched out of its input, and condensing a tool's output to its first
//! and last bytes.
//!
//! The readers themselves are `claude_code` (JSON Lines), `codex` (JSON Lines) and `gemini`
//! (one JSON document per session, rewritten whole). Thinking and reasoning blocks are dropped
//! here, so nothing above ever holds them.

use std::path::Path;

use serde_json::Value;

/// A coding agent whose session logs memory can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Claude Code: `~/.claude/projects/<encoded path>/<session>.jsonl`.
    ClaudeCode,
    /// Codex CLI: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.
    Codex,
    /// Gemini CLI: `~/.gemini/tmp/<project hash>/chats/session-*.json`.
    Gemini,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::ClaudeCode, Agent::Codex, Agent::Gemini];

    /// The name config and metadata use: `claude-code`, `codex`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// How people write it.
    pub fn display(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
        }
    }

    pub fn parse(s: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == s)
    }

    /// Where the agent keeps its logs, under the user's home folder.
    pub fn default_root(self, home: &Path) -> std::path::PathBuf {
        match self {
            Agent::ClaudeCode => home.join(".claude").join("projects"),
            Agent::Codex => home.join(".codex").join("sessions"),
            Agent::Gemini => home.join(".gemini").join("tmp"),
        }
    }

    /// Whether the agent appends to its logs line by line (JSON Lines) rather than rewriting a
    /// whole JSON document.
    pub fn appends(self) -> bool {
        !matches!(self, Agent::Gemini)
    }

    /// Whether `path` (under the agent's root) is one of its session logs.
    pub fn is_session_file(self, path: &Path) -> bool {
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        match self {
            Agent::ClaudeCode => name.ends_with(".jsonl"),
            Agent::Codex => name.starts_with("rollout-") && name.ends_with(".jsonl"),
            Agent::Gemini => {
                name.starts_with("session-")
                    && name.ends_with(".json")
                    && path.parent().and_then(Path::file_name).is_some_and(|d| d == "chats")
            }
        }
    }
}

/// Who spoke a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    /// A tool's output handed back to the model (Claude Code files it under the user).
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool call of a turn: the tool's name and what it touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    /// Files named by the call's input (paths as the agent wrote them).
    pub files: Vec<String>,
    /// The shell command the call ran, if it ran one.
    pub command: Option<String>,
}

/// What a session says about itself: any field a record carries replaces the one before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionContext {
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub branch: Option<String>,
}

impl SessionContext {
    /// Takes every field `other` has.
    pub fn update(&mut self, other: &SessionContext) {
        for (mine, theirs) in
            [(&mut self.session_id, &other.session_id), (&mut self.cwd, &other.cwd), (&mut self.branch, &other.branch)]
        {
            if let Some(v) = theirs.as_ref().filter(|v| !v.is_empty()) {
                *mine = Some(v.clone());
            }
        }
    }
}

/// One record worth keeping: a message of the user or the assistant, or a tool's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Stable across re-reads of the same record: the record's own id where the format has one
    /// (Claude Code's `uuid`, Gemini's message `id`), else a hash of the line.
    pub id: String,
    pub role: Role,
    pub ts_ms: Option<i64>,
    /// The text said (thinking never included); may be empty for a turn that only called tools.
    pub text: String,
    pub tools: Vec<ToolCall>,
    /// Tool outputs, each already condensed (see [`condense`]), with the tool's name when known.
    pub outputs: Vec<(Option<String>, String)>,
}

impl Turn {
    /// Whether the turn has nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.tools.is_empty() && self.outputs.iter().all(|(_, o)| o.trim().is_empty())
    }
}

/// What one record of a log is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Turn(Turn, SessionContext),
    /// Only says something about the session (Codex's `session_meta`, `turn_context`).
    Context(SessionContext),
    /// A record type the reader knows and keeps nothing of (summaries, snapshots, reasoning,
    /// events that repeat messages).
    Ignored,
    /// A record type (or message shape) the reader does not know; the name says which.
    Unknown(String),
}

/// A tool's output up to this many bytes is kept whole.
pub const OUTPUT_WHOLE_BYTES: usize = 1024;
/// A longer output keeps its first this many bytes…
pub const OUTPUT_HEAD_BYTES: usize = 512;
/// …and its last this many, with a marker naming how much was left out between.
pub const OUTPUT_TAIL_BYTES: usize = 256;

/// A tool's output as memory keeps it: whole up to [`OUTPUT_WHOLE_BYTES`], else its first
/// [`OUTPUT_HEAD_BYTES`] and last [`OUTPUT_TAIL_BYTES`] (cut at character boundaries) with
/// `[… N bytes left out …]` between.
pub fn condense(output: &str) -> String {
    let s = output.trim();
    if s.len() <= OUTPUT_WHOLE_BYTES {
        return s.to_string();
    }
    let mut head = OUTPUT_HEAD_BYTES;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - OUTPUT_TAIL_BYTES;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n[… {} bytes left out …]\n{}", &s[..head], tail - head, &s[tail..])
}

/// The input keys that name one file, across the three agents' tools.
const FILE_KEYS: &[&str] = &["file_path", "path", "notebook_path", "filePath", "absolute_path", "dir_path"];

/// The files and the command a tool call's input names.
pub(crate) fn tool_call(name: &str, input: &Value) -> ToolCall {
    let mut call = ToolCall { name: name.to_string(), ..ToolCall::default() };
    let Value::Object(map) = input else { return call };
    for key in FILE_KEYS {
        if let Some(Value::String(p)) = map.get(*key) {
            push_unique(&mut call.files, p);
        }
    }
    if let Some(Value::Array(ps)) = map.get("paths") {
        for p in ps.iter().filter_map(Value::as_str) {
            push_unique(&mut call.files, p);
        }
    }
    if let Some(Value::Array(edits)) = map.get("edits") {
        for p in edits.iter().filter_map(|e| e.get("file_path")).filter_map(Value::as_str) {
            push_unique(&mut call.files, p);
        }
    }
    call.command = match map.get("command").or_else(|| map.get("cmd")) {
        Some(Value::String(c)) => Some(c.clone()),
        Some(Value::Array(parts)) => {
            let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            // `["bash", "-lc", "cargo test"]` ran `cargo test`.
            match parts.as_slice() {
                [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') && flag.contains('c') => {
                    Some(script.to_string())
                }
                _ if parts.is_empty() => None,
                _ => Some(parts.join(" ")),
            }
        }
        _ => None,
    };
    if let Some(c) = call.command.clone() {
        patch_files(&c, &mut call.files);
    }
    if let Some(Value::String(patch)) = map.get("input").or_else(|| map.get("patch")) {
        patch_files(patch, &mut call.files);
    }
    call
}

/// The files an `apply_patch` text adds, updates, deletes or moves to.
pub(crate) fn patch_files(patch: &str, files: &mut Vec<String>) {
    for line in patch.lines() {
        let line = line.trim();
        for marker in ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "] {
            if let Some(p) = line.strip_prefix(marker) {
                push_unique(files, p.trim());
            }
        }
    }
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !s.is_empty() && !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// The text of a tool's output in any of the shapes the agents write: a string, a list of
/// `{type: text, text}` blocks, or an object with `output`/`content`/`stdout`.
pub(crate) fn output_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(output_text).filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n"),
        Value::Object(m) => {
            if let Some(t) = m.get("text") {
                return output_text(t);
            }
            for key in ["output", "content", "stdout", "result", "response", "error"] {
                if let Some(x) = m.get(key) {
                    let s = output_text(x);
                    if !s.is_empty() {
                        return s;
                    }
                }
            }
            String::new()
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A string field of an object, when it is a non-empty string.
pub(crate) fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// A stable id for a record without one: the first 16 bytes of sha256 over its line, in hex.
pub(crate) fn line_id(line: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(line)[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn session_files_are_told_by_place_and_name() {
        assert!(Agent::ClaudeCode.is_session_file(Path::new("/h/.claude/projects/-x/ab.jsonl")));
        assert!(!Agent::ClaudeCode.is_session_file(Path::new("/h/.claude/projects/-x/ab.json")));
        assert!(Agent::Codex.is_session_file(Path::new("/h/.codex/sessions/2025/01/02/rollout-x.jsonl")));
        assert!(!Agent::Codex.is_session_file(Path::new("/h/.codex/sessions/history.jsonl")));
        assert!(Agent::Gemini.is_session_file(Path::new("/h/.gemini/tmp/abc/chats/session-1.json")));
        assert!(!Agent::Gemini.is_session_file(Path::new("/h/.gemini/tmp/abc/logs.json")));
        assert_eq!(Agent::parse("codex"), Some(Agent::Codex));
    }

    #[test]
    fn long_outputs_keep_their_ends() {
        assert_eq!(condense("  short  "), "short");
        let long = format!("{}{}{}", "a".repeat(600), "b".repeat(2000), "c".repeat(300));
        let c = condense(&long);
        assert!(c.starts_with(&"a".repeat(512)) && c.ends_with(&"c".repeat(256)), "{c}");
        assert!(c.contains("[… 2132 bytes left out …]"), "{c}");
        assert!(c.len() < 900);
        let wide = "é".repeat(1000);
        let c = condense(&wide);
        assert!(c.contains("left out"));
    }

    #[test]
    fn tool_inputs_name_files_and_commands() {
        let c = tool_call("Edit", &json!({"file_path": "/p/src/a.rs", "old_string": "x"}));
        assert_eq!(c.files, ["/p/src/a.rs"]);
        let c = tool_call("shell", &json!({"command": ["bash", "-lc", "cargo test -p x"]}));
        assert_eq!(c.command.as_deref(), Some("cargo test -p x"));
        let c = tool_call(
            "apply_patch",
            &json!({"input": "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n*** Add File: b.md\n"}),
        );
        assert_eq!(c.files, ["src/lib.rs", "b.md"]);
        let c = tool_call("Bash", &json!({"command": "git status"}));
        assert_eq!((c.command.as_deref(), c.files.len()), (Some("git status"), 0));
    }
}
