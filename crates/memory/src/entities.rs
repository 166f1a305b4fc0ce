//! Entity extraction by simple, predictable rules. Every write runs it over each chunk.
//!
//! Canonical ids: `email:a@b.com`, `url:https://host/path`, `handle:@name`,
//! `topic:rust` (from `#rust`), `person:alice-smith` (two or three capitalised words
//! that are not common sentence words), `org:acme-corp` (capitalised words ending in a
//! company suffix such as Corp, Inc, Ltd, Labs). Ids are lowercase so that spellings
//! of the same thing meet; the first surface form seen is kept as the display name.

use super::util::slug;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entity {
    pub id: String,
    pub kind: &'static str,
    pub display: String,
    pub mentions: u32,
}

const ORG_SUFFIXES: &[&str] = &[
    "Inc",
    "Corp",
    "Corporation",
    "Ltd",
    "Llc",
    "LLC",
    "GmbH",
    "Labs",
    "Foundation",
    "University",
    "Company",
    "Co",
    "Group",
    "Technologies",
    "Systems",
    "Software",
    "Institute",
    "AG",
    "SA",
    "PLC",
    "Plc",
];

/// Capitalised words that start sentences or name things that are not people.
const NOT_NAMES: &[&str] = &[
    "A",
    "An",
    "The",
    "This",
    "That",
    "These",
    "Those",
    "There",
    "Then",
    "Than",
    "Here",
    "It",
    "Its",
    "I",
    "We",
    "You",
    "He",
    "She",
    "They",
    "Our",
    "Your",
    "My",
    "His",
    "Her",
    "Their",
    "If",
    "When",
    "While",
    "Where",
    "What",
    "Why",
    "How",
    "Who",
    "Which",
    "And",
    "But",
    "Or",
    "So",
    "Yet",
    "For",
    "Nor",
    "In",
    "On",
    "At",
    "By",
    "To",
    "Of",
    "From",
    "With",
    "Without",
    "As",
    "Is",
    "Are",
    "Was",
    "Were",
    "Be",
    "Do",
    "Does",
    "Did",
    "Not",
    "No",
    "Yes",
    "All",
    "Any",
    "Some",
    "Each",
    "Every",
    "Both",
    "Also",
    "Just",
    "Please",
    "Thanks",
    "Thank",
    "Hi",
    "Hello",
    "Hey",
    "Dear",
    "Regards",
    "Best",
    "Cheers",
    "Re",
    "Fwd",
    "Fw",
    "Subject",
    "Date",
    "Cc",
    "Bcc",
    "Sent",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Today",
    "Tomorrow",
    "Yesterday",
    "Meeting",
    "Notes",
    "Note",
    "Project",
    "Team",
    "Update",
    "Summary",
    "Agenda",
    "Action",
    "Items",
    "Next",
    "Steps",
    "Introduction",
    "Overview",
    "Conclusion",
    "Chapter",
    "Section",
    "Table",
    "Figure",
    "Appendix",
    "New",
    "Old",
    "First",
    "Last",
    "After",
    "Before",
    "During",
    "Since",
    "Until",
    "Can",
    "Could",
    "Will",
    "Would",
    "Should",
    "Must",
    "May",
    "Might",
    "Let",
    "Lets",
    "Let's",
    "Ok",
    "Okay",
    "Sure",
    "Good",
    "Great",
    "Morning",
    "Afternoon",
    "Evening",
    "Mr",
    "Mrs",
    "Ms",
    "Dr",
    "Prof",
    "Sir",
    "Team",
    "Users",
    "User",
];

/// Extracts entities from `text`, aggregated by id in first-seen order.
pub(crate) fn extract(text: &str) -> Vec<Entity> {
    let mut out: Vec<Entity> = Vec::new();
    let mut add = |id: String, kind: &'static str, display: &str| {
        if let Some(e) = out.iter_mut().find(|e| e.id == id) {
            e.mentions += 1;
        } else {
            out.push(Entity { id, kind, display: display.to_string(), mentions: 1 });
        }
    };
    // A run of capitalised words, ended by any other word or by punctuation.
    let mut run: Vec<&str> = Vec::new();
    let end_run = |run: &mut Vec<&str>, add: &mut dyn FnMut(String, &'static str, &str)| {
        if let Some((id, kind, display)) = name_entity(run) {
            add(id, kind, &display);
        }
        run.clear();
    };
    // A line break ends a name: a title line and the first words of the text are
    // not one name.
    for line in text.lines() {
        for raw in line.split_whitespace() {
            let word = raw.trim_start_matches(['(', '<', '[', '"', '\'', '*', '_', '`', '{']);
            let word_trimmed =
                word.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '>', ']', '"', '\'', '*', '_', '`', '}']);
            let punct_after = word_trimmed.len() < word.len();
            let word = word_trimmed;
            if word.is_empty() {
                end_run(&mut run, &mut add);
                continue;
            }
            if let Some(url) = url(word) {
                end_run(&mut run, &mut add);
                add(format!("url:{url}"), "url", word);
                continue;
            }
            let w = word.strip_prefix("mailto:").unwrap_or(word);
            if let Some(email) = email(w) {
                end_run(&mut run, &mut add);
                add(format!("email:{email}"), "email", w);
                continue;
            }
            if let Some(name) = word.strip_prefix('@').filter(|n| is_handle(n)) {
                end_run(&mut run, &mut add);
                add(format!("handle:@{}", name.to_ascii_lowercase()), "handle", word);
                continue;
            }
            if let Some(tag) = word.strip_prefix('#').filter(|t| is_hashtag(t)) {
                end_run(&mut run, &mut add);
                add(format!("topic:{}", slug(tag)), "topic", tag);
                continue;
            }
            if is_capitalised(word) {
                run.push(word);
                if punct_after {
                    end_run(&mut run, &mut add);
                }
            } else {
                end_run(&mut run, &mut add);
            }
        }
        end_run(&mut run, &mut add);
    }
    end_run(&mut run, &mut add);
    out
}

