//! Agents, LLM providers, web search and HTTP embedders against scripted fake servers on
//! loopback: each fake records the exact requests the daemon sends (path, headers, model, tools,
//! messages, tool results) and the tests check what the daemon makes of answers, errors, 429s,
//! timeouts and cancellation, plus policy, truthful dispatchability and config-driven listing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openhuman_tests::fake::{Reply, Request, Server};
use openhuman_tests::{Daemon, Home, Peer, rpc_error, tool_err_text, tool_ok, tool_text};
use serde_json::{Value, json};

const LLM_KEY: &str = "sk-test-OPENHUMANfakeLLMkey0123456789";
const BRAVE_KEY: &str = "brave-test-key-0123456789";
const TAVILY_KEY: &str = "tvly-test-key-0123456789";
const EMBED_KEY: &str = "sk-test-OPENHUMANfakeEMBEDkey012345";
const LIGHTHOUSE: &str = "The lighthouse keeper on Fenwick Island is Ada Marsh; she rings the fog bell at dusk.";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![("OH_TEST_LLM_KEY", LLM_KEY), ("OH_TEST_BRAVE_KEY", BRAVE_KEY), ("OH_TEST_TAVILY_KEY", TAVILY_KEY)]
}

fn openai_llm(url: &str, extra: &str) -> String {
    format!(
        "[llm]\nprovider = \"openai\"\nbase_url = \"{url}/v1\"\nmodel = \"test-model\"\napi_key_env = \"OH_TEST_LLM_KEY\"\n{extra}\n"
    )
}

fn connect(home: &Home) -> Peer {
    let mut p = Peer::socket(&home.socket());
    p.initialize("Agent Tests");
    p
}

/// Stores the lighthouse note and returns its chunk id.
fn store_lighthouse(p: &mut Peer) -> String {
    let r = p.tool("memory.store", json!({"title": "Fenwick lighthouse", "content": LIGHTHOUSE}));
    tool_ok(&r);
    let hits = p.tool("memory.search", json!({"query": "lighthouse keeper"}));
    tool_ok(&hits)["hits"][0]["chunk_id"].as_str().expect("stored note is searchable").to_string()
}

fn agent_prompt(p: &mut Peer, id: &str) -> String {
    let r = p.call("resources/read", json!({"uri": format!("openhuman://prompts/agents/{id}")}));
    r["contents"][0]["text"].as_str().unwrap().to_string()
}

fn openai_tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model", "choices": [{
        "index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}]})
}

