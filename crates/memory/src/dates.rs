//! Dates written in a recall question ("9 July, 2022", "July 2022", "2022-07-09", "last March",
//! "three days ago") read as the span of time they name, so that recall can prefer what was
//! observed then. Only what reads unambiguously as a date counts: a month name that is also a
//! word ("may", "march") needs a day, a year or a word such as "in"/"last" beside it, and a bare
//! year needs a preposition ("in 2022"), so version numbers and counts are left alone.
//!
//! Times are UTC. A named day or month is widened by [`SLACK_MS`] on each side, so that a
//! chunk stamped in the writer's local evening still falls on the day they would name. Words
//! relative to today ("yesterday", "last week") are measured from the `now` passed in.

use chrono::{Datelike, Duration, NaiveDate, TimeZone, Utc, Weekday};

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

/// The month `word` names: in English, or spelled out in full in one of the languages whose
/// dates chat exports are read in (`novembre`, `März`, `diciembre`); their abbreviations and
/// the names that are English words too (`set`, `ago`, `mars`) are left out.
fn month(word: &str) -> Option<u32> {
    MONTHS.iter().find(|(name, _)| *name == word).map(|&(_, m)| m).or_else(|| {
        let foreign =
            (word.chars().count() >= 4 || matches!(word, "mai" | "mei")) && !matches!(word, "mars" | "mart" | "mayo");
        foreign.then(|| openhuman_formats::month_named(word)).flatten()
    })
}

/// Whether `word` (lowercased) only says which of the days, weeks or months a date means
/// ("next", "last", "this", "prochaine", "ago"): a chunk that writes it is not about that date.
pub(crate) fn says_which(word: &str) -> bool {
    is_last_before(word)
        || is_last_after(word)
        || is_this(word)
        || is_next_before(word)
        || is_next_after(word)
        || is_before_last(word)
        || matches!(word, "ago" | "fa" | "geleden")
}

/// Month names that need a date beside them, or a word such as "in" before them: the English
/// names that are also ordinary words, and every name in another language.
fn is_common_word(word: &str) -> bool {
    matches!(word, "may" | "march" | "mar" | "jan" | "sep" | "oct" | "dec" | "jun" | "aug")
        || !MONTHS.iter().any(|(name, _)| *name == word)
}

/// Words between a day and its month, or a month and its year: "9th of July", "12 de
/// noviembre de 2026", "3 di marzo".
fn is_joining(word: &str) -> bool {
    matches!(word, "of" | "de" | "del" | "di")
}

