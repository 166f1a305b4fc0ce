//! The HTTP transport as an OAuth 2.1 resource server (`[mcp.http.oauth]`): the protocol
//! crate's `TokenVerifier` hook implemented with `openhuman_providers::oauth::JwtVerifier`
//! (JWTs checked against the issuer's keys), the protected-resource metadata built from the
//! config and the address bound, and the scope each tool needs.
//!
//! Scopes: the read scope is the way in — every OAuth request needs it (the transport answers
//! 403 `insufficient_scope` without it), so listing, resources, prompts and the read tools are
//! open to it; the act scope is needed on top for the tools that change memory or reach beyond
//! this machine: every Act tool (writes, running a subagent) and the web tools. A call refused
//! for a scope is audited like other refusals of a write tool. Access tokens go nowhere
//! downstream: no provider call, subagent or log ever sees one.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use openhuman_config::{Config, OAuthConfig};
use openhuman_mcp::auth::{self, AuthInfo, OAuthOptions, ResourceMetadata, TokenRejection, TokenVerifier};
use openhuman_mcp::{RequestCtx, RpcError};
use openhuman_providers::oauth::{JwtVerifier, TokenError};
use serde_json::json;

use crate::tools::{Policy, ToolDef};

/// Read tools that still need the act scope: they send the caller's text to outside services.
const OUTBOUND: &[&str] = &["searxng_search", "web_search", "web_answer"];

struct Verifier(JwtVerifier);

impl TokenVerifier for Verifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenRejection>> {
        async move {
            match self.0.verify(token).await {
                Ok(c) => {
                    Ok(AuthInfo { issuer: c.issuer, subject: c.subject, client_id: c.client_id, scopes: c.scopes })
                }
                Err(TokenError::Invalid(why)) => Err(TokenRejection::Invalid(why)),
                Err(TokenError::Unavailable(why)) => Err(TokenRejection::Unavailable(why)),
            }
        }
        .boxed()
    }
}

/// This server's resource URI: the configured one, else the MCP endpoint of the loopback
/// address bound (`bound` is the listener's address, `host` the configured host name, which
/// clients use in their URL).
pub(crate) fn resource_uri(o: &OAuthConfig, host: &str, bound: SocketAddr) -> String {
    if let Some(r) = &o.resource {
        return r.clone();
    }
    let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_string() };
    format!("http://{host}:{}/mcp", bound.port())
}

/// The transport's OAuth options under `config`, for a listener bound at `bound`; None when
/// `[mcp.http.oauth]` is absent.
pub(crate) fn options(config: &Config, host: &str, bound: SocketAddr) -> Option<OAuthOptions> {
    let o = config.mcp.http.oauth.as_ref()?;
    let resource = resource_uri(o, host, bound);
    let audience = o.audience.clone().unwrap_or_else(|| resource.clone());
    tracing::info!(
        resource = %resource,
        issuer = %o.issuer,
        static_token = o.accept_static_token,
        "HTTP accepts OAuth access tokens"
    );
    Some(OAuthOptions {
        metadata: ResourceMetadata {
            resource,
            authorization_servers: vec![o.issuer.clone()],
            scopes_supported: vec![o.read_scope.clone(), o.act_scope.clone()],
            resource_name: Some("openhuman-mcp".to_string()),
        },
        verifier: Arc::new(Verifier(JwtVerifier::new(o, audience))),
        static_token: o.accept_static_token,
        required_scope: Some(o.read_scope.clone()),
    })
}

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
    fn the_default_resource_is_the_bound_endpoint() {
        let o = OAuthConfig { issuer: "https://as.example".into(), ..OAuthConfig::default() };
        let bound: SocketAddr = "127.0.0.1:43210".parse().unwrap();
        assert_eq!(resource_uri(&o, "127.0.0.1", bound), "http://127.0.0.1:43210/mcp");
        assert_eq!(resource_uri(&o, "::1", bound), "http://[::1]:43210/mcp");
        let set = OAuthConfig { resource: Some("https://mcp.example/mcp".into()), ..o };
        assert_eq!(resource_uri(&set, "127.0.0.1", bound), "https://mcp.example/mcp");
    }

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
