//! A small personal store as a person has one: short notes written for this test, next to a
//! mailbox and a group chat about other things, all written for this test too, asked everyday
//! questions with the built-in embedder. The note that answers comes first, and the relevance
//! floor keeps the mail and chat that share only a common word with the question out.

use std::borrow::Cow;
use std::fs;

use serde_json::{Value, json};

use super::{Wire, builtin, open_with};
use crate::ops;

/// (title, note).
pub(crate) const NOTES: &[(&str, &str)] = &[
    (
        "Sourdough starter",
        "Feed the starter every morning: discard half, then add 50 g rye flour and 50 g lukewarm water. \
         Keep the jar loosely covered on the kitchen shelf; in the fridge it only needs feeding once a week.",
    ),
    (
        "Bike lock",
        "The combination of the blue bike lock is 4-1-7-9. The spare key for the old lock hangs by the door.",
    ),
    (
        "Dentist",
        "Dr. Okafor's practice is on Linden Street, second floor. Check-ups every six months; the next one is \
         booked for the 14th of March at 9:30.",
    ),
    (
        "Car insurance",
        "Policy with Harbour Mutual, number HM-2231-77. Renewal is due in September; call them before the \
         direct debit runs to ask for the no-claims discount.",
    ),
    (
        "Watering the plants",
        "The fern wants water twice a week and a misting; the cactus only once a month. The orchid gets three \
         ice cubes every Sunday.",
    ),
    (
        "Passport renewal",
        "Passport expires in June next year. Renewal form from the post office, two photos, and the old \
         passport; it takes about three weeks.",
    ),
    (
        "Gym routine",
        "Monday and Thursday: squats, deadlifts, rows. Tuesday: thirty minutes on the rowing machine. Stretch \
         the hamstrings afterwards or the knee complains.",
    ),
    (
        "Landlord",
        "Landlord is Mrs. Varga, she prefers text messages to calls. Rent is paid on the first; the boiler was \
         last serviced in October.",
    ),
    (
        "Lentil soup",
        "Fry an onion and two carrots, add 200 g red lentils, a tin of tomatoes, cumin and a litre of stock. \
         Simmer twenty-five minutes and blend half of it.",
    ),
    (
        "Wi-Fi at home",
        "The router is in the hallway cupboard. Guest network name is Attic-Guest; the sticker with its \
         details is under the router.",
    ),
    (
        "School run",
        "Mila's school starts at 8:15. Wednesday is swimming, so pack the towel and goggles. Pick-up on \
         Fridays is at 1 pm.",
    ),
    (
        "Cat",
        "Pepper eats the salmon kibble, half a cup morning and evening. Her vaccination booster is due in \
         April at the Greenway vet.",
    ),
    (
        "Running shoes",
        "Size 44 in the trail model; the road pair is worn out after about 700 km. Replace them before the \
         autumn half marathon.",
    ),
    (
        "Tax return",
        "Receipts for the home office go in the green folder. The deadline for the return is the end of \
         July; the accountant wants the bank statements by May.",
    ),
    (
        "Birthday gift ideas",
        "Grandpa would like a book on birdwatching or a new pair of binoculars. Aunt Rosa collects teapots.",
    ),
    (
        "Balcony tomatoes",
        "Sow the tomato seeds indoors in March, plant them out after the last frost. Pinch the side shoots \
         and feed with seaweed every fortnight once the flowers appear.",
    ),
    (
        "Coffee machine",
        "Descale the espresso machine every two months with citric acid; rinse the tank twice afterwards. \
         The grinder setting that works is 12.",
    ),
    (
        "Spanish lessons",
        "Lessons with Lucía on Tuesday evenings over video. Homework this week: the past tense of irregular \
         verbs, and twenty minutes of the podcast.",
    ),
    (
        "Blood donation",
        "Blood type is O negative. Last donation was in January; the next possible date is twelve weeks \
         after that.",
    ),
    (
        "Holiday packing list",
        "Passport, chargers, the travel adapter, sunscreen, the small first-aid kit, swimming things, and \
         the book I keep not finishing.",
    ),
];

/// (question, the title of the note that answers it).
pub(crate) const QUESTIONS: &[(&str, &str)] = &[
    ("how do I look after my sourdough starter?", "Sourdough starter"),
    ("what is the code for my bike lock?", "Bike lock"),
    ("when is my next dentist appointment?", "Dentist"),
    ("what is my car insurance policy number?", "Car insurance"),
    ("how often should I water the fern?", "Watering the plants"),
    ("what do I need to renew my passport?", "Passport renewal"),
    ("what do I do at the gym on Monday?", "Gym routine"),
    ("how does my landlord like to be contacted?", "Landlord"),
    ("how do I make the lentil soup?", "Lentil soup"),
    ("where is the wifi router?", "Wi-Fi at home"),
    ("what time does Mila's school start?", "School run"),
    ("what does the cat eat?", "Cat"),
    ("what size are my running shoes?", "Running shoes"),
    ("when is the tax return deadline?", "Tax return"),
    ("what could I give grandpa for his birthday?", "Birthday gift ideas"),
    ("when should I sow my tomatoes?", "Balcony tomatoes"),
    ("how do I descale the coffee machine?", "Coffee machine"),
    ("when are my Spanish lessons?", "Spanish lessons"),
    ("what is my blood type?", "Blood donation"),
    ("what should I pack for the holiday?", "Holiday packing list"),
];

/// Questions only meaning answers, asked of recall alone: none of their rarer words is in the
/// store, and mail that signs off "take care" holds the rest; or the chat holds one of them in
/// another sense ("present" as in a presentation, or being present).
const MEANING_QUESTIONS: &[(&str, &str)] = &[
    ("how do I take care of my bread yeast?", "Sourdough starter"),
    ("present ideas for grandad", "Birthday gift ideas"),
];

