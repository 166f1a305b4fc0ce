//! Dates written in a recall question ("9 July, 2022", "July 2022", "2022-07-09", "last March",
//! "three days ago") read as the span of time they name, so that recall can prefer what was
//! observed then. Only what reads unambiguously as a date counts: a month name that is also a
//! word ("may", "march") needs a day, a year or a word such as "in"/"last" beside it, and a bare
//! year needs a preposition ("in 2022"), so version numbers and counts are left alone.
//!
//! Times are UTC. A named day or month is widened by [`SLACK_MS`] on each side, so that a
//! chunk stamped in the writer's local evening still falls on the day they would name. Words
//! relative to today ("yesterday", "last week") are measured from the `now` passed in.

use chrono::{Datelike, Duration, NaiveDate, TimeZone, Utc};

/// Widening of a named day or month at each end: the spread of civil time zones around UTC.
pub(crate) const SLACK_MS: i64 = 14 * 3600 * 1000;

/// A span of time a query names: `from_ms <= t < to_ms`, and the words that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub from_ms: i64,
    pub to_ms: i64,
    pub text: String,
}

const MONTHS: [(&str, u32); 24] = [
    ("january", 1),
    ("jan", 1),
    ("february", 2),
    ("feb", 2),
    ("march", 3),
    ("mar", 3),
    ("april", 4),
    ("apr", 4),
    ("may", 5),
    ("june", 6),
    ("jun", 6),
    ("july", 7),
    ("jul", 7),
    ("august", 8),
    ("aug", 8),
    ("september", 9),
    ("sept", 9),
    ("sep", 9),
    ("october", 10),
    ("oct", 10),
    ("november", 11),
    ("nov", 11),
    ("december", 12),
    ("dec", 12),
];

fn month(word: &str) -> Option<u32> {
    MONTHS.iter().find(|(name, _)| *name == word).map(|&(_, m)| m)
}

/// Month names that are also ordinary English words, which need a date beside them.
fn is_common_word(word: &str) -> bool {
    matches!(word, "may" | "march" | "mar" | "jan" | "sep" | "oct" | "dec" | "jun" | "aug")
}

fn day(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year(word: &str) -> Option<i32> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1900..=2199).contains(y))
}

fn number(word: &str) -> Option<i64> {
    let n = match word {
        "a" | "an" | "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        w => w.parse().ok().filter(|n| (1..=1000).contains(n))?,
    };
    Some(n)
}

fn ms(d: NaiveDate) -> i64 {
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight exists")).timestamp_millis()
}

fn day_span(d: NaiveDate) -> (i64, i64) {
    (ms(d) - SLACK_MS, ms(d) + 86_400_000 + SLACK_MS)
}

fn month_span(y: i32, m: u32) -> Option<(i64, i64)> {
    let first = NaiveDate::from_ymd_opt(y, m, 1)?;
    let next = if m == 12 { NaiveDate::from_ymd_opt(y + 1, 1, 1)? } else { NaiveDate::from_ymd_opt(y, m + 1, 1)? };
    Some((ms(first) - SLACK_MS, ms(next) + SLACK_MS))
}

fn year_span(y: i32) -> Option<(i64, i64)> {
    Some((ms(NaiveDate::from_ymd_opt(y, 1, 1)?) - SLACK_MS, ms(NaiveDate::from_ymd_opt(y + 1, 1, 1)?) + SLACK_MS))
}

/// `YYYY-MM-DD`, `YYYY/MM/DD` or `YYYY-MM`.
fn iso(word: &str) -> Option<(i64, i64)> {
    let parts: Vec<&str> = word.split(['-', '/']).collect();
    if !parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    match parts[..] {
        [y, m, d] if y.len() == 4 && m.len() <= 2 && d.len() <= 2 => {
            NaiveDate::from_ymd_opt(year(y)?, m.parse().ok()?, d.parse().ok()?).map(day_span)
        }
        [y, m] if y.len() == 4 && m.len() == 2 => month_span(year(y)?, m.parse().ok()?),
        _ => None,
    }
}

/// The year of the latest `month`/`day` that is not after `today`.
fn latest_year(today: NaiveDate, m: u32, d: u32) -> i32 {
    if (m, d) <= (today.month(), today.day()) { today.year() } else { today.year() - 1 }
}

