//! `ui`: a one-time login link to the dashboard from the running daemon (reached through
//! `via`; there is no dashboard without one), printed and handed to the desktop's opener
//! (`xdg-open`, `open`), which may fail quietly: the printed link is the answer.

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
