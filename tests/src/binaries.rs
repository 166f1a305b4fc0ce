//! The binaries under test: where they are (`OPENHUMAN_BIN_DIR`, else the workspace's debug
//! target directory) and bringing them up to date once per test process.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Directory holding the binaries under test (`OPENHUMAN_BIN_DIR`, else `target/debug`).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPENHUMAN_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    target.join("debug")
}

pub fn bin(name: &str) -> PathBuf {
    build_binaries();
    let p = bin_dir().join(name);
    assert!(p.exists(), "{} is missing: run `cargo build --workspace` first (or set OPENHUMAN_BIN_DIR)", p.display());
    p
}

/// Brings the debug binaries up to date, once per test process. `cargo test` builds the test
/// harnesses but not the other packages' binaries, and a stale daemon would test old code. Skipped
/// when `OPENHUMAN_BIN_DIR` points at binaries built elsewhere.
pub fn build_binaries() {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if std::env::var_os("OPENHUMAN_BIN_DIR").is_some() {
        return;
    }
    BUILT.get_or_init(|| {
        // Cargo sets CARGO for the processes it runs; the lock on the target directory is free
        // once the test binaries run.
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let status = Command::new(cargo)
            .args(["build", "--workspace", "--bins", "--locked", "--quiet"])
            .current_dir(root)
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build --workspace --bins failed");
    });
}

pub fn daemon_bin() -> PathBuf {
    bin("openhumand-mcp")
}

pub fn shim_bin() -> PathBuf {
    bin("openhuman-mcp-shim")
}
