//! `reindex`: the full-text and vector indexes rebuilt from the database, by
//! `openhuman.memory_reindex` through `via` (the running daemon, else the store opened here), so
//! it is refused in `readonly` and audited either way.

use anyhow::Result;
use openhuman_common::Paths;
use serde_json::json;

use super::out;
use crate::EXIT_OK;
use crate::via::Via;

pub(crate) fn run(paths: &Paths) -> Result<i32> {
    let via = Via::open(paths)?;
    let result = via.method("openhuman.memory_reindex", json!({}), None);
    via.finish();
    let summary = result?;
    out(&format!(
        "reindexed {} chunks ({} full-text documents, {} vectors) in {} ms",
        summary["chunks"], summary["fts_docs"], summary["vectors"], summary["duration_ms"]
    ));
    Ok(EXIT_OK)
}
