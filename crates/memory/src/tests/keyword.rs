//! Keyword ranking: English stems, code-like tokens kept whole, stop words, and titles
//! counted once whichever way a document arrives.

use super::Wire;
use crate::ops;
use serde_json::{Value, json};

use super::{corpus, open, put};

/// The titles of a search's hits or a recall's chunks, best first.
fn titles(r: &Value) -> Vec<String> {
    let hits = r.get("hits").unwrap_or(&r["chunks"]).as_array().unwrap();
    hits.iter().map(|h| h["title"].as_str().unwrap_or("").to_string()).collect()
}

/// A store with the built-in embedder holding `notes` (key, title, text).
fn notes_store(dir: &std::path::Path, notes: &[(&str, &str, &str)]) -> crate::MemoryEngine {
    let m = super::open_with(dir, crate::embed::builtin().unwrap());
    for (key, title, content) in notes {
        put(&m, key, title, content, &[]);
    }
    m
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

/// Embeds by topic only: the baking words of a text point one way, and a text without any
/// points elsewhere, so that a note about sourdough is a vector match for a question about
/// yeast while sharing no keyword with it.
struct BakingEmbedder;

impl crate::embed::Embedder for BakingEmbedder {
    fn signature(&self) -> &str {
        "test-baking/2"
    }

    fn dims(&self) -> usize {
        2
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, crate::embed::EmbedError> {
        const BAKING: &[&str] = &["bread", "yeast", "sourdough", "starter", "flour", "dough"];
        Ok(texts
            .iter()
            .map(|t| {
                let lower = t.to_lowercase();
                let n = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| BAKING.contains(w)).count();
                if n == 0 { vec![0.0, 1.0] } else { vec![n as f32, 0.0] }
            })
            .collect())
    }
}

#[test]
fn a_match_on_stop_words_only_ranks_as_no_keyword_match() {
    let dir = tempfile::tempdir().unwrap();
    let m = super::open_with(dir.path(), std::sync::Arc::new(BakingEmbedder));
    put(&m, "bike", "Bike lock", "How do I open my bike lock? I do it with my code, and I keep my key with me.", &[]);
    put(&m, "starter", "Sourdough starter", "Feed the starter flour and water every day; keep it warm.", &[]);
    put(&m, "proof", "Proofing", "Fresh yeast proofs dough within an hour.", &[]);
    let q = "how do I take care of my bread yeast?";
    // The ranking itself, every hit kept (the relevance floor is tested in `personal`).
    let r = m.wire::<ops::Recall>(json!({"query": q, "min_relevance": 0})).unwrap();
    let chunks = r["chunks"].as_array().unwrap();
    let found: Vec<&str> = chunks.iter().map(|c| c["title"].as_str().unwrap()).collect();
    // The real keyword match first, then the vector-only one; the bike lock, matching on
    // stop words only, has no keyword rank and comes after both if at all.
    assert_eq!(found[..2], ["Proofing", "Sourdough starter"], "{r}");
    for c in chunks.iter().filter(|c| c["title"] == "Bike lock") {
        assert!(c["bm25_rank"].is_null(), "{r}");
    }
    // Keyword search finds the one real match only.
    let r = m.wire::<ops::Search>(json!({"query": q})).unwrap();
    assert_eq!(titles(&r), ["Proofing"], "{r}");
}

/// A question whose best keyword match holds little of its word weight (here one ordinary
/// word, "after" or "out", in a note about something else) is ranked more by meaning, with the
/// built-in table; a question its words do answer keeps its keyword match first.
#[test]
fn a_question_its_words_answer_poorly_leans_on_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let notes = [
        ("starter", "Sourdough starter", "Feed the sourdough starter every morning with 50 g flour and 50 g water."),
        (
            "tomato",
            "Tomato seedlings",
            "Sow the tomato seeds indoors in late March and plant out after the last frost.",
        ),
        ("passport", "Passport", "My passport expires on 3 September 2026; renewal takes about six weeks."),
        ("bike", "Bike lock", "The code of the blue bike lock is 4719."),
        ("insurance", "Car insurance", "The car insurance with Northshield renews on 1 June."),
        ("wifi", "Wifi at the cabin", "The cabin router is in the hall cupboard; the network is Birchwood."),
        ("dentist", "Dentist", "Mia sees the dentist on Thursday at four."),
        ("books", "Book club", "In April the book club reads The Remains of the Day."),
        ("bill", "Electricity", "The March electricity bill is 84.20 EUR, paid by direct debit."),
    ];
    let m = notes_store(dir.path(), &notes);
    let first = |q: &str| {
        let r = m.wire::<ops::Recall>(json!({"query": q, "min_relevance": 0})).unwrap();
        r["chunks"][0]["title"].as_str().unwrap().to_string()
    };
    assert_eq!(first("how do I look after my bread yeast culture?"), "Sourdough starter");
    assert_eq!(first("when does my travel document run out?"), "Passport");
    assert_eq!(first("when can the young tomato plants go outside?"), "Tomato seedlings");
    assert_eq!(first("what is the code of the bike lock?"), "Bike lock");
}

