//! Timestamps in the forms exports and archives write them, read into milliseconds since the
//! Unix epoch. A form without a time zone is read as UTC (exports rarely say which local time
//! they meant, and UTC keeps the stored value the same on every machine).
//!
//! Accepted: RFC 3339 / ISO 8601 with `T` or a space, with or without seconds, fractions and a
//! zone (`2024-01-01T10:00:00Z`, `2024-01-01 10:00:00`, `2024-01-01 10:00:00.123+02:00`,
//! `2024-01-01 10:00 UTC`), a bare date (`2024-01-01`), `2024/01/01 10:00:00`, RFC 2822 mail
//! dates (`Mon, 1 Jan 2024 10:00:00 +0000`), C `asctime` dates as Mailman writes them (`Thu Nov
//! 1 11:19:12 2001`, also with a zone name before the year), and epoch numbers: seconds (with
//! fractions, as ChatGPT and Slack write them) or milliseconds (values of 10^11 and more).

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};

/// Seconds, or milliseconds when the value is that large.
pub(crate) fn from_epoch(n: f64) -> Option<i64> {
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    Some(if n >= 1e11 { n as i64 } else { (n * 1000.0).round() as i64 })
}

/// A JSON value holding a time: a number (epoch) or a string in any form `parse` reads.
pub(crate) fn from_json(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64().and_then(from_epoch),
        serde_json::Value::String(s) => parse(s),
        _ => None,
    }
}

/// Any of the forms in this module's header.
pub(crate) fn parse(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return s.parse::<f64>().ok().and_then(from_epoch);
    }
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some(d.timestamp_millis());
    }
    iso(s).or_else(|| mail_date(s))
}

/// ISO-like `date[ T]time[zone]` and bare dates, with `-` or `/` between the date's parts.
fn iso(s: &str) -> Option<i64> {
    let s = s.replace('/', "-");
    let (date, rest) = match s.find(['T', ' ']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s.as_str(), ""),
    };
    let date = NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
    if rest.is_empty() {
        return Some(date.and_time(NaiveTime::MIN).and_utc().timestamp_millis());
    }
    let (time, zone) = split_zone(rest);
    let time = ["%H:%M:%S%.f", "%H:%M:%S", "%H:%M"].iter().find_map(|f| NaiveTime::parse_from_str(time, f).ok())?;
    let offset_secs = zone_offset(zone)?;
    Some(NaiveDateTime::new(date, time).and_utc().timestamp_millis() - offset_secs * 1000)
}

/// Splits `10:00:00+02:00`, `10:00:00Z` or `10:00:00 UTC` into the time and the zone text.
fn split_zone(rest: &str) -> (&str, &str) {
    if let Some(i) = rest.find(['Z', '+', '-', ' ']) { (rest[..i].trim(), rest[i..].trim()) } else { (rest, "") }
}

/// Seconds east of UTC for `Z`, `UTC`, `GMT`, `+02:00`, `+0200`, `-05`; None for other text.
fn zone_offset(zone: &str) -> Option<i64> {
    let z = zone.trim();
    if z.is_empty() || ["Z", "UTC", "GMT", "UT"].iter().any(|n| z.eq_ignore_ascii_case(n)) {
        return Some(0);
    }
    let (sign, digits) = match z.as_bytes()[0] {
        b'+' => (1, &z[1..]),
        b'-' => (-1, &z[1..]),
        _ => return named_zone(z),
    };
    let digits: String = digits.chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i64>().ok()?, 0),
        4 => (digits[..2].parse::<i64>().ok()?, digits[2..].parse::<i64>().ok()?),
        _ => return None,
    };
    Some(sign * (h * 3600 + m * 60))
}

/// The zone names old mail archives use most; others are not guessed.
fn named_zone(z: &str) -> Option<i64> {
    const ZONES: [(&str, i64); 11] = [
        ("EST", -5),
        ("EDT", -4),
        ("CST", -6),
        ("CDT", -5),
        ("MST", -7),
        ("MDT", -6),
        ("PST", -8),
        ("PDT", -7),
        ("CET", 1),
        ("CEST", 2),
        ("BST", 1),
    ];
    ZONES.iter().find(|(name, _)| name.eq_ignore_ascii_case(z)).map(|(_, h)| h * 3600)
}

