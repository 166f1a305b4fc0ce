//! Embedders behind an HTTP API (`[memory.embeddings]`): Ollama (`POST /api/embed`, or
//! the older one-text `/api/embeddings` when a server lacks the batch endpoint) and any
//! OpenAI-compatible `POST /v1/embeddings`. The engine calls `embed` from blocking threads (the
//! blocking pool, its backfill thread, start-up), so each embedder owns a one-thread tokio runtime
//! for its requests and waits on a plain channel, which is safe on any thread. The vector size is
//! learned by embedding a probe text when the embedder opens, and remembered in the data
//! directory so that a daemon can still start (keyword search working, vectors backfilled later)
//! while the embedding server is down. Signature: `<provider>:<model>/<dims>`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use openhuman_config::{EmbeddingProvider, EmbeddingsConfig};
use openhuman_memory::embed::{EmbedError, Embedder};

use crate::ProviderError;
use crate::http;

pub const OLLAMA_DEFAULT_BASE: &str = "http://127.0.0.1:11434";
pub const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com";
/// Texts per HTTP request (OpenAI accepts up to 2048; small batches keep requests short).
const BATCH: usize = 64;
const TIMEOUT: Duration = Duration::from_secs(60);
const MAX_RETRIES: u32 = 2;
/// Where the learned vector size is remembered, in the data directory.
const CACHE_FILE: &str = "embedder-http.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EmbedApi {
    Ollama,
    OpenAi,
}

pub struct HttpEmbedder {
    kind: EmbedApi,
    base_url: String,
    model: String,
    key: Option<String>,
    dims: usize,
    signature: String,
    service: String,
    client: reqwest::Client,
    /// Set once an Ollama server answered 404 to `/api/embed`: use `/api/embeddings` from then on.
    ollama_legacy: AtomicBool,
    rt: Option<tokio::runtime::Runtime>,
}

/// What an HTTP embedder is configured to use, checked without any request.
struct Settings {
    kind: EmbedApi,
    name: &'static str,
    model: String,
    base_url: String,
    key: Option<String>,
}

fn settings(cfg: &EmbeddingsConfig) -> Result<Settings, String> {
    let (kind, name, default_base) = match cfg.provider {
        EmbeddingProvider::Ollama => (EmbedApi::Ollama, "ollama", OLLAMA_DEFAULT_BASE),
        EmbeddingProvider::Openai => (EmbedApi::OpenAi, "openai", OPENAI_DEFAULT_BASE),
        EmbeddingProvider::Builtin => return Err("the built-in embedder is not an HTTP embedder".to_string()),
    };
    let model = match cfg.model.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => {
            return Err(format!(
                "[memory.embeddings].provider = \"{name}\" needs [memory.embeddings].model (e.g. {})",
                if kind == EmbedApi::Ollama { "nomic-embed-text" } else { "text-embedding-3-small" }
            ));
        }
    };
    let base_url = cfg.base_url.as_deref().unwrap_or(default_base).trim_end_matches('/').to_string();
    let key = match &cfg.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            _ => {
                return Err(format!(
                    "[memory.embeddings].api_key_env names {var}, which is not set in the daemon's environment"
                ));
            }
        },
        None => None,
    };
    if kind == EmbedApi::OpenAi && base_url == OPENAI_DEFAULT_BASE && key.is_none() {
        return Err("[memory.embeddings].provider = \"openai\" at api.openai.com needs \
                    [memory.embeddings].api_key_env (the name of the variable holding the key)"
            .to_string());
    }
    Ok(Settings { kind, name, model, base_url, key })
}

impl HttpEmbedder {
    /// Checks the config, learns the vector size (probe, or the remembered size when the server
    /// is down) and returns the embedder; Err names the key to fix or the server that failed.
    pub fn open(cfg: &EmbeddingsConfig, data_dir: &Path) -> Result<HttpEmbedder, ProviderError> {
        HttpEmbedder::open_inner(cfg, data_dir).map_err(ProviderError::NotConfigured)
    }

    /// The checks `open` makes before any request: a model, the key variable set, a key for
    /// api.openai.com. No network; `config check` uses it.
    pub fn check(cfg: &EmbeddingsConfig) -> Result<(), ProviderError> {
        settings(cfg).map(|_| ()).map_err(ProviderError::NotConfigured)
    }

