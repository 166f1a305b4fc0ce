//! The importers on the real-shaped fixtures in `tests/fixtures/import/` (one folder per
//! format): chunk counts, senders, stored times that date filters find, threads, and the
//! report of everything passed over. Mail and document formats are in `import_mail`.

use super::Wire;
use crate::ops;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::{IngestSummary, MemoryEngine, Skipped};
use super::open;

pub(super) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/import").join(name)
}

pub(super) fn ingest(m: &MemoryEngine, path: &Path) -> IngestSummary {
    m.ingest_paths(&[path.to_path_buf()], None, &|_| {}).expect("ingest")
}

/// Every chunk of a source, oldest first, read in full.
pub(super) fn chunks_of(m: &MemoryEngine, source_id: &str) -> Vec<Value> {
    let r = m.wire::<ops::Browse>(json!({"source_ids": [source_id], "k": 50})).unwrap();
    let mut out: Vec<Value> = r["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| m.wire::<ops::ReadChunk>(json!({"chunk_id": c["chunk_id"]})).unwrap())
        .collect();
    out.sort_by_key(|c| c["timestamp_ms"].as_i64());
    out
}

/// The skip entries as `(unit, reason, count)`.
pub(super) fn skips(s: &IngestSummary) -> Vec<(String, String, usize)> {
    s.skipped.iter().map(|Skipped { unit, reason, count, .. }| (unit.clone(), reason.clone(), *count)).collect()
}

pub(super) fn skip(unit: &str, reason: &str, count: usize) -> (String, String, usize) {
    (unit.to_string(), reason.to_string(), count)
}

/// Recall restricted to one day (UTC) finds `query`'s chunk in `source_id`.
pub(super) fn found_on_day(m: &MemoryEngine, query: &str, day: &str, source_id: &str) -> bool {
    let filter = json!({"observed_after": format!("{day}T00:00:00Z"), "observed_before": format!("{day}T23:59:59Z")});
    let r = m.wire::<ops::Recall>(json!({"query": query, "filter": filter})).unwrap();
    r["chunks"].as_array().unwrap().iter().any(|c| c["source_id"] == source_id)
}

fn contents(chunks: &[Value]) -> Vec<&str> {
    chunks.iter().map(|c| c["content"].as_str().unwrap()).collect()
}

#[test]
fn chatgpt_follows_the_current_branch() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("chatgpt"));
    assert_eq!((s.files_ingested, s.chunks_added), (1, 2), "{s:?}");
    let sourdough = chunks_of(&m, "chatgpt:6a0c4f10-0000-4000-8000-000000000001");
    assert_eq!(
        contents(&sourdough),
        ["[2024-03-01 10:00] user: How often should I feed a rye sourdough starter?\n\
          [2024-03-01 10:01] ChatGPT: Twice a day keeps a rye starter lively; once a day is fine when it lives in the fridge.\n\
          [2024-03-01 10:02] user: Thanks! And the flour to water ratio?\n\
          [2024-03-01 10:03] ChatGPT: Equal weights of flour and water: a 1:1:1 feed with the starter."]
    );
    assert_eq!(sourdough[0]["timestamp_ms"], 1_709_287_201_250i64);
    assert_eq!(sourdough[0]["title"], "Sourdough starter help");
    assert_eq!(sourdough[0]["metadata"]["participants"], json!(["user", "ChatGPT"]));
    let iceland = chunks_of(&m, "chatgpt:6a0c4f10-0000-4000-8000-000000000002");
    assert_eq!(iceland[0]["timestamp_ms"], 1_712_052_000_000i64, "the question takes its conversation's time");
    assert_eq!(
        skips(&s),
        [
            skip("message", "message on an abandoned branch (edited or regenerated)", 1),
            skip("message", "message without a time (its conversation's is used)", 1),
            skip("message", "system message", 1),
            skip("message", "tool message (not part of the dialogue)", 1),
        ]
    );
    assert!(found_on_day(&m, "rye sourdough starter", "2024-03-01", "chatgpt:6a0c4f10-0000-4000-8000-000000000001"));
    assert!(!found_on_day(&m, "rye sourdough starter", "2024-03-02", "chatgpt:6a0c4f10-0000-4000-8000-000000000001"));
}

