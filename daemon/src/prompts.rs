//! The MCP prompt catalog. One prompt per subagent (`agent.<id>`, built-in and user agents) sets
//! up the task that agent does, for the client's own model to carry out with this server's tools;
//! the list follows the agent registry, so a reload that adds or removes a user agent changes it
//! (`AppState::reload` says so). `recall_context`
//! runs a memory recall and packs the best memories for a topic, each with its citation, into a
//! token budget: only those above recall's relevance floor, so an unrelated memory never pads it.
//!
//! Tokens are estimated the way memory counts them for chunk sizing (`token_count`):
//! whitespace-separated words × 1.3, rounded up ([`openhuman_memory::estimate_tokens`]). The
//! packed text as a whole never exceeds the budget by that estimate.
//!
//! Reading memory here goes through the gate `tools/call` puts before `memory.recall` and
//! `tree.read_chunk`, and then through their core methods. Nothing of a topic or of the memories
//! is logged: only counts.

use std::collections::BTreeMap;

use openhuman_mcp::prompts::{Prompt, PromptArgument, PromptResult, user_resource, user_text};
use openhuman_mcp::{RequestCtx, RpcError};
use openhuman_memory::{estimate_tokens, ops};

use crate::agents::{Agent, Origin, Registry};
use crate::engine::{self, MethodError};
use crate::state::AppState;

pub(crate) const RECALL: &str = "recall_context";
pub(crate) const AGENT_PREFIX: &str = "agent.";
/// The token budget of `recall_context` when none is given.
pub(crate) const DEFAULT_BUDGET: usize = 2000;
pub(crate) const MIN_BUDGET: usize = 100;
pub(crate) const MAX_BUDGET: usize = 32_000;
/// Chunks recalled for a topic (the engine's largest page); packing stops at the budget.
const RECALL_K: usize = 50;
/// A memory that does not fit whole goes in shortened only when this many tokens are left.
const MIN_EXCERPT: usize = 40;

/// Every prompt, in a stable order: `recall_context`, then the subagents by id.
pub(crate) fn list(agents: &Registry) -> Vec<Prompt> {
    let mut out = vec![Prompt {
        name: RECALL.into(),
        title: "Recall context from memory".into(),
        description: "The memories that best match a topic, each with its citation, packed into a token budget, \
                      as context for the conversation."
            .into(),
        arguments: vec![
            PromptArgument {
                name: "topic",
                description: "What to recall: a topic, person, project or question.".into(),
                required: true,
            },
            PromptArgument {
                name: "token_budget",
                description: format!(
                    "Most tokens the recalled context may take (words × 1.3), {MIN_BUDGET}-{MAX_BUDGET}; \
                     default {DEFAULT_BUDGET}."
                ),
                required: false,
            },
        ],
    }];
    for agent in agents.agents.values() {
        let m = &agent.manifest;
        out.push(Prompt {
            name: format!("{AGENT_PREFIX}{}", m.id),
            title: format!("{} subagent", m.name),
            description: m.description.clone(),
            arguments: vec![
                PromptArgument { name: "task", description: format!("What the {} should do.", m.name), required: true },
                PromptArgument {
                    name: "context",
                    description: "Anything the task needs that is not in memory.".into(),
                    required: false,
                },
            ],
        });
    }
    out
}

/// `prompts/get`, its arguments already checked against the prompt's declaration.
pub(crate) async fn get(
    state: AppState,
    name: String,
    args: BTreeMap<String, String>,
    ctx: RequestCtx,
) -> Result<PromptResult, RpcError> {
    if name == RECALL {
        let budget = budget(args.get("token_budget"))?;
        return recall_context(state, &args["topic"], budget, &ctx).await;
    }
    let agents = state.agents();
    let agent = name
        .strip_prefix(AGENT_PREFIX)
        .and_then(|id| agents.get(id))
        .ok_or_else(|| RpcError::invalid_params(format!("unknown prompt `{name}`")))?;
    Ok(agent_prompt(&state, agent, &args["task"], args.get("context").map(String::as_str)))
}

