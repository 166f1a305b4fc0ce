//! Web search: the SearXNG JSON API behind `searxng_search`, and the provider chain
//! behind `web_search` / `web_answer` — `[search.providers.{searxng,brave,tavily}]`, tried in that
//! order with fallback on failure unless the caller pins one. Which providers are usable is
//! decided from config and the environment alone, so tool listing never touches the network.

mod brave;
pub mod searxng;
mod tavily;

use std::time::Duration;

use serde_json::{Value, json};

use openhuman_config::{Config, SearchProviderConfig};

use crate::ProviderError;

/// Timeout for Brave and Tavily calls (SearXNG uses `[searxng].timeout_seconds`).
const HOSTED_TIMEOUT: Duration = Duration::from_secs(20);

/// One web result, whichever provider found it.
#[derive(Debug, Clone)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
    pub engine: Option<String>,
    pub score: Option<f64>,
    pub published: Option<String>,
    pub category: Option<String>,
}

impl Hit {
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "title": self.title, "url": self.url, "snippet": self.snippet });
        for (k, x) in [("engine", &self.engine), ("published", &self.published), ("category", &self.category)] {
            if let Some(x) = x {
                v[k] = json!(x);
            }
        }
        if let Some(s) = self.score {
            v["score"] = json!(s);
        }
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderId {
    Searxng,
    Brave,
    Tavily,
}

impl ProviderId {
    /// The fallback order.
    pub const ALL: [ProviderId; 3] = [ProviderId::Searxng, ProviderId::Brave, ProviderId::Tavily];
    pub const NAMES: &'static [&'static str] = &["searxng", "brave", "tavily"];

    pub fn name(self) -> &'static str {
        match self {
            ProviderId::Searxng => "searxng",
            ProviderId::Brave => "brave",
            ProviderId::Tavily => "tavily",
        }
    }

    pub fn parse(s: &str) -> Option<ProviderId> {
        ProviderId::ALL.into_iter().find(|p| p.name() == s)
    }

    fn config(self, c: &Config) -> &SearchProviderConfig {
        match self {
            ProviderId::Searxng => &c.search.providers.searxng,
            ProviderId::Brave => &c.search.providers.brave,
            ProviderId::Tavily => &c.search.providers.tavily,
        }
    }
}

/// Where and how to call one provider.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base_url: String,
    pub key: Option<String>,
    pub timeout: Duration,
}

/// A provider's endpoint, or why it is unusable (naming the key to set).
pub fn endpoint(config: &Config, id: ProviderId) -> Result<Endpoint, ProviderError> {
    endpoint_text(config, id).map_err(ProviderError::NotConfigured)
}

fn endpoint_text(config: &Config, id: ProviderId) -> Result<Endpoint, String> {
    let p = id.config(config);
    let name = id.name();
    if !p.enabled {
        return Err(format!("web search provider {name} is off: set [search.providers.{name}].enabled = true"));
    }
    if let Some(route) = p.route.as_deref().filter(|r| *r != "direct") {
        return Err(format!(
            "[search.providers.{name}].route = {route:?} is not supported by this daemon; use \"direct\" or remove it"
        ));
    }
    let key = match &p.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            _ if id == ProviderId::Searxng => None,
            _ => {
                return Err(format!(
                    "[search.providers.{name}].api_key_env names {var}, which is not set in the daemon's environment"
                ));
            }
        },
        None => None,
    };
    let (base, timeout) = match id {
        ProviderId::Searxng => (
            p.base_url.clone().unwrap_or_else(|| config.searxng.base_url.clone()),
            Duration::from_secs(config.searxng.timeout_seconds.max(1)),
        ),
        ProviderId::Brave => (p.base_url.clone().unwrap_or_else(|| brave::DEFAULT_BASE.to_string()), HOSTED_TIMEOUT),
        ProviderId::Tavily => (p.base_url.clone().unwrap_or_else(|| tavily::DEFAULT_BASE.to_string()), HOSTED_TIMEOUT),
    };
    if id != ProviderId::Searxng && key.is_none() {
        return Err(format!(
            "web search provider {name} needs an API key: set [search.providers.{name}].api_key_env to the name of \
             the environment variable holding it"
        ));
    }
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(format!("[search.providers.{name}].base_url must be an http:// or https:// URL"));
    }
    Ok(Endpoint { base_url: base.trim_end_matches('/').to_string(), key, timeout })
}

