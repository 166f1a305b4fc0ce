//! Read methods: ranking, filters, cursors, listings, entities, sources, parameter
//! validation and not-found errors.

use super::Json;
use super::Wire;
use crate::ops;
use serde_json::{Value, json};

use super::super::{MemoryError, PutDocument};
use super::{chunk_of, corpus, ids, open, put, put_doc};

fn titles(v: &Value, list: &str) -> Vec<String> {
    v[list].as_array().unwrap().iter().map(|h| h["title"].as_str().unwrap_or("").to_string()).collect()
}

#[test]
fn bm25_ranks_the_matching_document_first() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    let cases = [
        ("sourdough starter", "Sourdough bread"),
        ("garbage collector ownership", "Rust ownership"),
        ("BM25", "Tantivy search"),
        ("readers writer WAL", "SQLite WAL"),
    ];
    for (q, want) in cases {
        let r = m.wire::<ops::Search>(json!({"query": q})).unwrap();
        assert_eq!(titles(&r, "hits").first().map(String::as_str), Some(want), "query {q}: {r}");
        let snippet = r["hits"][0]["snippet"].as_str().unwrap();
        assert!(snippet.contains("**"), "snippet not highlighted: {snippet}");
    }
    // A title word outranks the same word once in a body.
    let r = m.wire::<ops::Search>(json!({"query": "rust"})).unwrap();
    assert_eq!(titles(&r, "hits"), ["Rust ownership", "Tantivy search"]);
    // Query syntax is not interpreted: quotes and colons are just text.
    let r = m.wire::<ops::Search>(json!({"query": "title:\"tomato"})).unwrap();
    assert_eq!(titles(&r, "hits"), ["Tomato garden"]);
    assert_eq!(m.wire::<ops::Search>(json!({"query": "zzzz"})).unwrap()["hits"], json!([]));
}

#[test]
fn recall_fuses_and_cites() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    let r = m.wire::<ops::Recall>(json!({"query": "bake sourdough bread", "k": 3})).unwrap();
    assert_eq!(titles(&r, "chunks")[0], "Sourdough bread");
    let top = &r["chunks"][0];
    assert_eq!(top["bm25_rank"], 1);
    assert!(top["vector_score"].as_f64().unwrap() > 0.3);
    // First in both lists: the blend of two max-normalised scores is 1.
    assert!((top["score"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{top}");
    assert_eq!(r["citations"][0]["chunk_id"], top["chunk_id"]);
    assert_eq!(r["citations"][0]["source_kind"], "document");
    // Chunks with no similarity and no matching word are not padded in to reach k.
    assert!((1..=3).contains(&r["chunks"].as_array().unwrap().len()));
}

#[test]
fn filters_apply_to_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put_doc(
        &m,
        PutDocument {
            key: "repo-note".into(),
            title: Some("Repo bread".into()),
            content: "Bread baking notes kept in the repository.".into(),
            metadata: json!({"repo": "acme/app", "workspace": "w1"}).as_object().unwrap().clone(),
            timestamp_ms: Some(1_600_000_000_000),
            source: "mcp:cursor".into(),
            ..PutDocument::default()
        },
    );
    let cases = [
        (json!({"tags_any": ["food"]}), vec!["Sourdough bread"]),
        (json!({"repo": "acme/app"}), vec!["Repo bread"]),
        (json!({"repo": "acme/app", "workspace": "w2"}), vec![]),
        (json!({"sources": ["mcp:cursor"]}), vec!["Repo bread"]),
        (json!({"observed_before": "2021-01-01T00:00:00Z"}), vec!["Repo bread"]),
        (json!({"observed_after": "2021-01-01T00:00:00Z", "kinds": ["document"]}), vec!["Sourdough bread"]),
        (json!({"kinds": ["conversation"]}), vec![]),
        (json!({"source_ids": ["doc:default/bread"]}), vec!["Sourdough bread"]),
    ];
    for (filter, want) in cases {
        let r = m.wire::<ops::Fetch>(json!({"query": "bread", "mode": "keyword", "filter": filter})).unwrap();
        assert_eq!(titles(&r, "items"), want, "keyword, filter {filter}");
        let l = m.wire::<ops::List>(json!({"filter": filter, "limit": 100})).unwrap();
        let listed = titles(&l, "items");
        for t in &want {
            assert!(listed.iter().any(|l| l == t), "list with {filter} lacks {t}: {listed:?}");
        }
        // Hybrid modes add semantic neighbours, but never outside the filter.
        let hybrid = m.wire::<ops::Fetch>(json!({"query": "bread", "mode": "hybrid", "filter": filter})).unwrap();
        let recall = m.wire::<ops::Recall>(json!({"query": "bread", "filter": filter})).unwrap();
        for got in [titles(&hybrid, "items"), titles(&recall, "chunks")] {
            assert_eq!(got.first().map(String::as_str), want.first().copied(), "filter {filter}: {got:?}");
            assert!(got.iter().all(|t| listed.contains(t)), "filter {filter}: {got:?} not within {listed:?}");
        }
    }
    // Vector mode returns chunks without the query words too, but filters still hold.
    let r = m
        .wire::<ops::Fetch>(json!({"query": "sqlite bread", "mode": "vector", "filter": {"tags_any": ["db"]}}))
        .unwrap();
    assert_eq!(titles(&r, "items"), ["SQLite WAL"]);
}

#[test]
fn bad_parameters_are_rejected_with_names() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let cases: Vec<(Result<Value, MemoryError>, &str)> = vec![
        (
            m.wire::<ops::Fetch>(json!({"query": "x", "filter": {"zeta": 1, "alpha": 2}})),
            "unknown arguments in `filter`: `alpha`, `zeta`",
        ),
        (
            m.wire::<ops::Fetch>(json!({"query": "x", "filter": {"observed_after": "yesterday"}})),
            "filter.observed_after must be an RFC 3339",
        ),
        (
            m.wire::<ops::Fetch>(json!({"query": "x", "filter": {"kinds": ["video"]}})),
            "argument `filter.kinds[0]` must be one of document, conversation",
        ),
        (
            m.wire::<ops::Fetch>(json!({"query": "x", "mode": "fuzzy"})),
            "argument `mode` must be one of keyword, vector, hybrid",
        ),
        (
            m.wire::<ops::Fetch>(json!({"query": "x", "limit": 101})),
            "argument `limit` must be between 1 and 100 (got 101)",
        ),
        (m.wire::<ops::Fetch>(json!({"query": "x", "cursor": "%%%"})), "cursor is not valid"),
        (m.wire::<ops::Search>(json!({"query": "  "})), "argument `query` must not be blank"),
        (m.wire::<ops::Search>(json!({"query": "x", "k": 0})), "argument `k` must be between 1 and 50 (got 0)"),
        (m.wire::<ops::Search>(json!({"query": "x", "extra": 1})), "unknown argument: `extra`"),
        (m.wire::<ops::Recall>(json!({"query": "x", "k": 51})), "argument `k` must be between 1 and 50"),
        (m.wire::<ops::Browse>(json!({"since_ms": -1})), "argument `since_ms` must be at least 0 (got -1)"),
        (m.wire::<ops::Browse>(json!({"source_kinds": ["bogus"]})), "argument `source_kinds[0]` must be one of"),
        (m.wire::<ops::TopEntities>(json!({"kind": "planet"})), "argument `kind` must be one of"),
        (m.wire::<ops::ReadChunk>(json!({})), "missing required argument `chunk_id`"),
        (m.wire::<ops::ListSources>(json!({"user_email_hint": ""})), "argument `user_email_hint` must not be blank"),
        (m.wire::<ops::List>(json!([1])), "arguments must be an object"),
        // The older names and the shared vocabulary are one argument: one of them at a time.
        (
            m.wire::<ops::Search>(json!({"query": "x", "k": 3, "limit": 4})),
            "pass either `limit` or `k` (two names for one argument), not both",
        ),
        (
            m.wire::<ops::Browse>(json!({"source_kinds": ["note"], "filter": {"kinds": ["email"]}})),
            "pass either `source_kinds` or `filter.kinds` (the same condition), not both",
        ),
        (
            m.wire::<ops::Browse>(json!({"since_ms": 5, "filter": {"observed_after": "2024-05-01T00:00:00Z"}})),
            "pass either `since_ms` or `filter.observed_after`",
        ),
    ];
    for (r, want) in cases {
        match r {
            Err(MemoryError::InvalidParams(msg)) => {
                assert!(msg.contains(want), "got `{msg}`, want `{want}`")
            }
            other => panic!("want InvalidParams({want}), got {other:?}"),
        }
    }
}

