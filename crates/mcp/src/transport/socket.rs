//! The daemon's local socket: a 0600 socket (in a 0700 directory when it creates one), a stale socket
//! removed only when a connect is refused, a live one refused with a clear error, peers of
//! another uid turned away, and one session per connection. Under systemd socket activation the
//! inherited listener is used instead of binding.

use std::io;
use std::path::{Path, PathBuf};

use interprocess::local_socket::ListenerOptions;
use interprocess::local_socket::tokio::{Listener as IpcListener, prelude::*};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{OnEof, TransportError, serve_lines};
use crate::app::App;
use crate::dispatcher::Dispatcher;
use crate::session::Transport;

type Result<T, E = TransportError> = std::result::Result<T, E>;

pub enum SocketListener {
    Bound {
        listener: IpcListener,
        path: PathBuf,
    },
    #[cfg(unix)]
    Activated(tokio::net::UnixListener),
}

impl SocketListener {
    /// The socket path to remove on exit (None when systemd owns it).
    pub fn owned_path(&self) -> Option<&Path> {
        match self {
            SocketListener::Bound { path, .. } => Some(path),
            #[cfg(unix)]
            SocketListener::Activated(_) => None,
        }
    }
}

/// A listener inherited from the service manager (systemd `LISTEN_FDS`), if any. Call it before
/// starting other threads: it clears the `LISTEN_*` variables from the environment.
#[cfg(unix)]
pub fn take_activated() -> Result<Option<std::os::unix::net::UnixListener>> {
    let mut fds = listenfd::ListenFd::from_env();
    if fds.len() == 0 {
        return Ok(None);
    }
    let listener = fds
        .take_unix_listener(0)
        .map_err(|e| TransportError::io("socket activation: the passed fd is not a unix listener", e))?;
    Ok(listener)
}

#[cfg(not(unix))]
pub fn take_activated() -> Result<Option<std::convert::Infallible>> {
    Ok(None)
}

/// Wraps an inherited listener for the accept loop. Must run inside the runtime.
#[cfg(unix)]
pub fn from_activated(listener: std::os::unix::net::UnixListener) -> Result<SocketListener> {
    let what = "socket activation: cannot use the passed listener";
    listener.set_nonblocking(true).map_err(|e| TransportError::io(what, e))?;
    Ok(SocketListener::Activated(
        tokio::net::UnixListener::from_std(listener).map_err(|e| TransportError::io(what, e))?,
    ))
}

#[cfg(not(unix))]
pub fn from_activated(listener: std::convert::Infallible) -> Result<SocketListener> {
    match listener {}
}

/// Binds the socket at `path`, handling stale and live sockets. Must run inside the runtime.
pub fn bind(path: &Path) -> Result<SocketListener> {
    let dir = path.parent().ok_or_else(|| {
        TransportError::io("socket path has no directory", io::Error::from(io::ErrorKind::InvalidInput))
    })?;
    make_private_dir(dir)?;
    for attempt in 0..2 {
        let name = openhuman_common::paths::socket_name(path)
            .map_err(|e| TransportError::io(format!("cannot name socket {}", path.display()), e))?;
        let mut opts = ListenerOptions::new().name(name);
        #[cfg(unix)]
        {
            use interprocess::os::unix::local_socket::ListenerOptionsExt;
            opts = opts.mode(0o600);
        }
        match opts.create_tokio() {
            Ok(listener) => {
                return Ok(SocketListener::Bound { listener, path: path.to_path_buf() });
            }
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && attempt == 0 => match probe(path) {
                Probe::Live => return Err(TransportError::InUse(path.to_path_buf())),
                Probe::Stale => {
                    tracing::info!(socket = %path.display(), "removing stale socket left by a daemon that is gone");
                    std::fs::remove_file(path)
                        .map_err(|e| TransportError::io(format!("cannot remove stale socket {}", path.display()), e))?;
                }
            },
            Err(e) => {
                return Err(TransportError::io(format!("cannot listen on {}", path.display()), e));
            }
        }
    }
    Err(TransportError::io(
        format!("cannot listen on {}: the address stays in use", path.display()),
        io::Error::from(io::ErrorKind::AddrInUse),
    ))
}

enum Probe {
    Live,
    Stale,
}

fn probe(path: &Path) -> Probe {
    #[cfg(unix)]
    {
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => Probe::Live,
            // Only a refused (or vanished) socket is stale; anything else may be a live daemon.
            Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound) => Probe::Stale,
            Err(_) => Probe::Live,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Probe::Live
    }
}

/// Creates the socket's directory (and any missing parent) 0700. A directory that exists is
/// left as it is: it may be shared (`/tmp`), and the socket itself is 0600 whatever its mode.
fn make_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| TransportError::io(format!("cannot create socket directory {}", dir.display()), e))
}

/// Accepts connections until `shutdown`, one session task each (tracked by `conns`).
pub async fn accept_loop<A: App>(
    listener: SocketListener,
    dispatcher: Dispatcher<A>,
    shutdown: CancellationToken,
    conns: TaskTracker,
) {
    loop {
        let accepted = tokio::select! {
            a = accept(&listener) => a,
            _ = shutdown.cancelled() => break,
        };
        match accepted {
            Ok(Some(conn)) => {
                let d = dispatcher.clone();
                let s = shutdown.clone();
                conns.spawn(async move {
                    match conn {
                        Conn::Ipc(stream) => {
                            let (r, w) = tokio::io::split(stream);
                            serve_lines(d, Transport::Socket, r, w, s, OnEof::Cancel).await
                        }
                        #[cfg(unix)]
                        Conn::Unix(stream) => {
                            let (r, w) = stream.into_split();
                            serve_lines(d, Transport::Socket, r, w, s, OnEof::Cancel).await
                        }
                    }
                });
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                // Out of fds and similar: back off briefly instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

enum Conn {
    Ipc(interprocess::local_socket::tokio::Stream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// Accepts one connection; Ok(None) when the peer was refused.
async fn accept(listener: &SocketListener) -> io::Result<Option<Conn>> {
    match listener {
        SocketListener::Bound { listener, .. } => {
            let stream = listener.accept().await?;
            #[cfg(unix)]
            if let Ok(creds) = stream.peer_creds()
                && let Some(uid) = creds.euid()
                && !same_uid(uid)
            {
                return Ok(None);
            }
            Ok(Some(Conn::Ipc(stream)))
        }
        #[cfg(unix)]
        SocketListener::Activated(l) => {
            let (stream, _) = l.accept().await?;
            if let Ok(cred) = stream.peer_cred()
                && !same_uid(cred.uid())
            {
                return Ok(None);
            }
            Ok(Some(Conn::Unix(stream)))
        }
    }
}

#[cfg(unix)]
fn same_uid(peer: u32) -> bool {
    if peer != euid() {
        tracing::warn!(peer_uid = peer, "refused a connection from another user");
        return false;
    }
    true
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn euid() -> u32 {
    // SAFETY: geteuid(2) takes no arguments, has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