fn openai_text(text: &str) -> Value {
    json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "test-model", "choices": [{
        "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]})
}

/// What a subagent may call, as `core.list_tools` answers it (once as structured content, once as
/// text), and whether `core.tool_instructions` documents `tool`.
fn agent_catalog(p: &mut Peer, tool: &str) -> (Vec<String>, bool) {
    let r = p.tool("core.list_tools", json!({}));
    let text: Value = serde_json::from_str(tool_text(&r)).unwrap();
    assert_eq!(text, r["structuredContent"], "the text block is the structured content");
    let names = tool_names_offered(&r["structuredContent"], "/name");
    let md = p.tool("core.tool_instructions", json!({}))["structuredContent"]["markdown"].as_str().unwrap().to_string();
    (names, md.contains(&format!("`{tool}`")))
}

fn tool_names_offered(body: &Value, key: &str) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools offered: {body}"))
        .iter()
        .map(|t| t.pointer(key).and_then(Value::as_str).unwrap().to_string())
        .collect()
}

fn run_subagent(p: &mut Peer, agent: &str, prompt: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": "agent.run_subagent", "arguments": {"agent_id": agent, "prompt": prompt}});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    let r = p.request("tools/call", params);
    assert!(r.get("error").is_none(), "run_subagent failed at protocol level: {r}");
    r["result"].clone()
}

#[test]
fn openai_subagent_calls_memory_search_in_its_loop_and_answers() {
    let home = Home::new();
    let llm = Server::scripted(vec![
        Reply::ok(openai_tool_call("call_1", "memory_search", json!({"query": "lighthouse keeper"}))),
        Reply::ok(openai_text("Ada Marsh keeps the Fenwick lighthouse.")),
    ]);
    home.write_config(&openai_llm(&llm.url(), ""));
    let _d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);
    let chunk_id = store_lighthouse(&mut p);
    let system = agent_prompt(&mut p, "planner");
    let prompt = "Who keeps the lighthouse on Fenwick Island?";

    let r = run_subagent(&mut p, "planner", prompt, Some("run-1"));
    let sc = tool_ok(&r).clone();
    assert_eq!(tool_text(&r), "Ada Marsh keeps the Fenwick lighthouse.", "answer leads the content: {r}");
    assert_eq!(sc["agent_id"], "planner");
    assert_eq!(sc["response"], "Ada Marsh keeps the Fenwick lighthouse.");
    assert_eq!(
        sc["steps"],
        json!([{"tool": "memory.search", "arguments": {"query": "lighthouse keeper"}, "ok": true}])
    );
    let session = sc["session"].as_str().unwrap();
    let uuid = session.strip_prefix("mcp:planner:").unwrap_or_else(|| panic!("session tag {session}"));
    assert_eq!(uuid.len(), 36, "{session}");

    // First request: endpoint, auth, model, system = the agent's resource text, user = prompt,
    // and exactly the planner's declared read tools under API-safe names.
    let first = llm.next_request();
    assert_eq!((first.method.as_str(), first.path()), ("POST", "/v1/chat/completions"));
    assert_eq!(first.header("authorization"), Some(format!("Bearer {LLM_KEY}").as_str()));
    assert!(first.header("content-type").unwrap().starts_with("application/json"));
    let b = first.json();
    assert_eq!(b["model"], "test-model");
    assert_eq!(b["stream"], false);
    assert_eq!(b["messages"], json!([{"role": "system", "content": system}, {"role": "user", "content": prompt}]));
    assert_eq!(tool_names_offered(&b, "/function/name"), ["memory_search", "memory_recall", "tree_read_chunk"]);
    for t in b["tools"].as_array().unwrap() {
        assert_eq!(t["type"], "function");
        assert_eq!(t["function"]["parameters"]["type"], "object", "{t}");
        assert_eq!(t["function"]["parameters"]["additionalProperties"], false, "{t}");
    }
    assert!(b.get("tool_choice").is_none(), "round 1 may call tools: {b}");

    // Second request: the history plus the tool call and its result, which holds the chunk.
    let second = llm.next_request();
    let b = second.json();
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 4, "{b}");
    assert_eq!(
        m[2],
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "memory_search", "arguments": "{\"query\":\"lighthouse keeper\"}"}}]})
    );
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_call_id"], "call_1");
    let result: Value = serde_json::from_str(m[3]["content"].as_str().unwrap()).expect("tool result is JSON");
    assert_eq!(result["hits"][0]["chunk_id"], chunk_id.as_str(), "{result}");

    // Progress per step, with the caller's token, increasing.
    let progress: Vec<&Value> =
        p.notifications.iter().filter(|n| n["method"] == "notifications/progress").map(|n| &n["params"]).collect();
    assert!(progress.len() >= 3, "round 1, the tool, round 2: {progress:?}");
    assert!(progress.iter().all(|n| n["progressToken"] == "run-1"));
    let values: Vec<f64> = progress.iter().map(|n| n["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");
    assert!(progress.iter().any(|n| n["message"].as_str().unwrap_or_default().contains("memory.search")));
}

#[test]
fn anthropic_subagent_uses_tool_use_and_tool_result_blocks() {
    let home = Home::new();
    let llm = Server::scripted(vec![
        Reply::ok(json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "stop_reason": "tool_use", "content": [
                {"type": "text", "text": "Let me look that up."},
                {"type": "tool_use", "id": "toolu_1", "name": "memory_search", "input": {"query": "fog bell"}}]})),
        Reply::ok(json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
            "stop_reason": "end_turn", "content": [{"type": "text", "text": "Ada rings it at dusk."}]})),
    ]);
    home.write_config(&format!(
        "[llm]\nprovider = \"anthropic\"\nbase_url = \"{}\"\nmodel = \"claude-test\"\napi_key_env = \"OH_TEST_LLM_KEY\"\n",
        llm.url()
    ));
    let _d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);
    let chunk_id = store_lighthouse(&mut p);
    let system = agent_prompt(&mut p, "critic");

    let r = run_subagent(&mut p, "critic", "When is the fog bell rung?", None);
    let sc = tool_ok(&r);
    assert_eq!(sc["response"], "Ada rings it at dusk.");
    assert_eq!(sc["steps"][0]["tool"], "memory.search");
    assert!(p.notifications.iter().all(|n| n["method"] != "notifications/progress"), "no token, no progress");

    let first = llm.next_request();
    assert_eq!((first.method.as_str(), first.path()), ("POST", "/v1/messages"));
    assert_eq!(first.header("x-api-key"), Some(LLM_KEY));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.header("authorization"), None);
    let b = first.json();
    assert_eq!(b["model"], "claude-test");
    assert_eq!(b["max_tokens"], 4096);
    assert_eq!(b["system"], system.as_str());
    assert_eq!(b["messages"], json!([{"role": "user", "content": "When is the fog bell rung?"}]));
    assert_eq!(tool_names_offered(&b, "/name"), ["memory_search", "memory_recall", "tree_read_chunk"]);
    assert!(b["tools"].as_array().unwrap().iter().all(|t| t["input_schema"]["type"] == "object"));

    let b = llm.next_request().json();
    let m = b["messages"].as_array().unwrap();
    assert_eq!(
        m[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me look that up."},
            {"type": "tool_use", "id": "toolu_1", "name": "memory_search", "input": {"query": "fog bell"}}]})
    );
    assert_eq!(m[2]["role"], "user");
    let block = &m[2]["content"][0];
    assert_eq!((block["type"].as_str(), block["tool_use_id"].as_str()), (Some("tool_result"), Some("toolu_1")));
    assert_eq!(block["is_error"], false);
    assert!(block["content"].as_str().unwrap().contains(&chunk_id), "{block}");
}

