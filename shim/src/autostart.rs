//! Getting a daemon connection: probe the socket; if nobody answers, take the start-up lock,
//! probe again (another shim may have won the race), spawn `openhumand-mcp serve` from the shim's
//! own directory, detached, with its output in the log dir, and wait (bounded) until it answers.
//! The lock makes N shims started together produce exactly one daemon.
//!
//! A daemon that exits during start-up has said why on its stderr, which is the autostart log:
//! its fatal error is the last `ERROR` line it wrote there. That line, the daemon's own words
//! (for a config error: the key and the file), is what the client is told. A start that failed
//! on the config is not tried again until the config file changes: the same error would only be
//! logged again.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use interprocess::ConnectWaitMode;
use interprocess::local_socket::{ConnectOptions, Stream};

use crate::Options;

/// How long a freshly spawned daemon gets to start answering.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long an autostarted daemon lingers with no session before exiting.
const IDLE_TIMEOUT_SECS: u64 = 900;

/// How long a connect to the socket may wait (a daemon that accepts nothing, e.g. one out of
/// file descriptors, leaves connects waiting in its backlog).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What to do when no daemon can be had and nothing more specific is known.
pub const START_IT: &str =
    "start it with `openhumand-mcp serve`, or install the login service with `openhumand-mcp service install`";

/// The longest reason from the daemon's log passed on to the client.
const REASON_CHARS: usize = 1000;

/// The config file as it was when a start failed on it, and what the client was told.
struct ConfigFailure {
    config: Option<(Option<SystemTime>, u64)>,
    message: String,
}

/// The last start that failed on the config, for as long as the config file stays the same.
static CONFIG_FAILURE: Mutex<Option<ConfigFailure>> = Mutex::new(None);

/// Connects to the daemon, starting it first when allowed. The error says what to do.
pub fn connect(opts: &Options) -> Result<Stream, String> {
    match try_connect(opts) {
        Ok(s) => return Ok(s),
        // Someone listens but does not accept: starting another daemon would not help.
        Err(e) if timed_out(&e) => return Err(overloaded(opts)),
        Err(e) if !opts.autostart => {
            return Err(format!(
                "no openhumand-mcp daemon answers on {} ({e}); start one with `openhumand-mcp serve` \
                 (autostart is off because of --no-autostart)",
                opts.paths.socket.display()
            ));
        }
        Err(_) => {}
    }
    if let Some(message) = failed_on_this_config(opts) {
        return Err(message);
    }
    private_dir(&opts.paths.run_dir)?;
    let lock = lock_file(opts.paths.autostart_lock()).map_err(|e| format!("cannot take the start-up lock: {e}"))?;
    // Whoever held the lock before us may have started the daemon already.
    if let Ok(s) = try_connect(opts) {
        drop(lock);
        return Ok(s);
    }
    let result = spawn_and_wait(opts);
    drop(lock);
    result
}

pub fn try_connect(opts: &Options) -> io::Result<Stream> {
    let name = openhuman_common::paths::socket_name(&opts.paths.socket)?;
    ConnectOptions::new().name(name).wait_mode(ConnectWaitMode::Timeout(CONNECT_TIMEOUT)).connect_sync()
}

fn timed_out(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
}

fn overloaded(opts: &Options) -> String {
    format!(
        "the daemon on {} accepted no connection within {} s: it is overloaded or stuck; \
         `openhumand-mcp status` tells, `openhumand-mcp stop` (or killing it) lets a new one start",
        opts.paths.socket.display(),
        CONNECT_TIMEOUT.as_secs()
    )
}

fn lock_file(path: PathBuf) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let f = options.open(path)?;
    f.lock()?;
    Ok(f)
}

fn daemon_exe() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find the shim's own path: {e}"))?;
    let dir = me.parent().ok_or("the shim's path has no directory")?;
    let exe = dir.join(format!("openhumand-mcp{}", std::env::consts::EXE_SUFFIX));
    if !exe.exists() {
        return Err(format!(
            "cannot autostart: {} not found next to the shim; install both binaries in the same directory or start the daemon yourself",
            exe.display()
        ));
    }
    Ok(exe)
}

