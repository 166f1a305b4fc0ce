//! Who sees what in a shared store, enforced by PostgreSQL's row-level security: persons are
//! real roles (alice, bob, carol; bob is in the group role `ops`), the tables belong to the
//! cluster's owner, who ran `migrate`, and each daemon connects as its person. Alice's private
//! memories reach neither Bob's daemon nor `psql` as bob (no table, no change-log entry); team
//! memories reach everyone; a group's reach its members; a machine's stay on that machine; a
//! watched source's configured visibility applies; audit rows name their person; and private and
//! team writes of two people interleaved never take one row id twice, both copies holding exactly
//! the rows their person may read.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};

use openhuman_tests::postgres::PgServer;
use openhuman_tests::{Peer, tool_ok};
use serde_json::{Value, json};

use super::{Machine, UNLIMITED, hits, wait_hits};

/// The tables holding a chunk's text or what is derived from it, and the change log.
const CONTENT_TABLES: &[&str] = &[
    "chunks",
    "chunk_tags",
    "chunk_meta",
    "chunk_entities",
    "chunk_senders",
    "notes",
    "learnings",
    "kv",
    "supersessions",
    "links",
    "sources",
    "mcp_audit",
    "oh_changes",
];

/// A cluster with database `db` whose tables its owner set up (`migrate`), and the persons'
/// roles with the privileges the documentation gives them. Returns the server.
fn team_database(db: &str) -> Option<PgServer> {
    let pg = PgServer::start()?;
    let owner_url = pg.create_db(db);
    pg.psql(
        db,
        "CREATE ROLE memory_team NOLOGIN; CREATE ROLE ops NOLOGIN;
         CREATE ROLE alice LOGIN IN ROLE memory_team; CREATE ROLE bob LOGIN IN ROLE memory_team, ops;
         CREATE ROLE carol LOGIN IN ROLE memory_team;",
    );
    let owner = Machine::new(&owner_url, "owner", "");
    let (code, out, err) = owner.run(&["migrate"]);
    assert_eq!(code, 0, "migrate as the owner failed: {out}{err}");
    pg.psql(
        db,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO memory_team;
         GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO memory_team;",
    );
    Some(pg)
}

/// Rows of `table` whose text holds `token`, as `role` reads them.
fn rows_with(pg: &PgServer, role: &str, db: &str, table: &str, token: &str) -> u64 {
    let n = pg.psql_as(role, db, &format!("SELECT count(*) FROM {table} t WHERE t::text LIKE '%{token}%'"));
    n.parse().unwrap_or_else(|e| panic!("count of {table} as {role} ({e}): {n}"))
}

/// `memory.store` with a visibility (None: the configuration's); the stored chunk's id.
fn store_as(p: &mut Peer, title: &str, content: &str, visibility: Option<&str>) -> String {
    let tag = format!("{}-tag", title.to_lowercase().replace(' ', "-"));
    let mut args = json!({"title": title, "content": content, "tags": [tag]});
    if let Some(v) = visibility {
        args["visibility"] = json!(v);
    }
    let r = p.tool("memory.store", args);
    tool_ok(&r)["chunk_ids"][0].as_str().unwrap_or_else(|| panic!("no chunk id: {r}")).to_string()
}

