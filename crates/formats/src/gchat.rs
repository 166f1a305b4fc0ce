//! Google Chat in a Google Takeout export: `Google Chat/Groups/<Space …|DM …>/messages.json`
//! (`{"messages": [...]}`, read one message at a time) beside the conversation's
//! `group_info.json`. One channel per conversation folder, with the id `gchat:<folder>`.
//!
//! - A space is named by its `group_info.json` `name`; a direct message, which has none, by
//!   its members other than the account's owner (`Google Chat/Users/*/user_info.json`), its
//!   channel keeping the folder's name (`DM …`), so that it is not taken for a topic.
//! - A message's sender is `creator.name`, its time `created_date` ("Thursday, November 3,
//!   2016 at 11:59:50 AM UTC", with a narrow space before AM/PM in newer exports; written in the
//!   account's language, "Donnerstag, 3. November 2016 um 11:59:50 UTC", when that is not
//!   English), its text `text`; attachments without text are counted, not stored.

use std::path::Path;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::chat::{Channel, ChatMsg, text_at};
use super::report::Skips;
use super::spelled;
use super::stream;
use crate::error::FormatError;

/// The conversation's own files beside `messages.json`, which name it and its members.
pub(crate) const INDEX_FILES: &[&str] = &["group_info.json", "user_info.json"];

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(stream::without_bom(&std::fs::read(path).ok()?)).ok()
}

/// The account owner's address, from `Google Chat/Users/*/user_info.json`.
fn owner(conversation: &Path) -> Option<String> {
    let users = conversation.parent()?.parent()?.join("Users");
    std::fs::read_dir(users).ok()?.flatten().find_map(|d| {
        let v = read_json(&d.path().join("user_info.json"))?;
        text_at(&v, "/user/email").map(str::to_lowercase)
    })
}

/// The conversation's name: a space's `name`, else its members other than the owner.
fn conversation_name(dir: &Path) -> Option<String> {
    let info = read_json(&dir.join("group_info.json"))?;
    if let Some(name) = text_at(&info, "/name") {
        return Some(name.to_string());
    }
    let me = owner(dir);
    let members = info.get("members")?.as_array()?;
    let names = |skip_owner: bool| -> Vec<&str> {
        members
            .iter()
            .filter(|m| !skip_owner || me.is_none() || text_at(m, "/email").map(str::to_lowercase) != me)
            .filter_map(|m| text_at(m, "/name"))
            .collect()
    };
    let others = match names(true) {
        n if n.is_empty() => names(false),
        n => n,
    };
    (!others.is_empty()).then(|| others.join(", "))
}

struct Export<'a> {
    path: &'a Path,
    skips: &'a mut Skips,
}

impl<'de> Visitor<'de> for Export<'_> {
    type Value = Option<Vec<ChatMsg>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Google Chat messages.json object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut msgs = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "messages" {
                let mut out = Vec::new();
                let (path, skips) = (self.path, &mut *self.skips);
                map.next_value_seed(stream::Elements(|i, m: Value| out.extend(message(i, &m, path, skips))))?;
                msgs = Some(out);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(msgs)
    }
}

fn message(i: usize, m: &Value, path: &Path, skips: &mut Skips) -> Option<ChatMsg> {
    let at = text_at(m, "/message_id").map_or_else(|| i.to_string(), str::to_string);
    let Some(ts) = text_at(m, "/created_date").and_then(spelled::read) else {
        skips.message("a message without a readable `created_date`", path, &at);
        return None;
    };
    let Some(text) = text_at(m, "/text") else {
        skips.message("a file or link without text", path, &at);
        return None;
    };
    let from = text_at(m, "/creator/name").or_else(|| text_at(m, "/creator/email")).unwrap_or("unknown").to_string();
    Some(ChatMsg { at, ts, from, text: text.to_string(), thread: None, handle: None })
}

pub(crate) fn parse(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    let msgs = stream::read(bytes, "a Google Chat messages.json", Export { path, skips })?
        .ok_or_else(|| FormatError::malformed("not a Google Chat messages.json: no `messages` list"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let folder = dir.file_name().map_or_else(|| "conversation".to_string(), |f| f.to_string_lossy().into_owned());
    let title = conversation_name(dir).unwrap_or_else(|| folder.clone());
    // A direct message's short name stays its folder's (`DM …`), which says it is one; a
    // space's is its name.
    let name = if folder.starts_with("DM ") { folder.clone() } else { title.clone() };
    let mut ch = Channel::new(format!("gchat:{folder}"), title, name, Some("gchat"));
    ch.msgs = msgs;
    Ok(vec![ch])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takeout_dates_in_both_spacings() {
        assert_eq!(spelled::read("Thursday, November 3, 2016 at 11:59:50 AM UTC"), Some(1_478_174_390_000));
        assert_eq!(spelled::read("Tuesday, November 22, 2016 at 9:46:26\u{202f}PM UTC"), Some(1_479_851_186_000));
        assert_eq!(spelled::read("November 22, 2016 at 9:46:26 PM"), Some(1_479_851_186_000));
        assert_eq!(spelled::read("yesterday"), None);
        assert_eq!(spelled::read("Dienstag, 22. November 2016 um 21:46:26 UTC"), Some(1_479_851_186_000));
    }

    #[test]
    fn a_direct_message_is_named_after_the_other_person() {
        let root = tempfile::tempdir().unwrap();
        let chat = root.path().join("Google Chat");
        let dm = chat.join("Groups/DM k6oxHQAAAAE");
        std::fs::create_dir_all(&dm).unwrap();
        std::fs::create_dir_all(chat.join("Users/User 1")).unwrap();
        std::fs::write(
            chat.join("Users/User 1/user_info.json"),
            r#"{"user": {"name": "Sam Lee", "email": "Sam@example.com", "user_type": "Human"}}"#,
        )
        .unwrap();
        std::fs::write(
            dm.join("group_info.json"),
            r#"{"members": [{"name": "Sam Lee", "email": "sam@example.com"}, {"name": "Ana Lima", "email": "ana@example.com"}]}"#,
        )
        .unwrap();
        let messages = br#"{"messages": [
            {"creator": {"name": "Ana Lima", "email": "ana@example.com", "user_type": "Human"}, "created_date": "Wednesday, May 1, 2024 at 9:00:00 AM UTC", "text": "the plumber comes at noon", "topic_id": "t1", "message_id": "DM/t1/t1"},
            {"creator": {"name": "Sam Lee", "email": "sam@example.com", "user_type": "Human"}, "created_date": "Wednesday, May 1, 2024 at 9:01:00 AM UTC", "attached_files": [{"original_name": "x.png", "export_name": "File-x.png"}], "topic_id": "t2", "message_id": "DM/t2/t2"}]}"#;
        let mut skips = Skips::default();
        let chs = parse(messages, &dm.join("messages.json"), &mut skips).unwrap();
        let c = &chs[0];
        assert_eq!(
            (c.source_id.as_str(), c.title.as_str(), c.name.as_str()),
            ("gchat:DM k6oxHQAAAAE", "Ana Lima", "DM k6oxHQAAAAE")
        );
        assert_eq!((c.msgs.len(), c.msgs[0].from.as_str(), c.msgs[0].ts), (1, "Ana Lima", 1_714_554_000_000));
        assert_eq!(skips.into_list()[0].reason, "a file or link without text");
    }
}
