//! E-mail: `.eml` and Maildir files (one message) and mbox mailboxes (many, see `mbox`) →
//! [`MailMessage`]s, and [`Links`], the threading headers of a whole run read up front.
//!
//! Dates: the message's own `Date:` in any form `when` reads (RFC 2822, `asctime` as Mailman
//! writes it), else the mbox envelope date; only a message with neither takes the file's time,
//! and that is reported (`dated` says which). Quoted lines, and the "On … wrote:" line that
//! introduces them, are dropped from the body: the quoted text is stored with the message it
//! came from.
//!
//! `Links` lets a reader root threads at their first message whatever order messages arrive
//! in: for every message of the run, where to walk up (its first References entry, else its
//! In-Reply-To), and the earliest message of each normalised subject (for a `Re:` with
//! neither header).

use std::collections::HashMap;
use std::path::Path;

use mail_parser::{Address, HeaderValue, MessageParser};
use sha2::{Digest, Sha256};

use super::report::Skips;
use super::{detect, mbox, when};
use crate::error::FormatError;

/// One e-mail message: its threading headers, people, time and body text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailMessage {
    /// Its Message-ID; a message without one gets an id made from the file's path and its place.
    pub message_id: String,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    pub subject: String,
    /// Whether the subject has a reply or forward prefix.
    pub is_reply: bool,
    /// (name, lower-case address); the name may be empty.
    pub from: Option<(String, String)>,
    /// To and Cc, as `from`.
    pub to: Vec<(String, String)>,
    pub timestamp_ms: i64,
    /// Whether `timestamp_ms` came from the message (its `Date:` or envelope), not the file.
    pub dated: bool,
    pub body: String,
}

