//! Your data out and back in. `export` writes a directory: one JSON Lines file per table a user
//! would lose (the database's own rows, not the derived indexes), a `manifest.json` naming the
//! format version and how many records each file holds, and a `markdown/` tree for reading (one
//! file per source). `import` loads such a directory into a store through the engine's write
//! path, so the indexes follow and nothing already there is overwritten. `backup` and `restore`
//! (in `transfer/backup`) copy the whole database as one SQLite file instead.
//!
//! The tables are listed once, in [`TABLES`]: the same list drives the export's queries, the
//! manifest, and the import's statements, so a table cannot be exported and then forgotten.

mod backup;
mod export;
mod import;
mod markdown;

pub use backup::{BackupSummary, RestoreSummary, backup, restore};
pub use export::ExportSummary;
pub use import::ImportSummary;

/// The `format` field of every export's manifest.
pub const FORMAT: &str = "openhuman-memory-export";
/// The layout this build writes and the newest it reads.
pub const FORMAT_VERSION: u64 = 1;
pub(crate) const MANIFEST: &str = "manifest.json";
pub(crate) const MARKDOWN_DIR: &str = "markdown";

/// How a table's records get back into a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Load {
    /// Rows as they are, `INSERT OR IGNORE` on the table's key: a record already there wins.
    Plain,
    /// Through the engine's chunk insert (filter metadata, entities, index change sequence).
    Chunks,
    /// Tags name their chunk by id; the store's rowid for it is looked up.
    Tags,
    /// Audit rows have no key of their own: a row identical in every field is not added again.
    Audit,
    /// Entities are derived (extracted and counted from chunk text as chunks are written); only
    /// the display name of an entity the import brought is taken from the file, since the
    /// store names an entity after the first chunk that mentioned it, which may be gone.
    Entities,
}

/// One exported table: its file, the query that reads it (columns in `columns` order), which
/// columns hold JSON text, and how it is loaded.
pub(crate) struct Table {
    pub file: &'static str,
    /// The table `Load::Plain` and `Load::Audit` insert into.
    pub table: &'static str,
    pub columns: &'static [&'static str],
    pub select: &'static str,
    pub json: &'static [&'static str],
    pub load: Load,
}

