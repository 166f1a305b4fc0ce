//! Test support for driving the real binaries: a temp `OPENHUMAN_HOME`, a daemon started and
//! stopped by the test, and line-protocol clients over a child's stdio or the daemon socket.
//! Every wait is bounded (a hang fails the test instead of blocking CI), and when a test fails
//! the daemon's log is printed.
#![allow(clippy::print_stderr, unsafe_code)]

mod binaries;
mod daemon;
pub mod fake;
mod home;
pub mod http;
mod peer;
mod process;

use std::time::Duration;

pub use binaries::{bin, bin_dir, build_binaries, daemon_bin, shim_bin};
pub use daemon::{Daemon, DaemonBuilder};
pub use home::Home;
pub use peer::{ChildPeer, Lines, Peer};
pub use process::{freeze, kill, processes_matching, wait_exit};

/// Upper bound for any single wait in the tests.
pub const WAIT: Duration = Duration::from_secs(20);
