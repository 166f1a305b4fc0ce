//! The daemon's local socket: a 0600 socket (in a 0700 directory when it creates one), a stale socket
//! removed only when a connect is refused, a live one refused with a clear error, peers of
//! another uid turned away, and one session per connection. The socket admits only its own
//! user, so that user is its one peer: the connections open at once and the rate of new ones
//! are bounded (`SocketOptions`), and a connection beyond either gets one JSON-RPC error line
//! saying to retry, then is closed. Under systemd socket activation the inherited listener is
//! used instead of binding.

use std::io;
use std::path::{Path, PathBuf};

use interprocess::local_socket::ListenerOptions;
use interprocess::local_socket::tokio::{Listener as IpcListener, prelude::*};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::limits::{PeerCount, Rate, RateTable, retry_secs};
use super::{OnEof, TransportError, serve_lines};
use crate::app::App;
use crate::dispatcher::{Dispatcher, encode};
use crate::protocol::{RpcError, error_envelope};
use crate::session::Transport;

/// Bounds of the socket transport, resolved by the caller at start.
#[derive(Debug, Clone, Copy)]
pub struct SocketOptions {
    /// Connections open at once (the socket's one peer is its own user).
    pub max_connections: usize,
    /// How fast new connections may come.
    pub new_connections: Rate,
}

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

