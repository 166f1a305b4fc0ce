//! openhuman-mcp-shim: the "stdio server" MCP clients launch. It bridges stdin/stdout to the
//! daemon's socket line by line, starts the daemon when none answers, and survives daemon
//! restarts. It never interprets MCP beyond the handshake it replays (see `bridge`).
//!
//! Plain threads and blocking I/O keep it small and quick to start; there is no async runtime.

mod autostart;
mod bridge;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use openhuman_common::Paths;

const HELP: &str = "openhuman-mcp-shim: connect an MCP client (over stdio) to the openhumand-mcp daemon

Usage: openhuman-mcp-shim [--home DIR] [--socket PATH] [--no-autostart] [-v]

Options:
  --home DIR       root every openhuman file under DIR (also: OPENHUMAN_HOME)
  --socket PATH    the daemon socket (default: from --home or the platform's runtime dir)
  --no-autostart   never start a daemon; report an error when none is running
  -v, --verbose    log connection events to stderr
  -h, --help       print this help
  -V, --version    print the version

stdout carries MCP protocol lines only; messages from the shim itself go to stderr.";

pub struct Options {
    pub home: Option<PathBuf>,
    pub paths: Paths,
    pub autostart: bool,
    pub verbose: bool,
}

fn parse_args() -> Result<Option<Options>, String> {
    let mut home = None;
    let mut socket = None;
    let mut autostart = true;
    let mut verbose = false;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<PathBuf, String> {
            match inline.clone().map(PathBuf::from).or_else(|| args.next().map(PathBuf::from)) {
                Some(v) => Ok(v),
                None => Err(format!("{name} needs a value")),
            }
        };
        match flag.as_str() {
            "--home" => home = Some(value("--home")?),
            "--socket" => socket = Some(value("--socket")?),
            "--no-autostart" => autostart = false,
            "-v" | "--verbose" => verbose = true,
            "-h" | "--help" => {
                let _ = writeln!(std::io::stdout(), "{HELP}");
                return Ok(None);
            }
            "-V" | "--version" => {
                let _ = writeln!(std::io::stdout(), "openhuman-mcp-shim {}", openhuman_common::VERSION);
                return Ok(None);
            }
            other => return Err(format!("unknown argument `{other}`; see --help")),
        }
    }
    let paths = Paths::resolve(home.as_deref())
        .and_then(|p| p.with_socket(socket.as_deref()))
        .map_err(|e| format!("cannot resolve paths: {e}"))?;
    Ok(Some(Options { home, paths, autostart, verbose }))
}

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(Some(o)) => o,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "openhuman-mcp-shim: {e}");
            return ExitCode::from(2);
        }
    };
    bridge::run(opts)
}
