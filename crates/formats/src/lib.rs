//! File formats, from bytes to what they hold: documents (Markdown, text in any common
//! encoding, HTML, PDF), e-mail messages (`.eml`, Maildir, mbox and Mailman/pipermail archives)
//! and chat channels (chat lines as JSON Lines or an array, ChatGPT and Claude exports, Slack
//! export folders, DiscordChatExporter JSON, Telegram (JSON and HTML), Messenger/Instagram and Matrix (Element) JSON, Google Chat from Takeout, Android SMS backups, WhatsApp
//! `.txt`, IRC logs), and the session logs coding
//! agents keep on disk (Claude Code, Codex CLI, Gemini CLI), read a record at a time.
//!
//! The crate knows nothing of where the results go: no database, index or chunking. `detect`
//! says what a file is, [`parse`] reads it into a [`Parsed`], and whatever a parser passes over
//! (a bad line, a message without a time) is counted in [`Skips`] with its reason. The memory
//! engine's ingest walks folders, chunks what this crate yields and stores it.

mod agent_log;
mod assistant;
mod chat;
mod claude_code;
mod codex;
mod detect;
mod discord;
mod error;
mod gchat;
mod gemini;
mod gzip;
mod html;
mod irc;
mod mail;
mod mailtext;
mod matrix;
mod mbox;
mod messenger;
mod pdf;
mod quote;
mod report;
mod slack;
mod sms;
mod spelled;
mod stream;
mod telegram;
mod telegram_html;
mod text;
mod whatsapp;
mod when;

use std::path::Path;

pub use agent_log::{
    Agent, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, OUTPUT_WHOLE_BYTES, Record, Role, SessionContext, ToolCall, Turn,
    condense,
};
pub use chat::{Channel, ChatMsg};
pub use detect::{Detected, FileKind, detect};
pub use error::FormatError;
pub use gemini::{GeminiSession, read_session as read_gemini_session};
pub use mail::{Links, MailMessage, normalize_subject};
pub use report::{Skip, Skips};
pub use spelled::month_named;
pub use text::decode as decode_text;

/// How a document's text is marked up, which decides where it may be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// Markdown (and HTML, whose headings and lists are read as Markdown's).
    Markdown,
    Plain,
}

/// A document's text: one body, or the pages of a paged format (PDF), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Text(String),
    Pages(Vec<String>),
}

/// One document file's text and what its format says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// A title the format itself carries (an HTML `<title>` or first heading); None leaves the
    /// choice to the reader (front matter, a heading, the file name).
    pub title: Option<String>,
    pub format: TextFormat,
    pub body: Body,
}

/// What one file holds.
#[derive(Debug, Clone)]
pub enum Parsed {
    Document(Document),
    /// Chat channels, each with its messages; a channel may be empty.
    Chat(Vec<Channel>),
    Mail(Vec<MailMessage>),
}

/// What the parsers keep between the files of one run (a Slack export's user list).
#[derive(Debug, Default)]
pub struct Context {
    slack: slack::Users,
}

/// One line (without its newline) of an appending agent's log (Claude Code, Codex CLI). A line
/// that is not JSON, or not in the shape its type promises, is a `Malformed` error; a type the
/// reader does not know is `Record::Unknown`. Gemini CLI's whole-document logs are read by
/// [`read_gemini_session`].
pub fn read_agent_line(agent: Agent, line: &[u8]) -> Result<Record, FormatError> {
    match agent {
        Agent::ClaudeCode => claude_code::read_line(line),
        Agent::Codex => codex::read_line(line),
        Agent::Gemini => Err(FormatError::malformed("Gemini CLI logs are whole JSON documents, not lines")),
    }
}

