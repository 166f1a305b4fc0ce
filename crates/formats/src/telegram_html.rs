//! Telegram Desktop's HTML export (its default format): `messages.html`, `messages2.html`… of
//! one chat, in the chat's export folder or under `chats/chat_NNN/` of a whole-account export.
//! One channel per chat, with the id `telegram:<chat name>` (the page header's name, so the
//! numbered pages of one chat are one channel; the HTML holds no chat id).
//!
//! Each `<div class="message default clearfix">` is a message: its time from the date's
//! `title` (`01.05.2024 09:00:00 UTC+02:00`; without an offset read as UTC), its sender from
//! `from_name`, or, in a `joined` message, the sender of the one before; its text from the
//! `text` block, as the page shows it. Service messages (dates, joins, pins) and media without
//! a caption are counted, not stored.

use std::path::Path;

use chrono::{DateTime, NaiveDateTime};

use super::chat::{Channel, ChatMsg};
use super::html;
use super::report::Skips;

const MESSAGE: &str = "<div class=\"message ";

/// The HTML between the `<div …>` that starts at `s` and its matching `</div>`, and what follows.
fn div_inner(s: &str) -> (&str, &str) {
    let Some(open_end) = s.find('>') else { return (s, "") };
    let body = &s[open_end + 1..];
    let mut depth = 1usize;
    let mut i = 0;
    while let Some(j) =
        body[i..].find("<div").map(|j| i + j).into_iter().chain(body[i..].find("</div>").map(|j| i + j)).min()
    {
        if body[j..].starts_with("</div>") {
            depth -= 1;
            if depth == 0 {
                return (&body[..j], &body[j + 6..]);
            }
            i = j + 6;
        } else {
            depth += 1;
            i = j + 4;
        }
    }
    (body, "")
}

/// The inner HTML of the first `<div class="{class}"…>` in `s`.
fn div_of<'a>(s: &'a str, class: &str) -> Option<&'a str> {
    let at = s.find(&format!("<div class=\"{class}\""))?;
    Some(div_inner(&s[at..]).0)
}

/// A fragment's text as the page shows it: tags off, `<br>` a new line, entities decoded.
fn shown(fragment: &str) -> String {
    html::extract(fragment).text.trim().to_string()
}

/// `01.05.2024 09:00:00` with an optional ` UTC+02:00` → Unix milliseconds.
fn time_of(title: &str) -> Option<i64> {
    match title.trim().split_once(" UTC") {
        Some((local, offset)) => DateTime::parse_from_str(&format!("{local} {offset}"), "%d.%m.%Y %H:%M:%S %:z")
            .ok()
            .map(|t| t.timestamp_millis()),
        None => NaiveDateTime::parse_from_str(title.trim(), "%d.%m.%Y %H:%M:%S")
            .ok()
            .map(|t| t.and_utc().timestamp_millis()),
    }
}

/// Whether a page is a Telegram HTML export (its header and message history).
pub(crate) fn looks_like(head: &str) -> bool {
    head.contains("<div class=\"page_header\">") && head.contains("<div class=\"history\">")
}

pub(crate) fn parse(page: &str, path: &Path, skips: &mut Skips) -> Vec<Channel> {
    let name = div_of(page, "page_header")
        .and_then(|h| div_of(h, "text bold"))
        .map(shown)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "Telegram chat".to_string());
    let mut ch = Channel::new(format!("telegram:{name}"), name.clone(), name, Some("telegram"));
    let mut last_sender: Option<String> = None;
    let mut rest = page;
    while let Some(at) = rest.find(MESSAGE) {
        let (block, after) = div_inner(&rest[at..]);
        let open = &rest[at..at + rest[at..].find('>').unwrap_or(0)];
        rest = after;
        let id = open.split("id=\"message").nth(1).and_then(|s| s.split('"').next()).unwrap_or("").to_string();
        if open.contains("message service") {
            skips.message("Telegram service message", path, &id);
            continue;
        }
        // A forwarded message's own sender and time are inside its `forwarded body`; the
        // message's are before it.
        let own = block.split("<div class=\"forwarded body\">").next().unwrap_or(block);
        let title = own.split("class=\"pull_right date details\" title=\"").nth(1).and_then(|s| s.split('"').next());
        let Some(ts) = title.map(html::decode_entities).as_deref().and_then(time_of) else {
            skips.message("message without a date", path, &id);
            continue;
        };
        if let Some(from) = div_of(own, "from_name").map(shown).filter(|f| !f.is_empty()) {
            // A message sent through a bot says `Name via @bot`.
            let from = from.split(" via @").next().unwrap_or(&from).trim().to_string();
            last_sender = Some(from);
        }
        let text = div_of(block, "text").map(shown).unwrap_or_default();
        if text.is_empty() {
            skips.message("media without text", path, &id);
            continue;
        }
        let from = last_sender.clone().unwrap_or_else(|| "unknown".to_string());
        ch.msgs.push(ChatMsg { at: id, ts, from, text, thread: None, handle: None });
    }
    vec![ch]
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r##"<!DOCTYPE html>
<html><head><meta charset="utf-8"/><title>Exported Data</title></head>
<body><div class="page_wrap">
 <div class="page_header"><div class="content"><div class="text bold">
