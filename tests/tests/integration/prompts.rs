//! Prompts, completion and memory items as resources, through the real daemon: the recall
//! prompt packs what was stored into its token budget with citations, argument mistakes are
//! -32602, completion offers stored topics and ids, and neither topic nor memory text reaches
//! the log.

use openhuman_tests::{ChildPeer, Daemon, Home, Peer, tool_ok};
use serde_json::{Value, json};

/// The daemon's token estimate: whitespace-separated words × 1.3, rounded up.
fn tokens(text: &str) -> usize {
    (text.split_whitespace().count() * 13).div_ceil(10)
}

fn error_code(r: &Value) -> i64 {
    r["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error: {r}"))
}

#[test]
fn recall_prompt_completion_and_memory_items_work_on_stored_memory() {
    let home = Home::new();
    let d = Daemon::builder(&home).env("RUST_LOG", "debug").start();
    let mut p = Peer::socket(&home.socket());
    let init = p.initialize("prompts-test");
    assert_eq!(init["capabilities"]["prompts"], json!({"listChanged": true}), "{init}");
    assert_eq!(init["capabilities"]["completions"], json!({}), "{init}");

    let marker = "Zephyrine";
    let stored = tool_ok(&p.tool(
        "memory.store",
        json!({"title": "Kestrel nesting", "content": format!("{marker} kestrels nest in the old barn every April. #birdwatching"),
               "tags": ["birds"]}),
    ))
    .clone();
    let chunk = stored["chunk_ids"][0].as_str().unwrap().to_string();
    let long: Vec<String> = (0..600).map(|i| format!("kestrel{i}")).collect();
    tool_ok(&p.tool("memory.store", json!({"title": "Kestrel log", "content": long.join(" ")})));

    let list = p.call("prompts/list", json!({}));
    let names: Vec<&str> = list["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"recall_context") && names.contains(&"agent.researcher"), "{names:?}");

    let got = p.call("prompts/get", json!({"name": "recall_context", "arguments": {"topic": "kestrel nesting barn"}}));
    let text = got["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains(marker) && text.contains(&format!("[chunk:{chunk}]")), "{text}");
    assert!(tokens(text) <= 2000, "default budget: {} tokens", tokens(text));
    assert!(got["description"].as_str().unwrap().contains("of 2000 tokens"), "{got}");
    let small = p.call(
        "prompts/get",
        json!({"name": "recall_context", "arguments": {"topic": "kestrel", "token_budget": "150"}}),
    );
    let small_text = small["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(tokens(small_text) <= 150 && small_text.contains("[chunk:"), "{small_text}");

    let missing = p.request("prompts/get", json!({"name": "recall_context", "arguments": {}}));
    assert_eq!(error_code(&missing), -32602);
    assert!(missing["error"]["message"].as_str().unwrap().contains("`topic`"), "{missing}");
    assert_eq!(error_code(&p.request("prompts/get", json!({"name": "no_such_prompt"}))), -32602);
    let bad_budget = p
        .request("prompts/get", json!({"name": "recall_context", "arguments": {"topic": "x", "token_budget": "lots"}}));
    assert_eq!(error_code(&bad_budget), -32602);

    let agent = p.call("prompts/get", json!({"name": "agent.researcher", "arguments": {"task": "Find kestrel facts"}}));
    assert_eq!(agent["messages"][0]["content"]["resource"]["uri"], "openhuman://prompts/agents/researcher");
    assert!(agent["messages"][1]["content"]["text"].as_str().unwrap().contains("Find kestrel facts"), "{agent}");

    let complete = |p: &mut Peer, reference: Value, name: &str, value: &str| {
        p.call("completion/complete", json!({"ref": reference, "argument": {"name": name, "value": value}}))["completion"]
            .clone()
    };
    let topics = complete(&mut p, json!({"type": "ref/prompt", "name": "recall_context"}), "topic", "bird");
    // The hashtag and the chunk's own tag are both topics.
    let mut names: Vec<&str> = topics["values"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["birds", "birdwatching"], "{topics}");
    let ids = complete(&mut p, json!({"type": "ref/resource", "uri": "openhuman://memory/{id}"}), "id", &chunk[..4]);
    assert!(ids["values"].as_array().unwrap().iter().any(|v| v == chunk.as_str()), "{ids}");
    let sources = complete(&mut p, json!({"type": "ref/resource", "uri": "openhuman://source/{id}"}), "id", "");
    assert_eq!((sources["total"].as_u64(), sources["hasMore"].as_bool()), (Some(2), Some(false)), "{sources}");

    let templates = p.call("resources/templates/list", json!({}));
    let uris: Vec<&str> =
        templates["resourceTemplates"].as_array().unwrap().iter().map(|t| t["uriTemplate"].as_str().unwrap()).collect();
    assert_eq!(uris, ["openhuman://source/{id}", "openhuman://memory/{id}", "openhuman://context/{project}"]);
    let item = p.call("resources/read", json!({"uri": format!("openhuman://memory/{chunk}")}));
    let item_text = item["contents"][0]["text"].as_str().unwrap();
    assert!(item_text.starts_with("# Kestrel nesting") && item_text.contains(marker), "{item_text}");
    assert!(item_text.contains(&format!("- id: `{chunk}`")) && item_text.contains("- tags: birds"), "{item_text}");
    let none = p.request("resources/read", json!({"uri": "openhuman://memory/0000"}));
    assert_eq!(error_code(&none), -32002);
    // A subscriber to a memory item hears that it was tagged.
    let item_uri = format!("openhuman://memory/{chunk}");
    p.call("resources/subscribe", json!({"uri": item_uri}));
    tool_ok(&p.tool("tree.tag", json!({"chunk_id": chunk, "tags": ["raptors"]})));
    let heard = |p: &Peer| {
        p.notifications
            .iter()
            .any(|n| n["method"] == "notifications/resources/updated" && n["params"]["uri"] == item_uri.as_str())
    };
    while !heard(&p) {
        let msg = p.lines.next_json();
        p.notifications.push(msg);
    }
    let tagged = p.call("resources/read", json!({"uri": item_uri}));
    assert!(tagged["contents"][0]["text"].as_str().unwrap().contains("raptors"), "{tagged}");

    d.stop().unwrap();
    let log = home.log();
    assert!(log.contains("prompt built"), "the prompt ran with debug logging on");
    assert!(!log.contains(marker) && !log.contains("kestrel nesting barn"), "content in the log:\n{log}");
}

#[test]
fn with_memory_off_the_recall_prompt_and_completion_say_which_key_to_set() {
    let home = Home::new();
    home.write_config("[memory]\nengine = \"off\"\n");
    let mut cmd = home.daemon_cmd();
    cmd.arg("stdio");
    let mut s = ChildPeer::spawn(cmd);
    s.peer.initialize("prompts-off");
    let got = s.peer.request("prompts/get", json!({"name": "recall_context", "arguments": {"topic": "x"}}));
    assert_eq!(error_code(&got), -32603);
    assert!(got["error"]["message"].as_str().unwrap().contains("[memory].engine"), "{got}");
    let done = s.peer.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "recall_context"}, "argument": {"name": "topic", "value": "x"}}),
    );
    assert_eq!(error_code(&done), -32603, "{done}");
    // What needs no memory still works: a subagent prompt and the budget suggestions.
    let agent = s.peer.call("prompts/get", json!({"name": "agent.planner", "arguments": {"task": "Plan a trip"}}));
    assert!(agent["messages"][1]["content"]["text"].as_str().unwrap().contains("Plan a trip"), "{agent}");
    let budgets = s.peer.call(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "recall_context"}, "argument": {"name": "token_budget", "value": "1"}}),
    );
    assert_eq!(budgets["completion"]["values"], json!(["1000", "16000"]));
}

