//! openhumand-mcp: the daemon behind openhuman-mcp, wiring the library crates together (config,
//! memory, providers, and the protocol crate `openhuman_mcp`). Map of the crate:
//!
//! - `cli`        command-line shapes (clap)
//! - `state`      `AppState`, the cloneable handle to everything warm
//! - `app`        the daemon as an MCP application: tools, resources, prompts, completions,
//!   `openhuman.*` methods
//! - `tools/`     the tool catalog and `tools/call`: lookup, validation, policy, audit, one file
//!   per tool family
//! - `server`     `serve`: accept loop, signals, idle timeout, graceful drain
//! - `rpc`        the one table of `openhuman.*` methods (daemon and memory) and the one bounded
//!   path onto the blocking pool
//! - `backends`   opens the memory engine and its embedder per config
//! - `check`      `config check`: what `serve` would refuse or run degraded, without network
//! - `policy`     the Act limiter; `audit_writer` the rejection-row writer; `tool_registry` the
//!   tool registry and diagnostics
//! - `agents/`    the subagent registry (built-in + user agents)
//! - `resources`  the compiled-in prompt catalog; `live_resources` memory as resources
//! - `prompts`    MCP prompts: one per built-in subagent, and `recall_context` (memory packed
//!   into a token budget); `completion` completes their arguments and the resource templates'
//!   ids
//! - `watch/`     the one folder watcher keeping `[[memory.sources]]` in step with memory
//! - `sources`    `sources add|remove|list`: edits `[[memory.sources]]` in the config file
//! - `status`     the lines `status` prints, shared with the dashboard's status page
//! - `ui/`        the dashboard under `/ui` on the HTTP port, and `ui` (its login link)
//! - `terminal`   `search`, `recall`, `show`, `forget`, `sources list --stored`: the memory tools
//!   at the terminal
//! - `transfer`   `export`, `import`, `backup`, `restore`
//! - `via`        how a one-shot command reaches the store: the running daemon, else in process
//! - `eval`       `eval`: retrieval quality (nDCG@10, Recall@10/100, latency) on a labelled BEIR
//!   folder, in a throwaway store
//! - `models`     `model install|list|remove`: the transformer model store of the deep tier
//! - `http_auth`  the HTTP bearer token: chosen by the user, or generated and kept 0600
//! - `client`     the tiny socket client used by `status`, `stop`, `ingest`, `reindex`, `audit`
//! - `install`    `install` and `uninstall`: binaries in a stable place, the login service and
//!   client registrations in one command, and back
//! - `register`   adds the shim to MCP clients' configs (and takes it out again)
//! - `service`    systemd/launchd install
//! - `logging`    stderr + rolling file
//! - `private`    the umask and tightening of a home other users could read

pub mod agents;
pub mod app;
pub mod audit_writer;
pub mod backends;
pub mod check;
pub mod cli;
pub mod client;
pub mod completion;
pub mod eval;
pub mod http_auth;
pub mod install;
pub mod live_resources;
pub mod logging;
pub mod models;
pub mod policy;
pub mod pool;
pub mod private;
pub mod prompts;
pub mod register;
pub mod resources;
pub mod rpc;
pub mod server;
pub mod service;
pub mod shared_store;
pub mod sources;
pub mod state;
pub mod status;
pub mod terminal;
pub mod tool_registry;
pub mod tools;
pub mod transfer;
pub mod ui;
pub mod via;
pub mod watch;

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result};
use openhuman_common::Paths;
use openhuman_config as config;
use openhuman_mcp::transport;
use openhuman_mcp::transport::limits::Rate;

use cli::{Cli, Command, ConfigAction, ServiceAction, SourcesAction};

/// Process exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;

/// Writes command output (not protocol) to stdout. Never used by `stdio` or `serve`.
pub(crate) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
}

