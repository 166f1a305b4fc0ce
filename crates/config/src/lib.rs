//! Typed configuration: `config.toml` plus `OPENHUMAN_<SECTION>_<KEY>` environment
//! overrides, loaded and validated once. A reload yields a new value; the old one stays in force
//! when the new one is invalid. Unknown keys and bad values are errors naming the key and where
//! it came from, never silent defaults.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use openhuman_common::normalize_id;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Environment variables that start with `OPENHUMAN_` but are not config keys.
/// `OPENHUMAN_POSTGRES_URL` is the default of `memory.postgres.url_env`, a value, not a key.
pub mod clients;
pub use clients::ClientProfile;

const NON_CONFIG_ENV: &[&str] = &["OPENHUMAN_HOME", "OPENHUMAN_MCP_AUTH_TOKEN", "OPENHUMAN_POSTGRES_URL"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub autonomy: AutonomyConfig,
    pub mcp: McpConfig,
    pub memory: MemoryConfig,
    pub llm: LlmConfig,
    pub searxng: SearxngConfig,
    pub search: SearchConfig,
    pub capability_providers: Vec<CapabilityProvider>,
    /// `[clients.<name>]`: the tool set and level of each MCP client (see [`clients`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub clients: BTreeMap<String, ClientProfile>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AutonomyLevel {
    Readonly,
    #[default]
    Supervised,
    Full,
}

/// What a write does with text the secret detector flags (an API key, a token, a private key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnSecret {
    /// Ask the user through the client when it can be asked; redact otherwise.
    #[default]
    Ask,
    /// Store it with each secret-looking word replaced by `[redacted]`.
    Redact,
    /// Store it as sent.
    Store,
    /// Write nothing.
    Drop,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutonomyConfig {
    pub level: AutonomyLevel,
    /// Act-class calls allowed in any sliding hour, across all sessions and transports.
    pub max_actions_per_hour: u32,
    /// What a write holding something that looks like a secret does.
    pub on_secret: OnSecret,
    /// Ask the user (through a client that can ask) before `memory.forget` and
    /// `memory.split_entity` act.
    pub confirm_deletes: bool,
}

