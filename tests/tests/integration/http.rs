//! The Streamable HTTP transport of the real daemon (`serve --http --port 0`), over raw HTTP:
//! session lifecycle, every status code the transport gives (200 202 204 400 401 403 404 405
//! 406 409 413 415), Origin/Host/bearer security, event-stream answers and GET streams,
//! stateless 2026-07-28 requests with their header checks, batches, `/healthz`, `/rpc`, the
//! session cap, and streams ending at shutdown.

use openhuman_tests::http::{Client, Response};
use openhuman_tests::{Daemon, Home, WAIT, kill, wait_exit};
use serde_json::{Value, json};

const BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");
const MODERN: &str = "2026-07-28";

fn req(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn note(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

/// A stateless-era request: the version (and client) travel in `_meta`.
fn modern(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "http-modern", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    req(id, method, params)
}

/// POST /mcp with both Accept types, JSON content type and `extra` headers. A 2026-07-28
/// request also gets the headers that mirror its body (`Mcp-Method`, and `Mcp-Name` for a call,
/// a prompt or a read), as clients send them, unless `extra` names them; `post_bare` does not.
fn post(c: &Client, extra: &[(&str, &str)], body: &Value) -> Response {
    let given = |name: &str| extra.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut mirrored: Vec<(&str, String)> = Vec::new();
    if body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN {
        let method = body["method"].as_str().unwrap_or_default();
        if !given("Mcp-Method") {
            mirrored.push(("Mcp-Method", method.to_string()));
        }
        let name = match method {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(n) = name.filter(|_| !given("Mcp-Name")) {
            mirrored.push(("Mcp-Name", n.to_string()));
        }
    }
    let mut h: Vec<(&str, &str)> = extra.to_vec();
    h.extend(mirrored.iter().map(|(k, v)| (*k, v.as_str())));
    post_bare(c, &h, body)
}

/// POST /mcp with both Accept types, JSON content type and exactly the `extra` headers.
fn post_bare(c: &Client, extra: &[(&str, &str)], body: &Value) -> Response {
    let mut h = vec![BOTH, JSON];
    h.extend_from_slice(extra);
    c.send("POST", "/mcp", &h, body.to_string().as_bytes())
}

fn init_body(version: &str, client: &str) -> Value {
    req(
        0,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}),
    )
}

/// Handshake; returns the session id.
fn initialize(c: &Client, version: &str) -> String {
    let r = post(c, &[], &init_body(version, "http-test"));
    assert_eq!(r.status, 200, "{}", r.text());
    let sid = r.header("mcp-session-id").expect("Mcp-Session-Id").to_string();
    let r = post(c, &[("Mcp-Session-Id", &sid)], &note("notifications/initialized"));
    assert_eq!(r.status, 202, "{}", r.text());
    sid
}

fn error_code(r: &Response) -> i64 {
    r.json()["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error code: {}", r.text()))
}

#[test]
fn session_lifecycle_with_ids_kept_out_of_the_logs() {
    let home = Home::new();
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();

    let r = post(&c, &[], &init_body("2025-11-25", "HTTP Test Client"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["id"], 0);
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
    let sid = r.header("mcp-session-id").expect("Mcp-Session-Id").to_string();
    assert_eq!(sid.len(), 32, "128 bits as hex: {sid}");
    assert!(sid.chars().all(|ch| ch.is_ascii_hexdigit()), "{sid}");
    // Provenance comes from `initialize`, as on the socket; the id is logged only hashed.
    let created = d.wait_log("HTTP session created");
    assert!(created.contains("source=mcp:http-test-client"), "{created}");
    assert!(created.contains("session=sha256:"), "{created}");
    assert!(!created.contains(&sid), "session id in the log: {created}");

    let r = post(&c, &[("Mcp-Session-Id", &sid)], &note("notifications/initialized"));
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty(), "202 has no body: {}", r.text());

    let sess = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let r = post(&c, &sess, &req(2, "tools/list", json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!r.json()["result"]["tools"].as_array().unwrap().is_empty());
    // An absent version header is accepted (2025-03-26 clients send none).
    let r = post(&c, &[("Mcp-Session-Id", &sid)], &req(3, "ping", json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"], json!({}));

    let r = post(&c, &[], &req(4, "tools/list", json!({})));
    assert_eq!(r.status, 400, "no session id: {}", r.text());
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("Mcp-Session-Id"));
    // A supported version other than the negotiated one is served; an unknown one is refused.
    let r =
        post(&c, &[("Mcp-Session-Id", &sid), ("MCP-Protocol-Version", "2025-03-26")], &req(5, "tools/list", json!({})));
    assert_eq!(r.status, 200, "a supported version header: {}", r.text());
    let r =
        post(&c, &[("Mcp-Session-Id", &sid), ("MCP-Protocol-Version", "1999-01-01")], &req(5, "tools/list", json!({})));
    assert_eq!(r.status, 400, "an unsupported version header: {}", r.text());
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("unsupported"), "{}", r.text());
    let r = post(&c, &[("Mcp-Session-Id", "0123456789abcdef0123456789abcdef")], &req(6, "ping", json!({})));
    assert_eq!(r.status, 404, "unknown session: {}", r.text());

    let r = c.send("DELETE", "/mcp", &[("Mcp-Session-Id", &sid)], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    let ended = d.wait_log("HTTP session ended by the client");
    assert!(!ended.contains(&sid), "{ended}");
    let r = post(&c, &sess, &req(7, "tools/list", json!({})));
    assert_eq!(r.status, 404, "deleted session: {}", r.text());
    let r = c.send("GET", "/mcp", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)], b"");
    assert_eq!(r.status, 404);
    let r = c.send("DELETE", "/mcp", &[("Mcp-Session-Id", &sid)], b"");
    assert_eq!(r.status, 404);
}

