//! Floor: the daemon's bottom layer stays a leaf, and two of its single doors stay single.
//!
//! - The floor modules ([`FLOOR`]: the state and what it holds, the blocking pool) name no module
//!   above them ([`ABOVE`]) through `crate::` paths; the layers above hand in what the floor needs.
//! - `spawn_blocking` is written only in `daemon/src/pool.rs`, the bounded pool.
//! - Whether a daemon serves the home is asked only in `daemon/src/via.rs`: no one-shot command
//!   under `daemon/src/cmd/` probes the socket itself, and no file but `via.rs` (and `client.rs`,
//!   which defines it) calls `daemon_up`.
//!
//! The checks read code with comments taken out, so a sentence naming a rule does not break it.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::{rel, rust_files};

/// The daemon's floor, relative to the root: files or folders.
const FLOOR: &[&str] = &[
    "daemon/src/state.rs",
    "daemon/src/pool.rs",
    "daemon/src/policy.rs",
    "daemon/src/audit_writer.rs",
    "daemon/src/agents",
];

/// Modules of the daemon the floor must not name.
const ABOVE: &[&str] = &[
    "app",
    "clients",
    "cmd",
    "completion",
    "live_resources",
    "prompts",
    "resources",
    "rpc",
    "server",
    "status",
    "tool_registry",
    "tools",
    "ui",
    "via",
    "watch",
];

/// The one file that may call `spawn_blocking`.
const POOL: &str = "daemon/src/pool.rs";

/// The files that may ask whether a daemon answers: the one that decides and the one that
/// defines the probe.
const VIA: &str = "daemon/src/via.rs";
const CLIENT: &str = "daemon/src/client.rs";

/// What probing the socket looks like in a command: the probe itself, or a connection of its own.
const PROBES: &[&str] = &["daemon_up", "socket_name", "local_socket", "Stream::connect"];

/// `text` without `//` comments (doc comments included) and with string literals emptied (raw
/// ones too), so only code is searched. Line breaks are kept.
fn code(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Skips to just past `close`, keeping the line breaks on the way.
    let skip_to = |out: &mut String, from: usize, close: &[char]| -> usize {
        let mut k = from;
        while k < chars.len() {
            if chars[k..].starts_with(close) {
                return k + close.len();
            }
            if chars[k] == '\\' && close == ['"'] {
                k += 1;
            } else if chars[k] == '\n' {
                out.push('\n');
            }
            k += 1;
        }
        k
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            i = skip_to(&mut out, i, &['\n']);
            out.push('\n');
        } else if c == '\'' && next == Some('"') && chars.get(i + 2) == Some(&'\'') {
            // The character literal '"' opens no string.
            out.push_str("' '");
            i += 3;
        } else if c == 'r'
            && matches!(next, Some('#' | '"'))
            && !chars.get(i.wrapping_sub(1)).is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            let hashes = chars[i + 1..].iter().take_while(|h| **h == '#').count();
            if chars.get(i + 1 + hashes) == Some(&'"') {
                let mut close = vec!['"'];
                close.extend(std::iter::repeat_n('#', hashes));
                out.push_str("\"\"");
                i = skip_to(&mut out, i + 2 + hashes, &close);
            } else {
                out.push(c);
                i += 1;
            }
        } else if c == '"' {
            out.push_str("\"\"");
            i = skip_to(&mut out, i + 1, &['"']);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The first segments of every path `crate::` names in `code`: `crate::a::b` gives `a`, and
/// `crate::{a, b::c, d::{e}}` gives `a`, `b` and `d`.
fn crate_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    for (at, _) in code.match_indices("crate::") {
        // `$crate::` and `openhuman_crate::` are other crates' paths.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            found.insert(ident(rest));
            continue;
        };
        let (mut depth, mut item_start) = (0usize, true);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => item_start = true,
                c if item_start && depth == 0 && !c.is_whitespace() => {
                    found.insert(ident(&group[i..]));
                    item_start = false;
                }
                _ => {}
            }
        }
    }
    found.remove("");
    found
}

/// The daemon's Rust files under `dir` (relative to the root), each with its code.
fn files(root: &Path, dir: &str) -> Vec<(String, String)> {
    let path = root.join(dir);
    let paths = if path.is_file() { vec![path] } else { rust_files(&path, &BTreeSet::new()) };
    paths.into_iter().map(|p| (rel(root, &p), fs::read_to_string(&p).map(|t| code(&t)).unwrap_or_default())).collect()
}

/// Every floor file that names a module above the floor, and every floor entry that is gone.
pub fn check_floor(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for entry in FLOOR {
        let found = files(root, entry);
        if found.is_empty() {
            problems.push(format!(
                "{entry}: a floor module of the daemon is missing; if it moved, update FLOOR in tests/tests/tidy/floor.rs"
            ));
        }
        for (file, code) in found {
            for module in crate_modules(&code).iter().filter(|m| ABOVE.contains(&m.as_str())) {
                problems.push(format!(
                    "{file}: the daemon's floor names `crate::{module}`, a layer above it; have that layer hand in \
                     what the floor needs (a value, a closure or a part given when the state is built, see \
                     `server::state`) or move what both need down into the floor"
                ));
            }
        }
    }
    problems
}

