//! JSON-RPC 2.0 and MCP error codes used on the wire. The shim needs a few of them to answer
//! requests it cannot forward; the daemon uses all of them at its dispatch boundary.

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Resource not found, for handshake-era sessions (2025-11-25 and earlier).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// MCP 2026-07-28: an HTTP header disagrees with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the request needs a client capability its `_meta` does not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// MCP 2026-07-28: the requested protocol version is not served here.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
