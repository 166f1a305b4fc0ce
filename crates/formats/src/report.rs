//! What the parsers passed over, counted by unit and reason with where the first one was, so a
//! summary can say "3 lines without a time (first: chat.jsonl:4)" instead of dropping them.

use std::collections::BTreeMap;
use std::path::Path;

/// One reason things were passed over: how many, and the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// `line`, `message` or `file`.
    pub unit: &'static str,
    pub reason: String,
    pub count: usize,
    /// The first one: a path, with `:<line>` or `#<n>` when it was a line or a message.
    pub first: String,
}

/// The passed-over things of one file or one run, by unit and reason.
#[derive(Debug, Default)]
pub struct Skips {
    counts: BTreeMap<(&'static str, String), (usize, String)>,
}

impl Skips {
    fn add(&mut self, unit: &'static str, reason: &str, at: String) {
        let e = self.counts.entry((unit, reason.to_string())).or_insert((0, at));
        e.0 += 1;
    }

    /// A line of a line-oriented file (1-based `line`).
    pub fn line(&mut self, reason: &str, path: &Path, line: usize) {
        self.add("line", reason, format!("{}:{line}", path.display()));
    }

    /// An entry of a structured export (`at` names it: a message id, a conversation, an index).
    pub fn message(&mut self, reason: &str, path: &Path, at: &str) {
        self.add("message", reason, format!("{}#{at}", path.display()));
    }

    pub fn file(&mut self, reason: &str, path: &Path) {
        self.add("file", reason, path.display().to_string());
    }

    pub fn merge(&mut self, other: Skips) {
        for ((unit, reason), (n, at)) in other.counts {
            let e = self.counts.entry((unit, reason)).or_insert((0, at));
            e.0 += n;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    pub fn lines(&self) -> usize {
        self.counts.iter().filter(|((u, _), _)| *u == "line").map(|(_, (n, _))| n).sum()
    }

    /// Every reason, ordered by unit and reason.
    pub fn into_list(self) -> Vec<Skip> {
        self.counts.into_iter().map(|((unit, reason), (count, first))| Skip { unit, reason, count, first }).collect()
    }
}
