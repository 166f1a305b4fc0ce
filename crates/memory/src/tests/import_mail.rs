//! The mail and document importers on their fixtures: Maildir (a 7-message chain linked only
//! by In-Reply-To, in an order unlike the chain's), a Mailman/pipermail archive, HTML, PDF,
//! Latin-1 text, and the naming of unsupported files.

use super::Wire;
use crate::ops;
use std::fs;

use serde_json::json;

use super::import::{chunks_of, fixture, found_on_day, ingest, skip, skips};
use super::open;

#[test]
fn maildir_chain_linked_by_in_reply_to_is_one_thread() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("maildir"));
    assert_eq!((s.files_seen, s.files_ingested, s.chunks_added), (9, 8, 8), "{s:?}");
    assert_eq!(skips(&s), [skip("file", "Maildir tmp/ file (a message still being delivered)", 1)]);
    let r = m.wire::<ops::ListSources>(json!({})).unwrap();
    let mut threads: Vec<(String, i64)> = r["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["source_id"].as_str().unwrap().to_string(), s["chunk_count"].as_i64().unwrap()))
        .collect();
    threads.sort();
    assert_eq!(
        threads,
        [("thread:drill-2023-12@corp.example".to_string(), 1), ("thread:q1.report@corp.example".to_string(), 7)]
    );
    let chain = chunks_of(&m, "thread:q1.report@corp.example");
    let owners: Vec<&str> = chain.iter().map(|c| c["owner"].as_str().unwrap()).collect();
    assert_eq!(owners, ["priya@corp.example", "owen@corp.example"].repeat(4)[..7]);
    assert_eq!(chain[0]["timestamp_ms"], 1_701_676_800_000i64, "Mon, 4 Dec 2023 09:00:00 +0100");
    assert_eq!(chain[2]["timestamp_ms"], 1_701_685_800_000i64, "a zone comment is read past");
    assert!(chain[6]["content"].as_str().unwrap().contains("Sent to finance this morning."));
    assert!(found_on_day(&m, "freight Rotterdam shipment", "2023-12-04", "thread:q1.report@corp.example"));
}

#[test]
fn mailman_archives_keep_senders_and_their_own_dates() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    // The archive's mtime is now; none of its messages may take it.
    let s = ingest(&m, &fixture("mailman"));
    assert_eq!((s.files_ingested, s.chunks_added), (1, 3), "{s:?}");
    assert!(s.skipped.is_empty(), "{s:?}");
    let thread = chunks_of(&m, "thread:Pine.LNX.4.33.0111011115.A-100000@localhost");
    assert_eq!(thread.len(), 3, "one thread: {thread:#?}");
    let stamps: Vec<i64> = thread.iter().map(|c| c["timestamp_ms"].as_i64().unwrap()).collect();
    assert_eq!(stamps, [1_004_613_552_000, 1_004_623_360_000, 1_004_688_005_000]);
    let first = thread[0]["content"].as_str().unwrap();
    assert!(
        first.starts_with(
            "Subject: [Garden-dev] compost thermometer readings\nFrom: John J. Lee <jjl@pobox.com>\nDate: 2001-11-01T11:19:12.000Z\n\n"
        ),
        "{first}"
    );
    assert!(first.contains("From what I read, turning it now"), "a body line starting with From stays: {first}");
    assert_eq!(thread[0]["owner"], "jjl@pobox.com");
    assert_eq!(thread[1]["owner"], "mara@example.org");
    let sources = m.wire::<ops::ListSources>(json!({})).unwrap();
    assert_eq!(sources["sources"][0]["display_name"], "compost thermometer readings — John J. Lee");
    assert!(found_on_day(
        &m,
        "compost heap temperature",
        "2001-11-01",
        "thread:Pine.LNX.4.33.0111011115.A-100000@localhost"
    ));
}

#[test]
fn gzipped_archives_and_logs_read_as_what_they_hold() {
    use std::io::Write;
    let gz = |from: &std::path::Path, to: &std::path::Path| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&std::fs::read(from).unwrap()).unwrap();
        std::fs::write(to, e.finish().unwrap()).unwrap();
    };
    let src = tempfile::tempdir().unwrap();
    // Mailman's "Gzip'd Text" download, and a rotated IRC log.
    gz(&fixture("mailman").join("2001-November.txt"), &src.path().join("2001-November.txt.gz"));
    gz(&fixture("irc").join("#garden.log"), &src.path().join("#garden.log.1.gz"));
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, src.path());
    assert_eq!((s.files_ingested, s.files_unsupported), (2, 0), "{s:?}");
    let thread = chunks_of(&m, "thread:Pine.LNX.4.33.0111011115.A-100000@localhost");
    assert_eq!(thread.len(), 3, "the archive's one thread: {thread:#?}");
    assert_eq!(thread[1]["owner"], "mara@example.org");
    assert!(found_on_day(&m, "frost warning fleece", "2024-03-02", "irc:garden"));
    let again = ingest(&m, src.path());
    assert_eq!((again.files_unchanged, again.files_ingested), (2, 0), "{again:?}");
}

