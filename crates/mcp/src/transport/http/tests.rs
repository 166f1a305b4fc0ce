//! In-process tests of the HTTP transport where the daemon must be driven from inside: a
//! session-level notification (`tools/list_changed`, which a config reload sends) reaches the
//! session's GET stream, a 2025-06-18 stream has no priming event, and ending the session or
//! the server ends the stream; half-sent requests are cut off and connections over the cap are
//! refused; OAuth challenges, scopes and session binding with a stand-in verifier; a question to
//! the client (elicitation) travels on the POST's event stream and its answer comes back by
//! POST. The rest is tested against the real binary in the tests crate.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;
use crate::testing::{FakeApp, dispatcher};
use crate::transport::limits::Rate;

const LIMIT: Duration = Duration::from_secs(20);

struct Rig {
    addr: std::net::SocketAddr,
    dispatcher: Dispatcher<FakeApp>,
    shutdown: CancellationToken,
    served: tokio::task::JoinHandle<Result<(), TransportError>>,
}

async fn rig() -> Rig {
    rig_with(|_| {}).await
}

async fn rig_with(adjust: impl FnOnce(&mut HttpOptions)) -> Rig {
    let d = dispatcher();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let mut opts = HttpOptions {
        host: "127.0.0.1".into(),
        port: addr.port(),
        token: None,
        allowed_origins: Vec::new(),
        max_sessions: 8,
        session_idle: Duration::from_secs(600),
        sse_keepalive: Duration::from_secs(15),
        max_body_bytes: 1 << 20,
        request_timeout: Duration::from_secs(30),
        max_connections: 64,
        max_connections_per_peer: 64,
        new_sessions: Rate::new(1000, 1000),
        ui: None,
        oauth: None,
    };
    adjust(&mut opts);
    let served = tokio::spawn(serve(listener, d.clone(), opts, shutdown.clone()));
    Rig { addr, dispatcher: d, shutdown, served }
}

/// Sends a request; returns the connection positioned after the head, and the head.
async fn send(addr: std::net::SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut req =
        format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        let n = tokio::time::timeout(LIMIT, s.read(&mut b)).await.expect("head in time").unwrap();
        assert_eq!(n, 1, "connection closed inside the head: {}", String::from_utf8_lossy(&head));
        head.push(b[0]);
    }
    (s, String::from_utf8(head).unwrap())
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

async fn rest(mut s: TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(LIMIT, s.read_to_end(&mut out)).await.expect("body in time").unwrap();
    String::from_utf8(out).unwrap()
}

/// Reads the stream until `needle` appears; returns everything read.
async fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut out = Vec::new();
    while !String::from_utf8_lossy(&out).contains(needle) {
        let mut b = [0u8; 512];
        let n = tokio::time::timeout(LIMIT, s.read(&mut b)).await.expect("event in time").unwrap();
        assert!(n > 0, "stream ended before {needle:?}: {}", String::from_utf8_lossy(&out));
        out.extend_from_slice(&b[..n]);
    }
    String::from_utf8(out).unwrap()
}

const BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

async fn initialize(addr: std::net::SocketAddr, version: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": version, "clientInfo": {"name": "rig"}}});
    let (s, head) = send(addr, "POST", &[BOTH, JSON], &body.to_string()).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let sid = header(&head, "mcp-session-id").expect("session id");
    let reply: Value = serde_json::from_str(&rest(s).await).unwrap();
    assert_eq!(reply["result"]["protocolVersion"], version);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (_, head) = send(addr, "POST", &[BOTH, JSON, ("Mcp-Session-Id", &sid)], &note).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    sid
}

