//! A full disk, for real (`openhuman_tests::disk`: a small tmpfs as root, else the daemon's
//! file-size limit): a daemon that starts on one answers every read tool with one short sentence
//! saying what is wrong and where to free space; a `memory.store` that meets one is never
//! answered as saved unless it is searchable; a keyword index that cannot commit makes the write
//! say "not searchable yet", and it catches up once space is back.

use openhuman_tests::disk::{Fill, SmallDisk};
use openhuman_tests::{Daemon, Home, Peer, tool_err_text, tool_ok};
use serde_json::{Value, json};

/// Room for a fresh store and a few writes.
const DISK_BYTES: u64 = 16 << 20;

/// The longest message a user should have to read to learn the disk is full.
const SHORT: usize = 300;

fn session(home: &Home) -> Peer {
    let mut p = Peer::socket(&home.socket());
    p.initialize("full-disk-test");
    p
}

fn store(p: &mut Peer, title: &str, content: &str) -> Value {
    p.tool("memory.store", json!({"title": title, "content": content}))
}

fn hits(p: &mut Peer, query: &str) -> usize {
    let r = p.tool("memory.search", json!({"query": query}));
    tool_ok(&r)["hits"].as_array().map_or(0, Vec::len)
}

/// A disk-full message: short, says what is wrong and where to free space, no raw cause.
fn assert_says_disk_full(text: &str, data: &std::path::Path, what: &str) {
    assert!(text.len() < SHORT, "{what}: {} characters: {text}", text.len());
    assert!(text.contains("is full") && text.contains("Free space"), "{what}: {text}");
    assert!(text.contains(&data.display().to_string()), "{what} names the place: {text}");
    assert!(!text.contains("Error code") && !text.contains("os error"), "{what} is raw: {text}");
}

#[test]
fn a_full_disk_at_start_gives_every_read_tool_a_short_message_naming_where_to_free_space() {
    let home = Home::new();
    let data = home.path().join("data");
    let disk = SmallDisk::new(&data, DISK_BYTES);
    let d = Daemon::builder(&home).on_small_disk(&disk).start();
    tool_ok(&store(&mut session(&home), "Quince jam", "Simmer the quinces for two hours"));
    d.stop().unwrap();

    disk.fill_before_start();
    let d = Daemon::builder(&home).on_small_disk(&disk).start();
    let degraded = d.startup_log().last().cloned().unwrap_or_default();
    assert!(degraded.contains("daemon degraded") && degraded.contains("is full"), "{degraded}");
    let mut p = session(&home);
    let reads = [
        ("memory.search", json!({"query": "quince"})),
        ("memory.recall", json!({"query": "quince"})),
        ("memory.fetch", json!({"query": "quince"})),
        ("memory.list", json!({})),
        ("tree.read_chunk", json!({"chunk_id": "0123456789abcdef0123456789abcdef"})),
        ("tree.browse", json!({})),
        ("tree.top_entities", json!({})),
        ("tree.list_sources", json!({})),
    ];
    for (tool, args) in reads {
        assert_says_disk_full(&tool_err_text(&p.tool(tool, args)), &data, tool);
    }
    let status = home.daemon_cmd().arg("status").output().unwrap();
    let said = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{said}");
    assert!(said.contains("NOT READY") && said.contains("is full"), "{said}");

    // Space back and a restart: the store opens and holds what it held.
    disk.free(Some(d.pid()));
    d.stop().unwrap();
    let _d = Daemon::builder(&home).on_small_disk(&disk).start();
    assert_eq!(hits(&mut session(&home), "quince"), 1);
}

#[test]
fn a_write_on_a_full_disk_is_never_answered_as_saved_unless_it_is_searchable() {
    let home = Home::new();
    let data = home.path().join("data");
    let disk = SmallDisk::new(&data, DISK_BYTES);
    let d = Daemon::builder(&home).on_small_disk(&disk).start();
    let mut p = session(&home);
    tool_ok(&store(&mut p, "before", "plumbefore stays"));
    disk.fill(d.pid());

    let (mut saved, mut stranded, mut refused) = (vec!["plumbefore".to_string()], Vec::new(), 0);
    for i in 0..20 {
        let word = format!("plum{i}x");
        let r = store(&mut p, &format!("full {i}"), &format!("{word} written on a full disk"));
        if r["isError"] == false {
            // A success is a promise that search finds it, now.
            assert_eq!(hits(&mut p, &word), 1, "acknowledged but not searchable: {r}");
            saved.push(word);
            continue;
        }
        let text = tool_err_text(&r);
        if text.starts_with("saved, but not searchable yet") {
            stranded.push(word);
        } else {
            assert_says_disk_full(&text, &data, "memory.store");
            refused += 1;
        }
    }
    eprintln!(
        "full disk ({:?}): {} saved, {} not searchable yet, {refused} refused",
        disk.fill_kind(),
        saved.len(),
        stranded.len()
    );
    assert!(refused + stranded.len() > 0, "the disk was full, yet every write succeeded");

    disk.free(Some(d.pid()));
    tool_ok(&store(&mut p, "after", "plumafter once space is back"));
    saved.push("plumafter".into());
    // What was saved, and what was saved but not yet indexed, is found once space is back.
    for word in saved.iter().chain(&stranded) {
        assert_eq!(hits(&mut p, word), 1, "{word}");
    }
}

#[test]
fn a_keyword_index_that_cannot_commit_makes_the_write_say_so_and_catches_up_later() {
    let home = Home::new();
    let d = Daemon::start(&home);
    tool_ok(&store(&mut session(&home), "seed", "the index directory exists now"));
    d.stop().unwrap();
    // Only the keyword index's directory gets the small disk: SQLite still has room.
    let disk = SmallDisk::new(&home.path().join("data/fts"), DISK_BYTES);
    if disk.fill_kind() != Fill::Tmpfs {
        // The file-size limit is per process, so it cannot spare SQLite: this case needs a mount.
        assert!(std::env::var_os("CI").is_none(), "CI runs as root and must mount the tmpfs this test needs");
        eprintln!("skipped: this case needs a tmpfs of its own, and none could be mounted");
        return;
    }
    let d = Daemon::start(&home);
    let mut p = session(&home);
    disk.fill(d.pid());
    let text = tool_err_text(&store(&mut p, "stranded", "medlarstranded waits for the index"));
    assert!(text.starts_with("saved, but not searchable yet") && text.contains("free space"), "{text}");
    assert_eq!(hits(&mut p, "medlarstranded"), 0, "the message said not searchable");

    disk.free(None);
    tool_ok(&store(&mut p, "rescue", "medlarrescue after space is back"));
    assert_eq!(hits(&mut p, "medlarrescue"), 1);
    assert_eq!(hits(&mut p, "medlarstranded"), 1, "the stranded write caught up");
}
