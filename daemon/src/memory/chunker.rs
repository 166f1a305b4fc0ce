//! Splits Markdown and plain text into chunks of about 300–500 tokens: first at
//! headings, then at paragraphs, then (for over-long paragraphs) at sentences and
//! words. A fenced code block stays whole unless it alone exceeds twice the maximum; a
//! fence that must be split is re-opened and closed in every piece so each chunk is
//! still valid Markdown.
//!
//! Token rule: whitespace-separated words × 1.3, rounded up (`util::estimate_tokens`).

use super::util::{estimate_tokens, words_to_tokens};

/// Chunks end once they reach this many tokens at a section boundary.
pub(crate) const MIN_TOKENS: usize = 300;
/// No chunk exceeds this unless it is one code block of at most `2 * MAX_TOKENS`.
pub(crate) const MAX_TOKENS: usize = 500;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextChunk {
    pub content: String,
    /// Heading path at the start of the chunk, e.g. `Setup > Linux`.
    pub heading: Option<String>,
    pub tokens: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Format {
    Markdown,
    Plain,
}

#[derive(Debug)]
enum Block {
    Heading { level: usize, text: String, raw: String },
    Para(String),
    /// A fenced code block: the opening line, the body lines and the closing line.
    Code { open: String, body: Vec<String>, close: String },
}

impl Block {
    fn text(&self) -> String {
        match self {
            Block::Heading { raw, .. } => raw.clone(),
            Block::Para(t) => t.clone(),
            Block::Code { open, body, close } => {
                let mut s = open.clone();
                for l in body {
                    s.push('\n');
                    s.push_str(l);
                }
                if !close.is_empty() {
                    s.push('\n');
                    s.push_str(close);
                }
                s
            }
        }
    }
}

fn fence_marker(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let c = t.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim().to_string()))
}

fn parse_blocks(text: &str, format: Format) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut lines = text.lines();
    let flush = |para: &mut Vec<&str>, blocks: &mut Vec<Block>| {
        if !para.is_empty() {
            blocks.push(Block::Para(para.join("\n")));
            para.clear();
        }
    };
    while let Some(line) = lines.next() {
        if format == Format::Markdown {
            if let Some((c, n)) = fence_marker(line) {
                flush(&mut para, &mut blocks);
                let mut body = Vec::new();
                let mut close = String::new();
                for l in lines.by_ref() {
                    if fence_marker(l).is_some_and(|(c2, n2)| c2 == c && n2 >= n)
                        && l.trim().chars().all(|x| x == c)
                    {
                        close = l.to_string();
                        break;
                    }
                    body.push(l.to_string());
                }
                blocks.push(Block::Code { open: line.to_string(), body, close });
                continue;
            }
            if let Some((level, text)) = heading(line) {
                flush(&mut para, &mut blocks);
                blocks.push(Block::Heading { level, text, raw: line.to_string() });
                continue;
            }
        }
        if line.trim().is_empty() {
            flush(&mut para, &mut blocks);
        } else {
            para.push(line);
        }
    }
    flush(&mut para, &mut blocks);
    blocks
}

/// Splits one over-long block into pieces of at most `MAX_TOKENS`.
fn split_block(block: &Block) -> Vec<String> {
    match block {
        Block::Code { open, body, close } => {
            let close = if close.is_empty() { open.trim_start().chars().take_while(|c| *c == '`' || *c == '~').collect() } else { close.clone() };
            let mut out = Vec::new();
            let mut cur: Vec<&str> = Vec::new();
            let mut words = 0;
            for l in body {
                let w = l.split_whitespace().count().max(1);
                if !cur.is_empty() && words_to_tokens(words + w) > MAX_TOKENS {
                    out.push(format!("{open}\n{}\n{close}", cur.join("\n")));
                    cur.clear();
                    words = 0;
                }
                cur.push(l);
                words += w;
            }
            if !cur.is_empty() {
                out.push(format!("{open}\n{}\n{close}", cur.join("\n")));
            }
            out
        }
        other => split_prose(&other.text()),
    }
}

