//! `register <client>`: adds the shim to an MCP client's config file (and, asked to restrict the
//! client, its `[clients.<client>]` table in ours, see `client_entry`; `--remove` takes both out). The file is merged, not
//! replaced (other servers and settings stay), the file keeps its mode, a symlinked file is
//! written through to its target, and `--print` shows the entry instead of writing. Files that
//! are not plain JSON (Zed allows comments) are left alone with a message saying what to paste
//! where. Codex's file is TOML: the entry's table is appended (or its old table swapped out) as
//! text, so comments stay. `detected` tells which clients this user has (their settings folder
//! exists).
//!
//! One private backup per file at most, `<file>.bak-openhuman`: the file as it was before our
//! entry went in (or, where an older version left no backup, before the entry was updated).
//! `unregister` takes our entry out again; when what is left is that backup (up
//! to the empty server list we added), the backup's bytes go back and the backup goes; a file
//! that `register` created (see `made`) and that now holds nothing goes whole; otherwise the
//! rest is written and the one backup is kept.
//!
//! Where each client keeps its servers, as its own documentation described it (November 2026):
//! - VS Code keeps user-level servers in `mcp.json` in its user folder (`Code/User` under the
//!   platform's config folder), under a `servers` object, each stdio entry with `"type": "stdio"`;
//!   GitHub Copilot's agent mode in VS Code reads that same file (code.visualstudio.com, MCP
//!   configuration reference).
//! - Codex CLI reads `[mcp_servers.<name>]` tables (`command`, `args`) from `config.toml` in its
//!   home, `$CODEX_HOME` when set and `~/.codex` otherwise (OpenAI's Codex config docs).
//! - Gemini CLI reads an `mcpServers` object from the user settings file `~/.gemini/settings.json`
//!   (geminicli.com, configuration and MCP server pages).
//! - Cline keeps `cline_mcp_settings.json`, with an `mcpServers` object, in the extension's
//!   storage: `globalStorage/saoudrizwan.claude-dev/settings/` in VS Code's user folder
//!   (docs.cline.bot, configuring MCP servers).
//! - Continue loads every JSON file in `~/.continue/mcpServers/` written in the Claude-style
//!   `mcpServers` shape alongside its `config.yaml` (docs.continue.dev, MCP deep dive); writing a
//!   file of our own there leaves the user's YAML untouched.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value, json};

use openhuman_common::Paths;

use super::client_entry;
use super::made::Made;
use crate::cli::{ClientKind, RegisterArgs};

/// The server's name in the client's config.
pub(crate) const ENTRY: &str = "openhuman";

/// How a client's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Toml,
}

/// `register`: adds the shim to the client's config, or with `print` shows the entry to add;
/// with a restriction asked for, the client's `[clients.<client>]` table too (see
/// `client_entry`); with `hooks`, our start-of-session hook (see `hooks`); with `remove`, takes
/// all of them out again. After registering a coding agent, reading its session logs is offered.
pub(crate) fn run(cli: &crate::cli::Cli, args: &RegisterArgs) -> Result<i32> {
    let client = args.client;
    let home = cli.home.as_deref();
    let paths = crate::resolve_paths(cli, None)?;
    if args.remove {
        let mut made = Made::load(&Paths::resolve(home)?);
        let hook = super::hooks::remove(client, &mut made)?;
        let said = unregister(client, &mut made)?;
        made.save()?;
        if let Some(hook) = hook {
            super::out(&hook);
        }
        let (file, _, _) = target(client)?;
        super::out(&said.unwrap_or_else(|| format!("{} holds no {ENTRY} server; nothing to remove", file.display())));
        if let Some(said) = client_entry::remove(&paths, client)? {
            super::out(&said);
            client_entry::tell_daemon(&paths)?;
        }
        return Ok(crate::EXIT_OK);
    }
    let shim = shim_beside_exe()?;
    let restricted = client_entry::wanted(args);
    if args.print {
        super::out(&print(client, &shim, home)?);
        if restricted {
            super::out(&client_entry::print(args)?);
        }
        return Ok(crate::EXIT_OK);
    }
    // The tool set first: a client is never registered with more than it was meant to get.
    if restricted {
        super::out(&client_entry::write(&paths, args)?);
    }
    super::out(&register(client, &shim, home)?);
    if restricted {
        client_entry::tell_daemon(&paths)?;
    }
    if args.hooks {
        let exe = std::env::current_exe().context("cannot find this executable's path")?;
        let mut made = Made::load(&Paths::resolve(home)?);
        super::out(&super::hooks::install(client, &exe, home, &mut made)?);
    }
    // After registering a coding agent, reading its session logs is offered (see `agent_logs`).
    if let Some(agent) = super::agent_logs::of_client(client) {
        super::agent_logs::offer(&paths, args.capture_sessions.then_some(&crate::cli::Capture::All), &[agent])?;
    }
    Ok(crate::EXIT_OK)
}

