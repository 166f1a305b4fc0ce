//! Daemon-wide state behind one cloneable handle: paths, the current config and agent registry
//! (both swapped whole on reload), the memory engine, the Act limiter, the audit writer, live
//! sessions and the shutdown signals. It is the floor of the daemon: it names no module above
//! it (tools, resources, the watcher, the dashboard, the method table). What those layers keep
//! here (the watcher's status, the dashboard's logins) and what the state asks of them on a
//! reload or a memory change they hand in as [`Upper`] when they build it (`server::state`).

use std::any::Any;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::Result;
use openhuman_common::Paths;
use openhuman_mcp::{Session, SessionSet};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agents::Registry;
use crate::audit_writer::AuditWriter;
use crate::policy::ActLimiter;
use crate::store_counts::StoreCounts;
use openhuman_config::{self as config, Config, MemoryEngineKind};
use openhuman_memory::MemoryEngine;

pub(crate) const MEMORY_NOT_OPEN: &str = "the memory engine was not opened in this process";

/// How long a memory call waits for a store that is still opening before it answers that it is.
/// Well under the 60 s a client commonly allows a request; a store of a few million chunks opens
/// within it.
const OPEN_WAIT: Duration = Duration::from_secs(20);

/// Where the memory engine stands. The daemon answers on its socket while a large store opens
/// (tens of seconds at 10M chunks), so a client that starts it is not left without an answer.
#[derive(Clone)]
enum Slot {
    /// Being opened on its own thread, since then.
    Opening(Instant),
    Open(MemoryEngine),
    /// Why there is none (a message naming the key to set or what to do).
    Closed(String),
}

impl Slot {
    /// How opening ended.
    fn of(memory: Result<MemoryEngine, String>) -> Slot {
        memory.map_or_else(Slot::Closed, Slot::Open)
    }

    /// Opened or failed to: no longer opening.
    fn settled(&self) -> bool {
        !matches!(self, Slot::Opening(_))
    }
}

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
    /// What a session sees of each list under the state's current config: a reload compares it
    /// before and after, so only the sessions whose lists changed are told.
    pub session_view: fn(&AppState, &Session) -> Visible,
}

/// The names one caller sees in each list: tools (in `tools/list` order), resources with
/// resource templates, prompts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Visible {
    pub tools: Vec<String>,
    pub resources: Vec<String>,
    pub prompts: Vec<String>,
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

/// What a reload changed for some caller.
struct Changed {
    tools: bool,
    prompts: bool,
}

#[derive(Clone)]
pub(crate) struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    paths: Paths,
    config: RwLock<Arc<Config>>,
    agents: RwLock<Arc<Registry>>,
    /// The memory engine, opening, or why there is none (a message naming the key to set).
    memory: watch::Sender<Slot>,
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
    /// The store's counts for `status`, bounded in time (see `store_counts`).
    store_counts: StoreCounts,
}

impl AppState {
    /// The state with `memory` already settled: open, or why not.
    pub(crate) fn with_memory(
        paths: Paths,
        config: Config,
        memory: Result<MemoryEngine, String>,
        upper: Upper,
    ) -> AppState {
        Self::build(paths, config, Slot::of(memory), upper)
    }

    /// The state with the memory store still to open: the caller opens it on a thread of its
    /// own and hands the outcome to [`Self::memory_opened`]. Until then memory calls wait up to
    /// [`OPEN_WAIT`], then answer that the store is opening; everything else serves at once.
    pub(crate) fn opening_memory(paths: Paths, config: Config, upper: Upper) -> AppState {
        Self::build(paths, config, Slot::Opening(Instant::now()), upper)
    }

