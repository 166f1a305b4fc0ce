//! Keyword ranking: English stems, code-like tokens kept whole, stop words, and titles
//! counted once whichever way a document arrives.

use super::Wire;
use crate::ops;
use serde_json::{Value, json};

use super::{corpus, open, put};

fn titles(r: &Value) -> Vec<String> {
    r["hits"].as_array().unwrap().iter().map(|h| h["title"].as_str().unwrap_or("").to_string()).collect()
}

#[test]
fn a_word_finds_its_other_forms_and_the_snippet_marks_them() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put(&m, "dev", "Roadmap", "The team is developing a parser for progenitors of cells.", &[]);
    for q in ["develop", "developers", "Developments", "progenitor", "cell"] {
        let r = m.wire::<ops::Search>(json!({"query": q})).unwrap();
        assert_eq!(titles(&r), ["Roadmap"], "query {q}: {r}");
    }
    let r = m.wire::<ops::Search>(json!({"query": "develop"})).unwrap();
    let snippet = r["hits"][0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("**developing**"), "{snippet}");
    let r = m.wire::<ops::Recall>(json!({"query": "developed progenitor"})).unwrap();
    assert_eq!(r["chunks"][0]["title"], "Roadmap");
    assert_eq!(r["chunks"][0]["bm25_rank"], 1);
}

#[test]
fn identifiers_addresses_versions_and_urls_are_found_exactly_first() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put(
        &m,
        "exact",
        "Release notes",
        "Version 1.2.3 renames snake_case_name, calls foo.bar() and HttpServerConfig; \
         write to alice.smith@example.com or read https://example.com/docs/setup first.",
        &[],
    );
    // Every part of those tokens, more often, in a chunk of the same length.
    put(
        &m,
        "parts",
        "Loose parts",
        "Version 1, 2, 3 and 1 2 3: snake case name, snake case name, foo bar, foo bar, \
         alice smith example com, alice smith example com, https example com docs setup again.",
        &[],
    );
    for q in [
        "1.2.3",
        "snake_case_name",
        "foo.bar()",
        "alice.smith@example.com",
        "https://example.com/docs/setup",
        "where is snake_case_name renamed?",
    ] {
        let r = m.wire::<ops::Search>(json!({"query": q})).unwrap();
        assert_eq!(titles(&r), ["Release notes", "Loose parts"], "query {q}: {r}");
    }
    // CamelCase is one word, matched whatever its case.
    let r = m.wire::<ops::Search>(json!({"query": "httpserverconfig"})).unwrap();
    assert_eq!(titles(&r), ["Release notes"]);
    // The parts alone still find both, the chunk with more of them first.
    let r = m.wire::<ops::Search>(json!({"query": "snake case"})).unwrap();
    assert_eq!(titles(&r), ["Loose parts", "Release notes"]);
}

#[test]
fn stop_words_are_ignored_unless_the_query_has_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put(&m, "hamlet", "Soliloquy", "To be, or not to be, that is the question.", &[]);
    // Next to other words, stop words change nothing: the garden text has "the" too.
    let r = m.wire::<ops::Search>(json!({"query": "the sourdough"})).unwrap();
    assert_eq!(titles(&r), ["Sourdough bread"]);
    // A query of stop words only is answered by them.
    let r = m.wire::<ops::Search>(json!({"query": "to be or not to be"})).unwrap();
    assert_eq!(titles(&r).first().map(String::as_str), Some("Soliloquy"), "{r}");
    let r = m.wire::<ops::Search>(json!({"query": "The"})).unwrap();
    let mut found = titles(&r);
    found.sort();
    assert_eq!(found, ["Soliloquy", "Tomato garden"]);
    let r = m.wire::<ops::Recall>(json!({"query": "that is"})).unwrap();
    assert_eq!(r["chunks"][0]["title"], "Soliloquy");
    // Nothing to search for: no hits, no error.
    assert_eq!(m.wire::<ops::Search>(json!({"query": "?! …"})).unwrap()["hits"], json!([]));
}

#[test]
fn a_title_counts_once_whether_it_is_also_the_first_heading_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    // A Markdown file's title is its `# ` line, kept in the stored content (and the chunk's
    // heading); a stored document has its title apart from the content.
    let file = src.path().join("comet.md");
    std::fs::write(&file, "# Comet tails\n\nDust and gas stream away from the sun.\n").unwrap();
    m.ingest_paths(&[file], None, &|_| {}).unwrap();
    put(&m, "comet", "Comet tails", "Dust and gas stream away from the sun.", &[]);
    let r = m.wire::<ops::Search>(json!({"query": "comet"})).unwrap();
    let hits = r["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{r}");
    assert_eq!(hits[0]["score"], hits[1]["score"], "{r}");
    // What a reader gets back is the content as stored.
    let kinds: Vec<&str> = hits.iter().map(|h| h["source_ref"].as_str().unwrap()).collect();
    let file_hit = hits.iter().position(|h| h["source_ref"].as_str().unwrap().ends_with("comet.md")).unwrap();
    let chunk = m.wire::<ops::ReadChunk>(json!({"chunk_id": hits[file_hit]["chunk_id"]})).unwrap();
    assert!(chunk["content"].as_str().unwrap().starts_with("# Comet tails\n"), "{kinds:?} {chunk}");
}
