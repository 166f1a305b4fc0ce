//! The dashboard's one JSON endpoint, `POST /ui/api` with `{op, params}`. Each op is an
//! `openhuman.*` method run through `rpc::invoke` or a tool run through `tools::call`, the paths
//! the socket and MCP clients take, so parameters are validated, policy applies and writes are
//! audited the same way (the dashboard's writes, re-ingest included, carry the client label
//! `mcp:dashboard`). Only the
//! ops listed here are reachable.

use axum::http::StatusCode;
use openhuman_mcp::{Payload, Transport};
use openhuman_memory::{Operation, ops};
use serde_json::{Map, Value, json};

use crate::state::AppState;
use crate::{rpc, tools};

/// The client name the dashboard's calls carry (audit rows show `mcp:dashboard`).
const CLIENT: &str = "dashboard";

enum Target {
    Method(&'static str),
    Tool(&'static str),
    /// `openhuman.daemon_status` and the lines `status` prints from it.
    Status,
}

const OPS: &[(&str, Target)] = &[
    ("status", Target::Status),
    ("stats", Target::Method(ops::StoreStats::METHOD)),
    ("recall", Target::Method(ops::Recall::METHOD)),
    ("chunk", Target::Method(ops::ReadChunk::METHOD)),
    ("neighbours", Target::Method(ops::Neighbours::METHOD)),
    ("browse", Target::Method(ops::Browse::METHOD)),
    ("sources", Target::Method(ops::ListSources::METHOD)),
    ("entities", Target::Method(ops::TopEntities::METHOD)),
    ("timeline", Target::Method(ops::Timeline::METHOD)),
    ("audit", Target::Method("openhuman.audit_query")),
    ("resolve", Target::Method(ops::Resolve::METHOD)),
    ("ingest", Target::Method("openhuman.memory_ingest")),
    ("forget", Target::Tool("memory.forget")),
];

/// Runs one op; Err is the HTTP status and a sentence for the page to show.
pub(crate) async fn run(state: AppState, body: &[u8]) -> Result<Value, (StatusCode, String)> {
    let bad = |m: String| (StatusCode::BAD_REQUEST, m);
    let msg: Value = serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let op = msg["op"].as_str().unwrap_or_default();
    let Some((_, target)) = OPS.iter().find(|(name, _)| *name == op) else {
        return Err(bad(format!("unknown op `{op}`")));
    };
    let params = match &msg["params"] {
        Value::Null => Map::new(),
        Value::Object(m) => m.clone(),
        _ => return Err(bad("`params` must be an object".into())),
    };
    match target {
        Target::Method(name) => method(&state, name, params).await,
        Target::Status => {
            let status = method(&state, "openhuman.daemon_status", Map::new()).await?;
            Ok(json!({ "lines": crate::status::lines(&status), "status": status }))
        }
        Target::Tool(name) => {
            let payload =
                tools::call(state, name.to_string(), params, crate::app::request_ctx(CLIENT, Transport::Http))
                    .await
                    .map_err(|e| {
                        // A policy denial is a refusal, not a mistake in the request.
                        let status = if crate::policy::Denial::is_denial_text(&e.message) {
                            StatusCode::FORBIDDEN
                        } else {
                            StatusCode::BAD_REQUEST
                        };
                        (status, e.message)
                    })?;
            let reply = match payload {
                Payload::Value(v) => v,
                Payload::Json(text) => serde_json::from_str(&text)
                    .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("reading the tool's result: {e}")))?,
            };
            if reply["isError"] == true {
                let text = reply["content"][0]["text"].as_str().unwrap_or("the tool failed").to_string();
                return Err((StatusCode::UNPROCESSABLE_ENTITY, text));
            }
            Ok(reply["structuredContent"].clone())
        }
    }
}

async fn method(state: &AppState, name: &str, params: Map<String, Value>) -> Result<Value, (StatusCode, String)> {
    let caller = rpc::Caller { source: Some(openhuman_mcp::session::source_label(Some(CLIENT))), ..Default::default() };
    rpc::invoke(state.clone(), name, params, caller).await.map_err(|e| match e {
        rpc::MethodError::NotFound(m) => (StatusCode::NOT_FOUND, m),
        rpc::MethodError::InvalidParams(m) | rpc::MethodError::Unavailable(m) => (StatusCode::UNPROCESSABLE_ENTITY, m),
        rpc::MethodError::Internal(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{name} failed: {e:#}")),
    })
}
