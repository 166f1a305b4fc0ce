//! Memory as MCP resources, for clients that show or subscribe to them: `openhuman://memory`
//! (counts, watched folders and the most recently changed sources), one
//! `openhuman://watched/<n>` per `[[memory.sources]]` entry (its sync status), and the templates
//! `openhuman://source/{id}` (one source's chunks, with tags and links) and
//! `openhuman://memory/{id}` (one stored memory item, i.e. chunk: its text and metadata) and
//! `openhuman://context/{project}` (a project's current context, packed as `context` packs it,
//! in the default budget; the project's path percent-encoded). Each
//! changes as memory does, and the daemon says so to subscribers (`AppState::memory_changed`);
//! the watched-folder list changes with the config (`notifications/resources/list_changed`).

use openhuman_mcp::{Resource, ResourceTemplate};
use openhuman_memory::ops;

use crate::engine::{MethodError, blocking};
use crate::state::AppState;
use crate::watch::{id_of, id_uri, source_id_of};

pub(crate) const MIME: &str = "text/markdown";
pub(crate) const MEMORY_URI: &str = "openhuman://memory";
const WATCHED_PREFIX: &str = "openhuman://watched/";
pub(crate) const SOURCE_TEMPLATE: &str = "openhuman://source/{id}";
pub(crate) const MEMORY_TEMPLATE: &str = "openhuman://memory/{id}";
const ITEM_PREFIX: &str = "openhuman://memory/";
pub(crate) const CONTEXT_TEMPLATE: &str = "openhuman://context/{project}";
const CONTEXT_PREFIX: &str = "openhuman://context/";
/// Chunks a source resource shows (the engine's page bound).
const CHUNKS_SHOWN: usize = 50;

/// The listed resources: the overview and one per watched folder.
pub(crate) fn list(state: &AppState) -> Vec<Resource> {
    let mut out = vec![Resource {
        uri: MEMORY_URI.into(),
        name: "memory".into(),
        title: "Memory overview".into(),
        description: "What memory holds: counts, watched folders, and the sources that changed last.".into(),
        mime_type: MIME,
    }];
    for (i, s) in state.config().memory.sources.iter().enumerate() {
        out.push(Resource {
            uri: format!("{WATCHED_PREFIX}{i}"),
            name: format!("watched/{i}"),
            title: format!("Watched folder {}", s.path.display()),
            description: "Sync status of a watched folder: files in memory, last sync, pending changes, last error."
                .into(),
            mime_type: MIME,
        });
    }
    out
}

pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate {
            uri_template: SOURCE_TEMPLATE.into(),
            name: "source".into(),
            title: "Memory source".into(),
            description: "One source (a file, mail thread or chat channel; its id percent-encoded, as \
                          tree.list_sources names it): its chunks with tags and wiki links."
                .into(),
            mime_type: MIME,
        },
        ResourceTemplate {
            uri_template: MEMORY_TEMPLATE.into(),
            name: "memory-item".into(),
            title: "Memory item".into(),
            description: "One stored memory item (a chunk id, as memory.list, memory.recall and memory.search name \
                          it): its text and metadata."
                .into(),
            mime_type: MIME,
        },
        ResourceTemplate {
            uri_template: CONTEXT_TEMPLATE.into(),
            name: "project-context".into(),
            title: "Project context".into(),
            description: "A project's current context from memory (its path percent-encoded, as memory.projects \
                          names it): its newest memories that nothing replaced, with citations, packed into about \
                          2000 tokens — what a session in that project starts with."
                .into(),
            mime_type: MIME,
        },
    ]
}

/// The project an `openhuman://context/{project}` URI names (the app reads it with the prompts'
/// packer, `prompts::project_context`).
pub(crate) fn context_project(uri: &str) -> Option<String> {
    id_of(CONTEXT_PREFIX, uri)
}

/// The URI of a project's context.
pub(crate) fn context_uri(project: &str) -> String {
    id_uri(CONTEXT_PREFIX, project)
}

/// The URI of the memory item (chunk) `id`.
pub(crate) fn item_uri(id: &str) -> String {
    id_uri(ITEM_PREFIX, id)
}

/// The text of a memory resource, or None when `uri` is not one (or names nothing).
pub(crate) async fn read(state: &AppState, uri: &str) -> Option<String> {
    if uri == MEMORY_URI {
        return overview(state).await.inspect_err(|e| tracing::warn!("reading {uri}: {e}")).ok();
    }
    if let Some(n) = uri.strip_prefix(WATCHED_PREFIX) {
        return watched(state, n.parse().ok()?);
    }
    if let Some(id) = id_of(ITEM_PREFIX, uri) {
        return item(state, id).await.inspect_err(|e| tracing::warn!("reading a memory item: {e}")).ok().flatten();
    }
    let id = source_id_of(uri)?;
    source(state, id).await.inspect_err(|e| tracing::warn!("reading {uri}: {e}")).ok().flatten()
}

fn internal(e: impl Into<anyhow::Error>) -> MethodError {
    MethodError::Internal(e.into())
}

