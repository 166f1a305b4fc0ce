//! Who a chunk says wrote and received its messages: the header block of a mail's first chunk
//! (`From:`, `To:`, as `mail` writes them, `Cc:` folded into `To:`) and the sender of each
//! `[time] sender: text` line of a chat chunk. Also what marks a sender as automated: its
//! name or address (`is_bot`), the headers of its message (`automated` in a mail chunk's
//! metadata, see memory's mail ingest), and each message's opening (`opening`), from which
//! `index` tells a templated sender. A chat sender whose export gave a handle (`handles` in
//! the chunk's metadata) carries it, for `index` to link `handle:@…` to the person.

use serde_json::{Map, Value};

use super::words::{BOT_LOCAL_PARTS, BOT_NAME_WORDS, is_first_name};
use crate::types::SourceKind;

/// One chunk as extraction reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkView<'a> {
    pub kind: SourceKind,
    pub title: Option<&'a str>,
    pub content: &'a str,
    pub metadata: &'a Map<String, Value>,
    /// The chunk's own tags (front matter, `#tags`).
    pub tags: &'a [String],
}

/// Someone a chunk shows writing or receiving: a name (maybe empty) and an address (mail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Party {
    pub name: String,
    pub address: Option<String>,
    pub sent: u32,
    pub received: u32,
    /// The openings of the messages sent, hashed (see `opening`).
    pub openings: Vec<u64>,
    /// The message's headers say a machine sent it.
    pub automated: bool,
    /// The sender's chat handle, lowercase without `@`, when the export gave one.
    pub handle: Option<String>,
}

/// Chat exports whose senders are roles (`user`, `assistant`), not people.
const ROLE_PLATFORMS: &[&str] = &["chatgpt", "claude"];

/// The parties of `c` and its prose lines: the text without header lines and sender prefixes.
pub(crate) fn read<'a>(c: &ChunkView<'a>) -> (Vec<Party>, Vec<&'a str>) {
    let mut parties: Vec<Party> = Vec::new();
    let mut prose: Vec<&'a str> = Vec::new();
    match c.kind {
        SourceKind::Email => {
            let mut lines = c.content.lines().peekable();
            let headed = lines.peek().is_some_and(|l| l.starts_with("Subject: ") || l.starts_with("From: "));
            let mut from = None;
            if headed {
                for line in lines.by_ref() {
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some(s) = line.strip_prefix("Subject: ") {
                        prose.push(s);
                    } else if let Some(v) = line.strip_prefix("From: ") {
                        from = addresses(v).into_iter().next();
                    } else if let Some(v) = line.strip_prefix("To: ").or_else(|| line.strip_prefix("Cc: ")) {
                        for (name, addr) in addresses(v) {
                            add(&mut parties, name, addr, 0, None);
                        }
                    }
                }
            }
            let body: Vec<&'a str> = lines.collect();
            if let Some((name, addr)) = from {
                let first = body.iter().find(|l| !l.trim().is_empty()).copied().unwrap_or("");
                add(&mut parties, name, addr, 1, Some(opening(first)));
                if c.metadata.get("automated").and_then(Value::as_bool) == Some(true)
                    && let Some(p) = parties.iter_mut().find(|p| p.sent > 0)
                {
                    p.automated = true;
                }
            }
            prose.extend(body);
        }
        SourceKind::Chat => {
            let platform = c.metadata.get("platform").and_then(Value::as_str).unwrap_or("");
            let roles = ROLE_PLATFORMS.contains(&platform);
            let speakers: Vec<&str> = c
                .metadata
                .get("participants")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            // Each message with its continuation lines, for its opening.
            let mut messages: Vec<(&str, String)> = Vec::new();
            for line in c.content.lines() {
                match crate::util::chat_line(line, &speakers) {
                    Some((who, text)) => {
                        messages.push((who, text.to_string()));
                        prose.push(text);
                    }
                    None => {
                        if let Some((_, m)) = messages.last_mut() {
                            m.push('\n');
                            m.push_str(line);
                        }
                        prose.push(line);
                    }
                }
            }
            let handles = c.metadata.get("handles").and_then(Value::as_object);
            for (who, text) in messages.iter().filter(|_| !roles) {
                add(&mut parties, who.to_string(), None, 1, Some(opening(text)));
                let handle = handles.and_then(|h| h.get(*who)).and_then(Value::as_str);
                if let (Some(h), Some(p)) = (handle, parties.iter_mut().find(|p| p.name == *who)) {
                    p.handle = Some(h.to_string());
                }
            }
        }
        _ => {
            prose.extend(c.title);
            prose.extend(c.content.lines());
        }
    }
    (parties, prose)
}

