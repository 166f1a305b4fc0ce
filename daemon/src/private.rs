//! Private by default. Every command sets the umask to 077 before it creates anything, so the
//! store, its indexes, logs, tokens and backups are 0600 and their directories 0700 however the
//! daemon was started; `tighten` takes group and other permissions away from a home made before
//! that (or by hand), saying so in the log.

use std::path::{Path, PathBuf};

use openhuman_common::Paths;

/// Makes every file and directory this process creates private to its user.
#[cfg(unix)]
#[allow(unsafe_code)]
pub(crate) fn set_umask() {
    // SAFETY: umask(2) only swaps the process's file-creation mask; it has no preconditions
    // and cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

#[cfg(not(unix))]
pub(crate) fn set_umask() {}

/// Takes group and other permissions away from the home's directories and everything in them
/// (config, data, logs, and the run directory when it is the home's own), logging what changed.
/// Symbolic links are neither followed nor changed. Returns the paths that were changed.
pub(crate) fn tighten_home(paths: &Paths, own_run_dir: bool) -> Vec<PathBuf> {
    let mut roots = vec![paths.config_dir.as_path(), paths.data_dir.as_path(), paths.log_dir.as_path()];
    // A directory named by `--socket` is not the home's, even when it sits inside it.
    let skip = if own_run_dir {
        roots.push(paths.run_dir.as_path());
        None
    } else {
        Some(paths.run_dir.as_path())
    };
    let mut changed = Vec::new();
    for root in roots {
        tighten(root, skip, &mut changed);
    }
    changed.sort();
    changed.dedup();
    if let Some(first) = changed.first() {
        tracing::warn!(
            count = changed.len(),
            first = %first.display(),
            "tightened permissions: other users could read these files or directories; they are now 0600/0700"
        );
    }
    changed
}

#[cfg(unix)]
fn tighten(path: &Path, skip: Option<&Path>, changed: &mut Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    if skip == Some(path) {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() {
        return;
    }
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & !0o077 & 0o7777)) {
            Ok(()) => changed.push(path.to_path_buf()),
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot make this path private"),
        }
    }
    if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for entry in entries.flatten() {
            tighten(&entry.path(), skip, changed);
        }
    }
}

#[cfg(not(unix))]
fn tighten(_path: &Path, _skip: Option<&Path>, _changed: &mut Vec<PathBuf>) {}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn tightening_removes_group_and_other_bits_and_skips_links() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let paths = Paths::under_home(&home);
        std::fs::create_dir_all(paths.data_dir.join("fts")).unwrap();
        let db = paths.data_dir.join("memory.db");
        std::fs::write(&db, "x").unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "y").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, paths.data_dir.join("link")).unwrap();
        for (p, m) in [(&home, 0o755), (&paths.data_dir, 0o755), (&paths.data_dir.join("fts"), 0o775), (&db, 0o644)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        }
        let changed = tighten_home(&paths, true);
        assert_eq!(changed.len(), 4, "{changed:?}");
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&paths.data_dir.join("fts")), 0o700);
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&outside), 0o644, "a link's target is not ours to change");
        assert!(tighten_home(&paths, true).is_empty(), "nothing left to change");
    }
}
