//! Opening the back-ends a config asks for: the memory engine with its embedders — the fast tier
//! (the built-in one, or an HTTP provider from `[memory.embeddings]`) and, when
//! `memory.embeddings.transformer` names one, the deep tier (a transformer model from the model
//! store or a directory).

use std::path::Path;
use std::sync::Arc;

use openhuman_common::Paths;

use openhuman_config::{Config, EmbeddingProvider, MemoryEngineKind};
use openhuman_memory::embed::Embedder;
use openhuman_memory::visibility::{Visibility, VisibilityRules};
use openhuman_memory::{MemoryEngine, MemoryOptions, SharedOptions};
use openhuman_postgres::{PgOptions, PgStore};
use openhuman_providers::embed::HttpEmbedder;
use openhuman_transformer::{DEFAULT_WINDOWS, ModelStore};

/// Why memory tools fail when the engine is switched off.
pub(crate) const MEMORY_OFF: &str = "MEMORY_OFF: the memory engine is off; set [memory].engine = \"embedded\" in config.toml \
(or OPENHUMAN_MEMORY_ENGINE=embedded) and restart the daemon";

/// The embedder `[memory.embeddings]` asks for (the built-in one by default). An HTTP embedder
/// remembers its probed vector size in `data_dir`.
pub(crate) fn embedder(config: &Config, data_dir: &Path) -> Result<Arc<dyn Embedder>, String> {
    Ok(match config.memory.embeddings.provider {
        EmbeddingProvider::Builtin => openhuman_memory::embed::builtin().map_err(|e| format!("{e:#}"))?,
        EmbeddingProvider::Ollama | EmbeddingProvider::Openai => {
            Arc::new(HttpEmbedder::open(&config.memory.embeddings, data_dir).map_err(|e| e.to_string())?)
        }
    })
}

/// The deep-tier embedder `memory.embeddings.transformer` names, if any. Only the small files are
/// read here; the weights load on a background thread, so that start-up does not wait for them.
pub(crate) fn deep_embedder(config: &Config, data_dir: &Path) -> Result<Option<Arc<dyn Embedder>>, String> {
    let Some(value) = &config.memory.embeddings.transformer else { return Ok(None) };
    let model = ModelStore::new(data_dir)
        .open(value)
        .map_err(|e| format!("key `memory.embeddings.transformer` = {value:?}: {e}"))?;
    let windows = config.memory.embeddings.transformer_windows.map_or(DEFAULT_WINDOWS, usize::from);
    let mut model =
        model.with_windows(windows).with_int8_fill(config.memory.embeddings.transformer_int8.unwrap_or(true));
    if let Some(w) = config.memory.embeddings.transformer_weight {
        model = model.with_fusion_weight(w);
    }
    if let Some(w) = config.memory.embeddings.transformer_weight_chat {
        model = model.with_chat_fusion_weight(w);
    }
    let model = Arc::new(model);
    let warm = model.clone();
    // A failure is logged by the model and returned again by every embedding call.
    let _ = std::thread::Builder::new().name("model-load".into()).spawn(move || warm.load());
    Ok(Some(model))
}

/// Opens the memory engine, or returns the message memory tools should answer with.
pub(crate) fn open_memory(paths: &Paths, config: &Config) -> Result<MemoryEngine, String> {
    if config.memory.engine == MemoryEngineKind::Off {
        return Err(MEMORY_OFF.to_string());
    }
    let (embedder, deep) = embedder(config, &paths.data_dir)
        .and_then(|e| Ok((e, deep_embedder(config, &paths.data_dir)?)))
        .inspect_err(|msg| tracing::error!("memory engine not opened: {msg}"))?;
    let shared = shared_store(config).inspect_err(|msg| tracing::error!("memory engine not opened: {msg}"))?;
    let opened = MemoryEngine::open(MemoryOptions { data_dir: paths.data_dir.clone(), embedder, deep, shared });
    opened.map_err(|e| {
        let cause = format!("{e:#}");
        let msg = if no_room(&cause, &paths.data_dir) {
            disk_full(&paths.data_dir, "the memory store could not be opened", RESTART)
        } else {
            format!(
                "the memory store in {} could not be opened: {cause}. If a daemon is running, use openhuman-mcp-shim \
                 (which talks to it) instead of a second server on the same store",
                paths.data_dir.display()
            )
        };
        tracing::error!(cause = %cause, "{msg}");
        msg
    })
}