/// RFC 2822 (`Mon, 1 Jan 2024 10:00:00 +0000`) and `asctime` (`Thu Nov  1 11:19:12 2001`,
/// `Thu Nov 1 11:19:12 EST 2001`, `Thu Nov 1 11:19:12 2001 -0500`).
pub(crate) fn mail_date(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc2822(s) {
        return Some(d.timestamp_millis());
    }
    // Mail clients add a zone comment: `+0000 (UTC)`; RFC 2822 readers want it gone.
    let no_comment = s.split(" (").next().unwrap_or(s).trim();
    if no_comment != s
        && let Ok(d) = DateTime::parse_from_rfc2822(no_comment)
    {
        return Some(d.timestamp_millis());
    }
    asctime(no_comment).or_else(|| rfc2822_loose(no_comment))
}

fn month(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let name = name.get(..3)?.to_ascii_lowercase();
    MONTHS.iter().position(|m| *m == name).map(|i| i as u32 + 1)
}

fn time_of(s: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(s, "%H:%M:%S").or_else(|_| NaiveTime::parse_from_str(s, "%H:%M")).ok()
}

/// `[Weekday] Mon D HH:MM:SS [ZONE] YYYY [ZONE]`.
fn asctime(s: &str) -> Option<i64> {
    let mut words: Vec<&str> = s.split_whitespace().collect();
    if words.first().is_some_and(|w| month(w).is_none()) {
        words.remove(0);
    }
    let mon = month(words.first()?)?;
    let day: u32 = words.get(1)?.parse().ok()?;
    let time = time_of(words.get(2)?)?;
    let mut year = None;
    let mut offset = 0;
    for w in &words[3..] {
        match w.parse::<i32>() {
            Ok(y) if w.len() == 4 && year.is_none() => year = Some(y),
            _ => offset = zone_offset(w)?,
        }
    }
    let date = NaiveDate::from_ymd_opt(year?, mon, day)?;
    Some(NaiveDateTime::new(date, time).and_utc().timestamp_millis() - offset * 1000)
}

/// RFC 2822-like dates chrono refuses: no weekday comma, a two-digit year, a named zone.
fn rfc2822_loose(s: &str) -> Option<i64> {
    let words: Vec<&str> = s.split_whitespace().filter(|w| month(w).is_some() || !w.ends_with(',')).collect();
    let start = words.iter().position(|w| w.parse::<u32>().is_ok())?;
    let day: u32 = words[start].parse().ok()?;
    let mon = month(words.get(start + 1)?)?;
    let y = words.get(start + 2)?;
    let year: i32 = match y.parse::<i32>().ok()? {
        n if y.len() == 2 && n < 50 => 2000 + n,
        n if y.len() == 2 => 1900 + n,
        n => n,
    };
    let time = time_of(words.get(start + 3)?)?;
    let offset = words.get(start + 4).map_or(Some(0), |z| zone_offset(z))?;
    let date = NaiveDate::from_ymd_opt(year, mon, day)?;
    Some(NaiveDateTime::new(date, time).and_utc().timestamp_millis() - offset * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAN1_10H: i64 = 1_704_103_200_000;

    #[test]
    fn every_documented_form_reads() {
        let cases: &[(&str, i64)] = &[
            ("2024-01-01T10:00:00Z", JAN1_10H),
            ("2024-01-01T10:00:00.000+00:00", JAN1_10H),
            ("2024-01-01T12:00:00+02:00", JAN1_10H),
            ("2024-01-01 10:00:00", JAN1_10H),
            ("2024-01-01 10:00", JAN1_10H),
            ("2024-01-01T10:00:00", JAN1_10H),
            ("2024-01-01 10:00:00 UTC", JAN1_10H),
            ("2024-01-01 11:00:00+0100", JAN1_10H),
            ("2024/01/01 10:00:00", JAN1_10H),
            ("2024-01-01", JAN1_10H - 10 * 3_600_000),
            ("Mon, 1 Jan 2024 10:00:00 +0000", JAN1_10H),
            ("Mon, 01 Jan 2024 10:00:00 +0000 (UTC)", JAN1_10H),
            ("1 Jan 2024 05:00:00 EST", JAN1_10H),
            ("Mon Jan  1 10:00:00 2024", JAN1_10H),
            ("Mon Jan 1 05:00:00 EST 2024", JAN1_10H),
            ("January 1 10:00:00 2024", JAN1_10H),
            ("1704103200", JAN1_10H),
            ("1704103200.000100", JAN1_10H),
            ("1704103200000", JAN1_10H),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), Some(*want), "{text}");
        }
        assert_eq!(from_json(&serde_json::json!(1_704_103_200.25)), Some(JAN1_10H + 250));
        assert_eq!(mail_date("Thu Nov  1 11:19:12 2001"), Some(1_004_613_552_000));
        for bad in ["", "yesterday", "2024-13-01 10:00", "10:00", "Mon, 1 Foo 2024 10:00:00"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
