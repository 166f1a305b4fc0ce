//! Per-peer bounds shared by the socket and HTTP transports: a token bucket per peer for how
//! fast new sessions (HTTP `initialize`) or connections (socket) may come, and a count of the
//! connections a peer holds open. A peer is what the transport can tell apart: the client's IP
//! address over HTTP, the user id on the socket (which admits only its own user, so there it is
//! one peer). Both tables forget peers that have nothing left to remember, so a stream of new
//! addresses cannot grow them without bound.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How fast something may happen: `per_sec` on average, `burst` at once after a quiet spell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_sec: f64,
    pub burst: f64,
}

impl Rate {
    pub fn new(per_sec: u32, burst: u32) -> Rate {
        Rate { per_sec: f64::from(per_sec.max(1)), burst: f64::from(burst.max(1)) }
    }
}

/// Peers kept in a table before full (or unused) entries are dropped.
const PRUNE_AT: usize = 4096;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One token bucket per peer.
pub(crate) struct RateTable<K> {
    rate: Rate,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K: Hash + Eq + Clone> RateTable<K> {
    pub fn new(rate: Rate) -> RateTable<K> {
        RateTable { rate, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one token of `peer`'s bucket; when it is empty, how long until one is back.
    pub fn take(&self, peer: &K) -> Result<(), Duration> {
        self.take_at(peer, Instant::now())
    }

    fn take_at(&self, peer: &K, now: Instant) -> Result<(), Duration> {
        let Rate { per_sec, burst } = self.rate;
        let mut map = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= PRUNE_AT && !map.contains_key(peer) {
            // A bucket that has refilled says nothing a fresh one would not.
            map.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec < burst);
        }
        let b = map.entry(peer.clone()).or_insert(Bucket { tokens: burst, at: now });
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - b.tokens) / per_sec))
        }
    }
}

/// How many connections each peer holds open, with a cap.
pub(crate) struct PeerCount<K: Hash + Eq> {
    max: usize,
    open: Arc<Mutex<HashMap<K, usize>>>,
}

impl<K: Hash + Eq + Clone> PeerCount<K> {
    pub fn new(max: usize) -> PeerCount<K> {
        PeerCount { max: max.max(1), open: Arc::default() }
    }

    /// A slot for one more connection of `peer`, held until dropped; None at the cap.
    pub fn acquire(&self, peer: K) -> Option<PeerSlot<K>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(peer.clone()).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(PeerSlot { peer: Some(peer), open: self.open.clone() })
    }
}

/// One open connection of a peer; the count goes down when it is dropped.
pub(crate) struct PeerSlot<K: Hash + Eq> {
    peer: Option<K>,
    open: Arc<Mutex<HashMap<K, usize>>>,
}

impl<K: Hash + Eq> Drop for PeerSlot<K> {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                open.remove(&peer);
            }
        }
    }
}

/// Whole seconds to tell a client to wait (`Retry-After`), at least 1.
pub(crate) fn retry_secs(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_its_burst_then_refills_at_its_rate_per_peer() {
        let t = RateTable::new(Rate::new(2, 3));
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(t.take_at(&"a", now), Ok(()));
        }
        let wait = t.take_at(&"a", now).unwrap_err();
        assert!(wait > Duration::from_millis(400) && wait <= Duration::from_millis(500), "{wait:?}");
        // Another peer has its own bucket.
        assert_eq!(t.take_at(&"b", now), Ok(()));
        // Half a second at 2 per second is one token, and no more than the burst ever.
        assert_eq!(t.take_at(&"a", now + Duration::from_millis(500)), Ok(()));
        assert!(t.take_at(&"a", now + Duration::from_millis(500)).is_err());
        let later = now + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(t.take_at(&"a", later), Ok(()));
        }
        assert!(t.take_at(&"a", later).is_err());
    }

    #[test]
    fn full_buckets_are_forgotten_when_the_table_is_large() {
        let t = RateTable::new(Rate::new(1, 1));
        let now = Instant::now();
        for peer in 0..PRUNE_AT {
            t.take_at(&peer, now).unwrap();
        }
        // A second later every bucket has refilled: the next new peer clears them out.
        t.take_at(&PRUNE_AT, now + Duration::from_secs(1)).unwrap();
        assert_eq!(t.buckets.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_peer_holds_at_most_its_cap_and_a_dropped_slot_is_given_back() {
        let c = PeerCount::new(2);
        let a1 = c.acquire("a").unwrap();
        let _a2 = c.acquire("a").unwrap();
        assert!(c.acquire("a").is_none());
        let _b = c.acquire("b").expect("another peer is not affected");
        drop(a1);
        let _a3 = c.acquire("a").expect("a slot was given back");
        drop(_a3);
        drop(_a2);
        assert!(!c.open.lock().unwrap().contains_key("a"), "a peer with nothing open is forgotten");
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_secs(Duration::ZERO), 1);
        assert_eq!(retry_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_secs(Duration::from_secs(2)), 2);
        assert_eq!(retry_secs(Duration::from_millis(2100)), 3);
    }
}