#[test]
fn claude_conversations_with_content_blocks() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("claude"));
    assert_eq!((s.files_ingested, s.chunks_added), (1, 2), "{s:?}");
    let blight = chunks_of(&m, "claude:5f1e2d3c-0000-4000-8000-00000000000a");
    assert_eq!(
        contents(&blight),
        [
            "[2024-05-10 08:30] user: My tomato leaves have brown spots with rings. What is it?\n\
             [2024-05-10 08:30] Claude: That sounds like early blight, a fungus that starts on the lower leaves.",
            "[2024-05-10 11:00] user: Should I remove the spotted leaves?\n[attachment: leaf.jpg]\n\
             [2024-05-10 11:00] Claude: Yes: remove them, bin them rather than composting, and water at the base.",
        ],
        "a silence of over two hours starts a new chunk"
    );
    assert_eq!(blight[0]["timestamp_ms"], 1_715_329_805_123i64);
    assert_eq!(blight[1]["title"], "Tomato blight");
    assert_eq!(
        skips(&s),
        [skip("message", "message without a known `sender`", 1), skip("message", "message without text", 1)]
    );
    assert!(found_on_day(&m, "early blight tomato", "2024-05-10", "claude:5f1e2d3c-0000-4000-8000-00000000000a"));
}

#[test]
fn slack_exports_resolve_names_and_keep_threads_together() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("slack"));
    assert_eq!((s.files_seen, s.files_ingested, s.chunks_added), (5, 3, 5), "{s:?}");
    let general = chunks_of(&m, "slack:general");
    let threads: Vec<&str> = general.iter().map(|c| c["metadata"]["thread_id"].as_str().unwrap()).collect();
    assert_eq!(
        threads,
        ["general", "general/thread/1709546460.000300", "general/thread/1709546460.000300", "general"],
        "{general:#?}"
    );
    assert_eq!(
        general[0]["content"],
        "[2024-03-04 10:00] Ada Lovelace: Morning! The analytical engine demo is at noon, details in #random.\n\
         [2024-03-04 10:03] Ada Lovelace: [file: engine-diagram.png]"
    );
    assert_eq!(
        general[1]["content"],
        "[2024-03-04 10:01] Grace Hopper: I'll bring the compiler notes\n\
         [2024-03-04 10:02] Ada Lovelace: Great, @Grace Hopper please bring the punch cards & the loom diagrams too"
    );
    assert_eq!(general[2]["content"], "[2024-03-05 10:01] Grace Hopper: Notes are on the shared drive now");
    assert_eq!(general[2]["owner"], "Grace Hopper");
    let random = chunks_of(&m, "slack:random");
    assert_eq!(random[0]["content"], "[2024-03-04 09:50] standup-bot: Reminder: standup in 5 minutes");
    let r = m
        .wire::<ops::Fetch>(json!({"query": "notes", "filter": {"thread_id": "general/thread/1709546460.000300"}}))
        .unwrap();
    assert_eq!(r["items"].as_array().unwrap().len(), 2, "the thread is found across day files: {r}");
    let reasons = skips(&s);
    assert_eq!(
        reasons,
        [
            skip("file", "Slack export index (its names are used for the channel files)", 2),
            skip("message", "Slack notice (channel_join)", 1),
            skip("message", "message without a `ts`", 1),
        ]
    );
    assert!(found_on_day(&m, "demo went well", "2024-03-05", "slack:general"));
}

#[test]
fn discord_chat_exporter_files() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("discord"));
    assert_eq!((s.files_ingested, s.chunks_added), (1, 1), "{s:?}");
    let chunks = chunks_of(&m, "discord:900/111");
    assert_eq!(
        chunks[0]["content"],
        "[2024-06-01 09:15] Mara: Who has spare courgette seedlings?\n\
         [2024-06-01 09:20] Ben: I do, six of them in the cold frame\n\
         [2024-06-01 09:21] Ben: [attachment: seedlings.jpg]"
    );
    // The nickname is the sender; the account name is kept as the handle.
    assert_eq!(chunks[0]["metadata"]["handles"], json!({"Mara": "mossy_mara", "Ben": "ben.grows"}));
    assert_eq!(chunks[0]["timestamp_ms"], 1_717_233_300_123i64);
    assert_eq!(chunks[0]["title"], "Garden Club #general");
    assert_eq!(skips(&s), [skip("message", "Discord notice (GuildMemberJoin)", 1)]);
    assert!(found_on_day(&m, "courgette seedlings", "2024-06-01", "discord:900/111"));
}

