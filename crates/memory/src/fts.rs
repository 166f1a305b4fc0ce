//! The full-text index: tantivy with BM25 over each chunk's text, stored under
//! `data_dir/fts/`. Documents carry the chunk rowid (indexed + fast field) and one text
//! field; text comes back from SQLite. Each commit stores the database change sequence it
//! covers and the index's layout in tantivy's commit payload, so the index itself says how
//! far it is and which analyzer built it; an index of another layout is thrown away at open
//! and rebuilt from the database (`sync` adds every chunk again).
//!
//! The `text` field holds the chunk's title, then its content, as `analysis` turns them
//! into terms: English word stems, plus code-like compounds kept whole. The title is
//! counted once: [`indexed_parts`] drops the lines at the start of the content that only
//! repeat it (a Markdown file's `# Title`, a mail's `Subject:`), and the heading path adds
//! only the parts that differ from it. Title and content share one field, as standard BM25
//! baselines index `title + text`: on our development set (SciFact training claims, at
//! k1 0.9 / b 0.4) a separate title field added to the content's score ranked worse at every
//! weight tried (nDCG@10 0.675 at weight 1, 0.645 at 1.5, 0.696 at 0.5) than one field (0.697).
//!
//! Ranking is tantivy's BM25; a query is any of its word stems, or of its compounds
//! (boosted), in `text`, never parsed as query syntax. tantivy 0.27 fixes k1 = 1.2 and
//! b = 0.75 as constants; scoring the same postings with our own BM25 on the development
//! set, Lucene-style k1 0.9 / b 0.4 gave 0.697, 1.2 / 0.75 gave 0.701, and a grid over k1
//! 0.9–1.5 and b 0.4–0.9 stayed within 0.697–0.702, inside the noise of 809 queries; so
//! tantivy's own scorer, with its block-max WAND pruning, is kept.

use std::path::Path;
use std::time::Duration;

use tantivy::collector::{Collector, SegmentCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    DocId, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Score, SegmentReader, TantivyDocument, Term,
};

use super::error::{MemoryError, ResultExt};
use super::util::Deferred;

mod analysis;
mod directory;

use analysis::EnglishTokenizer;
pub use analysis::word_stems;
pub(crate) use analysis::{
    QueryStops, QueryTerms, for_each_word, is_cjk, is_query_stop_word, is_unmarked_word, stem, without_stop_words,
};
use directory::SyncingDirectory;

/// Bumped when the document layout or an analyzer changes; an index of another layout is
/// rebuilt from the database when the store is opened. 1: `title` and `body` fields with
/// tantivy's default tokenizer. 2: one `text` field (title once; stems and compounds).
/// 3: words folded (accents, full-width forms) before stemming. 4: Han, kana and Hangul read
/// as overlapping pairs of characters.
pub(crate) const LAYOUT: u32 = 4;
/// A compound matched whole counts double, so that the chunk naming exactly `1.2.3` or
/// `snake_case_name` outranks one where the parts appear apart, even repeatedly (on the
/// development set, where few queries have compounds, nDCG@10 moves by 0.001).
const EXACT_BOOST: Score = 2.0;
/// Memory for the single indexing thread (CPU is shared with the rest of the daemon).
const WRITER_HEAP: usize = 64 * 1024 * 1024;
/// How long a commit may stay in the page cache only before a flush makes it durable.
const FLUSH_AFTER: Duration = Duration::from_secs(1);

pub(crate) struct Fts {
    reader: IndexReader,
    directory: SyncingDirectory,
    /// The background flush after commits.
    flush_later: Deferred,
    rowid: Field,
    text: Field,
}

pub(crate) fn schema() -> (Schema, [Field; 2]) {
    let mut b = Schema::builder();
    let rowid = b.add_u64_field("rowid", NumericOptions::default().set_indexed().set_fast());
    // Frequencies without positions: ranking needs term frequencies, and the engine
    // builds its own snippets, so positions would only cost space.
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(EnglishTokenizer::NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let text = b.add_text_field("text", text);
    (b.build(), [rowid, text])
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    layout: u32,
    seq: i64,
}

impl Drop for Fts {
    /// The store is closing (its index writer already dropped): flush the last commits.
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(error = %format!("{e:#}"), "flushing the full-text index at close failed");
        }
    }
}

/// Why an existing index is not used as it is.
enum Unusable {
    /// Built by another version of the engine (another layout or analyzer).
    Layout(u32),
    Failed(MemoryError),
}

impl<E: Into<MemoryError>> From<E> for Unusable {
    fn from(e: E) -> Self {
        Unusable::Failed(e.into())
    }
}

