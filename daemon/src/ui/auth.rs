//! Who may use the dashboard. With an HTTP token, a browser gets in only through a one-time
//! login code (`openhumand-mcp ui` mints it over the socket): the code is short-lived, single
//! use and compared in constant time, and redeeming it sets an HttpOnly, SameSite=Strict session
//! cookie. Without a token (`[mcp.http].allow_no_token`) the dashboard is open, like the MCP
//! endpoint. Every API call must also come from the dashboard's own page: a JSON body, the
//! `X-OpenHuman-UI` header, and (when the browser says) its own origin — a cross-site form post
//! has none of these and is refused.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How long a login code can be redeemed.
const CODE_TTL: Duration = Duration::from_secs(120);
/// How long a browser session lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Codes and sessions kept at once; the oldest make room.
const MAX_CODES: usize = 16;
const MAX_SESSIONS: usize = 64;

pub(crate) const COOKIE: &str = "openhuman_ui";
/// The header every API call carries; a cross-site form cannot set it.
pub(crate) const CSRF_HEADER: &str = "x-openhuman-ui";

type Digest32 = [u8; 32];

fn digest(secret: &str) -> Digest32 {
    Sha256::digest(secret.as_bytes()).into()
}

fn random_secret() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// The dashboard's side of the daemon's state.
#[derive(Default)]
pub(crate) struct Dashboard {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// `http://host:port`, once HTTP serves.
    base: Option<String>,
    /// A token guards HTTP, so the dashboard needs a login.
    token_mode: bool,
    codes: Vec<(Digest32, Instant)>,
    sessions: HashMap<Digest32, Instant>,
}

impl Dashboard {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// HTTP serves at `base` (`http://host:port`); `token_mode` when it needs a bearer token.
    pub(crate) fn serving(&self, base: String, token_mode: bool) {
        let mut inner = self.lock();
        inner.base = Some(base);
        inner.token_mode = token_mode;
    }

    /// The dashboard's address, when HTTP serves.
    pub(crate) fn url(&self) -> Option<String> {
        self.lock().base.as_ref().map(|b| format!("{b}/ui/"))
    }

    /// Whether the dashboard needs no login (HTTP without a token).
    pub(crate) fn open(&self) -> bool {
        !self.lock().token_mode
    }

    /// A link that logs a browser in: `{url, expires_in_secs}` (with no token, the dashboard
    /// itself). Err says how to turn HTTP on.
    pub(crate) fn login_link(&self) -> Result<Value, String> {
        let mut inner = self.lock();
        let Some(base) = inner.base.clone() else {
            return Err("the dashboard is served on the HTTP port, which is off: `openhumand-mcp ui` turns it on \
                        (it sets [mcp.http].enabled = true in config.toml and reloads the daemon)"
                .to_string());
        };
        if !inner.token_mode {
            return Ok(json!({ "url": format!("{base}/ui/"), "expires_in_secs": Value::Null }));
        }
        let now = Instant::now();
        inner.codes.retain(|(_, until)| *until > now);
        if inner.codes.len() >= MAX_CODES {
            inner.codes.remove(0);
        }
        let code = random_secret();
        inner.codes.push((digest(&code), now + CODE_TTL));
        Ok(json!({ "url": format!("{base}/ui/login?code={code}"), "expires_in_secs": CODE_TTL.as_secs() }))
    }

    /// Redeems a login code: a new session secret for the cookie, or None when the code is
    /// unknown, used or expired. Every pending code is compared, in constant time.
    pub(crate) fn redeem(&self, code: &str) -> Option<String> {
        let given = digest(code);
        let mut inner = self.lock();
        let now = Instant::now();
        let mut found = None;
        for (i, (d, until)) in inner.codes.iter().enumerate() {
            let same: bool = d.ct_eq(&given).into();
            if same && *until > now {
                found = Some(i);
            }
        }
        let i = found?;
        inner.codes.remove(i);
        inner.sessions.retain(|_, until| *until > now);
        if inner.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = inner.sessions.iter().min_by_key(|(_, t)| **t).map(|(k, _)| *k)
        {
            inner.sessions.remove(&oldest);
        }
        let session = random_secret();
        inner.sessions.insert(digest(&session), now + SESSION_TTL);
        Some(session)
    }

