//! `resources/list`, `resources/templates/list` and `resources/read` over the static prompt
//! catalog in `crate::resources`.

use openhuman_common::codes;
use serde_json::{Map, Value, json};

use super::protocol::{Era, RpcError};
use crate::resources::{self as catalog, MIME};
use crate::state::AppState;

pub fn list(state: &AppState, params: &Map<String, Value>) -> Result<Value, RpcError> {
    super::reject_cursor(params)?;
    let items: Vec<Value> = catalog::list(&state.agents())
        .into_iter()
        .map(|r| json!({ "uri": r.uri, "name": r.name, "title": r.title, "description": r.description, "mimeType": MIME }))
        .collect();
    Ok(json!({ "resources": items }))
}

pub fn templates(params: &Map<String, Value>) -> Result<Value, RpcError> {
    super::reject_cursor(params)?;
    Ok(json!({ "resourceTemplates": [] }))
}

pub fn read(state: &AppState, params: &Map<String, Value>, era: &Era) -> Result<Value, RpcError> {
    let uri = match params.get("uri") {
        Some(Value::String(u)) if !u.trim().is_empty() => u.as_str(),
        Some(Value::String(_)) => return Err(RpcError::invalid_params("`uri` must not be blank")),
        Some(_) => return Err(RpcError::invalid_params("`uri` must be a string")),
        None => {
            return Err(RpcError::invalid_params("missing `uri`: resources/list shows the available ones"));
        }
    };
    match catalog::read(uri, &state.paths().config_dir, &state.agents()) {
        Some(text) => Ok(json!({ "contents": [{ "uri": uri, "mimeType": MIME, "text": text }] })),
        None => {
            // 2026-07-28 folded resource-not-found into invalid params.
            let code = if era.is_modern() { codes::INVALID_PARAMS } else { codes::RESOURCE_NOT_FOUND };
            Err(RpcError::new(code, format!("resource not found: {uri}; resources/list shows the available ones"))
                .with_data(json!({ "uri": uri })))
        }
    }
}
