//! Layering: which workspace crates may depend on which, the memory engine's external deps, and
//! the format parsers' ban on storage crates.
//!
//! A dependency is internal (on a workspace crate) when it has a `path`, or when it is
//! `name.workspace = true` and the root `[workspace.dependencies]` entry for it has a `path`.
//! Crates are matched by package name (`package = "..."` renames are followed). `[dependencies]`,
//! `[build-dependencies]` and `[dev-dependencies]`, plain or under `[target.'cfg(..)'.*]`, are all
//! checked against [`ALLOWED`]; `[dev-dependencies]` may additionally name any other crate at the
//! same or a lower layer. Table entries that are not workspace members are skipped, so the table
//! can name crates before they are split out.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::rel;

/// Each workspace crate (package name) and the workspace crates it may depend on. A crate's layer
/// is 0 when it may depend on no workspace crate, else one above the highest layer it may use.
/// `[dev-dependencies]` may also name any other crate at the same or a lower layer.
pub const ALLOWED: &[(&str, &[&str])] = &[
    // Error codes, paths, socket naming shared by everything; never depends on a workspace crate.
    ("openhuman-common", &[]),
    // Argument schemas and the `params!` declaration of parameter types: the bottom of every
    // typed operation; never memory, MCP or the daemon.
    ("openhuman-schema", &["openhuman-common"]),
    // Config schema and loading; never memory, MCP, providers or the daemon.
    ("openhuman-config", &["openhuman-common"]),
    // File formats, bytes → documents, chats and mail; knows nothing of storage (see
    // FORMATS_FORBIDDEN) and depends on no workspace crate.
    ("openhuman-formats", &[]),
    // The memory engine, synchronous and offline; never config, MCP, providers or the daemon.
    ("openhuman-memory", &["openhuman-common", "openhuman-formats", "openhuman-schema"]),
    // The transformer embedding tier (candle); implements memory's `Embedder`, never config,
    // providers, MCP or the daemon.
    ("openhuman-transformer", &["openhuman-common", "openhuman-memory"]),
    // PostgreSQL as the shared store; implements memory's `SharedStore`, never config, providers,
    // MCP or the daemon.
    ("openhuman-postgres", &["openhuman-common", "openhuman-memory"]),
    // LLM and web-search providers; never MCP or the daemon.
    ("openhuman-providers", &["openhuman-common", "openhuman-config", "openhuman-memory"]),
    // The MCP protocol crate; never config, memory, providers or the daemon.
    ("openhuman-mcp", &["openhuman-common", "openhuman-schema"]),
    // The daemon ties the libraries together; no workspace crate may depend on it.
    ("openhumand-mcp", LIBRARIES),
    // The stdio shim MCP clients launch; stays small: never the daemon or its libraries.
    ("openhuman-mcp-shim", &["openhuman-common"]),
    // Integration tests drive the built binaries; never link a workspace crate.
    ("openhuman-tests", &[]),
];

/// External crates `openhuman-memory` must not use outside `[dev-dependencies]`: the engine is
/// synchronous and offline, and model runtimes live in `openhuman-transformer`.
const MEMORY_FORBIDDEN: &[&str] =
    &["tokio", "reqwest", "axum", "hyper", "candle-core", "candle-nn", "candle-transformers", "tokenizers"];

/// Crates `openhuman-formats` must not use outside `[dev-dependencies]`, workspace crates or
/// not: it turns bytes into documents, and storing them is the memory engine's business (as
/// ripgrep keeps its `ignore` and `searcher` crates apart).
const FORMATS_FORBIDDEN: &[&str] = &["rusqlite", "tantivy", "openhuman-memory", "openhuman-postgres", "tokio"];

const TABLE: &str = "tests/tests/tidy/layering.rs";

fn allowed(name: &str) -> Option<&'static [&'static str]> {
    ALLOWED.iter().find(|(crate_name, _)| *crate_name == name).map(|(_, deps)| *deps)
}

/// The crate's layer, or `None` when it is not in the table or the table has a cycle.
fn layer(name: &str) -> Option<usize> {
    fn at(name: &str, depth: usize) -> Option<usize> {
        if depth > ALLOWED.len() {
            return None;
        }
        allowed(name)?.iter().try_fold(0, |layer, dep| Some(layer.max(at(dep, depth + 1)? + 1)))
    }
    at(name, 0)
}

