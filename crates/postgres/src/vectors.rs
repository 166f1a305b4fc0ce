//! Shared vectors on the server: the table [`VECTORS_TABLE`] holds each chunk's vector once per
//! model, so a device with the same embedder takes them instead of embedding every chunk again.
//!
//! `oh_vectors(chunk, model, text_hash, vec)`, keyed by (chunk, model). `chunk` is the chunk's
//! rowid (the same on every copy) and references `chunks` with `ON DELETE CASCADE`: deleting a
//! chunk, or moving a store in (`TRUNCATE … CASCADE`), removes its vectors in the same
//! transaction, and a vector whose chunk was deleted meanwhile is simply not inserted. `model`
//! is the embedder's signature (model id, dimensions, weights prefix); `text_hash` is a hash of
//! the text that was embedded, so a vector of text that changed since is not taken. The vectors
//! are derived data, so they live outside the change log and the mirrored tables: no `NOTIFY`,
//! no log entry, and the write lock is not taken.
//!
//! Column type: pgvector's `vector` (no fixed length, since models differ in dimensions) when
//! the server has the extension (`CREATE EXTENSION IF NOT EXISTS vector` succeeds at migrate),
//! else `bytea` holding the f32 values little-endian. Whatever the table was created with is
//! what is used afterwards (read back from the catalog), so a server that gains the extension
//! later keeps working. Vectors travel as `real[]` with pgvector, as `bytea` without.

use openhuman_memory::shared::{SharedError, SharedVector, SharedVectors, VectorStorage};
use tokio_postgres::GenericClient;

use super::PgStore;

/// The server's vector table (for a row-level security policy that follows the chunk:
/// `USING (EXISTS (SELECT 1 FROM chunks c WHERE c.rowid = oh_vectors.chunk))`).
pub const VECTORS_TABLE: &str = "oh_vectors";

/// Chunks per statement when vectors are written or read.
const BATCH: usize = 1_000;

/// Creates the vector table (after the mirrored tables, which hold `chunks`), with pgvector
/// when the server offers it; returns how vectors are stored there.
pub(crate) async fn set_up(tx: &tokio_postgres::Transaction<'_>) -> Result<VectorStorage, tokio_postgres::Error> {
    let has_chunks: bool = tx.query_one("SELECT to_regclass('chunks') IS NOT NULL", &[]).await?.get(0);
    if !has_chunks {
        return Ok(VectorStorage::None);
    }
    // The extension is optional: a server without it (or a role that may not create it)
    // stores vectors as bytes.
    tx.batch_execute("SAVEPOINT pgvector").await?;
    match tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector").await {
        Ok(()) => tx.batch_execute("RELEASE SAVEPOINT pgvector").await?,
        Err(_) => tx.batch_execute("ROLLBACK TO SAVEPOINT pgvector").await?,
    }
    let has_type: bool = tx.query_one("SELECT to_regtype('vector') IS NOT NULL", &[]).await?.get(0);
    let column = if has_type { "vector" } else { "bytea" };
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {VECTORS_TABLE} (
             chunk bigint NOT NULL REFERENCES chunks (rowid) ON DELETE CASCADE,
             model text NOT NULL,
             text_hash bigint NOT NULL,
             vec {column} NOT NULL,
             PRIMARY KEY (chunk, model)
         )"
    ))
    .await?;
    // A vector is read and written only by those who may read its chunk.
    tx.batch_execute(&super::visibility::follow_chunk_policy(VECTORS_TABLE, "chunk")).await?;
    storage_of(tx).await
}

