//! `eval` on conversational data in the LoCoMo layout: a JSON array of conversations, each with
//! `conversation` (`speaker_a`, `speaker_b`, `session_N` lists of turns `{speaker, dia_id, text,
//! blip_caption?}` and `session_N_date_time` like `1:56 pm on 8 May, 2023`) and `qa` (questions
//! with `evidence`, the `dia_id`s of the turns that answer them, and a `category`). Owns reading
//! that file (errors name the conversation and field), storing each conversation in its own
//! throwaway store as a chat (one turn per chunk, or packed as ingest packs a chat export),
//! running every question of categories 1–4 through the engine methods the MCP tools call, and
//! the metric: the share of a question's evidence turns found in the chunks of the top 5 and 10
//! hits, per category and overall, with textbook BM25 over the same chunks beside it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use chrono::NaiveDateTime;
use openhuman_common::Paths;
use openhuman_config::Config;
use openhuman_memory::{Channel, ChatChunking, ChatMsg, MemoryEngine, MemoryOptions, TierKind};
use serde_json::{Map, Value, json};

use super::{Runner, baseline, micros, percentile};
use crate::backends;
use crate::cli::{EvalArgs, EvalChunking};

/// The categories measured: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop (5, the
/// adversarial questions, have no answer to find).
const CATEGORIES: [u8; 4] = [1, 2, 3, 4];
/// The two cut-offs reported, and how many hits a question asks for.
const CUTS: [usize; 2] = [5, 10];
const ASK: usize = 10;
/// Consecutive turns of a session are this far apart in time.
const TURN_GAP_MS: i64 = 60_000;

/// One turn of a conversation.
#[derive(Debug)]
pub(crate) struct Turn {
    pub dia_id: String,
    pub speaker: String,
    pub text: String,
    pub ts_ms: i64,
}

#[derive(Debug)]
pub(crate) struct Question {
    pub text: String,
    pub evidence: Vec<String>,
    pub category: u8,
}

#[derive(Debug)]
pub(crate) struct Conversation {
    pub id: String,
    pub turns: Vec<Turn>,
    pub questions: Vec<Question>,
    /// Questions of a measured category left out because none of their evidence turns is in
    /// the conversation.
    pub unanswerable: usize,
}

/// The LoCoMo file of `dir`: `dir` itself when it is a file, else the one `.json` file in it
/// whose content is a list of conversations with `qa`. `None` when there is none.
pub(crate) fn find(dir: &Path) -> Option<PathBuf> {
    if dir.is_file() {
        return Some(dir.to_path_buf());
    }
    if dir.join("corpus.jsonl").exists() {
        return None;
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| looks_like_locomo(p))
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Whether `path` starts like a LoCoMo file: a JSON array whose first object has `qa` and
/// `conversation` (read from the first few kilobytes, without parsing the whole file).
fn looks_like_locomo(path: &Path) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; 64 * 1024];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.trim_start().starts_with('[') && (head.contains("\"qa\"") || head.contains("\"conversation\""))
}

