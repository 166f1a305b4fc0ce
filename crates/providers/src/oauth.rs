//! OAuth 2.1 access tokens for the HTTP transport: JWTs checked against the configured issuer's
//! published keys (`[mcp.http.oauth]`). A token is accepted only when its header names an
//! asymmetric algorithm we allow (RS/PS 256–512, ES256/ES384, EdDSA: never `none`, never HMAC),
//! a key of the issuer's JWKS with that id (and, when the key says, that algorithm) verifies its
//! signature, `exp` has not passed and `nbf` has come (30 s of leeway), `iss` is the configured
//! issuer and `aud` names this server (RFC 8707). The JWKS comes from `jwks_uri`, else from the
//! issuer's metadata (`/.well-known/oauth-authorization-server`, then
//! `/.well-known/openid-configuration`), fetched on the first token, kept for `KEYS_TTL`, and
//! fetched again early for a key id it lacks — at most `FETCHES` times in `FETCH_WINDOW`, so
//! forged key ids cannot make the daemon hammer the issuer. Nothing here logs or returns a token.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use openhuman_config::OAuthConfig;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::http::{self, Target};

/// How long fetched keys are used before they are fetched again.
const KEYS_TTL: Duration = Duration::from_secs(600);
/// At most `FETCHES` fetches of the keys in any `FETCH_WINDOW` (an unknown key id, a failure, or
/// the keys' age may each ask for one): a rotation is picked up at once, a flood of forged key
/// ids costs the issuer three requests a minute.
const FETCHES: usize = 3;
const FETCH_WINDOW: Duration = Duration::from_secs(60);
/// Clock skew allowed on `exp` and `nbf`, in seconds.
const LEEWAY_SECS: u64 = 30;
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Tokens longer than this are refused unread.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

const ALLOWED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// What an accepted token says about its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenClaims {
    pub issuer: String,
    pub subject: String,
    pub client_id: Option<String>,
    pub scopes: Vec<String>,
}

/// Why a token was not accepted. Texts say which check failed, never the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("{0}")]
    Invalid(String),
    /// The issuer's keys cannot be had now.
    #[error("{0}")]
    Unavailable(String),
}

/// The checker of one issuer's tokens for one audience; shared by every HTTP request.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    jwks_uri: Option<String>,
    keys: Mutex<KeyCache>,
}

#[derive(Default)]
struct KeyCache {
    /// Where the keys are, once known (configured or discovered).
    jwks_uri: Option<String>,
    keys: Vec<Key>,
    fetched: Option<Instant>,
    /// Recent fetch attempts, successful or not (the rate limit).
    tried: Vec<Instant>,
}

struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    key: DecodingKey,
    family: Family,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Rsa,
    Ec,
    Okp,
}

fn family_of(alg: Algorithm) -> Option<Family> {
    match alg {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => Some(Family::Rsa),
        Algorithm::ES256 | Algorithm::ES384 => Some(Family::Ec),
        Algorithm::EdDSA => Some(Family::Okp),
        _ => None,
    }
}

