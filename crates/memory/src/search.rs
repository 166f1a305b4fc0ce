//! Ranking: BM25 (tantivy), vector similarity (exact scan) and their hybrid, a weighted blend
//! of max-normalised scores (see `fuse`), with the filter applied to the fused list; in hybrid
//! ranking, one-turn chat hits lend score to the turns beside them (`spread_to_neighbours`);
//! the relevance floor (`Judge`, `apply_floor`): what a hit must show, in signals that mean
//! the same in every store, to be returned at all; plus loading the ranked chunks' rows from
//! SQLite, with their tags and, for a chunk a newer one replaced (see `facts`), its
//! `superseded` mark.
//!
//! Filtering strategy: when a filter matches few chunks (≤ `RESTRICT_CAP`) both
//! rankers run only over those chunks; otherwise the rankers run unrestricted and the
//! fused candidates are filtered, widening the candidate pool until enough survive.

use std::collections::{HashMap, HashSet};

use rusqlite::params;
use serde::Serialize;

use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde_json::{Map, Value};

use super::dates::Span;
use super::filter::Filter;
use super::fts::QueryTerms;
use super::locks::read;
use super::sql::rarray;
use super::tier::TierKind;
use super::util::ms_to_rfc3339;
use super::{Inner, MemoryError};

const RESTRICT_CAP: usize = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Keyword,
    Vector,
    Hybrid,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "keyword" => Some(Mode::Keyword),
            "vector" => Some(Mode::Vector),
            "hybrid" => Some(Mode::Hybrid),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub rowid: i64,
    /// BM25 score (keyword), cosine (vector) or the blend of both (hybrid, in `0..=1`).
    pub score: f64,
    /// 1-based rank in the BM25 list.
    pub bm25_rank: Option<usize>,
    pub vector_score: Option<f32>,
    /// For a packed chat chunk read by its windows of a few turns, the best window's cosine
    /// (see [`window_cosines`]).
    pub window_cos: Option<f32>,
    /// Observed within the span of time the query names.
    pub in_span: bool,
    /// Kept for its date alone: the query asks about the span it names ("what happened on 3
    /// November?"; see [`date_question`]).
    pub by_date: bool,
    /// The chat hit beside it in its conversation that lent it score (see
    /// `spread_to_neighbours`), when it gained more from that than it scored itself.
    pub context_of: Option<i64>,
    /// Of another kind than the best hit holding a name the query writes, and lacking it (see
    /// `focus_on_name`): the relevance floor holds it back.
    pub lacks_name: bool,
    /// Outside the span of a [question about the span](date_question): the relevance floor
    /// holds it back unless it holds a word of the question.
    pub off_date: bool,
}

impl Hit {
    /// A hit on `rowid` that no list has scored yet.
    fn new(rowid: i64) -> Hit {
        Hit {
            rowid,
            score: 0.0,
            bm25_rank: None,
            vector_score: None,
            window_cos: None,
            in_span: false,
            by_date: false,
            context_of: None,
            lacks_name: false,
            off_date: false,
        }
    }
}

/// Ranked hits and the vector tier that ranked them (`None`: keywords only), with what the
/// relevance floor needs to judge them.
pub(crate) struct Ranked {
    pub hits: Vec<Hit>,
    pub tier: Option<TierKind>,
    pub judge: Judge,
    /// How many chunks the caller's filter lets through were observed in the span the query
    /// names; `None` without a span, or when they are more than [`RESTRICT_CAP`].
    pub in_span: Option<usize>,
}

/// Merges the ranked lists. Keyword and vector modes keep their ranker's score. Hybrid blends
/// the two scores after scaling each to its list's best, `(1 − w)·bm25/bm25₁ +
/// w·(cos − c₀)/(cos₁ − c₀)`, with `w` the embedder's
/// [`fusion_weight`](crate::embed::Embedder::fusion_weight) (for a chunk in `chat`, its
/// [`chat_fusion_weight`](crate::embed::Embedder::chat_fusion_weight)), `c₀` the query's mean
/// cosine with a sample of the store (`Weights::base`), and a chunk missing from a list, or at
/// or below `c₀`, scoring 0 there. Counting cosines from `c₀` rather than from 0 matters for
/// models whose unrelated texts meet well above 0 (bge-small-en-v1.5: about 0.3): divided by
/// the best alone, a chunk about something else would keep most of the vector share. Unlike
/// reciprocal-rank fusion this keeps how far ahead a confident first hit is, so a weak vector
/// ranker refines keyword order instead of pulling a clear keyword winner down behind chunks
/// both rankers only half like.
fn fuse(mode: Mode, bm: &[(i64, f32)], vs: &[(i64, f32)], weights: &Weights) -> Vec<Hit> {
    let weight = |rowid: i64| weights.of(rowid).clamp(0.0, 1.0);
    let mut hits: HashMap<i64, Hit> = HashMap::with_capacity(bm.len() + vs.len());
    let top = |list: &[(i64, f32)]| list.iter().map(|&(_, s)| s as f64).fold(0.0, f64::max);
    let bm_top = top(bm);
    for (i, &(rowid, score)) in bm.iter().enumerate() {
        let h = hits.entry(rowid).or_insert_with(|| Hit::new(rowid));
        h.bm25_rank = Some(i + 1);
        h.score += match mode {
            Mode::Keyword => score as f64,
            _ if bm_top > 0.0 => (1.0 - weight(rowid)) * score as f64 / bm_top,
            _ => 0.0,
        };
    }
    // A vector at or below zero similarity is unrelated, whatever its rank.
    let vs: Vec<(i64, f32)> = vs.iter().copied().filter(|v| v.1 > 0.0).collect();
    let vs_top = top(&vs) - weights.base as f64;
    for &(rowid, score) in &vs {
        let h = hits.entry(rowid).or_insert_with(|| Hit::new(rowid));
        h.vector_score = Some(score);
        h.score += match mode {
            Mode::Vector => score as f64,
            _ if vs_top > 0.0 => weight(rowid) * ((score - weights.base) as f64).max(0.0) / vs_top,
            _ => 0.0,
        };
    }
    let mut out: Vec<Hit> = hits.into_values().collect();
    out.sort_by(order);
    out
}

/// The blend's vector weight for each candidate: one for chat chunks, one for the rest; and the
/// cosine the vector share is counted from.
struct Weights {
    other: f64,
    chat: f64,
    chats: HashSet<i64>,
    /// The query's mean cosine with the store's sample (`VectorNoise::mean`), at least 0; 0 in a
    /// store of fewer than [`BASE_MIN_ROWS`] vectors.
    base: f32,
}

impl Weights {
    /// One weight for every chunk.
    #[cfg(test)]
    fn all(w: f64) -> Weights {
        Weights { other: w, chat: w, chats: HashSet::new(), base: 0.0 }
    }

    fn of(&self, rowid: i64) -> f64 {
        if self.chats.contains(&rowid) { self.chat } else { self.other }
    }
}

/// Which of `rows` are chat chunks.
fn chat_rows(conn: &Connection, rows: impl Iterator<Item = i64>) -> Result<HashSet<i64>, MemoryError> {
    let rows: Vec<i64> = rows.collect();
    let mut q = conn.prepare_cached("SELECT rowid FROM chunks WHERE rowid IN rarray(?1) AND source_kind = 'chat'")?;
    let found = q.query_map([rarray(&rows)], |r| r.get(0))?.collect::<Result<_, _>>()?;
    Ok(found)
}

/// Best first: by score, then by meaning (the larger cosine), then by BM25 rank, then newest.
/// Scores tie when meaning has half the say and the best keyword hit is not the best by
/// meaning (a question its words answer poorly): the two each score 0.5, and what the question
/// means decides.
fn order(a: &Hit, b: &Hit) -> std::cmp::Ordering {
    let cos = |h: &Hit| h.vector_score.unwrap_or(f32::MIN);
    b.score
        .total_cmp(&a.score)
        .then_with(|| cos(b).total_cmp(&cos(a)))
        .then_with(|| a.bm25_rank.unwrap_or(usize::MAX).cmp(&b.bm25_rank.unwrap_or(usize::MAX)))
        .then_with(|| b.rowid.cmp(&a.rowid))
}

/// One ranked list from two of the same ranker (scores comparable), best first, each chunk once.
fn merge(mut a: Vec<(i64, f32)>, b: Vec<(i64, f32)>) -> Vec<(i64, f32)> {
    let seen: std::collections::HashSet<i64> = a.iter().map(|x| x.0).collect();
    a.extend(b.into_iter().filter(|x| !seen.contains(&x.0)));
    a.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| y.0.cmp(&x.0)));
    a
}

/// What a hybrid hit observed within the span a query names gains, in blended units (where
/// the best hit of both rankers scores 1): a chunk from the named day with a keyword match half
/// as strong as the best one elsewhere still comes first.
pub(crate) const SPAN_BOOST: f64 = 0.3;

