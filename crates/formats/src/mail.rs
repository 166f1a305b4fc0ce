//! E-mail: `.eml` and Maildir files (one message) and mbox mailboxes (many, see `mbox`) →
//! [`MailMessage`]s, and [`Links`], the threading headers of a whole run read up front.
//!
//! Dates: the message's own `Date:` in any form `when` reads (RFC 2822, `asctime` as Mailman
//! writes it), else the mbox envelope date; only a message with neither takes the file's time,
//! and that is reported (`dated` says which). Headers and bodies are read in whatever charset
//! they were written (`mailtext`). What a reply quotes of earlier messages (`quote`) is kept
//! apart from its own text (`MailMessage::quoted`): the reader stores it only where the
//! original is not stored. `automated` says what the headers say of a machine sender.
//!
//! `Links` lets a reader root threads at their first message whatever order messages arrive
//! in: for every message of the run, where to walk up (its first References entry, else its
//! In-Reply-To), and the earliest message of each normalised subject (for a `Re:` with
//! neither header).

use std::path::Path;

use mail_parser::{Address, HeaderValue, MessageParser};
use sha2::{Digest, Sha256};

use super::report::Skips;
use super::{detect, mailtext, mbox, quote, when};
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
    /// What the message itself says, without what it quotes.
    pub body: String,
    /// The earlier messages it quotes (`>` lines, "On … wrote:" and Outlook blocks), or empty.
    pub quoted: String,
    /// Its headers say a machine sent it: `Auto-Submitted` (other than `no`), `Precedence:
    /// bulk`/`junk`/`auto_reply`, an auto-reply header, or a mailing list's own address as the
    /// sender (`List-Id` naming the sender's list, or its `-request`/`-owner`/`-bounces`).
    pub automated: bool,
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

/// The message's own date: its `Date:` header read by `when`, else mail-parser's reading of it.
fn own_date(msg: &mail_parser::Message<'_>) -> Option<i64> {
    let parsed = msg.header_raw("Date").and_then(when::mail_date);
    parsed.or_else(|| msg.date().filter(|d| d.is_valid() && d.year >= 1971).map(|d| d.to_timestamp() * 1000))
}