#[test]
fn bearer_token_guards_everything_but_healthz() {
    let home = Home::new();
    let token = "s3cret-http-token";
    let d = Daemon::builder(&home).http().env("OPENHUMAN_MCP_AUTH_TOKEN", token).start();
    let c = d.http_client();

    let r = c.send("GET", "/healthz", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "ok");
    assert!(r.json()["version"].is_string());

    let r = post(&c, &[], &init_body("2025-11-25", "t"));
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"), "{:?}", r.headers);
    let r = post(&c, &[("Authorization", "Bearer wrong-token")], &init_body("2025-11-25", "t"));
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(challenge.starts_with("Bearer") && challenge.contains("invalid_token"), "{challenge}");
    let auth = format!("Bearer {token}");
    let r = post(&c, &[("Authorization", &auth)], &init_body("2025-11-25", "t"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("mcp-session-id").is_some());

    let status = json!({"jsonrpc": "2.0", "id": 9, "method": "openhuman.daemon_status"});
    let r = c.send("POST", "/rpc", &[JSON], status.to_string().as_bytes());
    assert_eq!(r.status, 401, "/rpc needs the token too");
    let r = c.send("POST", "/rpc", &[JSON, ("Authorization", &auth)], status.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["id"], 9);
    assert!(body["result"]["pid"].as_u64().unwrap() > 0, "{body}");
    assert_eq!(body["result"]["sessions"], 1, "the HTTP session counts: {body}");
    let r = c.send(
        "POST",
        "/rpc",
        &[JSON, ("Authorization", &auth)],
        req(10, "tools/list", json!({})).to_string().as_bytes(),
    );
    assert_eq!(error_code(&r), -32601, "/rpc serves openhuman.* only: {}", r.text());
    let r = c.send("POST", "/rpc", &[JSON, ("Authorization", &auth)], b"{oops");
    assert_eq!(r.status, 400);
    assert_eq!(error_code(&r), -32700);
}

/// HTTP needs a token by default: the daemon generates one, 0600 in the home, `http-token`
/// prints it, and without it nothing but `/healthz` answers (not `/rpc`'s control methods).
/// Serving without one takes `allow_no_token`, and a loud warning.
#[test]
fn http_needs_the_generated_token_unless_told_otherwise() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    let d = Daemon::builder(&home).http().start();
    let file = home.path().join("http-token");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let out = home.daemon_cmd().arg("http-token").output().unwrap();
    assert!(out.status.success());
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(token, std::fs::read_to_string(&file).unwrap().trim());
    assert_eq!(token.len(), 64);
    let anyone = Client::new(d.http_addr());
    assert_eq!(post(&anyone, &[], &init_body("2025-11-25", "t")).status, 401);
    let shutdown = json!({"jsonrpc": "2.0", "id": 1, "method": "openhuman.daemon_shutdown"}).to_string();
    assert_eq!(anyone.send("POST", "/rpc", &[JSON], shutdown.as_bytes()).status, 401);
    let ingest =
        json!({"jsonrpc": "2.0", "id": 2, "method": "openhuman.memory_ingest", "params": {"paths": ["/etc/hostname"]}});
    assert_eq!(anyone.send("POST", "/rpc", &[JSON], ingest.to_string().as_bytes()).status, 401);
    assert_eq!(anyone.send("GET", "/healthz", &[], b"").status, 200);
    let owner = Client::with_token(d.http_addr(), &token);
    assert_eq!(post(&owner, &[], &init_body("2025-11-25", "t")).status, 200);
    drop(d);
    // The same token on the next start.
    let d = Daemon::builder(&home).http().start();
    assert_eq!(post(&Client::with_token(d.http_addr(), &token), &[], &init_body("2025-11-25", "t")).status, 200);
    drop(d);
    let d = Daemon::builder(&home).http().env("OPENHUMAN_MCP_HTTP_ALLOW_NO_TOKEN", "true").start();
    assert!(d.startup_log().iter().any(|l| l.contains("WITHOUT a token")), "{:#?}", d.startup_log());
    assert_eq!(post(&Client::new(d.http_addr()), &[], &init_body("2025-11-25", "t")).status, 200);
}

