//! E-mail: `.eml` and Maildir files and mbox mailboxes (see `mbox`) → email chunks, one source
//! per thread.
//!
//! Dates: the message's own `Date:` in any form `when` reads (RFC 2822, `asctime` as Mailman
//! writes it), else the mbox envelope date; only a message with neither takes the file's time,
//! and that is reported. The stored text's `Date:` line is written only from the message's own
//! date.
//!
//! Threads are rooted at their first message. Before anything is written, `Links::scan` reads
//! the Message-ID, References and In-Reply-To of every message of the ingest; a message's
//! root is found by walking up: the first References entry, else the In-Reply-To parent, then
//! that message's own links, until a message that has none (or one already stored, whose
//! thread is joined). A reply (`Re:`) with neither header joins the thread of the earliest
//! message with the same normalised subject. So an Outlook chain linked only by In-Reply-To
//! is one thread whatever order its messages arrive in. `email_messages` remembers
//! Message-ID → thread so replies in later files and later ingests join the same thread.

use std::collections::HashMap;
use std::path::Path;

use mail_parser::{Address, HeaderValue, MessageParser};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value, json};

use super::report::Skips;
use super::{detect, mbox, when};
use crate::chunker::{Format, chunk_text};
use crate::error::MemoryError;
use crate::store::{self, NewChunk, NewSource};
use crate::types::SourceKind;
use crate::util::{ms_to_rfc3339, sha256_hex};