/// One mailbox of work and everyday mail, none of it about what the notes hold.
fn mailbox() -> String {
    let mails: &[(&str, &str, &str)] = &[
        (
            "Priya Raman <priya@northwind.example>",
            "Quarterly planning",
            "Hi all,\n\nWhat do we need to look at before the planning meeting? I think we should take the roadmap first and then the hiring plan. How does Tuesday work for everyone?\n\nPriya",
        ),
        (
            "Tom Becker <tom@northwind.example>",
            "Re: Quarterly planning",
            "Tuesday works for me. Can we also talk about when the new office opens? I would like to know what the move means for the team.\n\nTom",
        ),
        (
            "Facilities <facilities@northwind.example>",
            "Office move",
            "The move to the fourth floor happens next week. Please take your personal things home on Friday and label your monitors. Keys will be handed out on Monday at the front desk.",
        ),
        (
            "Jonas Wirth <jonas@partners.example>",
            "Invoice 2291",
            "Hello,\n\nplease find the invoice for the consulting work in October attached. Let me know if anything is unclear about the hours.\n\nBest regards,\nJonas",
        ),
        (
            "Newsletter <news@citycycling.example>",
            "This month at City Cycling",
            "Our autumn ride starts at the harbour on Sunday. New members get a free safety check for their bike. The workshop is closed on public holidays.",
        ),
        (
            "Priya Raman <priya@northwind.example>",
            "Hiring plan",
            "We have budget for two engineers and one designer. What should the interview loop look like? I would like everyone to review the job descriptions by Thursday.",
        ),
        (
            "Ana Lima <ana@northwind.example>",
            "Re: Hiring plan",
            "I can do the design interviews. How many candidates do we expect? The last round took far too long, so let us keep it to three stages.",
        ),
        (
            "IT Support <it@northwind.example>",
            "Password expiry",
            "Your account password expires in 7 days. Change it from the self-service portal. Never share it by mail or chat.",
        ),
        (
            "Marketplace <noreply@market.example>",
            "Your order has shipped",
            "Your order of a desk lamp and two notebooks is on its way. Track the parcel with the link in your account. Delivery is expected on Wednesday.",
        ),
        (
            "Tom Becker <tom@northwind.example>",
            "Lunch on Friday?",
            "Shall we try the new ramen place on Friday? It opens at noon and gets busy, so we should go early. Who is in?",
        ),
        (
            "Helen Park <helen@school-pta.example>",
            "Bake sale volunteers",
            "The parents' association needs volunteers for the bake sale next month. Tables need setting up at 8 and we need people for the till in the afternoon.",
        ),
        (
            "Bank <notifications@bank.example>",
            "Statement available",
            "Your monthly statement is ready to view in online banking. This message is sent automatically; please do not reply.",
        ),
        (
            "Ana Lima <ana@northwind.example>",
            "Design review",
            "I would like to show the new onboarding screens on Monday. Let me know what you think and whether the flow feels like the old one.",
        ),
        (
            "Tom Becker <tom@northwind.example>",
            "Re: Design review",
            "Looks good to me. I like the simpler first step; maybe we need one more screen for the settings. Happy to talk it through.",
        ),
        (
            "Priya Raman <priya@northwind.example>",
            "Team offsite",
            "We would like to hold the offsite in spring. Tell me which dates you cannot make and what kind of place you would like.",
        ),
        (
            "Jonas Wirth <jonas@partners.example>",
            "Re: Invoice 2291",
            "Thanks for the quick payment. If you would like a second workshop in the new year, I have time in February.",
        ),
        (
            "Mum <mum@family.example>",
            "Sunday",
            "Are you coming on Sunday? Dad wants to take you to the new garden centre. Take care of yourself, love Mum",
        ),
        (
            "Ana Lima <ana@northwind.example>",
            "Out next week",
            "I am away next week; Tom will take care of the design reviews. Take care!",
        ),
        (
            "Mum <mum@family.example>",
            "Sunday lunch",
            "Hi love, are you coming for lunch on Sunday? Dad is making his roast. Take care of yourself, you work too much. Love, Mum",
        ),
    ];
    let mut out = String::new();
    for (i, (from, subject, body)) in mails.iter().enumerate() {
        let addr = from.split('<').nth(1).and_then(|s| s.strip_suffix('>')).unwrap_or("x@example.com");
        let day = i + 2;
        out.push_str(&format!(
            "From {addr} Mon Oct {day:2} 09:00:00 2023\nFrom: {from}\nTo: me@home.example\nSubject: {subject}\n\
             Date: Mon, {day} Oct 2023 09:00:00 +0000\nMessage-ID: <m{i}@mail.example>\n\n{body}\n\n"
        ));
    }
    out
}

