//! The memory methods (`openhuman.memory_*`) MCP tools map onto, each with its parameter schema.
//! They run on the engine through the one bounded blocking path.

use openhuman_mcp::args::{ArgSpec, Field};
use openhuman_memory::MemoryEngine;

use super::{Group, Method, on_engine};

/// The `filter` object of recall/fetch/list.
pub fn filter_spec() -> ArgSpec {
    const KINDS: &[&str] = &["document", "conversation", "learning", "note", "email", "chat"];
    let mut fields = vec![
        Field::list("kinds", "Only these kinds of items.", 6, 32).items_one_of(KINDS),
        Field::list("sources", "Only items written by these provenance labels, e.g. mcp:cursor.", 50, 256),
        Field::list("source_ids", "Only items from these sources (ids from tree.list_sources).", 100, 512),
        Field::list("tags_any", "Only items carrying at least one of these tags.", 50, 128),
        Field::string("observed_after", "RFC 3339 time; only items observed after it.").max_chars(64),
        Field::string("observed_before", "RFC 3339 time; only items observed before it.").max_chars(64),
    ];
    for (name, desc) in [
        ("workspace", "Exact workspace."),
        ("folder", "Exact folder."),
        ("file_path", "Exact file path."),
        ("language", "Exact language."),
        ("repo", "Exact repository."),
        ("commit", "Exact commit."),
        ("url", "Exact URL."),
        ("thread_id", "Exact thread id."),
        ("agent_id", "Exact agent id."),
    ] {
        fields.push(Field::string(name, desc).max_chars(2048));
    }
    ArgSpec::new(fields)
}

/// The `cursor` argument of every paged method: opaque, only ever a previous page's answer.
fn cursor() -> Field {
    Field::string("cursor", "next_cursor from the previous page, unchanged; omit it for the first page.")
        .max_chars(1024)
}

const QUERY_CHARS: usize = 4096;
const ID_CHARS: usize = 256;

pub(super) fn methods() -> Vec<Method> {
    vec![
        Method {
            group: Group::Memory,
            name: "openhuman.memory_tree_search",
            params: ArgSpec::new(vec![
                Field::string("query", "Keywords to search for (BM25).").required().max_chars(QUERY_CHARS),
                Field::int("k", "How many hits (default 10).", 1, 50).default_int(10),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::search),
        },
        Method {
            group: Group::Memory,
            name: "openhuman.memory_tree_recall",
            params: ArgSpec::new(vec![
                Field::string("query", "A question or description; matched by meaning and keywords.")
                    .required()
                    .max_chars(QUERY_CHARS),
                Field::int("k", "How many chunks (default 10).", 1, 50).default_int(10),
                Field::object("filter", "Restrict what is recalled.", filter_spec()),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::recall),
        },
        Method {
            group: Group::Memory,
            name: "openhuman.memory_tree_get_chunk",
            params: ArgSpec::new(vec![
                Field::string("chunk_id", "A chunk id from search, recall or browse.").required().max_chars(ID_CHARS),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::read_chunk),
        },
        Method {
            group: Group::Memory,
            name: "openhuman.memory_tree_list_chunks",
            params: ArgSpec::new(vec![
                Field::list("source_kinds", "Only these kinds.", 5, 32)
                    .items_one_of(&["document", "email", "chat", "note", "learning"]),
                Field::list("source_ids", "Only these sources.", 100, 512),
                Field::list("entity_ids", "Only chunks mentioning these entities, e.g. person:alice-smith.", 50, 512),
                Field::int("since_ms", "Only chunks at or after this time (ms since epoch).", 0, i64::MAX),
                Field::int("until_ms", "Only chunks before this time (ms since epoch).", 0, i64::MAX),
                Field::string("query", "Only chunks matching these keywords.").max_chars(QUERY_CHARS),
                Field::int("k", "Page size (default 10).", 1, 50).default_int(10),
                Field::int("offset", "Items to skip (default 0); cursor is the stable way to page.", 0, 1_000_000)
                    .default_int(0),
                cursor(),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::browse),
        },
        Method {
            group: Group::Memory,
            name: "openhuman.memory_tree_top_entities",
            params: ArgSpec::new(vec![
                Field::one_of(
                    "kind",
                    "Only this kind of entity.",
                    &["email", "url", "handle", "topic", "person", "bot", "org"],
                ),
                Field::int("k", "Page size (default 10).", 1, 50).default_int(10),
                cursor(),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::top_entities),
        },
        Method {
            group: Group::Memory,
            name: "openhuman.memory_tree_list_sources",
            params: ArgSpec::new(vec![
                Field::string(
                    "user_email_hint",
                    "Your own e-mail address, so mail threads are named after the other party.",
                )
                .max_chars(320),
                Field::int("limit", "Page size, most recent first (default 200).", 1, 200).default_int(200),
                cursor(),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::list_sources),
        },
        Method {
            group: Group::Memory,
            name: "openhuman.memory_fetch",
            params: ArgSpec::new(vec![
                Field::string("query", "What to fetch hits for.").required().max_chars(QUERY_CHARS),
                Field::one_of(
                    "mode",
                    "keyword (BM25), vector (semantic) or hybrid (default).",
                    &["keyword", "vector", "hybrid"],
                ),
                Field::object("filter", "Restrict the hits.", filter_spec()),
                Field::int("limit", "Page size (default 10).", 1, 100).default_int(10),
                cursor(),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::fetch),
        },
        Method {
            group: Group::Memory,
            name: "openhuman.memory_items_list",
            params: ArgSpec::new(vec![
                Field::object("filter", "Restrict the items.", filter_spec()),
                Field::int("limit", "Page size (default 10).", 1, 100).default_int(10),
                cursor(),
            ]),
            handler: |s, p, _| on_engine(s, p, MemoryEngine::list),
        },
    ]
}
