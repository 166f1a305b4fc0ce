//! Argument schemas, declared once per parameter type. A type declared with [`params!`] is at
//! the same time the Rust struct its callers build and receive, the JSON Schema a client reads
//! in `tools/list`, and the validator every wire call passes before it is deserialised into that
//! struct. Validation rejects rather than clamps, and its messages name the argument and the
//! bound; nothing downstream checks the same bounds again. Map:
//!
//! - `args`   [`ArgSpec`] and [`Field`]: the schema, its rendering and its validation
//! - `params` the [`Params`] trait and the [`params!`] macro that declares a parameter type

pub mod args;
mod params;

pub use args::{ArgError, ArgKind, ArgSpec, DEFAULT_MAX_CHARS, Field};
pub use params::Params;
