//! The MCP protocol layer of openhuman-mcp: JSON-RPC framing and envelopes, the one dispatcher
//! (generic over an [`App`], the way a language server's protocol crate is generic over its
//! server), sessions, argument schemas and validation, tool-result shapes, and the transports
//! (line-framed socket and stdio, Streamable HTTP). It knows nothing of config, memory or
//! providers: the application supplies tools, resources, prompts, completions and extension
//! methods through [`App`], and transports get their options and cancellation tokens as
//! arguments. Map:
//!
//! - `app`        the [`App`] trait and the server's identity
//! - `incoming`   reading a message: batches bounded while read, ids answered as sent
//! - `dispatcher` envelope checks, batches, in-flight ids and cancellation, era choice, routing
//! - `lifecycle`  `initialize`, `server/discover`, `logging/setLevel`
//! - `protocol`   versions, [`RpcError`], [`Payload`]/[`Reply`] and their encoding
//! - `session`    per-connection state and the set of live sessions
//! - `prompts`    prompts and completion: list entries, argument checks, the completion cap
//! - `subscriptions` change notifications: `resources/subscribe` and `subscriptions/listen`
//! - `auth`       OAuth for HTTP: the verified caller, the verifier hook, resource metadata
//! - `context`    [`RequestCtx`]: what a running request may use (cancel, progress, logs, input)
//! - `input`      asking the client: server→client requests, 2026-07-28 multi-round-trip input
//! - `args`       argument schemas (the `openhuman-schema` crate, re-exported)
//! - `tool`       tool descriptions and results (`tools/list` entries, `isError` results)
//! - `transport/` bytes <-> messages: framing, socket, stdio, HTTP

pub mod app;
pub mod auth;
/// Argument schemas live in their own crate, shared with the typed operations they describe.
pub use openhuman_schema as args;
pub mod context;
mod dispatcher;
pub mod incoming;
pub mod input;
mod lifecycle;
pub mod prompts;
pub mod protocol;
pub mod session;
pub mod subscriptions;
#[cfg(test)]
mod testing;
pub mod tool;
pub mod transport;

pub use app::{App, Extension, Progress, Resource, ResourceTemplate, ServerInfo};
pub use auth::AuthInfo;
pub use context::RequestCtx;
pub use dispatcher::{Dispatcher, encode};
pub use incoming::{Id, Incoming};
pub use input::{Action, Ask, AskError, Elicited, Input, Root};
pub use protocol::{Era, Payload, Reply, RpcError};
pub use session::{Session, SessionGuard, SessionSet, Transport};
