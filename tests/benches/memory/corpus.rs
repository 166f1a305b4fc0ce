//! The synthetic corpus of the memory benchmark: Markdown files of ten sections, each a heading
//! and five 60-word paragraphs (300 words, which the ingester keeps as one chunk). Words follow
//! Zipf's law (rank r drawn with weight 1/r) over a vocabulary whose top ranks are real English
//! function and content words and whose long tail is pronounceable made-up words, so that
//! "common" and "rare" query words behave like those of real text. Deterministic: the same
//! seed gives the same corpus, which is how the baselines see exactly what the daemon ingested.
//!
//! With `MEMORY_BENCH_FORMAT=mbox` the same sections are written as mail instead: mbox files of
//! [`MESSAGES_PER_MBOX`] messages, a section's heading its subject and its body the message's,
//! one of 2,000 senders, dates spread over ten years. A message is one chunk whatever its length
//! (Markdown sections are merged up to ~300 tokens), which is how a store reaches 10M chunks of
//! short text: mail and chat, not long documents.
//!
//! With `MEMORY_BENCH_TOPICS=T` (0, the default, is the uniform corpus of every run before it)
//! each section is also about one of `T` topics, as real notes, mail and chat are: a topic owns
//! [`TOPIC_WORDS`] words of the middle ranks (`TOPIC_RANKS`, never the rare ranks the search
//! queries use), a section draws a quarter of its words and two of its three heading words from
//! its topic, the rest from the Zipf law as before. The embeddings of such a corpus form
//! clusters, which is what an approximate vector index relies on; those of the uniform corpus
//! do not, the worst case for one.
use std::io::Write;
use std::path::Path;

pub const SECTIONS_PER_FILE: usize = 10;
const PARAGRAPHS: usize = 5;
const PARAGRAPH_WORDS: usize = 60;
pub const VOCABULARY: usize = 50_000;
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;
/// Words a topic owns, and the frequency ranks they are drawn from.
pub const TOPIC_WORDS: usize = 30;
pub const TOPIC_RANKS: std::ops::Range<usize> = 300..20_000;
/// The share of a section's body words drawn from its topic.
const TOPIC_SHARE: f64 = 0.25;

/// The most frequent words of English text, most frequent first.
const HEAD: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "time",
    "people",
    "year",
    "way",
    "day",
    "work",
    "government",
    "life",
    "world",
    "school",
    "system",
    "group",
    "number",
    "problem",
    "fact",
    "money",
    "market",
    "family",
    "water",
    "country",
    "report",
    "meeting",
    "project",
    "budget",
    "team",
    "plan",
    "company",
    "service",
    "customer",
    "research",
    "history",
    "policy",
    "health",
    "result",
    "change",
    "question",
    "council",
    "office",
    "program",
    "order",
    "price",
    "river",
    "garden",
    "letter",
    "window",
    "engine",
    "travel",
    "bridge",
    "summer",
    "winter",
    "forest",
    "doctor",
    "kitchen",
    "library",
    "station",
    "village",
];
const ONSETS: &[&str] = &["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "br", "st"];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ou"];
const CODAS: &[&str] = &["", "n", "r", "s", "l", "t", "nd", "m"];

/// xorshift64*: deterministic and fast; good enough to draw words.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub struct Vocabulary {
    /// Words by frequency rank, most frequent first.
    pub words: Vec<String>,
    cumulative: Vec<f64>,
    /// Each topic's words as ranks into `words`; empty for the uniform corpus.
    pub topics: Vec<Vec<usize>>,
}