fn name_entity(run: &[&str]) -> Option<(String, &'static str, String)> {
    if run.len() < 2 {
        return None;
    }
    // An organisation: the run's tail is a company suffix; take up to three words before it.
    if let Some(pos) = run.iter().rposition(|w| ORG_SUFFIXES.contains(w))
        && pos >= 1
    {
        let start = pos.saturating_sub(3);
        let words: Vec<&str> = run[start..=pos].iter().copied().skip_while(|w| NOT_NAMES.contains(w)).collect();
        if words.len() >= 2 {
            let display = words.join(" ");
            return Some((format!("org:{}", slug(&display)), "org", display));
        }
    }
    // A person: two or three words, none of them a common capitalised word.
    let words: Vec<&str> = run.iter().copied().skip_while(|w| NOT_NAMES.contains(w)).collect();
    if (2..=3).contains(&words.len()) && words.iter().all(|w| !NOT_NAMES.contains(w) && !ORG_SUFFIXES.contains(w)) {
        let display = words.join(" ");
        return Some((format!("person:{}", slug(&display)), "person", display));
    }
    None
}

/// `Alice`, `O'Brien`, `Jean-Luc`: an uppercase letter then lowercase letters.
fn is_capitalised(w: &str) -> bool {
    let mut chars = w.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !first.is_uppercase() || w.chars().count() < 2 {
        return false;
    }
    let rest: Vec<char> = chars.collect();
    // Acronyms like AG/PLC are allowed only as org suffixes.
    if ORG_SUFFIXES.contains(&w) {
        return true;
    }
    rest.iter().all(|c| c.is_lowercase() || *c == '-' || *c == '\'') && rest.iter().any(|c| c.is_alphabetic())
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

fn email(w: &str) -> Option<String> {
    let (local, domain) = w.split_once('@')?;
    if local.is_empty() || domain.contains('@') {
        return None;
    }
    let local_ok = local.bytes().all(|b| b.is_ascii_alphanumeric() || b"._%+-".contains(&b));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        && labels.last().is_some_and(|t| t.len() >= 2 && t.bytes().all(|b| b.is_ascii_alphabetic()));
    (local_ok && domain_ok).then(|| w.to_ascii_lowercase())
}

fn is_handle(n: &str) -> bool {
    (1..=39).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_hashtag(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_alphabetic())
        && t.len() <= 64
        && t.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str) -> Vec<String> {
        extract(text).into_iter().map(|e| e.id).collect()
    }

    #[test]
    fn extraction_examples() {
        let cases: &[(&str, &[&str])] = &[
            ("mail alice@example.com today", &["email:alice@example.com"]),
            ("From: Alice Smith <Alice@Example.COM>", &["person:alice-smith", "email:alice@example.com"]),
            ("see https://Example.com/a/b/. now", &["url:https://example.com/a/b"]),
            ("ping @Bob_99 about it", &["handle:@bob_99"]),
            ("learning #Rust and #rust-lang", &["topic:rust", "topic:rust-lang"]),
            ("# Heading not a tag", &[]),
            (
                "We met Alice Smith and Bob Jones at Acme Corp.",
                &["person:alice-smith", "person:bob-jones", "org:acme-corp"],
            ),
            ("The Meeting Notes were short", &[]),
            ("issue #42 is open", &[]),
            ("mailto:x@y.org", &["email:x@y.org"]),
            ("not an email: a@b or @ alone", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(ids(text), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "text: {text}");
        }
    }

    #[test]
    fn mentions_are_counted_and_display_kept() {
        let e = extract("#Rust is great. I love #rust. Ask @ann or @Ann.");
        assert_eq!(e[0].id, "topic:rust");
        assert_eq!(e[0].mentions, 2);
        assert_eq!(e[0].display, "Rust");
        assert_eq!(e[1].id, "handle:@ann");
        assert_eq!(e[1].mentions, 2);
    }
}
