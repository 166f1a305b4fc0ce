//! Memory at the terminal with the real binary: `search`, `recall`, `show`, `sources list
//! --stored` and `forget`, each with no daemon (the store opened directly) and with one running
//! (which holds the store, so the command can only have gone through it), in text and `--json`;
//! `forget` asks on a terminal (a pseudo-terminal here), refuses without one unless `--yes`, and
//! is audited like the MCP tool.

use std::path::Path;

use std::io::Write;
use std::process::Stdio;

use openhuman_tests::{Daemon, Home, WAIT, pty, wait_exit};
use serde_json::Value;

/// Runs a command in `home` with stdin not a terminal: (exit code, stdout, stderr).
fn run(home: &Home, args: &[&str]) -> (i32, String, String) {
    let out = home.daemon_cmd().args(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(home: &Home, args: &[&str]) -> String {
    let (code, out, err) = run(home, args);
    assert_eq!(code, 0, "{args:?}\n{out}\n{err}");
    out
}

fn json(home: &Home, args: &[&str]) -> Value {
    let out = ok(home, args);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {out}"))
}

fn notes(dir: &Path) {
    std::fs::write(dir.join("bread.md"), "# Bread\n\nSourdough bread rises with a wild yeast starter.\n").unwrap();
    std::fs::write(dir.join("garden.md"), "# Garden\n\nTomatoes need full sun and regular watering.\n").unwrap();
}

/// The whole command set against `home`, whose store holds the two notes in `dir`.
fn every_command(home: &Home, dir: &Path) {
    let garden = format!("file:{}", dir.join("garden.md").display());
    let out = ok(home, &["search", "sourdough", "starter"]);
    assert!(out.contains("Bread") && out.contains("**Sourdough**"), "{out}");
    let hits = json(home, &["search", "--json", "sourdough"]);
    let chunk = hits["hits"][0]["chunk_id"].as_str().unwrap().to_string();
    assert!(ok(home, &["search", "zeppelin"]).contains("nothing in memory matches"));

    let out = ok(home, &["recall", "growing", "tomatoes", "-k", "1"]);
    assert!(out.contains("Garden") && !out.contains("Bread"), "{out}");
    let r = json(home, &["recall", "--json", "bread"]);
    assert!(r["chunks"].as_array().is_some_and(|c| !c.is_empty()), "{r}");

    let out = ok(home, &["show", &chunk]);
    assert!(out.contains("# Bread") && out.contains("wild yeast starter") && out.contains(&chunk), "{out}");
    assert_eq!(json(home, &["show", "--json", &chunk])["chunk_id"], chunk.as_str());
    let out = ok(home, &["show", &garden]);
    assert!(out.contains("1 chunk(s) of") && out.contains("Tomatoes"), "{out}");
    let (code, _, err) = run(home, &["show", "no-such-id"]);
    assert!(code == 1 && err.contains("nothing in memory has the id no-such-id"), "{err}");

    let out = ok(home, &["sources", "list", "--stored"]);
    assert!(out.contains("Bread") && out.contains(&garden), "{out}");
    let s = json(home, &["sources", "list", "--stored", "--json"]);
    assert_eq!(s["total"], 2, "{s}");
    assert!(ok(home, &["sources", "list"]).contains("no watched sources"), "the watched-folder list is unchanged");

    // Without a terminal and without --yes, nothing is deleted.
    let (code, _, err) = run(home, &["forget", &garden]);
    assert!(code == 1 && err.contains("--yes"), "{err}");
    assert_eq!(json(home, &["sources", "list", "--stored", "--json"])["total"], 2);
    let (code, _, err) = run(home, &["forget", "--yes", "no-such-id"]);
    assert!(code == 1 && err.contains("nothing to forget"), "{err}");
    let out = ok(home, &["forget", "--yes", &garden, "no-such-id"]);
    assert!(out.contains(&format!("forgot {garden}")) && out.contains("not found: no-such-id"), "{out}");
    assert_eq!(json(home, &["sources", "list", "--stored", "--json"])["total"], 1);
    assert!(ok(home, &["search", "tomatoes"]).contains("nothing in memory matches"));
    // Audited as the MCP tool is, with the terminal's provenance.
    let rows = ok(home, &["audit", "--json", "--tool", "memory.forget"]);
    let row: Value = serde_json::from_str(rows.lines().next().unwrap()).unwrap();
    assert_eq!((&row["source"], &row["success"]), (&Value::from("mcp:cli"), &Value::from(true)), "{row}");
}

#[test]
fn memory_commands_work_without_a_daemon() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    notes(dir.path());
    ok(&home, &["ingest", dir.path().to_str().unwrap()]);
    every_command(&home, dir.path());
}

#[test]
fn memory_commands_go_through_a_running_daemon() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    notes(dir.path());
    let _d = Daemon::start(&home);
    ok(&home, &["ingest", dir.path().to_str().unwrap()]);
    every_command(&home, dir.path());
}