    fn open_inner(cfg: &EmbeddingsConfig, data_dir: &Path) -> Result<HttpEmbedder, String> {
        let Settings { kind, name, model, base_url, key } = settings(cfg)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("embed-http")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the embedder's runtime: {e}"))?;
        let client = http::client(&base_url, TIMEOUT).map_err(|e| e.to_string())?;
        let mut e = HttpEmbedder {
            kind,
            service: format!("embedding provider {name}"),
            base_url,
            model,
            key,
            dims: 0,
            signature: String::new(),
            client,
            ollama_legacy: AtomicBool::new(false),
            rt: Some(rt),
        };
        let cache = data_dir.join(CACHE_FILE);
        let dims = match e.request(vec!["dimension probe".to_string()]) {
            Ok(v) if v.first().is_some_and(|x| !x.is_empty()) => {
                let dims = v[0].len();
                e.remember(&cache, dims);
                dims
            }
            Ok(_) => return Err(format!("{} returned an empty vector for a probe text", e.service)),
            Err(err) => match e.remembered(&cache) {
                Some(dims) => {
                    tracing::warn!(
                        error = %err,
                        dims,
                        "embedding provider unreachable at start; using the remembered vector size, new chunks \
                         stay keyword-only until it answers"
                    );
                    dims
                }
                None => {
                    return Err(format!(
                        "{err}. The embedding provider must answer once so its vector size is known: start it, \
                         or set [memory.embeddings].provider = \"builtin\""
                    ));
                }
            },
        };
        e.dims = dims;
        e.signature = format!("{name}:{}/{dims}", e.model);
        tracing::info!(signature = %e.signature, url = %e.base_url, "HTTP embedder ready");
        Ok(e)
    }

    fn cache_entry(&self, dims: usize) -> Value {
        json!({ "provider": self.service, "base_url": self.base_url, "model": self.model, "dims": dims })
    }

    fn remember(&self, file: &PathBuf, dims: usize) {
        let write = std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")))
            .and_then(|_| std::fs::write(file, self.cache_entry(dims).to_string()));
        if let Err(e) = write {
            tracing::warn!(error = %e, "cannot remember the embedder's vector size");
        }
    }

    fn remembered(&self, file: &PathBuf) -> Option<usize> {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
        let dims = v["dims"].as_u64()? as usize;
        (v == self.cache_entry(dims) && dims > 0).then_some(dims)
    }

    /// Embeds non-empty texts, in order, without normalising.
    fn request(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        let rt = self.rt.as_ref().ok_or("embedder is shut down")?;
        let (tx, rx) = mpsc::sync_channel(1);
        let job = Job {
            kind: self.kind,
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            key: self.key.clone(),
            service: self.service.clone(),
            client: self.client.clone(),
            legacy: self.ollama_legacy.load(Ordering::Relaxed),
        };
        rt.spawn(async move {
            let _ = tx.send(job.run(texts).await);
        });
        // The client's own timeout bounds each attempt; this bounds the whole exchange.
        let limit = TIMEOUT * (MAX_RETRIES + 2);
        let (vectors, went_legacy) =
            rx.recv_timeout(limit).map_err(|_| format!("{} did not answer within {limit:?}", self.service))??;
        if went_legacy {
            self.ollama_legacy.store(true, Ordering::Relaxed);
        }
        Ok(vectors)
    }
}

impl Drop for HttpEmbedder {
    fn drop(&mut self) {
        // The engine may drop its embedder on an async thread, where a blocking drop panics.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Embedder for HttpEmbedder {
    fn signature(&self) -> &str {
        &self.signature
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = vec![vec![0.0f32; self.dims]; texts.len()];
        // Blank texts get the zero vector (the trait's rule for texts with nothing to embed);
        // APIs reject empty inputs anyway.
        let todo: Vec<usize> = (0..texts.len()).filter(|i| !texts[*i].trim().is_empty()).collect();
        for part in todo.chunks(BATCH) {
            let batch: Vec<String> = part.iter().map(|i| texts[*i].to_string()).collect();
            let vectors = self.request(batch).map_err(EmbedError)?;
            if vectors.len() != part.len() {
                return Err(EmbedError(format!(
                    "{} returned {} vectors for {} texts",
                    self.service,
                    vectors.len(),
                    part.len()
                )));
            }
            for (i, mut v) in part.iter().zip(vectors) {
                if v.len() != self.dims {
                    return Err(EmbedError(format!(
                        "{} returned {}-dimensional vectors, but this store's are {}: the model behind `{}` changed; \
                         restart the daemon to re-embed",
                        self.service,
                        v.len(),
                        self.dims,
                        self.model
                    )));
                }
                normalize(&mut v);
                out[*i] = v;
            }
        }
        Ok(out)
    }
}

fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// One request's worth of settings, owned so it can run on the embedder's runtime.
struct Job {
    kind: EmbedApi,
    base_url: String,
    model: String,
    key: Option<String>,
    service: String,
    client: reqwest::Client,
    legacy: bool,
}

impl Job {
    /// The vectors, and whether the Ollama legacy endpoint had to be used.
    async fn run(self, texts: Vec<String>) -> Result<(Vec<Vec<f32>>, bool), String> {
        match self.kind {
            EmbedApi::OpenAi => Ok((self.openai(&texts).await?, false)),
            EmbedApi::Ollama if self.legacy => Ok((self.ollama_legacy(&texts).await?, true)),
            EmbedApi::Ollama => match self.ollama(&texts).await {
                Ok(v) => Ok((v, false)),
                // Servers before the batch endpoint answer 404 to it.
                Err((Some(404), first)) => match self.ollama_legacy(&texts).await {
                    Ok(v) => Ok((v, true)),
                    Err(_) => Err(first),
                },
                Err((_, e)) => Err(e),
            },
        }
    }

