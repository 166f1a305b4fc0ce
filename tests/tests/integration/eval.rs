//! `openhumand-mcp eval`: a small BEIR folder written here (30 short documents on distinct topics,
//! 8 judged queries sharing distinctive words with their documents, one query judged only
//! irrelevant) measured end to end by the real binary; a malformed qrels line is refused with its
//! file and line; the user's own store is never touched. A tiny conversation in the LoCoMo layout
//! (`tests/fixtures/locomo-mini`, written for this test) is measured per category, stored one
//! turn per chunk and packed.

use std::path::Path;

use openhuman_tests::Home;
use serde_json::{Value, json};

const DOCS: &[(&str, &str)] = &[
    ("Sourdough starter", "Feed the sourdough starter with rye flour and water; fermentation makes it bubbly."),
    ("Sourdough loaf", "Shape the sourdough loaf, proof it overnight in the fridge and bake it in a hot oven."),
    ("Volcano", "Lava from the volcano flowed toward the village after the eruption; ash covered the fields."),
    ("Penguin colony", "Emperor penguins huddle together through the Antarctic winter to keep their eggs warm."),
    ("Penguin diet", "Penguins dive for krill, squid and small fish in the icy Antarctic ocean."),
    ("Chess opening", "The Sicilian defence is a sharp chess opening that answers the king pawn with the c pawn."),
    ("Bicycle repair", "Patch the inner tube of the bicycle tyre, then pump it up and check the brake pads."),
    ("Tax return", "File the annual tax return before April and keep receipts for deductible expenses."),
    ("Jazz", "The saxophonist improvised a long solo over the jazz quartet's swing rhythm."),
    ("Borrow checker", "The borrow checker in Rust rejects code where a mutable reference outlives its owner."),
    ("Lifetimes", "Rust lifetimes annotate how long references live, so the borrow checker can prove safety."),
    ("Coral reef", "Rising sea temperature bleaches the coral reef and drives away the colourful fish."),
    ("Marathon", "Marathon training plans build weekly mileage slowly with one long run each Sunday."),
    ("Tea ceremony", "The Japanese tea ceremony uses powdered matcha whisked in a ceramic bowl."),
    ("Solar panels", "Rooftop solar panels convert sunlight into electricity through photovoltaic cells."),
    ("Beekeeping", "The beekeeper smoked the hive before lifting frames heavy with honey."),
    ("Knitting", "Knit the scarf in garter stitch with chunky wool on large needles."),
    ("Black holes", "A black hole bends light so strongly that nothing escapes past the event horizon."),
    ("Origami", "Fold the square paper into a crane by following the origami creases carefully."),
    ("Vaccines", "Vaccines train the immune system to recognise a virus without causing the disease."),
    ("Glacier", "The glacier retreated several kilometres, leaving moraines and a meltwater lake."),
    ("Espresso", "Tamp the ground coffee evenly before pulling an espresso shot at nine bars of pressure."),
    ("Grinder", "A burr grinder gives the fine, even coffee grounds an espresso shot needs."),
    ("Castle", "The castle moat and drawbridge protected the medieval keep from siege."),
    ("Photosynthesis", "Chloroplasts capture sunlight during photosynthesis to turn carbon dioxide into sugar."),
    ("Sushi", "Roll the sushi rice and raw salmon in nori seaweed with a bamboo mat."),
    ("Skiing", "Carve turns on the ski slope by shifting weight onto the downhill edge."),
    ("Lighthouse", "The lighthouse keeper trimmed the lamp wick so ships could avoid the rocky shore."),
    ("Kite surfing", "Kite surfing needs steady wind and a harness that links the rider to the kite."),
    ("Typewriter", "The old typewriter ribbon faded, so every key left only a faint grey letter."),
];