#[test]
fn forget_and_import_are_refused_under_readonly() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    notes(dir.path());
    ok(&home, &["ingest", dir.path().to_str().unwrap()]);
    home.write_config("[autonomy]\nlevel = \"readonly\"\n");
    let garden = format!("file:{}", dir.path().join("garden.md").display());
    let (code, _, err) = run(&home, &["forget", "--yes", &garden]);
    assert!(code == 1 && err.contains("readonly"), "{err}");
    let rows = ok(&home, &["audit", "--json", "--failed", "--tool", "memory.forget"]);
    assert_eq!(rows.lines().count(), 1, "the denied attempt is audited: {rows}");
    assert_eq!(json(&home, &["sources", "list", "--stored", "--json"])["total"], 2);
    // So is an import, the other command that writes (it checks the policy before the export).
    let (code, _, err) = run(&home, &["import", dir.path().to_str().unwrap()]);
    assert!(code == 1 && err.contains("readonly"), "{err}");
}

/// `ingest` and `reindex` write the store outside the MCP tools; through a daemon or in process
/// (`daemon` says which) they are audited alike, and `readonly` refuses them alike.
fn control_writes(daemon: bool) {
    let dir = tempfile::tempdir().unwrap();
    notes(dir.path());
    let folder = dir.path().to_str().unwrap();
    let home = Home::new();
    let serving = daemon.then(|| Daemon::start(&home));
    assert!(ok(&home, &["ingest", folder]).contains("ingested 2 file(s)"));
    assert!(ok(&home, &["reindex"]).contains("reindexed"));
    let rows = ok(&home, &["audit", "--json"]);
    for tool in ["openhuman.memory_ingest", "openhuman.memory_reindex"] {
        let row: Value =
            rows.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["tool"] == tool).unwrap();
        assert_eq!((&row["source"], &row["success"]), (&Value::from("rpc"), &Value::from(true)), "{row}");
    }
    drop(serving);

    let home = Home::new();
    home.write_config("[autonomy]\nlevel = \"readonly\"\n");
    let _serving = daemon.then(|| Daemon::start(&home));
    for args in [&["ingest", folder][..], &["reindex"]] {
        let (code, _, err) = run(&home, args);
        assert!(code == 1 && err.contains("readonly"), "{args:?}: {err}");
    }
    let rows = ok(&home, &["audit", "--json", "--failed"]);
    assert_eq!(rows.lines().count(), 2, "each refused attempt is audited: {rows}");
    assert_eq!(json(&home, &["sources", "list", "--stored", "--json"])["total"], 0);
}

#[test]
fn ingest_and_reindex_are_audited_and_policed_alike_in_process() {
    control_writes(false);
}

#[test]
fn ingest_and_reindex_are_audited_and_policed_alike_through_a_daemon() {
    control_writes(true);
}

/// `forget` with a terminal on stdin: `answer` typed at its prompt; (exit code, stdout, stderr).
fn forget_typing(home: &Home, id: &str, answer: &str) -> (i32, String, String) {
    let (mut user, terminal) = pty();
    let mut child = home
        .daemon_cmd()
        .args(["forget", id])
        .stdin(Stdio::from(terminal))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    user.write_all(answer.as_bytes()).unwrap();
    let status = wait_exit(&mut child, WAIT);
    let out = child.wait_with_output().unwrap();
    drop(user);
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn forget_on_a_terminal_shows_what_goes_and_asks() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    notes(dir.path());
    ok(&home, &["ingest", dir.path().to_str().unwrap()]);
    let garden = format!("file:{}", dir.path().join("garden.md").display());
    let (code, out, err) = forget_typing(&home, &garden, "n\n");
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains(&format!("{garden}: 1 chunk(s)")) && err.contains("Tomatoes need full sun"), "{err}");
    assert!(err.contains("Forget 1 chunk(s)? [y/N]") && err.contains("nothing was forgotten"), "{err}");
    assert_eq!(json(&home, &["sources", "list", "--stored", "--json"])["total"], 2);
    let (code, out, err) = forget_typing(&home, &garden, "y\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("forgot {garden}")), "{out}");
    assert_eq!(json(&home, &["sources", "list", "--stored", "--json"])["total"], 1);
}