fn budget(arg: Option<&String>) -> Result<usize, RpcError> {
    let Some(text) = arg.map(|s| s.trim()).filter(|s| !s.is_empty()) else {
        return Ok(DEFAULT_BUDGET);
    };
    text.parse::<usize>().ok().filter(|b| (MIN_BUDGET..=MAX_BUDGET).contains(b)).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "`token_budget` must be a whole number of tokens from {MIN_BUDGET} to {MAX_BUDGET} (got {text:?})"
        ))
    })
}

/// The agent's system prompt (a built-in's as its embedded resource), then the task, naming the
/// agent's tools this server lists now.
fn agent_prompt(state: &AppState, agent: &Agent, task: &str, context: Option<&str>) -> PromptResult {
    let m = &agent.manifest;
    let listed = crate::tools::listed_names(&state.config());
    let tools: Vec<&str> = m.tools.iter().map(String::as_str).filter(|t| listed.contains(t)).collect();
    let mut text =
        format!("Work as the {} described above, with its method and rules, on this task:\n\n{task}\n", m.name);
    if let Some(c) = context.map(str::trim).filter(|c| !c.is_empty()) {
        text.push_str(&format!("\nContext:\n\n{c}\n"));
    }
    if tools.is_empty() {
        text.push_str("\nNone of its tools is available on this server now; work from what you are given.\n");
    } else {
        text.push_str(&format!("\nUse these tools of this server for it: {}.\n", tools.join(", ")));
    }
    let system = match agent.origin {
        Origin::Builtin => {
            user_resource(&format!("openhuman://prompts/agents/{}", m.id), crate::resources::MIME, agent.prompt.clone())
        }
        // A user agent's prompt is no resource: it goes in as text.
        Origin::User => user_text(agent.prompt.clone()),
    };
    PromptResult {
        description: format!("Set up the {} subagent's task", m.name),
        messages: vec![system, user_text(text)],
    }
}

fn to_rpc(e: MethodError) -> RpcError {
    match e {
        MethodError::InvalidParams(m) | MethodError::NotFound(m) => RpcError::invalid_params(m),
        MethodError::Unavailable(m) => RpcError::internal(m),
        MethodError::Internal(e) => {
            tracing::error!(prompt = RECALL, "memory read failed: {e:#}");
            RpcError::internal("reading memory failed; the daemon log has details")
        }
    }
}

async fn recall_context(
    state: AppState,
    topic: &str,
    budget: usize,
    ctx: &RequestCtx,
) -> Result<PromptResult, RpcError> {
    crate::tools::admit_as(&state, "memory.recall")?;
    crate::tools::admit_as(&state, "tree.read_chunk")?;
    let mut params = ops::RecallParams { limit: RECALL_K, ..ops::RecallParams::of(topic) };
    // The session's project preferred, as `memory.recall` prefers it.
    if let Some(project) = crate::workspace::project_of(ctx, crate::workspace::Caller::Client).await {
        params.prefer_project = Some(project);
        params.project_boost = Some(state.config().memory.project_boost);
    }
    let recalled = engine::operate::<ops::Recall>(&state, params).await.map_err(to_rpc)?;
    let hits = recalled.chunks;
    let mut pack = Pack::new(budget);
    for hit in &hits {
        if pack.full() {
            break;
        }
        // A chunk deleted since the recall is left out.
        let params = ops::ReadChunkParams::of(&hit.chunk.chunk_id);
        let chunk = match engine::operate::<ops::ReadChunk>(&state, params).await {
            Ok(c) => c,
            Err(MethodError::NotFound(_)) => continue,
            Err(e) => return Err(to_rpc(e)),
        };
        if !pack.add(&chunk) {
            break;
        }
    }
    tracing::debug!(
        prompt = RECALL,
        recalled = hits.len(),
        packed = pack.count,
        tokens = pack.used,
        budget,
        "prompt built"
    );
    let held = match recalled.held_back {
        0 => String::new(),
        n => format!("; {n} below the relevance floor left out"),
    };
    let unread = match state.watch().still_reading().len() {
        0 => String::new(),
        n => format!("; {n} watched folder(s) still being read, so some may be missing"),
    };
    let noun = if pack.count == 1 { "memory" } else { "memories" };
    let description =
        format!("{} {noun} on \"{topic}\" (about {} of {budget} tokens{held}{unread})", pack.count, pack.used);
    Ok(PromptResult { description, messages: vec![user_text(pack.finish())] })
}