#[test]
fn llm_errors_name_provider_host_and_status_retry_429_and_5xx_and_time_out() {
    let home = Home::new();
    let script: Arc<Mutex<Vec<Reply>>> = Arc::new(Mutex::new(Vec::new()));
    let s = script.clone();
    let llm = Server::start(move |_| {
        let mut q = s.lock().unwrap();
        if q.is_empty() { Reply::Json(500, json!({"error": {"message": "script empty"}})) } else { q.remove(0) }
    });
    home.write_config(&openai_llm(&llm.url(), "max_retries = 1\ntimeout_secs = 2"));
    let _d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);
    let host = llm.addr.to_string();
    let set = |replies: Vec<Reply>| *script.lock().unwrap() = replies;

    // 429 with Retry-After: waited out, then the answer.
    set(vec![
        Reply::json_with(429, &[("Retry-After", "1")], json!({"error": {"message": "slow down"}})),
        Reply::ok(openai_text("after the wait")),
    ]);
    let started = Instant::now();
    let r = run_subagent(&mut p, "planner", "hi", None);
    assert_eq!(tool_ok(&r)["response"], "after the wait");
    // A lower bound only: the retry cannot come before the wait the server asked for.
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After honoured");
    llm.next_request();
    llm.next_request();

    // 5xx: retried max_retries times, then an error naming provider, host and status.
    set(vec![
        Reply::Json(503, json!({"error": {"message": "overloaded"}})),
        Reply::Json(500, json!({"error": {"message": "boom"}})),
    ]);
    let e = tool_err_text(&run_subagent(&mut p, "planner", "hi", None));
    assert!(e.contains("LLM provider openai") && e.contains(&host), "{e}");
    assert!(e.contains("HTTP 500") && e.contains("boom") && e.contains("2 attempts"), "{e}");
    llm.next_request();
    llm.next_request();

    // 4xx: not retried; the key the provider echoes is redacted.
    set(vec![Reply::Json(401, json!({"error": {"message": format!("Incorrect API key provided: {LLM_KEY}")}}))]);
    let e = tool_err_text(&run_subagent(&mut p, "planner", "hi", None));
    assert!(e.contains("HTTP 401") && e.contains("Incorrect API key") && !e.contains(LLM_KEY), "{e}");
    llm.next_request();
    assert!(llm.try_request(Duration::from_millis(300)).is_none(), "a 401 is not retried");

    // A reply without choices is reported, not a crash.
    set(vec![Reply::ok(json!({"object": "chat.completion"}))]);
    let e = tool_err_text(&run_subagent(&mut p, "planner", "hi", None));
    assert!(e.contains("choices[0].message"), "{e}");
    llm.next_request();

    // No answer within [llm].timeout_secs: a timeout error, and the connection is dropped.
    set(vec![Reply::Hang]);
    let e = tool_err_text(&run_subagent(&mut p, "planner", "hi", None));
    assert!(e.contains("timeout") && e.contains(&host), "{e}");
    llm.wait_hangup();
}

#[test]
fn cancelling_a_run_closes_the_upstream_request() {
    let home = Home::new();
    let llm = Server::scripted(vec![Reply::Hang]);
    home.write_config(&openai_llm(&llm.url(), "timeout_secs = 120"));
    let _d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);
    let id = p.start(
        "tools/call",
        json!({"name": "agent.run_subagent", "arguments": {"agent_id": "planner", "prompt": "take your time"}}),
    );
    llm.next_request();
    p.notify("notifications/cancelled", json!({"requestId": id, "reason": "user pressed stop"}));
    llm.wait_hangup();
    // The session goes on, and the cancelled request never gets a reply (`wait` would panic on it).
    assert_eq!(p.call("ping", json!({})), json!({}));
    assert!(p.call("tools/list", json!({}))["tools"].is_array());
}