/// Words before a month name alone that make it a date: "in May", "last March", "en
/// novembre", "im Oktober".
fn anchors_month(word: &str) -> bool {
    matches!(
        word,
        "in" | "last"
            | "this"
            | "next"
            | "coming"
            | "since"
            | "during"
            | "early"
            | "late"
            | "mid"
            | "en"
            | "im"
            | "em"
            | "seit"
            | "depuis"
            | "desde"
            | "dal"
            | "sinds"
    )
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
        "a" | "an" | "one" | "un" | "une" | "ein" | "eine" | "einem" | "einer" | "einen" | "uno" | "una" | "um"
        | "uma" | "een" => 1,
        "two" | "deux" | "zwei" | "dos" | "due" | "dois" | "twee" => 2,
        "three" | "trois" | "drei" | "tres" | "tre" | "três" | "drie" => 3,
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

/// The year of the latest `month`/`day` that is not after `today`, or, for a question that
/// [looks ahead](looks_ahead), of the first that is not before it.
fn year_of_day(today: NaiveDate, m: u32, d: u32, ahead: bool) -> i32 {
    match ((m, d).cmp(&(today.month(), today.day())), ahead) {
        (std::cmp::Ordering::Less, true) => today.year() + 1,
        (_, true) | (std::cmp::Ordering::Less | std::cmp::Ordering::Equal, false) => today.year(),
        (std::cmp::Ordering::Greater, false) => today.year() - 1,
    }
}

/// Whether an English question asks about time to come, so that a date it names without a year
/// ("in February", "on 21 January") or a weekday alone ("on Friday") is the next one, not the
/// last: it says so ("will", "we'll", "going to", "upcoming", "due", "planned"), or it is in the
/// present tense with nothing that says past ("what's happening in February?", "what do I have
/// on Friday?", "what is due in March?"). A question without a verb ("notes from December"), or
/// one that says "did", "was", "happened", "ago", "last" or a verb in -ed, counts back as before:
/// a memory is most often asked about what has been.
fn looks_ahead(raw: &[&str]) -> bool {
    let words: Vec<String> =
        raw.iter().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase().replace('’', "'")).collect();
    let future = words.iter().any(|w| {
        w.ends_with("'ll")
            || matches!(
                w.as_str(),
                "will"
                    | "shall"
                    | "going"
                    | "gonna"
                    | "upcoming"
                    | "coming"
                    | "due"
                    | "planned"
                    | "scheduled"
                    | "ahead"
            )
    });
    if future {
        return true;
    }
    let past = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "did"
                | "didn't"
                | "was"
                | "wasn't"
                | "were"
                | "weren't"
                | "had"
                | "been"
                | "went"
                | "ago"
                | "last"
                | "happened"
        ) || (w.len() >= 5 && w.ends_with("ed") && !matches!(w.as_str(), "needed" | "booked"))
    });
    let present = words.iter().any(|w| {
        matches!(w.as_str(), "is" | "are" | "do" | "does" | "have" | "has" | "happening" | "doing")
            || w.ends_with("'re")
            || w.strip_suffix("'s").is_some_and(|b| {
                matches!(b, "what" | "who" | "where" | "when" | "how" | "it" | "there" | "that" | "here")
            })
    });
    !past && present
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
    let stops = crate::fts::QueryStops::of(query);
    let french = stops.reads_as("fr");
    // The tense is read in English only (a question in another language counts back).
    let ahead = stops == crate::fts::QueryStops::default() && looks_ahead(&raw);
    let mut i = 0;
    while i < words.len() {
        let start = i;
        let hit: Option<((i64, i64), usize)> = (|| {
            let here = w(i);
            if let Some(s) = iso(raw[i].trim_matches(|c: char| !c.is_alphanumeric())) {
                return Some((s, 1));
            }
            // 9 July 2022 · 9th of July, 2022 · 9 July · 12 de noviembre de 2026
            if let Some(d) = day(here) {
                let of = usize::from(is_joining(w(i + 1)));
                if let Some(m) = month(w(i + 1 + of)) {
                    let after = i + 2 + of;
                    let of = usize::from(is_joining(w(after)));
                    if let Some(y) = year(w(after + of)) {
                        return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), after + of + 1 - i));
                    }
                    let y = year_of_day(today, m, d, ahead);
                    return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), after - i));
                }
            }
            let m = month(here)?;
            // July 9, 2022 · July 9 · July 2022
            if let Some(d) = day(w(i + 1)) {
                if let Some(y) = year(w(i + 2)) {
                    return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), 3));
                }
                let y = year_of_day(today, m, d, ahead);
                return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?), 2));
            }
            // July 2022 · novembre 2026 · noviembre de 2026
            let of = usize::from(is_joining(w(i + 1)));
            if let Some(y) = year(w(i + 1 + of)) {
                return Some((month_span(y, m)?, 2 + of));
            }
            // last March · in May · this June · en novembre
            let before = if i > 0 { w(i - 1) } else { "" };
            let anchored = anchors_month(before);
            if !anchored && is_common_word(here) {
                return None;
            }
            // The latest such month that has begun; "last" skips the current one; "next" and
            // "coming" name the first that has not begun; in a question that looks ahead, the
            // first that has not ended.
            let y = if matches!(before, "next" | "coming") {
                if m > today.month() { today.year() } else { today.year() + 1 }
            } else if ahead && before != "last" {
                if m >= today.month() { today.year() } else { today.year() + 1 }
            } else if m > today.month() || (before == "last" && m == today.month()) {
                today.year() - 1
            } else {
                today.year()
            };
            Some((month_span(y, m)?, 1))
        })()
        .or_else(|| relative(&words, i, today, french, ahead));
        match hit {
            Some((span, len)) => {
                found.push((span, start, len.max(1)));
                i += len.max(1);
            }
            None => {
                // in 2022 · during 2021 · since 2019
                if let Some(y) = year(w(i))
                    && i > 0
                    && matches!(
                        w(i - 1),
                        "in" | "during"
                            | "since"
                            | "from"
                            | "of"
                            | "throughout"
                            | "en"
                            | "im"
                            | "em"
                            | "nel"
                            | "seit"
                            | "depuis"
                            | "desde"
                    )
                    && let Some(s) = year_span(y)
                {
                    found.push((s, i, 1));
                }
                i += 1;
            }
        }
    }
    let mut named: Vec<((i64, i64), &str)> = found
        .iter()
        .map(|&(span, at, len)| {
            let (from, to) = (pieces[at].0, pieces[(at + len).min(pieces.len()) - 1].1);
            (span, query[from..to].trim_matches(|c: char| !c.is_alphanumeric()))
        })
        .collect();
    named.extend(cjk_dates(query, today));
    let from_ms = named.iter().map(|f| f.0.0).min()?;
    let to_ms = named.iter().map(|f| f.0.1).max()?;
    let text = named.iter().map(|&(_, text)| text).collect::<Vec<_>>().join(" … ");
    Some(Span { from_ms, to_ms, text })
}

