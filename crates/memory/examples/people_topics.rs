//! Ingests the named files or folders into a fresh store and prints the top people and topics
//! (`tree.top_entities` with `kind` person and topic), for judging their precision by hand.
//!
//! `cargo run -p openhuman-memory --example people_topics -- <store dir> <path>…`; the store
//! folder must not exist yet. With no paths, an existing store is opened (extracted again if
//! an older extractor made it) and listed. `tools/people-corpus/build.py` makes the inputs
//! BENCHMARKS.md uses.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use openhuman_memory::embed::{EmbedError, Embedder};
use openhuman_memory::ops::TopEntitiesParams;
use openhuman_memory::{MemoryEngine, MemoryOptions};

/// Vectors play no part in entities: every text gets the same unit vector.
struct Flat;

impl Embedder for Flat {
    fn signature(&self) -> &str {
        "flat/4"
    }

    fn dims(&self) -> usize {
        4
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|_| vec![1.0, 0.0, 0.0, 0.0]).collect())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: people_topics <store dir> <path>…")?);
    let paths: Vec<PathBuf> = args.map(PathBuf::from).collect();
    if dir.exists() && !paths.is_empty() {
        return Err(format!("{} exists: give a new folder", dir.display()).into());
    }
    let started = std::time::Instant::now();
    let engine =
        MemoryEngine::open(MemoryOptions { data_dir: dir, embedder: Arc::new(Flat), deep: None, shared: None })?;
    let opened = started.elapsed();
    let summary = engine.ingest_paths(&paths, None, &|_| {})?;
    engine.wait_background();
    let mut out = std::io::stdout().lock();
    // With no paths, the wait is the background extraction of an older store's entities.
    writeln!(out, "opened in {} ms; background work done at {} ms", opened.as_millis(), started.elapsed().as_millis())?;
    writeln!(out, "files {} chunks {}", summary.files_ingested, summary.chunks_added)?;
    for kind in ["person", "topic"] {
        let p = TopEntitiesParams { kind: Some(kind.to_string()), limit: 40, cursor: None };
        let top = engine.top_entities(p)?;
        writeln!(out, "\n## top {kind} (of {})", top.total)?;
        for (i, e) in top.entities.iter().enumerate() {
            writeln!(
                out,
                "{:>2}. {} ({}; {} mentions in {} chunks{})",
                i + 1,
                e.display_name,
                e.entity_id,
                e.mention_count,
                e.chunk_count,
                e.score.map(|s| format!("; score {s}")).unwrap_or_default()
            )?;
        }
    }
    Ok(())
}
