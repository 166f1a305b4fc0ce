//! The write tools: `memory.store`, `memory.note`, `tree.tag`, `memory.learn`,
//! `memory.forget`, `memory.split_entity`. Each one's arguments are an operation's parameter type
//! (`openhuman_memory::ops::write`); they run through `tools::call`'s Act path (validation → policy → handler),
//! every attempt gets one audit row, and a successful write commits its row in the same
//! transaction as the data. Argument summaries in audit rows never carry bodies. `memory.forget`
//! and `memory.split_entity` ask the user first, and `memory.store`, `memory.note` and
//! `memory.learn` apply the secret policy, through `confirm`.

use futures::FutureExt;
use openhuman_common::looks_secret;
use serde_json::{Map, Value, json};

use super::{Annotations, Handler, Policy, ToolDef, ToolFailure, ToolOutcome, always, confirm};
use crate::state::AppState;
use openhuman_mcp::RequestCtx;
use openhuman_memory::ops::{self, Author};
use openhuman_memory::{AuditRow, MemoryEngine, MemoryError};
use openhuman_schema::Params;

pub(crate) const WRITE_ANNOTATIONS: Annotations =
    Annotations { read_only: false, destructive: Some(true), idempotent: Some(true), open_world: false };
pub(crate) const LEARN_ANNOTATIONS: Annotations =
    Annotations { read_only: false, destructive: Some(false), idempotent: Some(false), open_world: false };

/// Tools whose every attempt is audited.
pub(crate) const AUDITED: &[&str] =
    &["memory.store", "memory.note", "tree.tag", "memory.learn", "memory.forget", "memory.split_entity"];

const TITLE_CHARS: usize = 128;

/// A title as it may appear in an audit row: at most 128 characters, secrets redacted.
fn audit_title(t: &str) -> Value {
    if looks_secret(t) {
        return json!("[redacted: looks like a secret]");
    }
    json!(t.chars().take(TITLE_CHARS).collect::<String>())
}

/// A name or id as it may appear in an audit row: at most `max` characters, `[redacted]` when
/// it looks like a credential.
fn audit_word(w: &str, max: usize) -> Value {
    if looks_secret(w) { json!("[redacted]") } else { json!(w.chars().take(max).collect::<String>()) }
}

fn safe_tags(tags: &Value) -> Value {
    match tags.as_array() {
        Some(items) => Value::Array(
            items
                .iter()
                .take(50)
                .map(|t| match t.as_str() {
                    Some(s) if looks_secret(s) => json!("[redacted]"),
                    Some(s) => json!(s.chars().take(128).collect::<String>()),
                    None => json!(null),
                })
                .collect(),
        ),
        None => Value::Null,
    }
}

fn len_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => json!(s.len()),
        Some(Value::Array(a)) => json!(a.len()),
        Some(_) => json!("not a string"),
        None => Value::Null,
    }
}

/// The argument summary of an audit row: names, lengths, counts, ids — no bodies. Works on
/// unvalidated arguments too (a rejection is audited with what was sent).
pub(crate) fn summarize(tool: &str, args: &Map<String, Value>) -> Value {
    let mut s = Map::new();
    // Unknown names are the caller's text too.
    let mut names: Vec<Value> = args.keys().take(64).map(|n| audit_word(n, 64)).collect();
    names.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    s.insert("arguments".into(), Value::Array(names));
    match tool {
        "memory.store" => {
            if let Some(t) = args.get("title").and_then(Value::as_str) {
                s.insert("title".into(), audit_title(t));
            }
            s.insert("content_bytes".into(), len_of(args.get("content")));
            if let Some(ns) = args.get("namespace").and_then(Value::as_str) {
                s.insert("namespace".into(), audit_title(ns));
            }
            if let Some(tags) = args.get("tags") {
                s.insert("tags".into(), safe_tags(tags));
            }
        }
        "memory.note" => {
            if let Some(c) = args.get("chunk_id").and_then(Value::as_str) {
                s.insert("chunk_id".into(), audit_word(c, 64));
            }
            s.insert("note_bytes".into(), len_of(args.get("note_text")));
        }
        "tree.tag" => {
            if let Some(c) = args.get("chunk_id").and_then(Value::as_str) {
                s.insert("chunk_id".into(), audit_word(c, 64));
            }
            if let Some(tags) = args.get("tags") {
                s.insert("tag_count".into(), len_of(Some(tags)));
                s.insert("tags".into(), safe_tags(tags));
            }
        }
        "memory.learn" => {
            s.insert("text_bytes".into(), len_of(args.get("text")));
            if let Some(k) = args.get("kind").and_then(Value::as_str) {
                s.insert("kind".into(), json!(k.chars().take(32).collect::<String>()));
            }
            if let Some(c) = args.get("confidence") {
                s.insert("confidence".into(), if c.is_number() { c.clone() } else { json!("not a number") });
            }
        }
        "memory.forget" => {
            if let Some(ids) = args.get("ids").and_then(Value::as_array) {
                s.insert("id_count".into(), json!(ids.len()));
                let shown: Vec<Value> =
                    ids.iter().take(100).filter_map(Value::as_str).map(|i| audit_word(i, 128)).collect();
                s.insert("ids".into(), Value::Array(shown));
            }
        }
        "memory.split_entity" => {
            if let Some(id) = args.get("entity_id").and_then(Value::as_str) {
                s.insert("entity_id".into(), audit_word(id, 128));
            }
        }
        _ => {}
    }
    Value::Object(s)
}

