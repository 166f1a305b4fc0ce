//! `openhumand-mcp eval <dir>`: retrieval quality on labelled data. Owns reading a BEIR-layout
//! folder (`corpus.jsonl`, `queries.jsonl`, `qrels.tsv`; errors name the file and line), loading
//! the corpus into a throwaway store in a temp directory (with the embedders `[memory.embeddings]`
//! asks for; with a transformer configured, measuring waits until its background fill covers
//! every chunk, so the figures are the deep tier's), running every query through the engine methods the MCP tools call (parameters
//! checked by the same schemas), and the metrics: nDCG@10, Recall@10, Recall@100 and latency
//! percentiles.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use openhuman_common::Paths;
use openhuman_config::Config;
use openhuman_mcp::args::{ArgKind, ArgSpec};
use openhuman_memory::{AuditRow, MemoryEngine, MemoryError, MemoryOptions, PutDocument, TierKind, ops};
use openhuman_schema::Params;
use serde_json::{Map, Value, json};

mod baseline;
mod locomo;

use crate::backends;
use crate::cli::{EvalArgs, EvalMethod};

/// `eval`: the report of [`run`] as a table, or as JSON with `--json`.
pub(crate) fn command(paths: &Paths, args: &EvalArgs) -> Result<i32> {
    let loaded = openhuman_config::load(&paths.config_file)?;
    let report = run(paths, &loaded.config, args)?;
    let text = match () {
        _ if args.json => report.to_string(),
        _ if report["layout"] == "locomo" => locomo::table(&report),
        _ => table(&report),
    };
    super::out(&text);
    Ok(crate::EXIT_OK)
}

/// The two rank cut-offs.
const TOP: usize = 10;
const DEEP: usize = 100;

/// The provenance label of the documents `eval` stores.
const SOURCE: &str = "eval";

/// One corpus document, with the line it came from.
#[derive(Debug)]
pub(crate) struct Doc {
    pub id: String,
    pub title: Option<String>,
    pub text: String,
    pub line: usize,
}

#[derive(Debug)]
pub(crate) struct Query {
    pub id: String,
    pub text: String,
    pub line: usize,
}

/// A BEIR-layout folder, read and checked.
#[derive(Debug)]
pub(crate) struct Dataset {
    pub dir: PathBuf,
    pub docs: Vec<Doc>,
    pub queries: Vec<Query>,
    /// Query id → ids of the documents judged relevant (score > 0).
    pub relevant: HashMap<String, HashSet<String>>,
}

impl EvalMethod {
    fn name(self) -> &'static str {
        match self {
            EvalMethod::Search => "search",
            EvalMethod::Recall => "recall",
            EvalMethod::Keyword => "keyword",
            EvalMethod::Vector => "vector",
            EvalMethod::Hybrid => "hybrid",
        }
    }

    /// The MCP tool (and mode) this method measures.
    fn tool(self) -> &'static str {
        match self {
            EvalMethod::Search => "memory.search",
            EvalMethod::Recall => "memory.recall",
            EvalMethod::Keyword => "memory.fetch mode=keyword",
            EvalMethod::Vector => "memory.fetch mode=vector",
            EvalMethod::Hybrid => "memory.fetch mode=hybrid",
        }
    }

    /// The schema of the operation the tool runs, whose bounds set how deep a query goes.
    fn spec(self) -> ArgSpec {
        match self {
            EvalMethod::Search => ops::SearchParams::spec(),
            EvalMethod::Recall => ops::RecallParams::spec(),
            _ => ops::FetchParams::spec(),
        }
    }

    /// The fetch mode, for the `memory.fetch` methods.
    fn mode(self) -> Option<&'static str> {
        match self {
            EvalMethod::Search | EvalMethod::Recall => None,
            m => Some(m.name()),
        }
    }
}

// ---- reading the folder ----

fn read_file(dir: &Path, name: &str) -> Result<(PathBuf, String)> {
    let path = dir.join(name);
    let hint = if name == "qrels.tsv" {
        " (BEIR downloads keep judgements in qrels/<split>.tsv: copy or link the split to measure as qrels.tsv)"
    } else {
        ""
    };
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}{hint}", path.display()))?;
    Ok((path, text))
}

