//! `install` and `uninstall`: this user's installation in one command each. `install` copies
//! the running daemon and the shim beside it into a stable folder (`~/.local/bin` unless
//! `--prefix`), each by a temporary file renamed into place (a running copy keeps its old file),
//! writes and enables the login service for the installed daemon (`service`), and registers the
//! clients chosen — on a terminal asked per client found, otherwise only those `--register`
//! names — with the installed shim (`register`). `uninstall` reverses each step, keeping the
//! user's memory, config and logs unless `--purge`, and removes the folders and client configs
//! those steps created (`made`) once nothing else is in them. Both print one line per step,
//! saying what was really done; a step that fails is said and the others still run (exit 1 at
//! the end).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use openhuman_common::Paths;

use super::made::Made;
use super::register::SHIM_FILE;
use super::{out, register, service, terminal};
use crate::cli::{Activation, Cli, ClientKind, InstallArgs, RegisterChoice, UninstallArgs};
use crate::via::{self, Via};
use crate::{EXIT_FAILURE, EXIT_OK, client};

/// The daemon's file name on this platform.
const DAEMON_FILE: &str = if cfg!(windows) { "openhumand-mcp.exe" } else { "openhumand-mcp" };

/// Where the binaries go without `--prefix`: `~/.local/bin` on Linux and macOS alike (a folder
/// many shells already put on PATH, and the user's own, so no root is needed).
fn default_prefix() -> Result<PathBuf> {
    let base = directories::BaseDirs::new().context("cannot find your home directory")?;
    Ok(base.home_dir().join(".local/bin"))
}

fn prefix(given: Option<&Path>) -> Result<PathBuf> {
    match given {
        Some(p) => std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display())),
        None => default_prefix(),
    }
}

/// A client's name as the command line spells it.
fn name(client: ClientKind) -> String {
    client.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
}

/// What placing one binary did.
#[derive(Debug, PartialEq, Eq)]
enum Placed {
    /// The running binary is the installed one.
    InPlace,
    /// The installed file already has these bytes.
    Same,
    Installed,
    Updated,
}

/// Copies `src` to `dest` (mode 0755) through a temporary file in the same folder renamed over
/// it, so a reader never sees half a binary and a process running the old file keeps it.
fn place(src: &Path, dest: &Path) -> Result<Placed> {
    let same_file = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y);
    if same_file(src, dest) {
        return Ok(Placed::InPlace);
    }
    let existed = dest.exists();
    if existed && same_bytes(src, dest)? {
        return Ok(Placed::Same);
    }
    let dir = dest.parent().context("the install path has no folder")?;
    let file = dest.file_name().context("the install path has no file name")?.to_string_lossy();
    let tmp = dir.join(format!(".{file}.tmp-{}", std::process::id()));
    let written = std::fs::copy(src, &tmp)
        .with_context(|| format!("cannot copy {} to {}", src.display(), tmp.display()))
        .and_then(|_| executable(&tmp))
        .and_then(|()| std::fs::rename(&tmp, dest).with_context(|| format!("cannot replace {}", dest.display())));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(if existed { Placed::Updated } else { Placed::Installed })
}

/// Whether the installed file `dest` holds exactly `src`'s bytes (read in blocks: a debug
/// daemon is hundreds of megabytes).
fn same_bytes(src: &Path, dest: &Path) -> Result<bool> {
    use std::io::Read;
    let open = |p: &Path| std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()));
    let (mut a, mut b) = (open(src)?, open(dest)?);
    if a.metadata()?.len() != b.metadata()?.len() {
        return Ok(false);
    }
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = a.read(&mut x)?;
        if n == 0 {
            return Ok(true);
        }
        b.read_exact(&mut y[..n])?;
        if x[..n] != y[..n] {
            return Ok(false);
        }
    }
}

#[cfg(unix)]
fn executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

#[cfg(not(unix))]
fn executable(_path: &Path) -> Result<()> {
    Ok(())
}

/// The pid of the daemon answering on `paths`' socket, if one does.
fn running_daemon(paths: &Paths) -> Option<u64> {
    let via = Via::running(paths).ok()??;
    let status = via.method("openhuman.daemon_status", serde_json::json!({}), Some(Duration::from_secs(10))).ok()?;
    Some(status["pid"].as_u64().unwrap_or(0))
}

