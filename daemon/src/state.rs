//! Daemon-wide state behind one cloneable handle: paths, the current config and agent registry
//! (both swapped whole on reload), the memory engine, the Act limiter, the audit writer, live
//! sessions and the shutdown signals. It is the floor of the daemon: it names no module above
//! it (tools, resources, the watcher, the dashboard, the method table). What those layers keep
//! here (the watcher's status, the dashboard's logins) and what the state asks of them on a
//! reload or a memory change they hand in as [`Upper`] when they build it (`server::state`).

use std::any::Any;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use anyhow::Result;
use openhuman_common::Paths;
use openhuman_mcp::SessionSet;
use tokio_util::sync::CancellationToken;

use crate::agents::Registry;
use crate::audit_writer::AuditWriter;
use crate::policy::ActLimiter;
use openhuman_config::{self as config, Config, MemoryEngineKind};
use openhuman_memory::MemoryEngine;

pub(crate) const MEMORY_NOT_OPEN: &str = "the memory engine was not opened in this process";

/// What the layers above hand the state when they build it, so that it can keep and tell them
/// things without naming them.
pub(crate) struct Upper {
    /// Parts those layers keep in the state, each found again by its type (see [`AppState::part`]).
    pub parts: Vec<Box<dyn Any + Send + Sync>>,
    /// Run after a reload swapped the new config in (the watcher re-reads its sources).
    pub on_reload: Box<dyn Fn() + Send + Sync>,
    /// Run after a live reload (SIGHUP, `openhuman.config_reload`): what the new config turns on
    /// in the running process (the HTTP transport), said as its address or why it did not start.
    pub turn_on: fn(AppState) -> futures::future::BoxFuture<'static, TurnedOn>,
    /// The names of the tools a config lists: a reload compares them before and after.
    pub listed_tools: fn(&Config) -> Vec<&'static str>,
    /// The resource every memory change is told as (the memory overview).
    pub memory_uri: &'static str,
}

/// What a live reload turned on: HTTP's address, or why it did not start; None for nothing.
pub type TurnedOn = Option<Result<String, String>>;

/// What a live reload did.
pub struct Reloaded {
    /// The set of listed tools changed (clients were told).
    pub tools_changed: bool,
    /// It turned HTTP on: the dashboard's address, or why HTTP did not start.
    pub turned_on: TurnedOn,
}

#[derive(Clone)]
pub(crate) struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    paths: Paths,
    config: RwLock<Arc<Config>>,
    agents: RwLock<Arc<Registry>>,
    /// The memory engine, or why there is none (a message naming the key to set).
    memory: Result<MemoryEngine, String>,
    /// Whether the config the state was built with switched the engine off on purpose.
    memory_off: bool,
    /// Why the last reload failed (the previous config stays in force); `None` once one works.
    reload_error: RwLock<Option<String>>,
    /// Act calls in the sliding hour, across sessions, transports and reloads.
    limiter: ActLimiter,
    audit: AuditWriter,
    started: Instant,
    sessions: Arc<SessionSet>,
    upper: Upper,
    /// Stop accepting and reading; in-flight calls may finish.
    shutdown: CancellationToken,
    /// Abandon in-flight calls (after the grace period).
    abort: CancellationToken,
}

impl AppState {
    pub(crate) fn with_memory(
        paths: Paths,
        config: Config,
        memory: Result<MemoryEngine, String>,
        upper: Upper,
    ) -> AppState {
        let agents = Registry::load(&paths.config_dir);
        let audit = AuditWriter::start(memory.clone());
        let memory_off = config.memory.engine == MemoryEngineKind::Off;
        AppState {
            inner: Arc::new(Inner {
                paths,
                config: RwLock::new(Arc::new(config)),
                agents: RwLock::new(Arc::new(agents)),
                memory_off,
                reload_error: RwLock::new(None),
                memory,
                limiter: ActLimiter::default(),
                audit,
                started: Instant::now(),
                sessions: Arc::default(),
                upper,
                shutdown: CancellationToken::new(),
                abort: CancellationToken::new(),
            }),
        }
    }

    pub(crate) fn paths(&self) -> &Paths {
        &self.inner.paths
    }

