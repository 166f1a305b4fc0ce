//! Facts that change and facts said twice (see `facts`), and projects (see `project`): through
//! the write and read operations as a client calls them.

#![allow(clippy::print_stdout, reason = "the calibration's report is its output")]

use serde_json::{Value, json};

use super::{Json, Wire, audit, builtin, open, open_with};
use crate::ops::{self, Author};
use crate::{MemoryEngine, facts};

fn by(tool: &str) -> Author {
    Author { source: "mcp:test".into(), audit: audit(tool) }
}

fn store(m: &MemoryEngine, args: Value) -> Value {
    let p: ops::StoreParams = serde_json::from_value(args).expect("store params");
    m.store(p, by("memory.store")).expect("store").json()
}

fn learn(m: &MemoryEngine, args: Value) -> Value {
    let p: ops::LearnParams = serde_json::from_value(args).expect("learn params");
    m.learn_one(p, by("memory.learn")).expect("learn").json()
}

fn recall(m: &MemoryEngine, args: Value) -> Value {
    m.wire::<ops::Recall>(args).expect("recall")
}

fn ids(hits: &Value) -> Vec<String> {
    hits.as_array().unwrap().iter().map(|h| h["chunk_id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_document_stored_again_under_its_title_supersedes_the_old_version() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let v1 = store(
        &m,
        json!({"title": "Where the user lives", "content": "The user lives in Paris.", "observed_at": "2024-01-01T00:00:00Z"}),
    );
    assert_eq!(v1["status"], "created");
    let old = v1["chunk_ids"][0].as_str().unwrap().to_string();
    let v2 = store(
        &m,
        json!({"title": "Where the user lives", "content": "We moved to Berlin last spring; the user lives in Berlin.", "observed_at": "2025-01-01T00:00:00Z"}),
    );
    assert_eq!(v2["status"], "updated");
    assert_eq!(v2["supersedes"], json!([old]));
    let new = v2["chunk_ids"][0].as_str().unwrap().to_string();

    // Recall: the current version first, the old one kept and marked with a link and both dates.
    let r = recall(&m, json!({"query": "where does the user live Paris"}));
    let got = ids(&r["chunks"]);
    let (at_new, at_old) = (got.iter().position(|i| *i == new).unwrap(), got.iter().position(|i| *i == old).unwrap());
    assert!(at_new < at_old, "current first: {got:?}");
    let marked = &r["chunks"][at_old]["superseded"];
    assert_eq!(marked["by"], new.as_str());
    assert_eq!(marked["reason"], "same_key");
    assert_eq!(marked["observed_at"], "2024-01-01T00:00:00.000Z");
    assert_eq!(marked["superseded_at"], "2025-01-01T00:00:00.000Z");
    assert!(r["chunks"][at_new].get("superseded").is_none());

    // The history: both versions, oldest first, the new one current.
    let h = m.wire::<ops::History>(json!({"id": old})).unwrap();
    assert_eq!(h["versions"].as_array().unwrap().len(), 2, "{h}");
    assert_eq!(h["versions"][0]["chunk_id"], old.as_str());
    assert_eq!(h["versions"][0]["superseded_by"], new.as_str());
    assert_eq!(h["versions"][1]["current"], true);
    assert_eq!(h["current"], new.as_str());
    // By the item id too.
    assert_eq!(m.wire::<ops::History>(json!({"id": v2["id"]})).unwrap()["current"], new.as_str());

    // As of mid-2024 only the old version existed, and it was current then.
    let r = recall(&m, json!({"query": "where does the user live", "as_of": "2024-06-01T00:00:00Z"}));
    assert_eq!(ids(&r["chunks"]), vec![old.clone()], "{r}");
    assert!(r["chunks"][0].get("superseded").is_none(), "not superseded yet then: {r}");
    let s = m.wire::<ops::Search>(json!({"query": "lives", "as_of": "2024-06-01T00:00:00Z"})).unwrap();
    assert_eq!(ids(&s["hits"]), vec![old.clone()]);

    // Stating the old text again makes it current again, not a third copy.
    let v3 = store(
        &m,
        json!({"title": "Where the user lives", "content": "The user lives in Paris.", "observed_at": "2026-01-01T00:00:00Z"}),
    );
    assert_eq!(v3["chunk_ids"][0], old.as_str());
    let h = m.wire::<ops::History>(json!({"id": old})).unwrap();
    assert_eq!(h["current"], old.as_str(), "{h}");
    let r = recall(&m, json!({"query": "Berlin"}));
    assert_eq!(ids(&r["chunks"])[..2], [old.clone(), new.clone()], "the current one is brought in first: {r}");
    assert_eq!(r["chunks"][1]["superseded"]["by"], old.as_str());
}

#[test]
fn the_same_fact_stored_twice_is_merged_into_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let a = store(&m, json!({"title": "Editor", "content": "The user's favourite editor is Vim.", "tags": ["tools"]}));
    let b = store(
        &m,
        json!({"title": "Editor choice", "content": "the user's favourite editor is now vim", "tags": ["pref"]}),
    );
    assert_eq!(b["status"], "merged", "{b}");
    assert_eq!(b["merged_into"], a["id"]);
    assert_eq!(b["chunk_ids"], a["chunk_ids"]);
    let s = m.wire::<ops::Search>(json!({"query": "editor vim"})).unwrap();
    assert_eq!(s["hits"].as_array().unwrap().len(), 1, "one hit, not two: {s}");
    assert_eq!(s["hits"][0]["tags"], json!(["pref", "tools"]), "the tags of both");
    // A negation is news, not a repeat; nor is another value.
    let c = store(&m, json!({"title": "Editor 2", "content": "The user's favourite editor is not Vim."}));
    assert_ne!(c["status"], "merged");
    // Another title, the same subject and attribute with another value: an update.
    let e = store(&m, json!({"title": "Editor 4", "content": "The user's favourite editor is Emacs."}));
    assert_eq!(e["supersedes"], a["chunk_ids"], "{e}");
    // Numbers count: another number is another fact.
    let n1 = store(&m, json!({"title": "Item 1", "content": "payload 0 1 kiwifruit"}));
    let n2 = store(&m, json!({"title": "Item 2", "content": "payload 0 2 kiwifruit"}));
    assert_eq!((n1["status"].as_str(), n2["status"].as_str()), (Some("created"), Some("created")));
    // A fact of another project is another fact.
    let d = store(
        &m,
        json!({"title": "Editor 3", "content": "The user's favourite editor is Vim.", "project": "/srv/other"}),
    );
    assert_eq!(d["status"], "created");
    // The same note on a chunk again is refreshed, not replaced.
    let chunk = a["chunk_ids"][0].as_str().unwrap();
    let p: ops::NoteParams = serde_json::from_value(json!({"chunk_id": chunk, "note_text": "Checked."})).unwrap();
    assert_eq!(m.note(p, by("memory.note")).unwrap().json()["status"], "created");
    let p: ops::NoteParams = serde_json::from_value(json!({"chunk_id": chunk, "note_text": "checked"})).unwrap();
    let again = m.note(p, by("memory.note")).unwrap().json();
    assert_eq!(again["status"], "merged");
    assert_eq!(again["merged_into"], again["id"]);
}

