//! Streamable HTTP transport: the MCP endpoint `/mcp` (and `/` as an alias), the
//! unauthenticated `/healthz` and the core JSON-RPC endpoint `/rpc`, served by axum on a listener
//! the caller bound. Map of the module:
//!
//! - `endpoint` POST/GET/DELETE of the MCP endpoint: session lookup, era choice, response shape
//! - `message`  the few message fields HTTP must read (initialize? requests? progress? era) and
//!   the 2026-07-28 header checks
//! - `sessions` `Mcp-Session-Id` → session table: minting, idle expiry, the cap, log-safe ids
//! - `security` Origin / Host (DNS rebinding) checks, CORS for allowed origins, bearer auth:
//!   the static token and, with `HttpOptions::oauth`, OAuth access tokens checked by the app's
//!   `TokenVerifier`, the protected-resource metadata and the `WWW-Authenticate` challenges
//! - `sse`      event-stream framing with keep-alive comments
//!
//! The app may mount a router of its own under `/ui` (`HttpOptions::ui`, a browser dashboard):
//! it sits behind the same Origin/Host checks, body limit and timeouts, but not behind the
//! bearer check, because a browser cannot send a bearer header on a page load; the app's router
//! authenticates its requests itself.
//!
//! Connections are served by hyper directly (one task each, at most `max_connections`, and at
//! most `max_connections_per_peer` from one client address; more get 503), with a timeout on
//! each request's head and one on its body, so a half-sent request cannot hold a connection.
//! Each address may mint sessions (`initialize`) at `new_sessions` at most; faster ones get 429
//! with `Retry-After`. HTTP settings (`[mcp.http]`) are read once at start; a config
//! reload does not change them.

mod endpoint;
pub(crate) mod message;
mod security;
mod sessions;
mod sse;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use openhuman_common::codes;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

use super::TransportError;
use super::limits::{PeerCount, Rate, RateTable};
use crate::app::App;
use crate::dispatcher::{Dispatcher, Serve, encode};
use crate::incoming::{Incoming, MAX_BATCH, ReadError};
use crate::protocol::{Reply, RpcError, error_envelope, result_envelope};
use sessions::SessionTable;

/// Everything the HTTP transport needs, resolved by the caller at start (a reload of the
/// caller's settings does not change a running transport).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub host: String,
    pub port: u16,
    /// Bearer token; None = no auth (allowed only on loopback binds) unless `oauth` is set.
    pub token: Option<String>,
    /// OAuth 2.1 resource server: access tokens checked by the app's verifier, accepted beside
    /// the static token (see [`crate::auth`]).
    pub oauth: Option<crate::auth::OAuthOptions>,
    /// Browser origins allowed besides the server's own.
    pub allowed_origins: Vec<String>,
    /// Handshake-era sessions kept at once; the least recently used idle one makes room.
    pub max_sessions: usize,
    /// A session with no request for this long ends.
    pub session_idle: Duration,
    /// Keep-alive comment interval on event streams.
    pub sse_keepalive: Duration,
    /// Largest request body accepted (413 beyond it).
    pub max_body_bytes: usize,
    /// Longest wait for a request's head, and again for its body: a half-sent request is cut
    /// off (the connection closed) after it.
    pub request_timeout: Duration,
    /// Connections served at once; one more is answered 503 and closed, so a flood cannot take
    /// every file descriptor the daemon has.
    pub max_connections: usize,
    /// Connections one client address may hold at once (503 beyond). On loopback every local
    /// client shares one address, so this bounds them together.
    pub max_connections_per_peer: usize,
    /// How fast one client address may mint sessions with `initialize` (429 beyond).
    pub new_sessions: Rate,
    /// The app's own pages and endpoints, served under `/ui`. The router authenticates its
    /// requests itself (see the module's header); the Origin/Host checks still apply.
    pub ui: Option<Router>,
}

/// The client address of the connection a request came on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub IpAddr);

/// What every handler shares: the dispatcher, the session table and the settings in force.
pub(crate) struct Shared {
    dispatcher: Arc<dyn Serve>,
    sessions: SessionTable,
    token: Option<String>,
    oauth: Option<crate::auth::OAuthOptions>,
    /// Bound to a loopback address: check `Host` against DNS rebinding.
    check_host: bool,
    allowed_origins: Vec<String>,
    keepalive: Duration,
    shutdown: CancellationToken,
    /// New sessions per client address.
    session_rate: RateTable<IpAddr>,
    /// `initialize` calls answered 429 so far (the log says so every thousandth).
    too_fast: AtomicU64,
}

