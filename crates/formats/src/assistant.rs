//! Exports of AI assistant conversations → chat channels, one per conversation.
//!
//! ChatGPT (`conversations.json`): an array of conversations, each a `mapping` of message
//! nodes linked by `parent`/`children` (a tree: every edit or regeneration is a branch). The
//! conversation as the user last saw it is the path from the root to `current_node`, so only
//! that path is read (the other branches are counted in the report). Times are `create_time` epoch seconds (floats). The user's turns are
//! `user`, the assistant's `ChatGPT`; system prompts, hidden and tool messages are counted and
//! left out.
//!
//! Claude (`conversations.json`): an array of conversations with `chat_messages`, each with
//! `sender` (`human` → `user`, `assistant` → `Claude`), `text` (or `content` blocks) and an
//! ISO `created_at`.
//!
//! A message without a time of its own takes its conversation's (counted in the report).

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::chat::{Channel, ChatMsg};
use super::report::Skips;
use super::{stream, when};
use crate::error::FormatError;

/// Reads an export conversation by conversation (`stream`) with `one`: the export is never
/// held as one JSON tree, only its conversations as channels.
fn parse_export(
    bytes: &[u8],
    what: &str,
    path: &Path,
    skips: &mut Skips,
    one: fn(usize, &Value, &Path, &mut Skips) -> Option<Channel>,
) -> Result<Vec<Channel>, FormatError> {
    let mut out = Vec::new();
    let each = |i, conv: Value| out.extend(one(i, &conv, path, skips));
    stream::read(bytes, &format!("a {what} export (a JSON array of conversations)"), stream::Elements(each))?;
    Ok(out)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// One turn of a conversation as read from an export.
struct Turn<'a> {
    at: String,
    from: &'a str,
    text: String,
    /// Its own time, and its conversation's.
    own: Option<i64>,
    conversation: Option<i64>,
}

/// Adds a turn to its conversation, or counts why not (no text, no time at all). A turn
/// without a time of its own takes the conversation's, and that is counted too.
fn push_turn(ch: &mut Channel, t: Turn<'_>, path: &Path, skips: &mut Skips) {
    if t.text.is_empty() {
        return skips.message("message without text", path, &t.at);
    }
    let Some(ts) = t.own.or(t.conversation) else {
        return skips.message("message without a time", path, &t.at);
    };
    if t.own.is_none() {
        skips.message("message without a time (its conversation's is used)", path, &t.at);
    }
    ch.msgs.push(ChatMsg { at: t.at, ts, from: t.from.to_string(), text: t.text, thread: None, handle: None });
}

pub(crate) fn parse_chatgpt(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    parse_export(bytes, "ChatGPT", path, skips, chatgpt_conversation)
}

/// One conversation as a channel; None (counted) when it has no messages to read.
fn chatgpt_conversation(i: usize, conv: &Value, path: &Path, skips: &mut Skips) -> Option<Channel> {
    let id = str_of(conv, "conversation_id").or(str_of(conv, "id")).map_or_else(|| format!("{i}"), str::to_string);
    let Some(mapping) = conv.get("mapping").and_then(Value::as_object) else {
        skips.message("conversation without a `mapping`", path, &id);
        return None;
    };
    let title = str_of(conv, "title").unwrap_or("ChatGPT conversation").trim().to_string();
    let conv_ts = conv.get("create_time").and_then(when::from_json);
    let mut ch = Channel::new(format!("chatgpt:{id}"), title.clone(), title, Some("chatgpt"));
    let path_ids = current_path(mapping, str_of(conv, "current_node"));
    let on_path: HashSet<&str> = path_ids.iter().map(String::as_str).collect();
    for (node_id, node) in mapping {
        if !on_path.contains(node_id.as_str()) && node.get("message").is_some_and(Value::is_object) {
            skips.message("message on an abandoned branch (edited or regenerated)", path, &format!("{id}/{node_id}"));
        }
    }
    for node_id in path_ids {
        let Some(msg) = mapping.get(&node_id).and_then(|n| n.get("message")).filter(|m| m.is_object()) else {
            continue;
        };
        let at = format!("{id}/{node_id}");
        let role = msg.pointer("/author/role").and_then(Value::as_str).unwrap_or("");
        let hidden = msg.pointer("/metadata/is_visually_hidden_from_conversation").and_then(Value::as_bool);
        let from = match role {
            "user" => "user",
            "assistant" => "ChatGPT",
            "system" => {
                skips.message("system message", path, &at);
                continue;
            }
            _ => {
                skips.message("tool message (not part of the dialogue)", path, &at);
                continue;
            }
        };
        if hidden == Some(true) {
            skips.message("hidden message", path, &at);
            continue;
        }
        let own = msg.get("create_time").and_then(when::from_json);
        let turn = Turn { at, from, text: chatgpt_text(msg), own, conversation: conv_ts };
        push_turn(&mut ch, turn, path, skips);
    }
    Some(ch)
}

