//! Memory at the terminal: `search`, `recall`, `show`, `forget` (`--project`: every item of a
//! project, through `openhuman.memory_forget_project`), `context` (a project's context through
//! `openhuman.memory_context`, as text or as a start-of-session hook's JSON) and `sources list
//! --stored`.
//! Each is the MCP tool of the same job (`memory.search`, `memory.recall`, `tree.read_chunk`,
//! `memory.forget`, `tree.list_sources`) called through `via` — the running
//! daemon, else the store opened here — and printed for people, or as the tool's JSON with
//! `--json`. An id that is no chunk is read by `openhuman.memory_resolve`, as `memory.forget`
//! reads ids: `show` lists what it names, and `forget` shows what it will delete and asks on a
//! terminal.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context, Result, bail};
use openhuman_common::Paths;
use openhuman_memory::{Operation, ops};
use serde_json::{Value, json};

use super::out;
use crate::EXIT_OK;
use crate::cli::{ContextArgs, ForgetArgs, QueryArgs, ShowArgs};
use crate::via::Via;

/// `search` and `recall`: `tool` is memory.search or memory.recall, `list` where its hits are.
pub(crate) fn query(paths: &Paths, args: &QueryArgs, tool: &str, list: &str) -> Result<i32> {
    let via = Via::open(paths)?;
    let query = args.query.join(" ");
    let result = via.tool(tool, json!({ "query": query, "k": args.k }));
    via.finish();
    let result = result?;
    if args.json {
        out(&result.to_string());
        return Ok(EXIT_OK);
    }
    let hits = result[list].as_array().cloned().unwrap_or_default();
    if hits.is_empty() {
        out(&format!("nothing in memory matches \"{query}\""));
    }
    for h in &hits {
        let name = h["title"].as_str().filter(|t| !t.is_empty()).or(h["source_id"].as_str()).unwrap_or("?");
        let tags = tag_list(&h["tags"]);
        out(&format!(
            "{:.3}  {name}  [{}]  {}{tags}",
            h["score"].as_f64().unwrap_or(0.0),
            h["chunk_id"].as_str().unwrap_or("?"),
            h["source_kind"].as_str().unwrap_or("?"),
        ));
        let snippet = h["snippet"].as_str().or(h["preview"].as_str()).unwrap_or("");
        out(&format!("       {}", one_line(snippet)));
    }
    if let Some(folders) = result["still_reading"]["folders"].as_array() {
        let folders: Vec<&str> = folders.iter().filter_map(Value::as_str).collect();
        out(&format!(
            "(still reading {}: what it holds may be missing; `status` shows when it is done)",
            folders.join(", ")
        ));
    }
    Ok(EXIT_OK)
}

/// `show`: a chunk whole; an id that is no chunk is read as an item or source id, and the
/// chunks it names are listed.
pub(crate) fn show(paths: &Paths, args: &ShowArgs) -> Result<i32> {
    let via = Via::open(paths)?;
    let result = match via.tool("tree.read_chunk", json!({ "chunk_id": args.id })) {
        Ok(c) => Ok((true, c)),
        Err(not_chunk) => match via.method(ops::Resolve::METHOD, json!({ "ids": [args.id] }), None) {
            Ok(r) if r["ids"][0]["chunk_count"].as_u64().unwrap_or(0) > 0 => Ok((false, r["ids"][0].clone())),
            Ok(_) if not_chunk.to_string().contains("no chunk") => Err(anyhow::anyhow!(
                "nothing in memory has the id {} (chunk ids come from search, recall and show; source ids from \
                 `sources list --stored`)",
                args.id
            )),
            Ok(_) => Err(not_chunk),
            Err(e) => Err(e),
        },
    };
    via.finish();
    let (is_chunk, v) = result?;
    if args.json {
        out(&v.to_string());
    } else if is_chunk {
        print_chunk(&v);
    } else {
        out(&format!("{} chunk(s) of {}:", v["chunk_count"], args.id));
        let listed = v["chunks"].as_array().cloned().unwrap_or_default();
        for c in &listed {
            out(&format!(
                "{}  {}  {}",
                c["chunk_id"].as_str().unwrap_or("?"),
                c["title"].as_str().unwrap_or(""),
                one_line(c["preview"].as_str().unwrap_or(""))
            ));
        }
        let total = v["chunk_count"].as_u64().unwrap_or(0) as usize;
        if total > listed.len() {
            out(&format!("… and {} more (the tree.browse tool pages through them all)", total - listed.len()));
        }
    }
    Ok(EXIT_OK)
}

