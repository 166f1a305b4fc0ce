//! Newline framing with a hard line limit. Unlike `LinesCodec`, an over-long line is reported as
//! a frame of its own (so the session can answer -32700) and reading resumes after the next
//! newline, and bytes are not required to be UTF-8 (the dispatcher reports that per message).

use bytes::BytesMut;
use tokio_util::codec::Decoder;

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Line(BytesMut),
    /// A line longer than the limit was skipped.
    TooLong,
}

pub struct LineCodec {
    max: usize,
    discarding: bool,
    scanned: usize,
}

impl LineCodec {
    pub fn new(max: usize) -> LineCodec {
        LineCodec { max, discarding: false, scanned: 0 }
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
                if std::mem::take(&mut self.discarding) || i > self.max {
                    return Ok(Some(Frame::TooLong));
                }
                line.truncate(i);
                Ok(Some(Frame::Line(line)))
            }
            None if buf.len() > self.max => {
                // Drop what we have; remember to report once the line ends.
                buf.clear();
                self.scanned = 0;
                self.discarding = true;
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
        if std::mem::take(&mut self.discarding) {
            buf.clear();
            return Ok(Some(Frame::TooLong));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        Ok(Some(Frame::Line(buf.split())))
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
        assert_eq!(frames(&[b"ok\n", &long, &long, b"\nnext\n"], 10), vec![line("ok"), Frame::TooLong, line("next")]);
        assert_eq!(frames(&[b"0123456789012\nz\n"], 10), vec![Frame::TooLong, line("z")]);
    }

    #[test]
    fn invalid_utf8_passes_through_as_bytes() {
        assert_eq!(frames(&[b"\xff\xfe\n"], 10), vec![Frame::Line(BytesMut::from(&b"\xff\xfe"[..]))]);
    }
}
