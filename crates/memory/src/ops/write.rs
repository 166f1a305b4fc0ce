//! The write operations MCP clients call (`memory.store`, `memory.note`, `tree.tag`,
//! `memory.learn`, `memory.forget`, `memory.split_entity`): each one's parameter type, declared
//! once, and the engine call that runs it on behalf of an [`Author`]. Their results are the
//! engine's write results (`Stored`, `Noted`, …); each runs in one transaction with its audit row.

use openhuman_common::normalize_id;
use openhuman_schema::params;
use serde_json::Map;
use sha2::{Digest, Sha256};

use super::filter_params;
use crate::types::{AuditRow, PutDocument};
use crate::util::rfc3339_to_ms;
use crate::visibility::{Visibility, with_requested};
use crate::write_api::{Forgotten, Learned, Noted, Split, Stored, Tagged};
use crate::{MemoryEngine, MemoryError};

/// The kinds of learning.
pub const LEARN_KINDS: &[&str] = &["preference", "fact", "procedure", "correction", "other"];

/// Who writes: the provenance label the data carries (`mcp:cursor`) and the audit row the write
/// commits with its data.
pub struct Author {
    pub source: String,
    pub audit: AuditRow,
}

params! {
    /// A document to save under a key derived from its title.
    pub struct StoreParams {
        title: String = string("Title; also names the document (same title = same document).")
            .required()
            .max_chars(512),
        content: String = string("The document text (Markdown welcome).").required(),
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<String> =
            string("Namespace: lowercase letters, digits, '.', '_' or '-' (default: default).").max_chars(64),
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tags: Vec<String> = list("Tags (at most 50, 128 characters each).", 50, 128),
        #[serde(skip_serializing_if = "Option::is_none")]
        project: Option<String> = string(
            "The project it belongs to: the absolute path of a git root or working directory (default: the session's)."
        )
        .max_chars(crate::project::MAX_BYTES),
        #[serde(skip_serializing_if = "Option::is_none")]
        observed_at: Option<String> =
            string("RFC 3339 time the fact was observed (default: now); orders it among versions.").max_chars(64),        #[serde(skip_serializing_if = "Option::is_none")]
        visibility: Option<String> = string(
            "Who may read it when memory is shared: machine, person, team or group:<role> (default: the configuration's)."
        )
        .max_chars(80),
    }
}

params! {
    /// A note for a chunk.
    pub struct NoteParams {
        chunk_id: String = string("The chunk to annotate (from search, recall or browse).")
            .required()
            .max_chars(256),
        note_text: String = string("The note.").required().max_chars(64 * 1024),        #[serde(skip_serializing_if = "Option::is_none")]
        visibility: Option<String> = string(
            "Who may read it when memory is shared: machine, person, team or group:<role> (default: the configuration's)."
        )
        .max_chars(80),
    }
}

params! {
    /// Tags for a chunk.
    pub struct TagParams {
        chunk_id: String = string("The chunk to tag.").required().max_chars(256),
        tags: Vec<String> = list("Tags: 1 to 50, each at most 128 characters (rejected, not trimmed).", 50, 128)
            .required()
            .min_items(1),
    }
}

params! {
    /// One learning about the user.
    pub struct LearnParams {
        text: String = string("The learning, in one or a few sentences.").required().max_chars(16 * 1024),
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<String> = one_of("preference, fact, procedure, correction or other (default other).", LEARN_KINDS),
        #[serde(skip_serializing_if = "Option::is_none")]
        confidence: Option<f64> = number("How sure, from 0 to 1.", 0.0, 1.0),
        #[serde(skip_serializing_if = "Option::is_none")]
        project: Option<String> = string(
            "The project it belongs to: the absolute path of a git root or working directory (default: the session's)."
        )
        .max_chars(crate::project::MAX_BYTES),
        #[serde(skip_serializing_if = "Option::is_none")]
        visibility: Option<String> = string(
            "Who may read it when memory is shared: machine, person, team or group:<role> (default: the configuration's)."
        )
        .max_chars(80),
    }
}

params! {
    /// What to delete.
    pub struct ForgetParams {
        ids: Vec<String> = list("Item or chunk ids to delete (1 to 100).", 100, 512).required().min_items(1),
    }
}

params! {
    /// Which merged name to split off.
    pub struct SplitEntityParams {
        entity_id: String = string("The merged id, e.g. person:a-lovelace or email:ada@example.com.")
            .required()
            .max_chars(512),
    }
}

/// Slug: ASCII letters/digits lowercased, other runs → `-`, trimmed, at most 64 chars;
/// empty → `untitled-<first 16 hex of sha256(title)>`.
pub fn slug(title: &str) -> String {
    let mut out = normalize_id(title);
    out.truncate(64);
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { format!("untitled-{}", &hex::encode(Sha256::digest(title.as_bytes()))[..16]) } else { out }
}

