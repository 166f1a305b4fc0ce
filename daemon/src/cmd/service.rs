//! `service install|uninstall`: renders the unit files in `packaging/` (compiled in) for a
//! daemon binary (this one, or the copy `install` made) and these paths, writes them to the
//! user's service directory and enables them with systemctl (Linux) or launchctl (macOS).
//! `--print` only shows what would be written. When the service manager cannot enable them (no
//! user session bus, say), the unit files this call wrote are taken out again and the folders it
//! made with them, so nothing is left that does not run. Uninstall asks the service manager
//! only when our unit files are there, and says whether it stopped anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use openhuman_common::Paths;

use super::made::Made;
use crate::cli::Activation;

const SYSTEMD_SERVICE: &str = include_str!("../../../packaging/systemd/openhuman-mcp.service");
const SYSTEMD_SOCKET: &str = include_str!("../../../packaging/systemd/openhuman-mcp.socket");
const LAUNCHD_PLIST: &str = include_str!("../../../packaging/launchd/ai.openhuman.mcp.plist");
const LAUNCHD_LABEL: &str = "ai.openhuman.mcp";

/// A file to write and its contents.
pub(crate) struct Unit {
    pub path: PathBuf,
    pub text: String,
}

/// `service install|uninstall`: the login service's units written (or printed) and loaded, or
/// taken out again.
pub(crate) fn command(cli: &crate::cli::Cli, action: &crate::cli::ServiceAction) -> Result<i32> {
    use crate::cli::ServiceAction;
    let paths = crate::resolve_paths(cli, None)?;
    let home = cli.home.as_deref();
    let exe = std::env::current_exe().context("cannot find this executable's path")?;
    match action {
        ServiceAction::Install(args) if args.print => {
            for u in render(&paths, &exe, home, args.activation)? {
                super::out(&format!("# {}\n{}", u.path.display(), u.text));
            }
        }
        ServiceAction::Install(args) => super::out(&install(&paths, &exe, home, args.activation)?),
        ServiceAction::Uninstall => super::out(&uninstall(&paths)?),
    }
    Ok(crate::EXIT_OK)
}

/// The daemon command line the service runs: `exe` plus `--home` when one is in use.
fn exec_args(exe: &Path, home: Option<&Path>) -> Vec<String> {
    let mut args = vec![exe.display().to_string()];
    if let Some(h) = home {
        args.push("--home".into());
        args.push(h.display().to_string());
    }
    args
}

fn user_home() -> Result<PathBuf> {
    directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()).context("cannot find your home directory")
}

/// Renders the units for this platform, running the daemon at `exe`.
pub(crate) fn render(paths: &Paths, exe: &Path, home: Option<&Path>, activation: Activation) -> Result<Vec<Unit>> {
    let args = exec_args(exe, home);
    if cfg!(target_os = "macos") {
        let mut program = args.iter().map(|a| format!("    <string>{}</string>", xml_escape(a))).collect::<Vec<_>>();
        program.push("    <string>serve</string>".into());
        let text = LAUNCHD_PLIST
            .replace("@PROGRAM_ARGUMENTS@", &program.join("\n"))
            .replace("@LOG@", &xml_escape(&paths.log_dir.join("launchd-stderr.log").display().to_string()));
        let path = unit_paths()?.swap_remove(0);
        return Ok(vec![Unit { path, text }]);
    }
    let exec = args.iter().map(|a| systemd_quote(a)).collect::<Vec<_>>().join(" ");
    let mut files = unit_paths()?.into_iter();
    let (service, socket) = (files.next().context("no unit path")?, files.next().context("no unit path")?);
    let mut units = vec![Unit { path: service, text: SYSTEMD_SERVICE.replace("@EXEC@", &exec) }];
    if activation == Activation::Socket {
        units
            .push(Unit { path: socket, text: SYSTEMD_SOCKET.replace("@SOCKET@", &paths.socket.display().to_string()) });
    }
    Ok(units)
}

/// Where this platform's unit files go: the launchd agent, or the systemd service and socket.
fn unit_paths() -> Result<Vec<PathBuf>> {
    if cfg!(target_os = "macos") {
        return Ok(vec![user_home()?.join("Library/LaunchAgents").join(format!("{LAUNCHD_LABEL}.plist"))]);
    }
    let dir = directories::BaseDirs::new()
        .map(|d| d.config_dir().join("systemd/user"))
        .context("cannot find your config directory")?;
    Ok(vec![dir.join("openhuman-mcp.service"), dir.join("openhuman-mcp.socket")])
}

/// The unit files of ours that are installed now.
pub(crate) fn installed() -> Result<Vec<PathBuf>> {
    Ok(unit_paths()?.into_iter().filter(|p| p.exists()).collect())
}

