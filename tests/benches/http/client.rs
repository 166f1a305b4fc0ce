//! The benchmark's HTTP side: one keep-alive HTTP/1.1 connection speaking MCP Streamable HTTP
//! with blocking std sockets, one request at a time (what an MCP client on one connection does).
//! It parses just enough HTTP: the status line, `Content-Length` or chunked bodies (rmcp answers
//! session requests as a chunked event stream), and `Mcp-Session-Id`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::Result;

/// How requests of one connection identify themselves: the handshake era's session, or the
/// stateless 2026-07-28 era's per-request `_meta`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Era {
    Session,
    Stateless,
}

impl Era {
    pub fn label(self) -> &'static str {
        match self {
            Era::Session => "session (2025-11-25)",
            Era::Stateless => "stateless (2026-07-28)",
        }
    }
}

pub const TOOL: &str = "core.list_tools";
const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const IO_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Response {
    pub status: u16,
    pub session_id: Option<String>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub struct Conn {
    stream: TcpStream,
    addr: SocketAddr,
    era: Era,
    session: Option<String>,
    next_id: u64,
    /// Bytes read but not consumed yet; `pos` is where the unconsumed part starts.
    buf: Vec<u8>,
    pos: usize,
    out: Vec<u8>,
}

impl Conn {
    /// Connects; a session-era connection also does `initialize` + `notifications/initialized`.
    pub fn open(addr: SocketAddr, era: Era) -> Result<Conn> {
        let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut conn = Conn {
            stream,
            addr,
            era,
            session: None,
            next_id: 1,
            buf: Vec::with_capacity(64 * 1024),
            pos: 0,
            out: Vec::with_capacity(2048),
        };
        if era == Era::Session {
            let init = format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{LEGACY}","capabilities":{{}},"clientInfo":{{"name":"http-bench","version":"0"}}}}}}"#
            );
            let resp = conn.post(&init, &[])?;
            if resp.status != 200 || !contains(&resp.body, b"\"result\"") {
                return Err(format!("initialize answered {}: {}", resp.status, resp.text()).into());
            }
            conn.session = Some(resp.session_id.ok_or("initialize answered without Mcp-Session-Id")?);
            let resp = conn.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, &[])?;
            if resp.status != 202 {
                return Err(format!("notifications/initialized answered {}: {}", resp.status, resp.text()).into());
            }
        }
        Ok(conn)
    }

    /// One `tools/call` of the benchmark's tool; fails unless it is answered with a result.
    pub fn call_tool(&mut self) -> Result<usize> {
        let id = self.next_id;
        self.next_id += 1;
        let resp = match self.era {
            Era::Session => self.post(
                &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{}}}}}}"#),
                &[],
            )?,
            Era::Stateless => self.post(
                &format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientInfo":{{"name":"http-bench","version":"0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
                ),
                &[("Mcp-Method", "tools/call"), ("Mcp-Name", TOOL)],
            )?,
        };
        // Both servers put the envelope first, event-stream framing or not: look near the start.
        let head = &resp.body[..resp.body.len().min(256)];
        if resp.status != 200 || !contains(head, b"\"result\"") {
            return Err(format!("tools/call answered {}: {}", resp.status, resp.text()).into());
        }
        Ok(resp.body.len())
    }

    /// One `ping` on a session: the transport and dispatcher floor, no tool.
    pub fn ping(&mut self) -> Result<usize> {
        let id = self.next_id;
        self.next_id += 1;
        let resp = self.post(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#), &[])?;
        let head = &resp.body[..resp.body.len().min(256)];
        if resp.status != 200 || !contains(head, b"\"result\"") {
            return Err(format!("ping answered {}: {}", resp.status, resp.text()).into());
        }
        Ok(resp.body.len())
    }

    /// The structured result of one call, for the payload both sides serve.
    pub fn call_tool_json(&mut self) -> Result<Response> {
        self.next_id += 1;
        self.post(
            &format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientInfo":{{"name":"http-bench","version":"0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#,
                self.next_id
            ),
            &[("Mcp-Method", "tools/call"), ("Mcp-Name", TOOL)],
        )
    }

    /// Ends the session (DELETE), so sessions do not pile up between runs.
    pub fn close(mut self) -> Result<()> {
        if let Some(id) = self.session.take() {
            self.out.clear();
            write!(
                self.out,
                "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: {LEGACY}\r\n\r\n",
                self.addr
            )?;
            self.stream.write_all(&self.out)?;
            let resp = self.read_response()?;
            if !(200..300).contains(&resp.status) {
                return Err(format!("DELETE answered {}: {}", resp.status, resp.text()).into());
            }
        }
        Ok(())
    }

    fn post(&mut self, body: &str, extra: &[(&str, &str)]) -> Result<Response> {
        self.out.clear();
        write!(
            self.out,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        )?;
        match (&self.session, self.era) {
            (Some(id), _) => write!(self.out, "Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: {LEGACY}\r\n")?,
            (None, Era::Stateless) => write!(self.out, "MCP-Protocol-Version: {MODERN}\r\n")?,
            (None, Era::Session) => {}
        }
        for (k, v) in extra {
            write!(self.out, "{k}: {v}\r\n")?;
        }
        self.out.extend_from_slice(b"\r\n");
        self.out.extend_from_slice(body.as_bytes());
        self.stream.write_all(&self.out)?;
        self.read_response()
    }

    fn read_response(&mut self) -> Result<Response> {
        let head_end = loop {
            if let Some(i) = find(&self.buf[self.pos..], b"\r\n\r\n") {
                break self.pos + i + 4;
            }
            self.fill()?;
        };
        let head = std::str::from_utf8(&self.buf[self.pos..head_end])?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status: u16 = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or("bad status line")?;
        let (mut length, mut chunked, mut session_id) = (None, false, None);
        for line in lines {
            let Some((k, v)) = line.split_once(':') else { continue };
            let v = v.trim();
            if k.eq_ignore_ascii_case("content-length") {
                length = Some(v.parse::<usize>()?);
            } else if k.eq_ignore_ascii_case("transfer-encoding") {
                chunked = v.eq_ignore_ascii_case("chunked");
            } else if k.eq_ignore_ascii_case("mcp-session-id") {
                session_id = Some(v.to_string());
            }
        }
        self.pos = head_end;
        let body = if chunked {
            self.read_chunked()?
        } else {
            let n = length.unwrap_or(0);
            while self.buf.len() - self.pos < n {
                self.fill()?;
            }
            let body = self.buf[self.pos..self.pos + n].to_vec();
            self.pos += n;
            body
        };
        Ok(Response { status, session_id, body })
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(&self.buf[self.pos..], b"\r\n") {
                    break self.pos + i;
                }
                self.fill()?;
            };
            let size_text = std::str::from_utf8(&self.buf[self.pos..line_end])?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or_default().trim(), 16)?;
            self.pos = line_end + 2;
            while self.buf.len() - self.pos < size + 2 {
                self.fill()?;
            }
            body.extend_from_slice(&self.buf[self.pos..self.pos + size]);
            self.pos += size + 2;
            if size == 0 {
                return Ok(body);
            }
        }
    }

    /// Reads more bytes, first dropping what was consumed.
    fn fill(&mut self) -> Result<()> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + 16 * 1024, 0);
        let n = self.stream.read(&mut self.buf[len..])?;
        self.buf.truncate(len + n);
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        Ok(())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}
