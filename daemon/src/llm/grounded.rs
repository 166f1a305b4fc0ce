//! Answers composed only from given sources: memory chunks for `memory.recall` (cited as
//! `[chunk:<id>]`) and web results for `web_answer` (cited by URL). The model gets the sources
//! and the question in one user turn, no tools, and an instruction to say when the sources do not
//! answer; the caller reports which sources the answer actually cites.

use serde_json::{Map, Value, json};

use super::{Llm, Message, Request};
use crate::state::AppState;

/// Longest text of one source given to the model, in characters.
const SOURCE_CHARS: usize = 2_000;
/// Chunks of a recall result read in full for its answer (the best-ranked ones).
const RECALL_SOURCES: usize = 8;

/// One source the answer may use.
pub struct Source {
    /// How the answer must cite it: `chunk:<id>` or a URL (written in square brackets).
    pub cite: String,
    /// A one-line description: title, origin, date.
    pub label: String,
    pub text: String,
}

const MEMORY_RULES: &str = "You answer the user's question from their personal memory. Use ONLY the memory \
excerpts in the message; no outside knowledge. After every statement, cite the excerpt(s) it comes from with \
their tag exactly as given, e.g. [chunk:0123abcd]. If the excerpts do not answer the question, say so in one \
sentence and cite nothing. Be brief.";

const WEB_RULES_QUICK: &str = "You answer the user's question from web search results. Use ONLY the results in \
the message. Cite each statement with the URL of the result it comes from in square brackets, e.g. \
[https://example.com/page]. If the results do not answer the question, say so. Answer in a few sentences.";

const WEB_RULES_DEEP: &str = "You answer the user's question from web search results. Use ONLY the results in \
the message. Cite each statement with the URL of the result it comes from in square brackets, e.g. \
[https://example.com/page]. Give a thorough answer: combine what several results say, point out where they \
disagree or are dated, and say what remains unanswered.";

/// Which rules an answer follows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Memory,
    WebQuick,
    WebDeep,
}

/// Asks the model for an answer to `question` from `sources`.
pub async fn answer(llm: &Llm, style: Style, question: &str, sources: &[Source]) -> Result<String, String> {
    let system = match style {
        Style::Memory => MEMORY_RULES,
        Style::WebQuick => WEB_RULES_QUICK,
        Style::WebDeep => WEB_RULES_DEEP,
    };
    let kind = if style == Style::Memory { "Memory excerpts" } else { "Search results" };
    let mut user = format!("Question: {question}\n\n{kind}:\n");
    for s in sources {
        let text: String = s.text.chars().take(SOURCE_CHARS).collect();
        user.push_str(&format!("\n[{}] {}\n{}\n", s.cite, s.label, text.trim()));
    }
    if sources.is_empty() {
        user.push_str("\n(none)\n");
    }
    let messages = [Message::User(user)];
    let reply = llm.complete(&Request { system, messages: &messages, tools: &[], forbid_tools: false }).await?;
    let text = reply.text.trim().to_string();
    if text.is_empty() {
        return Err(format!("{} returned an empty answer", llm.label()));
    }
    Ok(text)
}

/// The sources an answer cites, in source order.
pub fn cited<'a>(answer: &str, sources: &'a [Source]) -> Vec<&'a Source> {
    sources.iter().filter(|s| answer.contains(&s.cite)).collect()
}

/// The answer to a `memory.recall` question from its result's chunks (read in full), citing them
/// as `[chunk:<id>]`. No chunks: a fixed sentence, without asking the model.
pub async fn recall_answer(state: &AppState, question: &str, recall: &Value) -> Result<String, String> {
    let config = state.config();
    let llm = Llm::from_config(&config)?;
    drop(config);
    let mut sources = Vec::new();
    for hit in recall["chunks"].as_array().into_iter().flatten().take(RECALL_SOURCES) {
        let Some(id) = hit["chunk_id"].as_str() else { continue };
        let mut p = Map::new();
        p.insert("chunk_id".into(), json!(id));
        // The snippet stands in when the chunk cannot be read (e.g. deleted since the search).
        let chunk = crate::core_rpc::invoke(state.clone(), "openhuman.memory_tree_get_chunk", p).await.ok();
        let text = chunk
            .as_ref()
            .and_then(|c| c["content"].as_str())
            .or_else(|| hit["snippet"].as_str())
            .unwrap_or_default()
            .to_string();
        let mut label: Vec<String> = Vec::new();
        for key in ["title", "source_kind", "source_ref"] {
            if let Some(v) = hit[key].as_str().filter(|v| !v.is_empty()) {
                label.push(v.to_string());
            }
        }
        if let Some(t) = chunk.as_ref().and_then(|c| c["observed_at"].as_str()) {
            label.push(t.to_string());
        }
        sources.push(Source { cite: format!("chunk:{id}"), label: label.join(" · "), text });
    }
    if sources.is_empty() {
        return Ok("Nothing in memory matches this question.".to_string());
    }
    answer(&llm, Style::Memory, question, &sources).await
}
