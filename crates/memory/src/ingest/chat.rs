//! Chat messages → chat chunks, for every chat importer, and the plain chat format itself:
//! `{ts, from, text, channel}` objects as JSON Lines or as one JSON array.
//!
//! Packing: each channel is one source; its messages (and each of its threads apart) are
//! packed in time order into chunks of up to `MAX_TOKENS`; a silence of more than two hours
//! also starts a new chunk, so one chunk holds one conversation. Every chunk's time is its
//! first message's, and its lines read `[YYYY-MM-DD HH:MM] sender: text`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::report::Skips;
use super::when;
use crate::chunker::MAX_TOKENS;
use crate::error::MemoryError;
use crate::store::{NewChunk, NewSource};
use crate::types::SourceKind;
use crate::util::{estimate_tokens, ms_to_rfc3339};

const GAP_MS: i64 = 2 * 3600 * 1000;

/// One message of any chat export.
#[derive(Debug, Clone)]
pub(crate) struct ChatMsg {
    /// Where it is in the file, appended to the path in `source_ref` (`#L12`, `#msg-id`).
    pub at: String,
    pub ts: i64,
    pub from: String,
    pub text: String,
    /// The thread it belongs to within its channel (a Slack `thread_ts`); None for the main line.
    pub thread: Option<String>,
}

/// One channel or conversation: one source.
#[derive(Debug, Clone)]
pub(crate) struct Channel {
    pub source_id: String,
    /// The source's display name and every chunk's title.
    pub title: String,
    /// `metadata.channel` of the chunks (and the main line's `thread_id`).
    pub name: String,
    /// Which export it came from (`slack`, `chatgpt`…); None for plain chat lines.
    pub platform: Option<&'static str>,
    pub msgs: Vec<ChatMsg>,
}

impl Channel {
    pub fn new(source_id: String, title: String, name: String, platform: Option<&'static str>) -> Channel {
        Channel { source_id, title, name, platform, msgs: Vec::new() }
    }
}

/// Chunks and sources for `channels`; channels without messages give neither.
pub(crate) fn pack(channels: Vec<Channel>, path: &Path, origin: &str) -> (Vec<NewChunk>, Vec<NewSource>) {
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
            let mut tokens = 0;
            for m in &msgs {
                let t = estimate_tokens(&m.text) + 4;
                let gap = group.last().is_some_and(|last| m.ts - last.ts > GAP_MS);
                if !group.is_empty() && (tokens + t > MAX_TOKENS || gap) {
                    chunks.push(chunk(&ch, &thread_id, &group, seq, &path_str, origin));
                    seq += 1;
                    group.clear();
                    tokens = 0;
                }
                group.push(m);
                tokens += t;
            }
            if !group.is_empty() {
                chunks.push(chunk(&ch, &thread_id, &group, seq, &path_str, origin));
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
    (chunks, sources)
}

fn chunk(ch: &Channel, thread_id: &str, group: &[&ChatMsg], seq: i64, path_str: &str, origin: &str) -> NewChunk {
    let mut speakers: Vec<&str> = Vec::new();
    for m in group {
        if !speakers.contains(&m.from.as_str()) {
            speakers.push(&m.from);
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
    }
}

/// Reads one `{ts, from, text, channel}` object into its channel; Err is the reason to skip it.
fn message(o: &Map<String, Value>, at: String, default_channel: &str) -> Result<(String, ChatMsg), &'static str> {
    let text = o.get("text").and_then(Value::as_str).unwrap_or("").trim();
    let ts = match o.get("ts") {
        None | Some(Value::Null) => return Err("no `ts`"),
        Some(v) => when::from_json(v).ok_or("`ts` in no known time form")?,
    };
    if text.is_empty() {
        return Err("no `text`");
    }
    let from = o.get("from").and_then(Value::as_str).map(str::trim).filter(|f| !f.is_empty()).unwrap_or("unknown");
    let channel = o.get("channel").and_then(Value::as_str).map(str::trim).filter(|c| !c.is_empty());
    let msg = ChatMsg { at, ts, from: from.to_string(), text: text.to_string(), thread: None };
    Ok((channel.unwrap_or(default_channel).to_string(), msg))
}

/// Chat lines as JSON Lines or a JSON array. Lines and entries that are not messages are
/// counted in `skips` with the reason.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    origin: &str,
    skips: &mut Skips,
) -> Result<(Vec<NewChunk>, Vec<NewSource>), MemoryError> {
    let default_channel = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "chat".into());
    let mut channels: BTreeMap<String, Vec<ChatMsg>> = BTreeMap::new();
    let mut add =
        |o: &Map<String, Value>, at: String, skip: &mut dyn FnMut(&'static str)| match message(o, at, &default_channel)
        {
            Ok((channel, m)) => channels.entry(channel).or_default().push(m),
            Err(reason) => skip(reason),
        };
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('[') {
        let items: Vec<Value> =
            serde_json::from_str(trimmed).map_err(|e| MemoryError::Parse(format!("invalid JSON array: {e}")))?;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::Object(o) => add(o, format!("{i}"), &mut |r| skips.message(r, path, &i.to_string())),
                _ => skips.message("not a JSON object", path, &i.to_string()),
            }
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(line.trim_start_matches('\u{feff}')) {
                Ok(Value::Object(o)) => add(&o, format!("L{}", i + 1), &mut |r| skips.line(r, path, i + 1)),
                Ok(_) => skips.line("not a JSON object", path, i + 1),
                Err(_) => skips.line("invalid JSON", path, i + 1),
            }
        }
    }
    let channels = channels
        .into_iter()
        .map(|(name, msgs)| Channel {
            source_id: format!("chat:{name}"),
            title: format!("#{name}"),
            name,
            platform: None,
            msgs,
        })
        .collect();
    Ok(pack(channels, path, origin))
}
