//! Anthropic's messages API (`POST {base_url}/v1/messages`, headers `x-api-key` and
//! `anthropic-version: 2023-06-01`): the system prompt is a top-level field, tools are offered
//! with `input_schema`, the model asks for them with `tool_use` blocks, and results go back as
//! `tool_result` blocks in the next user turn (all results of one turn in one message).

use serde_json::{Value, json};

use super::{Llm, MAX_OUTPUT_TOKENS, Message, Reply, Request, ToolCall, bad_reply, http};
use crate::ProviderError;

pub const API_VERSION: &str = "2023-06-01";

pub(super) fn body(model: &str, req: &Request<'_>) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len());
    for m in req.messages {
        match m {
            Message::User(text) => messages.push(json!({ "role": "user", "content": text })),
            Message::Assistant { text, calls } => {
                let mut blocks = Vec::new();
                // The API rejects empty text blocks.
                if !text.is_empty() {
                    blocks.push(json!({ "type": "text", "text": text }));
                }
                for c in calls {
                    let input = if c.arguments.is_object() { c.arguments.clone() } else { json!({}) };
                    blocks.push(json!({ "type": "tool_use", "id": c.id, "name": c.name, "input": input }));
                }
                messages.push(json!({ "role": "assistant", "content": blocks }));
            }
            Message::Tool { call_id, content, is_error } => {
                let block =
                    json!({ "type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error });
                // Results answering one assistant turn share one user message.
                match messages.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["content"]
                                .as_array()
                                .is_some_and(|b| b.iter().all(|x| x["type"] == "tool_result")) =>
                    {
                        last["content"].as_array_mut().expect("checked above").push(block)
                    }
                    _ => messages.push(json!({ "role": "user", "content": [block] })),
                }
            }
        }
    }
    let mut b = json!({ "model": model, "max_tokens": MAX_OUTPUT_TOKENS, "messages": messages });
    if !req.system.is_empty() {
        b["system"] = json!(req.system);
    }
    if !req.tools.is_empty() {
        b["tools"] = req
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
            .collect();
        if req.forbid_tools {
            b["tool_choice"] = json!({ "type": "none" });
        }
    }
    b
}

pub(super) async fn complete(llm: &Llm, req: &Request<'_>) -> Result<Reply, ProviderError> {
    let url = format!("{}/v1/messages", llm.base_url);
    let body = body(&llm.model, req);
    let v = http::send_json(llm.target(&url), llm.max_retries, || {
        let mut r = llm.http.post(&url).header("anthropic-version", API_VERSION).json(&body);
        if let Some(k) = &llm.key {
            r = r.header("x-api-key", k);
        }
        r
    })
    .await?;
    let blocks = v.get("content").and_then(Value::as_array).ok_or_else(|| bad_reply(llm, "a `content` array"))?;
    let mut reply = Reply::default();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !reply.text.is_empty() {
                    reply.text.push('\n');
                }
                reply.text.push_str(b.get("text").and_then(Value::as_str).unwrap_or_default());
            }
            Some("tool_use") => {
                let (Some(id), Some(name)) =
                    (b.get("id").and_then(Value::as_str), b.get("name").and_then(Value::as_str))
                else {
                    return Err(bad_reply(llm, "an id and name in a tool_use block"));
                };
                let arguments = b.get("input").cloned().unwrap_or_else(|| json!({}));
                reply.calls.push(ToolCall { id: id.to_string(), name: name.to_string(), arguments });
            }
            // Thinking and other block kinds carry nothing the caller needs.
            _ => {}
        }
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn tool_results_of_one_turn_share_a_user_message() {
        let calls = vec![
            ToolCall { id: "t1".into(), name: "a".into(), arguments: json!({"x": 1}) },
            ToolCall { id: "t2".into(), name: "b".into(), arguments: json!({}) },
        ];
        let messages = [
            Message::User("q".into()),
            Message::Assistant { text: "looking".into(), calls },
            Message::Tool { call_id: "t1".into(), content: "r1".into(), is_error: false },
            Message::Tool { call_id: "t2".into(), content: "bad".into(), is_error: true },
        ];
        let tools = [ToolSpec { name: "a".into(), description: "d".into(), parameters: json!({"type": "object"}) }];
        let b = body("claude", &Request { system: "sys", messages: &messages, tools: &tools, forbid_tools: false });
        assert_eq!(
            b,
            json!({
                "model": "claude", "max_tokens": MAX_OUTPUT_TOKENS, "system": "sys",
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "looking"},
                        {"type": "tool_use", "id": "t1", "name": "a", "input": {"x": 1}},
                        {"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "r1", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "bad", "is_error": true}]}
                ],
                "tools": [{"name": "a", "description": "d", "input_schema": {"type": "object"}}]
            })
        );
    }
}
