//! The daemon as an MCP application: what the protocol crate's dispatcher asks of it. Tools come
//! from the catalog in `tools`, resources from the prompt catalog in `resources` and from memory
//! in `live_resources` (with change notifications), MCP prompts from `prompts`, argument
//! completion from `completion`, and the `openhuman.*` extension methods from the method table
//! in `rpc`. Each list is narrowed to the caller's set and each read and call outside it refused
//! per `[clients]` (see `clients`).

use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::sync::Arc;

use openhuman_config::clients::Kind;
use openhuman_mcp::prompts::{CompleteRequest, Completion, CompletionRef, Prompt, PromptResult};
use openhuman_mcp::{
    App, Era, Extension, Payload, RequestCtx, Resource, ResourceTemplate, RpcError, ServerInfo, Session, Transport,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::clients::Who;
use crate::state::AppState;

/// Shown to the client's model: what this server is for and how to use it well.
const INSTRUCTIONS: &str = "OpenHuman is the user's personal memory and agent server. Use the memory tools to \
search and recall what the user has stored (notes, e-mail, chats, learnings) and cite chunks by id; \
use agent.list_subagents to see the specialist subagents. Writes are audited and may be refused by \
the user's security policy; a refusal message says why.";

pub(crate) static INFO: ServerInfo = ServerInfo {
    name: "openhuman-core",
    title: "OpenHuman",
    version: openhuman_common::VERSION,
    instructions: INSTRUCTIONS,
    extension_prefix: "openhuman.",
};

impl App for AppState {
    fn info(&self) -> &ServerInfo {
        &INFO
    }

    fn max_line_bytes(&self) -> usize {
        self.config().mcp.max_line_bytes
    }

    fn tools(&self) -> Vec<Value> {
        crate::tools::list(self)
    }

    fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<Payload, RpcError>> {
        crate::tools::call(self.clone(), name, arguments, ctx).boxed()
    }

    fn resources(&self) -> Vec<Resource> {
        let mut out = crate::resources::list(&self.agents());
        out.extend(crate::live_resources::list(self));
        out
    }

    fn read_resource(&self, uri: &str) -> BoxFuture<'static, Option<(String, &'static str)>> {
        if let Some(text) = crate::resources::read(uri, &self.paths().config_dir, &self.agents()) {
            return futures::future::ready(Some((text, crate::resources::MIME))).boxed();
        }
        let (state, uri) = (self.clone(), uri.to_string());
        async move {
            // A project's context is packed as `context` packs it (the prompts' packer).
            if let Some(project) = crate::live_resources::context_project(&uri) {
                let budget = crate::prompts::DEFAULT_BUDGET;
                let packed = crate::prompts::project_context(&state, &project, None, budget).await;
                let text = packed.inspect_err(|e| tracing::warn!("reading a project's context: {e}")).ok()?.text;
                return Some((text, crate::live_resources::MIME));
            }
            Some((crate::live_resources::read(&state, &uri).await?, crate::live_resources::MIME))
        }
        .boxed()
    }

    fn resource_templates(&self) -> Vec<ResourceTemplate> {
        crate::live_resources::templates()
    }

    /// Memory changes (writes, watched folders) and config reloads are told to subscribers.
    fn resource_notifications(&self) -> bool {
        true
    }

    fn prompts(&self) -> Vec<Prompt> {
        crate::prompts::list(&self.agents())
    }

    fn get_prompt(
        &self,
        name: String,
        arguments: BTreeMap<String, String>,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<PromptResult, RpcError>> {
        if let Err(denial) = Who::of(&ctx).admit(&self.config(), Kind::Prompt, &name) {
            let refused =
                crate::clients::refuse(self, &ctx, "prompts/get", crate::clients::asked("prompt", &name), &denial);
            return futures::future::ready(Err(refused)).boxed();
        }
        crate::prompts::get(self.clone(), name, arguments, ctx).boxed()
    }

    fn completions(&self) -> bool {
        true
    }

    /// Completions of a prompt or template outside the caller's set are refused as a read of it
    /// would be (without an audit row: nothing is read).
    fn complete(&self, request: CompleteRequest, ctx: RequestCtx) -> BoxFuture<'static, Result<Completion, RpcError>> {
        let (kind, name) = match &request.reference {
            CompletionRef::Prompt(p) => (Kind::Prompt, p.as_str()),
            CompletionRef::Resource(t) => (Kind::Resource, t.as_str()),
        };
        if let Err(denial) = Who::of(&ctx).admit(&self.config(), kind, name) {
            return futures::future::ready(Err(RpcError::invalid_params(denial.to_string()))).boxed();
        }
        crate::completion::complete(self.clone(), request).boxed()
    }

    /// The daemon's schemas come from `ArgSpec`, which never marks an argument `x-mcp-header`:
    /// nothing to mirror, and no listing built on every HTTP call to find that out.
    fn param_headers(&self, _name: &str) -> Vec<(String, String)> {
        Vec::new()
    }

    fn closing(&self) -> Option<CancellationToken> {
        Some(self.shutdown_token().clone())
    }

    /// The caller's tool set (`[clients]`), in catalog order.
    fn tools_for(&self, ctx: &RequestCtx) -> Vec<Value> {
        crate::tools::list_for(self, &Who::of(ctx))
    }

    fn resources_for(&self, ctx: &RequestCtx) -> Vec<Resource> {
        let (config, who) = (self.config(), Who::of(ctx));
        let mut out = self.resources();
        out.retain(|r| who.sees(&config, Kind::Resource, &r.uri));
        out
    }

    fn resource_templates_for(&self, ctx: &RequestCtx) -> Vec<ResourceTemplate> {
        let (config, who) = (self.config(), Who::of(ctx));
        let mut out = self.resource_templates();
        out.retain(|t| who.sees(&config, Kind::Resource, &t.uri_template));
        out
    }

    fn prompts_for(&self, ctx: &RequestCtx) -> Vec<Prompt> {
        let (config, who) = (self.config(), Who::of(ctx));
        let mut out = self.prompts();
        out.retain(|p| who.sees(&config, Kind::Prompt, &p.name));
        out
    }

    fn read_resource_for(
        &self,
        uri: &str,
        ctx: &RequestCtx,
    ) -> BoxFuture<'static, Result<Option<(String, &'static str)>, RpcError>> {
        if let Err(denial) = Who::of(ctx).admit(&self.config(), Kind::Resource, uri) {
            let refused =
                crate::clients::refuse(self, ctx, "resources/read", crate::clients::asked("uri", uri), &denial);
            return futures::future::ready(Err(refused)).boxed();
        }
        self.read_resource(uri).map(Ok).boxed()
    }

    fn extension(
        &self,
        method: String,
        params: Map<String, Value>,
        caller: Extension,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let state = self.clone();
        let caller = crate::rpc::Caller { session: caller.caller, progress: caller.progress, source: None };
        async move { crate::rpc::call(state, &method, params, caller).await }.boxed()
    }
}

/// A request context like the one the dispatcher makes for a stateless request from the client
/// named `client`: its writes and audit rows carry `mcp:<client>`.
pub(crate) fn request_ctx(client: &str, transport: Transport) -> RequestCtx {
    let (notify, _) = tokio::sync::mpsc::channel(1);
    let session = Arc::new(Session::new(transport, &CancellationToken::new(), notify.clone()));
    RequestCtx {
        session,
        era: Era::Modern,
        cancel: CancellationToken::new(),
        progress_token: None,
        source: openhuman_mcp::session::source_label(Some(client)),
        client_info: Some(json!({ "name": client, "version": openhuman_common::VERSION })),
        log_level: None,
        notify,
        auth: None,
        input: Default::default(),
    }
}
