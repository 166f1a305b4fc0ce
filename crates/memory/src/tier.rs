//! The vector tiers and which one answers a query. The fast tier's embedder (the built-in
//! model or an HTTP provider) gives every chunk its vector as it is written; the optional deep
//! tier (a slower, better embedder such as a transformer) is filled by a background thread of
//! its own. A query uses the deep tier only while it covers every chunk, so a half-filled deep
//! tier never hides chunks from vector search; until then, and whenever the deep embedder fails
//! on the query, the fast tier answers.
//!
//! Coverage is a flag kept under the writer lock: a write that adds chunks clears it (they have
//! no deep vector yet), and the background thread sets it again when, under the same lock, the
//! deep index holds as many vectors as there are chunks. The index never holds vectors of
//! deleted chunks (deletions are applied under the writer lock and ghosts are purged on open),
//! so equal counts mean every chunk is covered.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, RwLock};

use serde::Serialize;

use rusqlite::Connection;

use super::embed::Embedder;
use super::locks::read;
use super::vecfile::VecFile;
use super::vectors::{VectorIndex, ann};
use super::{Inner, MemoryEngine, MemoryError, lock};

/// Texts per call to the fast tier's embedder.
pub(crate) const EMBED_BATCH: usize = 128;

/// Which vector tier: `Fast` (every chunk at write time) or `Deep` (filled in the background).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TierKind {
    Fast,
    Deep,
}

impl TierKind {
    pub fn name(self) -> &'static str {
        match self {
            TierKind::Fast => "fast",
            TierKind::Deep => "deep",
        }
    }

    /// The tier's directory under the data dir; also its row in `index_state`.
    pub(crate) fn dir(self) -> &'static str {
        match self {
            TierKind::Fast => "vectors",
            TierKind::Deep => "vectors-deep",
        }
    }

    /// Texts per embedder call. A transformer pads a batch to its longest text and its cost
    /// grows with the batch, so the deep tier takes smaller batches.
    pub(crate) fn embed_batch(self) -> usize {
        match self {
            TierKind::Fast => EMBED_BATCH,
            TierKind::Deep => 32,
        }
    }

    /// Rows embedded per round trip through the writer lock by the background thread; also
    /// how often it looks at the stop flag (a deep batch takes about a second, a fast one of
    /// 4,096 rows a few tens of milliseconds). A bulk ingest holds the lock for a file at a
    /// time, so the fast tier takes many rows each time it gets the lock, or it trails.
    pub(crate) fn fill_batch(self) -> usize {
        match self {
            TierKind::Fast => EMBED_BATCH * 32,
            TierKind::Deep => 32,
        }
    }

    /// Rows the background thread orders by text length before cutting them into fill batches,
    /// so that a transformer pads each batch little; the fast tier's embedder does not pad.
    pub(crate) fn sort_window(self) -> usize {
        match self {
            TierKind::Fast => self.fill_batch(),
            TierKind::Deep => 1024,
        }
    }
}

/// A tier's background fill thread (see `backfill`).
#[derive(Default)]
pub(crate) struct Background {
    pub handle: Option<std::thread::JoinHandle<()>>,
    /// True from spawn until the thread has decided, under this lock, to stop.
    pub running: bool,
}

/// One vector tier: its embedder, the in-memory index and the background fill's state.
pub(crate) struct Tier {
    pub kind: TierKind,
    pub embedder: Arc<dyn Embedder>,
    /// Builds and maintains the approximate index; stopped and joined when the tier goes, before
    /// the index (it writes the index file as it stops).
    _ann: ann::Worker,
    /// Shared with the tier's `ann` worker, which holds it weakly.
    pub vectors: Arc<RwLock<VectorIndex>>,
    pub background: Mutex<Background>,
    /// Set when some chunks were left without a vector of this tier (backlog, new chunks for
    /// the deep tier, an embedder failure).
    pub needs_fill: AtomicBool,
    /// Every chunk has a vector of this tier (see the module notes).
    pub covered: AtomicBool,
    /// Set when the index was emptied (reindex): the background thread scans every chunk again
    /// instead of only those written since its last pass (`scanned_seq`).
    pub rescan: AtomicBool,
    /// Every chunk of a change sequence (`chunks.change_seq`) up to this one was seen with a
    /// vector of this tier, or given one, by the background thread. Kept across its passes and
    /// restarts, so a pass reads only chunks written since; 0 until the first full pass of this
    /// process. The sequence, not the rowid: a mirror of a shared store takes other devices'
    /// chunks with their rowids, which may sit below rows it already has, but always with a new
    /// local sequence.
    pub scanned_seq: AtomicI64,
}

