//! Facts that change, and facts said twice, decided without a language model.
//!
//! A write of a short fact (`memory.store`, `memory.learn`) is compared with the current facts
//! of the same kind and project before it is written: the nearest chunks by the fast tier's
//! vectors, then two plain measures, the cosine of their vectors and the overlap of their word
//! sets (Jaccard over lowercased words of two or more letters, and every number).
//!
//! - **Duplicate**: the same normalised text, or the same words in the same order but for filler
//!   ("the", "is", "now", …; never "not") and cosine ≥ [`DUPLICATE_COSINE`]. The write refreshes
//!   the existing memory (its time, its tags) instead of adding a second one, and its result
//!   names the memory it merged into.
//! - **Update** (learnings, which have no title to name their subject): cosine ≥
//!   [`SUPERSEDE_COSINE`] and word overlap ≥ [`SUPERSEDE_WORDS`] (the same subject and attribute
//!   phrased alike, a different value: "the editor is Vim" → "the editor is Helix"). A document's
//!   subject is its title. The later one (by observed time) supersedes the earlier, which
//!   stays stored and searchable, marked.
//! - **The same attribute, another value** (`reason: same_attribute`): the personal facts that
//!   `claims` reads — who, which attribute, what value — of a short `memory.store`,
//!   `memory.learn` or `memory.note` write, compared with the current documents, learnings and
//!   notes of its project ([`updated_by_claims`]), and of each chat chunk an ingest or a session
//!   capture writes, compared with the earlier chat chunks of its project ([`chat_written`]). "I
//!   live in Paris" → "we moved to Berlin", whatever the titles. An earlier fact is replaced
//!   only when each of its claims comes again; a stored fact, only when it says nothing else.
//! - A document re-stored under the same key (`memory.store` with the same title) with other
//!   text is always an update: its earlier chunks are kept, superseded by the new ones.
//!
//! The thresholds were calibrated on a development set of long chats, where distinct turns
//! are by construction neither duplicates nor updates of each other (see BENCHMARKS.md). They
//! hold for the built-in static embedder, which gives the fast tier its vectors.
//!
//! The `supersessions` table holds each link (older chunk id → newer chunk id). Deleting the
//! older chunk removes its link; deleting the newer one (forgetting the current version) keeps
//! the link, so the older version stays marked superseded — with `replacement_forgotten` — and
//! is never silently presented as current again. Forgetting the item (`doc:…`) takes every
//! version.

use std::collections::{BTreeSet, HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::sql::rarray;
use super::util::ms_to_rfc3339;
use super::{Inner, MemoryError, locks::read};

/// Cosine a duplicate needs (when a vector could be made) besides differing only in filler.
pub const DUPLICATE_COSINE: f32 = 0.9;
/// Cosine at or above which a later fact of much the same words replaces an earlier one.
pub const SUPERSEDE_COSINE: f32 = 0.45;
/// Word overlap (Jaccard) an update needs besides its cosine.
pub const SUPERSEDE_WORDS: f64 = 0.6;
/// Words whose presence or absence does not change what a fact says (negations are not here:
/// "not" changes everything).
const FILLER: &[&str] = &[
    "the",
    "an",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "now",
    "also",
    "still",
    "just",
    "really",
    "currently",
    "actually",
    "and",
    "so",
    "then",
    "that",
    "this",
    "it",
    "its",
    "of",
    "to",
    "in",
    "on",
    "at",
    "for",
    "with",
    "by",
    "as",
    "has",
    "have",
    "had",
    "do",
    "does",
    "did",
    "very",
    "indeed",
    "today",
];
/// Nearest chunks looked at.
const CANDIDATES: usize = 20;
/// Longest text (characters) compared: a fact, not a document.
pub(crate) const FACT_CHARS: usize = 2_000;

/// What a new fact is, next to the facts stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    New,
    Duplicate(Related),
    Update(Related),
}

/// A stored chunk a new fact is related to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Related {
    pub rowid: i64,
    pub id: String,
    pub origin: String,
    pub timestamp_ms: i64,
    pub cosine: f32,
}

/// The lowercased words of two or more letters, and every number.
pub(crate) fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2 || w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect()
}

