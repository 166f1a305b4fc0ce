//! The conformance fixture server: `openhuman-mcp`'s dispatcher and Streamable HTTP transport
//! serving the tools, resources and prompts the official conformance suite
//! (`@modelcontextprotocol/conformance`) calls by name (`test_simple_text`, `test://static-text`,
//! `test_simple_prompt`, …). A test binary only: `tests/conformance/run.sh` builds it with
//! `cargo build -p openhuman-mcp --example conformance_server` and runs the suite's fixture
//! scenarios against it; nothing of it is in the product's catalog. Every answer goes through the
//! same protocol code as the daemon's, including questions to the client (`RequestCtx::ask`),
//! which are server→client requests in the handshake era and `input_required` rounds in
//! 2026-07-28.
//!
//!   conformance_server [--port N]    (loopback, no token; prints `listening on http://…/mcp`)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine;
use futures::FutureExt;
use futures::future::BoxFuture;
use openhuman_common::codes;
use openhuman_mcp::app::{App, Extension, Resource, ResourceTemplate, ServerInfo};
use openhuman_mcp::prompts::{
    CompleteRequest, Completion, Prompt, PromptArgument, PromptResult, user_resource, user_text,
};
use openhuman_mcp::transport::http::{self, HttpOptions};
use openhuman_mcp::transport::limits::Rate;
use openhuman_mcp::{Ask, AskError, Dispatcher, Payload, RequestCtx, RpcError, SessionSet};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

struct Fixtures {
    info: ServerInfo,
    sessions: Arc<SessionSet>,
    /// Flipped by `test_trigger_tool_change` / `test_trigger_prompt_change`: an extra tool or
    /// prompt comes and goes, and the live sessions and listen streams are told.
    extra_tool: AtomicBool,
    extra_prompt: AtomicBool,
}

fn text(t: impl Into<String>) -> Value {
    json!({ "type": "text", "text": t.into() })
}

fn image() -> Value {
    json!({ "type": "image", "data": PNG, "mimeType": "image/png" })
}

/// A WAV file of 8 silent 8 kHz mono 16-bit samples, base64.
fn wav() -> String {
    let samples = [0u8; 16];
    let mut b = Vec::with_capacity(44 + samples.len());
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes()); // PCM
    b.extend_from_slice(&1u16.to_le_bytes()); // mono
    b.extend_from_slice(&8000u32.to_le_bytes());
    b.extend_from_slice(&16000u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    b.extend_from_slice(&samples);
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn tool(name: &str, description: &str, input_schema: Value) -> Value {
    json!({ "name": name, "description": description, "inputSchema": input_schema })
}

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

fn one_string(name: &str, description: &str) -> Value {
    json!({ "type": "object", "properties": { name: { "type": "string", "description": description } }, "required": [name] })
}

fn form(props: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": props, "required": required })
}

fn elicit(message: &str, schema: Value) -> Ask {
    Ask::Elicit { message: message.to_string(), requested_schema: schema }
}

fn sample(prompt: &str, max_tokens: u32) -> Ask {
    Ask::Sample(json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
        "maxTokens": max_tokens
    }))
}

/// A complete tool result of these content blocks.
fn done(content: Vec<Value>) -> Result<Value, RpcError> {
    Ok(json!({ "content": content }))
}

/// A question the client could not answer: an `isError` result saying why (the
/// `input_required` case never reaches the client, the dispatcher answers it).
fn asked_failed(e: AskError) -> Result<Value, RpcError> {
    Ok(json!({ "content": [text(e.to_string())], "isError": true }))
}

fn sampled_text(v: &Value) -> String {
    v.pointer("/content/text").and_then(Value::as_str).unwrap_or_default().to_string()
}

