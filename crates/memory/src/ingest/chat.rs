//! Chat exports as JSON Lines (`{ts, from, text, channel}` per line) → chat chunks, one
//! source per channel. Consecutive messages of a channel are packed into chunks of up
//! to `MAX_TOKENS`; a silence of more than two hours also starts a new chunk so that
//! one chunk holds one conversation.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::chunker::MAX_TOKENS;
use crate::store::{NewChunk, NewSource};
use crate::types::SourceKind;
use crate::util::{estimate_tokens, ms_to_rfc3339, rfc3339_to_ms};

const GAP_MS: i64 = 2 * 3600 * 1000;

struct Msg {
    line: usize,
    ts: i64,
    from: String,
    text: String,
}

/// `ts` as RFC 3339, or a number of seconds (or milliseconds when it is that large).
fn parse_ts(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => rfc3339_to_ms(s).or_else(|| s.parse::<f64>().ok().map(num_ts)),
        Value::Number(n) => n.as_f64().map(num_ts),
        _ => None,
    }
}

fn num_ts(n: f64) -> i64 {
    if n.abs() >= 1e11 { n as i64 } else { (n * 1000.0) as i64 }
}

/// Returns the chunks, the sources, and the number of lines that were not messages.
pub(crate) fn parse(text: &str, path: &Path, origin: &str) -> (Vec<NewChunk>, Vec<NewSource>, usize) {
    let default_channel = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "chat".into());
    let mut channels: BTreeMap<String, Vec<Msg>> = BTreeMap::new();
    let mut skipped = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(line) else {
            skipped += 1;
            continue;
        };
        let text = o.get("text").and_then(Value::as_str).unwrap_or("").trim();
        let ts = o.get("ts").and_then(parse_ts);
        let (Some(ts), false) = (ts, text.is_empty()) else {
            skipped += 1;
            continue;
        };
        let from = o.get("from").and_then(Value::as_str).unwrap_or("unknown").trim().to_string();
        let channel = o.get("channel").and_then(Value::as_str).map(str::trim).filter(|c| !c.is_empty());
        let channel = channel.unwrap_or(&default_channel).to_string();
        channels.entry(channel).or_default().push(Msg { line: i + 1, ts, from, text: text.to_string() });
    }
    let path_str = path.to_string_lossy().into_owned();
    let mut chunks = Vec::new();
    let mut sources = Vec::new();
    for (channel, mut msgs) in channels {
        msgs.sort_by_key(|m| (m.ts, m.line));
        let source_id = format!("chat:{channel}");
        let mut group: Vec<&Msg> = Vec::new();
        let mut tokens = 0;
        let mut seq = 0;
        let mut flush = |group: &mut Vec<&Msg>, chunks: &mut Vec<NewChunk>| {
            if group.is_empty() {
                return;
            }
            let mut speakers: Vec<&str> = Vec::new();
            for m in group.iter() {
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
            metadata.insert("channel".into(), json!(channel));
            metadata.insert("thread_id".into(), json!(channel));
            metadata.insert("file_path".into(), json!(path_str));
            metadata.insert("participants".into(), json!(speakers));
            metadata.insert("last_ts_ms".into(), json!(group.last().map(|m| m.ts)));
            chunks.push(NewChunk {
                kind: SourceKind::Chat,
                source_id: source_id.clone(),
                source_ref: format!("{path_str}#L{}", group[0].line),
                origin: origin.to_string(),
                owner: (speakers.len() == 1).then(|| speakers[0].to_string()),
                provenance: "ingest".into(),
                timestamp_ms: group[0].ts,
                seq,
                title: Some(format!("#{channel}")),
                content,
                metadata,
                tags: Vec::new(),
            });
            seq += 1;
            group.clear();
        };
        for m in &msgs {
            let t = estimate_tokens(&m.text) + 4;
            let gap = group.last().is_some_and(|last| m.ts - last.ts > GAP_MS);
            if !group.is_empty() && (tokens + t > MAX_TOKENS || gap) {
                flush(&mut group, &mut chunks);
                tokens = 0;
            }
            group.push(m);
            tokens += t;
        }
        flush(&mut group, &mut chunks);
        let mut meta = Map::new();
        meta.insert("channel".into(), json!(channel));
        sources.push(NewSource {
            source_id,
            kind: SourceKind::Chat,
            display_name: format!("#{channel}"),
            metadata: meta,
        });
    }
    (chunks, sources, skipped)
}
