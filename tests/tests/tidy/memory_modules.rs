//! Module cycles: no import cycles between the top-level modules of `crates/memory/src`, nor
//! between those of `daemon/src`.
//!
//! A module `a` uses `b` when a file of `a` (`a.rs`, or any file under `a/`) names `crate::b`
//! or reaches the crate root through `super::` and names `b` there (`use super::b::X`,
//! `use super::{b, c::Y}`, `super::b::f()` in code; in `a/x.rs`, `super::super::b`). `lib.rs` is
//! the root everyone may use (its `mod` lines, `Inner`, `MemoryEngine`, its re-exports), so it is
//! not read, and a name that is no top-level module (`super::Inner`) is no edge. Inline modules
//! (`mod tests { .. }`) add one `super::` level to the text after them. Comments are skipped.
//!
//! A cycle means two parts of the engine can only be understood, changed or split out
//! together; the cure is to move what both need into a leaf module (as `locks`, `sql` and `seq`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use crate::{rel, rust_files};

/// The memory engine's sources, relative to the workspace root.
pub const MEMORY: &str = "crates/memory/src";
/// The daemon's sources: the same rule holds there (the floor, the engine path, the method
/// table and the tools above one another, never in a circle).
pub const DAEMON: &str = "daemon/src";

/// Every import cycle between the top-level modules of the crate sources `src` under `root`.
pub fn check(root: &Path, src_dir: &str) -> Vec<String> {
    let src = root.join(src_dir);
    let graph = graph(&src);
    cycles(&graph)
        .into_iter()
        .map(|cycle| {
            let steps: Vec<String> =
                cycle.windows(2).map(|pair| format!("{} (at {})", pair[1], graph[&pair[0]][&pair[1]])).collect();
            format!(
                "{src_dir}: modules `{}` use each other in a circle: {} → {}; move what they share into a leaf \
                 module (one that uses none of them) so the graph has no cycle",
                cycle[..cycle.len() - 1].join("`, `"),
                cycle[0],
                steps.join(" → ")
            )
        })
        .collect()
}

/// How many module → module edges the real crate has (a guard against reading nothing).
pub fn edges(root: &Path, src_dir: &str) -> usize {
    graph(&root.join(src_dir)).values().map(BTreeMap::len).sum()
}

/// Module → the modules it uses, each with the first place (`file:line`) that does.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The top-level modules of `src` (`x.rs` and `x/`, not `lib.rs`) and who uses whom.
fn graph(src: &Path) -> Graph {
    let mut modules = BTreeSet::new();
    for entry in fs::read_dir(src).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            modules.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs").filter(|s| *s != "lib" && *s != "main") {
            modules.insert(stem.to_owned());
        }
    }
    let mut graph: Graph = modules.iter().map(|m| (m.clone(), BTreeMap::new())).collect();
    for file in rust_files(src, &BTreeSet::new()) {
        let parts: Vec<String> = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts == ["lib.rs"] {
            continue;
        }
        let module = parts[0].trim_end_matches(".rs").to_owned();
        // How many `super::` reach the crate root from this file: `a.rs` and `a/mod.rs` one,
        // `a/x.rs` two, and so on.
        let depth = parts.len() - usize::from(parts.last().is_some_and(|p| p == "mod.rs"));
        let Ok(text) = fs::read_to_string(&file) else { continue };
        for (line, target) in references(&text, depth) {
            if target != module && modules.contains(&target) {
                let place = format!("{}:{line}", rel(src, &file));
                graph.get_mut(&module).expect("every file's module is listed").entry(target).or_insert(place);
            }
        }
    }
    graph
}

/// The crate-root names `text` refers to, with their 1-based line: the first segment of every
/// path after `crate::` or after exactly `depth` `super::`s (a `{..}` group gives each of its
/// items' first segments).
fn references(text: &str, depth: usize) -> Vec<(usize, String)> {
    let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    // Text after an inline module's opening line lies one `super::` deeper.
    let inline = code.lines().position(|l| {
        let l = l.trim_start();
        let l = l.strip_prefix("pub(crate) ").or_else(|| l.strip_prefix("pub ")).unwrap_or(l);
        l.strip_prefix("mod ").is_some_and(|rest| rest.trim_end().ends_with('{'))
    });
    let mut out = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let depth = if inline.is_some_and(|at| index > at) { depth + 1 } else { depth };
        let rest_of = |at: usize| &code[line_offset(&code, index) + at..];
        let mut at = 0;
        while at < line.len() {
            let here = &line[at..];
            let boundary = at == 0 || !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
            let prefix = if !boundary {
                None
            } else if here.starts_with("crate::") {
                Some("crate::".len())
            } else {
                let supers = here.len() - here.trim_start_matches("super::").len();
                (supers / "super::".len() == depth && supers > 0).then_some(supers)
            };
            match prefix {
                Some(skip) => {
                    out.extend(first_segments(rest_of(at + skip)).into_iter().map(|s| (index + 1, s)));
                    at += skip;
                }
                None => at += here.chars().next().map_or(1, char::len_utf8),
            }
        }
    }
    out
}

