//! One-shot commands: everything the command line does besides `serve` and `stdio`, one file a
//! command (or a family of them), each parsing nothing (clap did, in `cli`) and printing for
//! people or as JSON. `lib.rs` only dispatches to them. A command that can run against the
//! running daemon or on the store opened in process goes through `via`, which alone decides
//! which, so it gets the same validation, policy and audit rows either way.
//!
//! - `status`       `status` and `stop`
//! - `ingest`       `ingest`: files into memory, with a progress bar
//! - `audit`        `audit`: the write-audit log
//! - `reindex`      `reindex`: the search indexes rebuilt from the database
//! - `terminal`     `search`, `recall`, `show`, `forget` (also `--project`), `context`, `sources
//!   list --stored`
//! - `transfer`     `export`, `import`, `backup`, `restore`
//! - `shared_store` `migrate`, `migrate-store`
//! - `sources`      `sources add|remove|list`: `[[memory.sources]]` in the config file
//! - `agent_logs`   coding agents' session logs as sources: where they are, `--agent`, the
//!   offer `install` and `register` make (off until the user says yes)
//! - `config`       `config path|show|check` (`check` the findings `serve` would refuse on)
//! - `http_token`   `http-token`
//! - `ui`           `ui`: the dashboard's one-time login link
//! - `eval`         `eval`: retrieval quality on a labelled BEIR folder, in a throwaway store
//! - `models`       `model install|list|remove`: the deep tier's model store
//! - `install`      `install`, `uninstall`; `register` the MCP clients' configs (with
//!   `client_entry`, the `[clients.<client>]` table it writes for a restricted client); `service`
//!   systemd/launchd units; `hooks` the start-of-session hooks `register --hooks` installs; `made`
//!   the record of what they created, for `uninstall` to remove

pub(crate) mod agent_logs;
pub(crate) mod audit;
pub(crate) mod check;
pub(crate) mod client_entry;
pub(crate) mod config;
pub(crate) mod eval;
pub(crate) mod hooks;
pub(crate) mod http_token;
pub(crate) mod ingest;
pub(crate) mod install;
pub(crate) mod made;
pub(crate) mod models;
pub(crate) mod register;
pub(crate) mod reindex;
pub(crate) mod service;
pub(crate) mod shared_store;
pub(crate) mod sources;
pub(crate) mod status;
pub(crate) mod terminal;
pub(crate) mod transfer;
pub(crate) mod ui;

use std::io::Write;

/// Writes command output (not protocol) to stdout. Never used by `stdio` or `serve`.
pub(crate) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
}