#[test]
fn whatsapp_both_line_shapes() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("whatsapp"));
    assert_eq!((s.files_ingested, s.chunks_added), (2, 4), "{s:?}");
    let rosa = chunks_of(&m, "whatsapp:Rosa Diaz");
    assert_eq!(
        contents(&rosa),
        [
            "[2024-02-14 19:02] Rosa Diaz: Are we still on for the pottery class tomorrow?\n\
             [2024-02-14 19:05] Sam: Yes! I booked the wheel for 6pm.\nIt is the big one by the window.",
            "[2024-02-15 21:30] Rosa Diaz: That glazed bowl came out great",
        ]
    );
    let tom = chunks_of(&m, "whatsapp:Tom Baker");
    assert_eq!(
        contents(&tom),
        [
            "[2024-01-05 09:14] Tom Baker: Did you get the van keys?\n\
             [2024-01-05 09:16] Me: Yes, picked them up from the depot office",
            "[2024-01-13 18:46] Tom Baker: Van goes back Monday",
        ],
        "month-first with AM/PM"
    );
    assert_eq!(skips(&s), [skip("line", "media without text", 2), skip("line", "system line (no sender)", 3)]);
    assert_eq!(s.lines_skipped, 5);
    assert!(found_on_day(&m, "van keys", "2024-01-05", "whatsapp:Tom Baker"));
    assert!(found_on_day(&m, "pottery class", "2024-02-14", "whatsapp:Rosa Diaz"));
}

#[test]
fn whatsapp_from_phones_in_other_languages_is_chat() {
    let root = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(root.path().join(name), text).unwrap();
    write(
        "Discussion WhatsApp avec Marie.txt",
        "14/02/2024 à 19:02 - Les messages et les appels sont chiffrés de bout en bout.\n\
         14/02/2024 à 19:02 - Marie: Le plombier passe jeudi matin\n\
         14/02/2024 à 19:05 - Paul: Parfait, je laisse la clé chez la voisine\n",
    );
    write("WhatsApp Chat with Taro.txt", "2024/02/15 21:30 - Taro: The ramen place on Elm Street closes at nine\n");
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, root.path());
    assert_eq!((s.files_ingested, s.chunks_added), (2, 2), "{s:?}");
    assert_eq!(
        contents(&chunks_of(&m, "whatsapp:Marie")),
        ["[2024-02-14 19:02] Marie: Le plombier passe jeudi matin\n\
          [2024-02-14 19:05] Paul: Parfait, je laisse la clé chez la voisine"]
    );
    assert!(found_on_day(&m, "ramen Elm Street", "2024-02-15", "whatsapp:Taro"));
}