impl Fixtures {
    async fn call(name: String, args: Map<String, Value>, ctx: RequestCtx) -> Result<Value, RpcError> {
        match name.as_str() {
            "test_header_param" => {
                done(vec![text(format!("region={}", args.get("region").and_then(Value::as_str).unwrap_or_default()))])
            }
            "test_logging_tool" => {
                // Logs only reach a client that asked for them (`_meta` logLevel, or a session level).
                ctx.log("info", json!("test_logging_tool ran")).await;
                done(vec![text("logged")])
            }
            "test_streaming_elicitation" => {
                let schema = form(json!({ "answer": { "type": "string" } }), &["answer"]);
                ctx.progress(0.0, Some(1.0), Some("asking")).await;
                match ctx.ask("answer", elicit("Anything to add?", schema)).await {
                    Ok(v) => done(vec![text(format!("answer: {v}"))]),
                    Err(e) => asked_failed(e),
                }
            }
            "test_simple_text" => done(vec![text("This is a simple text response for testing.")]),
            "test_image_content" => done(vec![image()]),
            "test_audio_content" => done(vec![json!({ "type": "audio", "data": wav(), "mimeType": "audio/wav" })]),
            "test_embedded_resource" => done(vec![json!({ "type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content." } })]),
            "test_multiple_content_types" => done(vec![
                text("Multiple content types test:"),
                image(),
                json!({ "type": "resource", "resource": { "uri": "test://mixed-content-resource",
                    "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}" } }),
            ]),
            "test_tool_with_logging" => {
                for (i, m) in
                    ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.log("info", json!(m)).await;
                }
                done(vec![text("Tool with logging executed successfully")])
            }
            "test_tool_with_progress" => {
                for (i, p) in [0.0, 50.0, 100.0].iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(*p, Some(100.0), None).await;
                }
                done(vec![text("Tool with progress executed successfully")])
            }
            "test_error_handling" => Ok(
                json!({ "content": [text("This tool intentionally returns an error for testing")], "isError": true }),
            ),
            "test_sampling" => {
                let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("Hello");
                match ctx.ask("sampling", sample(prompt, 100)).await {
                    Ok(v) => done(vec![text(format!("LLM response: {}", sampled_text(&v)))]),
                    Err(e) => asked_failed(e),
                }
            }
            "test_elicitation" => {
                let message = args.get("message").and_then(Value::as_str).unwrap_or("Please provide your information");
                let schema = form(
                    json!({ "username": { "type": "string", "description": "User's response" },
                            "email": { "type": "string", "description": "User's email address" } }),
                    &["username", "email"],
                );
                match ctx.ask("elicitation", elicit(message, schema)).await {
                    Ok(v) => done(vec![text(format!("User response: {v}"))]),
                    Err(e) => asked_failed(e),
                }
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = form(
                    json!({
                        "name": { "type": "string", "description": "User name", "default": "John Doe" },
                        "age": { "type": "integer", "description": "User age", "default": 30 },
                        "score": { "type": "number", "description": "User score", "default": 95.5 },
                        "status": { "type": "string", "description": "User status",
                                    "enum": ["active", "inactive", "pending"], "default": "active" },
                        "verified": { "type": "boolean", "description": "Verification status", "default": true }
                    }),
                    &[],
                );
                Self::elicit_report(&ctx, "Please review and update the form fields with defaults", schema).await
            }
            "test_elicitation_sep1330_enums" => {
                let schema = form(
                    json!({
                        "untitledSingle": { "type": "string", "description": "Select one option",
                                            "enum": ["option1", "option2", "option3"] },
                        "titledSingle": { "type": "string", "description": "Select one option with titles",
                                          "oneOf": [{ "const": "value1", "title": "First Option" },
                                                    { "const": "value2", "title": "Second Option" },
                                                    { "const": "value3", "title": "Third Option" }] },
                        "legacyEnum": { "type": "string", "description": "Select one option (legacy)",
                                        "enum": ["opt1", "opt2", "opt3"],
                                        "enumNames": ["Option One", "Option Two", "Option Three"] },
                        "untitledMulti": { "type": "array", "description": "Select multiple options",
                                           "minItems": 1, "maxItems": 3,
                                           "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                        "titledMulti": { "type": "array", "description": "Select multiple options with titles",
                                         "minItems": 1, "maxItems": 3,
                                         "items": { "anyOf": [{ "const": "value1", "title": "First Choice" },
                                                              { "const": "value2", "title": "Second Choice" },
                                                              { "const": "value3", "title": "Third Choice" }] } }
                    }),
                    &[],
                );
                Self::elicit_report(&ctx, "Please select options from the enum fields", schema).await
            }
            "json_schema_2020_12_tool" => done(vec![text(format!("received {}", Value::Object(args)))]),
            "test_missing_capability" => {
                if ctx.can_sample() {
                    match ctx.ask("sampling", sample("Say hello", 20)).await {
                        Ok(v) => done(vec![text(sampled_text(&v))]),
                        Err(e) => asked_failed(e),
                    }
                } else {
                    Err(RpcError::new(
                        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "this tool needs the client's `sampling` capability; declare it in _meta clientCapabilities",
                    )
                    .with_data(json!({ "requiredCapabilities": { "sampling": {} } })))
                }
            }
            "test_input_required_result_elicitation" => {
                let schema = form(json!({ "name": { "type": "string" } }), &["name"]);
                match ctx.ask("user_name", elicit("What is your name?", schema)).await {
                    Ok(v) => {
                        let name = v.pointer("/content/name").and_then(Value::as_str).unwrap_or("stranger");
                        done(vec![text(format!("Hello, {name}!"))])
                    }
                    Err(e) => asked_failed(e),
                }
            }
            "test_input_required_result_sampling" => {
                match ctx.ask("capital_question", sample("What is the capital of France?", 100)).await {
                    Ok(v) => done(vec![text(format!("Sampling said: {}", sampled_text(&v)))]),
                    Err(e) => asked_failed(e),
                }
            }
            "test_input_required_result_list_roots" => match ctx.ask("client_roots", Ask::Roots).await {
                Ok(v) => {
                    let uris: Vec<&str> = v["roots"]
                        .as_array()
                        .map(|r| r.iter().filter_map(|x| x.get("uri").and_then(Value::as_str)).collect())
                        .unwrap_or_default();
                    done(vec![text(format!("Client roots: {}", uris.join(", ")))])
                }
                Err(e) => asked_failed(e),
            },
            "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
                let schema = form(json!({ "ok": { "type": "boolean" } }), &["ok"]);
                match ctx.ask("confirm", elicit("Please confirm", schema)).await {
                    // The dispatcher verified the signed requestState before the tool ran.
                    Ok(_) => done(vec![text("Confirmed; state-ok")]),
                    Err(e) => asked_failed(e),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let asks = vec![
                    (
                        "user_name".to_string(),
                        elicit("What is your name?", form(json!({ "name": { "type": "string" } }), &["name"])),
                    ),
                    ("greeting".to_string(), sample("Generate a greeting", 50)),
                    ("client_roots".to_string(), Ask::Roots),
                ];
                match ctx.ask_all(asks).await {
                    Ok(v) => done(vec![text(format!(
                        "Got all inputs: name={}, greeting={}, roots={}",
                        v[0].pointer("/content/name").and_then(Value::as_str).unwrap_or_default(),
                        sampled_text(&v[1]),
                        v[2]["roots"].as_array().map_or(0, Vec::len)
                    ))]),
                    Err(e) => asked_failed(e),
                }
            }
            "test_input_required_result_multi_round" => {
                let name = ctx.ask(
                    "step1",
                    elicit("Step 1: What is your name?", form(json!({ "name": { "type": "string" } }), &["name"])),
                );
                let name = match name.await {
                    Ok(v) => v,
                    Err(e) => return asked_failed(e),
                };
                let color = ctx.ask(
                    "step2",
                    elicit(
                        "Step 2: What is your favorite color?",
                        form(json!({ "color": { "type": "string" } }), &["color"]),
                    ),
                );
                match color.await {
                    Ok(c) => done(vec![text(format!(
                        "Name: {}, favorite color: {}",
                        name.pointer("/content/name").and_then(Value::as_str).unwrap_or_default(),
                        c.pointer("/content/color").and_then(Value::as_str).unwrap_or_default()
                    ))]),
                    Err(e) => asked_failed(e),
                }
            }
            "test_input_required_result_capabilities" => {
                let mut asks = Vec::new();
                if ctx.can_sample() {
                    asks.push(("sample".to_string(), sample("Say something", 20)));
                }
                if ctx.can_elicit() {
                    asks.push((
                        "elicit".to_string(),
                        elicit("Say something", form(json!({ "x": { "type": "string" } }), &["x"])),
                    ));
                }
                if asks.is_empty() {
                    return done(vec![text("the client declared neither sampling nor elicitation; nothing to ask")]);
                }
                match ctx.ask_all(asks).await {
                    Ok(_) => done(vec![text("Thanks for the input")]),
                    Err(e) => asked_failed(e),
                }
            }
            other => {
                Err(RpcError::invalid_params(format!("unknown tool `{other}`: tools/list shows the fixture tools")))
            }
        }
    }

    async fn elicit_report(ctx: &RequestCtx, message: &str, schema: Value) -> Result<Value, RpcError> {
        match ctx.elicit(message, schema).await {
            Ok(e) => done(vec![text(format!(
                "Elicitation completed: action={}, content={}",
                e.action.as_str(),
                Value::Object(e.content)
            ))]),
            Err(e) => asked_failed(e),
        }
    }
}

