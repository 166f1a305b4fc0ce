//! A disk that really fills up, for the full-disk tests. As root (CI) it is a small tmpfs
//! mounted on a directory of the test's home and filled with a filler file until the kernel says
//! ENOSPC; `Drop` unmounts it. Without the right to mount it falls back to the process's
//! file-size limit (`RLIMIT_FSIZE`): the daemon is started with SIGXFSZ ignored, and "full" is a
//! limit of 0 bytes set on it (`prlimit`), which makes each of its writes to a regular file fail
//! with EFBIG as a full disk makes them fail with ENOSPC (`OPENHUMAN_TEST_SMALL_DISK=file-size-limit`
//! picks it as root too, to check it). Either way the daemon meets a real
//! failing `write(2)`; nothing is simulated inside it.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How the disk is made full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// A tmpfs of its own, filled with a file.
    Tmpfs,
    /// The daemon's file-size limit set to 0.
    FileSizeLimit,
}

/// A small disk at `dir` (see the module doc).
pub struct SmallDisk {
    dir: PathBuf,
    fill: Fill,
    filler: PathBuf,
    /// File-size mode: the next daemon starts with the limit set.
    full_at_start: Cell<bool>,
}

impl SmallDisk {
    /// A tmpfs of `bytes` at `dir` (created if missing) when this process may mount one, else
    /// the file-size-limit stand-in for the same directory.
    pub fn new(dir: &Path, bytes: u64) -> SmallDisk {
        std::fs::create_dir_all(dir).expect("create the small disk's directory");
        // What the directory holds already moves onto the new disk.
        let kept = tempfile::Builder::new().prefix("oh-keep-").tempdir_in("/tmp").expect("tempdir");
        copy_dir(dir, kept.path());
        let forced = std::env::var("OPENHUMAN_TEST_SMALL_DISK").is_ok_and(|v| v == "file-size-limit");
        let mounted = !forced
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={bytes},mode=0700"), "tmpfs"])
                .arg(dir)
                .output()
                .is_ok_and(|o| o.status.success());
        if mounted {
            copy_dir(kept.path(), dir);
        }
        let fill = if mounted { Fill::Tmpfs } else { Fill::FileSizeLimit };
        eprintln!("small disk at {}: {fill:?}", dir.display());
        SmallDisk { dir: dir.to_path_buf(), fill, filler: dir.join("filler"), full_at_start: Cell::new(false) }
    }

    pub fn fill_kind(&self) -> Fill {
        self.fill
    }

    /// Fills the disk: every further write of `pid` (a daemon started with `on_small_disk`)
    /// fails for want of space.
    pub fn fill(&self, pid: u32) {
        match self.fill {
            Fill::Tmpfs => self.fill_tmpfs(),
            Fill::FileSizeLimit => set_file_size_limit(pid, 0),
        }
    }

    /// Fills the disk before a daemon starts: one started next with `on_small_disk` meets it
    /// full from its first write.
    pub fn fill_before_start(&self) {
        match self.fill {
            Fill::Tmpfs => self.fill_tmpfs(),
            Fill::FileSizeLimit => self.full_at_start.set(true),
        }
    }

    /// The file-size limit a daemon started now must get (file-size mode, full).
    pub(crate) fn start_limit(&self) -> Option<u64> {
        self.full_at_start.get().then_some(0)
    }

    fn fill_tmpfs(&self) {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.filler).expect("open filler");
        let block = vec![0u8; 64 * 1024];
        loop {
            match f.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling {}: {e}", self.dir.display()),
            }
        }
        // Single bytes too, so not even a page is left.
        while f.write(&[0u8]).is_ok_and(|n| n == 1) {}
    }

    /// Gives the space back: the filler goes, or the limit of `pid` (the daemon) is lifted.
    pub fn free(&self, pid: Option<u32>) {
        self.full_at_start.set(false);
        match (self.fill, pid) {
            (Fill::Tmpfs, _) => {
                let _ = std::fs::remove_file(&self.filler);
            }
            (Fill::FileSizeLimit, Some(pid)) => set_file_size_limit(pid, libc::RLIM_INFINITY),
            (Fill::FileSizeLimit, None) => {}
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        if self.fill == Fill::Tmpfs {
            // Lazy: a process still holding a file there cannot keep the mount alive.
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// Copies the files and directories under `from` into `to`.
fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read a directory to copy").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            std::fs::create_dir_all(&target).expect("create a directory");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// Sets `pid`'s soft RLIMIT_FSIZE, keeping its hard limit, so the limit can be lifted again
/// without privileges.
fn set_file_size_limit(pid: u32, bytes: u64) {
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: prlimit(2) reading into a valid rlimit that outlives the call.
    let got = unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_FSIZE, std::ptr::null(), &mut current) };
    assert_eq!(got, 0, "read the file-size limit of {pid}: {}", std::io::Error::last_os_error());
    let limit = libc::rlimit { rlim_cur: bytes.min(current.rlim_max), rlim_max: current.rlim_max };
    // SAFETY: prlimit(2) from a valid rlimit that outlives the call.
    let set = unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()) };
    assert_eq!(set, 0, "set the file-size limit of {pid}: {}", std::io::Error::last_os_error());
}
