//! Process helpers on Linux: signals, bounded waits for exit, freezing a process until every
//! thread is stopped, finding processes by command line, a process's resident memory and open
//! descriptors (all from /proc), and a pseudo-terminal to give a child as its stdin.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::WAIT;

pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid we own and a valid signal number.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// A pseudo-terminal: (the side a test writes what the user types to, the side a child reads
/// as a terminal). Keep the first open until the child has exited.
pub fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty(3) writes two new descriptors into the ints we pass; name, termios and
    // window size may be null.
    let rc =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty failed: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are new and owned by nothing else.
    unsafe { (std::fs::File::from_raw_fd(master), std::fs::File::from_raw_fd(slave)) }
}

/// Waits (bounded) for a child to exit.
pub fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    exit_within(child, limit).unwrap_or_else(|e| panic!("{e}"))
}

/// `wait_exit` that reports a child still running after `limit` as an error.
pub(crate) fn exit_within(child: &mut Child, limit: Duration) -> Result<ExitStatus, String> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("wait for process {}: {e}", child.id()))? {
            return Ok(status);
        }
        if start.elapsed() >= limit {
            return Err(format!("process {} did not exit within {limit:?}", child.id()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Processes whose command line contains every one of `needles` (Linux /proc scan).
pub fn processes_matching(needles: &[&str]) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if needles.iter().all(|n| cmdline.contains(n)) {
            out.push(pid);
        }
    }
    out
}

/// Stops a process (SIGSTOP) and waits until every one of its threads is really stopped:
/// `kill` returns before the signal has taken effect.
pub fn freeze(pid: u32) {
    kill(pid, libc::SIGSTOP);
    let start = Instant::now();
    loop {
        let all_stopped = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks.flatten().all(|t| {
                    let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                    // The state follows the parenthesised command name.
                    stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('T')).unwrap_or(false)
                })
            })
            .unwrap_or(false);
        if all_stopped {
            return;
        }
        assert!(start.elapsed() < WAIT, "process {pid} did not stop");
        std::thread::yield_now();
    }
}

/// Resident memory of `pid` in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS for {pid}"))
}

/// How many file descriptors `pid` has open.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).expect("read /proc/<pid>/fd").count()
}
