//! A Matrix room exported as JSON by Element ("Export chat", format JSON): `{room_name,
//! room_creator, topic, export_date, exported_by, messages}`, where `messages` holds the room's
//! events as the server sent them. One channel per file, with the id `matrix:<room id>`.
//!
//! - Text comes from `m.room.message` events (`m.text`, `m.notice`, `m.emote`); a sender is
//!   named by the display name their membership events give (the first one the export holds,
//!   so a rename keeps the person), else by their user id's local part, with the user id as
//!   the handle.
//! - An edit (`m.replace`) rewrites the message it edits and is not a message of its own; a
//!   reply loses the quoted fallback (`> <@a:b> …` lines) older clients put before it, so the
//!   quoted message is not stored twice; a reply in a thread is filed under its thread.
//! - Events without text (joins, reactions, redactions, files, messages the export could not
//!   decrypt) are counted, not stored.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::chat::{Channel, ChatMsg, text_at};
use super::report::Skips;
use crate::error::FormatError;

/// `@alice:example.org` → `alice`.
fn local_part(user: &str) -> &str {
    let u = user.strip_prefix('@').unwrap_or(user);
    u.split(':').next().filter(|l| !l.is_empty()).unwrap_or(u)
}

/// A reply's body without the fallback that quotes the message it answers: the leading `> `
/// lines and the blank line after them.
fn without_reply_fallback(body: &str) -> &str {
    let mut rest = body;
    let mut quoted = false;
    while rest.lines().next().is_some_and(|l| l.starts_with("> ") || l == ">") {
        quoted = true;
        rest = rest.split_once('\n').map_or("", |(_, after)| after);
    }
    if quoted { rest.trim_start_matches('\n') } else { body }
}

/// Why an event holds no message to store, or None when it does.
fn no_text(e: &Value) -> Option<String> {
    let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "m.room.message" => match text_at(e, "/content/msgtype") {
            Some("m.text" | "m.notice" | "m.emote") | None if text_at(e, "/content/body").is_some() => None,
            Some("m.text" | "m.notice" | "m.emote") | None => Some("a deleted or empty message".into()),
            Some(other) => Some(format!("Matrix {} without text", other.trim_start_matches("m."))),
        },
        "m.room.encrypted" => Some("an encrypted message the export could not decrypt".into()),
        "" => Some("an event without a type".into()),
        other => Some(format!("Matrix event {other}")),
    }
}