/// Packs sentences (or, for a single over-long sentence, words) into pieces.
fn split_prose(text: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let end_of_sentence = matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(|n| n.is_ascii_whitespace());
        if end_of_sentence || b == b'\n' {
            sentences.push(&text[start..=i]);
            start = i + 1;
        }
    }
    if start < text.len() {
        sentences.push(&text[start..]);
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    for s in sentences {
        let s = s.trim();
        if s.is_empty() {
            continue;
        }
        if estimate_tokens(s) > MAX_TOKENS {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            let words: Vec<&str> = s.split_whitespace().collect();
            let per = MAX_TOKENS * 10 / 13;
            out.extend(words.chunks(per).map(|w| w.join(" ")));
            continue;
        }
        if !cur.is_empty() && estimate_tokens(&cur) + estimate_tokens(s) > MAX_TOKENS {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(s);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct Packer {
    chunks: Vec<TextChunk>,
    parts: Vec<String>,
    tokens: usize,
    heading: Option<String>,
}

impl Packer {
    fn flush(&mut self) {
        if self.parts.is_empty() {
            return;
        }
        let content = self.parts.join("\n\n");
        let tokens = estimate_tokens(&content);
        self.chunks.push(TextChunk { content, heading: self.heading.clone(), tokens });
        self.parts.clear();
        self.tokens = 0;
    }

    fn push(&mut self, text: String, tokens: usize, heading: &Option<String>) {
        if self.parts.is_empty() {
            self.heading = heading.clone();
        }
        self.parts.push(text);
        self.tokens += tokens;
    }
}

/// Chunks `text`. Empty or whitespace-only input gives no chunks.
pub(crate) fn chunk_text(text: &str, format: Format) -> Vec<TextChunk> {
    let blocks = parse_blocks(text, format);
    // Group blocks into sections, each starting at a heading, with the heading path.
    let mut sections: Vec<(Option<String>, Vec<Block>)> = vec![(None, Vec::new())];
    let mut path: Vec<(usize, String)> = Vec::new();
    for b in blocks {
        if let Block::Heading { level, text, .. } = &b {
            path.retain(|(l, _)| l < level);
            path.push((*level, text.clone()));
            let joined = path.iter().map(|(_, t)| t.as_str()).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" > ");
            sections.push((Some(joined).filter(|s| !s.is_empty()), Vec::new()));
        }
        sections.last_mut().expect("sections is never empty").1.push(b);
    }

    let mut p = Packer { chunks: Vec::new(), parts: Vec::new(), tokens: 0, heading: None };
    for (heading, blocks) in sections {
        if blocks.is_empty() {
            continue;
        }
        let texts: Vec<(String, usize, &Block)> = blocks
            .iter()
            .map(|b| {
                let t = b.text();
                let n = estimate_tokens(&t);
                (t, n, b)
            })
            .collect();
        let section_tokens: usize = texts.iter().map(|t| t.1).sum();
        // Prefer a heading as the chunk boundary: close the running chunk when it is
        // already big enough or when the whole section would not fit in it.
        if p.tokens > 0 && (p.tokens >= MIN_TOKENS || p.tokens + section_tokens > MAX_TOKENS) {
            p.flush();
        }
        for (text, tokens, block) in texts {
            let is_code = matches!(block, Block::Code { .. });
            let limit = if is_code { 2 * MAX_TOKENS } else { MAX_TOKENS };
            let pieces = if tokens > limit {
                split_block(block).into_iter().map(|s| {
                    let n = estimate_tokens(&s);
                    (s, n)
                }).collect()
            } else {
                vec![(text, tokens)]
            };
            for (piece, n) in pieces {
                if p.tokens > 0 && p.tokens + n > MAX_TOKENS {
                    p.flush();
                }
                p.push(piece, n, &heading);
            }
        }
    }
    p.flush();
    p.chunks
}