async fn overview(state: &AppState) -> Result<String, MethodError> {
    let engine = crate::engine::engine(state).await?;
    let (stats, sources) = blocking(move || {
        let stats = engine.stats().map_err(internal)?;
        let sources = engine.list_sources(ops::ListSourcesParams::recent(20)).map_err(internal)?;
        Ok((stats, sources))
    })
    .await?;
    let mut text = String::from("# Memory\n\n");
    for (key, n) in [("chunks", stats.chunks), ("sources", stats.sources), ("files", stats.files)] {
        text.push_str(&format!("- {key}: {n}\n"));
    }
    let watch = state.watch().status_json(&state.config());
    if let Some(list) = watch["sources"].as_array().filter(|l| !l.is_empty()) {
        text.push_str("\n## Watched folders\n\n");
        for s in list {
            text.push_str(&format!(
                "- {} — {} files, {}\n",
                s["path"].as_str().unwrap_or("?"),
                s["files"],
                s["state"].as_str().unwrap_or("?")
            ));
        }
    }
    text.push_str("\n## Recently changed sources\n\n");
    for s in &sources.sources {
        text.push_str(&format!(
            "- [{}]({}) ({}, {} chunks)\n",
            s.display_name,
            crate::watch::source_uri(&s.source_id),
            s.source_kind,
            s.chunk_count
        ));
    }
    Ok(text)
}

fn watched(state: &AppState, n: usize) -> Option<String> {
    let status = state.watch().status_json(&state.config());
    let s = status["sources"].get(n)?;
    let last = s["last_sync_ms"]
        .as_i64()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| "never".into());
    Some(format!(
        "# Watched folder {}\n\n- kind: {}\n- state: {}\n- files in memory: {}\n- last sync: {last}\n- pending changes: {}\n- last error: {}\n",
        s["path"].as_str().unwrap_or("?"),
        s["kind"].as_str().unwrap_or("?"),
        s["state"].as_str().unwrap_or("?"),
        s["files"],
        s["pending"],
        s["last_error"].as_str().unwrap_or("none"),
    ))
}

async fn source(state: &AppState, id: String) -> Result<Option<String>, MethodError> {
    let engine = crate::engine::engine(state).await?;
    blocking(move || {
        let page = engine.browse(ops::BrowseParams::of_source(id.clone(), CHUNKS_SHOWN)).map_err(internal)?;
        let Some(newest) = page.chunks.first() else { return Ok(None) };
        let first = engine.read_chunk(ops::ReadChunkParams::of(&newest.chunk.chunk_id)).map_err(internal)?;
        let mut text = format!("# {}\n\nsource: `{id}`\n", first.title.as_deref().unwrap_or(&id));
        let links: Vec<String> = first
            .links
            .iter()
            .map(|l| match &l.source_id {
                Some(to) => format!("[{}]({})", l.target, crate::watch::source_uri(to)),
                None => format!("{} (not in memory)", l.target),
            })
            .collect();
        if !links.is_empty() {
            text.push_str(&format!("links: {}\n", links.join(", ")));
        }
        if page.total > CHUNKS_SHOWN as i64 {
            text.push_str(&format!(
                "\n{} chunks; the newest {CHUNKS_SHOWN} follow (tree.browse pages through all)\n",
                page.total
            ));
        }
        // Oldest first reads as the source does.
        for row in page.chunks.iter().rev() {
            let c = &row.chunk;
            text.push_str(&format!("\n## chunk {}\n", c.chunk_id));
            if !c.tags.is_empty() {
                text.push_str(&format!("tags: {}\n", c.tags.join(", ")));
            }
            text.push_str(&format!("\n{}\n", c.preview.as_deref().unwrap_or_default()));
        }
        Ok(Some(text))
    })
    .await
}

/// One chunk: title, its metadata as a list, its text, then its notes.
async fn item(state: &AppState, id: String) -> Result<Option<String>, MethodError> {
    let engine = crate::engine::engine(state).await?;
    let c = match blocking(move || engine.read_chunk(ops::ReadChunkParams::of(id)).map_err(MethodError::from)).await {
        Ok(c) => c,
        Err(MethodError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let title = c.title.as_deref().filter(|t| !t.is_empty()).unwrap_or("Memory item");
    let mut text = format!("# {title}\n\n- id: `{}`\n- kind: {}\n", c.chunk_id, c.source_kind);
    text.push_str(&format!(
        "- source: [{}]({}) ({})\n",
        c.source_ref,
        crate::watch::source_uri(&c.source_id),
        c.source_id
    ));
    text.push_str(&format!("- observed: {}\n- written by: {}\n", c.observed_at, c.source));
    text.push_str(&format!("- tokens: {}\n", c.token_count));
    for (list, label) in [(&c.tags, "tags"), (&c.entity_ids, "entities")] {
        if !list.is_empty() {
            text.push_str(&format!("- {label}: {}\n", list.join(", ")));
        }
    }
    for (k, v) in &c.metadata {
        let v = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        text.push_str(&format!("- {k}: {v}\n"));
    }
    text.push_str(&format!("\n{}\n", c.content.trim()));
    if !c.notes.is_empty() {
        text.push_str("\n## Notes\n\n");
        for n in &c.notes {
            text.push_str(&format!("- {} ({})\n", n.text, n.source));
        }
    }
    Ok(Some(text))
}
