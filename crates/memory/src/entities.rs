//! Entity extraction by simple, predictable rules, over each chunk written: `people` reads who
//! wrote and received the chunk, `scan` what its prose mentions, and `index` turns both into
//! stored entities, people and merges. The write itself stores the chunk's people, channel and
//! tags (`index_chunk`); `background` scans its prose after the write, off the ingest path.
//!
//! Canonical ids: `email:a@b.com`, `url:https://host/path`, `handle:@name`, `topic:rust`,
//! `person:alice-smith`, `bot:dependabot`, `org:acme-corp`. Ids are lowercase so that
//! spellings of the same thing meet; the first surface form seen is kept as the display name.
//!
//! People come from who wrote and received: mail headers (`From:`/`To:`/`Cc:` with names and
//! addresses) and chat senders (`people`). Capitalised words in the text are only candidates
//! (`NameCandidate`); they count as a person when something speaks for it: the name is already
//! known as a sender or recipient, an honorific stands before it (`Dr. Ada Byron`), or it
//! starts with a common given name (`words::is_first_name`). Topics are a chunk's own tags
//! (front matter, `#tags`), hashtags in its prose, and its repeated words (`terms`) that are
//! neither stop words nor generic words (`words::is_generic_word`: `time`, `think`, `thing`,
//! `file`…), which `tree.top_entities` ranks by how distinctive they are in the store, leaving
//! out a word that too many of the store's chunks use to be anyone's subject. Code is not text:
//! fenced blocks, inline code spans and lines that read as code are skipped, and `@dataclass`,
//! `@param`, `#include` and `icon@2x.png` are no handle, topic or address.

mod background;
mod index;
mod people;
mod words;

pub(crate) use background::{Bulk, Extraction, begin_reextract, settle, start, wait};
pub(crate) use index::{drop_aliases, index_chunk, register_parties, reindex, split, unindex_chunks};
pub(crate) use people::ChunkView;

use super::util::slug;
use words::{CODE_HASH_WORDS, FILE_EXTENSIONS, NOT_NAMES, ORG_SUFFIXES, TITLES};

/// At most this many repeated words of one chunk become its topics.
const TERMS_PER_CHUNK: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entity {
    pub id: String,
    pub kind: &'static str,
    pub display: String,
    pub mentions: u32,
}

/// Capitalised words that may be a person's name, and what speaks for them in the text itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameCandidate {
    pub id: String,
    pub display: String,
    pub mentions: u32,
    /// An honorific (`Dr.`, `Ms`) stood right before it at least once.
    pub titled: bool,
    /// It starts with a common given name.
    pub given_name: bool,
    /// For a three-word run that opens a sentence, the name without its first word (id,
    /// display, whether it starts with a given name): taken when the whole has no evidence.
    pub alt: Option<(String, String, bool)>,
}

/// What the text of one chunk mentions (people it was written by come from `people`).
#[derive(Debug, Default)]
pub(crate) struct TextFacts {
    pub entities: Vec<Entity>,
    pub names: Vec<NameCandidate>,
    /// Words used at least twice, not opening a sentence (plurals folded, as first written),
    /// with their count: topic candidates.
    pub terms: Vec<(String, String, u32)>,
    /// How often each word was one of a run of capitalised words (`Samuel Thibault`, `Acme
    /// Corp`): those uses name something and are no topic.
    name_words: std::collections::HashMap<String, u32>,
}

impl TextFacts {
    fn add(&mut self, id: String, kind: &'static str, display: &str) {
        if let Some(e) = self.entities.iter_mut().find(|e| e.id == id) {
            e.mentions += 1;
        } else {
            self.entities.push(Entity { id, kind, display: display.to_string(), mentions: 1 });
        }
    }

    fn add_name(&mut self, words: &[&str], titled: bool, alt: Option<&[&str]>) {
        let display = words.join(" ");
        let id = format!("person:{}", slug(&display));
        if let Some(n) = self.names.iter_mut().find(|n| n.id == id) {
            n.mentions += 1;
            n.titled |= titled;
        } else {
            let given_name = words.len() >= 2 && words::is_first_name(words[0]);
            let alt = alt.map(|w| {
                let display = w.join(" ");
                (format!("person:{}", slug(&display)), display, words::is_first_name(w[0]))
            });
            self.names.push(NameCandidate { id, display, mentions: 1, titled, given_name, alt });
        }
    }
}

