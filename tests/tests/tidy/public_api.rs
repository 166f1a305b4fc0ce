//! Public API: library crates (`common/`, `crates/*/`) do not return `Result<_, String>` from a
//! `pub fn`: callers of a library need an error they can match on, not text to parse.
//!
//! A signature-level text check: a line declaring a plain-`pub` function (`pub(crate)` and the like
//! are not public API) is joined with its continuation lines up to the `{` or `;` that ends the
//! signature, and any `Result<A, String>` in it is reported.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::{rel, rust_files};

/// The last argument types reported as a string error.
const STRING_TYPES: &[&str] = &["String", "std::string::String", "::std::string::String", "alloc::string::String"];

/// Longest signature followed, in lines; a runaway join means the parse went wrong, not a hit.
const MAX_SIGNATURE_LINES: usize = 64;

/// Every plain-`pub` function in `common/src` and `crates/*/src` returning `Result<_, String>`.
pub fn check(root: &Path) -> Vec<String> {
    let mut src_dirs = vec![root.join("common/src")];
    if let Ok(entries) = fs::read_dir(root.join("crates")) {
        let mut crates: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("src")).collect();
        crates.sort();
        src_dirs.extend(crates);
    }
    each_pub_fn(root, &src_dirs, |name, signature| {
        returns_string_error(signature).then(|| {
            format!(
                "`pub fn {name}` has `Result<_, String>` in its signature; return a typed error (an enum, e.g. \
                 with thiserror) so callers can match on the failure instead of parsing text"
            )
        })
    })
}

/// Runs `judge` on the name and signature of every plain-`pub` function under `dirs`; each
/// verdict it returns is a problem at `file:line`.
fn each_pub_fn(root: &Path, dirs: &[PathBuf], judge: impl Fn(&str, &str) -> Option<String>) -> Vec<String> {
    let no_skip = BTreeSet::new();
    let mut problems = Vec::new();
    for file in dirs.iter().flat_map(|dir| rust_files(dir, &no_skip)) {
        let Ok(text) = fs::read_to_string(&file) else {
            problems.push(format!("{}: cannot be read; fix or remove it", rel(root, &file)));
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let Some(name) = pub_fn_name(line) else { continue };
            if let Some(verdict) = judge(name, &signature(&lines[index..])) {
                problems.push(format!("{}:{}: {verdict}", rel(root, &file), index + 1));
            }
        }
    }
    problems
}

/// Every plain-`pub` function of the memory engine (`crates/memory/src`) with a
/// `serde_json::Value` in its signature: the engine's API takes and returns typed operations
/// (`ops`), so the daemon–memory contract is checked by the compiler, not by string keys.
pub fn check_memory_values(root: &Path) -> Vec<String> {
    each_pub_fn(root, &[root.join("crates/memory/src")], |name, signature| {
        names_value(signature).then(|| {
            format!(
                "`pub fn {name}` takes or returns a JSON `Value`; give it a parameter or result type (see \
                 crates/memory/src/ops) so callers are checked at compile time"
            )
        })
    })
}

/// Whether `signature` names the type `Value` as a word (`Self::Value`, a visitor's associated
/// type, and names like `ValueRef` do not count).
fn names_value(signature: &str) -> bool {
    let bytes = signature.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    signature.match_indices("Value").any(|(i, _)| {
        let before = signature[..i].trim_end();
        let end = i + "Value".len();
        (i == 0 || !ident(bytes[i - 1])) && !before.ends_with("Self::") && bytes.get(end).is_none_or(|b| !ident(*b))
    })
}

/// The function's name when `line` declares a plain-`pub` function (with any of `const`,
/// `async`, `unsafe`, `extern "abi"` in front of `fn`).
fn pub_fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start().strip_prefix("pub ")?;
    loop {
        rest = rest.trim_start();
        if let Some(after) = ["const ", "async ", "unsafe "].iter().find_map(|q| rest.strip_prefix(q)) {
            rest = after;
        } else if let Some(after) = rest.strip_prefix("extern ") {
            let after = after.trim_start();
            rest = match after.strip_prefix('"') {
                Some(abi) => abi.split_once('"').map_or("", |(_, tail)| tail),
                None => after,
            };
        } else {
            let name = rest.strip_prefix("fn ")?.trim_start();
            let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(name.len());
            return Some(&name[..end]);
        }
    }
}

/// The signature starting at `lines[0]`: the lines joined (line comments dropped) up to the `{`
/// or `;` outside parentheses and brackets (so `[u8; 4]` does not end it).
fn signature(lines: &[&str]) -> String {
    let mut signature = String::new();
    let mut depth = 0usize;
    for line in lines.iter().take(MAX_SIGNATURE_LINES) {
        let code = line.split_once("//").map_or(*line, |(code, _)| code);
        for c in code.chars() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                '{' | ';' if depth == 0 => return signature,
                _ => {}
            }
            signature.push(c);
        }
        signature.push(' ');
    }
    signature
}

