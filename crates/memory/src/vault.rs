//! Markdown as note-taking apps (Obsidian, Logseq, Foam) write it: a YAML front-matter block
//! whose `tags:` (and `title:`) say what the note is about, inline `#tags`, and `[[wiki links]]`
//! to other notes (`[[Note]]`, `[[folder/Note#Heading|shown text]]`, embeds `![[Note]]`).
//!
//! Only what memory uses is read: this is not a YAML parser. `tags` may be a flow list
//! (`[a, b]`), a block list (`- a`) or a comma- or space-separated string; a leading `#` is
//! dropped. Text inside code fences and inline code spans is never read for tags or links.

/// One `[[wiki link]]` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WikiLink {
    /// The note named, without `.md`, alias or heading: `folder/Note`.
    pub target: String,
    /// The `#heading` part, if any.
    pub heading: String,
    /// The `|shown text` part, if any.
    pub alias: String,
}

/// What the front matter said, and where the note's body starts.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FrontMatter {
    pub tags: Vec<String>,
    pub title: Option<String>,
    /// Byte offset of the text after the front matter (0 when there is none).
    pub body_start: usize,
}

/// Reads a leading `---` … `---` (or `...`) block.
pub(crate) fn front_matter(text: &str) -> FrontMatter {
    let mut out = FrontMatter::default();
    let first_len = match text.split_inclusive('\n').next() {
        Some(l) if l.trim_end() == "---" => l.len(),
        _ => return out,
    };
    let mut offset = first_len;
    let mut lines = Vec::new();
    let mut closed = false;
    for line in text[first_len..].split_inclusive('\n') {
        offset += line.len();
        let t = line.trim_end();
        if t == "---" || t == "..." {
            closed = true;
            break;
        }
        lines.push(t);
    }
    if !closed {
        return out;
    }
    out.body_start = offset;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let Some((key, value)) = line.split_once(':') else { continue };
        if line.starts_with([' ', '\t', '-']) {
            continue;
        }
        let value = value.trim();
        match key.trim().to_ascii_lowercase().as_str() {
            "tags" | "tag" => {
                if value.is_empty() {
                    while i < lines.len() && lines[i].trim_start().starts_with('-') {
                        push_tag(&mut out.tags, lines[i].trim_start()[1..].trim());
                        i += 1;
                    }
                } else {
                    let inner = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')).unwrap_or(value);
                    let sep = if inner.contains(',') { ',' } else { ' ' };
                    for t in inner.split(sep) {
                        push_tag(&mut out.tags, t);
                    }
                }
            }
            "title" if !value.is_empty() => out.title = Some(unquote(value).to_string()),
            _ => {}
        }
    }
    out
}

fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|x| x.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

fn push_tag(tags: &mut Vec<String>, raw: &str) {
    let t = unquote(raw).trim().trim_start_matches('#').trim();
    if !t.is_empty() && t.chars().count() <= 128 && !tags.iter().any(|x| x == t) {
        tags.push(t.to_string());
    }
}

/// Lines of `text` outside code fences, with inline code spans blanked.
fn prose_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut in_fence = false;
    text.lines().filter_map(move |line| {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            return None;
        }
        if in_fence {
            return None;
        }
        let mut out = String::with_capacity(line.len());
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                out.push(' ');
            } else {
                out.push(if in_code { ' ' } else { c });
            }
        }
        Some(out)
    })
}

fn tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/')
}

/// Inline `#tags` in prose: `#` at the start or after white space or `(`, followed by letters,
/// digits, `_`, `-` or `/`, with at least one non-digit (so `#1` and headings are not tags).
pub(crate) fn inline_tags(text: &str) -> Vec<String> {
    let mut tags = Vec::new();
    for line in prose_lines(text) {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let starts = chars[i] == '#' && (i == 0 || chars[i - 1].is_whitespace() || chars[i - 1] == '(');
            if !starts {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < chars.len() && tag_char(chars[j]) {
                j += 1;
            }
            let tag: String = chars[i + 1..j].iter().collect::<String>().trim_end_matches(['/', '-']).to_string();
            if tag.chars().any(|c| !c.is_ascii_digit()) {
                push_tag(&mut tags, &tag);
            }
            i = j.max(i + 1);
        }
    }
    tags
}

/// `[[wiki links]]` in prose, in order, each once.
pub(crate) fn wiki_links(text: &str) -> Vec<WikiLink> {
    let mut out: Vec<WikiLink> = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(start) = rest.find("[[") {
            let after = &rest[start + 2..];
            let Some(end) = after.find("]]") else { break };
            let inner = &after[..end];
            rest = &after[end + 2..];
            if inner.contains('[') || inner.trim().is_empty() {
                continue;
            }
            let (inner, alias) = match inner.split_once('|') {
                Some((l, a)) => (l, a.trim()),
                None => (inner, ""),
            };
            let (target, heading) = match inner.split_once('#') {
                Some((t, h)) => (t, h.trim()),
                None => (inner, ""),
            };
            let target = target.trim();
            let target = target.strip_suffix(".md").unwrap_or(target).trim();
            if target.is_empty() {
                // `[[#Heading]]` links within the same note.
                continue;
            }
            let link = WikiLink { target: target.to_string(), heading: heading.to_string(), alias: alias.to_string() };
            if !out.contains(&link) {
                out.push(link);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_tag_forms() {
        let fm = front_matter("---\ntitle: \"Daily\"\ntags: [work, \"#plans\"]\n---\n# Body\n");
        assert_eq!(fm.tags, ["work", "plans"]);
        assert_eq!(fm.title.as_deref(), Some("Daily"));
        assert_eq!(&"---\ntitle: \"Daily\"\ntags: [work, \"#plans\"]\n---\n# Body\n"[fm.body_start..], "# Body\n");
        let fm = front_matter("---\ntags:\n  - alpha\n  - beta/gamma\naliases: [x]\n---\ntext");
        assert_eq!(fm.tags, ["alpha", "beta/gamma"]);
        assert_eq!(front_matter("---\ntags: one, two\n---\n").tags, ["one", "two"]);
        assert_eq!(front_matter("---\ntags: one two\n---\n").tags, ["one", "two"]);
        assert_eq!(front_matter("no front matter\n---\n"), FrontMatter::default());
        assert_eq!(front_matter("---\ntags: [a]\nnever closed\n"), FrontMatter::default());
    }

    #[test]
    fn inline_tags_skip_headings_numbers_and_code() {
        let text =
            "# Heading\nSee #project/alpha and (#idea) but not #123 or a#b.\n`#code` here\n```\n#fenced\n```\n#last-";
        assert_eq!(inline_tags(text), ["project/alpha", "idea", "last"]);
    }

    #[test]
    fn wiki_links_with_alias_heading_and_embeds() {
        let text = "Read [[Other Note]] and [[folder/Plan.md#Goals|the plan]], ![[Diagram]], [[#Local]].\n\
                    `[[not a link]]` [[Other Note]]";
        let links = wiki_links(text);
        assert_eq!(links.len(), 3);
        assert_eq!(links[0], WikiLink { target: "Other Note".into(), heading: String::new(), alias: String::new() });
        assert_eq!(
            links[1],
            WikiLink { target: "folder/Plan".into(), heading: "Goals".into(), alias: "the plan".into() }
        );
        assert_eq!(links[2].target, "Diagram");
    }
}
