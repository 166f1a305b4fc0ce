//! `register <client>`: adds the shim to an MCP client's config file. The file is merged, not
//! replaced (other servers and settings stay), a timestamped private backup of the old file is
//! kept, the file keeps its mode, a symlinked file is written through to its target, and
//! `--print` shows the entry instead of writing. Files that are not plain JSON (Zed allows
//! comments) are left alone with a message saying what to paste where.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value, json};

use crate::cli::ClientKind;

/// The server's name in the client's config.
pub const ENTRY: &str = "openhuman";

/// Where `client` keeps its MCP servers, and under which key.
pub fn target(client: ClientKind) -> Result<(PathBuf, &'static str)> {
    let base = directories::BaseDirs::new().context("cannot find your home directory")?;
    let home = base.home_dir();
    Ok(match client {
        ClientKind::ClaudeDesktop => {
            let dir = if cfg!(target_os = "macos") {
                home.join("Library/Application Support/Claude")
            } else {
                base.config_dir().join("Claude")
            };
            (dir.join("claude_desktop_config.json"), "mcpServers")
        }
        ClientKind::Cursor => (home.join(".cursor/mcp.json"), "mcpServers"),
        ClientKind::Windsurf => (home.join(".codeium/windsurf/mcp_config.json"), "mcpServers"),
        ClientKind::Zed => (home.join(".config/zed/settings.json"), "context_servers"),
        ClientKind::ClaudeCode => (home.join(".claude.json"), "mcpServers"),
    })
}

/// The entry for the shim next to this executable (plus `--home` when one is in use).
pub fn entry(client: ClientKind, home_dir: Option<&Path>) -> Result<Value> {
    let exe = std::env::current_exe().context("cannot find this executable's path")?;
    let shim = exe.with_file_name(format!("openhuman-mcp-shim{}", std::env::consts::EXE_SUFFIX));
    if !shim.exists() {
        bail!("{} not found next to {}; install both binaries in one directory", shim.display(), exe.display());
    }
    let mut args: Vec<String> = Vec::new();
    if let Some(h) = home_dir {
        args.push("--home".into());
        args.push(h.display().to_string());
    }
    let command = shim.display().to_string();
    Ok(match client {
        ClientKind::Zed => json!({ "command": command, "args": args, "env": {} }),
        ClientKind::ClaudeCode => json!({ "type": "stdio", "command": command, "args": args, "env": {} }),
        _ => json!({ "command": command, "args": args }),
    })
}

/// Merges the entry into the client's file. Returns a sentence saying what happened.
pub fn register(client: ClientKind, home_dir: Option<&Path>) -> Result<String> {
    let (file, key) = target(client)?;
    let entry = entry(client, home_dir)?;
    let mut root = match std::fs::read_to_string(&file) {
        Ok(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
            anyhow!(
                "{} is not plain JSON ({e}), so it was left untouched; add this under \"{key}\" yourself:\n\"{ENTRY}\": {}",
                file.display(),
                serde_json::to_string_pretty(&entry).unwrap_or_default()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let obj = root.as_object_mut().ok_or_else(|| anyhow!("{} does not hold a JSON object", file.display()))?;
    let servers = obj.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let servers = servers.as_object_mut().ok_or_else(|| anyhow!("\"{key}\" in {} is not an object", file.display()))?;
    if servers.get(ENTRY) == Some(&entry) {
        return Ok(format!("{} already has the {ENTRY} server; nothing to do", file.display()));
    }
    let replaced = servers.insert(ENTRY.to_string(), entry).is_some();
    // A symlinked config (dotfiles) is written through to its target; the link stays.
    let real = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
    let mode = std::fs::metadata(&real).ok().map(|m| m.permissions());
    let backup = if mode.is_some() {
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let b = file.with_extension(format!("json.bak-{stamp}"));
        std::fs::copy(&real, &b).with_context(|| format!("cannot back up {}", file.display()))?;
        // `copy` copies the mode too; a backup of a file that may hold keys is private.
        make_private(&b)?;
        Some(b)
    } else {
        None
    };
    if let Some(dir) = real.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Write beside, then rename: a crash never leaves a half-written client config. The new file
    // keeps the old one's mode (a 0600 file holding an API key stays 0600); a first one is
    // private by the umask.
    let tmp = real.with_extension("json.openhuman-tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&root)? + "\n")
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    if let Some(mode) = mode {
        std::fs::set_permissions(&tmp, mode).with_context(|| format!("cannot set the mode of {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, &real).with_context(|| format!("cannot replace {}", real.display()))?;
    Ok(format!(
        "{} the {ENTRY} server in {}{}; restart the client to pick it up",
        if replaced { "updated" } else { "added" },
        file.display(),
        backup.map(|b| format!(" (previous file kept as {})", b.display())).unwrap_or_default()
    ))
}

#[cfg(unix)]
fn make_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", path.display()))
}

#[cfg(not(unix))]
fn make_private(_path: &Path) -> Result<()> {
    Ok(())
}
