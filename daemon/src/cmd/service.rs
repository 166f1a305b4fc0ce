//! `service install|uninstall`: renders the unit files in `packaging/` (compiled in) for a
//! daemon binary (this one, or the copy `install` made) and these paths, writes them to the
//! user's service directory and enables them with systemctl (Linux) or launchctl (macOS).
//! `--print` only shows what would be written. Uninstall asks the service manager only when our
//! unit files are there.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use openhuman_common::Paths;

use crate::cli::Activation;

const SYSTEMD_SERVICE: &str = include_str!("../../../packaging/systemd/openhuman-mcp.service");
const SYSTEMD_SOCKET: &str = include_str!("../../../packaging/systemd/openhuman-mcp.socket");
const LAUNCHD_PLIST: &str = include_str!("../../../packaging/launchd/ai.openhuman.mcp.plist");
const LAUNCHD_LABEL: &str = "ai.openhuman.mcp";

/// A file to write and its contents.
pub struct Unit {
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
        ServiceAction::Uninstall => super::out(&uninstall()?),
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
pub fn render(paths: &Paths, exe: &Path, home: Option<&Path>, activation: Activation) -> Result<Vec<Unit>> {
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
pub fn installed() -> Result<Vec<PathBuf>> {
    Ok(unit_paths()?.into_iter().filter(|p| p.exists()).collect())
}

pub fn install(paths: &Paths, exe: &Path, home: Option<&Path>, activation: Activation) -> Result<String> {
    let units = render(paths, exe, home, activation)?;
    for u in &units {
        if let Some(parent) = u.path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&u.path, &u.text).with_context(|| format!("cannot write {}", u.path.display()))?;
    }
    let written = units.iter().map(|u| u.path.display().to_string()).collect::<Vec<_>>().join(", ");
    if cfg!(target_os = "macos") {
        let uid = Command::new("id").arg("-u").output().context("cannot run `id -u`")?;
        let domain = format!("gui/{}", String::from_utf8_lossy(&uid.stdout).trim());
        // A second install replaces the loaded agent; bootstrap refuses one already loaded.
        let _ = run("launchctl", &["bootout", &format!("{domain}/{LAUNCHD_LABEL}")]);
        run("launchctl", &["bootstrap", &domain, &units[0].path.display().to_string()])?;
        return Ok(format!("wrote {written}; loaded {LAUNCHD_LABEL} into launchd"));
    }
    run("systemctl", &["--user", "daemon-reload"])?;
    let unit = if activation == Activation::Socket { "openhuman-mcp.socket" } else { "openhuman-mcp.service" };
    run("systemctl", &["--user", "enable", "--now", unit])?;
    Ok(format!("wrote {written}; enabled and started {unit}"))
}

/// Stops and disables the service and removes its files. The service manager is asked only
/// when unit files of ours are there, so a user without them (or a test's temporary home) never
/// has their service manager touched.
pub fn uninstall() -> Result<String> {
    let units = installed()?;
    if units.is_empty() {
        return Ok("no openhuman-mcp service files were installed".into());
    }
    if cfg!(target_os = "macos") {
        let uid = Command::new("id").arg("-u").output().context("cannot run `id -u`")?;
        let target = format!("gui/{}/{LAUNCHD_LABEL}", String::from_utf8_lossy(&uid.stdout).trim());
        let _ = run("launchctl", &["bootout", &target]);
    } else {
        let _ = run("systemctl", &["--user", "disable", "--now", "openhuman-mcp.socket", "openhuman-mcp.service"]);
    }
    for u in &units {
        std::fs::remove_file(u).with_context(|| format!("cannot remove {}", u.display()))?;
    }
    if !cfg!(target_os = "macos") {
        let _ = run("systemctl", &["--user", "daemon-reload"]);
    }
    let removed = units.iter().map(|u| u.display().to_string()).collect::<Vec<_>>();
    Ok(format!("stopped the service and removed {}", removed.join(", ")))
}

fn run(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {program}; is it installed? (the unit files were written)"))?;
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
