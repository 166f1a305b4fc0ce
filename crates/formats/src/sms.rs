//! Android text messages saved by "SMS Backup & Restore" (`sms-<date>.xml`: `<smses>` holding
//! `<sms>` and `<mms>` elements) → one chat channel per conversation, with the id
//! `sms:<address>` (a group's addresses joined by `~`, as the backup writes them).
//!
//! - An `<sms>` is received (`type` 1, said by the contact) or sent (2, 4, 5, 6: said by
//!   `Me`); drafts are counted, not stored. Its time is `date` (Unix milliseconds), its text
//!   `body`.
//! - An `<mms>` is received (`msg_box` 1) or sent (2); its text is its `text/plain` parts, its
//!   sender in a group the address of type 137, named as the backup's `contact_name` lists
//!   the addresses. Pictures without text are counted.
//! - The conversation is named by `contact_name`, else by its address. The XML is read
//!   element by element; a file cut short keeps the messages before the cut and says where.

use std::collections::BTreeMap;
use std::path::Path;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

use super::chat::{Channel, ChatMsg};
use super::report::Skips;

/// Whether the start of a file is an SMS Backup & Restore file.
pub(crate) fn looks_like(head: &str) -> bool {
    head.starts_with("<?xml") && head.contains("<smses")
}

/// The attributes a message is read from; the rest (an MMS part's base64 `data` above all) are
/// never copied.
const READ: &[&str] = &["address", "date", "type", "body", "contact_name", "msg_box", "ct", "text"];

fn attrs(e: &BytesStart<'_>) -> BTreeMap<String, String> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .filter(|a| READ.contains(&a.key.as_ref()))
        .filter_map(|a| {
            let key = a.key.as_ref().to_string();
            Some((key, a.normalized_value(XmlVersion::Implicit1_0).ok()?.into_owned()))
        })
        .collect()
}

/// An attribute the app writes as `null` when it has none.
fn get<'a>(a: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    a.get(key).map(|v| v.trim()).filter(|v| !v.is_empty() && *v != "null")
}

/// A conversation's people: its addresses and, in the same order, the names `contact_name`
/// gives them (`Ana Lima, Jo`), `(Unknown)` or missing names falling back to the address.
fn people(a: &BTreeMap<String, String>) -> (String, Vec<(String, String)>) {
    let address = get(a, "address").unwrap_or("unknown").to_string();
    let names: Vec<&str> = get(a, "contact_name").map(|n| n.split(", ").collect()).unwrap_or_default();
    let list = address
        .split('~')
        .enumerate()
        .map(|(i, addr)| {
            let name = names.get(i).map(|n| n.trim()).filter(|n| !n.is_empty() && *n != "(Unknown)");
            (addr.to_string(), name.unwrap_or(addr).to_string())
        })
        .collect();
    (address, list)
}

/// One message on its way to its conversation.
struct Pending {
    address: String,
    people: Vec<(String, String)>,
    msg: ChatMsg,
}

/// The `<mms>` being read: its attributes, text parts and sender address.
struct Mms {
    attrs: BTreeMap<String, String>,
    text: Vec<String>,
    from: Option<String>,
    at: String,
}

fn finish_mms(m: Mms, path: &Path, skips: &mut Skips) -> Option<Pending> {
    let Some(ts) = get(&m.attrs, "date").and_then(|d| d.parse::<i64>().ok()) else {
        skips.message("a message without a date", path, &m.at);
        return None;
    };
    let text = m.text.join("\n").trim().to_string();
    if text.is_empty() {
        skips.message("a picture or file without text", path, &m.at);
        return None;
    }
    let (address, people) = people(&m.attrs);
    let from = match get(&m.attrs, "msg_box") {
        Some("1") => {
            let sender = m.from.as_deref().unwrap_or_else(|| people.first().map_or("unknown", |p| p.0.as_str()));
            people.iter().find(|p| p.0 == sender).map_or(sender, |p| p.1.as_str()).to_string()
        }
        Some("2" | "4" | "5" | "6") => "Me".to_string(),
        _ => {
            skips.message("a draft", path, &m.at);
            return None;
        }
    };
    Some(Pending { address, people, msg: ChatMsg { at: m.at, ts, from, text, thread: None, handle: None } })
}

fn sms(a: &BTreeMap<String, String>, at: String, path: &Path, skips: &mut Skips) -> Option<Pending> {
    let Some(ts) = get(a, "date").and_then(|d| d.parse::<i64>().ok()) else {
        skips.message("a message without a date", path, &at);
        return None;
    };
    let text = get(a, "body").unwrap_or("").to_string();
    if text.is_empty() {
        skips.message("a message without text", path, &at);
        return None;
    }
    let (address, people) = people(a);
    let from = match get(a, "type") {
        Some("1") => people.first().map_or_else(|| address.clone(), |p| p.1.clone()),
        Some("2" | "4" | "5" | "6") => "Me".to_string(),
        _ => {
            skips.message("a draft", path, &at);
            return None;
        }
    };
    Some(Pending { address, people, msg: ChatMsg { at, ts, from, text, thread: None, handle: None } })
}

