//! Mail as people read it, end to end through ingest: a Latin-1 mailbox of one message is
//! found, a file that gave nothing is tried again on the next ingest, a sentence quoted by
//! every reply of a thread is stored once, threads and hits are named "Subject — Sender", and
//! people and topics leave out machine senders and generic words, with chat handles linked to
//! their person.

use super::Wire;
use crate::ops;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::import::ingest;
use super::open;

/// One message as a Latin-1 mail program writes it (8-bit headers and body, no MIME headers),
/// with the Message-ID `<id>`.
fn latin1(id: &str) -> Vec<u8> {
    let mut out = b"From: Ren\xe9 Fran\xe7ois <rene@example.fr>\nTo: Zo\xe9 <zoe@example.org>\n\
Subject: R\xe9union de classe\nDate: Tue, 5 Mar 2024 09:30:00 +0100\nMessage-ID: <"
        .to_vec();
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b">\n\nNous nous retrouvons \xe0 la caf\xe9t\xe9ria du lyc\xe9e samedi.\n");
    out
}

fn search(m: &crate::MemoryEngine, query: &str) -> Vec<Value> {
    m.wire::<ops::Search>(json!({"query": query, "k": 20})).unwrap()["hits"].as_array().unwrap().clone()
}

#[test]
fn a_latin1_mailbox_of_one_message_is_found_and_named_by_subject_and_sender() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let mut mbox = b"From rene@example.fr Tue Mar  5 09:30:00 2024\n".to_vec();
    mbox.extend_from_slice(&latin1("r1@example.fr"));
    fs::write(src.path().join("latin1.mbox"), &mbox).unwrap();
    // A message like it, an hour later, saved without the `From ` line (the same message
    // again would be a copy, stored once).
    let mut later = latin1("r2@example.fr");
    let at = later.windows(8).position(|w| w == b"09:30:00").unwrap();
    later[at..at + 2].copy_from_slice(b"10");
    fs::write(src.path().join("bare.mbox"), later).unwrap();
    let m = open(data.path());
    let s = ingest(&m, src.path());
    assert_eq!((s.files_ingested, s.skipped.len()), (2, 0), "{s:?}");
    let hits = search(&m, "cafétéria");
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[0]["title"], "Réunion de classe — René François");
    let sources = m.wire::<ops::ListSources>(json!({})).unwrap();
    let names: Vec<&str> =
        sources["sources"].as_array().unwrap().iter().map(|s| s["display_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Réunion de classe — René François", "Réunion de classe — René François"]);
    let again = ingest(&m, src.path());
    assert_eq!((again.files_unchanged, again.files_ingested), (2, 0), "{again:?}");
}

#[test]
fn a_file_that_gave_nothing_is_tried_again() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let empty = src.path().join("later.md");
    fs::write(&empty, "\n\n").unwrap();
    fs::write(src.path().join("junk.eml"), "no headers here, only words\n").unwrap();
    let m = open(data.path());
    for round in 0..2 {
        let s = ingest(&m, src.path());
        assert_eq!((s.files_ingested, s.files_unchanged, s.files_failed.len()), (0, 0, 1), "round {round}: {s:?}");
        assert_eq!(s.skipped.len(), 1, "round {round}: {s:?}");
    }
    assert_eq!(m.file_count(src.path()).unwrap(), 0, "nothing recorded");
    fs::write(&empty, "# Later\n\nThe notes arrived after all.").unwrap();
    let s = ingest(&m, src.path());
    assert_eq!(s.files_ingested, 1, "{s:?}");
    assert_eq!(search(&m, "notes arrived").len(), 1);
}

/// An Outlook-style thread: each reply on top, the whole earlier thread below it.
fn outlook_thread(replies: usize, with_original: bool) -> String {
    let sentence = "The timer T3412 is restarted when the UE reselects a cell in another tracking area.";
    let mut out = String::new();
    let mut below = format!(
        "From: Ann Lee <ann@example.org>\nSent: Monday, 1 January 2024 09:00\nTo: ran2\nSubject: CR 1234\n\n{sentence}\n"
    );
    if with_original {
        out.push_str(&format!(
            "From ann@example.org Mon Jan  1 09:00:00 2024\nFrom: Ann Lee <ann@example.org>\nSubject: CR 1234\n\
             Date: Mon, 1 Jan 2024 09:00:00 +0000\nMessage-ID: <m0@example.org>\n\n{sentence}\n\n"
        ));
    }
    for i in 1..=replies {
        let own = format!("Reply {i}: we looked at the proposal again, point {i} holds.");
        out.push_str(&format!(
            "From p{i}@example.org Mon Jan  1 1{i}:00:00 2024\nFrom: Person {i} <p{i}@example.org>\nSubject: RE: CR 1234\n\
             Date: Mon, 1 Jan 2024 1{i}:00:00 +0000\nMessage-ID: <m{i}@example.org>\nIn-Reply-To: <m{}@example.org>\n\n\
             {own}\n\n-----Original Message-----\n{below}\n",
            i - 1
        ));
        below = format!(
            "From: Person {i} <p{i}@example.org>\nSent: Monday, 1 January 2024 1{i}:00\nTo: ran2\nSubject: RE: CR 1234\n\n{own}\n\n-----Original Message-----\n{below}"
        );
    }
    out
}

