//! Telegram Desktop's JSON export (`result.json`) → chat channels: one chat's history
//! (`{name, type, id, messages}`) or the whole account's (`chats.list`, `left_chats.list`),
//! one channel per chat with the id `telegram:<chat id>`. A message's time is its
//! `date_unixtime` (else its `date`, read as UTC), its sender `from`, its text the `text`
//! string or the parts of a formatted one joined; service messages (joins, pins, calls) and
//! media without a caption are counted, not stored. Chats and their messages are read one at
//! a time (`stream`), so an account's export of any size is never one JSON tree.

use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::chat::{Channel, ChatMsg};
use super::report::Skips;
use super::{stream, when};
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

/// What one chat object (`{name, type, id, messages}`) holds, gathered key by key; its
/// messages are read one at a time.
#[derive(Default)]
struct ChatFields {
    name: Value,
    kind: Value,
    id: Value,
    msgs: Option<Vec<ChatMsg>>,
}

impl ChatFields {
    /// Reads the value of `key` when it is one of a chat's; false leaves it to the caller.
    fn take<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
        path: &Path,
        skips: &mut Skips,
    ) -> Result<bool, A::Error> {
        match key {
            "name" => self.name = map.next_value()?,
            "type" => self.kind = map.next_value()?,
            "id" => self.id = map.next_value()?,
            "messages" => {
                let mut out = Vec::new();
                map.next_value_seed(stream::Elements(|_, m: Value| out.extend(message(&m, path, skips))))?;
                self.msgs = Some(out);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The chat as a channel; None when it had no `messages` list.
    fn channel(self) -> Option<Channel> {
        let msgs = self.msgs?;
        let id = match &self.id {
            Value::Null => "chat".to_string(),
            v => v.to_string().trim_matches('"').to_string(),
        };
        let name = match (self.name.as_str().map(str::trim), self.kind.as_str()) {
            (Some(n), _) if !n.is_empty() => n.to_string(),
            (_, Some("saved_messages")) => "Saved Messages".to_string(),
            _ => format!("chat {id}"),
        };
        let mut ch = Channel::new(format!("telegram:{id}"), name.clone(), name, Some("telegram"));
        ch.msgs = msgs;
        Some(ch)
    }
}

/// Where the chats read so far go, and what a chat's messages need.
struct Sink<'a> {
    path: &'a Path,
    skips: &'a mut Skips,
    out: &'a mut Vec<Channel>,
}

/// One chat object of a list.
struct Chat<'s, 'a>(&'s mut Sink<'a>);

impl<'de> Visitor<'de> for Chat<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Telegram chat")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut chat = ChatFields::default();
        while let Some(key) = map.next_key::<String>()? {
            if !chat.take(&key, &mut map, self.0.path, self.0.skips)? {
                map.next_value::<IgnoredAny>()?;
            }
        }
        self.0.out.extend(chat.channel());
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Chat<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// An account export's `chats` or `left_chats` (`{about, list}`), or the `list` array in it.
struct Chats<'s, 'a>(&'s mut Sink<'a>);

impl<'de> Visitor<'de> for Chats<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Telegram list of chats")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "list" {
                map.next_value_seed(Chats(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Chat(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Chats<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// The file: one chat, or an account export whose `chats` and `left_chats` hold its chats.
/// The value says whether it had either shape.
struct Export<'s, 'a>(&'s mut Sink<'a>);

impl<'de> Visitor<'de> for Export<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Telegram export object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut lists = false;
        let mut chat = ChatFields::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "chats" || key == "left_chats" {
                lists = true;
                map.next_value_seed(Chats(&mut *self.0))?;
            } else if !chat.take(&key, &mut map, self.0.path, self.0.skips)? {
                map.next_value::<IgnoredAny>()?;
            }
        }
        let single = chat.channel();
        let shaped = lists || single.is_some();
        self.0.out.extend(single);
        Ok(shaped)
    }
}

pub(crate) fn parse(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    let mut out = Vec::new();
    let mut sink = Sink { path, skips, out: &mut out };
    if !stream::read(bytes, "a Telegram export", Export(&mut sink))? {
        return Err(FormatError::malformed("not a Telegram export: neither `messages` nor `chats.list`"));
    }
    Ok(out)
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