#[test]
fn an_update_of_a_similar_fact_supersedes_it_and_forgetting_the_new_one_keeps_the_old_superseded() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(dir.path(), builtin());
    let a = learn(&m, json!({"text": "The project deploys to staging every Friday.", "kind": "fact"}));
    assert_eq!(a["status"], "created");
    let b = learn(&m, json!({"text": "The project deploys to staging every Tuesday.", "kind": "fact"}));
    assert_eq!(b["supersedes"], json!([a["chunk_id"]]), "{b}");
    let same = learn(&m, json!({"text": "The project deploys to staging every Tuesday", "kind": "fact"}));
    assert_eq!((same["status"].as_str(), &same["id"]), (Some("merged"), &b["id"]));
    let unrelated = learn(&m, json!({"text": "The user drinks green tea in the morning.", "kind": "preference"}));
    assert!(unrelated.get("supersedes").is_none());

    let r = recall(&m, json!({"query": "when does the project deploy to staging"}));
    assert_eq!(r["chunks"][0]["chunk_id"], b["chunk_id"], "current first: {r}");
    assert_eq!(r["chunks"][1]["superseded"]["reason"], "similar");

    // Forgetting the current version does not bring the old one back as current.
    let p: ops::ForgetParams = serde_json::from_value(json!({"ids": [b["id"]]})).unwrap();
    let f = m.forget_ids(p, by("memory.forget")).unwrap().json();
    assert_eq!(f["history_kept"], json!([a["chunk_id"]]), "{f}");
    let r = recall(&m, json!({"query": "when does the project deploy to staging"}));
    let old = &r["chunks"][0];
    assert_eq!(old["chunk_id"], a["chunk_id"]);
    assert_eq!(old["superseded"]["replacement_forgotten"], true, "{r}");
    let h = m.wire::<ops::History>(json!({"id": a["chunk_id"]})).unwrap();
    assert_eq!(h["current"], Value::Null, "{h}");
    assert_eq!(h["versions"][1]["stored"], false);
    // Forgetting the old one too leaves nothing.
    let p: ops::ForgetParams = serde_json::from_value(json!({"ids": [a["id"]]})).unwrap();
    m.forget_ids(p, by("memory.forget")).unwrap();
    assert!(
        recall(&m, json!({"query": "deploys to staging"}))["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("superseded").is_none())
    );
}

