//! A fake application for the protocol crate's own tests: the dispatcher and transports are
//! exercised in memory, with no config, store or temp directory. Its tool `test.sleep`
//! sleeps in 10 ms steps reporting progress and counts the runs dropped before they finished;
//! `test.confirm` asks the user (elicitation) and reports the answer; `test.roots` reports the
//! client's roots (`Input::roots`).
//! Its one prompt, `greet`, greets `name`; completion offers `name` values from a list of 150
//! (more than one result may carry) and `id` values of the template `fake://item/{id}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use std::collections::BTreeMap;

use crate::app::{App, Extension, Resource, ResourceTemplate, ServerInfo};
use crate::args::{ArgSpec, Field};
use crate::context::RequestCtx;
use crate::dispatcher::Dispatcher;
use crate::prompts::{CompleteRequest, Completion, CompletionRef, Prompt, PromptArgument, PromptResult, user_text};
use crate::protocol::{Payload, RpcError};
use crate::session::{Session, SessionSet, Transport};
use crate::tool::{self, Annotations, Description};

pub struct FakeApp {
    info: ServerInfo,
    sleep_args: ArgSpec,
    /// How many `test.sleep` runs were dropped before finishing (i.e. cancelled).
    pub dropped: Arc<AtomicUsize>,
}

impl Default for FakeApp {
    fn default() -> Self {
        FakeApp {
            info: ServerInfo {
                name: "fake",
                title: "Fake",
                version: "0.0.0",
                instructions: "A fake server for tests.",
                extension_prefix: "fake.",
            },
            sleep_args: ArgSpec::new(vec![Field::int("steps", "steps of 10 ms", 1, 100_000).required()]),
            dropped: Arc::default(),
        }
    }
}

struct DropCounter(Arc<AtomicUsize>, bool);

impl Drop for DropCounter {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl App for FakeApp {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn max_line_bytes(&self) -> usize {
        64 * 1024
    }

    fn tools(&self) -> Vec<Value> {
        vec![
            Description {
                name: "test.sleep",
                title: "Sleep",
                description: "Sleeps, reporting progress every step.",
                args: &self.sleep_args,
                annotations: Annotations::READ,
                output_schema: None,
            }
            .to_json(),
            json!({ "name": "test.confirm", "description": "Asks the user to confirm.",
                    "inputSchema": { "type": "object", "properties": {} } }),
            json!({ "name": "test.roots", "description": "Reports the client's roots.",
                    "inputSchema": { "type": "object", "properties": {} } }),
        ]
    }

    fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<Payload, RpcError>> {
        if name == "test.confirm" {
            // Asks before it "does" anything, as a destructive tool would.
            return async move {
                let schema =
                    json!({ "type": "object", "properties": { "sure": { "type": "boolean" } }, "required": ["sure"] });
                let outcome = match ctx.elicit("Really do it?", schema).await {
                    Ok(e) => json!({ "action": e.action.as_str(), "content": e.content }),
                    Err(e) => json!({ "not_asked": e.to_string() }),
                };
                Ok(Payload::Json(tool::result(&outcome, None, ctx.era.is_modern()).into()))
            }
            .boxed();
        }
        if name == "test.roots" {
            return async move {
                let outcome = match ctx.input.roots().await {
                    Ok(roots) => json!({ "uris": roots.iter().map(|r| r.uri.clone()).collect::<Vec<_>>() }),
                    Err(e) => json!({ "failed": e.to_string() }),
                };
                Ok(Payload::Json(tool::result(&outcome, None, ctx.era.is_modern()).into()))
            }
            .boxed();
        }
        if name != "test.sleep" {
            return futures::future::ready(Err(RpcError::invalid_params(format!("unknown tool `{name}`")))).boxed();
        }
        let args = match self.sleep_args.validate(&arguments) {
            Ok(a) => a,
            Err(e) => return futures::future::ready(Ok(Payload::Value(tool::error(&e.to_string())))).boxed(),
        };
        let dropped = self.dropped.clone();
        async move {
            let mut guard = DropCounter(dropped, false);
            let steps = args["steps"].as_i64().unwrap_or(1);
            for i in 0..steps {
                ctx.progress(i as f64, Some(steps as f64), Some("sleeping")).await;
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            guard.1 = true;
            Ok(Payload::Json(tool::result(&json!({ "slept_steps": steps }), None, ctx.era.is_modern()).into()))
        }
        .boxed()
    }

    fn resources(&self) -> Vec<Resource> {
        vec![Resource {
            uri: "fake://greeting".into(),
            name: "greeting".into(),
            title: "Greeting".into(),
            description: "A greeting.".into(),
            mime_type: "text/plain",
        }]
    }

    fn read_resource(&self, uri: &str) -> BoxFuture<'static, Option<(String, &'static str)>> {
        futures::future::ready((uri == "fake://greeting").then(|| ("hello".to_string(), "text/plain"))).boxed()
    }

