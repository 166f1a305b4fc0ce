//! Coding agents' session logs as watched sources: where each agent keeps them, whether they
//! are read already, adding one (`sources add --agent`), and the offer `install` and
//! `register` make. Reading them is off until the user says yes: on a terminal each agent
//! whose logs are found is asked about (default no); without a terminal, or with `--yes`,
//! nothing is turned on unless `--capture-sessions` names it, and the command that would is
//! printed instead.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use openhuman_common::Paths;
use openhuman_config as config;
use openhuman_memory::Agent;
use toml_edit::{Item, Table, value};

use super::{out, sources, terminal};
use crate::cli::Capture;

/// Where `agent` keeps its session logs: `$CLAUDE_CONFIG_DIR/projects` or
/// `~/.claude/projects`, `$CODEX_HOME/sessions` or `~/.codex/sessions`, `~/.gemini/tmp`.
pub(crate) fn root(agent: Agent) -> Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = || -> Result<PathBuf> {
        Ok(directories::BaseDirs::new().context("cannot find your home directory")?.home_dir().to_path_buf())
    };
    Ok(match agent {
        Agent::ClaudeCode => match var("CLAUDE_CONFIG_DIR") {
            Some(d) => d.join("projects"),
            None => agent.default_root(&home()?),
        },
        Agent::Codex => match var("CODEX_HOME") {
            Some(d) => d.join("sessions"),
            None => agent.default_root(&home()?),
        },
        Agent::Gemini => agent.default_root(&home()?),
    })
}

/// The agent named on the command line.
pub(crate) fn parse(name: &str) -> Result<Agent> {
    Agent::parse(name).with_context(|| {
        format!("unknown agent `{name}`: use {}", Agent::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", "))
    })
}

/// Whether the config already reads `agent`'s logs.
fn watched(paths: &Paths, agent: Agent) -> Result<bool> {
    let loaded = config::load(&paths.config_file)?;
    Ok(loaded.config.memory.sources.iter().any(|s| s.kind == agent.name()))
}

/// Adds the `[[memory.sources]]` entry reading `agent`'s logs; returns the folder.
pub(crate) fn add(paths: &Paths, agent: Agent, exclude_projects: &[PathBuf]) -> Result<PathBuf> {
    let root = root(agent)?;
    let root = std::fs::canonicalize(&root).with_context(|| {
        format!(
            "no {} session logs at {}: the folder appears with the agent's first session",
            agent.display(),
            root.display()
        )
    })?;
    let mut excluded = Vec::new();
    for p in exclude_projects {
        excluded.push(std::path::absolute(p).with_context(|| format!("cannot read the path {}", p.display()))?);
    }
    sources::edit(paths, |doc| {
        let list = sources::sources_mut(doc)?;
        let root_str = root.to_string_lossy();
        if list.iter().any(|t| {
            t.get("kind").and_then(Item::as_str) == Some(agent.name())
                || t.get("path").and_then(Item::as_str) == Some(root_str.as_ref())
        }) {
            bail!("{} sessions are already read (`openhumand-mcp sources list`)", agent.display());
        }
        let mut t = Table::new();
        t.insert("path", value(root_str.as_ref()));
        t.insert("kind", value(agent.name()));
        if !excluded.is_empty() {
            t.insert(
                "exclude_projects",
                value(excluded.iter().map(|p| p.to_string_lossy().into_owned()).collect::<toml_edit::Array>()),
            );
        }
        list.push(t);
        Ok(())
    })?;
    Ok(root)
}

/// Takes the entry reading `agent`'s logs out of the config; returns its folder.
pub(crate) fn remove(paths: &Paths, agent: Agent) -> Result<PathBuf> {
    sources::edit(paths, |doc| {
        let list = sources::sources_mut(doc)?;
        let Some(i) = list.iter().position(|t| t.get("kind").and_then(Item::as_str) == Some(agent.name())) else {
            bail!("{} sessions are not read (`openhumand-mcp sources list` shows the sources)", agent.display());
        };
        let path = list.get(i).and_then(|t| t.get("path")).and_then(Item::as_str).unwrap_or_default().to_string();
        list.remove(i);
        Ok(PathBuf::from(path))
    })
}

/// Offers to read the logs of each of `agents` found on this machine and not read yet.
pub(crate) fn offer(paths: &Paths, choice: Option<&Capture>, agents: &[Agent]) -> Result<()> {
    let mut found = Vec::new();
    for a in agents {
        let Ok(r) = root(*a) else { continue };
        if r.is_dir() && !watched(paths, *a)? {
            found.push((*a, r));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let mut added = false;
    for (agent, dir) in &found {
        let yes = match choice {
            Some(Capture::All) => true,
            Some(Capture::None) => false,
            Some(Capture::Agents(list)) => list.contains(agent),
            None if std::io::stdin().is_terminal() => terminal::ask(&format!(
                "Read {} sessions ({}) into memory as they are written? Your and the agent's words, the files and \
                 commands each turn touched; thinking is never kept and secrets are redacted.",
                agent.display(),
                dir.display()
            ))?,
            None => {
                out(&format!(
                    "sessions: found {} logs at {}; not read (off until you say yes): `openhumand-mcp sources add \
                     --agent {}`",
                    agent.display(),
                    dir.display(),
                    agent.name()
                ));
                continue;
            }
        };
        if !yes {
            out(&format!(
                "sessions: {} logs not read; `openhumand-mcp sources add --agent {}` turns it on later",
                agent.display(),
                agent.name()
            ));
            continue;
        }
        match add(paths, *agent, &[]) {
            Ok(root) => {
                added = true;
                out(&format!("sessions: reading {} sessions from {}", agent.display(), root.display()));
            }
            Err(e) => out(&format!("sessions: {} not added: {e:#}", agent.display())),
        }
    }
    if added {
        sources::tell_daemon(paths)?;
    }
    Ok(())
}

/// The agent whose sessions a client writes, for `register`.
pub(crate) fn of_client(client: crate::cli::ClientKind) -> Option<Agent> {
    match client {
        crate::cli::ClientKind::ClaudeCode => Some(Agent::ClaudeCode),
        crate::cli::ClientKind::Codex => Some(Agent::Codex),
        crate::cli::ClientKind::Gemini => Some(Agent::Gemini),
        _ => None,
    }
}
