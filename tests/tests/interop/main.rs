//! The suites that drive openhuman-mcp with the official MCP clients, run as part of
//! `cargo test`: the Python `mcp` SDKs and the TypeScript SDK over stdio (through the shim and
//! `openhumand-mcp stdio`), the same SDKs and `mcp-remote` over Streamable HTTP, and
//! `@modelcontextprotocol/conformance`. Each suite is a script under `tests/interop/` or
//! `tests/conformance/` that installs its pinned clients under `target/` and prints one line per
//! check; this test runs them one after another (they share those installs) and fails if any
//! script reports a failure. `OPENHUMAN_SKIP_INTEROP=1` skips them, for quick local runs.
#![allow(clippy::print_stderr, reason = "the suites report through the test output")]

use std::path::Path;
use std::process::Command;

#[test]
fn official_clients_and_the_conformance_suite_pass() {
    if std::env::var_os("OPENHUMAN_SKIP_INTEROP").is_some() {
        eprintln!("OPENHUMAN_SKIP_INTEROP is set: the official-client suites were not run");
        return;
    }
    openhuman_tests::build_binaries();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let mut failed = Vec::new();
    for script in ["tests/interop/run.sh", "tests/interop/run-http.sh", "tests/conformance/run.sh"] {
        eprintln!("== {script}");
        // The scripts' lines go straight to the test's output, so CI logs show every check.
        // The scripts test the binaries just built, wherever the target directory is.
        let mut cmd = Command::new("bash");
        cmd.arg(script).current_dir(root);
        if std::env::var_os("OPENHUMAN_BIN_DIR").is_none() {
            cmd.env("OPENHUMAN_BIN_DIR", openhuman_tests::bin_dir());
        }
        let status = cmd.status().expect("run bash");
        if !status.success() {
            failed.push(format!("{script} ({status})"));
        }
    }
    assert!(failed.is_empty(), "failing suites: {}", failed.join(", "));
}