/// The audit row of an attempt, before its outcome is known.
pub(crate) fn audit_row(tool: &str, ctx: &RequestCtx, args: &Map<String, Value>) -> AuditRow {
    AuditRow {
        ts_ms: chrono::Utc::now().timestamp_millis(),
        tool: tool.to_string(),
        source: ctx.source.clone(),
        client_info: ctx.client_info.clone().unwrap_or(Value::Null),
        success: true,
        error: None,
        result_id: None,
        args_summary: summarize(tool, args),
        machine: None,
        person: None,
    }
}

/// Runs a blocking engine write; engine errors become tool failures the client can act on. After
/// a success, subscribers hear of it: the memory overview and the memory items (chunk ids) in
/// `items`.
async fn blocking_write<T: serde::Serialize + Send + 'static>(
    state: AppState,
    items: &[&str],
    f: impl FnOnce(&MemoryEngine) -> Result<T, MemoryError> + Send + 'static,
) -> ToolOutcome {
    let engine = state.memory_ready().await.map_err(ToolFailure::Tool)?;
    let data_dir = state.paths().data_dir.clone();
    let out = crate::pool::run_write(move || {
        f(&engine).map_err(|e| {
            // Told apart here, on the blocking thread: the check may write a probe file.
            let full =
                !matches!(e, MemoryError::InvalidParams(_) | MemoryError::NotFound(_) | MemoryError::NotSearchable(_))
                    && crate::backends::no_room(&format!("{e:#}"), &data_dir);
            (e, full.then_some(data_dir))
        })
    })
    .await
    .map_err(|e| ToolFailure::Tool(format!("internal error: the write task failed ({e}); nothing was written")))?;
    if out.is_ok() {
        let uris: Vec<String> = items.iter().map(|id| crate::live_resources::item_uri(id.trim())).collect();
        state.memory_changed(&uris);
    }
    let written = out.map_err(|(e, full)| match e {
        MemoryError::InvalidParams(m) | MemoryError::NotFound(m) => ToolFailure::Tool(m),
        // Written, audited, not yet searchable: the message says so and what to do.
        e @ MemoryError::NotSearchable(_) => ToolFailure::Tool(e.to_string()),
        // The shared store's own messages say whether anything was saved and what to do.
        e @ (MemoryError::SharedUnavailable(_) | MemoryError::SharedUncertain(_) | MemoryError::SharedLoading(_)) => {
            tracing::warn!("write failed: {}", openhuman_common::redact(&format!("{e:#}"), None));
            ToolFailure::Tool(e.to_string())
        }
        e => {
            let cause = format!("{e:#}");
            tracing::error!("write failed: {}", openhuman_common::redact(&cause, None));
            match full {
                Some(dir) => ToolFailure::Tool(crate::backends::disk_full(&dir, "not saved", "try again")),
                None => ToolFailure::Tool(format!("internal error: {cause}; nothing was written")),
            }
        }
    })?;
    serde_json::to_value(written)
        .map_err(|e| ToolFailure::Tool(format!("internal error: the write's result did not serialise: {e}")))
}

/// A write tool: its schema is the parameter type `P`'s; its handler turns the validated
/// arguments into `P` (see [`prepare`]) and makes the typed engine call for the calling client.
fn write_tool<P: Params + Send + 'static>(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    annotations: Annotations,
    handler: Handler,
) -> ToolDef {
    ToolDef {
        name,
        title,
        description,
        policy: Policy::Act,
        annotations,
        args: P::spec(),
        output_schema: None,
        available: always,
        handler,
    }
}

