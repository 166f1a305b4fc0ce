//! Queries in progress, so that background work can stand aside for them.
//!
//! Search and recall hold a `Query` while they rank and load; the entity thread asks
//! `Foreground::yield_to` before each batch. The two share both cores' caches and memory
//! bandwidth (lowering the thread's CPU priority was measured not to help), so the thread
//! waits while a query runs or has just ended — a client asking one question after another
//! leaves gaps of a millisecond or two — but never longer than its bound, so background work
//! still moves under a steady stream of queries.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A query that ended less than this long ago counts as the stream of queries going on.
const GAP: Duration = Duration::from_millis(30);

/// How often a waiting thread looks again.
const POLL: Duration = Duration::from_millis(2);

pub(crate) struct Foreground {
    /// Queries running now.
    running: AtomicUsize,
    /// When the last query ended, in microseconds after `base` (0: none has).
    last_end_us: AtomicU64,
    base: Instant,
}

impl Default for Foreground {
    fn default() -> Foreground {
        Foreground { running: AtomicUsize::new(0), last_end_us: AtomicU64::new(0), base: Instant::now() }
    }
}

/// A query in progress, until dropped.
pub(crate) struct Query<'a>(&'a Foreground);

impl Drop for Query<'_> {
    fn drop(&mut self) {
        let end = self.0.base.elapsed().as_micros().max(1) as u64;
        self.0.last_end_us.fetch_max(end, Ordering::Relaxed);
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Foreground {
    pub(crate) fn query(&self) -> Query<'_> {
        self.running.fetch_add(1, Ordering::SeqCst);
        Query(self)
    }

    /// Whether a query runs at `now` or ended less than `GAP` before it.
    fn busy_at(&self, now: Instant) -> bool {
        if self.running.load(Ordering::SeqCst) > 0 {
            return true;
        }
        let last = self.last_end_us.load(Ordering::Relaxed);
        last != 0 && now.saturating_duration_since(self.base) < Duration::from_micros(last) + GAP
    }

    /// Waits while queries are going on, for at most `bound`. `give_up` is asked at each look
    /// (the store closing).
    pub(crate) fn yield_to(&self, bound: Duration, mut give_up: impl FnMut() -> bool) {
        let started = Instant::now();
        while self.busy_at(Instant::now()) && started.elapsed() < bound && !give_up() {
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_while_a_query_runs_and_just_after_it_ends() {
        let fg = Foreground::default();
        assert!(!fg.busy_at(Instant::now()), "no query yet");
        let q = fg.query();
        let far = Instant::now() + Duration::from_secs(3600);
        assert!(fg.busy_at(far), "a running query keeps it busy however long it runs");
        drop(q);
        let ended = fg.base + Duration::from_micros(fg.last_end_us.load(Ordering::Relaxed));
        assert!(fg.busy_at(ended + GAP / 2), "a query just ended: the next is likely on its way");
        assert!(!fg.busy_at(ended + GAP), "quiet once the gap has passed");
    }

    #[test]
    fn overlapping_queries_count_until_the_last_ends() {
        let fg = Foreground::default();
        let (a, b) = (fg.query(), fg.query());
        drop(a);
        assert!(fg.busy_at(Instant::now() + GAP * 10), "one query still runs");
        drop(b);
        assert_eq!(fg.running.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn the_wait_is_bounded_and_stops_when_told() {
        let fg = Foreground::default();
        let _q = fg.query();
        let began = Instant::now();
        fg.yield_to(Duration::from_millis(20), || false);
        assert!(began.elapsed() >= Duration::from_millis(20), "waited for the running query up to the bound");
        let mut asked = 0;
        fg.yield_to(Duration::from_millis(50), || {
            asked += 1;
            true
        });
        assert_eq!(asked, 1, "a closing store stops the wait at the first look");
    }
}
