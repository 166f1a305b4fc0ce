//! What every crate of the workspace agrees on: JSON-RPC error codes, where the files live
//! (`Paths`), how the local socket is named, and the pure text helpers with one meaning each
//! (`normalize_id`, credential detection and redaction, loopback checks). Nothing here knows MCP
//! methods, config or memory.

pub mod codes;
pub mod paths;
pub mod text;

pub use paths::Paths;
pub use text::{is_loopback_host, looks_secret, normalize_id, redact, truncate_bytes};

/// Product version, shared so `status` and `serverInfo` agree across binaries.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The key, in the `_meta` of the `initialize` the shim sends, of where its client runs:
/// `{"cwd": "<absolute path>", "git_root": "<absolute path>"}` (`git_root` when the working
/// directory is inside a git repository). The daemon reads a session's project from it.
pub const WORKSPACE_META: &str = "openhuman/workspace";