#[test]
fn a_sentence_quoted_by_every_reply_is_stored_once() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    fs::write(src.path().join("thread.mbox"), outlook_thread(8, true)).unwrap();
    let m = open(data.path());
    let s = ingest(&m, src.path());
    assert_eq!(s.chunks_added, 9, "{s:?}");
    let hits = search(&m, "timer T3412 restarted reselects tracking area");
    let holding: Vec<&Value> = hits.iter().filter(|h| h["snippet"].as_str().unwrap().contains("T3412")).collect();
    assert_eq!(holding.len(), 1, "{hits:?}");
    assert_eq!(holding[0]["title"], "CR 1234 — Ann Lee");
    let reply = search(&m, "Reply 5 proposal");
    let reply = m.wire::<ops::ReadChunk>(json!({"chunk_id": reply[0]["chunk_id"]})).unwrap();
    assert_eq!(reply["title"], "RE: CR 1234 — Person 5");
    assert_eq!(reply["metadata"]["in_reply_to"], "m4@example.org", "{reply}");
    assert!(!reply["content"].as_str().unwrap().contains("Original Message"), "{reply}");
    let sources = m.wire::<ops::ListSources>(json!({})).unwrap();
    assert_eq!(sources["sources"].as_array().unwrap().len(), 1, "one thread: {sources}");
    assert_eq!(sources["sources"][0]["display_name"], "CR 1234 — Ann Lee");

    // Without the original in memory, its text is kept once: with the first reply that quotes it.
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let thread = outlook_thread(8, false);
    // Replies 2–8 quote the first reply too; the first one's parent (m0) is nowhere.
    fs::write(src.path().join("thread.mbox"), thread).unwrap();
    let m = open(data.path());
    ingest(&m, src.path());
    let hits = search(&m, "timer T3412 restarted reselects tracking area");
    let holding = hits.iter().filter(|h| h["snippet"].as_str().unwrap().contains("T3412")).count();
    assert!((1..=3).contains(&holding), "{hits:?}");
}

/// An Enron-style message file: one message, its Message-ID `<id>`, the name in `X-From`.
fn filed(id: &str) -> String {
    format!(
        "Message-ID: <{id}.JavaMail.evans@thyme>\nDate: Mon, 14 May 2001 16:39:00 -0700 (PDT)\n\
         From: phillip.allen@enron.com\nTo: tim.belden@enron.com\nSubject: West desk forecast\n\
         X-From: Phillip K Allen\n\nHere is our forecast for the west desk gas positions next quarter.\n"
    )
}

#[test]
fn a_message_filed_in_three_folders_under_three_ids_is_one_hit() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    for (folder, file, id) in
        [("inbox", "1.", "100"), ("all_documents", "7.", "101"), ("discussion_threads", "3.", "102")]
    {
        fs::create_dir_all(src.path().join(folder)).unwrap();
        fs::write(src.path().join(folder).join(file), filed(id)).unwrap();
    }
    // Another message of the same sender at the same time, with other text: not a copy.
    fs::write(src.path().join("inbox/2."), filed("103").replace("gas positions", "power positions")).unwrap();
    let m = open(data.path());
    let s = ingest(&m, src.path());
    let copies = s.skipped.iter().find(|k| k.reason.starts_with("a copy of a message")).map(|k| k.count);
    assert_eq!(copies, Some(2), "{:?}", s.skipped);
    let hits = search(&m, "west desk gas positions forecast");
    let titles: Vec<&str> = hits.iter().map(|h| h["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles, ["West desk forecast — Phillip K Allen"; 2],
        "one hit for the copies, one for the other message"
    );
    // The file whose copy was stored goes: the message comes back from a copy on the next run.
    fs::remove_file(src.path().join("all_documents/7.")).unwrap();
    fs::remove_file(src.path().join("inbox/1.")).unwrap();
    ingest(&m, src.path());
    let r = m.wire::<ops::Recall>(json!({"query": "forecast gas positions", "min_relevance": 0})).unwrap();
    let refs: Vec<&str> = r["chunks"].as_array().unwrap().iter().map(|c| c["source_ref"].as_str().unwrap()).collect();
    assert_eq!(refs.len(), 2, "{r}");
    assert!(refs.contains(&"102.JavaMail.evans@thyme"), "stored from the copy that is left: {refs:?}");
}

