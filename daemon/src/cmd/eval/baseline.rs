//! Reference rankers `eval` runs in the same process as the engine's methods, so that its
//! table says where the engine stands on the user's own data rather than against figures
//! measured elsewhere: textbook BM25 over each document's title and text (Lucene's formula
//! with the parameters BEIR's BM25 baseline uses, k1 = 0.9 and b = 0.4, on English stems
//! without stop words), and reciprocal-rank fusion (k = 60) of that BM25 with the engine's own
//! vector ranking, the usual "BM25 + dense" hybrid.

use std::collections::HashMap;

use openhuman_memory::word_stems;

/// Term-frequency saturation and length normalisation.
pub(crate) const K1: f64 = 0.9;
pub(crate) const B: f64 = 0.4;
/// The rank constant of reciprocal-rank fusion.
pub(crate) const RRF_K: f64 = 60.0;

/// An in-memory inverted index over whole documents.
pub(crate) struct Bm25 {
    /// Stem → (document, term frequency).
    postings: HashMap<String, Vec<(u32, u32)>>,
    lengths: Vec<u32>,
    average: f64,
}

impl Bm25 {
    /// Indexes `docs` (each the document's title and text together); document `i` is `docs[i]`.
    pub(crate) fn build<'a>(docs: impl IntoIterator<Item = &'a str>) -> Bm25 {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        for (i, text) in docs.into_iter().enumerate() {
            let stems = word_stems(text);
            lengths.push(stems.len() as u32);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for s in stems {
                *tf.entry(s).or_default() += 1;
            }
            for (s, n) in tf {
                postings.entry(s).or_default().push((i as u32, n));
            }
        }
        let total: u64 = lengths.iter().map(|&l| l as u64).sum();
        let average = if lengths.is_empty() { 1.0 } else { (total as f64 / lengths.len() as f64).max(1.0) };
        Bm25 { postings, lengths, average }
    }

    /// The `depth` best documents for `query`, best first (ties by document order). A term
    /// the query repeats counts again, as a clause per occurrence would.
    pub(crate) fn rank(&self, query: &str, depth: usize) -> Vec<usize> {
        let mut ranked: Vec<(u32, f64)> = self.scores(query).into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().take(depth).map(|(d, _)| d as usize).collect()
    }

    /// Every matching document's score.
    fn scores(&self, query: &str) -> HashMap<u32, f64> {
        let n = self.lengths.len() as f64;
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for term in word_stems(query) {
            let Some(list) = self.postings.get(&term) else { continue };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in list {
                let tf = tf as f64;
                let norm = K1 * (1.0 - B + B * self.lengths[doc as usize] as f64 / self.average);
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        scores
    }
}

/// Reciprocal-rank fusion of ranked lists: each contributes `1 / (RRF_K + rank)`.
pub(crate) fn rrf(lists: &[&[usize]], depth: usize) -> Vec<usize> {
    let mut scores: HashMap<usize, f64> = HashMap::new();
    for list in lists {
        for (i, &d) in list.iter().enumerate() {
            *scores.entry(d).or_default() += 1.0 / (RRF_K + (i + 1) as f64);
        }
    }
    let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.into_iter().take(depth).map(|(d, _)| d).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_prefers_rarer_terms_shorter_documents_and_stems() {
        let docs = [
            "the cat sat on the mat",
            "a dog chased the cat around the garden for a very long time indeed",
            "dogs bark",
            "nothing relevant here",
        ];
        let index = Bm25::build(docs);
        // "dog" matches "dogs" and "dog" by stem; the short document wins on length.
        assert_eq!(index.rank("dog", 10), [2, 1]);
        // "mat" is rarer than "cat", so the one document with both comes first.
        assert_eq!(index.rank("cat mat", 10), [0, 1]);
        assert_eq!(index.rank("the", 10), Vec::<usize>::new(), "stop words are not indexed");
        assert_eq!(index.rank("cat", 1), [0]);
    }

    #[test]
    fn a_bm25_score_matches_the_formula() {
        // Documents of 2 and 4 stems (average 3); "alpha" is in the first, once; "gamma"
        // twice in the second. A repeated query term counts twice.
        let index = Bm25::build(["alpha beta", "gamma delta gamma delta"]);
        let idf = (1.0f64 + (2.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
        let term = |tf: f64, len: f64| idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / 3.0));
        let s = index.scores("alpha gamma gamma");
        assert!((s[&0] - term(1.0, 2.0)).abs() < 1e-12, "{s:?}");
        assert!((s[&1] - 2.0 * term(2.0, 4.0)).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn rrf_rewards_agreement() {
        let a = [1, 2, 3];
        let b = [3, 4, 1];
        assert_eq!(rrf(&[&a, &b], 10), [1, 3, 2, 4]);
        assert_eq!(rrf(&[&a, &b], 2), [1, 3]);
    }
}