/// Every table a user would lose, in the order an import needs them (chunks before what hangs
/// off them). Not here, because they are derived or internal: `chunk_meta` and `chunk_entities`
/// (recomputed from each chunk), `tombstones`, `index_state` and `meta` (index bookkeeping).
pub(crate) const TABLES: &[Table] = &[
    Table {
        file: "sources.jsonl",
        table: "sources",
        columns: &["source_id", "source_kind", "display_name", "metadata", "created_at_ms", "updated_at_ms"],
        select: "SELECT source_id, source_kind, display_name, metadata, created_at_ms, updated_at_ms FROM sources \
                 ORDER BY source_id",
        json: &["metadata"],
        load: Load::Plain,
    },
    // Before the chunks: a merge the user split apart stays apart when the chunks' entities are
    // extracted again on import (merges themselves are derived and made again).
    Table {
        file: "entity_splits.jsonl",
        table: "entity_splits",
        columns: &["alias", "entity_id", "split_at_ms"],
        select: "SELECT alias, entity_id, split_at_ms FROM entity_splits ORDER BY alias",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "chunks.jsonl",
        table: "chunks",
        columns: &[
            "id",
            "source_kind",
            "source_id",
            "source_ref",
            "origin",
            "owner",
            "provenance",
            "timestamp_ms",
            "seq_in_source",
            "title",
            "content",
            "metadata",
            "created_at_ms",
            "project",
        ],
        select: "SELECT id, source_kind, source_id, source_ref, origin, owner, provenance, timestamp_ms, seq_in_source, \
                 title, content, metadata, created_at_ms, project FROM chunks ORDER BY rowid",
        json: &["metadata"],
        load: Load::Chunks,
    },
    Table {
        file: "tags.jsonl",
        table: "chunk_tags",
        columns: &["chunk_id", "tag", "origin_key"],
        select: "SELECT c.id, t.tag, t.origin_key FROM chunk_tags t JOIN chunks c ON c.rowid = t.chunk_rowid \
                 ORDER BY c.rowid, t.origin_key, t.tag",
        json: &[],
        load: Load::Tags,
    },
    // After the chunks, whose ids it names; an import adds a link only when it has neither end
    // of it already (a record already there wins, like every table's).
    Table {
        file: "supersessions.jsonl",
        table: "supersessions",
        columns: &["old_id", "new_id", "reason", "similarity", "at_ms"],
        select: "SELECT old_id, new_id, reason, similarity, at_ms FROM supersessions ORDER BY at_ms, old_id",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "notes.jsonl",
        table: "notes",
        columns: &["item_id", "chunk_id", "text", "key", "provenance", "created_at_ms", "updated_at_ms"],
        select: "SELECT item_id, chunk_id, text, key, provenance, created_at_ms, updated_at_ms FROM notes \
                 ORDER BY created_at_ms, item_id",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "learnings.jsonl",
        table: "learnings",
        columns: &["item_id", "kind", "confidence", "text", "provenance", "created_at_ms"],
        select: "SELECT item_id, kind, confidence, text, provenance, created_at_ms FROM learnings \
                 ORDER BY created_at_ms, item_id",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "items.jsonl",
        table: "kv",
        columns: &[
            "kind",
            "namespace",
            "key",
            "item_id",
            "content_hash",
            "provenance",
            "created_at_ms",
            "updated_at_ms",
        ],
        select: "SELECT kind, namespace, key, item_id, content_hash, provenance, created_at_ms, updated_at_ms FROM kv \
                 ORDER BY kind, namespace, key",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "files.jsonl",
        table: "files",
        columns: &["path", "content_hash", "size", "kind", "chunk_count", "ingested_at_ms", "mtime_ms"],
        select: "SELECT path, content_hash, size, kind, chunk_count, ingested_at_ms, mtime_ms FROM files ORDER BY path",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "email_threads.jsonl",
        table: "email_messages",
        columns: &["message_id", "thread_id", "subject_norm"],
        select: "SELECT message_id, thread_id, subject_norm FROM email_messages ORDER BY message_id",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "links.jsonl",
        table: "links",
        columns: &["source_id", "target", "heading", "alias", "target_key"],
        select: "SELECT source_id, target, heading, alias, target_key FROM links ORDER BY source_id, target, heading, alias",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "detached.jsonl",
        table: "detached",
        columns: &["chunk_id", "origin", "source_ref", "content", "detached_at_ms"],
        select: "SELECT chunk_id, origin, source_ref, content, detached_at_ms FROM detached ORDER BY chunk_id",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "detached_tags.jsonl",
        table: "detached_tags",
        columns: &["chunk_id", "tag", "origin_key"],
        select: "SELECT chunk_id, tag, origin_key FROM detached_tags ORDER BY chunk_id, origin_key, tag",
        json: &[],
        load: Load::Plain,
    },
    Table {
        file: "entities.jsonl",
        table: "entities",
        columns: &["id", "kind", "display_name", "mention_count", "chunk_count"],
        select: "SELECT id, kind, display_name, mention_count, chunk_count FROM entities WHERE chunk_count > 0 \
                 ORDER BY mention_count DESC, id",
        json: &[],
        load: Load::Entities,
    },
    Table {
        file: "audit.jsonl",
        table: "mcp_audit",
        columns: &["ts_ms", "tool", "source", "client_info", "success", "error", "result_id", "args_summary"],
        select: "SELECT ts_ms, tool, source, client_info, success, error, result_id, args_summary FROM mcp_audit \
                 ORDER BY id",
        json: &["client_info", "args_summary"],
        load: Load::Audit,
    },
];