#[test]
fn readonly_policy_refuses_run_subagent_before_any_llm_call() {
    let home = Home::new();
    let llm = Server::scripted(vec![Reply::ok(openai_text("must not be asked"))]);
    home.write_config(&format!("[autonomy]\nlevel = \"readonly\"\n{}", openai_llm(&llm.url(), "")));
    let _d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);
    let r = p.request(
        "tools/call",
        json!({"name": "agent.run_subagent", "arguments": {"agent_id": "planner", "prompt": "hi"}}),
    );
    let (code, message) = rpc_error(&r);
    assert_eq!(code, -32602, "{r}");
    assert!(message.starts_with("[policy-blocked]"), "{r}");
    assert!(llm.try_request(Duration::from_millis(300)).is_none());
}

fn dispatch(p: &mut Peer) -> Vec<(String, bool, String)> {
    let r = p.tool("agent.list_subagents", json!({}));
    tool_ok(&r)["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["id"].as_str().unwrap().to_string(),
                a["dispatchable_over_mcp"].as_bool().unwrap(),
                a["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn find<'a>(d: &'a [(String, bool, String)], id: &str) -> &'a (String, bool, String) {
    d.iter().find(|a| a.0 == id).unwrap_or_else(|| panic!("agent {id} missing"))
}

#[test]
fn list_subagents_is_truthful_and_tools_follow_config_reloads() {
    let home = Home::new();
    let llm = Server::start(|_| Reply::ok(openai_text("fine")));
    let searx = Server::start(|_| Reply::ok(json!({"results": []})));
    let d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);

    // No LLM: nothing is dispatchable, run_subagent and the web tools are not listed.
    let names = p.tool_names();
    for t in ["agent.run_subagent", "web_search", "web_answer", "searxng_search"] {
        assert!(!names.contains(&t.to_string()), "{t} listed without its backend");
    }
    for (id, ok, why) in dispatch(&mut p) {
        assert!(!ok, "{id} dispatchable without an LLM");
        let want = if id == "integrations" { "toolkit" } else { "[llm].provider" };
        assert!(why.contains(want), "{id}: {why}");
    }
    let r = p.request(
        "tools/call",
        json!({"name": "agent.run_subagent", "arguments": {"agent_id": "planner", "prompt": "hi"}}),
    );
    let (code, message) = rpc_error(&r);
    assert_eq!(code, -32602, "unlisted tool: {r}");
    assert!(message.contains("[llm].provider"), "names the key: {r}");
    let r = p.request("tools/call", json!({"name": "web_search", "arguments": {"query": "x"}}));
    assert!(rpc_error(&r).1.contains("[search.providers.searxng].enabled"), "{r}");

    // An LLM: memory agents become dispatchable; web agents name the search key; the session is told.
    home.write_config(&openai_llm(&llm.url(), ""));
    assert!(d.reload().contains("tools_changed=true"));
    let n = p.lines.next_json();
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    let names = p.tool_names();
    assert!(names.contains(&"agent.run_subagent".to_string()) && !names.contains(&"web_search".to_string()));
    let ds = dispatch(&mut p);
    assert!(find(&ds, "planner").1);
    let researcher = find(&ds, "researcher");
    assert!(!researcher.1 && researcher.2.contains("[search.providers.searxng].enabled"), "{researcher:?}");
    let integrations = find(&ds, "integrations");
    assert!(!integrations.1 && integrations.2.contains("toolkit"), "{integrations:?}");
    let e = tool_err_text(&run_subagent(&mut p, "researcher", "news?", None));
    assert!(e.contains("researcher") && e.contains("web search"), "{e}");
    let e = tool_err_text(&run_subagent(&mut p, "integrations", "sync my calendar", None));
    assert!(e.contains("toolkit"), "{e}");
    let e = tool_err_text(&run_subagent(&mut p, "nobody", "hi", None));
    assert!(e.contains("unknown agent `nobody`") && e.contains("planner"), "{e}");
    let e = tool_err_text(&p.tool("agent.run_subagent", json!({"agent_id": "planner", "prompt": "  "})));
    assert!(e.contains("`prompt` must not be blank"), "{e}");
    let e = tool_err_text(&p.tool("agent.run_subagent", json!({"agent_id": "planner"})));
    assert!(e.contains("missing required argument `prompt`"), "{e}");

    // A search provider too: web agents are dispatchable, web tools listed.
    home.write_config(&format!(
        "{}[search.providers.searxng]\nenabled = true\nbase_url = \"{}\"\n",
        openai_llm(&llm.url(), ""),
        searx.url()
    ));
    assert!(d.reload().contains("tools_changed=true"));
    assert_eq!(p.lines.next_json()["method"], "notifications/tools/list_changed");
    let names = p.tool_names();
    assert!(names.contains(&"web_search".to_string()) && names.contains(&"web_answer".to_string()));
    assert!(!names.contains(&"searxng_search".to_string()), "needs [searxng].enabled");
    let ds = dispatch(&mut p);
    assert!(find(&ds, "researcher").1 && find(&ds, "fact_checker").1 && !find(&ds, "integrations").1);
    let tools = p.call("tools/list", json!({}))["tools"].clone();
    let run = tools.as_array().unwrap().iter().find(|t| t["name"] == "agent.run_subagent").unwrap();
    assert_eq!(
        run["annotations"],
        json!({"title": "Run a subagent", "readOnlyHint": false, "destructiveHint": true,
               "idempotentHint": false, "openWorldHint": true})
    );
    let web = tools.as_array().unwrap().iter().find(|t| t["name"] == "web_search").unwrap();
    assert_eq!(
        (web["annotations"]["readOnlyHint"].as_bool(), web["annotations"]["openWorldHint"].as_bool()),
        (Some(true), Some(true))
    );
}

#[test]
fn searxng_search_is_listed_only_when_enabled_and_speaks_the_json_api() {
    let home = Home::new();
    let seen_403 = Arc::new(AtomicBool::new(false));
    let flag = seen_403.clone();
    let searx = Server::start(move |req: &Request| {
        let q = req.param("q").unwrap_or_default();
        match q.as_str() {
            "forbidden" => {
                flag.store(true, Ordering::SeqCst);
                Reply::text(403, "text/html", "<html>403 Forbidden</html>")
            }
            "html" => Reply::text(200, "text/html", "<html>not json</html>"),
            _ => Reply::ok(json!({
                "query": q, "number_of_results": 5,
                "results": (1..=5).map(|i| json!({"url": format!("https://r{i}.example/"), "title": format!("Result {i}"),
                    "content": format!("snippet {i}"), "engine": "duckduckgo", "score": 1.0 / i as f64,
                    "category": "general"})).collect::<Vec<_>>(),
                "answers": ["42"], "suggestions": ["rust tokio"], "unresponsive_engines": []
            })),
        }
    });
    let d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);
    assert!(!p.tool_names().contains(&"searxng_search".to_string()));
    // Twice: the second answer comes from the daemon's per-config result cache.
    for _ in 0..2 {
        let (catalog, documented) = agent_catalog(&mut p, "searxng_search");
        assert!(catalog.contains(&"memory.search".to_string()) && !catalog.contains(&"searxng_search".to_string()));
        assert!(!documented);
    }

    home.write_config(&format!("[searxng]\nenabled = true\nbase_url = \"{}\"\nmax_results = 3\n", searx.url()));
    assert!(d.reload().contains("tools_changed=true"));
    assert_eq!(p.lines.next_json()["method"], "notifications/tools/list_changed");
    assert!(p.tool_names().contains(&"searxng_search".to_string()));
    // The agent catalog follows the reload too.
    let (catalog, documented) = agent_catalog(&mut p, "searxng_search");
    assert!(catalog.contains(&"searxng_search".to_string()) && documented, "{catalog:?}");

    let r = p.tool(
        "searxng_search",
        json!({"query": "rust async", "categories": ["web", "news", "web"], "language": "de", "max_results": 2}),
    );
    let sc = tool_ok(&r);
    assert_eq!(sc["count"], 2);
    assert_eq!(
        sc["results"][0],
        json!({"title": "Result 1", "url": "https://r1.example/", "snippet": "snippet 1",
        "engine": "duckduckgo", "category": "general", "score": 1.0})
    );
    assert_eq!(sc["answers"], json!(["42"]));
    let req = searx.next_request();
    assert_eq!((req.method.as_str(), req.path()), ("GET", "/search"));
    let q = req.query();
    let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("q"), Some("rust async"));
    assert_eq!(get("format"), Some("json"));
    assert_eq!(get("categories"), Some("general,news"), "web → general, duplicates removed");
    assert_eq!(get("language"), Some("de"));

    // Defaults: [searxng].default_language and .max_results; no categories sent.
    let r = p.tool("searxng_search", json!({"query": "defaults"}));
    assert_eq!(tool_ok(&r)["count"], 3);
    let req = searx.next_request();
    assert_eq!(req.param("language").as_deref(), Some("en"));
    assert_eq!(req.param("categories"), None);

    // Bad arguments are rejected, not clamped.
    let e = tool_err_text(&p.tool("searxng_search", json!({"query": "x", "categories": ["videos"]})));
    assert!(e.contains("categories[0]") && e.contains("videos"), "{e}");
    let e = tool_err_text(&p.tool("searxng_search", json!({"query": "x", "max_results": 51})));
    assert!(e.contains("max_results") && e.contains("50"), "{e}");

    // HTTP errors and non-JSON bodies name the instance and the status.
    let e = tool_err_text(&p.tool("searxng_search", json!({"query": "forbidden"})));
    assert!(e.contains(&searx.url()) && e.contains("HTTP 403") && e.contains("search.formats"), "{e}");
    assert!(seen_403.load(Ordering::SeqCst));
    let e = tool_err_text(&p.tool("searxng_search", json!({"query": "html"})));
    assert!(e.contains(&searx.url()) && e.contains("HTTP 200") && e.contains("not JSON"), "{e}");

    // Switched off again: unlisted, and calling it is a protocol error naming the tool.
    home.write_config("");
    assert!(d.reload().contains("tools_changed=true"));
    assert_eq!(p.lines.next_json()["method"], "notifications/tools/list_changed");
    let r = p.request("tools/call", json!({"name": "searxng_search", "arguments": {"query": "x"}}));
    let (_, msg) = rpc_error(&r);
    assert!(msg.contains("not available under the current configuration") && msg.contains("[searxng].enabled"), "{r}");
}

