//! Core JSON-RPC methods outside the MCP catalog (`openhuman.*`), served on the daemon socket
//! (and on HTTP `/rpc`). They need no MCP handshake: `status`, `stop` and `ingest` use them, as
//! can dashboards. Besides the daemon's own methods, every core method of `core_rpc` (the ones
//! MCP tools map onto) is callable here by name.

use serde_json::{Map, Value, json};

use crate::core_rpc::{self, CoreError};
use crate::state::AppState;
use openhuman_mcp::{Progress, RpcError};

pub async fn call(state: &AppState, caller: u64, method: &str, params: &Map<String, Value>) -> Result<Value, RpcError> {
    call_ctx(state, caller, method, params, None).await
}

pub async fn call_ctx(
    state: &AppState,
    caller: u64,
    method: &str,
    params: &Map<String, Value>,
    progress: Option<Progress>,
) -> Result<Value, RpcError> {
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
                    state.sessions().notify_tools_changed();
                }
                Ok(json!({ "reloaded": true, "tools_changed": changed }))
            }
            Err(e) => {
                Err(RpcError::invalid_params(format!("config not reloaded, the previous one stays in force: {e:#}")))
            }
        },
        "openhuman.memory_ingest" => ingest(state, params, progress).await,
        "openhuman.memory_reindex" => {
            let engine = state.memory().map_err(RpcError::invalid_params)?;
            let summary = tokio::task::spawn_blocking(move || engine.reindex())
                .await
                .map_err(|e| RpcError::internal(format!("reindex task failed: {e}")))?
                .map_err(|e| RpcError::internal(format!("reindex failed: {e:#}")))?;
            Ok(serde_json::to_value(summary).unwrap_or_default())
        }
        "openhuman.audit_query" => {
            let engine = state.memory().map_err(RpcError::invalid_params)?;
            // Rejection rows are written off the hot path; make the answer include every
            // attempt made before this query.
            state.audit().flush().await;
            let q = audit_query(params)?;
            let rows = tokio::task::spawn_blocking(move || engine.query_audit(q))
                .await
                .map_err(|e| RpcError::internal(format!("audit task failed: {e}")))?
                .map_err(|e| RpcError::internal(format!("{e:#}")))?;
            Ok(json!({ "rows": rows }))
        }
        "openhuman.tool_registry_list" => Ok(crate::registry::list(state)),
        "openhuman.tool_registry_get" => {
            let id = match params.get("tool_id") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                _ => return Err(RpcError::invalid_params("`tool_id` is required, e.g. \"memory.search\"")),
            };
            crate::registry::get(state, &id).ok_or_else(|| {
                RpcError::invalid_params(format!("no tool `{id}`; openhuman.tool_registry_list shows them all"))
                    .with_data(json!({ "tool_id": id }))
            })
        }
        "openhuman.tool_registry_diagnostics" => {
            state.audit().flush().await;
            let st = state.clone();
            tokio::task::spawn_blocking(move || crate::registry::diagnostics(&st))
                .await
                .map_err(|e| RpcError::internal(format!("diagnostics task failed: {e}")))
        }
        "openhuman.memory_stats" => {
            let engine = state.memory().map_err(RpcError::invalid_params)?;
            tokio::task::spawn_blocking(move || engine.stats())
                .await
                .map_err(|e| RpcError::internal(format!("stats task failed: {e}")))?
                .map_err(|e| RpcError::internal(format!("{e:#}")))
        }
        "openhuman.memory_check" => {
            let engine = state.memory().map_err(RpcError::invalid_params)?;
            tokio::task::spawn_blocking(move || engine.check())
                .await
                .map_err(|e| RpcError::internal(format!("check task failed: {e}")))?
                .map_err(|e| RpcError::internal(format!("{e:#}")))
        }
        other if core_rpc::find(other).is_some() => {
            core_rpc::invoke(state.clone(), other, params.clone()).await.map_err(|e| match e {
                CoreError::Internal(e) => RpcError::internal(format!("{other} failed: {e:#}")),
                CoreError::NotFound(m) => RpcError::invalid_params(m).with_data(json!({ "not_found": true })),
                CoreError::InvalidParams(m) | CoreError::Unavailable(m) => RpcError::invalid_params(m),
            })
        }
        other => Err(RpcError::method_not_found(other)),
    }
}

async fn ingest(state: &AppState, params: &Map<String, Value>, progress: Option<Progress>) -> Result<Value, RpcError> {
    let engine = state.memory().map_err(RpcError::invalid_params)?;
    let paths: Vec<std::path::PathBuf> = match params.get("paths") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|p| {
                p.as_str()
                    .map(std::path::PathBuf::from)
                    .ok_or_else(|| RpcError::invalid_params("`paths` must be strings"))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(RpcError::invalid_params("`paths` must be a non-empty array of absolute paths")),
    };
    if let Some(p) = paths.iter().find(|p| !p.is_absolute()) {
        return Err(RpcError::invalid_params(format!(
            "`paths` must be absolute (the daemon has its own working directory): {}",
            p.display()
        )));
    }
    let kind = match params.get("kind") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) if ["document", "email", "chat"].contains(&k.as_str()) => Some(k.clone()),
        Some(_) => return Err(RpcError::invalid_params("`kind` must be document, email or chat")),
    };
    let summary = tokio::task::spawn_blocking(move || {
        let report = |p: &openhuman_memory::IngestProgress| {
            if let Some(pr) = &progress {
                let message = match &p.current {
                    Some(c) => format!("{} chunks; now {}", p.chunks_written, c.display()),
                    None => format!("{} chunks", p.chunks_written),
                };
                pr.report(p.files_done as f64, Some(p.files_total as f64), Some(&message));
            }
        };
        engine.ingest_paths(&paths, kind.as_deref(), &report)
    })
    .await
    .map_err(|e| RpcError::internal(format!("ingest task failed: {e}")))?
    .map_err(|e| RpcError::internal(format!("ingest failed: {e:#}")))?;
    Ok(serde_json::to_value(summary).unwrap_or_default())
}

/// `{limit?, tool?, client?, since?, failed?}` → an audit query.
pub fn audit_query(params: &Map<String, Value>) -> Result<openhuman_memory::AuditQuery, RpcError> {
    let since_ms = match params.get("since").and_then(Value::as_str) {
        Some(s) => Some(
            chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|e| {
                    RpcError::invalid_params(format!(
                        "`since` must be an RFC 3339 time such as 2026-11-30T00:00:00Z: {e}"
                    ))
                })?
                .timestamp_millis(),
        ),
        None => None,
    };
    Ok(openhuman_memory::AuditQuery {
        limit: params.get("limit").and_then(Value::as_u64).map(|n| n.clamp(1, 10_000) as usize),
        tool: params.get("tool").and_then(Value::as_str).map(str::to_string),
        client: params.get("client").and_then(Value::as_str).map(str::to_string),
        since_ms,
        failed_only: params.get("failed").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn status(state: &AppState, caller: u64) -> Value {
    // The asking connection is not one of the sessions being reported on.
    let sessions: Vec<_> = state.sessions().all().into_iter().filter(|s| s.id != caller).collect();
    let inflight: usize = sessions.iter().map(|s| s.inflight_count()).sum();
    json!({
        "pid": std::process::id(),
        "version": openhuman_common::VERSION,
        "uptime_ms": state.uptime_ms() as u64,
        "sessions": sessions.len(),
        "in_flight": inflight,
        "memory": state.memory().is_ok(),
        "socket": state.paths().socket.display().to_string(),
        "config_file": state.paths().config_file.display().to_string(),
    })
}
