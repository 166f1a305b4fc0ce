//! Getting a daemon connection: probe the socket; if nobody answers, take the start-up lock,
//! probe again (another shim may have won the race), spawn `openhumand-mcp serve` from the shim's
//! own directory, detached, with its output in the log dir, and wait (bounded) until it answers.
//! The lock makes N shims started together produce exactly one daemon.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match try_connect(opts) {
            Ok(s) => return Ok(s),
            Err(e) if timed_out(&e) => return Err(overloaded(opts)),
            Err(_) => {}
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the daemon exited during start-up ({status}); see {}", log_path.display()));
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(format!(
                "the daemon did not answer within {} s of starting; see {}",
                START_TIMEOUT.as_secs(),
                log_path.display()
            ));
        }
        // Readiness poll of a just-spawned process: short, growing pauses.
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(25));
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
