//! The `[clients.<client>]` table `register` writes when asked to restrict a client (`--tools`,
//! `--deny-tools`, `--readonly`, `--level`) and `register --remove` takes out: edited in place in
//! config.toml with `toml_edit` through `sources::edit` (comments and other keys kept, validated
//! before a 0600 atomic replace), then a running daemon reloads, so open sessions of the client
//! hear `notifications/tools/list_changed` at once.
//!
//! The table is named as the command line names the client; its `names` are what the client
//! sends as `clientInfo.name` (as each was reported in November 2026; `audit`'s `source` column
//! shows the name a client really sent, as `mcp:<name>`). Copilot in VS Code is VS Code's own MCP
//! client, so `copilot` and `vscode` share the one table `vscode`.

use std::time::Duration;

use anyhow::{Context, Result};
use openhuman_common::Paths;
use serde_json::json;
use toml_edit::{DocumentMut, Item, Table, value};

use super::out;
use crate::cli::{ClientKind, LevelArg, RegisterArgs};
use crate::via::Via;

/// The table of `[clients]` a client's entry is kept under.
pub(crate) fn table(client: ClientKind) -> &'static str {
    match client {
        ClientKind::ClaudeDesktop => "claude-desktop",
        ClientKind::Cursor => "cursor",
        ClientKind::Windsurf => "windsurf",
        ClientKind::Zed => "zed",
        ClientKind::ClaudeCode => "claude-code",
        ClientKind::Vscode | ClientKind::Copilot => "vscode",
        ClientKind::Codex => "codex",
        ClientKind::Gemini => "gemini",
        ClientKind::Cline => "cline",
        ClientKind::Continue => "continue",
    }
}

/// What the client sends as `clientInfo.name`, then our own name for it (a client renamed in a
/// later version may well use it).
pub(crate) fn client_names(client: ClientKind) -> &'static [&'static str] {
    match client {
        ClientKind::ClaudeDesktop => &["claude-ai", "claude-desktop"],
        ClientKind::Cursor => &["cursor-vscode", "cursor"],
        ClientKind::Windsurf => &["windsurf-client", "windsurf"],
        ClientKind::Zed => &["Zed"],
        ClientKind::ClaudeCode => &["claude-code"],
        ClientKind::Vscode | ClientKind::Copilot => &["Visual Studio Code", "vscode"],
        ClientKind::Codex => &["codex-mcp-client", "codex"],
        ClientKind::Gemini => &["gemini-cli-mcp-client", "gemini-cli"],
        ClientKind::Cline => &["Cline"],
        ClientKind::Continue => &["continue-client", "continue"],
    }
}

/// Whether the arguments ask for a restricted entry.
pub(crate) fn wanted(args: &RegisterArgs) -> bool {
    !args.tools.is_empty() || !args.deny_tools.is_empty() || args.readonly || args.level.is_some()
}

fn level(args: &RegisterArgs) -> Option<&'static str> {
    match (args.readonly, args.level) {
        (true, _) | (_, Some(LevelArg::Readonly)) => Some("readonly"),
        (_, Some(LevelArg::Supervised)) => Some("supervised"),
        (_, Some(LevelArg::Full)) => Some("full"),
        (false, None) => None,
    }
}

/// The table as `--print` shows it.
pub(crate) fn print(args: &RegisterArgs) -> Result<String> {
    let mut doc = DocumentMut::new();
    write_table(&mut doc, args)?;
    Ok(format!("# add to config.toml\n{}", doc.to_string().trim_end()))
}

/// Writes (or updates) the client's table: `names`, and the keys the arguments give; keys they
/// do not give (resources, prompts, a level) stay as the user left them.
pub(crate) fn write(paths: &Paths, args: &RegisterArgs) -> Result<String> {
    super::sources::edit(paths, |doc| write_table(doc, args))?;
    Ok(format!("wrote [clients.{}] in {}: {}", table(args.client), paths.config_file.display(), summary(args)))
}

fn summary(args: &RegisterArgs) -> String {
    let mut parts = Vec::new();
    if !args.tools.is_empty() {
        parts.push(format!("tools {}", args.tools.join(", ")));
    }
    if !args.deny_tools.is_empty() {
        parts.push(format!("no {}", args.deny_tools.join(", ")));
    }
    if let Some(l) = level(args) {
        parts.push(format!("level {l}"));
    }
    parts.join("; ")
}