#[test]
fn web_search_falls_back_across_providers_and_web_answer_cites_urls() {
    let home = Home::new();
    let searx = Server::start(|_| Reply::Json(500, json!({"error": "searx down"})));
    let brave = Server::start(|_| {
        Reply::ok(json!({"type": "search", "web": {"results": [
            {"title": "Rust 1.0 announced", "url": "https://blog.example/rust-1-0", "description": "Rust 1.0 shipped in May 2015."},
            {"title": "Rust history", "url": "https://wiki.example/rust", "description": "Rust began at Mozilla."}]}}))
    });
    let tavily = Server::start(|_| {
        Reply::ok(json!({"query": "q", "results": [
            {"title": "T1", "url": "https://t.example/1", "content": "tavily says", "score": 0.9}]}))
    });
    let llm =
        Server::start(|_| Reply::ok(openai_text("Rust 1.0 shipped in May 2015 [https://blog.example/rust-1-0].")));
    home.write_config(&format!(
        "{}[search.providers.searxng]\nenabled = true\nbase_url = \"{}\"\n\
         [search.providers.brave]\nenabled = true\nbase_url = \"{}\"\napi_key_env = \"OH_TEST_BRAVE_KEY\"\n\
         [search.providers.tavily]\nenabled = true\nbase_url = \"{}\"\napi_key_env = \"OH_TEST_TAVILY_KEY\"\n",
        openai_llm(&llm.url(), ""),
        searx.url(),
        brave.url(),
        tavily.url()
    ));
    let _d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);

    let r = p.tool("web_search", json!({"query": "when did rust 1.0 ship"}));
    let sc = tool_ok(&r);
    assert_eq!(sc["provider"], "brave");
    assert_eq!(sc["count"], 2);
    assert_eq!(sc["results"][0]["url"], "https://blog.example/rust-1-0");
    assert_eq!(sc["fallbacks"][0]["provider"], "searxng");
    assert!(sc["fallbacks"][0]["error"].as_str().unwrap().contains("HTTP 500"), "{sc}");
    let s = searx.next_request();
    assert_eq!((s.path(), s.param("format").as_deref()), ("/search", Some("json")));
    let b = brave.next_request();
    assert_eq!((b.method.as_str(), b.path()), ("GET", "/res/v1/web/search"));
    assert_eq!(b.param("q").as_deref(), Some("when did rust 1.0 ship"));
    assert_eq!(b.param("count").as_deref(), Some("10"));
    assert_eq!(b.header("x-subscription-token"), Some(BRAVE_KEY));

    // Pinned: only that provider, no fallback.
    let r = p.tool("web_search", json!({"query": "tokio", "provider": "tavily", "max_results": 3}));
    assert_eq!(tool_ok(&r)["provider"], "tavily");
    let t = tavily.next_request();
    assert_eq!((t.method.as_str(), t.path()), ("POST", "/search"));
    assert_eq!(t.header("authorization"), Some(format!("Bearer {TAVILY_KEY}").as_str()));
    assert_eq!(t.json(), json!({"query": "tokio", "max_results": 3, "search_depth": "basic"}));
    let e = tool_err_text(&p.tool("web_search", json!({"query": "tokio", "provider": "searxng"})));
    assert!(e.contains("SearXNG") && e.contains("HTTP 500"), "{e}");
    searx.next_request();
    assert!(brave.try_request(Duration::from_millis(200)).is_none(), "pinned means no fallback");
    let e = tool_err_text(&p.tool("web_search", json!({"query": "x", "max_results": 21})));
    assert!(e.contains("max_results") && e.contains("20"), "{e}");

    // web_answer: search (with fallback), then the LLM answers from the results only.
    let id = p.start(
        "tools/call",
        json!({"name": "web_answer", "arguments": {"query": "When did Rust 1.0 ship?"}, "_meta": {"progressToken": 7}}),
    );
    let r = p.wait(&id)["result"].clone();
    let sc = tool_ok(&r).clone();
    assert_eq!(tool_text(&r), "Rust 1.0 shipped in May 2015 [https://blog.example/rust-1-0].");
    assert_eq!(sc["citations"], json!([{"url": "https://blog.example/rust-1-0", "title": "Rust 1.0 announced"}]));
    assert_eq!(sc["depth"], "quick");
    assert_eq!(sc["provider"], "brave");
    assert!(p.notifications.iter().filter(|n| n["method"] == "notifications/progress").count() >= 2);
    let q = llm.next_request().json();
    assert!(q.get("tools").is_none(), "a grounded answer offers no tools: {q}");
    assert_eq!(q["messages"][0]["role"], "system");
    let user = q["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("When did Rust 1.0 ship?"), "{user}");
    assert!(user.contains("[https://blog.example/rust-1-0]") && user.contains("[https://wiki.example/rust]"), "{user}");
    assert!(user.contains("Rust 1.0 shipped in May 2015."), "{user}");
    searx.next_request();
    assert_eq!(brave.next_request().param("count").as_deref(), Some("5"), "quick depth reads 5 results");
}