/// Every daemon file but the pool that calls `spawn_blocking`, and a pool that no longer does.
pub fn check_blocking_pool(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut pool_spawns = false;
    for (file, code) in files(root, "daemon/src") {
        if !code.contains("spawn_blocking") {
            continue;
        }
        if file == POOL {
            pool_spawns = true;
        } else {
            problems.push(format!(
                "{file}: calls `spawn_blocking` itself; run the work through `crate::pool::run`, the one bounded \
                 way onto the blocking pool"
            ));
        }
    }
    if !pool_spawns {
        problems
            .push(format!("{POOL}: no longer calls `spawn_blocking`; if the pool moved, update POOL in this check"));
    }
    problems
}

/// Every file that asks whether a daemon serves the home outside `via.rs`: a command probing
/// the socket, or any file calling `daemon_up`.
pub fn check_via(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut via_decides = false;
    for (file, code) in files(root, "daemon/src") {
        if file == VIA {
            via_decides = code.contains("daemon_up");
            continue;
        }
        let in_cmd = file.starts_with("daemon/src/cmd/");
        for probe in PROBES.iter().filter(|p| code.contains(*p)) {
            if in_cmd || (*probe == "daemon_up" && file != CLIENT) {
                problems.push(format!(
                    "{file}: uses `{probe}`, deciding for itself whether a daemon serves the home; go through \
                     `crate::via` (`Via::open`, `Via::running`, `via::stopped`), which alone decides"
                ));
            }
        }
    }
    if !via_decides {
        problems.push(format!("{VIA}: no longer asks `daemon_up`; if the decision moved, update VIA in this check"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_tree;

    /// A fake daemon that keeps every rule, plus `extra` files.
    fn fake_daemon(extra: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut files = vec![
            ("daemon/src/state.rs", "//! State.\n// Not crate::tools: a comment.\nuse crate::policy::ActLimiter;\n"),
            ("daemon/src/pool.rs", "//! Pool.\nfn run() { tokio::task::spawn_blocking(|| ()); }\n"),
            ("daemon/src/policy.rs", "//! Policy.\n"),
            ("daemon/src/audit_writer.rs", "//! Audit.\nuse crate::{pool, state::Upper};\n"),
            ("daemon/src/agents/mod.rs", "//! Agents.\nconst WHY: &str = \"crate::ui\";\n"),
            ("daemon/src/client.rs", "//! Client.\npub async fn daemon_up() -> bool { true }\n"),
            ("daemon/src/via.rs", "//! Via.\nfn serving() -> bool { client::daemon_up() }\n"),
            ("daemon/src/cmd/ingest.rs", "//! Ingest.\nuse crate::via::Via;\n// daemon_up is via's.\n"),
        ];
        files.extend_from_slice(extra);
        write_tree(dir.path(), &files);
        dir
    }

    #[test]
    fn a_clean_daemon_passes_every_rule() {
        let dir = fake_daemon(&[]);
        assert_eq!(check_floor(dir.path()), Vec::<String>::new());
        assert_eq!(check_blocking_pool(dir.path()), Vec::<String>::new());
        assert_eq!(check_via(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn reports_a_floor_module_naming_a_layer_above() {
        let planted = "//! State.\nuse crate::{agents::Registry, watch::{Watch}};\nfn f() { crate::tools::list(); }\n";
        let problems = check_floor(fake_daemon(&[("daemon/src/state.rs", planted)]).path());
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].contains("daemon/src/state.rs: the daemon's floor names `crate::tools`"), "{problems:#?}");
        assert!(problems[1].contains("names `crate::watch`"), "{problems:#?}");
    }

    #[test]
    fn reports_spawn_blocking_outside_the_pool() {
        let planted = "//! Write.\nasync fn w() { tokio::task::spawn_blocking(|| ()).await; }\n";
        let problems = check_blocking_pool(fake_daemon(&[("daemon/src/tools/write.rs", planted)]).path());
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].starts_with("daemon/src/tools/write.rs: calls `spawn_blocking`"), "{problems:#?}");
    }

    #[test]
    fn reports_a_command_probing_the_socket_itself() {
        let planted = "//! Reindex.\nfn up() -> bool { rt.block_on(client::daemon_up(&paths.socket)) }\n";
        let problems = check_via(fake_daemon(&[("daemon/src/cmd/reindex.rs", planted)]).path());
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].starts_with("daemon/src/cmd/reindex.rs: uses `daemon_up`"), "{problems:#?}");
    }

    #[test]
    fn code_drops_comments_and_strings_of_every_kind() {
        let text = "a // crate::ui\nb \"crate::\\\"ui\" c r#\"x \" crate::ui\"# d '\"' crate::e\n";
        assert_eq!(code(text), "a \nb \"\" c \"\" d ' ' crate::e\n");
    }

    #[test]
    fn crate_paths_are_read_through_groups_and_past_other_crates() {
        let found =
            crate_modules("use crate::{a, b::c, d::{e, f}};\nlet x = $crate::g; openhuman_crate::h(); crate::i::j();");
        assert_eq!(found.into_iter().collect::<Vec<_>>(), ["a", "b", "d", "i"]);
    }
}
