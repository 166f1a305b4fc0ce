//! `sources add|remove|list`: the watched folders (`[[memory.sources]]`) from the command line;
//! `--agent` adds or removes a coding agent's session logs (see `agent_logs`).
//!
//! The config file is edited in place with `toml_edit`, so comments, key order and keys this
//! version does not know are kept. The file must be a valid config before the edit, and the
//! edited text must be one (checked in memory, so every message names the config file) before
//! it replaces the file: it is written to a temporary file beside it (0600) and renamed over
//! it, through a symlink to its target. A running daemon is then told to
//! reload, which starts or stops watching at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use openhuman_common::Paths;
use openhuman_config as config;
use serde_json::json;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use super::{agent_logs, out};
use crate::EXIT_OK;
use crate::cli::{SourceAddArgs, SourcesAction};
use crate::via::Via;

pub(crate) fn run(paths: &Paths, action: &SourcesAction) -> Result<i32> {
    match action {
        SourcesAction::Add(args) if args.agent.is_some() => {
            let agent = agent_logs::parse(args.agent.as_deref().unwrap_or_default())?;
            let root = agent_logs::add(paths, agent, &args.exclude_project)?;
            out(&format!(
                "reading {} sessions from {} as they are written ({})",
                agent.display(),
                root.display(),
                paths.config_file.display()
            ));
            tell_daemon(paths)?;
        }
        SourcesAction::Remove { agent: Some(name), .. } => {
            let agent = agent_logs::parse(name)?;
            let root = agent_logs::remove(paths, agent)?;
            out(&format!(
                "no longer reading {} sessions ({}); what was read stays in memory (`openhumand-mcp forget --session \
                 <id>` forgets one)",
                agent.display(),
                root.display()
            ));
            tell_daemon(paths)?;
        }
        SourcesAction::Add(args) => {
            let path = args.path.clone().unwrap_or_default();
            let root = std::fs::canonicalize(&path)
                .with_context(|| format!("cannot watch {}: no such file or folder", path.display()))?;
            edit(paths, |doc| add(doc, &root, args))?;
            out(&format!("watching {} ({})", root.display(), paths.config_file.display()));
            tell_daemon(paths)?;
        }
        SourcesAction::Remove { path, .. } => {
            let path = path.clone().unwrap_or_default();
            let given = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
            let canonical = std::fs::canonicalize(&path).ok();
            let removed = edit(paths, |doc| remove(doc, &given, canonical.as_deref()))?;
            out(&format!(
                "no longer watching {}; what was read from it stays in memory (forget it with memory.forget of its files)",
                removed.display()
            ));
            tell_daemon(paths)?;
        }
        SourcesAction::List { json, .. } => list(paths, *json)?,
    }
    Ok(EXIT_OK)
}

pub(crate) fn sources_mut(doc: &mut DocumentMut) -> Result<&mut ArrayOfTables> {
    let memory = doc.entry("memory").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let memory = memory.as_table_mut().context("`memory` in the config file is not a table")?;
    let sources = memory.entry("sources").or_insert(Item::ArrayOfTables(ArrayOfTables::new()));
    sources.as_array_of_tables_mut().context("`memory.sources` in the config file is not a list of [[memory.sources]]")
}

fn add(doc: &mut DocumentMut, root: &Path, args: &SourceAddArgs) -> Result<()> {
    let sources = sources_mut(doc)?;
    let root_str = root.to_string_lossy();
    if sources.iter().any(|t| t.get("path").and_then(Item::as_str) == Some(root_str.as_ref())) {
        bail!("{} is already watched (`openhumand-mcp sources list`)", root.display());
    }
    let mut t = Table::new();
    t.insert("path", value(root_str.as_ref()));
    if let Some(kind) = &args.kind {
        t.insert("kind", value(kind.as_str()));
    }
    for (key, globs) in [("include", &args.include), ("exclude", &args.exclude)] {
        if !globs.is_empty() {
            t.insert(key, value(globs.iter().map(String::as_str).collect::<toml_edit::Array>()));
        }
    }
    if args.no_gitignore {
        t.insert("gitignore", value(false));
    }
    sources.push(t);
    Ok(())
}