#[tokio::test]
async fn list_changed_reaches_the_get_stream_which_ends_with_its_session() {
    let r = rig().await;
    let sid = initialize(r.addr, "2025-06-18").await;
    let (mut stream, head) =
        send(r.addr, "GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)], "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(header(&head, "content-type").as_deref(), Some("text/event-stream"));
    r.dispatcher.sessions().notify_tools_changed();
    let seen = read_until(&mut stream, "notifications/tools/list_changed").await;
    assert!(seen.contains("event: message\r\ndata: {") || seen.contains("event: message\ndata: {"), "{seen}");
    assert!(!seen.contains("\nid: ") && !seen.contains("retry:"), "no priming before 2025-11-25: {seen}");
    let (del, head) = send(r.addr, "DELETE", &[("Mcp-Session-Id", &sid)], "").await;
    assert!(head.starts_with("HTTP/1.1 204"), "{head}");
    drop(del);
    // The stream ends (chunked terminator, then close) once its session is gone.
    let tail = rest(stream).await;
    assert!(tail.ends_with("0\r\n\r\n"), "{tail:?}");
    r.shutdown.cancel();
    tokio::time::timeout(LIMIT, r.served).await.expect("server stops").unwrap().unwrap();
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_the_server_returns() {
    let r = rig().await;
    let sid = initialize(r.addr, "2025-11-25").await;
    let (mut stream, head) =
        send(r.addr, "GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)], "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let priming = read_until(&mut stream, "data: \n\n").await;
    assert!(priming.contains("id: ") && priming.contains("retry: 2000"), "{priming}");
    r.shutdown.cancel();
    let tail = rest(stream).await;
    assert!(tail.ends_with("0\r\n\r\n"), "{tail:?}");
    tokio::time::timeout(LIMIT, r.served).await.expect("server stops").unwrap().unwrap();
    assert!(TcpStream::connect(r.addr).await.is_err(), "no longer listening");
}

/// Reads until the server closes the connection; returns what it sent.
async fn until_closed(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(LIMIT, s.read_to_end(&mut out)).await.expect("closed in time").unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn half_sent_requests_are_cut_off_and_the_cap_refuses_more_connections() {
    let r = rig_with(|o| {
        o.request_timeout = Duration::from_secs(2);
        o.max_connections = 2;
    })
    .await;
    // A head that never ends, and a body that never comes: both connections are closed.
    let mut head_only = TcpStream::connect(r.addr).await.unwrap();
    head_only.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let mut body_short = TcpStream::connect(r.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{",
        r.addr
    );
    body_short.write_all(head.as_bytes()).await.unwrap();
    // While both are open the cap is reached: a third connection is told so and closed.
    let mut third = TcpStream::connect(r.addr).await.unwrap();
    let refused = until_closed(&mut third).await;
    assert!(refused.starts_with("HTTP/1.1 503") && refused.contains("max_connections"), "{refused}");
    let cut = until_closed(&mut head_only).await;
    assert!(!cut.contains(" 200 "), "{cut}");
    let cut = until_closed(&mut body_short).await;
    assert!(!cut.contains(" 200 "), "{cut}");
    // Their slots are free again.
    let sid = initialize(r.addr, "2025-11-25").await;
    assert_eq!(sid.len(), 32);
    r.shutdown.cancel();
    tokio::time::timeout(LIMIT, r.served).await.expect("server stops").unwrap().unwrap();
}

#[tokio::test]
async fn one_address_gets_its_share_of_connections_and_mints_sessions_at_its_rate() {
    let r = rig_with(|o| {
        o.max_connections_per_peer = 2;
        o.new_sessions = Rate::new(1, 3);
    })
    .await;
    // Two connections of this address are open (their requests half sent): a third is refused
    // with the per-address key, though the server-wide cap (64) is far off.
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(r.addr).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
        open.push(s);
    }
    let mut third = TcpStream::connect(r.addr).await.unwrap();
    let refused = until_closed(&mut third).await;
    assert!(refused.starts_with("HTTP/1.1 503") && refused.contains("max_connections_per_peer"), "{refused}");
    drop(open);
    // The burst of three sessions, then 429 with Retry-After and a JSON-RPC error saying when.
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": "rig"}}}).to_string();
    let mut minted = Vec::new();
    let refusal = loop {
        let (s, head) = send(r.addr, "POST", &[BOTH, JSON], &body).await;
        if !head.starts_with("HTTP/1.1 200") {
            break (head, rest(s).await);
        }
        minted.push(header(&head, "mcp-session-id").expect("session id"));
        assert!(minted.len() <= 3, "more sessions than the burst allows");
    };
    assert_eq!(minted.len(), 3, "{refusal:?}");
    let (head, body) = refusal;
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
    let secs: u64 = header(&head, "retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=2).contains(&secs), "{head}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["id"], 7, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("retry in") && message.contains("new_sessions_per_sec"), "{reply}");
    // Sessions already made keep working.
    let ping = json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}).to_string();
    let (s, head) = send(r.addr, "POST", &[BOTH, JSON, ("Mcp-Session-Id", &minted[0])], &ping).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(serde_json::from_str::<Value>(&rest(s).await).unwrap()["result"], json!({}));
    r.shutdown.cancel();
    tokio::time::timeout(LIMIT, r.served).await.expect("server stops").unwrap().unwrap();
}

/// One GET of `path` with the given `Host` and optional `Origin`; the whole response.
async fn get_from(addr: std::net::SocketAddr, path: &str, host: &str, origin: Option<&str>) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    rest(s).await
}

#[tokio::test]
async fn the_apps_ui_router_needs_no_bearer_but_keeps_the_origin_and_host_checks() {
    let ui = axum::Router::new().route("/hello", axum::routing::get(|| async { "dashboard here" }));
    let r = rig_with(|o| {
        o.token = Some("s3cret".into());
        o.ui = Some(ui);
    })
    .await;
    let host = r.addr.to_string();
    let page = get_from(r.addr, "/ui/hello", &host, None).await;
    assert!(page.starts_with("HTTP/1.1 200") && page.ends_with("dashboard here"), "{page}");
    let same = get_from(r.addr, "/ui/hello", &host, Some(&format!("http://{host}"))).await;
    assert!(same.starts_with("HTTP/1.1 200"), "{same}");
    let foreign = get_from(r.addr, "/ui/hello", &host, Some("http://evil.example")).await;
    assert!(foreign.starts_with("HTTP/1.1 403"), "{foreign}");
    let rebound = get_from(r.addr, "/ui/hello", "evil.example", None).await;
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    // The MCP endpoint still wants its token.
    let mcp = get_from(r.addr, "/rpc", &host, None).await;
    assert!(mcp.starts_with("HTTP/1.1 401") || mcp.starts_with("HTTP/1.1 405"), "{mcp}");
    r.shutdown.cancel();
    tokio::time::timeout(LIMIT, r.served).await.expect("server stops").unwrap().unwrap();
}

/// Accepts `good:<subject>:<scope,scope>`; `down` cannot be checked now; anything else is invalid.
struct Words;

impl crate::auth::TokenVerifier for Words {
    fn verify<'a>(
        &'a self,
        token: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<crate::auth::AuthInfo, crate::auth::TokenRejection>> {
        use crate::auth::{AuthInfo, TokenRejection};
        let out = match token.strip_prefix("good:") {
            Some(rest) => {
                let (subject, scopes) = rest.split_once(':').unwrap_or((rest, ""));
                Ok(AuthInfo {
                    issuer: "https://as.example".into(),
                    subject: subject.into(),
                    client_id: Some("client-1".into()),
                    scopes: scopes.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect(),
                })
            }
            None if token == "down" => Err(TokenRejection::Unavailable("the issuer is not answering".into())),
            None => Err(TokenRejection::Invalid("the token is made up".into())),
        };
        Box::pin(std::future::ready(out))
    }
}

async fn oauth_rig() -> Rig {
    rig_with(|o| {
        o.token = Some("s3cret".into());
        o.oauth = Some(crate::auth::OAuthOptions {
            metadata: crate::auth::ResourceMetadata {
                resource: "https://mcp.example/mcp".into(),
                authorization_servers: vec!["https://as.example".into()],
                scopes_supported: vec!["r".into(), "a".into()],
                resource_name: None,
            },
            verifier: std::sync::Arc::new(Words),
            static_token: true,
            required_scope: Some("r".into()),
        });
    })
    .await
}

/// One request to `path` with `Host: host`; the head and the body.
async fn exchange(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.unwrap();
    let text = rest(s).await;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

fn init_with(token: &str) -> (String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": "rig"}}});
    (format!("Bearer {token}"), body.to_string())
}

#[tokio::test]
async fn oauth_tokens_are_challenged_checked_for_scope_and_kept_to_their_session() {
    let r = oauth_rig().await;
    let host = r.addr.to_string();
    let (head, body) = exchange(r.addr, "GET", "/.well-known/oauth-protected-resource/mcp", &host, &[], "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["resource"], "https://mcp.example/mcp");
    let (head, _) = exchange(r.addr, "GET", "/.well-known/oauth-protected-resource", &host, &[], "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "the root form too: {head}");

    let (_, init) = init_with("");
    let (head, _) = exchange(r.addr, "POST", "/mcp", &host, &[BOTH, JSON], &init).await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let challenge = header(&head, "www-authenticate").unwrap();
    assert!(
        challenge.contains(r#"resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp""#)
            && challenge.contains(r#"scope="r a""#)
            && !challenge.contains("error="),
        "{challenge}"
    );
    assert_eq!(header(&head, "connection").as_deref(), Some("close"));

    for (token, status, needle) in [
        ("made-up", "401", r#"error="invalid_token", error_description="the token is made up""#),
        ("down", "503", ""),
        ("good:alice:a", "403", r#"error="insufficient_scope", scope="r""#),
    ] {
        let (auth, init) = init_with(token);
        let (head, _) = exchange(r.addr, "POST", "/mcp", &host, &[BOTH, JSON, ("Authorization", &auth)], &init).await;
        assert!(head.starts_with(&format!("HTTP/1.1 {status}")), "{token}: {head}");
        assert!(header(&head, "www-authenticate").unwrap_or_default().contains(needle), "{token}: {head}");
    }

    // A session opened by alice is hers: bob and the static token do not find it.
    let (auth, init) = init_with("good:alice:r");
    let (head, _) = exchange(r.addr, "POST", "/mcp", &host, &[BOTH, JSON, ("Authorization", &auth)], &init).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let sid = header(&head, "mcp-session-id").unwrap();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    for (auth, status) in [("Bearer good:bob:r", "404"), ("Bearer s3cret", "404"), ("Bearer good:alice:r,a", "200")] {
        let h = [BOTH, JSON, ("Authorization", auth), ("Mcp-Session-Id", &sid)];
        let (head, _) = exchange(r.addr, "POST", "/mcp", &host, &h, &list).await;
        assert!(head.starts_with(&format!("HTTP/1.1 {status}")), "{auth}: {head}");
    }
    let (auth, init) = init_with("s3cret");
    let (head, _) = exchange(r.addr, "POST", "/mcp", &host, &[BOTH, JSON, ("Authorization", &auth)], &init).await;
    assert!(head.starts_with("HTTP/1.1 200"), "the static token still works: {head}");

    // `/rpc` is the static token's alone.
    let status = json!({"jsonrpc": "2.0", "id": 3, "method": "x.status"}).to_string();
    let (head, _) =
        exchange(r.addr, "POST", "/rpc", &host, &[JSON, ("Authorization", "Bearer good:alice:r,a")], &status).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");

    // Behind a tunnel the resource's public name is a fine Host; other names are not.
    let (head, _) = exchange(r.addr, "GET", "/healthz", "mcp.example", &[], "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (head, _) = exchange(r.addr, "GET", "/healthz", "evil.example", &[], "").await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    r.shutdown.cancel();
    tokio::time::timeout(LIMIT, r.served).await.expect("server stops").unwrap().unwrap();
}

#[tokio::test]
async fn a_question_to_the_client_goes_on_the_posts_stream_and_its_answer_comes_by_post() {
    let r = rig().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "rig"}}});
    let (s, head) = send(r.addr, "POST", &[BOTH, JSON], &body.to_string()).await;
    let sid = header(&head, "mcp-session-id").expect("session id");
    drop(rest(s).await);
    let session = [BOTH, JSON, ("Mcp-Session-Id", sid.as_str())];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    drop(send(r.addr, "POST", &session, &note).await);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test.confirm"}});
    let (mut stream, head) = send(r.addr, "POST", &session, &call.to_string()).await;
    assert_eq!(header(&head, "content-type").as_deref(), Some("text/event-stream"), "{head}");
    let seen = read_until(&mut stream, "elicitation/create").await;
    let line = seen.lines().find(|l| l.contains("elicitation/create")).unwrap();
    let ask: Value = serde_json::from_str(line.trim_start_matches("data:").trim()).unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "cancel"}}).to_string();
    let (s, head) = send(r.addr, "POST", &session, &answer).await;
    assert!(head.starts_with("HTTP/1.1 202"), "a response is accepted: {head}");
    drop(s);
    let tail = rest(stream).await;
    assert!(tail.contains(r#"\"action\":\"cancel\""#), "the call ends with the client's answer: {tail}");
    r.shutdown.cancel();
}