/// A namespace holds lowercase letters, digits, '.', '_' and '-', at most 64 of them.
pub fn namespace_ok(ns: &str) -> bool {
    !ns.is_empty()
        && ns.len() <= 64
        && ns.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

impl MemoryEngine {
    /// `memory.store`: saves (or replaces) the document named by its title.
    pub fn store(&self, p: StoreParams, by: Author) -> Result<Stored, MemoryError> {
        if let Some(ns) = &p.namespace
            && !namespace_ok(ns)
        {
            // The value is the caller's text: shown shortened, and not at all when it looks secret.
            let shown = if openhuman_common::looks_secret(ns) {
                "[redacted]".to_string()
            } else {
                ns.chars().take(64).collect()
            };
            return Err(MemoryError::InvalidParams(format!(
                "invalid arguments for memory.store: argument `namespace` may hold only lowercase letters, digits, \
                 '.', '_' and '-' (at most 64); got {shown:?}"
            )));
        }
        let project = filter_params::project_arg("project", &p.project)?;
        let timestamp_ms = match &p.observed_at {
            Some(t) => Some(rfc3339_to_ms(t).ok_or_else(|| {
                MemoryError::InvalidParams(format!(
                    "observed_at must be an RFC 3339 time such as 2024-05-01T00:00:00Z, got `{}`",
                    t.chars().take(64).collect::<String>()
                ))
            })?),
            None => None,
        };
        let doc = PutDocument {
            namespace: p.namespace,
            key: format!("mcp-store-{}", slug(&p.title)),
            title: Some(p.title),
            content: p.content,
            tags: p.tags,
            metadata: Map::new(),
            timestamp_ms,
            source: by.source,
            project,
            track_facts: true,
        };
        let vis = self.visibility_arg(&p.visibility)?;
        with_requested(vis, || self.put_document(doc, by.audit))
    }

    /// `memory.note`: the chunk's note from this tool (a second one replaces the first).
    pub fn note(&self, p: NoteParams, by: Author) -> Result<Noted, MemoryError> {
        let key = format!("mcp-note-{}", p.chunk_id.trim());
        let vis = self.visibility_arg(&p.visibility)?;
        with_requested(vis, || self.add_note(&p.chunk_id, &p.note_text, &key, &by.source, by.audit))
    }

    /// `tree.tag`: the chunk's tags from this tool (replacing those it set before).
    pub fn tag(&self, p: TagParams, by: Author) -> Result<Tagged, MemoryError> {
        let key = format!("mcp-tag-{}", p.chunk_id.trim());
        self.tag_chunk(&p.chunk_id, &p.tags, &key, &by.source, by.audit)
    }

    /// `memory.learn`: one new learning.
    pub fn learn_one(&self, p: LearnParams, by: Author) -> Result<Learned, MemoryError> {
        let project = filter_params::project_arg("project", &p.project)?;
        let kind = p.kind.as_deref().unwrap_or("other");
        let vis = self.visibility_arg(&p.visibility)?;
        with_requested(vis, || {
            self.learn_with(&p.text, kind, p.confidence, project.as_deref(), true, &by.source, by.audit)
        })
    }

    /// `memory.forget`: deletes what the ids name, for good.
    pub fn forget_ids(&self, p: ForgetParams, by: Author) -> Result<Forgotten, MemoryError> {
        self.forget(&p.ids, &by.source, by.audit)
    }

    /// A write's `visibility` argument, as the rows carry it.
    fn visibility_arg(&self, v: &Option<String>) -> Result<Option<String>, MemoryError> {
        let Some(v) = v else { return Ok(None) };
        let vis = Visibility::parse(v)
            .map_err(|e| MemoryError::InvalidParams(format!("invalid arguments: argument `visibility`: {e}")))?;
        Ok(Some(vis.stored(self.inner.machine().unwrap_or_default())))
    }

    /// `memory.split_entity`: undoes a merge of people.
    pub fn split(&self, p: SplitEntityParams, by: Author) -> Result<Split, MemoryError> {
        self.split_entity(&p.entity_id, by.audit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_name_documents_by_title() {
        assert_eq!(slug("Meeting notes: Q3 plan!"), "meeting-notes-q3-plan");
        assert_eq!(slug("  --Hello__World--  "), "hello-world");
        assert_eq!(slug(&"a".repeat(100)).len(), 64);
        let s = slug("会议记录");
        assert!(s.starts_with("untitled-") && s.len() == "untitled-".len() + 16, "{s}");
        assert_eq!(slug("会议记录"), s, "deterministic");
    }
}