/// Problems with [`ALLOWED`] itself: duplicates, unknown or self dependencies, cycles.
pub fn table_problems() -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, deps) in ALLOWED {
        if !seen.insert(*name) {
            problems.push(format!("{TABLE}: `{name}` appears twice in ALLOWED; merge the entries"));
        }
        for dep in *deps {
            if dep == name {
                problems.push(format!("{TABLE}: `{name}` is allowed to depend on itself; drop it from its list"));
            } else if allowed(dep).is_none() {
                problems.push(format!("{TABLE}: `{name}` may depend on `{dep}`, which has no entry; add one"));
            }
        }
        if layer(name).is_none() {
            problems.push(format!("{TABLE}: `{name}` is part of a dependency cycle in ALLOWED; break it"));
        }
    }
    problems
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Normal,
    Build,
    Dev,
}

/// One dependency of a member, resolved to its package name.
#[derive(Debug)]
struct Dep {
    package: String,
    kind: Kind,
    /// The manifest section it is declared in, for messages: `[target.'cfg(unix)'.dependencies]`.
    section: String,
    internal: bool,
}

struct Member {
    /// `Cargo.toml` relative to the root, for messages.
    manifest: String,
    name: String,
    deps: Vec<Dep>,
}

/// The workspace's members with their dependencies, and the problems met reading them.
fn load(root: &Path) -> (Vec<Member>, Vec<String>) {
    let root_manifest = root.join("Cargo.toml");
    let text = fs::read_to_string(&root_manifest)
        .unwrap_or_else(|e| panic!("tidy: cannot read {}: {e}", root_manifest.display()));
    let manifest: Table =
        text.parse().unwrap_or_else(|e| panic!("tidy: Cargo.toml (workspace root) is not valid TOML: {e}"));
    let workspace = manifest.get("workspace").and_then(Value::as_table);
    let ws_deps = workspace.and_then(|w| w.get("dependencies")).and_then(Value::as_table);
    let mut members = Vec::new();
    let mut problems = Vec::new();
    for dir in member_dirs(root, &manifest) {
        let path = dir.join("Cargo.toml");
        let manifest = rel(root, &path);
        let parsed = fs::read_to_string(&path)
            .map_err(|e| format!("cannot be read ({e})"))
            .and_then(|text| text.parse::<Table>().map_err(|e| format!("is not valid TOML ({e})")));
        let table = match parsed {
            Ok(table) => table,
            Err(why) => {
                problems.push(format!("{manifest}: a workspace member's manifest {why}; fix it"));
                continue;
            }
        };
        let Some(name) = table.get("package").and_then(|p| p.get("name")).and_then(Value::as_str) else {
            problems.push(format!("{manifest}: no [package] name; every workspace member needs one"));
            continue;
        };
        members.push(Member { manifest, name: name.to_owned(), deps: dependencies(&table, ws_deps) });
    }
    (members, problems)
}

/// The member directories: `[workspace] members` with globs expanded, minus `exclude`, plus the
/// root itself when it is also a package.
fn member_dirs(root: &Path, manifest: &Table) -> Vec<PathBuf> {
    let workspace = manifest.get("workspace").and_then(Value::as_table);
    let list = |key: &str| -> Vec<String> {
        let array = workspace.and_then(|w| w.get(key)).and_then(Value::as_array);
        array.into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
    };
    let excluded: BTreeSet<PathBuf> = list("exclude").iter().map(|e| root.join(e.trim_end_matches('/'))).collect();
    let mut dirs = BTreeSet::new();
    if manifest.contains_key("package") {
        dirs.insert(root.to_path_buf());
    }
    for pattern in list("members") {
        dirs.extend(expand(root, &pattern).into_iter().filter(|dir| !excluded.contains(dir)));
    }
    dirs.into_iter().collect()
}

/// Expands a member pattern relative to `root`: `*` and `?` match within one path component.
/// Glob matches without a `Cargo.toml` are dropped (as Cargo does); literal paths are kept, so a
/// missing manifest is reported.
fn expand(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let is_glob = |part: &str| part.contains(['*', '?']);
    let mut paths = vec![root.to_path_buf()];
    for part in pattern.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if is_glob(part) {
            paths = paths
                .iter()
                .flat_map(|dir| fs::read_dir(dir).into_iter().flatten().flatten())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter(|e| wildcard(part.as_bytes(), e.file_name().to_string_lossy().as_bytes()))
                .map(|e| e.path())
                .collect();
        } else {
            paths.iter_mut().for_each(|path| path.push(part));
        }
    }
    if is_glob(pattern) {
        paths.retain(|dir| dir.join("Cargo.toml").is_file());
    }
    paths
}