/// Scans prose `lines` (what the chunk's reader would call text: the caller has taken out
/// header and sender prefixes). Fenced code blocks, inline code and code-like lines are skipped.
pub(crate) fn scan<'a>(lines: impl Iterator<Item = &'a str>) -> TextFacts {
    let mut facts = TextFacts::default();
    let mut words = Terms::default();
    let mut fence: Option<&str> = None;
    for line in lines {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if let Some(f) = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f)) {
            fence = Some(f);
            continue;
        }
        if looks_like_code(trimmed) {
            continue;
        }
        // Inline code spans (between backticks) are left out.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        scan_line(&prose, &mut facts, &mut words);
    }
    let mut words = words.list;
    for w in &mut words {
        w.2 = w.2.saturating_sub(facts.name_words.get(&w.0).copied().unwrap_or(0));
    }
    words.retain(|w| w.2 >= 2);
    words.sort_by(|a, b| b.2.cmp(&a.2).then(a.3.cmp(&b.3)));
    facts.terms = words.into_iter().take(TERMS_PER_CHUNK).map(|(id, display, n, _)| (id, display, n)).collect();
    facts
}

/// A line that reads as code: a statement or block delimiter at its end, a comment or
/// preprocessor start, a statement keyword with code around it, or a code-only operator.
fn looks_like_code(t: &str) -> bool {
    let t = t.trim_end();
    if t.is_empty() {
        return false;
    }
    if ["//", "/*", "#include", "#define", "#!"].iter().any(|p| t.starts_with(p)) {
        return true;
    }
    let ends = t.ends_with(';') || t.ends_with('{') || t.ends_with('}') || t.ends_with(")]") || t.ends_with("):");
    // `from ` and `use ` also open sentences: they count only with code around them.
    let keyword = ["import ", "from ", "def ", "fn ", "pub ", "let ", "use ", "const ", "class "]
        .iter()
        .any(|p| t.starts_with(p))
        && (t.contains('(') || t.contains(" import ") || t.contains('='));
    ends || keyword || t.contains("::") || t.contains(" => ") || t.contains("->") || t.contains(" == ")
}

/// One line of prose: addresses, links, handles, hashtags, capitalised runs, words.
/// A chunk's candidate topic words in first-seen order, `(term, display, count, first
/// position)`, with an index by term (a chunk has hundreds of distinct words).
#[derive(Default)]
struct Terms {
    list: Vec<(String, String, u32, usize)>,
    at: std::collections::HashMap<String, usize>,
}

