//! The engine's filter: what an operation's `filter` argument compiles to (see
//! `ops::FilterParams`), turned into one SQL predicate over `chunks c` so every listing and
//! every search mode filters with the same semantics. Time bounds are inclusive.

use std::collections::HashSet;

use rusqlite::{Connection, ToSql, params_from_iter};

use super::MemoryError;
use super::sql::rarray;

#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub kinds: Vec<&'static str>,
    pub sources: Vec<String>,
    pub source_ids: Vec<String>,
    pub tags_any: Vec<String>,
    pub entity_ids: Vec<String>,
    pub after_ms: Option<i64>,
    pub before_ms: Option<i64>,
    pub meta: Vec<(String, String)>,
    /// Only chunks of this project (a normalised path, see `project`).
    pub project: Option<String>,
    /// Only these rowids (e.g. the chunks matching a listing's `query`).
    pub rowids: Option<Vec<i64>>,
}

impl Filter {
    /// A filter on entities first lets a short backlog of entity extraction finish (see
    /// `entities::settle`), so that a chunk just written matches by what its text mentions.
    pub fn settle_entities(&self, inner: &std::sync::Arc<super::Inner>) -> Result<(), MemoryError> {
        if self.entity_ids.is_empty() { Ok(()) } else { super::entities::settle(inner) }
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
            && self.sources.is_empty()
            && self.source_ids.is_empty()
            && self.tags_any.is_empty()
            && self.entity_ids.is_empty()
            && self.after_ms.is_none()
            && self.before_ms.is_none()
            && self.meta.is_empty()
            && self.project.is_none()
            && self.rowids.is_none()
    }

    /// A stable text form, for cursor fingerprints.
    pub fn canonical(&self) -> String {
        let mut meta = self.meta.clone();
        meta.sort();
        format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
            self.kinds,
            self.sources,
            self.source_ids,
            self.tags_any,
            self.entity_ids,
            self.after_ms,
            self.before_ms,
            meta,
            self.project
        )
    }

    /// The predicate (over alias `c`) and its parameters, numbered from `?1`; callers
    /// append their own parameters after these.
    pub fn sql(&self) -> (String, Vec<Box<dyn ToSql>>) {
        let mut clauses: Vec<String> = vec!["1".into()];
        let mut params: Vec<Box<dyn ToSql>> = Vec::new();
        let kinds: Vec<String> = self.kinds.iter().map(|s| s.to_string()).collect();
        for (sql, values) in [
            ("c.source_kind IN rarray(?N)", &kinds),
            ("c.provenance IN rarray(?N)", &self.sources),
            ("c.source_id IN rarray(?N)", &self.source_ids),
            ("c.rowid IN (SELECT chunk_rowid FROM chunk_tags WHERE tag IN rarray(?N))", &self.tags_any),
            ("c.rowid IN (SELECT chunk_rowid FROM chunk_entities WHERE entity_id IN rarray(?N))", &self.entity_ids),
        ] {
            if !values.is_empty() {
                params.push(Box::new(rarray(values)));
                clauses.push(sql.replace("?N", &format!("?{}", params.len())));
            }
        }
        if let Some(rows) = &self.rowids {
            params.push(Box::new(rarray(rows)));
            clauses.push(format!("c.rowid IN rarray(?{})", params.len()));
        }
        if let Some(p) = &self.project {
            params.push(Box::new(p.clone()));
            clauses.push(format!("c.project = ?{}", params.len()));
        }
        if let Some(ms) = self.after_ms {
            params.push(Box::new(ms));
            clauses.push(format!("c.timestamp_ms >= ?{}", params.len()));
        }
        if let Some(ms) = self.before_ms {
            params.push(Box::new(ms));
            clauses.push(format!("c.timestamp_ms <= ?{}", params.len()));
        }
        for (k, v) in &self.meta {
            params.push(Box::new(k.clone()));
            params.push(Box::new(v.clone()));
            clauses.push(format!(
                "c.rowid IN (SELECT chunk_rowid FROM chunk_meta WHERE key = ?{} AND value = ?{})",
                params.len() - 1,
                params.len()
            ));
        }
        (clauses.join(" AND "), params)
    }

    /// All matching rowids if there are at most `cap` of them, else `None` (the filter
    /// is then better applied to ranked candidates).
    pub fn matching_if_few(&self, conn: &Connection, cap: usize) -> Result<Option<Vec<i64>>, MemoryError> {
        let (pred, mut params) = self.sql();
        params.push(Box::new(cap as i64 + 1));
        let sql = format!("SELECT c.rowid FROM chunks c WHERE {pred} LIMIT ?{}", params.len());
        let rows: Vec<i64> = conn
            .prepare_cached(&sql)?
            .query_map(params_from_iter(params.iter().map(|p| p.as_ref())), |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok((rows.len() <= cap).then_some(rows))
    }

    /// Those of `candidates` that match.
    pub fn retain(&self, conn: &Connection, candidates: &[i64]) -> Result<HashSet<i64>, MemoryError> {
        let (pred, mut params) = self.sql();
        params.push(Box::new(rarray(candidates)));
        let sql = format!("SELECT c.rowid FROM chunks c WHERE c.rowid IN rarray(?{}) AND {pred}", params.len());
        let rows = conn
            .prepare_cached(&sql)?
            .query_map(params_from_iter(params.iter().map(|p| p.as_ref())), |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}
