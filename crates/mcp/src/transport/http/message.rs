//! The few facts HTTP must read from a message before handing it to the dispatcher: whether it
//! starts a session (`initialize`), belongs to the stateless 2026-07-28 era, carries requests at
//! all (notifications get 202), and may produce notifications (then the answer is an event
//! stream, as it is for a call whose handler may ask the client something). Also the 2026-07-28
//! rules: `_meta` carries the version and the client's capabilities, and the mirrored headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) are there and agree with the
//! body. Everything else is the dispatcher's.

use axum::http::HeaderMap;
use base64::Engine;
use openhuman_common::codes;
use serde_json::{Map, Value};

use crate::protocol::{LEGACY_VERSIONS, META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_VERSION, MODERN, RpcError};

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

/// The tool a `tools/call` request names.
pub fn called_tool(msg: &Value) -> Option<&str> {
    let o = msg.as_object()?;
    if method(o) != Some("tools/call") {
        return None;
    }
    o.get("params")?.get("name")?.as_str()
}

/// Whether a request is one whose handler may ask the client something (a tool call, a prompt,
/// a resource read).
pub fn may_ask(msg: &Value) -> bool {
    objects(msg)
        .into_iter()
        .any(|o| o.contains_key("id") && matches!(method(o), Some("tools/call" | "prompts/get" | "resources/read")))
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
        Some("initialize") => return meta_version(o) == Some(MODERN),
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

/// 2026-07-28 header rules: a 2026-07-28 request carries `_meta` with its version and the
/// client's capabilities (-32602 otherwise); `Mcp-Method` is on every request and `Mcp-Name` on
/// those with a name (`tools/call`, `prompts/get`: `params.name`; `resources/read`:
/// `params.uri`), each equal to the body's value (`Mcp-Name` possibly in the `=?base64?…?=`
/// form), or -32020. A bare `server/discover` (no version anywhere) needs neither.
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
        (Some(MODERN), None) => {
            return Err(RpcError::invalid_params(format!(
                "a {MODERN} request must carry params._meta[\"{META_VERSION}\"] = \"{MODERN}\" (or send `initialize` first for a session)"
            )));
        }
        _ => {}
    }
    let is_request = o.contains_key("id") && o.contains_key("method");
    let bare_discover =
        body_method == "server/discover" && body_version.is_none() && !headers.contains_key(PROTOCOL_HEADER);
    // A version we do not speak is refused as such (-32022) by the dispatcher, whatever else.
    let speaks_modern = body_version == Some(MODERN) || header_version == Some(MODERN);
    if is_request && !bare_discover && speaks_modern {
        if !headers.contains_key(METHOD_HEADER) {
            return Err(mismatch(format!(
                "Header mismatch: the Mcp-Method header is missing; send `Mcp-Method: {body_method}`"
            )));
        }
        if body_version == Some(MODERN)
            && !meta(o).is_some_and(|m| m.get(META_CLIENT_CAPABILITIES).is_some_and(Value::is_object))
        {
            return Err(RpcError::invalid_params(format!(
                "a {MODERN} request must carry params._meta[\"{META_CLIENT_CAPABILITIES}\"] (an empty object when the client offers nothing)"
            )));
        }
        let named = match body_method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" => Some("uri"),
            _ => None,
        };
        if let Some(field) = named
            && o.get("params").and_then(|p| p.get(field)).is_some()
            && !headers.contains_key(NAME_HEADER)
        {
            return Err(mismatch(format!(
                "Header mismatch: the Mcp-Name header is missing; send the value of params.{field} in it"
            )));
        }
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

