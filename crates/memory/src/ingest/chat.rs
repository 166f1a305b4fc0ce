//! Chat channels (what every chat importer of `openhuman_formats` yields) → chat chunks.
//!
//! Packing: each channel is one source; its messages (and each of its threads apart) are
//! packed in time order into chunks of up to `MAX_TOKENS`; a silence of more than two hours
//! also starts a new chunk, so one chunk holds one conversation. Every chunk's time is its
//! first message's, and its lines read `[YYYY-MM-DD HH:MM] sender: text`. A sender the export
//! names with a handle besides (Slack, Discord) is listed in the chunk's `handles` (name →
//! handle), which entity extraction links to the person. A chunk that holds one message alone
//! (a reply hours later, or every message when an evaluation stores one per chunk) keeps the
//! message before it as `metadata.context` (`from: text`, up to `CHAT_CONTEXT_MAX` bytes), which
//! the keyword index and the relevance floor read with it; its vector, snippets and entities
//! come from its own text. `put_chat` stores channels a caller
//! holds already (an evaluation's conversations), packed the same way or one message per chunk.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use openhuman_formats::{Channel, ChatMsg};
use serde_json::{Map, json};

use crate::chunker::MAX_TOKENS;
use crate::store::{self, NewChunk, NewSource};
use crate::types::SourceKind;
use crate::util::{CHAT_CONTEXT_MAX, cut_at_word, estimate_tokens, ms_to_rfc3339, now_ms};
use crate::{Inner, MemoryEngine, MemoryError, entities, write};

const GAP_MS: i64 = 2 * 3600 * 1000;

/// How chat messages are cut into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChatChunking {
    /// What ingest does: a conversation's messages packed up to the chunk size.
    #[default]
    Packed,
    /// Each message its own chunk.
    PerMessage,
}

/// One stored chat chunk: its id and where each of its messages was (`ChatMsg::at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatChunk {
    pub chunk_id: String,
    pub messages: Vec<String>,
}

/// Chunks and sources for `channels`; channels without messages give neither.
pub(crate) fn pack(channels: Vec<Channel>, path: &Path, origin: &str) -> (Vec<NewChunk>, Vec<NewSource>) {
    pack_with(channels, path, origin, ChatChunking::Packed).0
}

type Packed = ((Vec<NewChunk>, Vec<NewSource>), Vec<Vec<String>>);

/// [`pack`] with a choice of chunking; also returns each chunk's messages (`at`).
fn pack_with(channels: Vec<Channel>, path: &Path, origin: &str, chunking: ChatChunking) -> Packed {
    let mut members = Vec::new();
    let path_str = path.to_string_lossy().into_owned();
    let mut chunks = Vec::new();
    let mut sources = Vec::new();
    for mut ch in channels {
        if ch.msgs.is_empty() {
            continue;
        }
        let mut threads: BTreeMap<Option<String>, Vec<ChatMsg>> = BTreeMap::new();
        for m in std::mem::take(&mut ch.msgs) {
            threads.entry(m.thread.clone()).or_default().push(m);
        }
        let mut seq = 0;
        for (thread, mut msgs) in threads {
            msgs.sort_by_key(|m| m.ts);
            let thread_id = match &thread {
                Some(t) => format!("{}/thread/{t}", ch.name),
                None => ch.name.clone(),
            };
            let mut group: Vec<&ChatMsg> = Vec::new();
            // Where the group starts in `msgs`.
            let mut first = 0;
            let mut tokens = 0;
            for (i, m) in msgs.iter().enumerate() {
                let t = estimate_tokens(&m.text) + 4;
                let gap = group.last().is_some_and(|last| m.ts - last.ts > GAP_MS);
                let full = chunking == ChatChunking::PerMessage || tokens + t > MAX_TOKENS;
                if !group.is_empty() && (full || gap) {
                    members.push(group.iter().map(|m| m.at.clone()).collect());
                    let context = before(&msgs, first, group.len());
                    chunks.push(chunk(&ch, &thread_id, &group, context, seq, &path_str, origin));
                    seq += 1;
                    group.clear();
                    tokens = 0;
                }
                if group.is_empty() {
                    first = i;
                }
                group.push(m);
                tokens += t;
            }
            if !group.is_empty() {
                members.push(group.iter().map(|m| m.at.clone()).collect());
                let context = before(&msgs, first, group.len());
                chunks.push(chunk(&ch, &thread_id, &group, context, seq, &path_str, origin));
                seq += 1;
            }
        }
        let mut meta = Map::new();
        meta.insert("channel".into(), json!(ch.name));
        if let Some(p) = ch.platform {
            meta.insert("platform".into(), json!(p));
        }
        sources.push(NewSource {
            source_id: ch.source_id,
            kind: SourceKind::Chat,
            display_name: ch.title,
            metadata: meta,
        });
    }
    ((chunks, sources), members)
}

