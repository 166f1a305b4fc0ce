//! Projects: which project a chunk belongs to. A project is named by a normalised absolute
//! path — a git root or a working directory — and comes, in this order, from the write itself
//! (an MCP session's project, an explicit value), from the chunk's `metadata.project` (what an
//! agent-session reader records), or, for an ingested file, from the git root above it.
//!
//! Normalising is lexical only (no filesystem access): backslashes become slashes, `.` and
//! empty components go, `..` takes the component before it, and trailing slashes go. So
//! `/home/u/app/`, `/home/u/./app` and `/home/u/app/src/..` name one project.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The metadata key a writer may name a chunk's project under.
pub const META_KEY: &str = "project";
/// Longest project path, in bytes.
pub const MAX_BYTES: usize = 2048;

/// The normalised form of `raw`, or `None` when it does not name an absolute path (or is
/// longer than [`MAX_BYTES`]).
pub fn normalize(raw: &str) -> Option<String> {
    let raw = raw.trim().replace('\\', "/");
    if raw.is_empty() || raw.len() > MAX_BYTES {
        return None;
    }
    // A Windows drive (`C:/…`) keeps its prefix; everything else must start at `/`.
    let (prefix, rest) = match raw.as_bytes() {
        [d, b':', b'/', ..] if d.is_ascii_alphabetic() => (raw[..2].to_ascii_uppercase(), &raw[2..]),
        [b'/', ..] => (String::new(), raw.as_str()),
        _ => return None,
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    Some(format!("{prefix}/{}", parts.join("/")))
}

/// The project a chunk's metadata names (`metadata.project`), normalised.
pub(crate) fn from_metadata(metadata: &Map<String, Value>) -> Option<String> {
    metadata.get(META_KEY).and_then(Value::as_str).and_then(normalize)
}

/// The nearest folder at or above `dir` holding a `.git` entry (a repository or a worktree).
pub fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// Git roots of files' folders, each folder looked up once per ingest run.
#[derive(Default)]
pub(crate) struct Roots {
    seen: HashMap<PathBuf, Option<String>>,
}

impl Roots {
    /// The project of a file: the git root above it, or none outside any repository.
    pub fn of_file(&mut self, file: &Path) -> Option<String> {
        let dir = file.parent()?.to_path_buf();
        self.seen.entry(dir).or_insert_with_key(|d| git_root(d).and_then(|r| normalize(&r.to_string_lossy()))).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_to_one_name() {
        for p in ["/home/u/app", "/home/u/app/", "/home/u/./app", "/home/u/app/src/..", " /home//u/app "] {
            assert_eq!(normalize(p).as_deref(), Some("/home/u/app"), "{p}");
        }
        assert_eq!(normalize("/").as_deref(), Some("/"));
        assert_eq!(normalize("c:\\Users\\u\\app\\").as_deref(), Some("C:/Users/u/app"));
        assert_eq!(normalize("relative/dir"), None);
        assert_eq!(normalize(""), None);
    }

    #[test]
    fn a_file_belongs_to_the_git_root_above_it() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        let mut roots = Roots::default();
        let want = normalize(&repo.to_string_lossy());
        assert_eq!(roots.of_file(&repo.join("src/deep/a.md")), want);
        assert_eq!(roots.of_file(&repo.join("README.md")), want);
        let outside = tmp.path().join("loose");
        std::fs::create_dir_all(&outside).unwrap();
        // Only when no folder above has a `.git` (the temp dir itself might sit in a repository).
        if git_root(&outside).is_none() {
            assert_eq!(roots.of_file(&outside.join("b.md")), None);
        }
    }
}
