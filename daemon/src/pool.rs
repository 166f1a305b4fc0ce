//! The bounded blocking pool: the one way the daemon runs synchronous work (the memory engine,
//! the audit writer's flush, file probes) off the async threads. It sits on the floor: it knows
//! nothing of methods, tools or the state, and its errors are plain `anyhow` errors that each
//! caller maps to its own (a method error, a tool failure).

use std::sync::{Arc, LazyLock};

use anyhow::{Result, anyhow};
use tokio::sync::Semaphore;

/// Blocking jobs that may run at once: two per core. Each running job holds a blocking thread
/// (and, for reads, a pooled SQLite connection), so without a bound a burst of concurrent calls
/// grows both to the size of the burst; past it, jobs wait here without a thread. The permit
/// moves into the blocking task, so a cancelled caller keeps its slot until the work it started
/// has stopped.
static SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Arc::new(Semaphore::new((cores * 2).max(4)))
});

/// Write tools that may be in the engine at once. A write holds its thread mostly waiting: for
/// the one writer lock, then for the keyword-index commit it shares with every write waiting by
/// then (the group commit). The more writes wait together, the fewer commits serve them, so
/// this lane is wider than [`SLOTS`] — 64, the concurrency the write benchmark measures — and
/// still bounded: past it, writes wait here without a thread.
const WRITE_SLOTS: usize = 64;

static WRITES: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(WRITE_SLOTS)));

/// Runs `f` on the blocking pool, at most [`SLOTS`] at once; an Err only when the job could not
/// run to its end (it panicked, or the runtime is shutting down).
pub(crate) async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    run_in(&SLOTS, f).await
}

/// Runs a write tool's engine call on the blocking pool, at most [`WRITE_SLOTS`] at once.
pub(crate) async fn run_write<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    run_in(&WRITES, f).await
}

async fn run_in<T: Send + 'static>(lane: &Arc<Semaphore>, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let slot = lane.clone().acquire_owned().await.map_err(|e| anyhow!("the blocking pool is closed: {e}"))?;
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        f()
    })
    .await
    .map_err(|e| anyhow!("blocking task failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_the_job_and_hands_back_its_value() {
        assert_eq!(run(|| 6 * 7).await.unwrap(), 42);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_job_is_an_error_not_a_panic_of_the_caller() {
        let err = run(|| -> u8 { panic!("planted") }).await.unwrap_err();
        assert!(err.to_string().contains("blocking task failed"), "{err:#}");
        // The slot went back with the job: the pool still runs work.
        assert_eq!(run(|| 1).await.unwrap(), 1);
    }

    /// The write lane lets more jobs wait together than the read lane has slots: jobs that
    /// only finish once all of them are in (as writes sharing one index commit do) all finish.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_waiting_together_are_not_held_to_the_read_bound() {
        let n = (std::thread::available_parallelism().map_or(2, |n| n.get()) * 2).max(4) + 4;
        let barrier = Arc::new(std::sync::Barrier::new(n));
        let jobs: Vec<_> = (0..n)
            .map(|i| {
                let b = barrier.clone();
                tokio::spawn(run_write(move || {
                    b.wait();
                    i
                }))
            })
            .collect();
        // Held to a narrower bound the jobs would wait on each other for ever: the generous
        // limit turns that into a failure instead of a hung suite.
        let all = async {
            let mut done = Vec::new();
            for j in jobs {
                done.push(j.await.unwrap().unwrap());
            }
            done
        };
        let done = tokio::time::timeout(std::time::Duration::from_secs(120), all).await.expect("write jobs deadlocked");
        assert_eq!(done, (0..n).collect::<Vec<_>>());
    }
}
