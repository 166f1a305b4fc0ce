//! IRC logs → one chat channel per file, as the common clients and bouncers write them:
//! - irssi: `--- Log opened Tue Dec 01 10:00:00 2020`, `10:00 < nick> text`, `10:01  * nick
//!   waves`, `-!- nick [~u@host] has joined #chan`, `--- Day changed Wed Dec 02 2020`;
//! - ZNC, Textual and most web archives: `[10:00:00] <nick> text`, `[10:00] <@nick> text`,
//!   `[2020-12-01 10:00:00] <nick> text`, `*** Joins: nick`;
//! - WeeChat: `2020-12-01 10:00:00<TAB>nick<TAB>text`, events under `-->`, `<--` and `--`;
//! - HexChat/XChat: `**** BEGIN LOGGING AT Tue Dec  1 10:00:00 2020`, `Dec 01 10:00:00 <nick>
//!   text`.
//!
//! A line's day comes from the line itself, else from the last "Log opened" / "Day changed" /
//! "BEGIN LOGGING" line, else from a date in the file name (`#rust.2020-12-01.log`,
//! `rust_20201201.log`), else from the file's time; a clock that goes back without such a line
//! starts the next day. Times carry no zone and are read as UTC. Mode prefixes (`@`, `+`…) are
//! not part of a nick. Joins, parts, quits and mode changes are counted, not stored; a nick
//! change links the new nick to the person who had the old one: their lines keep the first
//! nick as the sender and the new one as the handle.

use std::collections::HashMap;
use std::path::Path;

use chrono::{Datelike, NaiveDate, NaiveTime};

use super::chat::{Channel, ChatMsg};
use super::report::Skips;

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
/// Channel-mode prefixes a client shows before a nick.
const MODE_PREFIXES: &[char] = &['@', '+', '%', '~', '&', '!', ' '];

/// What one line of a log says.
#[derive(Debug, PartialEq)]
enum Line<'a> {
    /// A message, or an action (`/me`), from `nick`.
    Says { day: Option<NaiveDate>, time: Option<NaiveTime>, nick: &'a str, text: &'a str },
    /// `old` is now known as `new`.
    Renamed { old: &'a str, new: &'a str },
    /// A join, part, quit, mode or topic change, or a client notice.
    Event,
    /// A line that gives the day the next lines are on ("Day changed", "Log opened").
    Day(NaiveDate),
}

fn month(name: &str) -> Option<u32> {
    let lower = name.get(..3)?.to_ascii_lowercase();
    MONTHS.iter().position(|m| *m == lower).map(|i| i as u32 + 1)
}

/// The date in `Tue Dec 01 10:00:00 2020`, `Tue Dec  1 2020` or `Dec 1 2020`.
fn spelled_date(s: &str) -> Option<NaiveDate> {
    let words: Vec<&str> = s.split_whitespace().filter(|w| !w.contains(':')).collect();
    let at = words.iter().position(|w| month(w).is_some() && w.len() <= 9)?;
    let m = month(words[at])?;
    let day: u32 = words.get(at + 1)?.trim_end_matches(',').parse().ok()?;
    let year: i32 = words.get(at + 2)?.parse().ok()?;
    NaiveDate::from_ymd_opt(year, m, day)
}

fn clock(s: &str) -> Option<NaiveTime> {
    let parts: Vec<&str> = s.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty() || p.len() > 2) {
        return None;
    }
    let n = |i: usize| parts.get(i).map_or(Some(0), |p| p.parse::<u32>().ok());
    NaiveTime::from_hms_opt(n(0)?, n(1)?, n(2)?)
}

fn iso_day(s: &str) -> Option<NaiveDate> {
    (s.len() == 10).then(|| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()).flatten()
}