/// The validated arguments of `tool` as its parameter type, and who writes (the audit row
/// summarises the arguments as sent).
async fn prepare<P: Params>(
    tool: &str,
    mut args: Map<String, Value>,
    ctx: &RequestCtx,
) -> Result<(P, Author), ToolFailure> {
    let audit = audit_row(tool, ctx, &args);
    // What a session stores belongs to its project unless the caller names another (asked of
    // the client's roots before anything is written).
    if matches!(tool, "memory.store" | "memory.learn") {
        // Subagents have read tools only: a write comes from the client.
        crate::workspace::default_project(&mut args, "project", ctx, crate::workspace::Caller::Client).await;
    }
    let p = super::typed::<P>(tool, args)?;
    Ok((p, Author { source: ctx.source.clone(), audit }))
}

/// Asks the user to confirm a deletion (see [`confirm::confirm_delete`]) and notes the answer in
/// the write's audit row.
async fn confirmed(
    state: &AppState,
    ctx: &RequestCtx,
    tool: &str,
    what: &str,
    by: &mut Author,
) -> Result<(), ToolFailure> {
    let enabled = state.config().autonomy.confirm_deletes;
    let answer = confirm::confirm_delete(ctx, enabled, tool, what).await?;
    by.audit.args_summary["confirmation"] = json!(answer);
    Ok(())
}

/// The secret policy for a write of `texts` (see [`confirm::secret_choice`]): true when they are
/// to be stored redacted. The decision is noted in the write's audit row.
async fn secrets(
    state: &AppState,
    ctx: &RequestCtx,
    tool: &str,
    texts: &[&str],
    by: &mut Author,
) -> Result<bool, ToolFailure> {
    let policy = state.config().autonomy.on_secret;
    let Some((choice, fields)) = confirm::secret_choice(ctx, policy, tool, texts).await? else {
        return Ok(false);
    };
    if let (Some(row), Value::Object(f)) = (by.audit.args_summary.as_object_mut(), fields) {
        row.extend(f);
    }
    Ok(choice == confirm::SecretChoice::Redact)
}

