//! A minimal client of the daemon socket for `status` and `stop`: one JSON-RPC request, one
//! reply line, no MCP handshake (the `openhuman.*` control methods need none).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use interprocess::local_socket::tokio::{Stream, prelude::*};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Sends `method` and returns its result; Err when no daemon answers or it returns an error.
pub async fn call(socket: &Path, method: &str) -> Result<Value> {
    let name = openhuman_common::paths::socket_name(socket)?;
    let stream = Stream::connect(name)
        .await
        .with_context(|| format!("no daemon is answering on {}", socket.display()))?;
    let (r, mut w) = tokio::io::split(stream);
    let req = json!({ "jsonrpc": "2.0", "id": 1, "method": method });
    w.write_all(format!("{req}\n").as_bytes()).await?;
    w.flush().await?;
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        BufReader::new(r).read_line(&mut line),
    )
    .await
    .context("the daemon did not answer within 10 s")??;
    let reply: Value =
        serde_json::from_str(&line).context("the daemon sent an unreadable reply")?;
    if let Some(err) = reply.get("error") {
        return Err(anyhow!(
            "the daemon refused {method}: {}",
            err["message"].as_str().unwrap_or("unknown error")
        ));
    }
    Ok(reply["result"].clone())
}
