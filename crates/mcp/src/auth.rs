//! The protocol crate's side of OAuth 2.1 for HTTP, as a resource server: who a verified access
//! token names (`AuthInfo`, handed to the app on `RequestCtx::auth`), the hook that verifies a
//! token (`TokenVerifier`: this crate knows no JWT, key or issuer; the daemon implements it), the
//! protected-resource metadata the HTTP transport serves (RFC 9728), the `WWW-Authenticate`
//! challenges it sends, and the typed refusal of a call whose token lacks a scope, which the HTTP
//! transport answers with 403 `insufficient_scope`.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::protocol::RpcError;

/// The caller an OAuth access token names, after the verifier accepted it. The static bearer
/// token, the socket and stdio name no one: their requests carry no `AuthInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthInfo {
    /// The token's `iss`.
    pub issuer: String,
    /// The token's `sub`: the user (or, for a client-credentials token, the client).
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id`, else `azp`), when the token says.
    pub client_id: Option<String>,
    /// The granted scopes (`scope`, space-separated, or `scp`), in the token's order.
    pub scopes: Vec<String>,
}

impl AuthInfo {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// Whether `other` names the same caller (issuer, subject and client; scopes may differ,
    /// as they do after a step-up): an HTTP session stays with the caller that opened it.
    pub fn same_caller(&self, other: &AuthInfo) -> bool {
        self.issuer == other.issuer && self.subject == other.subject && self.client_id == other.client_id
    }
}

/// Why a presented token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRejection {
    /// Expired, not yet valid, foreign issuer or audience, bad signature, malformed: 401
    /// `invalid_token`. The text says which check failed and never quotes the token.
    Invalid(String),
    /// The token could not be checked now (the issuer's keys cannot be fetched): 503, so a
    /// client retries rather than throwing its token away.
    Unavailable(String),
}

/// Verifies access tokens. Implemented above the protocol crate (it needs HTTP to the issuer, a
/// key cache and a JWT library); the HTTP transport calls it for every bearer token that is not
/// the static one.
pub trait TokenVerifier: Send + Sync + 'static {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenRejection>>;
}

/// This server's OAuth protected-resource metadata (RFC 9728), as served at
/// `/.well-known/oauth-protected-resource` and the path-suffixed form for the MCP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// This server's resource URI: the MCP endpoint's public URL, which tokens must name as
    /// their audience (RFC 8707).
    pub resource: String,
    /// Issuers whose tokens are accepted.
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub resource_name: Option<String>,
}

impl ResourceMetadata {
    pub fn to_json(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": self.scopes_supported,
            "bearer_methods_supported": ["header"],
        });
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        doc
    }

    /// The resource's path (`/mcp` for `https://host/mcp`), or "" for a resource at the root.
    pub fn resource_path(&self) -> &str {
        let after_scheme = self.resource.split_once("://").map_or(self.resource.as_str(), |(_, rest)| rest);
        let path = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
        let path = path.split(['?', '#']).next().unwrap_or_default();
        path.trim_end_matches('/')
    }

    /// The metadata's URL as clients are told it in `WWW-Authenticate` (RFC 9728: the
    /// well-known segment between the resource's host and its path).
    pub fn metadata_url(&self) -> String {
        let after_scheme = self.resource.find("://").map_or(0, |i| i + 3);
        let host_end = self.resource[after_scheme..].find('/').map_or(self.resource.len(), |i| after_scheme + i);
        format!("{}{WELL_KNOWN}{}", &self.resource[..host_end], self.resource_path())
    }
}

/// The well-known path of protected-resource metadata.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What the HTTP transport needs to act as an OAuth resource server.
#[derive(Clone)]
pub struct OAuthOptions {
    pub metadata: ResourceMetadata,
    pub verifier: Arc<dyn TokenVerifier>,
    /// Whether the static bearer token is accepted beside OAuth tokens (when one is configured).
    pub static_token: bool,
    /// The scope every OAuth request needs at all (403 `insufficient_scope` without it); what
    /// a single call needs beyond it the app decides ([`insufficient_scope`]).
    pub required_scope: Option<String>,
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("metadata", &self.metadata)
            .field("static_token", &self.static_token)
            .field("required_scope", &self.required_scope)
            .finish_non_exhaustive()
    }
}