/// A group chat of friends planning things, as plain chat lines (JSON Lines).
fn chat() -> String {
    let lines: &[(&str, &str)] = &[
        ("Sam", "what time are we meeting on Saturday?"),
        ("Lea", "I think 7 works, how about you?"),
        ("Sam", "7 is fine. do we need to book a table?"),
        ("Kai", "I can call them tomorrow"),
        ("Lea", "did anyone see the match last night?"),
        ("Kai", "yes what a game, that last goal"),
        ("Sam", "I missed it, I was at my sister's"),
        ("Lea", "how is she doing with the new job?"),
        ("Sam", "she likes it, long hours though"),
        ("Kai", "who is bringing the board games?"),
        ("Lea", "I will bring the card game, Sam has the big one"),
        ("Sam", "ok. should we take the train or drive?"),
        ("Kai", "train, parking there is impossible"),
        ("Lea", "what are you all doing for the long weekend?"),
        ("Sam", "probably visiting my parents"),
        ("Kai", "we want to go to the lake if the weather holds"),
        ("Lea", "send pictures! when do you leave?"),
        ("Kai", "Friday after work"),
        ("Sam", "can someone remind me what we owe for the concert tickets?"),
        ("Lea", "it was 38 each, pay me whenever"),
        ("Kai", "I would like to try that climbing gym you mentioned"),
        ("Sam", "sure, I know the owner, I think Thursdays are quiet"),
        ("Lea", "do you like the new album? I can't stop listening"),
        ("Kai", "not really my thing, I like the older stuff"),
        ("Sam", "anyone need anything from the shop? going now"),
        ("Lea", "milk please, and whatever snacks you like"),
        ("Kai", "what do you think about a movie next week?"),
        ("Sam", "I'd like that, something funny maybe"),
        ("Lea", "let me know the time and I will be there"),
        ("Kai", "I will check the listings and text you all"),
        ("Lea", "my slides are done, I present them to the board tomorrow"),
        ("Sam", "good luck! keep it short and they will listen"),
        ("Kai", "yoga helps me stay present, I go every morning now"),
    ];
    lines
        .iter()
        .enumerate()
        .map(|(i, (from, text))| {
            json!({"ts": format!("2023-11-04T18:{:02}:00Z", i), "from": from, "text": text, "channel": "friends"})
                .to_string()
                + "\n"
        })
        .collect()
}

/// A store holding the notes, the mailbox and the chat.
fn personal_store(dir: &std::path::Path) -> crate::MemoryEngine {
    let m = open_with(&dir.join("data"), builtin());
    for (title, note) in NOTES {
        put_note(&m, title, note);
    }
    let files = dir.join("files");
    fs::create_dir_all(&files).unwrap();
    fs::write(files.join("inbox.mbox"), mailbox()).unwrap();
    fs::write(files.join("friends.jsonl"), chat()).unwrap();
    let s = m.ingest_paths(&[files], None, &|_| {}).expect("ingest");
    assert_eq!(s.files_ingested, 2, "{s:?}");
    m.wait_background();
    m
}

/// Stores a note titled `title` (its key the title in lower case).
fn put_note(m: &crate::MemoryEngine, title: &str, note: &str) {
    let doc = crate::PutDocument {
        key: title.to_lowercase(),
        title: Some(title.to_string()),
        content: note.to_string(),
        source: "test".into(),
        ..Default::default()
    };
    m.put_document(doc, crate::AuditRow::default()).expect("a note is stored");
}

/// The (kind, title) of what recall gives for `query`, best first.
fn recalled(m: &crate::MemoryEngine, query: &str) -> Vec<(String, String)> {
    let r = m.wire::<ops::Recall>(json!({"query": query})).unwrap();
    titles(r["chunks"].as_array().unwrap())
}

fn titles(hits: &[Value]) -> Vec<(String, String)> {
    hits.iter()
        .map(|h| {
            let kind = h["source_kind"].as_str().unwrap_or_default().to_string();
            let title = h["title"].as_str().map(Cow::from).unwrap_or_default().to_string();
            (kind, title)
        })
        .collect()
}

#[test]
fn everyday_questions_find_the_note_first_and_no_mail_or_chat_padding() {
    let dir = tempfile::tempdir().unwrap();
    let m = personal_store(dir.path());
    let mut padded = Vec::new();
    let asked = QUESTIONS.iter().flat_map(|q| [(q, "recall"), (q, "search")]);
    for ((question, want), op) in asked.chain(MEANING_QUESTIONS.iter().map(|q| (q, "recall"))) {
        {
            let r = match op {
                "recall" => m.wire::<ops::Recall>(json!({"query": question})).unwrap(),
                _ => m.wire::<ops::Search>(json!({"query": question})).unwrap(),
            };
            let hits = r[if op == "recall" { "chunks" } else { "hits" }].as_array().unwrap().clone();
            let got = titles(&hits);
            assert_eq!(got.first().map(|t| t.1.as_str()), Some(*want), "{op} `{question}`: {got:?}");
            let others: Vec<&(String, String)> = got.iter().filter(|(k, _)| k == "email" || k == "chat").collect();
            if !others.is_empty() {
                padded.push(format!("{op} `{question}`: {others:?}"));
            }
            // What was left out is counted, and the kept hits add up with it to at most k.
            assert!(hits.len() + r["held_back"].as_u64().unwrap() as usize <= 10);
        }
    }
    assert!(padded.is_empty(), "mail or chat came back for questions about notes:\n{}", padded.join("\n"));
}

/// Chinese, Japanese and Korean write no space between words (Korean writes one between
/// phrases): a word inside a sentence is found, by search and by recall, and marked as one.
#[test]
fn a_word_inside_a_chinese_japanese_or_korean_sentence_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let m = personal_store(dir.path());
    for (title, note) in [
        ("水漏れ", "明日の朝、配管工が台所の水漏れを直しに来ます。鍵は隣の田中さんに預けてあります。"),
        ("护照", "我的护照放在书房的抽屉里，明年三月到期，需要提前去出入境管理局办理续签。"),
        ("피아노", "테오의 피아노 수업은 목요일 오후 다섯 시에 음악학교에서 있습니다."),
    ] {
        put_note(&m, title, note);
    }
    for (query, want, marked) in
        [("配管工", "水漏れ", "**配管工**"), ("护照", "护照", "**护照**"), ("피아노 수업", "피아노", "**수업**")]
    {
        let hits = m.wire::<ops::Search>(json!({"query": query})).unwrap()["hits"].as_array().unwrap().clone();
        assert_eq!(hits.first().and_then(|h| h["title"].as_str()), Some(want), "search `{query}`: {hits:?}");
        let snippet = hits[0]["snippet"].as_str().unwrap();
        assert!(snippet.contains(marked), "`{query}`: {snippet}");
        assert_eq!(recalled(&m, query).first().map(|t| t.1.as_str()), Some(want), "recall `{query}`");
    }
}