#[test]
fn projects_filter_boost_list_and_forget() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let mine =
        store(&m, json!({"title": "Build A", "content": "the build uses cargo nextest", "project": "/src/alpha/"}));
    let theirs = store(
        &m,
        json!({"title": "Build B", "content": "the build uses cargo nextest and make", "project": "/src/beta"}),
    );
    store(&m, json!({"title": "Loose", "content": "the build of nothing in particular uses cargo"}));
    let alpha = |v: &Value| v["chunk_ids"][0].as_str().unwrap().to_string();

    let r = m
        .wire::<ops::Search>(json!({"query": "build cargo nextest make", "filter": {"project": "/src/alpha"}}))
        .unwrap();
    assert_eq!(ids(&r["hits"]), vec![alpha(&mine)]);
    assert_eq!(r["hits"][0]["project"], "/src/alpha", "normalised");
    let r = m.wire::<ops::List>(json!({"filter": {"project": "/src/beta"}})).unwrap();
    assert_eq!(r["total"], 1, "{r}");
    assert!(m.wire::<ops::Search>(json!({"query": "x", "filter": {"project": "relative/path"}})).is_err());

    // Without a boost beta's chunk (more words matched) ranks first; alpha's, preferred, overtakes it.
    let plain = m.wire::<ops::Recall>(json!({"query": "build cargo nextest make"})).unwrap();
    assert_eq!(plain["chunks"][0]["chunk_id"], alpha(&theirs).as_str(), "{plain}");
    let boosted = m
        .wire::<ops::Recall>(
            json!({"query": "build cargo nextest make", "prefer_project": "/src/alpha", "project_boost": 0.5}),
        )
        .unwrap();
    assert_eq!(boosted["chunks"][0]["chunk_id"], alpha(&mine).as_str(), "{boosted}");
    let off = m
        .wire::<ops::Recall>(
            json!({"query": "build cargo nextest make", "prefer_project": "/src/alpha", "project_boost": 0}),
        )
        .unwrap();
    assert_eq!(off["chunks"][0]["chunk_id"], alpha(&theirs).as_str());

    let p = m.wire::<ops::Projects>(json!({})).unwrap();
    assert_eq!(p["projects"].as_array().unwrap().len(), 2, "{p}");
    assert_eq!(p["without_project"], 1);

    let gone = m.forget_project("/src/alpha", "mcp:test", audit("openhuman.memory_forget_project")).unwrap().json();
    assert_eq!((gone["items"].as_u64(), gone["chunks"].as_u64()), (Some(1), Some(1)));
    assert!(m.forget_project("/src/alpha", "mcp:test", audit("x")).is_err(), "nothing left to forget");
    assert_eq!(m.wire::<ops::Projects>(json!({})).unwrap()["projects"].as_array().unwrap().len(), 1);
}

