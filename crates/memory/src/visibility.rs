//! Who sees what when several people share one store (see `shared`): every chunk belongs to a
//! person (the database role its daemon connects as) and has a visibility — `team` (everyone
//! with access to the store), `person` (its person, on any of their machines),
//! `machine:<name>` (its person on that machine only) or `group:<role>` (its person and the
//! members of that role). The server enforces it; this module decides it and labels rows.
//!
//! - **Deciding.** A new chunk takes the visibility its write asked for, else that of the
//!   longest configured project containing its project, else that of the longest configured
//!   source containing its file, else the default. Temporary tables and a trigger of the writer
//!   connection do it ([`install`]), so every write path gets it without passing it along.
//! - **Labelling.** Rows derived from a chunk ([`LINKS`]: tags, metadata fields, entity
//!   mentions, senders, notes, learnings, keys, supersessions, links, sources, and the audit row
//!   of the write that made the chunk) take their chunk's scope (a row whose chunk is nowhere
//!   to be found, such as the audit row of a refused write, its writer's `person`);
//!   rows of every other table are the team's. [`split`] cuts a write's change set into one
//!   [`Part`] per scope, each committed as its own log entry, so the log never carries a row
//!   to someone who may not read it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, params};

use super::error::MemoryError;
use super::shared::{Cell, ChangeSet, Part, Scope, TEAM, Table, TableChanges};

/// A visibility as configured or asked for by a write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Visibility {
    /// Its person, on the machine that wrote it.
    Machine,
    /// Its person, on any machine.
    Person,
    /// Everyone with access to the store.
    #[default]
    Team,
    /// Its person and the members of this database role.
    Group(String),
}

/// What a visibility may be, for messages and schemas.
pub const VISIBILITIES: &str = "machine, person, team or group:<role>";

/// A value that is not a visibility.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a visibility; use {VISIBILITIES}")]
pub struct NotAVisibility(pub String);

impl Visibility {
    pub fn parse(s: &str) -> Result<Visibility, NotAVisibility> {
        match s {
            "machine" => Ok(Visibility::Machine),
            "person" => Ok(Visibility::Person),
            "team" => Ok(Visibility::Team),
            _ => match s.strip_prefix("group:") {
                Some(g) if !g.is_empty() && g.len() <= 63 && !g.chars().any(char::is_control) => {
                    Ok(Visibility::Group(g.to_string()))
                }
                _ => Err(NotAVisibility(s.to_string())),
            },
        }
    }

    /// As the rows carry it: the machine is named.
    pub fn stored(&self, machine: &str) -> String {
        match self {
            Visibility::Machine => format!("machine:{machine}"),
            Visibility::Person => "person".into(),
            Visibility::Team => TEAM.into(),
            Visibility::Group(g) => format!("group:{g}"),
        }
    }
}

/// The configured visibilities: the default, and per watched source and per project (absolute
/// paths; a path covers everything under it).
#[derive(Debug, Clone, Default)]
pub struct VisibilityRules {
    pub default: Visibility,
    pub sources: Vec<(PathBuf, Visibility)>,
    pub projects: Vec<(PathBuf, Visibility)>,
}

/// How a table's rows follow a chunk: by the chunk's row id, or by its id, origin or source (an
/// item's id such as `doc:ns/key`, a file's `file:/path`, a session's `session:<id>`), in the
/// named column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Rowid(&'static str),
    IdOrOrigin(&'static str),
}

/// The tables whose rows take their chunk's scope (the server gives them the scope columns
/// `oh_person` and `oh_visibility`). `chunks` carries its own (`person`, `visibility`).
pub const LINKS: &[(&str, Link)] = &[
    ("chunk_tags", Link::Rowid("chunk_rowid")),
    ("chunk_meta", Link::Rowid("chunk_rowid")),
    ("chunk_entities", Link::Rowid("chunk_rowid")),
    ("chunk_senders", Link::Rowid("chunk_rowid")),
    ("notes", Link::IdOrOrigin("item_id")),
    ("learnings", Link::IdOrOrigin("item_id")),
    ("kv", Link::IdOrOrigin("item_id")),
    ("supersessions", Link::IdOrOrigin("old_id")),
    ("links", Link::IdOrOrigin("source_id")),
    ("sources", Link::IdOrOrigin("source_id")),
    ("mcp_audit", Link::IdOrOrigin("result_id")),
];

