//! WhatsApp chat exports (`.txt`) → a chat channel, one per chat.
//!
//! Two line shapes, as the phone apps write them:
//! - iPhone: `[31/12/2023, 21:04:05] Name: text` (also `[12/31/23, 9:04:05 PM]`);
//! - Android: `12/31/23, 9:04 PM - Name: text` (also `31/12/2023, 21:04 - Name: text`).
//!
//! Phones set to other languages write the same shapes with their own date and time: the date
//! joined to the time by a comma, a space (`31/12/2023 21:04`, Portuguese, Dutch) or `à`
//! (French); the year first (`2023/12/31 21:04`, Japanese and Chinese; `2023. 12. 31. 오후 9:04`,
//! Korean); AM/PM as `p. m.`, `오후` or `午後`, before or after the clock. Year-first dates with
//! dashes (`2023-12-31 21:04 - …`) are not read as WhatsApp: log files write that too.
//!
//! Dates may use `/`, `.` or `-`; a space before AM/PM may be a narrow no-break space. Whether
//! a date is day-first or month-first is decided per file: a first number above 12 means
//! day-first, a second above 12 month-first; with neither, brackets and 24-hour times read
//! day-first and Android's AM/PM form month-first (a year-first date is always year, month,
//! day). Times carry no zone and are read as UTC.
//! A line without a stamp continues the message before it; a stamped line without `Name: ` is
//! a system line (encryption notice, joins, subject changes) and is counted, not stored, as
//! are `<Media omitted>` placeholders.

use std::path::Path;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::chat::{Channel, ChatMsg};
use super::report::Skips;
use super::spelled;

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
    /// Year first (`2023/12/31`): `first` is the month, whatever the rest of the file says.
    ymd: bool,
}

/// The date that opens a stamp: three numbers joined by `/`, `.` or `-` (a space may follow a
/// dot, as Korean phones write `2023. 5. 3.`), and the text after it.
fn date_part(body: &str) -> Option<([&str; 3], bool, &str)> {
    let bytes = body.as_bytes();
    let mut end = 0;
    while let Some(&c) = bytes.get(end) {
        let spaced =
            c == b' ' && end > 0 && bytes[end - 1] == b'.' && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
        if !(c.is_ascii_digit() || matches!(c, b'/' | b'.' | b'-') || spaced) {
            break;
        }
        end += 1;
    }
    let date = body[..end].trim_end_matches('.');
    let parts: Vec<&str> = date.split(['/', '.', '-']).map(str::trim).collect();
    let [a, b, c] = parts[..] else { return None };
    Some(([a, b, c], date.contains('-'), &body[end..]))
}

/// Reads the stamp that opens `line`; returns it and the text after it.
fn stamp(line: &str) -> Option<(Stamp, &str)> {
    let line = line.trim_start_matches(['\u{200e}', '\u{feff}', ' ']);
    let (bracketed, body) = match line.strip_prefix('[') {
        Some(b) => (true, b),
        None => (false, line),
    };
    let ([a, b, y], dashed, after_date) = date_part(body)?;
    // Year first (`2023/05/03`, `2023. 5. 3.`), not in the ISO form with dashes, which a log
    // line writes too.
    let ymd = a.len() == 4;
    if ymd && dashed {
        return None;
    }
    let (y, a, b) = if ymd { (a, b, y) } else { (y, a, b) };
    if y.len() != 2 && y.len() != 4 {
        return None;
    }
    let (first, second, year): (u32, u32, i32) = (a.parse().ok()?, b.parse().ok()?, y.parse().ok()?);
    let year = if y.len() == 2 { 2000 + year } else { year };
    // Between date and time: a comma (`31/12/2023, 21:04`), a space (`31/12/2023 21:04`), or
    // French's `à` (`31/12/2023 à 21:04`).
    let joined = after_date.strip_prefix(',').unwrap_or(after_date);
    let joined = joined.trim_start_matches([' ', '\u{a0}']);
    if joined.len() == after_date.len() {
        return None;
    }
    let after_date = joined.strip_prefix("à ").unwrap_or(joined);
    let (time, rest) = if bracketed {
        let close = after_date.find(']')?;
        (&after_date[..close], after_date[close + 1..].strip_prefix(' ').unwrap_or(&after_date[close + 1..]))
    } else {
        let dash = after_date.find(" - ")?;
        (&after_date[..dash], &after_date[dash + 3..])
    };
    let compact: String = time.to_lowercase().chars().filter(|c| !c.is_whitespace() && *c != '.').collect();
    // AM/PM before or after the clock: `9:04 PM`, `9:04 p. m.`, `오후 9:04`.
    let (clock, pm) = spelled::strip_meridiem(&compact);
    let parts: Vec<&str> = clock.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 || clock.len() > 8 {
        return None;
    }
    let hour: u32 = parts[0].parse().ok()?;
    let minute: u32 = parts[1].parse().ok()?;
    let sec: u32 = parts.get(2).map_or(Some(0), |s| s.parse().ok())?;
    let s = Stamp { first, second, year, hour, minute, sec, pm, bracketed, ymd };
    Some((s, rest))
}

impl Stamp {
    fn to_ms(self, day_first: bool) -> Option<i64> {
        let (day, month) = if day_first && !self.ymd { (self.first, self.second) } else { (self.second, self.first) };
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
    for prefix in [
        "WhatsApp Chat with ",
        "WhatsApp Chat - ",
        "WhatsApp-Chat mit ",
        "WhatsApp Chat mit ",
        "Chat de WhatsApp con ",
        "Discussion WhatsApp avec ",
        "Conversa do WhatsApp com ",
        "Chat WhatsApp con ",
        "WhatsApp-chat met ",
    ] {
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
    let stamps: Vec<Stamp> = text.lines().filter_map(|l| stamp(l).map(|s| s.0)).filter(|s| !s.ymd).collect();
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
        assert!(stamp("12/31/2023 - x: y").is_none());
        assert!(stamp("1.2.3 10:00 - release: notes").is_none());
    }

    #[test]
    fn any_line_is_read_or_refused_without_a_panic() {
        let parts = [
            "[", "]", "3", "12", "2023", "/", ".", "-", ",", " ", "à ", ":", "05", " - ", "PM", "오후", "é", "Ann: hi",
        ];
        spelled::shuffled(&parts, 14, |line| {
            if let Some((s, _)) = stamp(line) {
                let _ = (s.to_ms(true), s.to_ms(false));
            }
        });
    }

    #[test]
    fn stamps_as_phones_in_other_languages_write_them() {
        // 31 December 2023, 21:04 (and :05 seconds in brackets).
        let at = 1_704_056_640_000;
        for (line, day_first) in [
            ("31/12/2023 à 21:04 - Marie: salut", true),
            ("31/12/2023 21:04 - João: oi", true),
            ("31-12-2023 21:04 - Daan: hoi", true),
            ("31.12.23, 21:04 - Jonas: hallo", true),
            ("31/12/23, 9:04 p. m. - Lucía: hola", true),
            ("2023/12/31 21:04 - 太郎: こんにちは", false),
            ("2023. 12. 31. 오후 9:04 - 민준: 안녕", true),
        ] {
            let (s, rest) = stamp(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(s.to_ms(day_first), Some(at), "{line}");
            assert!(rest.contains(": "), "{line}");
        }
        let (s, rest) = stamp("[31/12/2023 21:04:05] Marie: salut").unwrap();
        assert_eq!((s.to_ms(true), rest), (Some(at + 5_000), "Marie: salut"));
        assert_eq!(chat_name(Path::new("Discussion WhatsApp avec Marie.txt")), "Marie");
    }
}
