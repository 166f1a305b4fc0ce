//! The one MCP dispatcher. Every transport (socket, stdio, HTTP) hands it decoded messages; it
//! alone knows MCP method names. It checks envelopes, runs batches, registers in-flight ids
//! with their cancel tokens, contains panics, picks the era, and routes each method to the
//! lifecycle handlers or to the [`App`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use openhuman_common::codes;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use tokio_util::sync::CancellationToken;

use crate::app::{App, Extension, Progress};
use crate::context::RequestCtx;
use crate::incoming::{Id, Incoming, MAX_BATCH, Part, ReadError};
use crate::input::{self, Input};
use crate::lifecycle::{self, Features};
use crate::prompts::{self, Prompt};
use crate::protocol::{
    self, Era, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_VERSION, MODERN, Payload, Reply,
    RpcError,
};
use crate::session::{LOG_LEVELS, Session, SessionSet, Transport, id_key, source_label};
use crate::subscriptions::{Filter, closing_result};
use crate::transport::framing::Overlong;

/// The 2026-07-28 requests that may answer `input_required` (multi-round-trip requests).
const MULTI_ROUND: &[&str] = &["tools/call", "prompts/get", "resources/read"];

/// Handshake-era methods that 2026-07-28 no longer has: a request naming that version gets -32601.
const REMOVED_IN_MODERN: &[&str] =
    &["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// The dispatcher and what every transport shares through it: the application, the set of live
/// sessions, and the token that cancels in-flight calls when the server gives up waiting for
/// them. Cloning is cheap.
pub struct Dispatcher<A> {
    app: Arc<A>,
    sessions: Arc<SessionSet>,
    abort: CancellationToken,
}

impl<A> Clone for Dispatcher<A> {
    fn clone(&self) -> Self {
        Dispatcher { app: self.app.clone(), sessions: self.sessions.clone(), abort: self.abort.clone() }
    }
}

impl<A: App> Dispatcher<A> {
    /// `abort` is the parent of every session's cancel token: cancelling it stops every call.
    pub fn new(app: Arc<A>, sessions: Arc<SessionSet>, abort: CancellationToken) -> Dispatcher<A> {
        Dispatcher { app, sessions, abort }
    }

    pub fn app(&self) -> &Arc<A> {
        &self.app
    }

    pub fn sessions(&self) -> &Arc<SessionSet> {
        &self.sessions
    }

    /// What the app serves beyond tools and resources.
    fn features(&self) -> Features {
        Features {
            resource_notifications: self.app.resource_notifications(),
            prompts: !self.app.prompts().is_empty(),
            completions: self.app.completions(),
        }
    }

    /// A new session of `transport` whose messages leave by `out`, its cancel token a child of
    /// the abort token. The caller registers it in [`Dispatcher::sessions`] if it should count.
    pub fn new_session(&self, transport: Transport, out: mpsc::Sender<String>) -> Session {
        Session::new(transport, &self.abort, out)
    }

    /// For line transports: one received line. Handshake and notifications are handled in order,
    /// before the next line is read; other requests run as tasks and may answer out of order.
    pub async fn on_line(&self, session: &Arc<Session>, line: &[u8]) {
        let line = trim_line(line);
        if line.is_empty() {
            return;
        }
        let msg = match Incoming::parse(line) {
            Ok(m) => m,
            Err(ReadError::BatchTooLarge) => {
                let err = RpcError::invalid_request(ReadError::BatchTooLarge.to_string())
                    .with_data(json!({ "max_batch": MAX_BATCH }));
                session.send(Reply::error(&Value::Null, err).encode()).await;
                return;
            }
            Err(ReadError::Json(e)) => {
                let what = if std::str::from_utf8(line).is_err() {
                    "message is not valid UTF-8"
                } else {
                    "message is not valid JSON"
                };
                let err = RpcError::new(
                    codes::PARSE_ERROR,
                    format!("parse error: {what} ({e}); send one JSON-RPC object per line"),
                );
                session.send(Reply::error(&Value::Null, err).encode()).await;
                return;
            }
        };
        // Responses from the client go inline too: a handler waiting for one may hold a slot.
        let inline = match &msg.value {
            Value::Object(o) => {
                o.get("id").is_none()
                    || o.get("method").is_none()
                    || o.get("method").and_then(Value::as_str) == Some("initialize")
            }
            _ => false,
        };
        if inline {
            if let Some(reply) = self.handle(session, msg, session_sink(session)).await {
                session.send(reply.encode()).await;
            }
            return;
        }
        // All slots taken: the transport reads nothing more until a request finishes.
        let Some(slot) = session.slot().await else {
            return;
        };
        let this = self.clone();
        let s = session.clone();
        session.tracker.spawn(async move {
            let _slot = slot;
            if let Some(reply) = this.handle(&s, msg, session_sink(&s)).await {
                s.send(reply.encode()).await;
            }
        });
    }

    /// For line transports: a line longer than the limit was skipped. The error answers the
    /// request's own id when the line named one (see [`crate::transport::framing`]), else null, and says the size,
    /// the limit and what to do instead.
    pub async fn on_overlong(&self, session: &Arc<Session>, limit: usize, skipped: &Overlong) {
        let id = skipped.id.clone().unwrap_or_else(Id::null);
        let len = skipped.len;
        let err = RpcError::new(
            codes::PARSE_ERROR,
            format!(
                "message too large: it is {len} bytes and the limit is {limit} ([mcp].max_line_bytes), so it was \
                 discarded unread; send large documents with `openhumand-mcp ingest PATH` or split them into \
                 smaller calls"
            ),
        )
        .with_data(json!({ "max_line_bytes": limit, "message_bytes": len }));
        session.send(Reply::error(id, err).encode()).await;
    }

    /// Handles one decoded message (object or batch). Returns the reply, if any. `notify` carries
    /// progress and log notifications of the requests in it.
    pub async fn handle(&self, session: &Arc<Session>, msg: Incoming, notify: mpsc::Sender<String>) -> Option<Reply> {
        match msg.into_parts() {
            Ok(items) => self.handle_batch(session, items, notify).await,
            Err((one, exact_id)) => self.handle_one(session, one, exact_id, notify).await,
        }
    }

    async fn handle_batch(
        &self,
        session: &Arc<Session>,
        items: Vec<Part>,
        notify: mpsc::Sender<String>,
    ) -> Option<Reply> {
        if items.is_empty() {
            return Some(Reply::error(
                &Value::Null,
                RpcError::invalid_request("empty batch: send at least one message"),
            ));
        }
        // `initialize` must take effect before the rest of the batch is served.
        let mut replies: Vec<Option<Reply>> = std::iter::repeat_with(|| None).take(items.len()).collect();
        let mut rest = Vec::new();
        for (i, (item, exact_id)) in items.into_iter().enumerate() {
            if item.get("method").and_then(Value::as_str) == Some("initialize") {
                replies[i] = self.handle_one(session, item, exact_id, notify.clone()).await;
            } else {
                rest.push((i, item, exact_id));
            }
        }
        let futs = rest.into_iter().map(|(i, item, exact_id)| {
            let notify = notify.clone();
            async move { (i, self.handle_one(session, item, exact_id, notify).await) }
        });
        for (i, reply) in futures::future::join_all(futs).await {
            replies[i] = reply;
        }
        let replies: Vec<Reply> = replies.into_iter().flatten().collect();
        if replies.is_empty() { None } else { Some(Reply::Batch(replies)) }
    }

    /// `exact_id` is the id's original text when parsing changed it (a number `f64` cannot hold):
    /// the reply carries that text; the in-flight table keys the parsed value, as cancellations
    /// name it.
    async fn handle_one(
        &self,
        session: &Arc<Session>,
        msg: Value,
        exact_id: Option<Box<str>>,
        notify: mpsc::Sender<String>,
    ) -> Option<Reply> {
        let Value::Object(mut obj) = msg else {
            return Some(Reply::error(&Value::Null, RpcError::invalid_request("a JSON-RPC message must be an object")));
        };
        let id = obj.get("id").cloned();
        let id_ok = matches!(id, Some(Value::String(_)) | Some(Value::Number(_)));
        let reply_id = match (&id, exact_id) {
            (Some(Value::Number(_)), Some(text)) => Id::Exact(text),
            _ if id_ok => Id::from(id.clone().unwrap_or(Value::Null)),
            _ => Id::null(),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(Reply::error(reply_id.clone(), RpcError::invalid_request("`jsonrpc` must be \"2.0\"")));
        }
        let method = match obj.get("method") {
            Some(Value::String(m)) => m.clone(),
            Some(_) => {
                return Some(Reply::error(reply_id.clone(), RpcError::invalid_request("`method` must be a string")));
            }
            // A response from the client to a server→client request (see `input`): handed to the
            // handler waiting for it; one nobody waits for (late, cancelled) is dropped.
            None if obj.contains_key("result") || obj.contains_key("error") => {
                self.on_response(session, id.as_ref(), obj);
                return None;
            }
            None => {
                return Some(Reply::error(reply_id.clone(), RpcError::invalid_request("missing `method`")));
            }
        };
        // Moved out, not copied: params may carry a whole document.
        let params = match obj.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p,
            Some(_) => {
                id.as_ref()?;
                return Some(Reply::error(reply_id.clone(), RpcError::invalid_params("`params` must be an object")));
            }
        };
        let Some(id) = id else {
            self.on_notification(session, &method, &params);
            return None;
        };
        if !id_ok {
            return Some(Reply::error(&Value::Null, RpcError::invalid_request("`id` must be a string or a number")));
        }
        let key = id_key(&id);
        let cancel = session.cancel.child_token();
        if !session.begin(&key, cancel.clone()) {
            return Some(Reply::error(
                reply_id,
                RpcError::invalid_request(format!("request id {key} is already in flight; use a new id")),
            ));
        }
        // Unregisters the id however this future ends, including being dropped (an HTTP client
        // that hangs up).
        let _inflight = InflightGuard { session, key: &key };
        let routed = AssertUnwindSafe(self.route(session, &id, &method, params, cancel.clone(), notify)).catch_unwind();
        // Biased towards the cancel branch: a handler finishing at the instant of a cancel must
        // not send a reply the client was promised it would not get.
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            r = routed => Some(r),
        };
        match outcome? {
            Ok(Ok(result)) => Some(Reply::Result { id: reply_id, result }),
            Ok(Err(err)) => Some(Reply::Error { id: reply_id, error: err }),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(method = %method, panic = %what, "handler panicked");
                Some(Reply::error(
                    reply_id,
                    RpcError::internal(format!(
                        "internal error while handling {method}; the daemon logged the details and keeps running"
                    )),
                ))
            }
        }
    }

    fn on_response(&self, session: &Arc<Session>, id: Option<&Value>, mut obj: Map<String, Value>) {
        let Some(id) = id else { return };
        let outcome = match (obj.remove("result"), obj.remove("error")) {
            (Some(result), _) => Ok(result),
            (None, Some(error)) => {
                let code = error.get("code").and_then(Value::as_i64).unwrap_or(codes::INTERNAL_ERROR);
                let message = error.get("message").and_then(Value::as_str).unwrap_or("error").to_string();
                Err(RpcError::new(code, message))
            }
            (None, None) => return,
        };
        if !session.resolve_response(&id_key(id), outcome) {
            tracing::debug!(response = %id, "client response nobody waits for; dropped");
        }
    }

    fn on_notification(&self, session: &Arc<Session>, method: &str, params: &Map<String, Value>) {
        match method {
            "notifications/initialized" => session.mark_initialized(),
            "notifications/cancelled" => {
                if let Some(id) = params.get("requestId")
                    && session.cancel_request(&id_key(id))
                {
                    tracing::debug!(request = %id, "request cancelled by client");
                }
            }
            "notifications/roots/list_changed" => session.roots_changed(),
            other => tracing::debug!(method = %other, "ignoring notification"),
        }
    }

    async fn route(
        &self,
        session: &Arc<Session>,
        id: &Value,
        method: &str,
        params: Map<String, Value>,
        cancel: CancellationToken,
        notify: mpsc::Sender<String>,
    ) -> Result<Payload, RpcError> {
        let meta = params.get("_meta").and_then(Value::as_object);
        let meta_version = meta.and_then(|m| m.get(META_VERSION)).and_then(Value::as_str);
        let known_legacy = |v: &str| protocol::LEGACY_VERSIONS.contains(&v);
        if meta_version == Some(MODERN) && REMOVED_IN_MODERN.contains(&method) {
            return Err(RpcError::method_not_found(method)
                .with_data(json!({ "method": method, "hint": format!("{method} is not part of protocol {MODERN}") })));
        }
        match method {
            "server/discover" if meta_version.is_some_and(|v| v != MODERN && !known_legacy(v)) => {
                return Err(RpcError::unsupported_version(meta_version.unwrap_or_default()));
            }
            "initialize" => {
                return lifecycle::initialize(self.app.info(), self.features(), session, &params).map(Payload::Value);
            }
            "server/discover" => {
                return Ok(Payload::Value(lifecycle::discover(self.app.info(), self.features())));
            }
            _ => {}
        }
        let prefix = self.app.info().extension_prefix;
        if !prefix.is_empty() && method.starts_with(prefix) {
            if session.transport != Transport::Socket {
                return Err(RpcError::method_not_found(method));
            }
            let progress = meta
                .and_then(|m| m.get("progressToken"))
                .map(|token| Progress { notify: notify.clone(), token: token.clone() });
            let caller = Extension { caller: session.id, progress };
            return self.app.extension(method.to_string(), params, caller).await.map(Payload::Value);
        }
        let era = match (meta_version, session.negotiated()) {
            (Some(MODERN), _) => Era::Modern,
            (Some(v), _) if !known_legacy(v) => return Err(RpcError::unsupported_version(v)),
            (_, Some(v)) => Era::Legacy(v),
            (None, None) if method == "ping" => Era::Legacy(protocol::LATEST_LEGACY.to_string()),
            (None, None) => return Err(RpcError::not_initialized()),
            (Some(v), None) => {
                return Err(RpcError::invalid_request(format!(
                    "not initialized: protocol {v} needs `initialize` first; per-request versions are for {MODERN}"
                )));
            }
        };
        if method == "subscriptions/listen" && era.is_modern() {
            return self.listen(session, id, &params, cancel, notify).await;
        }
        let (source, client_info, log_level) = if era.is_modern() {
            let info = meta.and_then(|m| m.get(META_CLIENT_INFO)).cloned();
            let name = info.as_ref().and_then(|i| i.get("name")).and_then(Value::as_str);
            let level = meta
                .and_then(|m| m.get(META_LOG_LEVEL))
                .and_then(Value::as_str)
                .and_then(|l| LOG_LEVELS.iter().position(|x| *x == l));
            (source_label(name), info, level)
        } else {
            (session.source(), session.client_info(), session.log_level())
        };
        let input = if !era.is_modern() {
            Input::legacy(session.clone(), notify.clone(), cancel.clone())
        } else if MULTI_ROUND.contains(&method) {
            let caps = meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)).and_then(Value::as_object).cloned();
            Input::modern(caps.unwrap_or_default(), input::binding(method, &params), &params, &cancel)?
        } else {
            Input::default()
        };
        let ctx = RequestCtx {
            session: session.clone(),
            era: era.clone(),
            cancel,
            progress_token: meta.and_then(|m| m.get("progressToken")).cloned(),
            source,
            client_info,
            log_level,
            notify,
            auth: session.auth(),
            input: input.clone(),
        };
        let Some(suspended) = input.suspended() else {
            return self.serve(session, method, params, era, ctx).await;
        };
        // 2026-07-28: a handler that asks what its request does not answer is stopped, and the
        // client gets the questions to answer in a retry.
        tokio::select! {
            biased;
            _ = suspended.cancelled() => {}
            r = self.serve(session, method, params, era, ctx) => {
                if !suspended.is_cancelled() {
                    return r;
                }
            }
        }
        Ok(Payload::Value(input.input_required().unwrap_or_default()))
    }

    /// The method itself, once the era and the request's context are known.
    async fn serve(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Map<String, Value>,
        era: Era,
        ctx: RequestCtx,
    ) -> Result<Payload, RpcError> {
        let mut result = match method {
            "ping" => json!({}),
            "tools/list" => {
                reject_cursor(&params)?;
                json!({ "tools": self.app.tools_for(&ctx) })
            }
            // A call's result may come back as final JSON text, already shaped for the era.
            "tools/call" => {
                let (name, arguments) = call_params(params)?;
                match self.app.call_tool(name, arguments, ctx).await? {
                    Payload::Value(v) => v,
                    json => return Ok(json),
                }
            }
            "resources/list" => {
                reject_cursor(&params)?;
                let items: Vec<Value> = self
                    .app
                    .resources_for(&ctx)
                    .into_iter()
                    .map(|r| {
                        json!({ "uri": r.uri, "name": r.name, "title": r.title, "description": r.description, "mimeType": r.mime_type })
                    })
                    .collect();
                json!({ "resources": items })
            }
            "resources/templates/list" => {
                reject_cursor(&params)?;
                let items: Vec<Value> = self
                    .app
                    .resource_templates_for(&ctx)
                    .into_iter()
                    .map(|t| {
                        json!({ "uriTemplate": t.uri_template, "name": t.name, "title": t.title,
                                "description": t.description, "mimeType": t.mime_type })
                    })
                    .collect();
                json!({ "resourceTemplates": items })
            }
            // Replaced by `subscriptions/listen` in 2026-07-28.
            "resources/subscribe" | "resources/unsubscribe"
                if !era.is_modern() && self.app.resource_notifications() =>
            {
                let uri = uri_param(&params)?;
                if method == "resources/subscribe" {
                    session.subscribe(uri);
                } else {
                    session.unsubscribe(uri);
                }
                json!({})
            }
            "resources/read" => self.read_resource(&params, &era, ctx).await?,
            "logging/setLevel" => lifecycle::set_level(session, &params)?,
            "prompts/list" if self.features().prompts => {
                reject_cursor(&params)?;
                let prompts: Vec<Value> = self.app.prompts_for(&ctx).iter().map(Prompt::to_json).collect();
                json!({ "prompts": prompts })
            }
            "prompts/get" if self.features().prompts => {
                let (name, arguments) = prompts::get_params(&params, &self.app.prompts())?;
                self.app.get_prompt(name, arguments, ctx).await?.to_json()
            }
            "completion/complete" if self.app.completions() => {
                let request = prompts::complete_params(&params, &self.app.prompts(), &self.app.resource_templates())?;
                self.app.complete(request, ctx).await?.to_json()
            }
            other => return Err(RpcError::method_not_found(other)),
        };
        if era.is_modern() {
            modernise(method, &mut result);
        }
        Ok(Payload::Value(result))
    }
}