/// How the existing table stores vectors.
pub(crate) async fn storage_of(c: &impl GenericClient) -> Result<VectorStorage, tokio_postgres::Error> {
    let row = c
        .query_opt(
            "SELECT t.typname::text FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
              WHERE a.attrelid = to_regclass($1) AND a.attname = 'vec' AND NOT a.attisdropped",
            &[&VECTORS_TABLE],
        )
        .await?;
    Ok(match row.map(|r| r.get::<_, String>(0)).as_deref() {
        Some("vector") => VectorStorage::Pgvector,
        Some("bytea") => VectorStorage::Bytes,
        _ => VectorStorage::None,
    })
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn not_set_up(store: &PgStore) -> SharedError {
    SharedError {
        message: format!("{}: the vector table is not set up there (run `openhumand-mcp migrate`)", store.describe),
        unreachable: false,
    }
}

impl SharedVectors for PgStore {
    fn storage(&self) -> VectorStorage {
        *self.vector_storage.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn put(&self, model: &str, rows: &[SharedVector]) -> Result<(), SharedError> {
        let storage = self.storage();
        if storage == VectorStorage::None {
            return Err(not_set_up(self));
        }
        for part in rows.chunks(BATCH) {
            let chunks: Vec<i64> = part.iter().map(|r| r.chunk).collect();
            let hashes: Vec<i64> = part.iter().map(|r| r.text_hash).collect();
            // Only chunks that still exist: one deleted since it was embedded is left out.
            let tail = "ON CONFLICT (chunk, model) DO UPDATE SET text_hash = EXCLUDED.text_hash, vec = EXCLUDED.vec";
            match storage {
                VectorStorage::Pgvector => {
                    // One flat array and the vectors' length: each row takes its slice.
                    let dims = part.first().map_or(0, |r| r.vector.len()) as i64;
                    if part.iter().any(|r| r.vector.len() as i64 != dims) {
                        return Err(SharedError {
                            message: "vectors of one model differ in length".into(),
                            unreachable: false,
                        });
                    }
                    let flat: Vec<f32> = part.iter().flat_map(|r| r.vector.iter().copied()).collect();
                    let sql = format!(
                        "INSERT INTO {VECTORS_TABLE} (chunk, model, text_hash, vec)
                         SELECT t.chunk, $4, t.hash, ($3::real[])[(t.i - 1) * $5 + 1 : t.i * $5]::vector
                           FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS t(chunk, hash, i)
                           JOIN chunks c ON c.rowid = t.chunk
                         {tail}"
                    );
                    self.with(async |c| c.execute(sql.as_str(), &[&chunks, &hashes, &flat, &model, &dims]).await)?;
                }
                VectorStorage::Bytes => {
                    let blobs: Vec<Vec<u8>> = part.iter().map(|r| to_bytes(&r.vector)).collect();
                    let sql = format!(
                        "INSERT INTO {VECTORS_TABLE} (chunk, model, text_hash, vec)
                         SELECT t.chunk, $4, t.hash, t.vec
                           FROM unnest($1::bigint[], $2::bigint[], $3::bytea[]) AS t(chunk, hash, vec)
                           JOIN chunks c ON c.rowid = t.chunk
                         {tail}"
                    );
                    self.with(async |c| c.execute(sql.as_str(), &[&chunks, &hashes, &blobs, &model]).await)?;
                }
                VectorStorage::None => unreachable!("checked above"),
            }
        }
        Ok(())
    }

    fn get(&self, model: &str, chunks: &[i64]) -> Result<Vec<SharedVector>, SharedError> {
        let storage = self.storage();
        if storage == VectorStorage::None {
            return Err(not_set_up(self));
        }
        let vec = if storage == VectorStorage::Pgvector { "vec::real[]" } else { "vec" };
        let sql = format!(
            "SELECT chunk, text_hash, {vec} FROM {VECTORS_TABLE} WHERE model = $1 AND chunk = ANY($2::bigint[])"
        );
        let mut out = Vec::with_capacity(chunks.len());
        for part in chunks.chunks(BATCH) {
            let ids = part.to_vec();
            let rows = self.with(async |c| c.query(sql.as_str(), &[&model, &ids]).await)?;
            for r in rows {
                let vector = match storage {
                    VectorStorage::Pgvector => r.get::<_, Vec<f32>>(2),
                    _ => from_bytes(r.get::<_, &[u8]>(2)),
                };
                out.push(SharedVector { chunk: r.get(0), text_hash: r.get(1), vector });
            }
        }
        Ok(out)
    }

    fn held(&self, model: &str) -> Result<Vec<i64>, SharedError> {
        if self.storage() == VectorStorage::None {
            return Err(not_set_up(self));
        }
        let sql = format!("SELECT chunk FROM {VECTORS_TABLE} WHERE model = $1");
        let rows = self.with(async |c| c.query(sql.as_str(), &[&model]).await)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn prepare_search(&self, model: &str, dims: usize) -> Result<(), SharedError> {
        if self.storage() != VectorStorage::Pgvector {
            return Err(needs_pgvector(self));
        }
        // An HNSW index per model over the vectors cast to its length, for that model's rows.
        let sql = format!(
            "CREATE INDEX IF NOT EXISTS {} ON {VECTORS_TABLE} USING hnsw ((vec::vector({dims})) vector_cosine_ops)
              WHERE model = {}",
            index_name(model),
            literal(model)
        );
        // On a connection of its own and without the request timeout: building it over a large
        // store takes minutes, and the store's connection keeps serving writes meanwhile.
        let client = self.connect(None)?;
        self.wait_for(INDEX_BUILD, client.batch_execute(&sql))
    }

    fn search(&self, model: &str, query: &[f32], limit: usize) -> Result<Vec<(i64, f32)>, SharedError> {
        if self.storage() != VectorStorage::Pgvector {
            return Err(needs_pgvector(self));
        }
        let d = query.len();
        // The model inline (not a parameter), so the planner matches the index's predicate.
        let sql = format!(
            "SELECT chunk, (1 - (vec::vector({d}) <=> $1::real[]::vector({d})))::real FROM {VECTORS_TABLE}
              WHERE model = {} ORDER BY vec::vector({d}) <=> $1::real[]::vector({d}) LIMIT $2",
            literal(model)
        );
        // The index's candidate list must be at least as long as the answer.
        let ef = format!("SET hnsw.ef_search = {}", limit.clamp(40, 1000));
        let q = query.to_vec();
        let limit = limit as i64;
        let rows = self.with(async |c| {
            c.batch_execute(&ef).await?;
            c.query(sql.as_str(), &[&q, &limit]).await
        })?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

/// The longest an index build may take.
const INDEX_BUILD: std::time::Duration = std::time::Duration::from_secs(6 * 3600);

/// The HNSW index of one model's vectors: named by a hash of the model's signature.
fn index_name(model: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in model.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("oh_vectors_hnsw_{h:016x}")
}

/// `s` as an SQL string literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn needs_pgvector(store: &PgStore) -> SharedError {
    SharedError {
        message: format!(
            "{}: searching vectors in the database needs the pgvector extension there (`memory.postgres.vector_search \
             = \"database\"`); install it on the server, or set vector_search = \"local\"",
            store.describe
        ),
        unreachable: false,
    }
}
