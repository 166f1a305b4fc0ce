//! Tidy: the repo's conventions, checked as a test (in the spirit of rust-analyzer's `xtask tidy`).
//! Every check reads files under the workspace root and nothing else: no build, no binaries, no
//! network. Each check is a function of the root path that returns its problems, so the tests
//! below run it on the real tree and the unit tests in each module run it on a small fake
//! workspace with a planted violation, proving the check can fail.
//!
//! - `layering`: which workspace crates may depend on which (the table at the top of
//!   `layering.rs`), the memory engine's ban on async and network crates, and the format
//!   parsers' ban on storage crates.
//! - `headers`: every Rust file starts with a `//!` line saying what it is.
//! - `public_api`: library crates' `pub fn`s return typed errors, not `Result<_, String>`.
//! - `floor`: the daemon's bottom layer names nothing above it, `spawn_blocking` is only in its
//!   pool, and only `via` decides whether a command runs against the daemon or in process.
//! - `memory_modules`: the memory engine's top-level modules use each other without cycles, and
//!   so do the daemon's.

mod floor;
mod headers;
mod layering;
mod memory_modules;
mod public_api;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root: the parent of the `openhuman-tests` crate.
fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("openhuman-tests lives one level below the workspace root")
}

/// `path` relative to `root`, with `/` separators, for messages.
fn rel(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Every `.rs` file under `dir` (recursively, sorted), skipping directories named `target`,
/// `node_modules` or starting with `.`, and any directory in `skip`. A missing `dir` yields none.
fn rust_files(dir: &Path, skip: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() {
                let skipped = name == "target" || name == "node_modules" || name.starts_with('.');
                if !skipped && !skip.contains(&path) {
                    stack.push(path);
                }
            } else if kind.is_file() && name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Fails with every problem, one per line, under `what`.
fn assert_clean(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "tidy: {what} ({} problems):\n  {}\n", problems.len(), problems.join("\n  "));
}

#[test]
fn layering_table_is_well_formed() {
    assert_clean("the layering table in tests/tests/tidy/layering.rs is inconsistent", &layering::table_problems());
}

#[test]
fn layering_sees_the_real_workspace() {
    // Guards the checks below against passing vacuously (say, if the manifests stopped parsing).
    let edges = layering::internal_edges(repo_root());
    let deps_of = |name: &str| edges.iter().find(|(member, _)| member == name).map(|(_, deps)| deps);
    for member in ["openhuman-common", "openhumand-mcp", "openhuman-mcp-shim", "openhuman-tests"] {
        assert!(deps_of(member).is_some(), "tidy: `{member}` is not among the members read from Cargo.toml: {edges:?}");
    }
    assert!(
        deps_of("openhumand-mcp").is_some_and(|deps| deps.iter().any(|d| d == "openhuman-common")),
        "tidy: daemon/Cargo.toml's `openhuman-common.workspace = true` was not seen as internal: {edges:?}"
    );
}

#[test]
fn workspace_crates_depend_only_on_lower_layers() {
    assert_clean("workspace crates break the layering", &layering::check(repo_root()));
}

#[test]
fn memory_engine_stays_sync_and_offline() {
    assert_clean("openhuman-memory depends on async or network crates", &layering::check_memory_externals(repo_root()));
}

#[test]
fn format_parsers_use_no_storage_crate() {
    assert_clean("openhuman-formats depends on storage crates", &layering::check_formats_storage(repo_root()));
}

#[test]
fn library_crates_do_not_use_anyhow() {
    assert_clean("library crates depend on anyhow", &layering::check_library_errors(repo_root()));
}

#[test]
fn memory_modules_have_no_import_cycles() {
    assert_clean(
        "the memory engine's modules import each other in a cycle",
        &memory_modules::check(repo_root(), memory_modules::MEMORY),
    );
}

#[test]
fn daemon_modules_have_no_import_cycles() {
    assert_clean(
        "the daemon's modules import each other in a cycle",
        &memory_modules::check(repo_root(), memory_modules::DAEMON),
    );
    assert!(
        memory_modules::edges(repo_root(), memory_modules::DAEMON) > 30,
        "tidy: too few references read in daemon/src"
    );
}

#[test]
fn memory_modules_graph_sees_the_real_crate() {
    // Guards the check above against passing vacuously (say, if the paths stopped being read).
    assert!(
        memory_modules::edges(repo_root(), memory_modules::MEMORY) > 50,
        "tidy: too few module references read in crates/memory/src"
    );
}

#[test]
fn rust_files_start_with_a_module_doc_line() {
    assert_clean("Rust files without a `//!` header", &headers::check(repo_root()));
}

#[test]
fn library_public_api_returns_no_string_errors() {
    assert_clean("library crates return `Result<_, String>` from public functions", &public_api::check(repo_root()));
}

#[test]
fn daemon_floor_names_nothing_above_it() {
    assert_clean("the daemon's floor names a layer above it", &floor::check_floor(repo_root()));
}

#[test]
fn daemon_blocking_work_goes_through_the_pool() {
    assert_clean("daemon files call spawn_blocking outside pool.rs", &floor::check_blocking_pool(repo_root()));
}

#[test]
fn daemon_commands_leave_the_daemon_or_in_process_decision_to_via() {
    assert_clean("daemon files decide daemon-or-in-process outside via.rs", &floor::check_via(repo_root()));
}

/// Writes a small fake workspace for the unit tests: `(path relative to root, contents)`.
fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("file has a parent")).expect("create fixture dir");
        fs::write(&path, text).expect("write fixture file");
    }
}

#[test]
fn memory_api_is_typed() {
    assert_clean(
        "openhuman-memory's public functions take or return JSON values",
        &public_api::check_memory_values(repo_root()),
    );
}