/// The link of a table, if its rows follow a chunk.
pub fn link_of(table: &str) -> Option<Link> {
    LINKS.iter().find(|(t, _)| *t == table).map(|(_, l)| *l)
}

/// Creates the writer connection's temporary tables and triggers: `oh_scope` (this daemon's
/// person, the default, a write's own choice, and whether a local write is running — changes
/// applied from the server keep the scope they came with), `oh_vis_rules`, and what deleted
/// chunks and keys were (`oh_gone_chunks`, `oh_gone_kv`), for labelling their deletion.
pub(crate) fn install(conn: &Connection, rules: &VisibilityRules, machine: &str) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS oh_scope (
             one INTEGER PRIMARY KEY CHECK (one = 1), person TEXT, fallback TEXT NOT NULL, forced TEXT,
             active INTEGER NOT NULL DEFAULT 0);
         CREATE TEMP TABLE IF NOT EXISTS oh_vis_rules (kind TEXT NOT NULL, path TEXT NOT NULL, vis TEXT NOT NULL);
         CREATE TEMP TABLE IF NOT EXISTS oh_gone_chunks (
             rowid INTEGER PRIMARY KEY, id TEXT, origin TEXT, person TEXT, visibility TEXT);
         CREATE TEMP TABLE IF NOT EXISTS oh_gone_kv (
             kind TEXT, namespace TEXT, key TEXT, item_id TEXT, PRIMARY KEY (kind, namespace, key));
         DELETE FROM temp.oh_vis_rules;
         CREATE TEMP TRIGGER IF NOT EXISTS oh_scope_chunk AFTER INSERT ON main.chunks
         WHEN NEW.person IS NULL AND (SELECT active FROM temp.oh_scope) = 1 BEGIN
           UPDATE main.chunks SET person = (SELECT person FROM temp.oh_scope), visibility = coalesce(
             (SELECT forced FROM temp.oh_scope),
             (SELECT vis FROM temp.oh_vis_rules WHERE kind = 'project' AND NEW.project IS NOT NULL
                AND (NEW.project = path OR substr(NEW.project, 1, length(path) + 1) = path || '/')
              ORDER BY length(path) DESC LIMIT 1),
             (SELECT r.vis FROM temp.oh_vis_rules r,
                (SELECT CASE WHEN NEW.origin LIKE 'file:%' THEN substr(NEW.origin, 6)
                             WHEN NEW.origin LIKE 'agent-log:%' THEN substr(NEW.origin, 11) END AS p) f
              WHERE r.kind = 'source' AND f.p IS NOT NULL
                AND (f.p = r.path OR substr(f.p, 1, length(r.path) + 1) = r.path || '/')
              ORDER BY length(r.path) DESC LIMIT 1),
             (SELECT fallback FROM temp.oh_scope))
           WHERE rowid = NEW.rowid;
         END;
         CREATE TEMP TRIGGER IF NOT EXISTS oh_gone_chunk AFTER DELETE ON main.chunks BEGIN
           INSERT OR REPLACE INTO temp.oh_gone_chunks VALUES (OLD.rowid, OLD.id, OLD.origin, OLD.person, OLD.visibility);
         END;
         CREATE TEMP TRIGGER IF NOT EXISTS oh_gone_kv AFTER DELETE ON main.kv BEGIN
           INSERT OR REPLACE INTO temp.oh_gone_kv VALUES (OLD.kind, OLD.namespace, OLD.key, OLD.item_id);
         END;",
    )?;
    conn.execute(
        "INSERT INTO temp.oh_scope (one, person, fallback) VALUES (1, NULL, ?1)
         ON CONFLICT (one) DO UPDATE SET fallback = excluded.fallback",
        [rules.default.stored(machine)],
    )?;
    let mut add = conn.prepare("INSERT INTO temp.oh_vis_rules (kind, path, vis) VALUES (?1, ?2, ?3)")?;
    for (kind, list) in [("source", &rules.sources), ("project", &rules.projects)] {
        for (path, vis) in list {
            let p = path.to_string_lossy();
            add.execute(params![kind, p.trim_end_matches('/'), vis.stored(machine)])?;
        }
    }
    Ok(())
}