impl App for Fixtures {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn max_line_bytes(&self) -> usize {
        1 << 20
    }

    fn tools(&self) -> Vec<Value> {
        let rich = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": { "address": { "$anchor": "addressDef", "type": "object",
                                    "properties": { "street": { "type": "string" }, "city": { "type": "string" } } } },
            "properties": {
                "name": { "type": "string" },
                "address": { "$ref": "#/$defs/address" },
                "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                "phone": { "type": "string" },
                "email": { "type": "string" }
            },
            "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
            "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
            "then": { "required": ["phone"] },
            "else": { "required": ["email"] },
            "additionalProperties": false
        });
        let header_param = json!({ "type": "object",
            "properties": { "region": { "type": "string", "description": "A region, mirrored in Mcp-Param-Region",
                                        "x-mcp-header": "Region" } },
            "required": ["region"] });
        let mut tools = vec![
            tool("test_header_param", "Takes an argument mirrored in an HTTP header", header_param),
            tool("test_logging_tool", "Logs one message", no_args()),
            tool("test_streaming_elicitation", "Reports progress, then asks the user", no_args()),
            tool("test_trigger_tool_change", "Adds or removes a tool and says so", no_args()),
            tool("test_trigger_prompt_change", "Adds or removes a prompt and says so", no_args()),
            tool("test_simple_text", "Returns a simple text response", no_args()),
            tool("test_image_content", "Returns an image", no_args()),
            tool("test_audio_content", "Returns an audio clip", no_args()),
            tool("test_embedded_resource", "Returns an embedded resource", no_args()),
            tool("test_multiple_content_types", "Returns text, an image and a resource", no_args()),
            tool("test_tool_with_logging", "Sends three log messages while it runs", no_args()),
            tool("test_tool_with_progress", "Reports progress three times", no_args()),
            tool("test_error_handling", "Always fails with a tool error", no_args()),
            tool("test_sampling", "Asks the client's model", one_string("prompt", "The prompt to send to the LLM")),
            tool(
                "test_elicitation",
                "Asks the user for details",
                one_string("message", "The message to show the user"),
            ),
            tool("test_elicitation_sep1034_defaults", "Asks with a form of default values", no_args()),
            tool("test_elicitation_sep1330_enums", "Asks with a form of every enum kind", no_args()),
            tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", rich),
            tool("test_missing_capability", "Needs the client's sampling capability", no_args()),
            tool("test_input_required_result_elicitation", "Asks the user's name", no_args()),
            tool("test_input_required_result_sampling", "Asks the client's model a question", no_args()),
            tool("test_input_required_result_list_roots", "Asks the client's roots", no_args()),
            tool("test_input_required_result_request_state", "Asks for a confirmation with state", no_args()),
            tool("test_input_required_result_tampered_state", "Asks for a confirmation with signed state", no_args()),
            tool("test_input_required_result_multiple_inputs", "Asks three things at once", no_args()),
            tool("test_input_required_result_multi_round", "Asks in two rounds", no_args()),
            tool("test_input_required_result_capabilities", "Asks only what the client can answer", no_args()),
        ];
        if self.extra_tool.load(Ordering::SeqCst) {
            tools.push(tool("test_dynamic_tool", "Present after test_trigger_tool_change", no_args()));
        }
        tools
    }

    fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<Payload, RpcError>> {
        let modern = ctx.era.is_modern();
        let flip = match name.as_str() {
            "test_trigger_tool_change" => Some(&self.extra_tool),
            "test_trigger_prompt_change" => Some(&self.extra_prompt),
            _ => None,
        };
        if let Some(flag) = flip {
            flag.fetch_xor(true, Ordering::SeqCst);
            if name == "test_trigger_tool_change" {
                self.sessions.notify_tools_changed();
            } else {
                self.sessions.notify_prompts_changed();
            }
            let mut result = json!({ "content": [text(format!("{name}: list changed"))] });
            if modern {
                result["resultType"] = json!("complete");
            }
            return futures::future::ready(Ok(Payload::Value(result))).boxed();
        }
        async move {
            let mut result = Self::call(name, arguments, ctx).await?;
            if modern {
                result["resultType"] = json!("complete");
            }
            Ok(Payload::Value(result))
        }
        .boxed()
    }

    fn resources(&self) -> Vec<Resource> {
        let r = |uri: &str, name: &str, description: &str, mime_type: &'static str| Resource {
            uri: uri.into(),
            name: name.into(),
            title: name.into(),
            description: description.into(),
            mime_type,
        };
        vec![
            r("test://static-text", "static-text", "A static text resource", "text/plain"),
            r("test://static-binary", "static-binary", "A static binary resource (a PNG)", "image/png"),
            r("test://watched-resource", "watched-resource", "A resource to subscribe to", "text/plain"),
        ]
    }

    fn read_resource(&self, uri: &str) -> BoxFuture<'static, Option<(String, &'static str)>> {
        let found = match uri {
            "test://static-text" => {
                Some(("This is the content of the static text resource.".to_string(), "text/plain"))
            }
            "test://watched-resource" => Some(("Watched resource content.".to_string(), "text/plain")),
            _ => uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .map(|id| {
                    (
                        json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string(),
                        "application/json",
                    )
                }),
        };
        futures::future::ready(found).boxed()
    }

    fn read_resource_contents(
        &self,
        uri: String,
        _ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<Option<Vec<Value>>, RpcError>> {
        if uri == "test://static-binary" {
            let blob = json!({ "uri": uri, "mimeType": "image/png", "blob": PNG });
            return futures::future::ready(Ok(Some(vec![blob]))).boxed();
        }
        let read = self.read_resource(&uri);
        async move { Ok(read.await.map(|(text, mime)| vec![json!({ "uri": uri, "mimeType": mime, "text": text })])) }
            .boxed()
    }

    fn resource_templates(&self) -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "test://template/{id}/data".into(),
            name: "template".into(),
            title: "Template".into(),
            description: "A resource template with an id".into(),
            mime_type: "application/json",
        }]
    }

    fn resource_notifications(&self) -> bool {
        true
    }

    fn prompts(&self) -> Vec<Prompt> {
        let p = |name: &str, description: &str, arguments: Vec<PromptArgument>| Prompt {
            name: name.into(),
            title: name.into(),
            description: description.into(),
            arguments,
        };
        let arg = |name: &'static str, description: &str| PromptArgument {
            name,
            description: description.into(),
            required: true,
        };
        let mut prompts = vec![
            p("test_simple_prompt", "A simple prompt without arguments", vec![]),
            p(
                "test_prompt_with_arguments",
                "A prompt with two arguments",
                vec![arg("arg1", "First test argument"), arg("arg2", "Second test argument")],
            ),
            p(
                "test_prompt_with_embedded_resource",
                "A prompt embedding a resource",
                vec![arg("resourceUri", "URI of the resource to embed")],
            ),
            p("test_prompt_with_image", "A prompt with an image", vec![]),
            p("test_input_required_result_prompt", "A prompt that asks the user for context first", vec![]),
        ];
        if self.extra_prompt.load(Ordering::SeqCst) {
            prompts.push(p("test_dynamic_prompt", "Present after test_trigger_prompt_change", vec![]));
        }
        prompts
    }

    fn get_prompt(
        &self,
        name: String,
        arguments: BTreeMap<String, String>,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<PromptResult, RpcError>> {
        async move {
            let messages = match name.as_str() {
                "test_simple_prompt" => vec![user_text("This is a simple prompt for testing.")],
                "test_dynamic_prompt" => vec![user_text("A prompt that comes and goes.")],
                "test_prompt_with_arguments" => vec![user_text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arguments["arg1"], arguments["arg2"]
                ))],
                "test_prompt_with_embedded_resource" => vec![
                    user_resource(&arguments["resourceUri"], "text/plain", "Embedded resource content for testing."),
                    user_text("Please process the embedded resource above."),
                ],
                "test_prompt_with_image" => {
                    vec![json!({ "role": "user", "content": image() }), user_text("Please analyze the image above.")]
                }
                "test_input_required_result_prompt" => {
                    let schema = form(json!({ "context": { "type": "string" } }), &["context"]);
                    let asked = ctx.ask("user_context", elicit("What context should the prompt use?", schema)).await;
                    let answer = asked.map_err(|e| RpcError::invalid_params(e.to_string()))?;
                    let context = answer.pointer("/content/context").and_then(Value::as_str).unwrap_or_default();
                    vec![user_text(format!("Use this context: {context}"))]
                }
                other => return Err(RpcError::invalid_params(format!("unknown prompt `{other}`"))),
            };
            Ok(PromptResult { description: format!("{name} (conformance fixture)"), messages })
        }
        .boxed()
    }

    fn completions(&self) -> bool {
        true
    }

    fn complete(&self, request: CompleteRequest, _ctx: RequestCtx) -> BoxFuture<'static, Result<Completion, RpcError>> {
        let pool = ["paris", "park", "party", "test", "testing", "tested"];
        let values = pool.iter().filter(|v| v.starts_with(&request.value)).map(|v| v.to_string()).collect();
        futures::future::ready(Ok(Completion { values, total: None })).boxed()
    }

    fn extension(
        &self,
        method: String,
        _params: Map<String, Value>,
        _caller: Extension,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        futures::future::ready(Err(RpcError::method_not_found(&method))).boxed()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().ok_or("--port needs a number")?.parse()?,
            other => return Err(format!("unknown argument {other:?}; usage: conformance_server [--port N]").into()),
        }
    }
    let sessions = Arc::new(SessionSet::default());
    let app = Arc::new(Fixtures {
        sessions: sessions.clone(),
        extra_tool: AtomicBool::new(false),
        extra_prompt: AtomicBool::new(false),
        info: ServerInfo {
            name: "openhuman-mcp-conformance-fixtures",
            title: "openhuman-mcp conformance fixtures",
            version: env!("CARGO_PKG_VERSION"),
            instructions: "Test fixtures for the MCP conformance suite; not a product server.",
            extension_prefix: "",
        },
    });
    let abort = CancellationToken::new();
    let dispatcher = Dispatcher::new(app, sessions, abort.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // The one line of output: the script reads the address from it.
    #[allow(clippy::print_stdout, reason = "the address is this test binary's output")]
    {
        println!("listening on http://{}/mcp", listener.local_addr()?);
    }
    let opts = HttpOptions {
        host: "127.0.0.1".into(),
        port,
        token: None,
        allowed_origins: Vec::new(),
        max_sessions: 256,
        session_idle: Duration::from_secs(600),
        sse_keepalive: Duration::from_secs(15),
        max_body_bytes: 4 << 20,
        request_timeout: Duration::from_secs(30),
        max_connections: 512,
        max_connections_per_peer: 512,
        new_sessions: Rate::new(1000, 1000),
        ui: None,
        oauth: None,
    };
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    http::serve(listener, dispatcher, opts, shutdown).await?;
    abort.cancel();
    Ok(())
}
