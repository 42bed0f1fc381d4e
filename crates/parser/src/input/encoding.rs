//! Character encoding (SPEC C1): a BOM, UTF-16 without a BOM, or the XML
//! declaration's `encoding` decides; everything is decoded to UTF-8 before
//! parsing, with invalid sequences replaced by U+FFFD (and flagged), so that
//! one bad byte never costs the rest of the document.

use std::io::{self, BufRead, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use encoding_rs::{CoderResult, Encoding, UTF_8, UTF_16BE, UTF_16LE};

/// How the encoding was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EncodingSource {
    /// Nothing said otherwise: UTF-8.
    Default,
    /// A byte order mark.
    Bom,
    /// UTF-16 recognised from the first bytes without a BOM.
    Sniffed,
    /// The XML declaration named it.
    Declared,
    /// The XML declaration named an encoding that is not known or not usable;
    /// UTF-8 is used instead.
    UnknownLabel(String),
    /// The XML declaration named a legacy encoding, but the bytes are UTF-8.
    MislabelledUtf8(String),
}

/// The encoding to decode with.
#[derive(Debug, Clone)]
pub(crate) struct Detected {
    /// The encoding.
    pub encoding: &'static Encoding,
    /// Why.
    pub source: EncodingSource,
}

/// Decides the encoding from the first bytes of the (decompressed) document.
pub(crate) fn detect(prefix: &[u8]) -> Detected {
    let d = |encoding, source| Detected { encoding, source };
    if let Some((enc, _)) = Encoding::for_bom(prefix) {
        return d(enc, EncodingSource::Bom);
    }
    // UTF-16 without a BOM: ASCII characters with a zero byte beside each.
    let ascii = |b: u8| b.is_ascii() && b != 0;
    match prefix {
        [a, 0, b, 0, ..] if ascii(*a) && ascii(*b) => return d(UTF_16LE, EncodingSource::Sniffed),
        [0, a, 0, b, ..] if ascii(*a) && ascii(*b) => return d(UTF_16BE, EncodingSource::Sniffed),
        _ => {}
    }
    match declared_label(prefix) {
        None => d(UTF_8, EncodingSource::Default),
        Some(label) => match Encoding::for_label(label.as_bytes()) {
            // A declaration read in an ASCII-compatible byte stream cannot truly be UTF-16.
            Some(enc) if enc == UTF_16LE || enc == UTF_16BE => {
                d(UTF_8, EncodingSource::UnknownLabel(label))
            }
            Some(enc) if enc == UTF_8 => d(UTF_8, EncodingSource::Default),
            Some(_) if is_non_ascii_utf8(prefix) => {
                d(UTF_8, EncodingSource::MislabelledUtf8(label))
            }
            Some(enc) => d(enc.output_encoding(), EncodingSource::Declared),
            None => d(UTF_8, EncodingSource::UnknownLabel(label)),
        },
    }
}

/// Whether `prefix` holds non-ASCII text that is valid UTF-8 (a sequence cut
/// at the end of the prefix does not count against it). Legacy single-byte
/// text almost never is.
fn is_non_ascii_utf8(prefix: &[u8]) -> bool {
    !prefix.is_ascii()
        && match std::str::from_utf8(prefix) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none() && !prefix[..e.valid_up_to()].is_ascii(),
        }
}

/// The `encoding="…"` of an XML declaration near the start of `prefix`.
fn declared_label(prefix: &[u8]) -> Option<String> {
    let start = memchr::memmem::find(prefix, b"<?xml")?;
    let decl = &prefix[start..];
    let end = memchr::memmem::find(decl, b"?>")?;
    let decl = &decl[..end];
    let at = memchr::memmem::find(decl, b"encoding")?;
    let rest = &decl[at + "encoding".len()..];
    let rest = rest
        .trim_ascii_start()
        .strip_prefix(b"=")?
        .trim_ascii_start();
    let quote = *rest.first().filter(|q| matches!(q, b'"' | b'\''))?;
    let value = &rest[1..];
    let close = memchr::memchr(quote, value)?;
    let label = std::str::from_utf8(&value[..close]).ok()?.trim();
    (!label.is_empty() && label.len() <= 40).then(|| label.to_ascii_lowercase())
}

/// Decodes `inner` from `encoding` to UTF-8 (BOM removed), replacing invalid
/// sequences with U+FFFD and raising `replaced` when it does.
pub(crate) struct DecodeReader<R> {
    inner: R,
    decoder: encoding_rs::Decoder,
    replaced: Arc<AtomicBool>,
    spill: Vec<u8>,
    finished: bool,
}