fn remove(doc: &mut DocumentMut, given: &Path, canonical: Option<&Path>) -> Result<PathBuf> {
    let sources = sources_mut(doc)?;
    let found = sources.iter().position(|t| {
        t.get("path").and_then(Item::as_str).is_some_and(|p| Path::new(p) == given || Some(Path::new(p)) == canonical)
    });
    let Some(i) = found else {
        bail!("{} is not a watched source (`openhumand-mcp sources list` shows them)", given.display());
    };
    let path = PathBuf::from(sources.get(i).and_then(|t| t.get("path")).and_then(Item::as_str).unwrap_or_default());
    sources.remove(i);
    Ok(path)
}

/// Applies `change` to the config file and replaces it, only if the result is a valid config.
pub(crate) fn edit<T>(paths: &Paths, change: impl FnOnce(&mut DocumentMut) -> Result<T>) -> Result<T> {
    // A symlinked config is written through to its target.
    let file = std::fs::canonicalize(&paths.config_file).unwrap_or_else(|_| paths.config_file.clone());
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    // The file as it is must be valid first: its own error, naming it, says what to fix.
    config::check_text(&paths.config_file, &text)
        .context("nothing was changed: the config file has an error to fix first")?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| anyhow::anyhow!("{} is not valid TOML: {}", file.display(), e.message()))?;
    let result = change(&mut doc)?;
    let edited = doc.to_string();
    // Checked before anything is written, under the file's own name.
    config::check_text(&paths.config_file, &edited)
        .context("the edited config would not be valid; the file was left as it was")?;
    let dir = file.parent().context("the config file has no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".config.toml.")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, edited.as_bytes())?;
    tmp.as_file().sync_all()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Private, as everything the daemon keeps (it tightens a looser config at start anyway).
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o600))?;
    }
    tmp.persist(&file).with_context(|| format!("cannot replace {}", file.display()))?;
    Ok(result)
}

/// How long a running daemon may take to answer a reload or a status call.
const ASK: Duration = Duration::from_secs(10);

/// Tells a running daemon to reload, so it starts or stops watching at once.
pub(crate) fn tell_daemon(paths: &Paths) -> Result<()> {
    let Some(via) = Via::running(paths)? else {
        out("no daemon is running; it will watch from its next start");
        return Ok(());
    };
    match via.method("openhuman.config_reload", json!({}), Some(ASK)) {
        Ok(_) => out("the running daemon reloaded its config"),
        Err(e) => out(&format!("the running daemon did not reload ({e:#}); `kill -HUP` it or restart it")),
    }
    Ok(())
}

fn list(paths: &Paths, json: bool) -> Result<()> {
    let loaded = config::load(&paths.config_file)?;
    let live = Via::running(paths)?
        .and_then(|via| via.method("openhuman.daemon_status", json!({}), Some(ASK)).ok())
        .map(|s| s["watch"].clone());
    if json {
        let sources = serde_json::to_value(&loaded.config.memory.sources)?;
        out(&json!({ "sources": sources, "daemon": live }).to_string());
        return Ok(());
    }
    if loaded.config.memory.sources.is_empty() {
        out("no watched sources; add one with `openhumand-mcp sources add <folder>`");
    }
    for (i, s) in loaded.config.memory.sources.iter().enumerate() {
        let mut line = format!("{} (kind {})", s.path.display(), s.kind);
        if !s.include.is_empty() {
            line.push_str(&format!(", include {}", s.include.join(" ")));
        }
        if !s.exclude.is_empty() {
            line.push_str(&format!(", exclude {}", s.exclude.join(" ")));
        }
        if !s.gitignore {
            line.push_str(", .gitignore not honoured");
        }
        if !s.exclude_projects.is_empty() {
            let shown: Vec<String> = s.exclude_projects.iter().map(|p| p.display().to_string()).collect();
            line.push_str(&format!(", projects excluded: {}", shown.join(" ")));
        }
        if let Some(st) = live.as_ref().and_then(|l| l["sources"].get(i)) {
            line.push_str(&format!("\n  {}", crate::status::describe(st)));
        }
        out(&line);
    }
    Ok(())
}