/// The best `want` hits for `query` (and the vector tier that ranked them), taking `pool`
/// candidates from each ranker first, and preferring chunks observed within `span` when one is given: the rankers also draw candidates from
/// inside it (when it holds few enough chunks to restrict them), and in hybrid mode a hit
/// inside it gains [`SPAN_BOOST`]. Chunks outside stay eligible, so a date read wrongly
/// reorders hits but never hides them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rank(
    inner: &Inner,
    conn: &Connection,
    query: &str,
    mode: Mode,
    filter: &Filter,
    want: usize,
    pool: usize,
    span: Option<&Span>,
) -> Result<Ranked, MemoryError> {
    let mut terms = inner.fts.query_terms(query);
    // The deep tier once it covers every chunk, else the fast one; neither (keywords only)
    // when no embedder can embed the query.
    let qvec = if mode == Mode::Keyword { None } else { inner.query_vector(query) };
    let (weight, chat_weight) = qvec
        .as_ref()
        .map_or((0.0, 0.0), |(_, tier)| (tier.embedder.fusion_weight(), tier.embedder.chat_fusion_weight()));
    let mut dfs = inner.fts.doc_freqs(&terms.words);
    let mut idf = inner.fts.idf_of(&dfs);
    // The share of the question's word weight in words that no chunk holds (numbers aside: a
    // date or an amount the store lacks says nothing of the words it uses).
    let absent: Vec<bool> =
        dfs.iter().zip(&terms.words).map(|(&df, w)| df == 0 && !w.bytes().any(|b| b.is_ascii_digit())).collect();
    let absent = share(&absent, &idf);
    // The numbers of the date a question names ("20" and "2024" of "20 November 2024", the
    // marks of "2024年11月20日") and the words that say which day, week or month it is ("next" of
    // "next Friday") are read as the span only, not matched as words: as words they found every
    // chat message sent at 20:00 or on the 20th (each message's stamp is in its chunk's text),
    // any amount of 20, and any note saying "next". A chunk observed in the span holds their
    // weight for the relevance floor (`Judge::dated`).
    let mut dated = 0.0;
    let date: Vec<String> = span.map(|s| QueryTerms::parse(&s.text).words).unwrap_or_default();
    if let Some(span) = span {
        let mut which: Vec<String> = Vec::new();
        crate::fts::for_each_word(&span.text, |_, _, lower| {
            if super::dates::says_which(lower) {
                which.push(crate::fts::stem(lower).into_owned());
            }
        });
        let placing = |w: &String| {
            date.contains(w) && (which.contains(w) || w.chars().all(|c| c.is_ascii_digit() || crate::fts::is_cjk(c)))
        };
        if terms.words.iter().any(|w| !placing(w)) {
            let keep: Vec<bool> = terms.words.iter().map(|w| !placing(w)).collect();
            dated = idf.iter().zip(&keep).filter(|(_, k)| !**k).map(|(w, _)| w).sum();
            retain_where(&mut terms.words, &keep);
            retain_where(&mut dfs, &keep);
            retain_where(&mut idf, &keep);
        }
    }
    // The query's cosines with a sample of the store: where the blend counts cosines from, and
    // what the relevance floor reads a cosine against.
    let background = qvec.as_ref().and_then(|(q, tier)| read(&tier.vectors).background(q, BACKGROUND_ROWS));
    let base = background.filter(|b| b.2 >= BASE_MIN_ROWS).map_or(0.0, |b| b.0.max(0.0));
    let restrict = if filter.is_empty() { None } else { filter.matching_if_few(conn, RESTRICT_CAP)? };
    // The caller's filter narrowed to the span (time bounds are inclusive).
    let within = span.map(|s| Filter {
        after_ms: Some(filter.after_ms.map_or(s.from_ms, |a| a.max(s.from_ms))),
        before_ms: Some(filter.before_ms.map_or(s.to_ms - 1, |b| b.min(s.to_ms - 1))),
        ..filter.clone()
    });
    // The chunks observed in the span, and those that mention a day in it ("the dentist on 21
    // January", written in December), which count as in it.
    let mut mentioned: HashSet<i64> = HashSet::new();
    let in_span = match (&within, span) {
        (Some(f), Some(span)) => f.matching_if_few(conn, RESTRICT_CAP)?.map(|mut ids| -> Result<_, MemoryError> {
            let observed: HashSet<i64> = ids.iter().copied().collect();
            mentioned = mentioning(inner, conn, span, filter)?;
            ids.extend(mentioned.iter().filter(|id| !observed.contains(id)));
            Ok(ids)
        }),
        _ => None,
    }
    .transpose()?;
    let mut pool = pool.max(want);
    // The span's own chunks by likeness, best first: candidates, and what a question about the
    // span lists.
    let mut span_vs: Vec<(i64, f32)> = Vec::new();
    // Whether the words answer the question poorly (`weak_keywords`), read on the first round
    // (a larger pool has the same best hits), and the neighbours such a question's words are
    // widened to, with their keyword boosts.
    let mut known_weak: Option<Option<f64>> = None;
    let mut near = Near::default();
    let mut extra: Vec<(String, f32)> = Vec::new();
    // Packed chat chunks are also ranked by their best few turns, each chunk read once however
    // many rounds the pool grows.
    let mut turn_words: HashMap<i64, f64> = HashMap::new();
    // Lone chat messages weigh the words only their context holds less, each read once.
    let mut context_factors: HashMap<i64, f64> = HashMap::new();
    let mut texts = ChatTexts::default();
    let mut turns = match &qvec {
        Some((q, tier)) if mode == Mode::Hybrid => TurnWindows::new(inner, query, q, tier, background),
        _ => None,
    };
    loop {
        let keyword = |only: Option<&[i64]>, extra: &[(String, f32)]| match mode {
            Mode::Vector => Ok(Vec::new()),
            _ => inner.fts.search(&terms, extra, pool, only),
        };
        let vector = |only: Option<&[i64]>| match &qvec {
            // Unfiltered candidates may come from the shared store's index (`sharedvec`).
            Some((q, tier)) => only
                .is_none()
                .then(|| super::sharedvec::search(inner, tier, q, pool))
                .flatten()
                .unwrap_or_else(|| read(&tier.vectors).search(q, pool, only)),
            None => Vec::new(),
        };
        let mut bm = keyword(restrict.as_deref(), &extra)?;
        let mut vs = vector(restrict.as_deref());
        // Questions the words answer poorly lean on meaning, and their words' neighbours count
        // as keywords too.
        let weak = match known_weak {
            Some(weak) => weak,
            None => {
                let weak = match mode {
                    Mode::Hybrid => weak_keywords(conn, &mut texts, &bm, &terms.words, &idf, absent)?.or_else(|| {
                        meaning_disagrees(qvec.as_ref()?, background?, &bm, &vs).then_some(DISAGREE_COVERAGE)
                    }),
                    _ => None,
                };
                if weak.is_some() {
                    near = near_words(query, &terms.words, &idf);
                    extra = near.boosts();
                    if !extra.is_empty() {
                        bm = keyword(restrict.as_deref(), &extra)?;
                    }
                }
                known_weak = Some(weak);
                weak
            }
        };
        // A ranker is spent when it gave fewer than asked, or (vectors, best first) reached a
        // cosine at or below zero, which `fuse` drops: asking it for more would give only more
        // of those. Without the second rule a query few chunks of a large store are alike to
        // could grow the pool fourfold, round after round, until it held every row.
        let vectors_spent = vs.len() < pool || vs.last().is_some_and(|v| v.1 <= 0.0);
        let exhausted = bm.len() < pool && vectors_spent;
        let windows = match &mut turns {
            Some(t) => t.cosines(conn, &mut texts, &bm, &vs)?,
            None => HashMap::new(),
        };
        let chunk_cos: HashMap<i64, f32> =
            if windows.is_empty() { HashMap::new() } else { vs.iter().copied().collect() };
        if !windows.is_empty() {
            vs = windowed(&vs, &windows);
        }
        if let Some(ids) = &in_span {
            bm = merge(bm, keyword(Some(ids), &extra)?);
            span_vs = vector(Some(ids));
            vs = merge(vs, span_vs.clone());
        }
        // After the span's candidates joined, so that each is scaled once.
        if mode == Mode::Hybrid {
            keyword_windows(conn, &mut texts, &mut bm, &terms.words, &idf, &mut turn_words)?;
        }
        if mode != Mode::Vector {
            context_words(conn, &mut texts, &mut bm, &terms.words, &idf, &mut context_factors)?;
        }
        // Meaning has at least the say of the part of the question only it can read (in chat
        // chunks, [`WEAK_KEYWORDS_CHAT_WEIGHT`] of it).
        let (floor, lacking) = match weak {
            Some(c) if qvec.is_some() => (1.0 - c, if absent >= ABSENT_WEAK { absent } else { 0.0 }),
            _ => (0.0, 0.0),
        };
        let (weight, chat_weight) =
            (weight.max(floor).max(lacking), chat_weight.max(WEAK_KEYWORDS_CHAT_WEIGHT * floor));
        // Looked up only when chat is weighed apart from the rest.
        let chats = if mode == Mode::Hybrid && chat_weight != weight {
            chat_rows(conn, bm.iter().chain(&vs).map(|x| x.0))?
        } else {
            Default::default()
        };
        let mut fused = fuse(mode, &bm, &vs, &Weights { other: weight, chat: chat_weight, chats, base });
        // A hit keeps its own cosine beside its best window's.
        for h in fused.iter_mut().filter(|h| windows.contains_key(&h.rowid)) {
            h.window_cos = h.vector_score;
            h.vector_score = chunk_cos.get(&h.rowid).copied();
        }
        if !filter.is_empty() && restrict.is_none() {
            let ids: Vec<i64> = fused.iter().map(|h| h.rowid).collect();
            let keep = filter.retain(conn, &ids)?;
            fused.retain(|h| keep.contains(&h.rowid));
        }
        if let Some(within) = &within {
            let ids: Vec<i64> = fused.iter().map(|h| h.rowid).collect();
            let inside = within.retain(conn, &ids)?;
            for h in fused.iter_mut().filter(|h| inside.contains(&h.rowid) || mentioned.contains(&h.rowid)) {
                h.in_span = true;
                if mode == Mode::Hybrid {
                    h.score += SPAN_BOOST;
                }
            }
            fused.sort_by(order);
        }
        if mode == Mode::Hybrid {
            let cosines = |rows: &[i64]| match &qvec {
                Some((q, tier)) => read(&tier.vectors).search(q, rows.len(), Some(rows)),
                None => Vec::new(),
            };
            spread_to_neighbours(conn, &mut fused, filter, &cosines)?;
            focus_on_name(conn, &mut fused, query, &terms.words)?;
            focus_on_speaker(inner, conn, &mut fused, &terms.words)?;
        }
        if fused.len() >= want || exhausted || restrict.is_some() {
            // Also when nothing was observed in the span: the hits of other days are then
            // judged the same way.
            if mode == Mode::Hybrid
                && let Some(ids) = &in_span
                && date_question(&terms, &dfs, &date)
            {
                by_date(conn, &mut fused, ids, &span_vs, want)?;
                // Its words that only ask what took place ("happened", "say") are no match
                // for the relevance floor: a mail outside the span that says "happen" is not
                // what was asked.
                for (w, weight) in terms.words.iter().zip(idf.iter_mut()) {
                    if super::dates::is_event_word(w) {
                        *weight = 0.0;
                    }
                }
            }
            fused.truncate(want);
            let noise = background.map(|b| VectorNoise::new(b, vs.iter().map(|v| v.1).fold(f32::MIN, f32::max)));
            let judge = Judge { dated, ..Judge::new(terms.words, idf, noise, near, weak.map(|_| weak_bar(absent))) };
            let in_span = in_span.as_ref().map(Vec::len);
            return Ok(Ranked { hits: fused, tier: qvec.map(|(_, t)| t.kind), judge, in_span });
        }
        pool *= 4;
    }
}

/// The longest span looked up by the days texts mention (a month and a little).
const MENTION_DAYS: i64 = 62;
/// How many chunks that name a month of the span are read for the days they mention.
const MENTION_CANDIDATES: usize = 200;

