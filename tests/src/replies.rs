//! Reading replies in assertions: a `tools/call` result's structured content, text or error
//! text, and a JSON-RPC error's code and message. Each panics with the whole reply when it is not
//! the kind the test expects, so a failure shows what came instead.

use serde_json::Value;

/// The `structuredContent` of a successful `tools/call` result (what `Peer::tool` returns).
pub fn tool_ok(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "expected a successful tool result: {result}");
    &result["structuredContent"]
}

/// The text of a `tools/call` result's first content block.
pub fn tool_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}

/// The text of a failed `tools/call` result (`isError: true`). Owned, so it can be taken from a
/// result that is not kept: `tool_err_text(&peer.tool(..))`.
pub fn tool_err_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected a tool error: {result}");
    tool_text(result).to_string()
}

/// The code and message of a JSON-RPC error reply (what `Peer::request` returns).
pub fn rpc_error(reply: &Value) -> (i64, &str) {
    let error = &reply["error"];
    match (error["code"].as_i64(), error["message"].as_str()) {
        (Some(code), Some(message)) => (code, message),
        _ => panic!("expected a JSON-RPC error: {reply}"),
    }
}