/// Node ids from the root to `current` (or, without it, to the newest leaf).
fn current_path(mapping: &serde_json::Map<String, Value>, current: Option<&str>) -> Vec<String> {
    let created = |id: &str| mapping.get(id).and_then(|n| n.pointer("/message/create_time")).and_then(Value::as_f64);
    let leaf = current.filter(|c| mapping.contains_key(*c)).map(str::to_string).or_else(|| {
        mapping
            .iter()
            .filter(|(_, n)| n.get("children").and_then(Value::as_array).is_none_or(Vec::is_empty))
            .max_by(|a, b| created(a.0).unwrap_or(0.0).total_cmp(&created(b.0).unwrap_or(0.0)))
            .map(|(id, _)| id.clone())
    });
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = leaf;
    while let Some(id) = cur {
        if !seen.insert(id.clone()) {
            break;
        }
        cur = mapping.get(&id).and_then(|n| str_of(n, "parent")).map(str::to_string);
        path.push(id);
    }
    path.reverse();
    path
}

/// The text parts of a message; images and other attachments are named, not dropped.
fn chatgpt_text(msg: &Value) -> String {
    let content = &msg["content"];
    if let Some(t) = str_of(content, "text") {
        return t.trim().to_string();
    }
    let parts = content.get("parts").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let pieces: Vec<String> = parts
        .iter()
        .filter_map(|p| match p {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Object(o) => o.get("content_type").and_then(Value::as_str).map(|t| format!("[{t}]")),
            _ => None,
        })
        .filter(|s| !s.is_empty())
        .collect();
    pieces.join("\n")
}

pub(crate) fn parse_claude(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    parse_export(bytes, "Claude", path, skips, claude_conversation)
}

/// One conversation as a channel; None (counted) when it has no messages to read.
fn claude_conversation(i: usize, conv: &Value, path: &Path, skips: &mut Skips) -> Option<Channel> {
    let id = str_of(conv, "uuid").map_or_else(|| format!("{i}"), str::to_string);
    let Some(messages) = conv.get("chat_messages").and_then(Value::as_array) else {
        skips.message("conversation without `chat_messages`", path, &id);
        return None;
    };
    let title = str_of(conv, "name").unwrap_or("Claude conversation").trim().to_string();
    let conv_ts = str_of(conv, "created_at").and_then(when::parse);
    let mut ch = Channel::new(format!("claude:{id}"), title.clone(), title, Some("claude"));
    for (j, m) in messages.iter().enumerate() {
        let at = format!("{id}/{}", str_of(m, "uuid").map_or_else(|| j.to_string(), str::to_string));
        let from = match str_of(m, "sender") {
            Some("human") => "user",
            Some("assistant") => "Claude",
            _ => {
                skips.message("message without a known `sender`", path, &at);
                continue;
            }
        };
        let own = str_of(m, "created_at").and_then(when::parse);
        let turn = Turn { at, from, text: claude_text(m), own, conversation: conv_ts };
        push_turn(&mut ch, turn, path, skips);
    }
    Some(ch)
}

/// `text`, else the text blocks of `content`; attached files are named.
fn claude_text(m: &Value) -> String {
    let mut text = str_of(m, "text").map(|t| t.trim().to_string()).unwrap_or_default();
    if text.is_empty() {
        let blocks = m.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        text = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| str_of(b, "text"))
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("\n");
    }
    let files = ["attachments", "files"].iter().flat_map(|k| m.get(*k).and_then(Value::as_array).into_iter().flatten());
    for f in files {
        if let Some(name) = str_of(f, "file_name") {
            text.push_str(&format!("\n[attachment: {name}]"));
        }
    }
    text.trim().to_string()
}
