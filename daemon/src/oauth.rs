//! The HTTP transport as an OAuth 2.1 resource server (`[mcp.http.oauth]`): the protocol
//! crate's `TokenVerifier` hook implemented with `openhuman_providers::oauth::JwtVerifier`
//! (JWTs checked against the issuer's keys) and the protected-resource metadata built from the
//! config and the address bound. The read scope is the way in: every OAuth request needs it (the
//! transport answers 403 `insufficient_scope` without it); what a tool needs beyond it is
//! `tools::scope`'s. Access tokens go nowhere downstream: no provider call, subagent or log ever
//! sees one.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use openhuman_config::{Config, OAuthConfig};
use openhuman_mcp::auth::{AuthInfo, OAuthOptions, ResourceMetadata, TokenRejection, TokenVerifier};
use openhuman_providers::oauth::{JwtVerifier, TokenError};

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
}
