//! The MCP endpoint (`/mcp`, `/`): POST carries one message or a batch, GET opens a
//! handshake-era session's notification stream, DELETE ends a session. Stateless 2026-07-28
//! requests are served with a fresh session each; everything else needs the `Mcp-Session-Id`
//! that `initialize` minted. A request answers `application/json`, or `text/event-stream` when it
//! may send notifications or server→client requests first; notifications and the client's
//! responses (to those requests) get 202.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use openhuman_common::codes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::message::{self, PROTOCOL_HEADER, SESSION_HEADER};
use super::security::Caller;
use super::sessions::HttpSession;
use super::{Ctx, Peer, Refusal, parse_body, reply_response, rpc_error, sse};
use crate::incoming::Incoming;
use crate::protocol::{LATEST_LEGACY, Reply, RpcError, SUPPORTED};
use crate::session::{Session, Transport};

/// How many notifications of one request may wait for a slow client.
const REQUEST_EVENTS: usize = 64;

pub async fn post(
    State(s): State<Ctx>,
    Extension(peer): Extension<Peer>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if !(accepts(&headers, "application/json") && accepts(&headers, "text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            &Value::Null,
            RpcError::invalid_request("not acceptable: a POST must send `Accept: application/json, text/event-stream`"),
        );
    }
    if let Some(ct) = message::header(&headers, header::CONTENT_TYPE.as_str())
        && !media_type(ct).eq_ignore_ascii_case("application/json")
    {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &Value::Null,
            RpcError::invalid_request(format!(
                "unsupported Content-Type {ct:?}: send `Content-Type: application/json`"
            )),
        );
    }
    let msg = match parse_body(body) {
        Ok(v) => v,
        Err(refusal) => return refusal.into_response(),
    };
    if message::is_stateless(&msg.value, &headers) {
        stateless(&s, &caller, &headers, msg).await
    } else {
        in_session(&s, peer, &caller, &headers, msg).await
    }
}

/// 2026-07-28 (and `server/discover`): no session; headers are checked against the body.
async fn stateless(s: &Ctx, caller: &Caller, headers: &HeaderMap, msg: Incoming) -> Response {
    if let Err(e) = message::check_headers(&msg.value, headers) {
        return rpc_error(StatusCode::BAD_REQUEST, &message::request_id(&msg.value), e);
    }
    if let Some(tool) = message::called_tool(&msg.value) {
        let marks = s.dispatcher.param_headers(tool);
        if let Err(e) = message::check_param_headers(&msg.value, headers, &marks) {
            return rpc_error(StatusCode::BAD_REQUEST, &message::request_id(&msg.value), e);
        }
    }
    // The request's own session: nothing outlives it, so nothing can leak between requests.
    let session = Arc::new(s.dispatcher.new_session(Transport::Http, closed_sink()));
    session.set_auth(caller.auth());
    let stream = accepts_sse(headers) && message::may_notify(&msg.value, false);
    respond(s, session, msg, stream, Exchange::Stateless).await
}