/// What one chunk gives the index: its title (the item's title, then the parts of the
/// heading path that differ from it) and its body: the content without the lines at its
/// start that only repeat the title (a document's `# Title`, a heading of the path, a
/// mail's `Subject:` line), so that every title word is counted once. What `read_chunk`
/// returns is the stored content, unchanged.
pub(crate) fn indexed_parts<'a>(title: Option<&str>, heading: Option<&str>, content: &'a str) -> (String, &'a str) {
    let mut parts: Vec<&str> = Vec::new();
    for p in title.into_iter().chain(heading.into_iter().flat_map(|h| h.split(" > "))) {
        let p = p.trim();
        if !p.is_empty() && !parts.iter().any(|q| q.eq_ignore_ascii_case(p)) {
            parts.push(p);
        }
    }
    let mut body = content;
    loop {
        let rest = body.trim_start();
        let end = rest.find('\n').unwrap_or(rest.len());
        let line = rest[..end].trim_end();
        let hashes = line.bytes().take_while(|&c| c == b'#').count();
        let repeats = if (1..=6).contains(&hashes) && line[hashes..].starts_with([' ', '\t']) {
            let text = line[hashes..].trim().trim_end_matches('#').trim();
            parts.iter().any(|p| p.eq_ignore_ascii_case(text))
        } else if let Some(subject) = line.strip_prefix("Subject:") {
            title.is_some_and(|t| t.trim().eq_ignore_ascii_case(subject.trim()))
        } else {
            false
        };
        if !repeats {
            return (parts.join("\n"), body);
        }
        body = &rest[end..];
    }
}

impl Fts {
    /// Opens (or creates) the index in `dir` and returns it with its writer and the
    /// change sequence of its last commit: 0 for a new index, or one rebuilt because it was
    /// unreadable or of another layout, so that the caller adds every chunk again.
    pub fn open(dir: &Path) -> Result<(Fts, IndexWriter, i64), MemoryError> {
        match Self::try_open(dir) {
            Ok(x) => return Ok(x),
            Err(Unusable::Failed(e @ MemoryError::Index(tantivy::TantivyError::LockFailure(..)))) => return Err(e),
            // Derived data: an index of another layout, damaged or foreign, is thrown away.
            Err(Unusable::Layout(found)) => {
                tracing::info!(found, current = LAYOUT, "full-text index built by another version; rebuilding it")
            }
            Err(Unusable::Failed(e)) => {
                tracing::warn!(error = %format!("{e:#}"), "full-text index unusable; rebuilding it")
            }
        }
        if dir.exists() {
            std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        Self::try_open(dir).map_err(|why| match why {
            Unusable::Failed(e) => e,
            Unusable::Layout(found) => MemoryError::Corrupt(format!("a new full-text index has layout {found}")),
        })
    }

    fn try_open(dir: &Path) -> Result<(Fts, IndexWriter, i64), Unusable> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let (schema, [rowid, text]) = schema();
        let directory =
            SyncingDirectory::open(dir).with_context(|| format!("opening {}", dir.display()))?.map_err(|_| {
                MemoryError::Corrupt("the full-text index was not flushed before the machine stopped".into())
            })?;
        let (index, seq) = if Index::exists(&directory).map_err(tantivy::TantivyError::from)? {
            let index = Index::open(directory.clone())?;
            let seq = match index.load_metas()?.payload {
                Some(p) => {
                    let p: Payload = serde_json::from_str(&p)
                        .map_err(|e| MemoryError::Corrupt(format!("reading the full-text commit payload: {e}")))?;
                    if p.layout != LAYOUT {
                        return Err(Unusable::Layout(p.layout));
                    }
                    p.seq
                }
                None => 0,
            };
            if index.schema() != schema {
                return Err(MemoryError::Corrupt("the full-text index has an unexpected schema".into()).into());
            }
            (index, seq)
        } else {
            (Index::create(directory.clone(), schema, IndexSettings::default())?, 0)
        };
        index.tokenizers().register(EnglishTokenizer::NAME, TextAnalyzer::from(EnglishTokenizer::default()));
        let writer = index.writer_with_num_threads(1, WRITER_HEAP)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let fts = Fts { reader, directory, flush_later: Deferred::default(), rowid, text };
        Ok((fts, writer, seq))
    }

