//! The dashboard. Over raw HTTP (no browser): `ui` turning HTTP on in a running daemon, the login link and cookie,
//! the same-origin API, policy and audit, and the open dashboard of a token-less HTTP port. In a
//! real browser: the daemon serves HTTP, a notes folder is ingested, a note
//! holding markup is stored on a chunk, and `tests/browser/dashboard.js` drives headless Chromium
//! through playwright-core: log in with the one-time link from `ui --no-open`, see the overview's
//! counts, search, open a hit in context, check the note renders as text, check a cross-site
//! form post is refused, forget the hit and see it gone, click a bar of a timeline that spans 25
//! years, and visit every page at 1280 and 420 px wide (screenshots of both under
//! `target/browser/dashboard/`). Then: the deletion is in the audit log under `mcp:dashboard`,
//! and the status page said what `status` says in the terminal.
//!
//! The browser comes from `tests/fixtures/ensure-chromium.sh` (it prints `OPENHUMAN_TEST_CHROMIUM`
//! and runs `npm ci` in `tests/browser/`): the variable when set, else the test runs the script
//! itself. A browser that cannot be had fails the test, unless skipped on request
//! (`OPENHUMAN_TEST_SKIP=chromium`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use openhuman_tests::{Daemon, Home, Peer};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The browser, with the driver's packages installed: what `tests/fixtures/ensure-chromium.sh`
/// finds or installs. None only when the user skipped it (`OPENHUMAN_TEST_SKIP=chromium`).
fn browser() -> Option<PathBuf> {
    use openhuman_tests::fixtures::{CHROMIUM, path, skipped};
    if skipped(CHROMIUM) {
        eprintln!("skipped on request (OPENHUMAN_TEST_SKIP): the dashboard's browser test");
        return None;
    }
    let chromium = path(CHROMIUM).unwrap_or_else(|e| panic!("the dashboard's browser test needs Chromium: {e}"));
    let driver = root().join("tests/browser/node_modules/playwright-core");
    assert!(driver.is_dir(), "{} is missing: run tests/fixtures/ensure-chromium.sh", driver.display());
    Some(chromium)
}

/// A section of about 350 words on one subject, so each section is a chunk of its own.
fn section(title: &str, sentence: &str) -> String {
    format!("## {title}\n\n{}\n\n", [sentence; 30].join(" "))
}

fn write_notes(dir: &Path) {
    let diary = [
        section("March", "Dug over the beds and spread compost across the whole allotment plot."),
        section("April", "Planted tomatoes, basil and peppers in the raised beds with Alice Smith."),
        section("May", "The first courgettes flowered and netting went over the strawberry rows."),
    ]
    .concat();
    std::fs::write(dir.join("allotment.md"), format!("# Allotment diary\n\n{diary}")).unwrap();
    let car = dir.join("car.md");
    std::fs::write(&car, "# Car\n\nAlice Smith says the mechanic wants to look at the brakes and the tyres.\n")
        .unwrap();
    // A file's time is its chunks' time: the timeline then has two days.
    let weeks_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(20 * 86_400);
    std::fs::File::options().write(true).open(&car).unwrap().set_modified(weeks_ago).unwrap();
}

/// The status lines with the parts that change between two readings (uptime, and the sessions
/// the asking connection makes) taken out.
fn steady(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| match l.find(" is running") {
            Some(_) => l.split(": pid").next().unwrap_or(l).to_string(),
            None => l.clone(),
        })
        .filter(|l| !l.starts_with("clients connected"))
        .collect()
}

