//! Test support for driving the real binaries, shared by the integration tests and the
//! benchmarks: a temp `OPENHUMAN_HOME` (`home`), the daemon started and stopped through one
//! builder (`daemon`), line-protocol clients over a child's stdio or the daemon socket (`peer`),
//! helpers that read replies in assertions (`replies`), a raw HTTP client (`http`), scripted
//! stand-ins for upstream APIs (`fake`), a disk that really fills up (`disk`), a seeded
//! generator of adversarial messages (`fuzz`), a throwaway PostgreSQL server (`postgres`) and the
//! prerequisites the fixture scripts provide (`fixtures`).
//! Every wait is bounded (a hang fails the test instead of blocking CI), and when a test fails
//! the daemon's log is printed.
#![allow(clippy::print_stderr, unsafe_code)]

mod binaries;
mod daemon;
pub mod disk;
pub mod fake;
pub mod fixtures;
pub mod fuzz;
mod home;
pub mod http;
mod peer;
pub mod postgres;
mod process;
mod replies;

use std::time::Duration;

pub use binaries::{bin, bin_dir, build_binaries, daemon_bin, shim_bin};
pub use daemon::{Daemon, DaemonBuilder};
pub use home::Home;
pub use peer::{ChildPeer, Lines, Peer};
pub use process::{freeze, kill, open_fds, processes_matching, pty, rss_kib, wait_exit};
pub use replies::{rpc_error, tool_err_text, tool_ok, tool_text};

/// Upper bound for any single wait in the tests.
pub const WAIT: Duration = Duration::from_secs(20);
