//! Outbound HTTP shared by the LLM providers, web search and the HTTP embedders: one client setup
//! (rustls with the `ring` provider, installed once per process), bounded response bodies,
//! retries with exponential backoff on 429 and 5xx that honour `Retry-After`, and error texts that
//! name the service, the URL's host and the status with a short reason — never an API key.

use std::sync::Once;
use std::time::Duration;

use openhuman_common::redact;
use reqwest::{RequestBuilder, StatusCode, Url};
use serde_json::Value;

/// Largest response body read from any provider; a bigger one is an error, not an OOM.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// First backoff delay; doubled per retry.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(8);
/// A `Retry-After` longer than this is not waited out: the caller gets the error instead.
const RETRY_AFTER_MAX: Duration = Duration::from_secs(60);
/// Longest provider reason quoted in an error.
const REASON_CHARS: usize = 240;

/// Installs the process-wide rustls crypto provider (reqwest is built without one).
fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means another part of the process installed one first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An HTTP client with a total per-request timeout. Loopback URLs never go through a proxy: a
/// local model or search server must be reached directly.
pub fn client(url: &str, timeout: Duration) -> Result<reqwest::Client, HttpError> {
    install_crypto();
    let mut b = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("openhuman-mcp/", env!("CARGO_PKG_VERSION")));
    if is_loopback(url) {
        b = b.no_proxy();
    }
    b.build().map_err(|e| HttpError { status: None, message: format!("cannot set up an HTTP client: {e}") })
}

fn is_loopback(url: &str) -> bool {
    Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| openhuman_common::is_loopback_host(&h))
}

/// `host[:port]` of a URL, for error messages (paths and queries may carry secrets).
pub fn host_of(url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => "an unparseable URL".to_string(),
        },
        Err(_) => "an unparseable URL".to_string(),
    }
}

/// Who is being called, for error texts, and what must never appear in them.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// e.g. "LLM provider openai" or "SearXNG".
    pub service: &'a str,
    pub url: &'a str,
    /// The API key, redacted from any quoted reason.
    pub secret: Option<&'a str>,
}

/// A failed call. `retryable` statuses were already retried when this is returned.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct HttpError {
    pub status: Option<u16>,
    pub message: String,
}

/// Sends the request `build` makes, retrying 429 and 5xx up to `max_retries` times, and returns
/// the body of the first 2xx answer. `build` is called once per attempt.
pub async fn send(
    target: Target<'_>,
    max_retries: u32,
    build: impl Fn() -> RequestBuilder,
) -> Result<(StatusCode, Vec<u8>), HttpError> {
    let host = host_of(target.url);
    let mut attempt = 0u32;
    loop {
        let resp = match build().send().await {
            Ok(r) => r,
            Err(e) => return Err(transport_error(&target, &host, &e)),
        };
        let status = resp.status();
        let retry_after = resp.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::trim);
        let retry_after = retry_after.and_then(|v| v.parse::<f64>().ok()).filter(|s| s.is_finite() && *s >= 0.0);
        let body = read_body(resp).await.map_err(|e| transport_error(&target, &host, &e))?;
        if status.is_success() {
            return Ok((status, body));
        }
        let retryable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
        if retryable && attempt < max_retries {
            let wait = match retry_after {
                Some(secs) => Duration::from_secs_f64(secs),
                None => BACKOFF_BASE.saturating_mul(1 << attempt.min(16)).min(BACKOFF_MAX),
            };
            if wait <= RETRY_AFTER_MAX {
                attempt += 1;
                tracing::info!(
                    service = target.service, host = %host, status = status.as_u16(), attempt,
                    wait_ms = wait.as_millis() as u64, "retrying after a transient HTTP error"
                );
                tokio::time::sleep(wait).await;
                continue;
            }
        }
        let reason = redact(&reason_of(&body, status), target.secret);
        let tries = if attempt > 0 { format!(" (after {} attempts)", attempt + 1) } else { String::new() };
        return Err(HttpError {
            status: Some(status.as_u16()),
            message: format!("{} at {host} answered HTTP {}{tries}: {reason}", target.service, status.as_u16()),
        });
    }
}

/// Like `send`, then parses the body as JSON.
pub async fn send_json(
    target: Target<'_>,
    max_retries: u32,
    build: impl Fn() -> RequestBuilder,
) -> Result<Value, HttpError> {
    let (status, body) = send(target, max_retries, build).await?;
    serde_json::from_slice(&body).map_err(|e| HttpError {
        status: Some(status.as_u16()),
        message: format!(
            "{} at {} answered HTTP {} with a body that is not JSON ({e}): {}",
            target.service,
            host_of(target.url),
            status.as_u16(),
            redact(&excerpt(&String::from_utf8_lossy(&body)), target.secret)
        ),
    })
}

async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() + chunk.len() > MAX_BODY {
            // Keep what fits: the caller reports a parse failure rather than buffering more.
            out.extend_from_slice(&chunk[..MAX_BODY - out.len()]);
            break;
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

fn transport_error(target: &Target<'_>, host: &str, e: &reqwest::Error) -> HttpError {
    let what = if e.is_timeout() {
        "did not answer in time (timeout)".to_string()
    } else if e.is_connect() {
        format!("could not be reached ({})", root_cause(e))
    } else {
        format!("failed: {}", root_cause(e))
    };
    HttpError { status: None, message: redact(&format!("{} at {host} {what}", target.service), target.secret) }
}

/// The innermost error's text (reqwest's own Display repeats the URL).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// A short reason from an error body: the provider's own message when it sent JSON.
fn reason_of(body: &[u8], status: StatusCode) -> String {
    let text = String::from_utf8_lossy(body);
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let candidates = [
            v.pointer("/error/message"),
            v.get("error").filter(|e| e.is_string()),
            v.get("message"),
            v.get("detail").filter(|e| e.is_string()),
        ];
        if let Some(msg) = candidates.into_iter().flatten().find_map(Value::as_str) {
            return excerpt(msg);
        }
    }
    let t = text.trim();
    if t.is_empty() { status.canonical_reason().unwrap_or("no reason given").to_string() } else { excerpt(t) }
}

/// At most `REASON_CHARS` characters on one line.
pub fn excerpt(s: &str) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= REASON_CHARS {
        return one_line;
    }
    let cut: String = one_line.chars().take(REASON_CHARS).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_come_from_provider_json_and_keys_are_redacted() {
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-test-0123456789abcdef","type":"x"}}"#;
        let r = redact(&reason_of(body, StatusCode::UNAUTHORIZED), Some("sk-test-0123456789abcdef"));
        assert_eq!(r, "Incorrect API key provided: [redacted]");
        assert_eq!(reason_of(b"", StatusCode::BAD_GATEWAY), "Bad Gateway");
        assert_eq!(reason_of(br#"{"error":"overloaded"}"#, StatusCode::SERVICE_UNAVAILABLE), "overloaded");
        assert!(excerpt(&"x".repeat(1000)).chars().count() <= REASON_CHARS + 1);
    }

    #[test]
    fn hosts_and_loopback() {
        assert_eq!(host_of("http://127.0.0.1:8080/v1/chat?key=x"), "127.0.0.1:8080");
        assert_eq!(host_of("https://api.openai.com/v1"), "api.openai.com");
        assert!(is_loopback("http://localhost:11434"));
        assert!(is_loopback("http://127.0.0.1:1/x"));
        assert!(!is_loopback("https://api.anthropic.com"));
    }
}