/// Handshake era: `initialize` mints a session; everything else names one.
async fn in_session(s: &Ctx, peer: Peer, caller: &Caller, headers: &HeaderMap, msg: Incoming) -> Response {
    if message::has_initialize(&msg.value) {
        if let Err(wait) = s.session_rate.take(&peer.0) {
            return too_fast(s, &msg, wait);
        }
        // A client that initialises again gets a new session, whatever id it still sends.
        let Ok(hs) = s.sessions.create(s.dispatcher.as_ref()) else {
            tracing::warn!(open = s.sessions.len(), "HTTP session refused: every session is in use");
            let mut resp = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &message::request_id(&msg.value),
                RpcError::internal(
                    "too many HTTP sessions are in use; end one with DELETE, or retry later (see [mcp.http].max_sessions)",
                ),
            );
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
            return resp;
        };
        // The session stays with this caller (see `session_of`).
        hs.session.set_auth(caller.auth());
        let mut resp = respond(s, hs.session.clone(), msg, false, Exchange::Session).await;
        if hs.session.negotiated().is_none() {
            // `initialize` failed (bad params): no session came of it.
            s.sessions.remove(hs.id());
            return resp;
        }
        tracing::info!(
            session = %hs.tag,
            version = hs.session.negotiated().unwrap_or_default(),
            source = %hs.session.source(),
            open = s.sessions.len(),
            "HTTP session created"
        );
        if let Ok(v) = HeaderValue::from_str(hs.id()) {
            resp.headers_mut().insert(SESSION_HEADER, v);
        }
        hs.touch();
        return resp;
    }
    let hs = match session_of(s, caller, headers) {
        Ok(hs) => hs,
        Err(refusal) => return refusal.into_response(),
    };
    // A client that may be asked something (elicitation, sampling, roots) while its call runs
    // gets the call's answer as a stream, which carries the server's requests first.
    let stream = accepts_sse(headers)
        && (message::may_notify(&msg.value, hs.session.log_level().is_some())
            || (hs.session.can_be_asked() && message::may_ask(&msg.value)));
    let resp = respond(s, hs.session.clone(), msg, stream, Exchange::Session).await;
    hs.touch();
    resp
}

/// 429 for an `initialize` that came faster than its address may mint sessions: the JSON-RPC
/// error and `Retry-After` say when to try again.
fn too_fast(s: &Ctx, msg: &Incoming, wait: std::time::Duration) -> Response {
    let secs = crate::transport::limits::retry_secs(wait);
    let n = s.too_fast.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if n.is_multiple_of(1000) {
        tracing::warn!(refused = n + 1, "HTTP session refused: new sessions come too fast from one address");
    }
    let mut resp = rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        &message::request_id(&msg.value),
        RpcError::internal(format!(
            "new sessions come too fast from your address; retry in {secs} s, or reuse the Mcp-Session-Id you \
             have (see [mcp.http].new_sessions_per_sec)"
        ))
        .with_data(serde_json::json!({ "retry_after_secs": secs })),
    );
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    resp
}

/// The session a request names: 400 without `Mcp-Session-Id`, 404 for an unknown or ended one,
/// 400 when `MCP-Protocol-Version` names a version this server does not speak (an absent header,
/// or a supported version other than the negotiated one, is fine). A session opened by one
/// caller is not found for another (another OAuth subject or client, or another kind of
/// credential), so a stolen session id is useless without its caller's token; the caller's
/// current token (its scopes may have grown) is what the session's requests run with.
fn session_of(s: &Ctx, caller: &Caller, headers: &HeaderMap) -> Result<Arc<HttpSession>, Refusal> {
    let Some(id) = message::header(headers, SESSION_HEADER) else {
        return Err(Refusal(
            StatusCode::BAD_REQUEST,
            RpcError::invalid_request(
                "missing Mcp-Session-Id header: send `initialize` first and repeat the Mcp-Session-Id it returns on every request (or use protocol 2026-07-28, which needs no session)",
            ),
        ));
    };
    let not_found = || {
        Refusal(
            StatusCode::NOT_FOUND,
            RpcError::invalid_request(
                "session not found: it ended, expired or never existed; send `initialize` again without Mcp-Session-Id",
            ),
        )
    };
    let Some(hs) = s.sessions.get(id) else {
        return Err(not_found());
    };
    if !caller.may_use(hs.session.auth().as_deref()) {
        tracing::warn!(session = %hs.tag, "HTTP request refused: the session belongs to another caller");
        return Err(not_found());
    }
    if let Some(auth) = caller.auth() {
        hs.session.set_auth(Some(auth));
    }
    // Clients should repeat the negotiated version; the spec lets a server refuse only versions
    // that are invalid or that it does not support, so any version we speak is accepted.
    if let Some(v) = headers.get(PROTOCOL_HEADER)
        && !v.to_str().is_ok_and(|v| SUPPORTED.contains(&v))
    {
        return Err(Refusal(
            StatusCode::BAD_REQUEST,
            RpcError::invalid_request(format!(
                "unsupported MCP-Protocol-Version header {v:?}: this server speaks {}",
                SUPPORTED.join(", ")
            )),
        ));
    }
    Ok(hs)
}