#[test]
fn private_memories_stay_with_their_person_group_ones_reach_members_machine_ones_stay_on_their_machine() {
    let db = "visibility";
    let Some(pg) = team_database(db) else { return };
    let notes = tempfile::tempdir().expect("tempdir");
    std::fs::write(notes.path().join("diary.md"), "# Diary\n\nThe pangolin came to the garden again tonight.\n")
        .expect("write the diary");
    let source =
        format!("\n[[memory.sources]]\npath = {:?}\nvisibility = \"person\"\n", notes.path().to_string_lossy());
    let a1 = Machine::new(&pg.url_as("alice", db), "a1", &format!("{UNLIMITED}{source}")).started();
    let a2 = Machine::new(&pg.url_as("alice", db), "a2", UNLIMITED).started();
    let b = Machine::new(&pg.url_as("bob", db), "b1", UNLIMITED).started();
    let (mut pa1, mut pa2, mut pb) = (a1.session("Alice laptop"), a2.session("Alice desktop"), b.session("Bob"));

    store_as(&mut pa1, "Team plan", "The quokka survey starts on Monday", None);
    let private = store_as(&mut pa1, "Alone", "The narwhal idea is mine for now", Some("person"));
    store_as(&mut pa1, "Here only", "The axolotl draft stays on this laptop", Some("machine"));
    store_as(&mut pa1, "For ops", "The okapi rota is for the ops group", Some("group:ops"));
    tool_ok(&pa1.tool("memory.learn", json!({"text": "Alice prefers the tapir layout", "visibility": "person"})));
    store_as(&mut pb, "Bob plan", "The wombat budget is agreed", None);
    store_as(&mut pb, "Bob secret", "The capybara gift is a surprise", Some("person"));
    // The watched folder's file takes its source's visibility.
    wait_hits(&mut pa1, "pangolin", 1);

    // What each may read arrives; once every copy is caught up, nothing else has.
    for word in ["quokka", "okapi", "wombat"] {
        wait_hits(&mut pb, word, 1);
    }
    for word in ["quokka", "narwhal", "okapi", "tapir", "pangolin", "wombat"] {
        wait_hits(&mut pa2, word, 1);
    }
    for (m, person) in [(&a1, "alice"), (&a2, "alice"), (&b, "bob")] {
        assert_eq!(m.caught_up()["person"], person, "status names the person");
    }
    for word in ["narwhal", "axolotl", "tapir", "pangolin"] {
        assert!(hits(&mut pb, word).is_empty(), "Bob's daemon finds Alice's private {word}");
    }
    assert!(hits(&mut pa2, "axolotl").is_empty(), "a machine's memory reached Alice's other machine");
    assert!(
        hits(&mut pa2, "capybara").is_empty() && hits(&mut pa1, "capybara").is_empty(),
        "Bob's private reached Alice"
    );
    assert_eq!(hits(&mut pa1, "axolotl").len(), 1, "the machine that wrote it reads it");
    let recalled = pb.tool("memory.recall", json!({"query": "narwhal idea", "k": 20}));
    let chunks = tool_ok(&recalled)["chunks"].as_array().cloned().unwrap_or_default();
    assert!(chunks.iter().all(|c| c["chunk_id"] != private.as_str()), "recall on Bob's daemon: {recalled}");
    let fetched = pb.tool("memory.fetch", json!({"query": "narwhal", "mode": "keyword"}));
    assert!(!fetched.to_string().contains(&private), "fetch on Bob's daemon: {fetched}");
    let read = pb.tool("tree.read_chunk", json!({"chunk_id": private}));
    assert!(!read.to_string().contains("narwhal"), "read_chunk on Bob's daemon: {read}");
    let read = pa2.tool("tree.read_chunk", json!({"chunk_id": private}));
    assert!(tool_ok(&read).to_string().contains("narwhal"), "Alice's other machine reads it: {read}");

    // By SQL: Bob's role reads none of it in any table holding content, nor in the log; the
    // cluster's owner (a superuser) shows it is there.
    for token in ["narwhal", "alone-tag", "axolotl", "tapir", "pangolin"] {
        let held: u64 =
            CONTENT_TABLES[..CONTENT_TABLES.len() - 1].iter().map(|t| rows_with(&pg, "openhuman", db, t, token)).sum();
        assert!(held > 0, "{token} is on the server");
        assert!(rows_with(&pg, "openhuman", db, "oh_changes", token) > 0, "{token} is in the log");
        // A tag is a topic too, and entities are the team's (see docs/memory.md).
        let tables =
            if token.ends_with("-tag") { &["chunk_tags", "kv", "sources", "mcp_audit"][..] } else { CONTENT_TABLES };
        for table in tables {
            assert_eq!(
                rows_with(&pg, "bob", db, table, token),
                0,
                "psql as bob reads {token} in {table}: {}",
                pg.psql(db, &format!("SELECT t::text FROM {table} t WHERE t::text LIKE '%{token}%'"))
            );
        }
    }
    let rowid = pg.psql(db, &format!("SELECT rowid FROM chunks WHERE id = '{private}'"));
    for (table, on) in [("chunk_tags", "chunk_rowid"), ("chunk_entities", "chunk_rowid"), ("kv", "item_id")] {
        let of = if on == "item_id" { "'doc:default/mcp-store-alone'".to_string() } else { rowid.clone() };
        let sql = format!("SELECT count(*) FROM {table} WHERE {on} = {of}");
        assert_ne!(pg.psql(db, &sql), "0", "the private chunk has rows in {table}");
        assert_eq!(pg.psql_as("bob", db, &sql), "0", "psql as bob reads the private chunk's {table}");
    }
    assert_eq!(rows_with(&pg, "alice", db, "chunks", "narwhal"), 1, "psql as alice reads her own");
    assert_eq!(rows_with(&pg, "alice", db, "chunks", "axolotl"), 0, "a machine's rows need that machine's setting");
    assert_eq!(rows_with(&pg, "bob", db, "chunks", "okapi"), 1, "a member of ops reads the group's");
    assert_eq!(rows_with(&pg, "carol", db, "chunks", "okapi"), 0, "carol is not in ops");
    assert_eq!(rows_with(&pg, "carol", db, "chunks", "quokka"), 1, "carol reads the team's");
    assert_eq!(rows_with(&pg, "alice", db, "chunks", "capybara"), 0);

    // Audit rows name their person, and follow what the write made: the team reads those of
    // team writes only.
    let audit = a1.audit(&["--tool", "memory.store"]);
    let mine: Vec<&Value> = audit.iter().filter(|r| r["machine"] == "a1").collect();
    assert!(mine.len() == 4 && mine.iter().all(|r| r["person"] == "alice"), "{audit:?}");
    let bobs: Vec<&Value> = audit.iter().filter(|r| r["person"] == "bob").collect();
    assert!(bobs.len() == 1 && bobs[0]["result_id"] == "doc:default/mcp-store-bob-plan", "{audit:?}");
    assert_eq!(b.audit(&["--tool", "memory.store"]).iter().filter(|r| r["person"] == "bob").count(), 2);
    let on_b: Vec<Value> = b.audit(&["--tool", "memory.store"]);
    assert_eq!(on_b.iter().filter(|r| r["person"] == "alice").count(), 2, "the team and ops writes: {on_b:?}");
    assert_eq!(pg.psql_as("carol", db, "SELECT count(*) FROM mcp_audit WHERE person = 'alice'"), "1");
}

