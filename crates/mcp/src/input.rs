//! Asking the client for something while a request runs: a form the user fills in
//! (`elicitation/create`), a model completion (`sampling/createMessage`) or the client's roots
//! (`roots/list`). One API whatever the era, [`Input`] on every [`crate::RequestCtx`]:
//!
//! - handshake era (2025-06-18 … 2025-11-25): a server→client request on the request's own
//!   outbound channel (the session's line, or the SSE stream of the HTTP POST it answers), its
//!   id kept in the session's pending map until the client's response comes back; bounded by
//!   [`ASK_TIMEOUT`], given up (with `notifications/cancelled` to the client) when the request is
//!   cancelled or the session ends;
//! - 2026-07-28: multi-round-trip requests. A question the retried request does not answer yet
//!   stops the handler: the dispatcher answers `resultType: "input_required"` with the questions
//!   asked (`inputRequests`) and a `requestState` carrying the answers gathered so far, signed
//!   with a key of this process (HMAC-SHA256), bound to the method, the tool, prompt or resource
//!   and its arguments, and valid for [`STATE_TTL`]. The client retries with `inputResponses`;
//!   the handler runs again from the start and this time gets its answers at once, so a handler
//!   must ask before it changes anything.
//!
//! Only what the client declared (`capabilities` in `initialize`, or per request
//! `_meta["io.modelcontextprotocol/clientCapabilities"]`) is ever asked.
//!
//! Roots have their own call, [`Input::roots`]: in the handshake era the answer is kept on the
//! session until the client sends `notifications/roots/list_changed` (so `roots/list` goes out
//! at most once per change, on the first request that wants it), and a client that does not
//! answer within [`ROOTS_TIMEOUT`] or refuses is taken to have none; in 2026-07-28 they are
//! asked per request, as that version has no session to keep them on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::protocol::{RpcError, notification};
use crate::session::{Session, id_key};

/// How long a handshake-era question waits for the client's answer (a person may be typing).
pub const ASK_TIMEOUT: Duration = Duration::from_secs(600);
/// How long `roots/list` may take: the client answers it from its own state, no person types.
pub const ROOTS_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a 2026-07-28 `requestState` stays valid.
pub const STATE_TTL: Duration = Duration::from_secs(900);

/// What a request asks of the client.
#[derive(Debug, Clone)]
pub enum Ask {
    /// A form: `message` shown to the user, `requested_schema` the flat object schema to fill.
    Elicit { message: String, requested_schema: Value },
    /// `sampling/createMessage` with these params (`messages`, `maxTokens`, …).
    Sample(Value),
    /// `roots/list`.
    Roots,
}

impl Ask {
    pub fn method(&self) -> &'static str {
        match self {
            Ask::Elicit { .. } => "elicitation/create",
            Ask::Sample(_) => "sampling/createMessage",
            Ask::Roots => "roots/list",
        }
    }

    /// The client capability that must be declared before this may be asked.
    pub fn capability(&self) -> &'static str {
        match self {
            Ask::Elicit { .. } => "elicitation",
            Ask::Sample(_) => "sampling",
            Ask::Roots => "roots",
        }
    }

    fn params(&self) -> Value {
        match self {
            Ask::Elicit { message, requested_schema } => {
                json!({ "mode": "form", "message": message, "requestedSchema": requested_schema })
            }
            Ask::Sample(params) => params.clone(),
            Ask::Roots => json!({}),
        }
    }

    /// `{method, params}`: an entry of `inputRequests`.
    fn to_input_request(&self) -> Value {
        json!({ "method": self.method(), "params": self.params() })
    }

    /// How long a handshake-era client has to answer.
    fn timeout(&self) -> Duration {
        match self {
            Ask::Roots => ROOTS_TIMEOUT,
            _ => ASK_TIMEOUT,
        }
    }

    /// Whether `answer` has the shape of this question's result (else it is asked again).
    fn accepts(&self, answer: &Value) -> bool {
        match self {
            Ask::Elicit { .. } => Elicited::from_value(answer).is_some(),
            Ask::Sample(_) => answer.get("content").is_some() && answer.get("role").is_some(),
            Ask::Roots => answer.get("roots").is_some_and(Value::is_array),
        }
    }
}

/// What the user did with an elicitation form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Accept,
    Decline,
    Cancel,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::Decline => "decline",
            Action::Cancel => "cancel",
        }
    }
}

/// The answer to an elicitation: the action and, on accept, the form's content.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicited {
    pub action: Action,
    pub content: Map<String, Value>,
}