#[test]
fn memory_recall_carries_an_answer_citing_chunks_only_when_an_llm_is_configured() {
    let home = Home::new();
    let llm = Server::start(|req: &Request| {
        let b = req.json();
        let user = b["messages"][1]["content"].as_str().unwrap_or_default().to_string();
        let id = user.split("[chunk:").nth(1).and_then(|r| r.split(']').next()).unwrap_or("none").to_string();
        Reply::ok(openai_text(&format!("Ada Marsh keeps it [chunk:{id}].")))
    });
    let d = Daemon::builder(&home).envs(env()).start();
    let mut p = connect(&home);
    let chunk_id = store_lighthouse(&mut p);
    let r = p.tool("memory.recall", json!({"query": "who keeps the lighthouse"}));
    let plain = tool_ok(&r).clone();
    assert!(plain.get("answer").is_none() && plain.get("answer_error").is_none(), "{plain}");

    home.write_config(&openai_llm(&llm.url(), ""));
    d.reload();
    assert_eq!(p.lines.next_json()["method"], "notifications/tools/list_changed");
    let r = p.tool("memory.recall", json!({"query": "who keeps the lighthouse"}));
    let sc = tool_ok(&r);
    assert_eq!(sc["answer"], format!("Ada Marsh keeps it [chunk:{chunk_id}]."));
    assert_eq!(sc["chunks"], plain["chunks"], "the recall itself is unchanged");
    let b = llm.next_request().json();
    assert!(b.get("tools").is_none());
    assert!(b["messages"][0]["content"].as_str().unwrap().contains("[chunk:"), "rules ask for chunk citations");
    let user = b["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains(&format!("[chunk:{chunk_id}]")) && user.contains(LIGHTHOUSE), "{user}");
}

/// A deterministic bag-of-words embedding: words hash into 8 buckets.
fn fake_vector(text: &str) -> Vec<f64> {
    let mut v = vec![0.0; 8];
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let h = w.to_lowercase().bytes().fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
        v[(h % 8) as usize] += 1.0;
    }
    v[0] += 0.01;
    v
}