struct InflightGuard<'a> {
    session: &'a Session,
    key: &'a str,
}

impl Drop for InflightGuard<'_> {
    fn drop(&mut self) {
        self.session.finish(self.key);
    }
}

/// 2026-07-28 results carry `resultType`; cacheable ones carry `ttlMs` and `cacheScope`.
fn modernise(method: &str, result: &mut Value) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    obj.insert("resultType".into(), Value::from("complete"));
    let ttl = match method {
        "tools/list" | "prompts/list" => Some(protocol::TOOLS_TTL_MS),
        "resources/list" | "resources/templates/list" | "resources/read" => Some(protocol::RESOURCES_TTL_MS),
        _ => None,
    };
    if let Some(ttl) = ttl {
        obj.insert("ttlMs".into(), Value::from(ttl));
        obj.insert("cacheScope".into(), Value::from("private"));
    }
}

/// The `uri` parameter of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
fn uri_param(params: &Map<String, Value>) -> Result<&str, RpcError> {
    match params.get("uri") {
        Some(Value::String(u)) if !u.trim().is_empty() => Ok(u.as_str()),
        Some(Value::String(_)) => Err(RpcError::invalid_params("`uri` must not be blank")),
        Some(_) => Err(RpcError::invalid_params("`uri` must be a string")),
        None => Err(RpcError::invalid_params("missing `uri`: resources/list shows the available ones")),
    }
}

