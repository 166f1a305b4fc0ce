//! The full-text index: tantivy with BM25 over each chunk's title and content, stored
//! under `data_dir/fts/`. Documents carry only the chunk rowid (indexed + fast field);
//! text comes back from SQLite. Each commit stores the database change sequence it
//! covers in tantivy's commit payload, so the index itself says how far it is.

use std::path::Path;

use tantivy::collector::{Collector, SegmentCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};
use tantivy::{DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, SegmentReader, TantivyDocument, Term};

use super::error::{MemoryError, ResultExt};

/// Bumped when the document layout changes; an index of another layout is rebuilt.
const LAYOUT: u32 = 1;
/// Memory for the single indexing thread (CPU is shared with the rest of the daemon).
const WRITER_HEAP: usize = 64 * 1024 * 1024;
/// Title terms weigh more than body terms.
const TITLE_BOOST: Score = 1.5;

pub(crate) struct Fts {
    index: Index,
    reader: IndexReader,
    rowid: Field,
    title: Field,
    body: Field,
}

fn schema() -> (Schema, Field, Field, Field) {
    let mut b = Schema::builder();
    let rowid = b.add_u64_field("rowid", NumericOptions::default().set_indexed().set_fast());
    // Frequencies without positions: ranking needs term frequencies, and the engine
    // builds its own snippets, so positions would only cost space.
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer("default").set_index_option(IndexRecordOption::WithFreqs),
    );
    let title = b.add_text_field("title", text.clone());
    let body = b.add_text_field("body", text);
    (b.build(), rowid, title, body)
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    layout: u32,
    seq: i64,
}

impl Fts {
    /// Opens (or creates) the index in `dir` and returns it with its writer and the
    /// change sequence of its last commit (0 for a new or unreadable index).
    pub fn open(dir: &Path) -> Result<(Fts, IndexWriter, i64), MemoryError> {
        match Self::try_open(dir) {
            Ok(x) => Ok(x),
            Err(e @ MemoryError::Index(tantivy::TantivyError::LockFailure(..))) => Err(e),
            Err(e) => {
                // Derived data: a damaged or foreign index is thrown away and rebuilt.
                tracing::warn!(error = %format!("{e:#}"), "full-text index unusable; rebuilding it");
                if dir.exists() {
                    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
                }
                Self::try_open(dir)
            }
        }
    }

    fn try_open(dir: &Path) -> Result<(Fts, IndexWriter, i64), MemoryError> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let (schema, rowid, title, body) = schema();
        let directory = MmapDirectory::open(dir).map_err(tantivy::TantivyError::from)?;
        let index = Index::open_or_create(directory, schema)?;
        let seq = match index.load_metas()?.payload {
            Some(p) => {
                let p: Payload = serde_json::from_str(&p)
                    .map_err(|e| MemoryError::Corrupt(format!("reading the full-text commit payload: {e}")))?;
                if p.layout != LAYOUT {
                    return Err(MemoryError::Corrupt(format!("full-text index layout {} is not {LAYOUT}", p.layout)));
                }
                p.seq
            }
            None => 0,
        };
        let writer = index.writer_with_num_threads(1, WRITER_HEAP)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok((Fts { index, reader, rowid, title, body }, writer, seq))
    }

    pub fn add(&self, w: &IndexWriter, rowid: i64, title: Option<&str>, body: &str) -> Result<(), MemoryError> {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.rowid, rowid as u64);
        if let Some(t) = title {
            doc.add_text(self.title, t);
        }
        doc.add_text(self.body, body);
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
        Ok(())
    }

    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The index's tokens of `query`, deduplicated, in order.
    pub fn query_terms(&self, query: &str) -> Vec<String> {
        let Ok(mut analyzer) = self.index.tokenizer_for_field(self.body) else {
            return Vec::new();
        };
        let mut stream = analyzer.token_stream(query);
        let mut out: Vec<String> = Vec::new();
        while stream.advance() {
            let t = &stream.token().text;
            if !out.iter().any(|x| x == t) {
                out.push(t.clone());
            }
        }
        out
    }

    /// Any-term BM25 query built from the tokens (never parsed as query syntax, so a
    /// user's `:` or quotes cannot fail or reach other fields).
    fn text_query(&self, terms: &[String]) -> Option<Box<dyn Query>> {
        if terms.is_empty() {
            return None;
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * 2);
        for t in terms {
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(Term::from_field_text(self.body, t), IndexRecordOption::WithFreqs)),
            ));
            let title = TermQuery::new(Term::from_field_text(self.title, t), IndexRecordOption::WithFreqs);
            clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(title), TITLE_BOOST))));
        }
        Some(Box::new(BooleanQuery::new(clauses)))
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

    /// Top `limit` chunks by BM25 as `(rowid, score)`, optionally only among `restrict`.
    pub fn search(
        &self,
        terms: &[String],
        limit: usize,
        restrict: Option<&[i64]>,
    ) -> Result<Vec<(i64, f32)>, MemoryError> {
        let Some(q) = self.text_query(terms) else {
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
    pub fn matching_rowids(&self, terms: &[String]) -> Result<Vec<i64>, MemoryError> {
        let Some(q) = self.text_query(terms) else {
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