/// The days a text mentions in words: "21 January", "Thursday 21st of January 2027", "January
/// 21", "16–17 March" (both days), in English or the other languages [`month`] reads. A
/// mention without a year is that day's date nearest to `observed`, when the text was written ("the
/// check-up is on 21 January", written in December, is January ahead). Numeric dates are left
/// out: in stored text they are mostly stamps and headers of the moment a text was observed.
pub(crate) fn mentioned_days(text: &str, observed: NaiveDate) -> Vec<NaiveDate> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    let w = |i: usize| words.get(i).copied().unwrap_or("");
    // "16–17" or "16-17": both days.
    let days = |word: &str| -> Vec<u32> {
        match word.split_once(['–', '-']) {
            Some((a, b)) => [day(a), day(b)].into_iter().flatten().collect(),
            None => day(word).into_iter().collect(),
        }
    };
    let nearest = |m: u32, d: u32| {
        [observed.year() - 1, observed.year(), observed.year() + 1]
            .into_iter()
            .filter_map(|y| NaiveDate::from_ymd_opt(y, m, d))
            .min_by_key(|date| (*date - observed).num_days().abs())
    };
    let mut out = Vec::new();
    for i in 0..words.len() {
        let (ds, m, after) = match days(w(i))[..] {
            [] => match (month(w(i)), day(w(i + 1))) {
                (Some(m), Some(d)) => (vec![d], m, i + 2),
                _ => continue,
            },
            ref ds => {
                let of = usize::from(is_joining(w(i + 1)));
                match month(w(i + 1 + of)) {
                    Some(m) => (ds.to_vec(), m, i + 2 + of),
                    None => continue,
                }
            }
        };
        let of = usize::from(is_joining(w(after)));
        let y = year(w(after + of));
        for d in ds {
            let date = match y {
                Some(y) => NaiveDate::from_ymd_opt(y, m, d),
                None => nearest(m, d),
            };
            out.extend(date);
        }
    }
    out
}

/// The English names of the months a span overlaps (its slack aside), when it is short enough
/// to look up by the days texts mention: at most `max_days` long.
pub(crate) fn months_of(span: &Span, max_days: i64) -> Vec<&'static str> {
    let (from, to) = (span.from_ms + SLACK_MS, span.to_ms - SLACK_MS);
    if to <= from || to - from > max_days * 86_400_000 {
        return Vec::new();
    }
    let date = |ms: i64| Utc.timestamp_millis_opt(ms).single().map(|t| t.date_naive());
    let (Some(first), Some(last)) = (date(from), date(to - 1)) else { return Vec::new() };
    let mut names = Vec::new();
    let (mut y, mut m) = (first.year(), first.month());
    while (y, m) <= (last.year(), last.month()) {
        if let Some(&(name, _)) = MONTHS.iter().find(|(_, n)| *n == m) {
            names.push(name);
        }
        (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    }
    names
}

/// Whether the day `date` (at midnight UTC) falls in `span`, slack included.
pub(crate) fn day_in(date: NaiveDate, span: &Span) -> bool {
    let (from, to) = day_span(date);
    from + SLACK_MS >= span.from_ms && to - SLACK_MS <= span.to_ms
}

/// Dates written with the year, month and day marks of Chinese and Japanese (`2026年11月12日`,
/// `11月12日`) or Korean (`2026년 11월 12일`), wherever they stand in `query` (no space needs to
/// set them apart): a year, month and day, a month and day (the latest such day), a year and
/// month, a month, or a year. A day alone (`3日` is also "three days") is not read.
fn cjk_dates(query: &str, today: NaiveDate) -> Vec<((i64, i64), &str)> {
    let chars: Vec<(usize, char)> = query.char_indices().collect();
    let at = |k: usize| chars.get(k).map_or(query.len(), |c| c.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].1.is_ascii_digit() || i > 0 && chars[i - 1].1.is_ascii_digit() {
            i += 1;
            continue;
        }
        // Numbers each followed by its mark, year before month before day, spaces between.
        let (mut y, mut m, mut d) = (None, None, None);
        let (mut k, mut end, mut last) = (i, i, 0);
        loop {
            let mut j = k;
            while end > i && j < chars.len() && chars[j].1 == ' ' {
                j += 1;
            }
            let digits = j;
            while j < chars.len() && chars[j].1.is_ascii_digit() {
                j += 1;
            }
            let Some(&(_, mark)) = chars.get(j) else { break };
            let rank = match mark {
                '年' | '년' => 1,
                '月' | '월' => 2,
                '日' | '일' => 3,
                _ => break,
            };
            if j == digits || j - digits > 4 || rank <= last {
                break;
            }
            let value: i64 = query[at(digits)..at(j)].parse().unwrap_or(0);
            match rank {
                1 => y = Some(value),
                2 => m = Some(value),
                _ => d = Some(value),
            }
            (last, k, end) = (rank, j + 1, j + 1);
        }
        if end == i {
            i += 1;
            continue;
        }
        let text = &query[at(i)..at(end)];
        i = end;
        let y = match y {
            Some(y) => year(&y.to_string()),
            None => None,
        };
        let (Ok(m), Ok(d)) = (m.map(u32::try_from).transpose(), d.map(u32::try_from).transpose()) else { continue };
        let span = match (y, m, d) {
            (Some(y), Some(m), Some(d)) => NaiveDate::from_ymd_opt(y, m, d).map(day_span),
            (None, Some(m), Some(d)) => NaiveDate::from_ymd_opt(year_of_day(today, m, d, false), m, d).map(day_span),
            (Some(y), Some(m), None) => month_span(y, m),
            (None, Some(m), None) if (1..=12).contains(&m) => {
                month_span(if m > today.month() { today.year() - 1 } else { today.year() }, m)
            }
            (Some(y), None, None) => year_span(y),
            _ => None,
        };
        if let Some(span) = span {
            out.push((span, text));
        }
    }
    out
}

