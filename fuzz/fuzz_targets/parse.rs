//! The parser on any bytes, every format (XML urlset and sitemapindex, text,
//! RSS 0.9x/1.0/2.0, Atom), raw or gzip-wrapped.
//!
//! Input: two flag bytes, then the document.
//! - flags[0] bit 0: gzip-wrap the document (bit 4: and cut `flags[1]`
//!   bytes off the end of the gzip stream: a truncated download);
//!   bit 1: strict mode; bits 2-3: scope directory / host / none / no
//!   document URL; bit 5: one authorised origin (R5); bit 6: small limits
//!   (4 KiB, 8 entries) so that the limit paths run too; bit 7: the
//!   input arrives in reads of at most `flags[1] % 13 + 1` bytes.
//!
//! Checked beyond "no panic": the summary counts what was yielded and stays
//! within the limits; every loc is normalised (re-normalises to itself) and
//! inside the scope the parser was given; every lastmod prints as W3C
//! Datetime that parses back to the same instant; priorities are in [0, 1];
//! every event serialises to JSON. A gzip-wrapped document yields exactly
//! the entries of the same document unwrapped, and a document that arrives
//! in small reads yields exactly the events (diagnostics included) of the
//! same document read at once.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::date::parse_w3c;
use sitemapd_parser::{
    Event, Lastmod, NormUrl, ParseOptions, Parser, Scope, ScopeMode, Strictness,
};

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(body).unwrap();
    e.finish().unwrap()
}

fn check_lastmod(l: &Option<Lastmod>) {
    if let Some(l) = l {
        let text = l.to_string();
        let back = parse_w3c(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(back.value.unix_seconds, l.unix_seconds, "{text}");
        assert!(l.latest() >= l.unix_seconds);
    }
}

fn check_loc(loc: &NormUrl, scope: Option<&Scope>) {
    let again = NormUrl::parse(loc.as_str()).expect("a yielded loc parses");
    assert_eq!(&again, loc);
    if let Some(scope) = scope {
        assert_eq!(scope.check(loc), Ok(()), "{loc} out of scope");
    }
}

/// A reader that hands out at most `.1` bytes per read, as a slow socket does.
struct Chunked(std::io::Cursor<Vec<u8>>, usize);

impl std::io::Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

/// Parses `bytes`, in reads of at most `chunk` bytes if given; returns the
/// entries (URLs and child sitemaps) and every event, as yielded.
fn run(bytes: Vec<u8>, options: ParseOptions, chunk: Option<usize>) -> (Vec<Event>, Vec<Event>) {
    let scope = options
        .document_url
        .clone()
        .map(|u| Scope::new(u, options.authorized_origins.clone(), options.scope));
    let max_entries = options.max_entries;
    let input = std::io::Cursor::new(bytes);
    let mut parser = match chunk {
        Some(n) => Parser::new(Chunked(input, n), options),
        None => Parser::new(input, options),
    };
    let mut entries = Vec::new();
    let mut events = Vec::new();
    let (mut urls, mut sitemaps) = (0u64, 0u64);
    for event in parser.by_ref() {
        serde_json::to_string(&event).expect("every event serialises");
        events.push(event.clone());
        match &event {
            Event::Url(u) => {
                urls += 1;
                check_loc(&u.loc, scope.as_ref());
                check_lastmod(&u.lastmod);
                assert!(u.priority.is_none_or(|p| (0.0..=1.0).contains(&p)));
            }
            Event::Sitemap(s) => {
                sitemaps += 1;
                check_loc(&s.loc, None);
                check_lastmod(&s.lastmod);
            }
            Event::Diagnostic(_) => continue,
            _ => continue,
        }
        entries.push(event);
    }
    let summary = parser.summary();
    assert_eq!((summary.urls, summary.sitemaps), (urls, sitemaps));
    assert!(summary.entries() <= max_entries);
    // Decoded text: at most 3 bytes (U+FFFD) for each byte after decompression.
    assert!(summary.bytes <= 3 << 20);
    (entries, events)
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
    if flags.0 & 0x20 != 0 {
        options.authorized_origins = vec![NormUrl::parse("http://other.example:8080/").unwrap()];
    }
    if flags.0 & 0x40 != 0 {
        options.max_bytes = 4096;
        options.max_entries = 8;
    }
    let chunk = (flags.0 & 0x80 != 0).then_some(usize::from(flags.1 % 13) + 1);
    let gzip_body = body.starts_with(&[0x1f, 0x8b]);
    if flags.0 & 1 == 0 {
        let (_, events) = run(body.to_vec(), options.clone(), None);
        // Corrupt gzip keeps what a read inflated before the break: how much
        // depends on the read sizes, so gzip input is not compared.
        if chunk.is_some() && !gzip_body {
            let (_, chunked) = run(body.to_vec(), options, chunk);
            assert_eq!(events, chunked, "small reads change the events");
        }
        return;
    }
    let mut wrapped = gzip(body);
    if flags.0 & 0x10 != 0 {
        wrapped.truncate(wrapped.len().saturating_sub(usize::from(flags.1)));
        run(wrapped, options, chunk);
        return;
    }
    let (from_gzip, _) = run(wrapped, options.clone(), chunk);
    // A body that is itself gzip would be one layer deeper: not comparable.
    if !gzip_body {
        let (from_raw, _) = run(body.to_vec(), options, None);
        assert_eq!(from_gzip, from_raw, "gzip-wrapped and raw differ");
    }
});
