//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`), as served by OpenAI,
//! Ollama, llama.cpp, vLLM, LM Studio and OpenRouter: `tools` of type `function`, replies with
//! `tool_calls`, results sent back as role `tool` messages. Streaming off.

use serde_json::{Value, json};

use super::{Llm, Message, Reply, Request, ToolCall, bad_reply, http};
use crate::ProviderError;

/// The request body; separate from sending so tests can check the exact shape.
pub(super) fn body(model: &str, req: &Request<'_>) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({ "role": "system", "content": req.system }));
    }
    for m in req.messages {
        messages.push(match m {
            Message::User(text) => json!({ "role": "user", "content": text }),
            Message::Assistant { text, calls } => {
                let mut a =
                    json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) } });
                if !calls.is_empty() {
                    a["tool_calls"] = calls
                        .iter()
                        .map(|c| {
                            // The API carries arguments as a JSON-encoded string.
                            let args = match &c.arguments {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            json!({ "id": c.id, "type": "function", "function": { "name": c.name, "arguments": args } })
                        })
                        .collect();
                }
                a
            }
            Message::Tool { call_id, content, .. } => {
                json!({ "role": "tool", "tool_call_id": call_id, "content": content })
            }
        });
    }
    let mut b = json!({ "model": model, "messages": messages, "stream": false });
    if !req.tools.is_empty() {
        b["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({ "type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters } })
            })
            .collect();
        if req.forbid_tools {
            b["tool_choice"] = json!("none");
        }
    }
    b
}

pub(super) async fn complete(llm: &Llm, req: &Request<'_>) -> Result<Reply, ProviderError> {
    let url = format!("{}/chat/completions", llm.base_url);
    let body = body(&llm.model, req);
    let v = http::send_json(llm.target(&url), llm.max_retries, || {
        let mut r = llm.http.post(&url).json(&body);
        if let Some(k) = &llm.key {
            r = r.bearer_auth(k);
        }
        r
    })
    .await?;
    parse(llm, &v)
}

fn parse(llm: &Llm, v: &Value) -> Result<Reply, ProviderError> {
    let msg = v.pointer("/choices/0/message").ok_or_else(|| bad_reply(llm, "choices[0].message"))?;
    let text = msg.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut calls = Vec::new();
    for (i, c) in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let Some(name) = c.pointer("/function/name").and_then(Value::as_str) else {
            return Err(bad_reply(llm, "a function name in a tool call"));
        };
        // OpenAI sends a JSON string; some compatible servers send the object itself.
        let arguments = match c.pointer("/function/arguments") {
            Some(Value::String(s)) if s.trim().is_empty() => json!({}),
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
            Some(Value::Null) | None => json!({}),
            Some(other) => other.clone(),
        };
        let id = c.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("call_{i}"));
        calls.push(ToolCall { id, name: name.to_string(), arguments });
    }
    Ok(Reply { text, calls })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn request_shape_carries_tools_calls_and_results() {
        let tools = [ToolSpec { name: "memory_search".into(), description: "d".into(), parameters: json!({}) }];
        let messages = [
            Message::User("q".into()),
            Message::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "memory_search".into(),
                    arguments: json!({"query": "x"}),
                }],
            },
            Message::Tool { call_id: "c1".into(), content: "{\"hits\":[]}".into(), is_error: false },
        ];
        let b = body("m", &Request { system: "sys", messages: &messages, tools: &tools, forbid_tools: false });
        assert_eq!(
            b,
            json!({
                "model": "m", "stream": false,
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "memory_search", "arguments": "{\"query\":\"x\"}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "{\"hits\":[]}"}
                ],
                "tools": [{"type": "function", "function": {"name": "memory_search", "description": "d", "parameters": {}}}]
            })
        );
        let b = body("m", &Request { system: "", messages: &messages[..1], tools: &[], forbid_tools: true });
        assert!(b.get("tools").is_none() && b["messages"].as_array().unwrap().len() == 1);
    }
}
