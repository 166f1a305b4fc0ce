//! `migrate` and `migrate-store`: the shared store's schema brought up to date by hand, and a
//! memory moved between the embedded engine and PostgreSQL (counts checked table by table;
//! the config's `[memory] engine` switched once they match).

use anyhow::{Context, Result, bail};
use openhuman_common::Paths;
use openhuman_config::{self as config, Config, MemoryEngineKind};
use openhuman_memory::MemoryError;
use openhuman_memory::shared::SharedStore;

use super::out;
use crate::cli::{MigrateStoreArgs, StoreEngine};
use crate::via::stopped;
use crate::{EXIT_FAILURE, EXIT_OK, backends};

/// `openhumand-mcp migrate`.
pub(crate) fn migrate(paths: &Paths) -> Result<i32> {
    let loaded = config::load(&paths.config_file)?;
    match loaded.config.memory.engine {
        MemoryEngineKind::Postgres => {
            let store = backends::postgres_store(&loaded.config).map_err(anyhow::Error::msg)?;
            let tables = openhuman_memory::shared_tables()?;
            let info = store.migrate(openhuman_memory::SCHEMA_VERSION, &tables).map_err(|e| anyhow::anyhow!("{e}"))?;
            out(&format!(
                "{}: schema version {} ({} shared tables), change log at {}",
                store.describe(),
                info.version,
                tables.len(),
                info.head
            ));
        }
        MemoryEngineKind::Embedded => {
            stopped(paths, "migrate")?;
            let engine = backends::open_memory(paths, &loaded.config).map_err(anyhow::Error::msg)?;
            drop(engine);
            out(&format!(
                "the memory store in {} is at schema version {}",
                paths.data_dir.display(),
                openhuman_memory::SCHEMA_VERSION
            ));
        }
        MemoryEngineKind::Off => bail!("memory is off (`[memory] engine = \"off\"`); there is nothing to migrate"),
    }
    Ok(EXIT_OK)
}

/// `openhumand-mcp migrate-store --to postgres|embedded`.
pub(crate) fn migrate_store(paths: &Paths, args: &MigrateStoreArgs) -> Result<i32> {
    stopped(paths, "migrate-store")?;
    let loaded = config::load(&paths.config_file)?;
    let store = backends::postgres_store(&loaded.config).map_err(anyhow::Error::msg)?;
    let summary = match args.to {
        StoreEngine::Postgres => {
            let machine = backends::machine_name(&loaded.config);
            openhuman_memory::move_to_shared(&paths.data_dir, &store, &machine, args.replace)
        }
        StoreEngine::Embedded => openhuman_memory::move_to_embedded(&paths.data_dir, &store),
    }
    .map_err(|e| match e {
        MemoryError::InUse(dir) => anyhow::anyhow!(
            "the memory store in {} is open in another process; stop it, then run migrate-store again",
            dir.display()
        ),
        other => other.into(),
    })?;
    let (from, to) = match args.to {
        StoreEngine::Postgres => ("embedded", "postgres"),
        StoreEngine::Embedded => ("postgres", "embedded"),
    };
    out(&format!("{:<20} {:>10} {:>10}", "table", from, to));
    for (t, a, b) in &summary.counts {
        out(&format!("{t:<20} {a:>10} {b:>10}{}", if a == b { "" } else { "  MISMATCH" }));
    }
    if !summary.matches() {
        out("the counts differ: the config was left as it was; run migrate-store again");
        return Ok(EXIT_FAILURE);
    }
    set_engine(paths, &loaded.config, args.to)?;
    out(&format!(
        "moved; {} now says [memory] engine = \"{to}\" (change log position {})",
        paths.config_file.display(),
        summary.position
    ));
    Ok(EXIT_OK)
}

fn set_engine(paths: &Paths, current: &Config, to: StoreEngine) -> Result<()> {
    let want = match to {
        StoreEngine::Postgres => MemoryEngineKind::Postgres,
        StoreEngine::Embedded => MemoryEngineKind::Embedded,
    };
    if current.memory.engine == want {
        return Ok(());
    }
    let name = match to {
        StoreEngine::Postgres => "postgres",
        StoreEngine::Embedded => "embedded",
    };
    super::sources::edit(paths, |doc| {
        let memory = doc
            .entry("memory")
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
            .as_table_mut()
            .context("`memory` in the config file is not a table")?;
        memory["engine"] = toml_edit::value(name);
        Ok(())
    })
}
