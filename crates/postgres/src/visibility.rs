//! Who sees what, enforced by PostgreSQL itself: row-level security keyed to the role a daemon
//! connects as (`current_user`, the person).
//!
//! - `oh_visible(person, visibility)`: whether the connection may read a row of that scope —
//!   `team` (or none) always; `person` when it is the connection's role; `machine:<name>` when
//!   it is, and the connection's `openhuman.machine` setting names that machine; `group:<role>`
//!   for the person and every member of that role (`pg_has_role`).
//! - `oh_writable(person, visibility)`: what a connection may write — what it may read, and
//!   rows of its own person (or the team's, or a group it is in).
//! - Policies: `chunks` on its own `person` and `visibility` columns; the tables whose rows
//!   follow a chunk (`openhuman_memory::visibility::LINKS`) on the server-only columns
//!   `oh_person` and `oh_visibility` each write fills in; `oh_changes` on its `person` and
//!   `visibility`. Every other table is the team's. The policies are forced on the tables'
//!   owner too (a superuser, or a role with BYPASSRLS, still reads everything).
//! - `oh_row_ids`: the highest row id each table keyed by an allocated row id holds, hidden rows
//!   included, readable by all; a write moves its local row ids past it.
//!
//! Everything here is created by `migrate` in the tables' owner's transaction and is
//! idempotent (`CREATE OR REPLACE`, `DROP POLICY IF EXISTS`), so running it again changes
//! nothing. [`follow_chunk_policy`] gives a table of the server's own (such as one holding
//! chunks' vectors) the policy of the chunk its rows belong to.

use openhuman_memory::shared::{Affinity, Table};
use openhuman_memory::visibility::link_of;

use super::ident;

/// The version of what this module sets up, kept in `oh_meta` as `rls_version`: a server at
/// it needs no DDL (so a daemon connecting as a role that does not own the tables starts).
pub(crate) const RLS_VERSION: i64 = 1;

/// The scope columns a table following a chunk carries on the server only.
pub(crate) const SCOPE_COLUMNS: [&str; 2] = ["oh_person", "oh_visibility"];

/// The custom setting naming the connection's machine.
pub(crate) const MACHINE_SETTING: &str = "openhuman.machine";

/// The functions, the row-id table and the log's scope, with its policy.
pub(crate) fn base_sql() -> String {
    format!(
        "CREATE OR REPLACE FUNCTION oh_visible(p_person text, p_visibility text) RETURNS boolean
         LANGUAGE sql STABLE AS $fn$
           SELECT CASE
             WHEN p_visibility IS NULL OR p_visibility = 'team' THEN true
             WHEN p_visibility LIKE 'group:%' THEN p_person IS NOT DISTINCT FROM current_user::text OR coalesce(
               (SELECT pg_has_role(current_user, r.oid, 'MEMBER') FROM pg_roles r
                 WHERE r.rolname = substr(p_visibility, 7)), false)
             WHEN p_person IS DISTINCT FROM current_user::text THEN false
             WHEN p_visibility = 'person' THEN true
             WHEN p_visibility LIKE 'machine:%' THEN
               substr(p_visibility, 9) = coalesce(current_setting('{MACHINE_SETTING}', true), '')
             ELSE false
           END
         $fn$;
         CREATE OR REPLACE FUNCTION oh_writable(p_person text, p_visibility text) RETURNS boolean
         LANGUAGE sql STABLE AS $fn$
           SELECT oh_visible(p_person, p_visibility) AND (p_visibility IS NULL OR p_visibility = 'team'
             OR p_visibility LIKE 'group:%' OR p_person = current_user::text)
         $fn$;
         CREATE TABLE IF NOT EXISTS oh_row_ids (tbl text PRIMARY KEY, high bigint NOT NULL);
         ALTER TABLE oh_changes ADD COLUMN IF NOT EXISTS person text;
         ALTER TABLE oh_changes ADD COLUMN IF NOT EXISTS visibility text;
         {}",
        policy_sql("oh_changes", "oh_visible(person, visibility)", "oh_writable(person, visibility)")
    )
}

/// The policy (and scope columns) of one shared table; empty for the team's tables.
pub(crate) fn table_sql(t: &Table) -> String {
    if t.name == "chunks" {
        let mut sql = policy_sql(&t.name, "oh_visible(person, visibility)", "oh_writable(person, visibility)");
        // Rows follow their chunk by id or origin in the policies of the tables that link.
        sql.push_str("CREATE INDEX IF NOT EXISTS oh_chunks_id ON chunks (id);");
        sql.push_str("CREATE INDEX IF NOT EXISTS oh_chunks_origin ON chunks (origin);");
        return sql;
    }
    if link_of(&t.name).is_none() {
        return String::new();
    }
    let name = ident(&t.name);
    let mut sql = String::new();
    for c in SCOPE_COLUMNS {
        sql.push_str(&format!("ALTER TABLE {name} ADD COLUMN IF NOT EXISTS {c} text;"));
    }
    sql.push_str(&policy_sql(&t.name, "oh_visible(oh_person, oh_visibility)", "oh_writable(oh_person, oh_visibility)"));
    sql
}

/// Whether `t`'s rows carry the scope columns on the server.
pub(crate) fn scoped(t: &Table) -> bool {
    link_of(&t.name).is_some()
}

/// The tables whose highest row id the server keeps: those keyed by one integer column.
pub(crate) fn row_id_column(t: &Table) -> Option<usize> {
    match t.pk.as_slice() {
        [i] if t.columns[*i].affinity == Affinity::Integer => Some(*i),
        _ => None,
    }
}

/// Row-level security on `table`, forced on its owner too, with the one policy `oh_scope`.
fn policy_sql(table: &str, using: &str, check: &str) -> String {
    let t = ident(table);
    format!(
        "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;
         ALTER TABLE {t} FORCE ROW LEVEL SECURITY;
         DROP POLICY IF EXISTS oh_scope ON {t};
         CREATE POLICY oh_scope ON {t} USING ({using}) WITH CHECK ({check});"
    )
}

/// The SQL giving `table` (a table of the server's own, one row per chunk or more) the
/// visibility of the chunk its `rowid_column` names: a row is read, and written, only by those
/// who may read that chunk. Idempotent; run it as the table's owner after `migrate`.
pub fn follow_chunk_policy(table: &str, rowid_column: &str) -> String {
    let t = ident(table);
    let col = ident(rowid_column);
    let exists = format!("EXISTS (SELECT 1 FROM chunks c WHERE c.\"rowid\" = {t}.{col})");
    policy_sql(table, &exists, &exists)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_of_vectors_follows_its_chunk() {
        let sql = follow_chunk_policy("chunk_vectors", "chunk_rowid");
        assert!(sql.contains("FORCE ROW LEVEL SECURITY"), "{sql}");
        assert!(sql.contains("c.\"rowid\" = \"chunk_vectors\".\"chunk_rowid\""), "{sql}");
    }
}