    pub(crate) fn config(&self) -> Arc<Config> {
        self.inner.config.read().expect("config lock").clone()
    }

    pub(crate) fn agents(&self) -> Arc<Registry> {
        self.inner.agents.read().expect("agents lock").clone()
    }

    /// The memory engine, or a message saying why it is unavailable and what to set.
    pub(crate) fn memory(&self) -> Result<MemoryEngine, String> {
        self.inner.memory.clone()
    }

    /// What keeps this daemon from doing what its config asks, each a sentence naming the cause
    /// (a store that did not open, an embedder without a model, a config file whose last reload
    /// failed). Empty when it is ready; a memory engine switched off on purpose is not a problem.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        match &self.inner.memory {
            Err(why) if !self.inner.memory_off && why != MEMORY_NOT_OPEN => {
                problems.push(format!("memory store unavailable: {why}"));
            }
            _ => {}
        }
        if let Some(why) = self.inner.reload_error.read().expect("reload error lock").as_ref() {
            problems.push(format!(
                "the config was not reloaded, the previous one stays in force: {why}; fix it, then reload (`kill -HUP {}`) or restart the daemon",
                std::process::id()
            ));
        }
        problems
    }

    pub(crate) fn limiter(&self) -> &ActLimiter {
        &self.inner.limiter
    }

    pub(crate) fn audit(&self) -> &AuditWriter {
        &self.inner.audit
    }

    pub(crate) fn uptime_ms(&self) -> u128 {
        self.inner.started.elapsed().as_millis()
    }

    pub(crate) fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    pub(crate) fn abort_token(&self) -> &CancellationToken {
        &self.inner.abort
    }

    /// Re-reads config and user agents. On error the old values stay, the error is returned and
    /// kept among the `problems` until a reload succeeds.
    /// Returns true when the set of listed tools changed. A change of the prompt list (a user
    /// agent added or removed) is told to clients here.
    pub(crate) fn reload(&self) -> Result<bool> {
        let loaded = config::load(&self.inner.paths.config_file);
        *self.inner.reload_error.write().expect("reload error lock") = loaded.as_ref().err().map(|e| e.to_string());
        let loaded = loaded?;
        let before = (self.inner.upper.listed_tools)(&self.config());
        let after = (self.inner.upper.listed_tools)(&loaded.config);
        let agents = Registry::load(&self.inner.paths.config_dir);
        let prompts_changed = self.agents().agents.keys().ne(agents.agents.keys());
        *self.inner.config.write().expect("config lock") = Arc::new(loaded.config);
        *self.inner.agents.write().expect("agents lock") = Arc::new(agents);
        (self.inner.upper.on_reload)();
        if prompts_changed {
            self.sessions().notify_prompts_changed();
        }
        Ok(before != after)
    }

    /// A reload asked of the running daemon (SIGHUP, `openhuman.config_reload`): [`Self::reload`],
    /// clients told when the tool list changed, then what the new config turns on (see
    /// [`Upper::turn_on`]).
    pub async fn reload_live(&self) -> Result<Reloaded> {
        let tools_changed = self.reload()?;
        if tools_changed {
            self.sessions().notify_tools_changed();
        }
        Ok(Reloaded { tools_changed, turned_on: (self.inner.upper.turn_on)(self.clone()).await })
    }

    /// The part of type `T` a layer above keeps here. Each is handed in when the state is built,
    /// so a missing one is a bug in that building, not a condition to handle.
    pub(crate) fn part<T: Any + Send + Sync>(&self) -> &T {
        let found = self.inner.upper.parts.iter().find_map(|p| p.downcast_ref::<T>());
        found.unwrap_or_else(|| panic!("the state was built without its {}", std::any::type_name::<T>()))
    }

    /// Tells subscribed clients that memory changed: the overview resource, plus `uris` (the
    /// sources and watched folders concerned).
    pub(crate) fn memory_changed(&self, uris: &[String]) {
        let sessions = self.sessions();
        sessions.notify_resource_updated(self.inner.upper.memory_uri);
        for u in uris {
            sessions.notify_resource_updated(u);
        }
    }

    /// The live MCP sessions of every transport.
    pub(crate) fn sessions(&self) -> &Arc<SessionSet> {
        &self.inner.sessions
    }
}
