//! The input format of the parser targets (`parse`, `lanes`): two flag bytes,
//! then the document.
//! - flags[0] bit 0: gzip-wrap the document (bit 4: and cut `flags[1]`
//!   bytes off the end of the gzip stream: a truncated download);
//!   bit 1: strict mode; bits 2-3: scope directory / host / none / no
//!   document URL; bit 5: one authorised origin (R5); bit 6: small limits
//!   (4 KiB, 8 entries) so that the limit paths run too; bit 7: the
//!   input arrives in reads of at most `flags[1] % 13 + 1` bytes.

use sitemapd_parser::{NormUrl, ParseOptions, ScopeMode, Strictness};

/// One fuzz input, decoded.
pub struct ParseInput<'a> {
    /// The flag bytes.
    pub flags: (u8, u8),
    /// The document.
    pub body: &'a [u8],
    /// The parser's options the flags ask for.
    pub options: ParseOptions,
    /// The largest read, when the input arrives in small reads.
    pub chunk: Option<usize>,
}

impl<'a> ParseInput<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        let (flags, body) = match data {
            [a, b, rest @ ..] => ((*a, *b), rest),
            _ => ((0, 0), data),
        };
        let document = NormUrl::parse("https://example.com/dir/sitemap.xml").unwrap();
        let mut options = ParseOptions::for_url(document);
        options.max_bytes = 1 << 20;
        options.max_entries = 1_000;
        if flags.0 & 2 != 0 {
            options.strictness = Strictness::Strict;
        }
        match (flags.0 >> 2) & 3 {
            0 => options.scope = ScopeMode::Directory,
            1 => options.scope = ScopeMode::Host,
            2 => options.scope = ScopeMode::None,
            _ => options.document_url = None,
        }
        if flags.0 & 0x20 != 0 {
            options.authorized_origins =
                vec![NormUrl::parse("http://other.example:8080/").unwrap()];
        }
        if flags.0 & 0x40 != 0 {
            options.max_bytes = 4096;
            options.max_entries = 8;
        }
        let chunk = (flags.0 & 0x80 != 0).then_some(usize::from(flags.1 % 13) + 1);
        Self {
            flags,
            body,
            options,
            chunk,
        }
    }

    /// Whether the document is to be gzip-wrapped.
    pub fn gzip(&self) -> bool {
        self.flags.0 & 1 != 0
    }
}

/// A reader that hands out at most `.1` bytes per read, as a slow socket does.
pub struct Chunked(pub std::io::Cursor<Vec<u8>>, pub usize);

impl std::io::Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

/// `body` gzip-wrapped.
pub fn gzip(body: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(body).unwrap();
    e.finish().unwrap()
}
