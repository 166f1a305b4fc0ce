//! `memory.history` (`openhuman.memory_history`): the versions of a fact, oldest first — every
//! chunk linked to the one named by replacements (see `facts`), with when each was observed,
//! what replaced it and why; and `memory.projects` (`openhuman.memory_projects`): the projects
//! chunks belong to, with their counts.

use openhuman_schema::params;
use rusqlite::OptionalExtension;
use serde::Serialize;

use super::{ID_CHARS, NoParams, Operation};
use crate::facts::{self, Version};
use crate::util::ms_to_rfc3339;
use crate::{MemoryEngine, MemoryError};

params! {
    /// Whose history.
    pub struct HistoryParams {
        id: String = string("A chunk id, or an item id (doc:…, learning:…) whose first chunk is meant.")
            .required()
            .max_chars(ID_CHARS),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryResult {
    pub id: String,
    /// The chunk the history was read from.
    pub chunk_id: String,
    /// Oldest first; the last stored one without `superseded_by` is current.
    pub versions: Vec<Version>,
    /// The current version (none when it was forgotten).
    pub current: Option<String>,
}

pub struct History;

impl Operation for History {
    const METHOD: &'static str = "openhuman.memory_history";
    type Params = HistoryParams;
    type Output = HistoryResult;
    fn run(engine: &MemoryEngine, p: HistoryParams) -> Result<HistoryResult, MemoryError> {
        engine.history(p)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectRow {
    pub project: String,
    pub chunks: i64,
    /// When its newest chunk was observed.
    pub last_observed_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectsResult {
    /// Most chunks first.
    pub projects: Vec<ProjectRow>,
    /// Chunks that belong to no project.
    pub without_project: i64,
}

pub struct Projects;

impl Operation for Projects {
    const METHOD: &'static str = "openhuman.memory_projects";
    type Params = NoParams;
    type Output = ProjectsResult;
    fn run(engine: &MemoryEngine, _: NoParams) -> Result<ProjectsResult, MemoryError> {
        engine.projects()
    }
}

/// Most projects listed.
const PROJECTS_MAX: i64 = 500;

impl MemoryEngine {
    /// The versions of the fact `p.id` names.
    pub fn history(&self, p: HistoryParams) -> Result<HistoryResult, MemoryError> {
        let id = p.id.trim().to_string();
        let conn = self.inner.read_conn()?;
        let chunk_id: Option<String> = conn
            .prepare_cached(
                "SELECT id FROM chunks WHERE id = ?1
                 UNION ALL SELECT * FROM (SELECT id FROM chunks WHERE origin = ?1 ORDER BY seq_in_source, timestamp_ms DESC)
                 LIMIT 1",
            )?
            .query_row([&id], |r| r.get(0))
            .optional()?;
        // A forgotten version is still named by the links around it.
        let chunk_id = match chunk_id {
            Some(c) => c,
            None => conn
                .prepare_cached(
                    "SELECT ?1 WHERE EXISTS (SELECT 1 FROM supersessions WHERE new_id = ?1 OR old_id = ?1)",
                )?
                .query_row([&id], |r| r.get(0))
                .optional()?
                .ok_or_else(|| crate::error::no_chunk(&id))?,
        };
        let versions = facts::history(&conn, &chunk_id)?;
        let current = versions.iter().rev().find(|v| v.current && v.stored).map(|v| v.chunk_id.clone());
        Ok(HistoryResult { id, chunk_id, versions, current })
    }

    /// The projects chunks belong to, most chunks first.
    pub fn projects(&self) -> Result<ProjectsResult, MemoryError> {
        let conn = self.inner.read_conn()?;
        let projects = conn
            .prepare_cached(
                "SELECT project, count(*) AS n, max(timestamp_ms) FROM chunks WHERE project IS NOT NULL
                 GROUP BY project ORDER BY n DESC, project LIMIT ?1",
            )?
            .query_map([PROJECTS_MAX], |r| {
                Ok(ProjectRow { project: r.get(0)?, chunks: r.get(1)?, last_observed_at: ms_to_rfc3339(r.get(2)?) })
            })?
            .collect::<rusqlite::Result<_>>()?;
        // Counted as all chunks less those with a project: both walk short index ranges, where
        // counting the NULLs of `chunks_project` walks every chunk without one (seconds at 10M).
        let without_project = conn
            .prepare_cached(
                "SELECT (SELECT count(*) FROM chunks) - (SELECT count(*) FROM chunks WHERE project IS NOT NULL)",
            )?
            .query_row([], |r| r.get(0))?;
        Ok(ProjectsResult { projects, without_project })
    }
}
