//! `memory.list` (`openhuman.memory_items_list`): stored items newest first, filtered, with the
//! total, paged with a keyset cursor.

use openhuman_schema::params;
use serde::Serialize;

use super::filter_params::{self, FilterParams};
use super::{CURSOR_DOC, Item, Operation};
use crate::cursor::{decode, fingerprint, keyset_rowid};
use crate::{MemoryEngine, MemoryError, page};

params! {
    /// Which items to list, and where the page starts.
    pub struct ListParams {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<FilterParams> = object("Restrict the items.", FilterParams::spec()),
        limit: usize = int("Page size (default 10).", 1, 100).default_int(10),
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String> = string(CURSOR_DOC).max_chars(1024),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListResult {
    pub items: Vec<Item>,
    /// Every item the filter matches.
    pub total: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

pub struct List;

impl Operation for List {
    const METHOD: &'static str = "openhuman.memory_items_list";
    type Params = ListParams;
    type Output = ListResult;
    fn run(engine: &MemoryEngine, p: ListParams) -> Result<ListResult, MemoryError> {
        engine.list(p)
    }
}

impl MemoryEngine {
    /// Stored items, newest first (rowid breaks ties), `total` counting every item the filter
    /// matches.
    pub fn list(&self, p: ListParams) -> Result<ListResult, MemoryError> {
        let filter = filter_params::compile(&p.filter)?;
        filter.settle_entities(&self.inner)?;
        let fp = fingerprint(&["list", &filter.canonical()]);
        let after = decode(&p.cursor, &fp)?.map(|c| keyset_rowid(&c)).transpose()?;
        let conn = self.inner.read_conn()?;
        let page = page::chunks(&conn, &filter, p.limit, after, 0, &fp)?;
        let items = page.rows.iter().map(|c| Item::of(c, None)).collect();
        Ok(ListResult { items, total: page.total, next_cursor: page.next_cursor })
    }
}
