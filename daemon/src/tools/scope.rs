//! The OAuth scope each tool needs (`[mcp.http.oauth]`): the read scope, which every OAuth
//! request needs anyway (the transport checks it), and the act scope on top for the tools that
//! change memory or reach beyond this machine — every Act tool (writes, running a subagent) and
//! the web tools. `tools::call` checks it right after the lookup; a refusal of a write tool is
//! audited like a policy denial, and HTTP answers it with 403 `insufficient_scope`.

use openhuman_config::{Config, OAuthConfig};
use openhuman_mcp::auth;
use openhuman_mcp::{RequestCtx, RpcError};
use serde_json::json;

use super::{Policy, ToolDef};

/// Read tools that still need the act scope: they send the caller's text to outside services.
const OUTBOUND: &[&str] = &["searxng_search", "web_search", "web_answer"];

/// The scope a call of `tool` needs from an OAuth token.
fn scope_of<'a>(o: &'a OAuthConfig, tool: &ToolDef) -> &'a str {
    if tool.policy == Policy::Act || OUTBOUND.contains(&tool.name) { &o.act_scope } else { &o.read_scope }
}

/// Whether the request's token (if it came with one) grants what `tool` needs; Err is the
/// refusal, which the HTTP transport answers with 403 `insufficient_scope`.
pub(crate) fn admit(config: &Config, ctx: &RequestCtx, tool: &ToolDef) -> Result<(), RpcError> {
    let Some(caller) = ctx.auth.as_deref() else {
        return Ok(());
    };
    // HTTP settings are read at start; a reload that took the section out fails closed.
    let Some(o) = config.mcp.http.oauth.as_ref() else {
        return Err(RpcError::invalid_request(
            "[mcp.http.oauth] is no longer in the config, so OAuth callers get nothing until the daemon restarts",
        ));
    };
    let scope = scope_of(o, tool);
    if caller.has_scope(scope) {
        return Ok(());
    }
    tracing::info!(tool = tool.name, source = %ctx.source, scope, "tool call refused: the access token lacks a scope");
    Err(auth::insufficient_scope(
        format!(
            "`{}` needs the OAuth scope `{scope}`, which this access token was not granted; ask the authorization \
             server for a token with it (scopes: {} for reading, {} for writes, agents and web)",
            tool.name, o.read_scope, o.act_scope
        ),
        scope,
        json!({ "tool": tool.name }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_agents_and_web_need_the_act_scope() {
        let o = OAuthConfig { issuer: "https://as.example".into(), ..OAuthConfig::default() };
        let tool = |name: &str| crate::tools::all_tools().iter().find(|t| t.name == name).expect(name);
        assert_eq!(scope_of(&o, tool("memory.search")), "openhuman:read");
        assert_eq!(scope_of(&o, tool("memory.store")), "openhuman:act");
        assert_eq!(scope_of(&o, tool("agent.run_subagent")), "openhuman:act");
        assert_eq!(scope_of(&o, tool("web_search")), "openhuman:act");
        for name in OUTBOUND {
            tool(name);
        }
    }
}