/// Words that ask what took place without saying what: "what happened on 3 November?", "what
/// did I say yesterday?", "was war am 3. November?", "qu'est-ce qui s'est passé hier ?". A
/// question of a date, these words and stop words asks about the day itself (see
/// `search::date_question`).
#[rustfmt::skip]
const EVENT_WORDS: &[&str] = &[
    // English (one form a stem: "happened" is "happen")
    "happen", "done", "say", "said", "tell", "told", "talk", "discuss", "write", "wrote", "written", "send",
    "sent", "go", "went", "gone", "plan", "anything", "something", "everything", "up", "new", "news", "event",
    "day",
    // German, Dutch, French, Spanish, Italian, Portuguese (folded)
    "war", "los", "passiert", "gemacht", "gesagt", "geschrieben", "gebeurd", "gedaan", "gezegd", "passe",
    "fait", "dit", "ecrit", "paso", "ocurrio", "hice", "hicimos", "hizo", "dijo", "dije", "successo", "fatto",
    "detto", "aconteceu", "fiz", "fez", "disse",
];

/// Whether `stem` (a query term, so never a stop word) is the stem of one of [`EVENT_WORDS`].
pub(crate) fn is_event_word(stem: &str) -> bool {
    static STEMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    STEMS
        .get_or_init(|| EVENT_WORDS.iter().map(|w| crate::fts::stem(w).into_owned()).collect())
        .iter()
        .any(|s| s == stem)
}

/// A unit of time a relative date counts in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

/// The unit `word` names, singular or plural, in English, German, Dutch, French, Spanish,
/// Italian or Portuguese (`l'année` and `mois-ci` as `année` and `mois`). `an`/`ans` (French) count only where a number
/// stands before them.
fn unit_of(word: &str) -> Option<Unit> {
    let word = word.strip_prefix("l'").or_else(|| word.strip_prefix("l’")).unwrap_or(word);
    let word = word.strip_suffix("-ci").unwrap_or(word);
    Some(match word {
        "day" | "days" | "tag" | "tage" | "tagen" | "dag" | "dagen" | "jour" | "jours" | "día" | "días" | "dia"
        | "dias" | "giorno" | "giorni" => Unit::Day,
        "week" | "weeks" | "woche" | "wochen" | "weken" | "semaine" | "semaines" | "semana" | "semanas"
        | "settimana" | "settimane" => Unit::Week,
        "month" | "months" | "monat" | "monate" | "monaten" | "maand" | "maanden" | "mois" | "mes" | "meses"
        | "mese" | "mesi" | "mês" => Unit::Month,
        "year" | "years" | "jahr" | "jahre" | "jahren" | "jaar" | "jaren" | "ans" | "an" | "année" | "années"
        | "año" | "años" | "anno" | "anni" | "ano" | "anos" => Unit::Year,
        _ => return None,
    })
}

/// Words before a unit that make it the last one ("last week", "letzte Woche", "vorige maand").
fn is_last_before(word: &str) -> bool {
    matches!(
        word,
        "last"
            | "letzte"
            | "letzten"
            | "letztes"
            | "letzter"
            | "vergangene"
            | "vergangenen"
            | "vergangenes"
            | "vorige"
            | "vorig"
    )
}

/// Words after a unit that make it the last one ("la semaine dernière", "el mes pasado",
/// "l'anno scorso", "o ano passado").
fn is_last_after(word: &str) -> bool {
    matches!(
        word,
        "dernière" | "dernier" | "passée" | "passé" | "pasada" | "pasado" | "scorsa" | "scorso" | "passada" | "passado"
    )
}

/// Words before a unit or a weekday that make it the next one ("next week", "nächsten Freitag",
/// "volgende maand", "el próximo viernes", "la prossima settimana").
fn is_next_before(word: &str) -> bool {
    matches!(
        word,
        "next"
            | "coming"
            | "upcoming"
            | "nächste"
            | "nächsten"
            | "nächstes"
            | "nächster"
            | "kommende"
            | "kommenden"
            | "kommendes"
            | "volgende"
            | "komende"
            | "prochain"
            | "prochaine"
            | "próximo"
            | "próxima"
            | "proximo"
            | "proxima"
            | "prossimo"
            | "prossima"
    )
}

/// Words after a unit or a weekday that make it the next one ("la semaine prochaine",
/// "vendredi prochain", "el mes próximo", "venerdì prossimo").
fn is_next_after(word: &str) -> bool {
    matches!(word, "prochain" | "prochaine" | "próximo" | "próxima" | "proximo" | "proxima" | "prossimo" | "prossima")
}