#[test]
fn fetch_cursor_pages_without_overlap_and_is_bound_to_its_query() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    for i in 0..25 {
        put(&m, &format!("k{i}"), &format!("Doc {i}"), &format!("common word number {i}"), &[]);
    }
    for mode in ["keyword", "vector", "hybrid"] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut p = json!({"query": "common word", "mode": mode, "limit": 10});
            if let Some(c) = &cursor {
                p["cursor"] = json!(c);
            }
            let r = m.wire::<ops::Fetch>(p).unwrap();
            seen.extend(ids(&r, "items", "id"));
            match r.get("next_cursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        // Pages concatenate to exactly the one-page answer.
        let whole = m.wire::<ops::Fetch>(json!({"query": "common word", "mode": mode, "limit": 100})).unwrap();
        assert_eq!(seen, ids(&whole, "items", "id"), "mode {mode}");
        assert!(seen.len() >= 20, "mode {mode}: {}", seen.len());
    }
    let r = m.wire::<ops::Fetch>(json!({"query": "common word", "limit": 5})).unwrap();
    let c = r["next_cursor"].as_str().unwrap();
    let err = m.wire::<ops::Fetch>(json!({"query": "other words", "limit": 5, "cursor": c})).unwrap_err();
    assert!(matches!(err, MemoryError::InvalidParams(ref s) if s.contains("different query")), "{err:?}");
    let err = m.wire::<ops::List>(json!({"cursor": c})).unwrap_err();
    assert!(matches!(err, MemoryError::InvalidParams(_)));
}