/// Byte offset of line `index` in `code`.
fn line_offset(code: &str, index: usize) -> usize {
    code.split_inclusive('\n').take(index).map(str::len).sum()
}

/// The first segment of the path that opens `rest`, or of each item of the `{..}` group that
/// opens it.
fn first_segments(rest: &str) -> Vec<String> {
    let ident =
        |s: &str| -> String { s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let mut items = Vec::new();
    let (mut nesting, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => nesting += 1,
            '}' if nesting == 0 => {
                items.push(ident(&group[start..i]));
                break;
            }
            '}' => nesting -= 1,
            ',' if nesting == 0 => {
                items.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

/// One cycle (`a, b, .., a`) per strongly connected group of two or more modules, through
/// the group's first module by name.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let reaches = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(m) = stack.pop() {
            for next in graph.get(&m).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|m| (m, reaches(m))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for m in graph.keys() {
        if done.contains(m) || !reach[m].contains(m) {
            continue;
        }
        let group: BTreeSet<&String> =
            graph.keys().filter(|n| reach[m].contains(*n) && reach[*n].contains(m)).collect();
        done.extend(group.iter().map(|n| (*n).clone()));
        out.push(shortest_cycle(graph, m));
    }
    out
}

/// The shortest path from `start` back to itself (breadth first, neighbours by name).
fn shortest_cycle(graph: &Graph, start: &str) -> Vec<String> {
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_owned()]);
    while let Some(m) = queue.pop_front() {
        for next in graph.get(&m).into_iter().flat_map(BTreeMap::keys) {
            if next == start {
                // Back from `m` to `start` through the parents, then turned around.
                let mut cycle = vec![m.clone()];
                while let Some(p) = parent.get(cycle.last().expect("non-empty")) {
                    cycle.push(p.clone());
                }
                cycle.reverse();
                cycle.push(start.to_owned());
                return cycle;
            }
            if !parent.contains_key(next) && next != start {
                parent.insert(next.clone(), m.clone());
                queue.push_back(next.clone());
            }
        }
    }
    vec![start.to_owned(), start.to_owned()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_tree;

    #[test]
    fn reports_a_planted_cycle_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_tree(
            dir.path(),
            &[
                ("crates/memory/src/lib.rs", "//! Root.\nmod a;\nmod b;\nmod c;\nmod f;\nmod leaf;\nuse a::X;\n"),
                // a → b → c → a, through a use line, a `{..}` group and a path in code.
                ("crates/memory/src/a.rs", "//! A.\nuse super::b::X;\nuse super::{Inner, leaf};\n"),
                ("crates/memory/src/b.rs", "//! B.\nuse crate::{leaf::L, c::{Y, Z}};\n"),
                ("crates/memory/src/c/mod.rs", "//! C.\nmod inner;\nfn f() { super::a::g() }\n"),
                // Not edges: a comment, a test module's `super::` (its parent, `f`), and `super::a`
                // inside `f/` (the module `f::a`, not the top-level `a`).
                ("crates/memory/src/c/inner.rs", "//! C inner.\nuse super::super::leaf::L;\n"),
                (
                    "crates/memory/src/f/mod.rs",
                    "//! F.\nmod a;\nmod inner;\n// use crate::b;\n#[cfg(test)]\nmod tests {\n    use super::a;\n}\n",
                ),
                ("crates/memory/src/f/inner.rs", "//! F inner.\nuse super::a::Y;\n"),
                ("crates/memory/src/f/a.rs", "//! F's a.\n"),
                ("crates/memory/src/leaf.rs", "//! Leaf.\nuse crate::f::Q;\n"),
            ],
        );
        let problems = check(dir.path(), MEMORY);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        let p = &problems[0];
        assert!(p.contains("`a`, `b`, `c`"), "{p}");
        assert!(p.contains("a → b (at a.rs:2) → c (at b.rs:2) → a (at c/mod.rs:3)"), "{p}");
    }

    #[test]
    fn paths_and_groups_are_read_by_their_first_segment() {
        assert_eq!(first_segments("{a, b::{c, d}, e::f}; g"), ["a", "b", "e"]);
        assert_eq!(first_segments("sync::read;"), ["sync"]);
        let refs = references("use super::{x, y};\nfn f() { crate::z::w(); super::super::q(); }\n", 1);
        assert_eq!(refs, [(1, "x".to_owned()), (1, "y".to_owned()), (2, "z".to_owned())]);
    }
}