/// Words before a unit that make it the one before the last ("vorletzte Woche").
fn is_before_last(word: &str) -> bool {
    matches!(word, "vorletzte" | "vorletzten" | "vorletztes" | "voorlaatste")
}

/// Words before a unit that make it the current one ("this month", "diese Woche", "cette
/// année", "este mes").
fn is_this(word: &str) -> bool {
    matches!(
        word,
        "this"
            | "diese"
            | "diesen"
            | "dieses"
            | "deze"
            | "dit"
            | "cette"
            | "ce"
            | "cet"
            | "esta"
            | "este"
            | "questa"
            | "questo"
            | "quest'"
            | "quest’"
    )
}

/// The span of the day, week, month or year `unit` that is `offset` units from the current
/// one: 0 the current, -1 the last, 1 the next, -2 the one before the last.
fn calendar_span(unit: Unit, offset: i64, today: NaiveDate) -> Option<(i64, i64)> {
    Some(match unit {
        Unit::Week => {
            let start_of_week = today - Duration::days(today.weekday().num_days_from_monday() as i64);
            let from = start_of_week + Duration::days(7 * offset);
            (ms(from) - SLACK_MS, ms(from + Duration::days(7)) + SLACK_MS)
        }
        Unit::Month => {
            let months = today.year() as i64 * 12 + today.month0() as i64 + offset;
            month_span(i32::try_from(months.div_euclid(12)).ok()?, months.rem_euclid(12) as u32 + 1)?
        }
        Unit::Year => year_span(today.year().checked_add(i32::try_from(offset).ok()?)?)?,
        Unit::Day => day_span(today + Duration::days(offset)),
    })
}

/// The weekday `word` names, written out in full in English, German, Dutch, French, Spanish,
/// Italian or Portuguese (with or without accents: `miércoles`, `mercoledi`).
/// Whether `lower` names a month or a day of the week ("February", "Fridays", "März"): a
/// word of a date, which a question writes with a capital without naming anyone.
pub(crate) fn is_calendar_word(lower: &str) -> bool {
    month(lower).is_some() || weekday(lower).or_else(|| weekday(lower.strip_suffix('s')?)).is_some()
}

fn weekday(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" | "montag" | "maandag" | "lundi" | "lunes" | "lunedì" | "lunedi" | "segunda-feira" => Weekday::Mon,
        "tuesday" | "dienstag" | "dinsdag" | "mardi" | "martes" | "martedì" | "martedi" | "terça-feira"
        | "terca-feira" => Weekday::Tue,
        "wednesday" | "mittwoch" | "woensdag" | "mercredi" | "miércoles" | "miercoles" | "mercoledì" | "mercoledi"
        | "quarta-feira" => Weekday::Wed,
        "thursday" | "donnerstag" | "donderdag" | "jeudi" | "jueves" | "giovedì" | "giovedi" | "quinta-feira" => {
            Weekday::Thu
        }
        "friday" | "freitag" | "vrijdag" | "vendredi" | "viernes" | "venerdì" | "venerdi" | "sexta-feira" => {
            Weekday::Fri
        }
        "saturday" | "samstag" | "sonnabend" | "zaterdag" | "samedi" | "sábado" | "sabado" | "sabato" => Weekday::Sat,
        "sunday" | "sonntag" | "zondag" | "dimanche" | "domingo" | "domenica" => Weekday::Sun,
        _ => return None,
    })
}

/// Which day a weekday name means: the latest such day up to today ("on Friday"), the latest
/// before today ("last Friday", "vendredi dernier"), the one of the current week ("this
/// Friday"), or the first after today ("next Friday", "vendredi prochain").
#[derive(Debug, Clone, Copy, PartialEq)]
enum Which {
    Latest,
    /// Today or the first such day after it ("what's on Friday?").
    Coming,
    Last,
    This,
    Next,
}

fn weekday_span(wd: Weekday, which: Which, today: NaiveDate) -> (i64, i64) {
    let today_n = today.weekday().num_days_from_monday() as i64;
    let wd_n = wd.num_days_from_monday() as i64;
    let back = match which {
        Which::Latest => (today_n - wd_n).rem_euclid(7),
        Which::Coming => -(wd_n - today_n).rem_euclid(7),
        Which::Last => match (today_n - wd_n).rem_euclid(7) {
            0 => 7,
            n => n,
        },
        Which::This => today_n - wd_n,
        Which::Next => -match (wd_n - today_n).rem_euclid(7) {
            0 => 7,
            n => n,
        },
    };
    day_span(today - Duration::days(back))
}

/// The span `n` units before today: that day give or take a seventh of the distance ("three
/// weeks ago" is rough).
fn ago_span(n: i64, unit: Unit, today: NaiveDate) -> (i64, i64) {
    let days = match unit {
        Unit::Day => n,
        Unit::Week => n * 7,
        Unit::Month => n * 30,
        Unit::Year => n * 365,
    };
    let centre = today - Duration::days(days);
    let spread = Duration::days((days / 7).max(1));
    (ms(centre - spread) - SLACK_MS, ms(centre + spread) + 86_400_000 + SLACK_MS)
}

