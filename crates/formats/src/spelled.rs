//! A date and time written out for people in the language of the account that exported it, as
//! Google Takeout writes Google Chat's `created_date`: "Thursday, November 3, 2016 at 11:59:50
//! AM UTC" in English, "Donnerstag, 3. November 2016 um 11:59:50 UTC" in German, "jeudi 3
//! novembre 2016 à 11:59:50 UTC" in French, "2016年11月3日星期四 UTC 11:59:50" in Chinese,
//! "2016년 11월 3일 목요일 AM 11시 59분 50초 UTC" in Korean.
//!
//! The reader does not follow any one language's pattern. It picks the parts out wherever they
//! stand: the time (`h:mm`, `h:mm:ss`, or hours, minutes and seconds marked `시 분 초` / `時 分
//! 秒`), an AM/PM marker in any of its spellings, a four-digit year, the month by its name in one
//! of the languages below (whole word, any case, the genitive forms Slavic and Greek dates use)
//! or by a number marked `月`/`월`, and the day: the one number left of 1–31 (or one marked
//! `日`/`일`). Weekday names and joining words ("at", "um", "à", "de", "г.") are passed over. A
//! zone `UTC`/`GMT` with an offset (`UTC+02:00`, `GMT-5`) is applied; without one the time is
//! UTC. Anything missing, or two numbers that could each be the day, and the text is not read:
//! a wrong date is worse than a message reported as skipped.

use chrono::{NaiveDate, NaiveTime};

/// Month names, whole words in lower case, each with its month: English, German, French,
/// Spanish, Italian, Portuguese, Dutch, Swedish, Danish, Norwegian, Polish, Czech, Russian,
/// Ukrainian, Turkish, Finnish, Hungarian, Romanian, Indonesian and Greek, with the common
/// abbreviations. A name two languages give different months (Croatian's `listopad` is
/// October, Czech's and Polish's November) is kept for the languages listed.
#[rustfmt::skip]
const MONTHS: [&[&str]; 12] = [
    &[
        "january", "jan", "januar", "jänner", "janvier", "janv", "enero", "ene", "gennaio", "gen", "janeiro",
        "januari", "stycznia", "styczeń", "ledna", "leden", "января", "январь", "січня", "ocak", "tammikuuta",
        "tammikuu", "január", "ianuarie", "ιανουαρίου", "ιανουάριος",
    ],
    &[
        "february", "feb", "februar", "février", "févr", "febrero", "febbraio", "fevereiro", "fev", "februari",
        "lutego", "luty", "února", "únor", "февраля", "февраль", "лютого", "şubat", "helmikuuta", "helmikuu",
        "február", "februarie", "φεβρουαρίου", "φεβρουάριος",
    ],
    &[
        "march", "mar", "märz", "mars", "marzo", "março", "maart", "marts", "marca", "marzec", "března",
        "březen", "марта", "март", "березня", "mart", "maaliskuuta", "maaliskuu", "március", "martie", "maret",
        "μαρτίου", "μάρτιος",
    ],
    &[
        "april", "apr", "avril", "avr", "abril", "abr", "aprile", "kwietnia", "kwiecień", "dubna", "duben",
        "апреля", "апрель", "квітня", "nisan", "huhtikuuta", "huhtikuu", "április", "aprilie", "απριλίου",
        "απρίλιος",
    ],
    &[
        "may", "mai", "mayo", "maggio", "mag", "maio", "mei", "maj", "maja", "května", "květen", "мая", "май",
        "травня", "mayıs", "toukokuuta", "toukokuu", "május", "μαΐου", "μάιος",
    ],
    &[
        "june", "jun", "juni", "juin", "junio", "giugno", "giu", "junho", "czerwca", "czerwiec", "června",
        "červen", "июня", "июнь", "червня", "haziran", "kesäkuuta", "kesäkuu", "június", "iunie", "ιουνίου",
        "ιούνιος",
    ],
    &[
        "july", "jul", "juli", "juillet", "juil", "julio", "luglio", "lug", "julho", "lipca", "lipiec",
        "července", "červenec", "июля", "июль", "липня", "temmuz", "heinäkuuta", "heinäkuu", "július", "iulie",
        "ιουλίου", "ιούλιος",
    ],
    &[
        "august", "aug", "août", "agosto", "ago", "augustus", "augusti", "sierpnia", "sierpień", "srpna",
        "srpen", "августа", "август", "серпня", "ağustos", "elokuuta", "elokuu", "augusztus", "agustus",
        "αυγούστου", "αύγουστος",
    ],
    &[
        "september", "sep", "sept", "septembre", "septiembre", "setiembre", "settembre", "set", "setembro",
        "września", "wrzesień", "září", "сентября", "сентябрь", "вересня", "eylül", "syyskuuta", "syyskuu",
        "szeptember", "septembrie", "σεπτεμβρίου", "σεπτέμβριος",
    ],
    &[
        "october", "oct", "oktober", "okt", "octobre", "octubre", "ottobre", "ott", "outubro", "out",
        "października", "październik", "října", "říjen", "октября", "октябрь", "жовтня", "ekim", "lokakuuta",
        "lokakuu", "október", "octombrie", "οκτωβρίου", "οκτώβριος",
    ],
    &[
        "november", "nov", "novembre", "noviembre", "novembro", "listopada", "listopad", "listopadu", "ноября",
        "ноябрь", "листопада", "kasım", "marraskuuta", "marraskuu", "noiembrie", "νοεμβρίου", "νοέμβριος",
    ],
    &[
        "december", "dec", "dezember", "dez", "décembre", "déc", "diciembre", "dic", "dicembre", "dezembro",
        "desember", "grudnia", "grudzień", "prosince", "prosinec", "декабря", "декабрь", "грудня", "aralık",
        "joulukuuta", "joulukuu", "decembrie", "δεκεμβρίου", "δεκέμβριος",
    ],
];

