//! What a running request can see and do besides its arguments: its cancellation token, the
//! caller's provenance (and OAuth identity), and the way back to the client for progress and log notifications.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::AuthInfo;
use crate::protocol::{Era, notification, progress_notification};
use crate::session::{LOG_LEVELS, Session};

#[derive(Clone)]
pub struct RequestCtx {
    pub session: Arc<Session>,
    pub era: Era,
    /// Cancelled by `notifications/cancelled`, a vanished client, or shutdown.
    pub cancel: CancellationToken,
    pub progress_token: Option<Value>,
    /// `mcp:<client>` or `mcp`.
    pub source: String,
    pub client_info: Option<Value>,
    /// Minimum level of log notifications this request may emit (None: none).
    pub log_level: Option<usize>,
    pub notify: mpsc::Sender<String>,
    /// The OAuth caller (subject, client id, scopes) of an HTTP request made with an access
    /// token; None for the static token, the socket and stdio.
    pub auth: Option<Arc<AuthInfo>>,
}

impl RequestCtx {
    /// Sends `notifications/progress` when the caller asked for it with `_meta.progressToken`.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        if self.cancel.is_cancelled() {
            return;
        }
        let _ = self.notify.send(progress_notification(token, progress, total, message)).await;
    }

    /// Sends `notifications/message` when the level passes the session's (or request's) filter.
    pub async fn log(&self, level: &str, data: Value) {
        let Some(min) = self.log_level else { return };
        let Some(rank) = LOG_LEVELS.iter().position(|l| *l == level) else {
            return;
        };
        if rank < min || self.cancel.is_cancelled() {
            return;
        }
        let params = json!({ "level": level, "logger": "openhuman", "data": data });
        let _ = self.notify.send(notification("notifications/message", params).to_string()).await;
    }
}