/// A question none of whose words the store holds is matched on their neighbours in the
/// built-in table ("lisbon" for "portugal", "depart" for "leave"), and the chunk they find is
/// kept by the relevance floor; a question its own words answer is not widened.
#[test]
fn words_the_store_lacks_are_matched_on_their_neighbours() {
    let dir = tempfile::tempdir().unwrap();
    let notes = [
        ("passport", "Passport", "My passport expires on 3 September 2026; renewal takes about six weeks."),
        ("bike", "Bike lock", "The code of the blue bike lock is 4719."),
        ("wifi", "Wifi at the cabin", "The cabin router is in the hall cupboard; the network is Birchwood."),
        ("starter", "Sourdough starter", "Feed the sourdough starter every morning with 50 g flour and 50 g water."),
        (
            "flight",
            "Your booking is confirmed",
            "Booking reference QX7P2L. Flight SW 412 from Manchester to Lisbon departs 22 May at 06:55.",
        ),
        ("trip", "Weekend away", "We leave for the lake house on Friday after work."),
    ];
    let m = notes_store(dir.path(), &notes);
    let r = m.wire::<ops::Recall>(json!({"query": "when does my plane to Portugal leave?"})).unwrap();
    assert_eq!(titles(&r).first().map(String::as_str), Some("Your booking is confirmed"), "{r}");
    // The snippet marks the words that stood in for the question's.
    assert_eq!(marked(r["chunks"][0]["snippet"].as_str().unwrap()), ["lisbon", "departs"], "{r}");
    // Its own word found, a question is not widened: the trip note, not the flight, answers.
    let r = m.wire::<ops::Recall>(json!({"query": "when do we leave for the lake house?"})).unwrap();
    assert_eq!(titles(&r), ["Weekend away"], "{r}");
}

/// The words a snippet marks.
fn marked(snippet: &str) -> Vec<String> {
    snippet.split("**").skip(1).step_by(2).map(str::to_lowercase).collect()
}

#[test]
fn highlights_never_mark_a_stop_word() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put(&m, "salt", "Bread notes", "We said my bread needs more salt, and what we did was add it.", &[]);
    put(&m, "band", "Concert", "The Who played at the hall; who were they with?", &[]);
    let r = m.wire::<ops::Search>(json!({"query": "what did we say about my bread?"})).unwrap();
    assert!(titles(&r).contains(&"Bread notes".to_string()), "{r}");
    for h in r["hits"].as_array().unwrap() {
        let marks = marked(h["snippet"].as_str().unwrap());
        assert!(marks.iter().all(|w| w == "bread"), "{h}");
    }
    let r = m.wire::<ops::Recall>(json!({"query": "what did we say about my bread?"})).unwrap();
    for c in r["chunks"].as_array().unwrap() {
        assert!(marked(&c.to_string()).iter().all(|w| w == "bread"), "{c}");
    }
    // Pronouns and modal verbs are stop words too: the note is found by "let", and neither "us"
    // nor "must" is marked.
    put(&m, "keys", "Spare key", "Margaret at number 14 has our spare key; she must let us in.", &[]);
    let r = m.wire::<ops::Search>(json!({"query": "who must let us in?"})).unwrap();
    assert!(titles(&r).contains(&"Spare key".to_string()), "{r}");
    for h in r["hits"].as_array().unwrap() {
        assert!(marked(h["snippet"].as_str().unwrap()).iter().all(|w| w.starts_with("let")), "{h}");
    }
    // A query of stop words only still finds what holds them, and marks nothing.
    let r = m.wire::<ops::Search>(json!({"query": "the who"})).unwrap();
    assert_eq!(titles(&r)[0], "Concert", "{r}");
    assert!(marked(r["hits"][0]["snippet"].as_str().unwrap()).is_empty(), "{r}");
}

