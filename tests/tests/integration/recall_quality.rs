//! Recall quality on a small labelled set written for this test: every query shares no word
//! with its target document, so keyword search cannot find it and semantic recall must. Prints
//! recall@5 for the built-in embedder (`memory.recall`) and for BM25 alone (`memory.search`).

use openhuman_tests::{ChildPeer, Daemon, Home};
use serde_json::json;

/// (target document, query with no word in common with it).
const PAIRS: &[(&str, &str)] = &[
    ("My car needs new tyres and the mechanic wants to look at the brakes.", "automobile maintenance"),
    ("The puppy chewed through another leash at the park this morning.", "young dog behaviour"),
    ("Booked flights to Lisbon and a hotel near the river for the holiday.", "vacation travel plans"),
    ("Physician said my blood pressure is fine but I should sleep more.", "doctor appointment health checkup"),
    ("Quarterly revenue grew while operating costs shrank a little.", "company earnings profit report"),
    ("Bake sourdough at a high oven temperature with plenty of steam.", "bread recipe kitchen"),
    ("The violinist and the cellist rehearsed the symphony all evening.", "orchestra music practice"),
    ("Heavy rain and thunder are expected across the region tomorrow.", "weather forecast storm"),
    ("Our toddler started kindergarten and cried at the school gate.", "child education first day"),
    ("Rent went up again so we are looking for a cheaper apartment.", "housing costs moving flat"),
    ("The striker scored twice and the team won the league final.", "football match victory"),
    ("Planted tomatoes, basil and peppers in the raised beds.", "vegetable gardening"),
    ("The laptop keeps overheating and the fan is very loud.", "computer hardware problem"),
    ("Paid the electricity invoice and the water utility bill online.", "household payments"),
    ("Reading a novel about a detective solving a murder in Venice.", "crime fiction book"),
];

const DISTRACTORS: &[&str] = &[
    "Meeting moved to Thursday afternoon because of the product launch.",
    "Remember to renew the passport before it expires in spring.",
    "The quarterly security audit found two outdated firewall rules.",
    "Grandma's birthday dinner is at the Italian place downtown.",
    "Switched the team chat to threaded replies to reduce noise.",
    "The bookshelf assembly instructions were missing step four.",
    "Learned that the museum is free on the first Sunday of the month.",
    "Carpool schedule: Monday and Wednesday I drive, Friday Sam drives.",
    "Our podcast episode about open source licensing is live.",
    "The bank changed its app and now needs a second login factor.",
    "Ordered a new desk chair with better lumbar support.",
    "The conference talk slides need a clearer conclusion slide.",
    "Cleaning the gutters before autumn leaves block them.",
    "Volunteered at the food bank sorting canned goods.",
    "The printer on the third floor jams on double-sided jobs.",
    "Practising Spanish verbs for twenty minutes every day.",
    "The neighbours are renovating and drilling starts at eight.",
    "Insurance renewal letter arrived with a higher premium.",
    "Tried a new running route along the canal, nine kilometres.",
    "The photo backup finished; eleven thousand pictures archived.",
    "Wedding invitation RSVP is due by the fifteenth.",
    "Tax documents are in the blue folder in the filing cabinet.",
    "Migrated the old wiki pages to the new documentation site.",
    "The cat needs her vaccination booster next month.",
    "Bought a secondhand bicycle with a basket for groceries.",
    "Our book club picked a memoir about mountain climbing.",
    "The dishwasher leaks a little when the eco cycle runs.",
    "Draft the newsletter about the community clean-up day.",
    "Sold the old sofa through the local marketplace listing.",
    "Rebooked the dentist cleaning for after the holidays.",
];

#[test]
fn builtin_embedder_beats_keywords_on_paraphrased_queries() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let mut s = ChildPeer::spawn(home.shim_cmd());
    s.peer.initialize("recall-quality");
    let mut targets = Vec::new();
    for (i, (doc, _)) in PAIRS.iter().enumerate() {
        let r = s.peer.tool("memory.store", json!({"title": format!("target {i}"), "content": doc}));
        targets.push(r["structuredContent"]["chunk_ids"][0].as_str().expect("chunk id").to_string());
    }
    for (i, doc) in DISTRACTORS.iter().enumerate() {
        s.peer.tool("memory.store", json!({"title": format!("distractor {i}"), "content": doc}));
    }
    let (mut semantic, mut keyword) = (0, 0);
    for ((_, query), target) in PAIRS.iter().zip(&targets) {
        let recalled = s.peer.tool("memory.recall", json!({"query": query, "k": 5}));
        if recalled["structuredContent"]["chunks"].as_array().unwrap().iter().any(|c| c["chunk_id"] == target.as_str())
        {
            semantic += 1;
        }
        let searched = s.peer.tool("memory.search", json!({"query": query, "k": 5}));
        if searched["structuredContent"]["hits"].as_array().unwrap().iter().any(|h| h["chunk_id"] == target.as_str()) {
            keyword += 1;
        }
    }
    let n = PAIRS.len() as f64;
    let (sem, kw) = (semantic as f64 / n, keyword as f64 / n);
    eprintln!(
        "recall@5 on {} paraphrased queries: built-in embedder (hybrid recall) {sem:.2}, BM25 alone {kw:.2}",
        PAIRS.len()
    );
    assert!(sem >= 0.6, "the built-in embedder should find most targets: recall@5 = {sem:.2}");
    assert!(sem > kw, "semantic recall should beat BM25 on queries without shared words ({sem:.2} vs {kw:.2})");
}
