//! The daemon's one folder watcher: keeps `[[memory.sources]]` in step with memory however many
//! clients are connected.
//!
//! One task owns one `notify` watcher (inotify, FSEvents, ReadDirectoryChangesW) over every
//! source root. Events are gathered until the file system has been quiet for
//! `memory.watch_debounce_ms` (at most ten times that, or 2 s, after the first), then each
//! source's changed paths go to the memory engine's `sync_files` through `engine::blocking`, onto
//! `pool`, the daemon's one bounded path onto the blocking pool. On start, after a reload that
//! changes the sources or the policy, and when the watcher reports lost events, each source is
//! walked and compared with what the store recorded (size and modification time), so changes
//! made while the daemon was down are caught up. In `readonly` nothing is written: changes are counted as
//! pending and the status says why. Every sync that looked at changed files leaves an audit row
//! (`watch.sync`, source `watch`), and clients that subscribed hear which resources changed.
//!
//! A source of an agent's session logs (`kind` `claude-code`, `codex` or `gemini`) goes to the
//! engine's `sync_session_files` instead, which reads each changed log from where it stopped;
//! its catch-up compares the logs with what that read recorded, and a log that went away
//! leaves what was read from it in memory.
//!
//! - `scan` which files of a source memory reads (globs, `.gitignore`, formats)

pub(crate) mod scan;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher as _};
use openhuman_config::{AutonomyLevel, Config, WatchedSource};
use openhuman_memory::{FileState, MemoryEngine, MemoryError, SessionStats, SyncSummary};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use crate::engine::{MethodError, blocking};
use crate::state::AppState;
use scan::{IGNORE_FILES, Matcher};

/// What `status` shows of one watched source.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct SourceStatus {
    pub path: PathBuf,
    pub kind: String,
    /// `starting`, `watching`, `syncing`, `readonly` or `error`.
    pub state: &'static str,
    /// Files of this source in memory after the last sync.
    pub files: usize,
    /// When the last sync finished (ms since the epoch).
    pub last_sync_ms: Option<i64>,
    /// Changed paths seen and not synced yet (waiting for quiet, or refused by `readonly`).
    pub pending: usize,
    pub last_error: Option<String>,
    /// Since the daemon started: files read, followed to a new path, and removed.
    pub ingested: usize,
    pub moved: usize,
    pub removed: usize,
    /// An agent session source: what has been read of its logs (turns, malformed lines,
    /// unknown records, excluded turns, bytes of last lines still being written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionStats>,
}

/// The watcher's shared side: its status, and how a reload reaches it.
#[derive(Default)]
pub(crate) struct Watch {
    status: Mutex<Vec<SourceStatus>>,
    reload: Notify,
    running: AtomicBool,
}

impl AppState {
    /// The folder watcher's shared side (kept in the state by `server::state`; the watcher runs
    /// only under `serve`).
    pub(crate) fn watch(&self) -> &Arc<Watch> {
        self.part()
    }
}

impl Watch {
    /// Tells the running watcher to re-read the config (a no-op when nothing it uses changed).
    pub(crate) fn reload(&self) {
        self.reload.notify_one();
    }

    /// `{running, readonly, sources: [...]}` for `status`.
    pub(crate) fn status_json(&self, config: &Config) -> Value {
        let mut sources = self.status.lock().expect("watch status").clone();
        if !self.running.load(Ordering::Relaxed) {
            // Not this process's job (`stdio`), or not started yet: show the config.
            sources = config.memory.sources.iter().map(|s| initial(s, "not watched")).collect();
        }
        json!({
            "running": self.running.load(Ordering::Relaxed),
            "readonly": config.autonomy.level == AutonomyLevel::Readonly,
            "sources": sources,
        })
    }

    /// The watched folders memory has not finished reading since the daemon started: a question
    /// asked now may miss what they hold. Empty when no watcher runs in this process.
    pub(crate) fn still_reading(&self) -> Vec<PathBuf> {
        if !self.running.load(Ordering::Relaxed) {
            return Vec::new();
        }
        unread(&self.status.lock().expect("watch status"))
    }

    fn update(&self, i: usize, f: impl FnOnce(&mut SourceStatus)) {
        if let Some(s) = self.status.lock().expect("watch status").get_mut(i) {
            f(s);
        }
    }
}

/// The sources of `status` starting or syncing with no sync finished yet.
fn unread(status: &[SourceStatus]) -> Vec<PathBuf> {
    status
        .iter()
        .filter(|s| matches!(s.state, "starting" | "syncing") && s.last_sync_ms.is_none())
        .map(|s| s.path.clone())
        .collect()
}

