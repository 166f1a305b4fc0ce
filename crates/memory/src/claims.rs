//! Personal facts stated in a sentence — who, which attribute, what value — read by a compact
//! set of English patterns, without a model.
//!
//! [`claims`] finds statements such as "I live in Paris", "we moved to Berlin", "Alice works at
//! Acme", "my phone number is 555 0100", "the user's favourite editor is Helix". A later
//! statement of the same subject and attribute with another value is an update of the earlier
//! one (`facts` decides the supersession). Precision comes first — a false update hides a true
//! memory — so a sentence is read only when it is a plain present or completed statement:
//!
//! - a question (a `?`, or a sentence opening with an auxiliary or a question word) never counts;
//! - a negation anywhere in the sentence (`not`, `n't`, `never`, `no`, `no longer`, `anymore`, …)
//!   never counts;
//! - a hypothetical, a plan, a wish or reported speech (`if`, `would`, `could`, `might`, `maybe`,
//!   `will`, `going to`, `want`, `plan`, `hope`, `thinking`, `said`, `told`, …) never counts;
//! - a past state (`lived in`, `used to`, `worked at`) is history, not the current value, and is
//!   not read as a claim.
//!
//! The subject is the speaker for the first person (`I`, `we`, `my`, `our` — the `speaker`
//! argument, `user` for the tools' writes, whose author is the user), `user` for "the user", and
//! a named person when the sentence opens with one or two capitalised words that are no pronoun
//! ("Alice lives in Lyon", "Alice Martin's email is …"). Places, employers, partners and pets
//! must be names (a capitalised value): "I live in a small flat" says nothing to compare.

use std::fmt;

use crate::util::after_stamp;

/// One attribute of a subject with its value, as a sentence states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claim {
    /// Lowercased: the speaker, `user`, or a named person.
    pub subject: String,
    /// One of [`ATTRIBUTES`], or `favourite <thing>`, or `<pet>'s name`.
    pub attribute: String,
    /// Lowercased, spacing folded.
    pub value: String,
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} / {} = {}", self.subject, self.attribute, self.value)
    }
}

/// The attributes read (besides `favourite <thing>` and `<pet>'s name`).
#[cfg_attr(not(test), allow(dead_code, reason = "the documented list; the tests check it"))]
pub(crate) const ATTRIBUTES: &[&str] =
    &["residence", "employer", "role", "partner", "phone", "email", "address", "birthday", "car", "diet"];

/// Words that make a sentence a question when it opens with them.
const QUESTION_OPENERS: &[&str] = &[
    "do", "does", "did", "are", "is", "was", "were", "am", "where", "what", "when", "why", "how", "who", "which",
    "whose", "will", "would", "could", "should", "can", "have", "has", "had", "shall", "may", "might", "whom",
];
/// Words that make a statement a negation.
const NEGATIONS: &[&str] =
    &["not", "never", "no", "nobody", "neither", "nor", "none", "nothing", "anymore", "nowhere", "without", "cannot"];
/// Words that make a statement hypothetical, planned, wished, or someone else's report.
const UNREAL: &[&str] = &[
    "if",
    "unless",
    "would",
    "could",
    "might",
    "may",
    "maybe",
    "perhaps",
    "should",
    "will",
    "shall",
    "wish",
    "hope",
    "hoping",
    "hoped",
    "plan",
    "plans",
    "planning",
    "planned",
    "want",
    "wants",
    "wanted",
    "wanna",
    "gonna",
    "going",
    "thinking",
    "considering",
    "consider",
    "dream",
    "dreaming",
    "imagine",
    "suppose",
    "someday",
    "probably",
    "said",
    "says",
    "told",
    "tells",
    "asked",
    "heard",
    "think",
    "thought",
    "guess",
    "pretend",
    "like",
    "about",
    "soon",
    "whether",
    "once",
    "when",
    "whenever",
    "until",
    "before",
    "after",
    "ll",
    "d",
    "rather",
    "sometimes",
    "usually",
];
/// Pronouns and openers that are no person's name.
const NOT_NAMES: &[&str] = &[
    "i",
    "we",
    "you",
    "he",
    "she",
    "they",
    "it",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "the",
    "a",
    "an",
    "my",
    "our",
    "your",
    "his",
    "her",
    "their",
    "its",
    "someone",
    "everyone",
    "nobody",
    "somebody",
    "everybody",
    "today",
    "now",
    "then",
    "also",
    "and",
    "but",
    "so",
    "yes",
    "yeah",
    "oh",
    "wow",
    "well",
    "hey",
    "hi",
    "hello",
    "thanks",
    "great",
    "cool",
    "nice",
    "sure",
    "ok",
    "okay",
    "user",
];
/// Adverbs allowed between a subject and its verb ("we finally moved to").
const ADVERBS: &[&str] =
    &["now", "currently", "still", "just", "recently", "finally", "actually", "also", "officially", "already"];