/// The chunks (passing `filter`) that mention a day within `span` in words: among the best
/// [`MENTION_CANDIDATES`] keyword hits on the names of its months, those whose text names a day
/// in it (`dates::mentioned_days`, a day without a year read near when the chunk was observed).
fn mentioning(inner: &Inner, conn: &Connection, span: &Span, filter: &Filter) -> Result<HashSet<i64>, MemoryError> {
    let months = super::dates::months_of(span, MENTION_DAYS);
    if months.is_empty() {
        return Ok(HashSet::new());
    }
    let named = inner.fts.search(&QueryTerms::parse(&months.join(" ")), &[], MENTION_CANDIDATES, None)?;
    let ids: Vec<i64> = named.iter().map(|x| x.0).collect();
    let mut found: Vec<i64> = Vec::new();
    let mut q = conn.prepare_cached("SELECT rowid, content, timestamp_ms FROM chunks WHERE rowid IN rarray(?1)")?;
    let mut rows = q.query([rarray(&ids)])?;
    while let Some(r) = rows.next()? {
        let (rowid, content, at): (i64, String, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let Some(observed) = chrono::DateTime::from_timestamp_millis(at).map(|t| t.date_naive()) else { continue };
        if super::dates::mentioned_days(&content, observed).into_iter().any(|d| super::dates::day_in(d, span)) {
            found.push(rowid);
        }
    }
    if !filter.is_empty() && !found.is_empty() {
        return Ok(filter.retain(conn, &found)?.into_iter().collect());
    }
    Ok(found.into_iter().collect())
}

/// Keeps the items of `v` whose flag in `keep` (one per item, in order) is set.
fn retain_where<T>(v: &mut Vec<T>, keep: &[bool]) {
    let mut k = keep.iter();
    v.retain(|_| k.next().copied().unwrap_or(true));
}

// ---- questions about a day ----

/// Whether a query that names a span (its words `date`) asks about the span itself (when the span holds chunks):
/// the query's other words (those left when the date's words, stop words and the
/// [words that only ask what took place](dates::is_event_word) are taken out) are none, or
/// in no chunk of the store (`dfs`, the document frequency of each of `terms.words`). "What
/// happened on 3 November?", "what did I do yesterday?" and "was war am 3. November?" are;
/// "what did Claire say on 12 November?" and "the budget meeting last week" are not: they are
/// ranked by their words, the span's chunks first.
fn date_question(terms: &QueryTerms, dfs: &[u64], date: &[String]) -> bool {
    terms.words.iter().zip(dfs).all(|(w, &df)| df == 0 || date.contains(w) || super::dates::is_event_word(w))
}

/// What a hit inside the span of a [question about the span](date_question) gains on top of
/// its score, so that the span's chunks come before every hit outside it (a blended score is
/// about 1 at most, with [`SPAN_BOOST`] on top for a hit inside the span).
const BY_DATE_LIFT: f64 = 1.0 + SPAN_BOOST;

/// For a [question about a span](date_question): lifts the hits inside the span above the rest,
/// marked as kept for their date, and adds the span's chunks that are not hits yet (the most
/// alike to the query first, by `cosines`, best first; then in time order) up to `want` of them.
/// Hits outside the span stay, after them: a date read as the latest such day ("on Friday") may
/// have meant the next one, and a note that says "Friday" is then what was asked for.
fn by_date(
    conn: &Connection,
    fused: &mut Vec<Hit>,
    ids: &[i64],
    cosines: &[(i64, f32)],
    want: usize,
) -> Result<(), MemoryError> {
    for h in fused.iter_mut() {
        if h.in_span {
            (h.score, h.by_date) = (h.score + BY_DATE_LIFT, true);
        } else {
            h.off_date = true;
        }
    }
    let mut inside = fused.iter().filter(|h| h.in_span).count();
    let mut have: HashSet<i64> = fused.iter().map(|h| h.rowid).collect();
    let mut candidates: Vec<(i64, Option<f32>)> = cosines.iter().map(|&(r, c)| (r, Some(c))).collect();
    // Without vectors, or a span with fewer alike chunks than asked: the rest in time order, as
    // many as could still be new.
    if inside + candidates.iter().filter(|c| !have.contains(&c.0)).count() < want {
        let mut q = conn.prepare_cached(
            "SELECT rowid FROM chunks WHERE rowid IN rarray(?1) ORDER BY timestamp_ms, rowid LIMIT ?2",
        )?;
        let limit = (want + have.len() + candidates.len()) as i64;
        let rows = q.query_map(params![rarray(ids), limit], |r| r.get::<_, i64>(0))?;
        for rowid in rows {
            candidates.push((rowid?, None));
        }
    }
    for (rowid, cos) in candidates {
        if inside >= want {
            break;
        }
        if have.insert(rowid) {
            let mut h = Hit::new(rowid);
            (h.score, h.vector_score, h.in_span, h.by_date) = (BY_DATE_LIFT, cos, true, true);
            fused.push(h);
            inside += 1;
        }
    }
    fused.sort_by(order);
    Ok(())
}

// ---- a packed chat chunk's best few turns ----

/// Lines (chat turns) a window holds: a turn with the one before and the one after it, where a
/// question and its answer usually are.
const WINDOW_LINES: usize = 3;
/// Chat chunks among the first this many of each ranker's list are read by their windows.
const WINDOW_CANDIDATES: usize = 30;

/// A query's mean cosine with a tier's sample of the store, and their deviation.
type Spread = (f32, f32);

/// Reads the chat chunks among the first [`WINDOW_CANDIDATES`] of a query's ranked lists by
/// their best window of [`WINDOW_LINES`] turns. A packed chunk of ten turns is about several
/// things, and its one vector is a little like each: the turns a question is about are read on
/// their own. Windows come from an embedder that gives them for little more than embedding the
/// text once ([`Embedder::line_windows`](crate::embed::Embedder::line_windows): the built-in
/// table). When the deep tier answers, its model cannot (each window would be a model run at
/// query time), so the fast tier's table reads the windows and each window's cosine is carried
/// to the deep tier's scale by its standing above the store: a window as many deviations above
/// the fast tier's mean cosine with the query as a chunk is above the deep tier's counts as
/// alike as that chunk, less [`CARRIED_STANDING`]. On the LoCoMo development conversations in
/// the default chunking this took the deep tier's R@10 from 0.904 to 0.922 (BENCHMARKS.md).
struct TurnWindows<'a> {
    /// The tier whose embedder reads the windows: the answering one, or the fast one for the deep.
    reader: &'a crate::tier::Tier,
    /// The query as `reader` reads it; embedded when the first chat chunk comes (`carry` only).
    query: Option<Vec<f32>>,
    text: &'a str,
    /// When the fast tier reads windows for the deep one: the deep tier's background (mean,
    /// deviation), then, once the query is embedded, the fast tier's.
    carry: Option<(Spread, Option<Spread>)>,
    /// Every candidate looked at so far, with its best window's cosine on the answering tier's
    /// scale (`None`: not chat, or no more lines than a window).
    read: HashMap<i64, Option<f32>>,
}

impl<'a> TurnWindows<'a> {
    /// `None` when no tier can give windows for this query.
    fn new(
        inner: &'a Inner,
        text: &'a str,
        q: &[f32],
        tier: &'a crate::tier::Tier,
        background: Option<(f32, f32, usize)>,
    ) -> Option<TurnWindows<'a>> {
        let gives = |t: &crate::tier::Tier| t.embedder.line_windows("", WINDOW_LINES).is_some();
        if gives(tier) {
            return Some(TurnWindows {
                reader: tier,
                query: Some(q.to_vec()),
                text,
                carry: None,
                read: HashMap::new(),
            });
        }
        let fast = inner.tier(TierKind::Fast).filter(|f| tier.kind == TierKind::Deep && gives(f))?;
        let (mean, sd, _) = background.filter(|b| b.2 >= MIN_BACKGROUND && b.1 > f32::EPSILON)?;
        Some(TurnWindows { reader: fast, query: None, text, carry: Some(((mean, sd), None)), read: HashMap::new() })
    }

    /// The fast tier's query vector and background, once; `false` when they cannot be had (no
    /// window is read then).
    fn ready(&mut self) -> bool {
        if self.query.is_some() {
            return true;
        }
        let Some((to, _)) = self.carry else { return false };
        let q = self.reader.embed_query(self.text).ok();
        match q.as_ref().and_then(|q| read(&self.reader.vectors).background(q, BACKGROUND_ROWS)) {
            Some((mean, sd, rows)) if rows >= MIN_BACKGROUND && sd > f32::EPSILON => {
                self.carry = Some((to, Some((mean, sd))));
                self.query = q;
                true
            }
            // Not asked again for the next chunk.
            _ => {
                self.carry = None;
                false
            }
        }
    }

    /// The best window cosine of each packed chat chunk among the first candidates of `bm` and
    /// `vs`, on the answering tier's scale.
    fn cosines(
        &mut self,
        conn: &Connection,
        texts: &mut ChatTexts,
        bm: &[(i64, f32)],
        vs: &[(i64, f32)],
    ) -> Result<HashMap<i64, f32>, MemoryError> {
        let listed = || bm.iter().take(WINDOW_CANDIDATES).chain(vs.iter().take(WINDOW_CANDIDATES)).map(|x| x.0);
        texts.load(conn, listed())?;
        for r in listed() {
            if !self.read.contains_key(&r) {
                let best = match texts.get(r) {
                    Some(content) if self.ready() => self.best(content),
                    _ => None,
                };
                self.read.insert(r, best);
            }
        }
        Ok(listed().filter_map(|r| self.read.get(&r).copied().flatten().map(|c| (r, c))).collect())
    }

    /// One chunk's best window cosine on the answering tier's scale; `None` for a chunk of no
    /// more lines than a window, which is read whole already.
    fn best(&self, content: &str) -> Option<f32> {
        let q = self.query.as_deref()?;
        let windows = self.reader.embedder.line_windows(content, WINDOW_LINES)?;
        if windows.len() <= WINDOW_LINES {
            return None;
        }
        let best = windows.iter().map(|w| crate::vectors::dot(w, q)).fold(f32::MIN, f32::max);
        if !best.is_finite() {
            return None;
        }
        Some(match self.carry {
            Some((to, Some(from))) => carried(best, from, to),
            _ => best,
        })
    }
}

/// The text of the chat chunks among a query's candidates, with the message a lone one answers
/// (its `context`), each read from the database once however many of the readers below ask and
/// however many rounds the pool grows (`None`: not chat).
#[derive(Default)]
struct ChatTexts(HashMap<i64, Option<ChatText>>);

/// A chat chunk's text and its `context`.
type ChatText = (String, Option<String>);

