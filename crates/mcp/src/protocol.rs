//! Protocol vocabulary: the versions we speak, the error type every handler returns, and the
//! helpers that build JSON-RPC envelopes. Handlers never build envelopes themselves.

use std::sync::Arc;

use openhuman_common::codes;
use serde_json::{Value, json};

pub use crate::incoming::Id;

/// Handshake-era versions, oldest first.
pub const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The newest handshake-era version: the answer to an unknown or missing requested version.
pub const LATEST_LEGACY: &str = "2025-11-25";
/// The stateless era: version travels in every request's `_meta`.
pub const MODERN: &str = "2026-07-28";
/// Every version, newest first, as advertised by `server/discover` and -32022 errors.
pub const SUPPORTED: &[&str] = &[MODERN, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// How long clients may cache list results in the stateless era.
pub const TOOLS_TTL_MS: u64 = 60_000;
pub const RESOURCES_TTL_MS: u64 = 300_000;

/// Which rules a request is served under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// After `initialize`, with the negotiated version.
    Legacy(String),
    /// 2026-07-28: per-request `_meta`, results carry `resultType`.
    Modern,
}

impl Era {
    pub fn is_modern(&self) -> bool {
        matches!(self, Era::Modern)
    }
}

/// A JSON-RPC error a handler returns; converted to an envelope at the dispatch boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }
    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(codes::INVALID_REQUEST, message)
    }
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(codes::INVALID_PARAMS, message)
    }
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(codes::METHOD_NOT_FOUND, format!("method not found: {method}"))
            .with_data(json!({ "method": method }))
    }
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(codes::INTERNAL_ERROR, message)
    }
    pub fn not_initialized() -> RpcError {
        RpcError::invalid_request(
            "not initialized: send `initialize` first (or, for protocol 2026-07-28, put \
             `io.modelcontextprotocol/protocolVersion` in the request's params._meta)",
        )
    }
    pub fn unsupported_version(requested: &str) -> RpcError {
        RpcError::new(codes::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            .with_data(json!({ "supported": SUPPORTED, "requested": requested }))
    }
}

/// `{"jsonrpc":"2.0","id":..,"result":..}`
/// A `notifications/progress` line for `token`.
pub fn progress_notification(token: &Value, progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let mut params = json!({ "progressToken": token, "progress": progress });
    if let Some(t) = total {
        params["total"] = Value::from(t);
    }
    if let Some(m) = message {
        params["message"] = Value::from(m);
    }
    notification("notifications/progress", params).to_string()
}

pub fn result_envelope(id: &Value, result: Value) -> Value {
    // Built by hand: `json!` would deep-copy `result` through serde.
    let mut m = serde_json::Map::with_capacity(3);
    m.insert("jsonrpc".into(), Value::from("2.0"));
    m.insert("id".into(), id.clone());
    m.insert("result".into(), result);
    Value::Object(m)
}

/// `{"jsonrpc":"2.0","id":..,"error":{..}}`; `id` is `null` when it could not be read.
pub fn error_envelope(id: &Value, err: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": error_body(err) })
}

/// `{"code":..,"message":..,"data"?:..}`
fn error_body(err: &RpcError) -> Value {
    let mut error = json!({ "code": err.code, "message": err.message });
    if let Some(data) = &err.data {
        error["data"] = data.clone();
    }
    error
}

/// A result on its way to the wire: a value still to be serialised, or JSON text that is already
/// final (built for the request's era, possibly shared from a cache), which the envelope splices
/// in as it is. Large results skip a second walk through serde this way.
#[derive(Debug, Clone)]
pub enum Payload {
    Value(Value),
    Json(Arc<str>),
}

impl From<Value> for Payload {
    fn from(v: Value) -> Payload {
        Payload::Value(v)
    }
}

impl Payload {
    fn write(&self, out: &mut String) {
        match self {
            Payload::Value(v) => push_json(out, v),
            Payload::Json(text) => out.push_str(text),
        }
    }
}

/// What the dispatcher answers to one message: kept as parts, encoded once, when it is written.
#[derive(Debug)]
pub enum Reply {
    Result { id: Id, result: Payload },
    Error { id: Id, error: RpcError },
    Batch(Vec<Reply>),
}

impl Reply {
    pub fn error(id: impl Into<Id>, error: RpcError) -> Reply {
        Reply::Error { id: id.into(), error }
    }

    /// The reply as one line of JSON (no newline).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(256);
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Reply::Result { id, result } => {
                out.push_str(r#"{"jsonrpc":"2.0","id":"#);
                id.write(out);
                out.push_str(r#","result":"#);
                result.write(out);
                out.push('}');
            }
            Reply::Error { id, error } => {
                out.push_str(r#"{"jsonrpc":"2.0","id":"#);
                id.write(out);
                out.push_str(r#","error":"#);
                push_json(out, &error_body(error));
                out.push('}');
            }
            Reply::Batch(replies) => {
                out.push('[');
                for (i, r) in replies.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    r.write(out);
                }
                out.push(']');
            }
        }
    }
}

fn push_json(out: &mut String, v: &Value) {
    out.push_str(&serde_json::to_string(v).unwrap_or_default());
}

/// A notification envelope.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// The version an `initialize` request gets: the one it asked for when we know it, else the
/// newest handshake-era version.
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested.and_then(|r| LEGACY_VERSIONS.iter().find(|v| **v == r)).copied().unwrap_or(LATEST_LEGACY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_and_defaults_unknown() {
        for v in LEGACY_VERSIONS {
            assert_eq!(negotiate(Some(v)), *v);
        }
        assert_eq!(negotiate(Some("1999-01-01")), LATEST_LEGACY);
        assert_eq!(negotiate(None), LATEST_LEGACY);
        // The stateless era has no handshake: asking for it in `initialize` gets the newest legacy one.
        assert_eq!(negotiate(Some(MODERN)), LATEST_LEGACY);
    }

    #[test]
    fn replies_encode_like_their_value_envelopes() {
        let id = json!("a\"b");
        let result = json!({ "x": [1, "two", null], "s": "line\nbreak" });
        let from_value = Reply::Result { id: Id::from(&id), result: Payload::Value(result.clone()) };
        let spliced = Reply::Result { id: Id::from(&id), result: Payload::Json(result.to_string().into()) };
        let want = result_envelope(&id, result);
        for r in [&from_value, &spliced] {
            assert_eq!(serde_json::from_str::<Value>(&r.encode()).unwrap(), want);
        }
        let err = RpcError::invalid_params("bad").with_data(json!({ "k": 1 }));
        let batch = Reply::Batch(vec![from_value, Reply::error(json!(7), err.clone())]);
        let got: Value = serde_json::from_str(&batch.encode()).unwrap();
        assert_eq!(got, json!([want, error_envelope(&json!(7), &err)]));
    }
}