/// A token file other users can read is refused with the fix; a private one is used.
#[test]
fn a_token_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    // Outside the home: the daemon makes its home private at start, but not other places.
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("token");
    std::fs::write(&file, "file-token-0123456789\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    home.write_config(&format!("[mcp.http]\nauth_token_file = \"{}\"\n", file.display()));
    let err = Daemon::builder(&home).http().try_start().err().expect("refused to start");
    assert!(err.contains("can be read by other users") && err.contains("chmod 600"), "{err}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    assert_eq!(post(&c, &[], &init_body("2025-11-25", "t")).status, 401);
    let r = post(&c, &[("Authorization", "Bearer file-token-0123456789")], &init_body("2025-11-25", "t"));
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The token never shows in the process table: the daemon takes it from a file
/// (`--auth-token-file`) or the environment, refuses it as an argument, and the service units and
/// client entries the project writes carry no token.
#[test]
fn the_token_stays_off_the_process_table() {
    use std::os::unix::fs::PermissionsExt;
    let token = "argv-secret-5f1c0e9a7b3d";
    let cmdline =
        |pid: u32| String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap()).into_owned();
    let home = Home::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let served_off_argv = |d: Daemon| {
        let argv = cmdline(d.pid());
        assert!(argv.contains("serve") && !argv.contains(token), "{argv:?}");
        let r = post(&Client::with_token(d.http_addr(), token), &[], &init_body("2025-11-25", "t"));
        assert_eq!(r.status, 200, "{}", r.text());
    };
    served_off_argv(Daemon::builder(&home).http().args(["--auth-token-file".as_ref(), file.as_os_str()]).start());
    served_off_argv(Daemon::builder(&home).http().env("OPENHUMAN_MCP_AUTH_TOKEN", token).start());
    let err = Daemon::builder(&home).http().args(["--auth-token", token]).try_start().err().expect("refused");
    assert!(err.contains("--auth-token-file") && err.contains("OPENHUMAN_MCP_AUTH_TOKEN"), "{err}");
    // What the project writes for others to run: units and client entries, with a token set.
    let mut written = Vec::new();
    let mut run = |args: &[&str]| {
        let out = home.daemon_cmd().env("OPENHUMAN_MCP_AUTH_TOKEN", token).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        written.push((args.join(" "), String::from_utf8_lossy(&out.stdout).into_owned()));
    };
    run(&["service", "install", "--print"]);
    for client in ["claude-desktop", "cursor", "claude-code", "vscode", "zed", "codex", "gemini", "continue"] {
        run(&["register", client, "--print"]);
    }
    for (what, text) in written {
        assert!(!text.contains(token) && !text.contains("auth-token"), "{what}:\n{text}");
    }
}