/// Reads `bytes`, the content of the file at `path`, as `kind`. `mtime_ms` is the file's time,
/// taken by a message that has none of its own; what is passed over goes into `skips` (and only
/// there: a file that fails is one error).
pub fn parse(
    kind: FileKind,
    bytes: &[u8],
    path: &Path,
    mtime_ms: i64,
    ctx: &mut Context,
    skips: &mut Skips,
) -> Result<Parsed, FormatError> {
    let bytes = &*gzip::unpacked(bytes)?;
    let text = |bytes| text::decode(bytes).map(|(t, _)| t);
    let document = |title, format, body| Parsed::Document(Document { title, format, body });
    Ok(match kind {
        FileKind::Markdown => document(None, TextFormat::Markdown, Body::Text(text(bytes)?)),
        FileKind::Text => document(None, TextFormat::Plain, Body::Text(text(bytes)?)),
        FileKind::Html => {
            let page = html::extract(&text(bytes)?);
            document(page.title, TextFormat::Markdown, Body::Text(page.text))
        }
        FileKind::Pdf => document(None, TextFormat::Plain, Body::Pages(pdf::pages(bytes)?)),
        FileKind::Chat => Parsed::Chat(chat::parse(&text(bytes)?, path, skips)?),
        FileKind::ChatGpt => Parsed::Chat(assistant::parse_chatgpt(bytes, path, skips)?),
        FileKind::Claude => Parsed::Chat(assistant::parse_claude(bytes, path, skips)?),
        FileKind::Slack => Parsed::Chat(slack::parse(bytes, path, &mut ctx.slack, skips)?),
        FileKind::Discord => Parsed::Chat(discord::parse(bytes, path, skips)?),
        FileKind::Telegram => Parsed::Chat(telegram::parse(bytes, path, skips)?),
        FileKind::Messenger => Parsed::Chat(messenger::parse(bytes, path, skips)?),
        FileKind::Matrix => Parsed::Chat(matrix::parse(bytes, path, skips)?),
        FileKind::TelegramHtml => Parsed::Chat(telegram_html::parse(&text(bytes)?, path, skips)),
        FileKind::Sms => Parsed::Chat(sms::parse(&text(bytes)?, path, skips)),
        FileKind::GoogleChat => Parsed::Chat(gchat::parse(bytes, path, skips)?),
        FileKind::WhatsApp => Parsed::Chat(whatsapp::parse(&text(bytes)?, path, skips)),
        FileKind::Irc => Parsed::Chat(irc::parse(&text(bytes)?, path, mtime_ms, skips)),
        FileKind::Email => Parsed::Mail(mail::parse_file(bytes, path, mtime_ms, skips)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(kind: FileKind, bytes: &[u8], name: &str) -> (Result<Parsed, FormatError>, Skips) {
        let mut skips = Skips::default();
        let parsed = parse(kind, bytes, Path::new(name), 7, &mut Context::default(), &mut skips);
        (parsed, skips)
    }

    #[test]
    fn each_family_yields_its_own_shape() {
        let (html, _) = read(FileKind::Html, b"<title>Tides</title><p>The moon pulls.</p>", "t.html");
        let Ok(Parsed::Document(doc)) = html else { panic!("{html:?}") };
        assert_eq!((doc.title.as_deref(), doc.format), (Some("Tides"), TextFormat::Markdown));
        assert_eq!(doc.body, Body::Text("The moon pulls.".into()));

        let lines = b"{\"ts\": 1700000000, \"from\": \"ann\", \"text\": \"hi\"}\nnot json\n";
        let (chat, skips) = read(FileKind::Chat, lines, "room.jsonl");
        let Ok(Parsed::Chat(channels)) = chat else { panic!("{chat:?}") };
        assert_eq!((channels.len(), channels[0].name.as_str(), channels[0].msgs[0].ts), (1, "room", 1_700_000_000_000));
        let skipped = skips.into_list();
        assert_eq!(
            (skipped[0].unit, skipped[0].reason.as_str(), skipped[0].first.as_str()),
            ("line", "invalid JSON", "room.jsonl:2")
        );

        let (mail, skips) = read(FileKind::Email, b"From: Ann <ANN@x.org>\nSubject: Re: plans\n\nyes\n", "m.eml");
        let Ok(Parsed::Mail(msgs)) = mail else { panic!("{mail:?}") };
        assert_eq!(
            (msgs[0].from.clone(), msgs[0].is_reply, msgs[0].timestamp_ms),
            (Some(("Ann".into(), "ann@x.org".into())), true, 7)
        );
        assert_eq!(skips.into_list()[0].reason, "no date in the message (the file's time is used)");
    }

    #[test]
    fn failures_are_typed() {
        assert_eq!(
            read(FileKind::Text, b"\x00\x01\x02", "b.txt").0.unwrap_err(),
            FormatError::NotText { encoding: "UTF-8" }
        );
        let (pdf, _) = read(FileKind::Pdf, b"%PDF-1.4 not really", "x.pdf");
        assert!(matches!(pdf, Err(FormatError::Malformed(ref m)) if m.contains("PDF")), "{pdf:?}");
    }
}
