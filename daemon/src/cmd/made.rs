//! What `install`, `register` and `service install` made that was not there before: the folders
//! they created and the client config files they wrote first. It is kept in a small JSON file
//! in the data folder (`installed.json`), so that `uninstall` takes away exactly that: a folder
//! only once it is empty, a config file only when nothing but our emptied skeleton is left in
//! it. What the user had before stays, even when it is empty.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use openhuman_common::Paths;
use serde::{Deserialize, Serialize};

/// The record's file name in the data folder.
pub(crate) const RECORD_FILE: &str = "installed.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    /// Folders created, each before the folders inside it.
    dirs: Vec<PathBuf>,
    /// Client config files written where there was none.
    files: Vec<PathBuf>,
}

/// The record, loaded, changed in memory and saved.
pub(crate) struct Made {
    data_dir: PathBuf,
    record: Record,
}

impl Made {
    /// The record as it is on disk; empty when there is none (or it cannot be read).
    pub(crate) fn load(paths: &Paths) -> Made {
        let data_dir = paths.data_dir.clone();
        let record = std::fs::read(data_dir.join(RECORD_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Made { data_dir, record }
    }

    /// Creates `dir` and its missing parents, noting each one created.
    pub(crate) fn create_dir_all(&mut self, dir: &Path) -> Result<()> {
        let missing: Vec<PathBuf> = dir.ancestors().take_while(|d| !d.exists()).map(Path::to_path_buf).collect();
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for d in missing.into_iter().rev() {
            if !self.record.dirs.contains(&d) {
                self.record.dirs.push(d);
            }
        }
        Ok(())
    }

    /// Notes that `file` was written where there was none.
    pub(crate) fn created_file(&mut self, file: &Path) {
        if !self.record.files.iter().any(|f| f == file) {
            self.record.files.push(file.to_path_buf());
        }
    }

    /// Whether `file` was written where there was none.
    pub(crate) fn created(&self, file: &Path) -> bool {
        self.record.files.iter().any(|f| f == file)
    }

    /// Forgets `file` (it was removed, or it is the user's now).
    pub(crate) fn forget_file(&mut self, file: &Path) {
        self.record.files.retain(|f| f != file);
    }

    /// Writes the record (creating, and noting, the data folder when there is none yet).
    pub(crate) fn save(&mut self) -> Result<()> {
        let dir = self.data_dir.clone();
        self.create_dir_all(&dir)?;
        let path = dir.join(RECORD_FILE);
        let text = serde_json::to_string_pretty(&self.record)?;
        std::fs::write(&path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
    }

    /// Removes the folders noted that are empty now, innermost first, and returns them. With
    /// `finished` (the whole installation is undone) the record goes first, and with it every
    /// note: what is still there is the user's from now on. Otherwise the rest is saved.
    pub(crate) fn tidy(mut self, finished: bool) -> Result<Vec<PathBuf>> {
        let record_path = self.data_dir.join(RECORD_FILE);
        if finished {
            match std::fs::remove_file(&record_path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("cannot remove {}", record_path.display())),
            }
        }
        let mut removed = Vec::new();
        for dir in self.record.dirs.iter().rev() {
            // Not empty (or already gone): `remove_dir` leaves it.
            if std::fs::remove_dir(dir).is_ok() {
                removed.push(dir.clone());
            }
        }
        if !finished {
            self.record.dirs.retain(|d| d.exists());
            self.record.files.retain(|f| f.exists());
            if record_path.exists() || !self.record.dirs.is_empty() || !self.record.files.is_empty() {
                self.save()?;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_folders_made_go_and_only_once_empty() {
        let root = tempfile::tempdir().unwrap();
        let paths = Paths::under_home(&root.path().join("oh"));
        let had = root.path().join("had");
        std::fs::create_dir_all(&had).unwrap();
        let mut made = Made::load(&paths);
        made.create_dir_all(&had.join("a/b")).unwrap();
        made.create_dir_all(&root.path().join("full")).unwrap();
        std::fs::write(root.path().join("full/user-file"), "x").unwrap();
        made.save().unwrap();

        let made = Made::load(&paths);
        let removed = made.tidy(true).unwrap();
        assert_eq!(removed, vec![paths.data_dir.clone(), root.path().join("oh"), had.join("a/b"), had.join("a")]);
        assert!(had.is_dir(), "a folder that was there before stays");
        assert!(root.path().join("full/user-file").exists(), "a folder holding something stays");
        assert!(!paths.data_dir.join(RECORD_FILE).exists());
    }
}