fn print_chunk(c: &Value) {
    if let Some(t) = c["title"].as_str() {
        out(&format!("# {t}"));
    }
    out(&format!("chunk:    {}", c["chunk_id"].as_str().unwrap_or("?")));
    out(&format!(
        "source:   {} ({})",
        c["source_id"].as_str().unwrap_or("?"),
        c["source_kind"].as_str().unwrap_or("?")
    ));
    out(&format!("observed: {}", c["observed_at"].as_str().unwrap_or("?")));
    out(&format!("by:       {}", c["source"].as_str().unwrap_or("?")));
    let tags: Vec<&str> = c["tags"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if !tags.is_empty() {
        out(&format!("tags:     {}", tags.join(", ")));
    }
    out("");
    out(c["content"].as_str().unwrap_or("").trim_end());
    for n in c["notes"].as_array().into_iter().flatten() {
        out("");
        out(&format!("note ({}): {}", n["source"].as_str().unwrap_or("?"), n["text"].as_str().unwrap_or("")));
    }
    for l in c["links"].as_array().into_iter().flatten() {
        out(&format!("links to: {}", l["target"].as_str().unwrap_or("?")));
    }
}

/// `sources list --stored`: every source, all pages of tree.list_sources.
pub(crate) fn stored_sources(paths: &Paths, json_out: bool) -> Result<i32> {
    let via = Via::open(paths)?;
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    let result = loop {
        let mut args = json!({});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        match via.tool("tree.list_sources", args) {
            Ok(page) => {
                all.extend(page["sources"].as_array().cloned().unwrap_or_default());
                match page["next_cursor"].as_str() {
                    Some(c) => cursor = Some(c.to_string()),
                    None => break Ok(()),
                }
            }
            Err(e) => break Err(e),
        }
    };
    via.finish();
    result?;
    if json_out {
        out(&json!({ "sources": all, "total": all.len() }).to_string());
        return Ok(EXIT_OK);
    }
    if all.is_empty() {
        out("memory holds no sources yet; `openhumand-mcp ingest <path>` adds some");
    }
    for s in &all {
        let last = chrono::DateTime::from_timestamp_millis(s["last_activity_ms"].as_i64().unwrap_or(0))
            .map(|t| t.format("%Y-%m-%d").to_string())
            .unwrap_or_default();
        out(&format!(
            "{last}  {:<8} {:>5}  {}  ({})",
            s["source_kind"].as_str().unwrap_or("?"),
            s["chunk_count"].as_u64().unwrap_or(0),
            one_line(s["display_name"].as_str().unwrap_or("?")),
            s["source_id"].as_str().unwrap_or("?")
        ));
    }
    Ok(EXIT_OK)
}

/// `forget`: what will go, a confirmation on a terminal (or --yes), then memory.forget.
pub(crate) fn forget(paths: &Paths, args: &ForgetArgs) -> Result<i32> {
    let via = Via::open(paths)?;
    let result = forget_with(&via, args);
    via.finish();
    result
}

fn forget_with(via: &Via, args: &ForgetArgs) -> Result<i32> {
    if let Some(dir) = &args.project {
        return forget_project(via, dir, args);
    }
    // A whole agent session is its source, `session:<id>`.
    let mut ids = args.ids.clone();
    ids.extend(args.session.iter().map(|s| format!("session:{}", s.trim())));
    let preview = via.method(ops::Resolve::METHOD, json!({ "ids": ids }), None)?;
    let mut chunks = 0;
    let mut lines = Vec::new();
    for p in preview["ids"].as_array().into_iter().flatten() {
        let id = p["id"].as_str().unwrap_or("?");
        let found = p["chunks"].as_array().cloned().unwrap_or_default();
        let (notes, records) = (p["notes"].as_u64().unwrap_or(0), p["records"].as_u64().unwrap_or(0));
        if found.is_empty() && records == 0 {
            lines.push(format!("{id}: not found"));
            continue;
        }
        let count = p["chunk_count"].as_u64().unwrap_or(found.len() as u64) as usize;
        chunks += count;
        let mut head = format!("{id}: {count} chunk(s)");
        if notes > 0 {
            head.push_str(&format!(" and {notes} note(s) on them"));
        }
        if records > 0 {
            head.push_str(&format!(", {records} record(s)"));
        }
        lines.push(head);
        for c in found.iter().take(10) {
            let name = c["title"].as_str().filter(|t| !t.is_empty()).or(c["source_id"].as_str()).unwrap_or("?");
            lines.push(format!(
                "  {} {name} ({}): {}",
                c["chunk_id"].as_str().unwrap_or("?"),
                c["kind"].as_str().unwrap_or("?"),
                one_line(c["preview"].as_str().unwrap_or(""))
            ));
        }
        if count > 10 {
            lines.push(format!("  … and {} more", count - 10));
        }
    }
    if lines.iter().all(|l| l.ends_with(": not found")) {
        bail!(
            "nothing to forget: no item, chunk or source has the id{} {} (ids come from search, recall, show and \
             `sources list --stored`)",
            if ids.len() == 1 { "" } else { "s" },
            ids.join(", ")
        );
    }
    let mut err = std::io::stderr().lock();
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!("forget deletes for good and asks first: run it in a terminal to confirm, or pass --yes");
        }
        let _ = writeln!(err, "This deletes for good, from the database and every index:");
        for l in &lines {
            let _ = writeln!(err, "{l}");
        }
        if !ask(&format!("Forget {chunks} chunk(s)?"))? {
            let _ = writeln!(err, "nothing was forgotten");
            return Ok(crate::EXIT_FAILURE);
        }
    }
    drop(err);
    let result = via.tool("memory.forget", json!({ "ids": ids }))?;
    if args.json {
        out(&result.to_string());
        return Ok(EXIT_OK);
    }
    let list = |k: &str| -> Vec<String> {
        result[k].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
    };
    out(&format!("forgot {} ({chunks} chunk(s))", list("deleted").join(", ")));
    let missing = list("not_found");
    if !missing.is_empty() {
        out(&format!("not found: {}", missing.join(", ")));
    }
    Ok(EXIT_OK)
}