fn initial(s: &WatchedSource, state: &'static str) -> SourceStatus {
    SourceStatus { path: s.path.clone(), kind: s.kind.clone(), state, ..SourceStatus::default() }
}

/// Percent-encodes a source id for an `openhuman://source/{id}` URI.
pub(crate) fn source_uri(source_id: &str) -> String {
    id_uri("openhuman://source/", source_id)
}

/// The inverse of [`source_uri`]: the source id, or None for another URI or bad encoding.
pub(crate) fn source_id_of(uri: &str) -> Option<String> {
    id_of("openhuman://source/", uri)
}

/// `prefix` followed by `id`, percent-encoded but for RFC 3986 unreserved characters.
pub(crate) fn id_uri(prefix: &str, id: &str) -> String {
    let mut out = String::from(prefix);
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of [`id_uri`]: the id after `prefix`, or None for another URI or bad encoding.
pub(crate) fn id_of(prefix: &str, uri: &str) -> Option<String> {
    let enc = uri.strip_prefix(prefix)?.as_bytes();
    let mut out = Vec::with_capacity(enc.len());
    let mut i = 0;
    while i < enc.len() {
        if enc[i] == b'%' {
            let hex = std::str::from_utf8(enc.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(enc[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|s| !s.is_empty())
}

/// What the watcher's current configuration is made of; a reload that keeps it changes nothing.
#[derive(PartialEq)]
struct Setup {
    sources: Vec<WatchedSource>,
    readonly: bool,
    debounce_ms: u64,
}

impl Setup {
    fn of(config: &Config) -> Setup {
        Setup {
            sources: config.memory.sources.clone(),
            readonly: config.autonomy.level == AutonomyLevel::Readonly,
            debounce_ms: config.memory.watch_debounce_ms,
        }
    }
}

/// Starts the watcher task; it ends when the daemon shuts down.
pub(crate) fn spawn(state: AppState) {
    tokio::spawn(run(state));
}

async fn run(state: AppState) {
    let watch = state.watch().clone();
    watch.running.store(true, Ordering::Relaxed);
    let shutdown = state.shutdown_token().clone();
    let mut previous: Option<Vec<PathBuf>> = None;
    // The watcher works on the store: it starts once the store has opened (or failed to).
    tokio::select! {
        _ = state.memory_settled() => {}
        _ = shutdown.cancelled() => return,
    }
    loop {
        let config = state.config();
        let setup = Setup::of(&config);
        let roots: Vec<PathBuf> = setup.sources.iter().map(|s| s.path.clone()).collect();
        if previous.as_ref().is_some_and(|p| *p != roots) {
            // The watched-source resources come and go with the config.
            state.sessions().notify_resources_list_changed();
        }
        previous = Some(roots);
        *watch.status.lock().expect("watch status") =
            setup.sources.iter().map(|s| initial(s, if setup.readonly { "readonly" } else { "starting" })).collect();
        let rebuilt = match state.memory() {
            Ok(engine) if !setup.sources.is_empty() => serve(&state, &engine, &setup).await,
            Ok(_) => idle(&state).await,
            Err(why) => {
                for i in 0..setup.sources.len() {
                    watch.update(i, |s| {
                        s.state = "error";
                        s.last_error = Some(why.clone());
                    });
                }
                idle(&state).await
            }
        };
        if !rebuilt || shutdown.is_cancelled() {
            return;
        }
    }
}

/// Waits for a reload that changes the setup (true) or for shutdown (false).
async fn idle(state: &AppState) -> bool {
    let setup = Setup::of(&state.config());
    loop {
        tokio::select! {
            _ = state.shutdown_token().cancelled() => return false,
            _ = state.watch().reload.notified() => {
                if Setup::of(&state.config()) != setup {
                    return true;
                }
            }
        }
    }
}

/// Paths that changed, per source index, and sources to walk again.
#[derive(Default)]
struct Batch {
    paths: BTreeMap<usize, BTreeSet<PathBuf>>,
    rescan: BTreeSet<usize>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.rescan.is_empty()
    }

    fn add(&mut self, event: notify::Result<notify::Event>, roots: &[PathBuf]) {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "file watcher error; walking every source again");
                self.rescan.extend(0..roots.len());
                return;
            }
        };
        if event.need_rescan() {
            self.rescan.extend(0..roots.len());
        }
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        for p in event.paths {
            for (i, root) in roots.iter().enumerate() {
                if !p.starts_with(root) {
                    continue;
                }
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if IGNORE_FILES.contains(&name.as_str()) || p == *root {
                    self.rescan.insert(i);
                } else {
                    self.paths.entry(i).or_default().insert(p.clone());
                }
            }
        }
    }
}

/// Watches `setup`'s sources until a reload changes the setup (true) or shutdown (false).
async fn serve(state: &AppState, engine: &MemoryEngine, setup: &Setup) -> bool {
    let watch = state.watch().clone();
    let paths = state.paths();
    let skip = vec![paths.data_dir.clone(), paths.log_dir.clone(), paths.run_dir.clone()];
    let mut matchers: Vec<Option<Arc<Mutex<Matcher>>>> = Vec::new();
    for (i, s) in setup.sources.iter().enumerate() {
        match Matcher::new(s, skip.clone()) {
            Ok(m) => matchers.push(Some(Arc::new(Mutex::new(m)))),
            Err(e) => {
                let e = format!("key `memory.sources[{i}]`: {e}");
                tracing::error!("{e}");
                watch.update(i, |st| {
                    st.state = "error";
                    st.last_error = Some(e);
                });
                matchers.push(None);
            }
        }
    }
    let (tx, mut rx) = mpsc::channel::<notify::Result<notify::Event>>(8192);
    let lost = Arc::new(AtomicBool::new(false));
    let lost_in = lost.clone();
    let watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        // Reads are not changes, and a walk of the sources opens files itself (to tell their
        // format): kept, its own reads of 10k files filled the channel, which reported lost
        // events, which started another walk, over and over.
        if ev.as_ref().is_ok_and(|e| matches!(e.kind, EventKind::Access(_)) && !e.need_rescan()) {
            return;
        }
        if tx.try_send(ev).is_err() {
            lost_in.store(true, Ordering::Relaxed);
        }
    });
    let mut watcher = match watcher {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::error!(error = %e, "cannot start the file watcher; sources are synced at start only");
            None
        }
    };
    let roots: Vec<PathBuf> = setup.sources.iter().map(|s| s.path.clone()).collect();
    let mut batch = Batch::default();
    let mut unwatched = vec![false; roots.len()];
    for (i, root) in roots.iter().enumerate() {
        if matchers[i].is_none() {
            continue;
        }
        if !root.exists() {
            let e = format!("{} does not exist; it is watched once it does and the config is reloaded", root.display());
            tracing::warn!("{e}");
            watch.update(i, |st| {
                st.state = "error";
                st.last_error = Some(e);
            });
            unwatched[i] = true;
            continue;
        }
        if let Some(w) = watcher.as_mut()
            && let Err(e) = w.watch(root, RecursiveMode::Recursive)
        {
            let e = format!("cannot watch {}: {e} (on Linux, raise fs.inotify.max_user_watches)", root.display());
            tracing::warn!("{e}");
            watch.update(i, |st| st.last_error = Some(e));
        }
        batch.rescan.insert(i);
    }
    tracing::info!(sources = roots.len(), "watching memory sources");
    let debounce = Duration::from_millis(setup.debounce_ms);
    let longest = (debounce * 10).max(Duration::from_secs(2));
    loop {
        if !batch.is_empty() {
            sync_batch(state, engine, setup, &matchers, std::mem::take(&mut batch)).await;
        }
        tokio::select! {
            _ = state.shutdown_token().cancelled() => return false,
            _ = watch.reload.notified() => {
                // A folder that was missing at start is watched once it exists and a reload asks.
                if Setup::of(&state.config()) != *setup || roots.iter().zip(&unwatched).any(|(r, u)| *u && r.exists()) {
                    return true;
                }
                continue;
            }
            ev = rx.recv() => match ev {
                Some(ev) => batch.add(ev, &roots),
                None => return false,
            },
        }
        // Gather until quiet.
        let first = Instant::now();
        while first.elapsed() < longest {
            for (i, set) in &batch.paths {
                watch.update(*i, |s| s.pending = set.len());
            }
            tokio::select! {
                _ = state.shutdown_token().cancelled() => return false,
                _ = tokio::time::sleep(debounce) => break,
                ev = rx.recv() => match ev {
                    Some(ev) => batch.add(ev, &roots),
                    None => return false,
                },
            }
        }
        if lost.swap(false, Ordering::Relaxed) {
            tracing::warn!("file events were lost (too many at once); walking every source again");
            batch.rescan.extend(0..roots.len());
        }
    }
}

