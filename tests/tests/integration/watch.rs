//! Watched folders with the real daemon: a file added, edited (a user tag follows its passage),
//! renamed (moved, not read again), deleted; changes made while the daemon was down caught up
//! at start; Obsidian tags and wiki links; `readonly`; `sources add|remove|list` editing the
//! config of a running daemon; and subscribers told of changes. Every wait polls with a
//! deadline; nothing asserts on time.

use std::path::Path;
use std::time::{Duration, Instant};

use openhuman_tests::{Daemon, Home, Peer};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

/// Calls `f` until it returns Some, or panics with `what` at the deadline.
fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn config_watching(dir: &Path, extra: &str) -> String {
    format!("{extra}\n[[memory.sources]]\npath = {:?}\n", dir.to_string_lossy())
}

fn hits(peer: &mut Peer, query: &str) -> Vec<Value> {
    let r = peer.tool("memory.search", json!({"query": query}));
    r["structuredContent"]["hits"].as_array().cloned().unwrap_or_default()
}

/// The first hit's source id once `query` finds something (waiting for it).
fn found_in(peer: &mut Peer, query: &str) -> Value {
    poll(&format!("`{query}` to be searchable"), || hits(peer, query).into_iter().next())
}

fn gone(peer: &mut Peer, query: &str) {
    poll(&format!("`{query}` to leave memory"), || hits(peer, query).is_empty().then_some(()));
}

fn status(home: &Home) -> Value {
    let out = home.daemon_cmd().args(["status", "--json"]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("status: {}", String::from_utf8_lossy(&out.stdout)))
}

fn source_id(path: &Path) -> String {
    format!("file:{}", path.display())
}

#[test]
fn a_watched_folder_follows_adds_edits_renames_and_deletes() {
    let home = Home::new();
    let notes = tempfile::tempdir().unwrap();
    let dir = notes.path().canonicalize().unwrap();
    home.write_config(&config_watching(&dir, ""));
    let _d = Daemon::start(&home);
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Watch Test");
    // A subscriber hears that the overview changed.
    peer.call("resources/subscribe", json!({"uri": "openhuman://memory"}));

    let a = dir.join("zoo.md");
    std::fs::write(&a, "# Zoo\n\nQuokkas smile at the keepers every morning near the pond.\n").unwrap();
    let hit = found_in(&mut peer, "quokkas");
    assert_eq!(hit["source_id"], source_id(&a), "{hit}");
    let chunk = hit["chunk_id"].as_str().unwrap().to_string();
    peer.tool("tree.tag", json!({"chunk_id": chunk, "tags": ["marsupials"]}));

    // An edit: the old word leaves, the new one is found, the user's tag follows the passage.
    std::fs::write(&a, "# Zoo\n\nQuokkas smile at the keepers every morning near the lake.\n").unwrap();
    let hit = found_in(&mut peer, "lake");
    gone(&mut peer, "pond");
    let edited = peer.tool("tree.read_chunk", json!({"chunk_id": hit["chunk_id"]}));
    assert!(edited["structuredContent"]["tags"].as_array().unwrap().contains(&json!("marsupials")), "{edited}");
    let before = poll("the edit's sync to be counted", || {
        let s = status(&home)["watch"]["sources"][0].clone();
        (s["ingested"].as_u64() >= Some(2) && s["pending"] == 0).then_some(s)
    });

    // A rename: found under the new path, tag kept, nothing read again.
    let b = dir.join("sub").join("animals.md");
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    std::fs::rename(&a, &b).unwrap();
    let hit =
        poll("the renamed file", || hits(&mut peer, "lake").into_iter().find(|h| h["source_id"] == source_id(&b)));
    let moved = peer.tool("tree.read_chunk", json!({"chunk_id": hit["chunk_id"]}));
    assert!(moved["structuredContent"]["tags"].as_array().unwrap().contains(&json!("marsupials")), "{moved}");
    let after = poll("the move to be counted", || {
        let s = status(&home)["watch"]["sources"][0].clone();
        (s["moved"] == 1).then_some(s)
    });
    assert_eq!(after["ingested"], before["ingested"], "a rename is not a re-read: {before} → {after}");
    assert_eq!(after["files"], 1);

    // A delete.
    std::fs::remove_file(&b).unwrap();
    gone(&mut peer, "lake");
    poll("the file count to drop", || (status(&home)["watch"]["sources"][0]["files"] == 0).then_some(()));

    let _ = peer.call("ping", json!({}));
    assert!(
        peer.notifications
            .iter()
            .any(|n| n["method"] == "notifications/resources/updated" && n["params"]["uri"] == "openhuman://memory"),
        "the subscriber heard of the changes: {:?}",
        peer.notifications
    );
    // Each sync is audited.
    let audit = home.daemon_cmd().args(["audit", "--tool", "watch.sync", "--json"]).output().unwrap();
    let rows = String::from_utf8_lossy(&audit.stdout).lines().count();
    assert!(rows >= 3, "audit rows for the syncs: {}", String::from_utf8_lossy(&audit.stdout));
}

