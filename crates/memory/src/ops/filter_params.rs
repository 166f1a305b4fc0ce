//! The `filter` object of every listing and ranking operation, declared once, and its
//! compilation into the engine's [`Filter`] (which turns it into one SQL predicate). What the
//! schema cannot say (a time must parse as RFC 3339) is checked here, once.

use openhuman_schema::params;

use crate::MemoryError;
use crate::filter::Filter;
use crate::types::SourceKind;
use crate::util::rfc3339_to_ms;

/// The kinds a filter names (`conversation` is another name for chat).
pub(crate) const KINDS: &[&str] = &["document", "conversation", "learning", "note", "email", "chat"];

params! {
    /// Restricts what a listing or ranking returns; every condition given must hold.
    pub struct FilterParams {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kinds: Vec<String> = list("Only these kinds of items.", 6, 32).items_one_of(KINDS),
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sources: Vec<String> = list("Only items written by these provenance labels, e.g. mcp:cursor.", 50, 256),
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        source_ids: Vec<String> = list("Only items from these sources (ids from tree.list_sources).", 100, 512),
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tags_any: Vec<String> = list("Only items carrying at least one of these tags.", 50, 128),
        #[serde(skip_serializing_if = "Option::is_none")]
        observed_after: Option<String> = string("RFC 3339 time; only items observed after it.").max_chars(64),
        #[serde(skip_serializing_if = "Option::is_none")]
        observed_before: Option<String> = string("RFC 3339 time; only items observed before it.").max_chars(64),
        #[serde(skip_serializing_if = "Option::is_none")]
        workspace: Option<String> = string("Exact workspace.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        folder: Option<String> = string("Exact folder.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        file_path: Option<String> = string("Exact file path.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        language: Option<String> = string("Exact language.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        repo: Option<String> = string("Exact repository.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        commit: Option<String> = string("Exact commit.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        url: Option<String> = string("Exact URL.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        thread_id: Option<String> = string("Exact thread id.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        agent_id: Option<String> = string("Exact agent id.").max_chars(2048),
        #[serde(skip_serializing_if = "Option::is_none")]
        project: Option<String> =
            string("Only items of this project: the absolute path of its git root or working directory.")
                .max_chars(crate::project::MAX_BYTES),
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        entity_ids: Vec<String> =
            list("Only items mentioning these entities (ids from tree.top_entities), e.g. person:alice-smith.", 50, 512),
    }
}

/// Kind names as the engine stores them, each once; `what` names the argument in the error.
pub(crate) fn kinds(what: &str, names: &[String]) -> Result<Vec<&'static str>, MemoryError> {
    let mut out = Vec::new();
    for k in names {
        let kind = SourceKind::parse(k).ok_or_else(|| {
            MemoryError::InvalidParams(format!(
                "{what}: unknown kind `{k}` (use document, conversation, chat, email, note or learning)"
            ))
        })?;
        if !out.contains(&kind.as_str()) {
            out.push(kind.as_str());
        }
    }
    Ok(out)
}

fn time(key: &str, value: &Option<String>) -> Result<Option<i64>, MemoryError> {
    let Some(s) = value else { return Ok(None) };
    rfc3339_to_ms(s).map(Some).ok_or_else(|| {
        MemoryError::InvalidParams(format!(
            "filter.{key} must be an RFC 3339 time such as 2024-05-01T00:00:00Z, got `{s}`"
        ))
    })
}

/// A project argument, normalised; `what` names it in the error.
pub(crate) fn project_arg(what: &str, value: &Option<String>) -> Result<Option<String>, MemoryError> {
    let Some(raw) = value else { return Ok(None) };
    crate::project::normalize(raw).map(Some).ok_or_else(|| {
        MemoryError::InvalidParams(format!(
            "{what} must be an absolute path (a project's git root or working directory), such as /home/me/app"
        ))
    })
}

fn project(value: &Option<String>) -> Result<Option<String>, MemoryError> {
    project_arg("filter.project", value)
}

impl FilterParams {
    /// The engine's filter for these conditions.
    pub(crate) fn compile(&self) -> Result<Filter, MemoryError> {
        let meta = [
            ("workspace", &self.workspace),
            ("folder", &self.folder),
            ("file_path", &self.file_path),
            ("language", &self.language),
            ("repo", &self.repo),
            ("commit", &self.commit),
            ("url", &self.url),
            ("thread_id", &self.thread_id),
            ("agent_id", &self.agent_id),
        ];
        Ok(Filter {
            kinds: kinds("filter.kinds", &self.kinds)?,
            sources: self.sources.clone(),
            source_ids: self.source_ids.clone(),
            tags_any: self.tags_any.clone(),
            entity_ids: self.entity_ids.clone(),
            after_ms: time("observed_after", &self.observed_after)?,
            before_ms: time("observed_before", &self.observed_before)?,
            meta: meta.iter().filter_map(|(k, v)| Some((k.to_string(), (*v).clone()?))).collect(),
            project: project(&self.project)?,
            rowids: None,
        })
    }
}

/// The engine filter of an optional `filter` argument (none: no condition).
pub(crate) fn compile(filter: &Option<FilterParams>) -> Result<Filter, MemoryError> {
    filter.as_ref().map_or_else(|| Ok(Filter::default()), FilterParams::compile)
}

#[cfg(test)]
mod tests {
    use openhuman_schema::Params;

    use super::*;

    /// The metadata keys the filter names are the ones the store indexes, so no condition is
    /// silently ignored.
    #[test]
    fn metadata_keys_are_the_indexed_ones() {
        let names: Vec<&str> = FilterParams::spec().fields.iter().map(|f| f.name).collect();
        for key in crate::store::FILTER_META_KEYS {
            assert!(names.contains(key), "{key} is indexed but cannot be filtered on");
        }
    }
}
