//! WhatsApp chat exports (`.txt`) → a chat channel, one per chat.
//!
//! Two line shapes, as the phone apps write them:
//! - iPhone: `[31/12/2023, 21:04:05] Name: text` (also `[12/31/23, 9:04:05 PM]`);
//! - Android: `12/31/23, 9:04 PM - Name: text` (also `31/12/2023, 21:04 - Name: text`).
//!
//! Dates may use `/`, `.` or `-`; a space before AM/PM may be a narrow no-break space. Whether
//! a date is day-first or month-first is decided per file: a first number above 12 means
//! day-first, a second above 12 month-first; with neither, brackets and 24-hour times read
//! day-first and Android's AM/PM form month-first. Times carry no zone and are read as UTC.
//! A line without a stamp continues the message before it; a stamped line without `Name: ` is
//! a system line (encryption notice, joins, subject changes) and is counted, not stored, as
//! are `<Media omitted>` placeholders.

use std::path::Path;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::chat::{Channel, ChatMsg};
use super::report::Skips;

#[derive(Debug, Clone, Copy)]
struct Stamp {
    first: u32,
    second: u32,
    year: i32,
    hour: u32,
    minute: u32,
    sec: u32,
    /// Some(true) for PM, Some(false) for AM, None for a 24-hour time.
    pm: Option<bool>,
    bracketed: bool,
}

/// Reads the stamp that opens `line`; returns it and the text after it.
fn stamp(line: &str) -> Option<(Stamp, &str)> {
    let line = line.trim_start_matches(['\u{200e}', '\u{feff}', ' ']);
    let (bracketed, body) = match line.strip_prefix('[') {
        Some(b) => (true, b),
        None => (false, line),
    };
    let comma = body.find(',')?;
    let date: Vec<&str> = body[..comma].split(['/', '.', '-']).collect();
    let [a, b, y] = date[..] else { return None };
    let (first, second, year): (u32, u32, i32) =
        (a.trim().parse().ok()?, b.trim().parse().ok()?, y.trim().parse().ok()?);
    let year = if y.trim().len() == 2 { 2000 + year } else { year };
    let after_date = &body[comma + 1..];
    let (time, rest) = if bracketed {
        let close = after_date.find(']')?;
        (&after_date[..close], after_date[close + 1..].strip_prefix(' ').unwrap_or(&after_date[close + 1..]))
    } else {
        let dash = after_date.find(" - ")?;
        (&after_date[..dash], &after_date[dash + 3..])
    };
    let time = time.replace(['\u{202f}', '\u{a0}'], " ");
    let time = time.trim();
    let lower = time.to_ascii_lowercase().replace('.', "");
    let (clock, pm) = if let Some(t) = lower.strip_suffix("pm") {
        (t.trim().to_string(), Some(true))
    } else if let Some(t) = lower.strip_suffix("am") {
        (t.trim().to_string(), Some(false))
    } else {
        (time.to_string(), None)
    };
    let parts: Vec<&str> = clock.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 || clock.len() > 8 {
        return None;
    }
    let hour: u32 = parts[0].parse().ok()?;
    let minute: u32 = parts[1].parse().ok()?;
    let sec: u32 = parts.get(2).map_or(Some(0), |s| s.parse().ok())?;
    let s = Stamp { first, second, year, hour, minute, sec, pm, bracketed };
    Some((s, rest))
}

impl Stamp {
    fn to_ms(self, day_first: bool) -> Option<i64> {
        let (day, month) = if day_first { (self.first, self.second) } else { (self.second, self.first) };
        let hour = match self.pm {
            Some(true) if self.hour < 12 => self.hour + 12,
            Some(false) if self.hour == 12 => 0,
            _ => self.hour,
        };
        let date = NaiveDate::from_ymd_opt(self.year, month, day)?;
        let time = NaiveTime::from_hms_opt(hour, self.minute, self.sec)?;
        Some(NaiveDateTime::new(date, time).and_utc().timestamp_millis())
    }
}