/// With the built-in table a question is embedded by its words that say something: "when is
/// my …?" next to "language class" made Mum's "are you coming for lunch on Sunday?" the closest
/// chunk, above the note about Spanish lessons that shares no word with the question either.
#[test]
fn a_question_is_matched_by_meaning_on_what_it_asks_not_how() {
    let dir = tempfile::tempdir().unwrap();
    let m = personal_store(dir.path());
    let r = m.wire::<ops::Recall>(json!({"query": "when is my language class?", "k": 5})).unwrap();
    let got = titles(r["chunks"].as_array().unwrap());
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Spanish lessons"), "{got:?}");
}

#[test]
fn min_relevance_zero_keeps_every_hit_and_the_default_holds_back_noise() {
    let dir = tempfile::tempdir().unwrap();
    let m = personal_store(dir.path());
    let question = "how do I look after my sourdough starter?";
    let all = m.wire::<ops::Recall>(json!({"query": question, "min_relevance": 0})).unwrap();
    let floored = m.wire::<ops::Recall>(json!({"query": question})).unwrap();
    let n_all = all["chunks"].as_array().unwrap().len();
    let n_floored = floored["chunks"].as_array().unwrap().len();
    assert_eq!(all["held_back"], 0);
    assert_eq!(n_all, 10, "the store has more than ten chunks");
    assert!(n_floored < n_all, "{floored}");
    assert_eq!(floored["held_back"].as_u64().unwrap() as usize, n_all - n_floored);
    for c in floored["chunks"].as_array().unwrap() {
        assert!(c["relevance"].as_f64().unwrap() >= 0.1, "{c}");
    }
    // A question nothing in the store is about keeps at most a few chunks by meaning alone.
    let r = m.wire::<ops::Recall>(json!({"query": "quantum chromodynamics lattice gauge theory"})).unwrap();
    assert!(r["chunks"].as_array().unwrap().len() <= 3, "{r}");
    assert!(r["held_back"].as_u64().unwrap() >= 7, "{r}");
    let bad = m.wire::<ops::Search>(json!({"query": "x", "min_relevance": 1.5}));
    assert!(bad.is_err());
}

#[test]
fn a_chat_answer_comes_back_with_the_turn_that_asks_for_it() {
    use crate::ChatChunking;
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(&dir.path().join("data"), builtin());
    let turns = [
        ("Ana", "Morning! Did you sleep well?"),
        ("Ben", "Not really, the neighbours had a party."),
        ("Ana", "Which city did you move to in the end for the new job?"),
        ("Ben", "Rotterdam, right by the harbour."),
        ("Ana", "Nice, I have never been."),
        ("Ben", "Come visit in spring, the weather is better then."),
    ];
    let ch = ana_and_ben("ana-ben", &turns, 60_000);
    let stored = m.put_chat(vec![ch.clone()], "chats/ana-ben", ChatChunking::PerMessage).unwrap();
    assert_eq!(stored.len(), turns.len());
    assert_eq!(stored[3].messages, ["T3"]);
    m.wait_background();
    // The answer shares no word with the question but "Ben"; matched with the turn before it,
    // which asks, it comes first, and the asking turn after it.
    let r = m.wire::<ops::Recall>(json!({"query": "which city did Ben move to for his job?", "k": 3})).unwrap();
    let ids: Vec<&str> = r["chunks"].as_array().unwrap().iter().map(|c| c["chunk_id"].as_str().unwrap()).collect();
    assert_eq!(ids.first(), Some(&stored[3].chunk_id.as_str()), "{r}");
    assert!(ids.contains(&stored[2].chunk_id.as_str()), "{r}");
    // Packed as ingest packs a chat, the six turns are one chunk; storing again replaces it.
    let packed = m.put_chat(vec![ch], "chats/ana-ben", ChatChunking::Packed).unwrap();
    assert_eq!(packed.len(), 1);
    assert_eq!(packed[0].messages.len(), turns.len());
    let s = m.stats().unwrap();
    assert_eq!(s.chunks, 1);
}

/// In a chat whose replies come hours apart each message is a chunk of its own, and a reply
/// seldom repeats the words of what it answers: it is matched with the message before it, so
/// keyword search finds the answer, and the relevance floor keeps it.
#[test]
fn a_reply_hours_later_is_found_by_the_words_of_the_message_it_answers() {
    use crate::ChatChunking;
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(&dir.path().join("data"), builtin());
    let turns = [
        ("Ana", "Did you ever find a plumber for the leaking boiler?"),
        ("Ben", "Yes! Marco came on Tuesday and swapped the valve, all good now."),
        ("Ana", "Brilliant. Are we still on for the quiz night at the Crown?"),
        ("Ben", "Count me in, I'll bring Sam."),
    ];
    let ch = ana_and_ben("ana-ben-3", &turns, 3 * 3_600_000);
    let stored = m.put_chat(vec![ch], "chats/ana-ben-3", ChatChunking::Packed).unwrap();
    assert_eq!(stored.len(), turns.len(), "three hours apart, each message is its own chunk");
    m.wait_background();
    let ids = |r: &Value, list: &str| -> Vec<String> {
        r[list].as_array().unwrap().iter().map(|c| c["chunk_id"].as_str().unwrap().to_string()).collect()
    };
    let s = m.wire::<ops::Search>(json!({"query": "plumber boiler", "k": 5})).unwrap();
    let found = ids(&s, "hits");
    assert_eq!(found.first(), Some(&stored[0].chunk_id), "{s}");
    assert!(found.contains(&stored[1].chunk_id), "the reply naming who came: {s}");
    assert!(!found.contains(&stored[3].chunk_id), "{s}");
    let r = m.wire::<ops::Recall>(json!({"query": "who fixed the boiler?", "k": 5})).unwrap();
    assert!(ids(&r, "chunks").contains(&stored[1].chunk_id), "{r}");
    // The message that says the words comes first, the reply that holds them only in its
    // context after it.
    let s = m.wire::<ops::Search>(json!({"query": "quiz night Crown", "k": 5})).unwrap();
    assert_eq!(ids(&s, "hits")[..2], [stored[2].chunk_id.clone(), stored[3].chunk_id.clone()], "{s}");
    // What it answers is shown with it, and is not taken for its text.
    let c = m.wire::<ops::ReadChunk>(json!({"chunk_id": stored[1].chunk_id})).unwrap();
    assert_eq!(c["metadata"]["context"], "Ana: Did you ever find a plumber for the leaking boiler?", "{c}");
    assert!(!c["content"].as_str().unwrap().contains("plumber"), "{c}");
    let first = m.wire::<ops::ReadChunk>(json!({"chunk_id": stored[0].chunk_id})).unwrap();
    assert!(first["metadata"].get("context").is_none(), "the first message answers nothing: {first}");
}

