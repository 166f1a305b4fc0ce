//! What a file is, decided from its place and content first and its extension second: the
//! first 16 KiB are sniffed for a PDF header, a JSON export's shape (ChatGPT, Claude, Slack,
//! DiscordChatExporter, Telegram, Messenger, Matrix, Google Chat, chat lines), an mbox `From ` line, mail headers,
//! Telegram's HTML export, an SMS backup's XML, HTML, WhatsApp's line pattern, or an IRC log's lines; a file in a Maildir's `cur/` or `new/` is a message. A
//! `kind` given by the caller names the family (document, email, chat) and the content picks
//! the format in it.

use std::io::Read;
use std::path::Path;

use super::{gchat, gzip, irc, sms, telegram_html, whatsapp};

const SNIFF_BYTES: u64 = 16 * 1024;

/// The Slack export's own index files, beside the channel folders.
const SLACK_INDEX: &[&str] =
    &["channels.json", "users.json", "groups.json", "dms.json", "mpims.json", "integration_logs.json", "canvases.json"];

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileKind {
    Markdown,
    Text,
    Html,
    Pdf,
    /// One message (`.eml`, a Maildir file) or an mbox of many (Mailman/pipermail too).
    Email,
    /// Chat lines `{ts, from, text, channel}`: JSON Lines or a JSON array of them.
    Chat,
    ChatGpt,
    Claude,
    /// One day of one channel in a Slack export folder.
    Slack,
    Discord,
    /// Telegram Desktop's JSON export: one chat, or the whole account.
    Telegram,
    /// Telegram Desktop's HTML export (`messages.html`, `messages2.html`…).
    TelegramHtml,
    /// Facebook Messenger's or Instagram's `message_N.json`.
    Messenger,
    /// A Matrix room exported as JSON by Element.
    Matrix,
    /// Google Chat's `messages.json` in a Google Takeout export.
    GoogleChat,
    /// Android text messages saved by SMS Backup & Restore (XML).
    Sms,
    WhatsApp,
    /// An IRC client's or bouncer's log (irssi, WeeChat, ZNC, HexChat).
    Irc,
}

impl FileKind {
    /// The family, as the `files` table and the `kind` parameter name it.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Markdown | FileKind::Text | FileKind::Html | FileKind::Pdf => "document",
            FileKind::Email => "email",
            FileKind::Chat | FileKind::ChatGpt | FileKind::Claude | FileKind::Slack | FileKind::Discord => "chat",
            FileKind::Telegram | FileKind::TelegramHtml | FileKind::Messenger | FileKind::Matrix => "chat",
            FileKind::GoogleChat => "chat",
            FileKind::WhatsApp | FileKind::Irc | FileKind::Sms => "chat",
        }
    }

    fn from_extension(p: &Path) -> Option<FileKind> {
        let ext = p.extension()?.to_string_lossy().to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" => Some(FileKind::Markdown),
            "txt" | "text" => Some(FileKind::Text),
            "html" | "htm" | "xhtml" => Some(FileKind::Html),
            "pdf" => Some(FileKind::Pdf),
            "eml" | "mbox" => Some(FileKind::Email),
            "jsonl" | "ndjson" => Some(FileKind::Chat),
            _ => None,
        }
    }

    /// The kind a `kind` override gives a file whose content named no format of that family.
    fn forced(kind: &str, p: &Path) -> FileKind {
        match kind {
            "email" => FileKind::Email,
            "chat" => FileKind::Chat,
            _ => match FileKind::from_extension(p) {
                Some(k @ (FileKind::Markdown | FileKind::Html | FileKind::Pdf)) => k,
                _ => FileKind::Text,
            },
        }
    }
}