#[test]
fn files_belong_to_their_git_root_and_exports_carry_projects_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    std::fs::create_dir_all(repo.path().join("docs")).unwrap();
    std::fs::write(repo.path().join("docs/notes.md"), "# Notes\n\nThe release train leaves on Mondays.\n").unwrap();
    m.ingest_paths(&[repo.path().join("docs")], None, &|_| {}).unwrap();
    let root = crate::project::normalize(&repo.path().to_string_lossy()).unwrap();
    let r = m.wire::<ops::Search>(json!({"query": "release train", "filter": {"project": root}})).unwrap();
    assert_eq!(r["hits"].as_array().unwrap().len(), 1, "{r}");

    store(&m, json!({"title": "T", "content": "first version", "project": "/p/one"}));
    store(&m, json!({"title": "T", "content": "second version", "project": "/p/one"}));
    let out = tempfile::tempdir().unwrap();
    m.export(out.path()).unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let m2 = open(dir2.path());
    m2.import(out.path()).unwrap();
    let r = m2.wire::<ops::Recall>(json!({"query": "version", "filter": {"project": "/p/one"}})).unwrap();
    assert_eq!(r["chunks"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["chunks"][1]["superseded"]["reason"], "same_key", "{r}");
    // Search answers with what is current.
    let s = m2.wire::<ops::Search>(json!({"query": "version", "filter": {"project": "/p/one"}})).unwrap();
    assert_eq!(s["hits"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(m2.wire::<ops::Projects>(json!({})).unwrap()["projects"].as_array().unwrap().len(), 2);
}

/// Calibration on a development set of long chats (`OPENHUMAN_LOCOMO` names its JSON file):
/// every turn stored as a fact of its conversation's project, in order, then how many would be
/// merged or superseded at several thresholds. Distinct turns are neither duplicates nor
/// updates of each other, so every decision but same-text repeats is a false one. Run with
/// `OPENHUMAN_LOCOMO=<file> cargo test -p openhuman-memory --release calibrate -- --ignored --nocapture`.
#[test]
#[ignore = "needs OPENHUMAN_LOCOMO; prints the calibration table"]
fn calibrate_on_long_chats() {
    let Ok(path) = std::env::var("OPENHUMAN_LOCOMO") else { return };
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(dir.path(), builtin());
    let mut turns: Vec<(String, String, String)> = Vec::new();
    for (ci, conv) in data.as_array().unwrap().iter().enumerate() {
        let c = conv["conversation"].as_object().unwrap();
        for n in 1..100 {
            let Some(session) = c.get(&format!("session_{n}")).and_then(Value::as_array) else { continue };
            for t in session {
                let text = t["text"].as_str().unwrap_or_default().trim().to_string();
                if !text.is_empty() {
                    // Titles name documents store-wide: each conversation's turns get their own.
                    turns.push((format!("/conv/{ci}"), format!("c{ci} {}", t["dia_id"].as_str().unwrap()), text));
                }
            }
        }
    }
    // Pairs: (cosine, overlap, same text) of each turn with its closest earlier turns.
    let mut pairs: Vec<(f32, f64, bool, Option<bool>)> = Vec::new();
    for (project, id, text) in &turns {
        let probe_vec = m.inner.fast.embedder.embed(&[text.as_str()]).unwrap().pop().unwrap();
        let near = crate::locks::read(&m.inner.fast.vectors).search(&probe_vec, 20, None);
        let conn = m.inner.read_conn().unwrap();
        for (rowid, cos) in near {
            let (content, p): (String, Option<String>) = conn
                .query_row("SELECT content, project FROM chunks WHERE rowid = ?1", [rowid], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap();
            if p.as_deref() != Some(project.as_str()) {
                continue;
            }
            let same = facts::folded(&content) == facts::folded(text);
            let (a, b) = (facts::words(&content), facts::words(text));
            let verdict = facts::classify(same, facts::gist(&content) == facts::gist(text), Some(cos), &a, &b);
            pairs.push((cos, facts::overlap(&a, &b), same, verdict));
        }
        drop(conn);
        let doc = crate::PutDocument {
            key: id.clone(),
            title: None,
            content: text.clone(),
            source: "calibration".into(),
            project: Some(project.clone()),
            ..Default::default()
        };
        m.put_document(doc, audit("memory.store")).unwrap();
    }
    println!("turns {}, pairs {}, same text {}", turns.len(), pairs.len(), pairs.iter().filter(|p| p.2).count());
    for cos in [0.4f32, 0.5, 0.6, 0.7, 0.8, 0.9] {
        let row: Vec<String> = [0.4f64, 0.5, 0.55, 0.6, 0.7, 0.8]
            .iter()
            .map(|&w| format!("w≥{w}: {}", pairs.iter().filter(|p| !p.2 && p.0 >= cos && p.1 >= w).count()))
            .collect();
        println!("cos≥{cos}: {}", row.join("  "));
    }
    let mut merged = 0;
    let mut superseded = 0;
    for p in pairs.iter().filter(|p| !p.2) {
        match p.3 {
            Some(true) => merged += 1,
            Some(false) => superseded += 1,
            None => {}
        }
    }
    println!(
        "at the shipped thresholds: {merged} false merges, {superseded} false supersessions of {} turns",
        turns.len()
    );

    // End to end: every turn through memory.learn in a fresh store (the write that both merges and
    // supersedes by these measures; memory.store merges by the same ones).
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(dir.path(), builtin());
    let (mut merged, mut same_text, mut superseding) = (0, 0, 0);
    let mut seen: std::collections::HashMap<(String, String), ()> = std::collections::HashMap::new();
    for (project, id, text) in &turns {
        let _ = id;
        let r = learn(&m, json!({"text": text, "kind": "fact", "project": project}));
        let repeat = seen.insert((project.clone(), facts::folded(text)), ()).is_some();
        if r["status"] == "merged" {
            if repeat { same_text += 1 } else { merged += 1 }
        }
        if r.get("supersedes").is_some() {
            superseding += 1;
        }
    }
    println!(
        "memory.learn of every turn: {merged} merged with another turn's text, {same_text} merged repeats of the same text, \
         {superseding} superseding another"
    );
}

/// Updates and restatements written for these tests: (earlier, later, is an update).
const PAIRS: &[(&str, &str, bool)] = &[
    ("The user's favourite editor is Vim.", "The user's favourite editor is Helix now.", true),
    ("The project deploys to staging every Friday.", "The project deploys to staging every Tuesday.", true),
    ("Alice's phone number is 555 0100.", "Alice's phone number is 555 0199.", true),
    ("We use PostgreSQL 14 in production.", "We use PostgreSQL 16 in production.", true),
    ("The build runs on GitHub Actions.", "The build runs on Buildkite since March.", true),
    ("The user lives in Paris.", "The user lives in Berlin.", true),
    ("The API rate limit is 100 requests per minute.", "The API rate limit is 500 requests per minute.", true),
    ("The team standup is at 9:30.", "The team standup moved to 10:00.", true),
    ("The user prefers tabs for indentation.", "The user prefers spaces for indentation.", true),
    ("The main branch is called master.", "The main branch is called main.", true),
    ("The user's favourite editor is Vim.", "The user drinks green tea in the morning.", false),
    ("We use PostgreSQL 14 in production.", "The staging database is restored nightly.", false),
    ("The team standup is at 9:30.", "The quarterly planning happens in January.", false),
    ("Alice's phone number is 555 0100.", "Bob's e-mail address is bob@example.com.", false),
];

#[test]
#[ignore = "prints the measures of the written pairs"]
fn measure_written_pairs() {
    let m = open_with(tempfile::tempdir().unwrap().path(), builtin());
    for (a, b, update) in PAIRS {
        let v = m.inner.fast.embedder.embed(&[a, b]).unwrap();
        let cos: f32 = v[0].iter().zip(&v[1]).map(|(x, y)| x * y).sum::<f32>()
            / (v[0].iter().map(|x| x * x).sum::<f32>().sqrt() * v[1].iter().map(|x| x * x).sum::<f32>().sqrt());
        let w = facts::overlap(&facts::words(a), &facts::words(b));
        let verdict = facts::classify(false, false, Some(cos), &facts::words(a), &facts::words(b));
        println!("{update} cos {cos:.3} words {w:.2} -> {verdict:?}  | {a} / {b}");
    }
}

#[test]
fn numbered_payloads_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(dir.path(), builtin());
    for i in 0..60 {
        let r = store(
            &m,
            json!({"title": format!("crash round 0 item {i}"), "content": format!("payload 0 {i} kiwifruit")}),
        );
        assert_eq!(r["status"], "created", "item {i}: {r}");
    }
}

/// The attribute rule (see `claims`) over every turn of the LoCoMo chats, each conversation in
/// order, a turn's first person its speaker: every claim and every change of value it reads
/// (which a chat turn would supersede) is printed for checking by hand.
#[test]
#[ignore = "needs OPENHUMAN_LOCOMO; prints the claims and supersessions the attribute rule reads"]
fn attribute_rule_on_long_chats() {
    let Ok(path) = std::env::var("OPENHUMAN_LOCOMO") else { return };
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (mut turns, mut with_claims, mut claims_n, mut changes) = (0, 0, 0, 0);
    for conv in data.as_array().unwrap() {
        let c = conv["conversation"].as_object().unwrap();
        let mut current: std::collections::HashMap<(String, String), (String, String)> = Default::default();
        for n in 1..100 {
            let Some(session) = c.get(&format!("session_{n}")).and_then(Value::as_array) else { continue };
            for t in session {
                let text = t["text"].as_str().unwrap_or_default();
                let speaker = t["speaker"].as_str().unwrap_or_default();
                let id = t["dia_id"].as_str().unwrap_or_default();
                turns += 1;
                let found = crate::claims::claims(text, Some(speaker));
                if !found.is_empty() {
                    with_claims += 1;
                }
                for cl in found {
                    claims_n += 1;
                    println!("claim {id} {cl}  | {text}");
                    let key = (cl.subject.clone(), cl.attribute.clone());
                    if let Some((v, was)) = current.get(&key)
                        && *v != cl.value
                    {
                        changes += 1;
                        println!("CHANGE {was} -> {id}: {} {} -> {}", cl.subject, v, cl.value);
                    }
                    current.insert(key, (cl.value, id.to_string()));
                }
            }
        }
    }
    println!("turns {turns}, turns with a claim {with_claims}, claims {claims_n}, changes of value {changes}");

    // End to end: each conversation ingested as a chat export (a session a day, a turn a
    // minute), and the supersessions the writes recorded counted.
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let m = open_with(dir.path(), builtin());
    let mut paths = Vec::new();
    for (ci, conv) in data.as_array().unwrap().iter().enumerate() {
        let c = conv["conversation"].as_object().unwrap();
        let mut lines = Vec::new();
        for n in 1..100 {
            let Some(session) = c.get(&format!("session_{n}")).and_then(Value::as_array) else { continue };
            for (i, t) in session.iter().enumerate() {
                let ts = 1_672_531_200_000i64 + n as i64 * 86_400_000 + i as i64 * 60_000;
                lines.push(
                    json!({"ts": ts, "from": t["speaker"], "text": t["text"], "channel": format!("conv-{ci}")})
                        .to_string(),
                );
            }
        }
        let path = src.path().join(format!("conv-{ci}.jsonl"));
        std::fs::write(&path, lines.join("\n")).unwrap();
        paths.push(path);
    }
    m.ingest_paths(&paths, None, &|_| {}).unwrap();
    let conn = m.inner.read_conn().unwrap();
    let (chunks, links): (i64, i64) = conn
        .query_row("SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM supersessions)", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    println!("ingested as chat: {chunks} chunks, {links} supersessions");
}

#[test]
fn a_move_stated_in_other_words_supersedes_where_the_user_lived() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(dir.path(), builtin());
    let paris =
        store(&m, json!({"title": "Home", "content": "I live in Paris.", "observed_at": "2024-01-01T00:00:00Z"}));
    let old = paris["chunk_ids"][0].as_str().unwrap().to_string();
    // A question, a negation and a hypothetical about the same attribute change nothing.
    for (i, text) in
        ["Do I still live in Paris?", "I don't live in Berlin.", "If we moved to Berlin I would learn German."]
            .iter()
            .enumerate()
    {
        let r =
            store(&m, json!({"title": format!("aside {i}"), "content": text, "observed_at": "2024-06-01T00:00:00Z"}));
        assert!(r.get("supersedes").is_none(), "{text}: {r}");
    }
    // Titles differ, the words barely overlap: the same subject and attribute, another value.
    let berlin = store(
        &m,
        json!({"title": "News", "content": "We moved to Berlin last spring!", "observed_at": "2025-01-01T00:00:00Z"}),
    );
    let new = berlin["chunk_ids"][0].as_str().unwrap().to_string();
    assert_eq!(berlin["supersedes"], json!([old]), "{berlin}");

    let r = recall(&m, json!({"query": "where do I live Paris Berlin"}));
    let got = ids(&r["chunks"]);
    let (at_new, at_old) = (got.iter().position(|i| *i == new).unwrap(), got.iter().position(|i| *i == old).unwrap());
    assert!(at_new < at_old, "current first: {got:?}");
    assert_eq!(r["chunks"][at_old]["superseded"]["reason"], "same_attribute", "{r}");
    assert_eq!(r["chunks"][at_old]["superseded"]["by"], new.as_str());

    let h = m.wire::<ops::History>(json!({"id": new})).unwrap();
    let chain: Vec<&str> = h["versions"].as_array().unwrap().iter().map(|v| v["chunk_id"].as_str().unwrap()).collect();
    assert_eq!(chain, [old.as_str(), new.as_str()], "{h}");
    assert_eq!(h["versions"][0]["reason"], "same_attribute");
    assert_eq!(h["current"], new.as_str());

    // What was current before the move, and after.
    let before = recall(&m, json!({"query": "where do I live Paris Berlin", "as_of": "2024-12-01T00:00:00Z"}));
    let first = &before["chunks"][0];
    assert_eq!(first["chunk_id"], old.as_str(), "{before}");
    assert!(first.get("superseded").is_none(), "{before}");
    assert!(!ids(&before["chunks"]).contains(&new));
    let after = recall(&m, json!({"query": "where do I live Paris Berlin", "as_of": "2025-06-01T00:00:00Z"}));
    assert_eq!(after["chunks"][0]["chunk_id"], new.as_str(), "{after}");

    // Told late: a stay in Lyon observed between the two goes in as Berlin's history.
    let lyon = store(&m, json!({"title": "Lyon", "content": "I live in Lyon.", "observed_at": "2024-06-01T00:00:00Z"}));
    let lyon_id = lyon["chunk_ids"][0].as_str().unwrap();
    let h = m.wire::<ops::History>(json!({"id": lyon_id})).unwrap();
    assert_eq!(h["current"], new.as_str(), "{h}");
    let then = recall(&m, json!({"query": "where do I live Lyon", "as_of": "2024-07-01T00:00:00Z"}));
    let l = then["chunks"].as_array().unwrap().iter().find(|c| c["chunk_id"] == lyon_id).unwrap();
    assert!(l.get("superseded").is_none(), "current in July 2024: {then}");
}

#[test]
fn a_learning_of_a_new_employer_supersedes_the_old_one_but_not_a_fact_that_says_more() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(dir.path(), builtin());
    let a = learn(&m, json!({"text": "The user works at Acme.", "kind": "fact"}));
    let both = learn(&m, json!({"text": "Alice lives in Lyon and works at Initech.", "kind": "fact"}));
    let b = learn(&m, json!({"text": "I joined Globex as a data engineer", "kind": "fact"}));
    assert_eq!(b["supersedes"], json!([a["chunk_id"]]), "{b}");
    // Alice's fact also holds her home, which the new one does not restate: it stays current.
    let c = learn(&m, json!({"text": "Alice works at Hooli.", "kind": "fact"}));
    assert!(c.get("supersedes").is_none(), "{c}");
    // A note (on any chunk) is a fact written by the user too.
    let p: ops::NoteParams =
        serde_json::from_value(json!({"chunk_id": b["chunk_id"], "note_text": "I work at Initrode now."})).unwrap();
    let n = m.note(p, by("memory.note")).unwrap().json();
    let h = m.wire::<ops::History>(json!({"id": b["chunk_id"]})).unwrap();
    assert_eq!(h["current"], n["note_chunk_id"], "{h}");
    let s = m.wire::<ops::Search>(json!({"query": "works at"})).unwrap();
    let found = ids(&s["hits"]);
    assert!(found.contains(&both["chunk_id"].as_str().unwrap().to_string()), "{s}");
    assert!(!found.contains(&a["chunk_id"].as_str().unwrap().to_string()), "search lists current versions: {s}");
}

#[test]
fn a_later_chat_message_of_the_same_sender_supersedes_the_earlier_statement() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    // A year apart (so two chunks); Bob asks and denies, which changes nothing of Ann's.
    let export = [
        r#"{"ts": "2024-03-01T10:00:00Z", "from": "Ann", "text": "I live in Paris, near the canal.", "channel": "friends"}"#,
        r#"{"ts": "2024-09-01T10:00:00Z", "from": "Bob", "text": "Ann, do you live in Lyon now?", "channel": "friends"}"#,
        r#"{"ts": "2024-09-01T10:01:00Z", "from": "Bob", "text": "I don't live in Paris either.", "channel": "friends"}"#,
        r#"{"ts": "2025-03-01T10:00:00Z", "from": "Ann", "text": "Big news: we moved to Berlin!", "channel": "friends"}"#,
    ]
    .join("\n");
    let path = src.path().join("friends.jsonl");
    std::fs::write(&path, export).unwrap();
    m.ingest_paths(&[path], None, &|_| {}).unwrap();
    let chunk_of = |word: &str| -> String {
        let conn = m.inner.read_conn().unwrap();
        conn.query_row("SELECT id FROM chunks WHERE content LIKE ?1", [format!("%{word}%")], |r| r.get(0)).unwrap()
    };
    let (paris, bob, berlin) = (chunk_of("Paris, near"), chunk_of("Lyon"), chunk_of("Berlin"));
    let h = m.wire::<ops::History>(json!({"id": berlin})).unwrap();
    let chain: Vec<&str> = h["versions"].as_array().unwrap().iter().map(|v| v["chunk_id"].as_str().unwrap()).collect();
    assert_eq!(chain, [paris.as_str(), berlin.as_str()], "{h}");
    assert_eq!(m.wire::<ops::History>(json!({"id": bob})).unwrap()["versions"].as_array().unwrap().len(), 1);

    let r = recall(&m, json!({"query": "where does Ann live Paris Berlin"}));
    let got = ids(&r["chunks"]);
    let at = |id: &str| got.iter().position(|i| i == id).unwrap();
    assert!(at(&berlin) < at(&paris), "current first: {r}");
    assert_eq!(r["chunks"][at(&paris)]["superseded"]["reason"], "same_attribute");
    // A conversation says more than the one fact: search still lists it, marked.
    let s = m.wire::<ops::Search>(json!({"query": "canal"})).unwrap();
    assert_eq!(s["hits"][0]["chunk_id"], paris.as_str(), "{s}");
    assert_eq!(s["hits"][0]["superseded"]["by"], berlin.as_str(), "{s}");
    let before = recall(&m, json!({"query": "where does Ann live Paris Berlin", "as_of": "2024-12-01T00:00:00Z"}));
    assert!(!ids(&before["chunks"]).contains(&berlin), "{before}");
    let p = before["chunks"].as_array().unwrap().iter().find(|c| c["chunk_id"] == paris.as_str()).unwrap();
    assert!(p.get("superseded").is_none(), "current then: {before}");

    // An older export read late: its statement goes in as history, before Paris.
    let older = src.path().join("older.jsonl");
    let line = r#"{"ts": "2023-03-01T10:00:00Z", "from": "Ann", "text": "I live in Madrid.", "channel": "old"}"#;
    std::fs::write(&older, line).unwrap();
    m.ingest_paths(&[older], None, &|_| {}).unwrap();
    let madrid = chunk_of("Madrid");
    let h = m.wire::<ops::History>(json!({"id": madrid})).unwrap();
    assert_eq!(h["versions"][0]["chunk_id"], madrid.as_str(), "{h}");
    assert_eq!(h["versions"][0]["superseded_by"], paris.as_str(), "{h}");
    assert_eq!(h["current"], berlin.as_str(), "{h}");
}

