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

/// Unit vectors as one row-major matrix, with the chunk rowid of each row.
pub struct Vectors {
    pub dims: usize,
    pub data: Vec<f32>,
    pub rowids: Vec<i64>,
}

impl Vectors {
    pub fn rows(&self) -> usize {
        self.data.len() / self.dims.max(1)
    }

    /// Reads the snapshot and log the daemon left in `dir` (it stopped cleanly, so every
    /// record is committed): a `rowid, f32 scale, i8 × dims` row per snapshot entry and upsert
    /// record, taken as the f32 vector `row × scale` (what the daemon's index holds).
    /// Later upserts of a rowid replace earlier ones; deletes drop it.
    pub fn load(dir: &Path) -> Result<Vectors> {
        // Rows in place (a map of one allocation per row would take twice the matrix at 10M).
        let mut v = Vectors { dims: 0, data: Vec::new(), rowids: Vec::new() };
        let mut pos: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        let mut dims = 0;
        if let Ok(f) = std::fs::File::open(dir.join("vectors.bin")) {
            let mut r = BufReader::with_capacity(1 << 20, f);
            dims = header(&mut r, b"OHVEC002")?;
            let count = u64::from_le_bytes(bytes(&mut r)?);
            let _seq: [u8; 8] = bytes(&mut r)?;
            v.dims = dims;
            v.data.reserve(count as usize * dims);
            for _ in 0..count {
                let rowid = i64::from_le_bytes(bytes(&mut r)?);
                v.upsert(&mut pos, rowid, &stored_row(&mut r, dims)?);
            }
        }
        let mut r = BufReader::with_capacity(1 << 20, std::fs::File::open(dir.join("vectors.log"))?);
        let log_dims = header(&mut r, b"OHVLOG02")?;
        if dims == 0 {
            dims = log_dims;
            v.dims = dims;
        }
        loop {
            let mut tag = [0u8; 1];
            if r.read_exact(&mut tag).is_err() {
                break;
            }
            let id = i64::from_le_bytes(bytes(&mut r)?);
            match tag[0] {
                1 => v.upsert(&mut pos, id, &stored_row(&mut r, dims)?),
                2 => v.remove(&mut pos, id),
                3 => {
                    let _hash: [u8; 8] = bytes(&mut r)?;
                }
                t => return Err(format!("unknown vector log record {t}").into()),
            }
        }
        Ok(v)
    }

    fn upsert(&mut self, pos: &mut std::collections::HashMap<i64, usize>, rowid: i64, row: &[f32]) {
        let d = self.dims;
        match pos.get(&rowid) {
            Some(&i) => self.data[i * d..(i + 1) * d].copy_from_slice(row),
            None => {
                pos.insert(rowid, self.rowids.len());
                self.rowids.push(rowid);
                self.data.extend_from_slice(row);
            }
        }
    }

