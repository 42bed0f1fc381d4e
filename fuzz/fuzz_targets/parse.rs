//! The parser on any bytes, every format (XML urlset and sitemapindex, text,
//! RSS 0.9x/1.0/2.0, Atom), raw or gzip-wrapped.
//!
//! Input: two flag bytes, then the document (`shared/parse_input.rs`).
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

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::date::parse_w3c;
use sitemapd_parser::{Event, Lastmod, NormUrl, ParseOptions, Parser, Scope};

#[path = "shared/parse_input.rs"]
mod parse_input;

use parse_input::{Chunked, ParseInput, gzip};

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
    let input = ParseInput::new(data);
    let wrap = input.gzip();
    let ParseInput {
        flags,
        body,
        options,
        chunk,
    } = input;
    let gzip_body = body.starts_with(&[0x1f, 0x8b]);
    if !wrap {
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
