//! The daemon's own `openhuman.*` methods, outside the MCP catalog: status, stop, config
//! reload, ingest, export and import, reindex, stats, check, what ids name (the chunks `show`
//! lists and `forget` deletes), the dashboard's views (timeline, a chunk's neighbours) and its
//! one-time login links, the audit log and the tool registry. They need no MCP
//! handshake; `status`, `stop`, `ingest`, `reindex` and `audit` on the command line use them,
//! as can dashboards.

use futures::FutureExt;
use openhuman_mcp::args::{ArgSpec, Field};
use serde_json::{Map, Value, json};

use super::{Caller, Group, Method, MethodError, blocking, engine, operation_in};
use crate::state::AppState;
use crate::store_counts::{Answer, Count};
use openhuman_memory::ops;

fn method(name: &'static str, params: ArgSpec, handler: super::Handler) -> Method {
    Method { name, group: Group::Daemon, params, handler }
}

fn internal(e: impl Into<anyhow::Error>) -> MethodError {
    MethodError::Internal(e.into())
}

pub(super) fn methods() -> Vec<Method> {
    vec![
        method("openhuman.daemon_status", ArgSpec::none(), |s, _, caller| {
            async move {
                let mut out = status(&s, caller.session);
                out["watch"] = s.watch().status_json(&s.config());
                if let Ok(engine) = s.memory() {
                    let data_dir = s.paths().data_dir.clone();
                    let answer = s.store_counts().get(move || store_counts(engine, data_dir)).await;
                    match answer {
                        Answer::Counted { store: mut counted, age } => {
                            out["vectors"] = counted["vectors"].take();
                            out["store"] = counted["store"].take();
                            if let Some(age) = age {
                                out["store"]["counted_ms_ago"] = json!(age.as_millis() as u64);
                            }
                        }
                        Answer::Counting => out["store"] = json!({ "counting": true }),
                        Answer::Failed(e) => out["store"] = json!({ "error": e }),
                    }
                }
                Ok(out)
            }
            .boxed()
        }),
        method("openhuman.daemon_shutdown", ArgSpec::none(), |s, _, _| {
            async move {
                tracing::info!("shutdown requested over the socket");
                let token = s.shutdown_token().clone();
                // Cancel after this reply is queued, so the caller hears back.
                tokio::spawn(async move {
                    tokio::task::yield_now().await;
                    token.cancel();
                });
                Ok(json!({ "stopping": true, "pid": std::process::id() }))
            }
            .boxed()
        }),
        method("openhuman.config_reload", ArgSpec::none(), |s, _, _| {
            async move {
                match s.reload_live().await {
                    // `http_started`: the dashboard's address when this reload turned HTTP on;
                    // `http_error`: why it did not start.
                    Ok(r) => Ok(json!({
                        "reloaded": true,
                        "tools_changed": r.tools_changed,
                        "http_started": r.turned_on.as_ref().and_then(|h| h.as_ref().ok()),
                        "http_error": r.turned_on.as_ref().and_then(|h| h.as_ref().err()),
                    })),
                    Err(e) => Err(MethodError::InvalidParams(format!(
                        "config not reloaded, the previous one stays in force: {e:#}"
                    ))),
                }
            }
            .boxed()
        }),
        method(
            "openhuman.memory_ingest",
            ArgSpec::new(vec![
                Field::list("paths", "Absolute paths of files or folders to ingest.", 10_000, 4096)
                    .required()
                    .min_items(1),
                Field::one_of(
                    "kind",
                    "Read every file as this family (its content picks the format in it).",
                    &["document", "email", "chat"],
                ),
            ]),
            |s, p, caller| {
                let summary = json!({
                    "path_count": p.get("paths").and_then(Value::as_array).map_or(0, Vec::len),
                    "kind": p.get("kind"),
                });
                let source = caller.source.clone();
                control_write(s, "openhuman.memory_ingest", source, summary, move |s| ingest(s, p, caller)).boxed()
            },
        ),
        method("openhuman.memory_reindex", ArgSpec::none(), |s, _, caller| {
            let work = |s: AppState| async move {
                let engine = engine(&s).await?;
                let summary = blocking(move || engine.reindex().map_err(internal)).await?;
                Ok(serde_json::to_value(summary).unwrap_or_default())
            };
            control_write(s, "openhuman.memory_reindex", caller.source, json!({}), work).boxed()
        }),
        method(
            "openhuman.memory_export",
            ArgSpec::new(vec![
                Field::string("dir", "Absolute path of a new or empty directory to write the export into.")
                    .required()
                    .max_chars(4096),
            ]),
            |s, p, _| {
                async move {
                    let dir = absolute_dir(&p)?;
                    let engine = engine(&s).await?;
                    let summary = blocking(move || engine.export(&dir).map_err(MethodError::from)).await?;
                    Ok(serde_json::to_value(summary).unwrap_or_default())
                }
                .boxed()
            },
        ),
        method(
            "openhuman.memory_import",
            ArgSpec::new(vec![
                Field::string("dir", "Absolute path of a directory written by openhuman.memory_export.")
                    .required()
                    .max_chars(4096),
            ]),
            |s, p, caller| {
                let work = move |s: AppState| async move {
                    let dir = absolute_dir(&p)?;
                    let engine = engine(&s).await?;
                    let summary = blocking(move || engine.import(&dir).map_err(MethodError::from)).await?;
                    if summary.added_total() > 0 {
                        s.memory_changed(&[]);
                    }
                    Ok(serde_json::to_value(summary).unwrap_or_default())
                };
                control_write(s, "openhuman.memory_import", caller.source, json!({}), work).boxed()
            },
        ),
        method(
            "openhuman.memory_context",
            ArgSpec::new(vec![
                Field::string("project", "The project: the absolute path of its git root or working directory.")
                    .required()
                    .max_chars(openhuman_memory::project::MAX_BYTES),
                Field::int(
                    "budget",
                    "Most tokens the context may take (words × 1.3).",
                    crate::prompts::MIN_BUDGET as i64,
                    crate::prompts::MAX_BUDGET as i64,
                )
                .default_int(crate::prompts::DEFAULT_BUDGET as i64),
                Field::string("topic", "Pack the memories matching this best (default: the newest).").max_chars(4096),
            ]),
            |s, p, _| {
                async move {
                    let project = p.get("project").and_then(Value::as_str).unwrap_or_default().to_string();
                    let budget =
                        p.get("budget").and_then(Value::as_u64).unwrap_or(crate::prompts::DEFAULT_BUDGET as u64);
                    let topic = p.get("topic").and_then(Value::as_str);
                    let c = crate::prompts::project_context(&s, &project, topic, budget as usize).await?;
                    Ok(json!({ "project": project, "text": c.text, "memories": c.count, "tokens": c.tokens }))
                }
                .boxed()
            },
        ),
        method(
            "openhuman.memory_forget_project",
            ArgSpec::new(vec![
                Field::string("project", "The project whose every item to delete: an absolute path.")
                    .required()
                    .max_chars(openhuman_memory::project::MAX_BYTES),
            ]),
            |s, p, caller| forget_project(s, p, caller).boxed(),
        ),
        operation_in::<ops::Resolve>(Group::Daemon),
        operation_in::<ops::Timeline>(Group::Daemon),
        operation_in::<ops::Neighbours>(Group::Daemon),
        method("openhuman.ui_login", ArgSpec::none(), |s, _, _| {
            async move { s.dashboard().login_link().map_err(MethodError::Unavailable) }.boxed()
        }),
        operation_in::<ops::StoreStats>(Group::Daemon),
        operation_in::<ops::StoreCheck>(Group::Daemon),
        method("openhuman.memory_check", ArgSpec::none(), |s, _, _| {
            async move {
                let engine = engine(&s).await?;
                let found = blocking(move || engine.check().map_err(internal)).await?;
                serde_json::to_value(found).map_err(internal)
            }
            .boxed()
        }),
        method(
            "openhuman.audit_query",
            ArgSpec::new(vec![
                Field::int(
                    "limit",
                    "How many rows, newest first (default 50; at most 10000 are returned).",
                    1,
                    i64::MAX,
                ),
                Field::string("tool", "Only this tool, e.g. memory.store.").max_chars(256),
                Field::string("client", "Only this client label, e.g. mcp:cursor.").max_chars(256),
                Field::string("since", "Only rows at or after this RFC 3339 time.").max_chars(64),
                Field::boolean("failed", "Only failed attempts."),
            ]),
            |s, p, _| {
                async move {
                    let engine = engine(&s).await?;
                    // Rejection rows are written off the hot path; make the answer include every
                    // attempt made before this query.
                    s.audit().flush().await;
                    let q = audit_query(&p).map_err(MethodError::InvalidParams)?;
                    let rows = blocking(move || engine.query_audit(q).map_err(internal)).await?;
                    Ok(json!({ "rows": rows }))
                }
                .boxed()
            },
        ),
        method("openhuman.tool_registry_list", ArgSpec::none(), |s, _, _| {
            async move { Ok(super::registry::list(&s)) }.boxed()
        }),
        method(
            "openhuman.tool_registry_get",
            ArgSpec::new(vec![
                Field::string("tool_id", "A tool or method name, e.g. memory.search.").required().max_chars(256),
            ]),
            |s, p, _| {
                async move {
                    let id = p.get("tool_id").and_then(Value::as_str).unwrap_or_default().to_string();
                    super::registry::get(&s, &id).ok_or_else(|| {
                        MethodError::InvalidParams(format!(
                            "no tool `{id}`; openhuman.tool_registry_list shows them all"
                        ))
                    })
                }
                .boxed()
            },
        ),
        method("openhuman.tool_registry_diagnostics", ArgSpec::none(), |s, _, _| {
            async move {
                s.audit().flush().await;
                blocking(move || Ok(super::registry::diagnostics(&s))).await
            }
            .boxed()
        }),
    ]
}

