//! `status` and `stop`: the running daemon asked over its socket. Both need a daemon and have
//! nothing to do in process, so a daemon that does not answer is their answer, not a reason to
//! open the store.

use anyhow::Result;
use openhuman_common::Paths;

use super::out;
use crate::cli::StatusArgs;
use crate::{EXIT_FAILURE, EXIT_OK, client};

/// `status`: exit 0 only when a daemon answers and can do what its config asks.
pub(crate) fn status(paths: &Paths, args: &StatusArgs) -> Result<i32> {
    let rt = crate::runtime(Some(1))?;
    match rt.block_on(client::call(&paths.socket, "openhuman.daemon_status")) {
        Ok(s) => {
            // A daemon that answers but cannot do what its config asks is not "up".
            let problems: Vec<&str> =
                s["problems"].as_array().into_iter().flatten().filter_map(|p| p.as_str()).collect();
            let code = if problems.is_empty() { EXIT_OK } else { EXIT_FAILURE };
            if args.json {
                out(&s.to_string());
                return Ok(code);
            }
            for line in crate::status::lines(&s) {
                out(&line);
            }
            Ok(code)
        }
        Err(e) => {
            if args.json {
                out(&serde_json::json!({ "running": false, "socket": paths.socket.display().to_string() }).to_string());
            } else {
                out(&format!("openhumand-mcp is not running ({e:#}); start it with `openhumand-mcp serve`"));
            }
            Ok(EXIT_FAILURE)
        }
    }
}

/// `stop`: asks the daemon to shut down gracefully.
pub(crate) fn stop(paths: &Paths) -> Result<i32> {
    let rt = crate::runtime(Some(1))?;
    let reply = rt.block_on(client::call(&paths.socket, "openhuman.daemon_shutdown"))?;
    out(&format!("asked openhumand-mcp (pid {}) to stop", reply["pid"]));
    Ok(EXIT_OK)
}
