//! The memory benchmark's baselines, run in the same process over the same data: SQLite FTS5
//! (rusqlite's bundled SQLite, ranked by `bm25()`) for keyword search, and a plain brute-force
//! cosine scan (one thread, one f32 dot product per row, top-k kept in a sorted buffer) over
//! the vectors the daemon stored, read back from its `vectors/` files after it stopped.

use std::io::{BufReader, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::corpus::{Sections, Vocabulary};
use super::support::Result;

pub struct Fts5 {
    conn: Connection,
}

impl Fts5 {
    /// Builds an FTS5 table of the first `chunks` sections in `path`; returns it and the
    /// time the inserts took (one transaction, as a bulk load would).
    pub fn build(path: &Path, vocab: &Vocabulary, chunks: usize) -> Result<(Fts5, Duration)> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE VIRTUAL TABLE chunks USING fts5(heading, body);",
        )?;
        let started = Instant::now();
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare("INSERT INTO chunks (heading, body) VALUES (?1, ?2)")?;
            let mut sections = Sections::new(vocab);
            let (mut heading, mut body) = (String::new(), String::new());
            for _ in 0..chunks {
                sections.next_section(&mut heading, &mut body);
                insert.execute((&heading, &body))?;
            }
        }
        tx.commit()?;
        Ok((Fts5 { conn }, started.elapsed()))
    }

    /// Top 10 rowids for `word` by BM25.
    pub fn search(&self, word: &str) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT rowid FROM chunks WHERE chunks MATCH ?1 ORDER BY bm25(chunks) LIMIT 10")?;
        let rows = stmt.query_map([format!("\"{word}\"")], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// Unit vectors as one row-major matrix.
pub struct Vectors {
    pub dims: usize,
    pub data: Vec<f32>,
}

impl Vectors {
    pub fn rows(&self) -> usize {
        self.data.len() / self.dims.max(1)
    }

    /// Reads the snapshot and log the daemon left in `dir` (it stopped cleanly, so every
    /// record is committed): a `rowid, f32 × dims` row per snapshot entry and upsert record.
    /// Later upserts of a rowid replace earlier ones; deletes drop it.
    pub fn load(dir: &Path) -> Result<Vectors> {
        let mut rows: std::collections::HashMap<i64, Vec<f32>> = std::collections::HashMap::new();
        let mut dims = 0;
        if let Ok(f) = std::fs::File::open(dir.join("vectors.bin")) {
            let mut r = BufReader::with_capacity(1 << 20, f);
            dims = header(&mut r, b"OHVEC001")?;
            let count = u64::from_le_bytes(bytes(&mut r)?);
            let _seq: [u8; 8] = bytes(&mut r)?;
            for _ in 0..count {
                let rowid = i64::from_le_bytes(bytes(&mut r)?);
                rows.insert(rowid, floats(&mut r, dims)?);
            }
        }
        let mut r = BufReader::with_capacity(1 << 20, std::fs::File::open(dir.join("vectors.log"))?);
        let log_dims = header(&mut r, b"OHVLOG01")?;
        if dims == 0 {
            dims = log_dims;
        }
        loop {
            let mut tag = [0u8; 1];
            if r.read_exact(&mut tag).is_err() {
                break;
            }
            let id = i64::from_le_bytes(bytes(&mut r)?);
            match tag[0] {
                1 => {
                    rows.insert(id, floats(&mut r, dims)?);
                }
                2 => {
                    rows.remove(&id);
                }
                3 => {
                    let _hash: [u8; 8] = bytes(&mut r)?;
                }
                t => return Err(format!("unknown vector log record {t}").into()),
            }
        }
        let mut data = Vec::with_capacity(rows.len() * dims);
        for v in rows.into_values() {
            data.extend_from_slice(&v);
        }
        Ok(Vectors { dims, data })
    }

    /// The 10 rows most similar to `q` as `(row, cosine)`, by scoring every row.
    pub fn brute_force(&self, q: &[f32]) -> Vec<(usize, f32)> {
        let mut best: Vec<(usize, f32)> = Vec::with_capacity(11);
        for (i, row) in self.data.chunks_exact(self.dims).enumerate() {
            let s: f32 = row.iter().zip(q).map(|(a, b)| a * b).sum();
            if best.len() < 10 || s > best[best.len() - 1].1 {
                let at = best.partition_point(|(_, b)| *b >= s);
                best.insert(at, (i, s));
                best.truncate(10);
            }
        }
        best
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dims..(i + 1) * self.dims]
    }
}

fn bytes<const N: usize>(r: &mut impl Read) -> Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn floats(r: &mut impl Read, dims: usize) -> Result<Vec<f32>> {
    let mut raw = vec![0u8; dims * 4];
    r.read_exact(&mut raw)?;
    Ok(raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// Checks the magic, skips the embedder signature and returns the dimensions.
fn header(r: &mut impl Read, magic: &[u8; 8]) -> Result<usize> {
    let got: [u8; 8] = bytes(r)?;
    if &got != magic {
        return Err(format!("vector file magic {got:?} is not {magic:?}: the bench needs updating").into());
    }
    let sig_len = u32::from_le_bytes(bytes(r)?) as usize;
    let mut sig = vec![0u8; sig_len];
    r.read_exact(&mut sig)?;
    Ok(u32::from_le_bytes(bytes(r)?) as usize)
}