#[derive(Debug, Clone)]
pub(crate) struct MailMessage {
    pub message_id: String,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    pub subject: String,
    pub is_reply: bool,
    pub from: Option<(String, String)>,
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
pub(crate) fn normalize_subject(s: &str) -> (String, bool) {
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
) -> Result<Vec<MailMessage>, MemoryError> {
    let synthetic = |i: usize| format!("{}#{i}", sha256_hex(path.to_string_lossy().as_bytes())[..16].to_owned());
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
        .ok_or_else(|| MemoryError::Parse("not an e-mail message".to_string()))?;
    if msg.from.is_none() && msg.subject.is_empty() && msg.references.is_empty() {
        return Err(MemoryError::Parse("no e-mail headers found".to_string()));
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
pub(crate) struct Links {
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

/// Thread resolution with the database, the links of this ingest and the messages seen
/// earlier in this batch.
pub(crate) struct Threads<'a> {
    conn: &'a Connection,
    links: &'a Links,
    local: HashMap<String, String>,
    subjects: HashMap<String, String>,
}

impl<'a> Threads<'a> {
    pub fn new(conn: &'a Connection, links: &'a Links) -> Self {
        Threads { conn, links, local: HashMap::new(), subjects: HashMap::new() }
    }

    fn known(&self, id: &str) -> rusqlite::Result<Option<String>> {
        if let Some(t) = self.local.get(id) {
            return Ok(Some(t.clone()));
        }
        self.conn
            .prepare_cached("SELECT thread_id FROM email_messages WHERE message_id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()
    }

    fn by_subject(&self, subject: &str) -> rusqlite::Result<Option<String>> {
        if let Some(t) = self.subjects.get(subject) {
            return Ok(Some(t.clone()));
        }
        self.conn
            .prepare_cached("SELECT thread_id FROM email_messages WHERE subject_norm = ?1 LIMIT 1")?
            .query_row([subject], |r| r.get(0))
            .optional()
    }

    /// The thread of the message `start`, walking up its links: the thread of the first
    /// stored message on the way, else one named after the topmost message reached.
    fn thread_from(&self, start: &str) -> rusqlite::Result<String> {
        let mut cur = start.to_string();
        let mut seen = std::collections::HashSet::new();
        loop {
            if let Some(t) = self.known(&cur)? {
                return Ok(t);
            }
            match self.links.ups.get(&cur).cloned().flatten() {
                Some(up) if seen.insert(cur.clone()) => cur = up,
                _ => return Ok(format!("thread:{cur}")),
            }
        }
    }

    pub fn resolve(&mut self, m: &MailMessage) -> rusqlite::Result<String> {
        let (subject, _) = normalize_subject(&m.subject);
        let up = m.references.first().or(m.in_reply_to.first());
        let thread = if let Some(up) = up {
            self.thread_from(up)?
        } else if m.is_reply && !subject.is_empty() {
            match self.links.subjects.get(&subject).filter(|(_, id)| *id != m.message_id) {
                Some((_, first)) => self.thread_from(first)?,
                None => match self.by_subject(&subject)? {
                    Some(t) => t,
                    None => format!("thread:{}", m.message_id),
                },
            }
        } else {
            format!("thread:{}", m.message_id)
        };
        self.local.insert(m.message_id.clone(), thread.clone());
        if !subject.is_empty() {
            self.subjects.entry(subject.clone()).or_insert_with(|| thread.clone());
        }
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO email_messages (message_id, thread_id, subject_norm) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![m.message_id, thread, subject])?;
        Ok(thread)
    }
}

fn person(p: &(String, String)) -> String {
    if p.0.is_empty() { p.1.clone() } else { format!("{} <{}>", p.0, p.1) }
}

/// Chunks of one message in thread `thread`; the header block opens the first chunk and
/// the subject is every chunk's title.
pub(crate) fn message_chunks(m: &MailMessage, thread: &str, path: &Path, origin: &str) -> Vec<NewChunk> {
    let path_str = path.to_string_lossy().into_owned();
    let mut header = String::new();
    if !m.subject.is_empty() {
        header.push_str(&format!("Subject: {}\n", m.subject));
    }
    if let Some(f) = &m.from {
        header.push_str(&format!("From: {}\n", person(f)));
    }
    if !m.to.is_empty() {
        header.push_str(&format!("To: {}\n", m.to.iter().map(person).collect::<Vec<_>>().join(", ")));
    }
    if m.dated {
        header.push_str(&format!("Date: {}\n", ms_to_rfc3339(m.timestamp_ms)));
    }
    let header = header.trim_end().to_string();
    let mut pieces: Vec<String> = chunk_text(&m.body, Format::Plain).into_iter().map(|c| c.content).collect();
    match pieces.first_mut() {
        Some(first) => *first = format!("{header}\n\n{first}"),
        None => pieces.push(header),
    }
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, content)| {
            let mut metadata = Map::new();
            metadata.insert("thread_id".into(), json!(thread));
            metadata.insert("message_id".into(), json!(m.message_id));
            metadata.insert("subject".into(), json!(m.subject));
            metadata.insert("from".into(), json!(m.from.as_ref().map(|f| &f.1)));
            metadata.insert("to".into(), json!(m.to.iter().map(|t| &t.1).collect::<Vec<_>>()));
            metadata.insert("file_path".into(), json!(path_str));
            NewChunk {
                kind: SourceKind::Email,
                source_id: thread.to_string(),
                source_ref: m.message_id.clone(),
                origin: origin.to_string(),
                owner: m.from.as_ref().map(|f| f.1.clone()),
                provenance: "ingest".into(),
                timestamp_ms: m.timestamp_ms,
                seq: i as i64,
                title: (!m.subject.is_empty()).then(|| m.subject.clone()),
                content,
                metadata,
                tags: Vec::new(),
            }
        })
        .collect()
}

/// The thread's source row, with participants merged into what is already stored.
pub(crate) fn thread_source(conn: &Connection, thread: &str, msgs: &[&MailMessage]) -> rusqlite::Result<NewSource> {
    let mut meta = store::source_metadata(conn, thread)?.unwrap_or_default();
    let mut people: Vec<Value> = meta.get("participants").and_then(Value::as_array).cloned().unwrap_or_default();
    for m in msgs {
        for p in m.from.iter().chain(&m.to) {
            let present = people.iter().any(|x| x.get("email").and_then(Value::as_str) == Some(p.1.as_str()));
            if !present {
                people.push(json!({ "name": p.0, "email": p.1 }));
            }
        }
    }
    if !meta.contains_key("subject") {
        let subject = msgs.iter().map(|m| m.subject.as_str()).find(|s| !s.is_empty()).unwrap_or("");
        meta.insert("subject".into(), json!(normalize_subject_display(subject)));
    }
    meta.insert("participants".into(), Value::Array(people.clone()));
    let first = people.first().map(|p| {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            p.get("email").and_then(Value::as_str).unwrap_or("").to_string()
        } else {
            name.to_string()
        }
    });
    let display = first.unwrap_or_else(|| meta.get("subject").and_then(Value::as_str).unwrap_or("").to_string());
    Ok(NewSource { source_id: thread.to_string(), kind: SourceKind::Email, display_name: display, metadata: meta })
}

/// The subject as people wrote it, minus reply prefixes.
fn normalize_subject_display(s: &str) -> String {
    let mut rest = s.trim();
    while let Some(i) = rest.find(':').filter(|&i| {
        i <= 4 && ["re", "fwd", "fw", "aw", "sv"].contains(&rest[..i].trim().to_ascii_lowercase().as_str())
    }) {
        rest = rest[i + 1..].trim_start();
    }
    rest.to_string()
}

/// Messages to write for a file, grouped by thread after resolution.
pub(crate) fn build(
    conn: &Connection,
    threads: &mut Threads<'_>,
    msgs: &[MailMessage],
    path: &Path,
    origin: &str,
) -> rusqlite::Result<(Vec<NewChunk>, Vec<NewSource>)> {
    let mut chunks = Vec::new();
    let mut by_thread: Vec<(String, Vec<&MailMessage>)> = Vec::new();
    for m in msgs {
        let t = threads.resolve(m)?;
        chunks.extend(message_chunks(m, &t, path, origin));
        match by_thread.iter_mut().find(|(x, _)| *x == t) {
            Some((_, v)) => v.push(m),
            None => by_thread.push((t, vec![m])),
        }
    }
    let mut sources = Vec::new();
    for (t, ms) in &by_thread {
        sources.push(thread_source(conn, t, ms)?);
    }
    Ok((chunks, sources))
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
