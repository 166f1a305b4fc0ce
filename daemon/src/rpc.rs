//! The one table of `openhuman.*` methods: the daemon's own (status, stop, reload, ingest,
//! reindex, audit, tool registry) and the memory methods, each an engine operation
//! ([`operation`]: its name, schema and handler all from the operation's types). Each method
//! declares its parameter schema once; the socket, HTTP `/rpc`, the CLI and the dashboard go
//! through [`invoke`], which validates params against that schema before the handler runs. MCP
//! tools do not look methods up: a memory tool calls its operation directly
//! (`engine::operate`), with the same schema and the same engine call. Engine work runs on the
//! bounded pool through `engine` (`operate`, `blocking`).
//!
//! - `daemon` the daemon's own methods
//! - `memory` the memory methods (search, recall, chunks, entities, sources, fetch, items)
//! - `registry` the tool registry's view over tools and memory methods, and diagnostics

mod daemon;
mod memory;
mod registry;

use std::sync::LazyLock;

use futures::FutureExt;
use futures::future::BoxFuture;
use openhuman_mcp::args::ArgSpec;
use openhuman_mcp::{Progress, RpcError};
use openhuman_memory::Operation;
use openhuman_schema::Params;
use serde_json::{Map, Value, json};

pub(crate) use crate::engine::{MethodError, blocking, engine, operate};
use crate::state::AppState;

/// Who is calling: the session (0 for none) and where progress goes, if anywhere.
#[derive(Default)]
pub(crate) struct Caller {
    pub session: u64,
    pub progress: Option<Progress>,
    /// The provenance label a control write is audited under; None: `rpc` (the socket, `/rpc`).
    pub source: Option<String>,
}

/// Which surface a method belongs to. The tool registry lists the memory methods, which are
/// the ones MCP tools map onto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    Daemon,
    Memory,
}

pub(crate) type Handler = fn(AppState, Map<String, Value>, Caller) -> BoxFuture<'static, Result<Value, MethodError>>;

pub(crate) struct Method {
    pub name: &'static str,
    pub group: Group,
    pub params: ArgSpec,
    pub handler: Handler,
}

static METHODS: LazyLock<Vec<Method>> = LazyLock::new(|| {
    let mut all = daemon::methods();
    all.extend(memory::methods());
    all
});

pub(crate) fn methods() -> &'static [Method] {
    &METHODS
}

pub(crate) fn find(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

/// Validates `params` against the method's schema (request metadata in `_meta` is not a
/// parameter) and runs it.
pub(crate) async fn invoke(
    state: AppState,
    name: &str,
    mut params: Map<String, Value>,
    caller: Caller,
) -> Result<Value, MethodError> {
    let method = find(name).ok_or_else(|| MethodError::NotFound(format!("no method {name}")))?;
    params.remove("_meta");
    let params = method.params.validate(&params).map_err(|e| MethodError::InvalidParams(e.0))?;
    (method.handler)(state, params, caller).await
}

/// An `openhuman.*` request from the socket or HTTP `/rpc`, answered as JSON-RPC.
pub(crate) async fn call(
    state: AppState,
    name: &str,
    params: Map<String, Value>,
    caller: Caller,
) -> Result<Value, RpcError> {
    if find(name).is_none() {
        return Err(RpcError::method_not_found(name));
    }
    invoke(state, name, params, caller).await.map_err(|e| match e {
        MethodError::Internal(e) => RpcError::internal(format!("{name} failed: {e:#}")),
        MethodError::NotFound(m) => RpcError::invalid_params(m).with_data(json!({ "not_found": true })),
        MethodError::InvalidParams(m) | MethodError::Unavailable(m) => RpcError::invalid_params(m),
    })
}

/// The method of an engine operation in `group`: the schema is its parameter type's, the
/// handler its typed engine call.
pub(crate) fn operation_in<O: Operation>(group: Group) -> Method {
    Method { name: O::METHOD, group, params: O::Params::spec(), handler: run_operation::<O> }
}

/// The method of a memory operation (listed in the tool registry).
pub(crate) fn operation<O: Operation>() -> Method {
    operation_in::<O>(Group::Memory)
}

fn run_operation<O: Operation>(
    state: AppState,
    params: Map<String, Value>,
    _: Caller,
) -> BoxFuture<'static, Result<Value, MethodError>> {
    async move {
        let params = O::Params::from_checked(params).map_err(|e| MethodError::InvalidParams(e.0))?;
        let out = operate::<O>(&state, params).await?;
        serde_json::to_value(out).map_err(|e| MethodError::Internal(e.into()))
    }
    .boxed()
}
