//! DiscordChatExporter JSON → chat chunks: one file is one channel (`guild`, `channel`,
//! `messages`), one source per channel (`discord:<guild id>/<channel id>`). Each message has
//! an `author` (its `name`, the account's stable handle), an ISO `timestamp` and `content`;
//! attachments are named. Join, pin and call notices are counted and left out.

use std::path::Path;

use serde_json::Value;

use super::chat::{self, Channel, ChatMsg};
use super::report::Skips;
use super::when;
use crate::error::MemoryError;
use crate::store::{NewChunk, NewSource};

/// Message types that carry a conversation's words.
const SPOKEN: &[&str] = &["Default", "Reply", "ThreadStarterMessage"];

fn text_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

pub(crate) fn parse(
    bytes: &[u8],
    path: &Path,
    origin: &str,
    skips: &mut Skips,
) -> Result<(Vec<NewChunk>, Vec<NewSource>), MemoryError> {
    let export: Value = serde_json::from_slice(bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes))
        .map_err(|e| MemoryError::Parse(format!("not a DiscordChatExporter file: {e}")))?;
    let messages = export
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| MemoryError::Parse("not a DiscordChatExporter file: no `messages` array".into()))?;
    let guild = text_at(&export, "/guild/name").unwrap_or("Direct Messages");
    let channel = text_at(&export, "/channel/name").unwrap_or("channel");
    let channel_id = text_at(&export, "/channel/id").unwrap_or(channel);
    let mut ch = Channel::new(
        format!("discord:{}/{channel_id}", text_at(&export, "/guild/id").unwrap_or(guild)),
        format!("{guild} #{channel}"),
        channel.to_string(),
        Some("discord"),
    );
    for (i, m) in messages.iter().enumerate() {
        let at = text_at(m, "/id").map_or_else(|| i.to_string(), str::to_string);
        let kind = text_at(m, "/type").unwrap_or("Default");
        if !SPOKEN.contains(&kind) {
            skips.message(&format!("Discord notice ({kind})"), path, &at);
            continue;
        }
        let Some(ts) = text_at(m, "/timestamp").and_then(when::parse) else {
            skips.message("message without a `timestamp`", path, &at);
            continue;
        };
        let mut text = text_at(m, "/content").unwrap_or("").to_string();
        for a in m.get("attachments").and_then(Value::as_array).into_iter().flatten() {
            if let Some(name) = text_at(a, "/fileName") {
                text.push_str(&format!("\n[attachment: {name}]"));
            }
        }
        let text = text.trim().to_string();
        if text.is_empty() {
            skips.message("message without text", path, &at);
            continue;
        }
        let from = text_at(m, "/author/name").or(text_at(m, "/author/nickname")).unwrap_or("unknown").to_string();
        ch.msgs.push(ChatMsg { at, ts, from, text, thread: None });
    }
    Ok(chat::pack(vec![ch], path, origin))
}