/// The words that mark the afternoon (`true`) or the morning, lowercased, dots and spaces out
/// (`p. m.` is `pm`).
const MERIDIEM: &[(&str, bool)] = &[
    ("pm", true),
    ("am", false),
    ("오후", true),
    ("오전", false),
    ("午後", true),
    ("午前", false),
    ("下午", true),
    ("上午", false),
];

/// Whether `word` marks the afternoon (`Some(true)`) or the morning (`Some(false)`).
pub(crate) fn meridiem(word: &str) -> Option<bool> {
    MERIDIEM.iter().find(|(m, _)| *m == word).map(|&(_, pm)| pm)
}

/// `text` with a morning or afternoon marker taken off its start or end (`9:04pm`, `오후9:04`),
/// and which it was.
pub(crate) fn strip_meridiem(text: &str) -> (&str, Option<bool>) {
    MERIDIEM
        .iter()
        .find_map(|&(m, pm)| text.strip_suffix(m).or_else(|| text.strip_prefix(m)).map(|t| (t, Some(pm))))
        .unwrap_or((text, None))
}

/// What follows a number in Chinese, Japanese and Korean dates and times, and which part it
/// makes the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

fn unit_of(c: char) -> Option<Unit> {
    Some(match c {
        '年' | '년' => Unit::Year,
        '月' | '월' => Unit::Month,
        '日' | '일' => Unit::Day,
        '時' | '시' | '时' | '点' => Unit::Hour,
        '分' | '분' => Unit::Minute,
        '秒' | '초' => Unit::Second,
        _ => return None,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num { value: u32, digits: usize, unit: Option<Unit> },
    Word(String),
    Colon,
    Sign(i32),
}

fn tokens(s: &str) -> Vec<Tok> {
    // "a. m." and "p.m." as one word each; odd spaces as spaces.
    let mut text: String =
        s.chars().map(|c| if c.is_whitespace() || matches!(c, '\u{200e}' | '\u{200f}') { ' ' } else { c }).collect();
    text = text.to_lowercase();
    for (from, to) in [("a. m.", "am"), ("p. m.", "pm"), ("a.m.", "am"), ("p.m.", "pm")] {
        text = text.replace(from, to);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits = i - start;
            let value = chars[start..i].iter().collect::<String>().parse().unwrap_or(u32::MAX);
            let unit = chars.get(i).copied().and_then(unit_of);
            if unit.is_some() {
                i += 1;
            }
            out.push(Tok::Num { value, digits, unit });
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_alphabetic() {
                i += 1;
            }
            out.push(Tok::Word(chars[start..i].iter().collect()));
        } else {
            match c {
                ':' => out.push(Tok::Colon),
                '+' => out.push(Tok::Sign(1)),
                '-' | '−' => out.push(Tok::Sign(-1)),
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The month (1–12) `word`, a whole word in lower case, names in one of the languages above.
pub fn month_named(word: &str) -> Option<u32> {
    MONTHS.iter().position(|names| names.contains(&word)).map(|m| m as u32 + 1)
}

/// The date and time `s` spells out, as Unix milliseconds (see the module's header).
pub(crate) fn read(s: &str) -> Option<i64> {
    let toks = tokens(s);
    let mut used = vec![false; toks.len()];
    let num = |i: usize| match toks.get(i) {
        Some(Tok::Num { value, unit: None, .. }) => Some(*value),
        _ => None,
    };
    let (mut year, mut month, mut day) = (None, None, None);
    let (mut hour, mut minute, mut second) = (None, None, None);
    let mut pm: Option<bool> = None;
    let mut offset_min: i64 = 0;
    // The time of day, h:mm or h:mm:ss: the first such run that is not a zone's offset.
    let after_sign = |i: usize| i > 0 && matches!(toks[i - 1], Tok::Sign(_));
    let run = (0..toks.len())
        .find(|&i| !after_sign(i) && num(i).is_some() && toks.get(i + 1) == Some(&Tok::Colon) && num(i + 2).is_some());
    if let Some(i) = run {
        hour = num(i);
        minute = num(i + 2);
        used[i..=i + 2].fill(true);
        if toks.get(i + 3) == Some(&Tok::Colon) && num(i + 4).is_some() {
            second = num(i + 4);
            used[i + 3..=i + 4].fill(true);
        }
    }
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Num { value, unit: Some(u), .. } => {
                let slot = match u {
                    Unit::Year => &mut year,
                    Unit::Month => &mut month,
                    Unit::Day => &mut day,
                    Unit::Hour => &mut hour,
                    Unit::Minute => &mut minute,
                    Unit::Second => &mut second,
                };
                if slot.replace(*value).is_some() {
                    return None;
                }
                used[i] = true;
            }
            Tok::Word(w) if meridiem(w).is_some() => pm = meridiem(w),
            Tok::Word(w) if w == "utc" || w == "gmt" => {
                // An offset right after the zone's name: +2, +0200, +02:00, -05:30.
                if let (Some(Tok::Sign(sign)), Some(h)) = (toks.get(i + 1), num(i + 2)) {
                    used[i + 2] = true;
                    let (h, m) = if toks.get(i + 3) == Some(&Tok::Colon) && num(i + 4).is_some() {
                        used[i + 3..=i + 4].fill(true);
                        (h, num(i + 4)?)
                    } else if h >= 100 {
                        (h / 100, h % 100)
                    } else {
                        (h, 0)
                    };
                    if h > 14 || m > 59 {
                        return None;
                    }
                    offset_min = i64::from(*sign) * i64::from(h * 60 + m);
                }
            }
            Tok::Word(w) => {
                if let Some(m) = month_named(w)
                    && month.replace(m).is_some_and(|old| old != m)
                {
                    return None;
                }
            }
            _ => {}
        }
    }
    // The year: a four-digit number; the day: the one small number left.
    for (i, t) in toks.iter().enumerate() {
        if used[i] {
            continue;
        }
        if let Tok::Num { value, digits, unit: None } = t {
            match digits {
                4 if year.is_none() => year = Some(*value),
                1 | 2 if (1..=31).contains(value) => {
                    if day.replace(*value).is_some() {
                        return None;
                    }
                }
                _ => return None,
            }
        }
    }
    let mut h = hour?;
    match pm {
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        Some(_) if h > 12 => return None,
        _ => {}
    }
    let date = NaiveDate::from_ymd_opt(i32::try_from(year?).ok()?, month?, day?)?;
    let time = NaiveTime::from_hms_opt(h, minute?, second.unwrap_or(0))?;
    Some(date.and_time(time).and_utc().timestamp_millis() - offset_min * 60_000)
}

/// Calls `f` with 20,000 texts of up to `most` of `parts` each, drawn by a fixed seed: a
/// reader that indexes past what it read fails on them.
#[cfg(test)]
pub(crate) fn shuffled(parts: &[&str], most: u64, mut f: impl FnMut(&str)) {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut text = String::new();
    for _ in 0..20_000 {
        text.clear();
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        for _ in 0..(state >> 40) % (most + 1) {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            text.push_str(parts[(state >> 33) as usize % parts.len()]);
        }
        f(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::{read, shuffled};

    /// 3 November 2016, 11:59:50 UTC.
    const AT: i64 = 1_478_174_390_000;
    /// The same day at 23:59:50 UTC.
    const PM_AT: i64 = AT + 12 * 3_600_000;

    #[test]
    fn takeout_dates_in_many_languages_read_alike() {
        for s in [
            "Thursday, November 3, 2016 at 11:59:50 AM UTC",
            "Thursday, November 3, 2016 at 11:59:50\u{202f}AM UTC",
            "Donnerstag, 3. November 2016 um 11:59:50 UTC",
            "jeudi 3 novembre 2016 à 11:59:50 UTC",
            "jueves, 3 de noviembre de 2016, 11:59:50 UTC",
            "giovedì 3 novembre 2016 alle ore 11:59:50 UTC",
            "quinta-feira, 3 de novembro de 2016 às 11:59:50 UTC",
            "donderdag 3 november 2016 om 11:59:50 UTC",
            "torsdag 3 november 2016 kl. 11:59:50 UTC",
            "czwartek, 3 listopada 2016 11:59:50 UTC",
            "четверг, 3 ноября 2016 г., 11:59:50 UTC",
            "3 Kasım 2016 Perşembe 11:59:50 UTC",
            "2016. november 3., csütörtök 11:59:50 UTC",
            "2016年11月3日星期四 UTC 11:59:50",
            "2016年11月3日木曜日 11:59:50 UTC",
            "2016년 11월 3일 목요일 AM 11시 59분 50초 UTC",
        ] {
            assert_eq!(read(s), Some(AT), "{s}");
        }
    }

    #[test]
    fn the_afternoon_and_offsets_are_applied() {
        assert_eq!(read("Thursday, November 3, 2016 at 11:59:50 PM UTC"), Some(PM_AT));
        assert_eq!(read("jueves, 3 de noviembre de 2016, 11:59:50 p. m. UTC"), Some(PM_AT));
        assert_eq!(read("2016년 11월 3일 목요일 오후 11시 59분 50초 UTC"), Some(PM_AT));
        assert_eq!(read("Thursday, November 3, 2016 at 12:59:50 AM UTC"), Some(AT - 11 * 3_600_000));
        assert_eq!(read("Donnerstag, 3. November 2016 um 13:59:50 UTC+02:00"), Some(AT));
        assert_eq!(read("3 novembre 2016 06:59:50 GMT-5"), Some(AT));
    }

    #[test]
    fn any_text_is_read_or_refused_without_a_panic() {
        // Pieces of dates, shuffled: a parser that indexes past its tokens fails here.
        let parts = [
            "3",
            "11",
            "2016",
            "12",
            ":",
            "+",
            "-",
            "utc",
            "UTC+",
            "gmt",
            "am",
            "PM",
            "p. m.",
            "年",
            "月",
            "日",
            "시",
            "분",
            "초",
            "오후",
            "novembre",
            ",",
            ".",
            " ",
            "de",
            "59",
            "100",
            "0",
            "9999999999",
        ];
        shuffled(&parts, 12, |s| {
            if let Some(t) = read(s) {
                assert!(t > -(1 << 50) && t < 1 << 50, "{s}: {t}");
            }
        });
    }

    #[test]
    fn what_cannot_be_read_whole_is_not_read() {
        for s in [
            "yesterday",
            "3 novembre 11:59:50 UTC",
            "novembre 2016 11:59:50 UTC",
            "3 4 novembre 2016 11:59:50",
            "3 Brumaire 2016 11:59:50",
            "31 février 2016 11:59:50",
            "Thursday, November 3, 2016 at 13:59:50 PM UTC",
        ] {
            assert_eq!(read(s), None, "{s}");
        }
    }
}
