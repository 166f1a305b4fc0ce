//! The few facts HTTP must read from a message before handing it to the dispatcher: whether it
//! starts a session (`initialize`), belongs to the stateless 2026-07-28 era, carries requests at
//! all (notifications get 202), and may produce notifications (then the answer is an event
//! stream). Also the 2026-07-28 rule that mirrored headers (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`) agree with the body. Everything else is the dispatcher's.

use axum::http::HeaderMap;
use base64::Engine;
use openhuman_common::codes;
use serde_json::{Map, Value};

use crate::protocol::{LEGACY_VERSIONS, META_LOG_LEVEL, META_VERSION, MODERN, RpcError};

pub const PROTOCOL_HEADER: &str = "mcp-protocol-version";
pub const SESSION_HEADER: &str = "mcp-session-id";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

fn objects(msg: &Value) -> Vec<&Map<String, Value>> {
    match msg {
        Value::Object(o) => vec![o],
        Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
        _ => Vec::new(),
    }
}

fn method(o: &Map<String, Value>) -> Option<&str> {
    o.get("method").and_then(Value::as_str)
}

fn meta(o: &Map<String, Value>) -> Option<&Map<String, Value>> {
    o.get("params")?.get("_meta")?.as_object()
}

fn meta_version(o: &Map<String, Value>) -> Option<&str> {
    meta(o)?.get(META_VERSION)?.as_str()
}

/// True when the message (or a batch element) is `initialize`: it mints a session.
pub fn has_initialize(msg: &Value) -> bool {
    objects(msg).into_iter().any(|o| method(o) == Some("initialize"))
}

/// True when something in the message expects a response (a request, or something malformed
/// that will get an error). Only notifications and client responses get a bare 202.
pub fn has_requests(msg: &Value) -> bool {
    match msg {
        Value::Object(o) => is_request(o),
        Value::Array(items) => {
            items.is_empty()
                || items.iter().any(|i| match i {
                    Value::Object(o) => is_request(o),
                    _ => true,
                })
        }
        _ => true,
    }
}

fn is_request(o: &Map<String, Value>) -> bool {
    let notification = o.get("id").is_none() && o.get("method").is_some();
    let response = o.get("method").is_none() && (o.contains_key("result") || o.contains_key("error"));
    !(notification || response)
}

/// Whether a request may send notifications before its response: it asked for progress, or
/// asked for log messages (per request in 2026-07-28, per session before), or it is a
/// `subscriptions/listen` stream.
pub fn may_notify(msg: &Value, session_logs: bool) -> bool {
    objects(msg).into_iter().any(|o| {
        let m = meta(o);
        m.is_some_and(|m| m.contains_key("progressToken") || m.contains_key(META_LOG_LEVEL))
            || (session_logs && o.contains_key("id"))
            || method(o) == Some("subscriptions/listen")
    })
}

/// True for messages of the stateless era: `server/discover`, a request whose `_meta` names
/// 2026-07-28 (or a version we do not know, which the dispatcher refuses with -32022), or a
/// request without `_meta` version that arrives without a session under a 2026-07-28 header
/// (so that `check_headers` can say what is missing). They are served without a session.
pub fn is_stateless(msg: &Value, headers: &HeaderMap) -> bool {
    let Value::Object(o) = msg else {
        return false;
    };
    match method(o) {
        Some("initialize") => return false,
        Some("server/discover") => return true,
        _ => {}
    }
    match meta_version(o) {
        Some(v) => v == MODERN || !LEGACY_VERSIONS.contains(&v),
        None => header(headers, PROTOCOL_HEADER) == Some(MODERN) && !headers.contains_key(SESSION_HEADER),
    }
}