/// The first `n` words of `line` (split at spaces and tabs), each with where it ends.
fn words(line: &str, n: usize) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices().chain(std::iter::once((line.len(), ' '))) {
        match (c == ' ' || c == '\t', start) {
            (true, Some(s)) => {
                out.push((&line[s..i], i));
                start = None;
                if out.len() == n {
                    break;
                }
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

/// The stamp that opens a line: its day when it has one, its time, and the rest of the line.
/// `[10:00]`, `[10:00:00]`, `10:00`, `[2020-12-01 10:00:00]`, `2020-12-01 10:00:00`,
/// `2020-12-01T10:00:00Z`, `Dec 01 10:00:00` (a HexChat day, whose year comes from `year`).
fn stamp(line: &str, year: Option<i32>) -> Option<(Option<NaiveDate>, NaiveTime, &str)> {
    let (inner, rest) = match line.strip_prefix('[') {
        Some(b) => {
            let close = b.find(']')?;
            (&b[..close], &b[close + 1..])
        }
        None => {
            let w = words(line, 3);
            let ends_stamp = |k: usize| {
                let inner = &line[..w[k].1];
                stamp_words(inner, year).is_some().then_some(k)
            };
            let k = (0..w.len()).find_map(ends_stamp)?;
            (&line[..w[k].1], &line[w[k].1..])
        }
    };
    let (day, time) = stamp_words(inner, year)?;
    let rest = rest.strip_prefix(['\t', ' ']).unwrap_or(rest);
    Some((day, time, rest))
}

/// A stamp's own text (without brackets) read as a day and a time.
fn stamp_words(inner: &str, year: Option<i32>) -> Option<(Option<NaiveDate>, NaiveTime)> {
    let inner = inner.trim().trim_end_matches('Z');
    let w: Vec<&str> = inner.split([' ', '\t', 'T']).filter(|w| !w.is_empty()).collect();
    match w[..] {
        [t] => Some((None, clock(t)?)),
        [d, t] => Some((Some(iso_day(d)?), clock(t)?)),
        [m, d, t] => Some((Some(NaiveDate::from_ymd_opt(year?, month(m)?, d.parse().ok()?)?), clock(t)?)),
        _ => None,
    }
}

fn nick(s: &str) -> Option<&str> {
    let n = s.trim_matches(MODE_PREFIXES);
    let ok = !n.is_empty()
        && n.len() <= 32
        && n.chars().all(|c| c.is_alphanumeric() || "-_[]\\`^{}|.'".contains(c))
        && !n.starts_with(['-', '.']);
    ok.then_some(n)
}

/// `alice is now known as alice_away` (irssi, ZNC, HexChat, WeeChat alike).
fn renamed(text: &str) -> Option<Line<'_>> {
    let (old, new) = text.split_once(" is now known as ")?;
    let old = nick(old.rsplit(' ').next()?)?;
    let new = nick(new.trim().trim_end_matches('.'))?;
    Some(Line::Renamed { old, new })
}

/// Reads one line; `year` is the year in force (for HexChat's stamps). None: no IRC shape.
fn read(line: &str, year: Option<i32>) -> Option<Line<'_>> {
    let line = line.trim_end_matches(['\r', '\n']).trim_start_matches('\u{feff}');
    for marker in
        ["--- Log opened ", "--- Day changed ", "--- Log closed ", "**** BEGIN LOGGING AT ", "**** ENDING LOGGING AT "]
    {
        if let Some(rest) = line.strip_prefix(marker) {
            return Some(spelled_date(rest).map_or(Line::Event, Line::Day));
        }
    }
    let (day, time, body) = match stamp(line, year) {
        Some((d, t, b)) => (d, Some(t), b),
        None => (None, None, line),
    };
    // WeeChat and HexChat: stamp, prefix, tab, text. A prefix in capitals is an application
    // log's level (`INFO`), not a nick.
    if let Some((prefix, text)) = body.split_once('\t')
        && time.is_some()
        && !prefix.trim().contains(' ')
        && !prefix.trim().chars().all(|c| c.is_ascii_uppercase())
    {
        let prefix = prefix.trim();
        if ["-->", "<--", "--", "=!=", "-!-", "***", "-"].contains(&prefix) {
            return Some(renamed(text).unwrap_or(Line::Event));
        }
        if prefix == "*" {
            return Some(renamed(text).unwrap_or_else(|| action(text, day, time).unwrap_or(Line::Event)));
        }
        let prefix = prefix.strip_prefix('<').and_then(|p| p.strip_suffix('>')).unwrap_or(prefix);
        return nick(prefix).map(|nick| Line::Says { day, time, nick, text: text.trim() });
    }
    let body = body.trim_start();
    if let Some(rest) = body.strip_prefix('<') {
        let close = rest.find('>')?;
        let nick = nick(&rest[..close])?;
        return Some(Line::Says { day, time, nick, text: rest[close + 1..].trim() });
    }
    // Events and actions only after a stamp: unstamped, `* item` and `-- ` are prose.
    time?;
    if ["-!-", "***", "-->", "<--", "--", "===", "=!="].iter().any(|p| body.starts_with(p)) {
        let after = body.trim_start_matches(['-', '!', '*', '=', '>', '<', ' ']);
        return Some(renamed(after).unwrap_or(Line::Event));
    }
    if let Some(rest) = body.strip_prefix("* ") {
        return Some(renamed(rest).unwrap_or_else(|| action(rest, day, time).unwrap_or(Line::Event)));
    }
    None
}

/// What HexChat writes after a bare `*`: a join, a quit, a topic, not something a person did.
fn is_client_notice(text: &str) -> bool {
    ["Now talking on ", "Topic for ", "Channel "].iter().any(|p| text.starts_with(p))
        || [" has joined", " has quit", " has left", " sets mode", " has changed the topic", " has kicked "]
            .iter()
            .any(|p| text.contains(p))
}

/// `nick waves` after the action marker: a line from `nick` that says what they did.
fn action<'a>(text: &'a str, day: Option<NaiveDate>, time: Option<NaiveTime>) -> Option<Line<'a>> {
    if is_client_notice(text) {
        return Some(Line::Event);
    }
    let (who, what) = text.trim().split_once(' ')?;
    Some(Line::Says { day, time, nick: nick(who)?, text: what.trim() })
}