impl Elicited {
    /// An `ElicitResult`, or None when `v` is not one.
    pub fn from_value(v: &Value) -> Option<Elicited> {
        let action = match v.get("action")?.as_str()? {
            "accept" => Action::Accept,
            "decline" => Action::Decline,
            "cancel" => Action::Cancel,
            _ => return None,
        };
        let content = match v.get("content") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return None,
        };
        Some(Elicited { action, content })
    }
}

/// One of the client's roots: a folder (or file) it says the server may care about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub uri: String,
    pub name: Option<String>,
}

impl Root {
    /// The roots of a `roots/list` result; entries without a string `uri` are skipped.
    pub fn list(result: &Value) -> Vec<Root> {
        let Some(items) = result.get("roots").and_then(Value::as_array) else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(|r| {
                let uri = r.get("uri")?.as_str()?.to_string();
                let name = r.get("name").and_then(Value::as_str).map(str::to_string);
                Some(Root { uri, name })
            })
            .collect()
    }

    /// The local path of a `file://` root (percent-decoded; `file:///C:/x` is `C:/x`), or None
    /// for another scheme, another host, or a path that is not valid UTF-8 once decoded.
    pub fn file_path(&self) -> Option<String> {
        let rest = self.uri.strip_prefix("file://").or_else(|| self.uri.strip_prefix("FILE://"))?;
        let (host, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => return None,
        };
        if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
            return None;
        }
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let decoded = percent_decode(path)?;
        // `/C:/Users/...`: a Windows drive keeps no leading slash.
        match decoded.as_bytes() {
            [b'/', d, b':', ..] if d.is_ascii_alphabetic() => Some(decoded[1..].to_string()),
            _ => Some(decoded),
        }
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    /// The client did not declare the capability: ask nothing, behave as without a client.
    #[error("the client did not declare the `{0}` capability")]
    Unsupported(&'static str),
    /// 2026-07-28: the question went back to the client in an `input_required` result; the
    /// handler should stop (the dispatcher has already dropped it or ignores what it returns).
    #[error("input required: the client is asked and will retry the request with its answers")]
    InputRequired,
    #[error("the request was cancelled while waiting for the client's answer")]
    Cancelled,
    #[error("the client did not answer `{method}` within {secs} s")]
    TimedOut { method: &'static str, secs: u64 },
    #[error("the client cannot be reached: its connection is gone")]
    Unreachable,
    /// The client answered with a JSON-RPC error.
    #[error("the client refused `{method}`: {message}")]
    Refused { method: &'static str, code: i64, message: String },
    #[error("the client's answer to `{0}` has the wrong shape")]
    Malformed(&'static str),
}

/// How a request reaches its client, if it can.
#[derive(Clone, Default)]
pub struct Input {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    /// The client's declared capabilities in 2026-07-28 (before, the session's, read from it).
    caps: Map<String, Value>,
    mode: Mode,
    /// Numbers the questions of `elicit`, so a retried handler asks under the same keys.
    counter: AtomicU64,
}

enum Mode {
    Legacy { session: Arc<Session>, notify: mpsc::Sender<String>, cancel: CancellationToken },
    Modern(Round),
}

/// One 2026-07-28 attempt of a request: the answers it came with, and what it asked.
struct Round {
    answers: Map<String, Value>,
    binding: String,
    asked: Mutex<Map<String, Value>>,
    suspended: CancellationToken,
    /// Fired once the dispatcher has answered `input_required` (or the request ended): a handler
    /// still running then (on a task of its own) gets [`AskError::InputRequired`].
    finished: CancellationToken,
}

impl Input {
    /// A handshake-era request on `session`: questions go out on `notify`.
    pub fn legacy(session: Arc<Session>, notify: mpsc::Sender<String>, cancel: CancellationToken) -> Input {
        Input {
            inner: Some(Arc::new(Inner {
                caps: Map::new(),
                mode: Mode::Legacy { session, notify, cancel },
                counter: AtomicU64::new(0),
            })),
        }
    }

    /// A 2026-07-28 request of `method` with `params` (its `_meta` capabilities, and any
    /// `inputResponses`/`requestState` of a retry, checked here: a malformed or forged one is
    /// -32602). `binding` names what the request is about (`tools/call` of a tool with its
    /// arguments), so a state minted for one request is refused on another.
    pub fn modern(
        caps: Map<String, Value>,
        binding: String,
        params: &Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<Input, RpcError> {
        let mut answers = match params.get("requestState") {
            None => Map::new(),
            Some(Value::String(s)) => open_state(s, &binding)?,
            Some(_) => return Err(RpcError::invalid_params("`requestState` must be the string the server sent")),
        };
        match params.get("inputResponses") {
            None => {}
            Some(Value::Object(given)) => {
                for (k, v) in given {
                    answers.insert(k.clone(), v.clone());
                }
            }
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "`inputResponses` must be an object mapping each key of `inputRequests` to the client's result",
                ));
            }
        }
        let round = Round {
            answers,
            binding,
            asked: Mutex::new(Map::new()),
            suspended: CancellationToken::new(),
            finished: cancel.child_token(),
        };
        Ok(Input { inner: Some(Arc::new(Inner { caps, mode: Mode::Modern(round), counter: AtomicU64::new(0) })) })
    }

    fn declared(&self, capability: &str) -> bool {
        match self.inner.as_deref() {
            None => false,
            Some(Inner { mode: Mode::Legacy { session, .. }, .. }) => session.declared(capability),
            Some(i) => i.caps.get(capability).is_some_and(|c| !c.is_null()),
        }
    }

    pub fn can_elicit(&self) -> bool {
        self.declared("elicitation")
    }

    pub fn can_sample(&self) -> bool {
        self.declared("sampling")
    }

    pub fn can_list_roots(&self) -> bool {
        self.declared("roots")
    }

    /// The client's roots, or an empty list when it declared none, refused, did not answer in
    /// time or answered something else (each logged once). Handshake era: the session's copy, or
    /// one `roots/list` whose answer the session keeps until `notifications/roots/list_changed`.
    /// 2026-07-28: asked under the key `roots` of this request; a first attempt ends with
    /// [`AskError::InputRequired`] (the dispatcher then answers `input_required`), and only a
    /// cancelled request is another `Err`.
    pub async fn roots(&self) -> Result<Vec<Root>, AskError> {
        if !self.can_list_roots() {
            return Ok(Vec::new());
        }
        let legacy = match self.inner.as_deref() {
            Some(Inner { mode: Mode::Legacy { session, .. }, .. }) => Some(session.clone()),
            _ => None,
        };
        let generation = match &legacy {
            Some(session) => match session.roots() {
                Ok(kept) => return Ok(kept),
                Err(generation) => Some(generation),
            },
            None => None,
        };
        let roots = match self.ask("roots", Ask::Roots).await {
            Ok(answer) => Root::list(&answer),
            Err(e @ (AskError::InputRequired | AskError::Cancelled | AskError::Unreachable)) => return Err(e),
            Err(e) => {
                tracing::info!(error = %e, "roots/list gave no roots; the session goes on without them");
                Vec::new()
            }
        };
        if let (Some(session), Some(generation)) = (legacy, generation) {
            session.keep_roots(generation, roots.clone());
        }
        Ok(roots)
    }

    /// True when `ask` may be asked of this client.
    pub fn can(&self, ask: &Ask) -> bool {
        self.declared(ask.capability())
    }

    /// Asks the user to fill in a form. Keys are numbered per request, so a 2026-07-28 retry
    /// finds its answers as long as the handler asks the same questions in the same order.
    pub async fn elicit(&self, message: &str, requested_schema: Value) -> Result<Elicited, AskError> {
        let n = self.inner.as_ref().map_or(0, |i| i.counter.fetch_add(1, Ordering::Relaxed) + 1);
        let key = format!("elicit-{n}");
        let ask = Ask::Elicit { message: message.to_string(), requested_schema };
        let answer = self.ask(&key, ask).await?;
        Elicited::from_value(&answer).ok_or(AskError::Malformed("elicitation/create"))
    }

    /// Asks one question under `key` (the `inputRequests` key in 2026-07-28) and returns the
    /// client's result.
    pub async fn ask(&self, key: &str, ask: Ask) -> Result<Value, AskError> {
        let mut answers = self.ask_all(vec![(key.to_string(), ask)]).await?;
        Ok(answers.pop().unwrap_or(Value::Null))
    }

    /// Asks several questions at once (one `input_required` round in 2026-07-28; one request
    /// after another before that) and returns their results in order.
    pub async fn ask_all(&self, asks: Vec<(String, Ask)>) -> Result<Vec<Value>, AskError> {
        let Some(inner) = &self.inner else {
            let first = asks.first().map_or("elicitation", |(_, a)| a.capability());
            return Err(AskError::Unsupported(first));
        };
        if let Some((_, a)) = asks.iter().find(|(_, a)| !self.can(a)) {
            return Err(AskError::Unsupported(a.capability()));
        }
        match &inner.mode {
            Mode::Legacy { session, notify, cancel } => {
                let mut out = Vec::with_capacity(asks.len());
                for (_, ask) in &asks {
                    out.push(request_client(session, notify, cancel, ask).await?);
                }
                Ok(out)
            }
            Mode::Modern(round) => {
                let missing: Vec<&(String, Ask)> =
                    asks.iter().filter(|(k, a)| !round.answers.get(k).is_some_and(|v| a.accepts(v))).collect();
                if missing.is_empty() {
                    return Ok(asks.iter().map(|(k, _)| round.answers[k].clone()).collect());
                }
                {
                    let mut asked = round.asked.lock().expect("input lock");
                    for (k, a) in missing {
                        asked.insert(k.clone(), a.to_input_request());
                    }
                }
                round.suspended.cancel();
                // The dispatcher drops the handler here, before it can act on a missing answer
                // (or record a failure); one detached from the request hears it afterwards.
                round.finished.cancelled().await;
                Err(AskError::InputRequired)
            }
        }
    }

    /// 2026-07-28: fires once the handler asked something its request did not answer.
    pub(crate) fn suspended(&self) -> Option<CancellationToken> {
        match self.inner.as_deref() {
            Some(Inner { mode: Mode::Modern(round), .. }) => Some(round.suspended.clone()),
            _ => None,
        }
    }

    /// The `input_required` result of a suspended 2026-07-28 attempt: what was asked, and a
    /// signed state with every answer usable so far.
    pub(crate) fn input_required(&self) -> Option<Value> {
        let Some(Inner { mode: Mode::Modern(round), .. }) = self.inner.as_deref() else {
            return None;
        };
        round.finished.cancel();
        let asked = round.asked.lock().expect("input lock").clone();
        let kept: Map<String, Value> = round
            .answers
            .iter()
            .filter(|(k, _)| !asked.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(json!({
            "resultType": "input_required",
            "inputRequests": asked,
            "requestState": seal_state(&kept, &round.binding),
        }))
    }
}

/// The binding of a 2026-07-28 state: the method and a digest of what the request is about.
pub fn binding(method: &str, params: &Map<String, Value>) -> String {
    let mut h = Sha256::new();
    h.update(method.as_bytes());
    for field in ["name", "uri", "arguments"] {
        h.update([0]);
        if let Some(v) = params.get(field) {
            // serde_json's maps are ordered by key, so equal arguments serialise equally.
            h.update(serde_json::to_string(v).unwrap_or_default().as_bytes());
        }
    }
    format!("{method}:{}", hex::encode(&h.finalize()[..12]))
}

/// Sends one server→client request and waits for its response.
async fn request_client(
    session: &Arc<Session>,
    notify: &mpsc::Sender<String>,
    cancel: &CancellationToken,
    ask: &Ask,
) -> Result<Value, AskError> {
    let method = ask.method();
    let (id, rx) = session.expect_response();
    let key = id_key(&id);
    let mut guard = Pending { session, notify, key: &key, id: &id, done: false };
    let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": ask.params() }).to_string();
    if notify.send(line).await.is_err() {
        return Err(AskError::Unreachable);
    }
    let outcome = tokio::select! {
        r = rx => r,
        _ = cancel.cancelled() => return Err(AskError::Cancelled),
        _ = tokio::time::sleep(ask.timeout()) => return Err(AskError::TimedOut { method, secs: ask.timeout().as_secs() }),
    };
    guard.done = true;
    match outcome {
        Ok(Ok(result)) => {
            if ask.accepts(&result) {
                Ok(result)
            } else {
                Err(AskError::Malformed(method))
            }
        }
        Ok(Err(e)) => Err(AskError::Refused { method, code: e.code, message: e.message }),
        // The pending entry was dropped: the session ended.
        Err(_) => Err(AskError::Unreachable),
    }
}

/// A server→client request still waiting: when the wait ends without an answer (cancel,
/// timeout, the handler dropped), the entry is removed and the client told to stop.
struct Pending<'a> {
    session: &'a Session,
    notify: &'a mpsc::Sender<String>,
    key: &'a str,
    id: &'a Value,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.session.forget_response(self.key) && !self.done {
            let note = notification(
                "notifications/cancelled",
                json!({ "requestId": self.id, "reason": "the server no longer needs the answer" }),
            );
            let _ = self.notify.try_send(note.to_string());
        }
    }
}

