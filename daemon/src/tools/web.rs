//! The web tools: `searxng_search` (listed when `[searxng].enabled`),
//! `web_search` (the provider chain; listed when a provider is usable) and `web_answer` (search,
//! then an LLM answer citing result URLs; listed when a provider and an LLM are usable).

use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};

use super::{Annotations, Policy, ToolDef, ToolFailure};
use openhuman_config::Config;
use openhuman_mcp::args::{ArgSpec, Field};
use openhuman_providers::llm::{self, Llm, grounded};
use openhuman_providers::search::{self, ProviderId, searxng};

const QUERY_CHARS: usize = 2048;

fn searxng_available(c: &Config) -> bool {
    c.searxng.enabled
}

fn web_answer_available(c: &Config) -> bool {
    search::web_search_available(c) && llm::configured(c)
}

/// Why a web tool is not listed under `config` (None when it is).
pub(crate) fn unavailable(name: &str, config: &Config) -> Option<String> {
    match name {
        "searxng_search" if !config.searxng.enabled => Some(
            "SearXNG is off: set [searxng].enabled = true (or OPENHUMAN_SEARXNG_ENABLED=true) and [searxng].base_url"
                .to_string(),
        ),
        "web_search" => search::web_search_usable(config).err().map(|e| e.to_string()),
        "web_answer" => {
            search::web_search_usable(config).err().or_else(|| llm::usable(config).err()).map(|e| e.to_string())
        }
        _ => None,
    }
}

fn results_schema() -> Value {
    json!({ "type": "array", "items": { "type": "object", "properties": {
        "title": { "type": "string" }, "url": { "type": "string" }, "snippet": { "type": "string" }
    }, "required": ["title", "url", "snippet"] } })
}