/// The claims read from a verified token (the spec claims are checked by `jsonwebtoken`).
#[derive(Deserialize)]
struct Raw {
    iss: String,
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    scope: Option<String>,
    scp: Option<Scp>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Scp {
    One(String),
    Many(Vec<String>),
}

impl JwtVerifier {
    /// A verifier of `config`'s issuer for `audience` (the resource URI unless the config names
    /// another). No network until the first token.
    pub fn new(config: &OAuthConfig, audience: String) -> JwtVerifier {
        JwtVerifier {
            issuer: config.issuer.clone(),
            audience,
            jwks_uri: config.jwks_uri.clone(),
            keys: Mutex::new(KeyCache::default()),
        }
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Checks `token` and returns what it says, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<TokenClaims, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Invalid(format!("the token is longer than {MAX_TOKEN_BYTES} bytes")));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
            ErrorKind::InvalidAlgorithmName | ErrorKind::Json(_) if token_alg_is(token, "none") => {
                TokenError::Invalid("unsigned tokens (alg none) are not accepted".to_string())
            }
            _ => TokenError::Invalid(format!("the token is not a well-formed signed JWT ({})", describe(e.kind()))),
        })?;
        let alg = header.alg;
        let family = family_of(alg).filter(|_| ALLOWED.contains(&alg)).ok_or_else(|| {
            TokenError::Invalid(format!("the token's algorithm {alg:?} is not accepted (only asymmetric signatures)"))
        })?;
        let kid = header.kid.as_deref();
        let key = self.key_for(kid, alg, family).await?;
        let mut v = Validation::new(alg);
        v.algorithms = vec![alg];
        v.leeway = LEEWAY_SECS;
        v.validate_nbf = true;
        v.validate_exp = true;
        v.set_issuer(&[&self.issuer]);
        v.set_audience(&[&self.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Raw>(token, &key, &v).map_err(|e| TokenError::Invalid(describe(e.kind())))?;
        let raw = data.claims;
        let client_id = raw.client_id.or(raw.azp);
        let subject = raw
            .sub
            .or_else(|| client_id.clone())
            .ok_or_else(|| TokenError::Invalid("the token names no subject (`sub`)".to_string()))?;
        let scopes = match (raw.scope, raw.scp) {
            (Some(s), _) => s.split_whitespace().map(str::to_string).collect(),
            (None, Some(Scp::One(s))) => s.split_whitespace().map(str::to_string).collect(),
            (None, Some(Scp::Many(list))) => list,
            (None, None) => Vec::new(),
        };
        Ok(TokenClaims { issuer: raw.iss, subject, client_id, scopes })
    }

    /// The key that should verify a token of `alg` with `kid`: from the cache, after fetching
    /// the keys when they are missing, stale, or lack that id (rate-limited).
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm, family: Family) -> Result<DecodingKey, TokenError> {
        let mut cache = self.keys.lock().await;
        let stale = cache.fetched.is_none_or(|t| t.elapsed() >= KEYS_TTL);
        cache.tried.retain(|t| t.elapsed() < FETCH_WINDOW);
        let may_fetch = cache.tried.len() < FETCHES;
        if stale && may_fetch {
            self.refresh(&mut cache).await?;
        } else if pick(&cache.keys, kid, alg, family).is_none() && may_fetch {
            // A key id we have not seen: the issuer may have rotated its keys.
            self.refresh(&mut cache).await?;
        }
        if cache.fetched.is_none() {
            return Err(TokenError::Unavailable(format!(
                "the signing keys of {} could not be fetched yet",
                http::host_of(&self.issuer)
            )));
        }
        pick(&cache.keys, kid, alg, family).map(|k| k.key.clone()).ok_or_else(|| {
            TokenError::Invalid(match kid {
                Some(_) => "no signing key of the issuer has the token's key id (`kid`) and algorithm".to_string(),
                None => "no signing key of the issuer fits the token's algorithm".to_string(),
            })
        })
    }

    /// Fetches the keys (discovering where they are first if need be). A failure keeps the
    /// keys held, which go on being used until a later fetch works.
    async fn refresh(&self, cache: &mut KeyCache) -> Result<(), TokenError> {
        cache.tried.push(Instant::now());
        let result = async {
            let uri = match (&self.jwks_uri, &cache.jwks_uri) {
                (Some(u), _) | (None, Some(u)) => u.clone(),
                (None, None) => {
                    let u = self.discover().await?;
                    cache.jwks_uri = Some(u.clone());
                    u
                }
            };
            let doc = fetch_json("the issuer's JWKS", &uri).await?;
            Ok::<_, TokenError>(parse_keys(&doc))
        }
        .await;
        match result {
            Ok(keys) => {
                tracing::info!(issuer = %http::host_of(&self.issuer), keys = keys.len(), "fetched the OAuth issuer's signing keys");
                cache.keys = keys;
                cache.fetched = Some(Instant::now());
                Ok(())
            }
            Err(e) if cache.fetched.is_some() => {
                tracing::warn!(error = %e, "cannot refresh the OAuth issuer's signing keys; keeping the ones held");
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot fetch the OAuth issuer's signing keys");
                Err(e)
            }
        }
    }

    /// `jwks_uri` from the issuer's metadata: RFC 8414's well-known URL, then OpenID Connect's.
    /// The metadata must name the configured issuer.
    async fn discover(&self) -> Result<String, TokenError> {
        let mut last = None;
        for url in metadata_urls(&self.issuer) {
            match fetch_json("the issuer's metadata", &url).await {
                Ok(doc) => {
                    if doc.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
                        return Err(TokenError::Unavailable(format!(
                            "the metadata at {} names another issuer than [mcp.http.oauth].issuer",
                            http::host_of(&url)
                        )));
                    }
                    return doc.get("jwks_uri").and_then(Value::as_str).map(str::to_string).ok_or_else(|| {
                        TokenError::Unavailable(
                            "the issuer's metadata has no jwks_uri; set [mcp.http.oauth].jwks_uri".to_string(),
                        )
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| TokenError::Unavailable("no metadata URL for the issuer".to_string())))
    }
}

/// RFC 8414 puts the well-known segment between the host and the issuer's path; OpenID Connect
/// appends it to the issuer. For an issuer without a path both give the host's well-known URLs.
fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let after_scheme = trimmed.find("://").map_or(0, |i| i + 3);
    let host_end = trimmed[after_scheme..].find('/').map_or(trimmed.len(), |i| after_scheme + i);
    let (origin, path) = trimmed.split_at(host_end);
    let mut urls = vec![format!("{origin}/.well-known/oauth-authorization-server{path}")];
    urls.push(format!("{trimmed}/.well-known/openid-configuration"));
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
    }
    urls
}

