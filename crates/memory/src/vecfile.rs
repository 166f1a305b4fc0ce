//! Persistence of the vector index under `data_dir/vectors/`: a snapshot
//! (`vectors.bin`: header with the embedder signature, dimensions, row count and change
//! sequence, then `rowid, f32 scale, i8 × dims` rows) plus an append-only log (`vectors.log`)
//! of upserts and deletes closed by commit records. A commit record carries the change
//! sequence it completes and a checksum of the records before it, so a torn tail after
//! a crash is recognised and dropped; the dropped changes are re-applied from SQLite.
//!
//! One signature per file: the vectors in it were all produced by that embedder. Files
//! of another embedder are discarded on open and the rows re-embedded. A snapshot that is
//! unusable is deleted at once, so that a log written since (re-embedding under the new
//! signature, which can take long for a slow embedder) is replayed after a restart instead of
//! being started over.
//!
//! Rows are stored as the index holds them, int8 with one scale (`vectors::quantize`): the
//! index never had more than that, so nothing is lost, and a row takes `12 + dims` bytes
//! instead of the `8 + 4 × dims` of the first format (f32), a quarter at 256 dimensions.
//! Files of the first format are still read, and rewritten in this one as soon as they are.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::{MemoryError, ResultExt};
use super::vectors::{VectorIndex, quantize};

const BASE_MAGIC: &[u8; 8] = b"OHVEC002";
const LOG_MAGIC: &[u8; 8] = b"OHVLOG02";
/// The first format: rows as `f32 × dims`.
const F32_BASE_MAGIC: &[u8; 8] = b"OHVEC001";
const F32_LOG_MAGIC: &[u8; 8] = b"OHVLOG01";
const REC_UPSERT: u8 = 1;
const REC_DELETE: u8 = 2;
const REC_COMMIT: u8 = 3;

pub(crate) struct VecFile {
    dir: PathBuf,
    signature: String,
    dims: usize,
    log: BufWriter<File>,
    log_len: u64,
    base_len: u64,
    /// FNV-1a of the records written since the last commit record.
    hash: u64,
    dirty: bool,
}

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

fn header(magic: &[u8; 8], signature: &str, dims: usize) -> Vec<u8> {
    let mut h = magic.to_vec();
    h.extend_from_slice(&(signature.len() as u32).to_le_bytes());
    h.extend_from_slice(signature.as_bytes());
    h.extend_from_slice(&(dims as u32).to_le_bytes());
    h
}

fn read_exact_or_none(r: &mut impl Read, buf: &mut [u8]) -> Option<()> {
    r.read_exact(buf).ok()
}

/// Which format a file is in, by its header.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Int8,
    F32,
}

impl Format {
    /// Bytes of a row after its rowid.
    fn row_bytes(self, dims: usize) -> usize {
        match self {
            Format::Int8 => 4 + dims,
            Format::F32 => 4 * dims,
        }
    }
}

/// Reads the header and tells its format; `None` when it is neither format's for this
/// signature and dimensions.
fn read_header(r: &mut impl Read, magics: [&[u8; 8]; 2], signature: &str, dims: usize) -> Option<Format> {
    let current = header(magics[0], signature, dims);
    let mut got = vec![0u8; current.len()];
    read_exact_or_none(r, &mut got)?;
    if got == current {
        Some(Format::Int8)
    } else if got == header(magics[1], signature, dims) {
        Some(Format::F32)
    } else {
        None
    }
}

/// Applies one row read in `format` (`bytes`: what follows its rowid) to `index`.
fn apply_row(index: &mut VectorIndex, format: Format, rowid: i64, bytes: &[u8], floats: &mut Vec<f32>) {
    match format {
        Format::Int8 => {
            let scale = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let row: Vec<i8> = bytes[4..].iter().map(|b| *b as i8).collect();
            index.upsert_quantised(rowid, scale, &row);
        }
        Format::F32 => {
            floats.clear();
            floats.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            index.upsert_normalized(rowid, floats);
        }
    }
}

/// A row as this format stores it: its rowid, its scale and its int8 components.
fn encode_row(out: &mut Vec<u8>, rowid: i64, scale: f32, row: &[i8]) {
    out.extend_from_slice(&rowid.to_le_bytes());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(row.iter().map(|x| *x as u8));
}

