//! Slack export folders → chat channels, one per channel folder.
//!
//! An export is a folder with `users.json` and `channels.json` and one folder per channel
//! holding a JSON file per day (`general/2024-01-01.json`: an array of messages). Each day
//! file is ingested on its own (so a re-export only re-reads the days that changed); the
//! export's `users.json` is read once per ingest to turn user ids into names (the real name
//! first), in the sender and in `<@U…>` mentions, and the login name is kept as the sender's
//! handle. A message with a `thread_ts` belongs to that thread: its `thread`
//! tells the thread (its parent and replies) apart from the channel's main line, so a reader
//! can keep it apart and replies in later day files join it. Join/leave/topic notices and
//! other system subtypes are counted and left out.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::chat::{Channel, ChatMsg};
use super::detect::slack_export_root;
use super::html::decode_entities;
use super::report::Skips;
use super::when;
use crate::error::FormatError;

/// Subtypes that carry a conversation's words; any other subtype is a notice.
const SPOKEN: &[&str] = &["bot_message", "me_message", "thread_broadcast", "file_share", "file_comment"];

/// One export's user id → name, and user id → handle.
type NamesAndHandles = (HashMap<String, String>, HashMap<String, String>);

/// User id → name for each export folder met in this ingest.
#[derive(Debug, Default)]
pub(crate) struct Users {
    by_export: HashMap<PathBuf, NamesAndHandles>,
}

impl Users {
    /// The export's names and handles (user id → each).
    fn of(&mut self, root: Option<&Path>) -> &NamesAndHandles {
        let key = root.map(Path::to_path_buf).unwrap_or_default();
        self.by_export.entry(key).or_insert_with(|| root.map(read_users).unwrap_or_default())
    }
}

fn read_users(root: &Path) -> NamesAndHandles {
    let Ok(bytes) = std::fs::read(root.join("users.json")) else { return Default::default() };
    let users: Vec<Value> = serde_json::from_slice(&bytes).unwrap_or_default();
    let names = users.iter().filter_map(|u| Some((u.get("id")?.as_str()?.to_string(), user_name(u)?))).collect();
    let handles = users.iter().filter_map(|u| Some((u.get("id")?.as_str()?.to_string(), user_handle(u)?))).collect();
    (names, handles)
}

/// The user's login name (`ada`) when the name shown is another (`Ada Lovelace`).
fn user_handle(u: &Value) -> Option<String> {
    let handle = u.get("name").and_then(Value::as_str).map(str::trim).filter(|h| !h.is_empty())?;
    (user_name(u).as_deref() != Some(handle)).then(|| handle.to_lowercase())
}

fn user_name(u: &Value) -> Option<String> {
    ["/profile/real_name", "/real_name", "/profile/display_name", "/name"]
        .iter()
        .filter_map(|p| u.pointer(p).and_then(Value::as_str))
        .map(str::trim)
        .find(|n| !n.is_empty())
        .map(str::to_string)
}

pub(crate) fn parse(
    bytes: &[u8],
    path: &Path,
    users: &mut Users,
    skips: &mut Skips,
) -> Result<Vec<Channel>, FormatError> {
    let messages: Vec<Value> = serde_json::from_slice(bytes)
        .map_err(|e| FormatError::malformed(format!("not a Slack day file (a JSON array of messages): {e}")))?;
    let (names, handles) = users.of(slack_export_root(path));
    let channel = path
        .parent()
        .and_then(Path::file_name)
        .map_or_else(|| "slack".to_string(), |n| n.to_string_lossy().into_owned());
    let mut ch = Channel::new(format!("slack:{channel}"), format!("#{channel}"), channel, Some("slack"));
    for (i, m) in messages.iter().enumerate() {
        let ts_text = m.get("ts").and_then(Value::as_str).unwrap_or("");
        let at = if ts_text.is_empty() { i.to_string() } else { ts_text.to_string() };
        let subtype = m.get("subtype").and_then(Value::as_str);
        if let Some(st) = subtype.filter(|s| !SPOKEN.contains(s)) {
            skips.message(&format!("Slack notice ({st})"), path, &at);
            continue;
        }
        let Some(ts) = when::parse(ts_text) else {
            skips.message("message without a `ts`", path, &at);
            continue;
        };
        let text = readable(m.get("text").and_then(Value::as_str).unwrap_or(""), names);
        let files: Vec<&str> = m
            .get("files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("name").and_then(Value::as_str))
            .collect();
        let text = files.iter().fold(text, |t, f| format!("{t}\n[file: {f}]")).trim().to_string();
        if text.is_empty() {
            skips.message("message without text", path, &at);
            continue;
        }
        let user = m.get("user").and_then(Value::as_str);
        let from = user
            .and_then(|u| names.get(u).cloned())
            .or_else(|| m.get("user_profile").and_then(user_name))
            .or_else(|| m.get("username").and_then(Value::as_str).map(str::to_string))
            .or_else(|| m.pointer("/bot_profile/name").and_then(Value::as_str).map(str::to_string))
            .or_else(|| user.map(str::to_string))
            .unwrap_or_else(|| "unknown".to_string());
        let thread = m.get("thread_ts").and_then(Value::as_str).map(str::to_string);
        let handle = user.and_then(|u| handles.get(u).cloned());
        ch.msgs.push(ChatMsg { at, ts, from, text, thread, handle });
    }
    Ok(vec![ch])
}

/// Slack's markup made readable: `<@U1>` → `@Name`, `<#C1|general>` → `#general`,
/// `<https://x|label>` → `label (https://x)`, `<!here>` → `@here`, entities decoded.
fn readable(text: &str, names: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let Some(end) = rest[i..].find('>') else {
            rest = &rest[i..];
            break;
        };
        let inner = &rest[i + 1..i + end];
        let (target, label) = inner.split_once('|').map_or((inner, None), |(t, l)| (t, Some(l)));
        let shown = if let Some(id) = target.strip_prefix('@') {
            format!(
                "@{}",
                label.map(str::to_string).or_else(|| names.get(id).cloned()).unwrap_or_else(|| id.to_string())
            )
        } else if let Some(id) = target.strip_prefix('#') {
            format!("#{}", label.unwrap_or(id))
        } else if let Some(special) = target.strip_prefix('!') {
            format!("@{}", label.unwrap_or(special.split('^').next().unwrap_or(special)))
        } else {
            match label {
                Some(l) if l != target => format!("{l} ({target})"),
                _ => target.to_string(),
            }
        };
        out.push_str(&shown);
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    decode_entities(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_becomes_names_and_links() {
        let names: HashMap<String, String> = [("U1".to_string(), "Ada Lovelace".to_string())].into();
        assert_eq!(
            readable("hi <@U1>, see <#C9|eng> and <https://example.com|the doc> &amp; <!here>", &names),
            "hi @Ada Lovelace, see #eng and the doc (https://example.com) & @here"
        );
    }
}
