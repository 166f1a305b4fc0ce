//! Test support crate.