    /// Adds one chunk: `title` is its item's title, `heading` its heading path, `context` the
    /// message a lone chat message answers (its `metadata.context`), matched as part of it.
    pub fn add(
        &self,
        w: &IndexWriter,
        rowid: i64,
        title: Option<&str>,
        heading: Option<&str>,
        content: &str,
        context: Option<&str>,
    ) -> Result<(), MemoryError> {
        let (title, body) = indexed_parts(title, heading, content);
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.rowid, rowid as u64);
        for part in [title.as_str(), body, context.unwrap_or("")] {
            if !part.is_empty() {
                doc.add_text(self.text, part);
            }
        }
        w.add_document(doc)?;
        Ok(())
    }

    pub fn delete(&self, w: &IndexWriter, rowid: i64) {
        w.delete_term(Term::from_field_u64(self.rowid, rowid as u64));
    }

    /// Commits everything added since the last commit, recording `seq`, and makes it
    /// visible to searches before returning.
    pub fn commit(&self, w: &mut IndexWriter, seq: i64) -> Result<(), MemoryError> {
        let mut prepared = w.prepare_commit()?;
        let payload = serde_json::to_string(&Payload { layout: LAYOUT, seq })
            .map_err(|e| MemoryError::Other(format!("writing the full-text commit payload: {e}")))?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.reader.reload()?;
        self.schedule_flush();
        Ok(())
    }

    /// Flushes the index to disk [`FLUSH_AFTER`] from now, unless a flush is already waiting.
    fn schedule_flush(&self) {
        if self.directory.syncs_each_write() {
            return;
        }
        let directory = self.directory.clone();
        let flush = move || {
            if let Err(e) = directory.flush() {
                tracing::warn!(error = %e, "flushing the full-text index failed; it will be retried");
            }
        };
        if let Err(flush) = self.flush_later.request("fts-flush", FLUSH_AFTER, flush) {
            flush();
        }
    }

    /// Makes every commit so far durable (commits themselves only reach the page cache; see
    /// `directory`).
    pub fn flush(&self) -> Result<(), MemoryError> {
        self.directory.flush().context("flushing the full-text index to disk")
    }

    /// The inverse document frequency of each word stem, as BM25 weighs it: rare words
    /// weigh most, a word no chunk has weighs as if one chunk had it.
    pub fn idf(&self, stems: &[String]) -> Vec<f64> {
        self.idf_of(&self.doc_freqs(stems))
    }

    /// The inverse document frequency of words in `dfs` chunks each, as [`Self::idf`] gives it.
    pub fn idf_of(&self, dfs: &[u64]) -> Vec<f64> {
        let n = self.num_docs() as f64;
        dfs.iter()
            .map(|&df| {
                let df = df.max(1) as f64;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect()
    }

    /// In how many chunks each word stem is.
    pub fn doc_freqs(&self, stems: &[String]) -> Vec<u64> {
        let searcher = self.reader.searcher();
        stems.iter().map(|t| searcher.doc_freq(&Term::from_field_text(self.text, t)).unwrap_or(0)).collect()
    }

    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// In how many chunks the index has `word` (its stem; the most frequent one when it has
    /// several): the document frequency `tree.top_entities` ranks topics against.
    pub fn doc_freq(&self, word: &str) -> u64 {
        let searcher = self.reader.searcher();
        let terms = QueryTerms::parse(word);
        terms
            .words
            .iter()
            .filter_map(|t| searcher.doc_freq(&Term::from_field_text(self.text, t)).ok())
            .max()
            .unwrap_or(0)
    }

    /// The terms of `query` as the index knows them.
    pub fn query_terms(&self, query: &str) -> QueryTerms {
        QueryTerms::parse(query)
    }

    /// Any-term BM25 query over the word stems and compounds (never parsed as query
    /// syntax, so a user's `:` or quotes cannot fail or reach other fields), and the stems of
    /// `extra` each weighed by its boost. Unscored for listings, which only need the matching
    /// documents.
    fn text_query(&self, terms: &QueryTerms, extra: &[(String, f32)], scored: bool) -> Option<Box<dyn Query>> {
        let record = if scored { IndexRecordOption::WithFreqs } else { IndexRecordOption::Basic };
        let words = terms.words.iter().map(|t| Term::from_field_text(self.text, t));
        let compounds = terms.compounds.iter().map(|t| Term::from_field_text(self.text, t));
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            words.map(|t| (Occur::Should, Box::new(TermQuery::new(t, record)) as Box<dyn Query>)).collect();
        for t in compounds {
            let q = BoostQuery::new(Box::new(TermQuery::new(t, record)), EXACT_BOOST);
            clauses.push((Occur::Should, Box::new(q)));
        }
        for (stem, boost) in extra {
            let t = Term::from_field_text(self.text, stem);
            clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(TermQuery::new(t, record)), *boost))));
        }
        match clauses.len() {
            0 => None,
            // One word alone as a plain term query: tantivy prunes it with its single-term
            // block-max WAND, where a one-clause boolean scored nearly every posting (a word
            // in every chunk spent 8.5 ms at 1M chunks mostly scoring postings).
            1 => clauses.pop().map(|(_, q)| q),
            _ => Some(Box::new(BooleanQuery::new(clauses))),
        }
    }

    fn restricted(&self, q: Box<dyn Query>, restrict: Option<&[i64]>) -> Box<dyn Query> {
        match restrict {
            None => q,
            Some(rows) => {
                let set = TermSetQuery::new(rows.iter().map(|r| Term::from_field_u64(self.rowid, *r as u64)));
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, q),
                    (Occur::Must, Box::new(ConstScoreQuery::new(Box::new(set), 0.0))),
                ]))
            }
        }
    }

    /// Top `limit` chunks by BM25 as `(rowid, score)`, optionally only among `restrict`, the
    /// stems of `extra` matched besides the query's, each weighed by its boost.
    pub fn search(
        &self,
        terms: &QueryTerms,
        extra: &[(String, f32)],
        limit: usize,
        restrict: Option<&[i64]>,
    ) -> Result<Vec<(i64, f32)>, MemoryError> {
        let Some(q) = self.text_query(terms, extra, true) else {
            return Ok(Vec::new());
        };
        if limit == 0 || restrict.is_some_and(|r| r.is_empty()) {
            return Ok(Vec::new());
        }
        let q = self.restricted(q, restrict);
        let searcher = self.reader.searcher();
        let top = searcher.search(&*q, &TopDocs::with_limit(limit).order_by_score())?;
        let mut columns: Vec<Option<Column<u64>>> = vec![None; searcher.segment_readers().len()];
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let slot = &mut columns[addr.segment_ord as usize];
            if slot.is_none() {
                *slot = Some(searcher.segment_reader(addr.segment_ord).fast_fields().u64("rowid")?);
            }
            if let Some(r) = slot.as_ref().and_then(|c| c.first(addr.doc_id)) {
                out.push((r as i64, score));
            }
        }
        Ok(out)
    }

    /// Rowids of every chunk matching any term (for filtered listings), unordered.
    pub fn matching_rowids(&self, terms: &QueryTerms) -> Result<Vec<i64>, MemoryError> {
        let Some(q) = self.text_query(terms, &[], false) else {
            return Ok(Vec::new());
        };
        Ok(self.reader.searcher().search(&*q, &RowidCollector)?)
    }
}