pub(crate) fn parse(text: &str, path: &Path, skips: &mut Skips) -> Vec<Channel> {
    let mut reader = Reader::from_str(text);
    let mut read: Vec<Pending> = Vec::new();
    let mut mms: Option<Mms> = None;
    let mut n = 0usize;
    loop {
        let event = match reader.read_event() {
            Ok(e) => e,
            Err(e) => {
                let at = reader.error_position();
                skips.file(&format!("the rest of the file is not well-formed XML (at byte {at}: {e})"), path);
                break;
            }
        };
        match event {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == "sms" => {
                n += 1;
                read.extend(sms(&attrs(&e), format!("sms{n}"), path, skips));
            }
            Event::Start(e) if e.name().as_ref() == "mms" => {
                n += 1;
                mms = Some(Mms { attrs: attrs(&e), text: Vec::new(), from: None, at: format!("mms{n}") });
            }
            Event::Start(e) | Event::Empty(e) if mms.is_some() => {
                let a = attrs(&e);
                let m = mms.as_mut().expect("an mms is open");
                match e.name().as_ref() {
                    "part" if get(&a, "ct") == Some("text/plain") => m.text.extend(get(&a, "text").map(str::to_string)),
                    "addr" if get(&a, "type") == Some("137") => m.from = get(&a, "address").map(str::to_string),
                    _ => {}
                }
            }
            Event::End(e) if e.name().as_ref() == "mms" => {
                if let Some(m) = mms.take() {
                    read.extend(finish_mms(m, path, skips));
                }
            }
            _ => {}
        }
    }
    // One channel per conversation, in the order they first appear, oldest message first.
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, Channel> = BTreeMap::new();
    for p in read {
        let ch = by.entry(p.address.clone()).or_insert_with(|| {
            order.push(p.address.clone());
            let title = p.people.iter().map(|x| x.1.as_str()).collect::<Vec<_>>().join(", ");
            Channel::new(format!("sms:{}", p.address), title.clone(), title, Some("sms"))
        });
        ch.msgs.push(p.msg);
    }
    order
        .iter()
        .filter_map(|a| by.remove(a))
        .map(|mut c| {
            c.msgs.sort_by_key(|m| m.ts);
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKUP: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<!--File Created By SMS Backup & Restore v10.20.002 on 01/05/2024 20:00:00-->
<smses count="6" backup_set="b1" backup_date="1714590000000" type="full">
  <sms protocol="0" address="+447700900123" date="1714554060000" type="2" subject="null" body="see you at the pier" toa="null" sc_toa="null" service_center="null" read="1" status="-1" locked="0" date_sent="0" sub_id="1" readable_date="1 May 2024 10:01:00" contact_name="Ana Lima" />
  <sms protocol="0" address="+447700900123" date="1714554000000" type="1" subject="null" body="the ferry leaves at ten &amp; the bus at nine&#10;bring snorkels" toa="null" sc_toa="null" service_center="null" read="1" status="-1" locked="0" date_sent="1714553990000" sub_id="1" readable_date="1 May 2024 10:00:00" contact_name="Ana Lima" />
  <sms protocol="0" address="+447700900999" date="1714554120000" type="1" subject="null" body="Your code is 123456" read="1" status="-1" locked="0" contact_name="(Unknown)" />
  <sms protocol="0" address="+447700900123" date="1714554180000" type="3" subject="null" body="half-written" read="1" status="-1" locked="0" contact_name="Ana Lima" />
  <mms date="1714554240000" ct_t="application/vnd.wap.multipart.related" msg_box="1" address="+447700900123~+447700900456" contact_name="Ana Lima, Jo Park" read="1" m_type="132">
    <parts>
      <part seq="-1" ct="application/smil" name="null" text="&lt;smil&gt;&lt;/smil&gt;" />
      <part seq="0" ct="text/plain" name="null" text="who has the picnic blanket?" />
    </parts>
    <addrs>
      <addr address="+447700900456" type="137" charset="106" />
      <addr address="+447700900123" type="151" charset="106" />
    </addrs>
  </mms>
  <mms date="1714554300000" msg_box="2" address="+447700900123~+447700900456" contact_name="Ana Lima, Jo Park">
    <parts><part seq="0" ct="image/jpeg" name="IMG_1.jpg" data="/9j/4AAQ" /></parts>
    <addrs><addr address="insert-address-token" type="137" charset="106" /></addrs>
  </mms>
  <sms protocol="0" address="+447700900123" date="17145"#;

    #[test]
    fn conversations_by_contact_with_a_cut_short_file() {
        assert!(looks_like(BACKUP));
        let mut skips = Skips::default();
        let chs = parse(BACKUP, Path::new("sms-20240501200000.xml"), &mut skips);
        let ids: Vec<(&str, &str)> = chs.iter().map(|c| (c.source_id.as_str(), c.title.as_str())).collect();
        assert_eq!(
            ids,
            [
                ("sms:+447700900123", "Ana Lima"),
                ("sms:+447700900999", "+447700900999"),
                ("sms:+447700900123~+447700900456", "Ana Lima, Jo Park"),
            ]
        );
        let ana: Vec<(&str, &str)> = chs[0].msgs.iter().map(|m| (m.from.as_str(), m.text.as_str())).collect();
        assert_eq!(
            ana,
            [("Ana Lima", "the ferry leaves at ten & the bus at nine\nbring snorkels"), ("Me", "see you at the pier")],
            "oldest first, entities and line breaks read back"
        );
        assert_eq!(chs[0].msgs[0].ts, 1_714_554_000_000);
        let group = &chs[2].msgs;
        assert_eq!(
            (group.len(), group[0].from.as_str(), group[0].text.as_str()),
            (1, "Jo Park", "who has the picnic blanket?")
        );
        let counted: Vec<(&'static str, String, usize)> =
            skips.into_list().into_iter().map(|s| (s.unit, s.reason, s.count)).collect();
        assert!(counted.contains(&("message", "a draft".to_string(), 1)), "{counted:?}");
        assert!(counted.contains(&("message", "a picture or file without text".to_string(), 1)), "{counted:?}");
        assert!(
            counted.iter().any(|c| c.0 == "file" && c.1.starts_with("the rest of the file is not well-formed XML")),
            "{counted:?}"
        );
    }
}