    fn build(paths: Paths, config: Config, slot: Slot, upper: Upper) -> AppState {
        let agents = Registry::load(&paths.config_dir);
        let (memory, _) = watch::channel(slot);
        let mut rx = memory.subscribe();
        // The writer takes the engine when it first has rows to write: until the store opens,
        // rows queue (the calls that make them do not wait for it).
        let audit = AuditWriter::start(Box::new(move || {
            let settled = futures::executor::block_on(rx.wait_for(Slot::settled));
            match settled.as_deref() {
                Ok(Slot::Open(engine)) => Some(engine.clone()),
                _ => None,
            }
        }));
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
                store_counts: StoreCounts::default(),
            }),
        }
    }

    pub(crate) fn store_counts(&self) -> &StoreCounts {
        &self.inner.store_counts
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

    /// The memory engine now, or a message saying why it is unavailable and what to do (set a
    /// key; wait for a store that is still opening).
    pub(crate) fn memory(&self) -> Result<MemoryEngine, String> {
        match &*self.inner.memory.borrow() {
            Slot::Open(engine) => Ok(engine.clone()),
            Slot::Closed(why) => Err(why.clone()),
            Slot::Opening(since) => Err(format!(
                "the memory store is still opening ({} s so far; a store of millions of chunks takes a minute or \
                 two to load its indexes); try again shortly, `openhumand-mcp status` shows when it is open",
                since.elapsed().as_secs()
            )),
        }
    }

    /// [`Self::memory`], after waiting up to [`OPEN_WAIT`] for a store that is still opening.
    pub(crate) async fn memory_ready(&self) -> Result<MemoryEngine, String> {
        let _ = tokio::time::timeout(OPEN_WAIT, self.memory_settled()).await;
        self.memory()
    }

    /// Waits, without bound, until the store has opened or failed to (for work that only starts
    /// once it can use the store, such as the folder watcher).
    pub(crate) async fn memory_settled(&self) {
        let mut rx = self.inner.memory.subscribe();
        let _ = rx.wait_for(Slot::settled).await;
    }

    /// Whether the store is still being opened.
    pub(crate) fn memory_opening(&self) -> bool {
        !self.inner.memory.borrow().settled()
    }

    /// Hands in how opening the store ended (see [`Self::opening_memory`]).
    pub(crate) fn memory_opened(&self, memory: Result<MemoryEngine, String>) {
        self.inner.memory.send_replace(Slot::of(memory));
    }

    /// What keeps this daemon from doing what its config asks, each a sentence naming the cause
    /// (a store that did not open, an embedder without a model, a config file whose last reload
    /// failed). Empty when it is ready; a memory engine switched off on purpose is not a problem.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        match &*self.inner.memory.borrow() {
            Slot::Closed(why) if !self.inner.memory_off && why != MEMORY_NOT_OPEN => {
                problems.push(format!("memory store unavailable: {why}"));
            }
            Slot::Opening(since) => {
                problems.push(format!("memory store still opening ({} s so far)", since.elapsed().as_secs()));
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
    /// kept among the `problems` until a reload succeeds. Each session whose lists changed (a
    /// user agent added or removed, a `[clients]` entry edited, a tool now usable) is told which
    /// ones did; returns what changed for anyone.
    fn reload(&self) -> Result<Changed> {
        let loaded = config::load(&self.inner.paths.config_file);
        *self.inner.reload_error.write().expect("reload error lock") = loaded.as_ref().err().map(|e| e.to_string());
        let loaded = loaded?;
        let old = self.config();
        let tools_changed = (self.inner.upper.listed_tools)(&old) != (self.inner.upper.listed_tools)(&loaded.config);
        let clients_changed = old.clients != loaded.config.clients;
        let agents = Registry::load(&self.inner.paths.config_dir);
        let prompts_changed = self.agents().agents.keys().ne(agents.agents.keys());
        let view = self.inner.upper.session_view;
        let sessions = self.sessions().all();
        let before: Vec<Visible> = sessions.iter().map(|s| view(self, s)).collect();
        *self.inner.config.write().expect("config lock") = Arc::new(loaded.config);
        *self.inner.agents.write().expect("agents lock") = Arc::new(agents);
        (self.inner.upper.on_reload)();
        let mut changed =
            Changed { tools: tools_changed || clients_changed, prompts: prompts_changed || clients_changed };
        let mut told = (Vec::new(), Vec::new(), Vec::new());
        for (s, was) in sessions.iter().zip(before) {
            let now = view(self, s);
            if was.tools != now.tools {
                told.0.push(s.id);
            }
            // The watcher tells everyone of a changed list of watched folders itself.
            if clients_changed && was.resources != now.resources {
                told.1.push(s.id);
            }
            if was.prompts != now.prompts {
                told.2.push(s.id);
            }
        }
        changed.tools |= !told.0.is_empty();
        let sessions = self.sessions();
        sessions.notify_sessions_where("notifications/tools/list_changed", |s| told.0.contains(&s.id));
        sessions.notify_sessions_where("notifications/resources/list_changed", |s| told.1.contains(&s.id));
        sessions.notify_sessions_where("notifications/prompts/list_changed", |s| told.2.contains(&s.id));
        // A `subscriptions/listen` stream is not tied to one client's entry: it hears every change
        // that may concern it (a fresh list is all an extra notice costs).
        if changed.tools {
            sessions.listeners.tools_changed();
        }
        if changed.prompts {
            sessions.listeners.prompts_changed();
        }
        if clients_changed {
            sessions.listeners.resources_list_changed();
        }
        Ok(changed)
    }

    /// A reload asked of the running daemon (SIGHUP, `openhuman.config_reload`): [`Self::reload`],
    /// then what the new config turns on (see [`Upper::turn_on`]).
    pub async fn reload_live(&self) -> Result<Reloaded> {
        let changed = self.reload()?;
        Ok(Reloaded { tools_changed: changed.tools, turned_on: (self.inner.upper.turn_on)(self.clone()).await })
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