/// Collects the rowid fast field of every matching document, without scoring.
struct RowidCollector;

struct RowidSegment {
    column: Column<u64>,
    out: Vec<i64>,
}

impl Collector for RowidCollector {
    type Fruit = Vec<i64>;
    type Child = RowidSegment;

    fn for_segment(&self, _ord: u32, segment: &SegmentReader) -> tantivy::Result<RowidSegment> {
        Ok(RowidSegment { column: segment.fast_fields().u64("rowid")?, out: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<i64>>) -> tantivy::Result<Vec<i64>> {
        Ok(fruits.concat())
    }
}

impl SegmentCollector for RowidSegment {
    type Fruit = Vec<i64>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        if let Some(r) = self.column.first(doc) {
            self.out.push(r as i64);
        }
    }

    fn harvest(self) -> Vec<i64> {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::indexed_parts;

    #[test]
    fn the_title_is_indexed_once_and_only_its_repeats_leave_the_body() {
        // A Markdown file: the title comes from its `# Alpha` line, which is also the heading.
        let (title, body) = indexed_parts(Some("Alpha"), Some("Alpha"), "# Alpha\n\nAlpha talks about comets.");
        assert_eq!((title.as_str(), body), ("Alpha", "\n\nAlpha talks about comets."));
        // Heading paths add the parts that differ from the title; their lines leave the body.
        let content = "## Setup\n\nSteps.\n\n### Linux\n\nRun it.";
        let (title, body) = indexed_parts(Some("Guide"), Some("Guide > Setup"), content);
        assert_eq!((title.as_str(), body), ("Guide\nSetup", "\n\nSteps.\n\n### Linux\n\nRun it."));
        // A mail's first chunk opens with its subject, which is also its title.
        let mail = "Subject: Budget review\nFrom: Alice <alice@example.com>\n\nCan we review the budget?";
        let (title, body) = indexed_parts(Some("Budget review"), None, mail);
        assert_eq!(
            (title.as_str(), body),
            ("Budget review", "\nFrom: Alice <alice@example.com>\n\nCan we review the budget?")
        );
        // Text that only mentions the title, other headings, and untitled chunks stay whole.
        for (t, h, c) in [
            (Some("Notes"), None, "Notes on the trip"),
            (Some("Notes"), None, "# Packing\n\nSocks."),
            (Some("Re: Plans"), None, "Subject: Plans\n\nHi"),
            (None, None, "# Heading\n\ntext"),
        ] {
            assert_eq!(indexed_parts(t, h, c).1, c);
        }
    }
}