type Ctx = Arc<Shared>;

/// Serves until `shutdown`, then stops accepting, ends every SSE stream and lets in-flight
/// requests finish (they are cut by the daemon's abort token once the grace period is over).
pub async fn serve<A: App>(
    listener: tokio::net::TcpListener,
    dispatcher: Dispatcher<A>,
    opts: HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), TransportError> {
    let local = listener.local_addr().map_err(|e| TransportError::io("HTTP listener has no local address", e))?;
    let shared = Arc::new(Shared {
        sessions: SessionTable::new(opts.session_idle, opts.max_sessions),
        dispatcher: Arc::new(dispatcher),
        token: opts.token.clone(),
        oauth: opts.oauth.clone(),
        check_host: local.ip().is_loopback() || openhuman_common::is_loopback_host(&opts.host),
        allowed_origins: opts.allowed_origins.clone(),
        keepalive: opts.sse_keepalive.max(Duration::from_secs(1)),
        // Its own child, so the sweeper also stops when serving fails.
        shutdown: shutdown.child_token(),
        session_rate: RateTable::new(opts.new_sessions),
        too_fast: AtomicU64::new(0),
    });
    let sweeper = tokio::spawn(sessions::sweep(shared.clone()));
    let app = router(shared.clone(), opts.ui.clone(), opts.max_body_bytes, opts.request_timeout);
    let slots = Arc::new(Semaphore::new(opts.max_connections.max(1)));
    let per_peer = PeerCount::new(opts.max_connections_per_peer);
    let conns = TaskTracker::new();
    let mut refused: u64 = 0;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok((stream, peer)) => (stream, peer.ip()),
            Err(e) => {
                tracing::warn!(error = %e, "HTTP accept failed");
                // Out of fds and similar: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let admitted = match slots.clone().try_acquire_owned() {
            Ok(slot) => per_peer.acquire(peer).map(|mine| (slot, mine)).ok_or(
                "too many HTTP connections are open from your address; close some or retry shortly \
                 (see [mcp.http].max_connections_per_peer)",
            ),
            Err(_) => Err("too many HTTP connections are open; retry shortly (see [mcp.http].max_connections)"),
        };
        let slot = match admitted {
            Ok(slot) => slot,
            Err(why) => {
                if refused.is_multiple_of(1000) {
                    tracing::warn!(
                        max_connections = opts.max_connections,
                        max_connections_per_peer = opts.max_connections_per_peer,
                        refused,
                        "HTTP connection refused: {why}"
                    );
                }
                refused += 1;
                refuse(stream, why);
                continue;
            }
        };
        let service = TowerToHyperService::new(app.clone().layer(Extension(Peer(peer))));
        let stop = shutdown.clone();
        let header_timeout = opts.request_timeout;
        conns.spawn(async move {
            let _slot = slot;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            let done = tokio::select! {
                r = conn.as_mut() => r,
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = done {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
        });
    }
    // Nothing new is accepted; open connections finish their responses (GET streams end on the
    // shutdown token, calls are cut by the daemon's abort after its grace period).
    conns.close();
    conns.wait().await;
    shared.sessions.clear();
    shared.shutdown.cancel();
    let _ = sweeper.await;
    tracing::info!("HTTP transport stopped");
    Ok(())
}

/// Answers a connection over a cap with 503 and closes it, without waiting on the peer.
fn refuse(stream: tokio::net::TcpStream, why: &str) {
    let body = encode(&error_envelope(&Value::Null, &RpcError::internal(why)));
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

fn router(shared: Ctx, ui: Option<Router>, max_body: usize, body_timeout: Duration) -> Router {
    let mcp = || post(endpoint::post).get(endpoint::get).delete(endpoint::delete);
    let mut router = Router::new()
        .route("/mcp", mcp())
        .route("/", mcp())
        .route("/rpc", post(rpc))
        // Innermost, so a request is authenticated before its size and pace matter.
        .layer(RequestBodyLimitLayer::new(max_body))
        .layer(RequestBodyTimeoutLayer::new(body_timeout))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), security::bearer))
        // Added after the bearer layer: health checks need no token.
        .route("/healthz", get(healthz));
    if let Some(oauth) = &shared.oauth {
        // Unauthenticated too: a client reads it to learn where to get a token.
        let doc = oauth.metadata.to_json();
        let mut paths = vec![crate::auth::WELL_KNOWN.to_string(), format!("{}/mcp", crate::auth::WELL_KNOWN)];
        paths.push(format!("{}{}", crate::auth::WELL_KNOWN, oauth.metadata.resource_path()));
        paths.sort();
        paths.dedup();
        for path in paths {
            let doc = doc.clone();
            router = router.route(&path, get(move || async move { json_response(StatusCode::OK, &doc) }));
        }
    }
    if let Some(ui) = ui {
        // After the bearer layer too: the app's router checks its own session cookie.
        router = router.nest_service(
            "/ui",
            ui.layer(RequestBodyLimitLayer::new(max_body)).layer(RequestBodyTimeoutLayer::new(body_timeout)),
        );
    }
    router
        .layer(axum::middleware::from_fn_with_state(shared.clone(), security::origin_and_host))
        // The limit layer above is the one limit; axum's own 2 MB default would undercut it.
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({ "status": "ok", "version": openhuman_common::VERSION }))
}