pub(crate) fn parse(bytes: &[u8], path: &Path, skips: &mut Skips) -> Result<Vec<Channel>, FormatError> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| FormatError::malformed(format!("not a Matrix room export: invalid JSON: {e}")))?;
    let events = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| FormatError::malformed("not a Matrix room export: no `messages` list"))?;
    // Each sender's first display name in the export.
    let mut names: HashMap<&str, &str> = HashMap::new();
    for e in events.iter().filter(|e| e.get("type").and_then(Value::as_str) == Some("m.room.member")) {
        if let (Some(user), Some(name)) = (text_at(e, "/state_key"), text_at(e, "/content/displayname")) {
            names.entry(user).or_insert(name);
        }
    }
    let room = text_at(&v, "/room_name").unwrap_or("Matrix room").to_string();
    let room_id = events.iter().find_map(|e| text_at(e, "/room_id")).unwrap_or(&room).to_string();
    let mut ch = Channel::new(format!("matrix:{room_id}"), room.clone(), room, Some("matrix"));
    // Where each event id's message is in `ch.msgs`, for the edits that follow it.
    let mut placed: HashMap<&str, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let id = text_at(e, "/event_id");
        let at = id.map_or_else(|| i.to_string(), str::to_string);
        if let Some(reason) = no_text(e) {
            skips.message(&reason, path, &at);
            continue;
        }
        let Some(ts) = e.get("origin_server_ts").and_then(Value::as_i64) else {
            skips.message("a message without `origin_server_ts`", path, &at);
            continue;
        };
        let relation = e.pointer("/content/m.relates_to");
        let rel_type = relation.and_then(|r| text_at(r, "/rel_type"));
        if rel_type == Some("m.replace") {
            let new = text_at(e, "/content/m.new_content/body");
            let edited = relation.and_then(|r| text_at(r, "/event_id")).and_then(|t| placed.get(t));
            if let (Some(text), Some(&n)) = (new, edited) {
                ch.msgs[n].text = text.to_string();
                skips.message("an edit (its message keeps the new text)", path, &at);
                continue;
            }
        }
        let body = match rel_type {
            Some("m.replace") => text_at(e, "/content/m.new_content/body").or_else(|| text_at(e, "/content/body")),
            _ => text_at(e, "/content/body"),
        }
        .unwrap_or("");
        let reply = relation.and_then(|r| r.pointer("/m.in_reply_to")).is_some();
        let text = if reply { without_reply_fallback(body) } else { body }.trim().to_string();
        if text.is_empty() {
            skips.message("a reply without text of its own", path, &at);
            continue;
        }
        let user = text_at(e, "/sender").unwrap_or("unknown");
        let from = names.get(user).copied().unwrap_or_else(|| local_part(user)).to_string();
        let handle = user.starts_with('@').then(|| user.trim_start_matches('@').to_lowercase());
        let thread = match rel_type {
            Some("m.thread") => relation.and_then(|r| text_at(r, "/event_id")).map(str::to_string),
            _ => None,
        };
        if let Some(id) = id {
            placed.insert(id, ch.msgs.len());
        }
        ch.msgs.push(ChatMsg { at, ts, from, text, thread, handle });
    }
    Ok(vec![ch])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_room_reads_as_its_people_wrote_it() {
        let raw = br#"{"room_name": "Allotment", "room_creator": "Ana", "topic": "", "export_date": "01/05/2024",
          "exported_by": "Sam", "messages": [
            {"type": "m.room.member", "sender": "@ana:example.org", "state_key": "@ana:example.org", "content": {"membership": "join", "displayname": "Ana Lima"}, "origin_server_ts": 1714554000000, "event_id": "$0", "room_id": "!r:example.org"},
            {"type": "m.room.message", "sender": "@ana:example.org", "content": {"msgtype": "m.text", "body": "the shed key is under the pot"}, "origin_server_ts": 1714554060000, "event_id": "$1", "room_id": "!r:example.org"},
            {"type": "m.room.message", "sender": "@sam:example.org", "content": {"msgtype": "m.text", "body": "> <@ana:example.org> the shed key is under the pot\n\nwhich pot?", "m.relates_to": {"m.in_reply_to": {"event_id": "$1"}}}, "origin_server_ts": 1714554120000, "event_id": "$2", "room_id": "!r:example.org"},
            {"type": "m.room.message", "sender": "@ana:example.org", "content": {"msgtype": "m.text", "body": " * the blue pot", "m.new_content": {"msgtype": "m.text", "body": "the shed key is under the blue pot"}, "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}, "origin_server_ts": 1714554180000, "event_id": "$3", "room_id": "!r:example.org"},
            {"type": "m.room.member", "sender": "@ana:example.org", "state_key": "@ana:example.org", "content": {"membership": "join", "displayname": "Ana (away)"}, "origin_server_ts": 1714554200000, "event_id": "$4", "room_id": "!r:example.org"},
            {"type": "m.room.message", "sender": "@ana:example.org", "content": {"msgtype": "m.image", "body": "pot.jpg"}, "origin_server_ts": 1714554240000, "event_id": "$5", "room_id": "!r:example.org"},
            {"type": "m.reaction", "sender": "@sam:example.org", "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$1", "key": "+1"}}, "origin_server_ts": 1714554300000, "event_id": "$6", "room_id": "!r:example.org"},
            {"type": "m.room.message", "sender": "@ana:example.org", "content": {"msgtype": "m.text", "body": "tomatoes go in on Saturday", "m.relates_to": {"rel_type": "m.thread", "event_id": "$1"}}, "origin_server_ts": 1714554360000, "event_id": "$7", "room_id": "!r:example.org"},
            {"type": "m.room.encrypted", "sender": "@sam:example.org", "content": {"algorithm": "m.megolm.v1.aes-sha2"}, "origin_server_ts": 1714554420000, "event_id": "$8", "room_id": "!r:example.org"}]}"#;
        let mut skips = Skips::default();
        let chs = parse(raw, Path::new("Allotment - Chat Export.json"), &mut skips).unwrap();
        let c = &chs[0];
        assert_eq!(
            (c.source_id.as_str(), c.title.as_str(), c.platform),
            ("matrix:!r:example.org", "Allotment", Some("matrix"))
        );
        let lines: Vec<(&str, &str, Option<&str>)> =
            c.msgs.iter().map(|m| (m.from.as_str(), m.text.as_str(), m.thread.as_deref())).collect();
        assert_eq!(
            lines,
            [
                ("Ana Lima", "the shed key is under the blue pot", None),
                ("sam", "which pot?", None),
                ("Ana Lima", "tomatoes go in on Saturday", Some("$1")),
            ]
        );
        assert_eq!((c.msgs[0].ts, c.msgs[0].handle.as_deref()), (1_714_554_060_000, Some("ana:example.org")));
        let skipped: Vec<(String, usize)> = skips.into_list().into_iter().map(|s| (s.reason, s.count)).collect();
        let count = |r: &str| skipped.iter().find(|s| s.0 == r).map_or(0, |s| s.1);
        assert_eq!(count("Matrix event m.room.member"), 2, "{skipped:?}");
        assert_eq!(count("an edit (its message keeps the new text)"), 1);
        assert_eq!(count("Matrix image without text"), 1);
        assert_eq!(count("Matrix event m.reaction"), 1);
        assert_eq!(count("an encrypted message the export could not decrypt"), 1);
        assert!(parse(b"{\"room_name\": \"x\"}", Path::new("r.json"), &mut Skips::default()).is_err());
    }

    #[test]
    fn only_a_leading_quote_is_a_reply_fallback() {
        assert_eq!(without_reply_fallback("> <@a:b> hi\n> there\n\nhello"), "hello");
        assert_eq!(without_reply_fallback("hello\n> not a fallback"), "hello\n> not a fallback");
        assert_eq!(without_reply_fallback("> <@a:b> hi\r\n\r\nhello").trim(), "hello", "Windows line ends");
    }
}
