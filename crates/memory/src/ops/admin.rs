//! The store-wide operations of `status`, `show`, `forget --preview` and `check`:
//! `openhuman.memory_resolve` (what ids name, read as `memory.forget` reads them, changing
//! nothing), `openhuman.memory_stats` (counts and index positions) and `openhuman.memory_check`
//! (SQLite's checks and whether the indexes hold the database's chunks).

use openhuman_schema::params;

use super::Operation;
use crate::write_api::Resolved;
use crate::{Check, MemoryEngine, MemoryError, Stats};

params! {
    /// The ids to read.
    pub struct ResolveParams {
        ids: Vec<String> = list("Chunk, item or source ids, read as memory.forget reads them.", 100, 512)
            .required()
            .min_items(1),
    }
}

params! {
    /// An operation that takes no arguments.
    pub struct NoParams {}
}

pub struct Resolve;

impl Operation for Resolve {
    const METHOD: &'static str = "openhuman.memory_resolve";
    type Params = ResolveParams;
    type Output = Resolved;
    fn run(engine: &MemoryEngine, p: ResolveParams) -> Result<Resolved, MemoryError> {
        engine.resolve_ids(&p.ids)
    }
}

pub struct StoreStats;

impl Operation for StoreStats {
    const METHOD: &'static str = "openhuman.memory_stats";
    type Params = NoParams;
    type Output = Stats;
    fn run(engine: &MemoryEngine, _: NoParams) -> Result<Stats, MemoryError> {
        engine.stats()
    }
}

pub struct StoreCheck;

impl Operation for StoreCheck {
    const METHOD: &'static str = "openhuman.memory_check";
    type Params = NoParams;
    type Output = Check;
    fn run(engine: &MemoryEngine, _: NoParams) -> Result<Check, MemoryError> {
        engine.check()
    }
}