#[test]
fn irc_logs_of_irssi_znc_and_weechat_are_chat() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("irc"));
    assert_eq!(s.files_ingested, 3, "{s:?}");
    let garden = chunks_of(&m, "irc:garden");
    let lines: Vec<&str> = contents(&garden).iter().flat_map(|c| c.lines()).collect();
    assert_eq!(
        lines,
        [
            "[2024-03-01 19:01] tom: the broad beans went in today, two rows by the shed",
            "[2024-03-01 19:02] june: nice, mine are still in the greenhouse",
            "[2024-03-01 19:02] june: waters the tomato seedlings",
            "[2024-03-01 23:58] tom: frost tonight, cover the beans",
            "[2024-03-02 08:30] june: fleece is on, thanks for the frost warning",
        ],
        "mode prefixes off, the action kept, the renamed nick read as the person it was"
    );
    let renamed = garden.iter().find(|c| c["content"].as_str().unwrap().contains("frost tonight")).unwrap();
    assert_eq!(renamed["metadata"]["handles"], json!({"tom": "tom_away"}));
    assert_eq!(renamed["metadata"]["platform"], "irc");
    // No day in the log: the file name's, and the clock passing midnight moves to the next.
    let pottery: Vec<String> =
        contents(&chunks_of(&m, "irc:pottery")).iter().flat_map(|c| c.lines().map(str::to_string)).collect();
    assert_eq!(pottery.first().unwrap(), "[2024-03-01 23:50] ravi: who is bringing the kiln key on Saturday?");
    assert_eq!(pottery.last().unwrap(), "[2024-03-02 00:04] ravi: great, see you then");
    let bikes = chunks_of(&m, "irc:bikes");
    assert!(contents(&bikes).concat().contains("] lin: check the derailleur hanger"), "{bikes:?}");
    assert_eq!(skips(&s), [skip("line", "join, part, nick or mode line", 4)]);
    assert!(found_on_day(&m, "frost warning fleece", "2024-03-02", "irc:garden"));
    assert!(found_on_day(&m, "derailleur hanger", "2024-03-05", "irc:bikes"));
    let hit = &m.wire::<ops::Search>(json!({"query": "kiln key"})).unwrap()["hits"][0];
    assert_eq!((hit["source_kind"].as_str(), hit["source_id"].as_str()), (Some("chat"), Some("irc:pottery")));
    // Channels are topics; the renamed nick is the same person, not a second one.
    m.wait_background();
    let ids = |kind: &str| -> Vec<String> {
        let r = m.wire::<ops::TopEntities>(json!({"kind": kind, "k": 50})).unwrap();
        r["entities"].as_array().unwrap().iter().map(|e| e["entity_id"].as_str().unwrap().to_string()).collect()
    };
    let topics = ids("topic");
    assert!(
        ["topic:garden", "topic:pottery", "topic:bikes"].iter().all(|t| topics.contains(&t.to_string())),
        "{topics:?}"
    );
    let people = ids("person");
    assert!(people.contains(&"person:tom".to_string()), "{people:?}");
    assert!(!people.iter().any(|p| p.contains("away")), "{people:?}");
}

#[test]
fn telegram_and_messenger_exports_are_chat() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("telegram"));
    assert_eq!((s.files_ingested, s.chunks_added), (1, 1), "{s:?}");
    assert_eq!(skips(&s), [skip("message", "Telegram service message (pin_message)", 1)]);
    assert_eq!(
        contents(&chunks_of(&m, "telegram:4242")),
        ["[2024-05-01 09:00] Ana Lima: the ferry to the island leaves at ten from pier 3\n\
          [2024-05-01 09:02] Me: bring the snorkels please"]
    );
    assert!(found_on_day(&m, "ferry pier", "2024-05-01", "telegram:4242"));
    let s = ingest(&m, &fixture("messenger"));
    assert_eq!((s.files_ingested, s.chunks_added), (1, 1), "{s:?}");
    let rene = chunks_of(&m, "messenger:inbox/rene_123");
    assert_eq!(
        contents(&rene),
        ["[2024-05-02 09:00] René François: the pottery fair opens on Saturday at nine\n\
          [2024-05-02 09:01] Sam: see you at the café then"],
        "oldest first, the export's escaped UTF-8 read back"
    );
    let hit = &m.wire::<ops::Search>(json!({"query": "cafe"})).unwrap()["hits"][0];
    assert_eq!((hit["source_kind"].as_str(), hit["title"].as_str()), (Some("chat"), Some("René François")));
}

#[test]
fn telegram_html_exports_are_chat() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("telegram-html"));
    assert_eq!(s.files_ingested, 2, "{s:?}");
    let lines: Vec<String> =
        contents(&chunks_of(&m, "telegram:Climbing Crew")).iter().flat_map(|c| c.lines().map(str::to_string)).collect();
    assert_eq!(
        lines,
        [
            "[2024-05-03 17:30] Mei Kato: the bouldering wall reopens on Tuesday with new overhang problems",
            "[2024-05-04 08:15] Omar D'Souza: I'll bring chalk and the spare harness",
        ],
        "both pages are the one chat, times read with their offset, markup and entities undone"
    );
    let counted: Vec<(String, usize)> = skips(&s).into_iter().map(|(_, r, n)| (r, n)).collect();
    assert!(counted.contains(&("Telegram service message".to_string(), 1)), "{counted:?}");
    assert!(counted.contains(&("media without text".to_string(), 1)), "{counted:?}");
    assert!(found_on_day(&m, "chalk harness", "2024-05-04", "telegram:Climbing Crew"));
    let hit = &m.wire::<ops::Search>(json!({"query": "bouldering overhang"})).unwrap()["hits"][0];
    assert_eq!((hit["source_kind"].as_str(), hit["title"].as_str()), (Some("chat"), Some("Climbing Crew")));
}