fn spawn_and_wait(opts: &Options) -> Result<Stream, String> {
    let exe = daemon_exe()?;
    private_dir(&opts.paths.log_dir)?;
    let log_path = opts.paths.log_dir.join("daemon-autostart.log");
    let mut log_options = OpenOptions::new();
    log_options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut log_options, 0o600);
    let log = log_options.open(&log_path).map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
    // Where this start's lines begin: only they can say why it fails.
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let log2 = log.try_clone().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&exe);
    if let Some(home) = &opts.home {
        cmd.arg("--home").arg(home);
    }
    cmd.arg("serve").arg("--socket").arg(&opts.paths.socket).arg("--idle-timeout").arg(IDLE_TIMEOUT_SECS.to_string());
    cmd.stdin(Stdio::null()).stdout(Stdio::from(log)).stderr(Stdio::from(log2));
    detach(&mut cmd);
    if opts.verbose {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("openhuman-mcp-shim: starting {}\n", exe.display()).as_bytes(),
        );
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}; {START_IT}", exe.display()))?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match try_connect(opts) {
            Ok(s) => return Ok(s),
            Err(e) if timed_out(&e) => return Err(overloaded(opts)),
            Err(_) => {}
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(match exit_reason(&log_path, log_start) {
                Some(reason) => {
                    let message = format!(
                        "the daemon could not start: {reason}; fix that, then try again (the daemon's log: {})",
                        log_path.display()
                    );
                    remember_config_failure(opts, &reason, &message);
                    message
                }
                None => format!("the daemon exited during start-up ({status}); {} says why", log_path.display()),
            });
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(format!(
                "the daemon did not answer within {} s of starting; see {}; `openhumand-mcp status` tells whether it came up",
                START_TIMEOUT.as_secs(),
                log_path.display()
            ));
        }
        // Readiness poll of a just-spawned process: short, growing pauses.
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}

/// The daemon's own reason for exiting: the last `ERROR` line (`<time> ERROR <message>`) it
/// wrote to `log` after byte `from`, or a line it wrote before its logging was up
/// (`openhumand-mcp: <message>`).
fn exit_reason(log: &Path, from: u64) -> Option<String> {
    let mut file = File::open(log).ok()?;
    let len = file.metadata().ok()?.len();
    // The fatal error is among the last lines: read at most the last 64 KiB of this start's.
    file.seek(SeekFrom::Start(from.max(len.saturating_sub(64 * 1024)))).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let reason = text.lines().filter_map(error_message).next_back()?;
    Some(reason.chars().take(REASON_CHARS).collect())
}

/// The message of an error line the daemon writes, if `line` is one.
fn error_message(line: &str) -> Option<&str> {
    let line = line.trim_end();
    if let Some(plain) = line.strip_prefix("openhumand-mcp: ") {
        return Some(plain);
    }
    let (_time, rest) = line.split_once(' ')?;
    rest.trim_start().strip_prefix("ERROR ").map(str::trim).filter(|m| !m.is_empty())
}

/// The config file's modification time and length, `None` when there is none.
fn config_stamp(opts: &Options) -> Option<(Option<SystemTime>, u64)> {
    std::fs::metadata(&opts.paths.config_file).ok().map(|m| (m.modified().ok(), m.len()))
}

/// Keeps `message` when `reason` is about the config (it names the config file or an
/// `OPENHUMAN_` variable): starting again before the file changes would fail the same way.
fn remember_config_failure(opts: &Options, reason: &str, message: &str) {
    let file = opts.paths.config_file.display().to_string();
    if !(reason.contains(&file) || reason.contains("environment variable OPENHUMAN_")) {
        return;
    }
    let failure = ConfigFailure { config: config_stamp(opts), message: message.to_string() };
    *CONFIG_FAILURE.lock().unwrap_or_else(|e| e.into_inner()) = Some(failure);
}

/// What the client was told when the daemon last failed on this very config file.
fn failed_on_this_config(opts: &Options) -> Option<String> {
    let mut kept = CONFIG_FAILURE.lock().unwrap_or_else(|e| e.into_inner());
    match kept.as_ref() {
        Some(f) if f.config == config_stamp(opts) => Some(f.message.clone()),
        _ => {
            *kept = None;
            None
        }
    }
}

#[cfg(unix)]
fn detach(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // A process group of its own: the client's Ctrl-C or process-group kill does not reach it.
    cmd.process_group(0);
}

#[cfg(windows)]
fn detach(cmd: &mut Command) {
    use std::os::windows::process::CommandExt;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    cmd.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}

/// Creates `dir` (and missing parents) 0700. One that exists keeps its mode: it may be a shared
/// directory named by `--socket`, and what the shim puts in it is private on its own.
fn private_dir(dir: &std::path::Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_last_error_line_of_this_start() {
        let dir = tempfile_dir();
        let log = dir.join("daemon-autostart.log");
        let earlier = "2026-01-01T00:00:00Z ERROR an older start's failure\n";
        let this = "2026-01-01T00:00:01Z  WARN tightened permissions\n\
                    2026-01-01T00:00:01Z ERROR invalid config: key `mcp.http.port` in config file /h/config.toml: bad\n";
        std::fs::write(&log, format!("{earlier}{this}")).unwrap();
        let reason = exit_reason(&log, earlier.len() as u64).unwrap();
        assert_eq!(reason, "invalid config: key `mcp.http.port` in config file /h/config.toml: bad");
        std::fs::write(&log, "openhumand-mcp: cannot create log dir /x: denied\n").unwrap();
        assert_eq!(exit_reason(&log, 0).unwrap(), "cannot create log dir /x: denied");
        std::fs::write(&log, "2026-01-01T00:00:01Z  INFO nothing wrong\n").unwrap();
        assert_eq!(exit_reason(&log, 0), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A fresh folder of this test's own under the system's temporary folder.
    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("oh-shim-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
