//! Public data types of the memory engine that are not JSON-in/JSON-out: write
//! requests, audit rows, ingest progress and summaries.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of source a chunk came from (the `source_kind` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Document,
    Email,
    Chat,
    Note,
    Learning,
}

impl SourceKind {
    pub const ALL: [SourceKind; 5] =
        [SourceKind::Document, SourceKind::Email, SourceKind::Chat, SourceKind::Note, SourceKind::Learning];

    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Document => "document",
            SourceKind::Email => "email",
            SourceKind::Chat => "chat",
            SourceKind::Note => "note",
            SourceKind::Learning => "learning",
        }
    }

    /// Parses a kind name as clients write it; `conversation` is the documented alias of `chat`.
    pub fn parse(s: &str) -> Option<SourceKind> {
        match s {
            "document" => Some(SourceKind::Document),
            "email" => Some(SourceKind::Email),
            "chat" | "conversation" => Some(SourceKind::Chat),
            "note" => Some(SourceKind::Note),
            "learning" => Some(SourceKind::Learning),
            _ => None,
        }
    }
}

/// An upsert of one document keyed by `(namespace, key)` (what `memory.store` sends).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutDocument {
    /// Defaults to `default`.
    #[serde(default)]
    pub namespace: Option<String>,
    pub key: String,
    #[serde(default)]
    pub title: Option<String>,
    pub content: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Exact-match metadata (workspace, folder, file_path, language, repo, commit, url,
    /// thread_id, agent_id, …); stored with every chunk of the document.
    #[serde(default)]
    pub metadata: serde_json::Map<String, Value>,
    /// When the document was observed; defaults to now.
    #[serde(default)]
    pub timestamp_ms: Option<i64>,
    /// Provenance label of the writer, e.g. `mcp:cursor`.
    pub source: String,
    /// The project the document belongs to (an absolute path); none: `metadata.project`.
    #[serde(default)]
    pub project: Option<String>,
    /// Treat the document as a fact (see `facts`): a near-identical one already stored is
    /// refreshed instead, a re-store under the same key keeps the earlier version as
    /// superseded, and an update of a similar fact supersedes it.
    #[serde(default)]
    pub track_facts: bool,
}

/// One row of the `mcp_audit` table: one write-tool attempt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub ts_ms: i64,
    pub tool: String,
    /// Provenance label (`mcp:<client>`).
    pub source: String,
    /// The client's `clientInfo` as it sent it (or null).
    #[serde(default)]
    pub client_info: Value,
    pub success: bool,
    /// At most 1024 bytes are stored.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub result_id: Option<String>,
    /// Argument summary without bodies (lengths and counts instead of content).
    #[serde(default)]
    pub args_summary: Value,
    /// The daemon that wrote the row, with a shared store (its `[memory.postgres] machine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The person whose daemon wrote the row, with a shared store that has persons (the
    /// database role it connects as).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

/// Selection for [`super::MemoryEngine::query_audit`]; newest rows first.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Defaults to 50.
    pub limit: Option<usize>,
    pub tool: Option<String>,
    /// Matches the source label exactly, or the client name inside it (`cursor` matches
    /// `mcp:cursor`).
    pub client: Option<String>,
    pub since_ms: Option<i64>,
    pub failed_only: bool,
}

/// Reported to the ingest caller after every file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestProgress {
    pub files_total: usize,
    pub files_done: usize,
    pub chunks_written: usize,
    pub current: Option<PathBuf>,
}

/// A file that could not be ingested, and why.
#[derive(Debug, Clone, Serialize)]
pub struct FileError {
    pub path: PathBuf,
    pub error: String,
}

/// Lines, messages or files that ingest passed over for one reason, with where the first was.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// `line`, `message` or `file`.
    pub unit: String,
    pub reason: String,
    pub count: usize,
    /// The first one: a path, with `:<line>` or `#<n>` when it was a line or a message.
    pub first: String,
}

/// How many unsupported files `IngestSummary::unsupported` names; the count has them all.
pub const UNSUPPORTED_NAMED: usize = 20;

#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestSummary {
    pub files_seen: usize,
    pub files_ingested: usize,
    /// Files whose content hash had not changed since the last ingest.
    pub files_unchanged: usize,
    /// Files no importer reads (neither their content nor their extension says what they are,
    /// and no `kind` was given).
    pub files_unsupported: usize,
    /// The first `UNSUPPORTED_NAMED` of those files.
    pub unsupported: Vec<PathBuf>,
    pub files_failed: Vec<FileError>,
    pub chunks_added: usize,
    pub chunks_removed: usize,
    /// Files ingested before under the named paths that no longer exist: their chunks were removed.
    pub files_removed: usize,
    /// Chunks of changed files whose user tags and notes moved to the chunk now holding their text.
    pub annotations_moved: usize,
    /// Chunks whose user tags and notes lost their text (edited away or file deleted): kept detached.
    pub annotations_detached: usize,
    /// Lines of chat exports that were not messages (the `line` entries of `skipped`, summed).
    pub lines_skipped: usize,
    /// Everything passed over, counted by reason: bad lines, messages without text or time,
    /// system lines, files kept out on purpose. Never silent.
    pub skipped: Vec<Skipped>,
    /// Chunks still waiting for their vector when ingest returned; the background
    /// thread embeds them (recall uses keywords for them until then).
    pub vectors_pending: usize,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReindexSummary {
    pub chunks: usize,
    pub fts_docs: u64,
    pub vectors: usize,
    pub duration_ms: u64,
}