/// What a reader should do with a file.
#[derive(Debug, PartialEq)]
pub enum Detected {
    Read(FileKind),
    /// Kept out on purpose, for this reason (counted in the summary).
    Skip(&'static str),
    Unsupported,
}

/// What the file at `path` is. `kind` names a family to read it as (`document`, `email`,
/// `chat`); `named`: the caller named this file itself (a forced kind then wins over the
/// extension).
pub fn detect(path: &Path, kind: Option<&str>, named: bool) -> Detected {
    if let Some(in_tmp) = maildir_message(path) {
        return if in_tmp {
            Detected::Skip("Maildir tmp/ file (a message still being delivered)")
        } else {
            Detected::Read(FileKind::Email)
        };
    }
    if is_slack_index(path) {
        return Detected::Skip("Slack export index (its names are used for the channel files)");
    }
    if is_gchat_index(path) {
        return Detected::Skip("Google Chat conversation or account information (its names are used for the messages)");
    }
    // A gzip file is sniffed and named by what it holds (`2024-March.txt.gz` reads as text).
    let (start, inner) = match head(path) {
        Some(h) if gzip::is_gzip(&h) => (Some(gzip::head(&h, SNIFF_BYTES)), gzip::inner(path)),
        h => (h, path.to_path_buf()),
    };
    let path = inner.as_path();
    let sniffed = start.and_then(|h| sniff(path, &h));
    let by_ext = FileKind::from_extension(path);
    let chosen = match (sniffed, kind) {
        (Some(k), Some(f)) if k.name() == f => Some(k),
        (Some(k), None) => Some(k),
        (_, Some(f)) if named => Some(FileKind::forced(f, path)),
        (_, f) => by_ext.or(f.map(|f| FileKind::forced(f, path))),
    };
    chosen.map_or(Detected::Unsupported, Detected::Read)
}

fn head(path: &Path) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    std::fs::File::open(path).ok()?.take(SNIFF_BYTES).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// `Some(true)` for a file in a Maildir's `tmp/`, `Some(false)` in `cur/` or `new/`.
fn maildir_message(path: &Path) -> Option<bool> {
    let dir = path.parent()?;
    let sub = dir.file_name()?.to_str()?;
    if !["cur", "new", "tmp"].contains(&sub) {
        return None;
    }
    let root = dir.parent()?;
    (root.join("cur").is_dir() && root.join("new").is_dir()).then_some(sub == "tmp")
}

fn slack_root(dir: &Path) -> bool {
    dir.join("channels.json").is_file() && dir.join("users.json").is_file()
}

fn is_slack_index(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    SLACK_INDEX.contains(&name) && path.parent().is_some_and(slack_root)
}

/// A Google Takeout export's `group_info.json` or `user_info.json` under `Google Chat/`.
fn is_gchat_index(path: &Path) -> bool {
    let named = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| gchat::INDEX_FILES.contains(&n));
    named && path.ancestors().any(|a| a.file_name().is_some_and(|n| n == "Google Chat"))
}

/// The export folder of a Slack channel-day file (`<export>/<channel>/<date>.json`).
pub(crate) fn slack_export_root(path: &Path) -> Option<&Path> {
    path.parent()?.parent().filter(|root| slack_root(root))
}

fn sniff(path: &Path, head: &[u8]) -> Option<FileKind> {
    if head.starts_with(b"%PDF-") {
        return Some(FileKind::Pdf);
    }
    let text = String::from_utf8_lossy(head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head));
    let t = text.trim_start();
    if (t.starts_with('{') || t.starts_with('['))
        && let Some(k) = json_shape(path, t)
    {
        return Some(k);
    }
    if FileKind::from_extension(path) == Some(FileKind::Markdown) {
        return None;
    }
    if is_mbox_separator(t.lines().next().unwrap_or("")) {
        return Some(FileKind::Email);
    }
    if sms::looks_like(t) {
        return Some(FileKind::Sms);
    }
    if telegram_html::looks_like(t) {
        return Some(FileKind::TelegramHtml);
    }
    let lower: String = t.chars().take(1024).collect::<String>().to_ascii_lowercase();
    if lower.starts_with("<!doctype html")
        || lower.starts_with("<html")
        || lower.contains("<html") && lower.contains("<head")
    {
        return Some(FileKind::Html);
    }
    if looks_like_mail_headers(t) {
        return Some(FileKind::Email);
    }
    if whatsapp::looks_like(t) {
        return Some(FileKind::WhatsApp);
    }
    if irc::looks_like(t) {
        return Some(FileKind::Irc);
    }
    None
}

