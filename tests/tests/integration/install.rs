//! `install` and `uninstall` with the real binaries, in a temporary HOME and OPENHUMAN_HOME:
//! binaries copied to a prefix and runnable, a client registered with the installed shim (which
//! then starts the installed daemon), a second run that changes nothing, the login service
//! written for the installed path with a stand-in `systemctl` on PATH (the real service
//! manager is never touched), uninstall keeping the data unless `--purge --yes`; and the release
//! script's tarball on stand-in binaries.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use openhuman_tests::{ChildPeer, Home};
use serde_json::{Value, json};

/// A temporary user: HOME for the client configs and the service directory.
struct User {
    dir: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        User { dir: tempfile::Builder::new().prefix("oh-user-").tempdir().expect("tempdir") }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn prefix(&self) -> PathBuf {
        self.path().join("bin")
    }
    /// `openhumand-mcp <args>` as this user, in `home`, with no terminal (stdin is null).
    fn run(&self, home: &Home, args: &[&str]) -> Output {
        self.run_with(home, args, &[])
    }
    fn run_with(&self, home: &Home, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
        let mut cmd = home.daemon_cmd();
        cmd.env("HOME", self.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("CODEX_HOME")
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run openhumand-mcp")
    }
    fn cursor_config(&self) -> PathBuf {
        self.path().join(".cursor/mcp.json")
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "exit {:?}\n{}\n{}", out.status, stdout(&out), String::from_utf8_lossy(&out.stderr));
    stdout(&out)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn version_of(exe: &Path) -> String {
    let out = Command::new(exe).arg("--version").output().expect("run --version");
    assert!(out.status.success(), "{} --version", exe.display());
    stdout(&out)
}

#[test]
fn install_registers_the_installed_shim_and_uninstall_keeps_the_data_unless_purged() {
    let home = Home::new();
    let user = User::new();
    std::fs::create_dir_all(user.cursor_config().parent().unwrap()).unwrap();
    std::fs::write(user.cursor_config(), r#"{"mcpServers": {"other": {"command": "x"}}}"#).unwrap();
    let prefix = user.prefix();
    let p = prefix.to_str().unwrap();

    let said = ok(user.run(&home, &["install", "--prefix", p, "--no-service", "--register", "cursor"]));
    let (daemon, shim) = (prefix.join("openhumand-mcp"), prefix.join("openhuman-mcp-shim"));
    assert!(said.contains(&format!("binary: installed {}", daemon.display())), "{said}");
    assert!(said.contains("service: skipped"), "{said}");
    assert!(version_of(&daemon).contains(env!("CARGO_PKG_VERSION")));
    assert!(version_of(&shim).contains(env!("CARGO_PKG_VERSION")));
    #[cfg(unix)]
    assert_eq!((mode_of(&daemon), mode_of(&shim)), (0o755, 0o755));
    let cursor = read_json(&user.cursor_config());
    assert_eq!(cursor["mcpServers"]["other"]["command"], "x", "the user's other server stays");
    let entry = &cursor["mcpServers"]["openhuman"];
    assert_eq!(entry["command"], shim.display().to_string(), "the client runs the installed shim: {cursor}");
    assert_eq!(entry["args"], json!(["--home", home.path().display().to_string()]));

    // What Cursor would run: the installed shim, which starts the installed daemon.
    let mut cmd = Command::new(entry["command"].as_str().unwrap());
    cmd.args(entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()));
    let mut client = ChildPeer::spawn(cmd);
    let init = client.peer.initialize("cursor");
    assert!(init["serverInfo"]["name"].is_string(), "{init}");
    let pid = home.daemon_pid().expect("the shim started a daemon");
    #[cfg(target_os = "linux")]
    assert_eq!(std::fs::read_link(format!("/proc/{pid}/exe")).unwrap(), daemon, "the daemon runs from the prefix");
    drop(client);

    // A second run changes nothing and says so.
    let again = ok(user.run(&home, &["install", "--prefix", p, "--no-service", "--register", "cursor"]));
    assert!(again.contains(&format!("{} already installed", daemon.display())), "{again}");
    assert!(again.contains(&format!("{} already installed", shim.display())), "{again}");
    assert!(again.contains("nothing to do"), "{again}");

    let gone = ok(user.run(&home, &["uninstall", "--prefix", p]));
    assert!(gone.contains(&format!("stopped the running daemon (pid {pid})")), "{gone}");
    assert!(!daemon.exists() && !shim.exists(), "{gone}");
    // Nothing else changed in the file: it is given back byte for byte, and its backup goes.
    let cursor = std::fs::read_to_string(user.cursor_config()).unwrap();
    assert_eq!(cursor, r#"{"mcpServers": {"other": {"command": "x"}}}"#, "{gone}");
    let backups = std::fs::read_dir(user.path().join(".cursor"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("mcp.json.bak-"))
        .count();
    assert_eq!(backups, 0, "{gone}");
    assert!(home.path().join("data").is_dir(), "memory stays: {gone}");
    assert!(gone.contains("data: kept"), "{gone}");

    // --purge asks; without a terminal it needs --yes, and changes nothing before that.
    let refused = user.run(&home, &["uninstall", "--prefix", p, "--purge"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--yes"));
    assert!(home.path().join("data").is_dir());
    let purged = ok(user.run(&home, &["uninstall", "--prefix", p, "--purge", "--yes"]));
    assert!(!home.path().join("data").exists() && !home.path().join("logs").exists(), "{purged}");
}

#[test]
#[cfg(target_os = "linux")]
fn install_writes_the_service_for_the_installed_daemon_and_asks_before_registering() {
    let home = Home::new();
    let user = User::new();
    std::fs::create_dir_all(user.cursor_config().parent().unwrap()).unwrap();
    // A stand-in systemctl first on PATH records what it is asked.
    let fake_bin = user.path().join("fake-bin");
    std::fs::create_dir_all(&fake_bin).unwrap();
    let calls = user.path().join("systemctl-calls");
    let script = fake_bin.join("systemctl");
    std::fs::write(&script, format!("#!/bin/sh\necho \"$*\" >> '{}'\n", calls.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(fake_bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let env = [("PATH", path.as_os_str())];
    let prefix = user.prefix();
    let p = prefix.to_str().unwrap();

    let said = ok(user.run_with(&home, &["install", "--prefix", p], &env));
    let units = user.path().join(".config/systemd/user");
    let service = std::fs::read_to_string(units.join("openhuman-mcp.service")).unwrap();
    let exec = format!("ExecStart={} --home {} serve", prefix.join("openhumand-mcp").display(), home.path().display());
    assert!(service.contains(&exec), "{service}");
    let socket = std::fs::read_to_string(units.join("openhuman-mcp.socket")).unwrap();
    assert!(socket.contains(&format!("ListenStream={}", home.socket().display())), "{socket}");
    let log = std::fs::read_to_string(&calls).unwrap();
    assert!(log.contains("--user enable --now openhuman-mcp.socket"), "{log}");
    // No terminal and no --register: the clients found are named, none is written.
    assert!(said.contains("found cursor") && said.contains("--register"), "{said}");
    assert!(!user.cursor_config().exists());

    let again = ok(user.run_with(&home, &["install", "--prefix", p], &env));
    assert!(again.contains("service: already installed"), "{again}");

    let gone = ok(user.run_with(&home, &["uninstall", "--prefix", p], &env));
    assert!(gone.contains("service: stopped and disabled openhuman-mcp.socket and openhuman-mcp.service"), "{gone}");
    assert!(!user.path().join(".config/systemd").exists(), "the folders install made go too: {gone}");
    let log = std::fs::read_to_string(&calls).unwrap();
    assert!(log.contains("--user disable --now openhuman-mcp.socket openhuman-mcp.service"), "{log}");

    // Installed where the service manager answered, uninstalled where it does not: the files
    // go, and the line says that nothing was stopped.
    ok(user.run_with(&home, &["install", "--prefix", p, "--register", "none"], &env));
    no_bus(&script);
    let gone = ok(user.run_with(&home, &["uninstall", "--prefix", p], &env));
    let line = gone.lines().find(|l| l.starts_with("service: ")).unwrap();
    assert!(line.contains("removed") && line.contains("nothing was stopped") && line.contains("bus"), "{gone}");
    assert!(!line.contains("stopped and") && !units.exists(), "{gone}");
}

/// Makes the stand-in `systemctl` at `script` fail as it does without a user session bus.
#[cfg(unix)]
fn no_bus(script: &Path) {
    std::fs::write(script, "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n").unwrap();
}

/// Every entry under `root` (folders, files with their bytes, links with their targets),
/// relative to it: what a diff of the home sees.
fn tree(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = e.path();
            let kind = e.file_type().unwrap();
            let what = if kind.is_symlink() {
                format!("link to {}", std::fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                todo.push(path.clone());
                "folder".to_string()
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned()
            };
            out.push((path.strip_prefix(root).unwrap().to_path_buf(), what));
        }
    }
    out.sort();
    out
}

/// Install (twice) then uninstall in a home with clients found, one config of the user's own
/// and no service manager to reach: the home is as it was, to the byte, and every line said
/// what was really done.
#[test]
#[cfg(target_os = "linux")]
fn uninstall_leaves_the_home_as_it_was_before_install() {
    let home = Home::new();
    let user = User::new();
    for dir in [".cursor", ".gemini", ".config/Code/User", ".continue"] {
        std::fs::create_dir_all(user.path().join(dir)).unwrap();
    }
    std::fs::write(user.cursor_config(), "{\"mcpServers\": {\"other\": {\"command\": \"x\"}}}\n").unwrap();
    std::fs::write(user.path().join(".continue/config.yaml"), "name: mine\n").unwrap();
    let fake_bin = tempfile::tempdir().unwrap();
    let script = fake_bin.path().join("systemctl");
    no_bus(&script);
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(fake_bin.path().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let env = [("PATH", path.as_os_str())];
    let (user_before, home_before) = (tree(user.path()), tree(home.path()));

    let said = ok(user.run_with(&home, &["install", "--register", "all"], &env));
    let service = said.lines().find(|l| l.starts_with("service: ")).unwrap();
    assert!(
        service.contains("not installed, its unit files were taken out again") && service.contains("bus"),
        "{said}"
    );
    assert!(!user.path().join(".config/systemd").exists(), "{said}");
    assert!(said.contains("client gemini: created") && said.contains("client cursor: added"), "{said}");
    let again = ok(user.run_with(&home, &["install", "--register", "all"], &env));
    assert!(again.contains("nothing to do"), "{again}");
    let backups: Vec<_> =
        tree(user.path()).into_iter().filter(|(p, _)| p.to_string_lossy().contains(".bak-")).collect();
    assert_eq!(backups.len(), 1, "one backup, of the one file the user had: {backups:?}");

    let gone = ok(user.run_with(&home, &["uninstall"], &env));
    assert!(gone.contains("service: no openhuman-mcp service files were installed"), "{gone}");
    assert!(gone.contains("which is again exactly as it was"), "{gone}");
    assert!(gone.contains("folders: removed") && gone.contains(".local/bin"), "{gone}");
    assert_eq!(tree(user.path()), user_before, "{gone}");
    assert_eq!(tree(home.path()), home_before, "{gone}");
}

/// `openhumand-mcp <args>` as `user` with a terminal on stdin, `typed` at its prompts.
#[cfg(unix)]
fn run_typing(user: &User, home: &Home, args: &[&str], typed: &str) -> (Option<i32>, String, String) {
    use std::io::Write;
    use std::process::Stdio;
    let (mut keyboard, terminal) = openhuman_tests::pty();
    let mut child = home
        .daemon_cmd()
        .env("HOME", user.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .args(args)
        .stdin(Stdio::from(terminal))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    keyboard.write_all(typed.as_bytes()).unwrap();
    let status = openhuman_tests::wait_exit(&mut child, openhuman_tests::WAIT);
    let out = child.wait_with_output().unwrap();
    drop(keyboard);
    (status.code(), stdout(&out), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
#[cfg(unix)]
fn on_a_terminal_install_asks_per_client_found_and_purge_asks_first() {
    let home = Home::new();
    let user = User::new();
    let gemini = user.path().join(".gemini/settings.json");
    std::fs::create_dir_all(user.cursor_config().parent().unwrap()).unwrap();
    std::fs::create_dir_all(gemini.parent().unwrap()).unwrap();
    let p = user.prefix();
    let p = p.to_str().unwrap();
    // Asked in the clients' order: Cursor, then Gemini.
    let (code, said, asked) = run_typing(&user, &home, &["install", "--prefix", p, "--no-service"], "y\nn\n");
    assert_eq!(code, Some(0), "{said}{asked}");
    assert!(asked.contains("Register openhuman with cursor?") && asked.contains("with gemini?"), "{asked}");
    assert!(said.contains("client cursor: created"), "{said}");
    assert!(read_json(&user.cursor_config())["mcpServers"]["openhuman"].is_object());
    assert!(!gemini.exists(), "answered no: {said}");

    std::fs::create_dir_all(home.path().join("data")).unwrap();
    let (code, said, asked) = run_typing(&user, &home, &["uninstall", "--prefix", p, "--purge"], "n\n");
    assert_eq!(code, Some(1));
    assert!(asked.contains("Delete your memory") && said.contains("nothing was changed"), "{said}{asked}");
    assert!(user.prefix().join("openhumand-mcp").exists() && home.path().join("data").is_dir());
}

#[test]
fn uninstall_cuts_our_table_from_codex_toml_and_removes_continues_own_file() {
    let home = Home::new();
    let user = User::new();
    let codex = user.path().join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    let before = "# my settings\nmodel = \"o4\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
    std::fs::write(&codex, before).unwrap();
    for client in ["codex", "continue", "cursor"] {
        ok(user.run(&home, &["register", client]));
    }
    let continue_file = user.path().join(".continue/mcpServers/openhuman.json");
    assert!(continue_file.exists());

    let said = ok(user.run(&home, &["uninstall", "--prefix", user.prefix().to_str().unwrap()]));
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), before, "only our table goes: {said}");
    assert!(!continue_file.exists(), "{said}");
    for client in ["codex", "continue", "cursor"] {
        assert!(said.contains(&format!("client {client}: removed")), "{said}");
    }
    // Nothing of ours is left: a second uninstall finds nothing to take out.
    let again = ok(user.run(&home, &["uninstall", "--prefix", user.prefix().to_str().unwrap()]));
    assert!(!again.contains("client "), "{again}");
    // A client name that does not exist is a usage error.
    assert_eq!(user.run(&home, &["install", "--register", "cursor,nosuch"]).status.code(), Some(2));
}

#[test]
#[cfg(unix)]
fn release_script_packs_both_binaries_docs_packaging_and_an_install_script() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let work = tempfile::tempdir().unwrap();
    // Stand-ins for the binaries: the script's packing is under test, not a 500 MB debug build.
    let bins = work.path().join("bins");
    std::fs::create_dir_all(&bins).unwrap();
    for name in ["openhumand-mcp", "openhuman-mcp-shim"] {
        let f = bins.join(name);
        std::fs::write(&f, format!("#!/bin/sh\necho \"{name} $*\"\n")).unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let out_dir = work.path().join("dist");
    let out = Command::new("sh")
        .arg(root.join("packaging/release.sh"))
        .args(["--profile", "debug", "--bin-dir"])
        .arg(&bins)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let host = String::from_utf8(Command::new("rustc").arg("-vV").output().unwrap().stdout).unwrap();
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).unwrap().to_string();
    let name = format!("openhuman-mcp-{}-{host}", env!("CARGO_PKG_VERSION"));
    let tarball = out_dir.join(format!("{name}.tar.gz"));
    let listing = Command::new("tar").arg("-tzf").arg(&tarball).output().unwrap();
    let listing = stdout(&listing);
    for file in [
        "openhumand-mcp",
        "openhuman-mcp-shim",
        "install.sh",
        "README.md",
        "LICENSE",
        "packaging/systemd/openhuman-mcp.service",
        "packaging/systemd/openhuman-mcp.socket",
        "packaging/launchd/ai.openhuman.mcp.plist",
        "packaging/homebrew/openhuman-mcp.rb.in",
    ] {
        assert!(listing.lines().any(|l| l == format!("{name}/{file}")), "{file} missing from\n{listing}");
    }
    let sum = std::fs::read_to_string(out_dir.join(format!("{name}.tar.gz.sha256"))).unwrap();
    let sha = sum.split_whitespace().next().unwrap();
    assert_eq!(sha.len(), 64, "{sum}");
    let formula = std::fs::read_to_string(out_dir.join("openhuman-mcp.rb")).unwrap();
    assert!(formula.contains(&format!("sha256 \"{sha}\"")), "{formula}");
    assert!(formula.contains(&format!("version \"{}\"", env!("CARGO_PKG_VERSION"))), "{formula}");
    assert!(!formula.contains('@'), "a placeholder is left: {formula}");

    // The unpacked install.sh runs the daemon beside it with `install` and the user's arguments.
    let unpacked = work.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let x = Command::new("tar").arg("-xzf").arg(&tarball).arg("-C").arg(&unpacked).status().unwrap();
    assert!(x.success());
    let ran = Command::new(unpacked.join(&name).join("install.sh")).args(["--prefix", "/x y"]).output().unwrap();
    assert_eq!(stdout(&ran).trim(), "openhumand-mcp install --prefix /x y");
}