impl Default for AutonomyConfig {
    fn default() -> Self {
        AutonomyConfig {
            level: AutonomyLevel::Supervised,
            max_actions_per_hour: 120,
            on_secret: OnSecret::Ask,
            confirm_deletes: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Longest accepted protocol line on the socket and stdio, in bytes.
    pub max_line_bytes: usize,
    /// Seconds that in-flight calls get to finish on shutdown.
    pub shutdown_grace_secs: u64,
    /// Socket connections open at once (kept below the process's file limit).
    pub max_socket_connections: usize,
    /// New socket connections per second on average, and at once after a quiet spell.
    pub socket_connects_per_sec: u32,
    pub socket_connect_burst: u32,
    pub http: HttpConfig,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            max_line_bytes: 8 * 1024 * 1024,
            shutdown_grace_secs: 10,
            max_socket_connections: 256,
            socket_connects_per_sec: 200,
            socket_connect_burst: 1000,
            http: HttpConfig::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    pub enabled: bool,
    pub host: String,
    pub port: u16,
    /// File holding the bearer token (OPENHUMAN_MCP_AUTH_TOKEN wins over it).
    pub auth_token_file: Option<PathBuf>,
    /// Serve HTTP on loopback without any token (every local user then has full access).
    pub allow_no_token: bool,
    /// Extra origins allowed besides loopback ones, e.g. "https://app.example".
    pub allowed_origins: Vec<String>,
    pub session_idle_secs: u64,
    pub max_sessions: usize,
    pub max_body_bytes: usize,
    pub sse_keepalive_secs: u64,
    /// Seconds a request's head, and then its body, may take to arrive.
    pub request_timeout_secs: u64,
    /// HTTP connections served at once (kept below the process's file limit).
    pub max_connections: usize,
    /// HTTP connections one client address may hold at once.
    pub max_connections_per_peer: usize,
    /// Sessions (`initialize`) one client address may create per second on average, and at
    /// once after a quiet spell.
    pub new_sessions_per_sec: u32,
    pub new_sessions_burst: u32,
    /// OAuth 2.1 access tokens accepted beside the static token (`[mcp.http.oauth]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthConfig>,
}

/// `[mcp.http.oauth]`: the HTTP transport as an OAuth 2.1 resource server. Access tokens are JWTs
/// from `issuer`, checked against its published keys, naming `audience` (by default `resource`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier (its `iss`), an http(s) URL.
    pub issuer: String,
    /// This server's resource URI: the public URL of its MCP endpoint (e.g.
    /// `https://mcp.example.com/mcp` behind a tunnel). Unset: `http://<host>:<port>/mcp` of the
    /// loopback address bound.
    pub resource: Option<String>,
    /// Where the issuer's signing keys are; unset: discovered from the issuer's metadata.
    pub jwks_uri: Option<String>,
    /// The audience tokens must name; unset: the resource URI.
    pub audience: Option<String>,
    /// The scope that read tools, resources and prompts need.
    pub read_scope: String,
    /// The scope that write tools, agents and web tools need.
    pub act_scope: String,
    /// Whether the static bearer token still works beside OAuth tokens.
    pub accept_static_token: bool,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            issuer: String::new(),
            resource: None,
            jwks_uri: None,
            audience: None,
            read_scope: "openhuman:read".to_string(),
            act_scope: "openhuman:act".to_string(),
            accept_static_token: true,
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            enabled: false,
            host: "127.0.0.1".to_string(),
            port: 9300,
            auth_token_file: None,
            allow_no_token: false,
            allowed_origins: Vec::new(),
            session_idle_secs: 86_400,
            max_sessions: 1024,
            max_body_bytes: 8 * 1024 * 1024,
            sse_keepalive_secs: 15,
            request_timeout_secs: 30,
            max_connections: 256,
            max_connections_per_peer: 128,
            new_sessions_per_sec: 20,
            new_sessions_burst: 100,
            oauth: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MemoryEngineKind {
    #[default]
    Embedded,
    /// Memory shared by several daemons in a PostgreSQL server (`[memory.postgres]`), each
    /// daemon serving from its own local copy.
    Postgres,
    Off,
}

/// `[memory.postgres]`: where the shared store is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostgresConfig {
    /// The environment variable holding the connection URL (it may carry a password, so the
    /// URL itself never sits in config).
    pub url_env: String,
    /// How this daemon is named in the change log and audit rows; the host name when unset.
    pub machine: Option<String>,
    /// A PEM file of certificate authorities to trust for TLS, besides the system's.
    pub ca_file: Option<PathBuf>,
    /// How long a connection attempt may take before the server counts as unreachable.
    pub connect_timeout_secs: u64,
    /// The longest wait for one answer from the server; past it the call fails (a write is
    /// not saved) and the connection is made again.
    pub request_timeout_secs: u64,
    /// The change log keeps the changes of this many days (0: only `log_keep_rows`); a
    /// daemon away longer is loaded again from a snapshot when it comes back.
    pub log_keep_days: u64,
    /// The newest this many changes are kept whatever their age (at least 1).
    pub log_keep_rows: u64,
    /// How often a daemon tries to prune the change log to the window (0: at every report of
    /// its position, every few seconds).
    pub log_prune_every_secs: u64,
    /// Where vector recall finds its candidates: this machine's index (`local`), or the
    /// server's pgvector index of the shared vectors (`database`).
    pub vector_search: VectorSearch,
}

/// `memory.postgres.vector_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum VectorSearch {
    #[default]
    Local,
    Database,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            url_env: "OPENHUMAN_POSTGRES_URL".into(),
            machine: None,
            ca_file: None,
            connect_timeout_secs: 5,
            request_timeout_secs: 15,
            log_keep_days: 7,
            log_keep_rows: 10_000,
            log_prune_every_secs: 300,
            vector_search: VectorSearch::Local,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    pub engine: MemoryEngineKind,
    pub embeddings: EmbeddingsConfig,
    /// Quiet time after the last file-system event before a watched change is synced.
    pub watch_debounce_ms: u64,
    /// Folders (or files) the daemon keeps in sync with memory (`[[memory.sources]]`).
    pub sources: Vec<WatchedSource>,
    /// The shared store, used when `engine = "postgres"`.
    pub postgres: PostgresConfig,
    /// What a chunk of the calling session's own project gains in `memory.recall` (added to
    /// the blended score, where the best hit scores 1) and `memory.search` (its score times
    /// `1 + project_boost`); 0 turns the boost off.
    pub project_boost: f64,
    /// With a shared store: who may read a new chunk when nothing more specific says
    /// (`machine`, `person`, `team` or `group:<role>`).
    pub default_visibility: String,
    /// With a shared store: the visibility of the chunks of a project (an absolute path, with
    /// everything under it), over a source's and the default.
    pub project_visibility: BTreeMap<String, String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            engine: MemoryEngineKind::default(),
            embeddings: EmbeddingsConfig::default(),
            watch_debounce_ms: 300,
            sources: Vec::new(),
            postgres: PostgresConfig::default(),
            project_boost: 0.2,
            default_visibility: "team".into(),
            project_visibility: BTreeMap::new(),
        }
    }
}

/// What a watched source's files are read as: `auto` (by extension), one format for all, or a
/// coding agent's session logs (`claude-code`, `codex`, `gemini`), tailed as they grow.
pub const SOURCE_KINDS: &[&str] = &["auto", "document", "email", "chat", "claude-code", "codex", "gemini"];

/// The source kinds that are agents' session logs.
pub const AGENT_SOURCE_KINDS: &[&str] = &["claude-code", "codex", "gemini"];

/// One `[[memory.sources]]` entry: a folder or file kept in sync with memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchedSource {
    /// An absolute path.
    pub path: PathBuf,
    /// `auto` (by extension), `document`, `email`, `chat`, or an agent's session logs:
    /// `claude-code`, `codex`, `gemini`.
    #[serde(default = "auto_kind")]
    pub kind: String,
    /// Glob patterns, relative to `path`; when any is given, only files matching one are read.
    #[serde(default)]
    pub include: Vec<String>,
    /// Glob patterns, relative to `path`, of files never read.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Skip what `.gitignore` (and `.ignore`) files under `path` exclude.
    #[serde(default = "yes")]
    pub gitignore: bool,
    /// Agent session sources: absolute project folders whose sessions are never read (a
    /// session whose working directory is at or under one of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_projects: Vec<PathBuf>,
    /// With a shared store: who may read the chunks of this source's files (over the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

