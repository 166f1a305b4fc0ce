//! How a one-shot command reaches the memory store, decided here and nowhere else: through the
//! running daemon when one answers on the socket (it is the store's single writer and holds its
//! lock), else in this process on the store opened directly. Either way the same code runs:
//! `openhuman.*` methods go through `rpc::invoke`, and tools through `tools::call` — over the
//! socket as a stateless (2026-07-28) `tools/call` from the client `cli`, in process with the
//! same provenance — so a command gets the validation, policy and audit rows an MCP client gets.
//! Commands that need no store but talk to a daemon if there is one ([`Via::running`]), and
//! those that need the daemon stopped ([`stopped`], [`wait_stopped`]), ask the same question
//! here.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use openhuman_common::Paths;
use openhuman_config as config;
use openhuman_mcp::protocol::{META_CLIENT_INFO, META_VERSION, MODERN};
use openhuman_mcp::{Payload, RequestCtx, Transport};
use serde_json::{Map, Value, json};

use crate::state::AppState;
use crate::{backends, client, rpc, tools};

/// The one question: does a daemon accept connections on this home's socket?
fn serving(rt: &tokio::runtime::Runtime, paths: &Paths) -> bool {
    rt.block_on(client::daemon_up(&paths.socket))
}

/// Refuses while a daemon serves this home (it holds the store and would not see what `what`
/// does to it).
pub(crate) fn stopped(paths: &Paths, what: &str) -> Result<()> {
    if serving(&crate::runtime(Some(1))?, paths) {
        bail!(
            "a daemon is serving this home on {}; stop it with `openhumand-mcp stop` (and close MCP clients that \
             would start it again), then run {what} again",
            paths.socket.display()
        );
    }
    Ok(())
}

/// Waits at most `limit` for the daemon of this home to stop answering; false when it still does.
pub(crate) fn wait_stopped(paths: &Paths, limit: Duration) -> Result<bool> {
    let rt = crate::runtime(Some(1))?;
    let deadline = Instant::now() + limit;
    while serving(&rt, paths) {
        if Instant::now() > deadline {
            return Ok(false);
        }
        // The daemon says nothing when its socket goes; asking again after a short pause is the
        // only way to tell.
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(true)
}

/// The client name commands give: their audit rows and writes carry the source `mcp:cli`.
const CLIENT: &str = "cli";

pub(crate) struct Via {
    rt: tokio::runtime::Runtime,
    to: To,
}

enum To {
    Daemon(PathBuf),
    Local(AppState),
}

impl Via {
    /// The running daemon of `paths`, else the store opened here (an error when it cannot be).
    pub(crate) fn open(paths: &Paths) -> Result<Via> {
        let rt = crate::runtime(Some(2))?;
        let to = if serving(&rt, paths) {
            To::Daemon(paths.socket.clone())
        } else {
            let loaded = config::load(&paths.config_file)?;
            let engine = backends::open_memory(paths, &loaded.config).map_err(anyhow::Error::msg)?;
            To::Local(crate::server::state(paths.clone(), loaded.config, Ok(engine)))
        };
        Ok(Via { rt, to })
    }

    /// The running daemon of `paths`, or None when none answers: for commands that tell a
    /// daemon what they did, or ask one, and need no store of their own.
    pub(crate) fn running(paths: &Paths) -> Result<Option<Via>> {
        let rt = crate::runtime(Some(1))?;
        Ok(serving(&rt, paths).then(|| Via { rt, to: To::Daemon(paths.socket.clone()) }))
    }

    /// Runs an `openhuman.*` method; `timeout` bounds a call to the daemon (None: none).
    pub(crate) fn method(&self, name: &str, params: Value, timeout: Option<Duration>) -> Result<Value> {
        self.method_with(name, params, timeout, |_| {})
    }

    /// [`Via::method`], handing each progress report (the `params` of a
    /// `notifications/progress`: `progress`, `total`, `message`) to `on_progress`.
    pub(crate) fn method_with(
        &self,
        name: &str,
        params: Value,
        timeout: Option<Duration>,
        mut on_progress: impl FnMut(&Value),
    ) -> Result<Value> {
        match &self.to {
            To::Daemon(socket) => self.rt.block_on(client::call_with(socket, name, params, timeout, on_progress)),
            To::Local(state) => {
                let Value::Object(params) = params else { bail!("the parameters of {name} must be an object") };
                // The same progress the socket sends: notifications, read back here as they come.
                let (notify, mut reports) = tokio::sync::mpsc::channel::<String>(64);
                let progress = openhuman_mcp::Progress { notify, token: json!("cli") };
                let caller = rpc::Caller { progress: Some(progress), ..rpc::Caller::default() };
                let call = rpc::invoke(state.clone(), name, params, caller);
                let done = self.rt.block_on(async {
                    tokio::pin!(call);
                    loop {
                        tokio::select! {
                            done = &mut call => break done,
                            Some(text) = reports.recv() => {
                                if let Ok(msg) = serde_json::from_str::<Value>(&text) {
                                    on_progress(&msg["params"]);
                                }
                            }
                        }
                    }
                });
                done.map_err(|e| anyhow!("{e}"))
            }
        }
    }

    /// Calls a tool and returns its structured result; a tool error is an Err with its text.
    pub(crate) fn tool(&self, name: &str, args: Value) -> Result<Value> {
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
    pub(crate) fn finish(self) {
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
    crate::app::request_ctx(CLIENT, Transport::Stdio)
}