#[test]
fn openai_compatible_embeddings_are_used_and_their_size_remembered() {
    let home = Home::new();
    let down = Arc::new(AtomicBool::new(false));
    let flag = down.clone();
    let emb = Server::start(move |req: &Request| {
        if flag.load(Ordering::SeqCst) {
            return Reply::Json(503, json!({"error": {"message": "down for maintenance"}}));
        }
        let inputs: Vec<String> =
            req.json()["input"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
        // Out of order on purpose: `index` says which input each vector belongs to.
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_vector(t)}))
            .collect();
        Reply::ok(json!({"object": "list", "data": data, "model": "test-embed"}))
    });
    home.write_config(&format!(
        "[memory.embeddings]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"test-embed\"\napi_key_env = \"OH_TEST_EMBED_KEY\"\n",
        emb.url()
    ));
    let d = Daemon::builder(&home).env("OH_TEST_EMBED_KEY", EMBED_KEY).start();
    let probe = emb.next_request();
    assert_eq!((probe.method.as_str(), probe.path()), ("POST", "/v1/embeddings"));
    assert_eq!(probe.header("authorization"), Some(format!("Bearer {EMBED_KEY}").as_str()));
    assert_eq!(probe.json(), json!({"model": "test-embed", "input": ["dimension probe"]}));
    let remembered: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("data/embedder-http.json")).unwrap()).unwrap();
    assert_eq!(remembered["dims"], 8);

    let mut p = connect(&home);
    let chunk_id = store_lighthouse(&mut p);
    let stored = emb.next_request().json();
    assert!(stored["input"].as_array().unwrap().iter().any(|t| t.as_str().unwrap().contains("fog bell")), "{stored}");
    let r = p.tool("memory.recall", json!({"query": "Fenwick lighthouse keeper"}));
    let sc = tool_ok(&r);
    assert_eq!(sc["chunks"][0]["chunk_id"], chunk_id.as_str());
    assert!(sc["chunks"][0]["vector_score"].as_f64().unwrap_or(0.0) > 0.0, "ranked by the vector too: {sc}");
    let mut queried = false;
    while let Some(req) = emb.try_request(Duration::from_millis(300)) {
        queried |= req.json()["input"] == json!(["Fenwick lighthouse keeper"]);
    }
    assert!(queried, "the recall query was embedded by the provider");
    drop(p);
    drop(d);

    // The provider down at start: the daemon still opens the store with the remembered size.
    down.store(true, Ordering::SeqCst);
    let d = Daemon::builder(&home).env("OH_TEST_EMBED_KEY", EMBED_KEY).start();
    let log = d.startup_log();
    assert!(log.iter().any(|l| l.contains("remembered vector size") && l.contains("HTTP 503")), "{log:#?}");
    let mut p = connect(&home);
    let hits = p.tool("memory.search", json!({"query": "fog bell"}));
    assert_eq!(tool_ok(&hits)["hits"][0]["chunk_id"], chunk_id.as_str());
}