fn auto_kind() -> String {
    "auto".to_string()
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingProvider {
    #[default]
    Builtin,
    Ollama,
    Openai,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingsConfig {
    pub provider: EmbeddingProvider,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// The deep tier: a transformer model, by name under `<data dir>/models/` (what `model
    /// install` puts there) or as an absolute directory. Its vectors are filled in the
    /// background and answer queries once they cover every chunk.
    pub transformer: Option<String>,
    /// How many windows of the model's token limit a chunk is read in (1–16, default 4): 1 reads
    /// only a chunk's start, as sentence-transformers does, and fills fastest. (16 is the
    /// transformer crate's `MAX_WINDOWS`.)
    pub transformer_windows: Option<u8>,
    /// Whether the background fill runs the model's projections in 8-bit integers on a CPU with
    /// AVX-512 VNNI (default true; elsewhere it runs in `f32` whatever this says). Queries are
    /// embedded in `f32` either way; the two ways' vectors agree to a cosine above 0.999, so
    /// changing it re-embeds nothing.
    pub transformer_int8: Option<bool>,
    /// How much recall trusts the deep tier against BM25 (0–1): the weight of its cosine in the
    /// blend, for every chunk unless `transformer_weight_chat` is set. Unset: what the model
    /// directory's `openhuman-ranking.json` says, else 0.4 (chosen with all-MiniLM-L6-v2).
    pub transformer_weight: Option<f64>,
    /// The same for chat chunks alone (0–1), where short turns give a model little to read.
    pub transformer_weight_chat: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LlmProvider {
    #[default]
    None,
    Openai,
    Anthropic,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    pub provider: LlmProvider,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    pub timeout_secs: u64,
    pub max_retries: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            provider: LlmProvider::None,
            base_url: None,
            model: None,
            api_key_env: None,
            timeout_secs: 60,
            max_retries: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearxngConfig {
    pub enabled: bool,
    pub base_url: String,
    pub max_results: u32,
    pub default_language: String,
    pub timeout_seconds: u64,
}

impl Default for SearxngConfig {
    fn default() -> Self {
        SearxngConfig {
            enabled: false,
            base_url: "http://localhost:8080".to_string(),
            max_results: 10,
            default_language: "en".to_string(),
            timeout_seconds: 10,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    pub providers: SearchProviders,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SearchProviders {
    pub searxng: SearchProviderConfig,
    pub brave: SearchProviderConfig,
    pub tavily: SearchProviderConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SearchProviderConfig {
    pub enabled: bool,
    /// "direct" (call the provider from this machine); kept for config compatibility.
    pub route: Option<String>,
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TrustState {
    #[default]
    Untrusted,
    Trusted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityProvider {
    pub id: String,
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub source_uri: Option<String>,
    #[serde(default)]
    pub source_digest: Option<String>,
    #[serde(default)]
    pub trust_state: TrustState,
    #[serde(default)]
    pub enabled: bool,
}

impl CapabilityProvider {
    /// Eligible for admission only when both enabled and trusted.
    pub fn eligible(&self) -> bool {
        self.enabled && self.trust_state == TrustState::Trusted
    }
}

/// A loaded config and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub file: PathBuf,
    pub file_exists: bool,
    /// Env variables that overrode keys, by name (values are not kept: they may be secrets).
    pub env_overrides: Vec<String>,
}

/// Why a config could not be loaded or rendered. Every message names the key and where its
/// value came from (the file or an environment variable), so the user knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // The cause is in the message, not a `source`: a chain printed with `{:#}` would say it twice.
    #[error("cannot read config file {file}: {reason}")]
    Read { file: String, reason: std::io::Error },
    /// `place` is `line L, column C`; `reason` the parser's one-line message.
    #[error("config file {file} is not valid TOML at {place}: {reason}")]
    Toml { file: String, place: String, reason: String },
    #[error("environment variable {var} (key `{key}`): {reason}")]
    Env { var: String, key: String, reason: String },
    #[error("invalid config: key `{key}` in {origin}: {reason}")]
    Value { key: String, origin: String, reason: String },
    #[error("invalid config in {file}: {reason}")]
    Invalid { file: String, reason: String },
    #[error("cannot render the config: {0}")]
    Render(String),
}

type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// Loads `file` (missing = defaults) with the process environment's overrides.
pub fn load(file: &Path) -> Result<Loaded> {
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("OPENHUMAN_")).collect();
    load_with_env(file, &env)
}

/// Loads with an explicit environment, so tests need not touch the process's.
pub fn load_with_env(file: &Path, env: &[(String, String)]) -> Result<Loaded> {
    let (text, file_exists) = match std::fs::read_to_string(file) {
        Ok(text) => (text, true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), false),
        Err(reason) => return Err(ConfigError::Read { file: file.display().to_string(), reason }),
    };
    let mut loaded = parse(&text, file, env)?;
    loaded.file_exists = file_exists;
    Ok(loaded)
}

/// Checks `text` as the contents `file` would have (with the process environment's
/// overrides), so an edit is validated before it is written, and every message names `file`
/// itself, not wherever the edited text waits meanwhile.
pub fn check_text(file: &Path, text: &str) -> Result<Config> {
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("OPENHUMAN_")).collect();
    parse(text, file, &env).map(|l| l.config)
}

/// `text` as the config file `file`, with `env`'s overrides, validated.
fn parse(text: &str, file: &Path, env: &[(String, String)]) -> Result<Loaded> {
    let shown = file.display();
    let table: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Toml {
        file: shown.to_string(),
        place: e.span().map(|s| line_and_column(text, s.start)).unwrap_or_else(|| "an unknown place".into()),
        reason: one_line(e.message()),
    })?;
    let mut value = serde_json::to_value(&table).map_err(|e| ConfigError::Render(e.to_string()))?;

    let defaults = serde_json::to_value(Config::default()).map_err(|e| ConfigError::Render(e.to_string()))?;
    let mut leaves = Vec::new();
    collect_leaves(&defaults, &mut Vec::new(), &mut leaves);
    let mut env_paths = Vec::new();
    let mut env_overrides = Vec::new();
    for (name, raw) in env {
        if NON_CONFIG_ENV.contains(&name.as_str()) {
            continue;
        }
        let Some((path, default)) = leaves.iter().find(|(p, _)| env_name(p) == *name) else {
            tracing::warn!(variable = %name, "ignoring OPENHUMAN_ environment variable that names no config key");
            continue;
        };
        let parsed = parse_env_value(default, raw).map_err(|reason| ConfigError::Env {
            var: name.clone(),
            key: path.join("."),
            reason,
        })?;
        set_path(&mut value, path, parsed);
        env_paths.push((path.join("."), name.clone()));
        env_overrides.push(name.clone());
    }

    let config: Config = serde_path_to_error::deserialize(&value).map_err(|e| {
        let key = e.path().to_string();
        let origin = env_paths
            .iter()
            .find(|(p, _)| *p == key)
            .map(|(_, var)| format!("environment variable {var}"))
            .unwrap_or_else(|| format!("config file {shown}"));
        let reason = in_words(&key, &e.inner().to_string());
        ConfigError::Value { key, origin, reason }
    })?;
    validate(&config).map_err(|reason| ConfigError::Invalid { file: shown.to_string(), reason })?;
    Ok(Loaded { config, file: file.to_path_buf(), file_exists: true, env_overrides })
}

/// `line L, column C` (from 1) of the byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}")
}

/// A parser message on one line: its lines joined with `; `.
fn one_line(message: &str) -> String {
    message.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// serde's words for a number out of its type's range (`invalid value: integer `99999`, expected
/// u16`) said for people: what the key takes, and what it got. Other messages pass unchanged.
fn in_words(key: &str, reason: &str) -> String {
    let Some((got, ty)) = reason.rsplit_once(", expected ") else { return reason.to_string() };
    let wanted = if key.ends_with(".port") && ty == "u16" {
        "a port number, 0–65535".to_string()
    } else {
        let max = match ty {
            "u8" => u64::from(u8::MAX),
            "u16" => u64::from(u16::MAX),
            "u32" => u64::from(u32::MAX),
            "u64" | "usize" => u64::MAX,
            _ => return reason.to_string(),
        };
        if max == u64::MAX { "a whole number, 0 or more".to_string() } else { format!("a whole number, 0–{max}") }
    };
    // `invalid value: integer `-1``, `invalid type: string "x"`, `invalid type: floating point `1.5``
    let got = got.split_once(": ").map_or(got, |(_, what)| what);
    let got = match got.split_once(' ') {
        Some(("integer" | "string", value)) => value.trim_matches('`').to_string(),
        _ => got.replace('`', ""),
    };
    format!("must be {wanted} (got {got})")
}

/// Checks values serde cannot: ranges, URLs, provider ids.
fn validate(c: &Config) -> Result<(), String> {
    if c.mcp.max_line_bytes < 1024 {
        return Err(format!("key `mcp.max_line_bytes` must be at least 1024 (got {})", c.mcp.max_line_bytes));
    }
    for (key, value) in [
        ("mcp.max_socket_connections", c.mcp.max_socket_connections as u64),
        ("mcp.socket_connects_per_sec", u64::from(c.mcp.socket_connects_per_sec)),
        ("mcp.socket_connect_burst", u64::from(c.mcp.socket_connect_burst)),
        ("mcp.http.max_connections_per_peer", c.mcp.http.max_connections_per_peer as u64),
        ("mcp.http.new_sessions_per_sec", u64::from(c.mcp.http.new_sessions_per_sec)),
        ("mcp.http.new_sessions_burst", u64::from(c.mcp.http.new_sessions_burst)),
    ] {
        if value == 0 {
            return Err(format!("key `{key}` must be at least 1"));
        }
    }
    if c.mcp.http.host.trim().is_empty() {
        return Err("key `mcp.http.host` must not be blank".to_string());
    }
    if c.mcp.http.max_sessions == 0 {
        return Err("key `mcp.http.max_sessions` must be at least 1".to_string());
    }
    if c.mcp.http.request_timeout_secs == 0 {
        return Err("key `mcp.http.request_timeout_secs` must be at least 1".to_string());
    }
    if c.mcp.http.max_connections == 0 {
        return Err("key `mcp.http.max_connections` must be at least 1".to_string());
    }
    if c.mcp.http.session_idle_secs == 0 {
        return Err("key `mcp.http.session_idle_secs` must be at least 1".to_string());
    }
    for origin in &c.mcp.http.allowed_origins {
        if !(origin.starts_with("http://") || origin.starts_with("https://")) {
            return Err(format!("key `mcp.http.allowed_origins`: `{origin}` must start with http:// or https://"));
        }
    }
    if let Some(o) = &c.mcp.http.oauth {
        validate_oauth(o, &c.mcp.http.host)?;
    }
    if !(1..=50).contains(&c.searxng.max_results) {
        return Err(format!("key `searxng.max_results` must be between 1 and 50 (got {})", c.searxng.max_results));
    }
    if c.searxng.timeout_seconds == 0 {
        return Err("key `searxng.timeout_seconds` must be at least 1".to_string());
    }
    check_url("searxng.base_url", &c.searxng.base_url)?;
    if let Some(url) = &c.llm.base_url {
        check_url("llm.base_url", url)?;
    }
    if let Some(url) = &c.memory.embeddings.base_url {
        check_url("memory.embeddings.base_url", url)?;
    }
    if let Some(t) = &c.memory.embeddings.transformer {
        check_model("memory.embeddings.transformer", t)?;
    }
    if c.memory.embeddings.transformer_windows.is_some_and(|n| !(1..=16).contains(&n)) {
        return Err("key `memory.embeddings.transformer_windows` must be from 1 to 16 (4 by default; 1 reads \
                    only the start of each chunk)"
            .to_string());
    }
    for (key, value) in [
        ("transformer_weight", c.memory.embeddings.transformer_weight),
        ("transformer_weight_chat", c.memory.embeddings.transformer_weight_chat),
    ] {
        if value.is_some_and(|w| !(0.0..=1.0).contains(&w)) {
            return Err(format!(
                "key `memory.embeddings.{key}` must be from 0 to 1 (the share of the deep tier's similarity in \
                 recall's blend, BM25 taking the rest; 0.4 unless the model says otherwise)"
            ));
        }
    }
    for (name, key) in
        [("llm.api_key_env", &c.llm.api_key_env), ("memory.embeddings.api_key_env", &c.memory.embeddings.api_key_env)]
    {
        if let Some(var) = key {
            check_env_var_name(name, var)?;
        }
    }
    check_env_var_name("memory.postgres.url_env", &c.memory.postgres.url_env)?;
    if let Some(m) = &c.memory.postgres.machine
        && (m.trim().is_empty() || m.len() > 64)
    {
        return Err("key `memory.postgres.machine` must be 1 to 64 characters".into());
    }
    if c.memory.postgres.log_keep_rows == 0 {
        return Err("key `memory.postgres.log_keep_rows` must be at least 1 (the newest change is always kept)".into());
    }
    if c.memory.postgres.log_keep_days > 36_500 {
        return Err(format!(
            "key `memory.postgres.log_keep_days` must be at most 36500 (got {})",
            c.memory.postgres.log_keep_days
        ));
    }
    if !(0.0..=1.0).contains(&c.memory.project_boost) {
        return Err(format!("key `memory.project_boost` must be between 0 and 1 (got {})", c.memory.project_boost));
    }
    if c.memory.watch_debounce_ms > 60_000 {
        return Err(format!(
            "key `memory.watch_debounce_ms` must be at most 60000 (got {})",
            c.memory.watch_debounce_ms
        ));
    }
    check_visibility("memory.default_visibility", &c.memory.default_visibility)?;
    for (path, v) in &c.memory.project_visibility {
        if !Path::new(path).is_absolute() {
            return Err(format!("key `memory.project_visibility` names {path:?}, which is not an absolute path"));
        }
        check_visibility(&format!("memory.project_visibility.\"{path}\""), v)?;
    }
    let mut roots = BTreeSet::new();
    for (i, s) in c.memory.sources.iter().enumerate() {
        if let Some(v) = &s.visibility {
            check_visibility(&format!("memory.sources[{i}].visibility"), v)?;
        }
        if !s.path.is_absolute() {
            return Err(format!(
                "key `memory.sources[{i}].path` must be an absolute path (got {}); `openhumand-mcp sources add` makes it one",
                s.path.display()
            ));
        }
        if !SOURCE_KINDS.contains(&s.kind.as_str()) {
            return Err(format!(
                "key `memory.sources[{i}].kind` must be one of {} (got {:?})",
                SOURCE_KINDS.join(", "),
                s.kind
            ));
        }
        if !roots.insert(s.path.clone()) {
            return Err(format!("key `memory.sources[{i}].path`: {} is listed twice", s.path.display()));
        }
        for (j, p) in s.exclude_projects.iter().enumerate() {
            if !p.is_absolute() {
                return Err(format!(
                    "key `memory.sources[{i}].exclude_projects[{j}]` must be an absolute path (got {})",
                    p.display()
                ));
            }
        }
        if !s.exclude_projects.is_empty() && !AGENT_SOURCE_KINDS.contains(&s.kind.as_str()) {
            return Err(format!(
                "key `memory.sources[{i}].exclude_projects` applies to agent session sources only (kind {})",
                AGENT_SOURCE_KINDS.join(", ")
            ));
        }
    }
    clients::validate(&c.clients)?;
    let mut seen = BTreeSet::new();
    for (i, p) in c.capability_providers.iter().enumerate() {
        let id = normalize_id(&p.id);
        if id.is_empty() {
            return Err(format!("key `capability_providers[{i}].id` must contain a letter or digit (got {:?})", p.id));
        }
        if !seen.insert(id.clone()) {
            return Err(format!(
                "key `capability_providers[{i}].id`: {:?} duplicates another provider after normalisation to `{id}`",
                p.id
            ));
        }
    }
    Ok(())
}

/// `[mcp.http.oauth]`: URLs that are URLs, scopes that are scope tokens, and a resource URI
/// whenever the bind is not loopback (the default one names the loopback address).
fn validate_oauth(o: &OAuthConfig, host: &str) -> Result<(), String> {
    if o.issuer.trim().is_empty() {
        return Err("key `mcp.http.oauth.issuer` must name the authorization server's issuer URL".to_string());
    }
    check_url("mcp.http.oauth.issuer", &o.issuer)?;
    if let Some(jwks) = &o.jwks_uri {
        check_url("mcp.http.oauth.jwks_uri", jwks)?;
    }
    match &o.resource {
        Some(r) => {
            check_url("mcp.http.oauth.resource", r)?;
            if r.contains(['#', '?', '{', '}', '*', ' ']) {
                return Err(format!(
                    "key `mcp.http.oauth.resource` must be a plain URL without query, fragment or spaces (got {r:?})"
                ));
            }
        }
        None if !openhuman_common::is_loopback_host(host) => {
            return Err(format!(
                "key `mcp.http.oauth.resource` must be set when `mcp.http.host` ({host:?}) is not loopback: give the \
                 public URL clients use, e.g. \"https://mcp.example.com/mcp\""
            ));
        }
        None => {}
    }
    if o.audience.as_ref().is_some_and(|a| a.trim().is_empty()) {
        return Err(
            "key `mcp.http.oauth.audience` must not be blank (leave it out to use the resource URI)".to_string()
        );
    }
    for (key, scope) in [("mcp.http.oauth.read_scope", &o.read_scope), ("mcp.http.oauth.act_scope", &o.act_scope)] {
        // RFC 6749 scope-token: printable ASCII without space, `"` or `\`.
        if scope.is_empty() || !scope.chars().all(|c| c.is_ascii_graphic() && c != '"' && c != '\\') {
            return Err(format!(
                "key `{key}` must be one scope name: printable ASCII, no spaces or quotes (got {scope:?})"
            ));
        }
    }
    if o.read_scope == o.act_scope {
        return Err("keys `mcp.http.oauth.read_scope` and `act_scope` must differ".to_string());
    }
    Ok(())
}

fn check_url(key: &str, url: &str) -> Result<(), String> {
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() <= "https://".len() {
        return Err(format!("key `{key}` must be an http:// or https:// URL (got {url:?})"));
    }
    Ok(())
}

/// A model name (`a-z A-Z 0-9 . _ -`, not starting with a dot) or an absolute directory.
fn check_model(key: &str, value: &str) -> Result<(), String> {
    if Path::new(value).is_absolute() {
        return Ok(());
    }
    let name_ok = !value.is_empty()
        && value.len() <= 64
        && !value.starts_with('.')
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !name_ok {
        return Err(format!(
            "key `{key}` must name an installed model (letters, digits, '.', '_', '-'; see `openhumand-mcp model \
             list`) or be an absolute directory (got {value:?})"
        ));
    }
    Ok(())
}

fn check_env_var_name(key: &str, var: &str) -> Result<(), String> {
    let ok = !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "key `{key}` names an environment variable, not a secret: use a name like OPENAI_API_KEY (got a value that is not a variable name)"
        ));
    }
    Ok(())
}

/// A visibility: `machine`, `person`, `team` or `group:<role>` (a role name of 1 to 63 characters).
fn check_visibility(key: &str, v: &str) -> Result<(), String> {
    let ok = matches!(v, "machine" | "person" | "team")
        || v.strip_prefix("group:").is_some_and(|g| !g.is_empty() && g.len() <= 63 && !g.chars().any(char::is_control));
    if ok { Ok(()) } else { Err(format!("key `{key}` must be machine, person, team or group:<role> (got {v:?})")) }
}

fn collect_leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                path.push(k.clone());
                collect_leaves(child, path, out);
                path.pop();
            }
        }
        // Arrays of tables (capability_providers) cannot be expressed as one variable.
        Value::Array(items) if items.iter().any(Value::is_object) => {}
        Value::Array(_) if path.first().is_some_and(|p| p == "capability_providers") => {}
        Value::Array(_) if path.len() == 2 && path[0] == "memory" && path[1] == "sources" => {}
        other => out.push((path.clone(), other.clone())),
    }
}