fn json_shape(path: &Path, t: &str) -> Option<FileKind> {
    let has = |key: &str| t.contains(&format!("\"{key}\""));
    if t.starts_with('[') && has("mapping") && (has("current_node") || has("create_time")) {
        return Some(FileKind::ChatGpt);
    }
    if t.starts_with('[') && has("chat_messages") {
        return Some(FileKind::Claude);
    }
    if t.starts_with('{') && has("guild") && has("channel") && has("messages") {
        return Some(FileKind::Discord);
    }
    if t.starts_with('{') && (has("about") && has("personal_information") || has("messages") && has("date_unixtime")) {
        return Some(FileKind::Telegram);
    }
    if t.starts_with('{') && has("participants") && has("sender_name") && has("timestamp_ms") {
        return Some(FileKind::Messenger);
    }
    if t.starts_with('{') && has("messages") && has("creator") && has("created_date") {
        return Some(FileKind::GoogleChat);
    }
    if t.starts_with('{') && has("room_name") && has("messages") && (has("exported_by") || has("origin_server_ts")) {
        return Some(FileKind::Matrix);
    }
    if t.starts_with('[') {
        let slack_message = t.contains("\"type\": \"message\"") || t.contains("\"type\":\"message\"");
        if slack_export_root(path).is_some() || slack_message && has("ts") {
            return Some(FileKind::Slack);
        }
        if has("ts") || has("text") {
            return Some(FileKind::Chat);
        }
        return None;
    }
    let first = t.lines().next().unwrap_or("");
    let line_object = serde_json::from_str::<serde_json::Value>(first).is_ok_and(|v| v.is_object());
    (line_object && (first.contains("\"text\"") || first.contains("\"ts\""))).then_some(FileKind::Chat)
}

/// `From sender date` where the date has a time of day: the mbox separator, Mailman's
/// `From jjl at pobox.com  Thu Nov  1 11:19:12 2001` included.
pub(crate) fn is_mbox_separator(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("From ") else { return false };
    let words: Vec<&str> = rest.split_whitespace().collect();
    words.len() >= 3
        && words
            .iter()
            .any(|w| w.len() >= 5 && w.as_bytes()[2] == b':' && w.bytes().all(|b| b.is_ascii_digit() || b == b':'))
}