#[test]
fn items_list_is_newest_first_with_keyset_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    for i in 0..7 {
        put_doc(
            &m,
            PutDocument {
                key: format!("k{i}"),
                content: format!("item {i}"),
                timestamp_ms: Some(1_000 * (i % 3) as i64),
                source: "mcp:test".into(),
                ..PutDocument::default()
            },
        );
    }
    let mut all = Vec::new();
    let mut cursor = None::<String>;
    loop {
        let mut p = json!({"limit": 3});
        if let Some(c) = &cursor {
            p["cursor"] = json!(c);
        }
        let r = m.wire::<ops::List>(p).unwrap();
        for it in r["items"].as_array().unwrap() {
            all.push((it["observed_at"].as_str().unwrap().to_string(), it["id"].as_str().unwrap().to_string()));
        }
        match r.get("next_cursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.into()),
            None => break,
        }
    }
    assert_eq!(all.len(), 7);
    assert!(all.windows(2).all(|w| w[0].0 >= w[1].0), "{all:?}");
    let item = &m.wire::<ops::List>(json!({"limit": 1})).unwrap()["items"][0];
    for field in ["id", "kind", "source", "content", "score", "metadata", "observed_at"] {
        assert!(item.get(field).is_some(), "item lacks {field}: {item}");
    }
}

#[test]
fn get_chunk_returns_everything_and_not_found_says_where_ids_come_from() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    put(&m, "p", "People", "Alice Smith emailed bob@example.com about #rust at https://example.com/x", &["t1"]);
    let id = chunk_of(&m, "p");
    let c = m.wire::<ops::ReadChunk>(json!({"chunk_id": id})).unwrap();
    assert_eq!(c["content"], "Alice Smith emailed bob@example.com about #rust at https://example.com/x");
    assert_eq!(c["tags"], json!(["t1"]));
    assert_eq!(c["source"], "mcp:test");
    assert_eq!(c["item_id"], "doc:default/p");
    assert_eq!(
        c["entity_ids"],
        json!(["email:bob@example.com", "person:alice-smith", "topic:rust", "topic:t1", "url:https://example.com/x"])
    );
    let err = m.wire::<ops::ReadChunk>(json!({"chunk_id": "0123456789abcdef0123456789abcdef"})).unwrap_err();
    match err {
        MemoryError::NotFound(msg) => {
            assert!(
                msg.contains("0123456789abcdef0123456789abcdef") && msg.contains("memory.search/recall/tree.browse")
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn list_chunks_filters_pages_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    for i in 0..12 {
        let who = if i % 2 == 0 { "@ann" } else { "@bob" };
        put_doc(
            &m,
            PutDocument {
                key: format!("k{i}"),
                content: format!("message {i} from {who} {}", if i < 4 { "urgent" } else { "routine" }),
                timestamp_ms: Some(i * 1000),
                source: "mcp:test".into(),
                ..PutDocument::default()
            },
        );
    }
    let r = m.wire::<ops::Browse>(json!({"k": 5})).unwrap();
    assert_eq!(r["total"], 12);
    assert_eq!(r["chunks"][0]["timestamp_ms"], 11_000);
    let r = m.wire::<ops::Browse>(json!({"entity_ids": ["handle:@ann"], "k": 50})).unwrap();
    assert_eq!(r["total"], 6);
    let r =
        m.wire::<ops::Browse>(json!({"entity_ids": ["handle:@ann"], "query": "urgent", "k": 1, "offset": 1})).unwrap();
    assert_eq!((r["total"].as_i64(), r["offset"].as_i64(), r["k"].as_i64()), (Some(2), Some(1), Some(1)));
    assert_eq!(r["chunks"][0]["timestamp_ms"], 0);
    let r = m.wire::<ops::Browse>(json!({"since_ms": 3000, "until_ms": 5000})).unwrap();
    assert_eq!(r["total"], 3);
    let r = m.wire::<ops::Browse>(json!({"source_ids": ["doc:default/k3"], "source_kinds": ["document"]})).unwrap();
    assert_eq!(r["total"], 1);
    assert!(r["chunks"][0]["preview"].as_str().unwrap().starts_with("message 3"));
}

#[test]
fn top_entities_counts_mentions_and_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    put(&m, "a", "A", "#rust #rust and @ann", &[]);
    put(&m, "b", "B", "#rust with Alice Smith", &[]);
    let r = m.wire::<ops::TopEntities>(json!({})).unwrap();
    assert_eq!(
        r["entities"][0],
        json!({"entity_id": "topic:rust", "kind": "topic", "display_name": "rust", "mention_count": 3, "chunk_count": 2})
    );
    let r = m.wire::<ops::TopEntities>(json!({"kind": "person"})).unwrap();
    assert_eq!(ids(&r, "entities", "entity_id"), ["person:alice-smith"]);
    // Deleting a chunk takes its mentions away.
    m.forget(&["doc:default/a".to_string()], "mcp:test", super::audit("memory.forget")).unwrap().json();
    let r = m.wire::<ops::TopEntities>(json!({"kind": "topic"})).unwrap();
    assert_eq!(r["entities"][0]["mention_count"], 1);
    let r = m.wire::<ops::TopEntities>(json!({"kind": "handle"})).unwrap();
    assert_eq!(r["entities"], json!([]));
}

/// Stores a document without a title, observed at `ts`.
fn put_at(m: &crate::MemoryEngine, key: &str, content: &str, ts: i64) {
    put_doc(
        m,
        PutDocument {
            key: key.into(),
            title: None,
            content: content.into(),
            timestamp_ms: Some(ts),
            source: "mcp:test".into(),
            ..PutDocument::default()
        },
    );
}

#[test]
fn a_date_in_the_question_prefers_what_was_observed_then() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let day = |key: &str, content: &str, ts: i64| put_at(&m, key, content, ts);
    // 2023-01-10 matches the words better; 2022-07-09 is the day the question names.
    day("picnic-2023", "Picnic in the park: we baked bread, baked cake, baked pie for the picnic.", 1_673_344_800_000);
    day("picnic-2022", "Caroline went to a picnic and we baked bread.", 1_657_360_800_000);
    let first_key = |r: &Value| r["chunks"][0]["source_ref"].as_str().unwrap().to_string();
    let plain = m.wire::<ops::Recall>(json!({"query": "picnic baked bread"})).unwrap();
    assert_eq!(first_key(&plain), "picnic-2023", "{plain}");
    assert!(plain.get("date_range").is_none());
    assert!(plain["chunks"][0].get("in_date_range").is_none());

    for q in [
        "picnic baked bread on 9 July, 2022",
        "picnic baked bread 2022-07-09",
        "July 2022 picnic baked bread",
        // Dates as questions in other languages write them.
        "picnic baked bread le 9 juillet 2022",
        "picnic baked bread am 9. Juli 2022",
        "picnic baked bread el 9 de julio de 2022",
        "2022年7月9日のpicnic baked bread",
    ] {
        let r = m.wire::<ops::Recall>(json!({"query": q})).unwrap();
        assert_eq!(first_key(&r), "picnic-2022", "{q}: {r}");
        assert_eq!(r["chunks"][0]["in_date_range"], true);
        assert_eq!(r["chunks"][1]["in_date_range"], false, "the other day stays listed: {r}");
        assert!(r["date_range"]["from"].as_str().unwrap().starts_with("2022-0"), "{r}");
    }
    assert_eq!(
        m.wire::<ops::Recall>(json!({"query": "picnic on 9 July, 2022"})).unwrap()["date_range"]["text"],
        "9 July, 2022"
    );
    // A date outside every chunk reorders nothing and hides nothing.
    let r = m.wire::<ops::Recall>(json!({"query": "picnic baked bread in 1999"})).unwrap();
    assert_eq!(first_key(&r), "picnic-2023");
    assert_eq!(r["chunks"].as_array().unwrap().len(), 2);
}

