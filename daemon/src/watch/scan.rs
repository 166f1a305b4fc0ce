//! Which files of a watched source memory reads: under its root, not hidden, of a format the
//! ingester knows (kind `auto`) or any file (a fixed kind), matching `include` when given, not
//! matching `exclude`, and — with `gitignore` on — not ignored by a `.gitignore` or `.ignore`
//! file under the root. The same rules serve the full walk (start, catch-up, reload) and single
//! paths named by file-system events. A source of an agent's session logs (`claude-code`,
//! `codex`, `gemini`) reads only that agent's session files, and none of a project on its
//! `exclude_projects` list that the log's place already names.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use openhuman_config::WatchedSource;
use openhuman_memory::{Agent, SessionRules};

/// The rules of one source, with the ignore files seen by its last walk.
pub(crate) struct Matcher {
    pub root: PathBuf,
    pub kind: Option<String>,
    include: Option<GlobSet>,
    exclude: GlobSet,
    gitignore: bool,
    ignores: Vec<Gitignore>,
    /// Directories never read: the daemon's own (data, logs), when they sit under the root.
    skip: Vec<PathBuf>,
    /// The agent whose session logs the source holds, with what it keeps out.
    pub agent: Option<(Agent, SessionRules)>,
}

/// The names of ignore files; a change to one means the source is walked again.
pub(crate) const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];

fn globs(patterns: &[String], key: &str) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(Glob::new(p).map_err(|e| format!("`{key}` pattern {p:?}: {e}"))?);
    }
    b.build().map_err(|e| format!("`{key}`: {e}"))
}

impl Matcher {
    pub(crate) fn new(source: &WatchedSource, skip: Vec<PathBuf>) -> Result<Matcher, String> {
        Ok(Matcher {
            root: source.path.clone(),
            kind: (source.kind != "auto").then(|| source.kind.clone()),
            include: if source.include.is_empty() { None } else { Some(globs(&source.include, "include")?) },
            exclude: globs(&source.exclude, "exclude")?,
            gitignore: source.gitignore,
            ignores: Vec::new(),
            skip,
            agent: Agent::parse(&source.kind)
                .map(|a| (a, SessionRules { exclude_projects: source.exclude_projects.clone() })),
        })
    }

    /// Whether `path` (a file under the root) is one memory reads. Ignore files are taken from
    /// the last walk.
    pub(crate) fn accepts(&self, path: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(&self.root) else { return false };
        if self.skip.iter().any(|s| path.starts_with(s)) {
            return false;
        }
        if rel.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.')) {
            return false;
        }
        if self.kind.is_none() && !openhuman_memory::is_supported_file(path) {
            return false;
        }
        if let Some((agent, rules)) = &self.agent
            && (!agent.is_session_file(path)
                || openhuman_memory::session_file_excluded(*agent, &self.root, path, rules))
        {
            return false;
        }
        if self.include.as_ref().is_some_and(|i| !i.is_match(rel)) || self.exclude.is_match(rel) {
            return false;
        }
        !self.ignored(path, false)
    }

    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        self.gitignore
            && self
                .ignores
                .iter()
                .any(|g| path.starts_with(g.path()) && g.matched_path_or_any_parents(path, is_dir).is_ignore())
    }

    /// Every file under the root that memory reads (sorted), reading the ignore files afresh.
    /// Folders that cannot be read are reported, not fatal.
    pub(crate) fn walk(&mut self) -> (Vec<PathBuf>, Vec<String>) {
        self.ignores.clear();
        let mut files = Vec::new();
        let mut errors = Vec::new();
        let mut dirs = vec![self.root.clone()];
        if self.root.is_file() {
            return (if self.accepts(&self.root.clone()) { vec![self.root.clone()] } else { Vec::new() }, errors);
        }
        while let Some(dir) = dirs.pop() {
            if self.gitignore {
                for name in IGNORE_FILES {
                    let f = dir.join(name);
                    if f.is_file() {
                        let mut b = GitignoreBuilder::new(&dir);
                        if let Some(e) = b.add(&f) {
                            errors.push(format!("{}: {e}", f.display()));
                        }
                        match b.build() {
                            Ok(g) => self.ignores.push(g),
                            Err(e) => errors.push(format!("{}: {e}", f.display())),
                        }
                    }
                }
            }
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) => {
                    errors.push(format!("{}: {e}", dir.display()));
                    continue;
                }
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                // Symlinked folders are not followed (they can loop), as `ingest` does.
                let Ok(ft) = entry.file_type() else { continue };
                if ft.is_dir() {
                    if !self.ignored(&path, true) && !self.skip.iter().any(|s| path.starts_with(s)) {
                        dirs.push(path);
                    }
                } else if path.is_file() && self.accepts(&path) {
                    files.push(path);
                }
            }
        }
        files.sort();
        (files, errors)
    }

    /// The files memory reads under `dir` (a folder that appeared, e.g. moved in).
    pub(crate) fn walk_under(&self, dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut dirs = vec![dir.to_path_buf()];
        while let Some(d) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(ft) = entry.file_type() else { continue };
                if ft.is_dir() {
                    if !entry.file_name().to_string_lossy().starts_with('.') && !self.ignored(&path, true) {
                        dirs.push(path);
                    }
                } else if path.is_file() && self.accepts(&path) {
                    out.push(path);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(root: &Path, include: &[&str], exclude: &[&str]) -> WatchedSource {
        WatchedSource {
            path: root.to_path_buf(),
            kind: "auto".into(),
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            gitignore: true,
            exclude_projects: Vec::new(),
            visibility: None,
        }
    }

    #[test]
    fn globs_gitignore_hidden_and_formats_decide() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in ["a.md", "b.txt", "c.png", "drafts/d.md", "build/e.md", ".obsidian/f.md", "keep/g.md", "keep/h.log"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "build/\n*.log\n").unwrap();
        let mut m = Matcher::new(&source(root, &[], &["drafts/**"]), Vec::new()).unwrap();
        let (files, errors) = m.walk();
        assert!(errors.is_empty(), "{errors:?}");
        let rel: Vec<String> =
            files.iter().map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(rel, ["a.md", "b.txt", "keep/g.md"]);
        assert!(!m.accepts(&root.join("build/new.md")), "ignored by .gitignore");
        assert!(m.accepts(&root.join("keep/new.md")));

        let m = Matcher::new(&source(root, &["keep/**"], &[]), vec![root.join("keep/private")]).unwrap();
        assert!(m.accepts(&root.join("keep/g.md")));
        assert!(!m.accepts(&root.join("a.md")));
        assert!(!m.accepts(&root.join("keep/private/x.md")), "the daemon's own folders are skipped");
        assert!(Matcher::new(&source(root, &["[bad"], &[]), Vec::new()).is_err());
    }
}
