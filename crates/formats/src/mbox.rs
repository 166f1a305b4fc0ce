//! Mailboxes: an mbox file split into its messages, Mailman/pipermail archives included.
//!
//! A message starts at a `From ` line that ends in a date with a time of day and follows a
//! blank line (or opens the file), so a body line that merely starts with "From " stays in its
//! message; `>From ` quoting is undone. The separator's date (the envelope date) is kept for
//! messages whose headers carry none. Pipermail hides addresses as `jjl at pobox.com`: in the
//! address headers that form is turned back into `jjl@pobox.com` before the message is parsed,
//! so `From: jjl at pobox.com (John J. Lee)` gives the sender's name and address.

use std::borrow::Cow;

use super::detect::is_mbox_separator;
use super::when;

/// One message of a mailbox.
pub(crate) struct RawMessage<'a> {
    pub bytes: Cow<'a, [u8]>,
    /// The date on the `From ` line, when it has one.
    pub envelope_ms: Option<i64>,
}

/// The date at the end of a `From sender date` line (the sender may itself contain spaces);
/// None when there is none, or it is the epoch.
fn envelope_date(line: &str) -> Option<i64> {
    let words: Vec<&str> = line.strip_prefix("From ")?.split_whitespace().collect();
    // Some mail programs write the epoch (`Thu Jan 01 00:00:00 1970`) when they know no date.
    (1..words.len()).find_map(|i| when::mail_date(&words[i..].join(" "))).filter(|ms| *ms > 0)
}

/// Splits an mbox into its messages.
pub(crate) fn split<'a>(bytes: &'a [u8]) -> Vec<RawMessage<'a>> {
    let mut out = Vec::new();
    let mut start: Option<(usize, Option<i64>)> = None;
    let mut quoted = false;
    let mut pos = 0;
    let mut prev_blank = true;
    let finish = |out: &mut Vec<RawMessage<'a>>, from: usize, to: usize, envelope_ms, quoted: bool| {
        let body: &'a [u8] = &bytes[from..to];
        let bytes = if quoted { Cow::Owned(unquote(body)) } else { Cow::Borrowed(body) };
        out.push(RawMessage { bytes, envelope_ms });
    };
    while pos < bytes.len() {
        let end = bytes[pos..].iter().position(|b| *b == b'\n').map_or(bytes.len(), |i| pos + i + 1);
        let line = &bytes[pos..end];
        // A separator with 8-bit bytes in its sender is a separator all the same.
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if prev_blank && line.starts_with(b"From ") && is_mbox_separator(text) {
            if let Some((from, env)) = start.take() {
                finish(&mut out, from, pos, env, quoted);
            }
            start = Some((end, envelope_date(text)));
            quoted = false;
        } else if line.starts_with(b">") && line.iter().skip_while(|b| **b == b'>').take(5).eq(b"From ".iter()) {
            quoted = true;
        }
        prev_blank = line.iter().all(|b| b.is_ascii_whitespace());
        pos = end;
    }
    if let Some((from, env)) = start {
        finish(&mut out, from, bytes.len(), env, quoted);
    }
    out
}

/// Removes one `>` from every `>…>From ` line (mboxrd quoting).
fn unquote(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    for line in body.split_inclusive(|b| *b == b'\n') {
        let quoted_from = line.starts_with(b">") && line.iter().skip_while(|b| **b == b'>').take(5).eq(b"From ".iter());
        out.extend_from_slice(if quoted_from { &line[1..] } else { line });
    }
    out
}

/// The message with pipermail's `name at host.tld` addresses restored in its address headers.
pub(crate) fn restore_addresses(raw: &[u8]) -> Cow<'_, [u8]> {
    let header_end = super::mailtext::header_end(raw);
    let Ok(header) = std::str::from_utf8(&raw[..header_end]) else { return Cow::Borrowed(raw) };
    if !header.contains(" at ") {
        return Cow::Borrowed(raw);
    }
    let mut fixed = String::with_capacity(header.len());
    let mut in_address_header = false;
    for line in header.split_inclusive('\n') {
        if !line.starts_with([' ', '\t']) {
            let name = line.split(':').next().unwrap_or("").to_ascii_lowercase();
            in_address_header = ["from", "to", "cc", "reply-to", "sender"].contains(&name.as_str());
        }
        if in_address_header && line.contains(" at ") {
            fixed.push_str(&join_at(line));
        } else {
            fixed.push_str(line);
        }
    }
    let mut out = fixed.into_bytes();
    out.extend_from_slice(&raw[header_end..]);
    Cow::Owned(out)
}

/// `jjl at pobox.com (John J. Lee)` → `jjl@pobox.com (John J. Lee)`, keeping the line's end.
fn join_at(line: &str) -> String {
    let body = line.trim_end_matches(['\r', '\n']);
    let ending = &line[body.len()..];
    let words: Vec<&str> = body.split(' ').collect();
    let local = |w: &str| {
        let w = w.trim_start_matches(['<', '(', '"']);
        !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b"._%+-=".contains(&b))
    };
    let domain = |w: &str| {
        let w = w.trim_end_matches(['>', ')', ',', '"']);
        w.contains('.') && w.bytes().all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
    };
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        if words[i] == "at" && i > 0 && i + 1 < words.len() && local(words[i - 1]) && domain(words[i + 1]) {
            let before = out.pop().unwrap_or_default();
            out.push(format!("{before}@{}", words[i + 1]));
            i += 2;
            continue;
        }
        out.push(words[i].to_string());
        i += 1;
    }
    format!("{}{ending}", out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIPERMAIL: &str = "From jjl at pobox.com  Thu Nov  1 11:19:12 2001\n\
From: jjl at pobox.com (John J. Lee)\n\
Date: Thu Nov  1 11:19:12 2001\n\
Subject: [Python-Dev] cookies\n\
\n\
From what I can tell, the cookie code is fine.\n\
>From the archives: nothing.\n\
\n\
From guido at python.org  Thu Nov  1 12:00:00 2001\n\
From: guido at python.org (Guido van Rossum)\n\
\n\
Thanks.\n";

    #[test]
    fn pipermail_archives_split_and_keep_their_envelope_dates() {
        let msgs = split(PIPERMAIL.as_bytes());
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].envelope_ms, Some(1_004_613_552_000));
        let first = String::from_utf8_lossy(&msgs[0].bytes);
        assert!(first.starts_with("From: jjl at pobox.com"), "{first}");
        assert!(first.contains("\nFrom what I can tell") && first.contains("\nFrom the archives"), "{first}");
        assert_eq!(msgs[1].envelope_ms, Some(1_004_616_000_000));
        let fixed = restore_addresses(&msgs[0].bytes);
        let fixed = String::from_utf8_lossy(&fixed);
        assert!(fixed.starts_with("From: jjl@pobox.com (John J. Lee)\n"), "{fixed}");
        assert!(fixed.contains("\nFrom what I can tell, the cookie code is fine."), "the body is untouched");
        assert_eq!(envelope_date("From - Thu Jan 01 00:00:00 1970"), None, "the epoch is no date");
        assert_eq!(envelope_date("From MAILER-DAEMON Fri Nov  2 08:00:05 2001"), Some(1_004_688_005_000));
    }
}
