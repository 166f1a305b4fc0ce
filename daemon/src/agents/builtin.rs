//! The built-in subagents compiled into the daemon: each entry pairs an agent's manifest with its
//! system prompt (the same text served as the `openhuman://prompts/agents/<id>` resource).

use super::BuiltinAgent;

pub(crate) const BUILTINS: &[BuiltinAgent] = &[
    BuiltinAgent {
        id: "archivist",
        manifest: include_str!("../../prompts/agents/archivist/agent.toml"),
        prompt: include_str!("../../prompts/agents/archivist/prompt.md"),
    },
    BuiltinAgent {
        id: "critic",
        manifest: include_str!("../../prompts/agents/critic/agent.toml"),
        prompt: include_str!("../../prompts/agents/critic/prompt.md"),
    },
    BuiltinAgent {
        id: "fact_checker",
        manifest: include_str!("../../prompts/agents/fact_checker/agent.toml"),
        prompt: include_str!("../../prompts/agents/fact_checker/prompt.md"),
    },
    BuiltinAgent {
        id: "integrations",
        manifest: include_str!("../../prompts/agents/integrations/agent.toml"),
        prompt: include_str!("../../prompts/agents/integrations/prompt.md"),
    },
    BuiltinAgent {
        id: "librarian",
        manifest: include_str!("../../prompts/agents/librarian/agent.toml"),
        prompt: include_str!("../../prompts/agents/librarian/prompt.md"),
    },
    BuiltinAgent {
        id: "mail_triager",
        manifest: include_str!("../../prompts/agents/mail_triager/agent.toml"),
        prompt: include_str!("../../prompts/agents/mail_triager/prompt.md"),
    },
    BuiltinAgent {
        id: "meeting_prep",
        manifest: include_str!("../../prompts/agents/meeting_prep/agent.toml"),
        prompt: include_str!("../../prompts/agents/meeting_prep/prompt.md"),
    },
    BuiltinAgent {
        id: "orchestrator",
        manifest: include_str!("../../prompts/agents/orchestrator/agent.toml"),
        prompt: include_str!("../../prompts/agents/orchestrator/prompt.md"),
    },
    BuiltinAgent {
        id: "planner",
        manifest: include_str!("../../prompts/agents/planner/agent.toml"),
        prompt: include_str!("../../prompts/agents/planner/prompt.md"),
    },
    BuiltinAgent {
        id: "researcher",
        manifest: include_str!("../../prompts/agents/researcher/agent.toml"),
        prompt: include_str!("../../prompts/agents/researcher/prompt.md"),
    },
    BuiltinAgent {
        id: "summarizer",
        manifest: include_str!("../../prompts/agents/summarizer/agent.toml"),
        prompt: include_str!("../../prompts/agents/summarizer/prompt.md"),
    },
    BuiltinAgent {
        id: "writer",
        manifest: include_str!("../../prompts/agents/writer/agent.toml"),
        prompt: include_str!("../../prompts/agents/writer/prompt.md"),
    },
];
