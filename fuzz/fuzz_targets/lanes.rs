//! The fast lane against the full path on any bytes: the parser with
//! `ParseOptions::fast_lane` yields exactly the events (entries,
//! diagnostics with rule, line and column, in order) and the summary of the
//! parser that reads every byte through quick-xml.
//!
//! Input: the `parse` target's (its seeds serve both): two flag bytes, then
//! the document. flags[0] bit 0: gzip-wrap the document; bit 1: strict
//! mode; bits 2-3: scope directory / host / none / no document URL; bit 6:
//! small limits (4 KiB, 8 entries); bit 7: the input arrives in reads of at
//! most `flags[1] % 13 + 1` bytes.
#![no_main]

use std::io::{Read, Write};

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser, ScopeMode, Strictness, Summary};

/// A reader that hands out at most `.1` bytes per read, as a slow socket does.
struct Chunked(std::io::Cursor<Vec<u8>>, usize);

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

fn run(bytes: &[u8], options: &ParseOptions, fast_lane: bool, chunk: Option<usize>) -> (Vec<Event>, Summary) {
    let mut options = options.clone();
    options.fast_lane = fast_lane;
    let input = std::io::Cursor::new(bytes.to_vec());
    let mut parser = match chunk {
        Some(n) => Parser::new(Chunked(input, n), options),
        None => Parser::new(input, options),
    };
    let events: Vec<Event> = parser.by_ref().collect();
    let mut summary = parser.summary().clone();
    summary.fast_lane_entries = 0;
    (events, summary)
}

fuzz_target!(|data: &[u8]| {
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
    if flags.0 & 0x40 != 0 {
        options.max_bytes = 4096;
        options.max_entries = 8;
    }
    let chunk = (flags.0 & 0x80 != 0).then_some(usize::from(flags.1 % 13) + 1);
    let bytes = if flags.0 & 1 != 0 {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(body).unwrap();
        e.finish().unwrap()
    } else {
        body.to_vec()
    };
    let fast = run(&bytes, &options, true, chunk);
    let full = run(&bytes, &options, false, chunk);
    assert_eq!(fast, full, "the fast lane and the full path differ");
});