/// A question about a day and nothing else ("what happened on 5 March?") lists what was
/// observed that day first, though no word of it is in those chunks; a note that only mentions
/// the month comes after them. A question with words the store holds is ranked by them.
#[test]
fn a_question_about_a_day_lists_that_day() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let at = |key: &str, content: &str, ts: i64| put_at(&m, key, content, ts);
    // 2024-03-05 10:00 and 16:00 UTC, 2024-03-07 09:00, 2024-01-01.
    at("dentist", "The dentist moved Mia's appointment to Friday.", 1_709_632_800_000);
    at("plumber", "Paid the plumber 120 EUR for the kitchen tap.", 1_709_654_400_000);
    at("lock", "Bought a new bike lock; the code is 4719.", 1_709_802_000_000);
    at("plans", "Plans for March: the garden in early March, taxes by 5 April.", 1_704_110_400_000);
    let keys = |r: &Value| -> Vec<String> {
        r["chunks"].as_array().unwrap().iter().map(|c| c["source_ref"].as_str().unwrap().to_string()).collect()
    };
    for q in ["what happened on 5 March 2024?", "was war am 5. März 2024?", "2024年3月5日"] {
        let r = m.wire::<ops::Recall>(json!({"query": q})).unwrap();
        let mut day = keys(&r);
        day.truncate(2);
        day.sort();
        assert_eq!(day, ["dentist", "plumber"], "{q}: {r}");
        for (n, c) in r["chunks"].as_array().unwrap().iter().enumerate() {
            assert_eq!(c["in_date_range"], n < 2, "{r}");
            assert!(n >= 2 || c["relevance"].as_f64().unwrap() >= 0.5, "{r}");
        }
        assert!(!keys(&r).contains(&"lock".to_string()), "{r}");
    }
    // Words the day holds: ranked by them, the day's match first.
    let r = m.wire::<ops::Recall>(json!({"query": "how much did the plumber cost on 5 March 2024?"})).unwrap();
    assert_eq!(r["chunks"][0]["source_ref"], "plumber", "{r}");
    // Words of another day: ranked by them, not replaced by the named day's chunks.
    let r = m.wire::<ops::Recall>(json!({"query": "the bike lock code on 5 March 2024"})).unwrap();
    assert_eq!(r["chunks"][0]["source_ref"], "lock", "{r}");
    // A caller's floor above a date's relevance holds the day's chunks back.
    let r = m.wire::<ops::Recall>(json!({"query": "what happened on 5 March 2024?", "min_relevance": 0.6})).unwrap();
    for c in r["chunks"].as_array().unwrap() {
        assert!(c["relevance"].as_f64().unwrap() >= 0.6, "{r}");
    }
}

