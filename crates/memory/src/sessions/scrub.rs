//! Secrets out of session text before anything is written: a private-key block becomes
//! `[redacted private key]`; every word the shared detector (`openhuman_common::looks_secret`)
//! takes for a credential becomes `[redacted]`, a word here being a run of letters, digits and
//! `_-+` (so `KEY=sk-…`, `"ghp_…"` and `token:abc…` are seen, which splitting at spaces would
//! miss); the word after `Bearer`; and the value of an assignment whose name says it is a
//! secret (`password=…`, `api_key: …`, `SECRET_TOKEN=…`) when it is 8 characters or more.
//! Deterministic, so the same turn always gives the same chunk.

use openhuman_common::looks_secret;

const NAMED: &[&str] = &["password", "passwd", "secret", "token", "api_key", "apikey", "api-key", "credential"];

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-+".contains(c)
}

/// `text` with its secrets replaced.
pub(crate) fn scrub(text: &str) -> String {
    let text = private_keys(text);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    // What came before the current word: the last word and the separator after it.
    let mut last_word = String::new();
    let mut gap = String::new();
    while !rest.is_empty() {
        let start = rest.find(word_char).unwrap_or(rest.len());
        let (sep, tail) = rest.split_at(start);
        out.push_str(sep);
        gap.push_str(sep);
        if tail.is_empty() {
            break;
        }
        let end = tail.find(|c: char| !word_char(c)).unwrap_or(tail.len());
        let (word, after) = tail.split_at(end);
        let lower_last = last_word.to_ascii_lowercase();
        let after_bearer = lower_last == "bearer" && gap.trim().is_empty() && word.len() >= 16;
        let named = NAMED.iter().any(|n| lower_last.contains(n))
            && (gap.contains('=') || gap.contains(':'))
            && gap.trim_matches(|c: char| c.is_whitespace() || "=:\"'`".contains(c)).is_empty()
            && word.len() >= 8;
        if looks_secret(word) || after_bearer || named {
            out.push_str("[redacted]");
        } else {
            out.push_str(word);
        }
        last_word = word.to_string();
        gap.clear();
        rest = after;
    }
    out
}

/// PEM blocks (`-----BEGIN … PRIVATE KEY-----` to its `-----END …-----`, or to the end).
fn private_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("-----BEGIN") {
        out.push_str(&rest[..i]);
        let block = &rest[i..];
        let end = block.find("-----END").map(|e| {
            let after = &block[e + 8..];
            e + 8 + after.find("-----").map_or(after.len(), |k| k + 5)
        });
        out.push_str("[redacted private key]");
        rest = match end {
            Some(e) => &block[e..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_go_and_words_stay() {
        let key = "sk-proj-AbCdEf0123456789AbCdEf0123";
        let s = scrub(&format!("export OPENAI_API_KEY={key} then run `make`"));
        assert_eq!(s, "export OPENAI_API_KEY=[redacted] then run `make`");
        assert_eq!(
            scrub("curl -H 'Authorization: Bearer abcdefghijklmnopqrstu'"),
            "curl -H 'Authorization: Bearer [redacted]'"
        );
        assert_eq!(scrub("password=hunter2hunter2 ok"), "password=[redacted] ok");
        assert_eq!(scrub("the token: short"), "the token: short");
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(scrub(pem), "a\n[redacted private key]\nb");
        assert_eq!(scrub("src/lib.rs: fix the parser"), "src/lib.rs: fix the parser");
        assert_eq!(scrub(&format!("\"{key}\",")), "\"[redacted]\",");
        assert_eq!(scrub("ghp_0123456789abcdefABCDEF0123"), "[redacted]");
    }
}