/// Runs a parsed command; returns the exit code.
pub fn main_with(cli: Cli) -> i32 {
    private::set_umask();
    let server = matches!(cli.command, Command::Serve(_) | Command::Stdio);
    let result = if server {
        run_server(&cli)
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

fn resolve_paths(cli: &Cli, socket: Option<&std::path::Path>) -> Result<Paths> {
    Ok(Paths::resolve(cli.home.as_deref())?.with_config_file(cli.config.as_deref())?.with_socket(socket)?)
}

/// Makes the home private (see `private`); the run directory only when it is the home's own,
/// not one named by `--socket`.
fn tighten_home(cli: &Cli, paths: &Paths) -> Result<()> {
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

fn run_server(cli: &Cli) -> Result<i32> {
    match &cli.command {
        Command::Stdio => {
            logging::init_stderr("warn", cli.verbose);
            let paths = resolve_paths(cli, None)?;
            tighten_home(cli, &paths)?;
            let loaded = config::load(&paths.config_file)?;
            let memory = backends::open_memory(&paths, &loaded.config);
            let state = crate::app::state(paths, loaded.config, memory);
            let rt = runtime(Some(2))?;
            rt.block_on(async {
                let dispatcher = server::dispatcher(&state);
                transport::stdio::serve(dispatcher, state.shutdown_token().clone()).await;
                state.audit().flush().await;
            });
            rt.shutdown_timeout(Duration::from_secs(1));
            Ok(EXIT_OK)
        }
        Command::Serve(args) => {
            let paths = resolve_paths(cli, args.socket.socket.as_deref())?;
            let _guard = logging::init_daemon(&paths.log_dir, cli.verbose)?;
            tighten_home(cli, &paths)?;
            let loaded = config::load(&paths.config_file)?;
            let http = http_options(args, &paths, &loaded.config)?;
            // Before any runtime thread exists: taking it edits the environment.
            let activated = transport::socket::take_activated()?;
            let rt = runtime(None)?;
            let memory = backends::open_memory(&paths, &loaded.config);
            let state = crate::app::state(paths.clone(), loaded.config, memory);
            rt.block_on(async {
                let listener = match activated {
                    Some(l) => {
                        tracing::info!("using the socket passed by the service manager");
                        transport::socket::from_activated(l)?
                    }
                    None => transport::socket::bind(&paths.socket).map_err(|e| match e {
                        transport::TransportError::InUse(path) => anyhow::anyhow!(
                            "another openhumand-mcp is already serving on {}; use `openhumand-mcp status` to see it or \
                             `openhumand-mcp stop` to stop it",
                            path.display()
                        ),
                        other => other.into(),
                    })?,
                };
                let http = match http {
                    Some(h) => {
                        let tcp = tokio::net::TcpListener::bind((h.host.as_str(), h.port))
                            .await
                            .with_context(|| format!("cannot listen for HTTP on {}:{}", h.host, h.port))?;
                        tracing::info!(addr = %tcp.local_addr()?, auth = h.token.is_some(), "HTTP transport listening");
                        Some((tcp, h))
                    }
                    None => None,
                };
                watch::spawn(state.clone());
                let opts = server::ServeOptions {
                    idle_timeout: args.idle_timeout.filter(|s| *s > 0).map(Duration::from_secs),
                    socket: socket_options(state.config().as_ref()),
                    http,
                };
                server::run(state, listener, opts).await
            })?;
            rt.shutdown_timeout(Duration::from_secs(2));
            Ok(EXIT_OK)
        }
        _ => unreachable!("run_server only handles serve and stdio"),
    }
}

/// `audit`: read the write-audit log (through the daemon when one is up).
fn audit(cli: &Cli, args: &cli::AuditArgs) -> Result<i32> {
    let paths = resolve_paths(cli, args.socket.socket.as_deref())?;
    let params = serde_json::json!({
        "limit": args.limit, "tool": args.tool, "client": args.client, "since": args.since, "failed": args.failed,
    });
    let rt = runtime(Some(2))?;
    let rows = if rt.block_on(client::daemon_up(&paths.socket)) {
        rt.block_on(client::call_with(
            &paths.socket,
            "openhuman.audit_query",
            params,
            Some(Duration::from_secs(30)),
            |_| {},
        ))?["rows"]
            .clone()
    } else {
        let loaded = config::load(&paths.config_file)?;
        let engine = backends::open_memory(&paths, &loaded.config).map_err(anyhow::Error::msg)?;
        let q = rpc::audit_query(params.as_object().expect("object")).map_err(anyhow::Error::msg)?;
        serde_json::to_value(engine.query_audit(q)?)?
    };
    let rows = rows.as_array().cloned().unwrap_or_default();
    for r in &rows {
        if args.json {
            out(&r.to_string());
            continue;
        }
        let ts = chrono::DateTime::from_timestamp_millis(r["ts_ms"].as_i64().unwrap_or(0))
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        let outcome = if r["success"] == true {
            format!("ok {}", r["result_id"].as_str().unwrap_or(""))
        } else {
            format!("FAILED {}", r["error"].as_str().unwrap_or(""))
        };
        out(&format!(
            "{ts} {:<14} {:<20} {outcome} {}",
            r["tool"].as_str().unwrap_or("?"),
            r["source"].as_str().unwrap_or("?"),
            r["args_summary"]
        ));
    }
    if rows.is_empty() && !args.json {
        out("no audit rows match");
    }
    Ok(EXIT_OK)
}

/// `ingest`: through the daemon when one is up (it is the single writer), else directly.
fn ingest(cli: &Cli, args: &cli::IngestArgs) -> Result<i32> {
    use std::io::IsTerminal;
    let paths = resolve_paths(cli, args.socket.socket.as_deref())?;
    let mut files = Vec::new();
    for p in &args.paths {
        let abs = std::fs::canonicalize(p).with_context(|| format!("cannot read {}", p.display()))?;
        files.push(abs);
    }
    let kind = args.kind.map(cli::IngestKind::as_str);
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} files, {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let show = |done: u64, total: u64, msg: String| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
            b.set_message(msg);
        }
    };
    let rt = runtime(Some(2))?;
    let summary: serde_json::Value = if rt.block_on(client::daemon_up(&paths.socket)) {
        let params = serde_json::json!({ "paths": files, "kind": kind });
        rt.block_on(client::call_with(&paths.socket, "openhuman.memory_ingest", params, None, |p| {
            show(
                p["progress"].as_f64().unwrap_or(0.0) as u64,
                p["total"].as_f64().unwrap_or(0.0) as u64,
                p["message"].as_str().unwrap_or("").to_string(),
            )
        }))?
    } else {
        let loaded = config::load(&paths.config_file)?;
        let engine = backends::open_memory(&paths, &loaded.config).map_err(anyhow::Error::msg)?;
        let s = engine.ingest_paths(&files, kind, &|p: &openhuman_memory::IngestProgress| {
            show(p.files_done as u64, p.files_total as u64, format!("{} chunks", p.chunks_written))
        })?;
        // Only the fast tier: the deep tier's fill (slow) goes on in the daemon later, from
        // where this one stops.
        engine.wait_background_tier(openhuman_memory::TierKind::Fast);
        serde_json::to_value(s)?
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let failed = summary["files_failed"].as_array().cloned().unwrap_or_default();
    for f in &failed {
        let _ = writeln!(
            std::io::stderr(),
            "error: {}: {}",
            f["path"].as_str().unwrap_or("?"),
            f["error"].as_str().unwrap_or("?")
        );
    }
    out(&format!(
        "ingested {} file(s), {} unchanged, {} unsupported, {} failed, {} deleted file(s) removed; {} chunks added, {} \
         removed in {} ms",
        summary["files_ingested"],
        summary["files_unchanged"],
        summary["files_unsupported"],
        failed.len(),
        summary["files_removed"],
        summary["chunks_added"],
        summary["chunks_removed"],
        summary["duration_ms"]
    ));
    for line in passed_over(&summary) {
        out(&line);
    }
    let (moved, detached) = (&summary["annotations_moved"], &summary["annotations_detached"]);
    if moved.as_u64().unwrap_or(0) + detached.as_u64().unwrap_or(0) > 0 {
        out(&format!(
            "tags and notes: {moved} passage(s) followed to their new place, {detached} kept detached (their text is gone)"
        ));
    }
    Ok(if failed.is_empty() { EXIT_OK } else { EXIT_FAILURE })
}

/// The lines of an ingest summary that say what was passed over: the unsupported files by name
/// (the summary names the first few; the count has them all), then each reason lines,
/// messages or files were skipped for, with how many and where the first one was.
fn passed_over(summary: &serde_json::Value) -> Vec<String> {
    let mut lines = Vec::new();
    let total = summary["files_unsupported"].as_u64().unwrap_or(0);
    let named: Vec<&str> = summary["unsupported"].as_array().into_iter().flatten().filter_map(|p| p.as_str()).collect();
    if total > 0 {
        let more = total.saturating_sub(named.len() as u64);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        lines.push(format!("unsupported ({total}, no importer reads them): {}{tail}", named.join(", ")));
    }
    for s in summary["skipped"].as_array().into_iter().flatten() {
        let count = s["count"].as_u64().unwrap_or(0);
        let unit = s["unit"].as_str().unwrap_or("item");
        let plural = if count == 1 { "" } else { "s" };
        lines.push(format!(
            "skipped {count} {unit}{plural}: {} (first: {})",
            s["reason"].as_str().unwrap_or("?"),
            s["first"].as_str().unwrap_or("?")
        ));
    }
    lines
}

/// HTTP settings from flags, environment and config; None when HTTP is off. HTTP needs a bearer
/// token (see `http_auth`): one the user set, else the generated one; only loopback binds may
/// go without, and only when `[mcp.http].allow_no_token` says so.
fn http_options(
    args: &cli::ServeArgs,
    paths: &Paths,
    config: &config::Config,
) -> Result<Option<transport::http::HttpOptions>> {
    let h = &config.mcp.http;
    if !(args.http || h.enabled) {
        if args.host.is_some() || args.port.is_some() || args.auth_token.is_some() {
            anyhow::bail!("--host/--port/--auth-token apply to HTTP: add --http or set [mcp.http].enabled = true");
        }
        return Ok(None);
    }
    if args.auth_token.is_some() {
        tracing::warn!(
            "--auth-token is visible to other users in `ps`; prefer OPENHUMAN_MCP_AUTH_TOKEN or [mcp.http].auth_token_file"
        );
    }
    let host = args.host.clone().unwrap_or_else(|| h.host.clone());
    let port = args.port.unwrap_or(h.port);
    let loopback = openhuman_common::is_loopback_host(&host);
    let token = match http_auth::chosen(config, args.auth_token.as_deref())? {
        Some((token, _)) => Some(token),
        None if !loopback => anyhow::bail!(
            "refusing to serve HTTP on non-loopback address {host} without a token you chose: set OPENHUMAN_MCP_AUTH_TOKEN or [mcp.http].auth_token_file"
        ),
        None if h.allow_no_token => {
            tracing::warn!(
                "HTTP serves WITHOUT a token ([mcp.http].allow_no_token = true): every user of this machine can read, \
                 change and delete your memory and stop the daemon through {host}:{port}"
            );
            None
        }
        None => Some(http_auth::token(paths, config, None)?.0),
    };
    Ok(Some(transport::http::HttpOptions {
        host,
        port,
        token,
        allowed_origins: h.allowed_origins.clone(),
        max_sessions: h.max_sessions,
        session_idle: Duration::from_secs(h.session_idle_secs),
        sse_keepalive: Duration::from_secs(h.sse_keepalive_secs),
        max_body_bytes: h.max_body_bytes,
        request_timeout: Duration::from_secs(h.request_timeout_secs),
        max_connections: connection_cap("[mcp.http].max_connections", h.max_connections, 2),
        max_connections_per_peer: h.max_connections_per_peer,
        new_sessions: Rate::new(h.new_sessions_per_sec, h.new_sessions_burst),
        // The dashboard is added by `server::run`, which has the state it needs.
        ui: None,
    }))
}

/// The socket's bounds from `[mcp]`.
fn socket_options(config: &config::Config) -> transport::socket::SocketOptions {
    let m = &config.mcp;
    transport::socket::SocketOptions {
        max_connections: connection_cap("[mcp].max_socket_connections", m.max_socket_connections, 4),
        new_connections: Rate::new(m.socket_connects_per_sec, m.socket_connect_burst),
    }
}

/// A connection cap (`key`), lowered to the process's open-file limit divided by `share` (HTTP
/// half, the socket a quarter), so connections can never take the descriptors the other
/// transport, the store and the logs need.
fn connection_cap(key: &str, configured: usize, share: usize) -> usize {
    let cap = match open_file_limit() {
        Some(limit) if configured > limit / share => {
            let lowered = (limit / share).max(1);
            tracing::warn!(
                configured,
                open_file_limit = limit,
                lowered,
                "{key} lowered to a share of the open-file limit"
            );
            lowered
        }
        _ => configured,
    };
    cap.max(1)
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn open_file_limit() -> Option<usize> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit(2) writes into the struct we pass and reads nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then(|| usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<usize> {
    None
}

fn run_command(cli: &Cli) -> Result<i32> {
    match &cli.command {
        Command::Status(args) => {
            let paths = resolve_paths(cli, args.socket.socket.as_deref())?;
            let rt = runtime(Some(1))?;
            match rt.block_on(client::call(&paths.socket, "openhuman.daemon_status")) {
                Ok(s) => {
                    // A daemon that answers but cannot do what its config asks is not "up".
                    let problems: Vec<&str> =
                        s["problems"].as_array().into_iter().flatten().filter_map(|p| p.as_str()).collect();
                    let code = if problems.is_empty() { EXIT_OK } else { EXIT_FAILURE };
                    if args.json {
                        out(&s.to_string());
                        return Ok(code);
                    }
                    for line in status::lines(&s) {
                        out(&line);
                    }
                    Ok(code)
                }
                Err(e) => {
                    if args.json {
                        out(&serde_json::json!({ "running": false, "socket": paths.socket.display().to_string() })
                            .to_string());
                    } else {
                        out(&format!("openhumand-mcp is not running ({e:#}); start it with `openhumand-mcp serve`"));
                    }
                    Ok(EXIT_FAILURE)
                }
            }
        }
        Command::Stop(sock) => {
            let paths = resolve_paths(cli, sock.socket.as_deref())?;
            let rt = runtime(Some(1))?;
            let reply = rt.block_on(client::call(&paths.socket, "openhuman.daemon_shutdown"))?;
            out(&format!("asked openhumand-mcp (pid {}) to stop", reply["pid"]));
            Ok(EXIT_OK)
        }
        Command::HttpToken => {
            let paths = resolve_paths(cli, None)?;
            let loaded = config::load(&paths.config_file)?;
            out(&http_auth::token(&paths, &loaded.config, None)?.0);
            Ok(EXIT_OK)
        }
        Command::Ui(args) => ui::open(&resolve_paths(cli, args.socket.socket.as_deref())?, args),
        Command::Ingest(args) => ingest(cli, args),
        Command::Audit(args) => audit(cli, args),
        Command::Search(args) => {
            terminal::query(&resolve_paths(cli, args.socket.socket.as_deref())?, args, "memory.search", "hits")
        }
        Command::Recall(args) => {
            terminal::query(&resolve_paths(cli, args.socket.socket.as_deref())?, args, "memory.recall", "chunks")
        }
        Command::Show(args) => terminal::show(&resolve_paths(cli, args.socket.socket.as_deref())?, args),
        Command::Forget(args) => terminal::forget(&resolve_paths(cli, args.socket.socket.as_deref())?, args),
        Command::Export(args) => transfer::export(&resolve_paths(cli, args.socket.socket.as_deref())?, args),
        Command::Import(args) => transfer::import(&resolve_paths(cli, args.socket.socket.as_deref())?, args),
        Command::Backup(args) => transfer::backup(&resolve_paths(cli, None)?, args),
        Command::Migrate(sock) => shared_store::migrate(&resolve_paths(cli, sock.socket.as_deref())?),
        Command::MigrateStore(args) => {
            shared_store::migrate_store(&resolve_paths(cli, args.socket.socket.as_deref())?, args)
        }
        Command::Restore(args) => transfer::restore(&resolve_paths(cli, args.socket.socket.as_deref())?, args),
        Command::Sources { action: SourcesAction::List { json, stored: true }, socket } => {
            terminal::stored_sources(&resolve_paths(cli, socket.socket.as_deref())?, *json)
        }
        Command::Sources { action, socket } => {
            let paths = resolve_paths(cli, socket.socket.as_deref())?;
            sources::run(&paths, action, &runtime(Some(1))?)
        }
        Command::Reindex(sock) => {
            let paths = resolve_paths(cli, sock.socket.as_deref())?;
            let rt = runtime(Some(2))?;
            let summary = if rt.block_on(client::daemon_up(&paths.socket)) {
                rt.block_on(client::call_with(
                    &paths.socket,
                    "openhuman.memory_reindex",
                    serde_json::json!({}),
                    None,
                    |_| {},
                ))?
            } else {
                let loaded = config::load(&paths.config_file)?;
                let engine = backends::open_memory(&paths, &loaded.config).map_err(anyhow::Error::msg)?;
                serde_json::to_value(engine.reindex()?)?
            };
            out(&format!(
                "reindexed {} chunks ({} full-text documents, {} vectors) in {} ms",
                summary["chunks"], summary["fts_docs"], summary["vectors"], summary["duration_ms"]
            ));
            Ok(EXIT_OK)
        }
        Command::Eval(args) => {
            let paths = resolve_paths(cli, None)?;
            let loaded = config::load(&paths.config_file)?;
            let report = eval::run(&paths, &loaded.config, args)?;
            out(&if args.json { report.to_string() } else { eval::table(&report) });
            Ok(EXIT_OK)
        }
        Command::Model { action } => models::run(&resolve_paths(cli, None)?, action),
        Command::Config { action } => {
            let paths = resolve_paths(cli, None)?;
            match action {
                ConfigAction::Path => out(&paths.config_file.display().to_string()),
                ConfigAction::Show => {
                    let loaded = config::load(&paths.config_file)?;
                    out(&format!(
                        "# effective config: {} (file {})",
                        paths.config_file.display(),
                        if loaded.file_exists { "present" } else { "absent: defaults" }
                    ));
                    if !loaded.env_overrides.is_empty() {
                        out(&format!("# overridden by environment: {}", loaded.env_overrides.join(", ")));
                    }
                    out(&config::to_toml(&loaded.config)?);
                }
                ConfigAction::Check => {
                    let loaded = config::load(&paths.config_file)?;
                    let agents = agents::Registry::load(&paths.config_dir);
                    let findings = check::findings(&paths, &loaded.config, &agents);
                    for f in &findings {
                        let level = if f.level == check::Level::Error { "error" } else { "warning" };
                        out(&format!("{level}: {}", f.text));
                    }
                    if findings.iter().any(|f| f.level == check::Level::Error) {
                        out(&format!("config has errors: {}", paths.config_file.display()));
                        return Ok(EXIT_FAILURE);
                    }
                    out(&format!(
                        "config OK: {} ({}), {} agents",
                        paths.config_file.display(),
                        if loaded.file_exists { "file present" } else { "no file: defaults" },
                        agents.agents.len()
                    ));
                }
            }
            Ok(EXIT_OK)
        }
        Command::Register { client, print } => {
            let shim = register::shim_beside_exe()?;
            if *print {
                out(&register::print(*client, &shim, cli.home.as_deref())?);
            } else {
                out(&register::register(*client, &shim, cli.home.as_deref())?);
            }
            Ok(EXIT_OK)
        }
        Command::Install(args) => install::install(cli, args),
        Command::Uninstall(args) => install::uninstall(cli, args),
        Command::Service { action } => {
            let paths = resolve_paths(cli, None)?;
            let home = cli.home.as_deref();
            let exe = std::env::current_exe().context("cannot find this executable's path")?;
            match action {
                ServiceAction::Install(args) if args.print => {
                    for u in service::render(&paths, &exe, home, args.activation)? {
                        out(&format!("# {}\n{}", u.path.display(), u.text));
                    }
                }
                ServiceAction::Install(args) => out(&service::install(&paths, &exe, home, args.activation)?),
                ServiceAction::Uninstall => out(&service::uninstall()?),
            }
            Ok(EXIT_OK)
        }
        Command::Serve(_) | Command::Stdio => unreachable!("handled by run_server"),
    }
}