/// Names the person new chunks belong to (known once the server answered).
pub(crate) fn set_person(conn: &Connection, person: Option<&str>) -> rusqlite::Result<()> {
    conn.execute("UPDATE temp.oh_scope SET person = ?1", [person])?;
    Ok(())
}

/// Starts (`true`) or ends a local write: from the start, new chunks are given a scope; what it
/// asked for and what it deleted are forgotten.
pub(crate) fn local_write(conn: &Connection, on: bool) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE temp.oh_scope SET active = ?1, forced = NULL")?.execute([on])?;
    if on {
        conn.prepare_cached("DELETE FROM temp.oh_gone_chunks")?.execute([])?;
        conn.prepare_cached("DELETE FROM temp.oh_gone_kv")?.execute([])?;
    }
    Ok(())
}

/// The visibility this write's new chunks take, whatever the configuration says.
pub(crate) fn force(conn: &Connection, stored: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE temp.oh_scope SET forced = ?1")?.execute([stored])?;
    Ok(())
}

thread_local! {
    /// The visibility the write running on this thread asked for (a write runs on its
    /// caller's thread, from taking the writer to committing).
    static REQUESTED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with the writes it makes asking for `stored` (None: the configuration decides).
pub(crate) fn with_requested<T>(stored: Option<String>, f: impl FnOnce() -> T) -> T {
    let before = REQUESTED.with(|r| r.replace(stored));
    let out = f();
    REQUESTED.with(|r| *r.borrow_mut() = before);
    out
}

/// What the write on this thread asked for.
pub(crate) fn requested() -> Option<String> {
    REQUESTED.with(|r| r.borrow().clone())
}

/// Cuts a write's change set into one part per scope (the team's first).
pub(crate) fn split(
    conn: &Connection,
    tables: &[Table],
    person: Option<&str>,
    changes: ChangeSet,
) -> Result<Vec<Part>, MemoryError> {
    let team = Scope::team(person.map(str::to_string));
    // A row whose chunk is nowhere to be found is kept to its writer.
    let mine = Scope { person: person.map(str::to_string), visibility: "person".into() };
    let mut parts: BTreeMap<Scope, BTreeMap<String, TableChanges>> = BTreeMap::new();
    let mut put = |scope: Scope, table: &str, row: Vec<Cell>, delete: bool| {
        let tc = parts
            .entry(scope)
            .or_default()
            .entry(table.to_string())
            .or_insert_with(|| TableChanges { table: table.to_string(), ..Default::default() });
        if delete { tc.deletes.push(row) } else { tc.upserts.push(row) }
    };
    let normal = |s: Option<Scope>| match s {
        Some(s) if s.is_team() => team.clone(),
        Some(s) => s,
        None => mine.clone(),
    };
    for tc in changes.tables {
        let Some(def) = tables.iter().find(|t| t.name == tc.table) else { continue };
        let col = |name: &str| def.columns.iter().position(|c| c.name == name);
        if def.name == "chunks" {
            let (p, v) = (col("person"), col("visibility"));
            for key in tc.deletes {
                let s = key.first().map(|r| by_rowid(conn, r)).transpose()?.flatten();
                put(normal(s), &def.name, key, true);
            }
            for row in tc.upserts {
                let s = match (p.and_then(|i| row.get(i)), v.and_then(|i| row.get(i))) {
                    (Some(p), Some(Cell::Text(v))) => Some(Scope { person: text(p), visibility: v.clone() }),
                    _ => None,
                };
                put(normal(s.or_else(|| Some(team.clone()))), &def.name, row, false);
            }
            continue;
        }
        let Some(link) = link_of(&def.name) else {
            for key in tc.deletes {
                put(team.clone(), &def.name, key, true);
            }
            for row in tc.upserts {
                put(team.clone(), &def.name, row, false);
            }
            continue;
        };
        let name = match link {
            Link::Rowid(n) | Link::IdOrOrigin(n) => n,
        };
        let in_row = col(name);
        let in_key = def.pk.iter().position(|&i| def.columns[i].name == name);
        for key in tc.deletes {
            let value = match in_key {
                Some(k) => key.get(k).cloned(),
                None if def.name == "kv" => gone_kv_item(conn, &key)?,
                None => None,
            };
            let s = value.map(|v| chunk_scope(conn, link, &v)).transpose()?.flatten();
            put(normal(s), &def.name, key, true);
        }
        for row in tc.upserts {
            let s = in_row.and_then(|i| row.get(i)).map(|v| chunk_scope(conn, link, v)).transpose()?.flatten();
            put(normal(s), &def.name, row, false);
        }
    }
    let mut out: Vec<Part> = parts
        .into_iter()
        .map(|(scope, tables)| Part { scope, changes: ChangeSet { tables: tables.into_values().collect() } })
        .collect();
    out.sort_by_key(|p| !p.scope.is_team());
    Ok(out)
}

fn text(c: &Cell) -> Option<String> {
    match c {
        Cell::Text(t) => Some(t.clone()),
        _ => None,
    }
}

fn chunk_scope(conn: &Connection, link: Link, value: &Cell) -> Result<Option<Scope>, MemoryError> {
    match link {
        Link::Rowid(_) => by_rowid(conn, value),
        Link::IdOrOrigin(_) => {
            let Cell::Text(v) = value else { return Ok(None) };
            Ok(conn
                .prepare_cached(
                    "SELECT person, visibility FROM main.chunks WHERE id = ?1
                     UNION ALL SELECT * FROM (SELECT person, visibility FROM main.chunks WHERE origin = ?1 LIMIT 1)
                     UNION ALL SELECT * FROM (SELECT person, visibility FROM main.chunks WHERE source_id = ?1 LIMIT 1)
                     UNION ALL SELECT person, visibility FROM temp.oh_gone_chunks WHERE id = ?1 OR origin = ?1
                     LIMIT 1",
                )?
                .query_row([v], scope_row)
                .optional()?)
        }
    }
}

fn by_rowid(conn: &Connection, rowid: &Cell) -> Result<Option<Scope>, MemoryError> {
    let Some(r) = rowid.as_int() else { return Ok(None) };
    Ok(conn
        .prepare_cached(
            "SELECT person, visibility FROM main.chunks WHERE rowid = ?1
             UNION ALL SELECT person, visibility FROM temp.oh_gone_chunks WHERE rowid = ?1 LIMIT 1",
        )?
        .query_row([r], scope_row)
        .optional()?)
}

fn scope_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Scope> {
    Ok(Scope { person: r.get(0)?, visibility: r.get::<_, Option<String>>(1)?.unwrap_or_else(|| TEAM.into()) })
}

/// The item a deleted key row pointed at.
fn gone_kv_item(conn: &Connection, key: &[Cell]) -> Result<Option<Cell>, MemoryError> {
    let [kind, ns, k] = key else { return Ok(None) };
    Ok(conn
        .prepare_cached("SELECT item_id FROM temp.oh_gone_kv WHERE kind = ?1 AND namespace = ?2 AND key = ?3")?
        .query_row(params![kind, ns, k], |r| r.get::<_, String>(0))
        .optional()?
        .map(Cell::Text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::Recorder;

    fn chunk(conn: &Connection, id: &str, origin: &str, project: Option<&str>) -> i64 {
        conn.execute(
            "INSERT INTO chunks (id, source_kind, source_id, source_ref, origin, provenance, timestamp_ms,
                 seq_in_source, content, token_count, created_at_ms, change_seq, project)
             VALUES (?1, 'document', ?2, ?2, ?2, 'test', 0, 0, 'text', 1, 0, 1, ?3)",
            params![id, origin, project],
        )
        .unwrap();
        conn.last_insert_rowid()
    }

    fn scope_of(conn: &Connection, rowid: i64) -> (Option<String>, String) {
        conn.query_row("SELECT person, visibility FROM chunks WHERE rowid = ?1", [rowid], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
    }

    #[test]
    fn a_write_then_a_project_then_a_source_then_the_default_decide_and_derived_rows_follow_their_chunk() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        let tables = crate::shared::catalog(&conn).unwrap();
        let recorder = Recorder::install(&mut conn, tables).unwrap();
        let rules = VisibilityRules {
            default: Visibility::Team,
            sources: vec![("/diary".into(), Visibility::Machine)],
            projects: vec![("/projects/secret".into(), Visibility::Group("ops".into()))],
        };
        install(&conn, &rules, "laptop").unwrap();
        set_person(&conn, Some("alice")).unwrap();
        // Outside a local write (changes applied from the server) nothing is stamped.
        let applied = chunk(&conn, "c0", "file:/diary/old.md", None);
        assert_eq!(scope_of(&conn, applied), (None, "team".into()));
        local_write(&conn, true).unwrap();
        let plain = chunk(&conn, "c1", "doc:default/x", None);
        let diary = chunk(&conn, "c2", "file:/diary/2024/may.md", None);
        let near = chunk(&conn, "c3", "file:/diaryX/a.md", None);
        let project = chunk(&conn, "c4", "file:/diary/p.md", Some("/projects/secret/app"));
        force(&conn, "person").unwrap();
        let asked = chunk(&conn, "c5", "file:/diary/q.md", Some("/projects/secret"));
        assert_eq!(scope_of(&conn, plain), (Some("alice".into()), "team".into()));
        assert_eq!(scope_of(&conn, diary).1, "machine:laptop");
        assert_eq!(scope_of(&conn, near).1, "team", "a path covers what is under it, not its namesakes");
        assert_eq!(scope_of(&conn, project).1, "group:ops", "a project wins over a source");
        assert_eq!(scope_of(&conn, asked).1, "person", "the write's own choice wins");
        conn.execute("INSERT INTO chunk_tags (chunk_rowid, tag) VALUES (?1, 'mine'), (?2, 'ours')", [asked, plain])
            .unwrap();
        conn.execute("DELETE FROM chunks WHERE rowid = ?1", [diary]).unwrap();
        let changes = recorder.finish(&conn).unwrap();
        let parts = split(&conn, &recorder.tables, Some("alice"), changes).unwrap();
        assert!(parts[0].scope.is_team(), "the team's part first");
        let of = |vis: &str, table: &str| -> usize {
            parts
                .iter()
                .filter(|p| p.scope.visibility == vis)
                .flat_map(|p| &p.changes.tables)
                .filter(|t| t.table == table)
                .map(|t| t.upserts.len() + t.deletes.len())
                .sum()
        };
        assert_eq!((of("person", "chunk_tags"), of("team", "chunk_tags")), (1, 1));
        assert_eq!(of("machine:laptop", "chunks"), 1, "a deleted chunk's deletion keeps its scope");
        assert_eq!(of("group:ops", "chunks"), 1);
    }

    #[test]
    fn visibilities_parse_and_name_their_machine() {
        assert_eq!(Visibility::parse("team").unwrap(), Visibility::Team);
        assert_eq!(Visibility::parse("group:devs").unwrap().stored("m1"), "group:devs");
        assert_eq!(Visibility::parse("machine").unwrap().stored("laptop"), "machine:laptop");
        for bad in ["", "everyone", "group:", "machine:x"] {
            let e = Visibility::parse(bad).unwrap_err().to_string();
            assert!(e.contains("machine, person, team or group:<role>"), "{e}");
        }
    }
}