/// The text with case, punctuation and spacing folded (equal texts are one fact).
pub(crate) fn folded(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Jaccard overlap of two word sets (two empty sets: 0).
pub(crate) fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let both = a.intersection(b).count();
    let either = a.len() + b.len() - both;
    if either == 0 { 0.0 } else { both as f64 / either as f64 }
}

/// The words of `text` in order, filler left out: two texts with the same gist say one thing
/// (word order counts: "Alice pays Bob" is not "Bob pays Alice", nor "0 1" "1 0").
pub(crate) fn gist(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2 || w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !FILLER.contains(&w.as_str()))
        .collect()
}

/// The decision for one pair: `Some(true)` one fact said twice, `Some(false)` an update, `None`
/// unrelated. `same_gist`: the same words in the same order but for filler; `cosine` is `None`
/// when no vector could be made; `a`, `b` the word sets.
pub(crate) fn classify(
    same_text: bool,
    same_gist: bool,
    cosine: Option<f32>,
    a: &BTreeSet<String>,
    b: &BTreeSet<String>,
) -> Option<bool> {
    let cos = cosine.unwrap_or(0.0);
    if same_text || (same_gist && !a.is_empty() && cosine.is_none_or(|c| c >= DUPLICATE_COSINE)) {
        Some(true)
    } else if cos >= SUPERSEDE_COSINE && overlap(a, b) >= SUPERSEDE_WORDS {
        Some(false)
    } else {
        None
    }
}

/// A new fact, measured once outside the writer lock.
pub(crate) struct Probe {
    vector: Option<Vec<f32>>,
    words: BTreeSet<String>,
    gist: Vec<String>,
    folded: String,
}

/// Measures a new fact: its fast-tier vector (as the chunk will be embedded) and its words.
/// `None` for a text too long to be one fact.
pub(crate) fn probe(inner: &Inner, title: Option<&str>, content: &str) -> Option<Probe> {
    if content.chars().count() > FACT_CHARS {
        return None;
    }
    let text = super::embed::embed_text(title, content);
    let vector = inner.fast.embedder.embed(&[text.as_str()]).ok().and_then(|mut v| v.pop());
    Some(Probe { vector, words: words(content), gist: gist(content), folded: folded(content) })
}