#[test]
fn foreign_origins_and_rebinding_hosts_are_refused() {
    let home = Home::new();
    home.write_config("[mcp.http]\nallowed_origins = [\"https://app.example\"]\n");
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    let init = init_body("2025-11-25", "origin-test");

    let r = post(&c, &[("Origin", "http://evil.example")], &init);
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.header("mcp-session-id").is_none());
    let r = post(&c, &[("Origin", "null")], &init);
    assert_eq!(r.status, 403);
    let r = c.send("GET", "/healthz", &[("Origin", "http://evil.example")], b"");
    assert_eq!(r.status, 403);

    let r = post(&c, &[("Origin", "http://localhost:6274")], &init);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(&c, &[("Origin", "https://app.example")], &init);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), Some("https://app.example"));
    assert!(r.header("access-control-expose-headers").unwrap().contains("mcp-session-id"));
    let r =
        c.send("OPTIONS", "/mcp", &[("Origin", "https://app.example"), ("Access-Control-Request-Method", "POST")], b"");
    assert_eq!(r.status, 204, "preflight: {}", r.text());
    assert!(r.header("access-control-allow-methods").unwrap().contains("POST"));

    let evil_host = format!("evil.example.com:{}", c.addr.port());
    let r = post(&c, &[("Host", &evil_host)], &init);
    assert_eq!(r.status, 403, "DNS rebinding: {}", r.text());
    let r = post(&c, &[("Host", "evil.example.com")], &init);
    assert_eq!(r.status, 403);
    let local = format!("localhost:{}", c.addr.port());
    let r = post(&c, &[("Host", &local), ("Origin", &format!("http://{local}"))], &init);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(&c, &[("Host", "127.0.0.1:1")], &init);
    assert_eq!(r.status, 200, "any port of a loopback host: {}", r.text());
}

#[test]
fn bad_requests_get_their_status_and_the_daemon_keeps_serving() {
    let home = Home::new();
    home.write_config("[mcp.http]\nmax_body_bytes = 4096\n");
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    let sid = initialize(&c, "2025-11-25");
    let ping = req(1, "ping", json!({})).to_string();

    for accept in ["application/json", "text/event-stream", "text/html"] {
        let r = c.send("POST", "/mcp", &[("Accept", accept), JSON, ("Mcp-Session-Id", &sid)], ping.as_bytes());
        assert_eq!(r.status, 406, "Accept: {accept}: {}", r.text());
    }
    let r = c.send("GET", "/mcp", &[("Accept", "application/json"), ("Mcp-Session-Id", &sid)], b"");
    assert_eq!(r.status, 406);
    let r = c.send("POST", "/mcp", &[BOTH, ("Content-Type", "text/plain"), ("Mcp-Session-Id", &sid)], ping.as_bytes());
    assert_eq!(r.status, 415, "{}", r.text());
    let r = c.send("PUT", "/mcp", &[BOTH, JSON], ping.as_bytes());
    assert_eq!(r.status, 405);
    let r = c.send("GET", "/no-such-endpoint", &[], b"");
    assert_eq!(r.status, 404);

    for body in [&b"{not json"[..], &b"\xff\xfe{}"[..], &b""[..]] {
        let r = c.send("POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", &sid)], body);
        assert_eq!(r.status, 400, "{:?}: {}", body, r.text());
        let err = r.json();
        assert_eq!(err["error"]["code"], -32700, "{err}");
        assert_eq!(err["id"], Value::Null);
    }
    let big =
        format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}", "x".repeat(5000));
    let r = c.send("POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", &sid)], big.as_bytes());
    assert_eq!(r.status, 413, "{}", r.text());

    // Nothing above hurt the daemon or the session.
    let r = post(&c, &[("Mcp-Session-Id", &sid)], &req(2, "ping", json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.send("GET", "/healthz", &[], b"").status, 200);
}

#[test]
fn a_progress_token_or_a_log_level_gets_an_event_stream() {
    let home = Home::new();
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    let sid = initialize(&c, "2025-11-25");
    let s = [("Mcp-Session-Id", sid.as_str())];

    let r = post(&c, &s, &req(11, "tools/list", json!({"_meta": {"progressToken": "p-1"}})));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    let last = events.last().expect("at least the response").json();
    assert_eq!(last["id"], 11, "the stream ends with the response: {last}");
    assert!(last["result"]["tools"].is_array());
    for e in &events[..events.len() - 1] {
        assert!(e.json()["method"].is_string(), "only notifications before it: {e:?}");
    }
    // Without a token the same request is plain JSON.
    let r = post(&c, &s, &req(12, "tools/list", json!({})));
    assert_eq!(r.header("content-type"), Some("application/json"));

    let r = post(&c, &s, &req(13, "logging/setLevel", json!({"level": "debug"})));
    assert_eq!(r.json()["result"], json!({}));
    let r = post(&c, &s, &req(14, "ping", json!({})));
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "logs may come: {}", r.text());
    assert_eq!(r.events().last().unwrap().json()["id"], 14);
}

