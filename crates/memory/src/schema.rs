//! The SQLite schema and its versioned migrations (`PRAGMA user_version`), plus the
//! connection settings every connection gets.
//!
//! SQLite is the source of truth. The full-text and vector indexes are derived from it
//! and track how far they have applied the database's change sequence (`meta.db_seq`,
//! `chunks.change_seq`, `tombstones`), so that they can be caught up or rebuilt.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::error::{MemoryError, ResultExt};

/// One entry per schema version; entry `i` moves a database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8];

const V1: &str = r#"
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (name, value) VALUES ('db_seq', 0);

CREATE TABLE sources (
    source_id     TEXT PRIMARY KEY,
    source_kind   TEXT NOT NULL,
    display_name  TEXT NOT NULL,
    metadata      TEXT NOT NULL DEFAULT '{}',
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

-- AUTOINCREMENT: a rowid is never reused, so the derived indexes (keyed by rowid) can
-- add new rows without first deleting a stale entry of the same rowid.
CREATE TABLE chunks (
    rowid         INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    source_kind   TEXT NOT NULL,
    source_id     TEXT NOT NULL,
    source_ref    TEXT NOT NULL,
    origin        TEXT NOT NULL,
    owner         TEXT,
    provenance    TEXT NOT NULL,
    timestamp_ms  INTEGER NOT NULL,
    seq_in_source INTEGER NOT NULL,
    title         TEXT,
    content       TEXT NOT NULL,
    token_count   INTEGER NOT NULL,
    metadata      TEXT NOT NULL DEFAULT '{}',
    created_at_ms INTEGER NOT NULL,
    change_seq    INTEGER NOT NULL
);
CREATE INDEX chunks_time      ON chunks(timestamp_ms);
CREATE INDEX chunks_kind_time ON chunks(source_kind, timestamp_ms);
CREATE INDEX chunks_source    ON chunks(source_id, timestamp_ms);
CREATE INDEX chunks_origin    ON chunks(origin);
CREATE INDEX chunks_prov      ON chunks(provenance);
CREATE INDEX chunks_change    ON chunks(change_seq);

-- origin_key '' = the chunk's own tags; otherwise the upsert key of the tag write that
-- added them, so a repeated write with the same key replaces only its own tags.
CREATE TABLE chunk_tags (
    chunk_rowid INTEGER NOT NULL,
    tag         TEXT NOT NULL,
    origin_key  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (chunk_rowid, tag, origin_key)
) WITHOUT ROWID;
CREATE INDEX chunk_tags_tag ON chunk_tags(tag, chunk_rowid);

-- Exact-match filter fields copied out of chunks.metadata so filters use an index.
CREATE TABLE chunk_meta (
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    chunk_rowid INTEGER NOT NULL,
    PRIMARY KEY (key, value, chunk_rowid)
) WITHOUT ROWID;
CREATE INDEX chunk_meta_row ON chunk_meta(chunk_rowid);

CREATE TABLE entities (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    display_name  TEXT NOT NULL,
    mention_count INTEGER NOT NULL DEFAULT 0,
    chunk_count   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX entities_rank      ON entities(mention_count DESC);
CREATE INDEX entities_kind_rank ON entities(kind, mention_count DESC);

CREATE TABLE chunk_entities (
    chunk_rowid INTEGER NOT NULL,
    entity_id   TEXT NOT NULL,
    mentions    INTEGER NOT NULL,
    PRIMARY KEY (chunk_rowid, entity_id)
) WITHOUT ROWID;
CREATE INDEX chunk_entities_entity ON chunk_entities(entity_id, chunk_rowid);

-- Deleted chunk rowids by the db_seq of the transaction that deleted them; pruned once
-- every derived index has applied that sequence.
CREATE TABLE tombstones (
    seq         INTEGER NOT NULL,
    chunk_rowid INTEGER NOT NULL
);
CREATE INDEX tombstones_seq ON tombstones(seq);

CREATE TABLE files (
    path           TEXT PRIMARY KEY,
    content_hash   TEXT NOT NULL,
    size           INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    chunk_count    INTEGER NOT NULL,
    ingested_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE kv (
    kind          TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    key           TEXT NOT NULL,
    item_id       TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    provenance    TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, namespace, key)
) WITHOUT ROWID;
CREATE INDEX kv_item ON kv(item_id);

CREATE TABLE notes (
    item_id       TEXT PRIMARY KEY,
    chunk_id      TEXT NOT NULL,
    text          TEXT NOT NULL,
    key           TEXT NOT NULL,
    provenance    TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX notes_chunk ON notes(chunk_id);

CREATE TABLE learnings (
    item_id       TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    confidence    REAL,
    text          TEXT NOT NULL,
    provenance    TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

-- Message-ID -> thread, so replies in later files join the thread of earlier ones.
CREATE TABLE email_messages (
    message_id   TEXT PRIMARY KEY,
    thread_id    TEXT NOT NULL,
    subject_norm TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX email_messages_subject ON email_messages(subject_norm);

CREATE TABLE mcp_audit (
    id           INTEGER PRIMARY KEY,
    ts_ms        INTEGER NOT NULL,
    tool         TEXT NOT NULL,
    source       TEXT NOT NULL,
    client_info  TEXT,
    success      INTEGER NOT NULL,
    error        TEXT,
    result_id    TEXT,
    args_summary TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX mcp_audit_ts ON mcp_audit(ts_ms);

-- The last db_seq each derived index has durably applied ('fts', 'vectors').
CREATE TABLE index_state (
    name          TEXT PRIMARY KEY,
    seq           INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    detail        TEXT
) WITHOUT ROWID;
"#;

/// Annotations kept when the passage they were on left its file (see `anchor`).
const V2: &str = r#"
CREATE TABLE detached (
    chunk_id       TEXT PRIMARY KEY,
    origin         TEXT NOT NULL,
    source_ref     TEXT NOT NULL,
    content        TEXT NOT NULL,
    detached_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX detached_origin ON detached(origin);

CREATE TABLE detached_tags (
    chunk_id   TEXT NOT NULL,
    tag        TEXT NOT NULL,
    origin_key TEXT NOT NULL,
    PRIMARY KEY (chunk_id, tag, origin_key)
) WITHOUT ROWID;
"#;

/// Watched folders: each file's modification time as last synced (so a daemon that was down
/// compares size and time before reading anything), and the `[[wiki links]]` between notes
/// (see `links`).
const V3: &str = r#"
ALTER TABLE files ADD COLUMN mtime_ms INTEGER NOT NULL DEFAULT 0;

CREATE TABLE links (
    source_id  TEXT NOT NULL,
    target     TEXT NOT NULL,
    heading    TEXT NOT NULL DEFAULT '',
    alias      TEXT NOT NULL DEFAULT '',
    target_key TEXT NOT NULL,
    PRIMARY KEY (source_id, target, heading, alias)
) WITHOUT ROWID;
CREATE INDEX links_target ON links(target_key);
"#;

/// People (see `entities`): who sent and received each chunk's messages, each sender's
/// totals and message openings (what tells a templated sender), the merges of one person's
/// names and addresses (`entity_aliases`: the alias counts as `entity_id`, for `reason`), and
/// the merges a user undid (`entity_splits`), which are never made again.
const V4: &str = r#"
CREATE TABLE chunk_senders (
    chunk_rowid INTEGER NOT NULL,
    entity_id   TEXT NOT NULL,
    sent        INTEGER NOT NULL,
    received    INTEGER NOT NULL,
    PRIMARY KEY (chunk_rowid, entity_id)
) WITHOUT ROWID;
CREATE INDEX chunk_senders_entity ON chunk_senders(entity_id, chunk_rowid);

CREATE TABLE people (
    entity_id TEXT PRIMARY KEY,
    sent      INTEGER NOT NULL DEFAULT 0,
    received  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE people_openings (
    entity_id TEXT NOT NULL,
    opening   INTEGER NOT NULL,
    PRIMARY KEY (entity_id, opening)
) WITHOUT ROWID;

CREATE TABLE entity_aliases (
    alias         TEXT PRIMARY KEY,
    entity_id     TEXT NOT NULL,
    reason        TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX entity_aliases_entity ON entity_aliases(entity_id);

CREATE TABLE entity_splits (
    alias       TEXT PRIMARY KEY,
    entity_id   TEXT NOT NULL,
    split_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Which daemon wrote an audit row, when several share one memory (see `shared`).
const V5: &str = r#"
ALTER TABLE mcp_audit ADD COLUMN machine TEXT;
"#;

/// Agents' session logs read as they grow (see `sessions`): how far each file was read, with
/// fingerprints of what lies before the offset, and the sessions forgotten for good.
const V6: &str = r#"
CREATE TABLE session_files (
    path          TEXT PRIMARY KEY,
    byte_offset   INTEGER NOT NULL,
    head_print    TEXT NOT NULL,
    tail_print    TEXT NOT NULL,
    context       TEXT NOT NULL,
    turns         INTEGER NOT NULL,
    malformed     INTEGER NOT NULL,
    unknown       INTEGER NOT NULL,
    excluded      INTEGER NOT NULL,
    waiting       INTEGER NOT NULL,
    size          INTEGER NOT NULL,
    mtime_ms      INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE forgotten_sessions (
    session_id      TEXT PRIMARY KEY,
    forgotten_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Projects and facts that change (see `project` and `facts`): the project a chunk belongs to (a
/// normalised absolute path of a git root or working directory), and which chunk replaced which
/// (`supersessions`: the older chunk's id, the newer one's — which may have been forgotten since
/// —, why, how similar they were, and when the newer one was observed).
const V7: &str = r#"
ALTER TABLE chunks ADD COLUMN project TEXT;
CREATE INDEX chunks_project ON chunks(project, timestamp_ms);

CREATE TABLE supersessions (
    old_id     TEXT PRIMARY KEY,
    new_id     TEXT NOT NULL,
    reason     TEXT NOT NULL,
    similarity REAL,
    at_ms      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX supersessions_new ON supersessions(new_id);
"#;

/// Who sees what in a shared store (see `visibility`): the person a chunk belongs to (the
/// database role its daemon connects as; `owner` stays the author the source names) and its
/// visibility (`team`, `person`, `machine:<name>`, `group:<role>`); the person of an audit row.
const V8: &str = r#"
ALTER TABLE chunks ADD COLUMN person TEXT;
ALTER TABLE chunks ADD COLUMN visibility TEXT NOT NULL DEFAULT 'team';
ALTER TABLE mcp_audit ADD COLUMN person TEXT;
"#;

/// The schema version this code writes.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Opens a connection with the engine's settings: WAL (readers never block the writer),
/// `synchronous=NORMAL` (a crash loses at most the last commits, never consistency),
/// foreign-key-free schema, a busy timeout for the short writer waits, and the `rarray`
/// table function used to pass id lists.
pub(crate) fn open_connection(path: &Path) -> Result<Connection, MemoryError> {
    let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -32_000)?;
    rusqlite::vtab::array::load_module(&conn)?;
    Ok(conn)
}

/// Brings the database to [`SCHEMA_VERSION`]; each step commits with its version bump, so
/// running it again (or after a crash mid-way) is a no-op or resumes.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), MemoryError> {
    migrate_to(conn, SCHEMA_VERSION)
}

/// Brings the database to `target` (tests make stores of older versions with it).
pub(crate) fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), MemoryError> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current > SCHEMA_VERSION {
        return Err(MemoryError::SchemaTooNew { found: current, supported: SCHEMA_VERSION });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize).take((target - current).max(0) as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql).with_context(|| format!("applying memory schema migration {}", i + 1))?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
        tracing::info!(version = i + 1, "memory schema migrated");
    }
    Ok(())
}