/// What one source's sync did, for status, audit and notifications.
struct Outcome {
    summary: SyncSummary,
    /// An agent session source: what its logs hold now.
    sessions: Option<SessionStats>,
    /// Paths looked at (changed, gone, moved to).
    paths: Vec<PathBuf>,
    files: usize,
    errors: Vec<String>,
}

async fn sync_batch(
    state: &AppState,
    engine: &MemoryEngine,
    setup: &Setup,
    matchers: &[Option<Arc<Mutex<Matcher>>>],
    mut batch: Batch,
) {
    let watch = state.watch().clone();
    for (i, source) in setup.sources.iter().enumerate() {
        let Some(matcher) = matchers[i].clone() else { continue };
        let full = batch.rescan.contains(&i);
        let changed: Vec<PathBuf> = batch.paths.remove(&i).unwrap_or_default().into_iter().collect();
        if !full && changed.is_empty() {
            continue;
        }
        if setup.readonly {
            watch.update(i, |s| {
                s.state = "readonly";
                s.pending += changed.len().max(usize::from(full));
            });
            continue;
        }
        watch.update(i, |s| s.state = "syncing");
        let engine = engine.clone();
        let kind = matcher.lock().expect("matcher").kind.clone();
        let work = move || -> Result<Outcome, MethodError> {
            let internal = |e: MemoryError| MethodError::Internal(e.into());
            let mut m = matcher.lock().expect("matcher");
            if let Some((agent, rules)) = m.agent.clone() {
                let (todo, errors) = if full {
                    catch_up(&mut m, |root| engine.session_file_states(root))
                } else {
                    (expand(&m, changed), Vec::new())
                };
                let mut summary = SyncSummary::default();
                if !todo.is_empty() {
                    let s = engine.sync_session_files(agent, &todo, &rules).map_err(internal)?;
                    summary.ingest.files_seen = todo.len();
                    summary.ingest.files_ingested = s.files_read;
                    summary.ingest.chunks_added = s.chunks_added;
                    summary.ingest.chunks_removed = s.chunks_removed;
                    summary.ingest.lines_skipped = s.malformed + s.unknown;
                    summary.ingest.files_failed = s.files_failed;
                }
                let stats = engine.session_stats(&m.root).map_err(internal)?;
                return Ok(Outcome { summary, files: stats.files, sessions: Some(stats), paths: todo, errors });
            }
            let (todo, errors) = if full {
                catch_up(&mut m, |root| engine.file_states(root))
            } else {
                (expand(&m, changed), Vec::new())
            };
            let summary = if todo.is_empty() {
                SyncSummary::default()
            } else {
                engine.sync_files(&todo, kind.as_deref()).map_err(internal)?
            };
            let files = engine.file_count(&m.root).map_err(internal)?;
            Ok(Outcome { summary, sessions: None, paths: todo, files, errors })
        };
        let outcome = blocking(work).await;
        record(state, i, source, outcome);
    }
}