pub(crate) fn tools() -> Vec<ToolDef> {
    vec![
        write_tool::<ops::StoreParams>(
            "memory.store",
            "Store a document in memory",
            "Save (or replace) a document in the user's memory under a key derived from its title \
             (mcp-store-<slug>), optionally in a namespace and with tags. It is searchable at once. The same \
             or a near-identical fact already stored is refreshed instead (status merged, merged_into); a new \
             version under the same title, or an update of a similar fact, supersedes the older one, which \
             stays in memory.history.",
            WRITE_ANNOTATIONS,
            |state, args, ctx| {
                async move {
                    let (mut p, mut by) = prepare::<ops::StoreParams>("memory.store", args, &ctx).await?;
                    let texts = [p.title.as_str(), p.content.as_str()];
                    if secrets(&state, &ctx, "memory.store", &texts, &mut by).await? {
                        p.title = confirm::redact_text(&p.title);
                        p.content = confirm::redact_text(&p.content);
                    }
                    blocking_write(state, &[], move |e| e.store(p, by)).await
                }
                .boxed()
            },
        ),
        write_tool::<ops::NoteParams>(
            "memory.note",
            "Annotate a memory chunk",
            "Attach a note to a chunk (one note per chunk: a new note replaces the old). The note is \
             shown with the chunk and is itself searchable.",
            WRITE_ANNOTATIONS,
            |state, args, ctx| {
                async move {
                    let (mut p, mut by) = prepare::<ops::NoteParams>("memory.note", args, &ctx).await?;
                    if secrets(&state, &ctx, "memory.note", &[p.note_text.as_str()], &mut by).await? {
                        p.note_text = confirm::redact_text(&p.note_text);
                    }
                    let item = p.chunk_id.clone();
                    blocking_write(state, &[&item], move |e| e.note(p, by)).await
                }
                .boxed()
            },
        ),
        write_tool::<ops::TagParams>(
            "tree.tag",
            "Tag a memory chunk",
            "Set tags on a chunk (replacing tags earlier set through this tool). Tags show up in \
             tree.read_chunk and tree.browse and filter recall (tags_any).",
            WRITE_ANNOTATIONS,
            |state, args, ctx| {
                async move {
                    let (p, by) = prepare::<ops::TagParams>("tree.tag", args, &ctx).await?;
                    let item = p.chunk_id.clone();
                    blocking_write(state, &[&item], move |e| e.tag(p, by)).await
                }
                .boxed()
            },
        ),
        write_tool::<ops::LearnParams>(
            "memory.learn",
            "Learn something about the user",
            "Store one learning — a preference, fact, procedure or correction about the user or their \
             work — with an optional confidence. Returns its id.",
            LEARN_ANNOTATIONS,
            |state, args, ctx| {
                async move {
                    let (mut p, mut by) = prepare::<ops::LearnParams>("memory.learn", args, &ctx).await?;
                    if secrets(&state, &ctx, "memory.learn", &[p.text.as_str()], &mut by).await? {
                        p.text = confirm::redact_text(&p.text);
                    }
                    blocking_write(state, &[], move |e| e.learn_one(p, by)).await
                }
                .boxed()
            },
        ),
        write_tool::<ops::ForgetParams>(
            "memory.forget",
            "Forget memory items",
            "Delete items for good — from the database and every index: documents, notes, learnings \
             or chunks by id (1 to 100 ids). Reports which ids were not found.",
            WRITE_ANNOTATIONS,
            |state, args, ctx| {
                async move {
                    let (p, mut by) = prepare::<ops::ForgetParams>("memory.forget", args, &ctx).await?;
                    let shown: Vec<&str> = p.ids.iter().take(5).map(String::as_str).collect();
                    let more = if p.ids.len() > 5 { format!(" and {} more", p.ids.len() - 5) } else { String::new() };
                    let what = format!(
                        "Forget {} item(s) from memory for good (database and every index): {}{more}?",
                        p.ids.len(),
                        shown.join(", ")
                    );
                    confirmed(&state, &ctx, "memory.forget", &what, &mut by).await?;
                    blocking_write(state, &[], move |e| e.forget_ids(p, by)).await
                }
                .boxed()
            },
        ),
        write_tool::<ops::SplitEntityParams>(
            "memory.split_entity",
            "Split a merged person",
            "Undo a merge of people: the name, address or bot that memory merged into another entity \
             (tree.top_entities lists them under `merged`, each with its reason) counts as itself again, \
             and memory never makes that merge again. Returns the entity it was split from.",
            WRITE_ANNOTATIONS,
            |state, args, ctx| {
                async move {
                    let (p, mut by) = prepare::<ops::SplitEntityParams>("memory.split_entity", args, &ctx).await?;
                    let what = format!(
                        "Split `{}` off the entity memory merged it into? Memory will never merge the two again.",
                        p.entity_id
                    );
                    confirmed(&state, &ctx, "memory.split_entity", &what, &mut by).await?;
                    blocking_write(state, &[], move |e| e.split(p, by)).await
                }
                .boxed()
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_hold_no_bodies_and_redact_secrets() {
        let args = json!({"title": "x".repeat(300), "content": "the secret body text", "tags": ["a", "sk-abcdefghijklmnopqrstuv"]});
        let s = summarize("memory.store", args.as_object().unwrap());
        let text = s.to_string();
        assert!(!text.contains("secret body"), "{text}");
        assert_eq!(s["content_bytes"], 20);
        assert_eq!(s["title"].as_str().unwrap().chars().count(), 128);
        assert_eq!(s["tags"][1], "[redacted]");
        let s = summarize("memory.note", json!({"chunk_id": "c1", "note_text": "private words"}).as_object().unwrap());
        assert!(!s.to_string().contains("private"));
        let s = summarize("memory.learn", json!({"text": "I prefer tea", "kind": "preference"}).as_object().unwrap());
        assert!(!s.to_string().contains("tea"));
        // Ids, chunk ids and unknown argument names are the caller's text as well.
        let key = "sk-proj-abcdefghijklmnop1234";
        for (tool, args) in [
            ("memory.forget", json!({"ids": ["doc-1", key]})),
            ("memory.note", json!({"chunk_id": key, "note_text": "n"})),
            ("tree.tag", json!({"chunk_id": key, "tags": ["a"]})),
            ("memory.store", json!({"title": "t", "content": "c", key: 1})),
        ] {
            let text = summarize(tool, args.as_object().unwrap()).to_string();
            assert!(!text.contains(key) && text.contains("[redacted]"), "{tool}: {text}");
        }
    }
}