    /// Whether the request may use the dashboard: it is open, or the request carries a live
    /// session cookie.
    pub(crate) fn admits(&self, headers: &HeaderMap) -> bool {
        if self.open() {
            return true;
        }
        let Some(secret) = cookie(headers, COOKIE) else { return false };
        let given = digest(&secret);
        let inner = self.lock();
        let now = Instant::now();
        // A map lookup by digest: the secret itself is never compared byte by byte.
        inner.sessions.get(&given).is_some_and(|until| *until > now)
    }
}

/// The value of cookie `name`, if the request carries it.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// The `Set-Cookie` value for a new session.
pub(crate) fn session_cookie(secret: &str) -> String {
    format!("{COOKIE}={secret}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}", SESSION_TTL.as_secs())
}

/// Why an API call is not from the dashboard's own page, if it is not: it must send JSON with
/// the dashboard's header, and a browser's `Origin` / `Sec-Fetch-Site`, when present, must say
/// it came from this origin.
pub(crate) fn same_origin_call(headers: &HeaderMap) -> Result<(), &'static str> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if !text(header::CONTENT_TYPE.as_str())
        .is_some_and(|c| c.trim().to_ascii_lowercase().starts_with("application/json"))
    {
        return Err("the dashboard's API takes a JSON body (Content-Type: application/json)");
    }
    if text(CSRF_HEADER) != Some("1") {
        return Err("the dashboard's API is for the dashboard's own page (the X-OpenHuman-UI header is missing)");
    }
    if let Some(site) = text("sec-fetch-site")
        && site != "same-origin"
    {
        return Err("cross-site request refused");
    }
    if let Some(origin) = text(header::ORIGIN.as_str()) {
        let host = text(header::HOST.as_str()).unwrap_or_default();
        if !origin.eq_ignore_ascii_case(&format!("http://{host}")) {
            return Err("cross-origin request refused");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_login_code_works_once() {
        let d = Dashboard::default();
        d.serving("http://127.0.0.1:9".into(), true);
        let link = d.login_link().unwrap();
        let url = link["url"].as_str().unwrap();
        let code = url.split_once("code=").unwrap().1;
        assert!(d.redeem("not-the-code").is_none());
        let session = d.redeem(code).expect("first use");
        assert!(d.redeem(code).is_none(), "single use");
        let with = headers(&[("cookie", &format!("other=1; {COOKIE}={session}"))]);
        assert!(d.admits(&with));
        assert!(!d.admits(&headers(&[("cookie", &format!("{COOKIE}=forged"))])));
        assert!(!d.admits(&HeaderMap::new()));
    }

    #[test]
    fn expired_codes_and_sessions_do_not_work() {
        let d = Dashboard::default();
        d.serving("http://127.0.0.1:9".into(), true);
        let link = d.login_link().unwrap();
        let code = link["url"].as_str().unwrap().split_once("code=").unwrap().1.to_string();
        let past = Instant::now() - Duration::from_secs(1);
        d.lock().codes[0].1 = past;
        assert!(d.redeem(&code).is_none(), "an expired code");
        let link = d.login_link().unwrap();
        let code = link["url"].as_str().unwrap().split_once("code=").unwrap().1.to_string();
        let session = d.redeem(&code).unwrap();
        for until in d.lock().sessions.values_mut() {
            *until = past;
        }
        assert!(!d.admits(&headers(&[("cookie", &format!("{COOKIE}={session}"))])), "an expired session");
    }

    #[test]
    fn without_http_the_link_says_how_to_turn_it_on() {
        let err = Dashboard::default().login_link().unwrap_err();
        assert!(err.contains("[mcp.http].enabled"), "{err}");
    }

    #[test]
    fn only_the_dashboards_own_calls_pass() {
        let ok = [
            ("content-type", "application/json"),
            (CSRF_HEADER, "1"),
            ("host", "127.0.0.1:9300"),
            ("origin", "http://127.0.0.1:9300"),
            ("sec-fetch-site", "same-origin"),
        ];
        assert!(same_origin_call(&headers(&ok)).is_ok());
        let form = [("content-type", "application/x-www-form-urlencoded"), ("origin", "http://evil.example")];
        assert!(same_origin_call(&headers(&form)).is_err());
        let mut other_port = ok;
        other_port[3] = ("origin", "http://127.0.0.1:5173");
        assert!(same_origin_call(&headers(&other_port)).is_err());
        let mut cross = ok;
        cross[4] = ("sec-fetch-site", "same-site");
        assert!(same_origin_call(&headers(&cross)).is_err());
        assert!(same_origin_call(&headers(&ok[..1])).is_err(), "no dashboard header");
    }
}