impl<A: App> Dispatcher<A> {
    /// `subscriptions/listen`: acknowledges, then delivers what was asked for on `notify` until
    /// the request is cancelled (no reply) or the transport or server closes (a result).
    async fn listen(
        &self,
        session: &Session,
        id: &Value,
        params: &Map<String, Value>,
        cancel: CancellationToken,
        notify: mpsc::Sender<String>,
    ) -> Result<Payload, RpcError> {
        let features = self.features();
        let filter = Filter::parse(params, features.resource_notifications, features.prompts)?;
        let _open = self.sessions.listeners.open(id.clone(), filter, notify);
        let closing = self.app.closing().unwrap_or_default();
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = session.streams_end.cancelled() => {}
            _ = closing.cancelled() => {}
        }
        Ok(Payload::Value(closing_result(id)))
    }

    async fn read_resource(&self, params: &Map<String, Value>, era: &Era, ctx: RequestCtx) -> Result<Value, RpcError> {
        let uri = uri_param(params)?;
        match self.app.read_resource_contents(uri.to_string(), ctx).await? {
            Some(contents) if !contents.is_empty() => Ok(json!({ "contents": contents })),
            _ => {
                let code = if era.is_modern() { codes::INVALID_PARAMS } else { codes::RESOURCE_NOT_FOUND };
                Err(RpcError::new(code, format!("resource not found: {uri}; resources/list shows the available ones"))
                    .with_data(json!({ "uri": uri })))
            }
        }
    }

    /// For HTTP `/rpc`: one extension method with no session.
    pub async fn extension(&self, method: &str, params: Map<String, Value>) -> Result<Value, RpcError> {
        let prefix = self.app.info().extension_prefix;
        if prefix.is_empty() || !method.starts_with(prefix) {
            return Err(RpcError::method_not_found(method).with_data(
                json!({ "method": method, "hint": format!("/rpc serves {prefix}* methods; MCP methods go to /mcp") }),
            ));
        }
        self.app.extension(method.to_string(), params, Extension { caller: 0, progress: None }).await
    }
}