/// The numbers of a date in a question are read as the date, not as words: a chat message
/// sent at 20:15 on the 20th of another month is no answer to "what happened on 20 November?"
/// (its stamp, `[2024-03-20 20:15]`, holds the number twice). A chunk of the named day still
/// is, and counts the date as held for the relevance floor.
#[test]
fn the_numbers_of_a_date_do_not_match_chat_stamps() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let path = src.path().join("family.jsonl");
    let lines = [
        r#"{"ts": "2024-03-20T20:15:00Z", "from": "ann", "text": "the boiler engineer came round", "channel": "home"}"#,
        r#"{"ts": "2024-03-20T20:16:00Z", "from": "bob", "text": "did he fix the pressure?", "channel": "home"}"#,
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let m = open(data.path());
    m.ingest_paths(&[path], None, &|_| {}).unwrap();
    // A store large enough for the relevance floor to read cosines against (2024-02-01 on).
    let topics = [
        "sourdough starter",
        "bike lock",
        "passport renewal",
        "piano lessons",
        "tomato seedlings",
        "car insurance",
        "dentist visit",
        "school trip",
        "garden shed",
        "tax return",
        "flight to Lisbon",
        "book club",
        "running plan",
        "guitar strings",
        "birthday cake",
        "window cleaner",
    ];
    for (i, t) in topics.iter().enumerate() {
        put_at(
            &m,
            &format!("note-{i}"),
            &format!("Notes about the {t}: remember to check it."),
            1_706_745_600_000 + i as i64 * 86_400_000,
        );
    }
    // 2024-01-01 and 2024-11-20 12:00 UTC.
    put_at(&m, "plans", "Plans for November: book the MOT and renew the parking permit.", 1_704_110_400_000);
    for q in ["what happened on 20 November 2024?", "what did we plan for 20 November 2024?"] {
        let r = m.wire::<ops::Recall>(json!({"query": q})).unwrap();
        for c in r["chunks"].as_array().unwrap().iter().filter(|c| c["source_kind"] == "chat") {
            assert!(c["bm25_rank"].is_null(), "found by its stamp's numbers: {q}: {r}");
        }
        assert!(!r.to_string().contains("**20**"), "{q}: {r}");
    }
    put_at(&m, "tap", "The plumber fixed the kitchen tap.", 1_732_104_000_000);
    let r = m.wire::<ops::Recall>(json!({"query": "who fixed the tap on 20 November 2024?"})).unwrap();
    assert_eq!(r["chunks"][0]["source_ref"], "tap", "{r}");
    assert_eq!(r["chunks"][0]["in_date_range"], true, "{r}");
}

/// "Next Friday" is the Friday ahead, not the last one: a question about it is answered by
/// what mentions Friday, never lifted to what was observed on the Friday that has passed.
#[test]
fn next_friday_is_not_last_friday() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    // Friday 2024-03-01 12:00 UTC, and 2024-02-20.
    put_at(&m, "lunch", "Lunch with Sam; we talked about the garden and his new job.", 1_709_294_400_000);
    put_at(&m, "plans", "The boiler service comes on Friday at nine; leave the side gate open.", 1_708_430_400_000);
    // As of Monday 2024-03-04.
    let ask = |q: &str| m.wire::<ops::Recall>(json!({"query": q, "as_of": "2024-03-04T09:00:00Z"})).unwrap();
    let r = ask("what is on next Friday?");
    assert_eq!(r["date_range"]["text"], "next Friday", "{r}");
    assert!(r["date_range"]["from"].as_str().unwrap().starts_with("2024-03-07"), "{r}");
    assert_eq!(r["chunks"][0]["source_ref"], "plans", "{r}");
    assert!(r["chunks"].as_array().unwrap().iter().all(|c| c["in_date_range"] == false), "{r}");
    // The reply says nothing was stored then.
    assert_eq!(r["date_range"]["chunks"], 0, "{r}");
    // "Next" only says which Friday: it is not a word to match.
    put_at(&m, "bus", "The next bus into town leaves at ten past the hour.", 1_708_430_400_000);
    let r = ask("what is on next Friday?");
    assert!(!r.to_string().contains("**next**"), "{r}");
    let r = ask("what happened on Friday?");
    assert_eq!(r["date_range"]["chunks"], 1, "{r}");
    assert_eq!(r["chunks"][0]["source_ref"], "lunch", "{r}");
    assert_eq!(r["chunks"][0]["in_date_range"], true, "{r}");
}

/// A note that names a day ahead ("on 21 January", written in December) is found by a question
/// about that day, as if it had been observed then; a question about the January that has
/// passed does not take it.
#[test]
fn a_note_naming_a_day_ahead_is_found_by_that_day() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    // Monday 2024-12-02, and Monday 2024-01-15.
    put_at(&m, "dentist", "Check-up with Dr Okafor booked for Tuesday 21 January at 8:40.", 1_733_140_800_000);
    put_at(&m, "tax", "The tax return is due by 31 January; the forms are in the blue folder.", 1_733_140_800_000);
    put_at(&m, "sales", "The January sales were busy; we bought a new kettle.", 1_705_320_000_000);
    let ask = |q: &str| m.wire::<ops::Recall>(json!({"query": q, "as_of": "2024-12-05T09:00:00Z"})).unwrap();
    let r = ask("what is happening on 21 January?");
    assert!(r["date_range"]["from"].as_str().unwrap().starts_with("2025-01-20"), "{r}");
    assert_eq!(r["date_range"]["chunks"], 1, "{r}");
    assert_eq!(r["chunks"][0]["source_ref"], "dentist", "{r}");
    assert_eq!(r["chunks"][0]["in_date_range"], true, "{r}");
    // The whole month: both notes that name a day in it, not the one that names the month alone.
    let r = ask("what's on in January?");
    assert_eq!(r["date_range"]["chunks"], 2, "{r}");
    let first: Vec<&str> = (0..2).map(|i| r["chunks"][i]["source_ref"].as_str().unwrap()).collect();
    assert!(first.contains(&"dentist") && first.contains(&"tax"), "{r}");
    // A year back: the note was written for the January ahead of it.
    let r = ask("what did I do on 21 January?");
    assert!(r["date_range"]["from"].as_str().unwrap().starts_with("2024-01-20"), "{r}");
    assert!(r["chunks"].as_array().unwrap().iter().all(|c| c["in_date_range"] == false), "{r}");
}

