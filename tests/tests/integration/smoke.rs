//! The seed documents' two smoke pipes, run against both the shim and `openhumand-mcp stdio`,
//! with exactly the number of response lines the seeds state.

use std::io::Write;
use std::process::{Command, Stdio};

use openhuman_tests::{Home, WAIT, wait_exit};
use serde_json::Value;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn pipe(mut cmd: Command, lines: &[&str]) -> Vec<Value> {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    for l in lines {
        writeln!(stdin, "{l}").expect("write");
    }
    drop(stdin);
    let stdout = child.stdout.take().expect("stdout");
    let reader = openhuman_tests::Lines::spawn(stdout);
    let out = reader.rest();
    let status = wait_exit(&mut child, WAIT);
    assert!(status.success(), "exit status {status}");
    out.iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}")))
        .collect()
}

fn commands(home: &Home) -> Vec<(&'static str, Command)> {
    let mut stdio = home.daemon_cmd();
    stdio.arg("stdio");
    vec![("shim", home.shim_cmd()), ("stdio", stdio)]
}

#[test]
fn seed_tools_smoke_writes_exactly_two_lines() {
    let home = Home::new();
    for (name, cmd) in commands(&home) {
        let out = pipe(cmd, &[INIT, INITIALIZED, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#]);
        assert_eq!(out.len(), 2, "{name}: {out:?}");
        assert_eq!(out[0]["id"], 1);
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-06-18", "{name}");
        assert!(out[0]["result"]["capabilities"]["tools"].is_object(), "{name}");
        assert_eq!(out[0]["result"]["serverInfo"]["name"], "openhuman-core");
        assert_eq!(out[1]["id"], 2);
        let names: Vec<&str> =
            out[1]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        for want in ["core.list_tools", "core.tool_instructions", "agent.list_subagents"] {
            assert!(names.contains(&want), "{name}: {names:?}");
        }
    }
}

#[test]
fn seed_resources_smoke_writes_exactly_four_lines() {
    let home = Home::new();
    for (name, cmd) in commands(&home) {
        let out = pipe(
            cmd,
            &[
                INIT,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"resources/list"}"#,
                r#"{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"openhuman://prompts/identity"}}"#,
            ],
        );
        assert_eq!(out.len(), 4, "{name}: {out:?}");
        let by_id = |id: i64| out.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("{name}: no reply {id}"));
        assert!(by_id(1)["result"]["capabilities"]["resources"].is_object());
        let uris: Vec<&str> =
            by_id(2)["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
        for want in [
            "openhuman://prompts/identity",
            "openhuman://prompts/soul",
            "openhuman://prompts/user",
            "openhuman://prompts/agents/orchestrator",
        ] {
            assert!(uris.contains(&want), "{name}: {uris:?}");
        }
        let templates = &by_id(3)["result"]["resourceTemplates"];
        assert_eq!(templates.as_array().map(Vec::len), Some(3), "{name}: {templates}");
        assert_eq!(templates[0]["uriTemplate"], "openhuman://source/{id}");
        assert_eq!(templates[1]["uriTemplate"], "openhuman://memory/{id}");
        assert_eq!(templates[2]["uriTemplate"], "openhuman://context/{project}");
        let content = &by_id(4)["result"]["contents"][0];
        assert_eq!(content["mimeType"], "text/markdown");
        assert!(content["text"].as_str().unwrap().contains("OpenHuman"), "{name}");
    }
}
