//! Brave Search's web API: `GET {base_url}/res/v1/web/search?q=..&count=N` with the key in
//! `X-Subscription-Token`; results are under `web.results`.

use serde_json::Value;

use super::{Endpoint, Hit};
use crate::{ProviderError, http};

pub const DEFAULT_BASE: &str = "https://api.search.brave.com";

pub async fn search(ep: &Endpoint, query: &str, max_results: usize) -> Result<Vec<Hit>, ProviderError> {
    let url = format!("{}/res/v1/web/search", ep.base_url);
    let client = http::client(&ep.base_url, ep.timeout)?;
    let key = ep.key.as_deref().unwrap_or_default();
    // Brave accepts at most 20 results per page.
    let params = [("q", query.to_string()), ("count", max_results.min(20).to_string())];
    let target = http::Target { service: "web search provider brave", url: &url, secret: ep.key.as_deref() };
    let v = http::send_json(target, 0, || {
        client.get(&url).query(&params).header("accept", "application/json").header("x-subscription-token", key)
    })
    .await?;
    let results = v.pointer("/web/results").and_then(Value::as_array).cloned().unwrap_or_default();
    Ok(results
        .iter()
        .filter_map(|r| {
            Some(Hit {
                title: r.get("title").and_then(Value::as_str).unwrap_or_default().to_string(),
                url: r.get("url").and_then(Value::as_str)?.to_string(),
                snippet: r.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
                engine: Some("brave".to_string()),
                score: None,
                published: r.get("age").and_then(Value::as_str).map(str::to_string),
                category: None,
            })
        })
        .take(max_results)
        .collect())
}
