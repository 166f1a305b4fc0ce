//! E-mail messages (what `openhuman_formats` reads from `.eml`, Maildir and mbox files) →
//! email chunks, one source per thread. The stored text's `Date:` line is written only from the
//! message's own date (`MailMessage::dated`).
//!
//! Threads are rooted at their first message. Before anything is written, `Links::scan` reads
//! the Message-ID, References and In-Reply-To of every message of the ingest; a message's
//! root is found by walking up: the first References entry, else the In-Reply-To parent, then
//! that message's own links, until a message that has none (or one already stored, whose
//! thread is joined). A reply (`Re:`) with neither header joins the thread of the earliest
//! message with the same normalised subject. So an Outlook chain linked only by In-Reply-To
//! is one thread whatever order its messages arrive in. `email_messages` remembers
//! Message-ID → thread so replies in later files and later ingests join the same thread.
//!
//! Quoted text (what `openhuman_formats` splits off as `MailMessage::quoted`) is not stored
//! again: a reply's chunks hold what it says itself, and the thread links it to the message
//! it answers (also named in its chunks' `in_reply_to`, the Message-ID that is the original's
//! `source_ref`). Only when that original is neither in this ingest nor in the store (its parent
//! by In-Reply-To or the last References entry is unknown; for a reply without those headers,
//! when it started a thread of its own) is the quoted part kept, below the reply's text, and
//! then once per ingest: a second reply quoting the same absent text stores only its own.
//!
//! A message filed again under another Message-ID (the same sender, date, subject and own
//! text) is stored once, from the first file that holds it, and the others are counted as
//! copies: see `Threads::is_copy`.
//!
//! Naming: a thread's source is named "Subject — Sender", the subject without reply prefixes
//! and the name (else the address) of the thread's first sender; every chunk of a message is
//! titled the same way with that message's subject and sender, so a hit reads as a mail
//! client's list does. A message whose headers say a machine sent it carries `automated` in
//! its metadata, which keeps its sender out of people.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use openhuman_formats::{Links, MailMessage, Skips, normalize_subject};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value, json};

use crate::chunker::{Format, chunk_text};
use crate::store::{self, NewChunk, NewSource};
use crate::types::SourceKind;
use crate::util::{mail_title, ms_to_rfc3339};

/// Thread resolution with the database, the links of this ingest and the messages seen
/// earlier in this batch.
pub(crate) struct Threads<'a> {
    conn: &'a Connection,
    links: &'a Links,
    local: HashMap<String, String>,
    subjects: HashMap<String, String>,
    /// Quoted texts kept this ingest (their lines without quote marks, hashed).
    quotes_kept: HashSet<String>,
    /// Messages of this batch by sender, date, subject and own text (hashed), to tell copies.
    messages_seen: HashSet<String>,
}

impl<'a> Threads<'a> {
    pub fn new(conn: &'a Connection, links: &'a Links) -> Self {
        Threads {
            conn,
            links,
            local: HashMap::new(),
            subjects: HashMap::new(),
            quotes_kept: HashSet::new(),
            messages_seen: HashSet::new(),
        }
    }

