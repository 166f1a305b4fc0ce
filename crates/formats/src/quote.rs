//! Quoted earlier messages inside a reply, told apart from what the reply itself says.
//!
//! Three shapes are recognised. `>` quoting, anywhere in the body (an answer interleaved with
//! quotes keeps every line of its own). An attribution line, "On <date>, <name> wrote:" as
//! Gmail and Apple Mail write it (also wrapped over two lines, and the common German, French,
//! Spanish and Italian forms), followed by quoted lines — or, when it holds a date or an
//! address, by the earlier message unmarked (an HTML reply read as text), to the end. And the Outlook block: an
//! "-----Original Message-----" line, or a header block — a `From:` line with a `Sent:` or
//! `Date:` line and a `To:` or `Subject:` line right below it, often after a line of
//! underscores — which starts the earlier message and runs to the end of the body. A forwarded
//! message has the same header block: it counts as quoted here, and the reader decides whether
//! the original is elsewhere (see memory's mail ingest).

/// A body split into the reply's own text and the quoted text it carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Split {
    pub(crate) own: String,
    pub(crate) quoted: String,
}

const SEPARATORS: &[&str] = &[
    "original message",
    "ursprüngliche nachricht",
    "message d'origine",
    "mensaje original",
    "messaggio originale",
    "oorspronkelijk bericht",
    "original meddelande",
];

/// The verbs of an attribution line, which ends in a colon (`… schrieb Jürgen <j@x.de>:`).
const ATTRIBUTION_VERBS: &[&str] =
    &["wrote", "writes", "schrieb", "a écrit", "escribió", "scrisse", "skrev", "schreef"];
const ATTRIBUTION_STARTS: &[&str] = &["on ", "am ", "le ", "el ", "il ", "op ", "den ", "em "];

fn is_quoted(line: &str) -> bool {
    line.trim_start().starts_with('>')
}

/// `-----Original Message-----`, `----- Original Message -----` and their translations.
fn is_separator(line: &str) -> bool {
    let t = line.trim();
    if !t.starts_with("--") {
        return false;
    }
    let inner = t.trim_matches(|c: char| c == '-' || c.is_whitespace()).to_lowercase();
    SEPARATORS.contains(&inner.as_str())
}

fn field<'a>(line: &'a str, names: &[&str]) -> Option<&'a str> {
    let t = line.trim_start().trim_start_matches('*');
    let (name, rest) = t.split_once(':')?;
    let name = name.trim().trim_end_matches('*').to_lowercase();
    names.contains(&name.as_str()).then_some(rest)
}

/// An Outlook header block opening at `lines[i]`: `From:` there, and within the next four lines
/// a `Sent:`/`Date:` line and a `To:`/`Subject:` line.
fn is_header_block(lines: &[&str], i: usize) -> bool {
    if field(lines[i], &["from", "von", "de", "da", "van", "från"]).is_none() {
        return false;
    }
    let next = &lines[i + 1..lines.len().min(i + 6)];
    let dated =
        next.iter().any(|l| field(l, &["sent", "date", "gesendet", "datum", "envoyé", "enviado", "inviato"]).is_some());
    let addressed = next
        .iter()
        .any(|l| field(l, &["to", "subject", "an", "betreff", "à", "objet", "para", "asunto", "oggetto"]).is_some());
    dated && addressed
}

/// How many lines the attribution at `lines[i]` takes (1 or 2, the second when it wraps);
/// 0 when there is none.
fn attribution(lines: &[&str], i: usize) -> usize {
    let ends = |l: &str| {
        let l = l.trim_end().to_lowercase();
        l.ends_with(':') && ATTRIBUTION_VERBS.iter().any(|v| l.contains(v))
    };
    let t = lines[i].trim_start().to_lowercase();
    if !ATTRIBUTION_STARTS.iter().any(|s| t.starts_with(s)) {
        return 0;
    }
    if ends(lines[i]) {
        1
    } else if lines.get(i + 1).is_some_and(|n| ends(n) && n.len() < 80) {
        2
    } else {
        0
    }
}

/// The next line at or after `i` that is not blank.
fn next_text(lines: &[&str], i: usize) -> Option<usize> {
    (i..lines.len()).find(|&j| !lines[j].trim().is_empty())
}