fn write_table(doc: &mut DocumentMut, args: &RegisterArgs) -> Result<()> {
    let clients = doc.entry("clients").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let clients = clients.as_table_mut().context("`clients` in the config file is not a table")?;
    let entry = clients.entry(table(args.client)).or_insert_with(|| Item::Table(Table::new()));
    let entry = entry.as_table_mut().with_context(|| format!("`clients.{}` is not a table", table(args.client)))?;
    let list = |items: &[String]| value(items.iter().map(String::as_str).collect::<toml_edit::Array>());
    let names: Vec<String> = client_names(args.client).iter().map(|s| s.to_string()).collect();
    entry.insert("names", list(&names));
    if !args.tools.is_empty() {
        entry.insert("tools", list(&args.tools));
    }
    if !args.deny_tools.is_empty() {
        entry.insert("deny_tools", list(&args.deny_tools));
    }
    if let Some(l) = level(args) {
        entry.insert("level", value(l));
    }
    Ok(())
}

/// Takes the client's table out of config.toml; the sentence saying so, None when it had none.
pub(crate) fn remove(paths: &Paths, client: ClientKind) -> Result<Option<String>> {
    let name = table(client);
    let text = std::fs::read_to_string(&paths.config_file).unwrap_or_default();
    let doc: DocumentMut = text.parse().unwrap_or_default();
    if doc.get("clients").and_then(Item::as_table).and_then(|c| c.get(name)).is_none() {
        return Ok(None);
    }
    super::sources::edit(paths, |doc| {
        let empty = match doc.get_mut("clients").and_then(Item::as_table_mut) {
            Some(clients) => {
                clients.remove(name);
                clients.is_empty()
            }
            None => false,
        };
        if empty {
            doc.remove("clients");
        }
        Ok(())
    })?;
    Ok(Some(format!("removed [clients.{name}] from {}", paths.config_file.display())))
}

/// How long a running daemon may take to answer the reload.
const ASK: Duration = Duration::from_secs(10);

/// Tells a running daemon to reload, so the client's open sessions see their new set.
pub(crate) fn tell_daemon(paths: &Paths) -> Result<()> {
    let Some(via) = Via::running(paths)? else {
        out("no daemon is running; the entry applies from its next start");
        return Ok(());
    };
    match via.method("openhuman.config_reload", json!({}), Some(ASK)) {
        Ok(_) => out("the running daemon reloaded its config"),
        Err(e) => out(&format!("the running daemon did not reload ({e:#}); `kill -HUP` it or restart it")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    fn args(client: ClientKind) -> RegisterArgs {
        RegisterArgs {
            client,
            print: false,
            tools: vec!["memory.*".into(), "core.list_tools".into()],
            deny_tools: vec!["memory.forget".into()],
            readonly: true,
            level: None,
            remove: false,
            capture_sessions: false,
            hooks: false,
        }
    }

    #[test]
    fn the_table_is_a_valid_config_and_updates_in_place() {
        let mut doc: DocumentMut = "# mine\n[clients.cursor]\nresources = [\"openhuman://memory\"]\n".parse().unwrap();
        write_table(&mut doc, &args(ClientKind::Cursor)).unwrap();
        let text = doc.to_string();
        assert!(text.starts_with("# mine\n"), "{text}");
        let c = openhuman_config::check_text(std::path::Path::new("/x/config.toml"), &text).unwrap();
        let e = &c.clients["cursor"];
        assert_eq!(e.names, ["cursor-vscode", "cursor"]);
        assert_eq!(e.tools.as_deref(), Some(&["memory.*".to_string(), "core.list_tools".to_string()][..]));
        assert_eq!(e.resources.as_deref(), Some(&["openhuman://memory".to_string()][..]), "the user's key stays");
        assert_eq!(e.level, Some(openhuman_config::AutonomyLevel::Readonly));
    }

    #[test]
    fn every_client_has_names_no_other_table_claims() {
        let mut doc = DocumentMut::new();
        for c in ClientKind::value_variants() {
            write_table(&mut doc, &args(*c)).unwrap();
        }
        let c = openhuman_config::check_text(std::path::Path::new("/x/config.toml"), &doc.to_string()).unwrap();
        assert_eq!(c.clients.len(), ClientKind::value_variants().len() - 1, "copilot shares vscode's table");
        let who = |name: &str| {
            let caller = openhuman_config::clients::Caller { principal: None, client_name: Some(name) };
            openhuman_config::clients::resolve(&c.clients, caller).map(|m| m.entry.to_string())
        };
        assert_eq!(who("claude-ai").as_deref(), Some("claude-desktop"));
        assert_eq!(who("Visual Studio Code").as_deref(), Some("vscode"));
        assert_eq!(who("cursor-vscode").as_deref(), Some("cursor"));
    }
}
