//! A SearXNG instance's JSON API: `GET {base_url}/search?q=..&format=json&categories=..&language=..`.
//! Instances answer 403 when `json` is missing from `search.formats` in their settings, which is
//! the usual first-run problem, so that status gets its own hint.

use std::time::Duration;

use serde_json::{Value, json};

use super::Hit;
use crate::{ProviderError, http};

/// Categories accepted by `searxng_search`; `web` is SearXNG's `general`.
pub const CATEGORIES: &[&str] = &["web", "general", "news", "images"];

pub struct Query<'a> {
    pub base_url: &'a str,
    pub query: &'a str,
    /// Already normalised (see `normalize_categories`); empty = the instance's default.
    pub categories: &'a [String],
    pub language: Option<&'a str>,
    pub max_results: usize,
    pub timeout: Duration,
}

/// `web` → `general`, duplicates removed in first-seen order; anything else is an error.
pub fn normalize_categories(given: &[String]) -> Result<Vec<String>, ProviderError> {
    let mut out: Vec<String> = Vec::new();
    for c in given {
        let c = match c.trim().to_ascii_lowercase().as_str() {
            "web" | "general" => "general".to_string(),
            "news" => "news".to_string(),
            "images" => "images".to_string(),
            other => {
                return Err(ProviderError::InvalidInput(format!(
                    "unknown category {other:?}; use web, general, news or images"
                )));
            }
        };
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

/// Runs a search; the result carries the hits plus the instance's answers and suggestions.
pub async fn search(q: &Query<'_>) -> Result<(Vec<Hit>, Value), ProviderError> {
    let base = q.base_url.trim_end_matches('/');
    let url = format!("{base}/search");
    let service = format!("SearXNG ({base})");
    let client = http::client(base, q.timeout)?;
    let mut params: Vec<(&str, String)> = vec![("q", q.query.to_string()), ("format", "json".to_string())];
    if !q.categories.is_empty() {
        params.push(("categories", q.categories.join(",")));
    }
    if let Some(lang) = q.language {
        params.push(("language", lang.to_string()));
    }
    let target = http::Target { service: &service, url: &url, secret: None };
    let v = http::send_json(target, 0, || client.get(&url).query(&params).header("accept", "application/json"))
        .await
        .map_err(|mut e| {
        if e.status == Some(403) {
            e.message.push_str(
                ". SearXNG refuses JSON unless `json` is listed under `search.formats` in the instance's \
                     settings.yml",
            );
        }
        e
    })?;
    let results = v.get("results").and_then(Value::as_array).ok_or_else(|| {
        ProviderError::BadReply(format!(
            "{service} answered JSON without a `results` array; is [searxng].base_url a SearXNG instance?"
        ))
    })?;
    let hits = results
        .iter()
        .filter_map(|r| {
            let url = r.get("url").and_then(Value::as_str)?;
            Some(Hit {
                title: r.get("title").and_then(Value::as_str).unwrap_or_default().to_string(),
                url: url.to_string(),
                snippet: r.get("content").and_then(Value::as_str).unwrap_or_default().to_string(),
                engine: r.get("engine").and_then(Value::as_str).map(str::to_string),
                score: r.get("score").and_then(Value::as_f64),
                published: r.get("publishedDate").and_then(Value::as_str).map(str::to_string),
                category: r.get("category").and_then(Value::as_str).map(str::to_string),
            })
        })
        .take(q.max_results)
        .collect();
    let extra = json!({
        "answers": v.get("answers").cloned().unwrap_or(json!([])),
        "suggestions": v.get("suggestions").cloned().unwrap_or(json!([])),
    });
    Ok((hits, extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_normalised_and_checked() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(normalize_categories(&s(&["web", "news", "general", "WEB"])).unwrap(), s(&["general", "news"]));
        assert!(normalize_categories(&s(&["videos"])).unwrap_err().to_string().contains("videos"));
    }
}
