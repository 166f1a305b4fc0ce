//! HTTP as an OAuth 2.1 resource server, end to end: a real authorization server
//! (oauth2-mock-server, `tests/oauth/as.mjs`) on loopback, the daemon configured with its issuer
//! (`[mcp.http.oauth]`, the resource URI defaulting to the bound endpoint) and a static token
//! beside it, and the official Python SDK's OAuth client driving a browser-less flow plus the
//! forged-token, scope, key and session checks of `tests/oauth/flow.py`. Then, from outside:
//! no access token (nor the static token) appears in the daemon's logs, and the write a read-only
//! token attempted is in the audit log as a refusal naming the scope.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use openhuman_tests::fixtures::{OAUTH, also, path, skipped};
use openhuman_tests::{Daemon, Home};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root")
}

/// The authorization server, stopped when dropped.
struct AuthServer {
    child: Child,
    issuer: String,
}

impl AuthServer {
    fn start(node: &Path, modules: &str) -> AuthServer {
        let mut child = Command::new(node)
            .arg(root().join("tests/oauth/as.mjs"))
            .arg(modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", node.display()));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("read ISSUER");
        let issuer = line.trim().strip_prefix("ISSUER=").unwrap_or_else(|| panic!("as.mjs said {line:?}")).to_string();
        AuthServer { child, issuer }
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        // Closing its stdin ends it; kill in case it does not.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prerequisites() -> Option<(PathBuf, String, PathBuf)> {
    if skipped(OAUTH) {
        eprintln!("skipped on request (OPENHUMAN_TEST_SKIP): the OAuth flow test");
        return None;
    }
    let node = path(OAUTH).unwrap_or_else(|e| panic!("the OAuth test needs its authorization server: {e}"));
    let modules = also(OAUTH, "OPENHUMAN_TEST_OAUTH_MODULES").expect("ensure-oauth.sh names the node_modules");
    let python = also(OAUTH, "OPENHUMAN_TEST_OAUTH_PYTHON").expect("ensure-oauth.sh names the Python");
    Some((node, modules, PathBuf::from(python)))
}

#[test]
fn an_official_oauth_client_gets_in_and_forged_tokens_do_not() {
    let Some((node, modules, python)) = prerequisites() else { return };
    let auth = AuthServer::start(&node, &modules);
    let home = Home::new();
    home.write_config(&format!("[mcp.http.oauth]\nissuer = \"{}\"\n", auth.issuer));
    let static_token = format!("static-{}", std::process::id()) + &"5a".repeat(16);
    let d = Daemon::builder(&home).http().env("OPENHUMAN_MCP_AUTH_TOKEN", &static_token).start();
    let url = format!("http://127.0.0.1:{}/mcp", d.http_addr().port());
    let tokens = home.path().join("tokens-used.txt");

    let out = Command::new(&python)
        .arg(root().join("tests/oauth/flow.py"))
        .args(["--url", &url, "--issuer", &auth.issuer, "--static-token", &static_token, "--tokens-out"])
        .arg(&tokens)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains(" passed, 0 failed"), "tests/oauth/flow.py failed:\n{stdout}");
    assert!(!stdout.contains("not ok"), "{stdout}");

    d.stop().expect("the daemon stops");
    let log = home.log();
    assert!(log.contains("HTTP request refused: access token not accepted"), "the refusals are logged");
    let used = std::fs::read_to_string(&tokens).expect("the tokens the flow used");
    let used: Vec<&str> = used.lines().filter(|t| t.len() > 20).collect();
    assert!(used.len() > 10, "the flow used {} tokens", used.len());
    for token in used {
        // The whole token, and its signature alone (a log that cut the token would still show it).
        let signature = token.rsplit('.').next().filter(|s| s.len() > 20);
        assert!(!log.contains(token), "an access token is in the daemon's log");
        assert!(signature.is_none_or(|s| !log.contains(s)), "an access token's signature is in the daemon's log");
    }
    assert!(!log.contains(&static_token), "the static token is in the daemon's log");

    let audit = home.daemon_cmd().args(["audit", "--failed", "--json", "--tool", "memory.store"]).output().unwrap();
    let rows = String::from_utf8_lossy(&audit.stdout);
    assert!(audit.status.success(), "audit: {}", String::from_utf8_lossy(&audit.stderr));
    assert!(
        rows.lines().any(|r| r.contains("needs the OAuth scope `openhuman:act`")),
        "the write refused for its scope is audited:\n{rows}"
    );
}