/// The `dir` parameter, which must be absolute: the daemon's working directory is not the
/// caller's.
fn absolute_dir(p: &Map<String, Value>) -> Result<std::path::PathBuf, MethodError> {
    let dir = std::path::PathBuf::from(p.get("dir").and_then(Value::as_str).unwrap_or_default());
    if !dir.is_absolute() {
        return Err(MethodError::InvalidParams(format!("dir must be an absolute path, got {}", dir.display())));
    }
    Ok(dir)
}

/// A method that writes the store outside the MCP tools: refused in `readonly` like an act
/// call, and every call, refused, failed or done, leaves one audit row (tool = the method, source
/// `rpc` or the caller's label, the summary given: counts, no paths or content).
async fn control_write<F, Fut>(
    state: AppState,
    method: &str,
    source: Option<String>,
    summary: Value,
    work: F,
) -> Result<Value, MethodError>
where
    F: FnOnce(AppState) -> Fut,
    Fut: std::future::Future<Output = Result<Value, MethodError>>,
{
    let mut row = openhuman_memory::AuditRow {
        ts_ms: chrono::Utc::now().timestamp_millis(),
        tool: method.to_string(),
        source: source.unwrap_or_else(|| "rpc".to_string()),
        client_info: Value::Null,
        success: true,
        error: None,
        result_id: None,
        args_summary: summary,
        machine: None,
        person: None,
    };
    let outcome = match state.limiter().admit_control(&state.config()) {
        Ok(()) => work(state.clone()).await,
        Err(denial) => {
            tracing::info!(method, "control write denied by policy");
            Err(MethodError::InvalidParams(denial.to_string()))
        }
    };
    if let Err(e) = &outcome {
        row.success = false;
        row.error = Some(openhuman_common::redact(&e.to_string(), None));
    }
    state.audit().record(row);
    outcome
}