/// The dispatcher with its application type erased, for transports that keep it in state of one
/// concrete type (the HTTP transport's axum state).
pub(crate) trait Serve: Send + Sync + 'static {
    fn handle_owned(
        &self,
        session: Arc<Session>,
        msg: Incoming,
        notify: mpsc::Sender<String>,
    ) -> futures::future::BoxFuture<'static, Option<Reply>>;
    fn new_session(&self, transport: Transport, out: mpsc::Sender<String>) -> Session;
    fn sessions(&self) -> &Arc<SessionSet>;
    /// The `x-mcp-header` marks of tool `name`'s arguments (2026-07-28 `Mcp-Param-*` headers).
    fn param_headers(&self, name: &str) -> Vec<(String, String)>;
    fn extension_owned(
        &self,
        method: String,
        params: Map<String, Value>,
    ) -> futures::future::BoxFuture<'static, Result<Value, RpcError>>;
}

impl<A: App> Serve for Dispatcher<A> {
    fn handle_owned(
        &self,
        session: Arc<Session>,
        msg: Incoming,
        notify: mpsc::Sender<String>,
    ) -> futures::future::BoxFuture<'static, Option<Reply>> {
        let this = self.clone();
        async move { this.handle(&session, msg, notify).await }.boxed()
    }
    fn new_session(&self, transport: Transport, out: mpsc::Sender<String>) -> Session {
        Dispatcher::new_session(self, transport, out)
    }
    fn sessions(&self) -> &Arc<SessionSet> {
        &self.sessions
    }
    fn param_headers(&self, name: &str) -> Vec<(String, String)> {
        self.app.param_headers(name)
    }
    fn extension_owned(
        &self,
        method: String,
        params: Map<String, Value>,
    ) -> futures::future::BoxFuture<'static, Result<Value, RpcError>> {
        let this = self.clone();
        async move { this.extension(&method, params).await }.boxed()
    }
}

