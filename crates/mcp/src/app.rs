//! The application behind the dispatcher. The protocol layer owns framing, envelopes, sessions,
//! eras and errors; an [`App`] owns meaning: which tools exist and what they do, which resources
//! it serves, which prompts it offers and how it completes their arguments, and the extension
//! methods (outside MCP) it answers on trusted transports.

use std::collections::BTreeMap;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::context::RequestCtx;
use crate::prompts::{CompleteRequest, Completion, Prompt, PromptResult};
use crate::protocol::{Payload, RpcError, progress_notification};

/// Who the server is, as `initialize` and `server/discover` report it.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: &'static str,
    pub title: &'static str,
    pub version: &'static str,
    pub instructions: &'static str,
    /// Methods with this prefix (e.g. `acme.`) are the app's extension methods: served on the
    /// local socket and on HTTP `/rpc`, never over an MCP session on HTTP or stdio.
    pub extension_prefix: &'static str,
}

/// One entry of `resources/list`.
#[derive(Debug, Clone)]
pub struct Resource {
    pub uri: String,
    pub name: String,
    pub title: String,
    pub description: String,
    pub mime_type: &'static str,
}

/// One entry of `resources/templates/list`: URIs the app serves by pattern (RFC 6570).
#[derive(Debug, Clone)]
pub struct ResourceTemplate {
    pub uri_template: String,
    pub name: String,
    pub title: String,
    pub description: String,
    pub mime_type: &'static str,
}

/// Where progress of a long extension call goes: the caller's channel and its
/// `_meta.progressToken`.
#[derive(Clone)]
pub struct Progress {
    pub notify: mpsc::Sender<String>,
    pub token: Value,
}

impl Progress {
    /// Sends `notifications/progress`, best effort: a slow reader misses some, never the result.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let _ = self.notify.try_send(progress_notification(&self.token, progress, total, message));
    }
}

/// The caller of an extension method.
pub struct Extension {
    /// The calling session's id; 0 for a sessionless caller (HTTP `/rpc`).
    pub caller: u64,
    pub progress: Option<Progress>,
}