fn env_name(path: &[String]) -> String {
    format!("OPENHUMAN_{}", path.join("_").to_ascii_uppercase())
}

fn parse_env_value(default: &Value, raw: &str) -> Result<Value, String> {
    let raw = raw.trim();
    Ok(match default {
        Value::Bool(_) => match raw.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Value::Bool(true),
            "false" | "0" | "no" | "off" => Value::Bool(false),
            _ => return Err(format!("expected true or false, got {raw:?}")),
        },
        Value::Number(_) => {
            if let Ok(n) = raw.parse::<i64>() {
                Value::from(n)
            } else if let Ok(f) = raw.parse::<f64>() {
                Value::from(f)
            } else {
                return Err(format!("expected a number, got {raw:?}"));
            }
        }
        Value::Array(_) => {
            Value::Array(raw.split(',').map(str::trim).filter(|s| !s.is_empty()).map(Value::from).collect())
        }
        _ => Value::String(raw.to_string()),
    })
}

fn set_path(root: &mut Value, path: &[String], leaf: Value) {
    let mut cur = root;
    for (i, key) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Default::default());
        }
        let map = cur.as_object_mut().expect("just made an object");
        if i + 1 == path.len() {
            map.insert(key.clone(), leaf);
            return;
        }
        cur = map.entry(key.clone()).or_insert_with(|| Value::Object(Default::default()));
    }
}