/// A question about a day lists what was stored then or names it; a chunk of another day that
/// only says "happened" is no answer, and a day with nothing gives nothing.
#[test]
fn a_day_is_not_answered_by_what_says_happened_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    // Monday 2024-12-02; the others 2024-10-01 and 2024-10-02.
    put_at(
        &m,
        "damp",
        "Reported the damp to the letting agent on 2 November; they came on the 9th.",
        1_733_140_800_000,
    );
    put_at(&m, "party", "So much happened at the party, it was wild and we stayed up late.", 1_727_784_000_000);
    put_at(&m, "trip", "What happened on the trip stays on the trip, the hotel was lovely.", 1_727_870_400_000);
    let ask = |q: &str| m.wire::<ops::Recall>(json!({"query": q, "as_of": "2024-12-05T09:00:00Z"})).unwrap();
    let refs = |r: &serde_json::Value| -> Vec<String> {
        r["chunks"].as_array().unwrap().iter().map(|c| c["source_ref"].as_str().unwrap().to_string()).collect()
    };
    let r = ask("what happened on 2 November?");
    assert_eq!(refs(&r), ["damp"], "{r}");
    let r = ask("what happened on 4 November?");
    assert_eq!(r["date_range"]["chunks"], 0, "{r}");
    assert!(!refs(&r).iter().any(|s| s == "party" || s == "trip"), "{r}");
}

#[test]
fn a_chat_hit_carries_the_turns_around_it_across_chunks() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let path = src.path().join("family.jsonl");
    // The answer comes three hours later, past the two-hour gap that starts a new chunk.
    let lines = [
        r#"{"ts": "2024-05-01T09:00:00Z", "from": "ann", "text": "good morning", "channel": "home"}"#,
        r#"{"ts": "2024-05-01T09:01:00Z", "from": "bob", "text": "where did you put the spare house keys?", "channel": "home"}"#,
        r#"{"ts": "2024-05-01T12:30:00Z", "from": "ann", "text": "under the blue flowerpot by the door", "channel": "home"}"#,
        r#"{"ts": "2024-05-01T12:31:00Z", "from": "bob", "text": "thanks", "channel": "home"}"#,
        r#"{"ts": "2024-05-01T12:32:00Z", "from": "ann", "text": "see you tonight", "channel": "home"}"#,
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let m = open(data.path());
    m.ingest_paths(&[path], None, &|_| {}).unwrap();
    let r = m.wire::<ops::Recall>(json!({"query": "spare house keys"})).unwrap();
    let hit = &r["chunks"][0];
    assert!(hit["snippet"].as_str().unwrap().contains("keys"), "{r}");
    let turns: Vec<&str> = hit["turns"].as_array().unwrap().iter().map(|t| t["text"].as_str().unwrap()).collect();
    assert_eq!(
        turns,
        [
            "[2024-05-01 09:00] ann: good morning",
            "[2024-05-01 09:01] bob: where did you put the spare house keys?",
            "[2024-05-01 12:30] ann: under the blue flowerpot by the door",
            "[2024-05-01 12:31] bob: thanks",
        ],
        "{r}"
    );
    let owners: Vec<&Value> = hit["turns"].as_array().unwrap().iter().map(|t| &t["chunk_id"]).collect();
    assert_eq!(owners[1], &hit["chunk_id"]);
    assert_ne!(owners[2], &hit["chunk_id"], "the reply lives in the next chunk");
    // Documents carry no turns.
    put_doc(
        &m,
        PutDocument { key: "doc".into(), content: "spare keys list".into(), source: "t".into(), ..Default::default() },
    );
    let r = m.wire::<ops::Recall>(json!({"query": "spare keys list"})).unwrap();
    let doc = r["chunks"].as_array().unwrap().iter().find(|c| c["source_kind"] == "document").unwrap();
    assert!(doc.get("turns").is_none());
}

/// Every page of a listing, following `next_cursor` from `first`: the ids in order, the
/// `total` each page reported, and how many pages there were.
fn walk(
    call: impl Fn(Value) -> Result<Value, MemoryError>,
    first: Value,
    list: &str,
    field: &str,
) -> (Vec<String>, Vec<i64>, usize) {
    let (mut seen, mut totals, mut pages) = (Vec::new(), Vec::new(), 0);
    let mut p = first.clone();
    loop {
        let r = call(p.clone()).unwrap();
        pages += 1;
        seen.extend(ids(&r, list, field));
        totals.push(r["total"].as_i64().unwrap());
        match r.get("next_cursor").and_then(Value::as_str) {
            Some(c) => {
                p = first.clone();
                p["cursor"] = json!(c);
            }
            None => break,
        }
        assert!(pages < 100, "paging does not end");
    }
    (seen, totals, pages)
}

fn assert_each_once(seen: &[String], n: usize, what: &str) {
    let mut unique = seen.to_vec();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (n, n), "{what}: every item exactly once: {seen:?}");
}