/// Shell-style match of one path component: `*` is any run of bytes, `?` any one byte.
fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => wildcard(&pattern[1..], name) || (!name.is_empty() && wildcard(pattern, &name[1..])),
        (Some(b'?'), Some(_)) => wildcard(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => wildcard(&pattern[1..], &name[1..]),
        _ => false,
    }
}

/// Every dependency the manifest declares, plain and per target.
fn dependencies(manifest: &Table, ws_deps: Option<&Table>) -> Vec<Dep> {
    const SECTIONS: [(&str, Kind); 5] = [
        ("dependencies", Kind::Normal),
        ("build-dependencies", Kind::Build),
        ("build_dependencies", Kind::Build),
        ("dev-dependencies", Kind::Dev),
        ("dev_dependencies", Kind::Dev),
    ];
    let mut tables = vec![(String::new(), manifest)];
    if let Some(targets) = manifest.get("target").and_then(Value::as_table) {
        for (cfg, table) in targets {
            if let Some(table) = table.as_table() {
                tables.push((format!("target.'{cfg}'."), table));
            }
        }
    }
    let mut deps = Vec::new();
    for (prefix, table) in tables {
        for (key, kind) in SECTIONS {
            for (name, spec) in table.get(key).and_then(Value::as_table).into_iter().flatten() {
                deps.push(resolve(name, spec, kind, format!("[{prefix}{key}]"), ws_deps));
            }
        }
    }
    deps
}

/// Resolves one dependency entry to its package name and whether it is a workspace crate.
fn resolve(key: &str, spec: &Value, kind: Kind, section: String, ws_deps: Option<&Table>) -> Dep {
    let own = spec.as_table();
    let inherits = own.and_then(|t| t.get("workspace")).and_then(Value::as_bool) == Some(true);
    // Inherited entries take `path` and `package` from the root's [workspace.dependencies].
    let source = if inherits { ws_deps.and_then(|w| w.get(key)).and_then(Value::as_table) } else { own };
    fn package_of(table: Option<&Table>) -> Option<&str> {
        table.and_then(|t| t.get("package")).and_then(Value::as_str)
    }
    let package = package_of(source).or_else(|| package_of(own)).unwrap_or(key).to_owned();
    let internal = source.is_some_and(|t| t.contains_key("path"));
    Dep { package, kind, section, internal }
}

/// Every internal dependency the table does not allow, and every member missing from the table.
pub fn check(root: &Path) -> Vec<String> {
    let (members, mut problems) = load(root);
    for member in &members {
        let (manifest, name) = (&member.manifest, member.name.as_str());
        let Some(allowed) = allowed(name) else {
            problems.push(format!(
                "{manifest}: workspace member `{name}` is not in the layering table; add it to ALLOWED in \
                 {TABLE} with the workspace crates it may depend on"
            ));
            continue;
        };
        for dep in member.deps.iter().filter(|d| d.internal) {
            let target = dep.package.as_str();
            if allowed.contains(&target) {
                continue;
            }
            let (own_layer, dep_layer) = (layer(name), layer(target));
            let dev_ok = dep.kind == Kind::Dev
                && target != name
                && matches!((dep_layer, own_layer), (Some(d), Some(o)) if d <= o);
            if dev_ok {
                continue;
            }
            let may = if allowed.is_empty() {
                "no workspace crate".to_owned()
            } else {
                allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            };
            let dev_note = match (dep.kind, own_layer, dep_layer) {
                (Kind::Dev, Some(o), Some(d)) => {
                    format!(" (dev-dependencies may also use crates at layer {o} or below; `{target}` is at {d})")
                }
                (_, _, None) => format!(" (`{target}` is not in the layering table at all)"),
                _ => String::new(),
            };
            problems.push(format!(
                "{manifest}: `{name}` depends on `{target}` in {}, but may depend only on {may}{dev_note}. \
                 Move what it needs down into an allowed crate (or invert the dependency); if the design \
                 really changed, update ALLOWED in {TABLE}",
                dep.section
            ));
        }
    }
    problems
}