fn scan_line(line: &str, facts: &mut TextFacts, words: &mut Terms) {
    // A run of capitalised words, ended by any other word or by punctuation; whether an
    // honorific stood right before it.
    let mut run: Vec<&str> = Vec::new();
    let mut titled = false;
    // Whether the run's first word opened a sentence (`Ask Zoltan Kiraly`).
    let mut run_opens = false;
    let mut after_title = false;
    let mut first = true;
    // Whether the next word opens a sentence, a line or a list item: such words are often
    // imperatives and labels (`Fix …`, `Drop …`, `Closes:`), not what the text is about.
    let mut opens = true;
    for raw in line.split_whitespace() {
        let opening = opens;
        opens = if raw.chars().any(char::is_alphabetic) { raw.ends_with(['.', '!', '?', ':']) } else { opening };
        let lead = raw.trim_start_matches(['(', '[', '"', '\'', '*', '_']);
        let word = raw.trim_start_matches(['(', '<', '[', '"', '\'', '*', '_', '`', '{']);
        let word_trimmed =
            word.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '>', ']', '"', '\'', '*', '_', '`', '}']);
        let punct_after = word_trimmed.len() < word.len();
        // `Ada Lovelace's` is Ada Lovelace.
        let word =
            word_trimmed.strip_suffix("'s").or_else(|| word_trimmed.strip_suffix("\u{2019}s")).unwrap_or(word_trimmed);
        let at_start = std::mem::replace(&mut first, false);
        let was_title = std::mem::replace(&mut after_title, false);
        if word.is_empty() {
            end_run(&mut run, &mut titled, run_opens, facts);
            continue;
        }
        if let Some(url) = url(word) {
            end_run(&mut run, &mut titled, run_opens, facts);
            facts.add(format!("url:{url}"), "url", word);
            continue;
        }
        let w = word.strip_prefix("mailto:").unwrap_or(word);
        if let Some(email) = email(w) {
            end_run(&mut run, &mut titled, run_opens, facts);
            facts.add(format!("email:{email}"), "email", w);
            continue;
        }
        if let Some(name) = lead.strip_prefix('@') {
            end_run(&mut run, &mut titled, run_opens, facts);
            let name = name.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '"', '\'']);
            // A decorator or doc tag, or an `@word` opening a line as decorators do.
            let code = words::is_code_at_word(name) || (at_start && raw.contains('('));
            if is_handle(name) && !code {
                facts.add(format!("handle:@{}", name.to_ascii_lowercase()), "handle", &format!("@{name}"));
            }
            continue;
        }
        if let Some(tag) = lead.strip_prefix('#') {
            end_run(&mut run, &mut titled, run_opens, facts);
            let tag = tag.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '"', '\'']);
            if is_hashtag(tag) {
                facts.add(format!("topic:{}", slug(tag)), "topic", tag);
            }
            continue;
        }
        if TITLES.contains(&word) {
            end_run(&mut run, &mut titled, run_opens, facts);
            after_title = true;
            continue;
        }
        if is_capitalised(word) {
            if run.is_empty() {
                titled = was_title;
                run_opens = opening;
            }
            run.push(word);
            if punct_after {
                end_run(&mut run, &mut titled, run_opens, facts);
            }
        } else {
            end_run(&mut run, &mut titled, run_opens, facts);
        }
        if let Some(term) = term(word).filter(|_| !opening) {
            let n = words.list.len();
            match words.at.get(&term) {
                Some(&i) => words.list[i].2 += 1,
                None => {
                    words.at.insert(term.clone(), n);
                    words.list.push((term, word.to_lowercase(), 1, n));
                }
            }
        }
    }
    end_run(&mut run, &mut titled, run_opens, facts);
}

fn end_run(run: &mut Vec<&str>, titled: &mut bool, opens: bool, facts: &mut TextFacts) {
    if run.len() >= 2 {
        for t in run.iter().filter_map(|w| term(w)) {
            *facts.name_words.entry(t).or_default() += 1;
        }
    }
    name_entity(run, *titled, opens, facts);
    run.clear();
    *titled = false;
}

fn name_entity(run: &[&str], titled: bool, opens: bool, facts: &mut TextFacts) {
    let min = if titled { 1 } else { 2 };
    if run.len() < min {
        return;
    }
    // An organisation: the run's tail is a company suffix; take up to three words before it.
    if let Some(pos) = run.iter().rposition(|w| ORG_SUFFIXES.contains(w))
        && pos >= 1
    {
        let start = pos.saturating_sub(3);
        let words: Vec<&str> = run[start..=pos].iter().copied().skip_while(|w| NOT_NAMES.contains(w)).collect();
        if words.len() >= 2 {
            let display = words.join(" ");
            facts.add(format!("org:{}", slug(&display)), "org", &display);
            return;
        }
    }
    // A name: one to three words (one only after an honorific), none a common capitalised word.
    let words: Vec<&str> = run.iter().copied().skip_while(|w| NOT_NAMES.contains(w)).collect();
    let titled = titled && words.len() == run.len();
    if (min..=3).contains(&words.len()) && words.iter().all(|w| !NOT_NAMES.contains(w) && !ORG_SUFFIXES.contains(w)) {
        // A longer run that opens a sentence may start with a verb or a label: the name may
        // be the rest.
        let alt = (opens && words.len() == run.len() && words.len() == 3).then(|| &words[1..]);
        facts.add_name(&words, titled, alt);
    }
}

