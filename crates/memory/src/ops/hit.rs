//! The chunk summary every hit and listing row starts with: which chunk, where it comes from,
//! when, its tags, and either a snippet around the query's words or a preview of its start.

use serde::Serialize;

use crate::search::ChunkRow;
use crate::search::Superseded;
use crate::snippet::snippet;
use crate::util::preview;

/// Characters of a listing row's preview.
const PREVIEW_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkSummary {
    pub chunk_id: String,
    /// The passage around the query's words, with them highlighted (when there was a query).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// The chunk's first characters (a listing without a query).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    pub source_kind: String,
    pub source_id: String,
    pub source_ref: String,
    pub title: Option<String>,
    pub timestamp_ms: i64,
    pub tags: Vec<String>,
    /// The project the chunk belongs to (a git root or working directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// A newer chunk replaced this one: which, why and both dates (`memory.history` lists the
    /// chain).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Superseded>,
}

impl ChunkSummary {
    /// A summary with a snippet around `terms`.
    pub(crate) fn with_snippet(c: &ChunkRow, terms: &[String]) -> ChunkSummary {
        ChunkSummary { snippet: Some(snippet(&c.content, terms)), ..ChunkSummary::bare(c) }
    }

    /// A summary with a preview of the chunk's start.
    pub(crate) fn with_preview(c: &ChunkRow) -> ChunkSummary {
        ChunkSummary { preview: Some(preview(c.content.trim(), PREVIEW_CHARS)), ..ChunkSummary::bare(c) }
    }

    fn bare(c: &ChunkRow) -> ChunkSummary {
        ChunkSummary {
            chunk_id: c.id.clone(),
            snippet: None,
            preview: None,
            source_kind: c.kind.clone(),
            source_id: c.source_id.clone(),
            source_ref: c.source_ref.clone(),
            title: c.title.clone(),
            timestamp_ms: c.timestamp_ms,
            tags: c.tags.clone(),
            project: c.project.clone(),
            superseded: c.superseded.clone(),
        }
    }
}