/// The shared store `engine = "postgres"` asks for (None for the embedded engine); an error
/// names the key or variable to set.
pub(crate) fn shared_store(config: &Config) -> Result<Option<SharedOptions>, String> {
    if config.memory.engine != MemoryEngineKind::Postgres {
        return Ok(None);
    }
    Ok(Some(SharedOptions {
        store: Arc::new(postgres_store(config)?),
        engine: "postgres",
        machine: machine_name(config),
        vector_search_in_database: config.memory.postgres.vector_search == openhuman_config::VectorSearch::Database,
        visibility: visibility_rules(config)?,
    }))
}

/// The visibilities `[memory]` configures (checked when the config was read).
fn visibility_rules(config: &Config) -> Result<VisibilityRules, String> {
    let parse = |key: &str, v: &str| Visibility::parse(v).map_err(|e| format!("key `{key}`: {e}"));
    let m = &config.memory;
    let mut rules =
        VisibilityRules { default: parse("memory.default_visibility", &m.default_visibility)?, ..Default::default() };
    for (i, s) in m.sources.iter().enumerate() {
        if let Some(v) = &s.visibility {
            rules.sources.push((s.path.clone(), parse(&format!("memory.sources[{i}].visibility"), v)?));
        }
    }
    for (path, v) in &m.project_visibility {
        let key = format!("memory.project_visibility.\"{path}\"");
        let normal =
            openhuman_memory::project::normalize(path).ok_or_else(|| format!("key `{key}`: not an absolute path"))?;
        rules.projects.push((normal.into(), parse(&key, v)?));
    }
    Ok(rules)
}

/// The PostgreSQL store of `[memory.postgres]`, its URL read from the variable `url_env` names.
pub(crate) fn postgres_store(config: &Config) -> Result<PgStore, String> {
    let pg = &config.memory.postgres;
    let url = std::env::var(&pg.url_env).ok().filter(|u| !u.trim().is_empty()).ok_or_else(|| {
        format!(
            "memory.engine is \"postgres\" but the environment variable {} (named by `memory.postgres.url_env`) \
             is not set; set it to the server's URL, e.g. postgres://user@host:5432/openhuman?sslmode=require",
            pg.url_env
        )
    })?;
    PgStore::new(&PgOptions {
        url,
        ca_file: pg.ca_file.clone(),
        connect_timeout: std::time::Duration::from_secs(pg.connect_timeout_secs.max(1)),
        request_timeout: std::time::Duration::from_secs(pg.request_timeout_secs.max(1)),
        log: openhuman_postgres::LogWindow {
            keep_days: pg.log_keep_days,
            keep_rows: pg.log_keep_rows,
            prune_every: std::time::Duration::from_secs(pg.log_prune_every_secs),
        },
        machine: Some(machine_name(config)),
    })
    .map_err(|e| format!("memory.postgres: {e}"))
}

/// This daemon's name in the shared store: `memory.postgres.machine`, else the host name.
pub(crate) fn machine_name(config: &Config) -> String {
    config.memory.postgres.machine.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .unwrap_or_else(|| "this-machine".into())
    })
}

/// What a user reads when the store's disk has no room: what is wrong, where, and what to do,
/// in one short sentence (the raw cause goes to the log).
pub(crate) fn disk_full(data_dir: &Path, what: &str, then: &str) -> String {
    format!("{what}: the disk holding {} is full. Free space there, then {then}", data_dir.display())
}

/// What to do once space is free, when the store did not open at start.
pub(crate) const RESTART: &str = "restart the daemon (`openhumand-mcp stop`; your MCP client starts it again)";

/// Whether a failure (its whole `{e:#}` text) came from a disk without room for `dir`: the text
/// says so (SQLite's "disk is full", the operating system's no-space, quota and file-size
/// errors), or a small file cannot be written there now. Blocking; call it only on failure.
pub(crate) fn no_room(cause: &str, dir: &Path) -> bool {
    ["database or disk is full", "No space left on device", "Disk quota exceeded", "File too large"]
        .iter()
        .any(|needle| cause.contains(needle))
        || !has_room(dir)
}

/// Bytes the probe in `has_room` writes: more than an open of the store needs.
const ROOM_PROBE: usize = 256 * 1024;

/// Whether `dir` can take a small file. Called only after a failure, to tell a full disk from
/// other causes whose SQLite message does not say (a WAL index that cannot grow is reported as
/// a plain "disk I/O error").
fn has_room(dir: &Path) -> bool {
    use std::io::Write;
    let probe = dir.join(".space-probe");
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::File::create(&probe))
        .and_then(|mut f| f.write_all(&[0u8; ROOM_PROBE]).and_then(|()| f.sync_all()));
    let _ = std::fs::remove_file(&probe);
    match written {
        Ok(()) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded | std::io::ErrorKind::FileTooLarge
        ),
    }
}