    async fn post(&self, url: &str, body: &Value) -> Result<Value, http::HttpError> {
        let target = http::Target { service: &self.service, url, secret: self.key.as_deref() };
        http::send_json(target, MAX_RETRIES, || {
            let mut r = self.client.post(url).json(body);
            if let Some(k) = &self.key {
                r = r.bearer_auth(k);
            }
            r
        })
        .await
    }

    async fn openai(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let url = if self.base_url.ends_with("/v1") {
            format!("{}/embeddings", self.base_url)
        } else {
            format!("{}/v1/embeddings", self.base_url)
        };
        let v = self.post(&url, &json!({ "model": self.model, "input": texts })).await.map_err(|e| e.message)?;
        let data = v.get("data").and_then(Value::as_array).ok_or_else(|| format!("{} sent no `data`", self.service))?;
        let mut out: Vec<(usize, Vec<f32>)> = Vec::with_capacity(data.len());
        for (pos, d) in data.iter().enumerate() {
            let index = d.get("index").and_then(Value::as_u64).map(|i| i as usize).unwrap_or(pos);
            out.push((index, floats(d.get("embedding"), &self.service)?));
        }
        // The API may answer out of order; `index` says which input each vector belongs to.
        out.sort_by_key(|(i, _)| *i);
        Ok(out.into_iter().map(|(_, v)| v).collect())
    }

    async fn ollama(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, (Option<u16>, String)> {
        let url = format!("{}/api/embed", self.base_url);
        let v = self
            .post(&url, &json!({ "model": self.model, "input": texts }))
            .await
            .map_err(|e| (e.status, e.message))?;
        let list = v
            .get("embeddings")
            .and_then(Value::as_array)
            .ok_or_else(|| (None, format!("{} sent no `embeddings`", self.service)))?;
        list.iter().map(|e| floats(Some(e), &self.service).map_err(|e| (None, e))).collect()
    }

    async fn ollama_legacy(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let url = format!("{}/api/embeddings", self.base_url);
        let mut out = Vec::with_capacity(texts.len());
        for t in texts {
            let v = self.post(&url, &json!({ "model": self.model, "prompt": t })).await.map_err(|e| e.message)?;
            out.push(floats(v.get("embedding"), &self.service)?);
        }
        Ok(out)
    }
}

fn floats(v: Option<&Value>, service: &str) -> Result<Vec<f32>, String> {
    let arr = v.and_then(Value::as_array).ok_or_else(|| format!("{service} sent a vector that is not an array"))?;
    arr.iter()
        .map(|x| x.as_f64().map(|f| f as f32).ok_or_else(|| format!("{service} sent a vector with a non-number")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = EmbeddingsConfig { provider: EmbeddingProvider::Ollama, ..Default::default() };
        let e = HttpEmbedder::open(&cfg, dir.path()).err().unwrap().to_string();
        assert!(e.contains("[memory.embeddings].model"), "{e}");
        let cfg =
            EmbeddingsConfig { provider: EmbeddingProvider::Openai, model: Some("m".into()), ..Default::default() };
        let e = HttpEmbedder::open(&cfg, dir.path()).err().unwrap().to_string();
        assert!(e.contains("[memory.embeddings].api_key_env"), "{e}");
    }

    #[test]
    fn unreachable_server_without_a_remembered_size_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // Port 9 (discard) on loopback is closed on test machines: connect is refused at once.
        let cfg = EmbeddingsConfig {
            provider: EmbeddingProvider::Ollama,
            model: Some("m".into()),
            base_url: Some("http://127.0.0.1:9".into()),
            api_key_env: None,
            ..EmbeddingsConfig::default()
        };
        let e = HttpEmbedder::open(&cfg, dir.path()).err().unwrap().to_string();
        assert!(e.contains("127.0.0.1:9") && e.contains("builtin"), "{e}");
    }
}
