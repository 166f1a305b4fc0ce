//! `serve` and `stdio`: the long-running daemon and the one in-process session. `start` loads
//! the config, binds the socket (and HTTP, with its token and bounds) and opens the store on a
//! thread of its own, serving meanwhile (memory calls wait for it a while);
//! `run` takes the listener and lives until the shutdown token fires (signal, `stop`, idle
//! timeout); then it stops accepting, lets in-flight calls finish within the grace period,
//! abandons the rest, and removes its socket. A reload that turns `[mcp.http].enabled` on starts
//! the HTTP transport in the running daemon (`start_http`); turning it off takes a restart.

use std::time::Duration;

use anyhow::{Context, Result};
use openhuman_common::Paths;
use openhuman_config as config;
use openhuman_mcp::transport;
use openhuman_mcp::transport::limits::Rate;
use tokio_util::task::TaskTracker;

use openhuman_mcp::Dispatcher;
use openhuman_mcp::transport::socket::{self, SocketListener};

use crate::cli::{self, Cli, Command};
use crate::state::{AppState, Upper, Visible};
use crate::{EXIT_OK, backends, http_auth, logging, watch};

/// The daemon's state with what the layers above the floor keep in it: the folder watcher's
/// shared side (told of every reload), the dashboard's logins, the tool catalog and the
/// per-session views a reload compares, and the overview resource a memory change is told as.
pub(crate) fn state(
    paths: Paths,
    config: config::Config,
    memory: Result<openhuman_memory::MemoryEngine, String>,
) -> AppState {
    AppState::with_memory(paths, config, memory, upper())
}

/// The state of `serve` and `stdio`: answering at once while the memory store opens on a
/// thread of its own (a store of millions of chunks takes tens of seconds to load its indexes,
/// longer than a client waits for the server it launched to answer).
fn state_opening(paths: Paths, config: config::Config) -> AppState {
    let state = AppState::opening_memory(paths.clone(), config.clone(), upper());
    let opened = state.clone();
    let spawned = std::thread::Builder::new().name("memory-open".into()).spawn(move || {
        let started = std::time::Instant::now();
        let memory = backends::open_memory(&paths, &config);
        if memory.is_ok() {
            tracing::info!(ms = started.elapsed().as_millis() as u64, "memory store open");
        }
        opened.memory_opened(memory);
    });
    if let Err(e) = spawned {
        state.memory_opened(Err(format!("the memory store could not be opened: no thread to open it on ({e})")));
    }
    state
}

/// What the layers above the floor keep in the state (see [`state`]).
fn upper() -> Upper {
    let watch = std::sync::Arc::new(crate::watch::Watch::default());
    let reloaded = watch.clone();
    Upper {
        parts: vec![Box::new(watch), Box::new(crate::ui::Dashboard::default()), Box::new(HttpStarter::default())],
        on_reload: Box::new(move || reloaded.reload()),
        turn_on: |state| Box::pin(async move { start_http(&state).await }),
        listed_tools: crate::tools::listed_names,
        memory_uri: crate::live_resources::MEMORY_URI,
        session_view,
    }
}

/// What a session sees of each list under the state's current config (its `[clients]` set), by
/// name: the tools in catalog order, the resources and templates, the prompts.
fn session_view(state: &AppState, session: &openhuman_mcp::Session) -> Visible {
    use openhuman_config::clients::Kind;
    let (config, who) = (state.config(), crate::clients::Who::of_session(session));
    let sees = |kind, name: &str| who.sees(&config, kind, name);
    let tools = crate::tools::listed(&config).into_iter().filter(|t| sees(Kind::Tool, t.name)).map(|t| t.name.into());
    let mut resources: Vec<String> = openhuman_mcp::App::resources(state).into_iter().map(|r| r.uri).collect();
    resources.extend(crate::live_resources::templates().into_iter().map(|t| t.uri_template));
    resources.retain(|r| sees(Kind::Resource, r));
    let prompts = crate::prompts::list(&state.agents()).into_iter().map(|p| p.name).filter(|p| sees(Kind::Prompt, p));
    Visible { tools: tools.collect(), resources, prompts: prompts.collect() }
}

pub(crate) struct ServeOptions {
    /// Stop after this long with no session.
    pub idle_timeout: Option<Duration>,
    /// The socket's bounds (connections at once, new ones per second).
    pub socket: socket::SocketOptions,
    /// Serve Streamable HTTP too, on this already-bound listener.
    pub http: Option<(tokio::net::TcpListener, openhuman_mcp::transport::http::HttpOptions)>,
}

