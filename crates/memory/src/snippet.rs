//! Snippets: the ~200-character window of a chunk with the most query-term matches,
//! matched words wrapped in `**…**` (Markdown bold, readable by people and models, no
//! HTML escaping). Words are compared the way the full-text index analyzes them:
//! alphanumeric runs, lowercased, folded and stemmed, so `develop` highlights `developing`
//! and `reunion` the `Réunion` as written. Stop words (English, and the function words of
//! other European languages) are never marked, even when a query holds nothing else.

use super::fts::{for_each_word, is_unmarked_word, stem};

pub(crate) const SNIPPET_CHARS: usize = 200;

/// Byte ranges of the words of `text` whose index form (stem) is one of `terms`, with
/// the index of the term.
fn matches(text: &str, terms: &[String]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for_each_word(text, |s, e, lower| {
        // A stem keeps its word's first letter: only words that could match are stemmed.
        let first = lower.as_bytes()[0];
        if !terms.iter().any(|t| t.as_bytes().first() == Some(&first)) || is_unmarked_word(lower) {
            return;
        }
        let stemmed = stem(lower);
        if let Some(t) = terms.iter().position(|t| *t == stemmed) {
            out.push((s, e, t));
        }
    });
    out
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Moves `i` back to the start of the word it falls in.
fn word_start(s: &str, i: usize) -> usize {
    let i = floor_boundary(s, i);
    s[..i].rfind(char::is_whitespace).map(|p| p + 1).unwrap_or(0)
}

/// Moves `i` forward to the end of the word it falls in.
fn word_end(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let i = floor_boundary(s, i);
    s[i..].find(char::is_whitespace).map(|p| p + i).unwrap_or(s.len())
}

pub(crate) fn snippet(text: &str, terms: &[String]) -> String {
    let text = text.trim();
    let budget = SNIPPET_CHARS;
    let found = matches(text, terms);
    // Choose the window (of `budget` bytes, roughly characters for prose) that covers
    // the most distinct terms, then the most matches.
    let mut best = (0usize, 0usize, 0usize);
    for (i, &(s, _, _)) in found.iter().enumerate() {
        let window: Vec<_> = found[i..].iter().take_while(|m| m.1 <= s + budget).collect();
        let mut distinct: Vec<usize> = window.iter().map(|m| m.2).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let score = (distinct.len(), window.len());
        if score > (best.1, best.2) {
            best = (s, score.0, score.1);
        }
    }
    let (mut from, mut to) = if found.is_empty() {
        (0, word_end(text, budget))
    } else {
        // Lead in with some context before the first match.
        let from = word_start(text, best.0.saturating_sub(budget / 4));
        (from, word_end(text, from + budget))
    };
    if to - from > budget + 40 {
        to = floor_boundary(text, from + budget);
    }
    from = floor_boundary(text, from);
    let mut out = String::with_capacity(to - from + 16);
    if from > 0 {
        out.push('…');
    }
    let marks = emphasis_marks(text, from, to);
    // Matches that overlap or touch are marked as one: the pairs of characters Chinese,
    // Japanese and Korean text is matched by overlap (`配管`, `管工` → `**配管工**`).
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for &(s, e, _) in found.iter().filter(|m| m.0 >= from && m.1 <= to) {
        match spans.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => spans.push((s, e)),
        }
    }
    let mut pos = from;
    for (s, e) in spans {
        push_plain(&mut out, text, pos, s, &marks);
        out.push_str("**");
        out.push_str(&text[s..e]);
        out.push_str("**");
        pos = e;
    }
    push_plain(&mut out, text, pos, to, &marks);
    if to < text.len() {
        out.push('…');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The byte ranges in `text[from..to]` of the text's own bold markers (`**`, `***`) that open or
/// close emphasis: a run with whitespace (or the text's edge) on one side and not the other, or
/// a letter or digit on one side and not the other. A snippet drops them, so that the only bold
/// in it is what matched: a Markdown note's `**the** key` would otherwise look like a highlighted
/// stop word. `2**10` and `a ** b` keep theirs.
fn emphasis_marks(text: &str, from: usize, to: usize) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut marks = Vec::new();
    let mut i = from;
    while i < to {
        if bytes[i] != b'*' {
            i += 1;
            continue;
        }
        let start = i;
        while i < to && bytes[i] == b'*' {
            i += 1;
        }
        if !(2..=3).contains(&(i - start)) {
            continue;
        }
        let before = text[..start].chars().next_back();
        let after = text[i..].chars().next();
        let space = |c: Option<char>| c.is_none_or(char::is_whitespace);
        let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        if space(before) != space(after) || word(before) != word(after) {
            marks.push((start, i));
        }
    }
    marks
}

/// Appends `text[from..to]` to `out` without the bold markers `marks` holds.
fn push_plain(out: &mut String, text: &str, from: usize, to: usize, marks: &[(usize, usize)]) {
    let mut pos = from;
    for &(s, e) in marks.iter().filter(|m| m.0 >= from && m.1 <= to) {
        out.push_str(&text[pos..s]);
        pos = e;
    }
    out.push_str(&text[pos..to]);
}

/// The index of the line of `text` that matches the most distinct `terms` (the first such line),
/// or `None` when no line matches any.
pub(crate) fn best_line(text: &str, terms: &[String]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let mut found: Vec<usize> = matches(line, terms).into_iter().map(|m| m.2).collect();
        found.sort_unstable();
        found.dedup();
        if !found.is_empty() && best.is_none_or(|(_, n)| found.len() > n) {
            best = Some((i, found.len()));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlights_best_window() {
        let terms = vec!["tantivi".to_string(), "bm25".to_string(), "rank".to_string()];
        let text =
            format!("{} Tantivy ranks with BM25. {}", "filler words here. ".repeat(30), "more filler. ".repeat(30));
        let s = snippet(&text, &terms);
        assert!(s.contains("**Tantivy** **ranks** with **BM25**"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.chars().count() <= SNIPPET_CHARS + 60, "{}", s.len());
    }

    #[test]
    fn without_matches_takes_the_start_and_is_utf8_safe() {
        let text = "é".repeat(500);
        let s = snippet(&text, &["zzz".to_string()]);
        assert!(s.ends_with('…'));
        assert_eq!(snippet("short text", &[]), "short text");
    }

    #[test]
    fn best_line_is_the_one_matching_most_terms() {
        let terms = vec!["cake".to_string(), "recip".to_string()];
        let text = "[10:00] ann: hello\n[10:01] bob: any cake?\n[10:02] ann: the cake recipe is on the fridge";
        assert_eq!(best_line(text, &terms), Some(2));
        assert_eq!(best_line("nothing here", &terms), None);
    }

    #[test]
    fn stop_words_are_never_marked_and_folded_words_are_marked_as_written() {
        let terms = vec!["my".to_string(), "bike".to_string(), "the".to_string(), "reunion".to_string()];
        let s = snippet("The lock of my bike is at the Réunion.", &terms);
        assert_eq!(s, "The lock of my **bike** is at the **Réunion**.");
        // Words a query keeps for ranking but a reader would not want marked, in English and
        // in a French mail.
        let terms: Vec<String> = ["give", "blood", "again", "reunion", "de", "class"].map(String::from).into();
        let s = snippet("Réunion de classe: give blood again", &terms);
        assert_eq!(s, "**Réunion** de **classe**: **give** **blood** again");
    }

    #[test]
    fn overlapping_pairs_of_cjk_characters_are_marked_once() {
        let mut terms = Vec::new();
        for_each_word("配管工", |_, _, lower| terms.push(stem(lower).into_owned()));
        assert_eq!(snippet("明日配管工が来ます。", &terms), "明日**配管工**が来ます。");
    }

    #[test]
    fn the_texts_own_bold_is_dropped_so_only_matches_are_bold() {
        let terms = vec!["key".to_string(), "spare".to_string()];
        let s = snippet("**The** spare ***key*** hangs (**by the door**). 2**10 and a ** b stay.", &terms);
        assert_eq!(s, "The **spare** **key** hangs (by the door). 2**10 and a ** b stay.");
        let s = snippet("**How the key is kept.** Then more.", &terms);
        assert_eq!(s, "How the **key** is kept. Then more.");
    }
}