/// Whether the text opens like an IRC log (used by `detect`): of its first 40 lines that are
/// not blank, at least three are messages and nine in ten read as log lines.
pub(crate) fn looks_like(head: &str) -> bool {
    let lines: Vec<&str> = head.lines().filter(|l| !l.trim().is_empty()).take(40).collect();
    // The last line of a cut head may be cut too.
    let whole = if lines.len() == 40 { &lines[..39] } else { &lines[..] };
    let mut year = None;
    let (mut read_ok, mut says) = (0, 0);
    for l in whole {
        match read(l, year) {
            Some(Line::Day(d)) => {
                year = Some(d.year());
                read_ok += 1;
            }
            Some(Line::Says { .. }) => {
                says += 1;
                read_ok += 1;
            }
            Some(_) => read_ok += 1,
            None => {}
        }
    }
    says >= 3 && read_ok * 10 >= whole.len() * 9
}

/// The channel a file logs, from its name: `#rust.log`, `#rust.2020-12-01.log`,
/// `irc.libera.#rust.weechatlog`, `user_libera_#rust_20201201.log`, `rust.log`.
fn channel_name(path: &Path) -> String {
    let file = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let base = match file.find('#') {
        Some(i) => &file[i..],
        None => file.as_str(),
    };
    let mut name = String::new();
    for (i, c) in base.char_indices() {
        // A date after `_` or `-` ends the name; other digits are part of it (`#conv-26`).
        let rest = &base.as_bytes()[i + c.len_utf8()..];
        let dated = rest.len() >= 8 && rest[..4].iter().all(u8::is_ascii_digit) && &rest[..4] > b"1970";
        if i > 0 && (c == '.' || (c == '_' || c == '-') && dated) {
            break;
        }
        name.push(c);
    }
    let name = name.trim_end_matches(['.', '_', '-']).to_string();
    if name.trim_start_matches('#').is_empty() { "irc".into() } else { name }
}