#[test]
fn changes_made_while_the_daemon_was_down_are_caught_up() {
    let home = Home::new();
    let notes = tempfile::tempdir().unwrap();
    let dir = notes.path().canonicalize().unwrap();
    std::fs::write(dir.join("keep.md"), "Herons wade in the shallows.\n").unwrap();
    std::fs::write(dir.join("drop.md"), "Kingfishers dive from branches.\n").unwrap();
    home.write_config(&config_watching(&dir, ""));
    let d = Daemon::start(&home);
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Catch Up");
    found_in(&mut peer, "herons");
    found_in(&mut peer, "kingfishers");
    drop(peer);
    d.stop().unwrap();

    std::fs::write(dir.join("keep.md"), "Egrets wade in the shallows.\n").unwrap();
    std::fs::remove_file(dir.join("drop.md")).unwrap();
    std::fs::write(dir.join("new.md"), "Cormorants dry their wings.\n").unwrap();

    let _d = Daemon::start(&home);
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Catch Up");
    found_in(&mut peer, "egrets");
    found_in(&mut peer, "cormorants");
    gone(&mut peer, "herons");
    gone(&mut peer, "kingfishers");
}

#[test]
fn an_obsidian_vault_gives_tags_and_links() {
    let home = Home::new();
    let vault = tempfile::tempdir().unwrap();
    let dir = vault.path().canonicalize().unwrap();
    std::fs::create_dir_all(dir.join(".obsidian")).unwrap();
    std::fs::write(dir.join(".obsidian/workspace.json"), "{}").unwrap();
    std::fs::write(dir.join("Garden.md"), "---\ntags: [home, outdoors]\n---\n# Garden\n\nPlant garlic in October.\n")
        .unwrap();
    std::fs::write(dir.join("Log.md"), "# Log\n\nWeeded the beds, see [[Garden#Beds|the garden]]. #chores\n").unwrap();
    home.write_config(&config_watching(&dir, ""));
    let _d = Daemon::start(&home);
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Vault");
    let garden = found_in(&mut peer, "garlic");
    let log = found_in(&mut peer, "weeded");
    let g = peer.tool("tree.read_chunk", json!({"chunk_id": garden["chunk_id"]}))["structuredContent"].clone();
    assert_eq!(g["tags"], json!(["home", "outdoors"]), "{g}");
    assert_eq!(g["backlinks"][0]["source_id"], source_id(&dir.join("Log.md")), "{g}");
    let l = peer.tool("tree.read_chunk", json!({"chunk_id": log["chunk_id"]}))["structuredContent"].clone();
    assert_eq!(l["tags"], json!(["chores"]), "{l}");
    assert_eq!(l["links"][0]["target"], "Garden", "{l}");
    assert_eq!(l["links"][0]["heading"], "Beds");
    assert_eq!(l["links"][0]["alias"], "the garden");
    assert_eq!(l["links"][0]["source_id"], source_id(&dir.join("Garden.md")));
    // The source is a resource too.
    let uri = poll("the source resource", || {
        let list = peer.call("resources/templates/list", json!({}));
        list["resourceTemplates"][0]["uriTemplate"].as_str().map(str::to_string)
    });
    assert_eq!(uri, "openhuman://source/{id}");
    let overview = peer.call("resources/read", json!({"uri": "openhuman://memory"}));
    let text = overview["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("Garden") && text.contains("openhuman://source/"), "{text}");
    let link = text.split("](").nth(1).and_then(|t| t.split(')').next()).unwrap().to_string();
    let one = peer.call("resources/read", json!({"uri": link}));
    assert!(one["contents"][0]["text"].as_str().unwrap().contains("# "), "{one}");
}

#[test]
fn readonly_watches_but_writes_nothing_and_sources_edit_a_live_config() {
    let home = Home::new();
    let notes = tempfile::tempdir().unwrap();
    let dir = notes.path().canonicalize().unwrap();
    std::fs::write(dir.join("owl.md"), "Owls hunt at dusk.\n").unwrap();
    home.write_config("# my settings\n[autonomy]\nlevel = \"readonly\" # keep it safe\n");
    let out = home.daemon_cmd().args(["sources", "add"]).arg(&dir).args(["--exclude", "drafts/**"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(text.contains("# my settings") && text.contains("# keep it safe"), "comments kept: {text}");
    assert!(text.contains("[[memory.sources]]") && text.contains("drafts/**"), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.path().join("config.toml")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let again = home.daemon_cmd().args(["sources", "add"]).arg(&dir).output().unwrap();
    assert!(!again.status.success(), "a folder is watched once");

    let _d = Daemon::start(&home);
    let s = poll("the readonly source status", || {
        let s = status(&home);
        (s["watch"]["sources"][0]["state"] == "readonly").then_some(s)
    });
    assert_eq!(s["watch"]["readonly"], true, "{s}");
    let human = home.daemon_cmd().arg("status").output().unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("readonly"), "{}", String::from_utf8_lossy(&human.stdout));
    let mut peer = Peer::socket(&home.socket());
    peer.initialize("Readonly");
    assert!(hits(&mut peer, "owls").is_empty(), "nothing is written in readonly");

    // Removing the source through the CLI reaches the running daemon.
    let out = home.daemon_cmd().args(["sources", "remove"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("reloaded"), "{}", String::from_utf8_lossy(&out.stdout));
    poll("the source to go", || status(&home)["watch"]["sources"].as_array().is_some_and(Vec::is_empty).then_some(()));
    let list = home.daemon_cmd().args(["sources", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("no watched sources"));
}
