//! `ui`: a one-time login link to the dashboard from the running daemon (reached through
//! `via`; there is no dashboard without one), printed and handed to the desktop's opener
//! (`xdg-open`, `open`), which may fail quietly: the printed link is the answer. A running
//! daemon whose HTTP port is off (the one the shim started, say) gets it turned on first:
//! `[mcp.http] enabled = true` written to config.toml and a config reload, which starts HTTP in
//! the same process (on a terminal, `ui` asks before).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use openhuman_common::Paths;
use serde_json::json;

use super::out;
use crate::cli::UiArgs;
use crate::via::Via;
use crate::{EXIT_FAILURE, EXIT_OK};

pub(crate) fn run(paths: &Paths, args: &UiArgs) -> Result<i32> {
    let Some(via) = Via::running(paths)? else {
        let http_on = openhuman_config::load(&paths.config_file).is_ok_and(|l| l.config.mcp.http.enabled);
        out(&if http_on {
            "openhumand-mcp is not running; start it with `openhumand-mcp serve`, then run `openhumand-mcp ui` again"
                .to_string()
        } else {
            format!(
                "openhumand-mcp is not running, and the dashboard needs its HTTP port, which is off: set \
                 [mcp.http].enabled = true in {} (or run `openhumand-mcp serve --http`), then run \
                 `openhumand-mcp ui` again",
                paths.config_file.display()
            )
        });
        return Ok(EXIT_FAILURE);
    };
    if let Err(e) = http_on(paths, &via) {
        out(&format!("no dashboard: {e:#}"));
        return Ok(EXIT_FAILURE);
    }
    let link = match via.method("openhuman.ui_login", json!({}), Some(Duration::from_secs(10))) {
        Ok(link) => link,
        Err(e) => {
            out(&format!("no dashboard: {e:#}"));
            return Ok(EXIT_FAILURE);
        }
    };
    let url = link["url"].as_str().unwrap_or_default();
    match link["expires_in_secs"].as_u64() {
        Some(secs) => out(&format!("dashboard login link (works once, for {secs} s): {url}")),
        None => out(&format!("dashboard (no login: HTTP has no token): {url}")),
    }
    if !args.no_open {
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        let started = std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Err(e) = started {
            tracing::debug!(opener, error = %e, "could not start a browser; the link is printed");
        }
    }
    Ok(EXIT_OK)
}

/// How long the daemon may take to answer; a reload that starts HTTP binds a port, no more.
const ASK: Duration = Duration::from_secs(10);

/// Makes the running daemon serve HTTP, when it does not yet: asks on a terminal, enables
/// `[mcp.http]` in config.toml, and has the daemon reload. Err says why there is no dashboard.
fn http_on(paths: &Paths, via: &Via) -> Result<()> {
    let status = via.method("openhuman.daemon_status", json!({}), Some(ASK))?;
    if status["dashboard"].is_string() {
        return Ok(());
    }
    let http = openhuman_config::load(&paths.config_file).map(|l| l.config.mcp.http)?;
    let addr = format!("{}:{}", http.host, http.port);
    if std::io::stdin().is_terminal()
        && !super::terminal::ask(&format!(
            "The dashboard needs the daemon's HTTP port ({addr}), which is off. Turn it on, in config.toml and \
             in the running daemon?"
        ))?
    {
        anyhow::bail!(
            "the HTTP port is off; set [mcp.http].enabled = true in {} and run `openhumand-mcp ui` again",
            paths.config_file.display()
        );
    }
    if !http.enabled {
        super::sources::edit(paths, |doc| {
            let mcp = doc
                .entry("mcp")
                .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
                .as_table_mut()
                .ok_or_else(|| anyhow::anyhow!("`mcp` in config.toml is not a table"))?;
            mcp.set_implicit(true);
            let table = mcp
                .entry("http")
                .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
                .as_table_mut()
                .ok_or_else(|| anyhow::anyhow!("`mcp.http` in config.toml is not a table"))?;
            table["enabled"] = toml_edit::value(true);
            Ok(())
        })?;
    }
    let reloaded = via.method("openhuman.config_reload", json!({}), Some(ASK))?;
    if let Some(why) = reloaded["http_error"].as_str() {
        anyhow::bail!("config.toml now says [mcp.http] enabled = true, but the daemon could not start HTTP: {why}");
    }
    match reloaded["http_started"].as_str() {
        Some(url) => {
            out(&format!("turned the HTTP port on in the running daemon (no restart), and in config.toml: {url}"));
            Ok(())
        }
        None => anyhow::bail!("the daemon reloaded its config but serves no HTTP; restart it to serve HTTP"),
    }
}
