//! The project of an MCP session, decided in one place from two sources:
//!
//! - the shim's workspace: the `_meta` of the session's `initialize` under
//!   [`openhuman_common::WORKSPACE_META`] (the client's working directory and the git root above
//!   it; its `git_root` first, else its `cwd`);
//! - the client's MCP roots, when it declared the `roots` capability: its `file://` roots, each
//!   named by the git root above it, else the folder itself ([`openhuman_mcp::Input::roots`] asks
//!   `roots/list` on the first call that wants a project and keeps the answer on the session until
//!   `notifications/roots/list_changed`; in 2026-07-28 it is asked in each such request).
//!
//! When both exist: the shim's workspace if its working directory lies inside one of the roots
//! (it is then the more precise of the two), else the first `file://` root (a client launched
//! from a dock or a menu starts in `/` or the home folder, which says nothing of the project it
//! has open). No roots, or none of them `file://`: the shim's workspace. Over HTTP there is no
//! shim, so roots are the only source.
//!
//! The memory tools take it as the default `project` of `memory.store` and `memory.learn` and
//! the default `prefer_project` of `memory.search` and `memory.recall` (with
//! `memory.project_boost` as the default `project_boost`). A call that names its project
//! (`project`, `prefer_project`) never waits for `roots/list`.

use std::path::Path;

use openhuman_mcp::{Era, RequestCtx, Root};
use openhuman_memory::project::{git_root, normalize};
use serde_json::{Map, Value};

/// Who makes a call: the client itself, or a subagent's loop inside one of its calls.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    Client,
    Subagent,
}

/// The session's project, if its client or its shim said where it works.
pub(crate) async fn project_of(ctx: &RequestCtx, caller: Caller) -> Option<String> {
    let shim = shim_workspace(ctx);
    // A subagent's inner calls in 2026-07-28 would restart the whole run to ask: they go
    // without roots (its caller's own calls ask).
    let stateless_inner = matches!(ctx.era, Era::Modern) && caller == Caller::Subagent;
    let roots = if ctx.input.can_list_roots() && !stateless_inner {
        ctx.input.roots().await.unwrap_or_default()
    } else {
        Vec::new()
    };
    choose(shim, &roots)
}

/// What the shim said: the folder the client runs in and the project it names.
struct ShimWorkspace {
    cwd: Option<String>,
    project: String,
}

fn shim_workspace(ctx: &RequestCtx) -> Option<ShimWorkspace> {
    let here = ctx.session.client_meta()?.get(openhuman_common::WORKSPACE_META)?;
    let field = |k: &str| here.get(k).and_then(Value::as_str).and_then(normalize);
    let project = field("git_root").or_else(|| field("cwd"))?;
    Some(ShimWorkspace { cwd: field("cwd"), project })
}

/// The project a root names: the git root at or above its folder, else the folder.
fn root_project(path: &str) -> Option<String> {
    let folder = normalize(path)?;
    let above = git_root(Path::new(&folder)).and_then(|r| normalize(&r.to_string_lossy()));
    Some(above.unwrap_or(folder))
}

fn inside(path: &str, folder: &str) -> bool {
    path == folder || folder == "/" || path.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/'))
}

/// The precedence described at the top of this file.
fn choose(shim: Option<ShimWorkspace>, roots: &[Root]) -> Option<String> {
    let folders: Vec<String> = roots.iter().filter_map(Root::file_path).filter_map(|p| normalize(&p)).collect();
    let Some(first) = folders.first() else {
        return shim.map(|s| s.project);
    };
    if let Some(s) = &shim {
        let cwd = s.cwd.as_deref().unwrap_or(&s.project);
        if folders.iter().any(|f| inside(cwd, f)) {
            return Some(s.project.clone());
        }
    }
    root_project(first)
}

/// Sets `key` to the session's project when the caller left it out.
pub(crate) async fn default_project(args: &mut Map<String, Value>, key: &str, ctx: &RequestCtx, caller: Caller) {
    if !args.contains_key(key)
        && let Some(p) = project_of(ctx, caller).await
    {
        args.insert(key.to_string(), Value::String(p));
    }
}

/// Search and recall: the session's project preferred, by the configured boost, unless the
/// caller named either.
pub(crate) async fn prefer_session_project(
    args: &mut Map<String, Value>,
    ctx: &RequestCtx,
    caller: Caller,
    boost: f64,
) {
    default_project(args, "prefer_project", ctx, caller).await;
    if !args.contains_key("project_boost") && args.contains_key("prefer_project") {
        args.insert("project_boost".into(), Value::from(boost));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(uri: &str) -> Root {
        Root { uri: uri.into(), name: None }
    }

    fn shim(cwd: &str, project: &str) -> Option<ShimWorkspace> {
        Some(ShimWorkspace { cwd: Some(cwd.into()), project: project.into() })
    }

    #[test]
    fn roots_and_the_shim_agree_on_one_project() {
        let none = "/nonexistent-oh-test";
        // Only the shim, or roots that are not files: the shim's workspace.
        assert_eq!(choose(shim("/w/app/src", "/w/app"), &[]).as_deref(), Some("/w/app"));
        assert_eq!(choose(shim("/w/app", "/w/app"), &[root("https://x/y")]).as_deref(), Some("/w/app"));
        // Only roots (HTTP): the first file root, normalised.
        let r = [root(&format!("file://{none}/one/")), root(&format!("file://{none}/two"))];
        assert_eq!(choose(None, &r), Some(format!("{none}/one")));
        // The shim's folder inside a root: the shim's (more precise) project.
        let inner = shim(&format!("{none}/two/pkg"), &format!("{none}/two/pkg"));
        assert_eq!(choose(inner, &r), Some(format!("{none}/two/pkg")));
        // The shim started elsewhere (a GUI client in the home folder): the first root.
        assert_eq!(choose(shim("/home/u", "/home/u"), &r), Some(format!("{none}/one")));
        // No project at all.
        assert_eq!(choose(None, &[]), None);
        // A folder is not inside its namesake's prefix.
        assert!(!inside("/w/app2", "/w/app") && inside("/w/app/x", "/w/app") && inside("/x", "/"));
    }

    #[test]
    fn a_root_inside_a_repository_names_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        let sub = normalize(&repo.join("sub").to_string_lossy()).unwrap();
        let want = normalize(&repo.to_string_lossy());
        assert_eq!(choose(None, &[root(&format!("file://{sub}"))]), want);
    }
}