#[test]
fn every_listing_pages_with_a_total_and_a_cursor_and_returns_each_item_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    // 23 one-chunk sources; timestamps repeat in threes and mention counts repeat too, so
    // every page boundary falls between ties that only the tie-breaker orders.
    let n = 23;
    for i in 0..n {
        put_doc(
            &m,
            PutDocument {
                key: format!("k{i:02}"),
                content: format!("note {i} about #common and #tag{i}{}", if i % 2 == 0 { " #even" } else { "" }),
                timestamp_ms: Some((i / 3) * 1000),
                source: "mcp:test".into(),
                ..PutDocument::default()
            },
        );
    }
    let (seen, totals, pages) = walk(|p| m.wire::<ops::Browse>(p), json!({"k": 5}), "chunks", "chunk_id");
    assert_each_once(&seen, n as usize, "tree.browse");
    assert!(totals.iter().all(|t| *t == n), "{totals:?}");
    assert_eq!(pages, 5);
    // The pages concatenate to the one-page answer, in its order.
    assert_eq!(seen, ids(&m.wire::<ops::Browse>(json!({"k": 50})).unwrap(), "chunks", "chunk_id"));
    // A filtered walk pages only what the filter matches.
    let (seen, totals, _) = walk(|p| m.wire::<ops::Browse>(p), json!({"k": 4, "query": "even"}), "chunks", "chunk_id");
    assert_each_once(&seen, 12, "tree.browse with a query");
    assert!(totals.iter().all(|t| *t == 12), "{totals:?}");

    let (seen, totals, pages) = walk(|p| m.wire::<ops::ListSources>(p), json!({"limit": 4}), "sources", "source_id");
    assert_each_once(&seen, n as usize, "tree.list_sources");
    assert!(totals.iter().all(|t| *t == n), "{totals:?}");
    assert_eq!(pages, 6);
    assert_eq!(seen, ids(&m.wire::<ops::ListSources>(json!({})).unwrap(), "sources", "source_id"));
    assert!(m.wire::<ops::ListSources>(json!({})).unwrap().get("next_cursor").is_none(), "one default page holds 23");

    let all = m.wire::<ops::TopEntities>(json!({"k": 50})).unwrap();
    let entities = ids(&all, "entities", "entity_id");
    assert!(entities.len() > 7, "{entities:?}");
    let (seen, totals, _) = walk(|p| m.wire::<ops::TopEntities>(p), json!({"k": 3}), "entities", "entity_id");
    assert_each_once(&seen, entities.len(), "tree.top_entities");
    assert_eq!(seen, entities);
    assert!(totals.iter().all(|t| *t == entities.len() as i64), "{totals:?}");

    let (seen, totals, pages) = walk(|p| m.wire::<ops::List>(p), json!({"limit": 10}), "items", "id");
    assert_each_once(&seen, n as usize, "memory.list");
    assert!(totals.iter().all(|t| *t == n), "{totals:?}");
    assert_eq!(pages, 3);
}

#[test]
fn a_bad_or_foreign_cursor_says_to_start_again() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    for i in 0..4 {
        put(&m, &format!("k{i}"), &format!("Doc {i}"), &format!("#topic{i} text"), &[]);
    }
    let browse = m.wire::<ops::Browse>(json!({"k": 1})).unwrap()["next_cursor"].as_str().unwrap().to_string();
    let sources = m.wire::<ops::ListSources>(json!({"limit": 1})).unwrap()["next_cursor"].as_str().unwrap().to_string();
    let cases = [
        m.wire::<ops::Browse>(json!({"cursor": "not a cursor!"})),
        m.wire::<ops::Browse>(json!({"cursor": "eyJoIjoxfQ"})),
        m.wire::<ops::Browse>(json!({"cursor": browse, "source_kinds": ["document"]})),
        m.wire::<ops::Browse>(json!({"cursor": sources})),
        m.wire::<ops::TopEntities>(json!({"cursor": browse})),
        m.wire::<ops::ListSources>(json!({"cursor": browse})),
        m.wire::<ops::List>(json!({"cursor": sources})),
    ];
    for (i, r) in cases.into_iter().enumerate() {
        let err = r.unwrap_err();
        assert!(
            matches!(err, MemoryError::InvalidParams(ref s) if s.contains("start again without a cursor")),
            "case {i}: {err:?}"
        );
    }
    // Longer than any cursor the engine writes: refused by the schema, naming the bound.
    let err = m.wire::<ops::ListSources>(json!({"cursor": "x".repeat(2000)})).unwrap_err();
    assert!(err.to_string().contains("`cursor` is 2000 characters long; the limit is 1024"), "{err}");
    let err = m.wire::<ops::Browse>(json!({"cursor": browse, "offset": 1})).unwrap_err();
    assert!(matches!(err, MemoryError::InvalidParams(ref s) if s.contains("not both")), "{err:?}");
    let err = m.wire::<ops::ListSources>(json!({"limit": 201})).unwrap_err();
    assert!(matches!(err, MemoryError::InvalidParams(_)), "{err:?}");
}

