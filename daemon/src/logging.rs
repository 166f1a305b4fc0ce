//! Logging setup. Logs never touch stdout (it carries protocol in `stdio` mode): they go to
//! stderr, and for the daemon also to a size-bounded rolling file in the logs dir.
//! Level: `RUST_LOG` when set, else `debug` with `-v`, else the mode's default.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt;
use tracing_subscriber::prelude::*;

/// Each log file's size cap and how many rotated files are kept.
pub(crate) const LOG_FILE_BYTES: usize = 10 * 1024 * 1024;
pub(crate) const LOG_FILES_KEPT: usize = 5;
pub(crate) const LOG_FILE_NAME: &str = "openhumand-mcp.log";

fn filter(default: &str, verbose: bool) -> EnvFilter {
    match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => EnvFilter::new(v),
        _ => EnvFilter::new(if verbose { "debug" } else { default }),
    }
}

/// stderr only (stdio mode and one-shot commands).
pub(crate) fn init_stderr(default: &str, verbose: bool) {
    let _ = tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .with_target(false)
                .with_filter(filter(default, verbose)),
        )
        .try_init();
}

/// stderr plus a rolling file under `log_dir` (the daemon). Keep the guard alive until exit so
/// buffered lines are written.
pub(crate) fn init_daemon(log_dir: &Path, verbose: bool) -> Result<WorkerGuard> {
    std::fs::create_dir_all(log_dir).with_context(|| format!("cannot create log dir {}", log_dir.display()))?;
    let path = log_dir.join(LOG_FILE_NAME);
    // The rotating writer uses exactly these options (it needs read, create and append) and
    // drops lines silently when the open fails, so open once here to report a failure.
    let mut options = std::fs::OpenOptions::new();
    options.read(true).create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(&path).with_context(|| format!("cannot open the log file {}", path.display()))?;
    let rotate = file_rotate::FileRotate::new(
        path,
        file_rotate::suffix::AppendCount::new(LOG_FILES_KEPT - 1),
        file_rotate::ContentLimit::BytesSurpassed(LOG_FILE_BYTES),
        file_rotate::compression::Compression::None,
        Some(options),
    );
    let (writer, guard) = tracing_appender::non_blocking(rotate);
    let _ = tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .with_target(false)
                .with_filter(filter("info", verbose)),
        )
        .with(fmt::layer().with_writer(writer).with_ansi(false).with_filter(filter("info", verbose)))
        .try_init();
    Ok(guard)
}
