//! Newline framing with a hard line limit. Unlike `LinesCodec`, an over-long line is reported as
//! a frame of its own and reading resumes after the next newline, and bytes are not required to
//! be UTF-8 (the dispatcher reports that per message).
//!
//! The rule for an over-long line: it is never held in memory, but every byte of it passes
//! through an [`IdScan`] on its way to the bin. When the line is a JSON object with a top-level
//! `"id"` member that is a string or a number, wherever it stands (clients write it first, or,
//! like the Python SDK 1.x, after a `params` of any size), the error that answers the line
//! carries that id, its text exactly as sent. Otherwise (a batch, no id, an id of another type, a
//! line that is not an object, an id cut off by EOF) the id is null.

use bytes::BytesMut;
use tokio_util::codec::Decoder;

use crate::incoming::Id;

#[derive(Debug, PartialEq)]
pub enum Frame {
    Line(BytesMut),
    /// A line longer than the limit was skipped.
    TooLong(Overlong),
}

/// What is known of a skipped line.
#[derive(Debug, PartialEq)]
pub struct Overlong {
    /// Its request id, when it could be read (see the module's rule).
    pub id: Option<Id>,
    /// Its length in bytes (without the newline); at EOF, what arrived.
    pub len: usize,
}

pub struct LineCodec {
    max: usize,
    /// Set while skipping a line: the scan for its id and the bytes counted so far.
    discarding: Option<(IdScan, usize)>,
    scanned: usize,
}

impl LineCodec {
    pub fn new(max: usize) -> LineCodec {
        LineCodec { max, discarding: None, scanned: 0 }
    }
}

fn skipped((scan, len): (IdScan, usize)) -> Frame {
    Frame::TooLong(Overlong { id: scan.finish(), len })
}

fn count(discarding: &mut (IdScan, usize), bytes: &[u8]) {
    discarding.0.feed(bytes);
    discarding.1 += bytes.len();
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
                if let Some(mut discarding) = self.discarding.take() {
                    count(&mut discarding, &line[..i]);
                    return Ok(Some(skipped(discarding)));
                }
                if i > self.max {
                    return Ok(Some(Frame::TooLong(Overlong { id: id_in(&line[..i]), len: i })));
                }
                line.truncate(i);
                Ok(Some(Frame::Line(line)))
            }
            None if buf.len() > self.max || self.discarding.is_some() => {
                // Scan and drop what we have; report once the line ends.
                count(self.discarding.get_or_insert_with(|| (IdScan::default(), 0)), buf);
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
        if let Some(mut discarding) = self.discarding.take() {
            count(&mut discarding, buf);
            buf.clear();
            return Ok(Some(skipped(discarding)));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        Ok(Some(Frame::Line(buf.split())))
    }
}

/// The request id in `message` (whole or cut anywhere) by the module's rule.
pub fn id_in(message: &[u8]) -> Option<Id> {
    let mut scan = IdScan::default();
    scan.feed(message);
    scan.finish()
}

/// Longest key text (quotes and escapes included) compared with `"id"`.
const KEY_MAX: usize = 64;
/// Longest id text kept; a longer one is not read.
const ID_MAX: usize = 4096;

/// Finds the top-level `"id"` of a JSON object fed to it in pieces, keeping only that id and the
/// key being read. Tolerant: it follows strings and bracket depth and nothing else, so what comes
/// after the id need not be valid, and a cut message yields what was read before the cut.
#[derive(Default)]
pub struct IdScan {
    state: State,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1: the next string is a key (after `{` or `,`).
    key_next: bool,
    /// At depth 1: the last key was `id`; its value comes after the `:`.
    id_key: bool,
    /// At depth 1: the `:` after an `id` key was seen; the next value is the id.
    id_next: bool,
    capture: Capture,
    text: Vec<u8>,
    found: Option<Id>,
}

#[derive(Default, PartialEq)]
enum State {
    #[default]
    Start,
    Object,
    /// Nothing more to learn: found, or not an object, or an id of another type.
    Done,
}