/// A topic candidate: a lowercase (or sentence-capitalised) word of letters, 4 to 24 long, not
/// a stop word; plurals fold to the singular (`releases` → `release`, `libraries` → `library`).
fn term(word: &str) -> Option<String> {
    let n = word.chars().count();
    if !(4..=24).contains(&n) || word.chars().skip(1).any(|c| !c.is_lowercase() && c != '-') {
        return None;
    }
    if !word.chars().all(|c| c.is_alphabetic() || c == '-') || word.starts_with('-') || word.ends_with('-') {
        return None;
    }
    // `Caroline` in the middle of a sentence is someone, not a subject.
    if word.chars().next().is_some_and(char::is_uppercase) && words::is_first_name(word) {
        return None;
    }
    let w = word.to_lowercase();
    // Past participles and adverbs (`fixed`, `added`, `quickly`) say what happened or how,
    // not what about.
    let verbal = w.ends_with("ed") && !w.ends_with("eed") || w.ends_with("ly");
    // Greetings, months and days (`Thanks`, `April`) are no subject either.
    let common = {
        static LOWER: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
        LOWER.get_or_init(|| NOT_NAMES.iter().map(|n| n.to_ascii_lowercase()).collect()).contains(w.as_str())
    };
    if verbal || common || words::is_stop_word(&w) || words::is_generic_word(&w) {
        return None;
    }
    let folded = if let Some(stem) = w.strip_suffix("ies").filter(|s| s.len() >= 3) {
        format!("{stem}y")
    } else if let Some(stem) = ["xes", "ches", "shes", "sses"].iter().find_map(|e| w.strip_suffix(e).map(|s| (s, e))) {
        format!("{}{}", stem.0, &stem.1[..stem.1.len() - 2])
    } else if w.ends_with('s') && !["ss", "us", "is"].iter().any(|e| w.ends_with(e)) && w.len() > 4 {
        w[..w.len() - 1].to_string()
    } else {
        w
    };
    (!words::is_stop_word(&folded) && !words::is_generic_word(&folded)).then_some(folded)
}

/// `Alice`, `O'Brien`, `Jean-Luc`, `McVittie`: an uppercase letter, then letters (mostly
/// lowercase; not an acronym), hyphens or apostrophes.
pub(crate) fn is_capitalised(w: &str) -> bool {
    let mut chars = w.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !first.is_uppercase() || w.chars().count() < 2 {
        return false;
    }
    // Acronyms like AG/PLC are allowed only as org suffixes.
    if ORG_SUFFIXES.contains(&w) {
        return true;
    }
    let rest: Vec<char> = chars.collect();
    let lower = rest.iter().filter(|c| c.is_lowercase()).count();
    rest.iter().all(|c| c.is_alphabetic() || *c == '-' || *c == '\'')
        && rest.first().is_some_and(|c| c.is_lowercase())
        && lower * 2 > rest.len()
}

fn url(w: &str) -> Option<String> {
    let lower_prefix = w.get(..8).unwrap_or(w).to_ascii_lowercase();
    let rest = if lower_prefix.starts_with("https://") {
        &w[8..]
    } else if lower_prefix.starts_with("http://") {
        &w[7..]
    } else {
        return None;
    };
    let scheme = if lower_prefix.starts_with("https://") { "https" } else { "http" };
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if host.is_empty() || !host.contains('.') && !host.starts_with("localhost") {
        return None;
    }
    let path = path.trim_end_matches('/');
    Some(format!("{scheme}://{}{path}", host.to_ascii_lowercase()))
}

/// A mail address, lowercased; `icon@2x.png` (a file name) is none.
pub(crate) fn email(w: &str) -> Option<String> {
    let (local, domain) = w.split_once('@')?;
    if local.is_empty() || domain.contains('@') {
        return None;
    }
    let local_ok = local.bytes().all(|b| b.is_ascii_alphanumeric() || b"._%+-".contains(&b));
    let labels: Vec<&str> = domain.split('.').collect();
    let tld = labels.last().map(|t| t.to_ascii_lowercase()).unwrap_or_default();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        && tld.len() >= 2
        && tld.bytes().all(|b| b.is_ascii_alphabetic())
        && !FILE_EXTENSIONS.contains(&tld.as_str());
    (local_ok && domain_ok).then(|| w.to_ascii_lowercase())
}