/// Every span the query names, merged into the one that covers them all ("between March and
/// May 2022" covers both months); `None` when it names no date.
pub(crate) fn span_in(query: &str, now_ms: i64) -> Option<Span> {
    let today = Utc.timestamp_millis_opt(now_ms).single()?.date_naive();
    // Pieces between spaces and commas, with their byte ranges in `query`.
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut at = None;
    for (i, c) in query.char_indices().chain(std::iter::once((query.len(), ' '))) {
        match (c.is_whitespace() || c == ',', at) {
            (true, Some(s)) => {
                pieces.push((s, i));
                at = None;
            }
            (false, None) => at = Some(i),
            _ => {}
        }
    }
    let raw: Vec<&str> = pieces.iter().map(|&(s, e)| &query[s..e]).collect();
    let words: Vec<String> = raw
        .iter()
        .map(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
            w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")).map(str::to_string).unwrap_or(w)
        })
        .collect();
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let mut found: Vec<((i64, i64), usize, usize)> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let start = i;
        let hit: Option<((i64, i64), usize)> = (|| {
            let here = w(i);
            if let Some(s) = iso(raw[i].trim_matches(|c: char| !c.is_alphanumeric())) {
                return Some((s, 1));
            }
            // 9 July 2022 · 9th of July, 2022 · 9 July
            if let Some(d) = day(here) {
                let of = usize::from(w(i + 1) == "of");
                if let Some(m) = month(w(i + 1 + of)) {
                    let after = i + 2 + of;
                    if let Some(y) = year(w(after)) {
                        return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), after + 1 - i));
                    }
                    let y = latest_year(today, m, d);
                    return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), after - i));
                }
            }
            let m = month(here)?;
            // July 9, 2022 · July 9 · July 2022
            if let Some(d) = day(w(i + 1)) {
                if let Some(y) = year(w(i + 2)) {
                    return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), 3));
                }
                let y = latest_year(today, m, d);
                return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), 2));
            }
            if let Some(y) = year(w(i + 1)) {
                return Some((month_span(y, m)?, 2));
            }
            // last March · in May · this June
            let before = if i > 0 { w(i - 1) } else { "" };
            let anchored = matches!(before, "in" | "last" | "this" | "since" | "during" | "early" | "late" | "mid");
            if !anchored && is_common_word(here) {
                return None;
            }
            // The latest such month that has begun; "last" skips the current one.
            let y = if m > today.month() || (before == "last" && m == today.month()) {
                today.year() - 1
            } else {
                today.year()
            };
            Some((month_span(y, m)?, 1))
        })()
        .or_else(|| relative(&words, i, today));
        match hit {
            Some((span, len)) => {
                found.push((span, start, len.max(1)));
                i += len.max(1);
            }
            None => {
                // in 2022 · during 2021 · since 2019
                if let Some(y) = year(w(i))
                    && i > 0
                    && matches!(w(i - 1), "in" | "during" | "since" | "from" | "of" | "throughout")
                    && let Some(s) = year_span(y)
                {
                    found.push((s, i, 1));
                }
                i += 1;
            }
        }
    }
    let from_ms = found.iter().map(|f| f.0.0).min()?;
    let to_ms = found.iter().map(|f| f.0.1).max()?;
    let text = found
        .iter()
        .map(|&(_, at, len)| {
            let (from, to) = (pieces[at].0, pieces[(at + len).min(pieces.len()) - 1].1);
            query[from..to].trim_matches(|c: char| !c.is_alphanumeric())
        })
        .collect::<Vec<_>>()
        .join(" … ");
    Some(Span { from_ms, to_ms, text })
}

