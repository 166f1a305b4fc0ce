//! Integration tests: the real `openhumand-mcp` and `openhuman-mcp-shim` binaries in a temp
//! `OPENHUMAN_HOME`. Build them first (`cargo build --workspace`); the README's test command does.
#![allow(clippy::print_stderr)]

mod agents;
mod cli;
mod clients;
mod dashboard;
mod eval;
mod facts;
mod full_disk;
mod http;
mod import;
mod install;
mod mail_reading;
mod memory;
mod memory_crash;
mod oauth;
mod oversized;
mod packaging;
mod postgres;
mod privacy;
mod prompts;
mod recall_quality;
mod reliability;
mod roots;
mod sessions;
mod shared_vectors;
mod shim;
mod smoke;
mod socket;
mod terminal;
mod transfer;
mod transformer;
mod watch;
mod writes;