/// Each member's package name and the workspace crates it depends on (any section), sorted: lets
/// a test confirm the checks see the real workspace rather than passing on an empty one.
pub fn internal_edges(root: &Path) -> Vec<(String, Vec<String>)> {
    let (members, _) = load(root);
    let mut edges: Vec<(String, Vec<String>)> = members
        .into_iter()
        .map(|m| {
            let deps: BTreeSet<String> = m.deps.into_iter().filter(|d| d.internal).map(|d| d.package).collect();
            (m.name, deps.into_iter().collect())
        })
        .collect();
    edges.sort();
    edges
}

/// Members named in `crates` that depend (outside `[dev-dependencies]`) on an external crate in
/// `forbidden`; `why` ends each message. Passes for names that are not members yet.
fn forbidden_externals(root: &Path, crates: &[&str], forbidden: &[&str], why: &str) -> Vec<String> {
    forbidden_deps(root, crates, forbidden, false, why)
}

/// [`forbidden_externals`], counting workspace crates too when `internal` is set.
fn forbidden_deps(root: &Path, crates: &[&str], forbidden: &[&str], internal: bool, why: &str) -> Vec<String> {
    let (members, _) = load(root);
    let mut problems = Vec::new();
    for member in members.iter().filter(|m| crates.contains(&m.name.as_str())) {
        for dep in &member.deps {
            let counted = internal || !dep.internal;
            if dep.kind != Kind::Dev && counted && forbidden.contains(&dep.package.as_str()) {
                problems.push(format!(
                    "{}: `{}` depends on `{}` in {}; {why}",
                    member.manifest, member.name, dep.package, dep.section
                ));
            }
        }
    }
    problems
}

/// External dependencies of `openhuman-memory` that are async or networked ([`MEMORY_FORBIDDEN`]).
pub fn check_memory_externals(root: &Path) -> Vec<String> {
    forbidden_externals(
        root,
        &["openhuman-memory"],
        MEMORY_FORBIDDEN,
        "the memory engine is synchronous and offline, so keep async runtimes and network clients in the \
         daemon or providers and model runtimes in openhuman-transformer, and drop the dependency",
    )
}

/// Dependencies of `openhuman-formats` on storage crates ([`FORMATS_FORBIDDEN`]).
pub fn check_formats_storage(root: &Path) -> Vec<String> {
    forbidden_deps(
        root,
        &["openhuman-formats"],
        FORMATS_FORBIDDEN,
        true,
        "the format parsers turn bytes into documents and know nothing of storage, so keep databases, \
         indexes and runtimes in openhuman-memory (or the daemon) and drop the dependency",
    )
}

/// Library crates: typed errors only (`thiserror`); `anyhow` belongs to the daemon's command level.
const LIBRARIES: &[&str] = &[
    "openhuman-common",
    "openhuman-schema",
    "openhuman-config",
    "openhuman-formats",
    "openhuman-memory",
    "openhuman-providers",
    "openhuman-transformer",
    "openhuman-postgres",
    "openhuman-mcp",
];

