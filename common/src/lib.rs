//! Pieces the daemon and the shim must agree on byte for byte: JSON-RPC error codes, where the
//! files live (`Paths`), and how the local socket is named. Nothing here knows MCP methods.

pub mod codes;
pub mod paths;

pub use paths::Paths;

/// Product version, shared so `status` and `serverInfo` agree across binaries.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
