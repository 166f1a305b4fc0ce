//! One MCP session: its handshake state, provenance label, the client's declared capabilities,
//! log level, in-flight requests (each with its own cancellation token), the server→client
//! requests waiting for the client's response, the client's roots as it last gave them, and the
//! channel its messages leave by. Every
//! transport makes one per connection (socket, stdio) or per `Mcp-Session-Id` (HTTP), and
//! registers it in the server's [`SessionSet`] for as long as it lives.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use openhuman_common::normalize_id;

use crate::auth::AuthInfo;
use crate::input::{Responses, Root};
use crate::subscriptions::{Listeners, updated_line};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How many requests of one session may run at once. A line transport stops reading while all
/// slots are taken, so a client that sends faster than it reads its answers meets backpressure
/// instead of a daemon that queues work and replies without bound.
pub const MAX_CONCURRENT: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Socket,
    Stdio,
    Http,
}

/// Syslog-style levels of MCP logging, least severe first.
pub const LOG_LEVELS: &[&str] = &["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const LEVEL_UNSET: u8 = u8::MAX;

pub struct Session {
    pub id: u64,
    pub transport: Transport,
    negotiated: Mutex<Option<String>>,
    initialized: AtomicBool,
    source: OnceLock<String>,
    client_info: OnceLock<Value>,
    /// The `capabilities` the client declared in `initialize`.
    client_caps: OnceLock<serde_json::Map<String, Value>>,
    /// Server→client requests waiting for the client's response.
    responses: Responses,
    /// The client's answer to `roots/list` (see [`crate::input::Input::roots`]) and a counter of
    /// `notifications/roots/list_changed`, so an answer to a question asked before a change is
    /// not kept after it.
    roots: Mutex<(u64, Option<Vec<Root>>)>,
    /// The `_meta` object of the client's `initialize` (extension fields a client or its
    /// launcher sends about itself, e.g. its working directory).
    client_meta: OnceLock<Value>,
    log_level: AtomicU8,
    inflight: Mutex<HashMap<String, CancellationToken>>,
    /// Resource URIs this session subscribed to with `resources/subscribe`.
    subscribed: Mutex<BTreeSet<String>>,
    slots: Arc<Semaphore>,
    /// Cancelled when the connection ends or the daemon shuts down.
    pub cancel: CancellationToken,
    /// Cancelled when the transport stops reading (EOF, shutdown): open `subscriptions/listen`
    /// streams end gracefully then, so a drain never waits on them.
    pub streams_end: CancellationToken,
    /// Every request task of this session, so the transport can drain them.
    pub tracker: TaskTracker,
    out: mpsc::Sender<String>,
    /// The OAuth caller of the HTTP requests on this session (see [`Session::set_auth`]).
    auth: Mutex<Option<Arc<AuthInfo>>>,
}

impl Session {
    pub fn new(transport: Transport, parent: &CancellationToken, out: mpsc::Sender<String>) -> Session {
        Session {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            transport,
            negotiated: Mutex::new(None),
            initialized: AtomicBool::new(false),
            source: OnceLock::new(),
            client_info: OnceLock::new(),
            client_caps: OnceLock::new(),
            responses: Responses::default(),
            roots: Mutex::new((0, None)),
            client_meta: OnceLock::new(),
            log_level: AtomicU8::new(LEVEL_UNSET),
            inflight: Mutex::new(HashMap::new()),
            subscribed: Mutex::new(BTreeSet::new()),
            slots: Arc::new(Semaphore::new(MAX_CONCURRENT)),
            cancel: parent.child_token(),
            streams_end: CancellationToken::new(),
            tracker: TaskTracker::new(),
            out,
            auth: Mutex::new(None),
        }
    }

    /// The OAuth caller its requests run as: set by the HTTP transport from each request's
    /// access token before the request is handled (a session stays with one caller; a step-up
    /// brings new scopes).
    pub fn set_auth(&self, auth: Option<Arc<AuthInfo>>) {
        *self.auth.lock().expect("session lock") = auth;
    }

    pub fn auth(&self) -> Option<Arc<AuthInfo>> {
        self.auth.lock().expect("session lock").clone()
    }

    /// Waits for one of the session's request slots (freed when the permit drops); `None` once
    /// the session is cancelled.
    pub async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        tokio::select! {
            permit = self.slots.clone().acquire_owned() => permit.ok(),
            _ = self.cancel.cancelled() => None,
        }
    }

    /// The version agreed by `initialize`, if it happened.
    pub fn negotiated(&self) -> Option<String> {
        self.negotiated.lock().expect("session lock").clone()
    }

    pub fn set_negotiated(&self, version: &str) {
        *self.negotiated.lock().expect("session lock") = Some(version.to_string());
    }

    pub fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    /// True once the client sent `notifications/initialized` (it may now receive notifications).
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    /// Records the client's name from `initialize`; the first observation wins for the session.
    pub fn observe_client(&self, client_info: Option<&Value>) {
        let name = client_info.and_then(|c| c.get("name")).and_then(Value::as_str);
        let _ = self.source.set(source_label(name));
        if let Some(info) = client_info {
            let _ = self.client_info.set(info.clone());
        }
    }

    /// Records the `_meta` object of `initialize`; the first observation wins for the session.
    pub fn observe_meta(&self, meta: Option<&Value>) {
        if let Some(m @ Value::Object(_)) = meta {
            let _ = self.client_meta.set(m.clone());
        }
    }

    /// The `_meta` object the client sent with `initialize`, if any.
    pub fn client_meta(&self) -> Option<&Value> {
        self.client_meta.get()
    }

    /// `mcp:<client>` or `mcp`: the provenance label of this session's writes.
    pub fn source(&self) -> String {
        self.source.get().cloned().unwrap_or_else(|| "mcp".to_string())
    }

    pub fn client_info(&self) -> Option<Value> {
        self.client_info.get().cloned()
    }

    /// Records the `capabilities` of `initialize`; the first observation wins.
    pub fn observe_capabilities(&self, caps: Option<&Value>) {
        if let Some(Value::Object(c)) = caps {
            let _ = self.client_caps.set(c.clone());
        }
    }

    /// What the client declared it can do (elicitation, sampling, roots, …).
    pub fn client_capabilities(&self) -> serde_json::Map<String, Value> {
        self.client_caps.get().cloned().unwrap_or_default()
    }

    /// True when the client declared `capability` (present and not null).
    pub fn declared(&self, capability: &str) -> bool {
        self.client_caps.get().is_some_and(|c| c.get(capability).is_some_and(|v| !v.is_null()))
    }

    /// True when the client declared something the server may ask it for while a request runs
    /// (elicitation, sampling, roots): over HTTP such requests answer with an event stream.
    pub fn can_be_asked(&self) -> bool {
        self.client_caps.get().is_some_and(|c| {
            ["elicitation", "sampling", "roots"].iter().any(|k| c.get(*k).is_some_and(|v| !v.is_null()))
        })
    }

    /// The roots the client last gave, or (when none are kept) the change counter to hand to
    /// [`Session::keep_roots`] with the answer of a new `roots/list`.
    pub fn roots(&self) -> Result<Vec<Root>, u64> {
        let kept = self.roots.lock().expect("session lock");
        kept.1.clone().ok_or(kept.0)
    }

    /// Keeps the answer of a `roots/list` asked at change counter `generation`; dropped when the
    /// client has said its roots changed since.
    pub fn keep_roots(&self, generation: u64, roots: Vec<Root>) {
        let mut kept = self.roots.lock().expect("session lock");
        if kept.0 == generation {
            kept.1 = Some(roots);
        }
    }

    /// `notifications/roots/list_changed`: forget the kept roots; the next request that wants
    /// them asks again.
    pub fn roots_changed(&self) {
        let mut kept = self.roots.lock().expect("session lock");
        kept.0 += 1;
        kept.1 = None;
    }

    /// A new server→client request id and the receiver its response will arrive on.
    pub fn expect_response(&self) -> (Value, tokio::sync::oneshot::Receiver<Result<Value, crate::RpcError>>) {
        self.responses.expect()
    }

    /// A response from the client (`key` is its id as JSON text): handed to the request that
    /// waits for it. False when none does (late, unknown, or already answered).
    pub fn resolve_response(&self, key: &str, outcome: Result<Value, crate::RpcError>) -> bool {
        self.responses.resolve(key, outcome)
    }

    /// Stops waiting for the response to `key`; false when it was not awaited.
    pub fn forget_response(&self, key: &str) -> bool {
        self.responses.forget(key)
    }

    pub fn set_log_level(&self, level: &str) -> bool {
        match LOG_LEVELS.iter().position(|l| *l == level) {
            Some(i) => {
                self.log_level.store(i as u8, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The minimum level of `notifications/message` this session wants (None: not asked).
    pub fn log_level(&self) -> Option<usize> {
        match self.log_level.load(Ordering::Relaxed) {
            LEVEL_UNSET => None,
            i => Some(i as usize),
        }
    }

    /// Registers a request as in flight; false when the id is already in use.
    pub fn begin(&self, key: &str, token: CancellationToken) -> bool {
        let mut map = self.inflight.lock().expect("inflight lock");
        if map.contains_key(key) {
            return false;
        }
        map.insert(key.to_string(), token);
        true
    }

    pub fn finish(&self, key: &str) {
        self.inflight.lock().expect("inflight lock").remove(key);
    }

    /// Cancels an in-flight request (from `notifications/cancelled`).
    pub fn cancel_request(&self, key: &str) -> bool {
        match self.inflight.lock().expect("inflight lock").get(key) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    pub fn inflight_count(&self) -> usize {
        self.inflight.lock().expect("inflight lock").len()
    }

    /// Queues one outgoing line; waits when the client reads slowly. False once the peer is gone.
    pub async fn send(&self, line: String) -> bool {
        self.out.send(line).await.is_ok()
    }

    /// The channel this session's messages leave by (for request contexts).
    pub fn outbound(&self) -> mpsc::Sender<String> {
        self.out.clone()
    }

    /// `resources/subscribe`: this session hears `notifications/resources/updated` for `uri`.
    pub fn subscribe(&self, uri: &str) {
        self.subscribed.lock().expect("subscriptions lock").insert(uri.to_string());
    }

    /// `resources/unsubscribe`; false when it was not subscribed.
    pub fn unsubscribe(&self, uri: &str) -> bool {
        self.subscribed.lock().expect("subscriptions lock").remove(uri)
    }

    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscribed.lock().expect("subscriptions lock").contains(uri)
    }

    /// Queues a message without waiting (notifications from synchronous contexts); drops it when
    /// the client is not reading.
    pub fn try_send(&self, line: String) -> bool {
        self.out.try_send(line).is_ok()
    }
}

/// The key an id is tracked under: its JSON text, so `1` and `"1"` stay distinct.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Provenance: `mcp:<normalised name>`, or `mcp` when nothing usable remains.
pub fn source_label(name: Option<&str>) -> String {
    match name.map(normalize_id) {
        Some(n) if !n.is_empty() => format!("mcp:{n}"),
        _ => "mcp".to_string(),
    }
}

/// The live sessions of a server, for broadcasts (`notifications/tools/list_changed`), status
/// and idle detection. A session is in the set from `register` until its guard drops.
pub struct SessionSet {
    sessions: Mutex<HashMap<u64, Weak<Session>>>,
    count: watch::Sender<usize>,
    /// Open `subscriptions/listen` streams (2026-07-28), whichever session they came on.
    pub listeners: Listeners,
}

impl Default for SessionSet {
    fn default() -> Self {
        SessionSet {
            sessions: Mutex::new(HashMap::new()),
            count: watch::Sender::new(0),
            listeners: Listeners::default(),
        }
    }
}

impl SessionSet {
    pub fn register(self: &Arc<Self>, session: &Arc<Session>) -> SessionGuard {
        let mut map = self.sessions.lock().expect("sessions lock");
        map.insert(session.id, Arc::downgrade(session));
        self.count.send_replace(map.len());
        SessionGuard { set: self.clone(), id: session.id }
    }

    pub fn all(&self) -> Vec<Arc<Session>> {
        self.sessions.lock().expect("sessions lock").values().filter_map(Weak::upgrade).collect()
    }

    /// The number of live sessions, updated as they come and go.
    pub fn count(&self) -> watch::Receiver<usize> {
        self.count.subscribe()
    }

    /// Sends `notifications/tools/list_changed` to every initialised handshake-era session and
    /// every stream that asked for it.
    pub fn notify_tools_changed(&self) {
        self.broadcast("notifications/tools/list_changed");
        self.listeners.tools_changed();
    }

    /// Sends `notifications/prompts/list_changed` to every initialised handshake-era session and
    /// every stream that asked for it. Only for apps that serve prompts ([`crate::App::prompts`]).
    pub fn notify_prompts_changed(&self) {
        self.broadcast("notifications/prompts/list_changed");
        self.listeners.prompts_changed();
    }

    /// Sends `notifications/resources/list_changed` to every initialised handshake-era session
    /// and every stream that asked for it. Only for apps that advertise it
    /// ([`crate::App::resource_notifications`]).
    pub fn notify_resources_list_changed(&self) {
        self.broadcast("notifications/resources/list_changed");
        self.listeners.resources_list_changed();
    }

    /// Sends `notifications/resources/updated` for `uri` to the sessions and streams subscribed
    /// to it.
    pub fn notify_resource_updated(&self, uri: &str) {
        let line = updated_line(uri);
        for s in self.all() {
            if s.is_initialized() && s.is_subscribed(uri) {
                s.try_send(line.clone());
            }
        }
        self.listeners.resource_updated(uri);
    }

    /// Sends the notification `method` (one of the `notifications/*/list_changed`) to the
    /// initialised handshake-era sessions `pick` chooses, for an app whose lists differ by client:
    /// only the sessions whose list changed hear of it. Streams of `subscriptions/listen` are
    /// told through [`SessionSet::listeners`].
    pub fn notify_sessions_where(&self, method: &str, pick: impl Fn(&Session) -> bool) {
        let line = crate::protocol::notification(method, serde_json::json!({})).to_string();
        for s in self.all() {
            if s.is_initialized() && pick(&s) {
                s.try_send(line.clone());
            }
        }
    }

    fn broadcast(&self, method: &str) {
        let line = crate::protocol::notification(method, serde_json::json!({})).to_string();
        for s in self.all() {
            if s.is_initialized() {
                s.try_send(line.clone());
            }
        }
    }
}

/// Removes its session from the set when dropped.
pub struct SessionGuard {
    set: Arc<SessionSet>,
    id: u64,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let mut map = self.set.sessions.lock().expect("sessions lock");
        map.remove(&self.id);
        self.set.count.send_replace(map.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_examples() {
        assert_eq!(source_label(Some("Claude Desktop")), "mcp:claude-desktop");
        assert_eq!(source_label(Some("  Zed: Nightly  ")), "mcp:zed-nightly");
        assert_eq!(source_label(Some("会议记录")), "mcp");
        assert_eq!(source_label(Some("Cursor")), "mcp:cursor");
        assert_eq!(source_label(Some("")), "mcp");
        assert_eq!(source_label(None), "mcp");
        assert_eq!(source_label(Some("Café—Client 2")), "mcp:caf-client-2");
    }

    #[test]
    fn first_observation_is_locked() {
        let (tx, _rx) = mpsc::channel(1);
        let s = Session::new(Transport::Stdio, &CancellationToken::new(), tx);
        s.observe_client(Some(&serde_json::json!({"name": "Cursor"})));
        s.observe_client(Some(&serde_json::json!({"name": "Windsurf"})));
        assert_eq!(s.source(), "mcp:cursor");
    }
}