/// Accepts connections until `shutdown`, one session task each (tracked by `conns`), within
/// `opts`' bounds.
pub async fn accept_loop<A: App>(
    listener: SocketListener,
    dispatcher: Dispatcher<A>,
    opts: SocketOptions,
    shutdown: CancellationToken,
    conns: TaskTracker,
) {
    let open = PeerCount::new(opts.max_connections);
    let rate = RateTable::new(opts.new_connections);
    let mut refused: u64 = 0;
    loop {
        let accepted = tokio::select! {
            a = accept(&listener) => a,
            _ = shutdown.cancelled() => break,
        };
        match accepted {
            Ok(Some((conn, peer))) => {
                let admitted = match rate.take(&peer) {
                    Ok(()) => open.acquire(peer).ok_or(Refused::TooMany(opts.max_connections)),
                    Err(wait) => Err(Refused::TooFast(retry_secs(wait))),
                };
                let slot = match admitted {
                    Ok(slot) => slot,
                    Err(why) => {
                        if refused.is_multiple_of(1000) {
                            tracing::warn!(refused, "socket connection refused: {}", why.message());
                        }
                        refused += 1;
                        conns.spawn(refuse(conn, why));
                        continue;
                    }
                };
                let d = dispatcher.clone();
                let s = shutdown.clone();
                conns.spawn(async move {
                    let _slot = slot;
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

/// Why a connection was turned away.
#[derive(Clone, Copy)]
enum Refused {
    /// `max_connections` are open.
    TooMany(usize),
    /// New connections came faster than allowed; retry after this many seconds.
    TooFast(u64),
}

impl Refused {
    fn message(self) -> String {
        match self {
            Refused::TooMany(max) => format!(
                "too many connections to the daemon are open ({max}); close one or retry shortly \
                 (see [mcp].max_socket_connections)"
            ),
            Refused::TooFast(secs) => format!(
                "new connections to the daemon come too fast; retry in {secs} s (see [mcp].socket_connects_per_sec)"
            ),
        }
    }

    fn retry_after_secs(self) -> u64 {
        match self {
            Refused::TooMany(_) => 1,
            Refused::TooFast(secs) => secs,
        }
    }
}

/// Tells a refused client why in one JSON-RPC error line (id null), then closes. What the client
/// sent meanwhile is read and dropped first (closing on unread data would reset the connection
/// before the client reads the line). Bounded: a peer that neither reads nor stops writing
/// cannot hold the task.
async fn refuse(conn: Conn, why: Refused) {
    let error = RpcError::internal(why.message()).with_data(json!({ "retry_after_secs": why.retry_after_secs() }));
    let mut line = encode(&error_envelope(&Value::Null, &error));
    line.push('\n');
    let told = match conn {
        Conn::Ipc(stream) => tokio::time::timeout(REFUSAL_TIME, tell(stream, line)).await,
        #[cfg(unix)]
        Conn::Unix(stream) => tokio::time::timeout(REFUSAL_TIME, tell(stream, line)).await,
    };
    if told.is_err() {
        tracing::debug!("a refused socket client was cut off");
    }
}

/// The most time a refused connection is given.
const REFUSAL_TIME: std::time::Duration = std::time::Duration::from_secs(1);

async fn tell<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut stream: S, line: String) {
    use tokio::io::AsyncReadExt;
    if stream.write_all(line.as_bytes()).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    while stream.read(&mut sink).await.is_ok_and(|n| n > 0) {}
}

enum Conn {
    Ipc(interprocess::local_socket::tokio::Stream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// Accepts one connection and names its peer (the user id; 0 where there is none to read);
/// Ok(None) when the peer was refused.
async fn accept(listener: &SocketListener) -> io::Result<Option<(Conn, u32)>> {
    match listener {
        SocketListener::Bound { listener, .. } => {
            let stream = listener.accept().await?;
            #[cfg(unix)]
            if let Ok(creds) = stream.peer_creds()
                && let Some(uid) = creds.euid()
            {
                return Ok(same_uid(uid).then_some((Conn::Ipc(stream), uid)));
            }
            Ok(Some((Conn::Ipc(stream), 0)))
        }
        #[cfg(unix)]
        SocketListener::Activated(l) => {
            let (stream, _) = l.accept().await?;
            match stream.peer_cred() {
                Ok(cred) => Ok(same_uid(cred.uid()).then_some((Conn::Unix(stream), cred.uid()))),
                Err(_) => Ok(Some((Conn::Unix(stream), 0))),
            }
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

#[cfg(all(test, unix))]
mod tests {
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio::net::UnixStream;

    use super::*;
    use crate::testing::dispatcher;

    const LIMIT: Duration = Duration::from_secs(20);

    /// A daemon-side accept loop on a socket in a temp dir, with `opts`.
    fn serve(opts: SocketOptions) -> (tempfile::TempDir, PathBuf, CancellationToken) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sock");
        let listener = bind(&path).unwrap();
        let shutdown = CancellationToken::new();
        tokio::spawn(accept_loop(listener, dispatcher(), opts, shutdown.clone(), TaskTracker::new()));
        (dir, path, shutdown)
    }

    /// Connects and pings: the open connection when admitted, else the error line it was told.
    async fn ping(path: &Path) -> Result<BufReader<UnixStream>, Value> {
        let mut s = BufReader::new(UnixStream::connect(path).await.unwrap());
        s.get_mut().write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
        let mut line = String::new();
        tokio::time::timeout(LIMIT, s.read_line(&mut line)).await.expect("an answer in time").unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"] == 1 {
            return Ok(s);
        }
        // Refused: one line, then the end.
        let mut more = String::new();
        let n = tokio::time::timeout(LIMIT, s.read_line(&mut more)).await.expect("closed in time").unwrap();
        assert_eq!(n, 0, "a refused connection is closed after its line: {more}");
        Err(reply)
    }

    fn message(reply: &Value) -> &str {
        reply["error"]["message"].as_str().unwrap_or_default()
    }

    #[tokio::test]
    async fn connections_beyond_the_cap_are_told_why_and_closed_until_one_ends() {
        let (_dir, path, shutdown) =
            serve(SocketOptions { max_connections: 2, new_connections: Rate::new(1000, 1000) });
        let first = ping(&path).await.expect("first admitted");
        let _second = ping(&path).await.expect("second admitted");
        let refused = ping(&path).await.expect_err("third refused");
        assert!(message(&refused).contains("max_socket_connections"), "{refused}");
        assert_eq!(refused["id"], Value::Null);
        drop(first);
        // The server notices the end of the first, then has room again.
        let deadline = Instant::now() + LIMIT;
        while ping(&path).await.is_err() {
            assert!(Instant::now() < deadline, "a slot never came back");
            tokio::task::yield_now().await;
        }
        shutdown.cancel();
    }

    #[tokio::test]
    async fn connections_faster_than_the_rate_are_told_when_to_retry() {
        let (_dir, path, shutdown) = serve(SocketOptions { max_connections: 100, new_connections: Rate::new(1, 3) });
        let mut open = Vec::new();
        for _ in 0..3 {
            open.push(ping(&path).await.expect("within the burst"));
        }
        let refused = ping(&path).await.expect_err("past the burst");
        assert!(message(&refused).contains("retry in 1 s"), "{refused}");
        assert_eq!(refused["error"]["data"]["retry_after_secs"], 1, "{refused}");
        shutdown.cancel();
    }
}