/// The sender's name as a mail store's export gives it beside a bare address: `X-From:
/// Phillip K Allen` (Lotus Notes exports, the Enron corpus), without an address part.
fn export_name(msg: &mail_parser::Message<'_>) -> Option<String> {
    let raw = msg.header_raw("X-From")?;
    let name = raw.split('<').next()?.trim().trim_matches(['"', '\'', ' ']);
    let plausible = !name.is_empty() && name.len() <= 60 && !name.contains(['@', '/', '\\']);
    plausible.then(|| name.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn parse_one(raw: &[u8], envelope_ms: Option<i64>, fallback_ts: i64, fallback_id: String) -> Option<MailMessage> {
    let raw = mailtext::utf8_headers(raw);
    let raw = mbox::restore_addresses(raw.as_ref());
    let msg = MessageParser::default().parse(raw.as_ref())?;
    let subject = msg.subject().unwrap_or("").trim().to_string();
    let (_, is_reply) = normalize_subject(&subject);
    let split = mailtext::body(&msg).map(|b| quote::split(&b)).unwrap_or_default();
    let mut to = addresses(msg.to());
    to.extend(addresses(msg.cc()));
    let date = own_date(&msg).or(envelope_ms);
    let from = addresses(msg.from()).into_iter().next().map(|(name, addr)| match name.is_empty() {
        true => (export_name(&msg).unwrap_or_default(), addr),
        false => (name, addr),
    });
    Some(MailMessage {
        automated: automated(&msg, from.as_ref().map(|f| f.1.as_str())),
        message_id: msg.message_id().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).unwrap_or(fallback_id),
        in_reply_to: id_list(msg.in_reply_to()),
        references: id_list(msg.references()),
        subject,
        is_reply,
        from,
        to,
        timestamp_ms: date.unwrap_or(fallback_ts),
        dated: date.is_some(),
        body: split.own,
        quoted: split.quoted,
    })
}

/// Whether the headers say a machine sent the message (see `MailMessage::automated`).
fn automated(msg: &mail_parser::Message<'_>, from: Option<&str>) -> bool {
    let text = |name: &str| msg.header_raw(name).map(|v| v.trim().to_ascii_lowercase());
    let auto_submitted = text("Auto-Submitted").is_some_and(|v| !v.is_empty() && !v.starts_with("no"));
    let precedence = text("Precedence").is_some_and(|v| ["bulk", "junk", "auto_reply"].contains(&v.as_str()));
    let auto_reply =
        ["X-Autoreply", "X-Autorespond"].iter().any(|h| text(h).is_some_and(|v| !v.is_empty() && v != "no"));
    // `List-Id: Python-Dev <python-dev.python.org>`: the list's own address posts nothing a
    // person wrote (digests, moderation notices, bounces).
    let list_sender = match (text("List-Id"), from) {
        (Some(list), Some(addr)) => {
            let id = list.rsplit('<').next().unwrap_or(&list).trim_end_matches('>').trim().to_string();
            let (local, domain) = addr.split_once('@').unwrap_or((addr, ""));
            let base = ["-request", "-owner", "-bounces", "-admin"]
                .iter()
                .find_map(|s| local.strip_suffix(s))
                .map(|b| (b, true))
                .unwrap_or((local, false));
            let same_list = id == format!("{}.{domain}", base.0) || id.starts_with(&format!("{}.", base.0));
            same_list && (base.1 || id == format!("{local}.{domain}"))
        }
        _ => false,
    };
    auto_submitted || precedence || auto_reply || list_sender
}

/// Whether the file opens (after a byte-order mark and blank lines) with an mbox separator.
fn is_mbox(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let first = bytes.split(|b| *b == b'\n').find(|l| !l.iter().all(u8::is_ascii_whitespace)).unwrap_or_default();
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
/// message of each normalised subject. A decade of mail is millions of messages in one ingest,
/// so nothing here is a `String` or a map entry a message: ids and subjects are 128-bit hashes
/// in arrays sorted once the scan ends (looked up by binary search), and the ids that have to
/// be given back (where a message walks up to, the first message of a subject) are kept once
/// each in one buffer. The `links_memory` diagnostic measured 124 bytes a message at a million
/// messages (362 with maps of strings, 171 with maps of hashes).
#[derive(Debug, Default)]
pub struct Links {
    /// Message-ID → where to walk up (its first References entry, else its In-Reply-To id),
    /// as an index into `kept`, or [`NO_UP`]; sorted by key.
    ups: Vec<(Key, u32)>,
    /// Normalised subject → the date and (index into `kept`) id of its earliest message that
    /// is no reply; sorted by key, one entry a subject.
    subjects: Vec<(Key, i64, u32)>,
    /// The kept ids: where each starts in `text`, and its length.
    kept: Vec<(u64, u32)>,
    text: String,
}

/// A string's 128-bit hash: two SipHash runs under different prefixes. Within one ingest two
/// of ten million ids share a key with a probability of about 10^-25.
type Key = [u64; 2];

const NO_UP: u32 = u32::MAX;

fn key(s: &str) -> Key {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        s.hash(&mut h);
        h.finish()
    };
    [half(0), half(1)]
}

impl Links {
    /// Reads the headers of every message in `paths`; files that cannot be read are left to
    /// the main pass to report.
    pub fn scan<'p>(paths: impl Iterator<Item = &'p Path>) -> Links {
        let mut links = Links::default();
        for path in paths {
            let Ok(bytes) = std::fs::read(path) else { continue };
            let Ok(bytes) = crate::gzip::unpacked(&bytes) else { continue };
            if is_mbox(&bytes) {
                for m in mbox::split(&bytes) {
                    links.add(&m.bytes, m.envelope_ms);
                }
            } else {
                links.add(&bytes, None);
            }
        }
        links.settle();
        links
    }

    /// Where to walk up from the message `id`: its first References entry, else its
    /// In-Reply-To id; None for a message of this run without either, or one not in this run.
    pub fn up(&self, id: &str) -> Option<&str> {
        let k = key(id);
        let at = self.ups.binary_search_by(|e| e.0.cmp(&k)).ok()?;
        self.kept_str(self.ups[at].1)
    }

    /// Whether the message `id` is one of this run's.
    pub fn contains(&self, id: &str) -> bool {
        let k = key(id);
        self.ups.binary_search_by(|e| e.0.cmp(&k)).is_ok()
    }

    /// The earliest message of this run (by date, its id) with the normalised `subject` that
    /// is not itself a reply.
    pub fn first_with_subject(&self, subject: &str) -> Option<&str> {
        let k = key(subject);
        let at = self.subjects.binary_search_by(|e| e.0.cmp(&k)).ok()?;
        self.kept_str(self.subjects[at].2)
    }

    /// How many messages were read.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.ups.len()
    }

    fn kept_str(&self, k: u32) -> Option<&str> {
        let &(at, len) = self.kept.get(k as usize)?;
        let at = usize::try_from(at).ok()?;
        self.text.get(at..at + len as usize)
    }

    /// Keeps `s` in the buffer; its index in `kept` ([`NO_UP`] past four billion ids, which
    /// then walk up no further).
    fn keep(&mut self, s: &str) -> u32 {
        match u32::try_from(self.kept.len()) {
            Ok(k) if k != NO_UP => {
                self.kept.push((self.text.len() as u64, s.len() as u32));
                self.text.push_str(s);
                k
            }
            _ => NO_UP,
        }
    }

    fn add(&mut self, raw: &[u8], envelope_ms: Option<i64>) {
        // Read as `parse_one` reads it, so a raw 8-bit subject is the same text in both.
        let raw = mailtext::utf8_headers(raw);
        let Some(msg) = MessageParser::default().parse_headers(raw.as_ref()) else { return };
        let Some(id) = msg.message_id().map(str::trim).filter(|s| !s.is_empty()) else { return };
        let refs = id_list(msg.references());
        let up = refs.into_iter().next().or_else(|| id_list(msg.in_reply_to()).into_iter().next());
        let (subject, reply) = normalize_subject(msg.subject().unwrap_or(""));
        if !subject.is_empty() && !reply && up.is_none() {
            let ts = own_date(&msg).or(envelope_ms).unwrap_or(i64::MAX);
            let at = self.keep(id);
            self.subjects.push((key(&subject), ts, at));
        }
        let up = match up {
            Some(u) => self.keep(&u),
            None => NO_UP,
        };
        self.ups.push((key(id), up));
    }

    /// Sorts the arrays for lookup once every message is read: of a Message-ID met twice the
    /// last reading counts, of a subject the earliest message (the first read of equal dates);
    /// the ids no entry refers to any more leave the buffer.
    fn settle(&mut self) {
        // Stable sorts: equal keys stay in the order they were read.
        self.ups.sort_by_key(|e| e.0);
        self.ups.reverse();
        self.ups.dedup_by_key(|e| e.0);
        self.ups.reverse();
        self.subjects.sort_by_key(|e| (e.0, e.1));
        self.subjects.dedup_by_key(|e| e.0);
        let mut moved = vec![NO_UP; self.kept.len()];
        let (mut kept, mut text) = (Vec::new(), String::new());
        let refs = self.ups.iter_mut().map(|e| &mut e.1).chain(self.subjects.iter_mut().map(|e| &mut e.2));
        for r in refs.filter(|r| **r != NO_UP) {
            let old = *r as usize;
            if moved[old] == NO_UP {
                let (at, len) = self.kept[old];
                moved[old] = kept.len() as u32;
                kept.push((text.len() as u64, len));
                text.push_str(&self.text[at as usize..at as usize + len as usize]);
            }
            *r = moved[old];
        }
        kept.shrink_to_fit();
        text.shrink_to_fit();
        self.ups.shrink_to_fit();
        self.subjects.shrink_to_fit();
        (self.kept, self.text) = (kept, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> (Vec<MailMessage>, Vec<crate::Skip>) {
        let mut skips = Skips::default();
        let msgs = parse_file(bytes, Path::new("box.mbox"), 5, &mut skips).unwrap();
        (msgs, skips.into_list())
    }

    /// What `Links` holds for a large run: set `LINKS_DIAGNOSTIC_DIR` to a folder of mail files
    /// (the memory bench's corpus, say) and `LINKS_DIAGNOSTIC_FILES` to how many of them.
    #[test]
    #[ignore = "a diagnostic: prints the resident memory of the links of a large run"]
    #[allow(clippy::print_stdout, reason = "the diagnostic's figures are its output")]
    fn links_memory() {
        let Some(dir) = std::env::var_os("LINKS_DIAGNOSTIC_DIR") else { return };
        let files: usize = std::env::var("LINKS_DIAGNOSTIC_FILES").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
        let mut paths: Vec<_> = std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        paths.truncate(files);
        let rss = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let kib = |key: &str| -> u64 {
                let line = status.lines().find(|l| l.starts_with(key)).unwrap_or_default();
                line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
            };
            (kib("VmRSS:"), kib("VmHWM:"))
        };
        let before = rss();
        let links = Links::scan(paths.iter().map(std::path::PathBuf::as_path));
        let after = rss();
        println!(
            "{} messages in {} files: RSS +{} MiB, peak +{} MiB, {:.0} bytes a message held",
            links.len(),
            paths.len(),
            (after.0 - before.0) / 1024,
            after.1.saturating_sub(before.0) / 1024,
            (after.0 - before.0) as f64 * 1024.0 / links.len().max(1) as f64
        );
    }

    /// The links of a run: who answers whom, and the earliest message of a subject that is no
    /// reply, whichever file comes first.
    #[test]
    fn links_walk_up_and_name_the_first_message_of_a_subject() {
        let dir = tempfile::tempdir().unwrap();
        let mail = |id: &str, date: &str, subject: &str, extra: &str| {
            format!(
                "From a@x.org {date}\nFrom: A <a@x.org>\nSubject: {subject}\nDate: {date}\nMessage-ID: <{id}>\n{extra}\nbody\n\n"
            )
        };
        let later = mail("late@x", "Tue, 5 Mar 2024 09:30:00 +0000", "Plans", "");
        let reply = mail("r1@x", "Wed, 6 Mar 2024 09:30:00 +0000", "Re: Plans", "In-Reply-To: <root@x>\n");
        let deep = mail("r2@x", "Thu, 7 Mar 2024 09:30:00 +0000", "Re: Plans", "References: <root@x> <r1@x>\n");
        let root = mail("root@x", "Mon, 4 Mar 2024 09:30:00 +0000", "Plans", "");
        let first = dir.path().join("a.mbox");
        let second = dir.path().join("b.mbox");
        // The same message again, now answering the root: the last reading counts.
        let again = mail("late@x", "Tue, 5 Mar 2024 09:30:00 +0000", "Re: Plans", "In-Reply-To: <root@x>\n");
        std::fs::write(&first, format!("{later}{reply}{deep}")).unwrap();
        std::fs::write(&second, format!("{root}{again}")).unwrap();
        let links = Links::scan([first.as_path(), second.as_path()].into_iter());
        assert_eq!(links.len(), 4);
        assert_eq!(links.up("late@x"), Some("root@x"));
        assert!(links.contains("root@x") && links.contains("r2@x") && !links.contains("elsewhere@x"));
        assert_eq!(links.up("r1@x"), Some("root@x"));
        assert_eq!(links.up("r2@x"), Some("root@x"), "the first References entry");
        assert_eq!(links.up("root@x"), None);
        assert_eq!(links.up("elsewhere@x"), None);
        assert_eq!(links.first_with_subject("plans"), Some("root@x"), "the earlier of two by date");
        assert_eq!(links.first_with_subject("other"), None);
    }

    /// One message written by a Latin-1 mail program: 8-bit headers and body, no MIME headers.
    const LATIN1: &[u8] = b"From: Ren\xe9 Fran\xe7ois <rene@example.fr>\nTo: Z\xf6e <zoe@example.org>\n\
Subject: R\xe9union de classe\nDate: Tue, 5 Mar 2024 09:30:00 +0100\nMessage-ID: <r1@example.fr>\n\n\
Nous nous retrouvons \xe0 la caf\xe9t\xe9ria du lyc\xe9e samedi.\n";

    #[test]
    fn a_latin1_mailbox_of_one_message_reads_with_and_without_its_from_line() {
        let mut mbox = b"From rene@example.fr Tue Mar  5 09:30:00 2024\n".to_vec();
        mbox.extend_from_slice(LATIN1);
        let mut odd_envelope = b"\nFrom Ren\xe9 Tue Mar  5 09:30:00 2024\n".to_vec();
        odd_envelope.extend_from_slice(LATIN1);
        for bytes in [&mbox[..], LATIN1, &odd_envelope[..]] {
            let (msgs, skips) = read(bytes);
            assert_eq!(msgs.len(), 1, "{}", String::from_utf8_lossy(bytes));
            assert!(skips.is_empty(), "{skips:?}");
            let m = &msgs[0];
            assert_eq!(m.subject, "Réunion de classe");
            assert_eq!(m.from, Some(("René François".into(), "rene@example.fr".into())));
            assert_eq!(m.to, [("Zöe".into(), "zoe@example.org".into())]);
            assert_eq!(m.body, "Nous nous retrouvons à la cafétéria du lycée samedi.");
            assert!(m.dated && !m.automated);
        }
    }

    #[test]
    fn encoded_words_curly_quotes_and_quoted_replies() {
        let raw = b"From: =?windows-1252?Q?Se=E1n_O=92Brien?= <sean@example.ie>\n\
Subject: =?UTF-8?B?UmU6IFLDqXVuaW9u?=\nMessage-ID: <r2@example.ie>\nIn-Reply-To: <r1@example.fr>\n\
Content-Type: text/plain; charset=windows-1252\nContent-Transfer-Encoding: quoted-printable\n\n\
=93Count me in=94, I=92ll bring the photos.\n\nOn Tue, 5 Mar 2024, Ren=E9 wrote:\n> Nous nous retrouvons\n";
        let (msgs, _) = read(raw);
        let m = &msgs[0];
        assert_eq!(m.from.as_ref().map(|f| f.0.as_str()), Some("Seán O\u{2019}Brien"));
        assert_eq!((m.subject.as_str(), m.is_reply), ("Re: Réunion", true));
        assert_eq!(m.body, "\u{201c}Count me in\u{201d}, I\u{2019}ll bring the photos.");
        assert_eq!(m.quoted, "On Tue, 5 Mar 2024, René wrote:\n> Nous nous retrouvons");
    }

    #[test]
    fn a_bare_address_takes_the_name_an_export_gives_beside_it() {
        let msg = |x_from: &str| {
            let raw = format!("From: phillip.allen@enron.com\nX-From: {x_from}\nSubject: Forecast\n\nHere it is.\n");
            read(raw.as_bytes()).0.remove(0).from.unwrap()
        };
        let allen = ("Phillip K Allen".to_string(), "phillip.allen@enron.com".to_string());
        assert_eq!(msg("Phillip K Allen"), allen);
        assert_eq!(msg("Phillip K Allen <Phillip K Allen/HOU/ECT@ECT>"), allen);
        assert_eq!(msg("phillip.allen@enron.com").0, "", "an address is not a name");
        let named = read(b"From: Tim <tim@x.org>\nX-From: Timothy Belden\n\nhi\n").0.remove(0);
        assert_eq!(named.from.unwrap().0, "Tim", "From's own name wins");
    }

    #[test]
    fn machine_senders_are_told_by_their_headers() {
        let msg = |headers: &str| {
            let raw = format!("{headers}\nSubject: s\nMessage-ID: <a@b>\n\nbody\n");
            read(raw.as_bytes()).0.remove(0).automated
        };
        assert!(msg("From: Ann <ann@x.org>\nAuto-Submitted: auto-replied"));
        assert!(msg("From: News <news@shop.example>\nPrecedence: bulk"));
        assert!(msg("From: python-dev-request@python.org\nList-Id: Python-Dev <python-dev.python.org>"));
        assert!(msg("From: python-dev@python.org\nList-Id: Python-Dev <python-dev.python.org>"));
        assert!(!msg("From: Guido <guido@python.org>\nList-Id: Python-Dev <python-dev.python.org>\nPrecedence: list"));
        assert!(!msg("From: Ann <ann@x.org>\nAuto-Submitted: no"));
    }

    #[test]
    fn subjects_lose_reply_prefixes_and_list_tags() {
        assert_eq!(normalize_subject("RE: Quarterly  report"), ("quarterly report".to_string(), true));
        assert_eq!(normalize_subject("[Garden-dev] Re: [Garden-dev] Compost"), ("compost".to_string(), true));
        assert_eq!(normalize_subject("[Garden-dev] compost thermometer"), ("compost thermometer".to_string(), false));
        assert_eq!(normalize_subject("Fwd: Re: plans"), ("plans".to_string(), true));
    }
}
