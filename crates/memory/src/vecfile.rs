//! Persistence of the vector index under `data_dir/vectors/`: a snapshot
//! (`vectors.bin`: header with the embedder signature, dimensions, row count and change
//! sequence, then `rowid, f32 × dims` rows) plus an append-only log (`vectors.log`) of
//! upserts and deletes closed by commit records. A commit record carries the change
//! sequence it completes and a checksum of the records before it, so a torn tail after
//! a crash is recognised and dropped; the dropped changes are re-applied from SQLite.
//!
//! One signature per file: the vectors in it were all produced by that embedder. Files
//! of another embedder are discarded on open and the rows re-embedded. A snapshot that is
//! unusable is deleted at once, so that a log written since (re-embedding under the new
//! signature, which can take long for a slow embedder) is replayed after a restart instead of
//! being started over.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::{MemoryError, ResultExt};
use super::vectors::VectorIndex;

const BASE_MAGIC: &[u8; 8] = b"OHVEC001";
const LOG_MAGIC: &[u8; 8] = b"OHVLOG01";
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

fn read_f32s(r: &mut impl Read, out: &mut [f32], scratch: &mut Vec<u8>) -> Option<()> {
    scratch.resize(out.len() * 4, 0);
    read_exact_or_none(r, scratch)?;
    for (o, b) in out.iter_mut().zip(scratch.chunks_exact(4)) {
        *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Some(())
}

impl VecFile {
    /// Loads the snapshot and replays the log. Returns the index, the file handle for
    /// further appends and the change sequence the loaded state covers (0 if nothing
    /// usable was found).
    pub fn load(dir: &Path, signature: &str, dims: usize) -> Result<(VectorIndex, VecFile, i64), MemoryError> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut index = VectorIndex::new(dims);
        let base_path = dir.join("vectors.bin");
        let base_hdr = header(BASE_MAGIC, signature, dims);
        let mut seq = 0i64;
        let mut base_len = 0;
        if let Ok(f) = File::open(&base_path) {
            base_len = f.metadata().map(|m| m.len()).unwrap_or(0);
            match Self::read_base(BufReader::with_capacity(1 << 20, f), &base_hdr, &mut index) {
                Some(s) => seq = s,
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
            let (s, len) = Self::replay_log(BufReader::with_capacity(1 << 20, f), &log_hdr, dims, &mut index);
            if let Some(s) = s {
                seq = seq.max(s);
            }
            valid_len = len;
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
        let vf = VecFile {
            dir: dir.to_path_buf(),
            signature: signature.to_string(),
            dims,
            log: BufWriter::with_capacity(1 << 20, log),
            log_len: valid_len,
            base_len,
            hash: FNV_START,
            dirty: false,
        };
        Ok((index, vf, seq))
    }

    fn read_base(mut r: impl Read, hdr: &[u8], index: &mut VectorIndex) -> Option<i64> {
        let mut got = vec![0u8; hdr.len()];
        read_exact_or_none(&mut r, &mut got)?;
        if got != hdr {
            return None;
        }
        let mut b8 = [0u8; 8];
        read_exact_or_none(&mut r, &mut b8)?;
        let count = u64::from_le_bytes(b8);
        read_exact_or_none(&mut r, &mut b8)?;
        let seq = i64::from_le_bytes(b8);
        let mut v = vec![0f32; index.dims()];
        let mut scratch = Vec::new();
        for _ in 0..count {
            read_exact_or_none(&mut r, &mut b8)?;
            read_f32s(&mut r, &mut v, &mut scratch)?;
            index.upsert_normalized(i64::from_le_bytes(b8), &v);
        }
        Some(seq)
    }

    /// Applies committed record groups; returns the last committed sequence and the
    /// byte length of the valid prefix (0 when the header does not match).
    fn replay_log(mut r: impl Read, hdr: &[u8], dims: usize, index: &mut VectorIndex) -> (Option<i64>, u64) {
        let mut got = vec![0u8; hdr.len()];
        if read_exact_or_none(&mut r, &mut got).is_none() || got != hdr {
            return (None, 0);
        }
        enum Op {
            Upsert(i64, Vec<f32>),
            Delete(i64),
        }
        let mut valid = hdr.len() as u64;
        let mut pos = valid;
        let mut pending: Vec<Op> = Vec::new();
        let mut hash = FNV_START;
        let mut seq = None;
        let mut scratch = Vec::new();
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
                    let mut v = vec![0f32; dims];
                    if read_f32s(&mut r, &mut v, &mut scratch).is_none() {
                        break;
                    }
                    hash = fnv(fnv(fnv(hash, &tag), &b8), &scratch);
                    pending.push(Op::Upsert(i64::from_le_bytes(b8), v));
                    pos += 9 + dims as u64 * 4;
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
                            Op::Upsert(row, v) => index.upsert_normalized(row, &v),
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
        (seq, valid)
    }

    fn write_record(&mut self, bytes: &[u8]) -> Result<(), MemoryError> {
        self.hash = fnv(self.hash, bytes);
        self.log.write_all(bytes).with_context(|| format!("writing {}", self.dir.join("vectors.log").display()))?;
        self.log_len += bytes.len() as u64;
        self.dirty = true;
        Ok(())
    }

    /// Logs an upsert of an already-normalised vector.
    pub fn upsert(&mut self, rowid: i64, v: &[f32]) -> Result<(), MemoryError> {
        let mut rec = Vec::with_capacity(9 + v.len() * 4);
        rec.push(REC_UPSERT);
        rec.extend_from_slice(&rowid.to_le_bytes());
        for x in v {
            rec.extend_from_slice(&x.to_le_bytes());
        }
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
            let mut buf = Vec::with_capacity(self.dims * 4);
            for (rowid, v) in index.rows() {
                w.write_all(&rowid.to_le_bytes())?;
                buf.clear();
                for x in v {
                    buf.extend_from_slice(&x.to_le_bytes());
                }
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
