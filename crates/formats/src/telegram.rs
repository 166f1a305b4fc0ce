//! Telegram Desktop's JSON export (`result.json`) → chat channels: one chat's history
//! (`{name, type, id, messages}`) or the whole account's (`chats.list`, `left_chats.list`),
//! one channel per chat with the id `telegram:<chat id>`. A message's time is its
//! `date_unixtime` (else its `date`, read as UTC), its sender `from`, its text the `text`
//! string or the parts of a formatted one joined; service messages (joins, pins, calls) and
//! media without a caption are counted, not stored. The file is read as one JSON tree.

use std::path::Path;

use serde_json::Value;

use super::chat::{Channel, ChatMsg};
use super::report::Skips;
use super::when;
use crate::error::FormatError;

/// A message's text: a string, or an array of strings and `{type, text}` entities.
fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.as_str(),
                other => other.get("text").and_then(Value::as_str).unwrap_or(""),
            })
            .collect(),
        _ => String::new(),
    }
}

fn message(m: &Value, path: &Path, skips: &mut Skips) -> Option<ChatMsg> {
    let at = m.get("id").map_or_else(String::new, |v| v.to_string().trim_matches('"').to_string());
    if m.get("type").and_then(Value::as_str) == Some("service") {
        let action = m.get("action").and_then(Value::as_str).unwrap_or("notice");
        skips.message(&format!("Telegram service message ({action})"), path, &at);
        return None;
    }
    let unix = m.get("date_unixtime").and_then(|v| v.as_str().and_then(|s| s.parse::<f64>().ok()).or(v.as_f64()));
    let Some(ts) = unix.and_then(when::from_epoch).or_else(|| m.get("date").and_then(when::from_json)) else {
        skips.message("message without a date", path, &at);
        return None;
    };
    let text = text_of(m.get("text")).trim().to_string();
    if text.is_empty() {
        skips.message("media without text", path, &at);
        return None;
    }
    let from =
        m.get("from").and_then(Value::as_str).map(str::trim).filter(|f| !f.is_empty()).unwrap_or("Deleted Account");
    Some(ChatMsg { at, ts, from: from.to_string(), text, thread: None, handle: None })
}

fn chat(c: &Value, path: &Path, skips: &mut Skips) -> Option<Channel> {
    let msgs = c.get("messages")?.as_array()?;
    let id = c.get("id").map_or_else(|| "chat".to_string(), |v| v.to_string().trim_matches('"').to_string());
    let name = match (c.get("name").and_then(Value::as_str), c.get("type").and_then(Value::as_str)) {
        (Some(n), _) if !n.trim().is_empty() => n.trim().to_string(),
        (_, Some("saved_messages")) => "Saved Messages".to_string(),
        _ => format!("chat {id}"),
    };
    let mut ch = Channel::new(format!("telegram:{id}"), name.clone(), name, Some("telegram"));
    ch.msgs = msgs.iter().filter_map(|m| message(m, path, skips)).collect();
    Some(ch)
}

pub(crate) fn parse(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| FormatError::malformed(format!("not a Telegram export: invalid JSON: {e}")))?;
    if v.get("messages").is_some() {
        return chat(&v, path, skips)
            .map(|c| vec![c])
            .ok_or_else(|| FormatError::malformed("a Telegram chat whose `messages` is not a list"));
    }
    let lists = ["chats", "left_chats"].map(|k| v.pointer(&format!("/{k}/list")).and_then(Value::as_array));
    if lists.iter().all(Option::is_none) {
        return Err(FormatError::malformed("not a Telegram export: neither `messages` nor `chats.list`"));
    }
    Ok(lists.into_iter().flatten().flatten().filter_map(|c| chat(c, path, skips)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chat_and_a_whole_account() {
        let one = br#"{"name": "Ana", "type": "personal_chat", "id": 42, "messages": [
            {"id": 1, "type": "message", "date": "2024-05-01T09:00:00", "date_unixtime": "1714554000", "from": "Ana", "from_id": "user7", "text": "the boat leaves at ten"},
            {"id": 2, "type": "message", "date": "2024-05-01T09:01:00", "from": "Me", "text": ["see you at ", {"type": "bold", "text": "pier 3"}]},
            {"id": 3, "type": "service", "date": "2024-05-01T09:02:00", "actor": "Ana", "action": "pin_message"},
            {"id": 4, "type": "message", "date": "2024-05-01T09:03:00", "from": "Ana", "photo": "photos/1.jpg", "text": ""}]}"#;
        let mut skips = Skips::default();
        let chs = parse(one, Path::new("result.json"), &mut skips).unwrap();
        assert_eq!((chs.len(), chs[0].source_id.as_str(), chs[0].title.as_str()), (1, "telegram:42", "Ana"));
        let m = &chs[0].msgs;
        assert_eq!(
            (m[0].ts, m[0].from.as_str(), m[0].text.as_str()),
            (1_714_554_000_000, "Ana", "the boat leaves at ten")
        );
        assert_eq!((m[1].ts, m[1].text.as_str()), (1_714_554_060_000, "see you at pier 3"));
        assert_eq!(m.len(), 2);
        assert_eq!(skips.into_list().len(), 2, "the pin and the photo without a caption");
        let all = br#"{"about": "Here is the data you requested", "personal_information": {}, "chats": {"list": [
            {"name": "Book club", "type": "private_group", "id": 7, "messages": [{"id": 1, "type": "message", "date_unixtime": "1714554000", "from": "Jo", "text": "chapter 4 for Wednesday"}]},
            {"type": "saved_messages", "id": 8, "messages": []}]}}"#;
        let chs = parse(all, Path::new("result.json"), &mut Skips::default()).unwrap();
        let titles: Vec<&str> = chs.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(titles, ["Book club", "Saved Messages"]);
        assert!(parse(b"{\"about\": 1}", Path::new("r.json"), &mut Skips::default()).is_err());
    }
}