#[test]
fn a_user_agent_added_by_a_reload_becomes_a_prompt_and_clients_hear_of_it() {
    let home = Home::new();
    let d = Daemon::start(&home);
    let mut p = Peer::socket(&home.socket());
    p.initialize("prompts-reload");
    let agents = home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("birder.toml"),
        "id = \"birder\"\nname = \"Birder\"\ndescription = \"Keeps the bird log.\"\ntools = [\"memory.search\"]\n\
         prompt = \"You keep the user's bird log.\"\n",
    )
    .unwrap();
    p.call("openhuman.config_reload", json!({}));
    while !p.notifications.iter().any(|n| n["method"] == "notifications/prompts/list_changed") {
        let msg = p.lines.next_json();
        p.notifications.push(msg);
    }
    let list = p.call("prompts/list", json!({}));
    assert!(list["prompts"].as_array().unwrap().iter().any(|p| p["name"] == "agent.birder"), "{list}");
    let got = p.call("prompts/get", json!({"name": "agent.birder", "arguments": {"task": "Log a heron"}}));
    assert_eq!(got["messages"][0]["content"]["text"], "You keep the user's bird log.", "{got}");
    let task = got["messages"][1]["content"]["text"].as_str().unwrap();
    assert!(task.contains("Log a heron") && task.contains("memory.search"), "{task}");
    d.stop().unwrap();
}