pub(crate) async fn run(state: AppState, listener: SocketListener, opts: ServeOptions) -> Result<()> {
    let shutdown = state.shutdown_token().clone();
    let dispatcher = dispatcher(&state);
    let conns = TaskTracker::new();
    let owned_path = listener.owned_path().map(|p| p.to_path_buf());
    spawn_signal_handlers(&state)?;
    tracing::info!(socket = %state.paths().socket.display(), "daemon listening; the memory store is opening");
    tokio::spawn(say_ready(state.clone()));
    if let Some((tcp, http_opts)) = opts.http {
        serve_http(&state, &dispatcher, &conns, tcp, http_opts);
    }
    // From here a reload may start HTTP on the same tracker.
    *state.part::<HttpStarter>().conns.lock().await = Some(conns.clone());
    let accept = tokio::spawn(socket::accept_loop(listener, dispatcher, opts.socket, shutdown.clone(), conns.clone()));
    if let Some(idle) = opts.idle_timeout {
        tokio::spawn(idle_watch(state.clone(), idle));
    }

    shutdown.cancelled().await;
    tracing::info!("shutting down: no new connections; finishing in-flight calls");
    state.part::<HttpStarter>().conns.lock().await.take();
    let _ = accept.await;
    conns.close();
    let grace = Duration::from_secs(state.config().mcp.shutdown_grace_secs);
    if tokio::time::timeout(grace, conns.wait()).await.is_err() {
        tracing::warn!(grace_secs = grace.as_secs(), "in-flight calls did not finish in time; abandoning them");
        state.abort_token().cancel();
        let _ = tokio::time::timeout(Duration::from_secs(2), conns.wait()).await;
    }
    // Every queued audit row is on disk before we exit.
    state.audit().flush().await;
    if let Some(path) = owned_path {
        let _ = std::fs::remove_file(&path);
    }
    tracing::info!("daemon stopped");
    Ok(())
}

/// Logs whether the daemon is ready once the store has opened or failed to. Ready only when it
/// can do what its config asks; otherwise it serves (the other tools work, and `status` can say
/// what is wrong) but says so instead.
async fn say_ready(state: AppState) {
    state.memory_settled().await;
    let problems = state.problems();
    if problems.is_empty() {
        tracing::info!(
            pid = std::process::id(),
            version = openhuman_common::VERSION,
            socket = %state.paths().socket.display(),
            "daemon ready"
        );
    } else {
        tracing::error!(
            pid = std::process::id(),
            socket = %state.paths().socket.display(),
            "daemon degraded, not ready: {}; `openhumand-mcp status` reports it",
            problems.join("; ")
        );
    }
}

/// Serves Streamable HTTP (with the dashboard under `/ui`) on `tcp`, tracked with the socket
/// sessions so the same grace period bounds its drain.
fn serve_http(
    state: &AppState,
    dispatcher: &Dispatcher<AppState>,
    conns: &TaskTracker,
    tcp: tokio::net::TcpListener,
    mut http_opts: transport::http::HttpOptions,
) {
    // The dashboard rides on the HTTP port; its links name the address actually bound.
    if let Ok(addr) = tcp.local_addr() {
        let ip = if addr.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { addr.ip() };
        let base = format!("http://{}", std::net::SocketAddr::new(ip, addr.port()));
        // Any credential on the MCP routes means the dashboard needs its login too: serving
        // OAuth alone does not make it open.
        state.dashboard().serving(base, http_opts.token.is_some() || http_opts.oauth.is_some());
    }
    http_opts.ui = Some(crate::ui::router(state.clone()));
    let (d, st) = (dispatcher.clone(), state.clone());
    conns.spawn(async move {
        if let Err(e) = transport::http::serve(tcp, d, http_opts, st.shutdown_token().clone()).await {
            tracing::error!("HTTP transport failed; stopping: {e:#}");
            st.shutdown_token().cancel();
        }
    });
}

/// Binds the HTTP listener `opts` names, then sets its OAuth options from `config` (the
/// default resource URI names the port actually bound).
async fn bind_http(
    opts: &mut transport::http::HttpOptions,
    config: &config::Config,
) -> Result<tokio::net::TcpListener> {
    let tcp = tokio::net::TcpListener::bind((opts.host.as_str(), opts.port))
        .await
        .with_context(|| format!("cannot listen for HTTP on {}:{}", opts.host, opts.port))?;
    let addr = tcp.local_addr()?;
    opts.oauth = crate::oauth::options(config, &opts.host, addr);
    tracing::info!(addr = %addr, auth = opts.token.is_some(), oauth = opts.oauth.is_some(), "HTTP transport listening");
    Ok(tcp)
}