/// The name and arguments of a `tools/call`, or the -32602 that says what is wrong with them.
fn call_params(mut params: Map<String, Value>) -> Result<(String, Map<String, Value>), RpcError> {
    let name = match params.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.clone(),
        Some(Value::String(_)) => {
            return Err(RpcError::invalid_params("`params.name` must not be blank"));
        }
        Some(_) => {
            return Err(RpcError::invalid_params("`params.name` must be a string naming a tool"));
        }
        None => {
            return Err(RpcError::invalid_params("missing `params.name`: the tool to call"));
        }
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(RpcError::invalid_params("`params.arguments` must be an object of named arguments"));
        }
    };
    Ok((name, arguments))
}

/// Lists are one page; we never hand out cursors, so any cursor is one we did not issue.
fn reject_cursor(params: &Map<String, Value>) -> Result<(), RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(()),
        Some(c) => {
            Err(RpcError::invalid_params(format!("invalid cursor {c}: this list has a single page; omit `cursor`")))
        }
    }
}

/// A message as a line. `serde_json::to_string` writes straight into a buffer; `Value`'s
/// `Display` goes through the formatting machinery and is measurably slower on large messages.
pub fn encode(message: &Value) -> String {
    serde_json::to_string(message).unwrap_or_default()
}

fn session_sink(session: &Arc<Session>) -> mpsc::Sender<String> {
    session.outbound()
}