impl ChatTexts {
    fn load(&mut self, conn: &Connection, rows: impl Iterator<Item = i64>) -> Result<(), MemoryError> {
        let mut missing: Vec<i64> = Vec::new();
        for r in rows {
            if !self.0.contains_key(&r) && !missing.contains(&r) {
                missing.push(r);
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let mut st = conn.prepare_cached(
            "SELECT rowid, content, json_extract(metadata, '$.context') FROM chunks \
             WHERE rowid IN rarray(?1) AND source_kind = 'chat'",
        )?;
        let mut found = st.query([rarray(&missing)])?;
        while let Some(r) = found.next()? {
            self.0.insert(r.get(0)?, Some((r.get(1)?, r.get(2)?)));
        }
        for r in missing {
            self.0.entry(r).or_insert(None);
        }
        Ok(())
    }

    /// Keeps a candidate's text read elsewhere (`None`: not chat).
    fn keep(&mut self, rowid: i64, chat_text: Option<ChatText>) {
        self.0.entry(rowid).or_insert(chat_text);
    }

    fn get(&self, rowid: i64) -> Option<&str> {
        self.0.get(&rowid).and_then(|c| c.as_ref()).map(|c| c.0.as_str())
    }

    /// A lone chat message's `context`.
    fn context(&self, rowid: i64) -> Option<&str> {
        self.0.get(&rowid).and_then(|c| c.as_ref()).and_then(|c| c.1.as_deref())
    }
}

/// The share of its standing a window of turns keeps when carried to the deep tier's scale.
/// A window is three turns, about a third of a packed chunk, and the cosines of such short texts
/// spread wider over a store than those of the whole chunks the standing is counted against: at
/// full standing, "where are we staying on vacation", asked of notes beside a chat export, was
/// answered by a chat window that says "have fun and stay safe" and not by the note on the summer
/// trip. On the LoCoMo development conversations (default chunking, deep tier R@10): 0.5 0.917,
/// 0.7 0.922, 0.8 0.927, 0.9 0.928, 1 0.933, and 0.904 without windows; 0.7 is the largest
/// that kept the note first.
const CARRIED_STANDING: f32 = 0.7;

/// Scales the keyword score of each packed chat chunk among the first [`WINDOW_CANDIDATES`] of
/// `bm` by the square root of the share of its matched query weight that its best window of
/// [`WINDOW_LINES`] turns holds, and sorts `bm` again. Ten turns hold many words between them:
/// "when do we get the keys to the new place" matched a chat chunk with "place" in one turn,
/// "key" in another and "getting" in a third above the note on the flat move, which holds
/// "keys" and "new" in one sentence. A chunk whose words meet in a few turns keeps its score.
/// `ratios` keeps each chunk's factor across the pool's rounds (1 for chunks not scaled).
/// On the LoCoMo development conversations (default chunking, built-in tier) recall R@10 went
/// from 0.921 to 0.926; the plain share gave 0.926 too, its square 0.922.
fn keyword_windows(
    conn: &Connection,
    texts: &mut ChatTexts,
    bm: &mut [(i64, f32)],
    terms: &[String],
    idf: &[f64],
    ratios: &mut HashMap<i64, f64>,
) -> Result<(), MemoryError> {
    texts.load(conn, bm.iter().take(WINDOW_CANDIDATES).map(|x| x.0))?;
    for &(r, _) in bm.iter().take(WINDOW_CANDIDATES) {
        ratios.entry(r).or_insert_with(|| texts.get(r).map_or(1.0, |c| best_window_share(c, terms, idf)));
    }
    scale_keyword_scores(bm, ratios);
    Ok(())
}

/// Multiplies each keyword hit's score by its factor in `factors` (those below 1 only), and
/// ranks the list again when one changed.
fn scale_keyword_scores(bm: &mut [(i64, f32)], factors: &HashMap<i64, f64>) {
    let mut changed = false;
    for x in bm.iter_mut() {
        if let Some(&k) = factors.get(&x.0).filter(|k| **k < 1.0) {
            x.1 = (f64::from(x.1) * k) as f32;
            changed = true;
        }
    }
    if changed {
        bm.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }
}

/// The share of its keyword score that a lone chat message keeps for the words it matches only
/// in its context (the message it answers, which the index reads with it): those words are the
/// other message's, so a message that says them itself ranks first, and the reply after it. On
/// the LoCoMo development conversations, one turn a chunk: without it recall R@5 / R@10 0.708 /
/// 0.789 and `memory.search` 0.643 / 0.720; at 0.9 0.713 / 0.791, **0.8** 0.715 / 0.797 and
/// 0.651 / 0.720, 0.7 0.720 / 0.797, 0.6 0.709 / 0.789.
const CONTEXT_WORDS: f64 = 0.8;

/// Scales the keyword scores of the lone chat messages among the first [`WINDOW_CANDIDATES`]
/// keyword hits that match words in their `context`: by [`CONTEXT_WORDS`] for the share of
/// their matched word weight (idf) found only there. `factors` keeps each chunk's factor across
/// the pool's rounds (1 for chunks not scaled), as [`keyword_windows`] does.
fn context_words(
    conn: &Connection,
    texts: &mut ChatTexts,
    bm: &mut [(i64, f32)],
    terms: &[String],
    idf: &[f64],
    factors: &mut HashMap<i64, f64>,
) -> Result<(), MemoryError> {
    texts.load(conn, bm.iter().take(WINDOW_CANDIDATES).map(|x| x.0))?;
    for &(r, _) in bm.iter().take(WINDOW_CANDIDATES) {
        factors.entry(r).or_insert_with(|| match (texts.get(r), texts.context(r)) {
            (Some(content), Some(context)) => {
                let own = found_in(None, content, terms);
                let mut both = own.clone();
                mark_terms(context, terms, &mut both);
                let matched = weight_of(&both, idf);
                if matched > 0.0 { 1.0 - (1.0 - CONTEXT_WORDS) * (1.0 - weight_of(&own, idf) / matched) } else { 1.0 }
            }
            _ => 1.0,
        });
    }
    scale_keyword_scores(bm, factors);
    Ok(())
}

/// The square root of the share of a chat chunk's matched query weight that its best window of
/// [`WINDOW_LINES`] lines holds; 1 for a chunk of no more lines than a window or no match.
fn best_window_share(content: &str, terms: &[String], idf: &[f64]) -> f64 {
    match best_window(content, terms, idf) {
        Some((found, whole)) if whole > 0.0 => (weight_of(&found, idf) / whole).sqrt(),
        _ => 1.0,
    }
}

/// Which of `terms` the best window of [`WINDOW_LINES`] lines of a chat chunk holds (the one
/// holding the most of their weight `idf`), and the weight the whole chunk holds; `None` for a
/// chunk of no more lines than a window.
fn best_window(content: &str, terms: &[String], idf: &[f64]) -> Option<(Vec<bool>, f64)> {
    let lines: Vec<Vec<bool>> = content
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = vec![false; terms.len()];
            mark_terms(l, terms, &mut f);
            f
        })
        .collect();
    if lines.len() <= WINDOW_LINES {
        return None;
    }
    let union = |ls: &[Vec<bool>]| -> Vec<bool> { (0..terms.len()).map(|i| ls.iter().any(|l| l[i])).collect() };
    let whole = weight_of(&union(&lines), idf);
    let half = WINDOW_LINES / 2;
    let (_, best) = (0..lines.len())
        .map(|i| {
            let window = union(&lines[i.saturating_sub(half)..(i + half + 1).min(lines.len())]);
            (weight_of(&window, idf), window)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some((best, whole))
}

/// A cosine `c` from a scale whose background is `from` (mean, deviation) carried to one whose
/// background is `to`: [`CARRIED_STANDING`] of as many deviations above the mean there as it is
/// here.
fn carried(c: f32, from: Spread, to: Spread) -> f32 {
    to.0 + CARRIED_STANDING * (c - from.0) / from.1 * to.1
}

/// The vector list with each chunk of `windows` at its best window's cosine when that is the
/// higher (added when the list missed it), best first.
fn windowed(vs: &[(i64, f32)], windows: &HashMap<i64, f32>) -> Vec<(i64, f32)> {
    let mut out: Vec<(i64, f32)> = vs.iter().map(|&(r, c)| (r, windows.get(&r).map_or(c, |w| c.max(*w)))).collect();
    for (&r, &w) in windows {
        if !out.iter().any(|x| x.0 == r) {
            out.push((r, w));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

// ---- the person a question names ----

/// Chat hits, among the first this many, whose speaker the query may name.
const FOCUS_FROM: usize = 50;

/// How much of a chat hit's score rests on the named speaker's own lines: a hit keeps
/// `1 - FOCUS_SHARE` of it whatever its lines, and the rest in proportion to the share of its
/// keyword match (or, without one, whether the person speaks in it at all) that the person's
/// lines hold. On the LoCoMo development conversations 0.2 / 0.3 / 0.5 / 0.7 gave recall
/// R@10 0.749 / 0.762 / 0.761 / 0.752 on one turn a chunk (0.726 without) and 0.898 / 0.900 /
/// 0.905 / 0.902 on packed chunks (0.896); 0.5 is best or near it on both.
const FOCUS_SHARE: f64 = 0.5;

/// When the query names exactly one person who speaks in the chat hits near the top (any word
/// of a name in a chunk's `participants`), weighs each of those hits by how much of its match
/// is that person's own words: a question about someone is most often answered by what they
/// said, and in a chunk of many turns the other speakers' lines share its words too.
fn focus_on_speaker(inner: &Inner, conn: &Connection, fused: &mut [Hit], words: &[String]) -> Result<(), MemoryError> {
    if words.len() < 2 || fused.is_empty() {
        return Ok(());
    }
    let head: Vec<i64> = fused.iter().take(FOCUS_FROM).map(|h| h.rowid).collect();
    let mut chats: HashMap<i64, (String, Vec<String>)> = HashMap::new();
    {
        let mut q = conn.prepare_cached(
            "SELECT rowid, content, json_extract(metadata, '$.participants') FROM chunks \
             WHERE rowid IN rarray(?1) AND source_kind = 'chat'",
        )?;
        let mut rows = q.query([rarray(&head)])?;
        while let Some(r) = rows.next()? {
            let speakers: Option<String> = r.get(2)?;
            let speakers = speakers.and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default();
            chats.insert(r.get(0)?, (r.get(1)?, speakers));
        }
    }
    // The speakers the query names, and which of its words name them.
    let mut named: Vec<&str> = Vec::new();
    let mut name_terms = vec![false; words.len()];
    for speaker in chats.values().flat_map(|c| &c.1) {
        let mut names = vec![false; words.len()];
        mark_terms(speaker, words, &mut names);
        if names.contains(&true) && !named.contains(&speaker.as_str()) {
            named.push(speaker);
            name_terms.iter_mut().zip(&names).for_each(|(t, n)| *t |= *n);
        }
    }
    let [person] = named[..] else { return Ok(()) };
    let rest: Vec<String> = words.iter().zip(&name_terms).filter(|(_, n)| !**n).map(|(w, _)| w.clone()).collect();
    let idf = inner.fts.idf(&rest);
    if idf.iter().sum::<f64>() <= 0.0 {
        return Ok(());
    }
    for h in fused.iter_mut().take(FOCUS_FROM) {
        let Some((text, speakers)) = chats.get(&h.rowid) else { continue };
        let speakers: Vec<&str> = speakers.iter().map(String::as_str).collect();
        let (mut all, mut own) = (vec![false; rest.len()], vec![false; rest.len()]);
        let mut speaks = false;
        let mut current: Option<&str> = None;
        for line in text.lines() {
            let body = match crate::util::chat_line(line, &speakers) {
                Some((who, body)) => {
                    current = Some(who);
                    body
                }
                // A message's further lines are its speaker's.
                None => line,
            };
            let mine = current == Some(person);
            speaks |= mine;
            let mut here = vec![false; rest.len()];
            mark_terms(body, &rest, &mut here);
            for ((a, o), h) in all.iter_mut().zip(&mut own).zip(here) {
                *a |= h;
                *o |= h && mine;
            }
        }
        let matched = weight_of(&all, &idf);
        let theirs = if matched > 0.0 { weight_of(&own, &idf) / matched } else { f64::from(u8::from(speaks)) };
        h.score *= 1.0 - FOCUS_SHARE + FOCUS_SHARE * theirs;
    }
    fused.sort_by(order);
    Ok(())
}

/// How much of a hit's score rests on holding the name the query writes: a hit among the
/// first [`FOCUS_FROM`] that lacks every such name keeps `1 - NAME_SHARE` of its score.
const NAME_SHARE: f64 = 0.5;

/// The stems of the words `query` writes as names: capitalised as the people and topics
/// extractor reads a name (`Sophie`, `Kwik`; [`is_capitalised`](super::entities::is_capitalised),
/// so an acronym such as MOT or VPN is matched as any word is), not its first word, not a month or a weekday (`February`, `Friday`: chunks observed then need
/// not write it), and among the query's `words` (stop words and a date's words are not).
fn written_names(query: &str, words: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut first = true;
    crate::fts::for_each_word(query, |start, end, lower| {
        let written = &query[start..end];
        let titled = super::entities::is_capitalised(written);
        let joined =
            query[..start].ends_with(['-', '.', '/', '_', '@']) || query[end..].starts_with(['-', '.', '/', '_', '@']);
        let calendar = super::dates::is_calendar_word(lower) || super::dates::is_calendar_word(&written.to_lowercase());
        if titled && !first && !joined && !calendar {
            let stem = crate::fts::stem(lower).into_owned();
            if words.contains(&stem) && !names.contains(&stem) {
                names.push(stem);
            }
        }
        first = false;
    });
    names
}

/// When the query writes a name (a person, a place, a shop: [`written_names`]) and the best of
/// the first [`FOCUS_FROM`] hits that holds it is of one kind (a note, mail, chat), the hits of
/// other kinds that lack the name lose [`NAME_SHARE`] of their score and are marked for the
/// relevance floor to hold back (`Hit::lacks_name`): "what flowers does Sophie like?" asks
/// about Sophie, however much the chat says about flowers. Hits of the same kind
/// are left to the words (a store of one kind ranks as before: the names of SciFact's claims
/// are species and places its abstracts often write otherwise). A name that speaks in the
/// chat hits is left to [`focus_on_speaker`], which reads whose lines hold the match.
fn focus_on_name(conn: &Connection, fused: &mut [Hit], query: &str, words: &[String]) -> Result<(), MemoryError> {
    if words.len() < 2 || fused.len() < 2 {
        return Ok(());
    }
    let names = written_names(query, words);
    if names.is_empty() {
        return Ok(());
    }
    let head: Vec<i64> = fused.iter().take(FOCUS_FROM).map(|h| h.rowid).collect();
    // Per hit: its kind, and whether it holds a name.
    let mut read: HashMap<i64, (String, bool)> = HashMap::new();
    let mut speaking = vec![false; names.len()];
    let mut q = conn.prepare_cached(
        "SELECT rowid, source_kind, title, content, json_extract(metadata, '$.participants') FROM chunks \
         WHERE rowid IN rarray(?1)",
    )?;
    let mut rows = q.query([rarray(&head)])?;
    while let Some(r) = rows.next()? {
        let (title, content): (Option<String>, String) = (r.get(2)?, r.get(3)?);
        let found = found_in(title.as_deref(), &content, &names);
        if let Some(speakers) = r.get::<_, Option<String>>(4)? {
            mark_terms(&speakers, &names, &mut speaking);
        }
        read.insert(r.get(0)?, (r.get(1)?, found.contains(&true)));
    }
    if speaking.iter().all(|s| *s) {
        return Ok(());
    }
    let Some(kind) = head.iter().find_map(|id| read.get(id).filter(|r| r.1).map(|r| r.0.clone())) else {
        return Ok(());
    };
    let mut moved = false;
    for h in fused.iter_mut().take(FOCUS_FROM) {
        if read.get(&h.rowid).is_some_and(|(k, holds)| !holds && *k != kind) {
            h.score *= 1.0 - NAME_SHARE;
            h.lacks_name = true;
            moved = true;
        }
    }
    if moved {
        fused.sort_by(order);
    }
    Ok(())
}

// ---- chat context ----

/// How many of the best chat hits lend score to the turns beside them.
const SPREAD_FROM: usize = 20;
/// The share of a one-turn chat hit's fused score that the turn before it and the turn after
/// it in the same conversation gain (the answer to a question usually follows it). Chosen on
/// the LoCoMo development conversations, one turn per chunk: R@10 0.677 without, 0.711 at
/// 0.2 / 0.4, 0.710 at 0.3 / 0.3, 0.695 at 0.4 / 0.2, 0.709 at 0.25 / 0.35.
const SPREAD_BEFORE: f64 = 0.2;
const SPREAD_AFTER: f64 = 0.4;

/// The cosines of some rows with the query, as `(rowid, cosine)` (none without a query vector).
type Cosines<'a> = dyn Fn(&[i64]) -> Vec<(i64, f32)> + 'a;

/// Chat turns are read in their conversation: the answer to a question often sits in the turn
/// after the one that matches it, the matching words in the turn before. The best chat hits
/// that hold one turn lend a share of their score to the chunks beside them in the same
/// conversation, which join the candidates when they were not among them (only those the
/// caller's filter allows, with their cosine looked up). A chunk packing many turns has its
/// context inside already and lends nothing.
fn spread_to_neighbours(
    conn: &Connection,
    fused: &mut Vec<Hit>,
    filter: &Filter,
    cosines: &Cosines<'_>,
) -> Result<(), MemoryError> {
    let (n, before, after) = (SPREAD_FROM, SPREAD_BEFORE, SPREAD_AFTER);
    if fused.is_empty() {
        return Ok(());
    }
    let head: Vec<i64> = fused.iter().take(n).map(|h| h.rowid).collect();
    let mut chats: HashMap<i64, (String, i64)> = HashMap::new();
    {
        let mut q = conn.prepare_cached(
            "SELECT rowid, source_id, timestamp_ms FROM chunks WHERE rowid IN rarray(?1) AND source_kind = 'chat' \
             AND instr(content, char(10)) = 0",
        )?;
        let mut rows = q.query([rarray(&head)])?;
        while let Some(r) = rows.next()? {
            chats.insert(r.get(0)?, (r.get(1)?, r.get(2)?));
        }
    }
    if chats.is_empty() {
        return Ok(());
    }
    // A turn after the hit that is matched with the hit's words already (its `context`, the
    // message it answers) gains nothing more from it.
    let mut next = conn.prepare_cached(
        "SELECT rowid, json_extract(metadata, '$.context') IS NOT NULL FROM chunks \
         WHERE source_id = ?1 AND (timestamp_ms, rowid) > (?2, ?3) ORDER BY timestamp_ms, rowid LIMIT 1",
    )?;
    let mut prev = conn.prepare_cached(
        "SELECT rowid, 0 FROM chunks WHERE source_id = ?1 AND (timestamp_ms, rowid) < (?2, ?3) \
         ORDER BY timestamp_ms DESC, rowid DESC LIMIT 1",
    )?;
    // Each neighbour's best gain and the hit it came from.
    let mut gains: HashMap<i64, (f64, i64)> = HashMap::new();
    for h in fused.iter().take(n) {
        let Some((source, ts)) = chats.get(&h.rowid) else { continue };
        let args = rusqlite::params![source, ts, h.rowid];
        for (stmt, share) in [(&mut prev, before), (&mut next, after)] {
            let row = stmt.query_row(args, |r| Ok((r.get::<_, i64>(0)?, r.get::<_, bool>(1)?))).optional()?;
            if let Some((r, false)) = row {
                let g = gains.entry(r).or_insert((0.0, h.rowid));
                if share * h.score > g.0 {
                    *g = (share * h.score, h.rowid);
                }
            }
        }
    }
    let known: std::collections::HashSet<i64> = fused.iter().map(|h| h.rowid).collect();
    let mut new: Vec<i64> = gains.keys().copied().filter(|r| !known.contains(r)).collect();
    if !filter.is_empty() && !new.is_empty() {
        let keep = filter.retain(conn, &new)?;
        new.retain(|r| keep.contains(r));
    }
    for h in fused.iter_mut() {
        if let Some(&(g, from)) = gains.get(&h.rowid) {
            if g > h.score {
                h.context_of = Some(from);
            }
            h.score += g;
        }
    }
    let cos: HashMap<i64, f32> = cosines(&new).into_iter().collect();
    for rowid in new {
        let (score, from) = gains[&rowid];
        let vector_score = cos.get(&rowid).copied();
        fused.push(Hit {
            rowid,
            score,
            bm25_rank: None,
            vector_score,
            window_cos: None,
            in_span: false,
            by_date: false,
            context_of: Some(from),
            lacks_name: false,
            off_date: false,
        });
    }
    fused.sort_by(order);
    Ok(())
}

// ---- the relevance floor ----

/// Rows of the store a query is compared with to learn how similar an unrelated chunk is.
const BACKGROUND_ROWS: usize = 512;
/// Below this many vectors a store is too small to tell noise from signal by its spread: the
/// chunk the vector ranker puts first counts as backed by meaning, the others not at all.
const MIN_BACKGROUND: usize = 16;
/// The fewest vectors whose mean cosine the blend counts from (`Weights::base`). A mean needs
/// fewer rows than a spread: in a store of a dozen notes the ones a question is not about
/// already set where "unrelated" lies, and they are most of the sample.
const BASE_MIN_ROWS: usize = 8;
/// A cosine this many standard deviations above the store's mean counts 0 as evidence by
/// meaning, and [`FULL_SDS`] above it counts 1, linearly between: a chunk alike to the query
/// only as much as an arbitrary chunk of the store is counts nothing.
const NOISE_SDS: f32 = 1.0;
const FULL_SDS: f32 = 6.0;
/// The deviation a cosine is measured in is at least this share of how far the best cosine
/// stands above the mean: in a store of near-alike chunks (thousands of generated logs, say)
/// the sample's spread is tiny, and a chunk a hair above it would count fully, so every
/// question about one note came back padded with nine such chunks. Only a best hit more than
/// this many deviations above the store changes anything; the LoCoMo development figures are
/// the same at 6, 12 and without it (BENCHMARKS.md).
const TOP_SDS: f32 = 12.0;

/// How similar an arbitrary chunk of the store is to one query: the mean and deviation of
/// the query's cosine with a sample of the store's rows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VectorNoise {
    pub mean: f32,
    pub sd: f32,
    /// Whether the sample was large enough to read (see [`MIN_BACKGROUND`]).
    pub known: bool,
    /// The best cosine of the query's vector list.
    pub top: f32,
}

impl VectorNoise {
    /// The noise of a query whose cosines with the store's sample are `background` (mean,
    /// deviation, rows) and whose best vector hit has cosine `top`.
    fn new((mean, sd, rows): (f32, f32, usize), top: f32) -> VectorNoise {
        VectorNoise { mean, sd: sd.max(f32::EPSILON), known: rows >= MIN_BACKGROUND, top }
    }

    /// How far `cos` stands past the noise, from a sample large enough to read: 0 up to
    /// [`NOISE_SDS`] deviations above the mean, 1 at [`FULL_SDS`], more beyond (the deviation at
    /// least [`TOP_SDS`]th of the best cosine's lead over the mean).
    fn standing(&self, cos: f32) -> f64 {
        let sd = self.sd.max((self.top - self.mean) / TOP_SDS);
        let z = (cos - self.mean) / sd;
        ((z - NOISE_SDS) / (FULL_SDS - NOISE_SDS)).max(0.0) as f64
    }
}

/// How well one hit is backed ([`Judge::backing`]).
#[derive(Debug, Clone, Copy)]
struct Backing {
    /// The share of the query's word weight its title and text hold ([`Judge::coverage`]).
    words: f64,
    /// How far its cosine stands above the store's noise ([`Judge::reach`]).
    reach: f64,
    /// Its relevance: the larger of the share of the query's word weight the chunk holds and
    /// [`Backing::reach`] up to 1.
    both: f64,
    /// Its relevance apart from the first hit's source.
    apart: f64,
    /// [`Judge::by_meaning`] of its best window of turns ([`Hit::window_cos`]), 0 without one.
    window: f64,
}

/// What the relevance floor weighs a query's hits with: the query's words with their
/// inverse document frequencies, and the vector ranker's noise level.
pub(crate) struct Judge {
    /// The query's word stems, then their neighbours' when the query was widened to them.
    stems: Vec<String>,
    /// For each of `stems`, the query word it stands for and the share of that word's weight a
    /// chunk holding it earns (1 for the word itself).
    credit: Vec<(usize, f64)>,
    /// The weight of each query word.
    idf: Vec<f64>,
    noise: Option<VectorNoise>,
    /// When the query's words answer it poorly (see [`weak_keywords`]), the share of their
    /// weight a chunk must hold to be backed by them ([`weak_bar`]): holding less, it shares
    /// only the ordinary words that made the question weak.
    weak: Option<f64>,
    /// The weight of the date's numbers taken out of the query's words (see [`rank`]): held by
    /// every chunk observed in the span the date names; a chunk of another day is judged by the
    /// query's other words alone.
    dated: f64,
}

/// The share of a weak question's word weight a chunk must hold to be backed by its words:
/// [`WEAK_BACKING`], and when the store lacks words with [`ABSENT_WEAK`] of the weight (their
/// share `absent`), more than all the others hold: a chunk holding every word the store has,
/// and no neighbour of those it lacks, holds none of what the question is about.
fn weak_bar(absent: f64) -> f64 {
    if absent >= ABSENT_WEAK { WEAK_BACKING.max(1.0 - absent + 1e-6) } else { WEAK_BACKING }
}

impl Judge {
    fn new(terms: Vec<String>, idf: Vec<f64>, noise: Option<VectorNoise>, near: Near, weak: Option<f64>) -> Judge {
        let mut credit: Vec<(usize, f64)> = (0..terms.len()).map(|i| (i, 1.0)).collect();
        let mut stems = terms;
        for (stem, of, cos) in near.words {
            stems.push(stem);
            credit.push((of, NEAR_CREDIT * f64::from(cos)));
        }
        Judge { stems, credit, idf, noise, weak, dated: 0.0 }
    }

    /// How well a hit is backed, in `0..=1`, from signals that keep their meaning from one
    /// store and one embedder to another (never a raw score): the larger of the share of the
    /// query's word weight (inverse document frequency) found in the chunk's title and text,
    /// and how many standard deviations its cosine stands above the store's mean cosine with
    /// the query (1 counting 0, 6 counting 1; the deviation at least [`TOP_SDS`]th of the best
    /// cosine's lead over the mean); and its relevance apart from the first hit's source: the
    /// same unless the query's words answer it poorly and the hit holds less of their weight
    /// than [`Judge::weak`] asks, when only its meaning backs it.
    fn backing(&self, row: &ChunkRow, hit: &Hit) -> Backing {
        let (words, reach) = (self.coverage(row, hit.in_span), self.reach(hit.vector_score));
        let meaning = reach.min(1.0);
        let both = words.max(meaning);
        let apart = if self.weak.is_some_and(|bar| words < bar) { meaning } else { both };
        Backing { words, reach, both, apart, window: self.by_meaning(hit.window_cos) }
    }

    /// The word stems a hit's snippet marks: the query's, then the neighbours it was widened to.
    pub fn marked_words(&self) -> Vec<String> {
        let mut words: Vec<String> = Vec::with_capacity(self.stems.len());
        for s in &self.stems {
            if !words.contains(s) {
                words.push(s.clone());
            }
        }
        words
    }

    /// The vector side of [`Self::backing`].
    fn by_meaning(&self, cos: Option<f32>) -> f64 {
        self.reach(cos).min(1.0)
    }

    /// [`Self::by_meaning`] without its ceiling: how far past the noise a cosine stands, 1 at
    /// [`FULL_SDS`] and more beyond.
    fn reach(&self, cos: Option<f32>) -> f64 {
        match (self.noise, cos) {
            (Some(n), Some(cos)) if !n.known => f64::from(u8::from(cos > 0.0 && cos >= n.top)),
            (Some(n), Some(cos)) => n.standing(cos),
            _ => 0.0,
        }
    }

    /// The share of the query's word weight that the chunk's title and text hold (and the
    /// message a lone chat message answers, its `context`, which the keyword index reads with
    /// it), a word missing from them counting [`NEAR_CREDIT`] × the cosine of its nearest
    /// neighbour they hold; a chunk observed in the span a date of the query names also holds
    /// the date's numbers.
    fn coverage(&self, row: &ChunkRow, in_span: bool) -> f64 {
        let mut found = found_in(row.title.as_deref(), &row.content, &self.stems);
        if let Some(context) = row.metadata.get("context").and_then(Value::as_str) {
            mark_terms(context, &self.stems, &mut found);
        }
        let mut held = vec![0.0; self.idf.len()];
        for (&(of, credit), _) in self.credit.iter().zip(&found).filter(|(_, f)| **f) {
            held[of] = f64::max(held[of], credit);
        }
        let dated = if in_span { self.dated } else { 0.0 };
        let total = self.idf.iter().sum::<f64>() + dated;
        if total <= 0.0 { 0.0 } else { (held.iter().zip(&self.idf).map(|(h, w)| h * w).sum::<f64>() + dated) / total }
    }
}

// ---- the neighbours of a question's words ----

/// A neighbour must have at least this cosine with the query word in the built-in table.
const NEAR_MIN_COS: f32 = 0.6;
/// At most this many neighbours a query word (besides those its stem already covers).
const NEAR_PER_WORD: usize = 3;
/// Only a query's this many rarest words are widened.
const NEAR_WORDS: usize = 8;
/// A neighbour's keyword match weighs this share of its cosine: a word of the question itself
/// always counts more.
const NEAR_BOOST: f32 = 0.5;
/// A chunk holding a neighbour of a query word it lacks is credited with this share of the
/// neighbour's cosine of that word's weight, where the relevance floor reads how much of the
/// question it holds.
const NEAR_CREDIT: f64 = 1.0;

/// The neighbours of a query's words in the built-in embedder's table: `(stem, index of the
/// query word in the query's stems, cosine)`.
#[derive(Default)]
pub(crate) struct Near {
    words: Vec<(String, usize, f32)>,
}

impl Near {
    /// Each neighbour's stem once, with its keyword boost.
    fn boosts(&self) -> Vec<(String, f32)> {
        let mut out: Vec<(String, f32)> = Vec::new();
        for (stem, _, cos) in &self.words {
            match out.iter_mut().find(|(s, _)| s == stem) {
                Some(o) => o.1 = o.1.max(NEAR_BOOST * cos),
                None => out.push((stem.clone(), NEAR_BOOST * cos)),
            }
        }
        out
    }
}

/// The neighbours of the words of `query` (its stems are `stems`, weighed by `idf`) that
/// neither a stop word nor another form of a query word is: of its [`NEAR_WORDS`] rarest words,
/// so that a pasted paragraph costs no more than a question.
fn near_words(query: &str, stems: &[String], idf: &[f64]) -> Near {
    let mut rarest: Vec<usize> = (0..stems.len()).collect();
    rarest.sort_by(|a, b| idf[*b].total_cmp(&idf[*a]).then(a.cmp(b)));
    rarest.truncate(NEAR_WORDS);
    let Ok(model) = crate::embed::StaticModel::builtin() else { return Near::default() };
    let mut words = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let stops = crate::fts::QueryStops::of(query);
    crate::fts::for_each_word(query, |_, _, lower| {
        if stops.contains(lower) || seen.iter().any(|w| w == lower) {
            return;
        }
        seen.push(lower.to_string());
        let Some(of) = stems.iter().position(|s| *s == crate::fts::stem(lower)) else { return };
        if !rarest.contains(&of) {
            return;
        }
        let mut taken = 0;
        for (n, cos) in model.neighbours(lower, NEAR_MIN_COS, 4 * NEAR_PER_WORD) {
            let stem = crate::fts::stem(n);
            if taken == NEAR_PER_WORD
                || crate::fts::is_query_stop_word(n)
                || stems.iter().any(|s| *s == stem)
                || words.iter().any(|(s, o, _): &(String, usize, f32)| *s == stem && *o == of)
            {
                continue;
            }
            words.push((stem.into_owned(), of, cos));
            taken += 1;
        }
    });
    Near { words }
}

/// Which of `terms` `title` and `text` hold.
fn found_in(title: Option<&str>, text: &str, terms: &[String]) -> Vec<bool> {
    let mut found = vec![false; terms.len()];
    if let Some(t) = title {
        mark_terms(t, terms, &mut found);
    }
    mark_terms(text, terms, &mut found);
    found
}

/// The share of the query's word weight that `found` marks.
fn share(found: &[bool], idf: &[f64]) -> f64 {
    let total: f64 = idf.iter().sum();
    if total <= 0.0 { 0.0 } else { weight_of(found, idf) / total }
}

/// How many of the best keyword hits [`weak_keywords`] reads.
const WEAK_KEYWORDS_HITS: usize = 5;
/// When each of a question's best keyword hits shares at most one word with it, and that word
/// is under this share of its word weight, its words answer it poorly, and the vector weight of
/// chunks other than chat is at least the share of the word weight its best keyword hit misses.
/// (Without the one-word condition SciFact's long claims, whose best hits can hold three rare
/// words, lost 0.003 of nDCG@10 at 0.3.) "How do I look after my bread yeast culture?", whose
/// one keyword match, "after", is in a note about tomato seedlings (0.2 of its weight), gives
/// meaning 0.8 of the say, and the sourdough note comes first even with the built-in table; "the
/// heating has lost pressure, what do I do?" matches "heat" in a recipe (0.39 of its weight),
/// and the boiler note, far nearer in meaning, comes first. From 0.3 to 0.6 the development
/// sets do not move, and the personal store's paraphrased questions find their note first for
/// 16 of 29 instead of 14 (BENCHMARKS.md, "Questions that share one word with their best
/// keyword hits").
const WEAK_KEYWORDS: f64 = 0.6;
/// For such a question a chat chunk's vector weight is at least this share of the missing word
/// weight: chat turns share a question's ordinary words most, and a full share moved LoCoMo's
/// packed chat from R@10 0.926 to 0.924.
const WEAK_KEYWORDS_CHAT_WEIGHT: f64 = 0.8;
/// A weak question's hit from another source is backed by its words only when it holds at least
/// this share of their weight ([`weak_bar`]).
const WEAK_BACKING: f64 = 0.3;

/// When the store lacks words holding at least this share of a question's word weight, its
/// words answer it poorly whatever its keyword hits hold: those can match only its other, most
/// often more ordinary, words ("leave" in "when does my plane to Portugal leave?").
const ABSENT_WEAK: f64 = 0.5;

/// The best keyword coverage among the first [`WEAK_KEYWORDS_HITS`] of `bm` when each of them
/// holds one query word at most and less than [`WEAK_KEYWORDS`] of the weight, or when no chunk
/// holds words with [`ABSENT_WEAK`] of the weight (`absent`, the share they hold); `None`: the
/// words answer the question well enough, or there are none. A packed chat chunk counts the words
/// of its best window of [`WINDOW_LINES`] turns: ten turns hold many words between them, and one
/// that says "plan" early and "week" at the end made "what is my workout plan this week" look
/// answered by its words, so the training note that only meaning finds came 16th.
fn weak_keywords(
    conn: &Connection,
    texts: &mut ChatTexts,
    bm: &[(i64, f32)],
    terms: &[String],
    idf: &[f64],
    absent: f64,
) -> Result<Option<f64>, MemoryError> {
    if terms.is_empty() {
        return Ok(None);
    }
    if bm.is_empty() {
        return Ok(Some(0.0));
    }
    let lacking = absent >= ABSENT_WEAK;
    let top: Vec<i64> = bm.iter().take(WEAK_KEYWORDS_HITS).map(|x| x.0).collect();
    let mut q = conn.prepare_cached(
        "SELECT rowid, title, content, source_kind, json_extract(metadata, '$.context') FROM chunks \
             WHERE rowid IN rarray(?1)",
    )?;
    let mut rows = q.query([rarray(&top)])?;
    let mut best: f64 = 0.0;
    while let Some(r) = rows.next()? {
        let (rowid, title, content): (i64, Option<String>, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
        // A chat chunk's text is kept for the windows read after this.
        let chat = r.get_ref(3)?.as_str().is_ok_and(|k| k == "chat");
        let window = if chat { best_window(&content, terms, idf).map(|w| w.0) } else { None };
        let found = window.unwrap_or_else(|| found_in(title.as_deref(), &content, terms));
        texts.keep(rowid, chat.then(|| r.get(4)).transpose()?.map(|context| (content, context)));
        best = best.max(share(&found, idf));
        if !lacking && (best >= WEAK_KEYWORDS || found.iter().filter(|f| **f).count() > 1) {
            return Ok(None);
        }
    }
    Ok(Some(best))
}

/// The best keyword hit must stand at least this share as far above the store's noise as the
/// best hit by meaning does ([`meaning_disagrees`]) when that one stands at least
/// [`DISAGREE_TOP`] above it ([`Judge::reach`]'s scale: 0.5 is 3.5 deviations above the mean).
/// At 0.25 the development sets lose (SciFact 0.7036 → 0.6997, LoCoMo one turn R@10 0.764 →
/// 0.754); at 1.0 it rarely fires (`BENCHMARKS.md`, "When meaning disagrees with the best
/// keyword hit").
const DISAGREE_REACH: f64 = 0.3;
/// How far above the store's noise the best hit by meaning must stand for
/// [`meaning_disagrees`] to read the best keyword hit against it.
const DISAGREE_TOP: f64 = 0.5;
/// What a question whose best keyword hit meaning disagrees with counts as its words' coverage
/// (see [`WEAK_KEYWORDS`]): meaning gets at least 0.7 of the say. At 0.5 two of the personal
/// stores' paraphrased questions fewer came first (`BENCHMARKS.md`, "When meaning disagrees with
/// the best keyword hit").
const DISAGREE_COVERAGE: f64 = 0.3;

/// Whether the best hit by meaning (the first of `vs`) stands clearly above the store
/// ([`DISAGREE_TOP`], read against the query's `background` sample) while the best keyword hit
/// (the first of `bm`; its cosine read from its row when `vs` lacks it) is not near it, standing
/// under [`DISAGREE_REACH`] as far above the noise:
/// the question's words then match chunks that mean something else. "What does my running
/// schedule look like?" finds a systemd changelog that says "running" and "scheduled", far
/// from the training note in meaning; such a question is answered as one whose words answer it
/// poorly ([`weak_keywords`]). A question whose words find a chunk alike to it is not.
fn meaning_disagrees(
    (q, tier): &(Vec<f32>, &crate::tier::Tier),
    background: (f32, f32, usize),
    bm: &[(i64, f32)],
    vs: &[(i64, f32)],
) -> bool {
    let (Some(&(first, _)), Some(&(_, top))) = (bm.first(), vs.first()) else { return false };
    let noise = VectorNoise::new(background, top);
    if !noise.known || noise.standing(top) < DISAGREE_TOP {
        return false;
    }
    let keyword = vs
        .iter()
        .find(|v| v.0 == first)
        .map(|v| v.1)
        .or_else(|| read(&tier.vectors).search(q, 1, Some(&[first])).first().map(|v| v.1));
    keyword.is_some_and(|cos| noise.standing(cos) < DISAGREE_REACH * noise.standing(top))
}

/// Marks in `found` the query stems `terms` that `text` holds. A word is stemmed only when it
/// could be one of the stems not found yet (they share a first letter).
fn mark_terms(text: &str, terms: &[String], found: &mut [bool]) {
    crate::fts::for_each_word(text, |_, _, lower| {
        let first = lower.as_bytes().first();
        if !terms.iter().zip(found.iter()).any(|(t, f)| !*f && t.as_bytes().first() == first) {
            return;
        }
        let s = crate::fts::stem(lower);
        if let Some(i) = terms.iter().position(|t| *t == s) {
            found[i] = true;
        }
    });
}

/// The summed weight `idf` of the terms marked in `found`.
fn weight_of(found: &[bool], idf: &[f64]) -> f64 {
    found.iter().zip(idf).filter(|(f, _)| **f).map(|(_, w)| w).sum()
}

/// The share of a matching chat turn's relevance that the turn recalled as its context has.
const CONTEXT_RELEVANCE: f64 = 0.5;

/// A hit from another source than the first hit's must come within this share of the first
/// hit's fused score, or of the best relevance among the hits, to be kept.
const OTHER_SOURCE_SCORE: f64 = 0.5;
const OTHER_SOURCE_RELEVANCE: f64 = 0.6;

/// A hit of another kind and source than the first hit's must be at least this share as alike to
/// the question in meaning: "present ideas for grandad" finds the note on birthday gifts by
/// meaning, and chat turns about a video presentation, which hold the word "present" and nothing
/// of the sense, are not near it; "when do the bins go out?" finds the note on bin days, and
/// packaging chat about "/bin/sh", 0.5–0.6 as alike, is not near it either. The first personal
/// stores' padding was the same from 0.35 to 0.75 (`BENCHMARKS.md`, "Hits of another kind that
/// share only a word"); the four stores of `tools/personal-store` pad least from 0.7 to 1.0
/// (`BENCHMARKS.md`, "Hits of another kind: 70% as alike"). It holds when the first hit
/// was found by its words too: "when do we get the keys to the new place" finds the note on the
/// flat move by "keys" and "new" (and by meaning, a little less), and chat chunks that say "key",
/// "place" and "getting" in other senses, alike in meaning to it not at all, are not near it
/// (`BENCHMARKS.md`, "Hits of another kind after a note found by its words"). Likeness is
/// compared here without the ceiling relevance puts on it ([`Judge::reach`]): in a store of
/// changelog mail, a note 12 deviations above the mail and an OpenSSH entry 5.5 above would
/// both count 1 and the entry would pass for "what is the password for visitors on the
/// internet".
const OTHER_KIND_MEANING: f64 = 0.7;

/// A hit of another kind and source that holds less than this share of the first hit's word
/// weight must be more alike to the question in meaning than the first hit, by the share of the
/// question's word weight it lacks beside the first hit: it lacks what the first hit was found
/// by, and only meaning can make up for it. "what should I practise on
/// guitar" finds the guitar note by "guitar"; compiler changelog mails that never say it, near
/// in meaning only because "practise" is split into word pieces whose first is "pr" (their
/// "PR c++/…" lines), come a little below the note and are not kept.
const OTHER_KIND_WORDS: f64 = 0.5;

/// The relevance of a chunk kept for its date alone (see [`by_date`]): what the question asks
/// is the day, and the chunk is of that day. It passes the default floor; a caller's
/// `min_relevance` above it holds it back.
const BY_DATE_RELEVANCE: f64 = 0.5;

/// Splits loaded hits (best first) at the relevance floor: those kept, each with its
/// relevance ([`Judge::backing`]), and how many were held back. A hit is kept when its relevance
/// reaches `min` and, unless it is from the first hit's source (the rest of its conversation,
/// thread or document, context for it), when it also comes near the first hit: within
/// [`OTHER_SOURCE_SCORE`] of its fused score or [`OTHER_SOURCE_RELEVANCE`] of the best
/// relevance, and, when it is of another kind (chat beside a note), with [`OTHER_KIND_MEANING`]
/// of its likeness in meaning, or more than its likeness when it lacks the words it was found by
/// ([`OTHER_KIND_WORDS`]). A mail that shares one word of a question about a note is not
/// near the note. `min` 0 keeps every hit.
pub(crate) fn apply_floor(judge: &Judge, hits: Vec<(ChunkRow, Hit)>, min: f64) -> (Vec<(ChunkRow, Hit, f64)>, usize) {
    let total = hits.len();
    let judged: Vec<(ChunkRow, Hit, Backing)> = hits
        .into_iter()
        .map(|(c, h)| {
            let b = judge.backing(&c, &h);
            (c, h, b)
        })
        .collect();
    if min <= 0.0 {
        return (judged.into_iter().map(|(c, h, b)| (c, h, b.both)).collect(), 0);
    }
    // A turn recalled as the context of a matching turn beside it is as relevant as a share of
    // that turn.
    let own: HashMap<i64, f64> = judged.iter().map(|(c, _, b)| (c.rowid, b.both)).collect();
    let judged: Vec<(ChunkRow, Hit, Backing)> = judged
        .into_iter()
        .map(|(c, h, b)| {
            let lent = h.context_of.and_then(|from| own.get(&from)).map_or(0.0, |l| CONTEXT_RELEVANCE * l);
            (c, h, Backing { both: b.both.max(lent), apart: b.apart.max(lent), ..b })
        })
        .collect();
    // The hits kept for their date are not what the others are judged against.
    let Some((first, first_hit, first_backing)) = judged.iter().find(|j| !j.1.by_date).or(judged.first()) else {
        return (Vec::new(), 0);
    };
    let (source, kind, top) = (first.source_id.clone(), first.kind.clone(), first_hit.score);
    // A hit of another kind must be alike in meaning too, and more so when it lacks the words
    // the first hit holds.
    let (first_words, first_reach) = (first_backing.words, first_backing.reach);
    let meaning_bar = |words: f64| {
        if words < OTHER_KIND_WORDS * first_words {
            first_reach + (first_words - words)
        } else {
            OTHER_KIND_MEANING * first_reach
        }
    };
    let best = judged.iter().map(|j| j.2.both).fold(0.0, f64::max);
    let kept: Vec<(ChunkRow, Hit, f64)> = judged
        .into_iter()
        .filter_map(|(c, h, b)| {
            if h.by_date {
                let r = b.both.max(BY_DATE_RELEVANCE);
                return (r >= min).then_some((c, h, r));
            }
            // Mail or chat that lacks the name a note holds is not about what was asked, nor
            // is a chunk of another day that holds no word of a question about a day (it is
            // only alike to "what happened").
            if h.lacks_name || (h.off_date && b.words <= 0.0) {
                return None;
            }
            let (r, near_first) = if c.source_id == source {
                (b.both.max(b.window), true)
            } else {
                let near = h.score >= OTHER_SOURCE_SCORE * top || b.apart >= OTHER_SOURCE_RELEVANCE * best;
                let alike = c.kind == kind || b.reach >= meaning_bar(b.words);
                (b.apart, near && alike)
            };
            (r >= min && near_first).then_some((c, h, r))
        })
        .collect();
    let held = total - kept.len();
    (kept, held)
}

/// One chunk row as the read methods present it.
#[derive(Debug, Clone)]
pub(crate) struct ChunkRow {
    pub rowid: i64,
    pub id: String,
    pub kind: String,
    pub source_id: String,
    pub source_ref: String,
    pub origin: String,
    pub owner: Option<String>,
    pub provenance: String,
    pub timestamp_ms: i64,
    pub seq_in_source: i64,
    pub title: Option<String>,
    pub content: String,
    pub token_count: i64,
    pub metadata: Map<String, Value>,
    pub created_at_ms: i64,
    pub tags: Vec<String>,
    pub project: Option<String>,
    /// Set when a newer chunk replaced this one (see `facts`).
    pub superseded: Option<Superseded>,
}

pub(crate) const CHUNK_COLUMNS: &str = "c.rowid, c.id, c.source_kind, c.source_id, c.source_ref, c.origin, c.owner, \
     c.provenance, c.timestamp_ms, c.seq_in_source, c.title, c.content, c.token_count, c.metadata, c.created_at_ms, c.project";

pub(crate) fn chunk_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChunkRow> {
    let meta: String = r.get(13)?;
    Ok(ChunkRow {
        rowid: r.get(0)?,
        id: r.get(1)?,
        kind: r.get(2)?,
        source_id: r.get(3)?,
        source_ref: r.get(4)?,
        origin: r.get(5)?,
        owner: r.get(6)?,
        provenance: r.get(7)?,
        timestamp_ms: r.get(8)?,
        seq_in_source: r.get(9)?,
        title: r.get(10)?,
        content: r.get(11)?,
        token_count: r.get(12)?,
        metadata: match serde_json::from_str(&meta) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        },
        created_at_ms: r.get(14)?,
        tags: Vec::new(),
        project: r.get(15)?,
        superseded: None,
    })
}

/// A chunk a newer one replaced, as every hit and listing row shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Superseded {
    /// The chunk that replaced this one.
    pub by: String,
    /// When this chunk was observed.
    pub observed_at: String,
    /// When the replacement was observed.
    pub superseded_at: String,
    /// `same_key` (the same document stored again), `similar` (an update of the same fact),
    /// `same_attribute` (the same subject and attribute with another value, see `claims`).
    pub reason: String,
    /// The replacement has been forgotten since; this one stays superseded.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replacement_forgotten: bool,
}

/// Marks the rows a newer chunk replaced; with `as_of`, only replacements observed by then.
pub(crate) fn attach_superseded(
    conn: &Connection,
    rows: &mut [ChunkRow],
    as_of: Option<i64>,
) -> Result<(), MemoryError> {
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let mut marks: HashMap<String, (String, String, i64, bool)> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT s.old_id, s.new_id, s.reason, s.at_ms, EXISTS (SELECT 1 FROM chunks n WHERE n.id = s.new_id)
         FROM supersessions s WHERE s.old_id IN rarray(?1) AND s.at_ms <= ?2",
    )?;
    let mut q = stmt.query(params![rarray(&ids), as_of.unwrap_or(i64::MAX)])?;
    while let Some(r) = q.next()? {
        marks.insert(r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?));
    }
    for row in rows {
        row.superseded = marks.remove(&row.id).map(|(by, reason, at, alive)| Superseded {
            by,
            observed_at: ms_to_rfc3339(row.timestamp_ms),
            superseded_at: ms_to_rfc3339(at),
            reason,
            replacement_forgotten: !alive,
        });
    }
    Ok(())
}

/// Fills in the tags (own and added) of each row, and whether a newer chunk replaced it.
pub(crate) fn attach_tags(conn: &Connection, rows: &mut [ChunkRow]) -> Result<(), MemoryError> {
    if rows.is_empty() {
        return Ok(());
    }
    attach_superseded(conn, rows, None)?;
    let ids: Vec<i64> = rows.iter().map(|r| r.rowid).collect();
    let mut tags: HashMap<i64, Vec<String>> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT chunk_rowid, tag FROM chunk_tags WHERE chunk_rowid IN rarray(?1) ORDER BY tag",
    )?;
    let mut q = stmt.query([rarray(&ids)])?;
    while let Some(r) = q.next()? {
        tags.entry(r.get(0)?).or_default().push(r.get(1)?);
    }
    for row in rows {
        row.tags = tags.remove(&row.rowid).unwrap_or_default();
    }
    Ok(())
}