async fn fetch_json(what: &str, url: &str) -> Result<Value, TokenError> {
    let client = http::client(url, FETCH_TIMEOUT).map_err(|e| TokenError::Unavailable(e.message))?;
    let target = Target { service: what, url, secret: None };
    http::send_json(target, 1, || client.get(url).header("accept", "application/json"))
        .await
        .map_err(|e| TokenError::Unavailable(e.message))
}

/// The usable verification keys of a JWKS document: asymmetric keys meant for signatures, each
/// parsed alone so one key of a type we do not know leaves the others usable.
fn parse_keys(doc: &Value) -> Vec<Key> {
    let Some(list) = doc.get("keys").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
        .filter_map(|jwk| {
            let family = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => Family::Rsa,
                AlgorithmParameters::EllipticCurve(_) => Family::Ec,
                AlgorithmParameters::OctetKeyPair(_) => Family::Okp,
                // A shared secret is never a verification key here, nor a kind we do not know.
                _ => return None,
            };
            let alg = jwk.common.key_algorithm.and_then(|a| a.to_string().parse::<Algorithm>().ok());
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Key { kid: jwk.common.key_id.clone(), alg, key, family })
        })
        .collect()
}

/// The key for a token: same id (a token without one: any key), same family, and the same
/// algorithm when the key names one.
fn pick<'a>(keys: &'a [Key], kid: Option<&str>, alg: Algorithm, family: Family) -> Option<&'a Key> {
    keys.iter().find(|k| {
        k.family == family
            && k.alg.is_none_or(|a| a == alg)
            && match kid {
                Some(id) => k.kid.as_deref() == Some(id),
                None => true,
            }
    })
}

/// Whether the token's header says `alg` is `name` (read only to word the refusal).
fn token_alg_is(token: &str, name: &str) -> bool {
    use base64::Engine;
    let Some(head) = token.split('.').next() else { return false };
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(head.trim_end_matches('=')) else {
        return false;
    };
    serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|h| h.get("alg").and_then(Value::as_str).map(|a| a.eq_ignore_ascii_case(name)))
        .unwrap_or(false)
}

/// A check's failure in words.
fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".to_string(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_string(),
        ErrorKind::InvalidIssuer => "the token was issued by another issuer than [mcp.http.oauth].issuer".to_string(),
        ErrorKind::InvalidAudience => "the token's audience does not name this server".to_string(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_string(),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit the issuer's key".to_string(),
        ErrorKind::MissingRequiredClaim(c) => format!("the token lacks the `{c}` claim"),
        ErrorKind::InvalidClaimFormat(c) => format!("the token's `{c}` claim is malformed"),
        ErrorKind::Json(_) | ErrorKind::Utf8(_) | ErrorKind::Base64(_) | ErrorKind::InvalidToken => {
            "the token is malformed".to_string()
        }
        _ => "the token is not acceptable".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_both_specs() {
        assert_eq!(
            metadata_urls("https://as.example"),
            vec![
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example/tenant/"),
            vec![
                "https://as.example/.well-known/oauth-authorization-server/tenant",
                "https://as.example/tenant/.well-known/openid-configuration",
                "https://as.example/.well-known/openid-configuration/tenant"
            ]
        );
    }

    #[test]
    fn secrets_and_unknown_key_types_are_not_keys() {
        let doc = serde_json::json!({ "keys": [
            { "kty": "oct", "k": "c2VjcmV0", "kid": "h" },
            { "kty": "XYZ", "kid": "odd" },
            { "kty": "EC", "crv": "P-256", "kid": "e", "use": "sig",
              "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" }
        ]});
        let keys = parse_keys(&doc);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("e"));
        assert!(pick(&keys, Some("e"), Algorithm::ES256, Family::Ec).is_some());
        assert!(pick(&keys, Some("e"), Algorithm::RS256, Family::Rsa).is_none());
        assert!(pick(&keys, Some("h"), Algorithm::ES256, Family::Ec).is_none());
    }

    #[tokio::test]
    async fn none_and_hmac_are_refused_before_any_key_is_fetched() {
        use base64::Engine;
        let b64 = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let config = OAuthConfig { issuer: "http://127.0.0.1:9/".to_string(), ..OAuthConfig::default() };
        let v = JwtVerifier::new(&config, "http://127.0.0.1:1/mcp".to_string());
        let body = b64(r#"{"iss":"x","aud":"y","exp":9999999999}"#);
        let none = format!("{}.{body}.", b64(r#"{"alg":"none","typ":"JWT"}"#));
        let err = v.verify(&none).await.unwrap_err();
        assert!(matches!(&err, TokenError::Invalid(m) if m.contains("alg none")), "{err:?}");
        let hmac = format!("{}.{body}.c2ln", b64(r#"{"alg":"HS256","typ":"JWT"}"#));
        let err = v.verify(&hmac).await.unwrap_err();
        assert!(matches!(&err, TokenError::Invalid(m) if m.contains("not accepted")), "{err:?}");
        assert!(matches!(v.verify("garbage").await, Err(TokenError::Invalid(_))));
    }
}