    fn resource_notifications(&self) -> bool {
        true
    }

    fn resource_templates(&self) -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "fake://item/{id}".into(),
            name: "item".into(),
            title: "Item".into(),
            description: "An item.".into(),
            mime_type: "text/plain",
        }]
    }

    fn prompts(&self) -> Vec<Prompt> {
        vec![Prompt {
            name: "greet".into(),
            title: "Greet".into(),
            description: "Greets someone.".into(),
            arguments: vec![
                PromptArgument { name: "name", description: "Who to greet.".into(), required: true },
                PromptArgument { name: "style", description: "How.".into(), required: false },
            ],
        }]
    }

    fn get_prompt(
        &self,
        name: String,
        arguments: BTreeMap<String, String>,
        _ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<PromptResult, RpcError>> {
        let style = arguments.get("style").map_or("Hello", String::as_str);
        let text = format!("{style}, {}!", arguments["name"]);
        futures::future::ready(Ok(PromptResult {
            description: format!("{name} prompt"),
            messages: vec![user_text(text)],
        }))
        .boxed()
    }

    fn completions(&self) -> bool {
        true
    }

    fn complete(&self, request: CompleteRequest, _ctx: RequestCtx) -> BoxFuture<'static, Result<Completion, RpcError>> {
        let pool: Vec<String> = match request.reference {
            CompletionRef::Prompt(_) if request.argument == "name" => (0..150).map(|i| format!("n{i:03}")).collect(),
            CompletionRef::Resource(_) => vec!["a1".into(), "a2".into(), "b1".into()],
            CompletionRef::Prompt(_) => Vec::new(),
        };
        let values = pool.into_iter().filter(|v| v.starts_with(&request.value)).collect();
        futures::future::ready(Ok(Completion { values, total: None })).boxed()
    }

    /// A client named `narrow` sees no tools, resources or prompts and may read nothing: the
    /// per-caller hooks, driven by the name the request context carries.
    fn tools_for(&self, ctx: &RequestCtx) -> Vec<Value> {
        if narrow(ctx) { Vec::new() } else { self.tools() }
    }

    fn resources_for(&self, ctx: &RequestCtx) -> Vec<Resource> {
        if narrow(ctx) { Vec::new() } else { self.resources() }
    }

    fn resource_templates_for(&self, ctx: &RequestCtx) -> Vec<ResourceTemplate> {
        if narrow(ctx) { Vec::new() } else { self.resource_templates() }
    }

    fn prompts_for(&self, ctx: &RequestCtx) -> Vec<Prompt> {
        if narrow(ctx) { Vec::new() } else { self.prompts() }
    }

    fn read_resource_for(
        &self,
        uri: &str,
        ctx: &RequestCtx,
    ) -> BoxFuture<'static, Result<Option<(String, &'static str)>, RpcError>> {
        if narrow(ctx) {
            return futures::future::ready(Err(RpcError::invalid_params("not for narrow clients"))).boxed();
        }
        self.read_resource(uri).map(Ok).boxed()
    }

    fn extension(
        &self,
        method: String,
        params: Map<String, Value>,
        caller: Extension,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let out = match method.as_str() {
            "fake.echo" => Ok(json!({ "params": params, "caller": caller.caller })),
            other => Err(RpcError::method_not_found(other)),
        };
        futures::future::ready(out).boxed()
    }
}

fn narrow(ctx: &RequestCtx) -> bool {
    ctx.client_info.as_ref().and_then(|i| i.get("name")).and_then(Value::as_str) == Some("narrow")
}

/// A dispatcher over a fresh fake app, and its session set.
pub fn dispatcher() -> Dispatcher<FakeApp> {
    Dispatcher::new(Arc::new(FakeApp::default()), Arc::new(SessionSet::default()), CancellationToken::new())
}

/// A session of `transport` on `d` whose messages arrive on the returned receiver.
pub fn session(d: &Dispatcher<FakeApp>, transport: Transport) -> (Arc<Session>, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel(64);
    (Arc::new(d.new_session(transport, tx)), rx)
}
