//! Confirmations through the client. Before `memory.forget` and `memory.split_entity` act, and
//! before a write stores text the secret detector flags, the user is asked — through
//! `RequestCtx::elicit`, which is a server→client `elicitation/create` in the handshake era and an
//! `input_required` round in 2026-07-28 — when the client declared it can be asked. A client that
//! cannot ask gets today's behaviour for deletions, and `[autonomy].on_secret`'s for secrets
//! (`ask` redacts then). The answer goes into the write's audit row (`confirmation`, `secret`),
//! or, for a refusal, into the failure the row records; never the content.

use openhuman_common::{looks_secret, redact};
use openhuman_config::OnSecret;
use openhuman_mcp::{Action, AskError, RequestCtx};
use serde_json::{Value, json};

use super::ToolFailure;

/// What a confirmation came to, as the audit row's `confirmation` says it.
pub(crate) const NOT_ASKED: &str = "not_asked";
pub(crate) const ACCEPTED: &str = "accepted";

/// Asks the user to confirm a deletion `what` by `tool`. Ok carries the audit word (`accepted`,
/// or `not_asked` for a client that cannot ask or a policy that does not); a refusal is a tool
/// failure saying nothing was done and why.
pub(crate) async fn confirm_delete(
    ctx: &RequestCtx,
    enabled: bool,
    tool: &str,
    what: &str,
) -> Result<&'static str, ToolFailure> {
    if !enabled || !ctx.can_elicit() {
        return Ok(NOT_ASKED);
    }
    let schema = json!({
        "type": "object",
        "properties": { "confirm": { "type": "boolean", "title": "Yes, do it", "default": false } },
        "required": ["confirm"]
    });
    let message = format!("{what}\n\nThis cannot be undone. Confirm to go ahead.");
    let refused = |answer: &str| {
        ToolFailure::Tool(format!(
            "{tool} did nothing: the user {answer} the confirmation asked through the client; ask them before trying again"
        ))
    };
    match ctx.elicit(&message, schema).await {
        Ok(e) if e.action == Action::Accept && e.content.get("confirm") == Some(&Value::Bool(true)) => Ok(ACCEPTED),
        Ok(e) if e.action == Action::Accept => Err(refused("did not tick")),
        Ok(e) if e.action == Action::Decline => Err(refused("declined")),
        Ok(_) => Err(refused("cancelled")),
        Err(e) => Err(unanswered(tool, &e)),
    }
}

/// What to do with text that looks like it holds a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SecretChoice {
    Redact,
    Store,
}

impl SecretChoice {
    /// The audit row's `secret` value.
    fn word(self) -> &'static str {
        match self {
            SecretChoice::Redact => "redacted",
            SecretChoice::Store => "stored_as_is",
        }
    }
}

/// The decision for a write by `tool` whose `texts` the detector may flag: None when nothing
/// looks secret; else what to do and the audit fields saying it and who decided. `drop` (by
/// the policy or the user) is a tool failure: nothing is written.
pub(crate) async fn secret_choice(
    ctx: &RequestCtx,
    policy: OnSecret,
    tool: &str,
    texts: &[&str],
) -> Result<Option<(SecretChoice, Value)>, ToolFailure> {
    if !texts.iter().any(|t| looks_secret(t)) {
        return Ok(None);
    }
    let dropped = |by: &str| {
        ToolFailure::Tool(format!(
            "{tool} wrote nothing: the text looks like it holds a secret (an API key, token or private key) and \
             {by} chose to drop it; remove the secret, or store it redacted"
        ))
    };
    let (choice, by) = match policy {
        OnSecret::Redact => (SecretChoice::Redact, "policy"),
        OnSecret::Store => (SecretChoice::Store, "policy"),
        OnSecret::Drop => return Err(dropped("[autonomy].on_secret")),
        OnSecret::Ask if !ctx.can_elicit() => (SecretChoice::Redact, "policy"),
        OnSecret::Ask => {
            let schema = json!({
                "type": "object",
                "properties": { "choice": {
                    "type": "string",
                    "title": "What to do",
                    "enum": ["redact", "store", "drop"],
                    "enumNames": ["Store it with the secret redacted", "Store it as is", "Do not store it"],
                    "default": "redact"
                } },
                "required": ["choice"]
            });
            let message = format!(
                "The text {tool} is about to store looks like it holds a secret (an API key, token or private key). \
                 Store it with the secret redacted, store it as is, or drop it?"
            );
            match ctx.elicit(&message, schema).await {
                Ok(e) if e.action == Action::Accept => match e.content.get("choice").and_then(Value::as_str) {
                    Some("store") => (SecretChoice::Store, "user"),
                    Some("drop") => return Err(dropped("the user")),
                    _ => (SecretChoice::Redact, "user"),
                },
                Ok(e) if e.action == Action::Decline => return Err(dropped("the user (declining)")),
                Ok(_) => return Err(dropped("the user (cancelling)")),
                // 2026-07-28: the question went to the client; this attempt ends here.
                Err(e @ AskError::InputRequired) => return Err(ToolFailure::Tool(e.to_string())),
                // Asked but no answer: the default of a client that cannot ask.
                Err(_) => (SecretChoice::Redact, "policy"),
            }
        }
    };
    Ok(Some((choice, json!({ "secret": choice.word(), "secret_decided_by": by }))))
}

/// `text` with each secret-looking word replaced by `[redacted]`, line by line.
pub(crate) fn redact_text(text: &str) -> String {
    text.split('\n').map(|line| redact(line, None)).collect::<Vec<_>>().join("\n")
}

fn unanswered(tool: &str, e: &AskError) -> ToolFailure {
    ToolFailure::Tool(format!("{tool} did nothing: the confirmation got no answer ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_the_lines_and_the_other_words() {
        let key = format!("sk-{}", "a1B2".repeat(8));
        let text = format!("first line\nthe key is {key} here\nlast");
        let out = redact_text(&text);
        assert_eq!(out, "first line\nthe key is [redacted] here\nlast");
        assert!(looks_secret(&text) && !looks_secret(&out));
    }
}