/// Where `client` keeps its MCP servers, under which key, and in which format.
pub(crate) fn target(client: ClientKind) -> Result<(PathBuf, &'static str, Format)> {
    let base = directories::BaseDirs::new().context("cannot find your home directory")?;
    let home = base.home_dir();
    let app_dir = |name: &str| {
        if cfg!(target_os = "macos") {
            home.join("Library/Application Support").join(name)
        } else {
            base.config_dir().join(name)
        }
    };
    let vscode_user = app_dir("Code").join("User");
    Ok(match client {
        ClientKind::ClaudeDesktop => (app_dir("Claude").join("claude_desktop_config.json"), "mcpServers", Format::Json),
        ClientKind::Cursor => (home.join(".cursor/mcp.json"), "mcpServers", Format::Json),
        ClientKind::Windsurf => (home.join(".codeium/windsurf/mcp_config.json"), "mcpServers", Format::Json),
        ClientKind::Zed => (home.join(".config/zed/settings.json"), "context_servers", Format::Json),
        ClientKind::ClaudeCode => (home.join(".claude.json"), "mcpServers", Format::Json),
        ClientKind::Vscode | ClientKind::Copilot => (vscode_user.join("mcp.json"), "servers", Format::Json),
        ClientKind::Codex => {
            let dir = std::env::var_os("CODEX_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".codex"));
            (dir.join("config.toml"), "mcp_servers", Format::Toml)
        }
        ClientKind::Gemini => (home.join(".gemini/settings.json"), "mcpServers", Format::Json),
        ClientKind::Cline => (
            vscode_user.join("globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
            "mcpServers",
            Format::Json,
        ),
        ClientKind::Continue => (home.join(".continue/mcpServers/openhuman.json"), "mcpServers", Format::Json),
    })
}

/// The shim next to this executable: the one `register` puts in clients' configs.
pub(crate) fn shim_beside_exe() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find this executable's path")?;
    let shim = exe.with_file_name(SHIM_FILE);
    if !shim.exists() {
        bail!("{} not found next to {}; install both binaries in one directory", shim.display(), exe.display());
    }
    Ok(shim)
}

/// The shim's file name on this platform.
pub(crate) const SHIM_FILE: &str = if cfg!(windows) { "openhuman-mcp-shim.exe" } else { "openhuman-mcp-shim" };

/// The entry that runs `shim` (plus `--home` when one is in use).
pub(crate) fn entry(client: ClientKind, shim: &Path, home_dir: Option<&Path>) -> Result<Value> {
    let mut args: Vec<String> = Vec::new();
    if let Some(h) = home_dir {
        args.push("--home".into());
        args.push(h.display().to_string());
    }
    let command = shim.display().to_string();
    Ok(match client {
        ClientKind::Zed => json!({ "command": command, "args": args, "env": {} }),
        ClientKind::ClaudeCode => json!({ "type": "stdio", "command": command, "args": args, "env": {} }),
        ClientKind::Vscode | ClientKind::Copilot => json!({ "type": "stdio", "command": command, "args": args }),
        _ => json!({ "command": command, "args": args }),
    })
}

/// What `--print` shows: where the entry goes, and the entry in the file's own format.
pub(crate) fn print(client: ClientKind, shim: &Path, home_dir: Option<&Path>) -> Result<String> {
    let (file, key, format) = target(client)?;
    let entry = entry(client, shim, home_dir)?;
    Ok(match format {
        Format::Json => format!(
            "# add under \"{key}\" in {}\n{}",
            file.display(),
            serde_json::to_string_pretty(&json!({ ENTRY: entry }))?
        ),
        Format::Toml => format!("# add to {}\n{}", file.display(), toml_block(key, &entry)?.trim_end()),
    })
}

/// Merges the entry into the client's file. Returns a sentence saying what happened.
pub(crate) fn register(client: ClientKind, shim: &Path, home_dir: Option<&Path>) -> Result<String> {
    let (file, key, format) = target(client)?;
    let entry = entry(client, shim, home_dir)?;
    let text = read_existing(&file)?;
    let merged = match format {
        Format::Json => merge_json(&file, key, &entry, text.as_deref().unwrap_or(""))?,
        Format::Toml => merge_toml(&file, key, &entry, text.as_deref().unwrap_or(""))?,
    };
    let Some((new_text, replaced)) = merged else {
        return Ok(format!("{} already has the {ENTRY} server; nothing to do", file.display()));
    };
    let mut made = Made::load(&openhuman_common::Paths::resolve(home_dir)?);
    // The file without our entry is what an uninstall gives back; an update keeps that backup
    // (or makes one, when an older version left none).
    let backup = match &text {
        Some(_) if !replaced || !backup_path(&file).exists() => Some(save_backup(&file)?),
        _ => None,
    };
    replace(&mut made, &file, &new_text)?;
    if text.is_none() {
        made.created_file(&file);
    }
    made.save()?;
    let done = match (&text, replaced) {
        (None, _) => format!("created {} with the {ENTRY} server", file.display()),
        (Some(_), true) => format!("updated the {ENTRY} server in {}", file.display()),
        (Some(_), false) => format!("added the {ENTRY} server in {}", file.display()),
    };
    let kept = backup.map(|b| format!(" (the file as it was is kept as {})", b.display())).unwrap_or_default();
    Ok(format!("{done}{kept}; restart the client to pick it up"))
}

/// The JSON file with the entry under `key`, and whether an older entry was replaced; `None`
/// when the file already has this very entry.
fn merge_json(file: &Path, key: &str, entry: &Value, text: &str) -> Result<Option<(String, bool)>> {
    let mut root = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str::<Value>(text).map_err(|e| {
            anyhow!(
                "{} is not plain JSON ({e}), so it was left untouched; add this under \"{key}\" yourself:\n\"{ENTRY}\": {}",
                file.display(),
                serde_json::to_string_pretty(entry).unwrap_or_default()
            )
        })?
    };
    let obj = root.as_object_mut().ok_or_else(|| anyhow!("{} does not hold a JSON object", file.display()))?;
    let servers = obj.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let servers = servers.as_object_mut().ok_or_else(|| anyhow!("\"{key}\" in {} is not an object", file.display()))?;
    if servers.get(ENTRY) == Some(entry) {
        return Ok(None);
    }
    let replaced = servers.insert(ENTRY.to_string(), entry.clone()).is_some();
    Ok(Some((serde_json::to_string_pretty(&root)? + "\n", replaced)))
}

