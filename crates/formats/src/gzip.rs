//! Gzip-compressed files are read as what they hold: Mailman's downloadable archives
//! (`2024-March.txt.gz`), rotated IRC and chat logs (`#rust.log.1.gz`), a compressed mbox.
//! Detection sniffs the decompressed start and takes the extension under `.gz`; parsing
//! decompresses the whole file, up to [`MAX_INFLATED`].

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::error::FormatError;

/// The most a compressed file may hold: past it, it is refused rather than read into memory.
pub(crate) const MAX_INFLATED: u64 = 2 << 30;

/// Whether the bytes open with gzip's magic number.
pub(crate) fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// The first `n` bytes of what the compressed `bytes` hold (fewer when they end or break).
pub(crate) fn head(bytes: &[u8], n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    // A stream cut short still gives what it had before the cut.
    let _ = MultiGzDecoder::new(bytes).take(n).read_to_end(&mut out);
    out
}

/// What a file's `bytes` hold: decompressed when they are gzip, else the bytes themselves.
pub(crate) fn unpacked(bytes: &[u8]) -> Result<Cow<'_, [u8]>, FormatError> {
    if is_gzip(bytes) { inflate(bytes).map(Cow::Owned) } else { Ok(Cow::Borrowed(bytes)) }
}

/// Everything the compressed `bytes` hold.
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, FormatError> {
    let mut out = Vec::new();
    MultiGzDecoder::new(bytes)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|e| FormatError::malformed(format!("a gzip file that does not decompress: {e}")))?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(FormatError::malformed(format!(
            "a gzip file that holds more than {} GiB; decompress it and ingest the result",
            MAX_INFLATED >> 30
        )));
    }
    Ok(out)
}

/// The name under the `.gz` (`2024-March.txt` for `2024-March.txt.gz`); other paths as they are.
pub(crate) fn inner(path: &Path) -> PathBuf {
    match path.extension() {
        Some(e) if e.eq_ignore_ascii_case("gz") => path.with_extension(""),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    pub(crate) fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn compressed_bytes_read_back_whole_and_by_their_start() {
        let text = b"From jjl at pobox.com  Thu Nov  1 11:19:12 2001\nSubject: hi\n\nbody\n".repeat(100);
        let packed = gz(&text);
        assert!(is_gzip(&packed) && !is_gzip(&text));
        assert_eq!(inflate(&packed).unwrap(), text);
        assert_eq!(unpacked(&packed).unwrap(), &text[..]);
        assert!(matches!(unpacked(&text).unwrap(), Cow::Borrowed(_)), "plain bytes are not copied");
        assert_eq!(head(&packed, 16), &text[..16]);
        assert_eq!(head(&packed[..packed.len() / 2], 16), &text[..16], "a cut file still shows its start");
        assert!(inflate(&packed[..packed.len() / 2]).is_err());
        assert_eq!(inner(Path::new("a/2024-March.txt.gz")), Path::new("a/2024-March.txt"));
        assert_eq!(inner(Path::new("notes.md")), Path::new("notes.md"));
    }
}
