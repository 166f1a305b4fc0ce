//! Facebook Messenger's and Instagram's "Download your information" JSON (`message_1.json`,
//! `message_2.json`… in a folder per conversation) → one chat channel per conversation, with
//! the id `messenger:<thread_path>` (so the numbered files of one conversation are one
//! channel). Senders are `sender_name`, times `timestamp_ms`, text `content`; the export writes
//! text as UTF-8 bytes escaped one by one (`Ã©` for `é`), which is undone. Messages without
//! text (photos, stickers, calls) are counted, not stored.

use std::path::Path;

use serde_json::Value;

use super::chat::{Channel, ChatMsg};
use super::report::Skips;
use crate::error::FormatError;

/// Undoes the export's escaping: a string whose every character is below U+0100 and that holds
/// some above U+007F is its UTF-8 bytes as Latin-1 characters; read back as UTF-8 when it is.
fn repaired(s: &str) -> String {
    if s.chars().all(|c| (c as u32) < 0x100) && s.chars().any(|c| (c as u32) >= 0x80) {
        let bytes: Vec<u8> = s.chars().map(|c| c as u32 as u8).collect();
        if let Ok(fixed) = String::from_utf8(bytes) {
            return fixed;
        }
    }
    s.to_string()
}

fn text_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(repaired).map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

pub(crate) fn parse(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| FormatError::malformed(format!("not a Messenger export: invalid JSON: {e}")))?;
    let msgs = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| FormatError::malformed("not a Messenger export: no `messages` list"))?;
    let title = text_at(&v, "title").unwrap_or_else(|| "Messenger conversation".to_string());
    let thread = v.get("thread_path").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| title.clone());
    let mut ch = Channel::new(format!("messenger:{thread}"), title.clone(), title, Some("messenger"));
    for (i, m) in msgs.iter().enumerate() {
        let at = i.to_string();
        let Some(ts) = m.get("timestamp_ms").and_then(Value::as_i64) else {
            skips.message("message without `timestamp_ms`", path, &at);
            continue;
        };
        let Some(text) = text_at(m, "content") else {
            skips.message("media without text", path, &at);
            continue;
        };
        let from = text_at(m, "sender_name").unwrap_or_else(|| "unknown".to_string());
        ch.msgs.push(ChatMsg { at, ts, from, text, thread: None, handle: None });
    }
    // The export lists the newest first.
    ch.msgs.sort_by_key(|m| m.ts);
    Ok(vec![ch])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_first_and_escaped_utf8_read_as_people_wrote_them() {
        let raw = br#"{"participants": [{"name": "Ren\u00c3\u00a9"}, {"name": "Sam"}], "messages": [
            {"sender_name": "Sam", "timestamp_ms": 1714554060000, "content": "see you there"},
            {"sender_name": "Sam", "timestamp_ms": 1714554030000, "photos": [{"uri": "p.jpg"}]},
            {"sender_name": "Ren\u00c3\u00a9", "timestamp_ms": 1714554000000, "content": "caf\u00c3\u00a9 at ten?"}],
            "title": "Ren\u00c3\u00a9", "thread_path": "inbox/rene_123"}"#;
        let mut skips = Skips::default();
        let chs = parse(raw, Path::new("message_1.json"), &mut skips).unwrap();
        let c = &chs[0];
        assert_eq!((c.source_id.as_str(), c.title.as_str()), ("messenger:inbox/rene_123", "René"));
        let lines: Vec<(&str, &str)> = c.msgs.iter().map(|m| (m.from.as_str(), m.text.as_str())).collect();
        assert_eq!(lines, [("René", "café at ten?"), ("Sam", "see you there")]);
        assert_eq!(skips.into_list()[0].reason, "media without text");
        assert_eq!(repaired("plain"), "plain");
        assert_eq!(repaired("déjà"), "déjà", "text that is not escaped UTF-8 stays");
    }
}
