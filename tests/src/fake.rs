//! Scripted HTTP/1.1 servers on loopback that stand in for LLM, search and embedding APIs. Each
//! records every request it gets (method, target, headers, body) so tests can assert exactly what
//! the daemon sent, and answers with whatever the test's handler returns — a status and body, or
//! a hang that holds the connection open until the client gives up (timeouts, cancellation).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::WAIT;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
    /// Query parameters, percent-decoded, in order.
    pub fn query(&self) -> Vec<(String, String)> {
        let Some((_, q)) = self.target.split_once('?') else { return Vec::new() };
        q.split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect()
    }
    pub fn param(&self, name: &str) -> Option<String> {
        self.query().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("request body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the server answers.
pub enum Reply {
    /// A status with a JSON body.
    Json(u16, Value),
    /// A status, extra headers and a raw body with its content type.
    Raw { status: u16, headers: Vec<(String, String)>, content_type: String, body: Vec<u8> },
    /// No answer: hold the connection until the client closes it.
    Hang,
}

impl Reply {
    pub fn ok(v: Value) -> Reply {
        Reply::Json(200, v)
    }
    pub fn text(status: u16, content_type: &str, body: &str) -> Reply {
        Reply::Raw { status, headers: Vec::new(), content_type: content_type.to_string(), body: body.into() }
    }
    /// A JSON reply with extra headers (e.g. `Retry-After`).
    pub fn json_with(status: u16, headers: &[(&str, &str)], v: Value) -> Reply {
        Reply::Raw {
            status,
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            content_type: "application/json".to_string(),
            body: v.to_string().into_bytes(),
        }
    }
}

type Handler = Box<dyn FnMut(&Request) -> Reply + Send>;

/// A running fake; it serves until the test process ends.
pub struct Server {
    pub addr: SocketAddr,
    requests: Receiver<Request>,
    hangups: Receiver<()>,
}

impl Server {
    /// Starts a server that answers every request with `handler`'s reply (one request at a
    /// time across connections, so scripted sequences stay in order).
    pub fn start(handler: impl FnMut(&Request) -> Reply + Send + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake server");
        let addr = listener.local_addr().expect("addr");
        let handler: Arc<Mutex<Handler>> = Arc::new(Mutex::new(Box::new(handler)));
        let (req_tx, requests) = channel();
        let (hup_tx, hangups) = channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (handler, req_tx, hup_tx) = (handler.clone(), req_tx.clone(), hup_tx.clone());
                std::thread::spawn(move || serve(stream, handler, req_tx, hup_tx));
            }
        });
        Server { addr, requests, hangups }
    }

    /// A server that answers the given replies in order (and 500 once they run out).
    pub fn scripted(replies: Vec<Reply>) -> Server {
        let mut replies = replies.into_iter();
        Server::start(move |_| {
            replies.next().unwrap_or_else(|| {
                Reply::Json(500, serde_json::json!({"error": {"message": "fake server: script exhausted"}}))
            })
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next request received; panics after `WAIT`.
    pub fn next_request(&self) -> Request {
        self.requests.recv_timeout(WAIT).expect("the fake server got no request in time")
    }

    /// A request if one arrives within `wait`.
    pub fn try_request(&self, wait: Duration) -> Option<Request> {
        self.requests.recv_timeout(wait).ok()
    }

    /// Waits until the client closed a connection whose request was left hanging.
    pub fn wait_hangup(&self) {
        self.hangups.recv_timeout(WAIT).expect("the client did not close the hanging connection in time");
    }
}

fn serve(stream: TcpStream, handler: Arc<Mutex<Handler>>, req_tx: Sender<Request>, hup_tx: Sender<()>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
    let mut w = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut r = BufReader::new(stream);
    loop {
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut parts = line.split_whitespace();
        let (Some(method), Some(target)) = (parts.next(), parts.next()) else { return };
        let (method, target) = (method.to_string(), target.to_string());
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let len = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let req = Request { method, target, headers, body };
        let reply = (handler.lock().unwrap_or_else(|e| e.into_inner()))(&req);
        let _ = req_tx.send(req);
        let (status, extra, content_type, body) = match reply {
            Reply::Json(status, v) => (status, Vec::new(), "application/json".to_string(), v.to_string().into_bytes()),
            Reply::Raw { status, headers, content_type, body } => (status, headers, content_type, body),
            Reply::Hang => {
                // Hold the request until the client closes the connection.
                let mut sink = [0u8; 1024];
                loop {
                    match r.read(&mut sink) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                let _ = hup_tx.send(());
                return;
            }
        };
        let mut head =
            format!("HTTP/1.1 {status} Fake\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n", body.len());
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if w.write_all(head.as_bytes()).and_then(|_| w.write_all(&body)).and_then(|_| w.flush()).is_err() {
            return;
        }
    }
}