#[test]
fn completion_matches_prefixes_of_topics_sources_and_chunk_ids() {
    use super::super::Completable;
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    put(&m, "a", "A", "#rust #rust and #rustacean and #go", &[]);
    put(&m, "b", "B", "#rust again, and 100% #r_d", &[]);
    let r = m.complete(Completable::Topic, "RUS", 10).unwrap().json();
    assert_eq!(r, json!({"values": ["rust", "rustacean"], "total": 2}), "most mentioned first, ASCII case ignored");
    let r = m.complete(Completable::Topic, "r_", 10).unwrap().json();
    assert_eq!(r["values"], json!(["r_d"]), "LIKE wildcards in the prefix are literal");
    let r = m.complete(Completable::Topic, "", 1).unwrap().json();
    assert_eq!((r["values"].as_array().unwrap().len(), r["total"].as_i64()), (1, Some(4)));
    let sources = m.complete(Completable::Source, "", 10).unwrap().json();
    assert_eq!(sources["total"], 2);
    let first = sources["values"][0].as_str().unwrap().to_string();
    let r = m.complete(Completable::Source, &first, 10).unwrap().json();
    assert_eq!(r["values"][0], first.as_str());
    let chunk = chunk_of(&m, "a");
    let r = m.complete(Completable::Chunk, &chunk[..6], 10).unwrap().json();
    assert!(r["values"].as_array().unwrap().iter().any(|v| v == chunk.as_str()), "{r}");
    assert_eq!(m.complete(Completable::Chunk, "zz-none", 10).unwrap().json(), json!({"values": [], "total": 0}));
}

#[test]
fn timeline_counts_chunks_per_day_week_month_and_year_and_neighbours_read_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    const DAY: i64 = 86_400_000;
    // 2026-11-30 (a Monday), the Tuesday after, and the Monday a week later.
    let monday = 1_795_996_800_000_i64;
    for (key, at, text) in [
        ("a", monday + 1_000, "Rust borrow checker notes"),
        ("b", monday + DAY + 5, "More rust lifetimes"),
        ("c", monday + 7 * DAY, "Gardening in the rain"),
    ] {
        put_doc(
            &m,
            PutDocument {
                key: key.into(),
                content: text.into(),
                tags: vec!["rust".into()].into_iter().filter(|_| key != "c").collect(),
                timestamp_ms: Some(at),
                source: "mcp:test".into(),
                ..PutDocument::default()
            },
        );
    }
    let days = m.wire::<ops::Timeline>(json!({})).unwrap();
    let points: Vec<(i64, i64)> = days["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["start_ms"].as_i64().unwrap(), p["chunks"].as_i64().unwrap()))
        .collect();
    assert_eq!(points, vec![(monday, 1), (monday + DAY, 1), (monday + 7 * DAY, 1)], "{days}");
    let weeks = m.wire::<ops::Timeline>(json!({"bucket": "week"})).unwrap();
    assert_eq!(weeks["points"][0]["start"], "2026-11-30T00:00:00.000Z", "{weeks}");
    assert_eq!(weeks["points"][0]["chunks"], 2, "{weeks}");
    assert_eq!(weeks["points"][1]["chunks"], 1, "{weeks}");
    let topic = m.wire::<ops::Timeline>(json!({"bucket": "week", "entity_id": "topic:rust"})).unwrap();
    assert_eq!(topic["points"].as_array().unwrap().len(), 1, "only the first week mentions rust: {topic}");
    // The first falls in November (the 30th), the other two in December; all three in 2026.
    let months = m.wire::<ops::Timeline>(json!({"bucket": "month"})).unwrap();
    let starts: Vec<(&str, i64)> = months["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["start"].as_str().unwrap(), p["chunks"].as_i64().unwrap()))
        .collect();
    assert_eq!(starts, vec![("2026-11-01T00:00:00.000Z", 1), ("2026-12-01T00:00:00.000Z", 2)], "{months}");
    let years = m.wire::<ops::Timeline>(json!({"bucket": "year"})).unwrap();
    assert_eq!(years["points"][0]["start"], "2026-01-01T00:00:00.000Z", "{years}");
    assert_eq!(years["points"][0]["chunks"], 3, "{years}");
    assert!(matches!(m.wire::<ops::Timeline>(json!({"bucket": "hour"})), Err(MemoryError::InvalidParams(_))));

    let section = |name: &str| {
        format!("## {name}\n\n{}\n\n", vec![format!("The {name} section talks about {name}."); 80].join(" "))
    };
    let long = ["One", "Two", "Three", "Four"].map(section).concat();
    put(&m, "long", "Long", &long, &[]);
    let two =
        ids(&m.wire::<ops::Search>(json!({"query": "Two section talks"})).unwrap(), "hits", "chunk_id")[0].clone();
    let around = m.wire::<ops::Neighbours>(json!({"chunk_id": two, "around": 2})).unwrap();
    let seqs = |side: &str| -> Vec<i64> {
        around[side].as_array().unwrap().iter().map(|c| c["seq_in_source"].as_i64().unwrap()).collect()
    };
    let seq = m.wire::<ops::ReadChunk>(json!({"chunk_id": two})).unwrap()["seq_in_source"].as_i64().unwrap();
    assert!(seq >= 2, "the hit has two chunks before it: {seq}");
    assert_eq!(seqs("before"), vec![seq - 2, seq - 1], "{around}");
    assert_eq!(seqs("after"), vec![seq + 1, seq + 2], "{around}");
    assert_eq!(around["source_id"], "doc:default/long", "{around}");
    assert!(matches!(m.wire::<ops::Neighbours>(json!({"chunk_id": "nope"})), Err(MemoryError::NotFound(_))));
}