/// Whether `signature` names `Result<A, String>` (any path to `Result`; a one-argument alias such
/// as `io::Result<String>` and `Result<HashMap<String, String>, E>` do not count).
fn returns_string_error(signature: &str) -> bool {
    let text: String = signature.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find("Result<") {
        let start = from + found;
        from = start + "Result<".len();
        let word_start = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if word_start && matches!(generic_args(&text[from..]).as_slice(), [_, error] if STRING_TYPES.contains(error)) {
            return true;
        }
    }
    false
}

/// The top-level comma-separated generic arguments at the start of `text` (just past a `<`), up
/// to the matching `>`; `->` inside (function pointer types) is not a closing bracket.
fn generic_args(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let (mut args, mut depth, mut arg_start, mut i) = (Vec::new(), 0usize, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'-' if bytes.get(i + 1) == Some(&b'>') => i += 1,
            b'<' | b'(' | b'[' => depth += 1,
            b'>' | b')' | b']' if depth > 0 => depth -= 1,
            b'>' => {
                args.push(&text[arg_start..i]);
                return args;
            }
            b',' if depth == 0 => {
                args.push(&text[arg_start..i]);
                arg_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    // Unclosed: not a type we can judge.
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_tree;

    #[test]
    fn reports_pub_fns_returning_string_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = r#"//! A library.
pub fn f() -> Result<(), String> {}
pub(crate) fn crate_only() -> Result<(), String> {}
fn private() -> Result<(), String> {}
// pub fn commented() -> Result<(), String> {}
pub async fn multi_line(
    x: u32, // the input; not the end
) -> std::result::Result<Vec<String>, String>;
pub fn map_ok() -> Result<HashMap<String, String>, Error> {}
pub const fn one_arg() -> io::Result<String> {}
pub fn array(x: [u8; 4]) -> Result<u8, String> {}
pub fn generic<T>() -> Result<T, String>
where
    T: Default,
{
}
pub fn callback(f: impl Fn() -> u8) -> Result<fn() -> u8, std::string::String> {}
pub fn typed() -> Result<String, MyError> {}
pub fn alias() -> MyResult<(), String> {}
pub unsafe extern "C" fn ffi() -> Result<(), String> {}
"#;
        write_tree(
            dir.path(),
            &[
                ("common/src/lib.rs", lib),
                (
                    "crates/memory/src/deep/mod.rs",
                    "//! Deep.\nimpl X {\n    pub fn m(&self) -> Result<(), String> {}\n}\n",
                ),
                ("crates/memory/target/out.rs", "pub fn built() -> Result<(), String> {}\n"),
                ("daemon/src/lib.rs", "//! Not a library crate here.\npub fn d() -> Result<(), String> {}\n"),
            ],
        );
        let problems = check(dir.path());
        let located: Vec<&str> = problems.iter().map(|p| p.split(": ").next().unwrap_or("")).collect();
        assert_eq!(
            located,
            [
                "common/src/lib.rs:2",
                "common/src/lib.rs:6",
                "common/src/lib.rs:11",
                "common/src/lib.rs:12",
                "common/src/lib.rs:17",
                "common/src/lib.rs:20",
                "crates/memory/src/deep/mod.rs:3",
            ],
            "{problems:#?}"
        );
        assert!(problems[1].contains("`pub fn multi_line`"), "{problems:#?}");
    }

    /// A planted JSON-in, JSON-out engine method is reported; typed ones, crate-private ones and
    /// look-alike names are not.
    #[test]
    fn reports_memory_functions_with_json_values() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ops = r#"//! Ops.
impl MemoryEngine {
    pub fn search(&self, p: Value) -> Result<Value, MemoryError> {}
    pub fn stats(&self) -> Result<serde_json::Value, MemoryError> {}
    pub fn typed(&self, p: SearchParams) -> Result<SearchResult, MemoryError> {}
    pub(crate) fn inner(&self, p: Value) -> Value {}
    pub fn cell(v: ValueRef<'_>) -> SqlValue {}
    pub fn meta(
        &self,
        m: &Map<String, Value>,
    ) -> bool {}
}
"#;
        write_tree(
            dir.path(),
            &[
                ("crates/memory/src/ops.rs", ops),
                ("crates/other/src/lib.rs", "//! Elsewhere.\npub fn json(v: Value) -> Value {}\n"),
            ],
        );
        let problems = check_memory_values(dir.path());
        let located: Vec<&str> = problems.iter().map(|p| p.split(": ").next().unwrap_or("")).collect();
        assert_eq!(
            located,
            ["crates/memory/src/ops.rs:3", "crates/memory/src/ops.rs:4", "crates/memory/src/ops.rs:8"],
            "{problems:#?}"
        );
        assert!(!names_value("fn visit(self) -> Result<Self::Value, E>"));
    }
}
