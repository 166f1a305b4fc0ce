//! openhumand-mcp: the daemon behind openhuman-mcp, wiring the library crates together (config,
//! memory, providers, and the protocol crate `openhuman_mcp`). This file only dispatches a
//! parsed command line: `serve` and `stdio` to `server`, every other command to its file in
//! `cmd/`. Map of the crate, from the floor up:
//!
//! - `state`      `AppState`, the cloneable handle to everything warm; the floor, naming no module
//!   above it (the layers above hand in what it keeps for them, see `server::state`)
//! - `pool`       the bounded blocking pool, the only way onto tokio's blocking threads
//! - `policy`     the Act limiter; `audit_writer` the rejection-row writer; `agents/` the
//!   subagent registry (built-in + user agents)
//! - `backends`   opens the memory engine and its embedder per config
//! - `engine`     the typed way onto the memory engine: `operate` runs an operation on the pool
//! - `tools/`     the tool catalog and `tools/call`: lookup, validation, policy, audit, one file
//!   per tool family
//! - `rpc`        the one table of `openhuman.*` methods (daemon and memory), and the tool
//!   registry over tools and memory methods (`rpc/registry`)
//! - `resources`  the compiled-in prompt catalog; `live_resources` memory as resources
//! - `prompts`    MCP prompts: one per built-in subagent, and `recall_context` (memory packed
//!   into a token budget); `completion` completes their arguments and the resource templates'
//!   ids
//! - `watch/`     the one folder watcher keeping `[[memory.sources]]` in step with memory
//! - `status`     the lines `status` prints, shared with the dashboard's status page
//! - `ui/`        the dashboard under `/ui` on the HTTP port
//! - `clients`    a tool set per client: the `[clients.<name>]` entry a caller gets, what it
//!   sees, its level, and the audited refusal of a call outside its set
//! - `app`        the daemon as an MCP application: tools, resources, prompts, completions,
//!   `openhuman.*` methods
//! - `server`     `serve` and `stdio`: the state built with its upper parts (`server::state`),
//!   start-up, accept loop, signals, idle timeout, drain
//! - `http_auth`  the HTTP bearer token: chosen by the user, or generated and kept 0600
//! - `logging`    stderr + rolling file; `private` the umask and tightening of the home
//! - `client`     the tiny socket client `via` and the daemon-only commands use
//! - `via`        how a one-shot command reaches the store: the running daemon, else in process;
//!   the one place that asks whether a daemon serves the home
//! - `cli`        command-line shapes (clap); `cmd/` the one-shot commands, one file each

mod agents;
mod app;
mod audit_writer;
mod backends;
mod cli;
mod client;
mod clients;
mod cmd;
mod completion;
mod engine;
mod http_auth;
mod live_resources;
mod logging;
mod oauth;
mod policy;
mod pool;
mod private;
mod prompts;
mod resources;
mod rpc;
mod server;
mod state;
mod status;
mod store_counts;
mod tools;
mod ui;
mod via;
mod watch;
mod workspace;

use std::io::Write;

use anyhow::{Context, Result};
use openhuman_common::Paths;

pub use cli::Cli;
use cli::{Command, SourcesAction};

/// Process exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;

/// Runs a parsed command; returns the exit code.
pub fn main_with(cli: Cli) -> i32 {
    private::set_umask();
    let server = matches!(cli.command, Command::Serve(_) | Command::Stdio);
    let result = if server {
        server::start(&cli)
    } else {
        logging::init_stderr("warn", cli.verbose);
        run_command(&cli)
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Said once: a server logs it (stderr and its log file) when logging is up and lets
            // errors through; a one-shot command, or a server that failed before that, says it
            // plainly.
            if server && tracing::enabled!(tracing::Level::ERROR) {
                tracing::error!("{e:#}");
            } else {
                let _ = writeln!(std::io::stderr(), "openhumand-mcp: {e:#}");
            }
            EXIT_FAILURE
        }
    }
}

pub(crate) fn resolve_paths(cli: &Cli, socket: Option<&std::path::Path>) -> Result<Paths> {
    Ok(Paths::resolve(cli.home.as_deref())?.with_config_file(cli.config.as_deref())?.with_socket(socket)?)
}

/// Makes the home private (see `private`); the run directory only when it is the home's own,
/// not one named by `--socket`.
pub(crate) fn tighten_home(cli: &Cli, paths: &Paths) -> Result<()> {
    let own_run_dir = Paths::resolve(cli.home.as_deref())?.run_dir == paths.run_dir;
    private::tighten_home(paths, own_run_dir);
    Ok(())
}

pub(crate) fn runtime(threads: Option<usize>) -> Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        b.worker_threads(n);
    }
    b.enable_all().build().context("cannot start the async runtime")
}

/// Hands a one-shot command to its file in `cmd/`.
fn run_command(cli: &Cli) -> Result<i32> {
    let paths = |socket: &cli::SocketArg| resolve_paths(cli, socket.socket.as_deref());
    match &cli.command {
        Command::Status(args) => cmd::status::status(&paths(&args.socket)?, args),
        Command::Stop(sock) => cmd::status::stop(&paths(sock)?),
        Command::HttpToken => cmd::http_token::run(&resolve_paths(cli, None)?),
        Command::Ui(args) => cmd::ui::run(&paths(&args.socket)?, args),
        Command::Ingest(args) => cmd::ingest::run(&paths(&args.socket)?, args),
        Command::Audit(args) => cmd::audit::run(&paths(&args.socket)?, args),
        Command::Search(args) => cmd::terminal::query(&paths(&args.socket)?, args, "memory.search", "hits"),
        Command::Recall(args) => cmd::terminal::query(&paths(&args.socket)?, args, "memory.recall", "chunks"),
        Command::Show(args) => cmd::terminal::show(&paths(&args.socket)?, args),
        Command::Forget(args) => cmd::terminal::forget(&paths(&args.socket)?, args),
        Command::Export(args) => cmd::transfer::export(&paths(&args.socket)?, args),
        Command::Import(args) => cmd::transfer::import(&paths(&args.socket)?, args),
        Command::Backup(args) => cmd::transfer::backup(&resolve_paths(cli, None)?, args),
        Command::Restore(args) => cmd::transfer::restore(&paths(&args.socket)?, args),
        Command::Migrate(sock) => cmd::shared_store::migrate(&paths(sock)?),
        Command::MigrateStore(args) => cmd::shared_store::migrate_store(&paths(&args.socket)?, args),
        Command::Sources { action: SourcesAction::List { json, stored: true }, socket } => {
            cmd::terminal::stored_sources(&paths(socket)?, *json)
        }
        Command::Sources { action, socket } => cmd::sources::run(&paths(socket)?, action),
        Command::Reindex(sock) => cmd::reindex::run(&paths(sock)?),
        Command::Eval(args) => cmd::eval::command(&resolve_paths(cli, None)?, args),
        Command::Model { action } => cmd::models::run(&resolve_paths(cli, None)?, action),
        Command::Config { action } => cmd::config::run(&resolve_paths(cli, None)?, action),
        Command::Register(args) => cmd::register::run(cli, args),
        Command::Context(args) => cmd::terminal::context(&paths(&args.socket)?, args),
        Command::Install(args) => cmd::install::install(cli, args),
        Command::Uninstall(args) => cmd::install::uninstall(cli, args),
        Command::Service { action } => cmd::service::command(cli, action),
        Command::Serve(_) | Command::Stdio => unreachable!("handled by server::start"),
    }
}
