//! Pure text helpers every layer uses with one meaning: identifier normalisation, credential
//! detection and redaction, and loopback host checks. No I/O, no allocation beyond the result.

/// Normalises a client, provider or entity name: lowercase ASCII letters and digits are kept,
/// every run of anything else becomes one `-`, and `-` is trimmed from both ends.
pub fn normalize_id(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut pending_dash = false;
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            pending_dash = true;
        }
    }
    out
}

/// True for strings that look like credentials (API keys, tokens, private keys). Such values are
/// stored when the user asks (it is their memory) but never copied into audit rows or logs.
pub fn looks_secret(s: &str) -> bool {
    const PREFIXES: &[&str] =
        &["sk-", "sk_live_", "sk_test_", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "AKIA", "AIza", "glpat-"];
    let t = s.trim();
    if t.contains("-----BEGIN") || t.to_ascii_lowercase().starts_with("bearer ") {
        return true;
    }
    t.split_whitespace().any(|w| {
        PREFIXES.iter().any(|p| w.starts_with(p) && w.len() >= p.len() + 12)
            || (w.len() >= 32
                && w.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
                && w.chars().any(|c| c.is_ascii_digit())
                && w.chars().any(|c| c.is_ascii_uppercase())
                && w.chars().any(|c| c.is_ascii_lowercase()))
    })
}

/// Replaces `secret` (when given and at least 4 characters) and every word that looks like a
/// credential with `[redacted]`. A word is what lies between spaces, less the quotes, backticks
/// and punctuation around it (error texts quote values: `` `sk-…`, `` or `"sk-…")`), which stay.
pub fn redact(text: &str, secret: Option<&str>) -> String {
    let replaced;
    let text = match secret.filter(|s| s.len() >= 4) {
        Some(s) => {
            replaced = text.replace(s, "[redacted]");
            replaced.as_str()
        }
        None => text,
    };
    let quote = |c: char| "`'\"()[]{}<>,;:".contains(c);
    text.split(' ')
        .map(|w| {
            let core = w.trim_matches(quote);
            if core.is_empty() || !looks_secret(core) {
                return w.to_string();
            }
            let start = w.len() - w.trim_start_matches(quote).len();
            format!("{}[redacted]{}", &w[..start], &w[start + core.len()..])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub fn truncate_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// True for 127.0.0.0/8, ::1 (bracketed or not) and `localhost`.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_examples() {
        assert_eq!(normalize_id("Claude Desktop"), "claude-desktop");
        assert_eq!(normalize_id("  Zed: Nightly  "), "zed-nightly");
        assert_eq!(normalize_id("会议记录"), "");
        assert_eq!(normalize_id("Acme Tools"), "acme-tools");
        assert_eq!(normalize_id("--Cursor--"), "cursor");
        assert_eq!(normalize_id("a__b  c"), "a-b-c");
    }

    #[test]
    fn secret_detection() {
        assert!(looks_secret("sk-proj-abcdefghijklmnop1234"));
        assert!(looks_secret("my key is ghp_abcdefghijklmnopqrstu12345"));
        assert!(looks_secret("-----BEGIN OPENSSH PRIVATE KEY-----"));
        assert!(!looks_secret("Meeting notes for the quarterly review"));
        assert!(!looks_secret("sk-short"));
    }

    #[test]
    fn redaction_hides_credentials_and_keeps_the_rest() {
        let out = redact("upstream refused key sk-proj-abcdefghijklmnop1234 for user bob", None);
        assert_eq!(out, "upstream refused key [redacted] for user bob");
        assert_eq!(redact("[policy-blocked] readonly", None), "[policy-blocked] readonly");
        assert_eq!(redact("token abcd rejected", Some("abcd")), "token [redacted] rejected");
        assert_eq!(
            redact("unknown arguments: `sk-proj-abcdefghijklmnop1234`, `zeta`", None),
            "unknown arguments: `[redacted]`, `zeta`"
        );
        assert_eq!(redact("got \"ghp_abcdefghijklmnopqrstu12345\")", None), "got \"[redacted]\")");
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate_bytes("héllo", 2), "h");
        assert_eq!(truncate_bytes("héllo", 3), "hé");
        assert_eq!(truncate_bytes("abc", 10), "abc");
    }

    #[test]
    fn loopback_hosts() {
        for h in ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["0.0.0.0", "192.168.1.2", "example.com", "localhost.example.com"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
