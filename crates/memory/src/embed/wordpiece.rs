//! BERT uncased tokenisation: text cleaning, CJK splitting, accent stripping,
//! lowercasing, whitespace/punctuation splitting, then WordPiece greedy
//! longest-match-first with `##` continuation pieces.
//!
//! It follows the `BertNormalizer` + `BertPreTokenizer` + `WordPiece`
//! pipeline of the model's `tokenizer.json` (clean text, handle Chinese
//! characters, strip accents, lowercase; max 100 characters per word), without
//! the special tokens: the static embedder pools word pieces only.

use std::collections::HashMap;

use super::unicode_tables::{CONTROL, NONSPACING_MARK, PUNCTUATION, STRIP_ACCENTS};
use crate::MemoryError;
use crate::util::FxBuild;

/// Words longer than this many characters become `[UNK]`, as in BERT.
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary plus the BERT uncased pre-tokenisation rules.
pub struct WordPiece {
    /// Pieces that may start a word ("car").
    heads: HashMap<Box<str>, u32, FxBuild>,
    /// Continuation pieces, stored without their `##` prefix ("##s" -> "s").
    tails: HashMap<Box<str>, u32, FxBuild>,
    /// Longest piece, in bytes: bounds the greedy search.
    max_piece_bytes: usize,
    unk: u32,
    len: usize,
}

impl WordPiece {
    /// Builds the tokeniser from a `vocab.txt` (one token per line, the line
    /// number being the id). It must contain `[UNK]`.
    pub fn from_vocab(vocab: &str) -> Result<Self, MemoryError> {
        let mut heads = HashMap::with_capacity_and_hasher(32_768, FxBuild::default());
        let mut tails = HashMap::with_capacity_and_hasher(8_192, FxBuild::default());
        let mut max_piece_bytes = 1;
        let mut unk = None;
        let mut len = 0usize;
        for (id, line) in vocab.lines().enumerate() {
            let id = u32::try_from(id).map_err(|e| MemoryError::Corrupt(format!("vocabulary: {e}")))?;
            len += 1;
            if line == "[UNK]" {
                unk = Some(id);
            }
            let (map, piece) = match line.strip_prefix("##") {
                Some(rest) if !rest.is_empty() => (&mut tails, rest),
                _ => (&mut heads, line),
            };
            max_piece_bytes = max_piece_bytes.max(piece.len());
            // Keep the first id if a token is listed twice.
            map.entry(piece.into()).or_insert(id);
        }
        let Some(unk) = unk else {
            return Err(MemoryError::Corrupt("vocabulary has no [UNK] token".to_string()));
        };
        Ok(Self { heads, tails, max_piece_bytes, unk, len })
    }

    /// Number of entries in the vocabulary (the highest id + 1).
    pub fn vocab_size(&self) -> usize {
        self.len
    }

    /// The id of `[UNK]`.
    pub fn unk(&self) -> u32 {
        self.unk
    }

    /// The id of `word` as a whole word (a piece that may start one), if the vocabulary has it.
    pub fn word_id(&self, word: &str) -> Option<u32> {
        self.heads.get(word).copied()
    }

    /// Every piece that may start a word, with its id, in no particular order.
    pub fn words(&self) -> impl Iterator<Item = (&str, u32)> {
        self.heads.iter().map(|(w, &id)| (&**w, id))
    }

    /// Tokenises `text` (no `[CLS]`/`[SEP]` added).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        self.encode_into(text, &mut out);
        out
    }

    /// Tokenises `text`, appending the ids to `out`.
    pub fn encode_into(&self, text: &str, out: &mut Vec<u32>) {
        let mut word = Word::default();
        for ch in text.chars() {
            if ch.is_ascii() {
                match ch {
                    'a'..='z' | '0'..='9' => word.push(ch),
                    'A'..='Z' => word.push(ch.to_ascii_lowercase()),
                    ' ' | '\t' | '\n' | '\r' => self.flush(&mut word, out),
                    c if c.is_ascii_punctuation() => self.single(c, &mut word, out),
                    // The rest of ASCII is control characters: dropped.
                    _ => {}
                }
                continue;
            }
            if ch == '\u{fffd}' || in_ranges(CONTROL, ch) {
                continue;
            }
            if ch.is_whitespace() {
                self.flush(&mut word, out);
                continue;
            }
            if is_cjk(ch) {
                self.flush(&mut word, out);
                normalise(ch, |c| word.push(c));
                self.flush(&mut word, out);
                continue;
            }
            normalise(ch, |c| {
                if c.is_ascii_punctuation() || (!c.is_ascii() && in_ranges(PUNCTUATION, c)) {
                    self.single(c, &mut word, out);
                } else if c.is_whitespace() {
                    self.flush(&mut word, out);
                } else {
                    word.push(c);
                }
            });
        }
        self.flush(&mut word, out);
    }

    /// A punctuation character: ends the current word and is a word itself.
    fn single(&self, c: char, word: &mut Word, out: &mut Vec<u32>) {
        self.flush(word, out);
        word.push(c);
        self.flush(word, out);
    }

    fn flush(&self, word: &mut Word, out: &mut Vec<u32>) {
        if word.text.is_empty() {
            return;
        }
        if word.chars > MAX_WORD_CHARS {
            out.push(self.unk);
        } else {
            self.wordpiece(&word.text, out);
        }
        word.text.clear();
        word.chars = 0;
    }

    /// Greedy longest-match-first. A word with any unmatched part is `[UNK]`.
    fn wordpiece(&self, w: &str, out: &mut Vec<u32>) {
        let mark = out.len();
        let mut start = 0;
        while start < w.len() {
            let map = if start == 0 { &self.heads } else { &self.tails };
            let mut end = w.len().min(start + self.max_piece_bytes);
            while !w.is_char_boundary(end) {
                end -= 1;
            }
            let mut found = None;
            while end > start {
                if let Some(&id) = map.get(&w[start..end]) {
                    found = Some(id);
                    break;
                }
                end -= 1;
                while !w.is_char_boundary(end) {
                    end -= 1;
                }
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    out.push(self.unk);
                    return;
                }
            }
        }
    }
}

