//! The parser on any bytes: plain, or (first byte odd) gzip-wrapped, in
//! lenient or (second byte odd) strict mode, with small limits so that the
//! limit paths are exercised too.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::{NormUrl, ParseOptions, Parser, Strictness};

fuzz_target!(|data: &[u8]| {
    let (flags, body) = match data {
        [a, b, rest @ ..] => ((*a, *b), rest),
        _ => ((0, 0), data),
    };
    let bytes = if flags.0 & 1 == 1 {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(body).unwrap();
        e.finish().unwrap()
    } else {
        body.to_vec()
    };
    let mut options = ParseOptions::for_url(NormUrl::parse("https://example.com/dir/sitemap.xml").unwrap());
    options.max_bytes = 1 << 20;
    options.max_entries = 1_000;
    if flags.1 & 1 == 1 {
        options.strictness = Strictness::Strict;
    }
    let mut parser = Parser::new(std::io::Cursor::new(bytes), options);
    for event in parser.by_ref() {
        std::hint::black_box(event);
    }
    let summary = parser.summary();
    assert!(summary.entries() <= 1_000);
    // Decoded text: at most 3 bytes (U+FFFD) for each byte after decompression.
    assert!(summary.bytes <= 3 << 20);
});