    /// Whether `m` is another copy of a message stored already or met earlier in this batch,
    /// filed under another Message-ID: the same sender, date, subject and own text. Mail
    /// exports that file one message in several folders give each copy an id of its own (the
    /// Enron corpus: `inbox/`, `all_documents/`, `discussion_threads/`), and a person would read
    /// them as one message, not as three hits. A copy under the same Message-ID is the same
    /// chunk and is never stored twice anyway.
    fn is_copy(&mut self, m: &MailMessage, path: &Path, origin: &str) -> rusqlite::Result<bool> {
        if !m.dated || m.body.trim().is_empty() {
            return Ok(false);
        }
        let from = m.from.as_ref().map(|f| f.1.as_str());
        let key = format!("{}\n{}\n{}\n{}", from.unwrap_or(""), m.timestamp_ms, m.subject, m.body);
        if !self.messages_seen.insert(crate::util::sha256_hex(key.as_bytes())) {
            return Ok(true);
        }
        let title = mail_title(&m.subject, sender_name(m.from.as_ref()));
        // A copy counts only while the file it was stored from is there: a deleted file's
        // chunks go at the end of this ingest, and the message must then come from this file.
        let stored: Vec<String> = self
            .conn
            .prepare_cached(
                "SELECT content, origin FROM chunks WHERE source_kind = 'email' AND timestamp_ms = ?1
                    AND seq_in_source = 0 AND owner IS ?2 AND title IS ?3 AND source_ref <> ?4",
            )?
            .query_map(params![m.timestamp_ms, from, title, m.message_id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?
            .filter_map(Result::ok)
            .filter(|(_, origin)| origin.strip_prefix("file:").is_none_or(|p| Path::new(p).is_file()))
            .map(|(content, _)| content)
            .collect();
        if stored.is_empty() {
            return Ok(false);
        }
        let first = message_chunks(m, &m.body, "", path, origin).into_iter().next().map(|c| c.content);
        Ok(first.is_some_and(|f| stored.contains(&f)))
    }

    /// What of `m` to store as its body, with `thread` its resolved thread: its own text, and
    /// its quoted text too when the original is not to be had (see the module documentation).
    fn body(&mut self, m: &MailMessage, thread: &str) -> rusqlite::Result<String> {
        if m.quoted.is_empty() {
            return Ok(m.body.clone());
        }
        let parent = m.in_reply_to.first().or(m.references.last());
        let original_here = match parent {
            Some(p) => self.links.contains(p) || self.known(p)?.is_some(),
            None => thread != format!("thread:{}", m.message_id),
        };
        let normalised: String = m
            .quoted
            .lines()
            .map(|l| l.trim_start_matches(|c: char| c == '>' || c.is_whitespace()).trim_end())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        if original_here || !self.quotes_kept.insert(crate::util::sha256_hex(normalised.as_bytes())) {
            return Ok(m.body.clone());
        }
        Ok(if m.body.is_empty() { m.quoted.clone() } else { format!("{}\n\n{}", m.body, m.quoted) })
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
            match self.links.up(&cur).map(str::to_string) {
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
            match self.links.first_with_subject(&subject).filter(|id| *id != m.message_id) {
                Some(first) => self.thread_from(first)?,
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

fn sender_name(from: Option<&(String, String)>) -> &str {
    from.map_or("", |(name, addr)| if name.is_empty() { addr } else { name })
}

/// Chunks of one message in thread `thread`, its stored text `body`; the header block opens
/// the first chunk and "Subject — Sender" is every chunk's title.
pub(crate) fn message_chunks(m: &MailMessage, body: &str, thread: &str, path: &Path, origin: &str) -> Vec<NewChunk> {
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
    let mut pieces: Vec<String> = chunk_text(body, Format::Plain).into_iter().map(|c| c.content).collect();
    let title = mail_title(&m.subject, sender_name(m.from.as_ref()));
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
            if m.automated {
                metadata.insert("automated".into(), json!(true));
            }
            // The message it answers (whose chunks' `source_ref` is that id): where the text it
            // quotes lives.
            if let Some(parent) = m.in_reply_to.first().or(m.references.last()) {
                metadata.insert("in_reply_to".into(), json!(parent));
            }
            NewChunk {
                kind: SourceKind::Email,
                source_id: thread.to_string(),
                source_ref: m.message_id.clone(),
                origin: origin.to_string(),
                owner: m.from.as_ref().map(|f| f.1.clone()),
                provenance: "ingest".into(),
                timestamp_ms: m.timestamp_ms,
                seq: i as i64,
                title: Some(title.clone()),
                content,
                metadata,
                tags: Vec::new(),
                project: None,
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
    // The thread's first sender: kept once known, so later replies do not rename the thread.
    if !meta.contains_key("started_by")
        && let Some(from) =
            msgs.iter().filter(|m| m.from.is_some()).min_by_key(|m| m.timestamp_ms).and_then(|m| m.from.as_ref())
    {
        meta.insert("started_by".into(), json!(sender_name(Some(from))));
    }
    meta.insert("participants".into(), Value::Array(people.clone()));
    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let display = mail_title(&text("subject"), &text("started_by"));
    Ok(NewSource { source_id: thread.to_string(), kind: SourceKind::Email, display_name: display, metadata: meta })
}

/// The subject as people wrote it, minus reply prefixes and mailing-list tags (`[Garden-dev]`).
fn normalize_subject_display(s: &str) -> String {
    let mut rest = s.trim();
    loop {
        if let Some(i) = rest.find(':').filter(|&i| {
            i <= 4 && ["re", "fwd", "fw", "aw", "sv"].contains(&rest[..i].trim().to_ascii_lowercase().as_str())
        }) {
            rest = rest[i + 1..].trim_start();
        } else if let Some(end) = rest.strip_prefix('[').and_then(|r| r.find(']')).filter(|_| rest.len() > 2) {
            let after = rest[end + 2..].trim_start();
            if after.is_empty() {
                break;
            }
            rest = after;
        } else {
            break;
        }
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
    skips: &mut Skips,
) -> rusqlite::Result<(Vec<NewChunk>, Vec<NewSource>)> {
    let mut chunks = Vec::new();
    // Threads in first-seen order, found by name through `slot` (a mailbox of 10,000 messages
    // may hold as many threads: a linear search here was quadratic in the file).
    let mut by_thread: Vec<(String, Vec<&MailMessage>)> = Vec::new();
    let mut slot: HashMap<String, usize> = HashMap::new();
    for m in msgs {
        if threads.is_copy(m, path, origin)? {
            skips.message(
                "a copy of a message stored from another file (same sender, date and text)",
                path,
                &m.message_id,
            );
            continue;
        }
        let t = threads.resolve(m)?;
        let body = threads.body(m, &t)?;
        chunks.extend(message_chunks(m, &body, &t, path, origin));
        match slot.get(&t) {
            Some(&i) => by_thread[i].1.push(m),
            None => {
                slot.insert(t.clone(), by_thread.len());
                by_thread.push((t, vec![m]));
            }
        }
    }
    let mut sources = Vec::new();
    for (t, ms) in &by_thread {
        sources.push(thread_source(conn, t, ms)?);
    }
    Ok((chunks, sources))
}