impl<R: BufRead> DecodeReader<R> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: R, encoding: &'static Encoding, replaced: Arc<AtomicBool>) -> Self {
        Self::with_decoder(inner, encoding.new_decoder_with_bom_removal(), replaced)
    }

    /// Wraps `inner`, which continues a document already started: a U+FEFF
    /// there is a character, not a byte order mark.
    pub(crate) fn mid_stream(
        inner: R,
        encoding: &'static Encoding,
        replaced: Arc<AtomicBool>,
    ) -> Self {
        Self::with_decoder(inner, encoding.new_decoder_without_bom_handling(), replaced)
    }

    fn with_decoder(inner: R, decoder: encoding_rs::Decoder, replaced: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            decoder,
            replaced,
            spill: Vec::new(),
            finished: false,
        }
    }

    fn decode_into(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.finished {
                return Ok(0);
            }
            let src = self.inner.fill_buf()?;
            let last = src.is_empty();
            let (result, read, written, replaced) = self.decoder.decode_to_utf8(src, out, last);
            self.inner.consume(read);
            if replaced {
                self.replaced.store(true, Ordering::Relaxed);
            }
            if last && result == CoderResult::InputEmpty {
                self.finished = true;
            }
            if written > 0 || self.finished {
                return Ok(written);
            }
        }
    }
}

impl<R: BufRead> Read for DecodeReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // The decoder needs room for a whole character: small reads go through a spill buffer.
        if buf.len() < 16 || !self.spill.is_empty() {
            if self.spill.is_empty() {
                let mut tmp = [0u8; 64];
                let n = self.decode_into(&mut tmp)?;
                self.spill.extend_from_slice(&tmp[..n]);
            }
            let n = buf.len().min(self.spill.len());
            buf[..n].copy_from_slice(&self.spill[..n]);
            self.spill.drain(..n);
            return Ok(n);
        }
        self.decode_into(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> (String, &'static str, bool) {
        let det = detect(bytes);
        let flag = Arc::new(AtomicBool::new(false));
        let mut r = DecodeReader::new(bytes, det.encoding, flag.clone());
        let mut out = String::new();
        r.read_to_string(&mut out).unwrap();
        (out, det.encoding.name(), flag.load(Ordering::Relaxed))
    }

    #[test]
    fn c1_bom_utf8_is_skipped() {
        assert_eq!(
            decode(b"\xEF\xBB\xBF<urlset/>"),
            ("<urlset/>".into(), "UTF-8", false)
        );
    }

    #[test]
    fn c1_utf16_with_and_without_bom() {
        let text = "<urlset>é</urlset>";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(decode(&[&[0xFF, 0xFE][..], &le].concat()).0, text);
        assert_eq!(decode(&[&[0xFE, 0xFF][..], &be].concat()).0, text);
        assert_eq!(decode(&le), (text.into(), "UTF-16LE", false));
        assert_eq!(decode(&be), (text.into(), "UTF-16BE", false));
    }

    #[test]
    fn c1_declared_legacy_encodings() {
        let koi8 = b"<?xml version=\"1.0\" encoding=\"koi8-r\"?><t>\xf0\xd2\xc9\xd7\xc5\xd4</t>";
        assert_eq!(
            decode(koi8).0,
            "<?xml version=\"1.0\" encoding=\"koi8-r\"?><t>Привет</t>"
        );
        let latin1 = b"<?xml version='1.0' encoding='ISO-8859-1'?><t>caf\xe9</t>";
        let (text, name, _) = decode(latin1);
        assert_eq!((text.ends_with("café</t>"), name), (true, "windows-1252"));
    }

    #[test]
    fn c1_invalid_utf8_is_replaced_and_flagged() {
        assert_eq!(
            decode(b"<t>a\xffb</t>"),
            ("<t>a\u{FFFD}b</t>".into(), "UTF-8", true)
        );
        let unknown = detect(b"<?xml version=\"1.0\" encoding=\"x-klingon\"?>");
        assert_eq!(
            unknown.source,
            EncodingSource::UnknownLabel("x-klingon".into())
        );
    }

    #[test]
    fn small_reads_do_not_lose_characters() {
        let mut r = DecodeReader::new("żółw".as_bytes(), UTF_8, Arc::new(AtomicBool::new(false)));
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while r.read(&mut b).unwrap() == 1 {
            out.push(b[0]);
        }
        assert_eq!(String::from_utf8(out).unwrap(), "żółw");
    }
}