/// Where a scope refusal keeps the scope it asks for, in the error's `data`.
const REQUIRED_SCOPE: &str = "requiredScope";

/// The refusal of a call whose token lacks `scope`: a -32602 like the other policy refusals,
/// which the HTTP transport answers with 403 and `WWW-Authenticate: Bearer
/// error="insufficient_scope", scope="…"`, so the client can ask its user for that scope.
pub fn insufficient_scope(message: impl Into<String>, scope: &str, mut data: Value) -> RpcError {
    if !data.is_object() {
        data = json!({});
    }
    data["error"] = json!("insufficient_scope");
    data[REQUIRED_SCOPE] = json!(scope);
    RpcError::invalid_params(message).with_data(data)
}

/// The scope a refusal made by [`insufficient_scope`] asks for.
pub fn required_scope(error: &RpcError) -> Option<&str> {
    let data = error.data.as_ref()?;
    if data.get("error").and_then(Value::as_str) != Some("insufficient_scope") {
        return None;
    }
    data.get(REQUIRED_SCOPE).and_then(Value::as_str)
}

/// A quoted-string parameter of a `WWW-Authenticate` challenge: quotes and backslashes escaped,
/// control characters dropped, anything beyond ASCII as `?` (a header value that is not visible
/// ASCII would be refused, and the whole challenge with it).
pub(crate) fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars().filter(|c| !c.is_control()) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(if c.is_ascii() { c } else { '?' });
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(resource: &str) -> ResourceMetadata {
        ResourceMetadata {
            resource: resource.to_string(),
            authorization_servers: vec!["https://as.example".to_string()],
            scopes_supported: vec!["r".to_string(), "a".to_string()],
            resource_name: None,
        }
    }

    #[test]
    fn the_metadata_url_puts_the_well_known_segment_before_the_path() {
        assert_eq!(
            meta("https://mcp.example/mcp").metadata_url(),
            "https://mcp.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            meta("https://t.example:8443/a/mcp/").metadata_url(),
            "https://t.example:8443/.well-known/oauth-protected-resource/a/mcp"
        );
        assert_eq!(
            meta("https://mcp.example").metadata_url(),
            "https://mcp.example/.well-known/oauth-protected-resource"
        );
        assert_eq!(meta("http://127.0.0.1:9300/mcp").resource_path(), "/mcp");
    }

    #[test]
    fn the_document_names_what_rfc_9728_asks() {
        let doc = meta("https://mcp.example/mcp").to_json();
        assert_eq!(doc["resource"], "https://mcp.example/mcp");
        assert_eq!(doc["authorization_servers"][0], "https://as.example");
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["scopes_supported"], json!(["r", "a"]));
    }

    #[test]
    fn a_scope_refusal_carries_its_scope() {
        let e = insufficient_scope("needs act", "a", json!({ "tool": "memory.store" }));
        assert_eq!(required_scope(&e), Some("a"));
        assert_eq!(e.data.as_ref().unwrap()["tool"], "memory.store");
        assert_eq!(required_scope(&RpcError::invalid_params("x")), None);
        assert_eq!(quoted("a\"b\\c\n"), "\"a\\\"b\\\\c\"");
        assert_eq!(quoted("d\u{e9}j\u{e0}"), "\"d?j?\"");
    }

    #[test]
    fn the_same_caller_ignores_scopes() {
        let a = AuthInfo { issuer: "i".into(), subject: "s".into(), client_id: Some("c".into()), scopes: vec![] };
        let b = AuthInfo { scopes: vec!["x".into()], ..a.clone() };
        assert!(a.same_caller(&b));
        assert!(!a.same_caller(&AuthInfo { subject: "t".into(), ..a.clone() }));
    }
}