/// `1:56 pm on 8 May, 2023` (LoCoMo's session times) as milliseconds since the epoch (UTC).
pub(crate) fn session_time(s: &str) -> Option<i64> {
    let s = s.trim().replace("  ", " ");
    let (clock, day) = s.split_once(" on ")?;
    let text = format!("{} {}", day.trim(), clock.trim().to_uppercase());
    ["%d %B, %Y %I:%M %p", "%d %b, %Y %I:%M %p", "%d %B %Y %I:%M %p"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&text, f).ok())
        .map(|t| t.and_utc().timestamp_millis())
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One conversation object of the file (`at` names it in errors).
fn conversation(o: &Map<String, Value>, at: &str) -> Result<Conversation, String> {
    let id = o.get("sample_id").and_then(text_of).unwrap_or_else(|| at.to_string());
    let conv = o.get("conversation").and_then(Value::as_object).ok_or("missing the `conversation` object")?;
    // Sessions in number order: `session_1`, `session_2`, … (their `_date_time` beside them).
    let mut sessions: Vec<(u32, &Vec<Value>)> =
        conv.iter().filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v.as_array()?))).collect();
    sessions.sort_by_key(|s| s.0);
    let mut turns = Vec::new();
    let mut last = 0;
    for (n, list) in sessions {
        let key = format!("session_{n}_date_time");
        let when = conv.get(&key).and_then(Value::as_str).ok_or_else(|| format!("missing `{key}`"))?;
        let start = session_time(when)
            .ok_or_else(|| format!("`{key}` `{when}` is not a time like `1:56 pm on 8 May, 2023`"))?;
        // A session dated before the previous one's last turn still follows it.
        let mut ts = start.max(last);
        for (i, t) in list.iter().enumerate() {
            let t = t.as_object().ok_or_else(|| format!("session_{n}[{i}] is not an object"))?;
            let field = |k: &str| t.get(k).and_then(text_of).map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
            let dia_id = field("dia_id").ok_or_else(|| format!("session_{n}[{i}] has no `dia_id`"))?;
            let speaker = field("speaker").ok_or_else(|| format!("session_{n}[{i}] has no `speaker`"))?;
            // A shared photo is known by its caption, as a chat export's alt text would tell it.
            let text = match (field("text"), field("blip_caption")) {
                (Some(t), Some(c)) => format!("{t} [photo: {c}]"),
                (Some(t), None) => t,
                (None, Some(c)) => format!("[photo: {c}]"),
                (None, None) => continue,
            };
            turns.push(Turn { dia_id, speaker, text, ts_ms: ts });
            last = ts;
            ts += TURN_GAP_MS;
        }
    }
    if turns.is_empty() {
        return Err("the conversation has no turns".into());
    }
    let known: HashSet<&str> = turns.iter().map(|t| t.dia_id.as_str()).collect();
    let mut questions = Vec::new();
    let mut unanswerable = 0;
    for (i, q) in o.get("qa").and_then(Value::as_array).ok_or("missing the `qa` list")?.iter().enumerate() {
        let q = q.as_object().ok_or_else(|| format!("qa[{i}] is not an object"))?;
        let category = q.get("category").and_then(Value::as_u64).ok_or_else(|| format!("qa[{i}] has no `category`"))?;
        let Some(category) = CATEGORIES.iter().copied().find(|&c| u64::from(c) == category) else { continue };
        let text = q.get("question").and_then(text_of).ok_or_else(|| format!("qa[{i}] has no `question`"))?;
        let evidence: Vec<String> = q
            .get("evidence")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("qa[{i}] has no `evidence` list"))?
            .iter()
            .filter_map(text_of)
            // A few evidence entries name several turns in one string (`D8:6; D9:17`).
            .flat_map(|e| e.split([';', ',']).map(|s| s.trim().to_string()).collect::<Vec<_>>())
            .filter(|e| known.contains(e.as_str()))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if evidence.is_empty() || text.trim().is_empty() {
            unanswerable += 1;
            continue;
        }
        questions.push(Question { text, evidence, category });
    }
    Ok(Conversation { id, turns, questions, unanswerable })
}

pub(crate) fn read(path: &Path) -> Result<Vec<Conversation>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: Value = serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))?;
    let Value::Array(list) = v else { bail!("{}: expected a JSON array of conversations", path.display()) };
    list.iter()
        .enumerate()
        .map(|(i, c)| {
            let at = format!("conversation {}", i + 1);
            let o = c.as_object().ok_or_else(|| anyhow!("{}: {at} is not an object", path.display()))?;
            conversation(o, &at).map_err(|e| anyhow!("{}: {at}: {e}", path.display()))
        })
        .collect()
}

// ---- measuring ----

/// Recall sums at each cut, per category (index 0 is all categories), and latencies.
#[derive(Default)]
struct Tally {
    sums: [[f64; CUTS.len()]; CATEGORIES.len() + 1],
    counts: [usize; CATEGORIES.len() + 1],
    latencies_ms: Vec<f64>,
    /// Questions answered with fewer than `ASK` hits (the relevance floor held the rest back).
    short: usize,
    /// Hits returned, summed over the questions.
    returned: usize,
}

impl Tally {
    /// Adds one question's ranking: the turns each hit's chunk holds, best first.
    fn add(&mut self, q: &Question, hits: &[&[String]], ms: f64) {
        let slot = CATEGORIES.iter().position(|&c| c == q.category).map_or(0, |i| i + 1);
        for (i, &cut) in CUTS.iter().enumerate() {
            let found = q.evidence.len() - missed(q, hits, cut).len();
            let r = found as f64 / q.evidence.len() as f64;
            self.sums[0][i] += r;
            self.sums[slot][i] += r;
        }
        self.counts[0] += 1;
        self.counts[slot] += 1;
        self.latencies_ms.push(ms);
        self.short += usize::from(hits.len() < ASK);
        self.returned += hits.len();
    }