/// The project a folder names: the git root above it, else the folder, absolute.
fn project_of(dir: &std::path::Path) -> Result<String> {
    let dir = std::path::absolute(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    let dir = dir.canonicalize().unwrap_or(dir);
    let root = openhuman_memory::project::git_root(&dir).unwrap_or(dir);
    openhuman_memory::project::normalize(&root.to_string_lossy())
        .ok_or_else(|| anyhow::anyhow!("{} does not name a project folder", root.display()))
}

/// `forget --project DIR`: how many items and chunks will go, a confirmation, then one audited
/// deletion of them all.
fn forget_project(via: &Via, dir: &std::path::Path, args: &ForgetArgs) -> Result<i32> {
    // A folder that is gone (the project was deleted) is named as written.
    let project = if dir.exists() {
        project_of(dir)?
    } else {
        openhuman_memory::project::normalize(&std::path::absolute(dir)?.to_string_lossy())
            .ok_or_else(|| anyhow::anyhow!("{} is not a path", dir.display()))?
    };
    let listed = via.tool("memory.projects", json!({}))?;
    let chunks = listed["projects"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["project"].as_str() == Some(project.as_str()))
        .and_then(|p| p["chunks"].as_u64());
    let Some(chunks) = chunks else {
        bail!("nothing to forget: memory holds nothing of the project {project} (`status` lists the projects)");
    };
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!("forget deletes for good and asks first: run it in a terminal to confirm, or pass --yes");
        }
        if !ask(&format!("Forget every item of {project} ({chunks} chunk(s)), from the database and every index?"))? {
            let _ = writeln!(std::io::stderr(), "nothing was forgotten");
            return Ok(crate::EXIT_FAILURE);
        }
    }
    let result = via.method("openhuman.memory_forget_project", json!({ "project": project }), None)?;
    if args.json {
        out(&result.to_string());
    } else {
        out(&format!(
            "forgot the project {project}: {} item(s), {} chunk(s)",
            result["items"].as_u64().unwrap_or(0),
            result["chunks"].as_u64().unwrap_or(0)
        ));
    }
    Ok(EXIT_OK)
}

/// `context`: a project's current context, as text or as a start-of-session hook's answer.
pub(crate) fn context(paths: &Paths, args: &ContextArgs) -> Result<i32> {
    let dir = match &args.project {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let got = project_of(&dir).and_then(|project| {
        let via = Via::open(paths)?;
        let mut params = json!({ "project": project, "budget": args.budget });
        if let Some(t) = &args.topic {
            params["topic"] = json!(t);
        }
        let r = via.method("openhuman.memory_context", params, None);
        via.finish();
        r
    });
    if args.hook {
        // A hook never breaks the client's start: what cannot be read is said on stderr.
        let text = match got {
            Ok(r) => r["text"].as_str().unwrap_or_default().to_string(),
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "openhumand-mcp context: {e:#}");
                String::new()
            }
        };
        out(&json!({ "hookSpecificOutput": { "hookEventName": "SessionStart", "additionalContext": text } })
            .to_string());
        return Ok(EXIT_OK);
    }
    out(got?["text"].as_str().unwrap_or_default());
    Ok(EXIT_OK)
}

fn tag_list(tags: &Value) -> String {
    let t: Vec<&str> = tags.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if t.is_empty() { String::new() } else { format!("  #{}", t.join(" #")) }
}

/// Text on one line: runs of whitespace become one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Asks `question` on the terminal (stderr) and reads the answer from stdin: true only for yes.
pub(crate) fn ask(question: &str) -> Result<bool> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}
