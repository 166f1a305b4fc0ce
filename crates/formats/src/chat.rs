//! What every chat importer yields — channels of messages, [`Channel`] and [`ChatMsg`] — and
//! the plain chat format itself: `{ts, from, text, channel}` objects as JSON Lines or as one
//! JSON array.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::report::Skips;
use super::when;
use crate::error::FormatError;

/// One message of any chat export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMsg {
    /// Where it is in the file, to be appended to its path (`L12`, a message id).
    pub at: String,
    pub ts: i64,
    pub from: String,
    pub text: String,
    /// The thread it belongs to within its channel (a Slack `thread_ts`); None for the main line.
    pub thread: Option<String>,
    /// The sender's handle when the export gives one beside the name in `from` (a Slack
    /// user's `name`, a Discord author's `name` under a nickname), lowercase, without `@`.
    pub handle: Option<String>,
}

/// One channel or conversation, with its messages in the order the export had them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// A stable id for the channel (`slack:general`, `chatgpt:<conversation id>`).
    pub source_id: String,
    /// The channel's display name (`#general`, a conversation's title).
    pub title: String,
    /// The channel's short name (`general`), which names its main line too.
    pub name: String,
    /// Which export it came from (`slack`, `chatgpt`…); None for plain chat lines.
    pub platform: Option<&'static str>,
    pub msgs: Vec<ChatMsg>,
}

impl Channel {
    /// A channel without messages yet.
    pub fn new(source_id: String, title: String, name: String, platform: Option<&'static str>) -> Channel {
        Channel { source_id, title, name, platform, msgs: Vec::new() }
    }
}

/// The trimmed, non-empty string at a JSON pointer of an export's object (`/author/name`).
pub(crate) fn text_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// Reads one `{ts, from, text, channel}` object into its channel; Err is the reason to skip it.
fn message(o: &Map<String, Value>, at: String, default_channel: &str) -> Result<(String, ChatMsg), &'static str> {
    let text = o.get("text").and_then(Value::as_str).unwrap_or("").trim();
    let ts = match o.get("ts") {
        None | Some(Value::Null) => return Err("no `ts`"),
        Some(v) => when::from_json(v).ok_or("`ts` in no known time form")?,
    };
    if text.is_empty() {
        return Err("no `text`");
    }
    let from = o.get("from").and_then(Value::as_str).map(str::trim).filter(|f| !f.is_empty()).unwrap_or("unknown");
    let channel = o.get("channel").and_then(Value::as_str).map(str::trim).filter(|c| !c.is_empty());
    let msg = ChatMsg { at, ts, from: from.to_string(), text: text.to_string(), thread: None, handle: None };
    Ok((channel.unwrap_or(default_channel).to_string(), msg))
}

/// Chat lines as JSON Lines or a JSON array. Lines and entries that are not messages are
/// counted in `skips` with the reason.
pub(crate) fn parse(text: &str, path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    let default_channel = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "chat".into());
    let mut channels: BTreeMap<String, Vec<ChatMsg>> = BTreeMap::new();
    let mut add =
        |o: &Map<String, Value>, at: String, skip: &mut dyn FnMut(&'static str)| match message(o, at, &default_channel)
        {
            Ok((channel, m)) => channels.entry(channel).or_default().push(m),
            Err(reason) => skip(reason),
        };
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('[') {
        let items: Vec<Value> =
            serde_json::from_str(trimmed).map_err(|e| FormatError::malformed(format!("invalid JSON array: {e}")))?;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::Object(o) => add(o, format!("{i}"), &mut |r| skips.message(r, path, &i.to_string())),
                _ => skips.message("not a JSON object", path, &i.to_string()),
            }
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(line.trim_start_matches('\u{feff}')) {
                Ok(Value::Object(o)) => add(&o, format!("L{}", i + 1), &mut |r| skips.line(r, path, i + 1)),
                Ok(_) => skips.line("not a JSON object", path, i + 1),
                Err(_) => skips.line("invalid JSON", path, i + 1),
            }
        }
    }
    Ok(channels
        .into_iter()
        .map(|(name, msgs)| Channel {
            source_id: format!("chat:{name}"),
            title: format!("#{name}"),
            name,
            platform: None,
            msgs,
        })
        .collect())
}