pub(crate) fn install(cli: &Cli, args: &InstallArgs) -> Result<i32> {
    let paths = Paths::resolve(cli.home.as_deref())?;
    let dir = prefix(args.prefix.as_deref())?;
    let exe = std::env::current_exe().context("cannot find this executable's path")?;
    let shim = register::shim_beside_exe()?;
    let mut made = Made::load(&paths);
    made.create_dir_all(&dir)?;
    made.save()?;
    let (daemon_dest, shim_dest) = (dir.join(DAEMON_FILE), dir.join(SHIM_FILE));
    let mut updated = false;
    for (src, dest) in [(&exe, &daemon_dest), (&shim, &shim_dest)] {
        let placed = place(src, dest)?;
        updated |= placed == Placed::Updated;
        out(&match placed {
            Placed::InPlace => format!("binary: {} is the installed one", dest.display()),
            Placed::Same => format!("binary: {} already installed (same build)", dest.display()),
            Placed::Installed => format!("binary: installed {}", dest.display()),
            Placed::Updated => format!("binary: updated {}", dest.display()),
        });
    }
    if updated && let Some(pid) = running_daemon(&paths) {
        out(&format!(
            "binary: the running daemon (pid {pid}) keeps the previous build until it restarts: `openhumand-mcp stop`, \
             and the next client starts the new one"
        ));
    }
    if !on_path(&dir) {
        out(&format!("note: {} is not on your PATH; add it to run openhumand-mcp by name", dir.display()));
    }
    if args.no_service {
        out("service: skipped (--no-service); clients' shims start the daemon when they need it");
    } else {
        install_service(&paths, &daemon_dest, cli.home.as_deref());
    }
    let failed = register_clients(args, &shim_dest, cli.home.as_deref())?;
    super::agent_logs::offer(&paths, args.capture_sessions.as_ref(), &openhuman_memory::Agent::ALL)?;
    Ok(if failed { EXIT_FAILURE } else { EXIT_OK })
}

fn on_path(dir: &Path) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d == dir))
}

/// The login service for the installed daemon. Failing to enable it is said but is not an
/// error: the shim starts the daemon on demand without it.
fn install_service(paths: &Paths, daemon: &Path, home: Option<&Path>) {
    let unchanged = service::render(paths, daemon, home, Activation::Socket)
        .is_ok_and(|units| units.iter().all(|u| std::fs::read_to_string(&u.path).is_ok_and(|t| t == u.text)));
    match service::install(paths, daemon, home, Activation::Socket) {
        Ok(_) if unchanged => out("service: already installed and enabled"),
        Ok(done) => out(&format!("service: {done}")),
        Err(e) => out(&format!(
            "service: {e:#}; clients' shims start the daemon when they need it, or run `openhumand-mcp service \
             install` where a user service manager runs"
        )),
    }
}

/// Registers the clients `--register` names, or those the user says yes to; true when one
/// failed.
fn register_clients(args: &InstallArgs, shim: &Path, home: Option<&Path>) -> Result<bool> {
    let mut found = Vec::new();
    for c in ClientKind::value_variants() {
        if register::detected(*c)? {
            found.push(*c);
        }
    }
    let found_names = || found.iter().map(|c| name(*c)).collect::<Vec<_>>().join(", ");
    let chosen: Vec<ClientKind> = match &args.register {
        Some(RegisterChoice::None) => {
            out("clients: none registered (--register none)");
            return Ok(false);
        }
        Some(RegisterChoice::Clients(list)) => list.clone(),
        Some(RegisterChoice::All) => found.clone(),
        None if found.is_empty() => Vec::new(),
        None if args.yes => found.clone(),
        None if std::io::stdin().is_terminal() => {
            let mut yes = Vec::new();
            for c in &found {
                if terminal::ask(&format!("Register openhuman with {}?", name(*c)))? {
                    yes.push(*c);
                }
            }
            yes
        }
        None => {
            out(&format!(
                "clients: found {}; none registered without a terminal to ask: run again with --register all (or \
                 --register <client,…>), or `openhumand-mcp register <client>`",
                found_names()
            ));
            return Ok(false);
        }
    };
    if chosen.is_empty() {
        out(&if found.is_empty() {
            "clients: none found; register one later with `openhumand-mcp register <client>`".to_string()
        } else {
            format!("clients: none registered (found {})", found_names())
        });
        return Ok(false);
    }
    let mut failed = false;
    for c in chosen {
        match register::register(c, shim, home) {
            Ok(done) => out(&format!("client {}: {done}", name(c))),
            Err(e) => {
                failed = true;
                out(&format!("client {}: FAILED: {e:#}", name(c)));
            }
        }
    }
    Ok(failed)
}

