//! The agent registry: built-in subagents compiled into the binary plus user agents
//! from `<config dir>/agents/*.toml`. It knows what each agent needs and whether it can be
//! dispatched over MCP right now; running them is `tools::subagent`'s job.

mod builtin;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

pub(crate) use builtin::BUILTINS;

use openhuman_config::Config;

/// One built-in agent: its manifest (TOML) and system prompt, both compiled in.
pub(crate) struct BuiltinAgent {
    pub id: &'static str,
    pub manifest: &'static str,
    pub prompt: &'static str,
}

/// The tools a subagent may declare: read tools only, never writes or agent runs.
pub(crate) const AGENT_TOOLS: &[&str] = &[
    "memory.search",
    "memory.recall",
    "memory.fetch",
    "memory.list",
    "tree.read_chunk",
    "tree.browse",
    "tree.top_entities",
    "tree.list_sources",
    "web_search",
    "web_answer",
    "searxng_search",
    "core.list_tools",
    "agent.list_subagents",
];

/// Bindings an agent may require.
const BINDINGS: &[&str] = &["llm", "web_search", "toolkit"];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    pub id: String,
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default = "default_iterations")]
    pub max_iterations: u32,
    #[serde(default)]
    pub requires: Vec<String>,
    /// User agents only: the system prompt inline...
    #[serde(default, skip_serializing)]
    pub prompt: Option<String>,
    /// ...or in a file next to the manifest.
    #[serde(default, skip_serializing)]
    pub prompt_file: Option<String>,
}

fn default_iterations() -> u32 {
    6
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Origin {
    Builtin,
    User,
}

/// A registered agent with its resolved prompt.
#[derive(Debug, Clone)]
pub(crate) struct Agent {
    pub manifest: Manifest,
    pub prompt: String,
    pub origin: Origin,
}

/// All agents, ordered by id, plus user-agent files that failed to load.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry {
    pub agents: BTreeMap<String, Agent>,
    pub load_errors: Vec<String>,
}

impl Registry {
    /// Built-ins (with prompt overrides from `<config dir>/agents/<id>.md`) plus user agents.
    pub(crate) fn load(config_dir: &Path) -> Registry {
        let mut reg = Registry::default();
        for b in BUILTINS {
            let mut manifest: Manifest = match toml::from_str(b.manifest) {
                Ok(m) => m,
                Err(e) => {
                    reg.load_errors.push(format!("built-in agent {}: {e}", b.id));
                    continue;
                }
            };
            manifest.prompt = None;
            let prompt =
                override_text(config_dir, &format!("agents/{}.md", b.id)).unwrap_or_else(|| b.prompt.to_string());
            reg.agents.insert(b.id.to_string(), Agent { manifest, prompt, origin: Origin::Builtin });
        }
        let dir = config_dir.join("agents");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return reg;
        };
        let mut files: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for file in files {
            match load_user_agent(&file) {
                Ok(agent) if reg.agents.contains_key(&agent.manifest.id) => reg.load_errors.push(format!(
                    "{}: agent id `{}` is already taken by a built-in or earlier agent",
                    file.display(),
                    agent.manifest.id
                )),
                Ok(agent) => {
                    reg.agents.insert(agent.manifest.id.clone(), agent);
                }
                Err(e) => reg.load_errors.push(format!("{}: {e:#}", file.display())),
            }
        }
        for err in &reg.load_errors {
            tracing::warn!("agent not loaded: {err}");
        }
        reg
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Agent> {
        self.agents.get(id)
    }

    /// Built-in agents, for the resource catalog.
    pub(crate) fn builtins(&self) -> impl Iterator<Item = &Agent> {
        self.agents.values().filter(|a| a.origin == Origin::Builtin)
    }
}

fn load_user_agent(file: &Path) -> Result<Agent> {
    let text = read_text_file(file).context("cannot read file")?;
    let mut manifest: Manifest = toml::from_str(&text).map_err(|e| anyhow!("invalid agent manifest: {e}"))?;
    validate_manifest(&manifest)?;
    let prompt = match (manifest.prompt.take(), manifest.prompt_file.take()) {
        (Some(p), None) => p,
        (None, Some(f)) => {
            let path = file.parent().unwrap_or(Path::new(".")).join(&f);
            read_text_file(&path).with_context(|| format!("key `prompt_file`: cannot read {}", path.display()))?
        }
        (Some(_), Some(_)) => bail!("set either `prompt` or `prompt_file`, not both"),
        (None, None) => bail!("missing `prompt` (inline system prompt) or `prompt_file`"),
    };
    if prompt.trim().is_empty() {
        bail!("the agent's prompt is empty");
    }
    Ok(Agent { manifest, prompt, origin: Origin::User })
}

