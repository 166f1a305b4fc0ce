//! The dashboard, served under `/ui` on the HTTP port (the transport mounts [`router`] behind its
//! Origin/Host checks). One HTML page, one script and one stylesheet, compiled in from
//! `daemon/ui/`; the page draws everything from the JSON endpoint with DOM text nodes, never
//! HTML from data, and a Content-Security-Policy allows only the dashboard's own script.
//!
//! - `auth` login codes, session cookies, the same-origin check of API calls
//! - `api`  the ops the page may run, each an `openhuman.*` method or a tool
//!
//! Routes: `GET /ui/` the page (a short "how to log in" page without a session), `GET
//! /ui/app.js` and `/ui/app.css` (no data in them, served to anyone the transport admits),
//! `GET /ui/login?code=…` (redeems a code, sets the cookie, redirects to `/ui/`), `POST
//! /ui/api` (`{op, params}` → `{result}` or `{error}`).

mod api;
mod auth;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

pub(crate) use auth::Dashboard;

use crate::state::AppState;

impl AppState {
    /// The dashboard's address, login codes and browser sessions (kept in the state by
    /// `server::state`; served only with HTTP on).
    pub(crate) fn dashboard(&self) -> &Dashboard {
        self.part()
    }
}

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The dashboard's routes, to be mounted under `/ui`.
pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }))
        .route("/app.css", get(|| async { asset("text/css; charset=utf-8", STYLE) }))
        .route("/login", get(login))
        .route("/api", post(call))
        .with_state(state)
}

/// Headers every dashboard response carries: no caching, no framing, no sniffing, no referrer
/// (a login code in the address must not travel on).
fn harden(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    harden(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

fn html(status: StatusCode, body: String) -> Response {
    harden((status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response())
}

/// A page of one message, for a browser that is not logged in.
fn notice(status: StatusCode, title: &str, text: &str) -> Response {
    html(
        status,
        format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
             <link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/ui/app.css\"></head><body><main class=\"notice\"><h1>{title}</h1>\
             <p>{text}</p></main></body></html>"
        ),
    )
}

async fn page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !state.dashboard().admits(&headers) {
        return notice(
            StatusCode::UNAUTHORIZED,
            "Log in to the openhuman-mcp dashboard",
            "Run <code>openhumand-mcp ui</code> in a terminal: it prints a one-time login link and opens it.",
        );
    }
    html(StatusCode::OK, INDEX.to_string())
}

async fn login(State(state): State<AppState>, uri: Uri) -> Response {
    let code = uri.query().into_iter().flat_map(|q| q.split('&')).find_map(|kv| kv.strip_prefix("code="));
    let Some(session) = code.and_then(|c| state.dashboard().redeem(c)) else {
        tracing::warn!("dashboard login refused: unknown, used or expired code");
        return notice(
            StatusCode::FORBIDDEN,
            "This login link does not work",
            "A login link works once, for two minutes. Run <code>openhumand-mcp ui</code> again for a new one.",
        );
    };
    tracing::info!("dashboard login");
    let mut resp = harden((StatusCode::SEE_OTHER, [(header::LOCATION, "/ui/")]).into_response());
    if let Ok(v) = HeaderValue::from_str(&auth::session_cookie(&session)) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

async fn call(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let refuse = |status: StatusCode, message: &str| {
        harden(
            (status, [(header::CONTENT_TYPE, "application/json")], json!({ "error": message }).to_string())
                .into_response(),
        )
    };
    if let Err(why) = auth::same_origin_call(&headers) {
        tracing::warn!("dashboard API call refused: {why}");
        return refuse(StatusCode::FORBIDDEN, why);
    }
    if !state.dashboard().admits(&headers) {
        return refuse(StatusCode::UNAUTHORIZED, "not logged in: run `openhumand-mcp ui` for a login link");
    }
    let (status, value) = match api::run(state, &body).await {
        Ok(result) => (StatusCode::OK, json!({ "result": result })),
        Err((status, message)) => (status, json!({ "error": message })),
    };
    harden((status, [(header::CONTENT_TYPE, "application/json")], Body::from(value.to_string())).into_response())
}
