//! Core JSON-RPC methods outside the MCP catalog (`openhuman.*`), served on the daemon socket
//! (and, with the HTTP feature, on `/rpc`). They need no MCP handshake: `status` and `stop` use
//! them, as will dashboards.

use serde_json::{Map, Value, json};

use crate::mcp::protocol::RpcError;
use crate::state::AppState;

pub async fn call(
    state: &AppState,
    caller: u64,
    method: &str,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let _ = params;
    match method {
        "openhuman.daemon_status" => Ok(status(state, caller)),
        "openhuman.daemon_shutdown" => {
            tracing::info!("shutdown requested over the socket");
            let token = state.shutdown_token().clone();
            // Cancel after this reply is queued, so the caller hears back.
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                token.cancel();
            });
            Ok(json!({ "stopping": true, "pid": std::process::id() }))
        }
        "openhuman.config_reload" => match state.reload() {
            Ok(changed) => {
                if changed {
                    crate::server::notify_tools_changed(state);
                }
                Ok(json!({ "reloaded": true, "tools_changed": changed }))
            }
            Err(e) => Err(RpcError::invalid_params(format!(
                "config not reloaded, the previous one stays in force: {e:#}"
            ))),
        },
        other => Err(RpcError::method_not_found(other)),
    }
}

fn status(state: &AppState, caller: u64) -> Value {
    // The asking connection is not one of the sessions being reported on.
    let sessions: Vec<_> = state
        .sessions()
        .into_iter()
        .filter(|s| s.id != caller)
        .collect();
    let inflight: usize = sessions.iter().map(|s| s.inflight_count()).sum();
    json!({
        "pid": std::process::id(),
        "version": openhuman_common::VERSION,
        "uptime_ms": state.uptime_ms() as u64,
        "sessions": sessions.len(),
        "in_flight": inflight,
        "socket": state.paths().socket.display().to_string(),
        "config_file": state.paths().config_file.display().to_string(),
    })
}
