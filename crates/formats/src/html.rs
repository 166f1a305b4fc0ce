//! HTML pages → their visible text as Markdown-like text and a title: the visible text, read by a small tolerant scanner (no DOM).
//! `<script>`, `<style>`, `<template>`, `<noscript>`, `<svg>`, comments and everything in
//! `<head>` but the `<title>` are dropped; block elements end lines, headings become Markdown
//! headings (so chunks break at them), list items become `- ` lines, `<pre>` keeps its spacing,
//! and character references are decoded. The title is `<title>`, else the first heading.

const DROPPED: &[&str] = &["script", "style", "template", "noscript", "svg", "head"];
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "ul",
    "ol",
    "blockquote",
    "pre",
    "hr",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "form",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "td",
    "th",
    "body",
    "html",
];

/// A page's title and its visible text.
#[derive(Debug, Default)]
pub(crate) struct Page {
    pub title: Option<String>,
    pub text: String,
}

/// The tag at the start of `s` (just after `<`): its lower-case name, whether it closes, and
/// the length up to and including `>`.
fn tag_at(s: &str) -> Option<(String, bool, usize)> {
    // The first `>` outside a quoted attribute value ends the tag.
    let mut quote = None;
    let close = s.char_indices().find(|&(_, c)| match quote {
        Some(q) if c == q => {
            quote = None;
            false
        }
        Some(_) => false,
        None if c == '"' || c == '\'' => {
            quote = Some(c);
            false
        }
        None => c == '>',
    });
    let end = close?.0 + 1;
    let inner = &s[..end - 1];
    let (closing, inner) = match inner.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, inner),
    };
    let name: String = inner.chars().take_while(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    (!name.is_empty()).then_some((name, closing, end))
}

pub(crate) fn extract(html: &str) -> Page {
    let mut out = String::new();
    let mut title: Option<String> = None;
    let mut first_heading: Option<String> = None;
    let mut heading: Option<String> = None;
    let mut pre = 0usize;
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        push_text(&mut out, &rest[..i], pre > 0, &mut heading);
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix("!--") {
            rest = after.find("-->").map_or("", |e| &after[e + 3..]);
            continue;
        }
        let Some((name, closing, len)) = tag_at(rest) else {
            // A `<` that opens no tag is text, as browsers read it; `<!DOCTYPE>` and `<?xml?>` go.
            match rest.find('>') {
                Some(e) if rest.starts_with(['!', '?']) => rest = &rest[e + 1..],
                _ => out.push('<'),
            }
            continue;
        };
        rest = &rest[len..];
        if name == "title" && !closing {
            let end = find_close(rest, "title");
            title = Some(decode_entities(&collapse(&rest[..end])));
            rest = skip_close(&rest[end..]);
        } else if DROPPED.contains(&name.as_str()) && !closing {
            if name == "head" {
                // Only the title matters in the head. `</head>` may be left out: `<body>`
                // ends it too.
                let end = find_close(rest, "head").min(find_tag(rest, "<", "body"));
                let head = &rest[..end];
                let t = &head[find_tag(head, "<", "title")..];
                if !t.is_empty() {
                    let start = t.find('>').map_or(t.len(), |x| x + 1);
                    let stop = find_close(&t[start..], "title");
                    title = Some(decode_entities(&collapse(&t[start..start + stop])));
                }
                rest = if rest[end..].starts_with("</") { skip_close(&rest[end..]) } else { &rest[end..] };
            } else {
                let end = find_close(rest, &name);
                rest = skip_close(&rest[end..]);
            }
        } else if name.len() == 2 && name.starts_with('h') && name.as_bytes()[1].is_ascii_digit() {
            let level = (name.as_bytes()[1] - b'0') as usize;
            if closing {
                if let Some(h) = heading.take() {
                    let h = collapse(&h);
                    if !h.is_empty() {
                        first_heading.get_or_insert_with(|| h.clone());
                        out.push_str(&format!("\n\n{} {h}\n\n", "#".repeat(level.clamp(1, 6))));
                    }
                }
            } else {
                heading = Some(String::new());
            }
        } else if name == "pre" {
            pre = if closing { pre.saturating_sub(1) } else { pre + 1 };
            out.push_str("\n\n");
        } else if name == "li" {
            if !closing {
                out.push_str("\n- ");
            }
        } else if BLOCKS.contains(&name.as_str()) {
            out.push_str(if name == "br" || name == "td" || name == "th" { "\n" } else { "\n\n" });
        }
    }
    push_text(&mut out, rest, pre > 0, &mut heading);
    let text = tidy(&out);
    Page { title: title.filter(|t| !t.is_empty()).or(first_heading), text }
}