fn id_list(v: &HeaderValue<'_>) -> Vec<String> {
    v.as_text_list()
        .map(|l| l.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default()
}

fn addresses(a: Option<&Address<'_>>) -> Vec<(String, String)> {
    a.map(|a| {
        a.iter()
            .filter_map(|x| {
                let email = x.address()?.trim().to_ascii_lowercase();
                Some((x.name().unwrap_or("").trim().to_string(), email))
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Lowercased subject without reply/forward prefixes and mailing-list tags (`[Python-Dev] Re:`),
/// and whether it had a reply or forward prefix.
pub fn normalize_subject(s: &str) -> (String, bool) {
    let mut rest = s.trim();
    let mut reply = false;
    loop {
        let lower = rest.to_ascii_lowercase();
        let cut = ["re:", "fwd:", "fw:", "aw:", "sv:", "re :"].iter().find(|p| lower.starts_with(**p)).map(|p| p.len());
        if let Some(n) = cut {
            reply = true;
            rest = rest[n..].trim_start();
        } else if let Some(tag_end) = rest.strip_prefix('[').and_then(|r| r.find(']')) {
            rest = rest[tag_end + 2..].trim_start();
        } else {
            break;
        }
    }
    (rest.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase(), reply)
}

/// Drops quoted lines and the "On … wrote:" line that introduces them: the quoted text
/// is already stored with the message it came from.
fn strip_quotes(body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with('>') {
            continue;
        }
        let next_quoted = lines.get(i + 1).is_some_and(|n| n.trim_start().starts_with('>'));
        if next_quoted && t.ends_with("wrote:") {
            continue;
        }
        out.push(*l);
    }
    out.join("\n").trim().to_string()
}

/// The message's own date: its `Date:` header read by `when`, else mail-parser's reading of it.
fn own_date(msg: &mail_parser::Message<'_>) -> Option<i64> {
    let parsed = msg.header_raw("Date").and_then(when::mail_date);
    parsed.or_else(|| msg.date().filter(|d| d.is_valid() && d.year >= 1971).map(|d| d.to_timestamp() * 1000))
}

fn parse_one(raw: &[u8], envelope_ms: Option<i64>, fallback_ts: i64, fallback_id: String) -> Option<MailMessage> {
    let raw = mbox::restore_addresses(raw);
    let msg = MessageParser::default().parse(raw.as_ref())?;
    let subject = msg.subject().unwrap_or("").trim().to_string();
    let (_, is_reply) = normalize_subject(&subject);
    let body = msg.body_text(0).map(|b| strip_quotes(&b)).unwrap_or_default();
    let mut to = addresses(msg.to());
    to.extend(addresses(msg.cc()));
    let date = own_date(&msg).or(envelope_ms);
    Some(MailMessage {
        message_id: msg.message_id().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).unwrap_or(fallback_id),
        in_reply_to: id_list(msg.in_reply_to()),
        references: id_list(msg.references()),
        subject,
        is_reply,
        from: addresses(msg.from()).into_iter().next(),
        to,
        timestamp_ms: date.unwrap_or(fallback_ts),
        dated: date.is_some(),
        body,
    })
}

fn is_mbox(bytes: &[u8]) -> bool {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    detect::is_mbox_separator(String::from_utf8_lossy(first).trim_end())
}

/// Parses an `.eml` or Maildir file (one message) or an mbox (many). A message with no date
/// of its own is counted in `skips` (it keeps the file's time).
pub(crate) fn parse_file(
    bytes: &[u8],
    path: &Path,
    mtime_ms: i64,
    skips: &mut Skips,
) -> Result<Vec<MailMessage>, FormatError> {
    let path_hash = hex::encode(Sha256::digest(path.to_string_lossy().as_bytes()));
    let synthetic = |i: usize| format!("{}#{i}", &path_hash[..16]);
    if is_mbox(bytes) {
        let mut out = Vec::new();
        for (i, m) in mbox::split(bytes).into_iter().enumerate() {
            match parse_one(&m.bytes, m.envelope_ms, mtime_ms, synthetic(i)) {
                Some(msg) => {
                    if !msg.dated {
                        skips.message(NO_DATE, path, &(i + 1).to_string());
                    }
                    out.push(msg);
                }
                None => skips.message("not a parsable e-mail message", path, &(i + 1).to_string()),
            }
        }
        return Ok(out);
    }
    let msg = parse_one(bytes, None, mtime_ms, synthetic(0))
        .ok_or_else(|| FormatError::malformed("not an e-mail message"))?;
    if msg.from.is_none() && msg.subject.is_empty() && msg.references.is_empty() {
        return Err(FormatError::malformed("no e-mail headers found"));
    }
    if !msg.dated {
        skips.message(NO_DATE, path, "1");
    }
    Ok(vec![msg])
}

const NO_DATE: &str = "no date in the message (the file's time is used)";

/// The links of every message of one ingest, read before any is written, and the earliest
/// message of each normalised subject.
#[derive(Debug, Default)]
pub struct Links {
    /// Message-ID → where to walk up: its first References entry, else its In-Reply-To id.
    ups: HashMap<String, Option<String>>,
    subjects: HashMap<String, (i64, String)>,
}

impl Links {
    /// Reads the headers of every message in `paths`; files that cannot be read are left to
    /// the main pass to report.
    pub fn scan<'p>(paths: impl Iterator<Item = &'p Path>) -> Links {
        let mut links = Links::default();
        for path in paths {
            let Ok(bytes) = std::fs::read(path) else { continue };
            if is_mbox(&bytes) {
                for m in mbox::split(&bytes) {
                    links.add(&m.bytes, m.envelope_ms);
                }
            } else {
                links.add(&bytes, None);
            }
        }
        links
    }

    /// Where to walk up from the message `id`: its first References entry, else its
    /// In-Reply-To id; None for a message of this run without either, or one not in this run.
    pub fn up(&self, id: &str) -> Option<&str> {
        self.ups.get(id).and_then(Option::as_deref)
    }

    /// The earliest message of this run (by date, its id) with the normalised `subject` that
    /// is not itself a reply.
    pub fn first_with_subject(&self, subject: &str) -> Option<&str> {
        self.subjects.get(subject).map(|(_, id)| id.as_str())
    }

    fn add(&mut self, raw: &[u8], envelope_ms: Option<i64>) {
        let Some(msg) = MessageParser::default().parse_headers(raw) else { return };
        let Some(id) = msg.message_id().map(str::trim).filter(|s| !s.is_empty()) else { return };
        let refs = id_list(msg.references());
        let up = refs.into_iter().next().or_else(|| id_list(msg.in_reply_to()).into_iter().next());
        let (subject, reply) = normalize_subject(msg.subject().unwrap_or(""));
        if !subject.is_empty() && !reply && up.is_none() {
            let ts = own_date(&msg).or(envelope_ms).unwrap_or(i64::MAX);
            let e = self.subjects.entry(subject).or_insert((ts, id.to_string()));
            if ts < e.0 {
                *e = (ts, id.to_string());
            }
        }
        self.ups.insert(id.to_string(), up);
    }
}

#[cfg(test)]
mod tests {
    use super::normalize_subject;

    #[test]
    fn subjects_lose_reply_prefixes_and_list_tags() {
        assert_eq!(normalize_subject("RE: Quarterly  report"), ("quarterly report".to_string(), true));
        assert_eq!(normalize_subject("[Garden-dev] Re: [Garden-dev] Compost"), ("compost".to_string(), true));
        assert_eq!(normalize_subject("[Garden-dev] compost thermometer"), ("compost thermometer".to_string(), false));
        assert_eq!(normalize_subject("Fwd: Re: plans"), ("plans".to_string(), true));
    }
}