#[derive(Default, PartialEq)]
enum Capture {
    #[default]
    Nothing,
    Key,
    IdString,
    IdNumber,
}

impl IdScan {
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() && self.state != State::Done {
            let b = bytes[i];
            if self.in_string {
                if self.capture == Capture::Nothing && !self.escaped {
                    // A string nobody reads: jump to its next quote or backslash.
                    match bytes[i..].iter().position(|c| *c == b'"' || *c == b'\\') {
                        Some(n) => i += n,
                        None => return,
                    }
                }
                let b = bytes[i];
                self.keep(b);
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    self.string_ended();
                }
                i += 1;
                continue;
            }
            if self.capture == Capture::IdNumber {
                if matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.keep(b);
                    i += 1;
                    continue;
                }
                let text = std::str::from_utf8(&self.text).ok();
                self.found =
                    text.filter(|t| serde_json::from_str::<serde_json::Number>(t).is_ok()).map(|t| Id::Exact(t.into()));
                self.state = State::Done;
                return;
            }
            self.byte(b);
            i += 1;
        }
    }

    /// One byte outside any string.
    fn byte(&mut self, b: u8) {
        let top = self.depth == 1;
        match (&self.state, b) {
            (_, b' ' | b'\t' | b'\r' | b'\n') => {}
            (State::Start, b'{') => {
                self.state = State::Object;
                self.depth = 1;
                self.key_next = true;
            }
            (State::Start, _) => self.state = State::Done,
            (_, b'"') => {
                self.in_string = true;
                self.text.clear();
                if top && self.key_next {
                    self.capture = Capture::Key;
                    self.key_next = false;
                } else if top && self.id_next {
                    self.capture = Capture::IdString;
                }
                self.keep(b);
            }
            (_, b'-' | b'0'..=b'9') if top && self.id_next => {
                self.capture = Capture::IdNumber;
                self.text.clear();
                self.keep(b);
            }
            // An id that is an object, an array, a literal: none to answer.
            _ if top && self.id_next => self.state = State::Done,
            (_, b'{' | b'[') => self.depth += 1,
            (_, b'}' | b']') => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.state = State::Done;
                }
            }
            (_, b':') if top => self.id_next = std::mem::take(&mut self.id_key),
            (_, b',') if top => self.key_next = true,
            _ => {}
        }
    }

    fn keep(&mut self, b: u8) {
        let max = if self.capture == Capture::Key { KEY_MAX } else { ID_MAX };
        if self.capture != Capture::Nothing && self.text.len() < max {
            self.text.push(b);
        } else if self.capture == Capture::IdString || self.capture == Capture::IdNumber {
            // Too long to answer with.
            self.state = State::Done;
        } else if self.capture == Capture::Key {
            // Too long to be `id`.
            self.text.clear();
            self.capture = Capture::Nothing;
        }
    }

    fn string_ended(&mut self) {
        match std::mem::take(&mut self.capture) {
            Capture::Key => self.id_key = serde_json::from_slice::<String>(&self.text).is_ok_and(|k| k == "id"),
            Capture::IdString => {
                self.found = serde_json::from_slice::<serde_json::Value>(&self.text).ok().map(Id::Value);
                self.state = State::Done;
            }
            _ => {}
        }
    }

    /// The id found, if any. A number still being read when the input ended may have lost
    /// digits to the cut, so it does not count.
    pub fn finish(self) -> Option<Id> {
        self.found
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

    fn skipped_line(id: Option<i64>, len: usize) -> Frame {
        Frame::TooLong(Overlong { id: id.map(|n| Id::Exact(n.to_string().into())), len })
    }

    #[test]
    fn splits_lines_across_chunks() {
        assert_eq!(frames(&[b"ab", b"c\nde", b"\nf"], 10), vec![line("abc"), line("de"), line("f")]);
    }

    #[test]
    fn overlong_line_is_reported_once_and_reading_resumes() {
        let long = vec![b'x'; 25];
        assert_eq!(
            frames(&[b"ok\n", long.as_slice(), long.as_slice(), b"\nnext\n"], 10),
            vec![line("ok"), skipped_line(None, 50), line("next")]
        );
        assert_eq!(frames(&[b"0123456789012\nz\n"], 10), vec![skipped_line(None, 13), line("z")]);
        // Cut by EOF: what arrived is counted.
        assert_eq!(frames(&[b"ok\n", long.as_slice()], 10), vec![line("ok"), skipped_line(None, 25)]);
    }

    #[test]
    fn an_overlong_line_is_scanned_for_its_id_wherever_it_stands() {
        let pad = "x".repeat(300_000);
        let first = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"text":"{pad}"}}}}"#);
        let last = format!(r#"{{"method":"tools/call","params":{{"text":"{pad}","id":1}},"jsonrpc":"2.0","id":8}}"#);
        for text in [&first, &last] {
            let want = if text == &first { 7 } else { 8 };
            let input = format!("{text}\nok\n");
            // In one piece, and in pieces that cut through the id and the padding.
            let pieces: Vec<&[u8]> = input.as_bytes().chunks(4099).collect();
            for chunks in [vec![input.as_bytes()], pieces] {
                assert_eq!(frames(&chunks, 1000), vec![skipped_line(Some(want), text.len()), line("ok")]);
            }
        }
    }

    fn id_text(message: &str) -> Option<String> {
        // Fed one byte at a time, so every state is crossed at a piece boundary.
        let mut scan = IdScan::default();
        for b in message.as_bytes() {
            scan.feed(std::slice::from_ref(b));
        }
        let bytewise = scan.finish();
        assert_eq!(bytewise, id_in(message.as_bytes()), "{message}");
        bytewise.map(|id| {
            let mut out = String::new();
            id.write(&mut out);
            out
        })
    }

    #[test]
    fn the_id_is_read_when_the_received_part_holds_it() {
        let pad = "y".repeat(1000);
        for (message, want) in [
            (r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"text":"yyy"#.to_string(), "7"),
            (r#" { "id" : "a\"b" , "method":"x"#.into(), r#""a\"b""#),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"x":["}}\"",{{"id":0}}]}},"id":-4.5e3,"p":"{pad}"#
                ),
                "-4.5e3",
            ),
            // After a large params, the way the Python SDK 1.x orders its members.
            (format!(r#"{{"method":"tools/call","params":{{"content":"{pad}"}},"jsonrpc":"2.0","id":12}}"#), "12"),
            // Numbers keep their text: no rounding through f64, however large.
            (r#"{"id":18446744073709551616123,"#.into(), "18446744073709551616123"),
            (r#"{"id":3555727065.2172546}"#.into(), "3555727065.2172546"),
            (r#"{"\u0069d":"escaped key","method"#.into(), r#""escaped key""#),
            (r#"{"meta":null,"ok":true,"n":-1,"id":"z""#.into(), r#""z""#),
            // The first of two wins.
            (r#"{"id":1,"id":2}"#.into(), "1"),
        ] {
            assert_eq!(id_text(&message).as_deref(), Some(want), "{message}");
        }
    }

    #[test]
    fn the_id_is_null_when_it_cannot_be_read() {
        let long_id = format!(r#"{{"id":"{}","method":"x"}}"#, "i".repeat(ID_MAX));
        for message in [
            // The id comes after the cut, or the cut falls inside it.
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"text":"xxxx"#,
            r#"{"jsonrpc":"2.0","id":12345"#,
            r#"{"jsonrpc":"2.0","id":"abc"#,
            r#"{"params":{"id":5,"text":"xx"#,
            r#"{"params":"id","x":"id"}"#,
            // Not an object, or an id that is not a string or number, or too long to keep.
            r#"[{"id":1,"method":"ping"},"#,
            r#""id":1,"#,
            r#"{"id":null,"method":"x"#,
            r#"{"id":{"a":1},"method":"x"#,
            r#"{"id":true}"#,
            r#"{"id":-}"#,
            &long_id,
            r#"{"a":1} {"id":2}"#,
            "",
            r#"garbage {"id":1,"#,
        ] {
            assert_eq!(id_text(message), None, "{message}");
        }
    }
}