impl VecFile {
    /// Loads the snapshot and replays the log. Returns the index, the file handle for
    /// further appends and the change sequence the loaded state covers (0 if nothing
    /// usable was found).
    pub fn load(dir: &Path, signature: &str, dims: usize) -> Result<(VectorIndex, VecFile, i64), MemoryError> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut index = VectorIndex::new(dims);
        let base_path = dir.join("vectors.bin");
        let mut seq = 0i64;
        let mut base_len = 0;
        // A file of the first format was read: rewrite both in this one before appending.
        let mut rewrite = false;
        if let Ok(f) = File::open(&base_path) {
            base_len = f.metadata().map(|m| m.len()).unwrap_or(0);
            match Self::read_base(BufReader::with_capacity(1 << 20, f), signature, &mut index) {
                Some((s, format)) => {
                    seq = s;
                    rewrite |= format == Format::F32;
                }
                None => {
                    tracing::info!(
                        dir = %dir.display(),
                        "vector snapshot is from another embedder or damaged; vectors will be rebuilt"
                    );
                    index.clear();
                    base_len = 0;
                    fs::remove_file(&base_path).with_context(|| format!("removing {}", base_path.display()))?;
                }
            }
        }
        // The log replays onto the snapshot, or alone when there is none: every record is an
        // idempotent upsert or delete, so a partial index is only missing vectors, which the
        // background thread fills in.
        let log_path = dir.join("vectors.log");
        let log_hdr = header(LOG_MAGIC, signature, dims);
        let mut valid_len = 0u64;
        if let Ok(f) = File::open(&log_path) {
            let (s, len, format) = Self::replay_log(BufReader::with_capacity(1 << 20, f), signature, &mut index);
            if let Some(s) = s {
                seq = seq.max(s);
            }
            valid_len = len;
            rewrite |= format == Some(Format::F32) && len > 0;
        }
        // Cut a torn or foreign tail so new records follow valid ones.
        let log = if valid_len == 0 {
            let mut f = File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
            f.write_all(&log_hdr).with_context(|| format!("writing {}", log_path.display()))?;
            valid_len = log_hdr.len() as u64;
            f
        } else {
            let reopen = || -> std::io::Result<File> {
                let mut f = OpenOptions::new().write(true).open(&log_path)?;
                f.set_len(valid_len)?;
                f.seek(SeekFrom::End(0))?;
                Ok(f)
            };
            reopen().with_context(|| format!("opening {}", log_path.display()))?
        };
        index.attach_ann(dir, signature);
        let mut vf = VecFile {
            dir: dir.to_path_buf(),
            signature: signature.to_string(),
            dims,
            log: BufWriter::with_capacity(1 << 20, log),
            log_len: valid_len,
            base_len,
            hash: FNV_START,
            dirty: false,
        };
        if rewrite {
            vf.compact(&index, seq)?;
            tracing::info!(dir = %dir.display(), rows = index.len(), "vector files rewritten with int8 rows");
        }
        Ok((index, vf, seq))
    }

    fn read_base(mut r: impl Read, signature: &str, index: &mut VectorIndex) -> Option<(i64, Format)> {
        let format = read_header(&mut r, [BASE_MAGIC, F32_BASE_MAGIC], signature, index.dims())?;
        let mut b8 = [0u8; 8];
        read_exact_or_none(&mut r, &mut b8)?;
        let count = u64::from_le_bytes(b8);
        read_exact_or_none(&mut r, &mut b8)?;
        let seq = i64::from_le_bytes(b8);
        let mut bytes = vec![0u8; format.row_bytes(index.dims())];
        let mut floats = Vec::new();
        for _ in 0..count {
            read_exact_or_none(&mut r, &mut b8)?;
            read_exact_or_none(&mut r, &mut bytes)?;
            apply_row(index, format, i64::from_le_bytes(b8), &bytes, &mut floats);
        }
        Some((seq, format))
    }

    /// Applies committed record groups; returns the last committed sequence, the byte length
    /// of the valid prefix (0 when the header does not match) and the log's format.
    fn replay_log(mut r: impl Read, signature: &str, index: &mut VectorIndex) -> (Option<i64>, u64, Option<Format>) {
        let dims = index.dims();
        let Some(format) = read_header(&mut r, [LOG_MAGIC, F32_LOG_MAGIC], signature, dims) else {
            return (None, 0, None);
        };
        enum Op {
            Upsert(i64, Vec<u8>),
            Delete(i64),
        }
        let row_bytes = format.row_bytes(dims);
        let mut floats = Vec::new();
        let mut valid = header(LOG_MAGIC, signature, dims).len() as u64;
        let mut pos = valid;
        let mut pending: Vec<Op> = Vec::new();
        let mut hash = FNV_START;
        let mut seq = None;
        loop {
            let mut tag = [0u8; 1];
            if read_exact_or_none(&mut r, &mut tag).is_none() {
                break;
            }
            let mut b8 = [0u8; 8];
            if read_exact_or_none(&mut r, &mut b8).is_none() {
                break;
            }
            match tag[0] {
                REC_UPSERT => {
                    let mut bytes = vec![0u8; row_bytes];
                    if read_exact_or_none(&mut r, &mut bytes).is_none() {
                        break;
                    }
                    hash = fnv(fnv(fnv(hash, &tag), &b8), &bytes);
                    pending.push(Op::Upsert(i64::from_le_bytes(b8), bytes));
                    pos += 9 + row_bytes as u64;
                }
                REC_DELETE => {
                    hash = fnv(fnv(hash, &tag), &b8);
                    pending.push(Op::Delete(i64::from_le_bytes(b8)));
                    pos += 9;
                }
                REC_COMMIT => {
                    let mut h8 = [0u8; 8];
                    if read_exact_or_none(&mut r, &mut h8).is_none() || u64::from_le_bytes(h8) != hash {
                        break;
                    }
                    for op in pending.drain(..) {
                        match op {
                            Op::Upsert(row, bytes) => apply_row(index, format, row, &bytes, &mut floats),
                            Op::Delete(row) => {
                                index.remove(row);
                            }
                        }
                    }
                    seq = Some(i64::from_le_bytes(b8));
                    hash = FNV_START;
                    pos += 17;
                    valid = pos;
                }
                _ => break,
            }
        }
        (seq, valid, Some(format))
    }

    fn write_record(&mut self, bytes: &[u8]) -> Result<(), MemoryError> {
        self.hash = fnv(self.hash, bytes);
        self.log.write_all(bytes).with_context(|| format!("writing {}", self.dir.join("vectors.log").display()))?;
        self.log_len += bytes.len() as u64;
        self.dirty = true;
        Ok(())
    }

    /// Logs an upsert of an already-normalised vector, quantised as the index quantises it.
    pub fn upsert(&mut self, rowid: i64, v: &[f32]) -> Result<(), MemoryError> {
        let mut row = vec![0i8; self.dims];
        let n = v.len().min(self.dims);
        let scale = quantize(&v[..n], &mut row[..n]);
        let mut rec = Vec::with_capacity(13 + self.dims);
        rec.push(REC_UPSERT);
        encode_row(&mut rec, rowid, scale, &row);
        self.write_record(&rec)
    }

    pub fn delete(&mut self, rowid: i64) -> Result<(), MemoryError> {
        let mut rec = [0u8; 9];
        rec[0] = REC_DELETE;
        rec[1..].copy_from_slice(&rowid.to_le_bytes());
        self.write_record(&rec)
    }

    /// Closes the records written so far as covering change sequence `seq` and hands
    /// them to the OS. No fsync: a crash can only lose a suffix, which is re-applied
    /// from SQLite on the next open.
    pub fn commit(&mut self, seq: i64) -> Result<(), MemoryError> {
        let mut rec = [0u8; 17];
        rec[0] = REC_COMMIT;
        rec[1..9].copy_from_slice(&seq.to_le_bytes());
        rec[9..].copy_from_slice(&self.hash.to_le_bytes());
        self.log
            .write_all(&rec)
            .and_then(|()| self.log.flush())
            .with_context(|| format!("writing {}", self.dir.join("vectors.log").display()))?;
        self.log_len += 17;
        self.hash = FNV_START;
        self.dirty = false;
        Ok(())
    }

    /// True when the log has grown past half the snapshot (and at least 32 MiB).
    pub fn should_compact(&self) -> bool {
        self.log_len > (self.base_len / 2).max(32 << 20)
    }

    /// Writes a new snapshot of `index` at `seq` (to a temporary file, fsynced, then
    /// renamed over the old one) and starts an empty log. A crash before the rename
    /// keeps the old snapshot and log; after it, replaying the old log onto the new
    /// snapshot is harmless because every record is idempotent.
    pub fn compact(&mut self, index: &VectorIndex, seq: i64) -> Result<(), MemoryError> {
        if self.dirty {
            return Err(MemoryError::Other("vector log has uncommitted records".to_string()));
        }
        let tmp = self.dir.join("vectors.bin.tmp");
        let write_snapshot = || -> std::io::Result<()> {
            let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
            w.write_all(&header(BASE_MAGIC, &self.signature, self.dims))?;
            w.write_all(&(index.len() as u64).to_le_bytes())?;
            w.write_all(&seq.to_le_bytes())?;
            let mut buf = Vec::with_capacity(12 + self.dims);
            for (rowid, scale, row) in index.quantised_rows() {
                buf.clear();
                encode_row(&mut buf, rowid, scale, row);
                w.write_all(&buf)?;
            }
            w.flush()?;
            w.get_ref().sync_all()
        };
        write_snapshot().with_context(|| format!("writing {}", tmp.display()))?;
        let base = self.dir.join("vectors.bin");
        fs::rename(&tmp, &base).with_context(|| format!("renaming {} to {}", tmp.display(), base.display()))?;
        self.base_len = fs::metadata(&base).with_context(|| format!("reading {}", base.display()))?.len();
        let log_path = self.dir.join("vectors.log");
        let hdr = header(LOG_MAGIC, &self.signature, self.dims);
        let mut f = File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        f.write_all(&hdr).with_context(|| format!("writing {}", log_path.display()))?;
        self.log = BufWriter::with_capacity(1 << 20, f);
        self.log_len = hdr.len() as u64;
        self.hash = FNV_START;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::normalize;
    use crate::vectors::tests::xorshift;

    const SIG: &str = "test/embedder";
    const DIMS: usize = 48;

    fn unit(seed: u64) -> Vec<f32> {
        let mut rnd = xorshift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut v: Vec<f32> = (0..DIMS).map(|_| rnd()).collect();
        normalize(&mut v);
        v
    }

    fn held(index: &VectorIndex) -> Vec<(i64, f32, Vec<i8>)> {
        let mut rows: Vec<(i64, f32, Vec<i8>)> = index.quantised_rows().map(|(r, s, q)| (r, s, q.to_vec())).collect();
        rows.sort_by_key(|r| r.0);
        rows
    }

    /// What the log and the snapshot store reloads as exactly the rows the index held, and a
    /// row costs 12 + dims bytes in the snapshot.
    #[test]
    fn rows_reload_exactly_as_the_index_held_them() {
        let dir = tempfile::tempdir().unwrap();
        let (mut index, mut file, seq) = VecFile::load(dir.path(), SIG, DIMS).unwrap();
        assert_eq!((index.len(), seq), (0, 0));
        for r in 1..=40 {
            let v = unit(r as u64);
            index.upsert_normalized(r, &v);
            file.upsert(r, &v).unwrap();
        }
        index.remove(7);
        file.delete(7).unwrap();
        file.commit(3).unwrap();
        let written = held(&index);
        drop(file);
        let (from_log, mut file, seq) = VecFile::load(dir.path(), SIG, DIMS).unwrap();
        assert_eq!((held(&from_log), seq), (written.clone(), 3));
        file.compact(&from_log, 3).unwrap();
        let snapshot = std::fs::metadata(dir.path().join("vectors.bin")).unwrap().len() as usize;
        let hdr = header(BASE_MAGIC, SIG, DIMS).len() + 16;
        assert_eq!(snapshot, hdr + 39 * (12 + DIMS));
        drop(file);
        let (from_snapshot, _, seq) = VecFile::load(dir.path(), SIG, DIMS).unwrap();
        assert_eq!((held(&from_snapshot), seq), (written, 3));
    }

    /// A store written by an earlier version (rows as f32) loads, and both files are rewritten
    /// in the int8 format at once, holding the same rows.
    #[test]
    fn files_of_the_f32_format_are_read_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let f32_row = |out: &mut Vec<u8>, rowid: i64, v: &[f32]| {
            out.extend_from_slice(&rowid.to_le_bytes());
            v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        };
        let mut base = header(F32_BASE_MAGIC, SIG, DIMS);
        base.extend_from_slice(&3u64.to_le_bytes());
        base.extend_from_slice(&5i64.to_le_bytes());
        for r in 1..=3 {
            f32_row(&mut base, r, &unit(r as u64));
        }
        std::fs::write(dir.path().join("vectors.bin"), base).unwrap();
        // The log changes row 2 and deletes row 3, as one committed group.
        let mut records = vec![REC_UPSERT];
        f32_row(&mut records, 2, &unit(99));
        records.push(REC_DELETE);
        records.extend_from_slice(&3i64.to_le_bytes());
        let hash = fnv(FNV_START, &records);
        let mut log = header(F32_LOG_MAGIC, SIG, DIMS);
        log.extend_from_slice(&records);
        log.push(REC_COMMIT);
        log.extend_from_slice(&6i64.to_le_bytes());
        log.extend_from_slice(&hash.to_le_bytes());
        std::fs::write(dir.path().join("vectors.log"), log).unwrap();

        let (index, file, seq) = VecFile::load(dir.path(), SIG, DIMS).unwrap();
        let mut want = VectorIndex::new(DIMS);
        want.upsert_normalized(1, &unit(1));
        want.upsert_normalized(2, &unit(99));
        assert_eq!((held(&index), seq), (held(&want), 6));
        let magic = |name: &str| std::fs::read(dir.path().join(name)).unwrap()[..8].to_vec();
        assert_eq!((magic("vectors.bin"), magic("vectors.log")), (BASE_MAGIC.to_vec(), LOG_MAGIC.to_vec()));
        drop(file);
        let (again, _, seq) = VecFile::load(dir.path(), SIG, DIMS).unwrap();
        assert_eq!((held(&again), seq), (held(&want), 6));
    }

    /// What unrestricted searches return on a store a benchmark kept, against the exact int8
    /// scan of the same index: recall@10 and time of [`VectorIndex::search`] (the IVF when its
    /// lists answer, else the sign pre-rank over every row) for the subjects of 200 of its mails
    /// as queries, embedded with the built-in model, asking for the 100 that `memory.recall`
    /// asks for:
    ///
    /// ```text
    /// KEPT_STORE=<MEMORY_BENCH_DIR>/oh-mb-XXXXXX/h/data cargo test --profile fast \
    ///   -p openhuman-memory --lib -- --ignored kept_store_recall --nocapture
    /// ```
    #[test]
    #[ignore = "a diagnostic: needs a store a memory benchmark kept"]
    #[allow(clippy::print_stdout, reason = "the diagnostic's figures are its output")]
    fn kept_store_recall() {
        use std::time::Instant;
        let Ok(data) = std::env::var("KEPT_STORE") else {
            println!("KEPT_STORE is not set: nothing to measure");
            return;
        };
        let data = std::path::Path::new(&data);
        let model = crate::embed::builtin().expect("the built-in model");
        let started = Instant::now();
        let (mut ix, _file, _) =
            VecFile::load(&data.join("vectors"), model.signature(), model.dims()).expect("the kept store's vectors");
        ix.attach_ann(&data.join("vectors"), model.signature());
        let rows = ix.len();
        let conn =
            rusqlite::Connection::open_with_flags(data.join("memory.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .expect("the kept store's database");
        let last: i64 = conn.query_row("SELECT max(rowid) FROM chunks", [], |r| r.get(0)).expect("a chunk");
        let subjects: Vec<String> = (0..200i64)
            .filter_map(|i| {
                conn.query_row(
                    "SELECT json_extract(metadata, '$.subject') FROM chunks WHERE rowid = ?1",
                    [1 + (i * 4_854_847) % last],
                    |r| r.get::<_, Option<String>>(0),
                )
                .ok()
                .flatten()
            })
            .collect();
        let texts: Vec<&str> = subjects.iter().map(String::as_str).collect();
        let queries = model.embed(&texts).expect("embedded subjects");
        println!(
            "{rows} rows loaded in {:.1} s; {} subjects as queries",
            started.elapsed().as_secs_f64(),
            queries.len()
        );
        let answers = ix.ann_stats().is_some_and(|a| a.answers);
        let (mut found, mut times, mut exact_times) = (0, Vec::new(), Vec::new());
        for q in &queries {
            let t = Instant::now();
            let exact = ix.exact_top(q, 10);
            exact_times.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let got = ix.search(q, 100, None);
            times.push(t.elapsed().as_secs_f64() * 1e3);
            found += got.iter().take(10).filter(|(r, _)| exact.contains(r)).count();
        }
        let p50 = |mut t: Vec<f64>| {
            t.sort_by(f64::total_cmp);
            t.get(t.len() / 2).copied().unwrap_or(f64::NAN)
        };
        println!(
            "searches answered by {}: recall@10 {:.4} against the exact scan; p50 {:.2} ms (exact scan {:.2} ms)",
            if answers { "the IVF's probed lists" } else { "the sign pre-rank over every row" },
            found as f64 / (10 * queries.len()).max(1) as f64,
            p50(times),
            p50(exact_times)
        );
    }
}