/// Words relative to today: yesterday, today, tomorrow, last/this/next week, month or year, the
/// week before last, N days/weeks/months/years ago, in English and in the six other languages whose function
/// words a query drops ("gestern", "la semaine dernière", "diese Woche", "vor 3 Tagen", "il y a
/// deux semaines", "hace un mes", "3 giorni fa", "2 dagen geleden"). French `hier` counts only
/// in a French question: it is "here" in German and Dutch.
fn relative(words: &[String], i: usize, today: NaiveDate, french: bool, ahead: bool) -> Option<((i64, i64), usize)> {
    let w = |k: usize| words.get(k).map(String::as_str).unwrap_or("");
    let here = w(i);
    if matches!(
        here,
        "today" | "tonight" | "aujourd'hui" | "aujourd’hui" | "heute" | "hoy" | "oggi" | "hoje" | "vandaag"
    ) {
        return Some((calendar_span(Unit::Day, 0, today)?, 1));
    }
    // "Morgen" and "mañana" are also "morning", so they are not read.
    if matches!(here, "tomorrow" | "demain" | "domani" | "amanhã" | "amanha") {
        return Some((calendar_span(Unit::Day, 1, today)?, 1));
    }
    if matches!(here, "übermorgen" | "après-demain" | "overmorgen" | "dopodomani") {
        return Some((calendar_span(Unit::Day, 2, today)?, 1));
    }
    if (here, w(i + 1), w(i + 2)) == ("day", "after", "tomorrow") {
        return Some((calendar_span(Unit::Day, 2, today)?, 3));
    }
    if matches!(here, "yesterday" | "gestern" | "ayer" | "ieri" | "ontem" | "gisteren") || here == "hier" && french {
        return Some((calendar_span(Unit::Day, -1, today)?, 1));
    }
    // the day before yesterday · vorgestern · avant-hier · l'altro ieri
    let two_days_ago = Some((day_span(today - Duration::days(2)), 1));
    if matches!(here, "vorgestern" | "avant-hier" | "anteayer" | "anteontem" | "eergisteren") {
        return two_days_ago;
    }
    if (here, w(i + 1), w(i + 2)) == ("day", "before", "yesterday") {
        return two_days_ago.map(|(s, _)| (s, 3));
    }
    if matches!(here, "l'altro" | "l’altro") && w(i + 1) == "ieri" {
        return two_days_ago.map(|(s, _)| (s, 2));
    }
    // last Friday · letzten Freitag · this Monday · next Friday · el próximo viernes ·
    // vendredi dernier · el viernes pasado · vendredi prochain · on Friday
    if let Some(wd) = weekday(w(i + 1)) {
        let which = if is_this(here) {
            Some(Which::This)
        } else if is_last_before(here) {
            Some(Which::Last)
        } else if is_next_before(here) {
            Some(Which::Next)
        } else {
            None
        };
        if let Some(which) = which {
            return Some((weekday_span(wd, which, today), 2));
        }
    }
    if let Some(wd) = weekday(here) {
        if is_last_after(w(i + 1)) {
            return Some((weekday_span(wd, Which::Last, today), 2));
        }
        if is_next_after(w(i + 1)) {
            return Some((weekday_span(wd, Which::Next, today), 2));
        }
        // "Domingo" is a name as well: only after a word such as "on" or "el".
        let before = if i > 0 { w(i - 1) } else { "" };
        if here != "domingo" || matches!(before, "el" | "on" | "no" | "o") {
            let which = if ahead { Which::Coming } else { Which::Latest };
            return Some((weekday_span(wd, which, today), 1));
        }
    }
    // last week · letzte Woche · this month · cette année · quest'anno
    if let Some(rest) = here.strip_prefix("quest'").or_else(|| here.strip_prefix("quest’"))
        && let Some(unit) = unit_of(rest).filter(|u| *u != Unit::Day)
    {
        return Some((calendar_span(unit, 0, today)?, 1));
    }
    let whole_unit = |word: &str| unit_of(word).filter(|u| *u != Unit::Day && !matches!(word, "an" | "ans"));
    // next month · nächste Woche · vorletzte Woche
    if let Some(unit) = whole_unit(w(i + 1)) {
        let offset = if is_this(here) {
            Some(0)
        } else if is_last_before(here) {
            Some(-1)
        } else if is_next_before(here) {
            Some(1)
        } else if is_before_last(here) {
            Some(-2)
        } else {
            None
        };
        if let Some(offset) = offset {
            return Some((calendar_span(unit, offset, today)?, 2));
        }
    }
    // the week before last · the month before last
    if let Some(unit) = whole_unit(here)
        && (w(i + 1), w(i + 2)) == ("before", "last")
    {
        return Some((calendar_span(unit, -2, today)?, 3));
    }
    // la semaine dernière · el mes pasado · l'anno scorso · la semaine prochaine
    if let Some(unit) = whole_unit(here) {
        if is_last_after(w(i + 1)) {
            return Some((calendar_span(unit, -1, today)?, 2));
        }
        if is_next_after(w(i + 1)) {
            return Some((calendar_span(unit, 1, today)?, 2));
        }
    }
    // three days ago · 3 giorni fa · 2 dagen geleden
    if let (Some(n), Some(unit)) = (number(here), unit_of(w(i + 1)))
        && matches!(w(i + 2), "ago" | "fa" | "geleden")
    {
        return Some((ago_span(n, unit, today), 3));
    }
    // vor 3 Tagen · hace un mes · há dois anos
    if matches!(here, "vor" | "hace" | "há")
        && let (Some(n), Some(unit)) = (number(w(i + 1)), unit_of(w(i + 2)))
    {
        return Some((ago_span(n, unit, today), 3));
    }
    // il y a deux semaines
    if (here, w(i + 1), w(i + 2)) == ("il", "y", "a")
        && let (Some(n), Some(unit)) = (number(w(i + 3)), unit_of(w(i + 4)))
    {
        return Some((ago_span(n, unit, today), 5));
    }
    None
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
    fn days_a_text_mentions_in_words() {
        let written = NaiveDate::from_ymd_opt(2026, 12, 2).unwrap();
        let days = |t: &str| -> Vec<String> { mentioned_days(t, written).iter().map(|d| d.to_string()).collect() };
        assert_eq!(days("Check-up booked for Thursday 21 January at 8:40."), ["2027-01-21"]);
        assert_eq!(days("Reported on 2 November, they came on the 9th."), ["2026-11-02"]);
        assert_eq!(days("Dates: 16–17 March, at the Old Mill."), ["2027-03-16", "2027-03-17"]);
        assert_eq!(days("expires on 3 March 2024, renew it by January 5, 2024"), ["2024-03-03", "2024-01-05"]);
        assert_eq!(days("le 12 décembre à midi"), ["2026-12-12"]);
        // Numbers without a month, a month without a day, and numeric dates are not days.
        assert!(days("3 eggs, 200 g flour; the January sales; 2026-12-24; 12/24").is_empty());
    }

    #[test]
    fn a_question_about_time_to_come_reads_a_date_without_a_year_ahead() {
        // NOW is Monday 30 November 2026.
        let february = |y: i32| Some((format!("{y}-02-01"), format!("{y}-03-01")));
        assert_eq!(span("what's happening in February?"), february(2027));
        assert_eq!(span("what will we do in February?"), february(2027));
        assert_eq!(span("what is due in February?"), february(2027));
        assert_eq!(span("what happened in February?"), february(2026));
        assert_eq!(span("what did we plan in February?"), february(2026));
        assert_eq!(span("notes from February"), february(2026));
        // The current month has not ended: it is the one ahead too.
        assert_eq!(span("what is happening in November?"), Some(("2026-11-01".into(), "2026-12-01".into())));
        assert_eq!(span("what do I have on 21 January?"), day("2027-01-21"));
        assert_eq!(span("what did I do on 21 January?"), day("2026-01-21"));
        assert_eq!(span("what's on Friday?"), day("2026-12-04"));
        assert_eq!(span("what's on Monday?"), day("2026-11-30"));
        assert_eq!(span("what did we eat on Friday?"), day("2026-11-27"));
        // "last" keeps its meaning whatever the tense.
        assert_eq!(span("what is left from last March?"), Some(("2026-03-01".into(), "2026-04-01".into())));
    }

    #[test]
    fn dates_ahead_of_today_and_the_week_before_last() {
        // NOW is Monday 30 November 2026.
        for q in
            ["what's on next Friday?", "nächsten Freitag", "vendredi prochain", "el próximo viernes", "coming Friday"]
        {
            assert_eq!(span(q), day("2026-12-04"), "{q}");
        }
        assert_eq!(span("next Monday"), day("2026-12-07"));
        assert_eq!(span("tomorrow"), day("2026-12-01"));
        assert_eq!(span("the day after tomorrow"), day("2026-12-02"));
        for q in ["next week", "la semaine prochaine", "nächste Woche", "la prossima settimana"] {
            assert_eq!(span(q), Some(("2026-12-07".into(), "2026-12-14".into())), "{q}");
        }
        assert_eq!(span("next month"), Some(("2026-12-01".into(), "2027-01-01".into())));
        assert_eq!(span("next year"), Some(("2027-01-01".into(), "2028-01-01".into())));
        assert_eq!(span("next March"), Some(("2027-03-01".into(), "2027-04-01".into())));
        assert_eq!(span("next December"), Some(("2026-12-01".into(), "2027-01-01".into())));
        for q in ["what did we do the week before last?", "vorletzte Woche"] {
            assert_eq!(span(q), Some(("2026-11-16".into(), "2026-11-23".into())), "{q}");
        }
        assert_eq!(span("the month before last"), Some(("2026-09-01".into(), "2026-10-01".into())));
        assert_eq!(span_in("what's on next Friday?", NOW).unwrap().text, "next Friday");
        // "Morgen" and "mañana" are mornings as often as tomorrows.
        assert_eq!(span("guten Morgen"), None);
        assert_eq!(span("por la mañana"), None);
    }

    #[test]
    fn dates_in_other_languages() {
        for q in [
            "qu'est-ce qu'on a dit le 12 novembre 2025 ?",
            "was war am 12. November 2025?",
            "¿qué pasó el 12 de noviembre de 2025?",
            "cosa è successo il 12 novembre 2025?",
            "o que aconteceu em 12 de novembro de 2025?",
            "wat gebeurde er op 12 november 2025?",
            "2025年11月12日に何がありましたか",
            "2025年11月12日发生了什么",
            "2025년 11월 12일에 무슨 일이 있었나요?",
        ] {
            assert_eq!(span(q), day("2025-11-12"), "{q}");
        }
        assert_eq!(span("le 3 mai"), day("2026-05-03"));
        assert_eq!(span("am 24. Dezember"), day("2025-12-24"));
        assert_eq!(span("12月24日のパーティー"), day("2025-12-24"));
        assert_eq!(span_in("12月24日のパーティー", NOW).unwrap().text, "12月24日");
        assert_eq!(span("크리스마스 12월 24일"), day("2025-12-24"));
        assert_eq!(span("en décembre"), Some(("2025-12-01".into(), "2026-01-01".into())));
        assert_eq!(span("im März 2024"), Some(("2024-03-01".into(), "2024-04-01".into())));
        assert_eq!(span("diciembre de 2024"), Some(("2024-12-01".into(), "2025-01-01".into())));
        assert_eq!(span("2024年3月の請求書"), Some(("2024-03-01".into(), "2024-04-01".into())));
        assert_eq!(span("2024年"), Some(("2024-01-01".into(), "2025-01-01".into())));
        assert_eq!(span("en 2023"), Some(("2023-01-01".into(), "2024-01-01".into())));
        assert_eq!(span("qu'est-ce que j'ai fait hier ?"), day("2026-11-29"));
        assert_eq!(span("was habe ich gestern gemacht?"), day("2026-11-29"));
        assert_eq!(span("¿qué hice ayer?"), day("2026-11-29"));
        assert_eq!(span("heute"), day("2026-11-30"));
        // 2026-11-30 is a Monday.
        let last_week = Some(("2026-11-23".into(), "2026-11-30".into()));
        for q in ["letzte Woche", "la semaine dernière", "la semana pasada", "la settimana scorsa", "vorige week"] {
            assert_eq!(span(q), last_week, "{q}");
        }
        let last_month = Some(("2026-10-01".into(), "2026-11-01".into()));
        for q in ["le mois dernier", "el mes pasado", "letzten Monat", "o mês passado", "il mese scorso"] {
            assert_eq!(span(q), last_month, "{q}");
        }
        let this_year = Some(("2026-01-01".into(), "2027-01-01".into()));
        for q in ["cette année", "dieses Jahr", "este año", "quest'anno", "dit jaar"] {
            assert_eq!(span(q), this_year, "{q}");
        }
        assert_eq!(span("ce mois-ci"), Some(("2026-11-01".into(), "2026-12-01".into())));
        // Weekdays count back from today, Monday 2026-11-30.
        for q in ["what did we decide on Friday?", "am Freitag", "vendredi", "el viernes", "op vrijdag"] {
            assert_eq!(span(q), day("2026-11-27"), "{q}");
        }
        for q in
            ["last Monday", "letzten Montag", "lundi dernier", "el lunes pasado", "lunedì scorso", "vorige maandag"]
        {
            assert_eq!(span(q), day("2026-11-23"), "{q}");
        }
        assert_eq!(span("on Monday"), day("2026-11-30"));
        assert_eq!(span("this Wednesday"), day("2026-12-02"));
        assert_eq!(span("el domingo"), day("2026-11-29"));
        for q in ["the day before yesterday", "vorgestern", "avant-hier", "anteayer", "l'altro ieri"] {
            assert_eq!(span(q), day("2026-11-28"), "{q}");
        }
        assert_eq!(span("l'année dernière"), Some(("2025-01-01".into(), "2026-01-01".into())));
        let three_days_ago = Some(("2026-11-26".into(), "2026-11-29".into()));
        for q in ["vor 3 Tagen", "il y a trois jours", "hace tres días", "3 giorni fa", "3 dagen geleden", "há 3 dias"]
        {
            assert_eq!(span(q), three_days_ago, "{q}");
        }
    }

    #[test]
    fn words_that_only_look_like_dates_in_other_languages_are_left_alone() {
        for q in [
            // "hier" is "here" in German and Dutch.
            "was ist hier passiert?",
            "wat is hier gebeurd?",
            // Names that are English words too, abbreviations, a month alone without a date.
            "set 12 alarms",
            "12 ago 2024",
            "the mars 2030 mission",
            "novembre",
            "3日間の旅行",
            "12345年",
            "13月40日",
            // "an" is French for "year" only after a number.
            "this an example",
            "last an",
            "ce jour",
            "Plácido Domingo sings",
        ] {
            assert_eq!(span(q), None, "{q}");
        }
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