/// `[<key>.openhuman]` with the entry's fields, as TOML text.
fn toml_block(key: &str, entry: &Value) -> Result<String> {
    let table: toml::Table = serde_json::from_value(entry.clone()).context("the entry does not fit TOML")?;
    let mut servers = toml::Table::new();
    servers.insert(ENTRY.to_string(), toml::Value::Table(table));
    let mut root = toml::Table::new();
    root.insert(key.to_string(), toml::Value::Table(servers));
    Ok(toml::to_string(&root)?)
}

/// The entry as it stands in a parsed TOML document, if it is there.
fn toml_entry<'a>(doc: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    doc.get(key)?.as_table()?.get(ENTRY)
}

/// The TOML file with the entry's table appended (an older `[<key>.openhuman]` table, and its
/// subtables, cut out first), so the rest of the text, comments included, stays as it was.
fn merge_toml(file: &Path, key: &str, entry: &Value, text: &str) -> Result<Option<(String, bool)>> {
    let block = toml_block(key, entry)?;
    let paste = || format!("add this to {} yourself:\n{}", file.display(), block.trim_end());
    let doc: toml::Table = toml::from_str(text)
        .map_err(|e| anyhow!("{} is not valid TOML ({e}), so it was left untouched; {}", file.display(), paste()))?;
    let want: toml::Table = toml::from_str(&block)?;
    let old = toml_entry(&doc, key);
    if old.is_some() && old == toml_entry(&want, key) {
        return Ok(None);
    }
    let mut out = without_toml_entry(text, key);
    let rest: toml::Table =
        toml::from_str(&out).map_err(|e| anyhow!("{} could not be merged ({e}); {}", file.display(), paste()))?;
    if toml_entry(&rest, key).is_some() {
        // Written some other way (inline table, dotted keys): not ours to rewrite.
        bail!(
            "{} defines {key}.{ENTRY} in a form this command does not rewrite, so it was left untouched; {}",
            file.display(),
            paste()
        );
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&block);
    Ok(Some((out, old.is_some())))
}