/// A header block of at least two of the headers every mail carries.
fn looks_like_mail_headers(t: &str) -> bool {
    const KNOWN: &[&str] =
        &["from", "to", "subject", "date", "message-id", "received", "return-path", "delivered-to", "mime-version"];
    let mut found = 0;
    for (i, line) in t.lines().enumerate() {
        if line.trim().is_empty() || i > 60 {
            break;
        }
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let Some((name, _)) = line.split_once(':') else { return false };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return false;
        }
        if KNOWN.contains(&name.to_ascii_lowercase().as_str()) {
            found += 1;
        }
    }
    found >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(dir: &Path, name: &str, content: &[u8]) -> Detected {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        detect(&p, None, false)
    }

    #[test]
    fn content_decides_before_the_extension() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        use Detected::*;
        use FileKind::*;
        assert_eq!(kind_of(d, "a.bin", b"%PDF-1.4\n"), Read(Pdf));
        assert_eq!(
            kind_of(d, "conversations.json", br#"[{"title":"t","create_time":1.5,"mapping":{}}]"#),
            Read(ChatGpt)
        );
        assert_eq!(kind_of(d, "c.json", br#"[{"uuid":"u","name":"n","chat_messages":[]}]"#), Read(Claude));
        assert_eq!(kind_of(d, "x.json", br#"{"guild":{},"channel":{},"messages":[]}"#), Read(Discord));
        let tg = br#"{"name": "Ana", "type": "personal_chat", "id": 1, "messages": [{"id": 1, "date_unixtime": "1"}]}"#;
        assert_eq!(kind_of(d, "result.json", tg), Read(Telegram));
        assert_eq!(kind_of(d, "all.json", br#"{"about": "x", "personal_information": {}}"#), Read(Telegram));
        let fb = br#"{"participants": [], "messages": [{"sender_name": "A", "timestamp_ms": 1}]}"#;
        assert_eq!(kind_of(d, "message_1.json", fb), Read(Messenger));
        let tg_html = b"<!DOCTYPE html>\n<html><head><title>Exported Data</title></head><body><div class=\"page_wrap\">\n<div class=\"page_header\"><div class=\"content\"><div class=\"text bold\">Ana</div></div></div>\n<div class=\"page_body chat_page\"><div class=\"history\">";
        assert_eq!(kind_of(d, "messages2.html", tg_html), Read(TelegramHtml));
        let gc = br#"{"messages": [{"creator": {"name": "Ana"}, "created_date": "Wednesday, May 1, 2024 at 9:00:00 AM UTC"}]}"#;
        assert_eq!(kind_of(d, "messages.json", gc), Read(GoogleChat));
        let backup =
            b"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<smses count=\"1\">\n<sms address=\"1\" />";
        assert_eq!(kind_of(d, "sms-20240501200000.xml", backup), Read(Sms));
        let mx = br#"{"room_name": "Allotment", "exported_by": "Sam", "messages": [{"type": "m.room.message"}]}"#;
        assert_eq!(kind_of(d, "Allotment - Chat Export - 2024-05-01.json", mx), Read(Matrix));
        assert_eq!(kind_of(d, "arr.json", br#"[{"ts":"2024-01-01 10:00:00","from":"a","text":"b"}]"#), Read(Chat));
        assert_eq!(kind_of(d, "lines.log", b"{\"ts\":1,\"from\":\"a\",\"text\":\"b\"}\n"), Read(Chat));
        assert_eq!(kind_of(d, "arch.txt", b"From jjl at pobox.com  Thu Nov  1 11:19:12 2001\nFrom: x\n"), Read(Email));
        assert_eq!(kind_of(d, "msg", b"From: a@b.c\nSubject: hi\nDate: x\n\nbody"), Read(Email));
        assert_eq!(kind_of(d, "page.txt", b"<!DOCTYPE html><html><head>"), Read(Html));
        assert_eq!(
            kind_of(d, "chat.txt", "[01/02/2024, 10:00:00] Ann: hi\n[01/02/2024, 10:01:00] Bo: hey\n".as_bytes()),
            Read(WhatsApp)
        );
        let irc = "--- Log opened Tue Dec 01 10:00:00 2020\n10:00 < ann> hi\n10:01 <@bo> hey\n10:02 < ann> tea?\n";
        assert_eq!(kind_of(d, "#tea.log", irc.as_bytes()), Read(Irc));
        assert_eq!(kind_of(d, "tea-channel.txt", irc.as_bytes()), Read(Irc), "a log saved as text is still chat");
        let gz = crate::gzip::tests::gz;
        let archive = b"From jjl at pobox.com  Thu Nov  1 11:19:12 2001\nFrom: jjl at pobox.com (John)\n\nhi\n";
        assert_eq!(kind_of(d, "2001-November.txt.gz", &gz(archive)), Read(Email), "Mailman's gzip'd text");
        assert_eq!(kind_of(d, "#tea.log.1.gz", &gz(irc.as_bytes())), Read(Irc));
        assert_eq!(kind_of(d, "notes.txt.gz", &gz(b"just words")), Read(Text), "the extension under .gz");
        assert_eq!(kind_of(d, "backup.tar.gz", &gz(b"\0\0binary")), Unsupported);
        assert_eq!(kind_of(d, "notes.md", b"From: a\nSubject: b\n"), Read(Markdown));
        assert_eq!(kind_of(d, "plain.txt", b"just words"), Read(Text));
        assert_eq!(kind_of(d, "photo.jpg", b"\xff\xd8\xff\xe0"), Unsupported);
        assert_eq!(kind_of(d, "other.json", br#"{"a": 1}"#), Unsupported);
    }

    #[test]
    fn folder_layouts_are_recognised() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        for sub in ["box/cur", "box/new", "box/tmp"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        assert_eq!(kind_of(d, "box/cur/1700000000.M1P2.host:2,S", b"anything"), Detected::Read(FileKind::Email));
        assert!(matches!(kind_of(d, "box/tmp/1700000001.M3P4.host", b"half"), Detected::Skip(_)));
        std::fs::write(d.join("channels.json"), "[]").unwrap();
        std::fs::write(d.join("users.json"), "[]").unwrap();
        assert!(matches!(detect(&d.join("users.json"), None, false), Detected::Skip(_)));
        assert_eq!(
            kind_of(d, "general/2024-01-01.json", br#"[{"user":"U1","ts":"1.0"}]"#),
            Detected::Read(FileKind::Slack)
        );
    }

    #[test]
    fn a_given_kind_picks_the_family() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log.data");
        std::fs::write(&p, b"plain words").unwrap();
        assert_eq!(detect(&p, Some("chat"), true), Detected::Read(FileKind::Chat));
        assert_eq!(detect(&p, Some("chat"), false), Detected::Read(FileKind::Chat));
        assert_eq!(detect(&p, None, false), Detected::Unsupported);
        std::fs::write(&p, b"%PDF-1.4").unwrap();
        assert_eq!(detect(&p, Some("document"), true), Detected::Read(FileKind::Pdf));
    }
}
