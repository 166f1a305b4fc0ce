//! The database as one file. `backup` copies `memory.db` with SQLite's online backup API in a
//! single step, which reads one consistent snapshot (WAL readers never block the daemon's
//! writer), so it runs beside a serving daemon; the copy is written beside its destination and
//! renamed into place only once complete and checked. `restore` puts such a file back into a
//! data directory that no process has open (it takes the store's lock for the whole swap),
//! keeping the database it replaces as a side file unless told not to, and removes the derived
//! indexes, which the next open rebuilds from the restored database.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use crate::error::{MemoryError, ResultExt};
use crate::schema::SCHEMA_VERSION;
use crate::tier::TierKind;
use crate::util::now_ms;

const DB: &str = "memory.db";

/// What `backup` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct BackupSummary {
    pub file: PathBuf,
    pub bytes: u64,
    pub schema_version: i64,
    pub chunks: i64,
    pub duration_ms: u64,
}

/// What `restore` did.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreSummary {
    pub schema_version: i64,
    pub chunks: i64,
    /// Where the replaced database was kept, when there was one and it was kept.
    pub previous: Option<PathBuf>,
}

/// Copies the store in `data_dir` into the single SQLite file `dest` (which must not exist).
pub fn backup(data_dir: &Path, dest: &Path) -> Result<BackupSummary, MemoryError> {
    let started = std::time::Instant::now();
    let db = data_dir.join(DB);
    if !db.is_file() {
        return Err(MemoryError::NotFound(format!(
            "there is no memory store in {} to back up; check --home or OPENHUMAN_HOME",
            data_dir.display()
        )));
    }
    if dest.exists() {
        return Err(MemoryError::InvalidParams(format!(
            "{} already exists; choose a new file name for the backup",
            dest.display()
        )));
    }
    let src = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .with_context(|| format!("opening {}", db.display()))?;
    src.busy_timeout(Duration::from_secs(10))?;
    src.pragma_update(None, "query_only", true)?;
    let partial = side_path(dest, "partial");
    let copied = copy_db(&src, &partial).and_then(|_| check(&partial));
    let (schema_version, chunks) = match copied {
        Ok(v) => v,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, dest).with_context(|| format!("moving the backup to {}", dest.display()))?;
    let bytes = std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0);
    Ok(BackupSummary {
        file: dest.to_path_buf(),
        bytes,
        schema_version,
        chunks,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Replaces the database in `data_dir` with the backup `from`. Refused while any process has
/// the store open. The replaced database is kept as `memory.db.before-restore-<ms>` unless
/// `discard_previous`.
pub fn restore(data_dir: &Path, from: &Path, discard_previous: bool) -> Result<RestoreSummary, MemoryError> {
    let (schema_version, chunks) = check(from)?;
    std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let lock = crate::sync::lock_store(data_dir)?;
    let db = data_dir.join(DB);
    // The new database is copied in first, so a failure leaves the old one untouched.
    let incoming = side_path(&db, "restoring");
    let _ = std::fs::remove_file(&incoming);
    let src = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", from.display()))?;
    if let Err(e) = copy_db(&src, &incoming) {
        let _ = std::fs::remove_file(&incoming);
        return Err(e);
    }
    let mut previous = None;
    if db.is_file() && !discard_previous {
        // A backup of the old database rather than a move: it carries what is still in its WAL.
        let keep = data_dir.join(format!("{DB}.before-restore-{}", now_ms()));
        let old = Connection::open(&db).with_context(|| format!("opening {}", db.display()))?;
        copy_db(&old, &keep)?;
        drop(old);
        previous = Some(keep);
    }
    // The old log must go with the old database: SQLite would replay it into the new one.
    for suffix in ["-wal", "-shm", ""] {
        let p = data_dir.join(format!("{DB}{suffix}"));
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", p.display())),
        }
    }
    std::fs::rename(&incoming, &db).with_context(|| format!("moving the restored database to {}", db.display()))?;
    // Derived from the old database: the next open rebuilds them from the restored one.
    let derived = ["fts", TierKind::Fast.dir(), TierKind::Deep.dir()];
    for d in derived {
        let p = data_dir.join(d);
        // Renamed first, so nothing (a flush of a store closed just before) can write into the
        // place the next open builds in; then removed, a second time if a late write raced it.
        let stale = side_path(&p, &format!("stale-{}", now_ms()));
        match std::fs::rename(&p, &stale) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("moving {} aside", p.display())),
        }
        if std::fs::remove_dir_all(&stale).is_err()
            && let Err(e) = std::fs::remove_dir_all(&stale)
        {
            tracing::warn!(dir = %stale.display(), error = %e, "an old index could not be removed; delete it by hand");
        }
    }
    drop(lock);
    Ok(RestoreSummary { schema_version, chunks, previous })
}

/// `path` with `.<what>` appended to its file name.
fn side_path(path: &Path, what: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{what}"));
    path.with_file_name(name)
}

/// Copies the whole of `src` into a new file `dest` in one backup step (one snapshot), as a
/// self-contained file (rollback journal, not WAL).
fn copy_db(src: &Connection, dest: &Path) -> Result<(), MemoryError> {
    let mut dst = Connection::open(dest).with_context(|| format!("creating {}", dest.display()))?;
    {
        let b = Backup::new(src, &mut dst).with_context(|| format!("starting the copy to {}", dest.display()))?;
        let mut tries = 0;
        loop {
            match b.step(-1).with_context(|| format!("copying the database to {}", dest.display()))? {
                StepResult::Done => break,
                StepResult::More => {}
                StepResult::Busy | StepResult::Locked if tries < 200 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                _ => {
                    return Err(MemoryError::Other(
                        "the database stayed locked for 10 s during the copy; try again".into(),
                    ));
                }
            }
        }
    }
    dst.pragma_update(None, "journal_mode", "DELETE")?;
    Ok(())
}

/// Checks that `path` is a memory database this build can open; returns its schema version and
/// chunk count.
fn check(path: &Path) -> Result<(i64, i64), MemoryError> {
    let not_ours = |why: &str| {
        MemoryError::InvalidParams(format!(
            "{} is not a memory backup ({why}); give a file made by `openhumand-mcp backup`",
            path.display()
        ))
    };
    if !path.is_file() {
        return Err(not_ours("no such file"));
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|_| not_ours("not an SQLite database"))?;
    let ok: String =
        conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(|_| not_ours("not an SQLite database"))?;
    if ok != "ok" {
        return Err(not_ours(&format!("the database is damaged: {ok}")));
    }
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(MemoryError::SchemaTooNew { found: version, supported: SCHEMA_VERSION });
    }
    let chunks: i64 = conn
        .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))
        .map_err(|_| not_ours("it has no chunks table"))?;
    Ok((version, chunks))
}
