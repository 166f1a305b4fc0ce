//! Small helpers shared by the memory engine: chunk ids, hashing (sha256, and FxHash for
//! in-memory tables), token estimates, time conversions and byte-bounded truncation.

use std::hash::{BuildHasherDefault, Hasher};

use sha2::{Digest, Sha256};

use super::types::SourceKind;

/// FxHash (the rustc hasher): much faster than SipHash for short keys. Not keyed, so only
/// for tables whose keys are fixed (the embedder's vocabulary) or bounded (the analyzer's
/// stem cache, cleared when full).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

pub(crate) type FxBuild = BuildHasherDefault<FxHasher>;

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, mut bytes: &[u8]) {
        while let Some((chunk, rest)) = bytes.split_first_chunk::<8>() {
            self.add(u64::from_le_bytes(*chunk));
            bytes = rest;
        }
        if let Some((chunk, rest)) = bytes.split_first_chunk::<4>() {
            self.add(u64::from(u32::from_le_bytes(*chunk)));
            bytes = rest;
        }
        for &b in bytes {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Chunk id: the first 32 hex digits of sha256 over kind, source (id and ref), sequence
/// and content. Fields are separated by a unit separator so that no two field tuples
/// hash the same bytes; the id is therefore stable across re-ingests of the same input.
pub(crate) fn chunk_id(kind: SourceKind, source_id: &str, source_ref: &str, seq: i64, content: &str) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_str().as_bytes());
    h.update([0x1f]);
    h.update(source_id.as_bytes());
    h.update([0x1f]);
    h.update(source_ref.as_bytes());
    h.update([0x1f]);
    h.update(seq.to_string().as_bytes());
    h.update([0x1f]);
    h.update(content.as_bytes());
    let digest = h.finalize();
    hex::encode(&digest[..16])
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Token estimate used for chunk sizing and `token_count`: whitespace-separated words
/// times 1.3, rounded up. Cheap, tokenizer-independent and close enough to BPE counts
/// for English prose to size chunks at 300–500 tokens.
pub fn estimate_tokens(text: &str) -> usize {
    words_to_tokens(text.split_whitespace().count())
}

pub(crate) fn words_to_tokens(words: usize) -> usize {
    (words * 13).div_ceil(10)
}

pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub(crate) fn ms_to_rfc3339(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

pub(crate) fn rfc3339_to_ms(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s).ok().map(|d| d.timestamp_millis())
}

/// Cuts `s` to at most `max` characters, appending `…` when something was cut.
pub(crate) fn preview(s: &str, max_chars: usize) -> String {
    let mut out: String = s.chars().take(max_chars).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Lowercase slug for canonical entity ids: ASCII letters and digits kept, runs of
/// anything else become one `-` (the same rule as client names).
/// "Subject — Sender": how a mail client lists a message or thread; either part alone when the
/// other is missing.
pub(crate) fn mail_title(subject: &str, sender: &str) -> String {
    match (subject.trim(), sender.trim()) {
        ("", "") => "(no subject)".to_string(),
        (s, "") => s.to_string(),
        ("", f) => format!("(no subject) — {f}"),
        (s, f) => format!("{s} — {f}"),
    }
}

/// An id's text: accents dropped first (`René François` → `rene-francois`, as the keyword
/// analyzer folds them), then lowercase ASCII letters and digits joined by dashes.
pub(crate) fn slug(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    if s.is_ascii() {
        return openhuman_common::normalize_id(s);
    }
    let mut folded = String::with_capacity(s.len());
    for c in s.nfkd().filter(|c| !('\u{300}'..='\u{36f}').contains(c)) {
        match c {
            'ß' => folded.push_str("ss"),
            'æ' | 'Æ' => folded.push_str("ae"),
            'œ' | 'Œ' => folded.push_str("oe"),
            'ø' | 'Ø' => folded.push('o'),
            'ł' | 'Ł' => folded.push('l'),
            'đ' | 'ð' | 'Đ' | 'Ð' => folded.push('d'),
            'þ' | 'Þ' => folded.push_str("th"),
            c => folded.push(c),
        }
    }
    openhuman_common::normalize_id(&folded)
}

/// Background work that runs once, a delay after it is first asked for: every request while it
/// waits joins that run (the fts flush and the WAL checkpoint, each about a second after writes).
/// The thread holds only what `work` captures, so a store being closed is not kept open by it.
#[derive(Default)]
pub(crate) struct Deferred {
    waiting: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Deferred {
    /// Runs `work` on a thread named `name` after `delay`, unless a run is already waiting.
    /// Returns `work` back when no thread could be started, for the caller to run or drop.
    pub fn request<F: FnOnce() + Send + 'static>(
        &self,
        name: &str,
        delay: std::time::Duration,
        work: F,
    ) -> Result<(), F> {
        use std::sync::atomic::Ordering;
        if self.waiting.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let waiting = self.waiting.clone();
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(work)));
        let taken = slot.clone();
        let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
            std::thread::sleep(delay);
            waiting.store(false, Ordering::SeqCst);
            if let Some(work) = taken.lock().unwrap_or_else(|e| e.into_inner()).take() {
                work();
            }
        });
        if spawned.is_err() {
            self.waiting.store(false, Ordering::SeqCst);
            if let Some(work) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
                return Err(work);
            }
        }
        Ok(())
    }
}

/// What follows the `[2024-01-02 10:00] ` stamp that opens each message of a chat chunk as chat
/// ingest writes it (`sender: text`); `None` for a line without one.
pub(crate) fn after_stamp(line: &str) -> Option<&str> {
    Some(line.strip_prefix('[')?.split_once("] ")?.1)
}

/// A line of a chat chunk as chat ingest writes it, `[2024-01-02 10:00] sender: text` →
/// (sender, text), the sender being one of `speakers` (the chunk's `participants`; a sender
/// may hold `: ` itself). `None` for a message's further lines.
pub(crate) fn chat_line<'a>(line: &'a str, speakers: &[&'a str]) -> Option<(&'a str, &'a str)> {
    let rest = after_stamp(line)?;
    let who = speakers
        .iter()
        .filter(|s| rest.starts_with(**s) && rest[s.len()..].starts_with(": "))
        .max_by_key(|s| s.len())?;
    Some((who, &rest[who.len() + 2..]))
}

/// The longest context a lone chat message keeps (the message it answers, `metadata.context`),
/// in bytes: a sentence or two of the message answered is what matching needs, not a pasted log.
pub(crate) const CHAT_CONTEXT_MAX: usize = 500;

/// `line` cut to at most `max` bytes, at the last whitespace before the cut when there is one.
pub(crate) fn cut_at_word(line: String, max: usize) -> String {
    if line.len() <= max {
        return line;
    }
    let head = openhuman_common::truncate_bytes(&line, max);
    head[..head.rfind(char::is_whitespace).unwrap_or(head.len())].to_string()
}