/// A store whose lone chat messages were written without their context (by an earlier version)
/// gets it when it is next opened, index included.
#[test]
fn a_store_from_before_contexts_gets_them_at_its_next_open() {
    use crate::ChatChunking;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let turns =
        [("Ana", "Did you ever find a plumber for the leaking boiler?"), ("Ben", "Yes, Marco came on Tuesday.")];
    let stored = {
        let m = open_with(&data, builtin());
        let stored = m.put_chat(vec![ana_and_ben("old", &turns, 3 * 3_600_000)], "chats/old", ChatChunking::Packed);
        m.wait_background();
        stored.unwrap()
    };
    // What an earlier version left: no context in the chunks, none in the keyword index.
    let conn = rusqlite::Connection::open(data.join("memory.db")).unwrap();
    conn.execute_batch(
        "UPDATE chunks SET metadata = json_remove(metadata, '$.context'); DELETE FROM meta WHERE name = 'chat_context';",
    )
    .unwrap();
    drop(conn);
    fs::remove_dir_all(data.join("fts")).unwrap();
    let m = open_with(&data, builtin());
    let c = m.wire::<ops::ReadChunk>(json!({"chunk_id": stored[1].chunk_id})).unwrap();
    assert_eq!(c["metadata"]["context"], "Ana: Did you ever find a plumber for the leaking boiler?", "{c}");
    let s = m.wire::<ops::Search>(json!({"query": "plumber boiler", "k": 5})).unwrap();
    let ids: Vec<&str> = s["hits"].as_array().unwrap().iter().map(|h| h["chunk_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [stored[0].chunk_id.as_str(), stored[1].chunk_id.as_str()], "{s}");
}

/// An export written before contexts, imported into a store that already has them, gets its
/// lone messages' contexts at the import.
#[test]
fn an_export_from_before_contexts_gets_them_when_imported() {
    use crate::ChatChunking;
    let dir = tempfile::tempdir().unwrap();
    let turns =
        [("Ana", "Did you ever find a plumber for the leaking boiler?"), ("Ben", "Yes, Marco came on Tuesday.")];
    let export = dir.path().join("export");
    let stored = {
        let m = open_with(&dir.path().join("old"), builtin());
        let stored = m.put_chat(vec![ana_and_ben("old", &turns, 3 * 3_600_000)], "chats/old", ChatChunking::Packed);
        m.export(&export).unwrap();
        stored.unwrap()
    };
    // What an earlier version exported: chunks without a context.
    let path = export.join("chunks.jsonl");
    let lines: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut rec: Value = serde_json::from_str(l).unwrap();
            if let Some(meta) = rec["metadata"].as_object_mut() {
                meta.remove("context");
            }
            rec.to_string()
        })
        .collect();
    assert!(!lines.iter().any(|l| l.contains("\"context\"")));
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let manifest = export.join("manifest.json");
    let mut mark: Value = serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(mark["chat_context"], true, "an export says its chats carry contexts");
    mark.as_object_mut().unwrap().remove("chat_context");
    fs::write(&manifest, mark.to_string()).unwrap();
    let m = open_with(&dir.path().join("new"), builtin());
    m.import(&export).unwrap();
    let c = m.wire::<ops::ReadChunk>(json!({"chunk_id": stored[1].chunk_id})).unwrap();
    assert_eq!(c["metadata"]["context"], "Ana: Did you ever find a plumber for the leaking boiler?", "{c}");
    let s = m.wire::<ops::Search>(json!({"query": "plumber boiler", "k": 5})).unwrap();
    let ids: Vec<&str> = s["hits"].as_array().unwrap().iter().map(|h| h["chunk_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [stored[0].chunk_id.as_str(), stored[1].chunk_id.as_str()], "{s}");
}

/// A question that names someone who speaks in a chat is answered first by what they said:
/// the other speaker's turn that shares more of its words comes after.
#[test]
fn a_question_about_someone_ranks_their_own_turns_first() {
    use crate::ChatChunking;
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(&dir.path().join("data"), builtin());
    let turns = [
        ("Ana", "We adopted a greyhound last week, the greyhound sleeps all day and loves the sofa."),
        ("Ben", "Nice. The weather here has been awful all week."),
        ("Ana", "How is the new flat working out?"),
        ("Ben", "Great. I adopted a greyhound from the shelter in March."),
    ];
    let ch = ana_and_ben("ana-ben-2", &turns, 86_400_000);
    let stored = m.put_chat(vec![ch], "chats/ana-ben-2", ChatChunking::PerMessage).unwrap();
    m.wait_background();
    let first = |query: &str| {
        let r = m.wire::<ops::Recall>(json!({"query": query, "k": 4})).unwrap();
        r["chunks"][0]["chunk_id"].as_str().unwrap().to_string()
    };
    // Without a name, Ana's turn says "greyhound" twice and ranks first.
    assert_eq!(first("who adopted a greyhound?"), stored[0].chunk_id);
    // Named, Ben's own turn comes first.
    assert_eq!(first("when did Ben adopt a greyhound?"), stored[3].chunk_id);
    assert_eq!(first("when did Ana adopt a greyhound?"), stored[0].chunk_id);
}

/// A chat between Ana and Ben, one message of `turns` every `step_ms`.
fn ana_and_ben(id: &str, turns: &[(&str, &str)], step_ms: i64) -> crate::Channel {
    super::channel(
        id,
        turns.iter().enumerate().map(|(i, &(from, text))| (from, text, 1_700_000_000_000 + i as i64 * step_ms)),
    )
}

/// A packed chat chunk whose turns hold a question's words one apiece does not outrank a note
/// that holds them together: its keyword score counts what its best few turns hold. Nor does it
/// follow the note: a hit of another kind than the first must be alike to the question in meaning
/// too.
#[test]
fn scattered_words_in_a_long_chat_do_not_outrank_a_note_that_holds_them_together() {
    use crate::ChatChunking;
    let (_dir, m) =
        among_other_notes("Flat move", "We get the keys on 30 November; the new address goes to the bank and the GP.");
    let turns = [
        ("Ana", "I'm still searching for a place to open the studio."),
        ("Ben", "Thanks for the photos from the trip."),
        ("Ana", "How was the weekend?"),
        ("Ben", "Staying focused is key, you told me."),
        ("Ana", "Quiet, we watched a film and cooked."),
        ("Ben", "Sounds lovely."),
        ("Ana", "Anything new at work?"),
        ("Ben", "Not much, lots of meetings."),
        ("Ana", "Same here, and the printer broke."),
        ("Ben", "You will get there with the studio."),
    ];
    let filler = [
        ("Ana", "Did you see the match last night?"),
        ("Ben", "Yes, what a finish in extra time."),
        ("Ana", "The bakery on the corner sells great croissants."),
        ("Ben", "I still owe you for the concert tickets."),
        ("Ana", "Traffic on the ring road was terrible this morning."),
        ("Ben", "My sister is moving to Lisbon in June."),
    ];
    // One conversation with the scattered words, five about other things, a day apart.
    let mut chats = vec![ana_and_ben("ana-ben-0", &turns, 60_000)];
    for day in 1..6 {
        chats.push(days_later(ana_and_ben(&format!("ana-ben-{day}"), &filler, 60_000), day));
    }
    m.put_chat(chats, "chats/ana-ben", ChatChunking::Packed).unwrap();
    m.wait_background();
    let got = recalled(&m, "when do we get the keys to the new place");
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Flat move"), "{got:?}");
    // Nor does it come back beside the note: it shares the words, not what they mean here.
    assert!(got.iter().all(|(kind, _)| kind != "chat"), "{got:?}");
}

/// `ch` with every message `days` days later.
fn days_later(mut ch: crate::Channel, days: i64) -> crate::Channel {
    for msg in &mut ch.msgs {
        msg.ts += days * 86_400_000;
    }
    ch
}

/// A store (built-in table) of the note `title` and ten short notes on other things, so that it is
/// large enough for the relevance floor to read how alike an arbitrary chunk is to a question.
fn among_other_notes(title: &str, content: &str) -> (tempfile::TempDir, crate::MemoryEngine) {
    among_notes_but(title, content, "")
}

/// [`among_other_notes`] without the other note titled `skip`.
fn among_notes_but(title: &str, content: &str, skip: &str) -> (tempfile::TempDir, crate::MemoryEngine) {
    let dir = tempfile::tempdir().unwrap();
    let m = open_with(&dir.path().join("data"), builtin());
    super::put(&m, "the-note", title, content, &[]);
    let others = [
        ("Boiler", "The boiler service is due in March; the engineer's number is on the fridge."),
        ("Bins", "Green bin on Tuesdays, black bin every other Friday."),
        ("Passport", "Renew the passport six months before it runs out; two photos, signed."),
        ("Sourdough", "Feed the starter flour and water every morning and keep it warm."),
        ("Dentist", "Check-up booked with Dr Okafor, bring the insurance card."),
        ("Tomatoes", "Water the seedlings after sunset, pinch out the side shoots in July."),
        ("Running", "Long run on Sundays, intervals on Wednesday evening at the track."),
        ("Wi-Fi", "The router admin page is 192.168.1.1; the guest network password is on the card."),
        ("Car", "MOT due in August; tyre pressure 2.3 bar front and back."),
        ("Books", "Reading list: Middlemarch, The Overstory, a history of the Silk Roads."),
    ];
    for (i, (title, text)) in others.iter().enumerate().filter(|(_, (title, _))| *title != skip) {
        super::put(&m, &format!("note-{i}"), title, text, &[]);
    }
    (dir, m)
}

/// A question whose words answer it poorly (the note says "training", and the chat says "plan",
/// "week" and "workout" in passing) leans on meaning. A packed chat chunk that says "plan" in one turn and
/// "week" in another, far apart, does not make its words look good: it is judged by its best few
/// turns, which hold one of them.
#[test]
fn a_chat_holding_a_questions_ordinary_words_apart_does_not_hide_that_they_answer_it_poorly() {
    use crate::ChatChunking;
    let (_dir, m) = among_other_notes(
        "Training schedule",
        "Monday: 5 km run. Wednesday: squats, lunges and planks, three rounds. Friday: swimming 40 lengths. \
         Sunday rest.",
    );
    let turns = [
        ("Ana", "What's the plan for the garden party?"),
        ("Ben", "Lanterns, and the neighbours bring salads."),
        ("Ana", "Did the printer get fixed?"),
        ("Ben", "Yes, a new cartridge did it."),
        ("Ana", "How is your sister?"),
        ("Ben", "Busy with the move to Lisbon."),
        ("Ana", "Tell her good luck from me."),
        ("Ben", "Will do. The weather looks fine for Saturday."),
        ("Ana", "Great, see you then."),
        ("Ben", "I'm away most of next week though."),
    ];
    // Other days' talk says "workout" in passing, so that the store holds the question's words.
    let mut chats = vec![ana_and_ben("ana-ben-party", &turns, 60_000)];
    for day in 1..3 {
        let mut said: Vec<(&str, &str)> = turns.iter().map(|(who, _)| (*who, "Not much, a quiet day here.")).collect();
        said[4].1 = "Went for a run after my workout.";
        chats.push(days_later(ana_and_ben(&format!("ana-ben-{day}"), &said, 60_000), day));
    }
    m.put_chat(chats, "chats/ana-ben", ChatChunking::Packed).unwrap();
    m.wait_background();
    let got = recalled(&m, "what is my workout plan for the coming week");
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Training schedule"), "{got:?}");
}

/// A mail of another kind that holds none of the words a note was found by is kept beside it
/// only when it is more alike to the question in meaning than the note, by what it lacks.
/// "practise" is split into word pieces, the first of which, `pr`, is the word compiler
/// changelogs write before every bug number, so their mail is nearly as alike to the question as
/// the note is, and says nothing of guitars.
#[test]
fn mail_alike_in_meaning_only_through_a_word_piece_is_not_kept_beside_the_note() {
    let (dir, m) = among_other_notes(
        "Guitar practice",
        "Fifteen minutes of pentatonic scales, then the fingerpicking pattern, then chord changes with the \
         metronome at 80. New strings every two months.",
    );
    let mut mbox = String::new();
    for n in 1..=8 {
        let bugs: Vec<String> = (0..30).map(|i| format!("PR {}", 110_000 + 97 * n + i)).collect();
        mbox += &format!(
            "From MAILER-DAEMON Mon Jun {n:2} 10:00:00 2024\nFrom: Toolchain Team <toolchain@example.org>\n\
             Subject: gcc-13 13.2.0-{n}\nMessage-ID: <gcc-13-{n}@example.org>\n\n\
             * Update to the branch.\n  - Fix {}.\n\n",
            bugs.join(", ")
        );
    }
    mbox += &packaging_mail();
    ingest_mbox(dir.path(), &m, &mbox);
    let got = recalled(&m, "what should I practise on guitar");
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Guitar practice"), "{got:?}");
    assert!(got.iter().all(|(kind, _)| kind != "email"), "{got:?}");
}

/// Ingests `mbox` as a mailbox file of the store in `dir` and waits for its vectors.
fn ingest_mbox(dir: &std::path::Path, m: &crate::MemoryEngine, mbox: &str) {
    let files = dir.join("files");
    fs::create_dir_all(&files).unwrap();
    fs::write(files.join("mail.mbox"), mbox).unwrap();
    m.ingest_paths(&[files], None, &|_| {}).expect("ingest");
    m.wait_background();
}

/// Sixty short mails about other packages' changes, so that a store's background is mail.
fn packaging_mail() -> String {
    let changes = [
        "New upstream release.",
        "Bump Standards-Version, no changes needed.",
        "Update the copyright years.",
        "Drop a patch applied upstream.",
        "Build with the new debhelper compat level.",
        "Fix a crash when the config file is empty.",
        "Translations updated: German, French, Basque.",
        "Ship the systemd unit in the main package.",
        "Run the test suite at build time again.",
        "Move the documentation to its own package.",
        "Security fix for a buffer overflow in the parser.",
        "Rebuild against the new libc.",
    ];
    let mut mbox = String::new();
    for n in 0..60 {
        let said: Vec<&str> = (0..3).map(|i| changes[(n * 5 + i * 7) % changes.len()]).collect();
        mbox += &format!(
            "From MAILER-DAEMON Tue Jul  2 10:00:00 2024\nFrom: Maintainer {n} <m{n}@example.org>\n\
             Subject: package-{n} 1.{n}-1\nMessage-ID: <package-{n}@example.org>\n\n* {}\n\n",
            said.join("\n* ")
        );
    }
    mbox
}

/// A question whose best keyword hits each share one of its words, that word not most of its
/// weight, leans on meaning: "heat" in a recipe and "pressure" in a note on bike tyres do not
/// answer "the heating has lost pressure", and the boiler note, near in meaning, comes first.
#[test]
fn a_question_whose_keyword_hits_each_share_one_of_its_words_leans_on_meaning() {
    let (_dir, m) = among_other_notes(
        "Worcester 30i",
        "If the pressure drops below 1 bar, top the boiler up with the filling loop underneath until the \
         needle reads 1.5. The reset button is the one with the flame symbol.",
    );
    super::put(&m, "ragu", "Ragu", "Brown the mince, add wine and tomatoes, cook three hours on the lowest heat.", &[]);
    super::put(&m, "bike", "Road bike", "Tyre pressure 90 psi at the front and 95 at the back; oil the chain.", &[]);
    let got = recalled(&m, "the heating has lost pressure, what do I do?");
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Worcester 30i"), "{got:?}");
}

/// A chat line of another kind than the note that holds as many of a question's words, in another
/// sense, is kept beside the note only when it is nearly as alike to the question in meaning:
/// "/bin/sh" in packaging talk is somewhat like "bins", far less than the note on bin days is.
#[test]
fn technical_chat_sharing_a_word_in_another_sense_is_not_kept_beside_the_note() {
    use crate::ChatChunking;
    let (dir, m) = among_other_notes(
        "Bin days",
        "General waste, the black bin, goes out every Tuesday night. Recycling, the blue bin, every other \
         Tuesday. Garden waste once a month.",
    );
    let lines = [
        ("Tollef", "Use /bin/sh in the maintainer scripts, not /bin/bash."),
        ("Philippe", "Set SHELL to /bin/sh when building; closes the bug about bashisms."),
        ("Bdale", "Hard-code /bin/gzip in gzexe instead of BINDIR, which yields /usr/bin/gzip."),
        ("Tollef", "Move which and tempfile out of /bin into /usr/bin."),
        ("Philippe", "New upstream release; refresh the patches."),
        ("Bdale", "Bump the standards version, no changes needed."),
    ];
    let chats: Vec<crate::Channel> = lines
        .iter()
        .enumerate()
        .map(|(i, &(who, text))| {
            super::channel(&format!("pkg-{i}"), [(who, text, 1_700_000_000_000 + i as i64 * 86_400_000)])
        })
        .collect();
    m.put_chat(chats, "chats/packaging", ChatChunking::Packed).unwrap();
    ingest_mbox(dir.path(), &m, &packaging_mail());
    let got = recalled(&m, "when do the bins go out?");
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Bin days"), "{got:?}");
    assert!(got.iter().filter(|(kind, _)| kind == "chat").count() == 0, "{got:?}");
}

/// "get" is a light verb in a question ("how do I get into…"): a changelog that says "routers"
/// and "get" in two unrelated lines does not outrank the notes on the router's admin page.
#[test]
fn a_light_verb_does_not_decide_which_hit_comes_first() {
    let (dir, m) = among_other_notes(
        "Home network",
        "The router's admin page is at 192.168.1.1; log in as admin with the password printed on its label.",
    );
    let mut mbox = packaging_mail();
    mbox += "From MAILER-DAEMON Wed Jul  3 10:00:00 2024\nFrom: Network Team <net@example.org>\n\
             Subject: systemd 247.2-5\nMessage-ID: <systemd-247@example.org>\n\n\
             * network: fix NDisc handling when several routers exist.\n\
             * core/socket: we may get ENOTCONN from the service socket.\n\n";
    ingest_mbox(dir.path(), &m, &mbox);
    let got = recalled(&m, "how do I get into the router settings?");
    // Either note on the router (the store's own "Wi-Fi" note names its admin page too).
    assert!(got.first().is_some_and(|t| t.1 == "Home network" || t.1 == "Wi-Fi"), "{got:?}");
    assert!(got.iter().all(|(kind, _)| kind != "email"), "{got:?}");
}

/// When the best keyword hit is far from the question in meaning and another chunk stands well
/// above the store, the question's words found something else: "what does my running schedule
/// look like?" is not answered by a changelog that says "running" and "scheduled".
#[test]
fn a_keyword_hit_far_from_the_question_in_meaning_does_not_come_first() {
    let (dir, m) = among_notes_but(
        "Jogging timetable",
        "Tuesday: intervals, six times 800 m. Thursday: 8 km at tempo. Sunday: 1.5 km longer each week \
         up to 18 km. Rest on Mondays and Fridays; foam-roll the calves.",
        "Running",
    );
    let mut mbox = packaging_mail();
    mbox += "From MAILER-DAEMON Wed Jul  3 10:00:00 2024\nFrom: Init Team <init@example.org>\n\
             Subject: systemd 247.2-5\nMessage-ID: <systemd-247-5@example.org>\n\n\
             * Stop applications from running after switching to a non-generated locale.\n\
             * systemctl: do not shut down at once on a scheduled shutdown.\n\n";
    // The store holds the question's ordinary words too, so that it lacks none of them.
    mbox += "From MAILER-DAEMON Thu Jul  4 10:00:00 2024\nFrom: Desktop Team <desk@example.org>\n\
             Subject: gnome-about 1.2-1\nMessage-ID: <gnome-about@example.org>\n\n\
             * Make the dialog look like the other settings pages.\n\n";
    ingest_mbox(dir.path(), &m, &mbox);
    let got = recalled(&m, "what does my running schedule look like?");
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Jogging timetable"), "{got:?}");
}

/// A name the question writes decides between hits of other kinds that share its other words:
/// chat that talks of flowers (and says "like" three times) does not come before the one note
/// that says what Sophie likes.
#[test]
fn a_name_the_question_writes_outweighs_chat_about_the_same_thing() {
    use crate::ChatChunking;
    let (_dir, m) = among_other_notes(
        "Anniversary",
        "Our anniversary is 14 June. Last year we had dinner at Sorrel; Sophie loves peonies and hates lilies.",
    );
    let turns = [
        ("Ana", "Painting helps me keep a moment, like a bouquet of flowers."),
        ("Ben", "Did you make that? It looks so real!"),
        ("Ana", "Yes, drawing flowers is one of my favourite things."),
        ("Ben", "It sounds like a lovely way to spend an evening."),
        ("Ana", "It is, I like how calm it makes me."),
    ];
    let filler = [
        ("Ana", "Did you see the match last night?"),
        ("Ben", "Yes, what a finish in extra time."),
        ("Ana", "The bakery on the corner sells great croissants."),
    ];
    let mut chats = vec![ana_and_ben("ana-ben-0", &turns, 60_000)];
    for day in 1..4 {
        chats.push(days_later(ana_and_ben(&format!("ana-ben-{day}"), &filler, 60_000), day));
    }
    m.put_chat(chats, "chats/ana-ben", ChatChunking::Packed).unwrap();
    m.wait_background();
    let got = recalled(&m, "what flowers does Sophie like?");
    assert_eq!(got.first().map(|t| t.1.as_str()), Some("Anniversary"), "{got:?}");
    // Nor does that chat come back after it: it is not about Sophie.
    assert!(got.iter().all(|(kind, _)| kind != "chat"), "{got:?}");
    // Written in lower case, the name is a word like the others: the rule reads how a
    // question writes it, and "sophie" still finds the note somewhere.
    let got = recalled(&m, "what flowers does sophie like?");
    assert!(got.iter().any(|t| t.1 == "Anniversary"), "{got:?}");
}
