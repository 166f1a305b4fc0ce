//! The store's counts in `status`, answered in bounded time whatever the store's size.
//!
//! Counting chunks, sources, projects and entities scans the database: a few milliseconds for a
//! personal store, a second or more at ten million chunks, and far longer from a cold disk just
//! after the daemon started. `status` is what a user, a supervisor and a dashboard poll, so it
//! never waits longer than [`WAIT`]: a count that takes longer goes on in the background, and
//! the answer carries the last finished count with its age, or says that counting is under way.
//! A count that took under [`CHEAP`] is made again for every status, so a small store's figures
//! are always exact; a dearer one is made again at most every [`RECOUNT_AFTER`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use serde_json::Value;
use tokio::time::Instant;

/// The longest a status waits for a count.
pub(crate) const WAIT: Duration = Duration::from_secs(2);

/// A count that took less than this is made again for every status.
const CHEAP: Duration = Duration::from_millis(250);

/// A count that took longer is made again when the last one is older than this.
pub(crate) const RECOUNT_AFTER: Duration = Duration::from_secs(30);

/// What a count gives: the status's figures and how long the counting itself took (waiting for
/// a thread of the pool does not count), or why it failed.
pub(crate) type Count = BoxFuture<'static, Result<(Value, Duration), String>>;

type Running = Shared<BoxFuture<'static, Result<Counted, String>>>;

#[derive(Default, Clone)]
pub(crate) struct StoreCounts {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    last: Option<Counted>,
    running: Option<Running>,
}

#[derive(Clone)]
struct Counted {
    store: Value,
    at: Instant,
    took: Duration,
}

impl Counted {
    /// This count, as an answer that says how old it is.
    fn aged(self) -> Answer {
        let age = self.at.elapsed();
        Answer::Counted { store: self.store, age: Some(age) }
    }
}

/// The counts a status shows.
#[derive(Debug, PartialEq)]
pub(crate) enum Answer {
    /// Counted for this status (or, when `age` is set, that long ago).
    Counted { store: Value, age: Option<Duration> },
    /// The first count is still running.
    Counting,
    /// The count failed (the next status tries again).
    Failed(String),
}

impl StoreCounts {
    /// The store's counts within [`WAIT`]; `count` starts a new count when one is due.
    pub(crate) async fn get(&self, count: impl FnOnce() -> Count) -> Answer {
        let (running, last) = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            // A dear store answers from its last count at once, recounting when it is old.
            if let Some(c) = st.last.clone().filter(|c| c.took >= CHEAP) {
                if c.at.elapsed() >= RECOUNT_AFTER && st.running.is_none() {
                    st.running = Some(self.start(count()));
                }
                return c.aged();
            }
            // A cheap store (or one never counted) is counted now, or joins the count running.
            let running = match &st.running {
                Some(r) => r.clone(),
                None => st.running.insert(self.start(count())).clone(),
            };
            (running, st.last.clone())
        };
        match tokio::time::timeout(WAIT, running).await {
            Ok(Ok(c)) => Answer::Counted { store: c.store, age: None },
            Ok(Err(e)) => Answer::Failed(e),
            Err(_) => last.map_or(Answer::Counting, Counted::aged),
        }
    }

    /// Runs `count` to its end whether or not anyone still waits. What it found is kept by
    /// whichever poll finishes it, before any waiter hears of it.
    fn start(&self, count: Count) -> Running {
        let state = self.state.clone();
        let running = async move {
            let out = count.await.map(|(store, took)| Counted { store, at: Instant::now(), took });
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            st.running = None;
            if let Ok(c) = &out {
                st.last = Some(c.clone());
            }
            out
        }
        .boxed()
        .shared();
        tokio::spawn(running.clone());
        running
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;
    use tokio::sync::oneshot;

    use super::*;

    fn counted(n: i64) -> Answer {
        Answer::Counted { store: json!({ "chunks": n }), age: None }
    }

    #[tokio::test(start_paused = true)]
    async fn a_cheap_count_is_made_again_for_every_status() {
        let counts = StoreCounts::default();
        for n in 1..=3 {
            let count = || async move { Ok((json!({ "chunks": n }), Duration::from_millis(5))) }.boxed();
            assert_eq!(counts.get(count).await, counted(n));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_count_never_holds_a_status_past_the_wait() {
        let counts = StoreCounts::default();
        let made = Arc::new(AtomicUsize::new(0));
        let (done, finished) = oneshot::channel::<()>();
        let slow = |made: &Arc<AtomicUsize>, n: i64, gate: Option<oneshot::Receiver<()>>| {
            made.fetch_add(1, Ordering::SeqCst);
            async move {
                let began = Instant::now();
                match gate {
                    Some(g) => g.await.map_err(|e| e.to_string())?,
                    None => tokio::time::sleep(Duration::from_secs(5)).await,
                }
                Ok((json!({ "chunks": n }), began.elapsed()))
            }
            .boxed()
        };
        // The first status: no count yet, and this one outlasts the wait.
        let began = Instant::now();
        assert_eq!(counts.get(|| slow(&made, 1, Some(finished))).await, Answer::Counting);
        assert_eq!(began.elapsed(), WAIT);
        // The count finishes; the next status joins it instead of starting another.
        done.send(()).unwrap();
        assert_eq!(counts.get(|| slow(&made, 2, None)).await, counted(1));
        assert_eq!(made.load(Ordering::SeqCst), 1);
        // That count was dear (it took the 2 s): the status answers from it at once, with its age.
        tokio::time::advance(Duration::from_secs(10)).await;
        let began = Instant::now();
        let Answer::Counted { store, age } = counts.get(|| slow(&made, 3, None)).await else { panic!("a count") };
        assert_eq!(
            (store, age, began.elapsed()),
            (json!({ "chunks": 1 }), Some(Duration::from_secs(10)), Duration::ZERO)
        );
        assert_eq!(made.load(Ordering::SeqCst), 1, "not recounted within {RECOUNT_AFTER:?}");
        // Once it is old, a status starts a recount and still answers at once.
        tokio::time::advance(RECOUNT_AFTER).await;
        let Answer::Counted { store, .. } = counts.get(|| slow(&made, 4, None)).await else { panic!("a count") };
        assert_eq!(store, json!({ "chunks": 1 }));
        assert_eq!(made.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_count_is_reported_and_tried_again() {
        let counts = StoreCounts::default();
        let failed = counts.get(|| async { Err("disk I/O error".to_string()) }.boxed()).await;
        assert_eq!(failed, Answer::Failed("disk I/O error".into()));
        let count = || async { Ok((json!({ "chunks": 7 }), Duration::from_millis(5))) }.boxed();
        assert_eq!(counts.get(count).await, counted(7));
    }
}
