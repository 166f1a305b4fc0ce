//! How a one-shot command reaches the memory store: through the running daemon when one answers
//! on the socket (it is the store's single writer and holds its lock), else in this process on
//! the store opened directly. Either way the same code runs: `openhuman.*` methods go through
//! `rpc::invoke`, and tools through `tools::call` — over the socket as a stateless (2026-07-28)
//! `tools/call` from the client `cli`, in process with the same provenance — so a command gets
//! the validation, policy and audit rows an MCP client gets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use openhuman_common::Paths;
use openhuman_config as config;
use openhuman_mcp::protocol::{META_CLIENT_INFO, META_VERSION, MODERN};
use openhuman_mcp::{Era, Payload, RequestCtx, Session, Transport};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::state::AppState;
use crate::{backends, client, rpc, tools};

/// The client name commands give: their audit rows and writes carry the source `mcp:cli`.
const CLIENT: &str = "cli";

pub struct Via {
    rt: tokio::runtime::Runtime,
    to: To,
}

enum To {
    Daemon(PathBuf),
    Local(AppState),
}

impl Via {
    /// The running daemon of `paths`, else the store opened here (an error when it cannot be).
    pub fn open(paths: &Paths) -> Result<Via> {
        let rt = crate::runtime(Some(2))?;
        let to = if rt.block_on(client::daemon_up(&paths.socket)) {
            To::Daemon(paths.socket.clone())
        } else {
            let loaded = config::load(&paths.config_file)?;
            let engine = backends::open_memory(paths, &loaded.config).map_err(anyhow::Error::msg)?;
            To::Local(crate::app::state(paths.clone(), loaded.config, Ok(engine)))
        };
        Ok(Via { rt, to })
    }

    /// Whether a daemon answers the calls.
    pub fn through_daemon(&self) -> bool {
        matches!(self.to, To::Daemon(_))
    }

    /// Runs an `openhuman.*` method; `timeout` bounds a call to the daemon (None: none).
    pub fn method(&self, name: &str, params: Value, timeout: Option<Duration>) -> Result<Value> {
        match &self.to {
            To::Daemon(socket) => self.rt.block_on(client::call_with(socket, name, params, timeout, |_| {})),
            To::Local(state) => {
                let Value::Object(params) = params else { bail!("the parameters of {name} must be an object") };
                let call = rpc::invoke(state.clone(), name, params, rpc::Caller::default());
                self.rt.block_on(call).map_err(|e| anyhow!("{e}"))
            }
        }
    }

    /// Calls a tool and returns its structured result; a tool error is an Err with its text.
    pub fn tool(&self, name: &str, args: Value) -> Result<Value> {
        let reply = match &self.to {
            To::Daemon(socket) => {
                let mut meta = Map::new();
                meta.insert(META_VERSION.into(), json!(MODERN));
                meta.insert(META_CLIENT_INFO.into(), client_info());
                let params = json!({ "name": name, "arguments": args, "_meta": meta });
                let call = client::call_with(socket, "tools/call", params, Some(Duration::from_secs(120)), |_| {});
                self.rt.block_on(call)?
            }
            To::Local(state) => {
                let Value::Object(args) = args else { bail!("the arguments of {name} must be an object") };
                let payload = self
                    .rt
                    .block_on(tools::call(state.clone(), name.to_string(), args, local_ctx()))
                    .map_err(|e| anyhow!("{}", e.message))?;
                match payload {
                    Payload::Value(v) => v,
                    Payload::Json(text) => serde_json::from_str(&text).context("reading the tool's result")?,
                }
            }
        };
        if reply["isError"] == true {
            bail!("{}", reply["content"][0]["text"].as_str().unwrap_or("the tool failed"));
        }
        Ok(reply["structuredContent"].clone())
    }

    /// Waits for what the command left to finish: in process, the audit rows of failed attempts
    /// and the fast tier's embedding.
    pub fn finish(self) {
        if let To::Local(state) = &self.to {
            self.rt.block_on(state.audit().flush());
            if let Ok(engine) = state.memory() {
                engine.wait_background_tier(openhuman_memory::TierKind::Fast);
            }
        }
    }
}

fn client_info() -> Value {
    json!({ "name": CLIENT, "version": openhuman_common::VERSION })
}

fn local_ctx() -> RequestCtx {
    request_ctx(CLIENT, Transport::Stdio)
}

/// A request context like the one the dispatcher makes for a stateless request from the client
/// named `client`: its writes and audit rows carry `mcp:<client>`.
pub fn request_ctx(client: &str, transport: Transport) -> RequestCtx {
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
    }
}