#[test]
fn android_text_message_backups_are_chat() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("sms"));
    assert_eq!((s.files_ingested, s.chunks_added), (1, 2), "{s:?}");
    assert_eq!(skips(&s), [skip("message", "a draft", 1)]);
    assert_eq!(
        contents(&chunks_of(&m, "sms:+447700900321")),
        ["[2024-05-06 10:15] Priya Shah: the locksmith comes Tuesday at 8, leave the side gate open\n\
          [2024-05-06 10:16] Me: thanks, I'll put the spare key under the mat"]
    );
    let group = chunks_of(&m, "sms:+447700900321~+447700900654");
    assert_eq!(contents(&group), ["[2024-05-06 11:15] Tom Reed: book club moved to Thursday, bring the Ishiguro"]);
    assert!(found_on_day(&m, "locksmith side gate", "2024-05-06", "sms:+447700900321"));
    let hit = &m.wire::<ops::Search>(json!({"query": "spare key mat"})).unwrap()["hits"][0];
    assert_eq!((hit["source_kind"].as_str(), hit["title"].as_str()), (Some("chat"), Some("Priya Shah")));
}

#[test]
fn google_chat_from_takeout_is_chat() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("google-chat"));
    assert_eq!((s.files_ingested, s.chunks_added), (2, 2), "{s:?}");
    let counted: Vec<(String, usize)> = skips(&s).into_iter().map(|(_, r, n)| (r, n)).collect();
    assert!(counted.contains(&("a file or link without text".to_string(), 1)), "{counted:?}");
    assert!(
        counted.contains(&(
            "Google Chat conversation or account information (its names are used for the messages)".to_string(),
            3
        )),
        "{counted:?}"
    );
    let dm = chunks_of(&m, "gchat:DM k6oxHQAAAAE");
    assert_eq!(
        contents(&dm),
        ["[2024-05-04 08:05] Ana Lima: the plumber comes at noon to fix the boiler valve\n\
          [2024-05-04 08:06] Sam Lee: great, I'll leave the key with the neighbour"]
    );
    assert_eq!(dm[0]["title"], "Ana Lima", "a direct message is named after the other person");
    assert!(found_on_day(&m, "rehearsal church hall", "2024-05-03", "gchat:Space AAAAFyOfy4w"));
    // A space is a topic; a direct message is not.
    m.wait_background();
    let r = m.wire::<ops::TopEntities>(json!({"kind": "topic", "k": 50})).unwrap();
    let topics: Vec<&str> = r["entities"].as_array().unwrap().iter().filter_map(|e| e["entity_id"].as_str()).collect();
    assert!(topics.contains(&"topic:choir"), "{topics:?}");
    assert!(!topics.iter().any(|t| t.contains("dm") || t.contains("lima")), "{topics:?}");
}

#[test]
fn google_chat_from_an_account_in_another_language_keeps_its_dates() {
    // Takeout writes `created_date` in the account's language; each message lands on its day.
    let root = tempfile::tempdir().unwrap();
    let space = |name: &str, messages: &str| {
        let dir = root.path().join("Google Chat/Groups").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("group_info.json"), r#"{"name": "Nachbarn", "members": []}"#).unwrap();
        std::fs::write(dir.join("messages.json"), messages).unwrap();
    };
    space(
        "Space AAAAde",
        r#"{"messages": [{"creator": {"name": "Jonas Weber"}, "created_date": "Freitag, 3. Mai 2024 um 18:30:00 UTC", "text": "Der Schlüssel liegt unter der Fußmatte", "message_id": "de/1"}]}"#,
    );
    space(
        "Space AAAAko",
        r#"{"messages": [{"creator": {"name": "Min-jun Park"}, "created_date": "2024년 5월 4일 토요일 오후 2시 5분 0초 UTC", "text": "the piano tuner comes on Tuesday", "message_id": "ko/1"}]}"#,
    );
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, root.path());
    assert_eq!((s.files_ingested, s.chunks_added), (2, 2), "{s:?}");
    assert!(!skips(&s).iter().any(|(_, r, _)| r.contains("created_date")), "{:?}", skips(&s));
    assert!(found_on_day(&m, "Schlüssel Fußmatte", "2024-05-03", "gchat:Space AAAAde"));
    assert!(found_on_day(&m, "piano tuner", "2024-05-04", "gchat:Space AAAAko"));
    assert_eq!(
        contents(&chunks_of(&m, "gchat:Space AAAAko")),
        ["[2024-05-04 14:05] Min-jun Park: the piano tuner comes on Tuesday"]
    );
}