/// Checks a manifest's values; also run on built-ins by the tests.
pub(crate) fn validate_manifest(m: &Manifest) -> Result<()> {
    let id_ok = !m.id.is_empty()
        && m.id.len() <= 64
        && m.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !id_ok {
        bail!("key `id` must be 1-64 lowercase ASCII letters, digits, '_' or '-' (got {:?})", m.id);
    }
    if m.name.trim().is_empty() {
        bail!("key `name` must not be blank");
    }
    if m.description.trim().is_empty() {
        bail!("key `description` must not be blank");
    }
    if !(1..=16).contains(&m.max_iterations) {
        bail!("key `max_iterations` must be between 1 and 16 (got {})", m.max_iterations);
    }
    for t in &m.tools {
        if !AGENT_TOOLS.contains(&t.as_str()) {
            bail!("key `tools`: `{t}` is not a tool subagents may use; allowed: {}", AGENT_TOOLS.join(", "));
        }
    }
    for r in &m.requires {
        if !BINDINGS.contains(&r.as_str()) {
            bail!("key `requires`: unknown binding `{r}`; allowed: {}", BINDINGS.join(", "));
        }
    }
    Ok(())
}

/// Whether `agent` can run over MCP under `config`, and if not, why (a sentence a user can act on).
/// Every run needs an LLM; `web_search` needs a usable search provider; a third-party toolkit
/// binding cannot be provided over MCP at all.
pub(crate) fn dispatchability(agent: &Agent, config: &Config) -> Result<(), String> {
    let m = &agent.manifest;
    if m.requires.iter().any(|r| r == "toolkit") {
        return Err("needs a third-party toolkit binding, which cannot be provided over MCP".to_string());
    }
    openhuman_providers::llm::usable(config).map_err(|e| e.to_string())?;
    if m.requires.iter().any(|r| r == "web_search") {
        openhuman_providers::search::web_search_usable(config).map_err(|why| format!("needs web search, but {why}"))?;
    }
    Ok(())
}

/// Reads `<config dir>/<relative>` when the user has put one there. Anything but a readable
/// regular file of text is skipped with a warning, and the built-in text is used.
pub(crate) fn override_text(config_dir: &Path, relative: &str) -> Option<String> {
    let path = config_dir.join(relative);
    match read_text_file(&path) {
        Ok(text) => Some(text).filter(|t| !t.trim().is_empty()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(path = %path.display(), "prompt override skipped: {e}");
            None
        }
    }
}

/// Largest prompt or manifest file read.
const MAX_TEXT_FILE: u64 = 1024 * 1024;

/// A user file the daemon reads (manifest, prompt): refused unless it is a regular file of at
/// most 1 MiB. It is opened without blocking, so a FIFO or device in its place cannot stall the
/// daemon (opening a FIFO with no writer blocks; reading one can block forever).
pub(crate) fn read_text_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    if meta.len() > MAX_TEXT_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("larger than {} KiB", MAX_TEXT_FILE / 1024),
        ));
    }
    let mut text = String::new();
    file.take(MAX_TEXT_FILE).read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_manifest_is_valid_and_matches_its_id() {
        assert!(BUILTINS.len() >= 12);
        for b in BUILTINS {
            let m: Manifest = toml::from_str(b.manifest).unwrap_or_else(|e| panic!("{}: {e}", b.id));
            assert_eq!(m.id, b.id);
            validate_manifest(&m).unwrap_or_else(|e| panic!("{}: {e}", b.id));
            assert!(b.prompt.len() > 200, "{} prompt too short", b.id);
        }
    }

    #[test]
    fn user_agents_load_and_bad_ones_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("mine.toml"),
            "id = \"mine\"\nname = \"Mine\"\ndescription = \"Mine.\"\ntools = [\"memory.search\"]\nprompt = \"You help.\"\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("bad.toml"),
            "id = \"bad\"\nname = \"B\"\ndescription = \"d\"\ntools = [\"memory.forget\"]\nprompt = \"x\"\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("dup.toml"),
            "id = \"planner\"\nname = \"P\"\ndescription = \"d\"\nprompt = \"x\"\n",
        )
        .unwrap();
        let reg = Registry::load(dir.path());
        assert_eq!(reg.get("mine").unwrap().origin, Origin::User);
        assert_eq!(reg.load_errors.len(), 2, "{:?}", reg.load_errors);
        assert!(reg.load_errors.iter().any(|e| e.contains("memory.forget")));
        assert!(reg.load_errors.iter().any(|e| e.contains("already taken")));
    }
}