#[test]
fn get_streams_prime_for_2025_11_25_only_and_keep_alive() {
    let home = Home::new();
    home.write_config("[mcp.http]\nsse_keepalive_secs = 1\n");
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();

    let sid = initialize(&c, "2025-11-25");
    let get = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid.as_str())];
    let mut stream = c.open("GET", "/mcp", &get, b"");
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let priming = stream.next_event().expect("priming event");
    assert!(priming.id.as_deref().is_some_and(|id| !id.is_empty()), "{priming:?}");
    assert!(priming.retry.is_some(), "{priming:?}");
    assert_eq!(priming.data, "");
    // One stream per session: a second would split the notifications.
    let r = c.send("GET", "/mcp", &get, b"");
    assert_eq!(r.status, 409, "{}", r.text());
    // Silence is filled with comments.
    while let Some(line) = stream.next_line() {
        if line.starts_with(':') {
            break;
        }
    }

    let old = initialize(&c, "2025-06-18");
    let mut stream = c.open("GET", "/mcp", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &old)], b"");
    assert_eq!(stream.status, 200);
    let first = stream.next_line().expect("a keep-alive");
    assert!(first.starts_with(':'), "no priming event before 2025-11-25: {first:?}");

    let r = c.send("GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    assert_eq!(r.status, 400, "a GET needs a session: {}", r.text());
}

#[test]
fn stateless_2026_requests_need_no_session_and_headers_must_match() {
    let home = Home::new();
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();

    // server/discover with nothing else is answered at once (auto-negotiating clients).
    let r = post(&c, &[], &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("mcp-session-id").is_none());
    let versions = r.json()["result"]["supportedVersions"].clone();
    assert!(versions.as_array().unwrap().contains(&json!(MODERN)), "{versions}");

    let list = modern(2, "tools/list", json!({}));
    let r = post(&c, &[], &list);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("mcp-session-id").is_none(), "no session in 2026-07-28");
    let result = &r.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].is_u64() && result["tools"].is_array(), "{result}");
    let r = post(&c, &[("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/list")], &list);
    assert_eq!(r.status, 200, "matching headers: {}", r.text());
    // A stale session id on a stateless request is ignored.
    let r = post(&c, &[("Mcp-Session-Id", "feedfeedfeedfeedfeedfeedfeedfeed")], &list);
    assert_eq!(r.status, 200, "{}", r.text());

    let r = post(&c, &[("Mcp-Method", "tools/call")], &list);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(error_code(&r), -32020);
    assert_eq!(r.json()["id"], 2, "the error answers the request");
    // The mirrored headers are required, not only checked when present.
    let r = post_bare(&c, &[], &list);
    assert_eq!((r.status, error_code(&r)), (400, -32020), "no Mcp-Method: {}", r.text());
    let call = modern(3, "tools/call", json!({"name": "core.list_tools", "arguments": {}}));
    let r = post_bare(&c, &[("Mcp-Method", "tools/call")], &call);
    assert_eq!((r.status, error_code(&r)), (400, -32020), "no Mcp-Name: {}", r.text());
    let mut no_caps = list.clone();
    no_caps["params"]["_meta"].as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
    let r = post(&c, &[], &no_caps);
    assert_eq!((r.status, error_code(&r)), (400, -32602), "no clientCapabilities: {}", r.text());
    // Handshake-era methods are gone from 2026-07-28.
    let r = post(&c, &[], &modern(9, "ping", json!({})));
    assert_eq!((r.status, error_code(&r)), (404, -32601), "{}", r.text());
    let call = modern(3, "tools/call", json!({"name": "core.list_tools", "arguments": {}}));
    let r = post(&c, &[("Mcp-Name", "agent.run_subagent")], &call);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(error_code(&r), -32020);
    let r = post(&c, &[("Mcp-Method", "tools/call"), ("Mcp-Name", "core.list_tools")], &call);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["resultType"], "complete");
    let r = post(&c, &[("MCP-Protocol-Version", "2025-11-25")], &list);
    assert_eq!(r.status, 400);
    assert_eq!(error_code(&r), -32020);

    let r = post(&c, &[("MCP-Protocol-Version", MODERN)], &req(4, "tools/list", json!({})));
    assert_eq!(r.status, 400, "a 2026-07-28 request says its version in _meta: {}", r.text());
    assert_eq!(error_code(&r), -32602);
    let mut unknown = modern(5, "tools/list", json!({}));
    unknown["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = post(&c, &[], &unknown);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(error_code(&r), -32022);
    assert!(r.json()["error"]["data"]["supported"].as_array().unwrap().contains(&json!(MODERN)));
    let r = post(&c, &[], &modern(6, "no/such/method", json!({})));
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(error_code(&r), -32601);
    // A stateless request with a progress token gets its answer as an event stream.
    let mut progress = modern(7, "tools/list", json!({}));
    progress["params"]["_meta"]["progressToken"] = json!(7);
    let r = post(&c, &[], &progress);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.events().last().unwrap().json()["result"]["resultType"], "complete");
}