/// Where a running daemon's reload starts HTTP: the tracker of its connections while `run`
/// serves (None in `stdio`, and once shutdown began). The lock also keeps two reloads from
/// binding twice.
#[derive(Default)]
pub(crate) struct HttpStarter {
    conns: tokio::sync::Mutex<Option<TaskTracker>>,
}

/// After a live reload (`AppState::reload_live`): when the config now says
/// `[mcp.http].enabled = true` and HTTP does not serve yet, starts HTTP in this process, with its
/// token and bounds from the config, as `serve` would. None when there was nothing to start.
async fn start_http(state: &AppState) -> Option<Result<String, String>> {
    let config = state.config();
    if !config.mcp.http.enabled || state.dashboard().url().is_some() {
        return None;
    }
    let guard = state.part::<HttpStarter>().conns.lock().await;
    let conns = guard.as_ref()?;
    if state.dashboard().url().is_some() {
        return None;
    }
    let started = async {
        let mut opts = http_options(None, state.paths(), &config)?.context("[mcp.http] is not enabled")?;
        let tcp = bind_http(&mut opts, &config).await?;
        serve_http(state, &dispatcher(state), conns, tcp, opts);
        state.dashboard().url().context("HTTP started without an address")
    }
    .await;
    if let Err(e) = &started {
        tracing::error!("the reload turned HTTP on, but it did not start: {e:#}");
    }
    Some(started.map_err(|e| format!("{e:#}")))
}

/// The one dispatcher over the daemon's state: its sessions are the state's, and the state's
/// abort token cancels every call when the grace period is over.
pub(crate) fn dispatcher(state: &AppState) -> Dispatcher<AppState> {
    Dispatcher::new(std::sync::Arc::new(state.clone()), state.sessions().clone(), state.abort_token().clone())
}

/// Installs the signal handlers now (a signal that arrives before its handler exists would
/// kill the process: SIGHUP's default action is to terminate) and serves them on tasks.
fn spawn_signal_handlers(state: &AppState) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut hup = signal(SignalKind::hangup())?;
        let st = state.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received"),
                _ = int.recv() => tracing::info!("SIGINT received"),
            }
            st.shutdown_token().cancel();
        });
        let st = state.clone();
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                match st.reload_live().await {
                    Ok(r) => tracing::info!(tools_changed = r.tools_changed, "config reloaded"),
                    Err(e) => tracing::error!("config reload failed; keeping the previous config: {e:#}"),
                }
            }
        });
    }
    #[cfg(not(unix))]
    {
        let st = state.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            st.shutdown_token().cancel();
        });
    }
    Ok(())
}

/// Fires shutdown once no session has been open for `idle`.
async fn idle_watch(state: AppState, idle: Duration) {
    let mut count = state.sessions().count();
    loop {
        if *count.borrow_and_update() == 0 {
            tokio::select! {
                _ = tokio::time::sleep(idle) => {
                    tracing::info!(idle_secs = idle.as_secs(), "no sessions for the idle timeout; stopping");
                    state.shutdown_token().cancel();
                    return;
                }
                changed = count.changed() => if changed.is_err() { return },
            }
        } else if count.changed().await.is_err() {
            return;
        }
    }
}