/// The TOML text without the `[<key>.openhuman]` table and its subtables, trailing blank lines
/// trimmed; every other line, comments included, as it was.
fn without_toml_entry(text: &str, key: &str) -> String {
    let header = format!("[{key}.{ENTRY}]");
    let sub = format!("[{key}.{ENTRY}.");
    let mut kept: Vec<&str> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            inside = t.trim_end() == header || t.starts_with(&sub);
        }
        if !inside {
            kept.push(line);
        }
    }
    kept.join("\n").trim_end().to_string()
}

/// The client's file as text, `None` when there is none.
fn read_existing(file: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", file.display())),
    }
}

/// Whether `client` looks installed for this user: the folder it keeps its settings in exists.
/// Copilot shares VS Code's file, so `vscode` stands for both.
pub(crate) fn detected(client: ClientKind) -> Result<bool> {
    let (file, _, _) = target(client)?;
    let up = |n: usize| file.ancestors().nth(n).map(Path::to_path_buf);
    let dir = match client {
        ClientKind::Copilot => return Ok(false),
        ClientKind::ClaudeCode => {
            // `~/.claude.json`, or the `~/.claude` folder it makes beside it.
            return Ok(file.exists() || file.with_extension("").is_dir());
        }
        ClientKind::Cline | ClientKind::Continue => up(2),
        _ => up(1),
    };
    Ok(dir.is_some_and(|d| d.is_dir()))
}

/// Removes our server entry from the client's file, keeping everything else (see the module's
/// doc for what happens to the file and its backup). Continue's file is ours alone. Returns a
/// sentence saying what was done, or `None` when the file holds no entry of ours.
pub(crate) fn unregister(client: ClientKind, made: &mut Made) -> Result<Option<String>> {
    let (file, key, format) = target(client)?;
    let Some(text) = read_existing(&file)? else {
        made.forget_file(&file);
        return Ok(None);
    };
    let new_text = match format {
        Format::Json => {
            let Ok(mut root) = serde_json::from_str::<Value>(&text) else {
                if text.contains(&format!("\"{ENTRY}\"")) {
                    bail!(
                        "{} is not plain JSON, so it was left untouched; remove \"{ENTRY}\" under \"{key}\" yourself",
                        file.display()
                    );
                }
                return Ok(None);
            };
            let removed = root.get_mut(key).and_then(Value::as_object_mut).and_then(|servers| servers.remove(ENTRY));
            if removed.is_none() {
                return Ok(None);
            }
            serde_json::to_string_pretty(&root)? + "\n"
        }
        Format::Toml => {
            let doc: toml::Table = toml::from_str(&text)
                .map_err(|e| anyhow!("{} is not valid TOML ({e}), so it was left untouched", file.display()))?;
            if toml_entry(&doc, key).is_none() {
                return Ok(None);
            }
            let out = without_toml_entry(&text, key);
            let rest: toml::Table =
                toml::from_str(&out).map_err(|e| anyhow!("{} could not be edited ({e})", file.display()))?;
            if toml_entry(&rest, key).is_some() {
                bail!(
                    "{} defines {key}.{ENTRY} in a form this command does not rewrite, so it was left untouched; remove it yourself",
                    file.display()
                );
            }
            if out.is_empty() { out } else { out + "\n" }
        }
    };
    let backup = backup_path(&file);
    let before = std::fs::read_to_string(&backup).ok();
    if let Some(before) = before.as_deref()
        && same_but_our_servers(format, key, before, &new_text)
    {
        replace(made, &file, before)?;
        std::fs::remove_file(&backup).with_context(|| format!("cannot remove {}", backup.display()))?;
        made.forget_file(&file);
        return Ok(Some(format!(
            "removed the {ENTRY} server from {}, which is again exactly as it was (its backup is gone)",
            file.display()
        )));
    }
    if (client == ClientKind::Continue || made.created(&file)) && holds_nothing(format, &new_text) {
        std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
        made.forget_file(&file);
        return Ok(Some(format!("removed {}, which held only the {ENTRY} server", file.display())));
    }
    let kept = match before {
        Some(_) => format!("the file as it was before {ENTRY} was added is kept as {}", backup.display()),
        None => format!("the file as it was is kept as {}", save_backup(&file)?.display()),
    };
    replace(made, &file, &new_text)?;
    made.forget_file(&file);
    Ok(Some(format!("removed the {ENTRY} server from {} ({kept})", file.display())))
}