fn top(m: &crate::MemoryEngine, kind: &str) -> Vec<String> {
    let r = m.wire::<ops::TopEntities>(json!({"kind": kind, "k": 50})).unwrap();
    r["entities"].as_array().unwrap().iter().map(|e| e["entity_id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn machine_senders_generic_words_and_chat_handles() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let mail = "From a@x Mon Jan  1 10:00:00 2024\nFrom: Shop News <news@shop.example>\nPrecedence: bulk\n\
        Subject: Deals\nMessage-ID: <n1@shop.example>\nDate: Mon, 1 Jan 2024 10:00:00 +0000\n\nBig deals this week.\n\n\
        From b@x Mon Jan  1 11:00:00 2024\nFrom: Out Of Office <ann@example.org>\nAuto-Submitted: auto-replied\n\
        Subject: Away\nMessage-ID: <n2@example.org>\nDate: Mon, 1 Jan 2024 11:00:00 +0000\n\nI am away.\n\n\
        From c@x Mon Jan  1 12:00:00 2024\nFrom: Grace Hopper <grace@example.org>\nSubject: Compilers\n\
        Message-ID: <n3@example.org>\nDate: Mon, 1 Jan 2024 12:00:00 +0000\n\n\
        I think the compiler needs time. I think the compiler work takes time, and I want things listed.\n\
        Another compiler pass, more time, more things.\n";
    fs::write(src.path().join("mail.mbox"), mail).unwrap();
    let export = src.path().join("export");
    fs::create_dir_all(export.join("general")).unwrap();
    fs::write(export.join("channels.json"), r#"[{"id": "C1", "name": "general"}]"#).unwrap();
    fs::write(
        export.join("users.json"),
        r#"[{"id": "U1", "name": "adal", "real_name": "Ada Lovelace"}, {"id": "U2", "name": "cb", "real_name": "Charles Babbage"}]"#,
    )
    .unwrap();
    fs::write(
        export.join("general/2024-01-02.json"),
        r#"[{"type": "message", "user": "U1", "ts": "1704189600.000100", "text": "the engine drawings are ready"},
            {"type": "message", "user": "U2", "ts": "1704189660.000200", "text": "thanks @adal, the engine looks right"}]"#,
    )
    .unwrap();
    let m = open(data.path());
    ingest(&m, src.path());
    m.wait_background();
    let people = top(&m, "person");
    assert!(people.contains(&"person:grace-hopper".to_string()), "{people:?}");
    assert!(!people.iter().any(|p| p.contains("shop") || p.contains("office")), "{people:?}");
    let bots = top(&m, "bot");
    assert!(bots.contains(&"bot:shop-news".to_string()) && bots.contains(&"bot:out-of-office".to_string()), "{bots:?}");
    let topics = top(&m, "topic");
    assert!(topics.contains(&"topic:compiler".to_string()), "{topics:?}");
    for generic in ["topic:time", "topic:think", "topic:thing", "topic:want"] {
        assert!(!topics.contains(&generic.to_string()), "{generic} in {topics:?}");
    }
    // `@adal` in Charles's message counts as Ada, whom the export names with that handle.
    let handles = top(&m, "handle");
    assert!(handles.is_empty(), "{handles:?}");
    let ada = m.wire::<ops::TopEntities>(json!({"kind": "person", "k": 50})).unwrap();
    let ada =
        ada["entities"].as_array().unwrap().iter().find(|e| e["entity_id"] == "person:ada-lovelace").cloned().unwrap();
    assert_eq!(ada["mention_count"], 2, "{ada}");
    let merged: Vec<&str> =
        ada["merged"].as_array().unwrap().iter().map(|x| x["entity_id"].as_str().unwrap()).collect();
    assert_eq!(merged, ["handle:@adal"]);
}

#[test]
fn a_watch_sync_leaves_what_failed_or_gave_nothing_to_the_next_walk() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let (empty, mail) = (src.path().join("empty.txt"), src.path().join("note.eml"));
    fs::write(&empty, "   \n").unwrap();
    fs::write(&mail, "From: Ann <ann@x.org>\nSubject: Seeds\nMessage-ID: <s1@x.org>\n\nThe seeds came.\n").unwrap();
    let m = open(data.path());
    let s = m.sync_files(&[empty.clone(), mail.clone()], None).unwrap();
    assert_eq!(s.ingest.files_ingested, 1, "{s:?}");
    let states = m.file_states(src.path()).unwrap();
    let paths: Vec<&Path> = states.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(paths, [mail.as_path()], "the empty file is not recorded, so a catch-up walk offers it again");
    // The message turns unreadable: the failure is reported and the file keeps the size and
    // time it had when it last read, so the next walk tries it again.
    let before = (states[0].size, states[0].mtime_ms);
    fs::write(&mail, "\x00\x01binary now\x02").unwrap();
    let s = m.sync_files(std::slice::from_ref(&mail), None).unwrap();
    assert_eq!(s.ingest.files_failed.len(), 1, "{s:?}");
    let after = m.file_states(src.path()).unwrap();
    assert_eq!((after[0].size, after[0].mtime_ms), before);
    assert_eq!(search(&m, "seeds came").len(), 1, "its last good text stays until it reads again");
}