#[test]
fn the_dashboard_in_a_real_browser_searches_shows_context_forgets_and_refuses_forgeries() {
    let Some(chromium) = browser() else { return };
    let home = Home::new();
    let notes = home.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    write_notes(&notes);
    // One file from 2001: the timeline then spans 25 years and must still be clickable.
    let old = notes.join("old.md");
    std::fs::write(&old, "# Old allotment plans\n\nWhere the first beds and the shed would go, drawn on paper.\n")
        .unwrap();
    let in_2001 = std::time::UNIX_EPOCH + std::time::Duration::from_secs(991_353_600);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(in_2001).unwrap();
    let daemon = Daemon::builder(&home).http().start();
    let out = home.daemon_cmd().arg("ingest").arg(&notes).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // A note whose text is markup, on the chunk the browser will open.
    let mut peer = Peer::socket(&daemon.socket());
    peer.initialize("dashboard-test");
    let hits = peer.tool("memory.search", json!({"query": "tomatoes basil", "k": 1}));
    let chunk = hits["structuredContent"]["hits"][0]["chunk_id"].as_str().expect("a hit").to_string();
    let note = r#"<script>window.__xss=1</script><img src=x onerror="window.__xss=1"> keep the labels"#;
    let stored = peer.tool("memory.note", json!({"chunk_id": chunk, "note_text": note}));
    assert_ne!(stored["isError"], true, "{stored}");
    drop(peer);

    let out = home.daemon_cmd().args(["ui", "--no-open"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    let login = said.split_whitespace().find(|w| w.contains("/ui/login?code=")).expect("a login link").to_string();
    assert!(login.starts_with(&format!("http://{}/", daemon.http_addr())), "{login}");

    let shots = root().join("target/browser/dashboard");
    let _ = std::fs::remove_dir_all(&shots);
    let report_file = home.path().join("browser-report.json");
    let run = Command::new("node")
        .arg(root().join("tests/browser/dashboard.js"))
        .env("OPENHUMAN_TEST_CHROMIUM", &chromium)
        .env("DASHBOARD_LOGIN", &login)
        .env("DASHBOARD_SHOTS", &shots)
        .env("DASHBOARD_REPORT", &report_file)
        .stdin(Stdio::null())
        .output()
        .expect("run node");
    let report: Value = serde_json::from_slice(&std::fs::read(&report_file).unwrap_or_default()).unwrap_or(Value::Null);
    assert!(
        run.status.success() && report["ok"] == true,
        "the browser run failed: {}\n{report:#}\n{}\ndaemon log:\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr),
        daemon.log()
    );
    for page in ["overview", "search", "chunk", "forget", "audit", "sources", "entities", "timeline", "status"] {
        for png in [shots.join(format!("{page}.png")), shots.join(format!("{page}-420.png"))] {
            assert!(
                std::fs::metadata(&png).is_ok_and(|m| m.len() > 1000),
                "a screenshot of {page} at {}",
                png.display()
            );
        }
    }

    // The deletion left its audit row, under the dashboard's client label.
    let out = home.daemon_cmd().args(["audit", "--json", "--tool", "memory.forget"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mcp:dashboard"), "{text}");
    let out = home.daemon_cmd().args(["show", &chunk]).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success(), "the forgotten chunk is gone: {}", String::from_utf8_lossy(&out.stdout));

    // The status page showed what the terminal shows.
    let out = home.daemon_cmd().arg("status").output().unwrap();
    let terminal: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let page: Vec<String> = report["status_lines"]
        .as_array()
        .expect("status lines in the report")
        .iter()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect();
    assert_eq!(steady(&page), steady(&terminal), "status page vs terminal");
    assert!(terminal.iter().any(|l| l.starts_with("store: ")) && terminal.iter().any(|l| l.starts_with("policy: ")));
}

#[test]
fn ui_says_how_to_turn_the_http_port_on_when_no_daemon_runs() {
    let home = Home::new();
    let out = home.daemon_cmd().args(["ui", "--no-open"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("not running") && said.contains("[mcp.http].enabled = true"), "{said}");
}

/// A daemon without HTTP (as the shim starts it): `ui` (not on a terminal, so it does not ask)
/// writes `[mcp.http] enabled = true` to config.toml and has the daemon reload, which starts HTTP
/// in the same process; the login link it prints works.
#[test]
fn ui_turns_the_http_port_on_in_the_running_daemon_without_a_restart() {
    use openhuman_tests::http::Client;
    let home = Home::new();
    // Off, with the port left to the system when it goes on; a comment that must survive the edit.
    home.write_config("# my settings\n[mcp.http]\nport = 0\n");
    let daemon = Daemon::start(&home);
    let status = || String::from_utf8_lossy(&home.daemon_cmd().arg("status").output().unwrap().stdout).to_string();
    assert!(status().contains("dashboard: off"), "{}", status());

    let out = home.daemon_cmd().args(["ui", "--no-open"]).stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}\ndaemon log:\n{}", String::from_utf8_lossy(&out.stderr), daemon.log());
    assert!(said.contains("turned the HTTP port on in the running daemon (no restart)"), "{said}");
    let link = said.split_whitespace().find(|w| w.contains("/ui/login?code=")).expect("a login link").to_string();

    // The same process, now with a dashboard.
    let now = status();
    assert!(now.contains(&format!(": pid {},", daemon.pid())) && now.contains("dashboard: http://"), "{now}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.starts_with("# my settings") && config.contains("enabled = true"), "{config}");

    // The link logs a browser in.
    let rest = link.strip_prefix("http://").expect("an http link");
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let c = Client::new(addr.parse().unwrap());
    let r = c.send("GET", path, &[], b"");
    assert_eq!(r.status, 303, "{}", r.text());
    let cookie = r.header("set-cookie").expect("a session cookie").split(';').next().unwrap().to_string();
    assert_eq!(c.send("GET", "/ui/", &[("Cookie", &cookie)], b"").status, 200);

    // Asked again, it just hands out a link.
    let out = home.daemon_cmd().args(["ui", "--no-open"]).stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !said.contains("turned") && said.contains("/ui/login?code="), "{said}");
    assert!(daemon.log().matches("HTTP transport listening").count() == 1, "{}", daemon.log());
}

/// The dashboard's rules over raw HTTP (no browser needed): the login link, the cookie, the
/// same-origin API, and the policy and audit its deletions go through.
#[test]
fn the_dashboard_api_wants_its_login_and_its_own_page_and_obeys_the_policy() {
    use openhuman_tests::http::Client;
    let home = Home::new();
    let notes = home.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    write_notes(&notes);
    let daemon = Daemon::builder(&home).http().start();
    assert!(home.daemon_cmd().arg("ingest").arg(&notes).output().unwrap().status.success());
    let c = Client::new(daemon.http_addr());
    let origin = format!("http://{}", daemon.http_addr());
    let api = |cookie: &str, extra: &[(&str, &str)], body: Value| {
        let mut h = vec![("Cookie", cookie), ("Content-Type", "application/json"), ("X-OpenHuman-UI", "1")];
        h.extend_from_slice(extra);
        c.send("POST", "/ui/api", &h, body.to_string().as_bytes())
    };

    // No login: the page asks for one, the API refuses, a made-up code does not work.
    assert_eq!(c.send("GET", "/ui/", &[], b"").status, 401);
    assert_eq!(api("", &[], json!({"op": "status"})).status, 401);
    assert_eq!(c.send("GET", "/ui/login?code=0123456789abcdef", &[], b"").status, 403);

    let out = home.daemon_cmd().args(["ui", "--no-open"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let link = said.split_whitespace().find(|w| w.contains("/ui/login?code=")).expect("a login link");
    let path = &link[origin.len()..];
    let r = c.send("GET", path, &[], b"");
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(r.header("location"), Some("/ui/"));
    let set = r.header("set-cookie").expect("a session cookie").to_string();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/ui"), "{set}");
    assert_eq!(c.send("GET", path, &[], b"").status, 403, "a login link works once");
    let cookie = set.split(';').next().unwrap().to_string();
    let page = c.send("GET", "/ui/", &[("Cookie", &cookie)], b"");
    assert_eq!(page.status, 200);
    assert!(page.header("content-security-policy").is_some_and(|p| p.contains("script-src 'self'")));

    // Only the dashboard's own calls: JSON with its header, from its origin.
    let hits = api(&cookie, &[("Origin", &origin)], json!({"op": "recall", "params": {"query": "brakes tyres"}}));
    assert_eq!(hits.status, 200, "{}", hits.text());
    let car = hits.json()["result"]["chunks"][0]["chunk_id"].as_str().unwrap().to_string();
    let forget = json!({"op": "forget", "params": {"ids": [car]}});
    let form = c.send(
        "POST",
        "/ui/api",
        &[("Cookie", &cookie), ("Content-Type", "text/plain"), ("Origin", "http://127.0.0.1:1")],
        forget.to_string().as_bytes(),
    );
    assert_eq!(form.status, 403, "{}", form.text());
    let other_port = api(&cookie, &[("Origin", "http://127.0.0.1:1")], forget.clone());
    assert_eq!(other_port.status, 403, "{}", other_port.text());
    let cross_site = api(&cookie, &[("Sec-Fetch-Site", "cross-site")], forget.clone());
    assert_eq!(cross_site.status, 403, "{}", cross_site.text());
    let unknown = api(&cookie, &[], json!({"op": "daemon_shutdown"}));
    assert_eq!(unknown.status, 400, "{}", unknown.text());

    // Re-ingest is a control write, audited under the dashboard's label too.
    let again = api(&cookie, &[("Origin", &origin)], json!({"op": "ingest", "params": {"paths": [notes]}}));
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json()["result"]["files_unchanged"], 2, "{}", again.text());
    let out = home.daemon_cmd().args(["audit", "--json", "--tool", "openhuman.memory_ingest"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"source\":\"mcp:dashboard\"") && text.contains("\"source\":\"rpc\""), "{text}");

    // In readonly the deletion is refused, and the refusal is audited like any client's.
    home.write_config("[autonomy]\nlevel = \"readonly\"\n");
    daemon.reload();
    let refused = api(&cookie, &[("Origin", &origin)], forget.clone());
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(refused.json()["error"].as_str().is_some_and(|e| e.starts_with("[policy-blocked]")), "{}", refused.text());
    home.write_config("");
    daemon.reload();
    let done = api(&cookie, &[("Origin", &origin)], forget);
    assert_eq!(done.status, 200, "{}", done.text());
    assert_eq!(done.json()["result"]["deleted"], json!([car]), "{}", done.text());
    let out = home.daemon_cmd().args(["audit", "--json", "--tool", "memory.forget"]).output().unwrap();
    let rows: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_dashboard: Vec<_> = rows.iter().filter(|r| r["source"] == "mcp:dashboard").collect();
    assert_eq!(by_dashboard.len(), 2, "one refused and one done: {rows:?}");
    assert!(by_dashboard.iter().any(|r| r["success"] == false) && by_dashboard.iter().any(|r| r["success"] == true));
}

/// HTTP without a token (`allow_no_token`): the dashboard needs no login, like the MCP endpoint,
/// but its API still takes only its own page's calls.
#[test]
fn without_a_token_the_dashboard_is_open_but_still_refuses_forged_posts() {
    use openhuman_tests::http::Client;
    let home = Home::new();
    home.write_config("[mcp.http]\nallow_no_token = true\n");
    let daemon = Daemon::builder(&home).http().start();
    let out = home.daemon_cmd().args(["ui", "--no-open"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("no login") && said.contains(&format!("http://{}/ui/", daemon.http_addr())), "{said}");
    let c = Client::new(daemon.http_addr());
    assert_eq!(c.send("GET", "/ui/", &[], b"").status, 200);
    let status = json!({"op": "status"}).to_string();
    let ok =
        c.send("POST", "/ui/api", &[("Content-Type", "application/json"), ("X-OpenHuman-UI", "1")], status.as_bytes());
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(ok.json()["result"]["lines"][0].as_str().is_some_and(|l| l.contains("is running")), "{}", ok.text());
    let forged = c.send("POST", "/ui/api", &[("Content-Type", "text/plain")], status.as_bytes());
    assert_eq!(forged.status, 403, "{}", forged.text());
}
