//! Text embedders for the memory engine: the `Embedder` trait (implemented here by the
//! built-in static model and, from above, by outside embedders such as HTTP providers).
//!
//! Every stored vector keeps the [`Embedder::signature`] of the model that
//! produced it, so vectors from a different model (or a regenerated table) can
//! be detected and re-embedded instead of being compared with new ones.

mod static_model;
#[rustfmt::skip]
mod unicode_tables;
mod wordpiece;

pub use static_model::{MODEL_ID as STATIC_MODEL_ID, StaticModel};
pub use wordpiece::WordPiece;

use std::sync::Arc;

/// The built-in static model behind an `Arc`, as the daemon holds it: parsed once per process,
/// shared by every engine. It embeds on the caller's thread (parallelism 1, the trait's default).
pub fn builtin() -> Result<Arc<dyn Embedder>, crate::MemoryError> {
    Ok(Arc::new(Builtin(StaticModel::builtin()?)))
}

struct Builtin(&'static StaticModel);

impl Embedder for Builtin {
    fn signature(&self) -> &str {
        self.0.signature()
    }
    fn dims(&self) -> usize {
        self.0.dims()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0.embed(texts)
    }
    fn bag_of_words(&self) -> bool {
        self.0.bag_of_words()
    }
    fn fusion_weight(&self) -> f64 {
        self.0.fusion_weight()
    }
    fn line_windows(&self, text: &str, width: usize) -> Option<Vec<Vec<f32>>> {
        self.0.line_windows(text, width)
    }
}

/// Turns texts into fixed-size vectors whose dot product is a similarity.
pub trait Embedder: Send + Sync {
    /// Identifies the model: model id, dimensions and a prefix of the
    /// weights' sha256, e.g. `minilm-l6-v2-static/256/0123456789ab`.
    fn signature(&self) -> &str;

    /// Length of every vector returned by [`Embedder::embed`].
    fn dims(&self) -> usize;

    /// One vector per text, in order. Vectors are L2-normalised, except for
    /// texts with no known token (e.g. empty), which get the zero vector.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Whether a text's vector is the sum of its tokens' vectors, each the same whatever the
    /// words around it (a static table). Such an embedder gets a query without its stop words
    /// (when it has others): with no context to discount them, "when is my …" adds the same
    /// direction to every question, one that chatty mail shares, and made a mail asking "are you
    /// coming for lunch on Sunday?" the nearest chunk to "when is my language class?". Stored
    /// texts keep every word.
    fn bag_of_words(&self) -> bool {
        false
    }

    /// One vector for each non-blank line of `text`, of the line read with its neighbours: a
    /// window of `width` lines centred on it (fewer at the text's ends), normalised as
    /// [`Embedder::embed`]'s; `None` from an
    /// embedder that cannot give them for little more than embedding the text once. Recall
    /// reads a packed chat chunk's best few turns with them (`search`, "windows").
    fn line_windows(&self, _text: &str, _width: usize) -> Option<Vec<Vec<f32>>> {
        None
    }

    /// How much hybrid ranking trusts this embedder against BM25: the weight of its
    /// (max-normalised) cosine in the blend, in `0..=1`, BM25 taking the rest. Sentence
    /// models of general quality sit near the middle; a weak model gets less so that it
    /// refines keyword ranking without overruling it.
    fn fusion_weight(&self) -> f64 {
        DEFAULT_FUSION_WEIGHT
    }

    /// The same weight for chat chunks, which may differ: a turn or a few short lines give a
    /// model little to read, and the names and words a question shares with them decide more.
    /// By default the same as [`Embedder::fusion_weight`].
    fn chat_fusion_weight(&self) -> f64 {
        self.fusion_weight()
    }

    /// How many threads may embed parts of one backlog at once. An in-process model bound by
    /// the CPU says how many cores it may use; the default, one, suits an embedder that is a
    /// remote service or runs its own threads.
    fn parallelism(&self) -> usize {
        1
    }

    /// The vector of a search query. Models trained with a query instruction (a prefix the
    /// query gets and stored texts do not) override this; by default it is `embed` of one text.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed(&[query])?;
        if v.len() != 1 {
            return Err(EmbedError(format!("embedder returned {} vectors for 1 text", v.len())));
        }
        Ok(v.swap_remove(0))
    }
}

/// The vector weight of an embedder that does not say how good it is.
pub const DEFAULT_FUSION_WEIGHT: f64 = 0.5;

/// Why an embedder could not embed a batch, in words for the log and the user (what failed and
/// what to do). The engine keeps the chunks keyword-searchable and embeds them again later.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EmbedError(pub String);

/// Text that represents a chunk to the embedder.
pub(crate) fn embed_text(title: Option<&str>, content: &str) -> String {
    match title {
        Some(t) if !t.is_empty() => format!("{t}\n{content}"),
        _ => content.to_string(),
    }
}