/// `serve` and `stdio`: the config loaded, the store opened, and the server run until it stops.
pub(crate) fn start(cli: &Cli) -> Result<i32> {
    match &cli.command {
        Command::Stdio => {
            logging::init_stderr("warn", cli.verbose);
            let paths = crate::resolve_paths(cli, None)?;
            crate::tighten_home(cli, &paths)?;
            let loaded = config::load(&paths.config_file)?;
            let state = state_opening(paths, loaded.config);
            let rt = crate::runtime(Some(2))?;
            rt.block_on(async {
                let dispatcher = dispatcher(&state);
                transport::stdio::serve(dispatcher, state.shutdown_token().clone()).await;
                state.audit().flush().await;
            });
            rt.shutdown_timeout(Duration::from_secs(1));
            Ok(EXIT_OK)
        }
        Command::Serve(args) => {
            let paths = crate::resolve_paths(cli, args.socket.socket.as_deref())?;
            let _guard = logging::init_daemon(&paths.log_dir, cli.verbose)?;
            crate::tighten_home(cli, &paths)?;
            let loaded = config::load(&paths.config_file)?;
            let http = http_options(Some(args), &paths, &loaded.config)?;
            // Before any runtime thread exists: taking it edits the environment.
            let activated = transport::socket::take_activated()?;
            let rt = crate::runtime(None)?;
            rt.block_on(async {
                let listener = match activated {
                    Some(l) => {
                        tracing::info!("using the socket passed by the service manager");
                        transport::socket::from_activated(l)?
                    }
                    None => transport::socket::bind(&paths.socket).map_err(|e| match e {
                        transport::TransportError::InUse(path) => anyhow::anyhow!(
                            "another openhumand-mcp is already serving on {}; use `openhumand-mcp status` to see it or \
                             `openhumand-mcp stop` to stop it",
                            path.display()
                        ),
                        other => other.into(),
                    })?,
                };
                // Opened once the socket is ours: a second daemon started by mistake stops at
                // the bind above without touching the store.
                let state = state_opening(paths.clone(), loaded.config);
                let http = match http {
                    Some(mut h) => Some((bind_http(&mut h, &state.config()).await?, h)),
                    None => None,
                };
                watch::spawn(state.clone());
                let opts = ServeOptions {
                    idle_timeout: args.idle_timeout.filter(|s| *s > 0).map(Duration::from_secs),
                    socket: socket_options(state.config().as_ref()),
                    http,
                };
                run(state, listener, opts).await
            })?;
            rt.shutdown_timeout(Duration::from_secs(2));
            Ok(EXIT_OK)
        }
        _ => unreachable!("start only handles serve and stdio"),
    }
}

/// HTTP settings from flags, environment and config; None when HTTP is off. HTTP needs a bearer
/// token (see `http_auth`): one the user set, else the generated one; only loopback binds may
/// go without, and only when `[mcp.http].allow_no_token` says so. `args` None: the config alone
/// (a reload).
fn http_options(
    args: Option<&cli::ServeArgs>,
    paths: &Paths,
    config: &config::Config,
) -> Result<Option<transport::http::HttpOptions>> {
    let h = &config.mcp.http;
    if args.is_some_and(|a| a.auth_token.is_some()) {
        anyhow::bail!(
            "--auth-token is not accepted: a token on the command line is readable by every user of this machine \
             (/proc/<pid>/cmdline, `ps`), so treat that one as leaked and make a new one; put the token in a file \
             only you can read and pass --auth-token-file FILE, or set OPENHUMAN_MCP_AUTH_TOKEN, or \
             [mcp.http].auth_token_file"
        );
    }
    let (flag, host, port, token_file) = match args {
        Some(a) => (a.http, a.host.clone(), a.port, a.auth_token_file.as_deref()),
        None => (false, None, None, None),
    };
    if !(flag || h.enabled) {
        if host.is_some() || port.is_some() || token_file.is_some() {
            anyhow::bail!("--host/--port/--auth-token-file apply to HTTP: add --http or set [mcp.http].enabled = true");
        }
        return Ok(None);
    }
    let host = host.unwrap_or_else(|| h.host.clone());
    let port = port.unwrap_or(h.port);
    let loopback = openhuman_common::is_loopback_host(&host);
    let oauth_only = h.oauth.as_ref().is_some_and(|o| !o.accept_static_token);
    let token = match http_auth::chosen(config, token_file)? {
        // OAuth alone: no static token is made or accepted.
        _ if oauth_only => None,
        Some((token, _)) => Some(token),
        None if !loopback => anyhow::bail!(
            "refusing to serve HTTP on non-loopback address {host} without a token you chose: set OPENHUMAN_MCP_AUTH_TOKEN, --auth-token-file or [mcp.http].auth_token_file"
        ),
        None if h.allow_no_token => {
            tracing::warn!(
                "HTTP serves WITHOUT a token ([mcp.http].allow_no_token = true): every user of this machine can read, \
                 change and delete your memory and stop the daemon through {host}:{port}"
            );
            None
        }
        None => Some(http_auth::token(paths, config, None)?.0),
    };
    Ok(Some(transport::http::HttpOptions {
        host,
        port,
        token,
        allowed_origins: h.allowed_origins.clone(),
        max_sessions: h.max_sessions,
        session_idle: Duration::from_secs(h.session_idle_secs),
        sse_keepalive: Duration::from_secs(h.sse_keepalive_secs),
        max_body_bytes: h.max_body_bytes,
        request_timeout: Duration::from_secs(h.request_timeout_secs),
        max_connections: connection_cap("[mcp.http].max_connections", h.max_connections, 2),
        max_connections_per_peer: h.max_connections_per_peer,
        new_sessions: Rate::new(h.new_sessions_per_sec, h.new_sessions_burst),
        // The dashboard is added by `server::run`, which has the state it needs.
        ui: None,
        // Set once bound (`bind_http`): the default resource URI names the port.
        oauth: None,
    }))
}