/// Memories packed into a token budget, best first.
struct Pack {
    budget: usize,
    text: String,
    used: usize,
    count: usize,
}

const HEADER: &str = "Context from the user's memory, best match first. Cite a memory as [chunk:<id>]; \
                      read one in full at its openhuman://memory/<id> resource.";
const NOTHING: &str = "Nothing in the user's memory matches this topic.";

impl Pack {
    fn new(budget: usize) -> Pack {
        Pack::headed(budget, HEADER.to_string())
    }

    fn headed(budget: usize, header: String) -> Pack {
        Pack { budget, used: estimate_tokens(&header), text: header, count: 0 }
    }

    fn full(&self) -> bool {
        self.used + MIN_EXCERPT > self.budget
    }

    /// Adds a memory (a `tree.read_chunk` result) whole when it fits, else shortened when enough
    /// room is left. False when the budget is used up.
    fn add(&mut self, chunk: &ops::Chunk) -> bool {
        let head = entry_head(self.count + 1, chunk);
        self.add_entry(head, &chunk.content)
    }

    /// Adds one entry: its head, then its content whole or shortened (see [`Pack::add`]).
    fn add_entry(&mut self, head: String, content: &str) -> bool {
        let n = self.count + 1;
        let content = content.trim();
        let room = self.budget.saturating_sub(self.used);
        let whole = format!("{head}\n{content}");
        let cost = estimate_tokens(&whole);
        let (entry, cost, more) = if cost <= room {
            (whole, cost, true)
        } else {
            // The largest word count whose estimate fits: ceil(words × 1.3) <= room.
            let words = room * 10 / 13;
            let head_words = head.split_whitespace().count();
            let Some(keep) = words.checked_sub(head_words).filter(|k| *k >= MIN_EXCERPT / 2) else {
                return false;
            };
            let entry = format!("{head}\n{}…", first_words(content, keep));
            let cost = estimate_tokens(&entry);
            (entry, cost, false)
        };
        self.text.push_str("\n\n");
        self.text.push_str(&entry);
        self.used += cost;
        self.count = n;
        more
    }

    fn finish(self) -> String {
        if self.count == 0 { NOTHING.to_string() } else { self.text }
    }
}

/// A project's context as `context`, the SessionStart hooks and `openhuman://context/{project}`
/// give it: the packed text, how many memories it holds and about how many tokens.
pub(crate) struct ProjectContext {
    pub text: String,
    pub count: usize,
    pub tokens: usize,
}

/// Memories listed for a project's context (newest first); packing stops at the budget.
const PROJECT_ITEMS: usize = 100;