/// How a POST is served: inside a handshake-era session, or stateless (2026-07-28). Not the
/// protocol `Era`, which the dispatcher works out per request.
#[derive(Clone, Copy, PartialEq)]
enum Exchange {
    Session,
    Stateless,
}

/// Runs the message through the dispatcher and shapes the answer.
async fn respond(s: &Ctx, session: Arc<Session>, msg: Incoming, stream: bool, exchange: Exchange) -> Response {
    if !message::has_requests(&msg.value) {
        return match s.dispatcher.handle_owned(session.clone(), msg, closed_sink()).await {
            None => StatusCode::ACCEPTED.into_response(),
            // Something in it was malformed: say what.
            Some(reply) => reply_response(StatusCode::BAD_REQUEST, &reply),
        };
    }
    if stream {
        return event_stream(s, session, msg);
    }
    // Nobody reads notifications of a JSON answer; a closed sink drops them without waiting.
    match s.dispatcher.handle_owned(session.clone(), msg, closed_sink()).await {
        Some(reply) => match scope_refusal(s, &reply) {
            Some(challenge) => {
                let mut resp = reply_response(StatusCode::FORBIDDEN, &reply);
                resp.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
                resp
            }
            None => reply_response(status_of(&reply, exchange), &reply),
        },
        // The request was cancelled (`notifications/cancelled`, session ended, shutdown).
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// The challenge of a 403 when the answer is one refusal for a missing OAuth scope
/// ([`crate::auth::insufficient_scope`]): the client can ask its user for that scope and retry.
fn scope_refusal(s: &Ctx, reply: &Reply) -> Option<HeaderValue> {
    let Reply::Error { error, .. } = reply else {
        return None;
    };
    super::security::scope_challenge(s, crate::auth::required_scope(error)?)
}

/// HTTP status of a JSON answer. Errors that the transport specs give a status of their own get
/// it; other JSON-RPC errors travel in a 200.
fn status_of(reply: &Reply, exchange: Exchange) -> StatusCode {
    // A batch's answers each carry their own outcome.
    let Reply::Error { id, error } = reply else {
        return StatusCode::OK;
    };
    match (exchange, error.code) {
        (
            Exchange::Stateless,
            codes::UNSUPPORTED_PROTOCOL_VERSION | codes::HEADER_MISMATCH | codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        ) => StatusCode::BAD_REQUEST,
        (Exchange::Stateless, codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        // Not a readable request at all (no usable id).
        _ if id.is_null() => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// The answer as an event stream: the request's notifications as they happen, then its
/// response, then the end. When the client goes away the request is dropped (cancelled).
fn event_stream(s: &Ctx, session: Arc<Session>, msg: Incoming) -> Response {
    let (events, rx) = mpsc::channel::<String>(REQUEST_EVENTS);
    let dispatcher = s.dispatcher.clone();
    tokio::spawn(async move {
        let (notify, mut notes) = mpsc::channel::<String>(REQUEST_EVENTS);
        let work = dispatcher.handle_owned(session.clone(), msg, notify);
        tokio::pin!(work);
        let reply = loop {
            tokio::select! {
                reply = &mut work => break reply,
                Some(note) = notes.recv() => {
                    if events.send(note).await.is_err() {
                        return;
                    }
                }
                _ = events.closed() => return,
            }
        };
        // Notifications sent just before the response still go first.
        while let Ok(note) = notes.try_recv() {
            if events.send(note).await.is_err() {
                return;
            }
        }
        if let Some(reply) = reply {
            let _ = events.send(reply.encode()).await;
        }
    });
    let body = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (sse::message(&m), rx)) });
    sse::response(body, s.keepalive)
}

/// GET: the session's stream of server notifications, until the client leaves, the session
/// ends or the daemon shuts down.
pub async fn get(State(s): State<Ctx>, Extension(caller): Extension<Caller>, headers: HeaderMap) -> Response {
    if !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            &Value::Null,
            RpcError::invalid_request(
                "not acceptable: a GET opens an event stream and must send `Accept: text/event-stream`",
            ),
        );
    }
    let hs = match session_of(&s, &caller, &headers) {
        Ok(hs) => hs,
        Err(refusal) => return refusal.into_response(),
    };
    let Some(lease) = hs.open_stream() else {
        return rpc_error(
            StatusCode::CONFLICT,
            &Value::Null,
            RpcError::invalid_request("this session already has a GET stream open; close it before opening another"),
        );
    };
    tracing::debug!(session = %hs.tag, "HTTP GET stream opened");
    // Only 2025-11-25 defines the priming event; older clients would try to parse it.
    let priming =
        (hs.session.negotiated().as_deref() == Some(LATEST_LEGACY)).then(|| sse::priming(&hs.event_id(), sse::RETRY));
    let notes =
        futures::stream::unfold(
            lease,
            |mut lease| async move { lease.next().await.map(|m| (sse::message(&m), lease)) },
        )
        .take_until(s.shutdown.clone().cancelled_owned())
        .take_until(hs.session.cancel.clone().cancelled_owned());
    let events = futures::stream::iter(priming).chain(notes);
    sse::response(events, s.keepalive)
}