fn add(parties: &mut Vec<Party>, name: String, address: Option<String>, sent: u32, opening: Option<u64>) {
    let pos = parties.iter().position(|p| p.name == name && p.address == address);
    let p = match pos {
        Some(i) => &mut parties[i],
        None => {
            parties.push(Party {
                name,
                address,
                sent: 0,
                received: 0,
                openings: Vec::new(),
                automated: false,
                handle: None,
            });
            parties.last_mut().expect("just pushed")
        }
    };
    if sent > 0 {
        p.sent += sent;
    } else {
        p.received += 1;
    }
    p.openings.extend(opening);
}

/// `Name <addr>, addr, Last, First <addr>` → (name, address) pairs; a name that is itself an
/// address, or quotes around it, are dropped; `Last, First` reads as `First Last`.
pub(crate) fn addresses(v: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = v.trim();
    while !rest.is_empty() {
        let lt = rest.find('<');
        let comma = rest.find(',');
        let bare = match (lt, comma) {
            (_, Some(c))
                if !rest[..c].contains('<') && rest[..c].trim().contains('@') && !rest[..c].trim().contains(' ') =>
            {
                Some(c)
            }
            (None, _) => Some(rest.len()),
            _ => None,
        };
        if let Some(end) = bare {
            let a = rest[..end].trim();
            if let Some(addr) = super::email(a) {
                out.push((String::new(), Some(addr)));
            }
            rest = rest[end..].trim_start_matches(',').trim_start();
            continue;
        }
        let lt = lt.unwrap_or(0);
        let Some(gt) = rest[lt..].find('>').map(|g| g + lt) else { break };
        let name = clean_name(&rest[..lt]);
        let addr = super::email(rest[lt + 1..gt].trim());
        if addr.is_some() || !name.is_empty() {
            out.push((name, addr));
        }
        rest = rest[gt + 1..].trim_start().trim_start_matches(',').trim_start();
    }
    out
}

