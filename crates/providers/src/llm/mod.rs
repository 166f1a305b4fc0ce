//! LLM providers: any OpenAI-compatible chat-completions endpoint and Anthropic's
//! messages API, behind one small conversation model with native tool calling. Streaming is off.
//! Keys come from the environment variable `[llm].api_key_env` names, read when a client is made;
//! they never sit in config and never appear in errors. Map:
//!
//! - `openai`    `POST {base_url}/chat/completions`
//! - `anthropic` `POST {base_url}/v1/messages`
//! - `grounded`  answers composed only from given sources (recall answers, `web_answer`)

mod anthropic;
pub mod grounded;
mod openai;

use std::time::Duration;

use serde_json::Value;

use crate::{ProviderError, http};

use openhuman_config::{Config, LlmConfig, LlmProvider};

pub const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_DEFAULT_BASE: &str = "https://api.anthropic.com";
/// Output budget per reply (Anthropic requires one; OpenAI-compatible servers get none).
const MAX_OUTPUT_TOKENS: u32 = 4096;

/// One turn of a conversation. The system prompt travels separately (`Request::system`).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User(String),
    /// The model's earlier reply: its text and the tools it asked for.
    Assistant {
        text: String,
        calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answered by id.
    Tool {
        call_id: String,
        content: String,
        is_error: bool,
    },
}

/// A tool the model asked to call. `arguments` is what the model sent: normally an object; a
/// string when the model produced text that is not JSON (the caller reports that back).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// A tool offered to the model. `name` must match `^[A-Za-z0-9_-]{1,64}$` for both APIs.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

pub struct Request<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// Offer the tools (the history may refer to them) but ask for a text answer now.
    pub forbid_tools: bool,
}

/// The model's reply: final text when `calls` is empty.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<ToolCall>,
}

/// Whether an LLM is usable under `config`, and if not, what to set.
pub fn usable(config: &Config) -> Result<(), ProviderError> {
    settings(&config.llm).map(|_| ())
}

pub fn configured(config: &Config) -> bool {
    usable(config).is_ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LlmApi {
    OpenAi,
    Anthropic,
}

struct Settings {
    kind: LlmApi,
    base_url: String,
    model: String,
    key: Option<String>,
}

fn settings(c: &LlmConfig) -> Result<Settings, ProviderError> {
    settings_text(c).map_err(ProviderError::NotConfigured)
}

fn settings_text(c: &LlmConfig) -> Result<Settings, String> {
    let kind = match c.provider {
        LlmProvider::None => {
            return Err("no LLM is configured: set [llm].provider (\"openai\" for any OpenAI-compatible endpoint, \
                        or \"anthropic\"), [llm].model and, for hosted APIs, [llm].api_key_env"
                .to_string());
        }
        LlmProvider::Openai => LlmApi::OpenAi,
        LlmProvider::Anthropic => LlmApi::Anthropic,
    };
    let name = provider_name(kind);
    let model = match c.model.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => return Err(format!("[llm].provider is {name} but [llm].model is not set: set it to the model to use")),
    };
    let default_base = if kind == LlmApi::OpenAi { OPENAI_DEFAULT_BASE } else { ANTHROPIC_DEFAULT_BASE };
    let base_url = c.base_url.as_deref().unwrap_or(default_base).trim_end_matches('/').to_string();
    let key = match &c.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            _ => {
                return Err(format!(
                    "[llm].api_key_env names the environment variable {var}, which is not set in the daemon's \
                     environment: export it where the daemon starts (or point api_key_env elsewhere)"
                ));
            }
        },
        None => None,
    };
    // Hosted APIs always want a key; self-hosted OpenAI-compatible servers usually do not.
    let hosted = kind == LlmApi::Anthropic || base_url == OPENAI_DEFAULT_BASE;
    if hosted && key.is_none() {
        return Err(format!(
            "[llm].provider is {name} at {} but [llm].api_key_env is not set: set it to the name of the \
             environment variable holding the API key",
            http::host_of(&base_url)
        ));
    }
    Ok(Settings { kind, base_url, model, key })
}

fn provider_name(kind: LlmApi) -> &'static str {
    match kind {
        LlmApi::OpenAi => "openai",
        LlmApi::Anthropic => "anthropic",
    }
}

/// A configured LLM client.
pub struct Llm {
    kind: LlmApi,
    base_url: String,
    model: String,
    key: Option<String>,
    max_retries: u32,
    service: String,
    http: reqwest::Client,
}

impl Llm {
    /// A client for `[llm]`, or the reason there is none (naming the key to set).
    pub fn from_config(config: &Config) -> Result<Llm, ProviderError> {
        let s = settings(&config.llm)?;
        let timeout = Duration::from_secs(config.llm.timeout_secs.max(1));
        let http = http::client(&s.base_url, timeout)?;
        Ok(Llm {
            kind: s.kind,
            service: format!("LLM provider {}", provider_name(s.kind)),
            base_url: s.base_url,
            model: s.model,
            key: s.key,
            max_retries: config.llm.max_retries,
            http,
        })
    }

    /// `provider/model`, for logs and results.
    pub fn label(&self) -> String {
        format!("{}/{}", provider_name(self.kind), self.model)
    }

    /// One completion. Errors name the provider, host and status with a short reason.
    pub async fn complete(&self, req: &Request<'_>) -> Result<Reply, ProviderError> {
        match self.kind {
            LlmApi::OpenAi => openai::complete(self, req).await,
            LlmApi::Anthropic => anthropic::complete(self, req).await,
        }
    }

    fn target<'a>(&'a self, url: &'a str) -> http::Target<'a> {
        http::Target { service: &self.service, url, secret: self.key.as_deref() }
    }
}

/// A reply's shape was not what the API documents: say so without dumping the body.
fn bad_reply(llm: &Llm, what: &str) -> ProviderError {
    ProviderError::BadReply(format!("{} at {} sent a reply without {what}", llm.service, http::host_of(&llm.base_url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usable_text(config: &Config) -> Result<(), String> {
        usable(config).map_err(|e| e.to_string())
    }

    fn cfg(text: &str) -> Config {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn usability_names_the_key_to_set() {
        let e = usable_text(&Config::default()).unwrap_err();
        assert!(e.contains("[llm].provider"), "{e}");
        let e = usable_text(&cfg("[llm]\nprovider = \"openai\"\n")).unwrap_err();
        assert!(e.contains("[llm].model"), "{e}");
        let e = usable_text(&cfg("[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\n")).unwrap_err();
        assert!(e.contains("[llm].api_key_env"), "{e}");
        let e = usable_text(&cfg(
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_env = \"OPENHUMAN_TEST_SURELY_UNSET_VAR\"\n",
        ))
        .unwrap_err();
        assert!(e.contains("OPENHUMAN_TEST_SURELY_UNSET_VAR"), "{e}");
        // A self-hosted OpenAI-compatible server needs no key.
        usable(&cfg("[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n"))
            .unwrap();
    }
}
