//! The tool registry: a discovery view over every MCP tool and core method, and the
//! diagnostics a dashboard needs (counts, write surfaces, policy posture, recent writes and
//! denials with secrets redacted, capability providers). Read-only: it changes no dispatch.

use serde_json::{Value, json};

use super::{self as rpc, Group};
use crate::state::AppState;
use crate::tools::{self, Policy, ToolDef, write};
use openhuman_memory::AuditQuery;

/// Registry version of the entries' shape.
const VERSION: &str = "1";

fn tool_entry(state: &AppState, t: &ToolDef) -> Value {
    let config = state.config();
    let agents = state.agents();
    let allowed: Vec<&str> = agents
        .agents
        .values()
        .filter(|a| a.manifest.tools.iter().any(|x| x == t.name))
        .map(|a| a.manifest.id.as_str())
        .collect();
    let enabled = (t.available)(&config);
    let mut tags = vec![if t.policy == Policy::Read { "read" } else { "act" }];
    if write::AUDITED.contains(&t.name) {
        tags.push("write");
    }
    if t.name.starts_with("memory.") || t.name.starts_with("tree.") {
        tags.push("memory");
    }
    let health = if !enabled {
        "disabled by config".to_string()
    } else if tags.contains(&"memory") {
        match state.memory() {
            Ok(_) => "ok".to_string(),
            Err(e) => e,
        }
    } else {
        "ok".to_string()
    };
    json!({
        "tool_id": t.name, "kind": "mcp_tool", "title": t.title, "description": t.description,
        "route": "mcp:tools/call", "version": VERSION, "policy": if t.policy == Policy::Read { "read" } else { "act" },
        "input_schema": t.args.json_schema(), "output_schema": t.output_schema, "allowed_agents": allowed,
        "tags": tags, "enabled": enabled, "health": health,
    })
}

fn method_entry(m: &rpc::Method) -> Value {
    json!({
        "tool_id": m.name, "kind": "core_method", "route": format!("rpc:{}", m.name), "version": VERSION,
        "policy": "read", "input_schema": m.params.json_schema(), "tags": ["memory", "read"], "enabled": true,
    })
}

pub(crate) fn list(state: &AppState) -> Value {
    let mut entries: Vec<Value> = tools::all_tools().iter().map(|t| tool_entry(state, t)).collect();
    entries.extend(rpc::methods().iter().filter(|m| m.group == Group::Memory).map(method_entry));
    json!({ "count": entries.len(), "tools": entries })
}

pub(crate) fn get(state: &AppState, id: &str) -> Option<Value> {
    if let Some(t) = tools::all_tools().iter().find(|t| t.name == id) {
        return Some(tool_entry(state, t));
    }
    rpc::find(id).filter(|m| m.group == Group::Memory).map(method_entry)
}

pub(crate) fn diagnostics(state: &AppState) -> Value {
    let config = state.config();
    let all = tools::all_tools();
    let listed = tools::listed(&config);
    let now = chrono::Utc::now().timestamp_millis();
    let (writes, denials) = match state.memory() {
        Ok(engine) => {
            let day = engine
                .query_audit(AuditQuery {
                    limit: Some(100_000),
                    since_ms: Some(now - 86_400_000),
                    ..Default::default()
                })
                .unwrap_or_default();
            let ok = day.iter().filter(|r| r.success).count();
            let denials: Vec<Value> = day
                .iter()
                .filter(|r| r.error.as_deref().is_some_and(crate::policy::Denial::is_denial_text))
                .take(10)
                .map(|r| json!({ "ts_ms": r.ts_ms, "tool": r.tool, "source": r.source, "error": openhuman_common::redact(r.error.as_deref().unwrap_or(""), None) }))
                .collect();
            (json!({ "total": day.len(), "succeeded": ok, "failed": day.len() - ok }), denials)
        }
        Err(e) => (json!({ "unavailable": e }), Vec::new()),
    };
    let providers = &config.capability_providers;
    let ids: Vec<Value> = providers
        .iter()
        .map(|p| json!({ "id": openhuman_common::normalize_id(&p.id), "display_name": p.display_name, "trust_state": p.trust_state, "enabled": p.enabled, "eligible": p.eligible() }))
        .collect();
    json!({
        "counts": {
            "mcp_tools": all.len(), "mcp_tools_listed": listed.len(), "core_methods": rpc::methods().iter().filter(|m| m.group == Group::Memory).count(),
            "read": all.iter().filter(|t| t.policy == Policy::Read).count(),
            "act": all.iter().filter(|t| t.policy == Policy::Act).count(),
        },
        "write_surfaces": write::AUDITED,
        "policy": {
            "level": config.autonomy.level, "max_actions_per_hour": config.autonomy.max_actions_per_hour,
            "act_calls_last_hour": state.limiter().used(),
        },
        "writes_last_24h": writes,
        "recent_denials": denials,
        "capability_providers": {
            "configured": providers.len(),
            "enabled": providers.iter().filter(|p| p.enabled).count(),
            "trusted": providers.iter().filter(|p| p.trust_state == openhuman_config::TrustState::Trusted).count(),
            "eligible": providers.iter().filter(|p| p.eligible()).count(),
            "providers": ids,
        },
    })
}
