//! Handshake-era HTTP sessions: `Mcp-Session-Id` → MCP `Session`. Ids are 128-bit random hex
//! (uuid v4), never logged in the clear (`sha256:` + 8 hex). A session ends on DELETE, after
//! `session_idle_secs` without a request (one with a request in flight or a GET stream open is
//! not idle), or when the table is full and a new one needs its place. Only an idle session can
//! make room: first one that never came back after its `initialize`, then one in use before but
//! idle for `EVICTABLE_AFTER`; when there is none, the new session is refused (503), so a flood
//! of `initialize` calls can push out only its own kind. Ending a session cancels its in-flight
//! requests and its GET stream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::Ctx;
use crate::dispatcher::Serve;
use crate::session::{Session, SessionGuard, Transport};

/// How many session-level notifications wait for a GET stream before new ones are dropped.
const INBOX: usize = 256;
/// How long a session that was used after its `initialize` must have been idle before a new
/// session may take its place.
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(600);

/// The table is full of sessions in use: a new one is refused.
#[derive(Debug)]
pub struct Full;

pub struct HttpSession {
    id: String,
    /// The id as it may appear in logs.
    pub tag: String,
    pub session: Arc<Session>,
    last_used: Mutex<Instant>,
    /// Came back after `initialize` (any request naming the session since).
    established: AtomicBool,
    /// Open GET streams (0 or 1).
    streams: AtomicUsize,
    /// Session-level notifications (`tools/list_changed`) until a GET stream takes them.
    inbox: Mutex<Option<mpsc::Receiver<String>>>,
    next_event: AtomicU64,
    _registered: SessionGuard,
}

impl HttpSession {
    /// The secret id: for the `Mcp-Session-Id` response header only, never for logs.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Marks the session used (at the end of a request too, so a long call is not idle time).
    pub fn touch(&self) {
        *self.last_used.lock().expect("session clock") = Instant::now();
    }

    fn busy(&self) -> bool {
        self.session.inflight_count() > 0 || self.streams.load(Ordering::Relaxed) > 0
    }

    fn idle_since(&self) -> Instant {
        *self.last_used.lock().expect("session clock")
    }

    /// Takes the notification inbox for a GET stream; None when a stream already has it.
    pub fn open_stream(self: &Arc<Self>) -> Option<StreamLease> {
        let rx = self.inbox.lock().expect("inbox lock").take()?;
        self.streams.fetch_add(1, Ordering::Relaxed);
        Some(StreamLease { owner: self.clone(), rx: Some(rx) })
    }

    /// A fresh SSE event id, unique within the session.
    pub fn event_id(&self) -> String {
        format!("{}", self.next_event.fetch_add(1, Ordering::Relaxed))
    }

    fn end(&self) {
        self.session.cancel.cancel();
    }
}

/// A GET stream's hold on the session inbox; gives it back when the stream ends, so a client
/// that reconnects gets the notifications queued meanwhile.
pub struct StreamLease {
    owner: Arc<HttpSession>,
    rx: Option<mpsc::Receiver<String>>,
}

impl StreamLease {
    pub async fn next(&mut self) -> Option<String> {
        self.rx.as_mut()?.recv().await
    }
}

