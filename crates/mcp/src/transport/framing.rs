//! Newline framing with a hard line limit. Unlike `LinesCodec`, an over-long line is reported as
//! a frame of its own and reading resumes after the next newline, and bytes are not required to
//! be UTF-8 (the dispatcher reports that per message).
//!
//! The rule for an over-long line: the codec keeps its first [`KEEP`] bytes (64 KiB) and its
//! length, and drops the rest unread into memory. When those first bytes are the start of a JSON
//! object whose top-level `"id"` member (a string or a number) is complete within them,
//! [`head_id`] reads it, so the error that answers the line carries the request's own id (text
//! kept exactly as sent); otherwise the id is null.

use bytes::BytesMut;
use tokio_util::codec::Decoder;

use crate::incoming::Id;

/// Bytes of an over-long line kept to look for its id.
pub const KEEP: usize = 64 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Line(BytesMut),
    /// A line longer than the limit was skipped.
    TooLong(Overlong),
}

/// What is known of a skipped line.
#[derive(Debug, PartialEq, Eq)]
pub struct Overlong {
    /// Its first bytes, at most [`KEEP`].
    pub head: BytesMut,
    /// Its length in bytes (without the newline); at EOF, what arrived.
    pub len: usize,
}

pub struct LineCodec {
    max: usize,
    /// Set while skipping a line: its head and the bytes counted so far.
    discarding: Option<Overlong>,
    scanned: usize,
}

impl LineCodec {
    pub fn new(max: usize) -> LineCodec {
        LineCodec { max, discarding: None, scanned: 0 }
    }
}

fn head_of(bytes: &[u8]) -> BytesMut {
    BytesMut::from(&bytes[..bytes.len().min(KEEP)])
}

impl Overlong {
    /// Counts more bytes of the line, keeping them while the head is short of `KEEP`.
    fn take(&mut self, bytes: &[u8]) {
        let room = KEEP.saturating_sub(self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..room]);
        self.len += bytes.len();
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        let newline = buf[self.scanned..].iter().position(|b| *b == b'\n').map(|i| i + self.scanned);
        match newline {
            Some(i) => {
                let mut line = buf.split_to(i + 1);
                self.scanned = 0;
                if let Some(mut skipped) = self.discarding.take() {
                    skipped.take(&line[..i]);
                    return Ok(Some(Frame::TooLong(skipped)));
                }
                if i > self.max {
                    return Ok(Some(Frame::TooLong(Overlong { head: head_of(&line[..i]), len: i })));
                }
                line.truncate(i);
                Ok(Some(Frame::Line(line)))
            }
            None if buf.len() > self.max || self.discarding.is_some() => {
                // Keep the head, drop the rest; report once the line ends.
                self.discarding.get_or_insert_with(|| Overlong { head: BytesMut::new(), len: 0 }).take(buf);
                buf.clear();
                self.scanned = 0;
                Ok(None)
            }
            None => {
                self.scanned = buf.len();
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        self.scanned = 0;
        if let Some(mut skipped) = self.discarding.take() {
            skipped.take(buf);
            buf.clear();
            return Ok(Some(Frame::TooLong(skipped)));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        Ok(Some(Frame::Line(buf.split())))
    }
}

/// The id of the JSON-RPC request that `head` (the first bytes of a message, possibly cut
/// anywhere) begins, when it can be read: `head` opens a JSON object and its top-level `"id"`
/// member, a string or a number, is complete before the cut. Tolerant: nothing after the id
/// needs to be valid, and members before it are skipped without being parsed into values. A
/// number keeps its text exactly as sent. Anything else (a batch, no id before the cut, an id
/// of another type, bytes that are not JSON) is None.
pub fn head_id(head: &[u8]) -> Option<Id> {
    let mut s = Scan { b: head, at: 0 };
    s.ws();
    s.eat(b'{')?;
    loop {
        s.ws();
        if s.peek()? == b'}' {
            return None;
        }
        let key = s.string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        let is_id = serde_json::from_slice::<String>(key).ok()? == "id";
        let start = s.at;
        match s.peek()? {
            b'"' if is_id => {
                let text = s.string()?;
                return serde_json::from_slice::<serde_json::Value>(text).ok().map(Id::Value);
            }
            b'-' | b'0'..=b'9' if is_id => {
                s.number()?;
                // A number that runs into the cut may have lost digits.
                s.peek()?;
                let text = std::str::from_utf8(&head[start..s.at]).ok()?;
                serde_json::from_str::<serde_json::Number>(text).ok()?;
                return Some(Id::Exact(text.into()));
            }
            _ if is_id => return None,
            _ => s.skip_value()?,
        }
        s.ws();
        match s.peek()? {
            b',' => s.at += 1,
            _ => return None,
        }
    }
}

/// A cursor over bytes; every step is None at the end of the input or on a byte it does not
/// expect.
struct Scan<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// A whole string token, quotes included.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(&self.b[start..self.at]);
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    fn number(&mut self) -> Option<()> {
        let start = self.at;
        while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
            self.at += 1;
        }
        (self.at > start).then_some(())
    }