#[test]
fn a_message_without_any_date_is_reported_and_gets_no_date_line() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    fs::write(
        src.path().join("undated.eml"),
        "From: a@example.com\nSubject: no date here\nMessage-ID: <u@x>\n\nHello.\n",
    )
    .unwrap();
    let m = open(data.path());
    let s = ingest(&m, src.path());
    assert_eq!(skips(&s), [skip("message", "no date in the message (the file's time is used)", 1)]);
    let c = chunks_of(&m, "thread:u@x");
    assert_eq!(c[0]["content"], "Subject: no date here\nFrom: a@example.com\n\nHello.");
}

#[test]
fn html_pdf_and_latin1_documents() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    for dir in ["html", "pdf", "text"] {
        let s = ingest(&m, &fixture(dir));
        assert_eq!((s.files_ingested, s.files_failed.len()), (1, 0), "{dir}: {s:?}");
    }
    let hit = &m.wire::<ops::Search>(json!({"query": "avocets"})).unwrap()["hits"][0];
    assert_eq!(hit["title"], "Field notes – Marsh walk");
    let page = m.wire::<ops::ReadChunk>(json!({"chunk_id": hit["chunk_id"]})).unwrap();
    let text = page["content"].as_str().unwrap();
    assert!(text.contains("# Marsh walk\n\nWe counted fourteen avocets on the east scrape & two spoonbills roosting."));
    assert!(text.contains("- Wind: north-east, light\n- Tide: high at 10:40"), "{text}");
    assert!(!text.contains("trackingToken") && !text.contains("font-family") && !text.contains("draft"), "{text}");
    assert_eq!(m.wire::<ops::Search>(json!({"query": "do-not-index-this-script"})).unwrap()["hits"], json!([]));

    let hits = m.wire::<ops::Search>(json!({"query": "paraffin wicks"})).unwrap();
    let pdf = m.wire::<ops::ReadChunk>(json!({"chunk_id": hits["hits"][0]["chunk_id"]})).unwrap();
    assert!(pdf["content"].as_str().unwrap().contains("spare lens cloth"), "{pdf}");
    assert_eq!(pdf["metadata"]["page"], 2);
    assert!(
        m.wire::<ops::Search>(json!({"query": "fog horn"})).unwrap()["hits"][0]["source_ref"]
            .as_str()
            .unwrap()
            .ends_with(".pdf")
    );

    let hit = &m.wire::<ops::Search>(json!({"query": "cannelle"})).unwrap()["hits"][0];
    let tarte = m.wire::<ops::ReadChunk>(json!({"chunk_id": hit["chunk_id"]})).unwrap();
    assert!(tarte["content"].as_str().unwrap().contains("Préchauffer le four à 180 degrés. Éplucher"), "{tarte}");
}

#[test]
fn unsupported_files_are_named_and_bad_files_do_not_stop_the_rest() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    for i in 0..25 {
        fs::write(src.path().join(format!("img{i:02}.png")), b"\x89PNG\r\n\x1a\n\0\0").unwrap();
    }
    fs::write(src.path().join("broken.pdf"), b"%PDF-1.4\nnot really").unwrap();
    fs::write(src.path().join("array.json"), b"[{\"ts\": 1, \"text\": \"cut").unwrap();
    fs::write(src.path().join("fine.md"), "# Fine\n\nStill ingested.").unwrap();
    fs::write(src.path().join("empty.md"), "\n  \n").unwrap();
    let m = open(data.path());
    let s = ingest(&m, src.path());
    assert_eq!((s.files_unsupported, s.unsupported.len(), s.files_ingested), (25, 20, 1), "{s:?}");
    assert_eq!(skips(&s), [skip("file", "nothing to ingest in it (no text or messages)", 1)], "the empty file");
    assert!(s.unsupported[0].ends_with("img00.png"), "{s:?}");
    let failed: Vec<String> =
        s.files_failed.iter().map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(failed, ["array.json", "broken.pdf"], "{s:?}");
    assert!(s.files_failed[0].error.contains("invalid JSON array"), "{s:?}");
}

#[test]
fn maildir_plus_plus_folders_are_walked_though_hidden_and_other_skips_are_named() {
    let data = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    for sub in ["Mail/cur", "Mail/new", "Mail/tmp", "Mail/.Sent/cur", "Mail/.Sent/new", "Mail/.git"] {
        fs::create_dir_all(src.path().join(sub)).unwrap();
    }
    let sent = "From: Me <me@example.com>\nTo: Ann <ann@example.com>\nSubject: Seed swap\nDate: Sat, 2 Mar 2024 10:00:00 +0000\nMessage-ID: <swap@example.com>\n\nBringing the bean seeds on Sunday.\n";
    fs::write(src.path().join("Mail/.Sent/cur/1709373600.M1P1.host,S=180"), sent).unwrap();
    fs::write(src.path().join("Mail/.git/config"), "[core]\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(src.path().join("Mail"), src.path().join("loop")).unwrap();
    let m = open(data.path());
    let s = ingest(&m, src.path());
    assert_eq!((s.files_seen, s.files_ingested, s.files_unsupported), (1, 1, 0), "{s:?}");
    let mut want = vec![skip("file", "hidden (its name starts with a dot; not looked into)", 1)];
    if cfg!(unix) {
        want.push(skip("file", "symlinked folder (not followed: it could loop)", 1));
    }
    assert_eq!(skips(&s), want);
    assert_eq!(chunks_of(&m, "thread:swap@example.com")[0]["timestamp_ms"], 1_709_373_600_000i64);
}