impl Drop for StreamLease {
    fn drop(&mut self) {
        if let Some(rx) = self.rx.take() {
            *self.owner.inbox.lock().expect("inbox lock") = Some(rx);
        }
        self.owner.touch();
        self.owner.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `sha256:` + the first 8 hex digits of the id's SHA-256: enough to follow a session in the
/// logs, useless for taking it over.
pub fn log_tag(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    format!("sha256:{}", &hex::encode(digest)[..8])
}

pub struct SessionTable {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    idle: Duration,
    max: usize,
}

impl SessionTable {
    pub fn new(idle: Duration, max: usize) -> SessionTable {
        SessionTable { map: Mutex::new(HashMap::new()), idle, max: max.max(1) }
    }

    /// Mints a session, evicting an idle one when the table is full; `Full` when every session
    /// is in use.
    pub(crate) fn create(&self, dispatcher: &dyn Serve) -> Result<Arc<HttpSession>, Full> {
        if self.len() >= self.max && self.map.lock().expect("sessions lock").values().all(|hs| !evictable(hs)) {
            return Err(Full);
        }
        let (tx, rx) = mpsc::channel(INBOX);
        let session = Arc::new(dispatcher.new_session(Transport::Http, tx));
        let registered = dispatcher.sessions().register(&session);
        let id = uuid::Uuid::new_v4().simple().to_string();
        let hs = Arc::new(HttpSession {
            tag: log_tag(&id),
            id,
            session,
            last_used: Mutex::new(Instant::now()),
            established: AtomicBool::new(false),
            streams: AtomicUsize::new(0),
            inbox: Mutex::new(Some(rx)),
            next_event: AtomicU64::new(0),
            _registered: registered,
        });
        let evicted = {
            let mut map = self.map.lock().expect("sessions lock");
            let evicted = if map.len() >= self.max {
                match victim(&map).and_then(|id| map.remove(&id)) {
                    Some(old) => Some(old),
                    // Filled up since the check above.
                    None => return Err(Full),
                }
            } else {
                None
            };
            map.insert(hs.id.clone(), hs.clone());
            evicted
        };
        if let Some(old) = evicted {
            old.end();
            tracing::info!(session = %old.tag, max_sessions = self.max, "HTTP session evicted: too many sessions");
        }
        Ok(hs)
    }

    /// The live session with this id (and marks it used); None when unknown or expired.
    pub fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        let mut map = self.map.lock().expect("sessions lock");
        let hs = map.get(id)?.clone();
        if !hs.busy() && hs.idle_since().elapsed() > self.idle {
            map.remove(id);
            drop(map);
            hs.end();
            tracing::info!(session = %hs.tag, "HTTP session expired");
            return None;
        }
        hs.touch();
        hs.established.store(true, Ordering::Relaxed);
        Some(hs)
    }

    /// Ends a session and takes it out of the table; false when it was not there.
    pub fn remove(&self, id: &str) -> bool {
        let removed = self.map.lock().expect("sessions lock").remove(id);
        if let Some(hs) = &removed {
            hs.end();
        }
        removed.is_some()
    }

    /// Ends every session idle for longer than the limit at `now`; returns how many.
    pub fn expire(&self, now: Instant) -> usize {
        let expired: Vec<Arc<HttpSession>> = {
            let mut map = self.map.lock().expect("sessions lock");
            let ids: Vec<String> = map
                .values()
                .filter(|hs| !hs.busy() && now.saturating_duration_since(hs.idle_since()) > self.idle)
                .map(|hs| hs.id.clone())
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for hs in &expired {
            hs.end();
            tracing::info!(session = %hs.tag, idle_secs = self.idle.as_secs(), "HTTP session expired");
        }
        expired.len()
    }

    pub fn len(&self) -> usize {
        self.map.lock().expect("sessions lock").len()
    }

    /// Ends every session (shutdown).
    pub fn clear(&self) {
        let all: Vec<_> = self.map.lock().expect("sessions lock").drain().map(|(_, hs)| hs).collect();
        for hs in all {
            hs.end();
        }
    }
}

/// Whether a new session may take this one's place: idle, and either never used after its
/// `initialize` or idle for `EVICTABLE_AFTER`.
fn evictable(hs: &HttpSession) -> bool {
    !hs.busy() && (!hs.established.load(Ordering::Relaxed) || hs.idle_since().elapsed() >= EVICTABLE_AFTER)
}

/// The session to evict: the least recently used one that never came back after `initialize`,
/// else the least recently used evictable one; None when every session is in use.
fn victim(map: &HashMap<String, Arc<HttpSession>>) -> Option<String> {
    let lru = |established: bool| {
        map.values()
            .filter(|hs| evictable(hs) && hs.established.load(Ordering::Relaxed) == established)
            .min_by_key(|hs| hs.idle_since())
            .map(|hs| hs.id.clone())
    };
    lru(false).or_else(|| lru(true))
}

/// Expires idle sessions now and then until shutdown.
pub async fn sweep(shared: Ctx) {
    let period = (shared.sessions.idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tick.tick() => {
                shared.sessions.expire(Instant::now());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> (crate::dispatcher::Dispatcher<crate::testing::FakeApp>, ()) {
        (crate::testing::dispatcher(), ())
    }

    #[test]
    fn ids_are_128_bit_hex_and_logged_hashed() {
        let (state, _home) = state();
        let table = SessionTable::new(Duration::from_secs(60), 8);
        let a = table.create(&state as &dyn Serve).unwrap();
        let b = table.create(&state as &dyn Serve).unwrap();
        let id = a.id();
        assert_eq!(id.len(), 32);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(id, b.id());
        assert!(a.tag.starts_with("sha256:") && a.tag.len() == 15);
        assert!(!a.tag.contains(id));
        assert!(table.get(id).is_some());
        assert!(table.remove(id));
        assert!(table.get(id).is_none());
        assert!(a.session.cancel.is_cancelled(), "ending a session cancels its work");
    }

    #[test]
    fn idle_sessions_expire_but_streaming_ones_stay() {
        let (state, _home) = state();
        let table = SessionTable::new(Duration::from_secs(60), 8);
        let quiet = table.create(&state as &dyn Serve).unwrap();
        let streaming = table.create(&state as &dyn Serve).unwrap();
        let _lease = streaming.open_stream().expect("inbox free");
        assert!(streaming.open_stream().is_none(), "one GET stream per session");
        assert_eq!(table.expire(Instant::now()), 0);
        let later = Instant::now() + Duration::from_secs(61);
        assert_eq!(table.expire(later), 1);
        assert!(table.get(quiet.id()).is_none());
        assert!(table.get(streaming.id()).is_some());
        drop(_lease);
        assert!(streaming.open_stream().is_some(), "the inbox comes back");
    }

    /// A flood of `initialize` calls pushes out only sessions that never came back; sessions in
    /// use stay, and when every session is in use a new one is refused.
    #[test]
    fn the_cap_keeps_sessions_in_use() {
        let (state, _home) = state();
        let table = SessionTable::new(Duration::from_secs(60), 3);
        let used = [table.create(&state as &dyn Serve).unwrap(), table.create(&state as &dyn Serve).unwrap()];
        for hs in &used {
            table.get(hs.id()).unwrap();
        }
        for _ in 0..1100 {
            table.create(&state as &dyn Serve).unwrap();
        }
        assert_eq!(table.len(), 3);
        assert!(used.iter().all(|hs| table.get(hs.id()).is_some()), "sessions in use survive the flood");
        let last = table.create(&state as &dyn Serve).unwrap();
        table.get(last.id()).unwrap();
        assert!(table.create(&state as &dyn Serve).is_err(), "full of sessions in use");
        // One idle long enough makes room again.
        *used[0].last_used.lock().unwrap() = Instant::now() - EVICTABLE_AFTER;
        assert!(table.create(&state as &dyn Serve).is_ok());
        assert!(table.get(used[0].id()).is_none());
    }

    #[test]
    fn the_cap_evicts_the_least_recently_used_idle_session() {
        let (state, _home) = state();
        let table = SessionTable::new(Duration::from_secs(60), 2);
        let first = table.create(&state as &dyn Serve).unwrap();
        let second = table.create(&state as &dyn Serve).unwrap();
        // `second` was used last a while ago; `first` just now.
        *second.last_used.lock().unwrap() = Instant::now() - Duration::from_secs(10);
        first.touch();
        let third = table.create(&state as &dyn Serve).unwrap();
        assert_eq!(table.len(), 2);
        assert!(table.get(second.id()).is_none());
        assert!(second.session.cancel.is_cancelled());
        assert!(table.get(first.id()).is_some());
        assert!(table.get(third.id()).is_some());
    }
}