/// Whether `web_search` has at least one usable provider, and if not, what to set.
pub fn web_search_usable(config: &Config) -> Result<(), ProviderError> {
    if ProviderId::ALL.iter().any(|p| endpoint(config, *p).is_ok()) {
        return Ok(());
    }
    Err(ProviderError::NotConfigured(
        "no web search provider is usable: set [search.providers.searxng].enabled = true (with base_url, or \
         [searxng].base_url), or enable [search.providers.brave] / [search.providers.tavily] with api_key_env"
            .to_string(),
    ))
}

pub fn web_search_available(config: &Config) -> bool {
    web_search_usable(config).is_ok()
}

/// The outcome of a chain search: who answered, what, and who failed before.
pub struct WebResults {
    pub provider: ProviderId,
    pub hits: Vec<Hit>,
    /// Providers tried before the one that answered, with their errors.
    pub failed: Vec<(ProviderId, String)>,
}

/// Searches with the first provider that answers; `pinned` uses that one only.
pub async fn web_search(
    config: &Config,
    query: &str,
    max_results: usize,
    pinned: Option<ProviderId>,
) -> Result<WebResults, ProviderError> {
    let order: Vec<ProviderId> = match pinned {
        Some(p) => vec![p],
        None => ProviderId::ALL.to_vec(),
    };
    let mut failed = Vec::new();
    for id in order {
        let ep = match endpoint(config, id) {
            Ok(ep) => ep,
            Err(e) if pinned.is_some() => return Err(e),
            Err(_) => continue,
        };
        let outcome = match id {
            ProviderId::Searxng => searxng::search(&searxng::Query {
                base_url: &ep.base_url,
                query,
                categories: &[],
                language: None,
                max_results,
                timeout: ep.timeout,
            })
            .await
            .map(|(hits, _)| hits),
            ProviderId::Brave => brave::search(&ep, query, max_results).await,
            ProviderId::Tavily => tavily::search(&ep, query, max_results).await,
        };
        match outcome {
            Ok(hits) => return Ok(WebResults { provider: id, hits, failed }),
            Err(e) => {
                tracing::warn!(provider = id.name(), error = %e, "web search provider failed; trying the next");
                failed.push((id, e.to_string()));
            }
        }
    }
    if failed.is_empty() {
        return Err(web_search_usable(config)
            .err()
            .unwrap_or_else(|| ProviderError::NotConfigured("no web search provider answered".into())));
    }
    let all: Vec<String> = failed.iter().map(|(p, e)| format!("{}: {e}", p.name())).collect();
    Err(ProviderError::Http(crate::http::HttpError {
        status: None,
        message: format!("every web search provider failed — {}", all.join("; ")),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_usability_names_keys() {
        let c = Config::default();
        assert!(web_search_usable(&c).unwrap_err().to_string().contains("[search.providers.searxng].enabled"));
        let mut c = Config::default();
        c.search.providers.searxng.enabled = true;
        let ep = endpoint(&c, ProviderId::Searxng).unwrap();
        assert_eq!(ep.base_url, c.searxng.base_url);
        c.search.providers.brave.enabled = true;
        assert!(endpoint(&c, ProviderId::Brave).unwrap_err().to_string().contains("api_key_env"));
        c.search.providers.tavily.enabled = true;
        c.search.providers.tavily.api_key_env = Some("OPENHUMAN_TEST_SURELY_UNSET_VAR".into());
        assert!(endpoint(&c, ProviderId::Tavily).unwrap_err().to_string().contains("OPENHUMAN_TEST_SURELY_UNSET_VAR"));
    }
}