/// Whether the text opens like a WhatsApp export (used by `detect`).
pub(crate) fn looks_like(head: &str) -> bool {
    head.lines().find(|l| !l.trim().is_empty()).and_then(stamp).is_some()
}

/// The chat's name: from `WhatsApp Chat with Alice.txt`, or the folder of an iPhone `_chat.txt`.
fn chat_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = if stem == "_chat" {
        path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or(stem)
    } else {
        stem
    };
    for prefix in ["WhatsApp Chat with ", "WhatsApp Chat - ", "WhatsApp-Chat mit ", "Chat de WhatsApp con "] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
    name
}

fn is_media_placeholder(text: &str) -> bool {
    let t = text.trim_matches(['\u{200e}', ' ']).to_ascii_lowercase();
    t == "<media omitted>"
        || t.ends_with(" omitted") && t.split_whitespace().count() <= 3
        || t.starts_with("<attached:")
}

pub(crate) fn parse(text: &str, path: &Path, skips: &mut Skips) -> Vec<Channel> {
    // First pass: every stamped line, to decide the date order for the whole file.
    let stamps: Vec<Stamp> = text.lines().filter_map(|l| stamp(l).map(|s| s.0)).collect();
    let day_first = if stamps.iter().any(|s| s.first > 12) {
        true
    } else if stamps.iter().any(|s| s.second > 12) {
        false
    } else {
        stamps.first().is_none_or(|s| s.bracketed || s.pm.is_none())
    };
    let name = chat_name(path);
    let mut ch = Channel::new(format!("whatsapp:{name}"), name.clone(), name, Some("whatsapp"));
    // The message being read: its line, time, sender and text so far.
    let mut open: Option<(usize, i64, String, String)> = None;
    let mut close = |open: &mut Option<(usize, i64, String, String)>, skips: &mut Skips| {
        if let Some((line, ts, from, text)) = open.take() {
            let text = text.trim().to_string();
            if text.is_empty() || is_media_placeholder(&text) {
                skips.line("media without text", path, line);
            } else {
                ch.msgs.push(ChatMsg { at: format!("L{line}"), ts, from, text, thread: None, handle: None });
            }
        }
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let Some((s, rest)) = stamp(line) else {
            match &mut open {
                Some(m) => {
                    m.3.push('\n');
                    m.3.push_str(line);
                }
                None if line.trim().is_empty() => {}
                None => skips.line("text before the first message", path, n),
            }
            continue;
        };
        close(&mut open, skips);
        let Some(ts) = s.to_ms(day_first) else {
            skips.line("a date that does not exist", path, n);
            continue;
        };
        match rest.split_once(": ") {
            Some((from, body)) if !from.trim().is_empty() && from.len() <= 80 => {
                let from = from.trim_matches(['\u{200e}', '~', ' ', '\u{a0}']).to_string();
                open = Some((n, ts, from, body.to_string()));
            }
            _ => skips.line("system line (no sender)", path, n),
        }
    }
    close(&mut open, skips);
    vec![ch]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_read_with_the_right_date_order() {
        let (s, rest) = stamp("[31/12/2023, 21:04:05] Ann: hi").unwrap();
        assert_eq!((s.to_ms(true), rest), (Some(1_704_056_645_000), "Ann: hi"));
        let (s, rest) = stamp("12/31/23, 9:04\u{202f}PM - Bo: yo").unwrap();
        assert_eq!((s.to_ms(false), rest), (Some(1_704_056_640_000), "Bo: yo"));
        let (s, _) = stamp("\u{200e}[1/2/24, 12:30:00 AM] Ann: x").unwrap();
        assert_eq!(s.to_ms(true), Some(1_706_747_400_000));
        assert!(stamp("Just a line: with a colon").is_none());
        assert!(stamp("2024-01-01 10:00 - x").is_none());
    }
}
