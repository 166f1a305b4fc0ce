//! Streamable HTTP transport (SPEC §5.4): `/mcp` (and `/`), `/healthz`, `/rpc`.
//! Being built; until then `serve --http` refuses to start.

use anyhow::{Result, bail};
use tokio_util::sync::CancellationToken;

use crate::mcp::Dispatcher;

/// Everything the HTTP transport needs, resolved from flags, env and config at start.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub host: String,
    pub port: u16,
    /// Bearer token; None = no auth (allowed only on loopback binds).
    pub token: Option<String>,
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    dispatcher: Dispatcher,
    opts: HttpOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    let _ = (listener, dispatcher, opts, shutdown);
    bail!("the Streamable HTTP transport is not in this build yet")
}
