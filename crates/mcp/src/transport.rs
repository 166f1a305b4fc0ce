//! Transports move bytes: they frame lines (or HTTP bodies), make a `Session` per connection and
//! hand each message to the dispatcher. None of them knows an MCP method name.

pub mod framing;
pub mod http;
pub mod limits;
pub mod socket;
pub mod stdio;

use std::sync::Arc;

use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::dispatcher::Dispatcher;
use crate::session::Transport;
use framing::{Frame, LineCodec};

/// Why a transport could not start or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// Another live server answers on this socket path; it is never displaced.
    #[error("another server is already serving on {0}")]
    InUse(std::path::PathBuf),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

impl TransportError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> TransportError {
        TransportError::Io { what: what.into(), source }
    }
}

/// What happens to in-flight requests when the peer stops sending.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnEof {
    /// stdio: EOF is the client's way to end the session; answer what is in flight first.
    Drain,
    /// Socket: the peer is gone (the shim drains before closing); stop its work.
    Cancel,
}

/// Serves one line-framed session until EOF or shutdown.
pub async fn serve_lines<A, R, W>(
    dispatcher: Dispatcher<A>,
    transport: Transport,
    reader: R,
    writer: W,
    shutdown: CancellationToken,
    on_eof: OnEof,
) where
    A: App,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<String>(512);
    let session = Arc::new(dispatcher.new_session(transport, tx));
    let _guard = dispatcher.sessions().register(&session);
    let write_task = tokio::spawn(write_lines(writer, rx));
    let max = dispatcher.app().max_line_bytes();
    let mut frames = FramedRead::new(reader, LineCodec::new(max));
    let mut eof = false;
    loop {
        let frame = tokio::select! {
            f = frames.next() => f,
            _ = shutdown.cancelled() => break,
        };
        match frame {
            Some(Ok(Frame::Line(line))) => dispatcher.on_line(&session, &line).await,
            Some(Ok(Frame::TooLong(skipped))) => dispatcher.on_overlong(&session, max, &skipped).await,
            Some(Err(e)) => {
                tracing::debug!(session = session.id, error = %e, "read failed; closing session");
                eof = true;
                break;
            }
            None => {
                eof = true;
                break;
            }
        }
    }
    if eof && on_eof == OnEof::Cancel {
        session.cancel.cancel();
    }
    session.streams_end.cancel();
    session.tracker.close();
    session.tracker.wait().await;
    tracing::debug!(session = session.id, "session ended");
    drop(session);
    let _ = write_task.await;
}

/// Bytes of replies gathered into one write. Large enough that several tool results share a
/// syscall when requests are pipelined; a single bigger line is written straight through.
const WRITE_BUFFER: usize = 64 * 1024;

async fn write_lines<W: AsyncWrite + Unpin>(writer: W, mut rx: mpsc::Receiver<String>) {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, writer);
    while let Some(line) = rx.recv().await {
        if out.write_all(line.as_bytes()).await.is_err() || out.write_all(b"\n").await.is_err() {
            break;
        }
        // Flush when nothing else is queued, so pipelined replies share a syscall.
        if rx.is_empty() && out.flush().await.is_err() {
            break;
        }
    }
    let _ = out.flush().await;
    let _ = out.shutdown().await;
}