fn clean_name(raw: &str) -> String {
    let n = raw.trim().trim_matches(['"', '\'']).trim();
    if n.contains('@') || !n.chars().any(char::is_alphabetic) {
        return String::new();
    }
    match n.split_once(',') {
        Some((last, first)) if !first.trim().is_empty() && !last.contains(' ') => {
            format!("{} {}", first.trim(), last.trim())
        }
        _ => n.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// Whether a sender's name or address says it is automated: a name word such as `bot`,
/// `daemon` or `noreply`, a name word ending in `bot` (`dependabot`, `renovate[bot]`), or an
/// address whose local part is `noreply`, `notifications`, `jira`, a list manager's (`mailman`)
/// or a list's own (`…-request`, `…-owner`, `…-bounces`, `owner-…`), or whose domain is a
/// no-reply or bounce domain.
pub(crate) fn is_bot(name: &str, address: Option<&str>) -> bool {
    let lower = name.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric() && c != '-').filter(|w| !w.is_empty()).collect();
    // `Anna Talbot` is a person: a `…bot` surname after a given name does not count.
    let human = words.len() >= 2 && is_first_name(words[0]);
    let by_name = words.iter().any(|w| BOT_NAME_WORDS.contains(w) || (!human && w.len() >= 4 && w.ends_with("bot")));
    let by_address = address.and_then(|a| a.split_once('@')).is_some_and(|(local, domain)| {
        let local = local.split('+').next().unwrap_or(local);
        BOT_LOCAL_PARTS.contains(&local)
            || local.ends_with("-bot")
            // A mailing list's own addresses: `python-dev-request@`, `owner-linux-kernel@`.
            || ["-request", "-owner", "-bounces"].iter().any(|s| local.ends_with(s))
            || local.starts_with("owner-")
            || local.ends_with("bot") && local.len() >= 6
            || domain.split('.').any(|l| ["noreply", "no-reply", "bounces", "bounce"].contains(&l))
    });
    by_name || by_address
}

/// A message's opening with numbers, links and case taken out: its first eight words, hashed.
/// A sender whose many messages share a few openings sends templates.
pub(crate) fn opening(text: &str) -> u64 {
    let words = text
        .split_whitespace()
        .filter(|w| !w.contains("://"))
        .map(|w| w.chars().filter(|c| c.is_alphabetic()).flat_map(char::to_lowercase).collect::<String>())
        .filter(|w| !w.is_empty())
        .take(8);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.bytes().chain([b' ']) {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    // SQLite integers are signed: keep the hash in range.
    h >> 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str, addr: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), addr.map(str::to_string))
    }

    #[test]
    fn header_addresses() {
        assert_eq!(
            addresses("Ada Lovelace <Ada@Example.com>, bob@example.org, Smith, Jo <jo@x.io>, \"Q. Public\" <q@x.io>"),
            [
                pair("Ada Lovelace", Some("ada@example.com")),
                pair("", Some("bob@example.org")),
                pair("Jo Smith", Some("jo@x.io")),
                pair("Q. Public", Some("q@x.io"))
            ]
        );
        assert_eq!(addresses("\"ann@x.io\" <ann@x.io>"), [pair("", Some("ann@x.io"))]);
    }

    #[test]
    fn automated_senders() {
        let bots = [
            ("dependabot[bot]", None),
            ("GitHub", Some("notifications@github.com")),
            ("Jira", Some("jira@acme.atlassian.net")),
            ("", Some("no-reply@accounts.example.com")),
            ("Build Robot", None),
            ("Mail Delivery Subsystem", Some("mailer-daemon@example.com")),
            ("renovatebot", None),
            ("Alerts", Some("alerts+team@bounces.example.com")),
            ("", Some("python-dev-request@python.org")),
            ("Mailman", Some("mailman@lists.example.org")),
            ("", Some("owner-linux-kernel@vger.kernel.org")),
        ];
        for (name, addr) in bots {
            assert!(is_bot(name, addr), "{name} {addr:?}");
        }
        for (name, addr) in
            [("Anna Talbot", Some("anna@example.com")), ("Robert Jones", None), ("Ada", Some("ada@x.io"))]
        {
            assert!(!is_bot(name, addr), "{name} {addr:?}");
        }
    }

    #[test]
    fn mail_and_chat_parties() {
        let meta = Map::new();
        let mail = "Subject: Plans\nFrom: Ada Lovelace <ada@x.io>\nTo: Bob <bob@x.io>, carol@x.io\nDate: 2024-01-01\n\nHi Bob,\nsee you";
        let view =
            ChunkView { kind: SourceKind::Email, title: Some("Plans"), content: mail, metadata: &meta, tags: &[] };
        let (parties, prose) = read(&view);
        let got: Vec<(&str, Option<&str>, u32, u32)> =
            parties.iter().map(|p| (p.name.as_str(), p.address.as_deref(), p.sent, p.received)).collect();
        assert_eq!(
            got,
            [("Bob", Some("bob@x.io"), 0, 1), ("", Some("carol@x.io"), 0, 1), ("Ada Lovelace", Some("ada@x.io"), 1, 0)]
        );
        assert_eq!(prose, ["Plans", "Hi Bob,", "see you"]);

        let meta: Map<String, Value> = serde_json::from_str(r#"{"participants": ["ann", "Bo: B"]}"#).unwrap();
        let chat = "[2024-01-01 10:00] ann: hi there\n[2024-01-01 10:01] Bo: B: hello\nmore text";
        let view =
            ChunkView { kind: SourceKind::Chat, title: Some("#general"), content: chat, metadata: &meta, tags: &[] };
        let (parties, prose) = read(&view);
        let got: Vec<(&str, u32)> = parties.iter().map(|p| (p.name.as_str(), p.sent)).collect();
        assert_eq!(got, [("ann", 1), ("Bo: B", 1)]);
        assert_eq!(prose, ["hi there", "hello", "more text"]);
        assert_eq!(opening("Build 123 passed: https://ci/1"), opening("build 124 Passed"));
    }
}
