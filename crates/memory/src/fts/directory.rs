//! Where the keyword index keeps its files: tantivy's memory-mapped directory, except that a
//! commit does not wait for the disk. The index is derived from SQLite, which holds every
//! acknowledged write (and its audit row); the index only has to be *visible* to searches when
//! a write is acknowledged, and *consistent* when it is opened again. So each commit writes
//! its files and `meta.json` to the page cache only, and [`SyncingDirectory::flush`] (run in
//! the background about once a second, and when the store closes) makes them durable.
//!
//! A process crash loses nothing: the page cache outlives the process. A machine that stops
//! before a flush may leave a `meta.json` that names files the disk never got; to tell, each
//! flush records in `SYNCED` the boot it ran in and the hash of the `meta.json` it made
//! durable. At open, an index last written in another boot is kept only if its `meta.json`
//! is the one recorded; otherwise it is rebuilt from SQLite like any unusable index. Where
//! the boot cannot be identified (no `/proc/sys/kernel/random/boot_id`), every commit flushes
//! as tantivy's own directory does.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};

use crate::lock;
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

const META: &str = "meta.json";
const MARKER: &str = "SYNCED";

/// The kernel's identity of the current boot, if it has one we can read.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Marker {
    /// The boot of the process that last wrote the index.
    boot: String,
    /// sha256 of the `meta.json` the last flush made durable (with every file it names).
    meta_sha256: Option<String>,
}

fn sha_of(path: &Path) -> io::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(hex::encode(Sha256::digest(&bytes)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn sync_path(path: &Path) -> io::Result<()> {
    match File::open(path) {
        Ok(f) => f.sync_all(),
        // Merged away since it was written: nothing of it is needed any more.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Replaces `path` with `data` through a temporary file and a rename; durable only if `sync`.
fn replace_file(path: &Path, data: &[u8], sync: bool) -> io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(data)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// tantivy's `MmapDirectory` for reading, locking and deleting; our own writers, which leave
/// syncing to [`SyncingDirectory::flush`].
#[derive(Clone)]
pub(crate) struct SyncingDirectory {
    mmap: MmapDirectory,
    root: PathBuf,
    /// Files written since the last flush (paths relative to `root`).
    dirty: Arc<Mutex<HashSet<PathBuf>>>,
    /// Flushes run one at a time.
    flushing: Arc<Mutex<()>>,
    /// `None`: the boot cannot be told apart, so every write is synced at once.
    boot: Option<String>,
}

impl std::fmt::Debug for SyncingDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SyncingDirectory({})", self.root.display())
    }
}

/// Why an index on disk cannot be trusted.
#[derive(Debug)]
pub(crate) struct NotFlushed;

impl SyncingDirectory {
    /// Opens `root`. Fails with [`NotFlushed`] (inside `Ok(Err(..))`) when the index was last
    /// written in an earlier boot and its `meta.json` is not the one its last flush made durable.
    pub fn open(root: &Path) -> io::Result<Result<SyncingDirectory, NotFlushed>> {
        let mmap = MmapDirectory::open(root).map_err(io::Error::other)?;
        let boot = boot_id();
        let dir = SyncingDirectory {
            mmap,
            root: root.to_path_buf(),
            dirty: Arc::default(),
            flushing: Arc::default(),
            boot: boot.clone(),
        };
        let marker: Option<Marker> =
            std::fs::read(root.join(MARKER)).ok().and_then(|b| serde_json::from_slice(&b).ok());
        if let (Some(marker), Some(boot)) = (&marker, &boot)
            && marker.boot != *boot
            && marker.meta_sha256 != sha_of(&root.join(META))?
        {
            return Ok(Err(NotFlushed));
        }
        // From here on the files are trusted: make all of them durable before anything new is
        // written, so that the marker can name this boot.
        if boot.is_some() {
            for entry in std::fs::read_dir(root)? {
                let entry = entry?;
                if entry.file_type()?.is_file() {
                    lock(&dir.dirty).insert(PathBuf::from(entry.file_name()));
                }
            }
            dir.flush()?;
        }
        Ok(Ok(dir))
    }

    /// Makes every file written so far durable, then records which `meta.json` that was.
    pub fn flush(&self) -> io::Result<()> {
        let Some(boot) = &self.boot else { return Ok(()) };
        let _one = lock(&self.flushing);
        // The meta opened first names only files terminated before it was written, which are
        // in the dirty set taken next. Hash and sync that very file (not whatever the name
        // points to by then), so the marker describes bytes that are on the disk.
        let meta = match File::open(self.root.join(META)) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let meta_sha256 = match &meta {
            Some(f) => {
                let mut bytes = Vec::new();
                io::Read::read_to_end(&mut &*f, &mut bytes)?;
                Some(hex::encode(Sha256::digest(&bytes)))
            }
            None => None,
        };
        let dirty: Vec<PathBuf> = lock(&self.dirty).drain().collect();
        let synced = (|| {
            for p in &dirty {
                sync_path(&self.root.join(p))?;
            }
            if let Some(f) = &meta {
                f.sync_all()?;
            }
            File::open(&self.root)?.sync_all()
        })();
        if let Err(e) = synced {
            // Try these again next time.
            lock(&self.dirty).extend(dirty);
            return Err(e);
        }
        let marker = serde_json::to_vec(&Marker { boot: boot.clone(), meta_sha256 }).map_err(io::Error::other)?;
        replace_file(&self.root.join(MARKER), &marker, true)?;
        File::open(&self.root)?.sync_all()
    }

    /// Whether commits wait for the disk (the boot cannot be identified here).
    pub fn syncs_each_write(&self) -> bool {
        self.boot.is_none()
    }

    fn written(&self, path: &Path) {
        lock(&self.dirty).insert(path.to_path_buf());
    }
}

/// A new index file: written through, synced only by a flush (or at once without a boot id).
struct IndexFile {
    file: File,
    path: PathBuf,
    dir: SyncingDirectory,
}

impl Write for IndexFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for IndexFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.file.flush()?;
        if self.dir.syncs_each_write() {
            self.file.sync_data()
        } else {
            self.dir.written(&self.path);
            Ok(())
        }
    }
}

