//! Answers composed only from given sources: memory chunks for `memory.recall` (cited as
//! `[chunk:<id>]`) and web results for `web_answer` (cited by URL). The model gets the sources
//! and the question in one user turn, no tools, and an instruction to say when the sources do not
//! answer; the caller reports which sources the answer actually cites.

use super::{Llm, Message, Request};
use crate::ProviderError;

/// Longest text of one source given to the model, in characters.
const SOURCE_CHARS: usize = 2_000;

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
pub async fn answer(llm: &Llm, style: Style, question: &str, sources: &[Source]) -> Result<String, ProviderError> {
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
        return Err(ProviderError::BadReply(format!("{} returned an empty answer", llm.label())));
    }
    Ok(text)
}

/// The sources an answer cites, in source order.
pub fn cited<'a>(answer: &str, sources: &'a [Source]) -> Vec<&'a Source> {
    sources.iter().filter(|s| answer.contains(&s.cite)).collect()
}