/// Non-blank lines with their 1-based numbers (a leading byte-order mark and `\r` dropped).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.trim_start_matches('\u{feff}')
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// A JSON Lines object; its `_id` (a string or an integer) and the object.
fn json_line(line: &str) -> Result<(String, Map<String, Value>), String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(o) = v else { return Err("expected a JSON object".into()) };
    let id = match o.get("_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(_) => return Err("`_id` must be a non-empty string".into()),
        None => return Err("missing `_id`".into()),
    };
    Ok((id, o))
}

/// A string field that may be absent or null.
fn opt_str(o: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn parse_corpus(path: &Path, text: &str) -> Result<Vec<Doc>> {
    let mut docs = Vec::new();
    let mut seen = HashSet::new();
    for (n, line) in lines(text) {
        let doc = (|| {
            let (id, o) = json_line(line)?;
            let title = opt_str(&o, "title")?.filter(|t| !t.trim().is_empty());
            let text = opt_str(&o, "text")?.ok_or("missing `text`")?;
            if !seen.insert(id.trim().to_string()) {
                return Err(format!("`_id` {id} appears twice"));
            }
            Ok(Doc { id, title, text, line: n })
        })()
        .map_err(|e: String| anyhow!("{} line {n}: {e}", path.display()))?;
        docs.push(doc);
    }
    Ok(docs)
}

fn parse_queries(path: &Path, text: &str) -> Result<Vec<Query>> {
    let mut queries = Vec::new();
    let mut seen = HashSet::new();
    for (n, line) in lines(text) {
        let q = (|| {
            let (id, o) = json_line(line)?;
            let text = opt_str(&o, "text")?.ok_or("missing `text`")?;
            if !seen.insert(id.clone()) {
                return Err(format!("`_id` {id} appears twice"));
            }
            Ok(Query { id, text, line: n })
        })()
        .map_err(|e: String| anyhow!("{} line {n}: {e}", path.display()))?;
        queries.push(q);
    }
    Ok(queries)
}

/// `query-id<TAB>corpus-id<TAB>score` after that header; score > 0 is relevant.
fn parse_qrels(path: &Path, text: &str) -> Result<HashMap<String, HashSet<String>>> {
    let mut relevant: HashMap<String, HashSet<String>> = HashMap::new();
    let mut rows = lines(text);
    let header: Vec<&str> = rows.next().map(|(_, l)| l.split('\t').map(str::trim).collect()).unwrap_or_default();
    if header != ["query-id", "corpus-id", "score"] {
        bail!(
            "{} line 1: expected the header `query-id<TAB>corpus-id<TAB>score`, found `{}`",
            path.display(),
            header.join("<TAB>")
        );
    }
    for (n, line) in rows {
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let err = |e: String| anyhow!("{} line {n}: {e}", path.display());
        let [q, d, score] = fields[..] else {
            return Err(err(format!(
                "expected 3 tab-separated fields (query-id, corpus-id, score), found {}",
                fields.len()
            )));
        };
        if q.is_empty() || d.is_empty() {
            return Err(err("query-id and corpus-id must not be empty".into()));
        }
        let score: f64 = score.parse().map_err(|_| err(format!("score `{score}` is not a number")))?;
        if score > 0.0 {
            relevant.entry(q.to_string()).or_default().insert(d.to_string());
        }
    }
    Ok(relevant)
}

impl Dataset {
    pub(crate) fn read(dir: &Path) -> Result<Dataset> {
        let (path, text) = read_file(dir, "corpus.jsonl")?;
        let docs = parse_corpus(&path, &text)?;
        let (path, text) = read_file(dir, "queries.jsonl")?;
        let queries = parse_queries(&path, &text)?;
        let (path, text) = read_file(dir, "qrels.tsv")?;
        let relevant = parse_qrels(&path, &text)?;
        Ok(Dataset { dir: dir.to_path_buf(), docs, queries, relevant })
    }
}

// ---- metrics ----

fn dcg(gains: impl Iterator<Item = bool>) -> f64 {
    gains.enumerate().filter(|(_, g)| *g).map(|(i, _)| 1.0 / ((i + 2) as f64).log2()).sum()
}

/// nDCG@k with binary gains: the DCG of the ranking's first `k` over that of an ideal ranking
/// of `relevant` relevant documents (also cut at `k`). `ranked[i]` says whether rank i+1 is
/// relevant.
pub(crate) fn ndcg_at(k: usize, ranked: &[bool], relevant: usize) -> f64 {
    let ideal = dcg((0..relevant.min(k)).map(|_| true));
    if ideal == 0.0 { 0.0 } else { dcg(ranked.iter().take(k).copied()) / ideal }
}

/// The share of the `relevant` relevant documents found in the ranking's first `k`.
pub(crate) fn recall_at(k: usize, ranked: &[bool], relevant: usize) -> f64 {
    if relevant == 0 { 0.0 } else { ranked.iter().take(k).filter(|r| **r).count() as f64 / relevant as f64 }
}

/// Nearest-rank percentile (`p` in 0..=100) of ascending `sorted`; 0 when empty.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ---- running ----

/// One method's figures.
#[derive(Debug, Default)]
struct Score {
    ndcg: f64,
    recall_top: f64,
    recall_deep: f64,
    /// Documents ranked within the first 10, summed (fewer when the relevance floor held
    /// hits back).
    returned_top: f64,
    latencies_ms: Vec<f64>,
}

impl Score {
    /// Adds one query's ranking (document indexes, best first).
    fn add(&mut self, docs: &[usize], data: &Dataset, relevant: &HashSet<String>, ms: f64) {
        let gains: Vec<bool> = docs.iter().map(|&i| relevant.contains(&data.docs[i].id)).collect();
        self.ndcg += ndcg_at(TOP, &gains, relevant.len());
        self.recall_top += recall_at(TOP, &gains, relevant.len());
        self.recall_deep += recall_at(DEEP, &gains, relevant.len());
        self.returned_top += docs.len().min(TOP) as f64;
        self.latencies_ms.push(ms);
    }

    /// The means over `n` queries, as the JSON report shows them.
    fn report(mut self, tool: &str, depth: usize, n: f64) -> Value {
        self.latencies_ms.sort_by(f64::total_cmp);
        json!({
            "tool": tool,
            "ndcg_at_10": self.ndcg / n,
            "recall_at_10": self.recall_top / n,
            "recall_at_100": self.recall_deep / n,
            "returned_at_10": self.returned_top / n,
            "depth": depth,
            "latency_ms": { "p50": micros(percentile(&self.latencies_ms, 50.0)),
                            "p95": micros(percentile(&self.latencies_ms, 95.0)) },
        })
    }
}

/// One call's answer: the hits' source refs best first, the vector tier that ranked them, and
/// the next page's cursor.
type Page = (Vec<String>, Option<TierKind>, Option<String>);

/// How a method is called: its schema and how deep one query's ranking goes.
struct Runner {
    method: EvalMethod,
    /// The tool's schema, which every query is checked against before the store is built.
    spec: ArgSpec,
    /// Hits asked for per call (the schema's maximum, at most `DEEP`).
    page: usize,
    /// The most documents one query can rank: `DEEP`, or fewer when the method cannot page.
    depth: usize,
    /// The relevance floor `search` and `recall` are called with (their default when `None`).
    min_relevance: Option<f64>,
}

fn int_max(spec: &ArgSpec, name: &str) -> Result<usize> {
    spec.fields
        .iter()
        .find_map(|f| match (&f.kind, f.name == name) {
            (ArgKind::Int { max, .. }, true) => Some(*max as usize),
            _ => None,
        })
        .ok_or_else(|| anyhow!("the schema has no integer parameter `{name}`"))
}

impl Runner {
    fn new(method: EvalMethod, min_relevance: Option<f64>) -> Result<Runner> {
        let spec = method.spec();
        let page = int_max(&spec, "limit")?.min(DEEP);
        let depth = if method.mode().is_none() { page } else { DEEP };
        Ok(Runner { method, spec, page, depth, min_relevance })
    }

    /// Whether the tool's schema accepts `query` (a blank or over-long one is refused there).
    fn check(&self, query: &str) -> Result<(), String> {
        let mut p = Map::new();
        p.insert("query".into(), json!(query));
        self.spec.validate(&p).map(drop).map_err(|e| e.0)
    }

    /// One call: the source refs of the hits, best first, the vector tier that ranked them and
    /// the next page's cursor (fetch only).
    fn call(&self, engine: &MemoryEngine, query: &str, cursor: Option<String>) -> Result<Page, MemoryError> {
        self.call_at(engine, query, self.page, cursor)
    }

    /// [`Runner::call`] asking for `limit` hits (at most the page size), from the first page.
    fn call_with_limit(&self, engine: &MemoryEngine, query: &str, limit: usize) -> Result<Page, MemoryError> {
        self.call_at(engine, query, limit.min(self.page), None)
    }

    fn call_at(
        &self,
        engine: &MemoryEngine,
        query: &str,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<Page, MemoryError> {
        let query = query.to_string();
        Ok(match self.method.mode() {
            None if self.method == EvalMethod::Search => {
                let p = ops::SearchParams { limit, min_relevance: self.min_relevance, ..ops::SearchParams::of(query) };
                let r = engine.search(p)?;
                (r.hits.into_iter().map(|h| h.chunk.source_ref).collect(), None, None)
            }
            None => {
                let p = ops::RecallParams { limit, min_relevance: self.min_relevance, ..ops::RecallParams::of(query) };
                let r = engine.recall(p)?;
                (r.chunks.into_iter().map(|h| h.chunk.source_ref).collect(), r.vector_tier, None)
            }
            Some(mode) => {
                let p = ops::FetchParams { query, mode: Some(mode.into()), filter: None, limit, cursor };
                let r = engine.fetch(p)?;
                let refs = r
                    .items
                    .iter()
                    .map(|i| i.metadata.get("source_ref").and_then(Value::as_str).unwrap_or_default().to_string())
                    .collect();
                (refs, r.vector_tier, r.next_cursor)
            }
        })
    }

    /// The documents `query` ranks, best first (a document at the rank of its best chunk), as
    /// indexes into the corpus; the time the engine took; and the vector tier that answered.
    fn rank(
        &self,
        engine: &MemoryEngine,
        query: &str,
        keys: &HashMap<String, usize>,
    ) -> Result<(Vec<usize>, f64, Option<String>)> {
        let mut docs = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut elapsed = 0.0;
        let mut tier = None;
        loop {
            let started = Instant::now();
            let (refs, answered_by, next) = self.call(engine, query, cursor.take())?;
            elapsed += started.elapsed().as_secs_f64() * 1000.0;
            if let Some(t) = answered_by {
                tier = Some(t.name().to_string());
            }
            for r in refs {
                if let Some(&i) = keys.get(&r)
                    && seen.insert(i)
                {
                    docs.push(i);
                }
            }
            cursor = next;
            if self.method.mode().is_none() || docs.len() >= self.depth || cursor.is_none() {
                break;
            }
        }
        docs.truncate(self.depth);
        Ok((docs, elapsed, tier))
    }
}

/// A progress bar on stderr when it is a terminal.
fn progress(len: usize, what: &str) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(len as u64);
    let template = format!("{{bar:30}} {{pos}}/{{len}} {what}");
    b.set_style(
        indicatif::ProgressStyle::with_template(&template).unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(b)
}

/// Stores the corpus; returns `key → document index` and how many documents had no text.
fn ingest(engine: &MemoryEngine, data: &Dataset) -> Result<(HashMap<String, usize>, usize)> {
    let bar = progress(data.docs.len(), "documents stored");
    let mut keys = HashMap::with_capacity(data.docs.len());
    let mut empty = 0;
    for (i, d) in data.docs.iter().enumerate() {
        let content = if d.text.trim().is_empty() { d.title.clone().unwrap_or_default() } else { d.text.clone() };
        if content.trim().is_empty() {
            empty += 1;
            continue;
        }
        let doc = PutDocument {
            key: d.id.clone(),
            title: d.title.clone(),
            content,
            source: SOURCE.into(),
            ..Default::default()
        };
        let audit = AuditRow { tool: "eval".into(), source: SOURCE.into(), ..Default::default() };
        let stored = engine
            .put_document(doc, audit)
            .with_context(|| format!("storing document {} (corpus.jsonl line {})", d.id, d.line))?;
        let key = stored.key;
        keys.insert(key, i);
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    engine.wait_background_tier(TierKind::Fast);
    Ok((keys, empty))
}

/// Milliseconds rounded to the microsecond.
fn micros(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// Runs the evaluation and returns the report as JSON (what `--json` prints). `paths` locates the
/// model store a configured transformer is taken from; the user's memory store is not opened.
pub(crate) fn run(paths: &Paths, config: &Config, args: &EvalArgs) -> Result<Value> {
    let wall = Instant::now();
    let mut methods: Vec<EvalMethod> = Vec::new();
    for m in &args.methods {
        if !methods.contains(m) {
            methods.push(*m);
        }
    }
    if let Some(x) = args.min_relevance
        && !(0.0..=1.0).contains(&x)
    {
        bail!("--min-relevance must be between 0 and 1, not {x}");
    }
    let runners = methods.into_iter().map(|m| Runner::new(m, args.min_relevance)).collect::<Result<Vec<_>>>()?;
    if let Some(file) = locomo::find(&args.dir) {
        return locomo::run(paths, config, args, &file, &runners);
    }
    let data = Dataset::read(&args.dir)?;

    // The queries to run: those with relevant documents, in file order, checked before ingesting.
    let judged: Vec<(&Query, &HashSet<String>)> =
        data.queries.iter().filter_map(|q| data.relevant.get(&q.id).map(|r| (q, r))).collect();
    let without_relevant = data.queries.len() - judged.len();
    let limit = args.max_queries.map_or(usize::MAX, |n| n as usize);
    let selected = &judged[..judged.len().min(limit)];
    for (q, _) in selected {
        for r in &runners {
            r.check(&q.text).map_err(|e| {
                anyhow!(
                    "{} line {}: query {} cannot be sent to {}: {e}",
                    data.dir.join("queries.jsonl").display(),
                    q.line,
                    q.id,
                    r.method.tool()
                )
            })?;
        }
    }
    let known: HashSet<&str> = data.docs.iter().map(|d| d.id.as_str()).collect();
    let unknown = selected.iter().flat_map(|(_, r)| r.iter()).filter(|d| !known.contains(d.as_str())).count();
    if unknown > 0 {
        tracing::warn!(
            "{unknown} relevant judgement(s) name documents missing from corpus.jsonl; they count as not found"
        );
    }

    // A throwaway store: dropped (engine first, then the directory) when this returns.
    let tmp = tempfile::Builder::new().prefix("openhuman-eval-").tempdir().context("cannot create a temp directory")?;
    let data_dir = tmp.path().join("data");
    let embedder = backends::embedder(config, &data_dir).map_err(anyhow::Error::msg)?;
    let deep = backends::deep_embedder(config, &paths.data_dir).map_err(anyhow::Error::msg)?;
    let engine = MemoryEngine::open(MemoryOptions { data_dir, embedder, deep, shared: None })?;
    let started = Instant::now();
    let (keys, empty) = ingest(&engine, &data)?;
    let ingest_ms = started.elapsed().as_secs_f64() * 1000.0;
    // The deep tier's fill started with the first document; measuring waits until it is done.
    let deep_fill_ms = engine.tiers()?.iter().any(|t| t.tier == TierKind::Deep).then(|| {
        engine.wait_background();
        started.elapsed().as_secs_f64() * 1000.0
    });
    let stats = engine.stats()?;
    let tiers = engine.tiers()?;
    let answering = tiers.iter().find(|t| t.answering).map(|t| t.tier);

    // The reference rankers, over the same documents the store holds.
    let texts: Vec<String> =
        data.docs.iter().map(|d| format!("{}\n{}", d.title.as_deref().unwrap_or(""), d.text)).collect();
    let bm25 = baseline::Bm25::build(texts.iter().map(String::as_str));
    let vector_runner = runners.iter().position(|r| r.method == EvalMethod::Vector);
    let mut reference: Vec<(&str, &str, Score)> = vec![("bm25", "BM25 k1 0.9 b 0.4, in eval", Score::default())];
    if vector_runner.is_some() {
        reference.push(("bm25+vec", "RRF of bm25 and vector", Score::default()));
    }

    let started = Instant::now();
    let mut scores: Vec<Score> = runners.iter().map(|_| Score::default()).collect();
    let mut tiers_seen: Vec<HashSet<String>> = runners.iter().map(|_| HashSet::new()).collect();
    let bar = progress(selected.len(), "queries");
    for (q, relevant) in selected {
        let mut vector_docs = Vec::new();
        for (i, ((r, s), seen)) in runners.iter().zip(&mut scores).zip(&mut tiers_seen).enumerate() {
            let (docs, ms, tier) = r
                .rank(&engine, &q.text, &keys)
                .with_context(|| format!("query {} (queries.jsonl line {}) on {}", q.id, q.line, r.method.tool()))?;
            s.add(&docs, &data, relevant, ms);
            if let Some(t) = tier {
                seen.insert(t);
            }
            if Some(i) == vector_runner {
                vector_docs = docs;
            }
        }
        let started = Instant::now();
        let keyword = bm25.rank(&q.text, DEEP);
        reference[0].2.add(&keyword, &data, relevant, started.elapsed().as_secs_f64() * 1000.0);
        if let Some((_, _, s)) = reference.get_mut(1) {
            s.add(&baseline::rrf(&[&keyword, &vector_docs], DEEP), &data, relevant, 0.0);
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let query_ms = started.elapsed().as_secs_f64() * 1000.0;

    let n = selected.len().max(1) as f64;
    let mut by_method = Map::new();
    for ((r, s), seen) in runners.iter().zip(scores).zip(tiers_seen) {
        let mut seen: Vec<String> = seen.into_iter().collect();
        seen.sort();
        let mut report = s.report(r.method.tool(), r.depth, n);
        report["vector_tier"] = json!(seen.join(","));
        by_method.insert(r.method.name().into(), report);
    }
    let mut baselines = Map::new();
    for (name, what, s) in reference {
        baselines.insert(name.into(), s.report(what, DEEP, n));
    }
    Ok(json!({
        "dir": data.dir.display().to_string(),
        "embedder": stats.vectors.signature,
        "documents": keys.len(),
        "documents_empty": empty,
        "chunks": stats.chunks,
        "vectors_missing": stats.vectors.missing,
        "deep": stats.vectors.deep,
        "vector_tier": answering.map(TierKind::name),
        "deep_fill_ms": deep_fill_ms.map(|ms| ms.round() as u64),
        "queries": { "total": data.queries.len(), "without_relevant": without_relevant, "evaluated": selected.len() },
        "ingest_ms": ingest_ms.round() as u64,
        "query_ms": query_ms.round() as u64,
        "wall_ms": wall.elapsed().as_millis() as u64,
        "methods": by_method,
        "baselines": baselines,
    }))
}

/// The report as a table, one method per row.
pub(crate) fn table(r: &Value) -> String {
    let mut out = format!(
        "{} documents ({} chunks, embedder {}) stored in {:.1} s; {} queries evaluated ({} in queries.jsonl, {} \
         without relevant documents)\n",
        r["documents"],
        r["chunks"],
        r["embedder"].as_str().unwrap_or("?"),
        r["ingest_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        r["queries"]["evaluated"],
        r["queries"]["total"],
        r["queries"]["without_relevant"],
    );
    if r["documents_empty"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!("{} documents without title or text were left out\n", r["documents_empty"]));
    }
    if let Some(d) = r["deep"].as_object() {
        out.push_str(&format!(
            "deep tier {}: {} of {} chunks embedded in {:.1} s from the start of storing; vector queries answered by \
             the {} tier\n",
            d.get("model").and_then(Value::as_str).unwrap_or("?"),
            d.get("covered").and_then(Value::as_u64).unwrap_or(0),
            d.get("total").and_then(Value::as_u64).unwrap_or(0),
            r["deep_fill_ms"].as_f64().unwrap_or(0.0) / 1000.0,
            r["vector_tier"].as_str().unwrap_or("?"),
        ));
    }
    if r["vectors_missing"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!(
            "{} chunks have no vector (is the embedder reachable?): vector figures are incomplete\n",
            r["vectors_missing"]
        ));
    }
    out.push_str(&format!(
        "\n{:<8} {:<26} {:>8} {:>10} {:>11} {:>6} {:>8} {:>8}\n",
        "method", "tool", "nDCG@10", "Recall@10", "Recall@100", "top10", "p50 ms", "p95 ms"
    ));
    let mut shallow = Vec::new();
    let mut row = |name: &str, m: &Value, latency: bool| {
        let depth = m["depth"].as_u64().unwrap_or(0) as usize;
        let mark = if depth < DEEP {
            shallow.push(format!("{name} ranks at most {depth}"));
            "*"
        } else {
            " "
        };
        let f = |k: &str| m[k].as_f64().unwrap_or(0.0);
        let ms = |p: &str| match latency {
            true => format!("{:.2}", m["latency_ms"][p].as_f64().unwrap_or(0.0)),
            false => "-".into(),
        };
        format!(
            "{:<8} {:<26} {:>8.4} {:>10.4} {:>10.4}{mark} {:>6.2} {:>8} {:>8}\n",
            name,
            m["tool"].as_str().unwrap_or("?"),
            f("ndcg_at_10"),
            f("recall_at_10"),
            f("recall_at_100"),
            f("returned_at_10"),
            ms("p50"),
            ms("p95"),
        )
    };
    for (name, m) in r["methods"].as_object().into_iter().flatten() {
        out.push_str(&row(name, m, true));
    }
    let baselines = r["baselines"].as_object().into_iter().flatten().collect::<Vec<_>>();
    if !baselines.is_empty() {
        out.push_str("baselines, computed in this run over the same documents:\n");
        for (name, m) in baselines {
            out.push_str(&row(name, m, name == "bm25"));
        }
    }
    if !shallow.is_empty() {
        out.push_str(&format!(
            "\n* Recall@100 at the deepest the tool allows: {} (the bound on `k`).\n",
            shallow.join(", ")
        ));
    }
    out.push_str(&format!(
        "Latency: engine time per query at that depth. Wall time {:.1} s.",
        r["wall_ms"].as_f64().unwrap_or(0.0) / 1000.0
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn ndcg_by_hand() {
        // Relevant at ranks 1 and 3 of two relevant: (1 + 1/log2 4) / (1 + 1/log2 3).
        let want = (1.0 + 0.5) / (1.0 + 1.0 / 3f64.log2());
        assert!(close(ndcg_at(10, &[true, false, true], 2), want));
        assert!(close(ndcg_at(10, &[true, true], 2), 1.0));
        assert!(close(ndcg_at(10, &[false, false], 2), 0.0));
        // One relevant document at rank 2: 1/log2 3.
        assert!(close(ndcg_at(10, &[false, true], 1), 1.0 / 3f64.log2()));
        // Beyond the cut-off counts for nothing.
        let mut late = vec![false; 10];
        late.push(true);
        assert!(close(ndcg_at(10, &late, 1), 0.0));
        // The ideal is capped at k: ten hits out of twenty relevant is perfect.
        assert!(close(ndcg_at(10, &[true; 10], 20), 1.0));
        assert!(close(ndcg_at(10, &[], 0), 0.0));
    }

    #[test]
    fn recall_counts_hits_within_the_cut() {
        let ranked = [true, false, false, true];
        assert!(close(recall_at(1, &ranked, 4), 0.25));
        assert!(close(recall_at(10, &ranked, 4), 0.5));
        assert!(close(recall_at(10, &[], 3), 0.0));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 10.0);
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&v, 100.0), 20.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn qrels_errors_name_the_line() {
        let p = Path::new("/x/qrels.tsv");
        let ok = parse_qrels(p, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n\nq2\td3\t2\n").unwrap();
        assert_eq!(ok["q1"], HashSet::from(["d1".to_string()]));
        assert_eq!(ok["q2"].len(), 1);
        let e = parse_qrels(p, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d2 1\n").unwrap_err().to_string();
        assert!(e.contains("/x/qrels.tsv line 3") && e.contains("found 1"), "{e}");
        let e = parse_qrels(p, "query-id\tcorpus-id\tscore\nq1\td1\thigh\n").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("`high`"), "{e}");
        let e = parse_qrels(p, "q1\td1\t1\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("header"), "{e}");
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let p = Path::new("/x/corpus.jsonl");
        let docs =
            parse_corpus(p, "{\"_id\": \"a\", \"title\": \"T\", \"text\": \"x\"}\n{\"_id\": 7, \"text\": \"y\"}\n")
                .unwrap();
        assert_eq!((docs[1].id.as_str(), docs[1].line, docs[0].title.as_deref()), ("7", 2, Some("T")));
        let e = parse_corpus(p, "{\"_id\": \"a\", \"text\": \"x\"}\n{\"_id\": \"b\"\n").unwrap_err().to_string();
        assert!(e.contains("/x/corpus.jsonl line 2") && e.contains("JSON"), "{e}");
        let e = parse_corpus(p, "{\"_id\": \"a\", \"text\": \"x\"}\n{\"_id\": \"a\", \"text\": \"y\"}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("twice"), "{e}");
        let e = parse_queries(Path::new("/x/queries.jsonl"), "{\"text\": \"q\"}\n").unwrap_err().to_string();
        assert!(e.contains("/x/queries.jsonl line 1") && e.contains("_id"), "{e}");
    }
}