/// Topics of the corpus: `MEMORY_BENCH_TOPICS`, 0 (uniform, no topics) unless set.
pub fn topic_count() -> usize {
    std::env::var("MEMORY_BENCH_TOPICS").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

impl Vocabulary {
    pub fn new() -> Vocabulary {
        let mut words: Vec<String> = HEAD.iter().map(|w| w.to_string()).collect();
        let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
        let mut rng = Rng::new(SEED ^ 0x5555);
        let pick = |rng: &mut Rng, list: &[&'static str]| list[(rng.next_u64() % list.len() as u64) as usize];
        while words.len() < VOCABULARY {
            let syllables = 2 + (rng.next_u64() % 3) as usize;
            let mut w = String::new();
            for _ in 0..syllables {
                w.push_str(pick(&mut rng, ONSETS));
                w.push_str(pick(&mut rng, VOWELS));
            }
            w.push_str(pick(&mut rng, CODAS));
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut cumulative = Vec::with_capacity(words.len());
        let mut total = 0.0;
        for r in 0..words.len() {
            total += 1.0 / (r as f64 + 1.0);
            cumulative.push(total);
        }
        let mut rng = Rng::new(SEED ^ 0x7777);
        let span = (TOPIC_RANKS.end - TOPIC_RANKS.start) as u64;
        let topics = (0..topic_count())
            .map(|_| (0..TOPIC_WORDS).map(|_| TOPIC_RANKS.start + (rng.next_u64() % span) as usize).collect())
            .collect();
        Vocabulary { words, cumulative, topics }
    }

    /// A word of `topic`, uniformly.
    fn topic_word(&self, topic: usize, rng: &mut Rng) -> &str {
        let words = &self.topics[topic];
        &self.words[words[(rng.next_u64() % words.len() as u64) as usize]]
    }

    fn sample(&self, rng: &mut Rng) -> &str {
        let x = rng.unit() * self.cumulative[self.cumulative.len() - 1];
        let i = self.cumulative.partition_point(|c| *c < x).min(self.words.len() - 1);
        &self.words[i]
    }
}

/// The sections (chunks) of the corpus in order; `section(i)` text is what file `i / 10` holds
/// under its `i % 10`th heading.
pub struct Sections<'a> {
    vocab: &'a Vocabulary,
    rng: Rng,
    paragraphs: usize,
}

/// Paragraphs per section: `MEMORY_BENCH_PARAGRAPHS` (1–5, 60 words each), 5 unless set; fewer
/// keep a 10M-chunk store's disk in bounds.
pub fn paragraphs() -> usize {
    std::env::var("MEMORY_BENCH_PARAGRAPHS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PARAGRAPHS)
        .clamp(1, PARAGRAPHS)
}

/// Words per section body.
#[allow(dead_code, reason = "the memory bench's report uses it; the postgres bench shares this file")]
pub fn words_per_chunk() -> usize {
    paragraphs() * PARAGRAPH_WORDS
}

impl<'a> Sections<'a> {
    pub fn new(vocab: &'a Vocabulary) -> Sections<'a> {
        Sections { vocab, rng: Rng::new(SEED), paragraphs: paragraphs() }
    }

    /// The next section's heading and body.
    pub fn next_section(&mut self, out_heading: &mut String, out_body: &mut String) {
        out_heading.clear();
        out_body.clear();
        let topics = self.vocab.topics.len();
        let topic = (topics > 0).then(|| (self.rng.next_u64() % topics as u64) as usize);
        for k in 0..3 {
            if k > 0 {
                out_heading.push(' ');
            }
            let word = match topic {
                Some(t) if k < 2 => self.vocab.topic_word(t, &mut self.rng),
                _ => self.vocab.sample(&mut self.rng),
            };
            out_heading.push_str(word);
        }
        for p in 0..self.paragraphs {
            if p > 0 {
                out_body.push_str("\n\n");
            }
            for w in 0..PARAGRAPH_WORDS {
                if w > 0 {
                    out_body.push(' ');
                }
                let word = match topic {
                    Some(t) if self.rng.unit() < TOPIC_SHARE => self.vocab.topic_word(t, &mut self.rng),
                    _ => self.vocab.sample(&mut self.rng),
                };
                out_body.push_str(word);
            }
            out_body.push('.');
        }
    }
}

/// Messages per mbox file of the mail corpus.
pub const MESSAGES_PER_MBOX: usize = 10_000;
const SENDERS: usize = 2_000;

/// Whether the corpus is mail (`MEMORY_BENCH_FORMAT=mbox`) rather than Markdown.
pub fn is_mail() -> bool {
    std::env::var("MEMORY_BENCH_FORMAT").is_ok_and(|f| f == "mbox")
}

/// Writes `chunks` sections under `dir`: as Markdown files (1,000 files per folder), or as
/// mbox files when [`is_mail`].
pub fn write(dir: &Path, vocab: &Vocabulary, chunks: usize) -> std::io::Result<()> {
    if is_mail() {
        return write_mail(dir, vocab, chunks);
    }
    let mut sections = Sections::new(vocab);
    let (mut heading, mut body) = (String::new(), String::new());
    let files = chunks.div_ceil(SECTIONS_PER_FILE);
    for f in 0..files {
        let sub = dir.join(format!("d{:04}", f / 1000));
        if f % 1000 == 0 {
            std::fs::create_dir_all(&sub)?;
        }
        let mut text = String::with_capacity(SECTIONS_PER_FILE * 2200);
        text.push_str(&format!("# Document {f}\n\n"));
        for _ in 0..SECTIONS_PER_FILE.min(chunks - f * SECTIONS_PER_FILE) {
            sections.next_section(&mut heading, &mut body);
            text.push_str("## ");
            text.push_str(&heading);
            text.push_str("\n\n");
            text.push_str(&body);
            text.push_str("\n\n");
        }
        std::fs::File::create(sub.join(format!("f{f:06}.md")))?.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// The mail corpus: `chunks` messages in mbox files under `dir`.
fn write_mail(dir: &Path, vocab: &Vocabulary, chunks: usize) -> std::io::Result<()> {
    let mut sections = Sections::new(vocab);
    let (mut heading, mut body) = (String::new(), String::new());
    std::fs::create_dir_all(dir)?;
    // 2015-01-01 00:00 UTC, then ten years spread over the messages.
    let (start, span) = (1_420_070_400i64, 10 * 365 * 86_400i64);
    for f in 0..chunks.div_ceil(MESSAGES_PER_MBOX) {
        let mut out =
            std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join(format!("m{f:05}.mbox")))?);
        for m in f * MESSAGES_PER_MBOX..chunks.min((f + 1) * MESSAGES_PER_MBOX) {
            sections.next_section(&mut heading, &mut body);
            let when = mail_dates(start + span * m as i64 / chunks.max(1) as i64);
            let sender = m * 7919 % SENDERS;
            write!(
                out,
                "From sender{sender}@example.org {}\nFrom: Sender {sender} <sender{sender}@example.org>\n\
                 To: me@example.org\nSubject: {heading}\nDate: {}\nMessage-ID: <m{m}@bench.example.org>\n\n{body}\n\n",
                when.0, when.1
            )?;
        }
        out.flush()?;
    }
    Ok(())
}

/// `unix` seconds as an mbox separator date and an RFC 2822 date (UTC).
fn mail_dates(unix: i64) -> (String, String) {
    let t = chrono::DateTime::from_timestamp(unix, 0).unwrap_or_default();
    (t.format("%a %b %e %H:%M:%S %Y").to_string(), t.format("%a, %-d %b %Y %H:%M:%S +0000").to_string())
}
