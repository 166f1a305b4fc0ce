//! `memory.recall` (`openhuman.memory_tree_recall`): hybrid recall by meaning and keywords,
//! with citations, the vector tier that ranked it, and the date a question names read as a
//! preference for chunks from then. Chat hits carry the turns around the match. Hits below the
//! relevance floor (`min_relevance`) are left out and counted.

use openhuman_schema::params;
use rusqlite::OptionalExtension;
use serde::Serialize;

use super::filter_params::{self, FilterParams};
use super::ranking::Shaping;
use super::{AS_OF_DOC, ChunkSummary, Operation, PREFER_PROJECT_DOC, PROJECT_BOOST_DOC, QUERY_CHARS};
use crate::dates;
use crate::search::{self, ChunkRow, Mode};
use crate::snippet::best_line;
use crate::tier::TierKind;
use crate::types::SourceKind;
use crate::util::{ms_to_rfc3339, now_ms, preview};
use crate::{MemoryEngine, MemoryError};

/// Turns a chat hit shows: the one that matches best, one before it and two after it.
const TURNS_BEFORE: usize = 1;
const TURNS_AFTER: usize = 2;
/// Characters kept of each turn.
const TURN_CHARS: usize = 500;

params! {
    /// A question to recall chunks for.
    pub struct RecallParams {
        query: String = string("A question or description; matched by meaning and keywords.")
            .required()
            .max_chars(QUERY_CHARS),
        k as limit = int("How many chunks (default 10).", 1, 50).default_int(10),
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<FilterParams> = object("Restrict what is recalled.", FilterParams::spec()),
        limit: usize = int("How many chunks (default 10); `k` is another name for it.", 1, 50).default_int(10),
        #[serde(skip_serializing_if = "Option::is_none")]
        prefer_project: Option<String> = string(PREFER_PROJECT_DOC).max_chars(crate::project::MAX_BYTES),
        #[serde(skip_serializing_if = "Option::is_none")]
        project_boost: Option<f64> = number(PROJECT_BOOST_DOC, 0.0, 1.0),
        #[serde(skip_serializing_if = "Option::is_none")]
        as_of: Option<String> = string(AS_OF_DOC).max_chars(64),
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_relevance: Option<f64> = number(
            "Leave out chunks whose relevance is below this, 0 to 1 (default 0.1; 0 keeps every chunk). \
             Relevance is the larger of the share of the question's word weight a chunk holds and how far its \
             similarity by meaning stands above the store's noise, relative to the best chunk's.",
            0.0,
            1.0,
        ),
    }
}

