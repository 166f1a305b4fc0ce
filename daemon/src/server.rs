//! `serve`: the long-running daemon. `run` takes its listener and lives until the shutdown token
//! fires (signal, `stop`, idle timeout); then it stops accepting, lets in-flight calls finish
//! within the grace period, abandons the rest, and removes its socket.

use std::time::Duration;

use anyhow::Result;
use tokio_util::task::TaskTracker;

use openhuman_mcp::Dispatcher;
use openhuman_mcp::transport::socket::{self, SocketListener};

use crate::state::AppState;

pub struct ServeOptions {
    /// Stop after this long with no session.
    pub idle_timeout: Option<Duration>,
    /// The socket's bounds (connections at once, new ones per second).
    pub socket: socket::SocketOptions,
    /// Serve Streamable HTTP too, on this already-bound listener.
    pub http: Option<(tokio::net::TcpListener, openhuman_mcp::transport::http::HttpOptions)>,
}

pub async fn run(state: AppState, listener: SocketListener, opts: ServeOptions) -> Result<()> {
    let shutdown = state.shutdown_token().clone();
    let dispatcher = dispatcher(&state);
    let conns = TaskTracker::new();
    let owned_path = listener.owned_path().map(|p| p.to_path_buf());
    spawn_signal_handlers(&state)?;
    // Ready only when it can do what its config asks; otherwise it serves (the other tools work,
    // and `status` can say what is wrong) but says so instead.
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
    if let Some((tcp, mut http_opts)) = opts.http {
        // The dashboard rides on the HTTP port; its links name the address actually bound.
        if let Ok(addr) = tcp.local_addr() {
            let ip = if addr.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { addr.ip() };
            let base = format!("http://{}", std::net::SocketAddr::new(ip, addr.port()));
            state.dashboard().serving(base, http_opts.token.is_some());
        }
        http_opts.ui = Some(crate::ui::router(state.clone()));
        // Tracked with the socket sessions, so the same grace period bounds its drain.
        let (d, st) = (dispatcher.clone(), state.clone());
        conns.spawn(async move {
            if let Err(e) = openhuman_mcp::transport::http::serve(tcp, d, http_opts, st.shutdown_token().clone()).await
            {
                tracing::error!("HTTP transport failed; stopping: {e:#}");
                st.shutdown_token().cancel();
            }
        });
    }
    let accept = tokio::spawn(socket::accept_loop(listener, dispatcher, opts.socket, shutdown.clone(), conns.clone()));
    if let Some(idle) = opts.idle_timeout {
        tokio::spawn(idle_watch(state.clone(), idle));
    }

    shutdown.cancelled().await;
    tracing::info!("shutting down: no new connections; finishing in-flight calls");
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

/// The one dispatcher over the daemon's state: its sessions are the state's, and the state's
/// abort token cancels every call when the grace period is over.
pub fn dispatcher(state: &AppState) -> Dispatcher<AppState> {
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
                match st.reload() {
                    Ok(changed) => {
                        tracing::info!(tools_changed = changed, "config reloaded");
                        if changed {
                            st.sessions().notify_tools_changed();
                        }
                    }
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
