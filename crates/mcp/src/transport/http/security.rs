//! Who may talk to the HTTP port. `Origin`, when a browser sends one, must be a loopback origin
//! or listed in `[mcp.http].allowed_origins`; on a loopback bind `Host` must name a loopback
//! host or the host of the OAuth resource URI (a tunnel's public name; a DNS-rebinding page
//! reaches 127.0.0.1 under its own host name); both else 403. With a
//! token configured, every endpoint but `/healthz` (and the OAuth metadata) needs
//! `Authorization: Bearer <token>`, compared in constant time; with OAuth configured, an access
//! token the app's verifier accepts does too; else 401 with `WWW-Authenticate: Bearer` (under
//! OAuth naming `resource_metadata` and the scopes). Allowed browser origins get CORS headers, so
//! a web client can read `Mcp-Session-Id`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Ctx, Shared, rpc_error};
use crate::auth::{AuthInfo, TokenRejection, quoted};
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
        // Behind a tunnel the public name of the OAuth resource URI arrives as `Host` too.
        if let Some(h) = host
            && !host_is_loopback(&h)
            && !is_public_name(&s, &h)
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

/// Who a request authenticated as; the bearer layer puts one in every request it lets through.
#[derive(Debug, Clone)]
pub(crate) enum Caller {
    /// Neither a token nor OAuth is configured (`allow_no_token`).
    Open,
    /// The static bearer token.
    Static,
    /// An OAuth access token the app's verifier accepted.
    OAuth(Arc<AuthInfo>),
}

impl Caller {
    pub(crate) fn auth(&self) -> Option<Arc<AuthInfo>> {
        match self {
            Caller::OAuth(a) => Some(a.clone()),
            _ => None,
        }
    }

    /// Whether a request of `self` may use a session opened by `opener`: the same kind of
    /// credential, and for OAuth the same issuer, subject and client.
    pub(crate) fn may_use(&self, opener: Option<&AuthInfo>) -> bool {
        match (self, opener) {
            (Caller::OAuth(me), Some(them)) => me.same_caller(them),
            (Caller::OAuth(_), None) | (_, Some(_)) => false,
            _ => true,
        }
    }
}