/// The files to sync for event paths: present files memory reads, the files of folders that
/// appeared, and paths that are gone (whatever memory holds at or under them is removed).
fn expand(m: &Matcher, changed: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in changed {
        match std::fs::symlink_metadata(&p) {
            Ok(meta) if meta.is_dir() => out.extend(m.walk_under(&p)),
            Ok(_) if m.accepts(&p) => out.push(p),
            Ok(_) => {}
            Err(_) => out.push(p),
        }
    }
    out
}

/// Walks a source and lists what differs from the store: files new or changed since their last
/// sync (by size and modification time), and files the store holds that are gone from disk or
/// no longer match the source's rules. A root that is gone itself changes nothing.
fn catch_up(
    m: &mut Matcher,
    recorded: impl FnOnce(&Path) -> Result<Vec<FileState>, MemoryError>,
) -> (Vec<PathBuf>, Vec<String>) {
    if !m.root.exists() {
        // An unmounted drive or a folder moved away: forgetting everything read from it would be
        // worse than waiting.
        return (Vec::new(), vec![format!("{} does not exist; nothing was removed from memory", m.root.display())]);
    }
    let (files, errors) = m.walk();
    let stored = match recorded(&m.root) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), vec![format!("reading what memory holds: {e}")]),
    };
    let on_disk: HashSet<&Path> = files.iter().map(PathBuf::as_path).collect();
    let mut known = BTreeMap::new();
    let mut todo = Vec::new();
    for s in &stored {
        known.insert(s.path.as_path(), (s.size, s.mtime_ms));
        if !on_disk.contains(s.path.as_path()) {
            // Gone, or no longer one of this source's files (excluded, ignored).
            todo.push(s.path.clone());
        }
    }
    for f in &files {
        let now = std::fs::metadata(f).map(|meta| openhuman_memory::disk_state(&meta)).ok();
        if now.is_none() || known.get(f.as_path()).copied() != now {
            todo.push(f.clone());
        }
    }
    (todo, errors)
}