impl Tier {
    pub fn new(kind: TierKind, embedder: Arc<dyn Embedder>, vectors: VectorIndex) -> Tier {
        let vectors = Arc::new(RwLock::new(vectors));
        let worker = ann::Worker::spawn(&vectors, &format!("ann-{}", kind.name()));
        Tier {
            kind,
            embedder,
            _ann: worker,
            vectors,
            background: Mutex::new(Background::default()),
            needs_fill: AtomicBool::new(false),
            covered: AtomicBool::new(false),
            rescan: AtomicBool::new(false),
            scanned_seq: AtomicI64::new(0),
        }
    }

    /// A query's vector as this tier's embedder reads queries: an embedder that sums token rows
    /// ([`Embedder::bag_of_words`]) gets it without its stop words.
    pub(crate) fn embed_query(&self, query: &str) -> Result<Vec<f32>, crate::embed::EmbedError> {
        let text = if self.embedder.bag_of_words() { super::fts::without_stop_words(query) } else { query.into() };
        self.embedder.embed_query(&text)
    }

    /// Re-reads coverage; call with the writer lock held (`conn` the writer's connection), so
    /// no write lands in between.
    pub fn update_coverage(&self, conn: &Connection) -> Result<bool, MemoryError> {
        let chunks: i64 = conn.prepare_cached("SELECT count(*) FROM chunks")?.query_row([], |r| r.get(0))?;
        let full = read(&self.vectors).len() == chunks as usize;
        self.covered.store(full, Ordering::Relaxed);
        Ok(full)
    }
}

/// A tier's vector log and the change sequence its index has applied.
pub(crate) struct TierLog {
    pub file: VecFile,
    pub applied: i64,
}

impl Inner {
    /// The configured tiers, fast first.
    pub(crate) fn tiers(&self) -> impl Iterator<Item = &Tier> {
        std::iter::once(&self.fast).chain(self.deep.as_ref())
    }

    pub(crate) fn tier(&self, kind: TierKind) -> Option<&Tier> {
        match kind {
            TierKind::Fast => Some(&self.fast),
            TierKind::Deep => self.deep.as_ref(),
        }
    }

    /// The tier that answers vector queries now: the deep one while it covers every chunk.
    fn answering(&self) -> &Tier {
        match &self.deep {
            Some(d) if d.covered.load(Ordering::Relaxed) => d,
            _ => &self.fast,
        }
    }

    /// The query's vector and the tier whose index it is searched in. A deep embedder that
    /// fails hands over to the fast tier; `None` when neither can embed (keywords only).
    pub(crate) fn query_vector(&self, query: &str) -> Option<(Vec<f32>, &Tier)> {
        let first = self.answering();
        let fallback = (first.kind == TierKind::Deep).then_some(&self.fast);
        for tier in std::iter::once(first).chain(fallback) {
            match tier.embed_query(query) {
                Ok(v) => return Some((v, tier)),
                Err(e) => tracing::warn!(
                    tier = tier.kind.name(),
                    error = %format!("{e:#}"),
                    "query embedding failed; {}",
                    if tier.kind == TierKind::Deep { "using the fast tier" } else { "ranking by keywords only" }
                ),
            }
        }
        None
    }
}

/// How far a tier has come, for `status` and `stats`.
#[derive(Debug, Clone, Serialize)]
pub struct TierProgress {
    pub tier: TierKind,
    /// The embedder's signature.
    pub model: String,
    pub dims: usize,
    /// Chunks with a vector of this tier.
    pub covered: usize,
    /// Chunks in the store.
    pub total: usize,
    /// Whether vector queries use this tier now.
    pub answering: bool,
    /// Whether its background thread is embedding.
    pub filling: bool,
}

pub(crate) fn progress(inner: &Inner, total: usize) -> Vec<TierProgress> {
    let answering = inner.answering().kind;
    inner
        .tiers()
        .map(|t| TierProgress {
            tier: t.kind,
            model: t.embedder.signature().to_string(),
            dims: t.embedder.dims(),
            covered: read(&t.vectors).len(),
            total,
            answering: t.kind == answering,
            filling: lock(&t.background).running,
        })
        .collect()
}

impl MemoryEngine {
    /// Each tier's coverage and whether it answers queries (fast first, then deep if any).
    pub fn tiers(&self) -> Result<Vec<TierProgress>, MemoryError> {
        let total: i64 = self.inner.read_conn()?.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
        Ok(self.tiers_of(total))
    }

    /// [`Self::tiers`] for a caller that has counted the chunks already (from `stats`).
    pub fn tiers_of(&self, chunks: i64) -> Vec<TierProgress> {
        progress(&self.inner, chunks.max(0) as usize)
    }
}
