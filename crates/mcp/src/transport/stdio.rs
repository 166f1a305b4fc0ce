//! `openhumand-mcp stdio`: one session on stdin/stdout, in process. stdout carries protocol
//! lines only; EOF on stdin ends the session once in-flight requests are answered.

use tokio_util::sync::CancellationToken;

use super::{OnEof, serve_lines};
use crate::app::App;
use crate::dispatcher::Dispatcher;
use crate::session::Transport;

pub async fn serve<A: App>(dispatcher: Dispatcher<A>, shutdown: CancellationToken) {
    serve_lines(dispatcher, Transport::Stdio, tokio::io::stdin(), tokio::io::stdout(), shutdown, OnEof::Drain).await;
}