/// A client file's text as a JSON value (an empty file is an empty object); `None` when it does
/// not parse.
fn parsed(format: Format, text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return Some(Value::Object(Map::new()));
    }
    match format {
        Format::Json => serde_json::from_str(text).ok(),
        Format::Toml => serde_json::to_value(toml::from_str::<toml::Table>(text).ok()?).ok(),
    }
}

/// The file parsed, with the server list `key` dropped when it is empty: the form two files are
/// compared in.
fn servers_aside(format: Format, key: &str, text: &str) -> Option<Value> {
    let mut root = parsed(format, text)?;
    let obj = root.as_object_mut()?;
    if obj.get(key).is_some_and(|v| v.as_object().is_some_and(Map::is_empty)) {
        obj.remove(key);
    }
    Some(root)
}

/// Whether `a` and `b` say the same, up to an empty server list `key` (the one we added).
fn same_but_our_servers(format: Format, key: &str, a: &str, b: &str) -> bool {
    matches!((servers_aside(format, key, a), servers_aside(format, key, b)), (Some(x), Some(y)) if x == y)
}

/// Whether a client file's text holds nothing: no setting, only empty tables.
fn holds_nothing(format: Format, text: &str) -> bool {
    let empty = |v: &Value| v.as_object().is_some_and(Map::is_empty);
    match parsed(format, text) {
        Some(Value::Object(map)) => map.values().all(empty),
        _ => false,
    }
}

/// Where the file's one backup is kept.
fn backup_path(file: &Path) -> PathBuf {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("conf").to_string();
    file.with_extension(format!("{ext}.bak-openhuman"))
}

/// A private copy of the client's file as it is now, as its one backup (replacing an older one).
fn save_backup(file: &Path) -> Result<PathBuf> {
    let real = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let b = backup_path(file);
    std::fs::copy(&real, &b).with_context(|| format!("cannot back up {}", file.display()))?;
    // `copy` copies the mode too; a backup of a file that may hold keys is private.
    make_private(&b)?;
    Ok(b)
}

/// A sibling temporary file renamed over the client's file. A symlinked file is written through
/// to its target (the link stays); the file keeps its mode.
/// A folder it has to create is noted in `made`.
pub(crate) fn replace(made: &mut Made, file: &Path, text: &str) -> Result<()> {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("conf").to_string();
    let real = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let mode = std::fs::metadata(&real).ok().map(|m| m.permissions());
    if let Some(dir) = real.parent() {
        made.create_dir_all(dir)?;
    }
    // Write beside, then rename: a crash never leaves a half-written client config. The new file
    // keeps the old one's mode (a 0600 file holding an API key stays 0600); a first one is
    // private by the umask.
    let tmp = real.with_extension(format!("{ext}.openhuman-tmp"));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    if let Some(mode) = mode {
        std::fs::set_permissions(&tmp, mode).with_context(|| format!("cannot set the mode of {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, &real).with_context(|| format!("cannot replace {}", real.display()))?;
    Ok(())
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