/// The current fact of `kind` in `project` a new one duplicates or updates, if any (the
/// closest by cosine), leaving out the chunks of `origin` (the item being written).
pub(crate) fn judge(
    inner: &Inner,
    conn: &Connection,
    probe: &Probe,
    kind: &str,
    project: Option<&str>,
    origin: &str,
) -> Result<Verdict, MemoryError> {
    let near: Vec<(i64, f32)> = match &probe.vector {
        Some(v) => read(&inner.fast.vectors).search(v, CANDIDATES, None),
        None => Vec::new(),
    };
    // The same text is a duplicate even when no vector could be made.
    let mut rows: Vec<i64> = near.iter().map(|n| n.0).collect();
    let same: Vec<i64> = conn
        .prepare_cached(
            "SELECT rowid FROM chunks WHERE source_kind = ?1 AND project IS ?2 AND length(content) <= ?3
             ORDER BY timestamp_ms DESC LIMIT 200",
        )?
        .query_map(params![kind, project, (FACT_CHARS * 4) as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    rows.extend(same);
    let cos: HashMap<i64, f32> = near.into_iter().collect();
    let mut best: Option<(bool, Related)> = None;
    let mut stmt = conn.prepare_cached(
        "SELECT c.rowid, c.id, c.origin, c.timestamp_ms, c.content FROM chunks c
         WHERE c.rowid IN rarray(?1) AND c.source_kind = ?2 AND c.project IS ?3 AND c.origin != ?4
           AND NOT EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = c.id)",
    )?;
    let mut q = stmt.query(params![rarray(&rows), kind, project, origin])?;
    while let Some(r) = q.next()? {
        let rowid: i64 = r.get(0)?;
        let content: String = r.get(4)?;
        let same_text = folded(&content) == probe.folded;
        // Not among the nearest: far (cosine 0), unless no vector could be made at all.
        let cosine = probe.vector.as_ref().map(|_| cos.get(&rowid).copied().unwrap_or(0.0));
        let same_gist = gist(&content) == probe.gist;
        let Some(duplicate) = classify(same_text, same_gist, cosine, &words(&content), &probe.words) else {
            continue;
        };
        let cosine = cosine.unwrap_or(if same_text { 1.0 } else { 0.0 });
        let related = Related { rowid, id: r.get(1)?, origin: r.get(2)?, timestamp_ms: r.get(3)?, cosine };
        // A duplicate wins over an update; then the closest.
        let better = match &best {
            None => true,
            Some((d, b)) => (duplicate && !d) || (duplicate == *d && cosine > b.cosine),
        };
        if better {
            best = Some((duplicate, related));
        }
    }
    Ok(match best {
        None => Verdict::New,
        Some((true, r)) => Verdict::Duplicate(r),
        Some((false, r)) => Verdict::Update(r),
    })
}

/// Most recent facts a write's claims are compared with.
const ATTRIBUTE_CANDIDATES: i64 = 500;

/// The current facts (`memory.store` documents of one chunk — never an ingested file's —,
/// learnings and notes of `project`, observed by `at_ms`,
/// not of `origin`) that the claims of `content` update: such a fact says nothing but claims
/// (every sentence of it states one, see `claims::fact_claims`), every claim of it has a claim
/// of the same subject and attribute in `content`, and at least one of them another value. A
/// fact that also says something `content` does not restate is left current, so no true
/// statement is hidden. Returns the chunk ids.
pub(crate) fn updated_by_claims(
    conn: &Connection,
    content: &str,
    project: Option<&str>,
    origin: &str,
    at_ms: i64,
) -> Result<Vec<String>, MemoryError> {
    if content.chars().count() > FACT_CHARS {
        return Ok(Vec::new());
    }
    let new = super::claims::claims(content, None);
    if new.is_empty() {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.content FROM chunks c
         WHERE c.source_kind IN ('document', 'learning', 'note') AND c.project IS ?1 AND c.origin != ?2
           AND c.timestamp_ms <= ?3 AND length(c.content) <= ?4
           AND NOT EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = c.id)
           AND (c.source_kind != 'document'
                OR (c.origin LIKE 'doc:%' AND (SELECT count(*) FROM chunks d WHERE d.origin = c.origin) = 1))
         ORDER BY c.timestamp_ms DESC LIMIT ?5",
    )?;
    let mut out = Vec::new();
    let mut q = stmt.query(params![project, origin, at_ms, (FACT_CHARS * 4) as i64, ATTRIBUTE_CANDIDATES])?;
    while let Some(r) = q.next()? {
        let old = super::claims::fact_claims(&r.get::<_, String>(1)?).unwrap_or_default();
        if updates(&old, &new) {
            out.push(r.get(0)?);
        }
    }
    Ok(out)
}

/// The fact observed after `at_ms` (the earliest, of the same facts as [`updated_by_claims`])
/// that updates a fact `content` states when it is written late (`observed_at` before it): the
/// late write goes in as that fact's history. `content` must say nothing but claims.
pub(crate) fn later_by_claims(
    conn: &Connection,
    content: &str,
    project: Option<&str>,
    origin: &str,
    at_ms: i64,
) -> Result<Option<String>, MemoryError> {
    let Some(new) = super::claims::fact_claims(content).filter(|_| content.chars().count() <= FACT_CHARS) else {
        return Ok(None);
    };
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.content FROM chunks c
         WHERE c.source_kind IN ('document', 'learning', 'note') AND c.project IS ?1 AND c.origin != ?2
           AND c.timestamp_ms > ?3 AND length(c.content) <= ?4
           AND (c.source_kind != 'document'
                OR (c.origin LIKE 'doc:%' AND (SELECT count(*) FROM chunks d WHERE d.origin = c.origin) = 1))
         ORDER BY c.timestamp_ms LIMIT ?5",
    )?;
    let mut q = stmt.query(params![project, origin, at_ms, (FACT_CHARS * 4) as i64, ATTRIBUTE_CANDIDATES])?;
    while let Some(r) = q.next()? {
        if updates(&new, &super::claims::claims(&r.get::<_, String>(1)?, None)) {
            return Ok(Some(r.get(0)?));
        }
    }
    Ok(None)
}