/// (query, indexes of its relevant documents). The last query has none (judged 0 only).
const QUERIES: &[(&str, &[usize])] = &[
    ("sourdough fermentation and proofing", &[0, 1]),
    ("what do Antarctic penguins do", &[3, 4]),
    ("rust borrow checker references", &[9, 10]),
    ("espresso shot coffee grounds", &[21, 22]),
    ("volcano lava eruption", &[2]),
    ("coral reef bleaching", &[11]),
    ("beekeeper honey hive", &[15]),
    ("black hole event horizon", &[17]),
    ("lighthouse keeper lamp", &[]),
];

const METHODS: &[&str] = &["search", "recall", "keyword", "vector", "hybrid"];

/// Writes the folder; `qrels` replaces the generated qrels.tsv when given.
fn write_beir(dir: &Path, qrels: Option<&str>) {
    let corpus: Vec<String> = DOCS
        .iter()
        .enumerate()
        .map(|(i, (title, text))| json!({"_id": format!("d{i:02}"), "title": title, "text": text}).to_string())
        .collect();
    std::fs::write(dir.join("corpus.jsonl"), corpus.join("\n") + "\n").unwrap();
    let queries: Vec<String> = QUERIES
        .iter()
        .enumerate()
        .map(|(i, (text, _))| json!({"_id": format!("q{i}"), "text": text}).to_string())
        .collect();
    std::fs::write(dir.join("queries.jsonl"), queries.join("\n") + "\n").unwrap();
    let mut rows = String::from("query-id\tcorpus-id\tscore\n");
    for (i, (_, rel)) in QUERIES.iter().enumerate() {
        for d in *rel {
            rows.push_str(&format!("q{i}\td{d:02}\t1\n"));
        }
    }
    rows.push_str(&format!("q{}\td27\t0\n", QUERIES.len() - 1));
    std::fs::write(dir.join("qrels.tsv"), qrels.unwrap_or(&rows)).unwrap();
}

#[test]
fn eval_measures_every_method_on_a_small_beir_folder() {
    let home = Home::new();
    let data = tempfile::tempdir().unwrap();
    write_beir(data.path(), None);
    let out = home.daemon_cmd().arg("eval").arg(data.path()).arg("--json").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object on stdout");
    eprintln!("eval report: {report}");
    assert_eq!(report["documents"], DOCS.len());
    assert_eq!(report["queries"], json!({"total": QUERIES.len(), "without_relevant": 1, "evaluated": 8}));
    let methods = report["methods"].as_object().expect("methods");
    assert_eq!(methods.keys().map(String::as_str).collect::<Vec<_>>(), METHODS);
    for (name, m) in methods {
        for key in ["ndcg_at_10", "recall_at_10", "recall_at_100"] {
            let v = m[key].as_f64().unwrap_or(-1.0);
            assert!((0.0..=1.0).contains(&v), "{name} {key} = {v}");
        }
        for p in ["p50", "p95"] {
            assert!(m["latency_ms"][p].as_f64().is_some_and(|v| v >= 0.0), "{name} latency {p}: {m}");
        }
        assert!(m["depth"].as_u64().is_some_and(|d| (10..=100).contains(&d)), "{name} depth: {m}");
    }
    let search = methods["search"]["ndcg_at_10"].as_f64().unwrap();
    assert!(search >= 0.8, "search nDCG@10 on an easy set: {search}");
    assert_eq!(methods["keyword"]["depth"], 100, "fetch pages to 100 documents");
    // The reference rankers run over the same documents in the same run.
    let baselines = report["baselines"].as_object().expect("baselines");
    assert_eq!(baselines.keys().map(String::as_str).collect::<Vec<_>>(), ["bm25", "bm25+vec"]);
    let bm25 = baselines["bm25"]["ndcg_at_10"].as_f64().unwrap();
    assert!(bm25 >= 0.8, "textbook BM25 on an easy set: {bm25}");
    assert!(baselines["bm25+vec"]["recall_at_100"].as_f64().is_some_and(|v| (0.0..=1.0).contains(&v)));
    let recall = methods["recall"]["ndcg_at_10"].as_f64().unwrap();
    assert!(recall >= search, "recall {recall} must not rank below search {search}");
    // The throwaway store lives elsewhere: nothing was written to the user's data directory.
    assert!(!home.path().join("data").exists(), "eval must not touch the user's store");
}