#[test]
fn ollama_embeddings_fall_back_to_the_single_text_endpoint() {
    let home = Home::new();
    let emb = Server::start(|req: &Request| match req.path() {
        "/api/embed" => Reply::text(404, "text/plain", "404 page not found"),
        "/api/embeddings" => Reply::ok(json!({"embedding": fake_vector(req.json()["prompt"].as_str().unwrap())})),
        _ => Reply::text(404, "text/plain", "404 page not found"),
    });
    home.write_config(&format!(
        "[memory.embeddings]\nprovider = \"ollama\"\nbase_url = \"{}\"\nmodel = \"nomic-test\"\n",
        emb.url()
    ));
    let _d = Daemon::start(&home);
    let first = emb.next_request();
    assert_eq!(first.path(), "/api/embed");
    assert_eq!(first.json(), json!({"model": "nomic-test", "input": ["dimension probe"]}));
    assert_eq!(first.header("authorization"), None);
    let second = emb.next_request();
    assert_eq!(second.path(), "/api/embeddings");
    assert_eq!(second.json(), json!({"model": "nomic-test", "prompt": "dimension probe"}));

    let mut p = connect(&home);
    let chunk_id = store_lighthouse(&mut p);
    let r = p.tool("memory.recall", json!({"query": "lighthouse keeper"}));
    assert_eq!(tool_ok(&r)["chunks"][0]["chunk_id"], chunk_id.as_str());
    // Once the batch endpoint is known missing, only the single-text one is used.
    while let Some(req) = emb.try_request(Duration::from_millis(300)) {
        assert_eq!(req.path(), "/api/embeddings");
    }
}

/// A FIFO (or anything but a regular file) where a prompt override or an agent file belongs is
/// skipped: the daemon starts, serves the built-in text, and reports the agent file.
#[test]
fn fifos_in_place_of_prompt_files_are_skipped() {
    let home = Home::new();
    let agents = home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    for fifo in [home.path().join("USER.md"), agents.join("critic.md"), agents.join("mine.toml")] {
        let ok = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success();
        assert!(ok, "mkfifo {}", fifo.display());
    }
    let d = Daemon::start(&home);
    let mut p = connect(&home);
    let r = p.call("resources/read", json!({"uri": "openhuman://prompts/user"}));
    assert!(!r["contents"][0]["text"].as_str().unwrap().is_empty(), "{r}");
    assert!(agent_prompt(&mut p, "critic").len() > 200, "the built-in prompt");
    let listed = p.tool("agent.list_subagents", json!({}));
    let errors = tool_ok(&listed)["load_errors"].to_string();
    assert!(errors.contains("mine.toml") && errors.contains("not a regular file"), "{errors}");
    drop(d);
}