/// Splits `body` into the reply's own text and what it quotes.
pub(crate) fn split(body: &str) -> Split {
    let lines: Vec<&str> = body.lines().collect();
    // Where the quoted tail starts: the earliest Outlook block or separator.
    let mut tail = lines.len();
    for i in 0..lines.len() {
        // An attribution with a date or an address in it and no `>` lines after it: the quoted
        // message follows unmarked (an HTML reply read as text), to the end.
        let n = attribution(&lines, i);
        let unmarked = n > 0
            && lines[i..i + n].iter().any(|l| l.contains('@') || l.chars().any(|c| c.is_ascii_digit()))
            && next_text(&lines, i + n).is_some_and(|j| !is_quoted(lines[j]));
        if unmarked {
            tail = i;
            break;
        }
        if is_separator(lines[i]) || is_header_block(&lines, i) {
            let underscores = i > 0 && {
                let p = lines[i - 1].trim();
                p.len() >= 8 && p.chars().all(|c| c == '_')
            };
            tail = if underscores { i - 1 } else { i };
            break;
        }
    }
    let mut own: Vec<&str> = Vec::new();
    let mut quoted: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < tail {
        let n = attribution(&lines, i);
        if n > 0 && next_text(&lines, i + n).is_some_and(|j| j >= tail || is_quoted(lines[j])) {
            quoted.extend(&lines[i..i + n]);
            i += n;
            continue;
        }
        if is_quoted(lines[i]) {
            quoted.push(lines[i]);
        } else {
            own.push(lines[i]);
        }
        i += 1;
    }
    quoted.extend(&lines[tail..]);
    Split { own: own.join("\n").trim().to_string(), quoted: quoted.join("\n").trim().to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gmail_and_interleaved_quotes() {
        let gmail = "Friday works.\n\nOn Mon, Jan 1, 2024 at 10:00 AM Alice Smith <alice@x.org>\nwrote:\n\n> Can we meet?\n> Thanks\n";
        let s = split(gmail);
        assert_eq!(s.own, "Friday works.");
        assert!(s.quoted.starts_with("On Mon") && s.quoted.ends_with("> Thanks"), "{s:?}");
        let inline = "Alice wrote:\n> first point\nAgreed.\n> second point\nNo, later.";
        let s = split(inline);
        assert_eq!(s.own, "Alice wrote:\nAgreed.\nNo, later.", "an attribution with text after it is kept");
        assert_eq!(s.quoted, "> first point\n> second point");
        let german = "Passt.\n\nAm 01.02.2024 um 10:00 schrieb Jürgen Weiß <j@x.de>:\n> Wann?";
        assert_eq!(split(german).own, "Passt.");
        let unmarked = "Sounds good.\n\nOn Tue, 2 Jan 2024 at 09:00, Bo <bo@x.org> wrote:\nShall we meet at ten?\nBo";
        let s = split(unmarked);
        assert_eq!(s.own, "Sounds good.");
        assert!(s.quoted.ends_with("Shall we meet at ten?\nBo"), "{s:?}");
    }

    #[test]
    fn outlook_blocks_end_the_reply() {
        let outlook = "We agree with the proposal.\n\nBR, Ann\n\n-----Original Message-----\nFrom: Bo <bo@x.org>\nSent: Monday\nTo: list\nSubject: RE: CR 123\n\nThe timer is restarted on reselection.\n";
        let s = split(outlook);
        assert_eq!(s.own, "We agree with the proposal.\n\nBR, Ann");
        assert!(s.quoted.contains("The timer is restarted"), "{s:?}");
        let bare = "Fine by me.\n________________________________\nFrom: Bo Chen <bo@x.org>\nSent: Tuesday, 2 January 2024 09:00\nTo: Ann\nSubject: plans\n\nShall we?";
        let s = split(bare);
        assert_eq!(s.own, "Fine by me.");
        assert!(s.quoted.starts_with("____") && s.quoted.ends_with("Shall we?"));
        let plain = "From: the garden\nwe took three lettuces.\nTo: do next week";
        assert_eq!(split(plain).own, plain, "header-like words without the block shape are text");
    }
}