/// Words relative to today: yesterday, today, last week/month/year, this week/month/year,
/// N days/weeks/months/years ago.
fn relative(words: &[String], i: usize, today: NaiveDate) -> Option<((i64, i64), usize)> {
    let w = |k: usize| words.get(k).map(String::as_str).unwrap_or("");
    let start_of_week = today - Duration::days(today.weekday().num_days_from_monday() as i64);
    match (w(i), w(i + 1)) {
        ("today" | "tonight", _) => Some((day_span(today), 1)),
        ("yesterday", _) => Some((day_span(today - Duration::days(1)), 1)),
        ("last" | "this", unit @ ("week" | "month" | "year")) => {
            let last = w(i) == "last";
            let span = match unit {
                "week" => {
                    let from = if last { start_of_week - Duration::days(7) } else { start_of_week };
                    (ms(from) - SLACK_MS, ms(from + Duration::days(7)) + SLACK_MS)
                }
                "month" => {
                    let (y, m) = match (last, today.month()) {
                        (true, 1) => (today.year() - 1, 12),
                        (true, m) => (today.year(), m - 1),
                        (false, m) => (today.year(), m),
                    };
                    month_span(y, m)?
                }
                _ => year_span(if last { today.year() - 1 } else { today.year() })?,
            };
            Some((span, 2))
        }
        (n, unit) if w(i + 2) == "ago" => {
            let n = number(n)?;
            let days = match unit.trim_end_matches('s') {
                "day" => n,
                "week" => n * 7,
                "month" => n * 30,
                "year" => n * 365,
                _ => return None,
            };
            // "three weeks ago" is rough: the span is that day give or take a seventh of the distance.
            let centre = today - Duration::days(days);
            let spread = Duration::days((days / 7).max(1));
            Some(((ms(centre - spread) - SLACK_MS, ms(centre + spread) + 86_400_000 + SLACK_MS), 3))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30, a Monday.
    const NOW: i64 = 1_796_040_000_000;

    fn span(q: &str) -> Option<(String, String)> {
        let fmt = |ms: i64| crate::util::ms_to_rfc3339(ms + SLACK_MS)[..10].to_string();
        span_in(q, NOW).map(|s| (fmt(s.from_ms), fmt(s.to_ms - 2 * SLACK_MS)))
    }

    fn day(d: &str) -> Option<(String, String)> {
        let next = NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap() + Duration::days(1);
        Some((d.to_string(), next.to_string()))
    }

    #[test]
    fn absolute_dates_in_common_forms() {
        assert_eq!(crate::util::ms_to_rfc3339(NOW), "2026-11-30T12:00:00.000Z");
        for q in [
            "What did Caroline do on 9 July, 2022?",
            "on 9th of July 2022",
            "July 9, 2022 meeting",
            "notes from 2022-07-09",
            "notes from 2022/07/09.",
        ] {
            assert_eq!(span(q), day("2022-07-09"), "{q}");
        }
        assert_eq!(span("the July 2022 release"), Some(("2022-07-01".into(), "2022-08-01".into())));
        assert_eq!(span("invoices from 2021-12"), Some(("2021-12-01".into(), "2022-01-01".into())));
        assert_eq!(span("what we planned in 2023"), Some(("2023-01-01".into(), "2024-01-01".into())));
        assert_eq!(span("between March 2022 and May 2022"), Some(("2022-03-01".into(), "2022-06-01".into())));
        assert_eq!(span_in("on 9 July, 2022", NOW).unwrap().text, "9 July, 2022");
    }

    #[test]
    fn dates_without_a_year_and_relative_words_count_back_from_today() {
        assert_eq!(span("on 9 July"), day("2026-07-09"));
        assert_eq!(span("on December 24"), day("2025-12-24"));
        assert_eq!(span("what happened last March"), Some(("2026-03-01".into(), "2026-04-01".into())));
        assert_eq!(span("in December"), Some(("2025-12-01".into(), "2026-01-01".into())));
        assert_eq!(span("last November"), Some(("2025-11-01".into(), "2025-12-01".into())));
        assert_eq!(span("yesterday's call"), day("2026-11-29"));
        assert_eq!(span("last week"), Some(("2026-11-23".into(), "2026-11-30".into())));
        assert_eq!(span("this month"), Some(("2026-11-01".into(), "2026-12-01".into())));
        assert_eq!(span("last year"), Some(("2025-01-01".into(), "2026-01-01".into())));
        assert_eq!(span("three days ago"), Some(("2026-11-26".into(), "2026-11-29".into())));
    }

    #[test]
    fn words_that_only_look_like_dates_are_left_alone() {
        for q in [
            "may I ask about the march of progress",
            "python 3.12 and rust 1.80",
            "the 2022 budget line",
            "we counted 31 apples",
            "a 2022-13-45 typo",
            "ownership and borrowing",
            "",
        ] {
            assert_eq!(span(q), None, "{q}");
        }
    }
}