pub(crate) fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "searxng_search",
            title: "Search the web (SearXNG)",
            description: "Search the web through the user's own SearXNG instance. Returns ranked results \
                          (title, URL, snippet, engine) plus any instant answers and suggestions. `categories` \
                          narrows the search (web = general, news, images).",
            policy: Policy::Read,
            annotations: Annotations::WEB,
            args: ArgSpec::new(vec![
                Field::string("query", "What to search for.").required().max_chars(QUERY_CHARS),
                Field::list("categories", "SearXNG categories: web (same as general), general, news, images.", 4, 16)
                    .items_one_of(searxng::CATEGORIES),
                Field::string("language", "Result language, e.g. en or de-DE (default [searxng].default_language).")
                    .max_chars(32),
                Field::int("max_results", "How many results (default [searxng].max_results).", 1, 50),
            ]),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string" }, "instance": { "type": "string" },
                    "count": { "type": "integer" }, "results": results_schema()
                },
                "required": ["query", "instance", "count", "results"]
            })),
            available: searxng_available,
            handler: |state, args, _ctx| {
                async move {
                    let config = state.config();
                    let s = &config.searxng;
                    let query = args["query"].as_str().unwrap_or_default().trim().to_string();
                    let given: Vec<String> = args
                        .get("categories")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default();
                    let categories =
                        searxng::normalize_categories(&given).map_err(|e| ToolFailure::Tool(e.to_string()))?;
                    let language = args
                        .get("language")
                        .and_then(Value::as_str)
                        .map(|l| l.trim().to_string())
                        .unwrap_or_else(|| s.default_language.clone());
                    let max_results = args.get("max_results").and_then(Value::as_u64).unwrap_or(s.max_results as u64);
                    let q = searxng::Query {
                        base_url: &s.base_url,
                        query: &query,
                        categories: &categories,
                        language: Some(language.as_str()).filter(|l| !l.is_empty()),
                        max_results: max_results as usize,
                        timeout: Duration::from_secs(s.timeout_seconds.max(1)),
                    };
                    let (hits, extra) = searxng::search(&q).await.map_err(|e| ToolFailure::Tool(e.to_string()))?;
                    let results: Vec<Value> = hits.iter().map(search::Hit::to_json).collect();
                    Ok(json!({
                        "query": query, "instance": s.base_url, "categories": categories, "language": language,
                        "count": results.len(), "results": results,
                        "answers": extra["answers"], "suggestions": extra["suggestions"],
                    }))
                }
                .boxed()
            },
        },
        ToolDef {
            name: "web_search",
            title: "Search the web",
            description: "Ranked web results (title, URL, snippet) from the configured search providers, tried in \
                          order (SearXNG, Brave, Tavily) with fallback when one fails; `provider` pins one.",
            policy: Policy::Read,
            annotations: Annotations::WEB,
            args: ArgSpec::new(vec![
                Field::string("query", "What to search for.").required().max_chars(QUERY_CHARS),
                Field::int("max_results", "How many results (default 10).", 1, 20).default_int(10),
                Field::one_of("provider", "Use only this provider (no fallback).", ProviderId::NAMES),
            ]),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string" }, "provider": { "type": "string" },
                    "count": { "type": "integer" }, "results": results_schema(),
                    "fallbacks": { "type": "array", "items": { "type": "object" } }
                },
                "required": ["query", "provider", "count", "results"]
            })),
            available: search::web_search_available,
            handler: |state, args, _ctx| {
                async move {
                    let config = state.config();
                    let query = args["query"].as_str().unwrap_or_default().trim().to_string();
                    let max = args["max_results"].as_u64().unwrap_or(10) as usize;
                    let pinned = args.get("provider").and_then(Value::as_str).and_then(ProviderId::parse);
                    let r = search::web_search(&config, &query, max, pinned)
                        .await
                        .map_err(|e| ToolFailure::Tool(e.to_string()))?;
                    let results: Vec<Value> = r.hits.iter().map(search::Hit::to_json).collect();
                    Ok(json!({
                        "query": query, "provider": r.provider.name(), "count": results.len(), "results": results,
                        "fallbacks": fallbacks(&r.failed),
                    }))
                }
                .boxed()
            },
        },
        ToolDef {
            name: "web_answer",
            title: "Answer from the web",
            description: "Searches the web, then has the configured LLM write an answer grounded only in the \
                          results, citing them by URL. `depth`: quick (a few sentences from 5 results, default) or \
                          deep (a fuller answer from 10). Sends progress when asked.",
            policy: Policy::Read,
            annotations: Annotations::WEB,
            args: ArgSpec::new(vec![
                Field::string("query", "The question.").required().max_chars(QUERY_CHARS),
                Field::one_of("depth", "quick (default) or deep.", &["quick", "deep"]),
            ]),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string" }, "answer": { "type": "string" }, "depth": { "type": "string" },
                    "provider": { "type": "string" },
                    "citations": { "type": "array", "items": { "type": "object", "properties": {
                        "url": { "type": "string" }, "title": { "type": "string" } }, "required": ["url"] } },
                    "results": results_schema()
                },
                "required": ["query", "answer", "citations", "results"]
            })),
            available: web_answer_available,
            handler: |state, args, ctx| {
                async move {
                    let config = state.config();
                    let query = args["query"].as_str().unwrap_or_default().trim().to_string();
                    let deep = args.get("depth").and_then(Value::as_str) == Some("deep");
                    let llm = Llm::from_config(&config).map_err(|e| ToolFailure::Tool(e.to_string()))?;
                    ctx.progress(1.0, Some(3.0), Some("searching the web")).await;
                    let max = if deep { 10 } else { 5 };
                    let r = search::web_search(&config, &query, max, None)
                        .await
                        .map_err(|e| ToolFailure::Tool(e.to_string()))?;
                    if r.hits.is_empty() {
                        return Err(ToolFailure::Tool(format!(
                            "web search ({}) found nothing for {query:?}; try other words",
                            r.provider.name()
                        )));
                    }
                    ctx.progress(2.0, Some(3.0), Some(&format!("asking {}", llm.label()))).await;
                    let sources: Vec<grounded::Source> = r
                        .hits
                        .iter()
                        .map(|h| grounded::Source {
                            cite: h.url.clone(),
                            label: h.title.clone(),
                            text: h.snippet.clone(),
                        })
                        .collect();
                    let style = if deep { grounded::Style::WebDeep } else { grounded::Style::WebQuick };
                    let answer = grounded::answer(&llm, style, &query, &sources)
                        .await
                        .map_err(|e| ToolFailure::Tool(e.to_string()))?;
                    let citations: Vec<Value> = grounded::cited(&answer, &sources)
                        .into_iter()
                        .map(|s| json!({ "url": s.cite, "title": s.label }))
                        .collect();
                    ctx.progress(3.0, Some(3.0), Some("answered")).await;
                    let results: Vec<Value> = r.hits.iter().map(search::Hit::to_json).collect();
                    Ok(json!({
                        "query": query, "depth": if deep { "deep" } else { "quick" }, "answer": answer,
                        "citations": citations, "provider": r.provider.name(), "model": llm.label(),
                        "results": results, "fallbacks": fallbacks(&r.failed),
                    }))
                }
                .boxed()
            },
        },
    ]
}

fn fallbacks(failed: &[(ProviderId, String)]) -> Value {
    failed.iter().map(|(p, e)| json!({ "provider": p.name(), "error": e })).collect()
}
