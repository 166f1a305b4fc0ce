//! What a running request can see and do besides its arguments: its cancellation token, the
//! caller's provenance (and OAuth identity), the way back to the client for progress and log
//! notifications, and questions to the client ([`Input`]: elicitation, sampling, roots, in either era).

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::AuthInfo;
use crate::input::{Ask, AskError, Elicited, Input};
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
    /// Questions to the client; the default asks nothing (no capability declared).
    pub input: Input,
}

impl RequestCtx {
    /// True when the client declared elicitation: [`RequestCtx::elicit`] may ask the user.
    pub fn can_elicit(&self) -> bool {
        self.input.can_elicit()
    }

    pub fn can_sample(&self) -> bool {
        self.input.can_sample()
    }

    /// Asks the user to fill in `requested_schema` (a flat object schema), by a server→client
    /// request or, in 2026-07-28, an `input_required` round; see [`crate::input`]. A handler
    /// asks before it changes anything: in 2026-07-28 it runs again when the answer comes.
    pub async fn elicit(&self, message: &str, requested_schema: Value) -> Result<Elicited, AskError> {
        self.input.elicit(message, requested_schema).await
    }

    /// Asks the client one question under `key` (see [`Input::ask`]).
    pub async fn ask(&self, key: &str, ask: Ask) -> Result<Value, AskError> {
        self.input.ask(key, ask).await
    }

    /// Asks several questions at once (see [`Input::ask_all`]).
    pub async fn ask_all(&self, asks: Vec<(String, Ask)>) -> Result<Vec<Value>, AskError> {
        self.input.ask_all(asks).await
    }

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
