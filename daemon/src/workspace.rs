//! The project of an MCP session, read in one place: the `_meta` of the session's `initialize`
//! under [`openhuman_common::WORKSPACE_META`] (the shim sends its client's working directory and
//! the git root above it), its `git_root` first, else its `cwd`, normalised as memory names
//! projects. The memory tools take it as the default `project` of `memory.store` and
//! `memory.learn` and the default `prefer_project` of `memory.search` and `memory.recall` (with
//! `memory.project_boost` as the default `project_boost`). MCP `roots` are not asked for yet:
//! the protocol crate sends no requests to clients.

use openhuman_mcp::RequestCtx;
use serde_json::{Map, Value};

/// The session's project, if its client said where it runs.
pub(crate) fn project_of(ctx: &RequestCtx) -> Option<String> {
    let here = ctx.session.client_meta()?.get(openhuman_common::WORKSPACE_META)?;
    ["git_root", "cwd"]
        .iter()
        .filter_map(|k| here.get(*k).and_then(Value::as_str))
        .find_map(openhuman_memory::project::normalize)
}

/// Sets `key` to the session's project when the caller left it out.
pub(crate) fn default_project(args: &mut Map<String, Value>, key: &str, ctx: &RequestCtx) {
    if !args.contains_key(key)
        && let Some(p) = project_of(ctx)
    {
        args.insert(key.to_string(), Value::String(p));
    }
}

/// Search and recall: the session's project preferred, by the configured boost, unless the
/// caller named either.
pub(crate) fn prefer_session_project(args: &mut Map<String, Value>, ctx: &RequestCtx, boost: f64) {
    default_project(args, "prefer_project", ctx);
    if !args.contains_key("project_boost") && args.contains_key("prefer_project") {
        args.insert("project_boost".into(), Value::from(boost));
    }
}
