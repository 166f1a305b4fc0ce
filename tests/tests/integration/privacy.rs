//! Private by default: what the daemon creates is its user's alone (0600 files, 0700
//! directories, whatever umask it was started with), a home others could read is tightened at
//! start, and `register` keeps a client config's mode and symlink.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use openhuman_tests::{Daemon, Home, Peer, tool_ok};
use serde_json::{Value, json};

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Every path under `dir` (not `dir` itself), links not followed.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// The paths under `dir` that group or others may use.
fn readable_by_others(dir: &Path) -> Vec<String> {
    walk(dir).into_iter().filter(|p| mode(p) & 0o077 != 0).map(|p| format!("{} {:o}", p.display(), mode(&p))).collect()
}

/// A home in which a daemon stored one document and stopped.
fn home_with_a_store() -> Home {
    let home = Home::new();
    let d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    p.initialize("privacy-test");
    let r = p.tool("memory.store", json!({"title": "Private", "content": "Bank details go here"}));
    tool_ok(&r);
    d.stop().unwrap();
    assert!(home.path().join("data/memory.db").exists());
    home
}

#[test]
fn everything_the_daemon_creates_is_private() {
    let home = home_with_a_store();
    let loose = readable_by_others(home.path());
    assert!(loose.is_empty(), "readable by others: {loose:#?}");
}

#[test]
fn a_home_others_can_read_is_tightened_at_start() {
    let home = home_with_a_store();
    for p in walk(home.path()) {
        let loose = if p.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(loose)).unwrap();
    }
    let d = Daemon::start(&home);
    assert!(d.startup_log().iter().any(|l| l.contains("tightened permissions")), "{:#?}", d.startup_log());
    let loose = readable_by_others(home.path());
    assert!(loose.is_empty(), "readable by others after start: {loose:#?}");
}

#[test]
fn register_keeps_the_config_mode_and_writes_through_a_symlink() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        home.daemon_cmd().env("HOME", user.path()).env_remove("XDG_CONFIG_HOME").args(args).output().unwrap()
    };
    // A private config holding a key stays private, and so is its backup.
    let claude = user.path().join(".claude.json");
    std::fs::write(&claude, r#"{"primaryApiKey": "not-for-others"}"#).unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run(&["register", "claude-code"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&claude), 0o600);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    assert_eq!(v["primaryApiKey"], "not-for-others");
    assert!(v["mcpServers"]["openhuman"]["command"].is_string(), "{v}");
    let backups: Vec<PathBuf> =
        walk(user.path()).into_iter().filter(|p| p.file_name().unwrap().to_string_lossy().contains(".bak-")).collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(mode(&backups[0]), 0o600, "the backup is private");
    // A config kept in a dotfiles folder and linked in: the link stays, its target is updated
    // and keeps its mode.
    let dotfiles = user.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("cursor-mcp.json");
    std::fs::write(&target, r#"{"mcpServers": {}}"#).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = user.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = run(&["register", "cursor"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert!(v["mcpServers"]["openhuman"]["command"].is_string(), "{v}");
    assert_eq!(mode(&target), 0o640);
}