/// Writes the units and has the service manager enable them. Returns a sentence saying what
/// was done; on an error, the unit files that were not there before are gone again.
pub(crate) fn install(paths: &Paths, exe: &Path, home: Option<&Path>, activation: Activation) -> Result<String> {
    let units = render(paths, exe, home, activation)?;
    let mut made = Made::load(paths);
    let new: Vec<&Path> = units.iter().map(|u| u.path.as_path()).filter(|p| !p.exists()).collect();
    let written = units.iter().map(|u| u.path.display().to_string()).collect::<Vec<_>>().join(", ");
    let enabled = write_units(&mut made, &units).and_then(|()| enable(&units, activation));
    match enabled {
        Ok(done) => {
            made.save()?;
            Ok(format!("wrote {written}; {done}"))
        }
        Err(e) => {
            // Units that do not run are of no use: the new ones go, with the folders made for them.
            for p in &new {
                let _ = std::fs::remove_file(p);
            }
            let _ = made.tidy(false);
            let old: Vec<String> = units
                .iter()
                .filter(|u| !new.contains(&u.path.as_path()))
                .map(|u| u.path.display().to_string())
                .collect();
            Err(e.context(if old.is_empty() {
                "not installed, its unit files were taken out again".to_string()
            } else {
                format!("not enabled, {} stay as written", old.join(", "))
            }))
        }
    }
}

fn write_units(made: &mut Made, units: &[Unit]) -> Result<()> {
    for u in units {
        if let Some(parent) = u.path.parent() {
            made.create_dir_all(parent)?;
        }
        std::fs::write(&u.path, &u.text).with_context(|| format!("cannot write {}", u.path.display()))?;
    }
    Ok(())
}

/// Loads the written units into the service manager. Returns what it did.
fn enable(units: &[Unit], activation: Activation) -> Result<String> {
    if cfg!(target_os = "macos") {
        let domain = launchd_domain()?;
        // A second install replaces the loaded agent; bootstrap refuses one already loaded.
        let _ = run("launchctl", &["bootout", &format!("{domain}/{LAUNCHD_LABEL}")]);
        run("launchctl", &["bootstrap", &domain, &units[0].path.display().to_string()])?;
        return Ok(format!("loaded {LAUNCHD_LABEL} into launchd"));
    }
    run("systemctl", &["--user", "daemon-reload"])?;
    let unit = if activation == Activation::Socket { "openhuman-mcp.socket" } else { "openhuman-mcp.service" };
    run("systemctl", &["--user", "enable", "--now", unit])?;
    Ok(format!("enabled and started {unit}"))
}

/// launchd's domain for this user's agents, `gui/<uid>`.
fn launchd_domain() -> Result<String> {
    let uid = Command::new("id").arg("-u").output().context("cannot run `id -u`")?;
    Ok(format!("gui/{}", String::from_utf8_lossy(&uid.stdout).trim()))
}

/// Stops and disables the service and removes its files, and the folders `install` made for
/// them once empty. The service manager is asked only when unit files of ours are there, so a
/// user without them (or a test's temporary home) never has their service manager touched.
/// The sentence returned says whether anything was stopped.
pub(crate) fn uninstall(paths: &Paths) -> Result<String> {
    let units = installed()?;
    if units.is_empty() {
        return Ok("no openhuman-mcp service files were installed".into());
    }
    let stopped = if cfg!(target_os = "macos") {
        launchd_domain()
            .and_then(|domain| run("launchctl", &["bootout", &format!("{domain}/{LAUNCHD_LABEL}")]))
            .map(|()| format!("unloaded {LAUNCHD_LABEL} from launchd"))
    } else {
        run("systemctl", &["--user", "disable", "--now", "openhuman-mcp.socket", "openhuman-mcp.service"])
            .map(|()| "stopped and disabled openhuman-mcp.socket and openhuman-mcp.service".to_string())
    };
    for u in &units {
        std::fs::remove_file(u).with_context(|| format!("cannot remove {}", u.display()))?;
    }
    if !cfg!(target_os = "macos") && stopped.is_ok() {
        let _ = run("systemctl", &["--user", "daemon-reload"]);
    }
    let removed = units.iter().map(|u| u.display().to_string()).collect::<Vec<_>>().join(", ");
    let folders = Made::load(paths).tidy(false)?;
    let folders = if folders.is_empty() {
        String::new()
    } else {
        format!(" and {}", folders.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))
    };
    Ok(match stopped {
        Ok(done) => format!("{done}; removed {removed}{folders}"),
        Err(e) => format!("removed {removed}{folders}; nothing was stopped ({e:#})"),
    })
}

fn run(program: &str, args: &[&str]) -> Result<()> {
    let out =
        Command::new(program).args(args).output().with_context(|| format!("cannot run {program}; is it installed?"))?;
    if !out.status.success() {
        bail!("`{program} {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

fn systemd_quote(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:=@".contains(c)) {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"").replace('%', "%%"))
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_carry_the_socket_path_and_command() {
        let paths = Paths::under_home(Path::new("/srv/oh home"));
        let exe = Path::new("/opt/oh/openhumand-mcp");
        let units = render(&paths, exe, Some(Path::new("/srv/oh home")), Activation::Socket).unwrap();
        if cfg!(target_os = "macos") {
            assert!(units[0].text.contains("<string>serve</string>"));
            return;
        }
        assert_eq!(units.len(), 2);
        assert!(
            units[0].text.contains("ExecStart=/opt/oh/openhumand-mcp --home \"/srv/oh home\" serve"),
            "{}",
            units[0].text
        );
        assert!(units[1].text.contains("ListenStream=/srv/oh home/run/mcp.sock"));
        assert!(!units.iter().any(|u| u.text.contains('@')), "unfilled placeholder");
    }
}