/// Where the pending server→client requests of a session wait.
#[derive(Default)]
pub(crate) struct Responses {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<Value, RpcError>>>>,
}

impl Responses {
    pub(crate) fn expect(&self) -> (Value, oneshot::Receiver<Result<Value, RpcError>>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = Value::from(format!("oh-ask-{n}"));
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().expect("responses lock").insert(id_key(&id), tx);
        (id, rx)
    }

    /// Hands a client response to its waiting request; false when nothing waits for it.
    pub(crate) fn resolve(&self, key: &str, outcome: Result<Value, RpcError>) -> bool {
        match self.waiting.lock().expect("responses lock").remove(key) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    pub(crate) fn forget(&self, key: &str) -> bool {
        self.waiting.lock().expect("responses lock").remove(key).is_some()
    }
}

/// This process's key for `requestState`: random at start, so a state never outlives the
/// process that made it.
fn state_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        k[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        k[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        k
    })
}

fn hmac(key: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |b: u8| -> Vec<u8> { block.iter().map(|k| k ^ b).collect() };
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(msg).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

fn seal_state(answers: &Map<String, Value>, binding: &str) -> String {
    let payload = json!({ "b": binding, "exp": now_secs() + STATE_TTL.as_secs(), "a": answers }).to_string();
    let mac = hmac(state_key(), payload.as_bytes());
    format!("{}.{}", B64.encode(payload), B64.encode(mac))
}

/// The answers a state carries, once its signature, binding and expiry check out.
fn open_state(state: &str, binding: &str) -> Result<Map<String, Value>, RpcError> {
    let refused = |why: &str| {
        RpcError::invalid_params(format!(
            "invalid requestState: {why}; send the request again without it to start over"
        ))
    };
    let (payload, mac) = state.split_once('.').ok_or_else(|| refused("it is not one this server made"))?;
    let payload = B64.decode(payload).map_err(|_| refused("it is not one this server made"))?;
    let mac = B64.decode(mac).map_err(|_| refused("it is not one this server made"))?;
    let want = hmac(state_key(), &payload);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(want.as_slice(), mac.as_slice())) {
        return Err(refused("its signature does not match (altered, or made by an earlier run of the server)"));
    }
    let v: Value = serde_json::from_slice(&payload).map_err(|_| refused("it cannot be read"))?;
    if v.get("b").and_then(Value::as_str) != Some(binding) {
        return Err(refused("it belongs to another request"));
    }
    if v.get("exp").and_then(Value::as_u64).is_none_or(|exp| exp < now_secs()) {
        return Err(refused("it has expired"));
    }
    Ok(v.get("a").and_then(Value::as_object).cloned().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_refuse_tampering_and_other_requests() {
        let mut answers = Map::new();
        answers.insert("step1".into(), json!({"action": "accept", "content": {"name": "Ada"}}));
        let b = binding("tools/call", &json!({"name": "t", "arguments": {"x": 1}}).as_object().unwrap().clone());
        let state = seal_state(&answers, &b);
        assert_eq!(open_state(&state, &b).unwrap(), answers);
        assert!(open_state(&format!("{state}-TAMPERED"), &b).is_err());
        let other = binding("tools/call", &json!({"name": "t", "arguments": {"x": 2}}).as_object().unwrap().clone());
        let err = open_state(&state, &other).unwrap_err();
        assert!(err.message.contains("another request"), "{}", err.message);
        assert!(open_state("garbage", &b).is_err());
    }

    #[test]
    fn file_roots_become_paths_and_others_do_not() {
        let answer = json!({"roots": [
            {"uri": "file:///home/u/my%20app", "name": "App"},
            {"uri": "file://localhost/srv/x/"},
            {"uri": "file:///C:/Users/u/app"},
            {"uri": "https://example.com/repo"},
            {"uri": "file://otherhost/share"},
            {"name": "no uri"},
        ]});
        let roots = Root::list(&answer);
        assert_eq!(roots.len(), 5);
        assert_eq!(roots[0].name.as_deref(), Some("App"));
        let paths: Vec<Option<String>> = roots.iter().map(Root::file_path).collect();
        assert_eq!(
            paths,
            vec![Some("/home/u/my app".into()), Some("/srv/x/".into()), Some("C:/Users/u/app".into()), None, None]
        );
        assert_eq!(Root { uri: "file:///bad%zz".into(), name: None }.file_path(), None);
        assert!(Root::list(&json!({"nope": []})).is_empty());
    }

    #[test]
    fn elicit_results_are_read_strictly() {
        assert_eq!(
            Elicited::from_value(&json!({"action": "accept", "content": {"ok": true}})).unwrap().action,
            Action::Accept
        );
        assert_eq!(Elicited::from_value(&json!({"action": "decline"})).unwrap().content, Map::new());
        assert!(Elicited::from_value(&json!(12345)).is_none());
        assert!(Elicited::from_value(&json!({"action": "maybe"})).is_none());
    }
}