Ana Lima
 </div></div></div>
 <div class="page_body chat_page"><div class="history">
  <div class="message service" id="message-1"><div class="body details">1 May 2024</div></div>
  <div class="message default clearfix" id="message7">
   <div class="pull_left userpic_wrap"><div class="userpic userpic2" style="width: 42px; height: 42px"><div class="initials" style="line-height: 42px">AL</div></div></div>
   <div class="body">
    <div class="pull_right date details" title="01.05.2024 09:00:00 UTC+02:00">09:00</div>
    <div class="from_name">
Ana Lima
    </div>
    <div class="text">the ferry leaves at ten from <strong>pier 3</strong><br>bring snorkels &amp; towels</div>
   </div>
  </div>
  <div class="message default clearfix joined" id="message8">
   <div class="body">
    <div class="pull_right date details" title="01.05.2024 09:01:00 UTC+02:00">09:01</div>
    <div class="media_wrap clearfix"><a class="photo_wrap clearfix pull_left" href="photos/photo_1.jpg"><img class="photo" src="photos/photo_1_thumb.jpg"/></a></div>
   </div>
  </div>
  <div class="message default clearfix joined" id="message9">
   <div class="body">
    <div class="pull_right date details" title="01.05.2024 09:02:00 UTC+02:00">09:02</div>
    <div class="reply_to details">In reply to <a href="#go_to_message7">this message</a></div>
    <div class="text">and sunscreen</div>
   </div>
  </div>
  <div class="message default clearfix" id="message10">
   <div class="body">
    <div class="pull_right date details" title="01.05.2024 09:05:00">09:05</div>
    <div class="from_name">Sam</div>
    <div class="forwarded body">
     <div class="from_name">Ferry Co <span class="date details" title="30.04.2024 18:00:00"> 30.04.2024 18:00</span></div>
     <div class="text">Timetable change: the 10:00 sailing leaves at 10:15</div>
    </div>
   </div>
  </div>
 </div></div>
</div></body></html>"##;

    #[test]
    fn messages_read_as_the_page_shows_them() {
        assert!(looks_like(PAGE));
        let mut skips = Skips::default();
        let chs = parse(PAGE, Path::new("ChatExport_2024-05-01/messages.html"), &mut skips);
        let c = &chs[0];
        assert_eq!(
            (c.source_id.as_str(), c.title.as_str(), c.platform),
            ("telegram:Ana Lima", "Ana Lima", Some("telegram"))
        );
        let lines: Vec<(&str, &str, &str)> =
            c.msgs.iter().map(|m| (m.at.as_str(), m.from.as_str(), m.text.as_str())).collect();
        assert_eq!(
            lines,
            [
                ("7", "Ana Lima", "the ferry leaves at ten from pier 3\nbring snorkels & towels"),
                ("9", "Ana Lima", "and sunscreen"),
                ("10", "Sam", "Timetable change: the 10:00 sailing leaves at 10:15"),
            ],
            "a joined message is its sender's; the reply's note is not its text; a forward is its sender's"
        );
        assert_eq!(c.msgs[0].ts, 1_714_546_800_000, "09:00 at UTC+02:00");
        assert_eq!(c.msgs[2].ts, 1_714_554_300_000, "no offset: UTC");
        let counted: Vec<(String, usize)> = skips.into_list().into_iter().map(|s| (s.reason, s.count)).collect();
        assert_eq!(counted, [("Telegram service message".to_string(), 1), ("media without text".to_string(), 1)]);
    }

    #[test]
    fn times_with_and_without_offsets() {
        assert_eq!(time_of("01.05.2024 09:00:00 UTC-05:30"), Some(1_714_573_800_000));
        assert_eq!(time_of("01.05.2024 09:00:00 UTC-00:30"), Some(1_714_555_800_000));
        assert_eq!(time_of("01.05.2024 09:00:00"), Some(1_714_554_000_000));
        assert_eq!(time_of("yesterday"), None);
    }
}