/// A header's value as text; None when absent or not visible ASCII.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The request id to answer an early rejection with.
pub fn request_id(msg: &Value) -> Value {
    match msg {
        Value::Object(o) => match o.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(codes::HEADER_MISMATCH, message)
}

/// 2026-07-28 header rules: a mirrored header that is present must equal the body's value
/// (`Mcp-Name` possibly in the `=?base64?…?=` form); a 2026-07-28 request must say its version
/// in `_meta`. Absent `Mcp-Method`/`Mcp-Name` headers are accepted.
pub fn check_headers(msg: &Value, headers: &HeaderMap) -> Result<(), RpcError> {
    let Value::Object(o) = msg else {
        return Ok(());
    };
    let body_method = method(o).unwrap_or_default();
    let body_version = meta_version(o);
    let header_version = match headers.get(PROTOCOL_HEADER) {
        None => None,
        Some(v) => {
            Some(v.to_str().map_err(|_| mismatch("the MCP-Protocol-Version header is not valid ASCII".to_string()))?)
        }
    };
    match (header_version, body_version) {
        (Some(h), Some(b)) if h != b => {
            return Err(mismatch(format!(
                "Header mismatch: MCP-Protocol-Version header value '{h}' does not match body value '{b}' (params._meta[\"{META_VERSION}\"])"
            )));
        }
        (Some(MODERN), None) if body_method != "server/discover" => {
            return Err(RpcError::invalid_params(format!(
                "a {MODERN} request must carry params._meta[\"{META_VERSION}\"] = \"{MODERN}\" (or send `initialize` first for a session)"
            )));
        }
        _ => {}
    }
    if let Some(v) = headers.get(METHOD_HEADER) {
        let h = v.to_str().map_err(|_| mismatch("the Mcp-Method header is not valid ASCII".to_string()))?;
        if h != body_method {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Method header value '{h}' does not match body value '{body_method}'"
            )));
        }
    }
    if let Some(v) = headers.get(NAME_HEADER) {
        let field = match body_method {
            "tools/call" | "prompts/get" => "name",
            "resources/read" => "uri",
            // Other methods have no name to mirror; the header means nothing for them.
            _ => return Ok(()),
        };
        let raw = v.to_str().map_err(|_| mismatch("the Mcp-Name header is not valid ASCII".to_string()))?;
        let h = decode_name(raw)?;
        let body = o.get("params").and_then(|p| p.get(field)).and_then(Value::as_str).unwrap_or_default();
        if h != body {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Name header value '{raw}' does not match body value '{body}' (params.{field})"
            )));
        }
    }
    Ok(())
}

/// Decodes the `=?base64?…?=` sentinel form of a header value; other values are literal.
fn decode_name(raw: &str) -> Result<String, RpcError> {
    let Some(inner) = raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) else {
        return Ok(raw.to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .map_err(|e| mismatch(format!("the Mcp-Name header has bad base64 ({e})")))?;
    String::from_utf8(bytes).map_err(|_| mismatch("the Mcp-Name header's base64 value is not UTF-8".to_string()))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn modern(method: &str, params: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({ META_VERSION: MODERN });
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    }

    #[test]
    fn eras_are_told_apart() {
        let none = HeaderMap::new();
        assert!(is_stateless(&modern("tools/list", json!({})), &none));
        assert!(is_stateless(&json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}), &none));
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert!(!is_stateless(&legacy, &none));
        assert!(is_stateless(&legacy, &headers(&[("mcp-protocol-version", MODERN)])));
        assert!(!is_stateless(&legacy, &headers(&[("mcp-protocol-version", MODERN), ("mcp-session-id", "x")])));
        let init =
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"_meta": {META_VERSION: MODERN}}});
        assert!(!is_stateless(&init, &none));
        assert!(!is_stateless(&json!([legacy]), &none));
    }

    #[test]
    fn requests_and_notifications() {
        assert!(!has_requests(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
        assert!(!has_requests(&json!({"jsonrpc": "2.0", "id": 3, "result": {}})));
        assert!(has_requests(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})));
        assert!(has_requests(&json!(42)));
        assert!(has_requests(&json!([])));
        assert!(!has_requests(&json!([{"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "method": "b"}])));
        assert!(has_requests(&json!([{"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "id": 1, "method": "b"}])));
    }

    #[test]
    fn notifications_decide_the_stream() {
        let plain = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert!(!may_notify(&plain, false));
        assert!(may_notify(&plain, true));
        let progress =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"progressToken": 5}}});
        assert!(may_notify(&progress, false));
        assert!(!may_notify(&json!({"jsonrpc": "2.0", "method": "x"}), true));
    }

    #[test]
    fn mirrored_headers_must_match() {
        let call = modern("tools/call", json!({"name": "memory.search"}));
        assert!(check_headers(&call, &HeaderMap::new()).is_ok());
        let ok =
            headers(&[("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "memory.search")]);
        assert!(check_headers(&call, &ok).is_ok());
        let encoded = format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode("memory.search"));
        assert!(check_headers(&call, &headers(&[("mcp-name", &encoded)])).is_ok());
        for bad in [
            headers(&[("mcp-method", "tools/list")]),
            headers(&[("mcp-name", "memory.recall")]),
            headers(&[("mcp-protocol-version", "2025-11-25")]),
            headers(&[("mcp-name", "=?base64?!!!?=")]),
        ] {
            let err = check_headers(&call, &bad).unwrap_err();
            assert_eq!(err.code, codes::HEADER_MISMATCH, "{bad:?}");
        }
        let no_meta = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let err = check_headers(&no_meta, &headers(&[("mcp-protocol-version", MODERN)])).unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS);
        let read = modern("resources/read", json!({"uri": "openhuman://prompts/soul"}));
        assert!(check_headers(&read, &headers(&[("mcp-name", "openhuman://prompts/soul")])).is_ok());
        assert!(check_headers(&read, &headers(&[("mcp-name", "openhuman://prompts/user")])).is_err());
        // A name header on a method without a name is meaningless, not an error.
        assert!(check_headers(&modern("tools/list", json!({})), &headers(&[("mcp-name", "x")])).is_ok());
    }
}