fn is_handle(n: &str) -> bool {
    (1..=39).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `#rust`, `#rust-lang`: a letter first, a lowercase letter somewhere (so no `#GP` fault
/// codes), at least three characters, and no preprocessor or template keyword or stop word.
fn is_hashtag(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_alphabetic())
        && (2..=64).contains(&t.len())
        && t.chars().any(char::is_lowercase)
        && t.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && !CODE_HASH_WORDS.contains(&t.to_ascii_lowercase().as_str())
        && !words::is_stop_word(&t.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(text: &str) -> TextFacts {
        scan(text.lines())
    }

    fn ids(text: &str) -> Vec<String> {
        facts(text).entities.into_iter().map(|e| e.id).collect()
    }

    /// Names with their evidence: `(id, titled, given_name)`.
    fn names(text: &str) -> Vec<(String, bool, bool)> {
        facts(text).names.into_iter().map(|n| (n.id, n.titled, n.given_name)).collect()
    }

    #[test]
    fn addresses_links_handles_and_tags() {
        let cases: &[(&str, &[&str])] = &[
            ("mail alice@example.com today", &["email:alice@example.com"]),
            ("see https://Example.com/a/b/. now", &["url:https://example.com/a/b"]),
            ("ping @Bob_99 about it", &["handle:@bob_99"]),
            ("learning #Rust and #rust-lang", &["topic:rust", "topic:rust-lang"]),
            ("# Heading not a tag", &[]),
            ("We met at Acme Corp.", &["org:acme-corp"]),
            ("issue #42 is open", &[]),
            ("mailto:x@y.org", &["email:x@y.org"]),
            ("not an email: a@b or @ alone", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(ids(text), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "text: {text}");
        }
    }

    #[test]
    fn code_is_no_handle_topic_or_address() {
        let cases: &[&str] = &[
            "use @dataclass here and @Override there",
            "/**\n * @param x the value\n * @return nothing\n */",
            "@app.route('/')\n@login_required(role)",
            "```python\n@dataclass\nclass P:\n    mail = 'a@b.com'\n```",
            "call `notify(@alice, x@y.org)` now",
            "#include <stdio.h>\n#define X 1",
            "{{#each items}} and #if and #where",
            "retina icon@2x.png and logo@3x.svg",
            "the #GP fault and #UD",
        ];
        for text in cases {
            assert_eq!(ids(text), Vec::<String>::new(), "text: {text}");
            assert!(facts(text).terms.is_empty(), "text: {text}");
        }
        // Prose around a code block still counts.
        assert_eq!(ids("ask @ann\n```\n@dataclass\n```\nthen #rust"), ["handle:@ann", "topic:rust"]);
    }

    #[test]
    fn capitalised_phrases_are_candidates_without_evidence() {
        // Phrases and sentence openings: candidates at most, with nothing speaking for them.
        for text in ["Correlation Error was high", "We ran Monte Carlo sampling", "Breaking Changes", "Bug Fixes"] {
            assert!(names(text).iter().all(|(_, titled, given)| !titled && !given), "{text}: {:?}", names(text));
        }
        assert_eq!(names("The Meeting Notes were short"), []);
        // A given name or an honorific speaks for a name; a possessive is the name.
        assert_eq!(names("Thanks to Alice Smith's review"), [("person:alice-smith".to_string(), false, true)]);
        assert_eq!(
            names("ask Dr. Byron or Prof Ada Lovelace"),
            [("person:byron".to_string(), true, false), ("person:ada-lovelace".to_string(), true, false)]
        );
        assert_eq!(names("Mr. Ross"), [("person:ross".to_string(), true, false)]);
    }

    #[test]
    fn topics_are_repeated_words_not_stop_words_verbs_or_openers() {
        let f = facts(
            "the parser reads tokens. each parser keeps where it was, and where each token ends.\n\
             Fixed the lexer: fixed twice. Bump: bump again. tokens are tokens.",
        );
        let terms: Vec<&str> = f.terms.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(terms, ["token", "parser"]);
        assert_eq!(f.terms[0].1, "tokens", "shown as first written");
        // Words of a name are no topic; a proper noun alone is.
        let f = facts("we asked Samuel Thibault and Samuel Thibault about Linux, then Linux again");
        assert_eq!(f.terms.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), ["linux"]);
        // Months, greetings and days are no topics either.
        assert!(facts("in april and april, thanks thanks").terms.is_empty());
    }

    #[test]
    fn mentions_are_counted_and_display_kept() {
        let e = facts("#Rust is great. I love #rust. Ask @ann or @Ann.").entities;
        assert_eq!((e[0].id.as_str(), e[0].mentions, e[0].display.as_str()), ("topic:rust", 2, "Rust"));
        assert_eq!((e[1].id.as_str(), e[1].mentions), ("handle:@ann", 2));
    }
}