/// `forget --project`: every item of a project deleted in one transaction that commits its audit
/// row (the project's path is the row's result id, no content); refused in `readonly`, and a
/// refusal or failure is audited too.
async fn forget_project(state: AppState, params: Map<String, Value>, caller: Caller) -> Result<Value, MethodError> {
    let method = "openhuman.memory_forget_project";
    let project = params.get("project").and_then(Value::as_str).unwrap_or_default().to_string();
    let row = openhuman_memory::AuditRow {
        ts_ms: chrono::Utc::now().timestamp_millis(),
        tool: method.to_string(),
        source: caller.source.unwrap_or_else(|| "rpc".to_string()),
        client_info: Value::Null,
        success: true,
        error: None,
        result_id: None,
        args_summary: json!({ "project_bytes": project.len() }),
        machine: None,
        person: None,
    };
    let outcome = match state.limiter().admit_control(&state.config()) {
        Ok(()) => {
            let engine = engine(&state).await?;
            let (source, audit) = (row.source.clone(), row.clone());
            blocking(move || engine.forget_project(&project, &source, audit).map_err(MethodError::from)).await
        }
        Err(denial) => Err(MethodError::InvalidParams(denial.to_string())),
    };
    match outcome {
        Ok(done) => {
            state.memory_changed(&[]);
            Ok(serde_json::to_value(done).unwrap_or_default())
        }
        Err(e) => {
            state.audit().record(openhuman_memory::AuditRow {
                success: false,
                error: Some(openhuman_common::redact(&e.to_string(), None)),
                ..row
            });
            Err(e)
        }
    }
}