/// The effective config as TOML, for `config show`.
pub fn to_toml(c: &Config) -> Result<String> {
    toml::to_string_pretty(c).map_err(|e| ConfigError::Render(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str, env: &[(&str, &str)]) -> Result<Config> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, text).unwrap();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        load_with_env(&file, &env).map(|l| l.config)
    }

    #[test]
    fn missing_file_is_defaults() {
        let loaded = load_with_env(Path::new("/nonexistent/openhuman/config.toml"), &[]).unwrap();
        assert_eq!(loaded.config, Config::default());
        assert!(!loaded.file_exists);
    }

    #[test]
    fn unknown_key_names_key_and_file() {
        let err = load_text("[mcp.http]\nprot = 1\n", &[]).unwrap_err().to_string();
        assert!(err.contains("prot") && err.contains("config.toml"), "{err}");
    }

    #[test]
    fn the_secret_policy_reads_its_four_words() {
        assert_eq!(load_text("", &[]).unwrap().autonomy.on_secret, OnSecret::Ask);
        let c = load_text("[autonomy]\non_secret = \"drop\"\nconfirm_deletes = false\n", &[]).unwrap();
        assert_eq!((c.autonomy.on_secret, c.autonomy.confirm_deletes), (OnSecret::Drop, false));
        let err = load_text("[autonomy]\non_secret = \"maybe\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("autonomy.on_secret") && err.contains("maybe"), "{err}");
    }

    #[test]
    fn bad_value_names_key() {
        let err = load_text("[autonomy]\nlevel = \"yolo\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("autonomy.level") && err.contains("yolo"), "{err}");
        let err = load_text("[searxng]\nmax_results = 80\n", &[]).unwrap_err().to_string();
        assert!(err.contains("searxng.max_results") && err.contains("80"), "{err}");
    }

    #[test]
    fn a_toml_error_is_one_line_naming_the_place_once() {
        let err = load_text("[mcp.http\nport = 1\n", &[]).unwrap_err();
        let text = format!("{:#}", anyhow_like(&err));
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("config.toml") && text.contains("line 1, column 10"), "{text}");
        assert_eq!(text.matches("unclosed table").count(), 1, "{text}");
    }

    /// What `anyhow`'s `{:#}` prints: the error and each of its sources.
    fn anyhow_like(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            out.push_str(&format!(": {c}"));
            cause = c.source();
        }
        out
    }

    #[test]
    fn numbers_out_of_range_are_said_in_words() {
        let err = load_text("[mcp.http]\nport = 99999\n", &[]).unwrap_err().to_string();
        assert!(err.contains("mcp.http.port") && err.contains("a port number, 0–65535 (got 99999)"), "{err}");
        assert!(!err.contains("u16"), "{err}");
        let err = load_text("[autonomy]\nmax_actions_per_hour = -1\n", &[]).unwrap_err().to_string();
        assert!(err.contains("a whole number, 0–4294967295 (got -1)"), "{err}");
        let err = load_text("[mcp]\nshutdown_grace_secs = \"ten\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("a whole number, 0 or more (got \"ten\")"), "{err}");
        let err = load_text("", &[("OPENHUMAN_MCP_HTTP_PORT", "70000")]).unwrap_err().to_string();
        assert!(err.contains("OPENHUMAN_MCP_HTTP_PORT") && err.contains("a port number"), "{err}");
    }

    #[test]
    fn checked_text_is_named_as_the_file_it_will_be() {
        let file = Path::new("/somewhere/config.toml");
        let err = check_text(file, "[searxng]\nmax_results = 80\n").unwrap_err().to_string();
        assert!(err.contains("/somewhere/config.toml") && err.contains("searxng.max_results"), "{err}");
        assert!(check_text(file, "[searxng]\nmax_results = 8\n").is_ok());
    }

    #[test]
    fn env_overrides_keys_and_bad_env_values_name_the_variable() {
        let c = load_text(
            "",
            &[
                ("OPENHUMAN_SEARXNG_ENABLED", "true"),
                ("OPENHUMAN_SEARXNG_BASE_URL", "http://127.0.0.1:9"),
                ("OPENHUMAN_SEARXNG_MAX_RESULTS", "7"),
                ("OPENHUMAN_MCP_HTTP_PORT", "9555"),
                ("OPENHUMAN_MCP_HTTP_ALLOWED_ORIGINS", "https://a.example, https://b.example"),
            ],
        )
        .unwrap();
        assert!(c.searxng.enabled);
        assert_eq!(c.searxng.base_url, "http://127.0.0.1:9");
        assert_eq!(c.searxng.max_results, 7);
        assert_eq!(c.mcp.http.port, 9555);
        assert_eq!(c.mcp.http.allowed_origins.len(), 2);
        let err = load_text("", &[("OPENHUMAN_SEARXNG_ENABLED", "maybe")]).unwrap_err().to_string();
        assert!(err.contains("OPENHUMAN_SEARXNG_ENABLED"), "{err}");
        let err = load_text("", &[("OPENHUMAN_MCP_HTTP_PORT", "99999")]).unwrap_err().to_string();
        assert!(err.contains("OPENHUMAN_MCP_HTTP_PORT"), "{err}");
    }

    #[test]
    fn duplicate_providers_after_normalisation_are_rejected() {
        let text = "[[capability_providers]]\nid = \"Acme Tools\"\n[[capability_providers]]\nid = \"acme-tools\"\n";
        let err = load_text(text, &[]).unwrap_err().to_string();
        assert!(err.contains("capability_providers[1].id") && err.contains("acme-tools"), "{err}");
    }

    #[test]
    fn transformer_is_a_model_name_or_an_absolute_directory() {
        let c = load_text("[memory.embeddings]\ntransformer = \"all-minilm-l6-v2\"\n", &[]).unwrap();
        assert_eq!(c.memory.embeddings.transformer.as_deref(), Some("all-minilm-l6-v2"));
        assert_eq!(c.memory.embeddings.transformer_windows, None);
        let c = load_text("[memory.embeddings]\ntransformer_windows = 1\n", &[]).unwrap();
        assert_eq!(c.memory.embeddings.transformer_windows, Some(1));
        let c = load_text("[memory.embeddings]\ntransformer_int8 = false\n", &[]).unwrap();
        assert_eq!(c.memory.embeddings.transformer_int8, Some(false));
        let c = load_text("[memory.embeddings]\ntransformer_weight = 0.7\n", &[]).unwrap();
        assert_eq!(c.memory.embeddings.transformer_weight, Some(0.7));
        let err = load_text("[memory.embeddings]\ntransformer_weight = 1.5\n", &[]).unwrap_err();
        assert!(err.to_string().contains("memory.embeddings.transformer_weight"), "{err}");
        let c = load_text("[memory.embeddings]\ntransformer_weight_chat = 0.3\n", &[]).unwrap();
        assert_eq!(c.memory.embeddings.transformer_weight_chat, Some(0.3));
        let err = load_text("[memory.embeddings]\ntransformer_weight_chat = -0.1\n", &[]).unwrap_err();
        assert!(err.to_string().contains("memory.embeddings.transformer_weight_chat"), "{err}");
        for bad in ["0", "17"] {
            let err = load_text(&format!("[memory.embeddings]\ntransformer_windows = {bad}\n"), &[]).unwrap_err();
            assert!(err.to_string().contains("memory.embeddings.transformer_windows"), "{err}");
        }
        let c = load_text("", &[("OPENHUMAN_MEMORY_EMBEDDINGS_TRANSFORMER", "/opt/models/bge")]).unwrap();
        assert_eq!(c.memory.embeddings.transformer.as_deref(), Some("/opt/models/bge"));
        for bad in ["../mini", "models/mini", ""] {
            let err = load_text(&format!("[memory.embeddings]\ntransformer = {bad:?}\n"), &[]).unwrap_err().to_string();
            assert!(err.contains("memory.embeddings.transformer") && err.contains("model list"), "{err}");
        }
    }

    #[test]
    fn watched_sources_need_absolute_paths_and_known_kinds() {
        let c = load_text("[[memory.sources]]\npath = \"/notes\"\ninclude = [\"**/*.md\"]\n", &[]).unwrap();
        assert_eq!(c.memory.sources.len(), 1);
        assert_eq!(c.memory.sources[0].kind, "auto");
        assert!(c.memory.sources[0].gitignore);
        let err = load_text("[[memory.sources]]\npath = \"notes\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("memory.sources[0].path") && err.contains("absolute"), "{err}");
        let err = load_text("[[memory.sources]]\npath = \"/n\"\nkind = \"pdf\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("memory.sources[0].kind"), "{err}");
        let twice = "[[memory.sources]]\npath = \"/n\"\n[[memory.sources]]\npath = \"/n\"\n";
        assert!(load_text(twice, &[]).unwrap_err().to_string().contains("listed twice"));
    }

    #[test]
    fn visibilities_are_checked_where_they_are_configured() {
        let ok = "[memory]\ndefault_visibility = \"person\"\nproject_visibility = { \"/projects/x\" = \"group:ops\" }\n\
                  [[memory.sources]]\npath = \"/diary\"\nvisibility = \"machine\"\n";
        let c = load_text(ok, &[]).unwrap();
        assert_eq!(c.memory.default_visibility, "person");
        assert_eq!(c.memory.project_visibility["/projects/x"], "group:ops");
        assert_eq!(c.memory.sources[0].visibility.as_deref(), Some("machine"));
        assert_eq!(load_text("", &[]).unwrap().memory.default_visibility, "team");
        let err = load_text("[memory]\ndefault_visibility = \"everyone\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("memory.default_visibility") && err.contains("group:<role>"), "{err}");
        let err =
            load_text("[[memory.sources]]\npath = \"/n\"\nvisibility = \"group:\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("memory.sources[0].visibility"), "{err}");
        let err = load_text("[memory]\nproject_visibility = { \"rel\" = \"team\" }\n", &[]).unwrap_err().to_string();
        assert!(err.contains("memory.project_visibility") && err.contains("absolute"), "{err}");
    }

    #[test]
    fn client_tables_load_and_are_checked() {
        let text = "[clients.cursor]\nnames = [\"cursor-vscode\"]\ntools = [\"memory.*\"]\nlevel = \"readonly\"\n\
                    [clients.\"*\"]\ndeny_tools = [\"memory.forget\"]\n";
        let c = load_text(text, &[]).unwrap();
        assert_eq!(c.clients["cursor"].level, Some(AutonomyLevel::Readonly));
        assert_eq!(c.clients["*"].deny_tools, ["memory.forget"]);
        let shown = to_toml(&c).unwrap();
        assert!(shown.contains("[clients.cursor]") && shown.contains("[clients.\"*\"]"), "{shown}");
        let err = load_text("[clients.cursor]\ntool = [\"x\"]\n", &[]).unwrap_err().to_string();
        assert!(err.contains("clients.cursor") && err.contains("tool"), "{err}");
        let err = load_text("[clients.a]\nnames = [\"Zed\"]\n[clients.zed]\n", &[]).unwrap_err().to_string();
        assert!(err.contains("also claimed"), "{err}");
        assert!(!to_toml(&Config::default()).unwrap().contains("clients"), "no empty table is shown");
    }

    #[test]
    fn secrets_in_api_key_env_are_refused() {
        let err = load_text("[llm]\napi_key_env = \"sk-abc def\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("llm.api_key_env") && !err.contains("sk-abc"), "{err}");
    }

    #[test]
    fn oauth_needs_an_issuer_and_a_resource_off_loopback() {
        let ok = load_text("[mcp.http.oauth]\nissuer = \"https://as.example\"\n", &[]).unwrap();
        let o = ok.mcp.http.oauth.expect("oauth");
        assert_eq!((o.read_scope.as_str(), o.act_scope.as_str()), ("openhuman:read", "openhuman:act"));
        assert!(o.accept_static_token && o.resource.is_none());
        let err = load_text("[mcp.http.oauth]\nread_scope = \"r\"\n", &[]).unwrap_err().to_string();
        assert!(err.contains("mcp.http.oauth.issuer"), "{err}");
        let far = "[mcp.http]\nhost = \"0.0.0.0\"\n[mcp.http.oauth]\nissuer = \"https://as.example\"\n";
        assert!(load_text(far, &[]).unwrap_err().to_string().contains("mcp.http.oauth.resource"));
        let bad_scope = "[mcp.http.oauth]\nissuer = \"https://as.example\"\nact_scope = \"a b\"\n";
        assert!(load_text(bad_scope, &[]).unwrap_err().to_string().contains("mcp.http.oauth.act_scope"));
        let odd = "[mcp.http.oauth]\nissuer = \"https://as.example\"\nresource = \"https://m.example/mcp?x\"\n";
        assert!(load_text(odd, &[]).unwrap_err().to_string().contains("plain URL"));
        let unknown = "[mcp.http.oauth]\nissuer = \"https://as.example\"\nscopes = []\n";
        assert!(load_text(unknown, &[]).is_err());
    }
}