/// Requires a credential when one is configured: the static token (constant-time compare) or,
/// with OAuth, an access token the app's verifier accepts. Refusals are 401 with a
/// `WWW-Authenticate: Bearer` challenge (naming the resource metadata under OAuth), or 503 when
/// the token cannot be checked now. `/rpc` (the daemon's own methods) takes the static token only.
pub async fn bearer(State(s): State<Ctx>, mut req: Request, next: Next) -> Response {
    if s.token.is_none() && s.oauth.is_none() {
        req.extensions_mut().insert(Caller::Open);
        return next.run(req).await;
    }
    let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, token) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    let static_token = s.token.as_deref().filter(|_| s.oauth.as_ref().is_none_or(|o| o.static_token));
    let caller = match (given, &s.oauth) {
        (Some(token), _) if static_token.is_some_and(|expected| token_matches(token, expected)) => Caller::Static,
        (Some(token), Some(oauth)) if !token.is_empty() => match oauth.verifier.verify(token).await {
            Ok(info) => Caller::OAuth(Arc::new(info)),
            Err(TokenRejection::Invalid(why)) => {
                tracing::warn!(path = %req.uri().path(), reason = %why, "HTTP request refused: access token not accepted");
                return closing(unauthorized(&s, Some(&why)));
            }
            Err(TokenRejection::Unavailable(why)) => {
                tracing::warn!(path = %req.uri().path(), reason = %why, "HTTP request refused: cannot check access tokens now");
                let mut resp = rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &Value::Null,
                    RpcError::internal(format!("cannot check the access token now: {why}; retry shortly")),
                );
                resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                return closing(resp);
            }
        },
        (other, _) => {
            tracing::warn!(
                path = %req.uri().path(),
                presented = other.is_some(),
                "HTTP request refused: missing or wrong bearer token"
            );
            return closing(unauthorized(&s, other.map(|_| "the bearer token is not valid here")));
        }
    };
    if let (Caller::OAuth(info), Some(scope)) = (&caller, s.oauth.as_ref().and_then(|o| o.required_scope.as_deref()))
        && !info.has_scope(scope)
    {
        tracing::warn!(path = %req.uri().path(), scope, "HTTP request refused: the access token lacks the scope every call needs");
        let mut resp = forbidden(&format!(
            "insufficient scope: this server needs the OAuth scope `{scope}` for any request; ask the authorization server \
             for a token with it"
        ));
        if let Some(challenge) = scope_challenge(&s, scope) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        return closing(resp);
    }
    if matches!(caller, Caller::OAuth(_)) && req.uri().path() == "/rpc" {
        tracing::warn!("HTTP /rpc refused: an OAuth access token does not reach the daemon's own methods");
        return closing(forbidden(
            "/rpc takes the static bearer token only; OAuth access tokens reach the MCP endpoint /mcp",
        ));
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// A refusal sent before the request's body was read: the connection cannot carry another
/// request after it, so the client is told not to reuse it (else its next request on the same
/// connection meets a close instead of an answer).
fn closing(mut resp: Response) -> Response {
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// 401 with the challenge for the configured schemes; `invalid` says why a presented token
/// failed (`error="invalid_token"`).
fn unauthorized(s: &Shared, invalid: Option<&str>) -> Response {
    let mut challenge = String::from(r#"Bearer realm="openhuman-mcp""#);
    if let Some(why) = invalid {
        challenge.push_str(r#", error="invalid_token""#);
        if s.oauth.is_some() {
            challenge.push_str(&format!(", error_description={}", quoted(why)));
        }
    }
    let message = match &s.oauth {
        Some(oauth) => {
            let m = &oauth.metadata;
            challenge.push_str(&format!(", resource_metadata={}", quoted(&m.metadata_url())));
            if !m.scopes_supported.is_empty() {
                challenge.push_str(&format!(", scope={}", quoted(&m.scopes_supported.join(" "))));
            }
            let why = invalid.map(|w| format!(" ({w})")).unwrap_or_default();
            format!(
                "unauthorized{why}: send `Authorization: Bearer <access token>` with a token for {} from {}                  (the resource metadata is at {})",
                m.resource,
                m.authorization_servers.join(", "),
                m.metadata_url()
            )
        }
        None => "unauthorized: send `Authorization: Bearer <token>` with the token from OPENHUMAN_MCP_AUTH_TOKEN or \
                 [mcp.http].auth_token_file"
            .to_string(),
    };
    let mut resp = rpc_error(StatusCode::UNAUTHORIZED, &Value::Null, RpcError::invalid_request(message));
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    resp
}

/// The `WWW-Authenticate` value of a 403 for a call whose token lacks `scope` (None without
/// OAuth, where no token has scopes).
pub(crate) fn scope_challenge(s: &Shared, scope: &str) -> Option<HeaderValue> {
    let oauth = s.oauth.as_ref()?;
    let value = format!(
        r#"Bearer error="insufficient_scope", scope={}, resource_metadata={}, error_description={}"#,
        quoted(scope),
        quoted(&oauth.metadata.metadata_url()),
        quoted(&format!("this call needs the scope {scope}"))
    );
    HeaderValue::from_str(&value).ok()
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

/// Whether `host` (a `Host` header) names the host of the configured OAuth resource URI: a
/// tunnel forwards the public name to a loopback bind. The port is not compared (a tunnel may
/// drop or change it); a rebinding page cannot use this name, which resolves to the tunnel.
fn is_public_name(s: &Shared, host: &str) -> bool {
    let Some(oauth) = &s.oauth else { return false };
    let name_of = |authority: &str| -> String {
        let a = authority.trim().to_ascii_lowercase();
        match a.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default().to_string(),
            None => a.rsplit_once(':').map_or(a.clone(), |(n, _)| n.to_string()),
        }
    };
    let resource = &oauth.metadata.resource;
    let after_scheme = resource.split_once("://").map_or(resource.as_str(), |(_, r)| r);
    let authority = after_scheme.split('/').next().unwrap_or_default();
    let want = name_of(authority);
    !want.is_empty() && name_of(host) == want
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
