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
    Heading {
        level: usize,
        text: String,
        raw: String,
    },
    Para(String),
    /// A fenced code block: the opening line, the body lines and the closing line.
    Code {
        open: String,
        body: Vec<String>,
        close: String,
    },
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
                    if fence_marker(l).is_some_and(|(c2, n2)| c2 == c && n2 >= n) && l.trim().chars().all(|x| x == c) {
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
            let close = if close.is_empty() {
                open.trim_start().chars().take_while(|c| *c == '`' || *c == '~').collect()
            } else {
                close.clone()
            };
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
        let end_of_sentence =
            matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(|n| n.is_ascii_whitespace());
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
                split_block(block)
                    .into_iter()
                    .map(|s| {
                        let n = estimate_tokens(&s);
                        (s, n)
                    })
                    .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize, w: &str) -> String {
        vec![w; n].join(" ")
    }

    #[test]
    fn small_markdown_is_one_chunk_with_its_heading() {
        let c = chunk_text("# Title\n\nHello there.\n\n## Sub\n\nMore.", Format::Markdown);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].heading.as_deref(), Some("Title"));
        assert_eq!(c[0].content, "# Title\n\nHello there.\n\n## Sub\n\nMore.");
        assert!(chunk_text("  \n\n ", Format::Markdown).is_empty());
    }

    #[test]
    fn sections_pack_into_target_sizes_at_heading_boundaries() {
        // Twelve sections of ~130 tokens each.
        let text: String = (0..12).map(|i| format!("## S{i}\n\n{}\n\n", words(100, "w"))).collect();
        let chunks = chunk_text(&text, Format::Markdown);
        for c in &chunks {
            assert!(c.tokens <= MAX_TOKENS, "{}", c.tokens);
            assert!(c.content.starts_with("## S"), "chunk does not start at a heading: {}", &c.content[..20]);
        }
        assert!(
            chunks[..chunks.len() - 1].iter().all(|c| c.tokens >= MIN_TOKENS),
            "{:?}",
            chunks.iter().map(|c| c.tokens).collect::<Vec<_>>()
        );
        assert_eq!(chunks[1].heading.as_deref(), Some("S3"));
    }

    #[test]
    fn long_paragraphs_split_at_sentences() {
        let sentence = format!("{}.", words(30, "word"));
        let para = vec![sentence.as_str(); 40].join(" ");
        let chunks = chunk_text(&para, Format::Plain);
        assert!(chunks.len() >= 3);
        for c in &chunks {
            assert!(c.tokens <= MAX_TOKENS && c.content.ends_with('.'), "{} {}", c.tokens, c.content.len());
        }
        // One enormous sentence still gets cut, by words.
        let chunks = chunk_text(&words(2000, "x"), Format::Plain);
        assert!(chunks.iter().all(|c| c.tokens <= MAX_TOKENS) && chunks.len() >= 5);
    }

    #[test]
    fn code_fences_stay_whole_unless_huge() {
        let code: String = (0..100).map(|i| format!("let x{i} = compute(a, b, c);\n")).collect();
        let text = format!("Intro text.\n\n```rust\n{code}```\n\nAfter.");
        let chunks = chunk_text(&text, Format::Markdown);
        let fenced: Vec<_> = chunks.iter().filter(|c| c.content.contains("```")).collect();
        assert_eq!(fenced.len(), 1, "a ~780-token fence must not be split");
        assert!(fenced[0].content.starts_with("```rust\n") && fenced[0].content.ends_with("```"));
        // A '#' inside a fence is not a heading.
        let c = chunk_text("```\n# not a heading\n```", Format::Markdown);
        assert_eq!(c[0].heading, None);
        let huge: String = (0..400).map(|i| format!("let y{i} = compute(a, b, c);\n")).collect();
        let chunks = chunk_text(&format!("~~~\n{huge}~~~"), Format::Markdown);
        assert!(chunks.len() >= 3);
        for c in &chunks {
            assert!(c.content.starts_with("~~~\n") && c.content.ends_with("\n~~~"), "{}", c.content);
            assert!(c.tokens <= MAX_TOKENS + 10);
        }
    }

    #[test]
    fn plain_text_has_no_headings() {
        let c = chunk_text("# not a heading\n\ntext", Format::Plain);
        assert_eq!((c.len(), c[0].heading.clone()), (1, None));
    }
}