fn trim_line(line: &[u8]) -> &[u8] {
    let mut l = line;
    while let [rest @ .., b'\r' | b'\n' | b' ' | b'\t'] = l {
        l = rest;
    }
    while let [b' ' | b'\t', rest @ ..] = l {
        l = rest;
    }
    l
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use super::*;
    use crate::session;
    use crate::testing::{self, FakeApp};

    struct Rig {
        dispatcher: Dispatcher<FakeApp>,
        session: Arc<Session>,
        rx: mpsc::Receiver<String>,
    }

    fn rig_on(transport: Transport) -> Rig {
        let dispatcher = testing::dispatcher();
        let (session, rx) = testing::session(&dispatcher, transport);
        Rig { dispatcher, session, rx }
    }

    fn rig() -> Rig {
        rig_on(Transport::Stdio)
    }

    impl Rig {
        async fn line(&self, v: Value) {
            self.dispatcher.on_line(&self.session, v.to_string().as_bytes()).await;
        }
        async fn next(&mut self) -> Value {
            let line = tokio::time::timeout(Duration::from_secs(10), self.rx.recv())
                .await
                .expect("reply in time")
                .expect("open");
            serde_json::from_str(&line).unwrap()
        }
        async fn init(&mut self) {
            self.line(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
            )
            .await;
            assert_eq!(self.next().await["id"], 0);
            self.line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        }
    }

    fn sleep_call(id: i64, steps: i64, progress: Option<&str>) -> Value {
        let mut params = json!({"name": "test.sleep", "arguments": {"steps": steps}});
        if let Some(token) = progress {
            params["_meta"] = json!({"progressToken": token});
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    }

    #[tokio::test]
    async fn a_slow_call_does_not_block_ping_and_replies_come_out_of_order() {
        let mut r = rig();
        r.init().await;
        r.line(sleep_call(1, 20, None)).await;
        r.line(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
        assert_eq!(r.next().await["id"], 2, "ping answered while the slow call runs");
        let slow = r.next().await;
        assert_eq!(slow["id"], 1);
        assert_eq!(slow["result"]["structuredContent"]["slept_steps"], 20);
    }

    #[tokio::test]
    async fn cancelled_request_stops_its_handler_and_gets_no_reply() {
        let mut r = rig();
        r.init().await;
        let before = r.dispatcher.app().dropped.load(Ordering::SeqCst);
        r.line(sleep_call(7, 100_000, Some("tok"))).await;
        // The first progress notification proves the handler is running.
        let p = r.next().await;
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "tok");
        r.line(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})).await;
        r.line(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"})).await;
        loop {
            let m = r.next().await;
            if m["method"] == "notifications/progress" {
                continue;
            }
            assert_eq!(m["id"], 8, "no reply for the cancelled request: {m}");
            break;
        }
        assert_eq!(r.session.inflight_count(), 0);
        assert!(r.dispatcher.app().dropped.load(Ordering::SeqCst) > before, "the handler was dropped");
        // The id is free again.
        r.line(sleep_call(7, 1, None)).await;
        loop {
            let m = r.next().await;
            if m["id"] == 7 {
                assert_eq!(m["result"]["isError"], false);
                break;
            }
        }
    }

    #[tokio::test]
    async fn duplicate_inflight_id_is_an_error() {
        let mut r = rig();
        r.init().await;
        r.line(sleep_call(5, 30, None)).await;
        r.line(sleep_call(5, 1, None)).await;
        let dup = r.next().await;
        assert_eq!(dup["error"]["code"], -32600);
        assert!(dup["error"]["message"].as_str().unwrap().contains("already in flight"));
        assert_eq!(r.next().await["result"]["structuredContent"]["slept_steps"], 30);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_read_meets_backpressure_and_loses_nothing() {
        let mut r = rig();
        r.init().await;
        let ping = |id: usize| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
        // Nobody takes replies: 64 fit in the session's channel, then MAX_CONCURRENT requests
        // wait to send theirs, and the next read waits for a slot. With the clock paused, the
        // timeout fires only once no task can move, so it detects that wait without real time.
        let (d, s) = (r.dispatcher.clone(), r.session.clone());
        let stuck = |n: usize| {
            let line = ping(n);
            let (d, s) = (d.clone(), s.clone());
            async move { tokio::time::timeout(Duration::from_secs(1), d.on_line(&s, line.as_bytes())).await.is_err() }
        };
        let mut sent = 0;
        while !stuck(sent + 1).await {
            sent += 1;
            assert!(sent <= 64 + session::MAX_CONCURRENT, "read {sent} requests nobody takes answers of");
        }
        assert_eq!(sent, 64 + session::MAX_CONCURRENT);
        // Taking one answer frees one slot, and reading resumes (the refused line is sent again,
        // as the transport would have kept it).
        let mut seen = std::collections::BTreeSet::new();
        seen.insert(r.next().await["id"].as_u64().unwrap());
        assert!(!stuck(sent + 1).await);
        sent += 1;
        while seen.len() < sent {
            let id = r.next().await["id"].as_u64().unwrap();
            assert!(seen.insert(id), "id {id} answered twice");
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), (1..=sent as u64).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn log_level_and_list_changed_are_delivered() {
        let mut r = rig();
        r.init().await;
        r.line(json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}})).await;
        assert_eq!(r.next().await["result"], json!({}));
        assert_eq!(r.session.log_level(), Some(0));
        r.dispatcher.sessions().notify_tools_changed();
        // The rig's session is not registered, so it hears nothing; registered ones do.
        let _g = r.dispatcher.sessions().register(&r.session);
        r.dispatcher.sessions().notify_tools_changed();
        assert_eq!(r.next().await["method"], "notifications/tools/list_changed");
    }

    #[tokio::test]
    async fn lists_reads_and_unknown_methods_are_answered_by_the_protocol_layer() {
        let mut r = rig();
        r.init().await;
        r.line(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
        let tools = r.next().await;
        assert_eq!(tools["result"]["tools"][0]["name"], "test.sleep");
        assert_eq!(tools["result"]["tools"][0]["inputSchema"]["required"], json!(["steps"]));
        r.line(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "x"}})).await;
        assert_eq!(r.next().await["error"]["code"], -32602, "we never issue cursors");
        r.line(json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "fake://greeting"}}))
            .await;
        assert_eq!(r.next().await["result"]["contents"][0]["text"], "hello");
        r.line(json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "fake://none"}})).await;
        assert_eq!(r.next().await["error"]["code"], openhuman_common::codes::RESOURCE_NOT_FOUND);
        r.line(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "test.sleep", "arguments": []}}))
            .await;
        let bad = r.next().await;
        assert_eq!(bad["error"]["code"], -32602);
        assert!(bad["error"]["message"].as_str().unwrap().contains("arguments"), "{bad}");
        r.line(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "test.sleep", "arguments": {"steps": 0}}}))
            .await;
        let refused = r.next().await;
        assert_eq!(refused["result"]["isError"], true, "argument errors are tool results: {refused}");
        r.line(json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage"})).await;
        assert_eq!(r.next().await["error"]["code"], -32601);
        r.line(json!({"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}))
            .await;
        assert_eq!(r.next().await["result"]["serverInfo"]["name"], "fake");
    }

    #[tokio::test]
    async fn prompts_and_completions_are_advertised_listed_got_and_completed() {
        let mut r = rig();
        r.line(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}))
            .await;
        let caps = r.next().await["result"]["capabilities"].clone();
        assert_eq!((caps["prompts"].clone(), caps["completions"].clone()), (json!({"listChanged": true}), json!({})));
        r.line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        r.line(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"})).await;
        let list = r.next().await["result"]["prompts"].clone();
        assert_eq!(list[0]["name"], "greet");
        assert_eq!(list[0]["arguments"][0], json!({"name": "name", "description": "Who to greet.", "required": true}));
        let get = |id: i64, args: Value| json!({"jsonrpc": "2.0", "id": id, "method": "prompts/get", "params": {"name": "greet", "arguments": args}});
        r.line(get(2, json!({"name": "Ada", "style": "Hi"}))).await;
        let got = r.next().await;
        assert_eq!(got["result"]["messages"][0]["content"]["text"], "Hi, Ada!", "{got}");
        r.line(get(3, json!({}))).await;
        let missing = r.next().await;
        assert_eq!(missing["error"]["code"], -32602);
        assert!(missing["error"]["message"].as_str().unwrap().contains("`name`"), "{missing}");
        r.line(json!({"jsonrpc": "2.0", "id": 4, "method": "prompts/get", "params": {"name": "nope"}})).await;
        assert_eq!(r.next().await["error"]["code"], -32602);
        let complete = |id: i64, reference: Value, name: &str, value: &str| {
            json!({"jsonrpc": "2.0", "id": id, "method": "completion/complete",
                   "params": {"ref": reference, "argument": {"name": name, "value": value}}})
        };
        r.line(complete(5, json!({"type": "ref/prompt", "name": "greet"}), "name", "n")).await;
        let c = r.next().await["result"]["completion"].clone();
        assert_eq!(
            (c["values"].as_array().unwrap().len(), c["total"].as_u64(), c["hasMore"].as_bool()),
            (100, Some(150), Some(true))
        );
        r.line(complete(6, json!({"type": "ref/prompt", "name": "greet"}), "name", "n14")).await;
        let c = r.next().await["result"]["completion"].clone();
        assert_eq!(
            c,
            json!({"values": ["n140", "n141", "n142", "n143", "n144", "n145", "n146", "n147", "n148", "n149"],
                             "total": 10, "hasMore": false})
        );
        r.line(complete(7, json!({"type": "ref/resource", "uri": "fake://item/{id}"}), "id", "a")).await;
        assert_eq!(r.next().await["result"]["completion"]["values"], json!(["a1", "a2"]));
        r.line(complete(8, json!({"type": "ref/prompt", "name": "nope"}), "name", "")).await;
        assert_eq!(r.next().await["error"]["code"], -32602);
        // The stateless era: the same, with its result fields.
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        r.line(json!({"jsonrpc": "2.0", "id": 9, "method": "prompts/list", "params": {"_meta": meta}})).await;
        let modern = r.next().await["result"].clone();
        assert_eq!(
            (modern["resultType"].as_str(), modern["ttlMs"].as_u64()),
            (Some("complete"), Some(protocol::TOOLS_TTL_MS))
        );
        r.line(json!({"jsonrpc": "2.0", "id": 10, "method": "server/discover", "params": {"_meta": meta}})).await;
        assert_eq!(r.next().await["result"]["capabilities"]["completions"], json!({}));
        let _g = r.dispatcher.sessions().register(&r.session);
        r.dispatcher.sessions().notify_prompts_changed();
        assert_eq!(r.next().await["method"], "notifications/prompts/list_changed");
    }

    #[tokio::test]
    async fn lists_and_reads_follow_the_caller_in_both_eras() {
        let counts = |r: &Value| {
            let n = |k: &str| r["result"][k].as_array().map_or(usize::MAX, Vec::len);
            (n("tools"), n("resources"), n("resourceTemplates"), n("prompts"))
        };
        let lists = ["tools/list", "resources/list", "resources/templates/list", "prompts/list"];
        for (name, want) in [("narrow", 0), ("wide", 1)] {
            let mut r = rig();
            r.line(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": name}}}))
                .await;
            r.next().await;
            let mut seen = Vec::new();
            for (i, method) in lists.iter().enumerate() {
                r.line(json!({"jsonrpc": "2.0", "id": i + 1, "method": method})).await;
                seen.push(counts(&r.next().await));
            }
            // Narrow sees none of each list, wide at least one of each.
            let got: Vec<usize> = seen.iter().enumerate().map(|(i, c)| [c.0, c.1, c.2, c.3][i].min(1)).collect();
            assert_eq!(got, [want; 4], "{name}");
            r.line(
                json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "fake://greeting"}}),
            )
            .await;
            let read = r.next().await;
            assert_eq!(read.get("error").is_some(), want == 0, "{name}: {read}");
            // A stateless request names its client in `_meta`, whatever the session said.
            let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientInfo": {"name": if want == 0 { "wide" } else { "narrow" }}});
            r.line(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": {"_meta": meta}})).await;
            assert_eq!(counts(&r.next().await).0.min(1), 1 - want, "{name}, stateless");
        }
    }

    #[tokio::test]
    async fn extension_methods_are_served_on_the_socket_only() {
        let mut socket = rig_on(Transport::Socket);
        socket.line(json!({"jsonrpc": "2.0", "id": 1, "method": "fake.echo", "params": {"x": 1}})).await;
        let echoed = socket.next().await;
        assert_eq!(echoed["result"]["params"]["x"], 1, "no handshake needed: {echoed}");
        assert_eq!(echoed["result"]["caller"], socket.session.id);
        let mut stdio = rig();
        stdio.init().await;
        stdio.line(json!({"jsonrpc": "2.0", "id": 1, "method": "fake.echo"})).await;
        assert_eq!(stdio.next().await["error"]["code"], -32601);
    }

    fn confirm(id: i64, meta: Option<Value>) -> Value {
        let mut params = json!({"name": "test.confirm", "arguments": {}});
        if let Some(m) = meta {
            params["_meta"] = m;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    }

    async fn init_with(r: &mut Rig, caps: Value) {
        r.line(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": caps}}))
            .await;
        assert_eq!(r.next().await["id"], 0);
        r.line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    }

    #[tokio::test]
    async fn a_handler_asks_the_client_and_gets_its_answer_back() {
        let mut r = rig();
        init_with(&mut r, json!({"elicitation": {}})).await;
        r.line(confirm(1, None)).await;
        let ask = r.next().await;
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert_eq!(ask["params"]["message"], "Really do it?");
        assert!(ask["id"].is_string());
        // Other requests are served while the question is open.
        r.line(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
        assert_eq!(r.next().await["id"], 2);
        // A response nobody waits for is dropped silently.
        r.line(json!({"jsonrpc": "2.0", "id": "nobody", "result": {"action": "accept"}})).await;
        r.line(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"sure": true}}}))
            .await;
        let done = r.next().await;
        assert_eq!(done["id"], 1);
        assert_eq!(done["result"]["structuredContent"], json!({"action": "accept", "content": {"sure": true}}));
        assert_eq!(r.session.inflight_count(), 0);
    }

    #[tokio::test]
    async fn a_client_without_the_capability_is_never_asked() {
        let mut r = rig();
        r.init().await;
        r.line(confirm(1, None)).await;
        let done = r.next().await;
        assert_eq!(done["id"], 1, "no question went out: {done}");
        assert!(done["result"]["structuredContent"]["not_asked"].as_str().unwrap().contains("elicitation"));
    }

    #[tokio::test]
    async fn a_refusal_and_a_cancel_end_the_wait() {
        let mut r = rig();
        init_with(&mut r, json!({"elicitation": {}})).await;
        r.line(confirm(1, None)).await;
        let ask = r.next().await;
        r.line(json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -1, "message": "user closed the dialog"}}))
            .await;
        let done = r.next().await;
        assert!(done["result"]["structuredContent"]["not_asked"].as_str().unwrap().contains("user closed"), "{done}");
        // Cancelling the call while it waits: no reply, and the client is told to drop the question.
        r.line(confirm(3, None)).await;
        let ask = r.next().await;
        r.line(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})).await;
        let told = r.next().await;
        assert_eq!((&told["method"], &told["params"]["requestId"]), (&json!("notifications/cancelled"), &ask["id"]));
        r.line(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})).await;
        assert_eq!(r.next().await["id"], 4, "nothing answered the cancelled call");
    }

    fn roots_call(id: i64, meta: Option<Value>) -> Value {
        let mut params = json!({"name": "test.roots", "arguments": {}});
        if let Some(m) = meta {
            params["_meta"] = m;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    }

    #[tokio::test]
    async fn roots_are_asked_once_kept_and_asked_again_after_a_change() {
        let mut r = rig();
        init_with(&mut r, json!({"roots": {"listChanged": true}})).await;
        r.line(roots_call(1, None)).await;
        let ask = r.next().await;
        assert_eq!(ask["method"], "roots/list", "{ask}");
        r.line(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": "file:///a"}]}})).await;
        assert_eq!(r.next().await["result"]["structuredContent"]["uris"], json!(["file:///a"]));
        // Kept: the next call is answered without a question.
        r.line(roots_call(2, None)).await;
        let done = r.next().await;
        assert_eq!((&done["id"], &done["result"]["structuredContent"]["uris"]), (&json!(2), &json!(["file:///a"])));
        // The client says its roots changed: the next call asks again.
        r.line(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})).await;
        r.line(roots_call(3, None)).await;
        let ask = r.next().await;
        assert_eq!(ask["method"], "roots/list", "{ask}");
        r.line(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": "file:///b"}]}})).await;
        assert_eq!(r.next().await["result"]["structuredContent"]["uris"], json!(["file:///b"]));
        // A refusal is kept as no roots: not asked on every call.
        r.line(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})).await;
        r.line(roots_call(4, None)).await;
        let ask = r.next().await;
        r.line(json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32601, "message": "no roots here"}})).await;
        assert_eq!(r.next().await["result"]["structuredContent"]["uris"], json!([]));
        r.line(roots_call(5, None)).await;
        let done = r.next().await;
        assert_eq!((&done["id"], &done["result"]["structuredContent"]["uris"]), (&json!(5), &json!([])));
    }

    #[tokio::test]
    async fn a_client_without_roots_is_never_sent_roots_list() {
        let mut r = rig();
        init_with(&mut r, json!({"elicitation": {}})).await;
        r.line(roots_call(1, None)).await;
        let done = r.next().await;
        assert_eq!((&done["id"], &done["result"]["structuredContent"]["uris"]), (&json!(1), &json!([])), "{done}");
        let bare = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        r.line(roots_call(2, Some(bare))).await;
        let done = r.next().await;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(done["result"]["structuredContent"]["uris"], json!([]));
    }

    #[tokio::test]
    async fn the_stateless_era_asks_for_roots_in_each_request() {
        let mut r = rig();
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {"roots": {}}});
        r.line(roots_call(1, Some(meta.clone()))).await;
        let first = r.next().await["result"].clone();
        assert_eq!(first["resultType"], "input_required", "{first}");
        assert_eq!(first["inputRequests"]["roots"]["method"], "roots/list", "{first}");
        let mut retry = roots_call(2, Some(meta.clone()));
        retry["params"]["inputResponses"] = json!({"roots": {"roots": [{"uri": "file:///c"}]}});
        retry["params"]["requestState"] = first["requestState"].clone();
        r.line(retry).await;
        let done = r.next().await["result"].clone();
        assert_eq!(
            (done["resultType"].as_str(), &done["structuredContent"]["uris"]),
            (Some("complete"), &json!(["file:///c"]))
        );
        // Nothing is kept between stateless requests: the next one asks again.
        r.line(roots_call(3, Some(meta))).await;
        assert_eq!(r.next().await["result"]["resultType"], "input_required");
    }

    #[tokio::test]
    async fn the_stateless_era_asks_with_input_required_and_a_signed_state() {
        let mut r = rig();
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        r.line(confirm(1, Some(meta.clone()))).await;
        let first = r.next().await["result"].clone();
        assert_eq!(first["resultType"], "input_required", "{first}");
        let (key, request) = first["inputRequests"].as_object().unwrap().iter().next().unwrap();
        assert_eq!(request["method"], "elicitation/create");
        let state = first["requestState"].as_str().unwrap().to_string();
        let retry = |id: i64, state: &str| {
            let mut m = confirm(id, Some(meta.clone()));
            m["params"]["inputResponses"] = json!({ key.clone(): {"action": "decline"} });
            m["params"]["requestState"] = json!(state);
            m
        };
        r.line(retry(2, &state)).await;
        let done = r.next().await["result"].clone();
        assert_eq!(
            (done["resultType"].as_str(), &done["structuredContent"]["action"]),
            (Some("complete"), &json!("decline"))
        );
        r.line(retry(3, &format!("{state}x"))).await;
        assert_eq!(r.next().await["error"]["code"], -32602, "a tampered state is refused");
        // A state made for one tool call is refused on another.
        let mut other = retry(4, &state);
        other["params"]["arguments"] = json!({"x": 1});
        r.line(other).await;
        assert_eq!(r.next().await["error"]["code"], -32602);
        // Without the capability, nothing is asked and the tool runs as without a client.
        let bare = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        r.line(confirm(5, Some(bare.clone()))).await;
        assert_eq!(r.next().await["result"]["resultType"], "complete");
        // Lists never answer input_required.
        r.line(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": meta}})).await;
        assert_eq!(r.next().await["result"]["resultType"], "complete");
    }

    #[tokio::test]
    async fn malformed_lines_get_parse_errors_and_the_session_goes_on() {
        let mut r = rig();
        r.dispatcher.on_line(&r.session, b"{not json").await;
        assert_eq!(r.next().await["error"]["code"], -32700);
        r.dispatcher.on_line(&r.session, b"[]").await;
        assert_eq!(r.next().await["error"]["code"], -32600);
        let skipped = |head: &[u8]| Overlong { id: crate::transport::framing::id_in(head), len: 20 };
        r.dispatcher.on_overlong(&r.session, 10, &skipped(b"{\"id\":\"big\",\"method\":\"tools/ca")).await;
        let told = r.next().await;
        assert_eq!((&told["id"], &told["error"]["data"]["max_line_bytes"]), (&json!("big"), &json!(10)), "{told}");
        let message = told["error"]["message"].as_str().unwrap();
        assert!(message.contains("20 bytes") && message.contains("openhumand-mcp ingest"), "{message}");
        r.dispatcher.on_overlong(&r.session, 10, &skipped(b"{\"params\":{\"text\":\"xxx")).await;
        assert_eq!(r.next().await["id"], Value::Null);
        r.line(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
        assert_eq!(r.next().await["id"], 1);
    }
}