/// DELETE: ends the session; its in-flight requests are cancelled and its stream closes.
pub async fn delete(State(s): State<Ctx>, Extension(caller): Extension<Caller>, headers: HeaderMap) -> Response {
    let hs = match session_of(&s, &caller, &headers) {
        Ok(hs) => hs,
        Err(refusal) => return refusal.into_response(),
    };
    s.sessions.remove(hs.id());
    tracing::info!(session = %hs.tag, "HTTP session ended by the client");
    StatusCode::NO_CONTENT.into_response()
}

/// A notification channel nobody reads: sends fail at once instead of waiting.
fn closed_sink() -> mpsc::Sender<String> {
    let (tx, _) = mpsc::channel(1);
    tx
}

fn media_type(value: &str) -> &str {
    value.split(';').next().unwrap_or_default().trim()
}

/// Whether `Accept` admits `wanted` (`type/subtype`), counting `*/*` and `type/*`. A missing
/// header admits everything, as in HTTP.
fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    let family = wanted.split('/').next().unwrap_or_default();
    values.filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(media_type).any(|m| {
        m.eq_ignore_ascii_case(wanted)
            || m == "*/*"
            || m.strip_suffix("/*").is_some_and(|f| f.eq_ignore_ascii_case(family))
    })
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    accepts(headers, "text/event-stream")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn accept_header() {
        let both = accept("application/json, text/event-stream");
        assert!(accepts(&both, "application/json") && accepts(&both, "text/event-stream"));
        let json_only = accept("application/json");
        assert!(!accepts(&json_only, "text/event-stream"));
        assert!(accepts(&accept("*/*"), "text/event-stream"));
        assert!(accepts(&accept("text/*;q=0.5"), "text/event-stream"));
        assert!(!accepts(&accept("text/*"), "application/json"));
        assert!(accepts(&HeaderMap::new(), "application/json"));
    }

    #[test]
    fn statuses() {
        let ok = Reply::Result { id: Value::from(1).into(), result: serde_json::json!({}).into() };
        assert_eq!(status_of(&ok, Exchange::Stateless), StatusCode::OK);
        let err = |code: i64, id: Value| Reply::error(&id, RpcError::new(code, "m"));
        assert_eq!(status_of(&err(-32022, 1.into()), Exchange::Stateless), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(&err(-32601, 1.into()), Exchange::Stateless), StatusCode::NOT_FOUND);
        assert_eq!(status_of(&err(-32601, 1.into()), Exchange::Session), StatusCode::OK);
        assert_eq!(status_of(&err(-32602, 1.into()), Exchange::Stateless), StatusCode::OK);
        assert_eq!(status_of(&err(-32600, Value::Null), Exchange::Session), StatusCode::BAD_REQUEST);
        let batch = Reply::Batch(vec![err(-32600, Value::Null)]);
        assert_eq!(status_of(&batch, Exchange::Session), StatusCode::OK);
    }
}
