//! Command-line behaviour: exit codes, `config path|show|check`, reload keeping a good config.

use openhuman_tests::{Daemon, Home, Peer, rpc_error};
use serde_json::json;

#[test]
fn exit_codes_follow_the_contract() {
    let home = Home::new();
    let out = home.daemon_cmd().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("serve"));
    let out = home.daemon_cmd().arg("no-such-command").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = home.daemon_cmd().args(["serve", "--port", "notaport"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    for sub in [
        "serve", "stdio", "status", "stop", "config", "service", "search", "recall", "show", "forget", "export",
        "import", "backup", "restore",
    ] {
        let out = home.daemon_cmd().args([sub, "--help"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{sub} --help");
    }
}

#[test]
fn config_commands() {
    let home = Home::new();
    let out = home.daemon_cmd().args(["config", "path"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), home.path().join("config.toml").display().to_string());
    let out = home.daemon_cmd().args(["config", "check"]).output().unwrap();
    assert!(out.status.success(), "defaults are valid");
    home.write_config("[autonomy]\nlevel = \"readonly\"\n[mcp.http]\nprot = 9\n");
    let out = home.daemon_cmd().args(["config", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("prot") && err.contains("config.toml"), "{err}");
    home.write_config("[autonomy]\nlevel = \"readonly\"\n");
    let out = home.daemon_cmd().args(["config", "show"]).env("OPENHUMAN_SEARXNG_MAX_RESULTS", "7").output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("level = \"readonly\""), "{shown}");
    assert!(shown.contains("max_results = 7") && shown.contains("OPENHUMAN_SEARXNG_MAX_RESULTS"), "{shown}");
    // A bad config stops the daemon from starting, with the key named.
    home.write_config("[searxng]\nmax_results = 99\n");
    let out = home.daemon_cmd().arg("serve").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("searxng.max_results"));
}

#[test]
fn failed_reload_keeps_the_old_config() {
    let home = Home::new();
    let d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    home.write_config("[autonomy]\nlevel = 5\n");
    let r = p.request("openhuman.config_reload", json!({}));
    let (_, msg) = rpc_error(&r);
    assert!(msg.contains("autonomy.level") && msg.contains("previous one stays"), "{msg}");
    // SIGHUP takes the same path and the daemon keeps serving.
    openhuman_tests::kill(d.pid(), libc::SIGHUP);
    p.initialize("after-reload");
    assert!(p.call("tools/list", json!({}))["tools"].is_array());
    home.write_config("[autonomy]\nlevel = \"full\"\n");
    assert_eq!(p.call("openhuman.config_reload", json!({}))["reloaded"], true);
}

#[test]
fn control_methods_are_not_on_stdio() {
    let home = Home::new();
    let mut cmd = home.daemon_cmd();
    cmd.arg("stdio");
    let mut c = openhuman_tests::ChildPeer::spawn(cmd);
    let r = c.peer.request("openhuman.daemon_shutdown", json!({}));
    assert_eq!(rpc_error(&r).0, -32601, "{r}");
}

#[test]
fn register_merges_into_client_configs_and_keeps_a_backup() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let cursor = user.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, r#"{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}"#).unwrap();
    let run = |args: &[&str]| {
        home.daemon_cmd().env("HOME", user.path()).env_remove("XDG_CONFIG_HOME").args(args).output().unwrap()
    };
    let out = run(&["register", "cursor"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark", "other settings kept");
    assert_eq!(v["mcpServers"]["other"]["command"], "x", "other servers kept");
    let cmd = v["mcpServers"]["openhuman"]["command"].as_str().unwrap();
    assert!(cmd.ends_with("openhuman-mcp-shim"), "{cmd}");
    assert_eq!(v["mcpServers"]["openhuman"]["args"], json!(["--home", home.path().display().to_string()]));
    let backups: Vec<_> = std::fs::read_dir(cursor.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".bak-"))
        .collect();
    assert_eq!(backups.len(), 1, "one backup of the previous file");
    // Idempotent: a second run changes nothing.
    let out = run(&["register", "cursor"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to do"));
    // A new file for a client that has none yet; Zed's JSON-with-comments is left alone.
    assert!(run(&["register", "claude-desktop"]).status.success());
    assert!(user.path().join(".config/Claude/claude_desktop_config.json").exists());
    let zed = user.path().join(".config/zed/settings.json");
    std::fs::create_dir_all(zed.parent().unwrap()).unwrap();
    std::fs::write(&zed, "// my settings\n{\"vim_mode\": true}\n").unwrap();
    let out = run(&["register", "zed"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("context_servers"));
    assert_eq!(std::fs::read_to_string(&zed).unwrap(), "// my settings\n{\"vim_mode\": true}\n");
    let out = run(&["register", "claude-code", "--print"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"type\": \"stdio\""));
}

/// Runs `register <args>` with `user` as HOME (no XDG or Codex override), for the clients added
/// after the first five.
fn register_in(home: &Home, user: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = home
        .daemon_cmd()
        .env("HOME", user)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .arg("register")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "register {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn backups_of(path: &std::path::Path) -> usize {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{name}.bak-")))
        .count()
}

#[cfg(unix)]
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
#[cfg(unix)]
fn register_vscode_and_copilot_share_mcp_json_under_servers() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let file = user.path().join(".config/Code/User/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, r#"{"servers": {"other": {"type": "stdio", "command": "x"}}, "inputs": []}"#).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    register_in(&home, user.path(), &["vscode"]);
    let v = read_json(&file);
    assert_eq!(v["servers"]["other"]["command"], "x", "other servers kept");
    assert_eq!(v["inputs"], json!([]), "other settings kept");
    assert_eq!(v["servers"]["openhuman"]["type"], "stdio");
    assert!(v["servers"]["openhuman"]["command"].as_str().unwrap().ends_with("openhuman-mcp-shim"));
    assert_eq!(v["servers"]["openhuman"]["args"], json!(["--home", home.path().display().to_string()]));
    assert_eq!(mode_of(&file), 0o640, "the file keeps its mode");
    assert_eq!(backups_of(&file), 1);
    // Copilot in VS Code reads the same file, so it is already registered.
    let out = register_in(&home, user.path(), &["copilot"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to do"));
}

#[test]
#[cfg(unix)]
fn register_codex_merges_toml_keeping_comments_mode_and_symlink() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    // The config is a link into a dotfiles folder: the link stays, its target is updated.
    let dotfiles = user.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("codex.toml");
    let old = "# my codex settings\nmodel = \"o4\"\n\n[mcp_servers.other]\ncommand = \"x\"\n\n\
               [mcp_servers.openhuman]\ncommand = \"/old/shim\"\n\n[mcp_servers.openhuman.env]\nA = \"1\"\n\n\
               [profiles.fast]\nmodel = \"o4-mini\"\n";
    std::fs::write(&real, old).unwrap();
    std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let link = user.path().join(".codex/config.toml");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = register_in(&home, user.path(), &["codex"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("updated"), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is followed, not replaced");
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(text.starts_with("# my codex settings\n"), "comments kept: {text}");
    assert_eq!(text.matches("[mcp_servers.openhuman]").count(), 1, "{text}");
    assert!(!text.contains("/old/shim") && !text.contains("[mcp_servers.openhuman.env]"), "{text}");
    let doc: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(doc["model"].as_str(), Some("o4"));
    assert_eq!(doc["profiles"]["fast"]["model"].as_str(), Some("o4-mini"));
    assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("x"));
    let entry = &doc["mcp_servers"]["openhuman"];
    assert!(entry["command"].as_str().unwrap().ends_with("openhuman-mcp-shim"));
    let args: Vec<&str> = entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args, ["--home", &home.path().display().to_string()]);
    assert_eq!(mode_of(&real), 0o600, "the target keeps its mode");
    assert_eq!(backups_of(&link), 1, "one backup beside the link");
    let out = register_in(&home, user.path(), &["codex"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to do"));
    let out = register_in(&home, user.path(), &["codex", "--print"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("[mcp_servers.openhuman]"));
}

#[test]
fn register_gemini_merges_into_its_settings() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let file = user.path().join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, r#"{"theme": "Dracula", "mcpServers": {"git": {"command": "uvx"}}}"#).unwrap();
    register_in(&home, user.path(), &["gemini"]);
    let v = read_json(&file);
    assert_eq!(v["theme"], "Dracula");
    assert_eq!(v["mcpServers"]["git"]["command"], "uvx");
    assert!(v["mcpServers"]["openhuman"]["command"].as_str().unwrap().ends_with("openhuman-mcp-shim"));
    assert_eq!(backups_of(&file), 1);
}

#[test]
fn register_cline_writes_its_settings_in_vscode_global_storage() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    register_in(&home, user.path(), &["cline"]);
    let file =
        user.path().join(".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json");
    let v = read_json(&file);
    assert!(v["mcpServers"]["openhuman"]["command"].as_str().unwrap().ends_with("openhuman-mcp-shim"));
    assert_eq!(backups_of(&file), 0, "nothing to back up for a first file");
}

#[test]
fn register_continue_adds_its_own_file_and_leaves_config_yaml_alone() {
    let home = Home::new();
    let user = tempfile::tempdir().unwrap();
    let yaml = user.path().join(".continue/config.yaml");
    std::fs::create_dir_all(yaml.parent().unwrap()).unwrap();
    std::fs::write(&yaml, "name: mine\nmcpServers:\n  - name: other\n    command: x\n").unwrap();
    register_in(&home, user.path(), &["continue"]);
    let v = read_json(&user.path().join(".continue/mcpServers/openhuman.json"));
    assert!(v["mcpServers"]["openhuman"]["command"].as_str().unwrap().ends_with("openhuman-mcp-shim"));
    assert_eq!(std::fs::read_to_string(&yaml).unwrap(), "name: mine\nmcpServers:\n  - name: other\n    command: x\n");
}

#[test]
fn the_log_file_is_written_and_errors_are_said_once() {
    let home = Home::new();
    Daemon::start(&home).stop().unwrap();
    let log = std::fs::read_to_string(home.path().join("logs/openhumand-mcp.log")).expect("the daemon's log file");
    assert!(log.contains("daemon ready") && log.contains("daemon stopped"), "{log}");
    // No daemon to stop: one error, said once.
    let out = home.daemon_cmd().arg("stop").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{err}");
}

/// `config check` fails for what `serve` refuses or would run half-working, and for what the
/// README calls invalid; a risky but working choice is a warning.
#[test]
fn config_check_fails_what_serve_refuses_or_runs_degraded() {
    let home = Home::new();
    for (config, want) in [
        ("[mcp.http]\nenabled = true\nhost = \"0.0.0.0\"\n", "without a token"),
        ("[memory.embeddings]\nprovider = \"ollama\"\n", "[memory.embeddings].model"),
        ("[llm]\nprovider = \"anthropic\"\nmodel = \"claude-x\"\n", "api_key_env"),
    ] {
        home.write_config(config);
        let out = home.daemon_cmd().args(["config", "check"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{config}: {text}");
        assert!(text.contains("error:") && text.contains(want), "{config}: {text}");
    }
    home.write_config("[mcp.http]\nenabled = true\nallow_no_token = true\n");
    let out = home.daemon_cmd().args(["config", "check"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("warning:"), "{text}");
}

/// One config error as the terminal shows it: what `openhumand-mcp <args>` wrote to stderr,
/// after checking it failed with exit 1.
fn failing(home: &Home, args: &[&str]) -> String {
    let out = home.daemon_cmd().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    err
}

/// Config errors are one line each, said once, naming the key and `config.toml` (never a
/// temporary file an edit waits in), with a number's range said in words.
#[test]
fn config_errors_are_one_line_name_config_toml_and_say_ranges_in_words() {
    let home = Home::new();
    let file = home.path().join("config.toml").display().to_string();
    let notes = tempfile::tempdir().unwrap();
    let notes = notes.path().to_str().unwrap();

    home.write_config("[mcp.http\nport = 1\n");
    for args in [&["config", "check"][..], &["sources", "add", notes], &["serve"]] {
        let err = failing(&home, args);
        // `serve` may warn first (it tightens the home's modes); the error is one line, once.
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("TOML")).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert_eq!(err.matches("unclosed table").count(), 1, "said once: {err}");
        assert!(lines[0].contains(&file) && lines[0].contains("line 1, column 10: unclosed table"), "{err}");
    }

    home.write_config("[mcp.http]\nport = 99999\n");
    for args in [&["config", "check"][..], &["sources", "add", notes]] {
        let err = failing(&home, args);
        assert!(err.contains("`mcp.http.port`") && err.contains("a port number, 0–65535 (got 99999)"), "{err}");
        assert!(err.contains(&file) && !err.contains(".config.toml.") && !err.contains("u16"), "{err}");
    }
    let out = home.daemon_cmd().args(["config", "check"]).env("OPENHUMAN_MCP_HTTP_PORT", "70000").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("OPENHUMAN_MCP_HTTP_PORT") && err.contains("a port number, 0–65535 (got 70000)"), "{err}");

    // A value only the semantic checks refuse is named in the file too, not in the edit's copy.
    home.write_config("[searxng]\nmax_results = 80\n");
    let err = failing(&home, &["sources", "add", notes]);
    assert!(err.contains(&file) && err.contains("searxng.max_results") && !err.contains(".config.toml."), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(std::fs::read_to_string(home.path().join("config.toml")).unwrap(), "[searxng]\nmax_results = 80\n");
}

/// A reload that failed leaves the daemon on its previous config, and `status` says so with the
/// reason (exit 1) until a reload works again.
#[test]
fn status_after_a_failed_reload_exits_non_zero_with_the_reason() {
    let home = Home::new();
    let _d = Daemon::start(&home);
    let status = || home.daemon_cmd().arg("status").output().unwrap();
    assert!(status().status.success());
    let mut p = Peer::socket(&home.socket());
    home.write_config("[mcp.http]\nport = 99999\n");
    assert!(rpc_error(&p.request("openhuman.config_reload", json!({}))).1.contains("mcp.http.port"));
    let out = status();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let problem =
        said.lines().find(|l| l.starts_with("problem: ")).unwrap_or_else(|| panic!("no problem line: {said}"));
    assert!(problem.contains("not reloaded") && problem.contains("previous one stays in force"), "{problem}");
    assert!(problem.contains("`mcp.http.port`") && problem.contains("config.toml"), "{problem}");
    let json: serde_json::Value =
        serde_json::from_slice(&home.daemon_cmd().args(["status", "--json"]).output().unwrap().stdout).unwrap();
    assert_eq!(json["ready"], false, "{json}");

    home.write_config("[mcp.http]\nport = 9301\n");
    assert_eq!(p.call("openhuman.config_reload", json!({}))["reloaded"], true);
    let out = status();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}
