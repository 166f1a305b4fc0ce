//! Start-of-session hooks: `register <client> --hooks` adds one to a client that runs commands
//! when a session starts, so the client's model begins with the project's context from memory
//! (`openhumand-mcp context --hook`, run in the session's folder, answers with the hook JSON
//! `hookSpecificOutput.additionalContext`, which both clients read); `register --remove` and
//! `uninstall` take it out again, leaving every other hook as it was.
//!
//! - Claude Code: `hooks.SessionStart` in `~/.claude/settings.json`, a group `{matcher, hooks:
//!   [{type: "command", command}]}` for the `startup`, `resume`, `clear` and `compact` starts.
//! - Gemini CLI: `hooks.SessionStart` in `~/.gemini/settings.json`, the same shape with a
//!   `name`; Gemini runs hooks only where they are enabled (its `hooksConfig.enabled`, on by
//!   default in its preview channel), which this does not change.
//!
//! Codex CLI and the other clients have no start-of-session hook to install.
//!
//! Our hook is the one whose command ends in [`HOOK_ARGS`]. A settings file this creates is
//! recorded (`made`), and removed again when nothing but our hook was in it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value, json};

use super::made::Made;
use crate::cli::ClientKind;

/// What our hook's command ends with.
pub(crate) const HOOK_ARGS: &str = "context --hook";
/// The event our hook runs on, in both clients.
const EVENT: &str = "SessionStart";

/// The settings file holding `client`'s hooks, if it has start-of-session hooks.
pub(crate) fn settings_file(client: ClientKind) -> Result<Option<PathBuf>> {
    let base = directories::BaseDirs::new().context("cannot find your home directory")?;
    let home = base.home_dir();
    Ok(match client {
        ClientKind::ClaudeCode => Some(home.join(".claude/settings.json")),
        ClientKind::Gemini => Some(home.join(".gemini/settings.json")),
        _ => None,
    })
}

/// A word as the shell reads it: quoted unless it is plain.
fn quoted(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The hook's command: this executable (with `--home` when one is in use) and [`HOOK_ARGS`].
pub(crate) fn command(exe: &Path, home_dir: Option<&Path>) -> String {
    let mut words = vec![quoted(&exe.display().to_string())];
    if let Some(h) = home_dir {
        words.push("--home".into());
        words.push(quoted(&h.display().to_string()));
    }
    words.push(HOOK_ARGS.into());
    words.join(" ")
}

fn ours(hook: &Value) -> bool {
    hook.get("command").and_then(Value::as_str).is_some_and(|c| c.trim_end().ends_with(HOOK_ARGS))
}

/// The hook group for `client`.
fn group(client: ClientKind, command: &str) -> Value {
    match client {
        ClientKind::Gemini => json!({
            "matcher": "startup",
            "hooks": [{ "name": "openhuman-context", "type": "command", "command": command,
                        "description": "The project's context from openhuman memory" }]
        }),
        _ => json!({ "matcher": "startup|resume|clear|compact", "hooks": [{ "type": "command", "command": command }] }),
    }
}

/// `root` without our hooks; true when one was taken out.
fn take_ours(root: &mut Map<String, Value>) -> bool {
    let Some(Value::Object(hooks)) = root.get_mut("hooks") else { return false };
    let Some(Value::Array(groups)) = hooks.get_mut(EVENT) else { return false };
    let mut taken = false;
    for g in groups.iter_mut() {
        if let Some(Value::Array(list)) = g.get_mut("hooks") {
            let before = list.len();
            list.retain(|h| !ours(h));
            taken |= list.len() != before;
        }
    }
    groups.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|l| !l.is_empty()));
    if groups.is_empty() {
        hooks.remove(EVENT);
    }
    if hooks.is_empty() {
        root.remove("hooks");
    }
    taken
}

fn read(file: &Path) -> Result<Option<Map<String, Value>>> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    if text.trim().is_empty() {
        return Ok(Some(Map::new()));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => bail!("{} does not hold a JSON object, so it was left untouched", file.display()),
        Err(e) => Err(anyhow!("{} is not plain JSON ({e}), so it was left untouched", file.display())),
    }
}

/// Installs our start-of-session hook for `client` (replacing an older one of ours). Returns
/// a sentence saying what was done.
pub(crate) fn install(client: ClientKind, exe: &Path, home_dir: Option<&Path>, made: &mut Made) -> Result<String> {
    let Some(file) = settings_file(client)? else {
        bail!("this client has no start-of-session hook to install (Claude Code and Gemini CLI have)");
    };
    let existed = file.exists();
    let mut root = read(&file)?.unwrap_or_default();
    take_ours(&mut root);
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks.as_object_mut().ok_or_else(|| anyhow!("\"hooks\" in {} is not an object", file.display()))?;
    let groups = hooks.entry(EVENT).or_insert_with(|| json!([]));
    let groups =
        groups.as_array_mut().ok_or_else(|| anyhow!("\"hooks.{EVENT}\" in {} is not a list", file.display()))?;
    groups.push(group(client, &command(exe, home_dir)));
    super::register::replace(made, &file, &(serde_json::to_string_pretty(&Value::Object(root))? + "\n"))?;
    if !existed {
        made.created_file(&file);
    }
    made.save()?;
    Ok(format!("installed the {EVENT} hook in {} (it runs `{HOOK_ARGS}`)", file.display()))
}

/// Takes our hook out of `client`'s settings; `None` when there was none.
pub(crate) fn remove(client: ClientKind, made: &mut Made) -> Result<Option<String>> {
    let Some(file) = settings_file(client)? else { return Ok(None) };
    let Some(mut root) = read(&file)? else { return Ok(None) };
    if !take_ours(&mut root) {
        return Ok(None);
    }
    let nothing = |v: &Value| v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty);
    if root.values().all(nothing) && made.created(&file) {
        std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
        made.forget_file(&file);
        made.save()?;
        return Ok(Some(format!("removed {}, which held only the {EVENT} hook", file.display())));
    }
    super::register::replace(made, &file, &(serde_json::to_string_pretty(&Value::Object(root))? + "\n"))?;
    made.save()?;
    Ok(Some(format!("removed the {EVENT} hook from {}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_hook_goes_in_and_out_leaving_the_others() {
        let mut root: Map<String, Value> = serde_json::from_value(json!({
            "model": "x",
            "hooks": { "SessionStart": [{ "hooks": [{ "type": "command", "command": "echo hi" }] }] }
        }))
        .unwrap();
        let cmd = command(Path::new("/opt/my tools/openhumand-mcp"), Some(Path::new("/h")));
        assert_eq!(cmd, "'/opt/my tools/openhumand-mcp' --home /h context --hook");
        root["hooks"]["SessionStart"].as_array_mut().unwrap().push(group(ClientKind::ClaudeCode, &cmd));
        assert!(take_ours(&mut root));
        assert_eq!(root["hooks"]["SessionStart"].as_array().unwrap().len(), 1, "the user's hook stays");
        assert!(!take_ours(&mut root), "nothing of ours left");
        let mut only: Map<String, Value> = Map::new();
        only.insert("hooks".into(), json!({ "SessionStart": [group(ClientKind::Gemini, &cmd)] }));
        assert!(take_ours(&mut only));
        assert!(only.is_empty(), "{only:?}");
    }
}