#[test]
fn an_edited_file_section_replaces_its_chunk_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let path = src.path().join("me.md");
    std::fs::write(&path, "# Home\n\nI live in Paris.\n\n# Work\n\nI work at Acme.\n").unwrap();
    m.ingest_paths(std::slice::from_ref(&path), None, &|_| {}).unwrap();
    std::fs::write(&path, "# Home\n\nWe moved to Berlin.\n\n# Work\n\nI work at Acme.\n").unwrap();
    m.ingest_paths(std::slice::from_ref(&path), None, &|_| {}).unwrap();
    // The file is its own history: the old text is gone, the new one current, no chain.
    let r = recall(&m, json!({"query": "where do I live Paris Berlin"}));
    let text = r["chunks"].to_string();
    assert!(text.contains("Berlin") && !text.contains("Paris"), "{r}");
    let berlin = r["chunks"].as_array().unwrap().iter().find(|c| c.to_string().contains("Berlin")).unwrap();
    assert!(berlin.get("superseded").is_none());
    let h = m.wire::<ops::History>(json!({"id": berlin["chunk_id"]})).unwrap();
    assert_eq!(h["versions"].as_array().unwrap().len(), 1, "{h}");
    assert_eq!(h["current"], berlin["chunk_id"]);
    // Nor does a tool write supersede a file's text: the file says what it says until edited.
    let solo = src.path().join("where.md");
    std::fs::write(&solo, "I live in Lyon.\n").unwrap();
    m.ingest_paths(&[solo], None, &|_| {}).unwrap();
    let w = store(&m, json!({"title": "Move", "content": "We moved to Hamburg."}));
    assert!(w.get("supersedes").is_none(), "{w}");
}

/// The labelled pairs of `tests/fixtures/facts/attribute-pairs.tsv` (earlier, later, whether
/// the later one is an update), through the attribute rule as a write applies it.
#[test]
fn the_attribute_rule_on_the_labelled_pairs() {
    let text = include_str!("../../../../tests/fixtures/facts/attribute-pairs.tsv");
    let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let (a, b, label) = (f[0], f[1], f[2] == "yes");
        let old = crate::claims::fact_claims(a).unwrap_or_default();
        let got = facts::updates(&old, &crate::claims::claims(b, None));
        match (label, got) {
            (true, true) => tp += 1,
            (false, true) => {
                fp += 1;
                println!("FALSE UPDATE: {a} / {b}");
            }
            (true, false) => {
                fn_ += 1;
                println!("MISSED: {a} / {b}");
            }
            (false, false) => tn += 1,
        }
    }
    println!("updates caught {tp} of {}, non-updates judged updates {fp} of {}", tp + fn_, fp + tn);
    assert_eq!(fp, 0, "a false supersession hides a true memory");
    assert!(tp >= 23, "updates caught: {tp} of {}", tp + fn_);
}