impl MemoryEngine {
    /// Stores chat `channels` as ingest would a chat export at `label` (a path-like name their
    /// chunks' `source_ref`s start with), replacing what an earlier call stored under the same
    /// label; returns each chunk with its messages, in order. Embedding runs in the background.
    pub fn put_chat(
        &self,
        channels: Vec<Channel>,
        label: &str,
        chunking: ChatChunking,
    ) -> Result<Vec<ChatChunk>, MemoryError> {
        put(&self.inner, channels, label, chunking)
    }
}

fn put(
    inner: &Arc<Inner>,
    channels: Vec<Channel>,
    label: &str,
    chunking: ChatChunking,
) -> Result<Vec<ChatChunk>, MemoryError> {
    let origin = format!("file:{label}");
    let ((chunks, sources), members) = pack_with(channels, Path::new(label), &origin, chunking);
    let _bulk = entities::Bulk::enter(inner);
    write::bulk(inner, true, |tx, seq| {
        let now = now_ms();
        let old = store::rowids_by_origin(tx, &origin)?;
        store::delete_chunks(tx, seq, &old)?;
        for s in &sources {
            store::upsert_source(tx, s, now)?;
        }
        store::insert_chunks(tx, seq, &chunks, now)?;
        Ok(())
    })?;
    write::finish_bulk(inner)?;
    Ok(chunks.iter().zip(members).map(|(c, messages)| ChatChunk { chunk_id: c.id(), messages }).collect())
}

/// The message before a chunk that holds one message alone (`len` 1, at `first` in its
/// thread's `msgs`): what the message answers or goes on from, which the keyword index and the
/// relevance floor read with it (a reply seldom repeats the words of the question it answers).
/// A chunk of several messages has its context inside.
fn before(msgs: &[ChatMsg], first: usize, len: usize) -> Option<&ChatMsg> {
    if len != 1 { None } else { first.checked_sub(1).map(|j| &msgs[j]) }
}

/// `from: text` of `m`, cut to [`CHAT_CONTEXT_MAX`] bytes at a word.
fn context_line(m: &ChatMsg) -> String {
    cut_at_word(format!("{}: {}", m.from, m.text), CHAT_CONTEXT_MAX)
}

fn chunk(
    ch: &Channel,
    thread_id: &str,
    group: &[&ChatMsg],
    before: Option<&ChatMsg>,
    seq: i64,
    path_str: &str,
    origin: &str,
) -> NewChunk {
    let mut speakers: Vec<&str> = Vec::new();
    let mut handles = Map::new();
    for m in group {
        if !speakers.contains(&m.from.as_str()) {
            speakers.push(&m.from);
        }
        if let Some(h) = &m.handle {
            handles.entry(m.from.clone()).or_insert_with(|| json!(h));
        }
    }
    let content = group
        .iter()
        .map(|m| {
            let stamp = ms_to_rfc3339(m.ts);
            let stamp = stamp.get(..16).unwrap_or(&stamp).replace('T', " ");
            format!("[{stamp}] {}: {}", m.from, m.text)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut metadata = Map::new();
    metadata.insert("channel".into(), json!(ch.name));
    metadata.insert("thread_id".into(), json!(thread_id));
    metadata.insert("file_path".into(), json!(path_str));
    metadata.insert("participants".into(), json!(speakers));
    metadata.insert("last_ts_ms".into(), json!(group.last().map(|m| m.ts)));
    if !handles.is_empty() {
        metadata.insert("handles".into(), serde_json::Value::Object(handles));
    }
    if let Some(b) = before {
        metadata.insert("context".into(), json!(context_line(b)));
    }
    if let Some(p) = ch.platform {
        metadata.insert("platform".into(), json!(p));
    }
    NewChunk {
        kind: SourceKind::Chat,
        source_id: ch.source_id.clone(),
        source_ref: format!("{path_str}#{}", group[0].at),
        origin: origin.to_string(),
        owner: (speakers.len() == 1).then(|| speakers[0].to_string()),
        provenance: "ingest".into(),
        timestamp_ms: group[0].ts,
        seq,
        title: Some(ch.title.clone()),
        content,
        metadata,
        tags: Vec::new(),
        project: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(from: &str, text: &str) -> ChatMsg {
        ChatMsg { at: "T".into(), ts: 0, from: from.into(), text: text.into(), thread: None, handle: None }
    }

    #[test]
    fn a_long_message_before_is_kept_as_context_up_to_a_word() {
        assert_eq!(context_line(&msg("Ana", "see you at 8")), "Ana: see you at 8");
        let long = msg("Ana", &"déjà vu ".repeat(100));
        let line = context_line(&long);
        assert!(line.len() <= CHAT_CONTEXT_MAX && line.len() > CHAT_CONTEXT_MAX - 10, "{}", line.len());
        assert!(line.starts_with("Ana: déjà vu") && line.ends_with("vu"), "{line}");
    }
}
