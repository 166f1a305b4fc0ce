//! Adversarial messages for the reliability suite, from a seeded generator (xorshift64*), so a
//! failing round can be replayed from its seed: bytes that are not JSON, requests cut short or
//! with fields of the wrong type, deep nesting, lines near and past the size limit, large and
//! nested batches, ids of every odd shape, invalid UTF-8, and real methods and tools with
//! arguments of the wrong shape. Nothing here stops the daemon (no shutdown or reload methods).

use serde_json::{Value, json};

/// xorshift64*: small, fast, and the same sequence for the same seed everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// Ids that clients send and that must come back exactly as written (as JSON text).
pub const ODD_IDS: &[&str] = &[
    "3555727065.2172546",
    "18446744073709551616",
    "-9223372036854775809",
    "9007199254740993",
    "1.5e300",
    "-0",
    "0.1",
    "1.0",
    "\"\"",
    "\"\\u0000 \\ud83d\\ude00 é\"",
];

/// Ids a request may not have: they get an error naming no id, never a crash.
const BAD_IDS: &[&str] = &["null", "true", "{\"a\":1}", "[1]", "[]", "1e400"];

const METHODS: &[&str] = &[
    "ping",
    "initialize",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "logging/setLevel",
    "server/discover",
    "notifications/cancelled",
    "notifications/initialized",
    "openhuman.memory_tree_search",
    "openhuman.memory_stats",
    "openhuman.memory_items_list",
    "openhuman.tool_registry_get",
    "no/such/method",
];

/// Read and write tools alike, and one that does not exist.
const TOOLS: &[&str] = &[
    "memory.store",
    "memory.search",
    "memory.note",
    "memory.recall",
    "tree.tag",
    "memory.fetch",
    "memory.forget",
    "memory.list",
    "tree.read_chunk",
    "tree.browse",
    "tree.top_entities",
    "tree.list_sources",
    "core.list_tools",
    "no.such_tool",
];

/// A JSON value of a random shape and size (depth-limited), for params and arguments.
fn value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth == 0 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.next_u64() as i64),
        3 => json!((rng.next_u64() as f64) / 7.0),
        4 => json!("x".repeat(rng.below(300))),
        5 => {
            let n = rng.below(40);
            json!(String::from_utf8_lossy(&rng.bytes(n)))
        }
        6 => Value::Array((0..rng.below(5)).map(|_| value(rng, depth - 1)).collect()),
        _ => {
            let keys = ["query", "k", "title", "content", "ids", "chunk_id", "tags", "mode", "cursor", "filter"];
            let n = rng.below(5);
            Value::Object((0..n).map(|_| (rng.pick(&keys).to_string(), value(rng, depth - 1))).collect())
        }
    }
}

/// A well-formed request or notification with random method and params.
fn request(rng: &mut Rng) -> Value {
    let method = *rng.pick(METHODS);
    let params = if method == "tools/call" {
        json!({"name": rng.pick(TOOLS), "arguments": value(rng, 2)})
    } else {
        value(rng, 2)
    };
    let mut msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
    if rng.chance(80) {
        msg["id"] = json!(rng.below(1_000_000));
    }
    msg
}

/// `depth` levels of arrays or objects, closed or left open.
fn nested(rng: &mut Rng, depth: usize) -> Vec<u8> {
    let (open, close): (&[u8], &[u8]) = if rng.chance(50) { (b"[", b"]") } else { (b"{\"a\":", b"}") };
    let mut out = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":".to_vec();
    out.extend(open.repeat(depth));
    out.extend_from_slice(b"1");
    if rng.chance(70) {
        out.extend(close.repeat(depth));
        out.push(b'}');
    }
    out
}

/// One adversarial message, as the bytes of one line without its newline (no `\n` inside), and
/// the name of its kind. `max_bytes` is the daemon's size limit: a few messages go past it.
pub fn message(rng: &mut Rng, max_bytes: usize) -> (&'static str, Vec<u8>) {
    let (kind, mut bytes) = match rng.below(11) {
        0 => {
            let n = 1 + rng.below(200);
            ("garbage", rng.bytes(n))
        }
        1 => {
            let whole = request(rng).to_string().into_bytes();
            let cut = rng.below(whole.len().max(1));
            ("truncated", whole[..cut].to_vec())
        }
        2 => {
            let mut msg = request(rng);
            let field = *rng.pick(&["jsonrpc", "method", "params", "id"]);
            msg[field] = value(rng, 1);
            ("wrong-types", msg.to_string().into_bytes())
        }
        3 => {
            let depth = 64 + rng.below(20_000);
            ("deep", nested(rng, depth))
        }
        4 if rng.chance(15) => {
            // Around the limit: some fit, some do not.
            let size = max_bytes - max_bytes / 8 + rng.below(max_bytes / 4);
            let pad = "y".repeat(size);
            (
                "huge",
                json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": pad}}).to_string().into_bytes(),
            )
        }
        5 => {
            let n = *rng.pick(&[0, 1, 2, 255, 256, 257, 1000, 5000]);
            let items: Vec<String> = (0..n)
                .map(|_| match rng.below(4) {
                    0 => request(rng).to_string(),
                    1 => "{}".to_string(),
                    2 => "[[]]".to_string(),
                    _ => value(rng, 1).to_string(),
                })
                .collect();
            ("batch", format!("[{}]", items.join(",")).into_bytes())
        }
        6 => {
            // A batch of batches: each element is itself an array.
            let inner: Vec<String> = (0..1 + rng.below(50)).map(|_| format!("[{}]", request(rng))).collect();
            ("nested-batch", format!("[{}]", inner.join(",")).into_bytes())
        }
        7 => {
            let id = if rng.chance(50) { *rng.pick(ODD_IDS) } else { *rng.pick(BAD_IDS) };
            let long;
            let id = if rng.chance(10) {
                long = format!("\"{}\"", "i".repeat(1 + rng.below(100_000)));
                long.as_str()
            } else {
                id
            };
            ("odd-id", format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}").into_bytes())
        }
        8 => {
            let mut b = request(rng).to_string().into_bytes();
            let at = rng.below(b.len());
            let bad = rng.pick(&[&b"\xff"[..], b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]).to_vec();
            b.splice(at..at, bad);
            ("invalid-utf8", b)
        }
        9 => ("request", request(rng).to_string().into_bytes()),
        _ => {
            let tool = *rng.pick(TOOLS);
            let call = json!({"jsonrpc": "2.0", "id": rng.below(1000), "method": "tools/call", "params": {"name": tool, "arguments": value(rng, 3)}});
            ("tool", call.to_string().into_bytes())
        }
    };
    for b in &mut bytes {
        if *b == b'\n' {
            *b = b' ';
        }
    }
    (kind, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_messages() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..200 {
            assert_eq!(message(&mut a, 4096), message(&mut b, 4096));
        }
    }
}