#[test]
fn code_like_tokens_keep_their_stop_word_parts() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put(&m, "bike", "Bike lock", "My bike lock: where is my key? It is in my bag.", &[]);
    put(&m, "config", "Config", "Set my_var to 3 in the_file.rs before the build.", &[]);
    for q in ["my_var", "where is my_var set?", "the_file.rs"] {
        let r = m.wire::<ops::Search>(json!({"query": q})).unwrap();
        assert_eq!(titles(&r), ["Config"], "query {q}: {r}");
    }
}

#[test]
fn accents_and_full_width_letters_fold_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    corpus(&m);
    put(&m, "fr", "Réunion de classe", "On prépare la réunion des anciens élèves.", &[]);
    put(&m, "en", "Family reunion", "Plans for the reunion picnic.", &[]);
    for q in ["reunion", "Réunion", "RÉUNION", "ｒｅｕｎｉｏｎ", "eleves"] {
        let r = m.wire::<ops::Search>(json!({"query": q})).unwrap();
        let mut found = titles(&r);
        found.sort();
        let want: &[&str] =
            if q == "eleves" { &["Réunion de classe"] } else { &["Family reunion", "Réunion de classe"] };
        assert_eq!(found, want, "query {q}: {r}");
    }
    // The snippet marks the word as written.
    let r = m.wire::<ops::Search>(json!({"query": "reunion eleves"})).unwrap();
    assert_eq!(r["hits"][0]["title"], "Réunion de classe", "{r}");
    let snippet = r["hits"][0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("**réunion**") && snippet.contains("**élèves**"), "{snippet}");
}

/// A question in French, German or another of the six languages the analyzer knows the
/// function words of drops them as an English question drops its stop words. In a store that is
/// mostly English, `la` and `de` are rare words, and a French note that shares only them with
/// the question would otherwise be a strong keyword hit.
#[test]
fn a_question_in_another_language_is_not_answered_by_its_function_words() {
    let dir = tempfile::tempdir().unwrap();
    let notes = [
        ("cle", "Clé de secours", "Margaret, au numéro 14, a la clé de secours de la maison."),
        ("tarte", "Recette", "Pour la tarte aux pommes il faut de la farine, du beurre et des pommes."),
        ("garage", "Le garage", "La porte du garage est cassée ; le serrurier vient mardi."),
        ("chor", "Chorprobe", "Die Probe des Chors ist am Donnerstag im Gemeindesaal."),
        ("rad", "Fahrrad", "Der Schlüssel für das Fahrradschloss ist in der Schublade."),
        (
            "mail",
            "Réunion",
            "Bonjour, où est passée la réunion de mardi ? Elle est annulée : la salle de conférence est prise.",
        ),
        ("termin", "Termin", "Wann ist der Termin beim Zahnarzt? Die Praxis ist am Freitag zu."),
    ];
    let m = notes_store(dir.path(), &notes);
    corpus(&m);
    for (q, want) in [("où est la clé de secours ?", "Clé de secours"), ("wann ist die Chorprobe?", "Chorprobe")] {
        let r = m.wire::<ops::Search>(json!({"query": q})).unwrap();
        assert_eq!(titles(&r), [want], "{q}: {r}");
        let r = m.wire::<ops::Recall>(json!({"query": q})).unwrap();
        assert_eq!(titles(&r), [want], "{q}: {r}");
    }
    let r = m.wire::<ops::Recall>(json!({"query": "qui répare la porte du garage ?"})).unwrap();
    assert_eq!(titles(&r), ["Le garage"], "{r}");
}