/// Words that end a value (the clause goes on about something else).
const VALUE_END: &[&str] = &[
    "and",
    "but",
    "because",
    "since",
    "for",
    "with",
    "last",
    "this",
    "next",
    "now",
    "a",
    "an",
    "the",
    "in",
    "on",
    "at",
    "to",
    "from",
    "after",
    "before",
    "when",
    "where",
    "which",
    "who",
    "so",
    "as",
    "ago",
    "years",
    "year",
    "months",
    "month",
    "weeks",
    "week",
    "recently",
    "already",
    "too",
    "again",
    "yesterday",
    "today",
    "though",
    "or",
];

/// Every claim of `text`, first-person ones about `speaker` (lowercased; `None`: `user`).
pub(crate) fn claims(text: &str, speaker: Option<&str>) -> Vec<Claim> {
    let speaker = speaker.map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty()).unwrap_or_else(|| "user".into());
    let mut out: Vec<Claim> = Vec::new();
    for sentence in sentences(text) {
        for c in sentence_claims(&sentence, &speaker) {
            if !out.iter().any(|o| o.subject == c.subject && o.attribute == c.attribute) {
                out.push(c);
            }
        }
    }
    out
}

/// Every claim of a chat chunk's messages, each message's first person its sender: the lines
/// of an ingested chat (`[YYYY-MM-DD HH:MM] sender: text`) and of an agent session's turn
/// (`user: text`). What an assistant or a tool output says is not about a person, and is not
/// read; a line without a sender continues the message above it.
pub(crate) fn chat_claims(content: &str) -> Vec<Claim> {
    let mut out: Vec<Claim> = Vec::new();
    let mut speaker: Option<String> = None;
    let mut message = String::new();
    let take = |speaker: &Option<String>, message: &mut String, out: &mut Vec<Claim>| {
        if let Some(who) = speaker.as_deref().filter(|w| !matches!(*w, "assistant" | "tool output")) {
            for c in claims(message, Some(who)) {
                out.retain(|o| !(o.subject == c.subject && o.attribute == c.attribute));
                out.push(c);
            }
        }
        message.clear();
    };
    for line in content.lines() {
        if let Some((who, text)) = sender(line) {
            take(&speaker, &mut message, &mut out);
            speaker = Some(who.to_lowercase());
            message.push_str(text);
        } else if line.starts_with("user ran ") || line.starts_with("ran ") {
            take(&speaker, &mut message, &mut out);
            speaker = None;
        } else {
            message.push('\n');
            message.push_str(line);
        }
    }
    take(&speaker, &mut message, &mut out);
    out
}

/// The sender and text of a chat line that opens a message.
fn sender(line: &str) -> Option<(&str, &str)> {
    let rest = match line.strip_prefix('[') {
        Some(_) => after_stamp(line)?,
        None => {
            let (who, text) = line.split_once(": ")?;
            return matches!(who, "user" | "assistant" | "tool output").then_some((who, text));
        }
    };
    let (who, text) = rest.split_once(": ")?;
    (!who.trim().is_empty() && who.chars().count() <= 80).then_some((who.trim(), text))
}

/// A word of a sentence: its text as written and lowercased.
#[derive(Debug, Clone)]
struct Word {
    raw: String,
    low: String,
}

impl Word {
    fn capitalised(&self) -> bool {
        self.raw.chars().next().is_some_and(char::is_uppercase)
    }
}

