//! Tavily's search API: `POST {base_url}/search` with `Authorization: Bearer <key>` and a JSON
//! body `{query, max_results, search_depth}`; results carry `title`, `url`, `content`, `score`.

use serde_json::{Value, json};

use super::{Endpoint, Hit};
use crate::{ProviderError, http};

pub const DEFAULT_BASE: &str = "https://api.tavily.com";

pub async fn search(ep: &Endpoint, query: &str, max_results: usize) -> Result<Vec<Hit>, ProviderError> {
    let url = format!("{}/search", ep.base_url);
    let client = http::client(&ep.base_url, ep.timeout)?;
    let key = ep.key.as_deref().unwrap_or_default();
    let body = json!({ "query": query, "max_results": max_results, "search_depth": "basic" });
    let target = http::Target { service: "web search provider tavily", url: &url, secret: ep.key.as_deref() };
    let v = http::send_json(target, 0, || client.post(&url).bearer_auth(key).json(&body)).await?;
    let results = v.get("results").and_then(Value::as_array).cloned().unwrap_or_default();
    Ok(results
        .iter()
        .filter_map(|r| {
            Some(Hit {
                title: r.get("title").and_then(Value::as_str).unwrap_or_default().to_string(),
                url: r.get("url").and_then(Value::as_str)?.to_string(),
                snippet: r.get("content").and_then(Value::as_str).unwrap_or_default().to_string(),
                engine: Some("tavily".to_string()),
                score: r.get("score").and_then(Value::as_f64),
                published: r.get("published_date").and_then(Value::as_str).map(str::to_string),
                category: None,
            })
        })
        .take(max_results)
        .collect())
}
