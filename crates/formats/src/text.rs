//! Bytes → text in whatever common encoding a file was written in: a byte-order mark decides
//! first (UTF-8, UTF-16), then valid UTF-8 is taken as it is, then UTF-16 without a mark is
//! recognised by its pattern of zero bytes, and anything else is guessed by `chardetng` (Latin-1
//! and the Windows code pages, ISO-8859-x, KOI8, Shift_JIS, EUC, GBK, Big5…) and decoded with
//! `encoding_rs`. Data with control bytes text never holds is refused as binary.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

use crate::error::FormatError;

/// How many bytes the detector reads: enough to decide, bounded for very large files.
const SNIFF_BYTES: usize = 1 << 20;

/// The text and the name of the encoding it was read in.
pub fn decode(bytes: &[u8]) -> Result<(String, &'static str), FormatError> {
    let encoding = if let Some((enc, _)) = Encoding::for_bom(bytes) {
        enc
    } else if std::str::from_utf8(bytes).is_ok() {
        UTF_8
    } else if let Some(enc) = utf16_without_bom(bytes) {
        enc
    } else {
        let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
        detector.feed(&bytes[..bytes.len().min(SNIFF_BYTES)], bytes.len() <= SNIFF_BYTES);
        detector.guess(None, chardetng::Utf8Detection::Allow)
    };
    let (text, _, _) = encoding.decode(bytes);
    if looks_binary(&text) {
        return Err(FormatError::NotText { encoding: encoding.name() });
    }
    Ok((text.into_owned(), encoding.name()))
}

/// UTF-16 text of mostly Latin letters has a zero in every other byte.
fn utf16_without_bom(bytes: &[u8]) -> Option<&'static Encoding> {
    let sample = &bytes[..bytes.len().min(4096) & !1];
    if sample.len() < 4 {
        return None;
    }
    let pairs = sample.len() / 2;
    let zeros_at = |odd: usize| sample.iter().skip(odd).step_by(2).filter(|b| **b == 0).count();
    let (even, odd) = (zeros_at(0), zeros_at(1));
    if odd * 10 >= pairs * 7 && even * 10 <= pairs {
        Some(UTF_16LE)
    } else if even * 10 >= pairs * 7 && odd * 10 <= pairs {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// NUL, or more than one in a hundred characters being C0 controls other than tab, line
/// feed, carriage return, form feed and escape.
fn looks_binary(text: &str) -> bool {
    let mut controls = 0usize;
    let mut total = 0usize;
    for c in text.chars() {
        total += 1;
        if c == '\0' {
            return true;
        }
        if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b') {
            controls += 1;
        }
    }
    controls * 100 > total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_encodings_and_utf16_read_as_text() {
        // "Café crème, naïve" in Latin-1 (Windows-1252 is its superset).
        let latin1: Vec<u8> = b"Caf\xe9 cr\xe8me, na\xefve. Le gar\xe7on a re\xe7u la lettre \xe0 temps.\n".to_vec();
        let (text, enc) = decode(&latin1).unwrap();
        assert_eq!(text, "Café crème, naïve. Le garçon a reçu la lettre à temps.\n");
        assert_eq!(enc, "windows-1252");
        let utf16: Vec<u8> = "Grüße aus Köln".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(decode(&utf16).unwrap().0, "Grüße aus Köln");
        let mut bom = vec![0xfe, 0xff];
        bom.extend("héllo".encode_utf16().flat_map(u16::to_be_bytes));
        assert_eq!(decode(&bom).unwrap(), ("héllo".to_string(), "UTF-16BE"));
        assert_eq!(decode("plain ✓".as_bytes()).unwrap(), ("plain ✓".to_string(), "UTF-8"));
    }

    #[test]
    fn binary_data_is_refused() {
        let err = decode(&[0x00, 0x01, 0xfe, 0x81, 0x02, 0x03]).unwrap_err().to_string();
        assert!(err.contains("not text") && err.contains("UTF-8"), "{err}");
        assert!(decode(b"\x7fELF\x02\x01\x01\x00\x00\x00").is_err());
    }
}