    fn report(mut self, tool: &str, latency: bool) -> Value {
        self.latencies_ms.sort_by(f64::total_cmp);
        let mut by = Map::new();
        for (slot, name) in
            std::iter::once("all".to_string()).chain(CATEGORIES.iter().map(|c| c.to_string())).enumerate()
        {
            let n = self.counts[slot].max(1) as f64;
            by.insert(
                name,
                json!({ "questions": self.counts[slot], "recall_at_5": self.sums[slot][0] / n,
                        "recall_at_10": self.sums[slot][1] / n }),
            );
        }
        let returned = self.returned as f64 / self.counts[0].max(1) as f64;
        let mut out = json!({ "tool": tool, "categories": by, "fewer_than_10": self.short, "returned": returned });
        if latency {
            out["latency_ms"] = json!({ "p50": micros(percentile(&self.latencies_ms, 50.0)),
                                        "p95": micros(percentile(&self.latencies_ms, 95.0)) });
        }
        out
    }
}

/// The evidence turns of `q` that none of the first `cut` hits holds.
fn missed<'q>(q: &'q Question, hits: &[&[String]], cut: usize) -> Vec<&'q str> {
    let seen: HashSet<&str> = hits.iter().take(cut).flat_map(|h| h.iter().map(String::as_str)).collect();
    q.evidence.iter().map(String::as_str).filter(|e| !seen.contains(e)).collect()
}

impl EvalChunking {
    fn name(self) -> &'static str {
        match self {
            EvalChunking::Turn => "turn",
            EvalChunking::Default => "default",
        }
    }
}

/// The conversation as one chat channel.
fn channel(c: &Conversation) -> Channel {
    let mut ch = Channel::new(format!("locomo:{}", c.id), c.id.clone(), c.id.clone(), None);
    ch.msgs = c
        .turns
        .iter()
        .map(|t| ChatMsg {
            at: t.dia_id.clone(),
            ts: t.ts_ms,
            from: t.speaker.clone(),
            text: t.text.clone(),
            thread: None,
            handle: None,
        })
        .collect();
    ch
}