#[derive(Default)]
struct Word {
    text: String,
    chars: usize,
}

impl Word {
    fn push(&mut self, c: char) {
        self.text.push(c);
        self.chars += 1;
    }
}

/// Strip accents (NFD, drop non-spacing marks), then lowercase; calls `emit`
/// for every resulting character.
fn normalise(ch: char, mut emit: impl FnMut(char)) {
    let mut lower = |c: char| {
        for l in c.to_lowercase() {
            // Lowercasing can produce a combining mark (U+0130 -> i + U+0307).
            if l.is_ascii() || !in_ranges(NONSPACING_MARK, l) {
                emit(l);
            }
        }
    };
    if in_ranges(NONSPACING_MARK, ch) {
        return;
    }
    let cp = u32::from(ch);
    if (HANGUL_BASE..HANGUL_BASE + HANGUL_COUNT).contains(&cp) {
        for j in hangul_jamo(cp).into_iter().flatten() {
            lower(j);
        }
        return;
    }
    match STRIP_ACCENTS.binary_search_by(|(k, _)| k.cmp(&ch)) {
        Ok(i) => STRIP_ACCENTS[i].1.chars().for_each(lower),
        Err(_) => lower(ch),
    }
}

const HANGUL_BASE: u32 = 0xAC00;
const HANGUL_COUNT: u32 = 11_172;

/// Canonical decomposition of a precomposed Hangul syllable into its jamo.
fn hangul_jamo(cp: u32) -> [Option<char>; 3] {
    const L_BASE: u32 = 0x1100;
    const V_BASE: u32 = 0x1161;
    const T_BASE: u32 = 0x11A7;
    const V_COUNT: u32 = 21;
    const T_COUNT: u32 = 28;
    let s = cp - HANGUL_BASE;
    let l = L_BASE + s / (V_COUNT * T_COUNT);
    let v = V_BASE + (s % (V_COUNT * T_COUNT)) / T_COUNT;
    let t = s % T_COUNT;
    [char::from_u32(l), char::from_u32(v), if t == 0 { None } else { char::from_u32(T_BASE + t) }]
}

/// The CJK ideograph blocks BERT surrounds with spaces. As in the Hugging
/// Face implementation the model was trained with, the Extension E range
/// starts at U+2B920 (the original BERT code says U+2B820).
fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

fn in_ranges(table: &[(u32, u32)], c: char) -> bool {
    let cp = u32::from(c);
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nun\n##aff\n##able\nrun\n##ning\n,\n!\nhello\nworld\ncafe\n\u{4f60}\n\u{597d}\n\u{1100}\n\u{1161}\n\u{11a8}\n";

    fn tiny() -> WordPiece {
        WordPiece::from_vocab(TINY).unwrap()
    }

    #[test]
    fn greedy_longest_match_with_continuations() {
        let t = tiny();
        assert_eq!(t.encode("unaffable running"), vec![4, 5, 6, 7, 8]);
        // Any unmatched part turns the whole word into [UNK].
        assert_eq!(t.encode("unaffablex"), vec![1]);
    }

    #[test]
    fn lowercases_strips_accents_and_splits_punctuation() {
        let t = tiny();
        assert_eq!(t.encode("Hello,World!"), vec![11, 9, 12, 10]);
        assert_eq!(t.encode("CAFÉ"), vec![13]);
        // A combining accent typed separately is dropped too.
        assert_eq!(t.encode("cafe\u{301}"), vec![13]);
    }

    #[test]
    fn cjk_and_hangul() {
        let t = tiny();
        assert_eq!(t.encode("你好"), vec![14, 15]);
        // U+AC01 decomposes to U+1100 U+1161 U+11A8; no such whole piece.
        assert_eq!(t.encode("\u{ac01}"), vec![1]);
    }

    #[test]
    fn cleaning_and_long_words() {
        let t = tiny();
        assert_eq!(t.encode("hello\u{200b}world"), vec![1]); // ZWSP (Cf) is removed: "helloworld"
        assert_eq!(t.encode("hello\u{a0}world\u{0}"), vec![11, 12]);
        assert_eq!(t.encode(""), Vec::<u32>::new());
        assert_eq!(t.encode(" \n\t "), Vec::<u32>::new());
        assert_eq!(t.encode(&"a".repeat(101)), vec![1]);
    }
}