/// Library crates that depend on `anyhow`.
pub fn check_library_errors(root: &Path) -> Vec<String> {
    forbidden_externals(
        root,
        LIBRARIES,
        &["anyhow"],
        "library crates return typed errors (thiserror) and only the daemon uses anyhow, so give the \
         crate an error enum instead",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_tree;

    /// A fake workspace: five planted layering violations, two in memory's externals, and
    /// several legal edges (workspace renames, same-layer dev-dependencies, excluded members).
    fn fake_workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        write_tree(
            dir.path(),
            &[
                (
                    "Cargo.toml",
                    r#"
[workspace]
members = ["crates/*", "tests"]
exclude = ["crates/ignored"]

[workspace.dependencies]
openhuman-common = { path = "crates/common" }
memory = { path = "crates/memory", package = "openhuman-memory" }
tokio = { version = "1" }
serde = "1"
"#,
                ),
                (
                    "crates/common/Cargo.toml",
                    r#"
[package]
name = "openhuman-common"
[dependencies]
serde.workspace = true
openhuman-memory = { path = "../memory" }
"#,
                ),
                (
                    "crates/memory/Cargo.toml",
                    r#"
[package]
name = "openhuman-memory"
[dependencies]
openhuman-common.workspace = true
tokio.workspace = true
[target.'cfg(unix)'.dependencies]
hyper = "1"
[dev-dependencies]
openhuman-config = { path = "../config" }
tokio = "1"
reqwest = "0.13"
"#,
                ),
                (
                    "crates/config/Cargo.toml",
                    r#"
[package]
name = "openhuman-config"
[dependencies]
openhuman-common = { workspace = true }
[dev-dependencies]
openhuman-providers = { path = "../providers" }
"#,
                ),
                (
                    "crates/providers/Cargo.toml",
                    r#"
[package]
name = "openhuman-providers"
[dependencies]
memory.workspace = true
openhuman-config = { path = "../config" }
"#,
                ),
                (
                    "crates/mcp/Cargo.toml",
                    r#"
[package]
name = "openhuman-mcp"
[target.'cfg(unix)'.build-dependencies]
cfg = { path = "../config", package = "openhuman-config" }
"#,
                ),
                ("crates/extra/Cargo.toml", "[package]\nname = \"openhuman-extra\"\n"),
                ("crates/ignored/Cargo.toml", "[package]\nname = \"openhuman-ignored\"\n"),
                ("crates/not-a-crate/README.md", "no manifest here\n"),
                (
                    "tests/Cargo.toml",
                    r#"
[package]
name = "openhuman-tests"
[build-dependencies]
memory.workspace = true
[dev-dependencies]
openhuman-common.workspace = true
"#,
                ),
            ],
        );
        dir
    }

    fn assert_reports(problems: &[String], expected: &[&str]) {
        for want in expected {
            assert!(problems.iter().any(|p| p.contains(want)), "no problem mentions {want:?}; got:\n{problems:#?}");
        }
        assert_eq!(problems.len(), expected.len(), "unexpected problems:\n{problems:#?}");
    }

    #[test]
    fn reports_planted_layering_violations() {
        let dir = fake_workspace();
        assert_reports(
            &check(dir.path()),
            &[
                "crates/common/Cargo.toml: `openhuman-common` depends on `openhuman-memory` in [dependencies]",
                "crates/config/Cargo.toml: `openhuman-config` depends on `openhuman-providers` in [dev-dependencies]",
                "crates/mcp/Cargo.toml: `openhuman-mcp` depends on `openhuman-config` in \
                 [target.'cfg(unix)'.build-dependencies]",
                "crates/extra/Cargo.toml: workspace member `openhuman-extra` is not in the layering table",
                "tests/Cargo.toml: `openhuman-tests` depends on `openhuman-memory` in [build-dependencies]",
            ],
        );
    }

    #[test]
    fn reports_async_and_network_deps_of_the_memory_engine() {
        let dir = fake_workspace();
        assert_reports(
            &check_memory_externals(dir.path()),
            &[
                "crates/memory/Cargo.toml: `openhuman-memory` depends on `tokio` in [dependencies]",
                "crates/memory/Cargo.toml: `openhuman-memory` depends on `hyper` in [target.'cfg(unix)'.dependencies]",
            ],
        );
    }

    #[test]
    fn reports_storage_deps_of_the_format_parsers() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_tree(
            dir.path(),
            &[
                (
                    "Cargo.toml",
                    r#"
[workspace]
members = ["crates/*"]

[workspace.dependencies]
store = { path = "crates/memory", package = "openhuman-memory" }
rusqlite = "0.43"
"#,
                ),
                ("crates/memory/Cargo.toml", "[package]\nname = \"openhuman-memory\"\n"),
                (
                    "crates/formats/Cargo.toml",
                    r#"
[package]
name = "openhuman-formats"
[dependencies]
rusqlite.workspace = true
store.workspace = true
serde = "1"
[target.'cfg(unix)'.dependencies]
tantivy = "0.27"
[dev-dependencies]
tokio = "1"
"#,
                ),
            ],
        );
        assert_reports(
            &check_formats_storage(dir.path()),
            &[
                "crates/formats/Cargo.toml: `openhuman-formats` depends on `rusqlite` in [dependencies]",
                "crates/formats/Cargo.toml: `openhuman-formats` depends on `openhuman-memory` in [dependencies]",
                "crates/formats/Cargo.toml: `openhuman-formats` depends on `tantivy` in [target.'cfg(unix)'.dependencies]",
            ],
        );
    }

    #[test]
    fn layers_follow_the_table() {
        assert_eq!(layer("openhuman-common"), Some(0));
        assert_eq!(layer("openhuman-schema"), Some(1));
        assert_eq!(layer("openhuman-memory"), Some(2));
        assert_eq!(layer("openhuman-providers"), Some(3));
        assert_eq!(layer("openhumand-mcp"), Some(4));
        assert_eq!(layer("openhuman-unknown"), None);
        assert!(wildcard(b"*", b"memory") && wildcard(b"open*-m?p", b"openhuman-mcp") && !wildcard(b"a*", b"ba"));
    }
}