pub(crate) fn uninstall(cli: &Cli, args: &UninstallArgs) -> Result<i32> {
    let paths = Paths::resolve(cli.home.as_deref())?;
    let dir = prefix(args.prefix.as_deref())?;
    if args.purge && !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "--purge deletes your memory, config and logs for good: run it in a terminal to confirm, or add --yes"
            );
        }
        let what = data_places(&paths, cli.home.is_some()).iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
        if !terminal::ask(&format!("Delete your memory, config and logs for good ({})?", what.join(", ")))? {
            out("nothing was changed");
            return Ok(EXIT_FAILURE);
        }
    }
    let mut failed = false;
    let mut step = |label: &str, r: Result<String>| match r {
        Ok(text) => out(&format!("{label}: {text}")),
        Err(e) => {
            failed = true;
            out(&format!("{label}: FAILED: {e:#}"));
        }
    };
    let mut made = Made::load(&paths);
    step("service", service::uninstall(&paths));
    step("daemon", stop_daemon(&paths));
    for file in [DAEMON_FILE, SHIM_FILE] {
        let path = dir.join(file);
        step(
            "binary",
            match std::fs::remove_file(&path) {
                Ok(()) => Ok(format!("removed {}", path.display())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Ok(format!("{} was not installed", path.display()))
                }
                Err(e) => Err(e).with_context(|| format!("cannot remove {}", path.display())),
            },
        );
    }
    let mut seen = Vec::new();
    for c in ClientKind::value_variants() {
        // Clients sharing one file (VS Code and Copilot) are edited once.
        let Ok((file, _, _)) = register::target(*c) else { continue };
        if seen.contains(&file) {
            continue;
        }
        seen.push(file);
        // The hook first: a settings file left holding only our server entry then goes whole.
        match super::hooks::remove(*c, &mut made) {
            Ok(Some(done)) => step(&format!("hook {}", name(*c)), Ok(done)),
            Ok(None) => {}
            Err(e) => step(&format!("hook {}", name(*c)), Err(e)),
        }
        match register::unregister(*c, &mut made) {
            Ok(Some(done)) => step(&format!("client {}", name(*c)), Ok(done)),
            Ok(None) => {}
            Err(e) => step(&format!("client {}", name(*c)), Err(e)),
        }
    }
    if args.purge {
        step("data", purge(&paths, cli.home.as_deref()));
    }
    // Last, once what was in them is gone: the folders install made, and its record of them.
    match made.tidy(true) {
        Ok(dirs) if dirs.is_empty() => {}
        Ok(dirs) => step(
            "folders",
            Ok(format!(
                "removed {} (openhumand-mcp had made them; they are empty now)",
                dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
            )),
        ),
        Err(e) => step("folders", Err(e)),
    }
    if !args.purge {
        let kept = data_places(&paths, cli.home.is_some())
            .iter()
            .filter(|p| p.exists())
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>();
        out(&if kept.is_empty() {
            "data: none to keep".to_string()
        } else {
            format!("data: kept {} (add --purge to delete them)", kept.join(", "))
        });
    }
    Ok(if failed { EXIT_FAILURE } else { EXIT_OK })
}

/// Asks a daemon still running (one a shim started) to stop, and waits a bounded time for its
/// socket to go quiet, so nothing writes while the data is purged.
fn stop_daemon(paths: &Paths) -> Result<String> {
    let Some(pid) = running_daemon(paths) else { return Ok("none running".into()) };
    let rt = crate::runtime(Some(1))?;
    rt.block_on(client::call(&paths.socket, "openhuman.daemon_shutdown"))?;
    if !via::wait_stopped(paths, Duration::from_secs(15))? {
        bail!("the daemon (pid {pid}) was asked to stop but still answers after 15 s");
    }
    Ok(format!("stopped the running daemon (pid {pid})"))
}

/// The folders (and, under a home, files) holding the user's memory, config and logs.
fn data_places(paths: &Paths, under_home: bool) -> Vec<PathBuf> {
    let mut places = vec![paths.data_dir.clone()];
    if under_home {
        places.push(paths.config_file.clone());
    } else {
        places.push(paths.config_dir.clone());
    }
    places.push(paths.log_dir.clone());
    places.dedup();
    places
}

/// Deletes the user's data. Under a home (`--home`, `OPENHUMAN_HOME`) only the entries the daemon
/// makes there go, then the home itself if nothing else is left in it; the platform folders are
/// the application's own and go whole.
fn purge(paths: &Paths, home: Option<&Path>) -> Result<String> {
    let mut gone = Vec::new();
    let mut remove = |p: &Path| -> Result<()> {
        let r = if p.is_dir() { std::fs::remove_dir_all(p) } else { std::fs::remove_file(p) };
        match r {
            Ok(()) => {
                gone.push(p.display().to_string());
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("cannot delete {}", p.display())),
        }
    };
    let Some(home) = home else {
        for p in [&paths.data_dir, &paths.config_dir, &paths.log_dir, &paths.run_dir] {
            remove(p)?;
        }
        // The logs sit in `<state>/openhuman/logs`: the `openhuman` folder goes when empty.
        if let Some(parent) = paths.log_dir.parent() {
            let _ = std::fs::remove_dir(parent);
        }
        return Ok(format!("deleted {}", gone.join(", ")));
    };
    let own = ["config.toml", crate::http_auth::TOKEN_FILE, "agents", "IDENTITY.md"];
    for p in [&paths.data_dir, &paths.run_dir, &paths.log_dir] {
        remove(p)?;
    }
    for name in own {
        remove(&paths.config_dir.join(name))?;
    }
    let left = match std::fs::remove_dir(&paths.config_dir) {
        Ok(()) => String::new(),
        Err(_) if !paths.config_dir.exists() => String::new(),
        Err(_) => format!("; kept {}: it holds other files", home.display()),
    };
    Ok(format!("deleted {}{left}", gone.join(", ")))
}