/// The relevance a recalled chunk needs by default (see [`RecallParams`]'s `min_relevance`).
/// Calibrated on the development sets (see BENCHMARKS.md).
pub const RECALL_MIN_RELEVANCE: f64 = 0.1;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallResult {
    pub query: String,
    pub chunks: Vec<RecallHit>,
    pub citations: Vec<Citation>,
    /// `fast` or `deep`: the vector tier that ranked the chunks; none when no embedder could
    /// embed the query.
    pub vector_tier: Option<TierKind>,
    /// What a date in the question was read to mean, so the caller can tell a misreading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_range: Option<DateRange>,
    /// Chunks among the best `k` left out for falling below `min_relevance`.
    pub held_back: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallHit {
    #[serde(flatten)]
    pub chunk: ChunkSummary,
    /// The fused score, in `0..=1`.
    pub score: f64,
    /// How well the chunk is backed, in `0..=1` (what `min_relevance` is compared with).
    pub relevance: f64,
    pub vector_score: Option<f32>,
    /// 1-based rank in the BM25 list.
    pub bm25_rank: Option<usize>,
    pub token_count: i64,
    /// Observed within the question's date range, or naming a day in it (present when the
    /// question names one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_date_range: Option<bool>,
    /// A chat hit's turns around the best match, the reply included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Vec<Turn>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    pub chunk_id: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Citation {
    pub chunk_id: String,
    pub source_kind: String,
    pub source_id: String,
    pub source_ref: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DateRange {
    /// The words of the question that named the date.
    pub text: String,
    pub from: String,
    pub until: String,
    /// How many chunks were observed in the range or name a day in it (0: nothing was stored
    /// then or about then); left out when more than 20,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<usize>,
}

pub struct Recall;

impl Operation for Recall {
    const METHOD: &'static str = "openhuman.memory_tree_recall";
    type Params = RecallParams;
    type Output = RecallResult;
    fn run(engine: &MemoryEngine, p: RecallParams) -> Result<RecallResult, MemoryError> {
        engine.recall(p)
    }
}

impl RecallParams {
    /// A recall of `query` with the default size and no filter.
    pub fn of(query: impl Into<String>) -> RecallParams {
        RecallParams {
            query: query.into(),
            limit: 10,
            filter: None,
            prefer_project: None,
            project_boost: None,
            as_of: None,
            min_relevance: None,
        }
    }
}

impl MemoryEngine {
    /// Hybrid recall: chunks with fused score, cosine and BM25 rank, plus citations and the
    /// vector tier that ranked them.
    pub fn recall(&self, p: RecallParams) -> Result<RecallResult, MemoryError> {
        let shape = Shaping::of(&p.prefer_project, p.project_boost, &p.as_of)?;
        let mut filter = filter_params::compile(&p.filter)?;
        shape.narrow(&mut filter);
        filter.settle_entities(&self.inner)?;
        let inner = &self.inner;
        let _query = inner.foreground.query();
        let conn = inner.read_conn()?;
        let k = p.limit;
        let span = dates::span_in(&p.query, shape.as_of.unwrap_or_else(now_ms));
        let want = shape.want(k);
        let pool = (want * 4).max(100);
        let ranked = search::rank(inner, &conn, &p.query, Mode::Hybrid, &filter, want, pool, span.as_ref())?;
        let hits = shape.boost(&conn, ranked.hits, Mode::Hybrid, k)?;
        // The query's words, and the neighbours a question its words answer poorly was widened to.
        let terms = ranked.judge.marked_words();
        let mut chunks = Vec::new();
        let mut citations = Vec::new();
        let mut loaded = shape.order(&conn, search::load_hits(&conn, hits)?)?;
        loaded.truncate(k);
        let min = p.min_relevance.unwrap_or(RECALL_MIN_RELEVANCE);
        let (kept, held_back) = search::apply_floor(&ranked.judge, loaded, min);
        for (c, h, relevance) in kept {
            let turns = if c.kind == SourceKind::Chat.as_str() { Some(chat_turns(&conn, &c, &terms)?) } else { None };
            chunks.push(RecallHit {
                chunk: ChunkSummary::with_snippet(&c, &terms),
                score: h.score,
                relevance,
                vector_score: h.vector_score,
                bm25_rank: h.bm25_rank,
                token_count: c.token_count,
                in_date_range: span.is_some().then_some(h.in_span),
                turns,
            });
            citations.push(Citation {
                chunk_id: c.id,
                source_kind: c.kind,
                source_id: c.source_id,
                source_ref: c.source_ref,
            });
        }
        let date_range = span.map(|s| DateRange {
            text: s.text,
            from: ms_to_rfc3339(s.from_ms),
            until: ms_to_rfc3339(s.to_ms),
            chunks: ranked.in_span,
        });
        Ok(RecallResult { query: p.query, chunks, citations, vector_tier: ranked.tier, date_range, held_back })
    }
}

/// The turns around the one in chat chunk `c` that matches `terms` best (its first turn when
/// none does): the answer to a question is usually the next turn, and it may have been packed
/// into the conversation's next chunk, so the window crosses into the neighbouring chunks of
/// the same conversation.
fn chat_turns(conn: &rusqlite::Connection, c: &ChunkRow, terms: &[String]) -> Result<Vec<Turn>, MemoryError> {
    let lines: Vec<&str> = c.content.lines().filter(|l| !l.trim().is_empty()).collect();
    let at = best_line(&lines.join("\n"), terms).unwrap_or(0);
    let turn = |id: &str, text: &str| Turn { chunk_id: id.to_string(), text: preview(text, TURN_CHARS) };
    let neighbour = |later: bool| -> Result<Option<(String, String)>, MemoryError> {
        let sql = if later {
            "SELECT id, content FROM chunks WHERE source_id = ?1 AND (timestamp_ms, rowid) > (?2, ?3) \
             ORDER BY timestamp_ms, rowid LIMIT 1"
        } else {
            "SELECT id, content FROM chunks WHERE source_id = ?1 AND (timestamp_ms, rowid) < (?2, ?3) \
             ORDER BY timestamp_ms DESC, rowid DESC LIMIT 1"
        };
        Ok(conn
            .prepare_cached(sql)?
            .query_row(rusqlite::params![c.source_id, c.timestamp_ms, c.rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    };
    let mut out = Vec::new();
    if at < TURNS_BEFORE
        && let Some((id, text)) = neighbour(false)?
    {
        let prev: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        out.extend(prev[prev.len().saturating_sub(TURNS_BEFORE - at)..].iter().map(|l| turn(&id, l)));
    }
    let end = (at + TURNS_AFTER + 1).min(lines.len());
    out.extend(lines[at.saturating_sub(TURNS_BEFORE)..end].iter().map(|l| turn(&c.id, l)));
    let missing = at + TURNS_AFTER + 1 - end;
    if missing > 0
        && let Some((id, text)) = neighbour(true)?
    {
        out.extend(text.lines().filter(|l| !l.trim().is_empty()).take(missing).map(|l| turn(&id, l)));
    }
    Ok(out)
}