#[test]
fn eval_table_and_subsets() {
    let home = Home::new();
    let data = tempfile::tempdir().unwrap();
    write_beir(data.path(), None);
    let out = home
        .daemon_cmd()
        .arg("eval")
        .arg(data.path())
        .args(["--methods", "search,vector", "--max-queries", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("3 queries evaluated") && stdout.contains("nDCG@10"), "{stdout}");
    assert!(stdout.contains("memory.search") && stdout.contains("mode=vector"), "{stdout}");
    assert!(!stdout.contains("memory.recall"), "{stdout}");
    assert!(stdout.contains("baselines") && stdout.contains("RRF of bm25 and vector"), "{stdout}");
}

#[test]
fn eval_refuses_a_malformed_qrels_line_naming_file_and_line() {
    let home = Home::new();
    let data = tempfile::tempdir().unwrap();
    write_beir(data.path(), Some("query-id\tcorpus-id\tscore\nq0\td00\t1\nq0 d01 1\n"));
    let out = home.daemon_cmd().arg("eval").arg(data.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("qrels.tsv line 3"), "{stderr}");
    assert!(out.stdout.is_empty(), "no report on failure");
    // A missing file is named too.
    std::fs::remove_file(data.path().join("queries.jsonl")).unwrap();
    let out = home.daemon_cmd().arg("eval").arg(data.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("queries.jsonl"));
}

#[test]
fn eval_reads_a_locomo_conversation_and_reports_recall_per_category() {
    let home = Home::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/locomo-mini");
    let out = home.daemon_cmd().arg("eval").arg(&dir).args(["--methods", "search,recall", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON object on stdout");
    eprintln!("eval report: {r}");
    assert_eq!(r["layout"], "locomo");
    assert_eq!((r["conversations"].as_u64(), r["turns"].as_u64()), (Some(1), Some(14)));
    // Five questions of categories 1-4; the adversarial one is not measured, the one whose
    // evidence is not in the conversation is counted apart.
    assert_eq!(r["questions"], json!({"measured": 5, "without_evidence": 1}));
    let turn = &r["chunkings"]["turn"];
    assert_eq!(turn["chunks"], 14, "one turn per chunk");
    // Two sessions two weeks apart: packed as a chat export, one chunk each.
    assert_eq!(r["chunkings"]["default"]["chunks"], 2);
    for chunking in ["turn", "default"] {
        let c = &r["chunkings"][chunking];
        for m in ["search", "recall"] {
            let cats = &c["methods"][m]["categories"];
            assert_eq!(cats["all"]["questions"], 5, "{chunking} {m}: {cats}");
            assert_eq!((cats["1"]["questions"].as_u64(), cats["4"]["questions"].as_u64()), (Some(1), Some(2)));
            let (at5, at10) =
                (cats["all"]["recall_at_5"].as_f64().unwrap(), cats["all"]["recall_at_10"].as_f64().unwrap());
            assert!(at5 <= at10 && (0.8..=1.0).contains(&at10), "{chunking} {m}: {cats}");
            assert!(c["methods"][m]["latency_ms"]["p50"].as_f64().is_some());
        }
        assert!(c["baselines"]["bm25"]["categories"]["all"]["recall_at_10"].as_f64().unwrap() >= 0.8);
    }
    // One chunking only, as a table.
    let out = home.daemon_cmd().arg("eval").arg(&dir).args(["--chunking", "turn"]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("chunking turn: 14 chunks") && !table.contains("chunking default"), "{table}");
    assert!(table.contains("cat 1") && table.contains("memory.recall"), "{table}");
    assert!(!home.path().join("data").exists(), "eval must not touch the user's store");
}