/// Measures every conversation of `file` with each chunking and method of `args`.
pub(crate) fn run(paths: &Paths, config: &Config, args: &EvalArgs, file: &Path, runners: &[Runner]) -> Result<Value> {
    let wall = Instant::now();
    let convs = read(file)?;
    let limit = args.max_queries.map_or(usize::MAX, |n| n as usize);
    let mut chunkings: Vec<EvalChunking> = Vec::new();
    for c in &args.chunking {
        if !chunkings.contains(c) {
            chunkings.push(*c);
        }
    }
    for c in &convs {
        for (i, q) in c.questions.iter().enumerate() {
            for r in runners {
                r.check(&q.text).map_err(|e| {
                    anyhow!(
                        "{}: {} question {} cannot be sent to {}: {e}",
                        file.display(),
                        c.id,
                        i + 1,
                        r.method.tool()
                    )
                })?;
            }
        }
    }
    let tmp = tempfile::Builder::new().prefix("openhuman-eval-").tempdir().context("cannot create a temp directory")?;
    let mut by_chunking = Map::new();
    let mut embedder_name = None;
    let mut ingest_ms = 0.0;
    for chunking in chunkings {
        let mut tallies: Vec<Tally> = runners.iter().map(|_| Tally::default()).collect();
        let mut bm25 = Tally::default();
        let mut chunks_total = 0;
        let mut asked = 0;
        for (n, c) in convs.iter().enumerate() {
            if asked >= limit {
                break;
            }
            let data_dir = tmp.path().join(format!("{}-{n}", chunking.name()));
            let embedder = backends::embedder(config, &data_dir).map_err(anyhow::Error::msg)?;
            let deep = backends::deep_embedder(config, &paths.data_dir).map_err(anyhow::Error::msg)?;
            let engine = MemoryEngine::open(MemoryOptions { data_dir, embedder, deep, shared: None })?;
            let started = Instant::now();
            let how = match chunking {
                EvalChunking::Turn => ChatChunking::PerMessage,
                EvalChunking::Default => ChatChunking::Packed,
            };
            let label = format!("locomo/{}", c.id);
            let stored = engine.put_chat(vec![channel(c)], &label, how).with_context(|| format!("storing {}", c.id))?;
            engine.wait_background_tier(TierKind::Fast);
            if engine.tiers()?.iter().any(|t| t.tier == TierKind::Deep) {
                engine.wait_background();
            }
            ingest_ms += started.elapsed().as_secs_f64() * 1000.0;
            embedder_name = Some(engine.stats()?.vectors.signature);
            chunks_total += stored.len();
            // A hit is known by its source ref: the label and its chunk's first turn.
            let turns_of: HashMap<String, usize> = stored
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.messages.first().map(|m| (format!("{label}#{m}"), i)))
                .collect();
            let speaker: HashMap<&str, &Turn> = c.turns.iter().map(|t| (t.dia_id.as_str(), t)).collect();
            let texts: Vec<String> = stored
                .iter()
                .map(|s| {
                    let lines = s.messages.iter().filter_map(|m| speaker.get(m.as_str()));
                    lines.map(|t| format!("{}: {}", t.speaker, t.text)).collect::<Vec<_>>().join("\n")
                })
                .collect();
            let reference = baseline::Bm25::build(texts.iter().map(String::as_str));
            for (qi, q) in c.questions.iter().take(limit - asked).enumerate() {
                asked += 1;
                for (r, tally) in runners.iter().zip(&mut tallies) {
                    let started = Instant::now();
                    let (refs, _, _) = r
                        .call_with_limit(&engine, &q.text, ASK)
                        .with_context(|| format!("{}: question `{}` on {}", c.id, q.text, r.method.tool()))?;
                    let ms = started.elapsed().as_secs_f64() * 1000.0;
                    let hits: Vec<&[String]> =
                        refs.iter().filter_map(|r| turns_of.get(r)).map(|&i| stored[i].messages.as_slice()).collect();
                    if tracing::enabled!(tracing::Level::DEBUG) {
                        tracing::debug!(
                            conversation = %c.id, question = qi + 1, method = r.method.name(),
                            category = q.category, hits = hits.len(), missed = ?missed(q, &hits, ASK),
                            "evidence turns not in the first {ASK} hits"
                        );
                    }
                    tally.add(q, &hits, ms);
                }
                let started = Instant::now();
                let ranked = reference.rank(&q.text, ASK);
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                let hits: Vec<&[String]> = ranked.iter().map(|&i| stored[i].messages.as_slice()).collect();
                bm25.add(q, &hits, ms);
            }
        }
        let mut methods = Map::new();
        for (r, t) in runners.iter().zip(tallies) {
            methods.insert(r.method.name().into(), t.report(r.method.tool(), true));
        }
        let mut baselines = Map::new();
        baselines.insert("bm25".into(), bm25.report("BM25 k1 0.9 b 0.4, in eval", true));
        by_chunking.insert(
            chunking.name().into(),
            json!({ "chunks": chunks_total, "questions": asked, "methods": methods, "baselines": baselines }),
        );
    }
    let unanswerable: usize = convs.iter().map(|c| c.unanswerable).sum();
    Ok(json!({
        "file": file.display().to_string(),
        "layout": "locomo",
        "embedder": embedder_name,
        "conversations": convs.len(),
        "turns": convs.iter().map(|c| c.turns.len()).sum::<usize>(),
        "questions": { "measured": convs.iter().map(|c| c.questions.len()).sum::<usize>(),
                       "without_evidence": unanswerable },
        "ingest_ms": ingest_ms.round() as u64,
        "wall_ms": wall.elapsed().as_millis() as u64,
        "chunkings": by_chunking,
    }))
}