/// Loads rows by rowid, in the given order (rowids no longer present are skipped).
pub(crate) fn load_chunks(conn: &Connection, rowids: &[i64]) -> Result<Vec<ChunkRow>, MemoryError> {
    let sql = format!("SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.rowid IN rarray(?1)");
    let mut by_id: HashMap<i64, ChunkRow> = conn
        .prepare_cached(&sql)?
        .query_map(params_from_iter([rarray(rowids)]), chunk_from_row)?
        .map(|r| r.map(|c| (c.rowid, c)))
        .collect::<rusqlite::Result<_>>()?;
    let mut out: Vec<ChunkRow> = rowids.iter().filter_map(|r| by_id.remove(r)).collect();
    attach_tags(conn, &mut out)?;
    Ok(out)
}

/// Loads the rows of ranked hits, keeping the ranking order and dropping hits whose
/// chunk was deleted in the meantime.
pub(crate) fn load_hits(conn: &Connection, hits: Vec<Hit>) -> Result<Vec<(ChunkRow, Hit)>, MemoryError> {
    let ids: Vec<i64> = hits.iter().map(|h| h.rowid).collect();
    let rows = load_chunks(conn, &ids)?;
    let mut by_row: HashMap<i64, Hit> = hits.into_iter().map(|h| (h.rowid, h)).collect();
    Ok(rows.into_iter().filter_map(|r| by_row.remove(&r.rowid).map(|h| (r, h))).collect())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::{
        ChunkRow, Hit, Judge, Mode, NEAR_WORDS, VectorNoise, Weights, apply_floor, fuse, near_words, written_names,
    };

    #[test]
    fn a_name_is_a_capitalised_word_inside_the_question() {
        let names = |q: &str| written_names(q, &crate::fts::QueryTerms::parse(q).words);
        assert_eq!(names("what flowers does Sophie like?"), ["sophi"]);
        assert_eq!(names("when is the MOT at Kwik Garage?"), ["kwik", "garag"]);
        // Not the first word, an acronym, a word of a compound, nor a stop word.
        assert!(names("Sophie likes which flowers?").is_empty());
        assert!(names("when is the MOT due?").is_empty());
        assert!(names("what is the Wi-Fi password at node.Js meetups?").is_empty());
        assert!(names("what did We say?").is_empty());
        // Nor a month or a day of the week.
        assert!(names("what did Ana say on Friday in February?") == ["ana"]);
        assert!(names("what's on Fridays in März?").is_empty());
    }

    #[test]
    fn only_the_rarest_words_of_a_long_question_are_widened() {
        let query = "leave portugal landlord dentist bicycle coffee garden music doctor travel weekend \
                     holiday";
        let stems = crate::fts::QueryTerms::parse(query).words;
        assert_eq!(stems.len(), 12);
        // The later a word, the rarer.
        let idf: Vec<f64> = (0..stems.len()).map(|i| i as f64).collect();
        let near = near_words(query, &stems, &idf);
        let mut of: Vec<usize> = near.words.iter().map(|w| w.1).collect();
        of.dedup();
        assert!(!of.is_empty() && of.len() <= NEAR_WORDS, "{of:?}");
        assert!(of.iter().all(|&i| i >= stems.len() - NEAR_WORDS), "only the rarest: {of:?}");
        // No neighbour is another form of a query word.
        assert!(near.words.iter().all(|w| !stems.contains(&w.0)));
    }

    #[test]
    fn with_half_the_say_to_meaning_the_best_by_meaning_breaks_the_tie() {
        // "Where is our accommodation in Greece?": a changelog matches only "greek", the trip
        // note only by meaning; each is its ranker's best, and at 0.5 they score alike.
        let hits = fuse(Mode::Hybrid, &[(1, 3.2)], &[(2, 0.45), (3, 0.2)], &Weights::all(0.5));
        assert_eq!(hits[0].score, hits[1].score);
        assert_eq!(hits.iter().map(|h| h.rowid).collect::<Vec<_>>(), [2, 1, 3]);
        // With less say to meaning the keyword hit comes first, as before.
        let hits = fuse(Mode::Hybrid, &[(1, 3.2)], &[(2, 0.45), (3, 0.2)], &Weights::all(0.4));
        assert_eq!(hits[0].rowid, 1);
    }

    #[test]
    fn a_chunk_a_hair_above_a_tight_background_is_not_backed_by_meaning() {
        let judge = |mean, sd, top| {
            Judge::new(
                Vec::new(),
                Vec::new(),
                Some(VectorNoise { mean, sd, known: true, top }),
                Default::default(),
                None,
            )
        };
        let at = Some::<f32>;
        // Thousands of near-alike logs: cosines 0.02 ± 0.004 with a question about a note whose
        // own cosine is 0.5. A log at 0.06 is ten of those deviations up, yet nothing like the note.
        let tight = judge(0.02, 0.004, 0.5);
        assert_eq!(tight.by_meaning(at(0.06)), 0.0);
        assert_eq!(tight.by_meaning(at(0.5)), 1.0, "the note itself is backed");
        assert!(tight.by_meaning(at(0.4)) > 0.9, "so is a second chunk close to it");
        // A store whose cosines spread as usual judges as before.
        let usual = judge(0.05, 0.08, 0.5);
        assert!((usual.by_meaning(at(0.37)) - 0.6).abs() < 1e-6);
    }

    /// A chunk row of `kind` from `source` for the floor's tests.
    fn row(rowid: i64, kind: &str, source: &str) -> ChunkRow {
        ChunkRow {
            rowid,
            id: format!("c{rowid}"),
            kind: kind.into(),
            source_id: source.into(),
            source_ref: source.into(),
            origin: "test".into(),
            owner: None,
            provenance: "test".into(),
            timestamp_ms: 0,
            seq_in_source: 0,
            title: None,
            content: String::new(),
            token_count: 1,
            metadata: Default::default(),
            created_at_ms: 0,
            tags: Vec::new(),
            project: None,
            superseded: None,
        }
    }

    #[test]
    fn a_mail_is_not_as_alike_as_a_note_that_stands_far_above_it() {
        // A store of changelog mail: cosines 0.05 ± 0.03. The note stands twelve deviations
        // above it, a mail about passwords five: both count fully as relevance, yet the mail is
        // not 70% as alike to the question as the note.
        let judge = Judge::new(
            Vec::new(),
            Vec::new(),
            Some(VectorNoise { mean: 0.05, sd: 0.03, known: true, top: 0.48 }),
            Default::default(),
            None,
        );
        let hit = |rowid, score, cos| Hit { score, vector_score: Some(cos), ..Hit::new(rowid) };
        let hits = vec![
            (row(1, "document", "note-a"), hit(1, 1.0, 0.48)),
            (row(2, "email", "mail-a"), hit(2, 0.6, 0.22)),
            (row(3, "document", "note-b"), hit(3, 0.6, 0.22)),
        ];
        let (kept, held) = apply_floor(&judge, hits, 0.1);
        let kept: Vec<i64> = kept.iter().map(|k| k.0.rowid).collect();
        // The mail is held back; another note, of the first hit's kind, is judged as before.
        assert_eq!((kept, held), (vec![1, 3], 1));
    }

    #[test]
    fn a_chat_chunk_is_ranked_by_its_best_window_when_that_is_nearer() {
        let vs = [(1, 0.40), (2, 0.30), (3, 0.20)];
        let windows: std::collections::HashMap<i64, f32> = [(3, 0.55), (2, 0.10), (4, 0.35)].into_iter().collect();
        // 3's best turns come first; 2 keeps its own cosine; 4, which the vector list missed, joins it.
        assert_eq!(super::windowed(&vs, &windows), vec![(3, 0.55), (1, 0.40), (4, 0.35), (2, 0.30)]);
        assert_eq!(super::windowed(&vs, &Default::default()), vs.to_vec());
    }

    fn order(hits: &[super::Hit]) -> Vec<i64> {
        hits.iter().map(|h| h.rowid).collect()
    }

    #[test]
    fn a_clear_keyword_winner_stays_first_against_a_weak_embedder() {
        // Chunk 1 is far ahead by BM25 and unknown to the vectors; chunk 5 is fifth in both
        // lists. Reciprocal-rank fusion put 5 first (2/65 > 1/61); the blend must not.
        let bm = [(1, 12.0), (2, 6.0), (3, 5.8), (4, 5.5), (5, 5.2)];
        let vs = [(7, 0.61), (8, 0.60), (9, 0.58), (6, 0.57), (5, 0.55)];
        let hits = fuse(Mode::Hybrid, &bm, &vs, &Weights::all(0.1));
        assert_eq!(hits[0].rowid, 1);
        assert_eq!(hits[0].bm25_rank, Some(1));
        assert_eq!(hits[0].vector_score, None);
    }

    #[test]
    fn vectors_reorder_close_keyword_scores_and_add_what_words_miss() {
        let bm = [(1, 5.0), (2, 4.9)];
        let vs = [(2, 0.8), (3, 0.79), (1, 0.1)];
        let hits = fuse(Mode::Hybrid, &bm, &vs, &Weights::all(0.5));
        assert_eq!(order(&hits), [2, 1, 3]);
        assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
        // With no weight on vectors, keyword order is kept and vector-only chunks come last.
        let hits = fuse(Mode::Hybrid, &bm, &vs, &Weights::all(0.0));
        assert_eq!(order(&hits)[..2], [1, 2]);
    }

    #[test]
    fn chat_chunks_take_the_chat_weight() {
        // Chunk 1 leads on keywords, chunk 2 on meaning. Weighed as documents (0.8) the
        // meaning wins; as chat (0.4) the keywords do.
        let bm = [(1, 5.0), (2, 2.0)];
        let vs = [(2, 0.8), (1, 0.3)];
        let docs = Weights { other: 0.8, chat: 0.4, chats: HashSet::new(), base: 0.0 };
        assert_eq!(order(&fuse(Mode::Hybrid, &bm, &vs, &docs)), [2, 1]);
        let chat = Weights { chats: HashSet::from([1, 2]), ..docs };
        assert_eq!(order(&fuse(Mode::Hybrid, &bm, &vs, &chat)), [1, 2]);
    }

    #[test]
    fn cosines_count_from_the_query_background() {
        // A model whose unrelated texts meet at about 0.35: chunk 1 shares one ordinary word
        // with the question and is about something else (0.5), chunk 2 shares no word and is
        // what the question means (0.6). Divided by the best alone, chunk 1 keeps 0.83 of the
        // vector share and wins on its word; counted from the background it keeps 0.6.
        let bm = [(1, 4.0)];
        let vs = [(2, 0.6), (1, 0.5)];
        let plain = Weights::all(0.8);
        assert_eq!(order(&fuse(Mode::Hybrid, &bm, &vs, &plain)), [1, 2]);
        let counted = Weights { base: 0.35, ..Weights::all(0.8) };
        assert_eq!(order(&fuse(Mode::Hybrid, &bm, &vs, &counted)), [2, 1]);
        // At or below the background a cosine adds nothing.
        let low = fuse(Mode::Hybrid, &[], &[(3, 0.6), (4, 0.3)], &counted);
        assert_eq!(low.iter().find(|h| h.rowid == 4).map(|h| h.score), Some(0.0));
    }

    #[test]
    fn unrelated_vectors_never_count_and_single_modes_keep_raw_scores() {
        let bm = [(1, 3.0)];
        let vs = [(2, 0.0), (3, -0.2)];
        assert_eq!(order(&fuse(Mode::Hybrid, &bm, &vs, &Weights::all(0.9))), [1]);
        assert_eq!(fuse(Mode::Keyword, &bm, &[], &Weights::all(0.5))[0].score, 3.0);
        let v = fuse(Mode::Vector, &[], &[(4, 0.25)], &Weights::all(0.5));
        assert!((v[0].score - 0.25).abs() < 1e-6);
    }
}
