//! DiscordChatExporter JSON → a chat channel: one file is one channel (`guild`, `channel`,
//! `messages`), with the id `discord:<guild id>/<channel id>`. Each message has
//! an `author` (its `nickname`, the name shown, is the sender; its `name`, the account's
//! stable handle, is kept as the sender's handle), an ISO `timestamp` and `content`;
//! attachments are named. Join, pin and call notices are counted and left out. The messages
//! are read one at a time (`stream`), so a channel of any size is never one JSON tree.

use std::path::Path;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::chat::{Channel, ChatMsg, text_at};
use super::report::Skips;
use super::{stream, when};
use crate::error::FormatError;

/// Message types that carry a conversation's words.
const SPOKEN: &[&str] = &["Default", "Reply", "ThreadStarterMessage"];

/// The export's `guild` and `channel`, and its messages read one by one.
struct Export<'a> {
    path: &'a Path,
    skips: &'a mut Skips,
}

impl<'de> Visitor<'de> for Export<'_> {
    type Value = (Value, Value, Option<Vec<ChatMsg>>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a DiscordChatExporter object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut guild, mut channel, mut msgs) = (Value::Null, Value::Null, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "guild" => guild = map.next_value()?,
                "channel" => channel = map.next_value()?,
                "messages" => {
                    let mut out = Vec::new();
                    let (path, skips) = (self.path, &mut *self.skips);
                    map.next_value_seed(stream::Elements(|i, m: Value| {
                        if let Some(msg) = message(i, &m, path, skips) {
                            out.push(msg);
                        }
                    }))?;
                    msgs = Some(out);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((guild, channel, msgs))
    }
}

/// One message, or None when it is counted as skipped (a notice, no time, no text).
fn message(i: usize, m: &Value, path: &Path, skips: &mut Skips) -> Option<ChatMsg> {
    let at = text_at(m, "/id").map_or_else(|| i.to_string(), str::to_string);
    let kind = text_at(m, "/type").unwrap_or("Default");
    if !SPOKEN.contains(&kind) {
        skips.message(&format!("Discord notice ({kind})"), path, &at);
        return None;
    }
    let Some(ts) = text_at(m, "/timestamp").and_then(when::parse) else {
        skips.message("message without a `timestamp`", path, &at);
        return None;
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
        return None;
    }
    // The nickname is what people see; the account name is the handle others @-mention.
    let account = text_at(m, "/author/name").map(str::trim).filter(|n| !n.is_empty());
    let nickname = text_at(m, "/author/nickname").map(str::trim).filter(|n| !n.is_empty());
    let from = nickname.or(account).unwrap_or("unknown").to_string();
    let handle = account.filter(|a| nickname.is_some_and(|n| n != *a)).map(handle_of);
    Some(ChatMsg { at, ts, from, text, thread: None, handle })
}

/// An account name as a handle: lowercase, without a leading `@` or a `#1234` discriminator.
fn handle_of(name: &str) -> String {
    let n = name.trim_start_matches('@');
    n.split('#').next().unwrap_or(n).to_lowercase()
}

pub(crate) fn parse(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    let (guild, channel, msgs) = stream::read(bytes, "a DiscordChatExporter file", Export { path, skips })?;
    let msgs = msgs.ok_or_else(|| FormatError::malformed("not a DiscordChatExporter file: no `messages` array"))?;
    let guild_name = text_at(&guild, "/name").unwrap_or("Direct Messages");
    let name = text_at(&channel, "/name").unwrap_or("channel");
    let channel_id = text_at(&channel, "/id").unwrap_or(name);
    let mut ch = Channel::new(
        format!("discord:{}/{channel_id}", text_at(&guild, "/id").unwrap_or(guild_name)),
        format!("{guild_name} #{name}"),
        name.to_string(),
        Some("discord"),
    );
    ch.msgs = msgs;
    Ok(vec![ch])
}
