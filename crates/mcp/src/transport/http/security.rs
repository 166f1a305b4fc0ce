//! Who may talk to the HTTP port. `Origin`, when a browser sends one, must be a loopback origin
//! or listed in `[mcp.http].allowed_origins`; on a loopback bind `Host` must name a loopback
//! host (a DNS-rebinding page reaches 127.0.0.1 under its own host name); both else 403. With a
//! token configured, every endpoint but `/healthz` needs `Authorization: Bearer <token>`,
//! compared in constant time; else 401 with `WWW-Authenticate: Bearer`. Allowed browser origins
//! get CORS headers, so a web client can read `Mcp-Session-Id`.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Ctx, rpc_error};
use crate::protocol::RpcError;

/// Rejects foreign origins and rebinding host names; answers CORS preflights.
pub async fn origin_and_host(State(s): State<Ctx>, req: Request, next: Next) -> Response {
    let origin = match req.headers().get(header::ORIGIN) {
        None => None,
        Some(v) => match v.to_str() {
            Ok(o) if origin_allowed(o, &s.allowed_origins) => Some(v.clone()),
            _ => {
                tracing::warn!(origin = ?v, "HTTP request refused: origin not allowed");
                return forbidden(
                    "origin not allowed: only loopback origins and [mcp.http].allowed_origins may call this server",
                );
            }
        },
    };
    if s.check_host {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string)
            .or_else(|| req.uri().authority().map(|a| a.to_string()));
        // A request without any host name does not come from a browser, so it cannot be a
        // rebinding attack; every browser request names a host.
        if let Some(h) = host
            && !host_is_loopback(&h)
        {
            tracing::warn!(host = %h, "HTTP request refused: Host is not a loopback name (DNS rebinding?)");
            return forbidden(
                "host not allowed: this server is bound to loopback and answers only to localhost, 127.0.0.1 or [::1]",
            );
        }
    }
    if let Some(origin) = &origin
        && req.method() == Method::OPTIONS
    {
        return preflight(origin);
    }
    let mut resp = next.run(req).await;
    if let Some(origin) = origin {
        add_cors(resp.headers_mut(), origin);
    }
    resp
}

/// Requires the bearer token when one is configured.
pub async fn bearer(State(s): State<Ctx>, req: Request, next: Next) -> Response {
    let Some(expected) = &s.token else {
        return next.run(req).await;
    };
    let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, token) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    match given {
        Some(token) if token_matches(token, expected) => next.run(req).await,
        other => {
            tracing::warn!(
                path = %req.uri().path(),
                presented = other.is_some(),
                "HTTP request refused: missing or wrong bearer token"
            );
            let challenge = if other.is_some() {
                r#"Bearer realm="openhuman-mcp", error="invalid_token""#
            } else {
                r#"Bearer realm="openhuman-mcp""#
            };
            let mut resp = rpc_error(
                StatusCode::UNAUTHORIZED,
                &Value::Null,
                RpcError::invalid_request(
                    "unauthorized: send `Authorization: Bearer <token>` with the token from OPENHUMAN_MCP_AUTH_TOKEN or [mcp.http].auth_token_file",
                ),
            );
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
            resp
        }
    }
}

/// Constant time whatever the inputs: both sides are hashed first, so neither the position of
/// the first wrong byte nor the token's length shows in the timing.
fn token_matches(given: &str, expected: &str) -> bool {
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.ct_eq(&b).into()
}

fn forbidden(message: &str) -> Response {
    rpc_error(StatusCode::FORBIDDEN, &Value::Null, RpcError::invalid_request(message))
}

/// `http(s)://<loopback host>[:port]`, or an exact (case-insensitive) entry of the allow list.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    let o = origin.trim().trim_end_matches('/');
    if allowed.iter().any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(o)) {
        return true;
    }
    let lower = o.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://").or_else(|| lower.strip_prefix("https://")) else {
        return false;
    };
    !rest.contains('/') && host_is_loopback(rest)
}

/// `localhost`, `127.x.x.x` or `[::1]`, with or without a port.
fn host_is_loopback(host: &str) -> bool {
    let name = if let Some(v6) = host.strip_prefix('[') {
        match v6.split_once(']') {
            Some((addr, rest)) if rest.is_empty() || valid_port(rest) => return addr == "::1",
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if valid_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        }
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

fn valid_port(s: &str) -> bool {
    s.strip_prefix(':').is_some_and(|p| !p.is_empty() && p.parse::<u16>().is_ok())
}

fn preflight(origin: &HeaderValue) -> Response {
    let mut resp = StatusCode::NO_CONTENT.into_response();
    let h = resp.headers_mut();
    add_cors(h, origin.clone());
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, DELETE, OPTIONS"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name",
        ),
    );
    h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    resp
}

fn add_cors(h: &mut HeaderMap, origin: HeaderValue) {
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("mcp-session-id, mcp-protocol-version, www-authenticate"),
    );
    h.insert(header::VARY, HeaderValue::from_static("origin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:9300",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:9300",
            "127.9.8.7:80",
            "[::1]",
            "[::1]:9300",
        ] {
            assert!(host_is_loopback(ok), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:9300",
            "localhost.evil.com",
            "127.0.0.1.nip.io",
            "10.0.0.1:9300",
            "[::2]:9300",
            "[::1]x",
            "localhost:",
            "localhost:99999",
            "0.0.0.0:9300",
            "",
        ] {
            assert!(!host_is_loopback(bad), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let allowed = vec!["https://app.example".to_string()];
        for ok in [
            "http://localhost:5173",
            "https://127.0.0.1",
            "http://[::1]:3000",
            "https://app.example",
            "HTTPS://APP.EXAMPLE/",
        ] {
            assert!(origin_allowed(ok, &allowed), "{ok}");
        }
        for bad in [
            "http://evil.example.com",
            "null",
            "file://",
            "http://localhost.evil.com",
            "https://app.example.evil",
            "ftp://localhost",
            "http://localhost/path",
        ] {
            assert!(!origin_allowed(bad, &allowed), "{bad}");
        }
    }

    #[test]
    fn tokens_compare_by_value() {
        assert!(token_matches("s3cret", "s3cret"));
        assert!(!token_matches("s3cre", "s3cret"));
        assert!(!token_matches("", "s3cret"));
    }
}