/// `/rpc`: one JSON-RPC request for an extension method of the app, no MCP session.
async fn rpc(State(s): State<Ctx>, body: Result<Bytes, BytesRejection>) -> Response {
    let msg = match parse_body(body) {
        Ok(m) => m.value,
        Err(refusal) => return refusal.into_response(),
    };
    let Value::Object(obj) = msg else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            RpcError::invalid_request("/rpc takes one JSON-RPC request object (no batches)"),
        );
    };
    let id = obj.get("id").cloned();
    let reply_id = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return rpc_error(StatusCode::BAD_REQUEST, &reply_id, RpcError::invalid_request("`jsonrpc` must be \"2.0\""));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &reply_id,
            RpcError::invalid_request("missing `method`: name an extension method"),
        );
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(_) => {
            return rpc_error(StatusCode::OK, &reply_id, RpcError::invalid_params("`params` must be an object"));
        }
    };
    // No session: the caller is 0, so every session counts in a status answer.
    let outcome = s.dispatcher.extension_owned(method.to_string(), params).await;
    if id.is_none() {
        return StatusCode::ACCEPTED.into_response();
    }
    let reply = match outcome {
        Ok(result) => result_envelope(&reply_id, result),
        Err(e) => error_envelope(&reply_id, &e),
    };
    json_response(StatusCode::OK, &reply)
}

/// An early refusal: the HTTP status and the JSON-RPC error (answering no id) that explains it.
pub(crate) struct Refusal(StatusCode, RpcError);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        rpc_error(self.0, &Value::Null, self.1)
    }
}

/// The body as a message, or why not: 413 too large, 400 unreadable, not JSON (-32700) or a
/// batch over `MAX_BATCH` (-32600).
fn parse_body(body: Result<Bytes, BytesRejection>) -> Result<Incoming, Refusal> {
    let bytes = body.map_err(|rejection| {
        let status = rejection.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "request body too large: it exceeds [mcp.http].max_body_bytes".to_string()
        } else {
            format!("cannot read the request body: {}", rejection.body_text())
        };
        Refusal(status, RpcError::new(codes::PARSE_ERROR, message))
    })?;
    Incoming::parse(&bytes).map_err(|e| match e {
        ReadError::BatchTooLarge => Refusal(
            StatusCode::BAD_REQUEST,
            RpcError::invalid_request(e.to_string()).with_data(json!({ "max_batch": MAX_BATCH })),
        ),
        ReadError::Json(e) => {
            let what =
                if std::str::from_utf8(&bytes).is_err() { "body is not valid UTF-8" } else { "body is not valid JSON" };
            Refusal(
                StatusCode::BAD_REQUEST,
                RpcError::new(codes::PARSE_ERROR, format!("parse error: {what} ({e}); POST one JSON-RPC message")),
            )
        }
    })
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    json_text_response(status, crate::dispatcher::encode(value))
}

fn reply_response(status: StatusCode, reply: &Reply) -> Response {
    json_text_response(status, reply.encode())
}

fn json_text_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], Body::from(body)).into_response()
}

/// An HTTP error whose body is a JSON-RPC error response, so clients can show the reason.
fn rpc_error(status: StatusCode, id: &Value, err: RpcError) -> Response {
    json_response(status, &error_envelope(id, &err))
}