    fn remove(&mut self, pos: &mut std::collections::HashMap<i64, usize>, rowid: i64) {
        let Some(i) = pos.remove(&rowid) else { return };
        let (d, last) = (self.dims, self.rowids.len() - 1);
        if i != last {
            self.data.copy_within(last * d..(last + 1) * d, i * d);
            self.rowids[i] = self.rowids[last];
            pos.insert(self.rowids[i], i);
        }
        self.rowids.pop();
        self.data.truncate(last * d);
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

/// The daemon's approximate index as it persisted it (`ann.bin`), checked here against brute
/// force: for each query row, the top 10 among the rows of the `probes` lists whose centroids
/// are nearest (plus any row the file does not place) against the top 10 of all rows, the
/// query row itself left out of both. `(probes, recall@10, queries)`; `None` without a file.
pub fn ann_recall(dir: &Path, v: &Vectors, queries: &[usize]) -> Result<Option<(usize, f64, usize)>> {
    let Ok(f) = std::fs::File::open(dir.join("ann.bin")) else { return Ok(None) };
    let mut r = BufReader::with_capacity(1 << 20, f);
    let magic: [u8; 8] = bytes(&mut r)?;
    if &magic != b"OHANN001" {
        return Err(format!("ANN file magic {magic:?}: the bench needs updating").into());
    }
    let u32_ = |r: &mut BufReader<std::fs::File>| -> Result<u32> { Ok(u32::from_le_bytes(bytes(r)?)) };
    let version = u32_(&mut r)?;
    let sig_len = u32_(&mut r)? as usize;
    let mut sig = vec![0u8; sig_len];
    r.read_exact(&mut sig)?;
    let dims = u32_(&mut r)? as usize;
    let _trained: [u8; 8] = bytes(&mut r)?;
    let _fit: [u8; 4] = bytes(&mut r)?;
    // From version 2 rows are placed, and from version 3 queries ranked, in the space centred
    // on the sample's mean row.
    let mean = if version >= 2 { floats(&mut r, dims)? } else { vec![0.0; dims] };
    let centre = version >= 3;
    let probes = u32_(&mut r)? as usize;
    let _recall = u32_(&mut r)?;
    let groups = u32_(&mut r)? as usize;
    let _centres = floats(&mut r, groups * dims)?;
    for _ in 0..groups {
        let m = u32_(&mut r)? as usize;
        let mut skip = vec![0u8; m * 4];
        r.read_exact(&mut skip)?;
    }
    let leaves = u32_(&mut r)? as usize;
    let centroids = floats(&mut r, leaves * dims)?;
    let count = u64::from_le_bytes(bytes(&mut r)?) as usize;
    let mut leaf_of: std::collections::HashMap<i64, u32> = std::collections::HashMap::with_capacity(count);
    for _ in 0..count {
        let rowid = i64::from_le_bytes(bytes(&mut r)?);
        leaf_of.insert(rowid, u32_(&mut r)?);
    }
    if dims != v.dims || probes == 0 {
        return Ok(None);
    }
    let dot = |a: &[f32], b: &[f32]| -> f32 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    let top10 = |q: &[f32], skip: usize, keep: &dyn Fn(usize) -> bool| -> Vec<usize> {
        let mut best: Vec<(usize, f32)> = Vec::with_capacity(11);
        for (i, row) in v.data.chunks_exact(dims).enumerate() {
            if i == skip || !keep(i) {
                continue;
            }
            let s = dot(row, q);
            if best.len() < 10 || s > best[best.len() - 1].1 {
                let at = best.partition_point(|(_, b)| *b >= s);
                best.insert(at, (i, s));
                best.truncate(10);
            }
        }
        best.into_iter().map(|b| b.0).collect()
    };
    let mut found = 0;
    let mut total = 0;
    for &qi in queries {
        let q = v.row(qi);
        let qc: Vec<f32> = if centre {
            let d: Vec<f32> = q.iter().zip(&mean).map(|(x, m)| x - m).collect();
            let n = dot(&d, &d).sqrt().max(f32::MIN_POSITIVE);
            d.into_iter().map(|x| x / n).collect()
        } else {
            q.to_vec()
        };
        let mut order: Vec<(f32, usize)> =
            centroids.chunks_exact(dims).enumerate().map(|(l, c)| (dot(&qc, c), l)).collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut probed = vec![false; leaves];
        for &(_, l) in order.iter().take(probes) {
            probed[l] = true;
        }
        let keep = |i: usize| leaf_of.get(&v.rowids[i]).is_none_or(|l| probed[*l as usize]);
        let exact = top10(q, qi, &|_| true);
        let got = top10(q, qi, &keep);
        found += got.iter().filter(|g| exact.contains(g)).count();
        total += exact.len();
    }
    Ok(Some((probes, found as f64 / total.max(1) as f64, queries.len())))
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

/// A stored vector row (`f32 scale, i8 × dims`) as floats.
fn stored_row(r: &mut impl Read, dims: usize) -> Result<Vec<f32>> {
    let scale = f32::from_le_bytes(bytes(r)?);
    let mut raw = vec![0u8; dims];
    r.read_exact(&mut raw)?;
    Ok(raw.iter().map(|b| f32::from(*b as i8) * scale).collect())
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