#[test]
fn matrix_rooms_exported_by_element_are_chat() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("matrix"));
    assert_eq!((s.files_ingested, s.chunks_added), (2, 2), "{s:?}");
    assert_eq!(
        contents(&chunks_of(&m, "matrix:!plot14:example.org")),
        ["[2024-05-01 09:01] Ana Lima: the shed key is under the blue pot\n\
          [2024-05-01 09:02] sam: which pot?\n\
          [2024-05-01 09:05] raj: the rhubarb needs splitting before the frost"],
        "the edit in its message, the reply without the quote it repeats, people by display name"
    );
    let counted: Vec<(String, usize)> = skips(&s).into_iter().map(|(_, r, n)| (r, n)).collect();
    for (reason, n) in [
        ("Matrix event m.room.member", 2),
        ("Matrix event m.reaction", 1),
        ("an edit (its message keeps the new text)", 1),
        ("an encrypted message the export could not decrypt", 1),
    ] {
        assert!(counted.contains(&(reason.to_string(), n)), "{reason}: {counted:?}");
    }
    assert!(found_on_day(&m, "rhubarb frost", "2024-05-01", "matrix:!plot14:example.org"));
    let hit = &m.wire::<ops::Search>(json!({"query": "seedlings thursday"})).unwrap()["hits"][0];
    assert_eq!((hit["source_kind"].as_str(), hit["title"].as_str()), (Some("chat"), Some("Ana Lima")));
    // A room is a topic; a direct chat, named after the person in it, is not.
    m.wait_background();
    let r = m.wire::<ops::TopEntities>(json!({"kind": "topic", "k": 50})).unwrap();
    let topics: Vec<&str> = r["entities"].as_array().unwrap().iter().filter_map(|e| e["entity_id"].as_str()).collect();
    assert!(topics.contains(&"topic:allotment"), "{topics:?}");
    assert!(!topics.iter().any(|t| t.contains("lima")), "{topics:?}");
}

#[test]
fn chat_lines_in_common_time_forms_and_json_arrays() {
    let data = tempfile::tempdir().unwrap();
    let m = open(data.path());
    let s = ingest(&m, &fixture("chat"));
    assert_eq!((s.files_ingested, s.chunks_added), (2, 3), "{s:?}");
    let workshop = chunks_of(&m, "chat:workshop");
    assert_eq!(
        workshop[0]["content"],
        "[2024-01-08 09:30] nadia: Standup: the kiln firmware update is done\n\
         [2024-01-08 09:31] omar: Nice. I am still on the glaze inventory\n\
         [2024-01-08 09:33] nadia: Glaze order goes out Friday"
    );
    let kiln = chunks_of(&m, "chat:kiln");
    assert_eq!(kiln.len(), 2, "the JSON array file is read: {kiln:?}");
    assert_eq!(kiln[0]["timestamp_ms"], 1_704_783_600_000i64);
    assert_eq!(
        skips(&s),
        [
            skip("line", "`ts` in no known time form", 1),
            skip("line", "invalid JSON", 1),
            skip("line", "no `ts`", 1),
            skip("line", "not a JSON object", 1),
            skip("message", "no `text`", 1),
        ]
    );
    let first = s.skipped.iter().find(|k| k.reason == "no `ts`").unwrap();
    assert!(first.first.ends_with("standup.jsonl:3"), "{first:?}");
    assert!(found_on_day(&m, "kiln firmware", "2024-01-08", "chat:workshop"));
}