/// The current memories of `project`, packed into `budget` tokens like `recall_context`: those
/// matching `topic` best when one is given, else the newest; superseded versions left out.
/// Reads go through the gates of `memory.list` and `memory.recall`.
pub(crate) async fn project_context(
    state: &AppState,
    project: &str,
    topic: Option<&str>,
    budget: usize,
) -> Result<ProjectContext, MethodError> {
    let gate = |tool: &str| crate::tools::admit_as(state, tool).map_err(|e| MethodError::InvalidParams(e.message));
    let filter: ops::FilterParams = serde_json::from_value(serde_json::json!({ "project": project }))
        .map_err(|e| MethodError::InvalidParams(format!("project: {e}")))?;
    let mut entries: Vec<(String, String)> = Vec::new();
    let head = |n: usize, id: &str, title: Option<&str>, kind: &str, at: &str| {
        let title = title.filter(|t| !t.is_empty()).unwrap_or("(untitled)");
        format!("## [{n}] {title}\n[chunk:{id}] · {kind} · {at}\n")
    };
    match topic.map(str::trim).filter(|t| !t.is_empty()) {
        Some(topic) => {
            gate("memory.recall")?;
            gate("tree.read_chunk")?;
            let params = ops::RecallParams { limit: RECALL_K, filter: Some(filter), ..ops::RecallParams::of(topic) };
            let recalled = engine::operate::<ops::Recall>(state, params).await?;
            for hit in recalled.chunks.iter().filter(|h| h.chunk.superseded.is_none()) {
                let chunk =
                    match engine::operate::<ops::ReadChunk>(state, ops::ReadChunkParams::of(&hit.chunk.chunk_id)).await
                    {
                        Ok(c) => c,
                        Err(MethodError::NotFound(_)) => continue,
                        Err(e) => return Err(e),
                    };
                let h = head(
                    entries.len() + 1,
                    &chunk.chunk_id,
                    chunk.title.as_deref(),
                    &chunk.source_kind,
                    &chunk.observed_at,
                );
                entries.push((h, chunk.content));
            }
        }
        None => {
            gate("memory.list")?;
            let params: ops::ListParams =
                serde_json::from_value(serde_json::json!({ "filter": filter, "limit": PROJECT_ITEMS }))
                    .map_err(|e| MethodError::Internal(e.into()))?;
            let listed = engine::operate::<ops::List>(state, params).await?;
            for item in listed.items.into_iter().filter(|i| i.superseded.is_none()) {
                let h = head(entries.len() + 1, &item.id, item.title.as_deref(), &item.kind, &item.observed_at);
                entries.push((h, item.content));
            }
        }
    }
    let header = format!(
        "Context from the user's memory for the project {project}, {}. Cite a memory as [chunk:<id>]; \
         read one in full at its openhuman://memory/<id> resource.",
        if topic.is_some() { "best match first" } else { "newest first" }
    );
    let mut pack = Pack::headed(budget, header);
    for (h, content) in entries {
        if pack.full() || !pack.add_entry(h, &content) {
            break;
        }
    }
    tracing::debug!(packed = pack.count, tokens = pack.used, budget, "project context built");
    let (count, tokens) = (pack.count, pack.used);
    let text = if count == 0 {
        format!("Nothing in the user's memory belongs to the project {project} yet.")
    } else {
        pack.text
    };
    Ok(ProjectContext { text, count, tokens })
}

/// `## [n] title` and the citation line: chunk id, kind, where it came from, when.
fn entry_head(n: usize, chunk: &ops::Chunk) -> String {
    let given = |v: &str| (!v.is_empty()).then(|| v.to_string());
    let id = given(&chunk.chunk_id).unwrap_or_else(|| "?".into());
    let title = chunk.title.as_deref().and_then(given).or(given(&chunk.source_ref)).unwrap_or("(untitled)".into());
    let mut cite = vec![format!("[chunk:{id}]")];
    cite.extend([&chunk.source_kind, &chunk.source_ref, &chunk.observed_at].into_iter().filter_map(|v| given(v)));
    if let Some(src) = given(&chunk.source_id) {
        cite.push(crate::watch::source_uri(&src));
    }
    format!("## [{n}] {title}\n{}\n", cite.join(" · "))
}