/// What the dispatcher asks of the application. Implementations are cheap to share: the
/// dispatcher holds one in an `Arc` and calls it from many tasks at once.
pub trait App: Send + Sync + 'static {
    fn info(&self) -> &ServerInfo;

    /// The longest line a line transport accepts, read when a session starts.
    fn max_line_bytes(&self) -> usize;

    /// `tools/list` entries, in order.
    fn tools(&self) -> Vec<Value>;

    /// `tools/call` of `name` with `arguments` (already checked to be an object). A success is a
    /// [`crate::tool::result`] payload; a tool-level failure is an `isError` result; an unknown
    /// tool or a refused call is an `RpcError`.
    fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<Payload, RpcError>>;

    /// The arguments of tool `name` that its schema marks `x-mcp-header: X` (argument, `X`):
    /// a 2026-07-28 HTTP call must mirror them in `Mcp-Param-X` headers. By default read from
    /// [`App::tools`]; an app whose schemas never mark any may answer none without listing.
    fn param_headers(&self, name: &str) -> Vec<(String, String)> {
        let tools = self.tools();
        let tool = tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some(name));
        tool.map(crate::transport::http::message::param_headers_of).unwrap_or_default()
    }

    /// `resources/list` entries.
    fn resources(&self) -> Vec<Resource>;

    /// The text of the resource at `uri` with its MIME type, or None when there is none.
    fn read_resource(&self, uri: &str) -> BoxFuture<'static, Option<(String, &'static str)>>;

    /// `resources/read` of `uri` as its `contents` entries (`text` or base64 `blob`), for apps
    /// with binary resources or whose reads ask the client something through `ctx`. By default
    /// the text of [`App::read_resource_for`]. `Ok(None)`: there is no such resource.
    fn read_resource_contents(
        &self,
        uri: String,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<Option<Vec<Value>>, RpcError>> {
        let read = self.read_resource_for(&uri, &ctx);
        async move {
            Ok(read.await?.map(|(text, mime)| vec![serde_json::json!({ "uri": uri, "mimeType": mime, "text": text })]))
        }
        .boxed()
    }

    /// `resources/templates/list` entries.
    fn resource_templates(&self) -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// True when the app tells the server's [`crate::SessionSet`] of resource changes
    /// (`notify_resource_updated`, `notify_resources_list_changed`): then `resources/subscribe`
    /// is served and the `subscribe` and `listChanged` resource capabilities are advertised.
    fn resource_notifications(&self) -> bool {
        false
    }

    /// `prompts/list` entries. Non-empty: the `prompts` capability (with `listChanged`) is
    /// advertised and `prompts/get` served. When the list changes, the app says so with
    /// [`crate::SessionSet::notify_prompts_changed`]; it must not become empty while the server
    /// runs (the capability would no longer hold).
    fn prompts(&self) -> Vec<Prompt> {
        Vec::new()
    }

    /// `prompts/get` of `name` with `arguments`, already checked against the prompt's declared
    /// arguments (required ones present, no others). An Err is a JSON-RPC error.
    fn get_prompt(
        &self,
        name: String,
        arguments: BTreeMap<String, String>,
        ctx: RequestCtx,
    ) -> BoxFuture<'static, Result<PromptResult, RpcError>> {
        let _ = (arguments, ctx);
        futures::future::ready(Err(RpcError::invalid_params(format!("unknown prompt `{name}`")))).boxed()
    }

    /// True when the app completes prompt and template arguments: then the `completions`
    /// capability is advertised and `completion/complete` served.
    fn completions(&self) -> bool {
        false
    }

    /// Candidate values for `request` (its reference and argument already checked to exist),
    /// best first; the protocol layer caps them.
    fn complete(&self, request: CompleteRequest, ctx: RequestCtx) -> BoxFuture<'static, Result<Completion, RpcError>> {
        let _ = (request, ctx);
        futures::future::ready(Ok(Completion::default())).boxed()
    }

    /// A token that fires when the server starts closing: open `subscriptions/listen` streams
    /// then end with their result instead of holding the drain until the grace period is over.
    fn closing(&self) -> Option<CancellationToken> {
        None
    }

    /// `tools/list` as the caller of `ctx` sees it; by default [`App::tools`]. An app that gives
    /// each client a set of its own narrows it here (keeping the order) and refuses calls
    /// outside it in [`App::call_tool`], which has the same context.
    fn tools_for(&self, ctx: &RequestCtx) -> Vec<Value> {
        let _ = ctx;
        self.tools()
    }

    /// `resources/list` as the caller of `ctx` sees it; by default [`App::resources`].
    fn resources_for(&self, ctx: &RequestCtx) -> Vec<Resource> {
        let _ = ctx;
        self.resources()
    }

    /// `resources/templates/list` as the caller of `ctx` sees it; by default
    /// [`App::resource_templates`].
    fn resource_templates_for(&self, ctx: &RequestCtx) -> Vec<ResourceTemplate> {
        let _ = ctx;
        self.resource_templates()
    }

    /// `prompts/list` as the caller of `ctx` sees it; by default [`App::prompts`]. Whether the
    /// prompts capability is advertised still follows [`App::prompts`]; `prompts/get` and
    /// completions of a prompt outside the caller's set are the app's to refuse.
    fn prompts_for(&self, ctx: &RequestCtx) -> Vec<Prompt> {
        let _ = ctx;
        self.prompts()
    }

    /// `resources/read` for the caller of `ctx`: an Err refuses it (a resource outside the
    /// caller's set), `Ok(None)` is "not found"; by default [`App::read_resource`].
    fn read_resource_for(
        &self,
        uri: &str,
        ctx: &RequestCtx,
    ) -> BoxFuture<'static, Result<Option<(String, &'static str)>, RpcError>> {
        let _ = ctx;
        self.read_resource(uri).map(Ok).boxed()
    }

    /// An extension method (its name starts with [`ServerInfo::extension_prefix`]).
    fn extension(
        &self,
        method: String,
        params: Map<String, Value>,
        caller: Extension,
    ) -> BoxFuture<'static, Result<Value, RpcError>>;
}