async fn ingest(state: AppState, params: Map<String, Value>, caller: Caller) -> Result<Value, MethodError> {
    let engine = engine(&state).await?;
    let paths: Vec<std::path::PathBuf> = params["paths"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(std::path::PathBuf::from)
        .collect();
    if let Some(p) = paths.iter().find(|p| !p.is_absolute()) {
        return Err(MethodError::InvalidParams(format!(
            "`paths` must be absolute (the daemon has its own working directory): {}",
            p.display()
        )));
    }
    let kind = params.get("kind").and_then(Value::as_str).map(str::to_string);
    let progress = caller.progress;
    let summary = blocking(move || {
        let report = |p: &openhuman_memory::IngestProgress| {
            if let Some(pr) = &progress {
                let message = match &p.current {
                    Some(c) => format!("{} chunks; now {}", p.chunks_written, c.display()),
                    None => format!("{} chunks", p.chunks_written),
                };
                pr.report(p.files_done as f64, Some(p.files_total as f64), Some(&message));
            }
        };
        engine.ingest_paths(&paths, kind.as_deref(), &report).map_err(internal)
    })
    .await?;
    state.memory_changed(&[]);
    Ok(serde_json::to_value(summary).unwrap_or_default())
}

/// `{limit?, tool?, client?, since?, failed?}` → an audit query; Err names the bad parameter.
pub(crate) fn audit_query(params: &Map<String, Value>) -> Result<openhuman_memory::AuditQuery, String> {
    let since_ms = match params.get("since").and_then(Value::as_str) {
        Some(s) => Some(
            chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|e| format!("`since` must be an RFC 3339 time such as 2026-11-30T00:00:00Z: {e}"))?
                .timestamp_millis(),
        ),
        None => None,
    };
    Ok(openhuman_memory::AuditQuery {
        limit: params.get("limit").and_then(Value::as_u64).map(|n| n.clamp(1, 10_000) as usize),
        tool: params.get("tool").and_then(Value::as_str).map(str::to_string),
        client: params.get("client").and_then(Value::as_str).map(str::to_string),
        since_ms,
        failed_only: params.get("failed").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// The store's part of a status, counted on the blocking pool: the vector tiers' coverage (how
/// far the deep tier's background fill has come) and the store's counts, size and projects.
fn store_counts(engine: openhuman_memory::MemoryEngine, data_dir: std::path::PathBuf) -> Count {
    async move {
        let counted = blocking(move || {
            let began = std::time::Instant::now();
            let stats = engine.stats().map_err(internal)?;
            let tiers = engine.tiers_of(stats.chunks);
            let projects = engine.projects().map_err(internal)?;
            Ok((tiers, stats, crate::status::store_bytes(&data_dir), projects, began.elapsed()))
        })
        .await;
        let (tiers, stats, bytes, projects, took) = counted.map_err(|e| e.to_string())?;
        let vectors: Map<String, Value> = tiers
            .into_iter()
            .map(|t| (t.tier.name().to_string(), serde_json::to_value(t).unwrap_or_default()))
            .collect();
        let projects: Vec<Value> = projects
            .projects
            .iter()
            .map(|p| {
                json!({
                    "project": p.project,
                    "chunks": p.chunks,
                    "last_observed_at": p.last_observed_at,
                    "context": crate::live_resources::context_uri(&p.project),
                })
            })
            .collect();
        let figures = json!({
            "vectors": vectors,
            "store": {
                "bytes": bytes,
                "chunks": stats.chunks,
                "sources": stats.sources,
                "entities": stats.entities,
                "audit_rows": stats.audit_rows,
                "projects": projects,
                "index": {
                    "db_seq": stats.db_seq,
                    "fts_seq": stats.fts.seq,
                    "fts_docs": stats.fts.docs,
                    "vectors": stats.vectors.count,
                },
            },
        });
        Ok((figures, took))
    }
    .boxed()
}

/// Whether the store is open, its engine and, with a shared store, where this copy stands.
fn memory_status(state: &AppState) -> Value {
    let engine = state.config().memory.engine;
    let mut out = json!({ "open": state.memory().is_ok(), "opening": state.memory_opening(), "engine": engine });
    if let Ok(m) = state.memory()
        && let Some(shared) = m.shared_status()
    {
        out["shared"] = serde_json::to_value(shared).unwrap_or_default();
    }
    out
}

fn status(state: &AppState, caller: u64) -> Value {
    // The asking connection is not one of the sessions being reported on.
    let sessions: Vec<_> = state.sessions().all().into_iter().filter(|s| s.id != caller).collect();
    let inflight: usize = sessions.iter().map(|s| s.inflight_count()).sum();
    let problems = state.problems();
    let config = state.config();
    json!({
        "pid": std::process::id(),
        "version": openhuman_common::VERSION,
        "uptime_ms": state.uptime_ms() as u64,
        "sessions": sessions.len(),
        "in_flight": inflight,
        "memory": memory_status(state),
        "ready": problems.is_empty(),
        "problems": problems,
        "socket": state.paths().socket.display().to_string(),
        "config_file": state.paths().config_file.display().to_string(),
        "clients": clients(&sessions),
        "policy": {
            "level": config.autonomy.level,
            "max_actions_per_hour": config.autonomy.max_actions_per_hour,
            "act_calls_last_hour": state.limiter().used(),
        },
        "dashboard": state.dashboard().url(),
    })
}

/// The connected clients: sessions grouped by client label and transport.
fn clients(sessions: &[std::sync::Arc<openhuman_mcp::Session>]) -> Value {
    let mut groups: std::collections::BTreeMap<(String, &str), usize> = std::collections::BTreeMap::new();
    for s in sessions {
        let transport = match s.transport {
            openhuman_mcp::Transport::Socket => "socket",
            openhuman_mcp::Transport::Stdio => "stdio",
            openhuman_mcp::Transport::Http => "http",
        };
        *groups.entry((s.source(), transport)).or_default() += 1;
    }
    groups
        .into_iter()
        .map(|((client, transport), n)| json!({ "client": client, "transport": transport, "sessions": n }))
        .collect()
}