impl Directory for SyncingDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.mmap.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        lock(&self.dirty).remove(path);
        self.mmap.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.mmap.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let full = self.root.join(path);
        let file = OpenOptions::new().write(true).create_new(true).open(&full).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                OpenWriteError::FileAlreadyExists(path.to_path_buf())
            } else {
                OpenWriteError::wrap_io_error(e, path.to_path_buf())
            }
        })?;
        let writer = IndexFile { file, path: path.to_path_buf(), dir: self.clone() };
        Ok(BufWriter::new(Box::new(writer)))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.mmap.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let sync = self.syncs_each_write();
        replace_file(&self.root.join(path), data, sync)?;
        if !sync {
            self.written(path);
        }
        Ok(())
    }

    fn sync_directory(&self) -> io::Result<()> {
        if self.syncs_each_write() { File::open(&self.root)?.sync_all() } else { Ok(()) }
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.mmap.acquire_lock(lock)
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.mmap.watch(callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_file(dir: &SyncingDirectory, name: &str, data: &[u8]) {
        let mut w = dir.open_write(Path::new(name)).unwrap();
        w.write_all(data).unwrap();
        w.terminate().unwrap();
    }

    #[test]
    fn a_flush_records_the_meta_it_made_durable_and_a_later_boot_trusts_only_that() {
        if boot_id().is_none() {
            return; // Not Linux: every write syncs, and there is no marker to check.
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = SyncingDirectory::open(tmp.path()).unwrap().unwrap();
        write_file(&dir, "seg.idx", b"postings");
        dir.atomic_write(Path::new(META), b"{\"segments\":[1]}").unwrap();
        assert!(!dir.dirty.lock().unwrap().is_empty(), "writes wait for the flush");
        dir.flush().unwrap();
        assert!(dir.dirty.lock().unwrap().is_empty());
        assert_eq!(dir.atomic_read(Path::new("seg.idx")).unwrap(), b"postings");
        drop(dir);

        // The same boot (a process crash): kept.
        assert!(SyncingDirectory::open(tmp.path()).unwrap().is_ok());

        // Another boot, and meta.json is the flushed one: kept.
        let pretend_reboot = |meta_sha256: Option<String>| {
            let m = Marker { boot: "an earlier boot".into(), meta_sha256 };
            std::fs::write(tmp.path().join(MARKER), serde_json::to_vec(&m).unwrap()).unwrap();
        };
        pretend_reboot(sha_of(&tmp.path().join(META)).unwrap());
        assert!(SyncingDirectory::open(tmp.path()).unwrap().is_ok());

        // Another boot, and a commit after the last flush: not trusted.
        pretend_reboot(Some("0".repeat(64)));
        assert!(SyncingDirectory::open(tmp.path()).unwrap().is_err());
    }
}