/// Notes next to mail and chat about other things: `recall_context` for a question about a
/// note packs that note and none of the mail or chat that shares only common words with it.
#[test]
fn recall_context_packs_the_note_and_no_unrelated_mail_or_chat() {
    let home = Home::new();
    let files = tempfile::tempdir().unwrap();
    let notes = [
        (
            "sourdough.md",
            "# Sourdough starter\n\nFeed the starter every morning: discard half, then add rye flour and lukewarm water. In the fridge it needs feeding once a week.\n",
        ),
        ("bike.md", "# Bike lock\n\nThe combination of the blue bike lock is 4-1-7-9.\n"),
        (
            "dentist.md",
            "# Dentist\n\nDr. Okafor's practice is on Linden Street. The next check-up is on the 14th of March.\n",
        ),
        ("plants.md", "# Watering the plants\n\nThe fern wants water twice a week; the cactus only once a month.\n"),
    ];
    for (name, text) in notes {
        std::fs::write(files.path().join(name), text).unwrap();
    }
    let mails = [
        (
            "Priya <priya@work.example>",
            "Planning",
            "What do we need to look at before the planning meeting? I would like to take the roadmap first.",
        ),
        (
            "Tom <tom@work.example>",
            "Office move",
            "The move happens next week. Please take your things home on Friday and look after your own monitor.",
        ),
        (
            "Ana <ana@work.example>",
            "Design review",
            "Let me know what you think of the new screens; I would like to look at them every morning this week.",
        ),
        (
            "Bank <noreply@bank.example>",
            "Statement",
            "Your monthly statement is ready. This message is sent automatically; please do not reply.",
        ),
    ];
    let mut mbox = String::new();
    for (i, (from, subject, body)) in mails.iter().enumerate() {
        mbox.push_str(&format!(
            "From x@example.com Mon Oct  {d} 09:00:00 2023\nFrom: {from}\nTo: me@home.example\nSubject: {subject}\n\
             Date: Mon, {d} Oct 2023 09:00:00 +0000\nMessage-ID: <p{i}@example.com>\n\n{body}\n\n",
            d = i + 2
        ));
    }
    std::fs::write(files.path().join("inbox.mbox"), mbox).unwrap();
    let chat = [
        ("Sam", "what time are we meeting every morning next week?"),
        ("Lea", "I think half past seven, I need to feed the cat first"),
        ("Kai", "can someone look after my plants while I am away?"),
        ("Sam", "sure, just tell me how often"),
    ];
    let lines: String = chat
        .iter()
        .enumerate()
        .map(|(i, (from, text))| {
            json!({"ts": format!("2023-11-04T18:{i:02}:00Z"), "from": from, "text": text, "channel": "friends"})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(files.path().join("friends.jsonl"), lines).unwrap();
    let _d = Daemon::start(&home);
    let out = home.daemon_cmd().arg("ingest").arg(files.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut p = Peer::socket(&home.socket());
    p.initialize("prompts-floor");
    let got = p.call(
        "prompts/get",
        json!({"name": "recall_context", "arguments": {"topic": "how do I look after my sourdough starter?"}}),
    );
    let text = got["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("rye flour"), "the note is packed: {text}");
    assert_eq!(text.matches("\n## [").count(), 1, "only the note is packed: {text}");
    for unrelated in ["roadmap", "monitor", "screens", "statement", "half past seven", "plants while"] {
        assert!(!text.contains(unrelated), "`{unrelated}` padded the context: {text}");
    }
    let description = got["description"].as_str().unwrap();
    assert!(description.starts_with("1 memory on") && description.contains("below the relevance floor"), "{got}");
    // The recall the prompt runs says how many it held back.
    let r = tool_ok(&p.tool("memory.recall", json!({"query": "how do I look after my sourdough starter?"}))).clone();
    assert!(r["held_back"].as_u64().unwrap() > 0, "{r}");
}