    /// Skips one value of any kind: nested objects and arrays by bracket depth (strings inside
    /// them skipped whole), literals and numbers by their characters.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.')) {
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[&[u8]], max: usize) -> Vec<Frame> {
        let mut codec = LineCodec::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in input {
            buf.extend_from_slice(chunk);
            while let Some(f) = codec.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(BytesMut::from(s.as_bytes()))
    }

    #[test]
    fn splits_lines_across_chunks() {
        assert_eq!(frames(&[b"ab", b"c\nde", b"\nf"], 10), vec![line("abc"), line("de"), line("f")]);
    }

    #[test]
    fn overlong_line_is_reported_once_and_reading_resumes() {
        let long = vec![b'x'; 25];
        let skipped = |head: &str, len| Frame::TooLong(Overlong { head: BytesMut::from(head.as_bytes()), len });
        let (x25, x50) = ("x".repeat(25), "x".repeat(50));
        assert_eq!(
            frames(&[b"ok\n", long.as_slice(), long.as_slice(), b"\nnext\n"], 10),
            vec![line("ok"), skipped(&x50, 50), line("next")]
        );
        assert_eq!(frames(&[b"0123456789012\nz\n"], 10), vec![skipped("0123456789012", 13), line("z")]);
        // Cut by EOF: what arrived is counted.
        assert_eq!(frames(&[b"ok\n", long.as_slice()], 10), vec![line("ok"), skipped(&x25, 25)]);
    }

    #[test]
    fn an_overlong_line_keeps_only_its_head() {
        let long = [b"{\"id\":1,".as_slice(), &vec![b'x'; 3 * KEEP], b"\n"].concat();
        let got = frames(&[&long[..KEEP / 2], &long[KEEP / 2..]], 100);
        let [Frame::TooLong(skipped)] = got.as_slice() else { panic!("{got:?}") };
        assert_eq!((skipped.head.len(), skipped.len), (KEEP, long.len() - 1));
        assert_eq!(&skipped.head[..], &long[..KEEP]);
    }

    fn id_text(head: &str) -> Option<String> {
        head_id(head.as_bytes()).map(|id| {
            let mut out = String::new();
            id.write(&mut out);
            out
        })
    }

    #[test]
    fn the_id_is_read_when_it_comes_before_the_cut() {
        let pad = "y".repeat(1000);
        for (head, want) in [
            (r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"text":"yyy"#.to_string(), "7"),
            (r#" { "id" : "a\"b" , "method":"x"#.into(), r#""a\"b""#),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"x":["}}",{{"id":0}}]}},"id":-4.5e3,"p":"{pad}"#
                ),
                "-4.5e3",
            ),
            // Numbers keep their text: no rounding through f64, however large.
            (r#"{"id":18446744073709551616123,"#.into(), "18446744073709551616123"),
            (r#"{"id":3555727065.2172546}"#.into(), "3555727065.2172546"),
            (r#"{"id":"escaped key","method"#.into(), r#""escaped key""#),
            (r#"{"meta":null,"ok":true,"n":-1,"id":"z"#.to_string() + r#"""#, r#""z""#),
        ] {
            assert_eq!(id_text(&head).as_deref(), Some(want), "{head}");
        }
    }

    #[test]
    fn the_id_is_null_when_it_cannot_be_read() {
        for head in [
            // The id comes after the cut, or the cut falls inside it.
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"text":"xxxx"#,
            r#"{"jsonrpc":"2.0","id":12345"#,
            r#"{"jsonrpc":"2.0","id":"abc"#,
            r#"{"params":{"id":5,"text":"xx"#,
            // Not an object, or an id that is not a string or number.
            r#"[{"id":1,"method":"ping"},"#,
            r#""id":1,"#,
            r#"{"id":null,"method":"x"#,
            r#"{"id":{"a":1},"method":"x"#,
            r#"{"id":tru"#,
            "",
            r#"garbage {"id":1,"#,
        ] {
            assert_eq!(id_text(head), None, "{head}");
        }
    }

    #[test]
    fn invalid_utf8_passes_through_as_bytes() {
        assert_eq!(frames(&[b"\xff\xfe\n"], 10), vec![Frame::Line(BytesMut::from(&b"\xff\xfe"[..]))]);
    }
}
