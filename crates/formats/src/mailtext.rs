//! The text of a mail message in whatever charset it was written: headers carrying raw 8-bit
//! bytes (no RFC 2047 encoding) are turned into UTF-8 before `mail-parser` reads them, and the
//! body is decoded again from its raw bytes, so a missing or wrong `charset` does not leave
//! replacement characters or mojibake behind.
//!
//! The rule for a body (after its transfer encoding, quoted-printable or base64, is undone):
//! bytes that are valid UTF-8 are UTF-8, whatever the label says (Latin-1 text is practically
//! never valid UTF-8 once it holds an accented letter); otherwise a declared legacy charset is
//! used when it decodes without error, and anything else is guessed by `text::decode`'s
//! detector. ISO-8859-1 and US-ASCII are read as Windows-1252, their superset, as browsers do.
//! Encoded words (`=?ISO-8859-1?Q?…?=`, `=?UTF-8?B?…?=`) are decoded by `mail-parser` itself.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8};
use mail_parser::decoders::base64::base64_decode;
use mail_parser::decoders::quoted_printable::quoted_printable_decode;
use mail_parser::{Message, MimeHeaders, PartType};

/// Where a message's header block ends (the index of the blank line's first byte), or its
/// length when it has no body.
pub(crate) fn header_end(raw: &[u8]) -> usize {
    let crlf = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 2);
    let lf = raw.windows(2).position(|w| w == b"\n\n").map(|i| i + 1);
    match (crlf, lf) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).unwrap_or(raw.len()),
    }
}

/// The `charset=` parameter of the first `Content-Type` header in `headers`, if any.
fn declared_charset(headers: &str) -> Option<String> {
    let lower = headers.to_ascii_lowercase();
    let ct = lower.find("\ncontent-type:").map(|i| i + 1).or(lower.starts_with("content-type:").then_some(0))?;
    let field = &lower[ct..];
    // The field runs to the first line that does not continue it.
    let end = field
        .match_indices('\n')
        .find(|(i, _)| !field[i + 1..].starts_with([' ', '\t']))
        .map_or(field.len(), |(i, _)| i);
    let at = field[..end].find("charset=")? + "charset=".len();
    let value: String = field[at..end]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || "-_:.".contains(*c))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// The header block as UTF-8: unchanged when it already is, else decoded with the message's
/// declared charset or the detector's guess (over the whole message, for a better guess).
pub(crate) fn utf8_headers(raw: &[u8]) -> Cow<'_, [u8]> {
    let end = header_end(raw);
    let head = &raw[..end];
    if std::str::from_utf8(head).is_ok() {
        return Cow::Borrowed(raw);
    }
    let declared = declared_charset(&String::from_utf8_lossy(head));
    let text = decode_bytes(head, declared.as_deref(), raw);
    let mut out = text.into_bytes();
    out.extend_from_slice(&raw[end..]);
    Cow::Owned(out)
}

/// The encoding a charset label names; the labels that mean Latin-1 or ASCII give
/// Windows-1252 (encoding_rs does so itself, following the WHATWG table).
fn label(name: &str) -> Option<&'static Encoding> {
    Encoding::for_label(name.trim().as_bytes())
}

/// `bytes` as text: UTF-8 when valid, else the declared charset when it reads them without
/// error, else the detector's guess from `sample` (which holds `bytes`, or more of the message).
pub(crate) fn decode_bytes(bytes: &[u8], declared: Option<&str>, sample: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return s.to_string();
    }
    if let Some(enc) = declared.and_then(label).filter(|e| *e != UTF_8) {
        let (text, had_errors) = enc.decode_without_bom_handling(bytes);
        if !had_errors {
            return text.into_owned();
        }
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    let sample = &sample[..sample.len().min(1 << 20)];
    detector.feed(sample, true);
    let enc = detector.guess(None, chardetng::Utf8Detection::Deny);
    enc.decode_without_bom_handling(bytes).0.into_owned()
}