/// `text` up to the end of its `n`-th whitespace-separated word.
fn first_words(text: &str, n: usize) -> &str {
    let mut seen = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word && seen == n {
                return &text[..i];
            }
            in_word = false;
        } else if !in_word {
            in_word = true;
            seen += 1;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, words: usize) -> ops::Chunk {
        let content: Vec<String> = (0..words).map(|i| format!("w{i}")).collect();
        ops::Chunk {
            chunk_id: id.into(),
            source_kind: "note".into(),
            source_id: "file:notes/a.md".into(),
            source_ref: "notes/a.md".into(),
            item_id: format!("item-{id}"),
            owner: None,
            source: "ingest".into(),
            timestamp_ms: 0,
            observed_at: "2026-01-02T03:04:05Z".into(),
            seq_in_source: 0,
            title: Some(format!("Note {id}")),
            content: content.join(" "),
            token_count: 0,
            tags: Vec::new(),
            metadata: Default::default(),
            entity_ids: Vec::new(),
            notes: Vec::new(),
            created_at_ms: 0,
            links: Vec::new(),
            backlinks: Vec::new(),
        }
    }

    #[test]
    fn packing_keeps_the_whole_text_within_the_budget() {
        for budget in [MIN_BUDGET, 150, 333, DEFAULT_BUDGET] {
            let mut pack = Pack::new(budget);
            for (i, words) in [30, 200, 10, 5000, 7].into_iter().enumerate() {
                if pack.full() || !pack.add(&chunk(&format!("c{i}"), words)) {
                    break;
                }
            }
            let (count, used) = (pack.count, pack.used);
            let text = pack.finish();
            assert!(estimate_tokens(&text) <= budget, "budget {budget}: {} tokens", estimate_tokens(&text));
            assert!(used <= budget && estimate_tokens(&text) <= used, "counted {used}");
            assert!(count >= 1, "budget {budget} holds at least a shortened first memory");
            assert!(
                text.contains(
                    "[chunk:c0] · note · notes/a.md · 2026-01-02T03:04:05Z · openhuman://source/file%3Anotes%2Fa.md"
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn a_memory_that_does_not_fit_is_shortened_and_ends_the_pack() {
        let mut pack = Pack::new(200);
        assert!(pack.add(&chunk("a", 20)));
        assert!(!pack.add(&chunk("b", 1000)), "shortened: nothing follows");
        let text = pack.finish();
        assert!(text.contains("## [2] Note b") && text.ends_with('…'), "{text}");
        assert_eq!(Pack::new(200).finish(), NOTHING);
    }

    #[test]
    fn budgets_are_checked() {
        assert_eq!(budget(None).unwrap(), DEFAULT_BUDGET);
        assert_eq!(budget(Some(&" 500 ".to_string())).unwrap(), 500);
        for bad in ["lots", "-5", "99", "32001"] {
            let e = budget(Some(&bad.to_string())).unwrap_err();
            assert!(e.code == -32602 && e.message.contains("token_budget"), "{bad}: {e:?}");
        }
    }

    #[test]
    fn first_words_cuts_after_a_word() {
        assert_eq!(first_words("a  bb\tccc d", 2), "a  bb");
        assert_eq!(first_words("a b", 5), "a b");
        assert_eq!(first_words("  a b", 1), "  a");
    }

    #[test]
    fn there_is_a_prompt_per_subagent_and_the_recall_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::load(dir.path());
        let names: Vec<String> = list(&reg).into_iter().map(|p| p.name).collect();
        assert_eq!(names[0], RECALL);
        let agents: Vec<String> = crate::agents::BUILTINS.iter().map(|b| format!("{AGENT_PREFIX}{}", b.id)).collect();
        assert_eq!(names[1..], agents[..]);
        std::fs::create_dir_all(dir.path().join("agents")).unwrap();
        std::fs::write(
            dir.path().join("agents/birder.toml"),
            "id = \"birder\"\nname = \"Birder\"\ndescription = \"Birds.\"\nprompt = \"You log birds.\"\n",
        )
        .unwrap();
        let names: Vec<String> = list(&Registry::load(dir.path())).into_iter().map(|p| p.name).collect();
        assert!(names.contains(&"agent.birder".to_string()), "{names:?}");
    }
}