/// The report as tables, one per chunking.
pub(crate) fn table(r: &Value) -> String {
    let mut out = format!(
        "{} conversations ({} turns, embedder {}); {} questions of categories 1-4 ({} without evidence in the \
         conversation left out)\n",
        r["conversations"],
        r["turns"],
        r["embedder"].as_str().unwrap_or("?"),
        r["questions"]["measured"],
        r["questions"]["without_evidence"],
    );
    for (name, c) in r["chunkings"].as_object().into_iter().flatten() {
        out.push_str(&format!(
            "\nchunking {name}: {} chunks, {} questions; recall of evidence turns at 5 / 10\n",
            c["chunks"], c["questions"]
        ));
        out.push_str(&format!("{:<8} {:<26}", "method", "tool"));
        for cat in ["all", "1", "2", "3", "4"] {
            out.push_str(&format!(" {:>11}", format!("cat {cat}")));
        }
        out.push_str(&format!(" {:>7} {:>5} {:>5}\n", "p50 ms", "<10", "hits"));
        let rows =
            c["methods"].as_object().into_iter().flatten().chain(c["baselines"].as_object().into_iter().flatten());
        for (m, v) in rows {
            out.push_str(&format!("{:<8} {:<26}", m, v["tool"].as_str().unwrap_or("?")));
            for cat in ["all", "1", "2", "3", "4"] {
                let x = &v["categories"][cat];
                let f = |k: &str| x[k].as_f64().unwrap_or(0.0);
                out.push_str(&format!(" {:>11}", format!("{:.3}/{:.3}", f("recall_at_5"), f("recall_at_10"))));
            }
            out.push_str(&format!(
                " {:>7.2} {:>5} {:>5.2}\n",
                v["latency_ms"]["p50"].as_f64().unwrap_or(0.0),
                v["fewer_than_10"],
                v["returned"].as_f64().unwrap_or(0.0)
            ));
        }
    }
    out.push_str(&format!(
        "\n<10: questions answered with fewer than 10 hits; hits: the mean number returned. Wall time {:.1} s.",
        r["wall_ms"].as_f64().unwrap_or(0.0) / 1000.0
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_times_read_as_locomo_writes_them() {
        let t = session_time("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(chrono::DateTime::from_timestamp_millis(t).unwrap().to_rfc3339(), "2023-05-08T13:56:00+00:00");
        let t = session_time("10:37 am on 27 June, 2023").unwrap();
        assert_eq!(chrono::DateTime::from_timestamp_millis(t).unwrap().to_rfc3339(), "2023-06-27T10:37:00+00:00");
        assert!(session_time("yesterday").is_none());
    }

    #[test]
    fn a_conversation_reads_turns_captions_and_answerable_questions() {
        let v: Value = serde_json::from_str(
            r#"{"sample_id": "c1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
                "session_2_date_time": "9:00 am on 2 May, 2023",
                "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Back again"}],
                "session_1_date_time": "8:00 pm on 1 May, 2023",
                "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Look", "blip_caption": "a red kite"},
                              {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice"}]},
               "qa": [{"question": "What colour was the kite?", "evidence": ["D1:1"], "category": 4},
                      {"question": "Who came back?", "evidence": ["D9:9"], "category": 1},
                      {"question": "Trick?", "evidence": ["D1:2"], "category": 5},
                      {"question": "Both?", "evidence": ["D1:2; D2:1"], "category": 1}]}"#,
        )
        .unwrap();
        let c = conversation(v.as_object().unwrap(), "conversation 1").unwrap();
        let ids: Vec<&str> = c.turns.iter().map(|t| t.dia_id.as_str()).collect();
        assert_eq!(ids, ["D1:1", "D1:2", "D2:1"]);
        assert_eq!(c.turns[0].text, "Look [photo: a red kite]");
        assert_eq!(c.turns[1].ts_ms - c.turns[0].ts_ms, TURN_GAP_MS);
        assert_eq!(c.questions.len(), 2);
        assert_eq!(c.unanswerable, 1);
        let mut both = c.questions[1].evidence.clone();
        both.sort();
        assert_eq!(both, ["D1:2", "D2:1"]);
    }

    #[test]
    fn recall_counts_the_evidence_turns_a_hit_chunk_holds() {
        let q = Question { text: "q".into(), evidence: vec!["a".into(), "b".into()], category: 2 };
        let chunk1 = vec!["x".to_string(), "a".to_string()];
        let chunk2 = vec!["y".to_string()];
        let mut hits: Vec<&[String]> = vec![&chunk2; 5];
        hits.insert(0, &chunk1);
        let mut t = Tally::default();
        t.add(&q, &hits, 1.0);
        let r = t.report("x", false);
        assert_eq!(r["categories"]["all"]["recall_at_5"], 0.5);
        assert_eq!(r["categories"]["2"]["questions"], 1);
        assert_eq!(r["categories"]["1"]["questions"], 0);
        assert_eq!(r["fewer_than_10"], 1);
    }
}