fn record(state: &AppState, i: usize, source: &WatchedSource, outcome: Result<Outcome, MethodError>) {
    let now = chrono::Utc::now().timestamp_millis();
    let mut row = openhuman_memory::AuditRow {
        ts_ms: now,
        tool: "watch.sync".into(),
        source: "watch".into(),
        client_info: Value::Null,
        success: true,
        error: None,
        result_id: None,
        args_summary: json!({ "source": i }),
        machine: None,
        person: None,
    };
    match outcome {
        Ok(o) => {
            let s = &o.summary.ingest;
            let failed: Vec<String> =
                s.files_failed.iter().map(|f| format!("{}: {}", f.path.display(), f.error)).collect();
            let error = o.errors.iter().chain(failed.iter()).next().cloned();
            let changed = s.files_ingested + s.files_removed + o.summary.moved.len();
            state.watch().update(i, |st| {
                st.state = "watching";
                st.files = o.files;
                st.sessions = o.sessions.clone();
                st.last_sync_ms = Some(now);
                st.pending = 0;
                st.last_error = error.clone();
                st.ingested += s.files_ingested;
                st.moved += o.summary.moved.len();
                st.removed += s.files_removed;
            });
            if o.paths.is_empty() {
                return;
            }
            tracing::info!(
                source = %source.path.display(),
                ingested = s.files_ingested,
                moved = o.summary.moved.len(),
                removed = s.files_removed,
                failed = failed.len(),
                "watched source synced"
            );
            row.args_summary = json!({
                "source": i, "paths": o.paths.len(), "ingested": s.files_ingested, "unchanged": s.files_unchanged,
                "moved": o.summary.moved.len(), "removed": s.files_removed, "failed": failed.len(),
                "chunks_added": s.chunks_added, "chunks_removed": s.chunks_removed,
            });
            if let Some(e) = &error {
                row.success = failed.is_empty();
                row.error = Some(openhuman_common::redact(e, None));
            }
            state.audit().record(row);
            if changed > 0 {
                let mut uris: Vec<String> =
                    o.paths.iter().map(|p| source_uri(&format!("file:{}", p.display()))).collect();
                uris.extend(o.summary.moved.iter().map(|(from, _)| source_uri(&format!("file:{}", from.display()))));
                uris.push(format!("openhuman://watched/{i}"));
                state.memory_changed(&uris);
            }
        }
        Err(e) => {
            let e = format!("{e}");
            tracing::error!(source = %source.path.display(), "watched source not synced: {e}");
            state.watch().update(i, |st| {
                st.state = "error";
                st.last_error = Some(e.clone());
            });
            row.success = false;
            row.error = Some(openhuman_common::redact(&e, None));
            state.audit().record(row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_uris_round_trip() {
        for id in ["file:/home/me/notes/Plan B.md", "thread:abc", "file:/tmp/ü%20x"] {
            let uri = source_uri(id);
            assert!(uri.bytes().all(|b| b.is_ascii_graphic()), "{uri}");
            assert_eq!(source_id_of(&uri).as_deref(), Some(id));
        }
        assert_eq!(source_id_of("openhuman://source/%zz"), None);
        assert_eq!(source_id_of("openhuman://memory"), None);
    }

    #[test]
    fn a_folder_is_unread_until_its_first_sync_finishes() {
        let source = |path: &str, state, last_sync_ms| SourceStatus {
            path: path.into(),
            state,
            last_sync_ms,
            ..SourceStatus::default()
        };
        let status = [
            source("/notes", "starting", None),
            source("/mail", "syncing", None),
            // Read once, now taking a change in: what it held is in memory.
            source("/chat", "syncing", Some(1)),
            source("/docs", "watching", Some(1)),
            source("/broken", "error", None),
        ];
        assert_eq!(unread(&status), [PathBuf::from("/notes"), PathBuf::from("/mail")]);
    }
}