/// The sentences of `text` (a question keeps its mark as a last `?` word).
fn sentences(text: &str) -> Vec<Vec<Word>> {
    let mut out = Vec::new();
    let mut cur: Vec<Word> = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, cur: &mut Vec<Word>| {
        if !word.is_empty() {
            // "I'm" → "i", "m"; "Alice's" → "alice", "s"; "don't" → "don", "t" (with "n't" kept).
            let w = std::mem::take(word);
            if let Some(stem) = w.strip_suffix("n't").or_else(|| w.strip_suffix("n’t")) {
                cur.push(Word { low: stem.to_lowercase(), raw: stem.to_string() });
                cur.push(Word { raw: "not".into(), low: "not".into() });
                return;
            }
            for (i, part) in w.split(['\'', '’']).enumerate() {
                if part.is_empty() {
                    continue;
                }
                let raw = if i > 0 { format!("'{part}") } else { part.to_string() };
                cur.push(Word { low: raw.to_lowercase(), raw });
            }
        }
    };
    let chars: Vec<char> = text.chars().collect();
    for (i, &ch) in chars.iter().enumerate() {
        let inner_dot =
            ch == '.' && i > 0 && i + 1 < chars.len() && !chars[i - 1].is_whitespace() && !chars[i + 1].is_whitespace();
        if ch.is_alphanumeric() || ch == '\'' || ch == '’' || ch == '@' || ch == '+' || ch == '-' || inner_dot {
            word.push(ch);
            continue;
        }
        flush(&mut word, &mut cur);
        match ch {
            '?' => {
                cur.push(Word { raw: "?".into(), low: "?".into() });
                out.push(std::mem::take(&mut cur));
            }
            '.' | '!' | ';' | '\n' if !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            ',' | ':' | '(' | ')' | '"' | '“' | '”' => cur.push(Word { raw: ",".into(), low: ",".into() }),
            _ => {}
        }
    }
    flush(&mut word, &mut cur);
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether the sentence is a plain statement (no question, negation or hypothetical).
fn plain(s: &[Word]) -> bool {
    let Some(first) = s.iter().find(|w| w.low != ",") else { return false };
    if QUESTION_OPENERS.contains(&first.low.as_str()) || s.iter().any(|w| w.low == "?") {
        return false;
    }
    !s.iter().any(|w| {
        let l = w.low.trim_start_matches('\'');
        // "in May" is a month, "may" a maybe.
        if w.raw == "May" {
            return false;
        }
        NEGATIONS.contains(&l) || UNREAL.contains(&l) || l == "used" || l == "ago"
    })
}

fn sentence_claims(s: &[Word], speaker: &str) -> Vec<Claim> {
    if !plain(s) {
        return Vec::new();
    }
    let mut out: Vec<Claim> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if let Some((subject, possessive, next)) = subject_at(s, i, speaker) {
            if let Some(c) = predicate(s, next, &subject, possessive) {
                out.push(c);
            }
            i = next.max(i + 1);
        } else if i > 0
            && s[i - 1].low == "and"
            && let Some(last) = out.last().map(|c| c.subject.clone())
            && let Some(c) = predicate(s, i, &last, false)
        {
            // "I live in Paris and work at Acme": the subject carries over.
            out.push(c);
            i += 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The claims of a stored fact when everything it says is claims — every sentence states at
/// least one — else `None`: a fact that also says something else is never replaced whole.
pub(crate) fn fact_claims(text: &str) -> Option<Vec<Claim>> {
    let mut out = Vec::new();
    for sentence in sentences(text) {
        let found = sentence_claims(&sentence, "user");
        if found.is_empty() {
            return None;
        }
        out.extend(found);
    }
    (!out.is_empty()).then_some(out)
}

/// A subject starting at word `i`: (who, whether it is a possessive like "my"/"Alice's", the
/// word after it). Only at the start of the sentence or of a clause.
fn subject_at(s: &[Word], i: usize, speaker: &str) -> Option<(String, bool, usize)> {
    let clause_start = i == 0 || matches!(s[i - 1].low.as_str(), "," | "and" | "but" | "so" | "now" | "then");
    if !clause_start {
        return None;
    }
    let w = &s[i];
    let at = |k: usize| s.get(k).map(|w| w.low.as_str()).unwrap_or("");
    match w.low.as_str() {
        "i" | "we" => return Some((speaker.to_string(), false, i + 1)),
        "my" | "our" => return Some((speaker.to_string(), true, i + 1)),
        "the" if at(i + 1) == "user" => {
            return Some(("user".into(), at(i + 2) == "'s", if at(i + 2) == "'s" { i + 3 } else { i + 2 }));
        }
        "user" | "user's" => {
            return Some(("user".into(), at(i + 1) == "'s", if at(i + 1) == "'s" { i + 2 } else { i + 1 }));
        }
        _ => {}
    }
    // A named person: one or two capitalised words, no pronoun or opener.
    if !w.capitalised()
        || NOT_NAMES.contains(&w.low.as_str())
        || ADVERBS.contains(&w.low.as_str())
        || !w.low.chars().all(char::is_alphabetic)
    {
        return None;
    }
    let mut end = i + 1;
    let mut name = w.low.clone();
    if let Some(n) = s.get(end)
        && n.capitalised()
        && n.low.chars().all(char::is_alphabetic)
        && !NOT_NAMES.contains(&n.low.as_str())
    {
        name = format!("{name} {}", n.low);
        end += 1;
    }
    if at(end) == "'s" {
        return Some((name, true, end + 1));
    }
    Some((name, false, end))
}

/// What follows a subject: an attribute and its value, if one of the patterns reads it.
fn predicate(s: &[Word], mut i: usize, subject: &str, possessive: bool) -> Option<Claim> {
    let at = |k: usize| s.get(k).map(|w| w.low.as_str()).unwrap_or("");
    let claim = |attribute: &str, value: String| Claim {
        subject: subject.to_string(),
        attribute: attribute.to_string(),
        value,
    };
    if possessive {
        // "my phone number is …", "my favourite food is …", "my dog's name is …", "my wife is …".
        let noun_end = (i..(i + 4).min(s.len())).find(|&k| matches!(at(k), "is" | "are"))?;
        let noun: Vec<&str> = (i..noun_end).map(at).collect();
        let v = noun_end + 1;
        let v = if matches!(at(v), "now" | "currently" | "still" | "actually" | "officially") { v + 1 } else { v };
        return match noun.as_slice() {
            ["phone" | "mobile" | "cell"] | ["phone" | "mobile" | "cell", "number"] | ["number"] => {
                phone(s, v).map(|p| claim("phone", p))
            }
            ["email"] | ["email" | "e-mail", "address"] | ["e-mail"] => email(s, v).map(|e| claim("email", e)),
            ["address"] | ["home", "address"] => rest(s, v, 8).map(|a| claim("address", a)),
            ["birthday"] | ["date", "of", "birth"] => rest(s, v, 4).map(|b| claim("birthday", b)),
            ["wife" | "husband" | "partner" | "girlfriend" | "boyfriend" | "fiance" | "fiancee" | "spouse"] => {
                name(s, v).map(|n| claim("partner", n))
            }
            ["favourite" | "favorite", ..] if noun.len() >= 2 => {
                rest(s, v, 4).map(|x| claim(&format!("favourite {}", noun[1..].join(" ")), x))
            }
            ["dog" | "cat" | "pet" | "puppy" | "kitten" | "horse" | "rabbit" | "parrot", "'s", "name"]
            | ["dog" | "cat" | "pet" | "puppy" | "kitten" | "horse" | "rabbit" | "parrot", "name"] => {
                name(s, v).map(|n| claim(&format!("{}'s name", noun[0]), n))
            }
            ["car"] => rest(s, v + usize::from(matches!(at(v), "a" | "an")), 4).map(|c| claim("car", c)),
            ["job"] | ["role"] | ["job", "title"] => rest(s, v, 4).map(|r| claim("role", r)),
            ["diet"] => rest(s, v, 2).map(|d| claim("diet", d)),
            ["home"] if at(v) == "in" => name(s, v + 1).map(|p| claim("residence", p)),
            _ => None,
        };
    }
    // Auxiliaries and adverbs: "we've finally moved", "I'm now based", "Alice has joined".
    let mut copula = false;
    loop {
        match at(i) {
            "'ve" | "have" | "has" | "'s" if !copula => i += 1,
            "am" | "'m" | "is" | "are" | "'re" => {
                copula = true;
                i += 1;
            }
            w if ADVERBS.contains(&w) => i += 1,
            _ => break,
        }
    }
    let verb = at(i);
    let next = at(i + 1);
    match (verb, next) {
        ("live" | "lives", "in") | ("living", "in") | ("based", "in") | ("moved" | "relocated", "to") => {
            if (verb == "living" || verb == "based") && !copula {
                return None;
            }
            if (verb == "live" || verb == "lives") && copula {
                return None;
            }
            name(s, i + 2).map(|p| claim("residence", p))
        }
        ("live" | "lives", "at") if !copula => rest(s, i + 2, 8).map(|a| claim("address", a)),
        ("work" | "works", "at" | "for") | ("working", "at" | "for") | ("employed", "by") => {
            if (verb == "working" || verb == "employed") != copula {
                return None;
            }
            name(s, i + 2).map(|e| claim("employer", e))
        }
        // "I joined Google (as …| in May)": a name right after, then the clause ends or goes on
        // about the role or the time ("joined the choir" is no job).
        ("joined", _) if !copula && s.get(i + 1).is_some_and(Word::capitalised) => {
            let e = name(s, i + 1)?;
            let after = at(i + 1 + e.split(' ').count());
            matches!(after, "" | "," | "as" | "in" | "last" | "this").then(|| claim("employer", e))
        }
        ("work" | "works", "as") if !copula => {
            let v = i + 2 + usize::from(matches!(at(i + 2), "a" | "an"));
            rest(s, v, 4).map(|r| claim("role", r))
        }
        ("married" | "engaged", "to") if copula || at(i.wrapping_sub(1)) == "got" => {
            name(s, i + 2).map(|n| claim("partner", n))
        }
        ("drive" | "drives", "a" | "an") if !copula => rest(s, i + 2, 4).map(|c| claim("car", c)),
        ("vegan" | "vegetarian" | "pescatarian" | "keto", _) if copula && (next.is_empty() || next == ",") => {
            Some(claim("diet", verb.to_string()))
        }
        ("a" | "an", "vegan" | "vegetarian" | "pescatarian") if copula && matches!(at(i + 2), "" | ",") => {
            Some(claim("diet", next.to_string()))
        }
        ("went", "vegan" | "vegetarian" | "pescatarian" | "keto") if !copula => Some(claim("diet", next.to_string())),
        ("born", "on") if at(i.wrapping_sub(1)) == "was" => rest(s, i + 2, 4).map(|b| claim("birthday", b)),
        _ => None,
    }
}

/// A name at word `i` (an optional "the" first): one to four capitalised words, lowercased.
fn name(s: &[Word], mut i: usize) -> Option<String> {
    if s.get(i).is_some_and(|w| w.low == "the") {
        i += 1;
    }
    let mut parts = Vec::new();
    while let Some(w) = s.get(i) {
        if w.capitalised() && w.low.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '.') && parts.len() < 4 {
            parts.push(w.low.clone());
            i += 1;
        } else if matches!(w.low.as_str(), "of" | "de" | "on" | "upon" | "am") && !parts.is_empty() {
            // "University of Lyon", "Frankfurt am Main": only when a name follows.
            if s.get(i + 1).is_some_and(Word::capitalised) {
                parts.push(w.low.clone());
                i += 1;
            } else {
                break;
            }
        } else {
            break;
        }
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// Up to `max` words from `i` to the end of the clause, lowercased.
fn rest(s: &[Word], i: usize, max: usize) -> Option<String> {
    let mut parts = Vec::new();
    for w in s.iter().skip(i) {
        if w.low == ","
            || w.low == "?"
            || parts.len() >= max
            || (!parts.is_empty() && VALUE_END.contains(&w.low.as_str()))
        {
            break;
        }
        if parts.is_empty() && VALUE_END.contains(&w.low.as_str()) && !matches!(w.low.as_str(), "a" | "an" | "the") {
            return None;
        }
        if parts.is_empty() && matches!(w.low.as_str(), "a" | "an" | "the") {
            continue;
        }
        parts.push(w.low.clone());
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// A phone number from word `i`: digit groups (and `+`, `-`), at least six digits.
fn phone(s: &[Word], i: usize) -> Option<String> {
    let mut digits = String::new();
    for w in s.iter().skip(i) {
        if w.low.chars().all(|c| c.is_ascii_digit() || c == '+' || c == '-') {
            digits.extend(w.low.chars().filter(char::is_ascii_digit));
        } else {
            break;
        }
    }
    (digits.len() >= 6).then_some(digits)
}

/// An e-mail address at word `i`.
fn email(s: &[Word], i: usize) -> Option<String> {
    s.get(i).filter(|w| w.low.contains('@') && w.low.contains('.')).map(|w| w.low.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Option<String> {
        let c = claims(text, Some("Caroline"));
        assert!(c.len() <= 1, "{text}: {c:?}");
        c.first().map(Claim::to_string)
    }

    #[test]
    fn reads_the_attribute_patterns() {
        let cases = [
            ("I live in Paris.", "caroline / residence = paris"),
            ("We moved to Berlin last spring!", "caroline / residence = berlin"),
            ("We've finally moved to New York City", "caroline / residence = new york city"),
            ("I'm based in Frankfurt am Main these days", "caroline / residence = frankfurt am main"),
            ("I work at Acme Corp", "caroline / employer = acme corp"),
            ("I'm working for the BBC now", "caroline / employer = bbc"),
            ("I joined Google in May", "caroline / employer = google"),
            ("I work as a nurse", "caroline / role = nurse"),
            ("My wife is Anna", "caroline / partner = anna"),
            ("I'm married to Tom", "caroline / partner = tom"),
            ("My phone number is +33 6 12 34 56 78", "caroline / phone = 33612345678"),
            ("My email is caro@example.org", "caroline / email = caro@example.org"),
            ("My birthday is 4 March", "caroline / birthday = 4 march"),
            ("My favourite band is Radiohead", "caroline / favourite band = radiohead"),
            ("My favorite color is green", "caroline / favourite color = green"),
            ("I drive a Tesla Model 3", "caroline / car = tesla model 3"),
            ("My dog's name is Oscar", "caroline / dog's name = oscar"),
            ("I'm vegan.", "caroline / diet = vegan"),
            ("The user lives in Paris.", "user / residence = paris"),
            ("The user's favourite editor is Helix now.", "user / favourite editor = helix"),
            ("Alice Martin works at Initech.", "alice martin / employer = initech"),
            ("Alice's phone number is 555 0100.", "alice / phone = 5550100"),
        ];
        for (text, want) in cases {
            assert_eq!(one(text).as_deref(), Some(want), "{text}");
            let attr = want.split(" / ").nth(1).unwrap().split(" = ").next().unwrap();
            assert!(
                ATTRIBUTES.contains(&attr) || attr.starts_with("favourite ") || attr.ends_with("'s name"),
                "{attr}"
            );
        }
    }

    #[test]
    fn questions_negations_hypotheticals_and_past_states_say_nothing() {
        for text in [
            "Do you live in Paris?",
            "Where do you live?",
            "You live in Paris, right?",
            "I don't live in Paris.",
            "I do not live in Paris anymore",
            "I never worked at Acme",
            "I no longer live in Paris",
            "If I moved to Berlin I would learn German.",
            "I might move to Berlin",
            "We're thinking about moving to Berlin.",
            "I want to live in Tokyo someday",
            "I will move to Berlin",
            "I lived in Paris for years",
            "I used to live in Paris",
            "She said she lives in Rome",
            "I live in a small flat",
            "I moved to a new apartment",
            "It lives in the garden",
            "I'm going to move to Berlin",
        ] {
            assert_eq!(one(text), None, "{text}");
        }
    }

    #[test]
    fn a_fact_is_all_claims_or_not_replaceable() {
        let both = fact_claims("I live in Paris and work at Acme.").unwrap();
        assert_eq!(
            both.iter().map(Claim::to_string).collect::<Vec<_>>(),
            ["user / residence = paris", "user / employer = acme"]
        );
        assert!(fact_claims("I live in Paris. My kids go to school by the canal.").is_none());
        assert!(fact_claims("Nothing to see").is_none());
    }

    #[test]
    fn chat_lines_are_read_as_their_senders() {
        let chunk = "[2024-01-01 10:00] Alice: I live in Paris.\n[2024-01-01 10:01] Bob: Do you live in Paris?\n\
                     [2024-01-01 10:02] Bob: I work at Initech\nand I love it";
        let got: Vec<String> = chat_claims(chunk).iter().map(Claim::to_string).collect();
        assert_eq!(got, ["alice / residence = paris", "bob / employer = initech"]);
        let turn = "user: We moved to Berlin\nuser ran Edit on notes.md\nassistant: I live in the cloud";
        let got: Vec<String> = chat_claims(turn).iter().map(Claim::to_string).collect();
        assert_eq!(got, ["user / residence = berlin"]);
    }

    #[test]
    fn several_sentences_and_clauses() {
        let c = claims("Big news. We moved to Berlin, and I work at Zalando now.", None);
        let got: Vec<String> = c.iter().map(Claim::to_string).collect();
        assert_eq!(got, ["user / residence = berlin", "user / employer = zalando"]);
    }
}