/// A date written in the file name (`2020-12-01`, `20201201`).
fn day_in_name(path: &Path) -> Option<NaiveDate> {
    let file = path.file_name()?.to_string_lossy().into_owned();
    let b = file.as_bytes();
    for i in 0..b.len() {
        if i > 0 && b[i - 1].is_ascii_digit() || !b[i].is_ascii_digit() {
            continue;
        }
        for (len, fmt) in [(10, "%Y-%m-%d"), (8, "%Y%m%d")] {
            if let Some(s) = file.get(i..i + len)
                && file.as_bytes().get(i + len).is_none_or(|c| !c.is_ascii_digit())
                && let Ok(d) = NaiveDate::parse_from_str(s, fmt)
            {
                return Some(d);
            }
        }
    }
    None
}

pub(crate) fn parse(text: &str, path: &Path, mtime_ms: i64, skips: &mut Skips) -> Vec<Channel> {
    let name = channel_name(path);
    // A channel keeps its `#` in its name; a private conversation's log is named after the
    // person (`tom.log`), as a WhatsApp chat is.
    let id = format!("irc:{}", name.trim_start_matches('#'));
    let mut ch = Channel::new(id, name.clone(), name, Some("irc"));
    let file_day = chrono::DateTime::from_timestamp_millis(mtime_ms).map(|t| t.date_naive());
    let mut day = day_in_name(path).or(file_day).unwrap_or_default();
    let mut last_time: Option<NaiveTime> = None;
    let mut last_ms = day.and_time(NaiveTime::MIN).and_utc().timestamp_millis();
    // Each nick a person took, to the nick they were first seen under.
    let mut person: HashMap<String, String> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match read(line, Some(day.year())) {
            Some(Line::Day(d)) => {
                day = d;
                last_time = None;
            }
            Some(Line::Says { day: d, time, nick, text }) => {
                if text.is_empty() {
                    skips.line("message without text", path, i + 1);
                    continue;
                }
                if let Some(d) = d {
                    day = d;
                } else if let (Some(t), Some(prev)) = (time, last_time)
                    && t < prev
                {
                    day = day.succ_opt().unwrap_or(day);
                }
                let ts = match time {
                    Some(t) => {
                        last_time = Some(t);
                        day.and_time(t).and_utc().timestamp_millis()
                    }
                    None => last_ms,
                };
                last_ms = ts;
                let first = person.get(nick).cloned();
                let (from, handle) = match first {
                    Some(f) if f != nick => (f, Some(nick.to_lowercase())),
                    _ => (nick.to_string(), None),
                };
                ch.msgs.push(ChatMsg {
                    at: format!("L{}", i + 1),
                    ts,
                    from,
                    text: text.to_string(),
                    thread: None,
                    handle,
                });
            }
            Some(Line::Renamed { old, new }) => {
                let first = person.get(old).cloned().unwrap_or_else(|| old.to_string());
                person.insert(new.to_string(), first);
                skips.line("join, part, nick or mode line", path, i + 1);
            }
            Some(Line::Event) => skips.line("join, part, nick or mode line", path, i + 1),
            None => skips.line("line in no IRC log shape", path, i + 1),
        }
    }
    vec![ch]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn says(line: &str) -> Option<(Option<NaiveDate>, Option<NaiveTime>, String, String)> {
        match read(line, Some(2020))? {
            Line::Says { day, time, nick, text } => Some((day, time, nick.into(), text.into())),
            _ => None,
        }
    }

    fn t(h: u32, m: u32, s: u32) -> Option<NaiveTime> {
        NaiveTime::from_hms_opt(h, m, s)
    }

    #[test]
    fn the_line_shapes_of_the_common_clients() {
        let day = NaiveDate::from_ymd_opt(2020, 12, 1);
        let hi = |d, tm| Some((d, tm, "alice".to_string(), "hi there".to_string()));
        assert_eq!(says("10:00 < alice> hi there"), hi(None, t(10, 0, 0)));
        assert_eq!(says("10:00 <@alice> hi there"), hi(None, t(10, 0, 0)));
        assert_eq!(says("[10:00:05] <alice> hi there"), hi(None, t(10, 0, 5)));
        assert_eq!(says("[2020-12-01 10:00:00] <+alice> hi there"), hi(day, t(10, 0, 0)));
        assert_eq!(says("2020-12-01 10:00:00\t@alice\thi there"), hi(day, t(10, 0, 0)));
        assert_eq!(says("2020-12-01T10:00:00Z <alice> hi there"), hi(day, t(10, 0, 0)));
        assert_eq!(says("Dec 01 10:00:00 <alice>\thi there"), hi(day, t(10, 0, 0)));
        assert_eq!(says("<alice> hi there"), hi(None, None));
        assert_eq!(says("10:01  * alice hi there"), hi(None, t(10, 1, 0)));
        assert_eq!(says("2020-12-01 10:00:00\t *\talice hi there"), hi(day, t(10, 0, 0)));
        for event in [
            "10:02 -!- bob [~b@host] has joined #rust",
            "[10:02:00] *** Joins: bob (~b@host)",
            "2020-12-01 10:02:00\t-->\tbob (~b@host) has joined #rust",
            "2020-12-01 10:02:00\t--\tMode #rust [+o bob] by ChanServ",
        ] {
            assert_eq!(read(event, None), Some(Line::Event), "{event}");
        }
        assert_eq!(
            read("10:03 -!- bob is now known as bob_away", None),
            Some(Line::Renamed { old: "bob", new: "bob_away" })
        );
        assert_eq!(
            read("--- Day changed Wed Dec 02 2020", None),
            Some(Line::Day(NaiveDate::from_ymd_opt(2020, 12, 2).unwrap()))
        );
        assert_eq!(
            read("**** BEGIN LOGGING AT Tue Dec  1 10:00:00 2020", None),
            Some(Line::Day(NaiveDate::from_ymd_opt(2020, 12, 1).unwrap()))
        );
        for prose in [
            "Dear Ann, see you at 10:00.",
            "Notes: <b>bold</b> text",
            "- a list item",
            "2020-12-01 10:00:00 INFO started",
            "2020-12-01 10:00:00\tINFO\tstarted",
            "* buy milk",
            "-- Ann",
        ] {
            assert!(!matches!(read(prose, None), Some(Line::Says { .. })), "{prose}");
        }
    }

    #[test]
    fn a_log_is_told_from_prose_and_app_logs() {
        assert!(looks_like("--- Log opened Tue Dec 01 10:00:00 2020\n10:00 < a> x\n10:01 < b> y\n10:02 < a> z\n"));
        assert!(looks_like("[10:00] <a> x\n[10:01] <b> y\n[10:02] *** Joins: c\n[10:03] <a> z\n"));
        assert!(!looks_like("# Notes\n\nSee <a> and <b>.\n10:00 meeting\nBring the keys.\n"));
        assert!(!looks_like("2020-12-01 10:00:00 INFO a\n2020-12-01 10:00:01 WARN b\n2020-12-01 10:00:02 INFO c\n"));
        assert!(!looks_like("* oat milk\n* free range eggs\n* bread flour\n* two lemons\n"), "a list, not actions");
    }

    #[test]
    fn channels_and_days_from_file_names() {
        assert_eq!(channel_name(Path::new("logs/#rust.log")), "#rust");
        assert_eq!(channel_name(Path::new("#rust.2020-12-01.log")), "#rust");
        assert_eq!(channel_name(Path::new("irc.libera.#rust-beginners.weechatlog")), "#rust-beginners");
        assert_eq!(channel_name(Path::new("me_libera_#rust_20201201.log")), "#rust");
        assert_eq!(channel_name(Path::new("friends.log")), "friends");
        assert_eq!(channel_name(Path::new("#conv-26.log")), "#conv-26");
        assert_eq!(channel_name(Path::new("#abcé-x.log")), "#abcé-x");
        assert_eq!(channel_name(Path::new("#rust-2020-12-01.log")), "#rust");
        assert_eq!(day_in_name(Path::new("me_libera_#rust_20201201.log")), NaiveDate::from_ymd_opt(2020, 12, 1));
        assert_eq!(day_in_name(Path::new("#rust.2020-12-01.log")), NaiveDate::from_ymd_opt(2020, 12, 1));
        assert_eq!(day_in_name(Path::new("#rust.log")), None);
    }
}