/// Unrelated sentences, so that no write is taken for a version of another.
const TOPICS: &[&str] = &[
    "The boiler in the basement needs its annual service before winter.",
    "Quarterly revenue grew in the northern region thanks to new retail partners.",
    "The violin recital was moved to the small hall on Friday evening.",
    "Our cat refuses the new brand of dry food and prefers fish.",
    "The database migration script must run before the API deploy.",
    "Tomatoes and basil grow well together on the sunny balcony.",
    "The marathon route crosses the river twice near the old mill.",
    "A leaking roof tile caused the stain on the bedroom ceiling.",
    "The conference keynote covered compilers for quantum hardware.",
    "Grandmother's apple cake recipe uses cinnamon and brown sugar.",
    "The bicycle chain snapped on the steep climb past the quarry.",
    "Passport renewal takes six weeks, so apply before booking flights.",
];

/// (rowid, id, visibility) of every chunk of a copy's own file.
fn local_chunks(m: &Machine) -> BTreeSet<(i64, String, String)> {
    let path = m.home.path().join("data").join("memory.db");
    let conn = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut stmt = conn.prepare("SELECT rowid, id, visibility FROM chunks").expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("query").map(|r| r.expect("row")).collect()
}

/// The same, as `role` reads the server.
fn server_chunks(pg: &PgServer, role: &str, db: &str) -> BTreeSet<(i64, String, String)> {
    let out = pg.psql_as(role, db, "SELECT rowid || '|' || id || '|' || visibility FROM chunks");
    out.lines()
        .map(|l| {
            let mut f = l.splitn(3, '|');
            let rowid = f.next().and_then(|r| r.parse().ok()).unwrap_or_else(|| panic!("row: {l}"));
            (rowid, f.next().unwrap_or_default().to_string(), f.next().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
fn interleaved_private_and_team_writes_of_two_people_never_share_a_row_id_and_every_copy_holds_what_it_may_read() {
    let db = "rowids";
    let Some(pg) = team_database(db) else { return };
    let a = Machine::new(&pg.url_as("alice", db), "a1", UNLIMITED).started();
    let b = Machine::new(&pg.url_as("bob", db), "b1", UNLIMITED).started();
    let rounds = 12;
    let barrier = Arc::new(Barrier::new(2));
    let writers: Vec<_> = [(&a, "alice"), (&b, "bob")]
        .into_iter()
        .map(|(m, who)| {
            let mut p = m.session(&format!("Writer {who}"));
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                for (i, topic) in TOPICS.iter().enumerate().take(rounds) {
                    barrier.wait();
                    let vis = if i % 2 == 0 { "person" } else { "team" };
                    let content = format!("row{who}{i}word: {topic}");
                    store_as(&mut p, &format!("{who} note {i}"), &content, Some(vis));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("a writer: every write is acknowledged");
    }
    a.caught_up();
    b.caught_up();
    let (on_a, on_b) = (local_chunks(&a), local_chunks(&b));
    assert_eq!(on_a, server_chunks(&pg, "alice", db), "Alice's copy holds exactly what alice reads");
    assert_eq!(on_b, server_chunks(&pg, "bob", db), "Bob's copy holds exactly what bob reads");
    let team = |s: &BTreeSet<(i64, String, String)>| -> BTreeSet<(i64, String, String)> {
        s.iter().filter(|c| c.2 == "team").cloned().collect()
    };
    assert_eq!(team(&on_a), team(&on_b), "the team's rows are identical on both copies");
    assert_eq!(team(&on_a).len(), rounds, "{on_a:?}");
    let private = |s: &BTreeSet<(i64, String, String)>| s.len() - team(s).len();
    assert_eq!((private(&on_a), private(&on_b)), (rounds / 2, rounds / 2));
    let all = server_chunks(&pg, "openhuman", db);
    let ids: BTreeSet<i64> = all.iter().map(|c| c.0).collect();
    assert_eq!((all.len(), ids.len()), (rounds * 2, rounds * 2), "every write has a row id of its own: {all:?}");
    let mut pa = a.session("Reader");
    for i in (1..rounds).step_by(2) {
        assert_eq!(hits(&mut pa, &format!("rowbob{i}word")).len(), 1, "Bob's team note {i} on Alice's copy");
        assert!(hits(&mut pa, &format!("rowbob{}word", i - 1)).is_empty(), "Bob's private note on Alice's copy");
    }
}