/// Appends a run of text: into the open heading, else to the output (spacing collapsed
/// outside `<pre>`).
fn push_text(out: &mut String, raw: &str, pre: bool, heading: &mut Option<String>) {
    if raw.is_empty() {
        return;
    }
    let text = decode_entities(raw);
    if let Some(h) = heading {
        h.push_str(&text);
        return;
    }
    if pre {
        out.push_str(&text);
        return;
    }
    let collapsed = collapse(&text);
    if collapsed.is_empty() {
        if raw.chars().any(char::is_whitespace) && !out.ends_with([' ', '\n']) {
            out.push(' ');
        }
        return;
    }
    if text.starts_with(char::is_whitespace) && !out.ends_with([' ', '\n']) {
        out.push(' ');
    }
    out.push_str(&collapsed);
    if text.ends_with(char::is_whitespace) {
        out.push(' ');
    }
}

/// Where `</name` starts in `s` (any case), or the end of `s`.
fn find_close(s: &str, name: &str) -> usize {
    find_tag(s, "</", name)
}

/// Where `{open}name` starts in `s`, any case, followed by no more of a name (so `</head`
/// does not match `</header`); the end of `s` when it is not there.
fn find_tag(s: &str, open: &str, name: &str) -> usize {
    let at = |i: usize| {
        let start = i + open.len();
        s.get(start..start + name.len()).is_some_and(|n| n.eq_ignore_ascii_case(name))
            && !s.as_bytes().get(start + name.len()).is_some_and(u8::is_ascii_alphanumeric)
    };
    s.match_indices(open).find(|(i, _)| at(*i)).map_or(s.len(), |(i, _)| i)
}

/// What follows the closing tag at the start of `s`.
fn skip_close(s: &str) -> &str {
    s.find('>').map_or("", |e| &s[e + 1..])
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Trims every line's end and keeps at most one blank line in a row.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

/// `&amp;`, `&#233;`, `&#xE9;` and the named references pages use most.
pub(crate) fn decode_entities(s: &str) -> String {
    const NAMED: &[(&str, &str)] = &[
        ("amp", "&"),
        ("lt", "<"),
        ("gt", ">"),
        ("quot", "\""),
        ("apos", "'"),
        ("nbsp", " "),
        ("mdash", "—"),
        ("ndash", "–"),
        ("hellip", "…"),
        ("copy", "©"),
        ("reg", "®"),
        ("lsquo", "‘"),
        ("rsquo", "’"),
        ("ldquo", "“"),
        ("rdquo", "”"),
        ("eacute", "é"),
        ("egrave", "è"),
        ("agrave", "à"),
        ("uuml", "ü"),
        ("ouml", "ö"),
        ("auml", "ä"),
        ("szlig", "ß"),
        ("euro", "€"),
    ];
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.char_indices().take(12).find(|(_, c)| *c == ';').map(|(j, _)| j);
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = if let Some(num) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                u32::from_str_radix(num, 16).ok().and_then(char::from_u32).map(String::from)
            } else if let Some(num) = name.strip_prefix('#') {
                num.parse::<u32>().ok().and_then(char::from_u32).map(String::from)
            } else {
                NAMED.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push_str(&c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_text_title_and_headings() {
        let page = extract(
            "<!DOCTYPE html><html><head><meta charset=utf-8><title>Tide &amp; Moon</title>\
             <style>body{color:red}</style><script>var x = \"<p>no</p>\";</script></head>\
             <body><h1>Tides</h1><p>The moon <b>pulls</b> the sea.</p><!-- hidden -->\
             <ul><li>Spring tides</li><li>Neap&nbsp;tides</li></ul><pre>a  b\n  c</pre>\
             <p>caf&#233; &#x263A; 3 &lt; 4</p><script src=x.js></script><SCRIPT>x()</Script></body></html>",
        );
        assert_eq!(page.title.as_deref(), Some("Tide & Moon"));
        assert_eq!(
            page.text,
            "# Tides\n\nThe moon pulls the sea.\n\n- Spring tides\n- Neap tides\n\na  b\n  c\n\ncafé ☺ 3 < 4"
        );
        let bare = extract("<h2>Only a heading</h2>text");
        assert_eq!(bare.title.as_deref(), Some("Only a heading"));
        let quoted = extract(r#"<p><a title="a > b" href='x>y'>link</a> text</p>"#);
        assert_eq!(quoted.text, "link text");
        let no_head_end = extract("<html><HEAD><TITLE>T</TITLE><body><header>Top</header><p>Body text</p>");
        assert_eq!((no_head_end.title.as_deref(), no_head_end.text.as_str()), (Some("T"), "Top\n\nBody text"));
    }
}
