//! Raw HTTP/1.1 for the Streamable HTTP transport tests: a small blocking client (std
//! `TcpStream`, `Connection: close`) that reads plain, chunked and event-stream bodies, for a
//! daemon started with `Daemon::builder(..).http()`. Every read is bounded by `WAIT`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};

use serde_json::Value;

use crate::WAIT;

/// A response read to its end.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        find(&self.headers, name)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
    /// The events of an event-stream body.
    pub fn events(&self) -> Vec<Event> {
        let mut r = BufReader::new(&self.body[..]);
        std::iter::from_fn(|| read_event(&mut r)).collect()
    }
}

/// One server-sent event (comments skipped; multi-line data joined with `\n`).
#[derive(Debug, Default, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub retry: Option<u64>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {:?}", self.data))
    }
}

/// Reads the next event that has a data line; None at the end of the stream.
fn read_event<R: BufRead>(r: &mut R) -> Option<Event> {
    let mut ev = Event::default();
    let mut data_lines = 0;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).expect("read event stream") == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if data_lines > 0 {
                return Some(ev);
            }
            ev = Event::default();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => ev.id = Some(value.to_string()),
            "event" => ev.event = Some(value.to_string()),
            "retry" => ev.retry = value.parse().ok(),
            "data" => {
                if data_lines > 0 {
                    ev.data.push('\n');
                }
                ev.data.push_str(value);
                data_lines += 1;
            }
            _ => {}
        }
    }
}

fn find<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// A client for one server address, sending a bearer token when it has one (and the request
/// names none of its own).
#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub token: Option<String>,
}

impl Client {
    /// A client that sends no token (for requests about authentication).
    pub fn new(addr: SocketAddr) -> Client {
        Client { addr, token: None }
    }

    pub fn with_token(addr: SocketAddr, token: impl Into<String>) -> Client {
        Client { addr, token: Some(token.into()) }
    }

    /// Sends one request and reads the whole response.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        let mut s = self.open(method, path, headers, body);
        let mut bytes = Vec::new();
        s.body.read_to_end(&mut bytes).expect("read body");
        Response { status: s.status, headers: s.headers, body: bytes }
    }

    /// Sends one request and returns once the response head arrived; the body is read as
    /// it comes (event streams).
    pub fn open(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Stream {
        let stream = TcpStream::connect(self.addr).expect("connect to the HTTP port");
        stream.set_read_timeout(Some(WAIT)).expect("read timeout");
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        if let Some(token) = &self.token
            && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
        let mut w = stream.try_clone().expect("clone");
        w.write_all(head.as_bytes()).expect("write head");
        w.write_all(body).expect("write body");
        w.flush().expect("flush");
        let mut r = BufReader::new(stream);
        let mut status_line = String::new();
        r.read_line(&mut status_line).expect("read status line");
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            r.read_line(&mut line).expect("read header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let mode = if find(&headers, "transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
            Mode::Chunked { left: 0, done: false }
        } else if let Some(n) = find(&headers, "content-length").and_then(|n| n.parse().ok()) {
            Mode::Length(n)
        } else {
            Mode::ToEof
        };
        Stream { status, headers, body: BufReader::new(Body { r, mode }) }
    }
}

/// A response whose body is read as it arrives.
pub struct Stream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    body: BufReader<Body>,
}

impl Stream {
    pub fn header(&self, name: &str) -> Option<&str> {
        find(&self.headers, name)
    }
    /// The next event; None when the server ended the stream. Panics after `WAIT`.
    pub fn next_event(&mut self) -> Option<Event> {
        read_event(&mut self.body)
    }
    /// The next raw line of the body (comments included); None at its end.
    pub fn next_line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.body.read_line(&mut line).expect("read body line") {
            0 => None,
            _ => Some(line.trim_end_matches(['\r', '\n']).to_string()),
        }
    }
}

enum Mode {
    Chunked { left: usize, done: bool },
    Length(usize),
    ToEof,
}

/// The body bytes of a response, de-chunked.
struct Body {
    r: BufReader<TcpStream>,
    mode: Mode,
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.mode {
            Mode::ToEof => self.r.read(buf),
            Mode::Length(left) => {
                if *left == 0 {
                    return Ok(0);
                }
                let n = (*left).min(buf.len());
                let got = self.r.read(&mut buf[..n])?;
                *left -= got;
                Ok(got)
            }
            Mode::Chunked { left, done } => {
                if *done {
                    return Ok(0);
                }
                if *left == 0 {
                    let mut size = String::new();
                    self.r.read_line(&mut size)?;
                    if size.trim().is_empty() {
                        // The CRLF after the previous chunk.
                        size.clear();
                        if self.r.read_line(&mut size)? == 0 {
                            // The server closed the connection without a last chunk.
                            *done = true;
                            return Ok(0);
                        }
                    }
                    let hex = size.trim().split(';').next().unwrap_or_default();
                    let n = usize::from_str_radix(hex, 16).map_err(|_| {
                        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad chunk size {size:?}"))
                    })?;
                    if n == 0 {
                        *done = true;
                        return Ok(0);
                    }
                    *left = n;
                }
                let n = (*left).min(buf.len());
                let got = self.r.read(&mut buf[..n])?;
                if got == 0 {
                    *done = true;
                }
                *left -= got;
                Ok(got)
            }
        }
    }
}
