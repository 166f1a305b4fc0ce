//! Everything the daemon asks of the outside world over HTTP: LLM providers, web search
//! providers, HTTP embedders and the OAuth issuer's keys. Each is built from the config and
//! reports, without touching the network, whether it is usable and which key to set when it is
//! not. Map:
//!
//! - `http`    the one outbound HTTP setup: reqwest + rustls, retries on 429/5xx, bounded bodies,
//!   errors naming service, host and status with credentials redacted
//! - `llm/`    OpenAI-compatible and Anthropic chat with native tool calling; `grounded` answers
//!   composed only from given sources
//! - `search/` SearXNG, Brave and Tavily, and the provider chain
//! - `oauth`   OAuth access tokens for the HTTP transport: JWTs checked against the configured
//!   issuer's keys (fetched, cached, refetched for an unknown key id)
//! - `embed`   Ollama and OpenAI-compatible embedders behind the memory engine's `Embedder` trait
//! - `error`   `ProviderError`, the one error type of this crate

pub mod embed;
mod error;
pub mod http;
pub mod llm;
pub mod oauth;
pub mod search;

pub use error::ProviderError;