/// The `x-mcp-header` marks of a tool's input schema: (argument, header suffix) pairs, read from
/// a `tools/list` entry.
pub fn param_headers_of(tool: &Value) -> Vec<(String, String)> {
    let Some(props) = tool.pointer("/inputSchema/properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter_map(|(name, schema)| Some((name.clone(), schema.get("x-mcp-header")?.as_str()?.to_string())))
        .collect()
}

/// 2026-07-28 custom headers: every argument of a `tools/call` that the tool's schema marks with
/// `x-mcp-header: X` and that the body carries must come with `Mcp-Param-X` of the same value
/// (literal, or in the `=?base64?…?=` form); a missing, undecodable or different header is -32020.
pub fn check_param_headers(msg: &Value, headers: &HeaderMap, marks: &[(String, String)]) -> Result<(), RpcError> {
    let Some(args) = msg.pointer("/params/arguments").and_then(Value::as_object) else {
        return Ok(());
    };
    for (arg, suffix) in marks {
        let Some(value) = args.get(arg) else { continue };
        let want = match value {
            Value::Null => continue,
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let name = format!("mcp-param-{}", suffix.to_ascii_lowercase());
        let Some(raw) = headers.get(name.as_str()) else {
            return Err(mismatch(format!(
                "Header mismatch: the Mcp-Param-{suffix} header is missing; it must carry the value of argument `{arg}`"
            )));
        };
        let raw = raw.to_str().map_err(|_| mismatch(format!("the Mcp-Param-{suffix} header is not valid ASCII")))?;
        let got = decode_name(raw.trim())?;
        if got != want {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Param-{suffix} header value '{raw}' does not match argument `{arg}`"
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
        params["_meta"] = json!({ META_VERSION: MODERN, META_CLIENT_CAPABILITIES: {} });
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
        // 2026-07-28 has no `initialize`: one that names it is answered without a session (-32601).
        assert!(is_stateless(&init, &none));
        let legacy_init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
        assert!(!is_stateless(&legacy_init, &none));
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
        let named = |extra: &[(&'static str, &str)]| {
            let mut h = headers(&[("mcp-method", "tools/call"), ("mcp-name", "memory.search")]);
            for (k, v) in extra {
                h.insert(*k, HeaderValue::from_str(v).unwrap());
            }
            h
        };
        assert!(check_headers(&call, &named(&[])).is_ok());
        assert!(check_headers(&call, &named(&[("mcp-protocol-version", MODERN)])).is_ok());
        let encoded = format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode("memory.search"));
        assert!(check_headers(&call, &named(&[("mcp-name", &encoded)])).is_ok());
        for bad in [
            HeaderMap::new(),
            headers(&[("mcp-method", "tools/call")]),
            named(&[("mcp-method", "tools/list")]),
            named(&[("mcp-name", "memory.recall")]),
            named(&[("mcp-protocol-version", "2025-11-25")]),
            named(&[("mcp-name", "=?base64?!!!?=")]),
        ] {
            let err = check_headers(&call, &bad).unwrap_err();
            assert_eq!(err.code, codes::HEADER_MISMATCH, "{bad:?}");
        }
        let no_meta = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let err = check_headers(&no_meta, &headers(&[("mcp-protocol-version", MODERN)])).unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS);
        let mut no_caps = modern("tools/list", json!({}));
        no_caps["params"]["_meta"].as_object_mut().unwrap().remove(META_CLIENT_CAPABILITIES);
        let err = check_headers(&no_caps, &headers(&[("mcp-method", "tools/list")])).unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS, "the client's capabilities are required");
        let read = modern("resources/read", json!({"uri": "openhuman://prompts/soul"}));
        let read_as = |name: &str| headers(&[("mcp-method", "resources/read"), ("mcp-name", name)]);
        assert!(check_headers(&read, &read_as("openhuman://prompts/soul")).is_ok());
        assert!(check_headers(&read, &read_as("openhuman://prompts/user")).is_err());
        // A name header on a method without a name is meaningless, not an error.
        let list = modern("tools/list", json!({}));
        assert!(check_headers(&list, &headers(&[("mcp-method", "tools/list"), ("mcp-name", "x")])).is_ok());
        // A bare discovery probe needs nothing.
        let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"});
        assert!(check_headers(&discover, &HeaderMap::new()).is_ok());
    }

    #[test]
    fn marked_arguments_travel_in_their_headers_too() {
        let tool = json!({"name": "t", "inputSchema": {"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}, "n": {"type": "integer"}}}});
        let marks = param_headers_of(&tool);
        assert_eq!(marks, vec![("region".to_string(), "Region".to_string())]);
        let call = modern("tools/call", json!({"name": "t", "arguments": {"region": "Hello", "n": 1}}));
        assert!(check_param_headers(&call, &headers(&[("mcp-param-region", "Hello")]), &marks).is_ok());
        assert!(check_param_headers(&call, &headers(&[("mcp-param-region", "=?base64?SGVsbG8=?=")]), &marks).is_ok());
        for bad in [
            HeaderMap::new(),
            headers(&[("mcp-param-region", "Bye")]),
            headers(&[("mcp-param-region", "=?base64?SGVsbG8?=")]),
            headers(&[("mcp-param-region", "=?base64?SGVs!!!bG8=?=")]),
        ] {
            assert_eq!(check_param_headers(&call, &bad, &marks).unwrap_err().code, codes::HEADER_MISMATCH, "{bad:?}");
        }
        // Not in the body: nothing to mirror.
        let without = modern("tools/call", json!({"name": "t", "arguments": {}}));
        assert!(check_param_headers(&without, &HeaderMap::new(), &marks).is_ok());
    }
}