/// The chat chunks among `rowids` (just written, in the writing transaction) whose messages
/// update what earlier chat chunks of their project said (see `claims::chat_claims`: the
/// sender of a first-person message is its subject): each such earlier chunk — observed
/// strictly before, every claim of it restated with at least one other value — is recorded as
/// superseded. Returns how many links were recorded.
pub(crate) fn chat_written(conn: &Connection, rowids: &[i64]) -> Result<usize, MemoryError> {
    let written: Vec<(String, String, Option<String>, i64)> = conn
        .prepare_cached(
            "SELECT id, content, project, timestamp_ms FROM chunks WHERE rowid IN rarray(?1) AND source_kind = 'chat'
             ORDER BY timestamp_ms, rowid",
        )?
        .query_map([rarray(rowids)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut n = 0;
    for (id, content, project, ts) in written {
        let new = super::claims::chat_claims(&content);
        if new.is_empty() {
            continue;
        }
        let olds: Vec<(String, String)> = conn
            .prepare_cached(
                "SELECT c.id, c.content FROM chunks c
                 WHERE c.source_kind = 'chat' AND c.project IS ?1 AND c.timestamp_ms < ?2 AND c.id != ?3
                   AND NOT EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = c.id)
                 ORDER BY c.timestamp_ms DESC LIMIT ?4",
            )?
            .query_map(params![project, ts, id, ATTRIBUTE_CANDIDATES], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (old_id, old_content) in olds {
            if updates(&super::claims::chat_claims(&old_content), &new) {
                record(conn, &old_id, &id, "same_attribute", None, ts)?;
                n += 1;
            }
        }
        // Read late (an older export after a newer one): a later message that updates all this
        // chunk claims makes it history.
        let later: Vec<(String, String, i64)> = conn
            .prepare_cached(
                "SELECT c.id, c.content, c.timestamp_ms FROM chunks c
                 WHERE c.source_kind = 'chat' AND c.project IS ?1 AND c.timestamp_ms > ?2
                 ORDER BY c.timestamp_ms LIMIT ?3",
            )?
            .query_map(params![project, ts, ATTRIBUTE_CANDIDATES], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if let Some((by, _, at)) = later.iter().find(|l| updates(&new, &super::claims::chat_claims(&l.1))) {
            record(conn, &id, by, "same_attribute", None, *at)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Whether `new` updates everything `old` claims: each old claim has a new one of the same
/// subject and attribute, and at least one of them another value.
pub(crate) fn updates(old: &[super::claims::Claim], new: &[super::claims::Claim]) -> bool {
    let mut changed = false;
    let covered = !old.is_empty()
        && old.iter().all(|o| {
            new.iter().find(|c| c.subject == o.subject && c.attribute == o.attribute).is_some_and(|c| {
                changed |= c.value != o.value;
                true
            })
        });
    covered && changed
}

/// Records that `old_id` was replaced by `new_id` (observed at `at_ms`).
pub(crate) fn record(
    conn: &Connection,
    old_id: &str,
    new_id: &str,
    reason: &str,
    similarity: Option<f32>,
    at_ms: i64,
) -> rusqlite::Result<()> {
    if old_id == new_id {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT INTO supersessions (old_id, new_id, reason, similarity, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(old_id) DO UPDATE SET new_id = excluded.new_id, reason = excluded.reason,
            similarity = excluded.similarity, at_ms = excluded.at_ms",
    )?
    .execute(params![old_id, new_id, reason, similarity.map(f64::from), at_ms])?;
    Ok(())
}

/// Bookkeeping of deleted chunks (inside the deleting transaction): a deleted chunk's own link
/// goes; links to it as the replacement stay (see the module notes).
pub(crate) fn chunks_deleted(conn: &Connection, rowids: &[i64]) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM supersessions WHERE old_id IN (SELECT id FROM chunks WHERE rowid IN rarray(?1))")?
        .execute([rarray(rowids)])?;
    Ok(())
}

/// The chunk that is current for `id` (following its replacements observed by `as_of`), if
/// it is still stored; `id` itself when nothing replaced it.
pub(crate) fn current(conn: &Connection, id: &str, as_of: Option<i64>) -> Result<Option<i64>, MemoryError> {
    let mut at = id.to_string();
    let mut seen = HashSet::new();
    while seen.insert(at.clone()) {
        let next: Option<String> = conn
            .prepare_cached("SELECT new_id FROM supersessions WHERE old_id = ?1 AND at_ms <= ?2")?
            .query_row(params![at, as_of.unwrap_or(i64::MAX)], |r| r.get(0))
            .optional()?;
        match next {
            Some(n) => at = n,
            None => break,
        }
    }
    Ok(conn.prepare_cached("SELECT rowid FROM chunks WHERE id = ?1")?.query_row([&at], |r| r.get(0)).optional()?)
}

/// One version in a fact's history, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Version {
    pub chunk_id: String,
    /// Still stored (a forgotten replacement is listed, with what the link remembers).
    pub stored: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The version that replaced this one, why and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// Nothing replaced it (the current version).
    pub current: bool,
}

/// Most versions a history lists.
pub(crate) const HISTORY_MAX: usize = 200;

/// Every version linked to `id` by replacements (both ways), oldest first.
pub(crate) fn history(conn: &Connection, id: &str) -> Result<Vec<Version>, MemoryError> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut todo = vec![id.to_string()];
    while let Some(at) = todo.pop() {
        if seen.len() >= HISTORY_MAX || !seen.insert(at.clone()) {
            continue;
        }
        let linked: Vec<String> = conn
            .prepare_cached(
                "SELECT new_id FROM supersessions WHERE old_id = ?1 UNION SELECT old_id FROM supersessions WHERE new_id = ?1",
            )?
            .query_map([&at], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        todo.extend(linked.into_iter().filter(|l| !seen.contains(l)));
    }
    let mut out = Vec::new();
    for chunk_id in seen {
        let row: Option<(i64, String, Option<String>)> = conn
            .prepare_cached("SELECT timestamp_ms, content, project FROM chunks WHERE id = ?1")?
            .query_row([&chunk_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        let link: Option<(String, i64, String, Option<f64>)> = conn
            .prepare_cached("SELECT new_id, at_ms, reason, similarity FROM supersessions WHERE old_id = ?1")?
            .query_row([&chunk_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional()?;
        // A forgotten replacement's time is the one its link recorded.
        let forgotten_at: Option<i64> = if row.is_none() {
            conn.prepare_cached("SELECT max(at_ms) FROM supersessions WHERE new_id = ?1")?
                .query_row([&chunk_id], |r| r.get(0))?
        } else {
            None
        };
        let observed = row.as_ref().map(|r| r.0).or(forgotten_at);
        out.push((
            observed.unwrap_or(i64::MAX),
            Version {
                stored: row.is_some(),
                observed_at: observed.map(ms_to_rfc3339),
                preview: row.as_ref().map(|r| super::util::preview(r.1.trim(), 200)),
                project: row.as_ref().and_then(|r| r.2.clone()),
                current: link.is_none(),
                superseded_by: link.as_ref().map(|l| l.0.clone()),
                superseded_at: link.as_ref().map(|l| ms_to_rfc3339(l.1)),
                reason: link.as_ref().map(|l| l.2.clone()),
                similarity: link.as_ref().and_then(|l| l.3),
                chunk_id,
            },
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.chunk_id.cmp(&b.1.chunk_id)));
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_tell_duplicates_updates_and_unrelated_facts() {
        let (ta, tb) = ("The user's favourite editor is Vim.", "the user's favourite editor is now vim");
        let (tc, td) = ("The user's favourite editor is Helix.", "The user's favourite editor is not Vim.");
        let (a, c) = (words(ta), words(tc));
        assert_eq!(gist(ta), gist(tb));
        assert_ne!(gist(ta), gist(tc));
        assert_ne!(gist(ta), gist(td), "a negation is no filler");
        assert_ne!(gist("payload 0 1"), gist("payload 1 0"), "order counts");
        assert_eq!(folded("The user's  editor: Vim!"), folded("the user s editor vim"));
        assert_eq!(classify(true, false, Some(0.0), &a, &c), Some(true));
        assert_eq!(classify(false, true, Some(0.99), &a, &words(tb)), Some(true));
        assert_eq!(classify(false, true, None, &a, &words(tb)), Some(true), "no vector: the words decide");
        assert_eq!(classify(false, false, Some(0.99), &a, &words(td)), Some(false), "a negation is news");
        assert_eq!(classify(false, false, Some(0.5), &a, &c), Some(false));
        assert_eq!(classify(false, false, Some(0.2), &a, &c), None);
        assert_eq!(classify(false, false, Some(0.9), &a, &words("Tea in the morning")), None);
    }
}