/// The message's first text body, decoded from its raw bytes by the rule above (HTML read as
/// text by `html`); None when it has no text body.
pub(crate) fn body(msg: &Message<'_>) -> Option<String> {
    let part = msg.text_part(0)?;
    let raw = msg.raw_message();
    let (start, end) = (part.raw_body_offset() as usize, part.raw_end_offset() as usize);
    let decoded = raw.get(start..end.min(raw.len())).and_then(|bytes| {
        let cte = part.content_transfer_encoding().unwrap_or("").trim().to_ascii_lowercase();
        match cte.as_str() {
            "base64" => base64_decode(bytes),
            "quoted-printable" => quoted_printable_decode(bytes),
            _ => Some(bytes.to_vec()),
        }
    });
    let Some(bytes) = decoded else { return msg.body_text(0).map(Cow::into_owned) };
    let declared = part.content_type().and_then(|ct| ct.attribute("charset"));
    let text = decode_bytes(&bytes, declared, &bytes);
    Some(match part.body {
        // The HTML reader ends a line at every block (`<div>`, `<blockquote>`), so an attribution
        // stands on its own line as in plain text.
        PartType::Html(_) => super::html::extract(&text).text,
        _ => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mail_parser::MessageParser;

    fn parse_body(raw: &[u8]) -> String {
        let fixed = utf8_headers(raw);
        let msg = MessageParser::default().parse(fixed.as_ref()).unwrap();
        body(&msg).unwrap()
    }

    #[test]
    fn bodies_in_declared_missing_and_wrong_charsets() {
        // Windows-1252 curly quotes and a euro sign, declared.
        let cp1252 = b"Content-Type: text/plain; charset=windows-1252\n\n\x93Ready\x94 \x80 5, na\xefve\n";
        assert_eq!(parse_body(cp1252).trim(), "\u{201c}Ready\u{201d} \u{20ac} 5, naïve");
        // Latin-1 with no charset at all.
        let bare = b"Subject: x\n\nLe gar\xe7on a re\xe7u la lettre \xe0 temps, d\xe9j\xe0.\n";
        assert_eq!(parse_body(bare).trim(), "Le garçon a reçu la lettre à temps, déjà.");
        // Declared UTF-8, written in Latin-1.
        let wrong = b"Content-Type: text/plain; charset=utf-8\n\nCaf\xe9 cr\xe8me\n";
        assert_eq!(parse_body(wrong).trim(), "Café crème");
        // Declared Latin-1, written in UTF-8.
        let wrong2 = "Content-Type: text/plain; charset=iso-8859-1\n\nCafé crème\n".as_bytes();
        assert_eq!(parse_body(wrong2).trim(), "Café crème");
        // ISO-8859-2 declared (Polish), quoted-printable.
        let qp = b"Content-Type: text/plain; charset=ISO-8859-2\nContent-Transfer-Encoding: quoted-printable\n\nZa=BF=F3=B3=E6 g=EA=B6l=B1 ja=BC=F1\n";
        assert_eq!(parse_body(qp).trim(), "Zażółć gęślą jaźń");
        // Base64 UTF-8.
        let b64 =
            b"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\nR3LDvMOfZSBhdXMgS8O2bG4=\n";
        assert_eq!(parse_body(b64).trim(), "Grüße aus Köln");
        // An HTML-only reply: the attribution and the quote each start a line.
        let html = b"Content-Type: text/html; charset=iso-8859-1\n\n<div dir=ltr>Tr\xe8s bien.</div><div class=gmail_quote><div>On Tue, 2 Jan 2024 at 09:00, Bo &lt;bo@x.org&gt; wrote:</div><blockquote>Shall we meet?</blockquote></div>";
        let text = parse_body(html);
        let split = crate::quote::split(&text);
        assert_eq!(split.own, "Très bien.", "{text:?}");
        assert!(split.quoted.ends_with("Shall we meet?"), "{split:?}");
    }

    #[test]
    fn raw_8bit_and_encoded_headers() {
        let raw = b"From: Ren\xe9 Fran\xe7ois <rene@example.fr>\nSubject: =?ISO-8859-1?Q?R=E9union_de_classe?=\nTo: =?UTF-8?B?SsO8cmdlbg==?= <j@example.de>\nContent-Type: text/plain; charset=iso-8859-1\n\nMerci.\n";
        let fixed = utf8_headers(raw);
        let msg = MessageParser::default().parse(fixed.as_ref()).unwrap();
        let from = msg.from().and_then(|a| a.first()).and_then(|a| a.name()).unwrap();
        assert_eq!(from, "René François");
        assert_eq!(msg.subject(), Some("Réunion de classe"));
        assert_eq!(msg.to().and_then(|a| a.first()).and_then(|a| a.name()), Some("Jürgen"));
        assert_eq!(
            declared_charset("Subject: a\nContent-Type: text/plain;\n charset=\"KOI8-R\"\n"),
            Some("koi8-r".into())
        );
    }
}