/// The socket's bounds from `[mcp]`.
fn socket_options(config: &config::Config) -> transport::socket::SocketOptions {
    let m = &config.mcp;
    transport::socket::SocketOptions {
        max_connections: connection_cap("[mcp].max_socket_connections", m.max_socket_connections, 4),
        new_connections: Rate::new(m.socket_connects_per_sec, m.socket_connect_burst),
    }
}

/// A connection cap (`key`), lowered to the process's open-file limit divided by `share` (HTTP
/// half, the socket a quarter), so connections can never take the descriptors the other
/// transport, the store and the logs need.
fn connection_cap(key: &str, configured: usize, share: usize) -> usize {
    let cap = match open_file_limit() {
        Some(limit) if configured > limit / share => {
            let lowered = (limit / share).max(1);
            tracing::warn!(
                configured,
                open_file_limit = limit,
                lowered,
                "{key} lowered to a share of the open-file limit"
            );
            lowered
        }
        _ => configured,
    };
    cap.max(1)
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn open_file_limit() -> Option<usize> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit(2) writes into the struct we pass and reads nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then(|| usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::admit_as;

    /// Prompts and completions read through a tool, and meet that tool's gate: listed under the
    /// config, and admitted by the policy when it acts.
    #[tokio::test]
    async fn other_surfaces_meet_the_gate_of_the_tool_they_read_through() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config::Config::default();
        config.autonomy.level = openhuman_config::AutonomyLevel::Readonly;
        let paths = Paths::under_home(dir.path());
        let state = state(paths, config, Err(crate::state::MEMORY_NOT_OPEN.to_string()));
        admit_as(&state, "memory.recall").unwrap();
        admit_as(&state, "tree.read_chunk").unwrap();
        let denied = admit_as(&state, "memory.store").unwrap_err();
        assert!(crate::policy::Denial::is_denial_text(&denied.message), "{denied:?}");
        assert_eq!(admit_as(&state, "no.such_tool").unwrap_err().code, -32603);
    }

    /// While the store opens, the daemon serves: a memory call made meanwhile waits and gets the
    /// engine once it is open, `status` can tell it is opening, and an audit row queued before
    /// the store opened is written into it.
    #[tokio::test]
    async fn memory_calls_made_while_the_store_opens_are_answered_once_it_is_open() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::under_home(dir.path());
        let config = config::Config::default();
        let state = AppState::opening_memory(paths.clone(), config.clone(), upper());
        assert!(state.memory_opening());
        let now = state.memory().err().unwrap();
        assert!(now.contains("still opening") && now.contains("openhumand-mcp status"), "{now}");
        assert_eq!(state.problems().len(), 1, "not ready while it opens: {:?}", state.problems());
        let row = openhuman_memory::AuditRow {
            ts_ms: 1,
            tool: "memory.store".into(),
            source: "mcp:test".into(),
            error: Some("denied".into()),
            ..Default::default()
        };
        state.audit().record(row);
        let waiting = tokio::spawn({
            let state = state.clone();
            async move { state.memory_ready().await }
        });
        let engine = crate::pool::run(move || backends::open_memory(&paths, &config)).await.unwrap();
        state.memory_opened(Ok(engine.unwrap()));
        let engine = waiting.await.unwrap().expect("the waiting call gets the engine");
        assert!(!state.memory_opening());
        state.audit().flush().await;
        let rows = engine.query_audit(openhuman_memory::AuditQuery::default()).unwrap();
        assert_eq!(rows.iter().filter(|r| r.tool == "memory.store" && !r.success).count(), 1, "{rows:?}");
    }

    /// A store that does not open in the call's wait: the call answers that it is still opening
    /// (time is paused, so the wait passes without a real delay).
    #[tokio::test(start_paused = true)]
    async fn a_memory_call_gives_up_on_a_store_still_opening_with_a_clear_message() {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::opening_memory(Paths::under_home(dir.path()), config::Config::default(), upper());
        let why = state.memory_ready().await.err().unwrap();
        assert!(why.contains("still opening") && why.contains("try again"), "{why}");
        state.memory_opened(Err("disk on fire".into()));
        assert_eq!(state.memory().err().unwrap(), "disk on fire");
        assert_eq!(state.problems().len(), 1);
    }
}