#[test]
fn batches_are_answered_in_order() {
    let home = Home::new();
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();

    // A batch may open the session, as 2025-03-26 allows.
    let r = post(&c, &[], &json!([init_body("2025-03-26", "batcher")]));
    assert_eq!(r.status, 200, "{}", r.text());
    let sid = r.header("mcp-session-id").expect("session from a batched initialize").to_string();
    assert_eq!(r.json()[0]["result"]["protocolVersion"], "2025-03-26");
    let s = [("Mcp-Session-Id", sid.as_str())];

    let batch = json!([req(1, "ping", json!({})), note("notifications/initialized"), req(2, "tools/list", json!({})),]);
    let r = post(&c, &s, &batch);
    assert_eq!(r.status, 200, "{}", r.text());
    let replies = r.json();
    let ids: Vec<&Value> = replies.as_array().unwrap().iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)], "{replies}");
    let r = post(&c, &s, &json!([note("notifications/initialized"), note("notifications/initialized")]));
    assert_eq!(r.status, 202, "{}", r.text());
    let r = post(&c, &s, &json!([]));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(error_code(&r), -32600);
}

/// The session cap: a flood of bare `initialize` calls pushes out only sessions that never came
/// back after theirs; sessions in use stay, and when all are in use a new one gets 503.
#[test]
fn the_session_cap_keeps_sessions_in_use() {
    let home = Home::new();
    home.write_config("[mcp.http]\nmax_sessions = 2\n");
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    let first = initialize(&c, "2025-11-25");
    for _ in 0..20 {
        assert_eq!(post(&c, &[], &init_body("2025-11-25", "flood")).status, 200);
    }
    d.wait_log("HTTP session evicted");
    let ping = |sid: &str| post(&c, &[("Mcp-Session-Id", sid)], &req(2, "ping", json!({}))).status;
    assert_eq!(ping(&first), 200, "a session in use survives the flood");
    let second = initialize(&c, "2025-11-25");
    let r = post(&c, &[], &init_body("2025-11-25", "one-too-many"));
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("max_sessions"), "{}", r.text());
    assert!(r.header("retry-after").is_some(), "{:?}", r.headers);
    assert_eq!(ping(&first), 200);
    assert_eq!(ping(&second), 200);
}

#[test]
fn shutdown_ends_event_streams_and_the_daemon_exits_cleanly() {
    let home = Home::new();
    let mut d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    let sid = initialize(&c, "2025-11-25");
    let mut stream = c.open("GET", "/mcp", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)], b"");
    assert!(stream.next_event().expect("priming").id.is_some());
    kill(d.pid(), libc::SIGTERM);
    // The open stream would otherwise hold the graceful shutdown forever.
    assert!(stream.next_event().is_none(), "the stream ends");
    let status = wait_exit(&mut d.child, WAIT);
    assert_eq!(status.code(), Some(0), "{}", home.log());
}

/// One address may mint sessions at `[mcp.http].new_sessions_per_sec` (after a burst of
/// `new_sessions_burst`): a faster `initialize` gets 429 with `Retry-After` and a JSON-RPC error
/// saying when to retry, and the sessions it has keep working.
#[test]
fn sessions_minted_faster_than_the_rate_get_429_with_retry_after() {
    let home = Home::new();
    home.write_config("[mcp.http]\nnew_sessions_per_sec = 1\nnew_sessions_burst = 2\n");
    let d = Daemon::builder(&home).http().start();
    let c = d.http_client();
    let first = initialize(&c, "2025-11-25");
    initialize(&c, "2025-11-25");
    let r = post(&c, &[], &init_body("2025-11-25", "too-fast"));
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok()), "{:?}", r.headers);
    assert_eq!(r.json()["id"], 0, "{}", r.text());
    let message = r.json()["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("retry in") && message.contains("new_sessions_per_sec"), "{message}");
    let ping = post(&c, &[("Mcp-Session-Id", &first)], &req(2, "ping", json!({})));
    assert_eq!(ping.status, 200, "{}", ping.text());
}
