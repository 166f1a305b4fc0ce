//! A minimal client of the daemon socket for `via` and the daemon-only commands (`status`, `stop`):
//! one JSON-RPC request to an `openhuman.*` control method or a stateless `tools/call` (no MCP
//! handshake needed), progress notifications passed to a callback, then the reply.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use interprocess::local_socket::tokio::{Stream, prelude::*};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// True when a daemon accepts connections on `socket`.
pub(crate) async fn daemon_up(socket: &Path) -> bool {
    match openhuman_common::paths::socket_name(socket) {
        Ok(name) => Stream::connect(name).await.is_ok(),
        Err(_) => false,
    }
}

/// Sends `method` and returns its result; Err when no daemon answers or it returns an error.
pub(crate) async fn call(socket: &Path, method: &str) -> Result<Value> {
    call_with(socket, method, json!({}), Some(Duration::from_secs(10)), |_| {}).await
}

/// Sends `method` with `params` (and a progress token) and returns its result, handing each
/// `notifications/progress` to `on_progress`. `timeout` bounds the whole wait.
pub(crate) async fn call_with(
    socket: &Path,
    method: &str,
    mut params: Value,
    timeout: Option<Duration>,
    mut on_progress: impl FnMut(&Value),
) -> Result<Value> {
    let name = openhuman_common::paths::socket_name(socket)?;
    let stream =
        Stream::connect(name).await.with_context(|| format!("no daemon is answering on {}", socket.display()))?;
    let (r, mut w) = tokio::io::split(stream);
    // Kept beside any request metadata the caller set (a tool call's protocol version).
    params["_meta"]["progressToken"] = json!("cli");
    let req = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    w.write_all(format!("{req}\n").as_bytes()).await?;
    w.flush().await?;
    let mut lines = BufReader::new(r).lines();
    let wait = async {
        loop {
            let line =
                lines.next_line().await?.ok_or_else(|| anyhow!("the daemon closed the connection before answering"))?;
            let msg: Value = serde_json::from_str(&line).context("the daemon sent an unreadable reply")?;
            if msg.get("method").and_then(Value::as_str) == Some("notifications/progress") {
                on_progress(&msg["params"]);
                continue;
            }
            if let Some(err) = msg.get("error") {
                return Err(anyhow!("{}", err["message"].as_str().unwrap_or("unknown error")));
            }
            return Ok(msg["result"].clone());
        }
    };
    match timeout {
        Some(t) => tokio::time::timeout(t, wait)
            .await
            .with_context(|| format!("the daemon did not answer within {} s", t.as_secs()))?,
        None => wait.await,
    }
}
