//! The static resource catalog: IDENTITY.md, SOUL.md, USER.md and one prompt per
//! built-in subagent, compiled in with `include_str!`. A file of the same name in the config dir
//! (`<config dir>/IDENTITY.md`, `<config dir>/agents/<id>.md`) overrides the compiled text.

use openhuman_mcp::Resource;
use std::path::Path;

use crate::agents::Registry;

pub(crate) const MIME: &str = "text/markdown";

const IDENTITY: &str = include_str!("../prompts/IDENTITY.md");
const SOUL: &str = include_str!("../prompts/SOUL.md");
const USER: &str = include_str!("../prompts/USER.md");

/// The catalog in a stable order: the three core prompts, then agents by id.
pub(crate) fn list(agents: &Registry) -> Vec<Resource> {
    let mut out = vec![
        core(
            "identity",
            "IDENTITY.md",
            "Core identity",
            "Who the OpenHuman assistant is, what it can do and its boundaries.",
        ),
        core(
            "soul",
            "SOUL.md",
            "Personality and values",
            "How the assistant behaves: honesty, citations, privacy, care with destructive actions.",
        ),
        core(
            "user",
            "USER.md",
            "User profile",
            "The user-profile context and how to treat the user's preferences and learnings.",
        ),
    ];
    for agent in agents.builtins() {
        let m = &agent.manifest;
        out.push(Resource {
            uri: format!("openhuman://prompts/agents/{}", m.id),
            name: format!("agents/{}", m.id),
            title: format!("{} subagent prompt", m.name),
            description: m.description.clone(),
            mime_type: MIME,
        });
    }
    out
}

fn core(slug: &str, file: &str, title: &str, description: &str) -> Resource {
    Resource {
        uri: format!("openhuman://prompts/{slug}"),
        name: file.to_string(),
        title: title.to_string(),
        description: description.to_string(),
        mime_type: MIME,
    }
}

/// The text behind `uri`, or None when no such resource exists.
pub(crate) fn read(uri: &str, config_dir: &Path, agents: &Registry) -> Option<String> {
    let (file, builtin) = match uri {
        "openhuman://prompts/identity" => ("IDENTITY.md", IDENTITY),
        "openhuman://prompts/soul" => ("SOUL.md", SOUL),
        "openhuman://prompts/user" => ("USER.md", USER),
        _ => {
            let id = uri.strip_prefix("openhuman://prompts/agents/")?;
            // The registry already applied `<config dir>/agents/<id>.md` overrides.
            return agents.builtins().find(|a| a.manifest.id == id).map(|a| a.prompt.clone());
        }
    };
    Some(crate::agents::override_text(config_dir, file).unwrap_or_else(|| builtin.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::BUILTINS;

    /// Every built-in subagent has its resource and every agent resource is a built-in.
    #[test]
    fn catalog_mirrors_builtins() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::load(dir.path());
        let listed: Vec<String> = list(&reg)
            .into_iter()
            .filter_map(|r| r.uri.strip_prefix("openhuman://prompts/agents/").map(str::to_string))
            .collect();
        let mut builtins: Vec<String> = BUILTINS.iter().map(|b| b.id.to_string()).collect();
        builtins.sort();
        assert_eq!(listed, builtins);
        for b in BUILTINS {
            let text = read(&format!("openhuman://prompts/agents/{}", b.id), dir.path(), &reg).unwrap();
            assert_eq!(text, b.prompt);
        }
    }

    #[test]
    fn config_dir_file_overrides_compiled_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SOUL.md"), "# my soul\n").unwrap();
        std::fs::create_dir_all(dir.path().join("agents")).unwrap();
        std::fs::write(dir.path().join("agents/planner.md"), "# my planner\n").unwrap();
        let reg = Registry::load(dir.path());
        assert_eq!(read("openhuman://prompts/soul", dir.path(), &reg).unwrap(), "# my soul\n");
        assert_eq!(read("openhuman://prompts/agents/planner", dir.path(), &reg).unwrap(), "# my planner\n");
        assert_eq!(read("openhuman://prompts/identity", dir.path(), &reg).unwrap(), IDENTITY);
        assert!(read("openhuman://prompts/nope", dir.path(), &reg).is_none());
    }
}
