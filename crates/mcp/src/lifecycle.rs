//! Session lifecycle methods: `initialize` (handshake era), `server/discover` (stateless era,
//! answered at any time), and `logging/setLevel`. The capabilities they state follow what the
//! app does: resource subscriptions and list changes only when it tells of resource changes,
//! prompts only when it has some, completions only when it completes.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::app::ServerInfo;
use crate::protocol::{META_SERVER_INFO, RpcError, SUPPORTED, negotiate};
use crate::session::{LOG_LEVELS, Session};

/// What the app does beyond tools and resources, as the capabilities state it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Features {
    pub resource_notifications: bool,
    pub prompts: bool,
    pub completions: bool,
}

impl Features {
    /// The `capabilities` object; `modern` omits subscription flags the app does not serve.
    fn capabilities(&self, modern: bool) -> Value {
        let n = self.resource_notifications;
        let resources = if modern && !n { json!({}) } else { json!({ "subscribe": n, "listChanged": n }) };
        let mut caps = json!({ "tools": { "listChanged": true }, "resources": resources, "logging": {} });
        if self.prompts {
            caps["prompts"] = json!({ "listChanged": true });
        }
        if self.completions {
            caps["completions"] = json!({});
        }
        caps
    }
}

pub fn initialize(
    info: &ServerInfo,
    features: Features,
    session: &Arc<Session>,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let requested = match params.get("protocolVersion") {
        None | Some(Value::Null) => None,
        Some(Value::String(v)) => Some(v.as_str()),
        Some(_) => {
            return Err(RpcError::invalid_params("`protocolVersion` must be a string such as \"2025-11-25\""));
        }
    };
    let client_info = match params.get("clientInfo") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v),
        Some(_) => {
            return Err(RpcError::invalid_params("`clientInfo` must be an object with a `name`"));
        }
    };
    let version = negotiate(requested);
    session.set_negotiated(version);
    session.observe_client(client_info);
    session.observe_capabilities(params.get("capabilities"));
    session.observe_meta(params.get("_meta"));
    tracing::info!(session = session.id, version, source = %session.source(), "session initialised");
    Ok(json!({
        "protocolVersion": version,
        "capabilities": features.capabilities(false),
        "serverInfo": { "name": info.name, "title": info.title, "version": info.version },
        "instructions": info.instructions
    }))
}

pub fn discover(info: &ServerInfo, features: Features) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": SUPPORTED,
        "capabilities": features.capabilities(true),
        "_meta": { META_SERVER_INFO: { "name": info.name, "title": info.title, "version": info.version } },
        "instructions": info.instructions,
        "ttlMs": crate::protocol::TOOLS_TTL_MS,
        "cacheScope": "private"
    })
}

pub fn set_level(session: &Session, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("missing `level`: one of {}", LOG_LEVELS.join(", "))))?;
    if !session.set_log_level(level) {
        return Err(RpcError::invalid_params(format!(
            "unknown log level {level:?}: use one of {}",
            LOG_LEVELS.join(", ")
        )));
    }
    Ok(json!({}))
}
