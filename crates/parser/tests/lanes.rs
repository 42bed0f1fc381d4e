//! The fast lane against the full path: for every input, the parser with
//! the fast lane ([`ParseOptions::fast_lane`]) yields exactly the events
//! (entries, diagnostics with rule, line and column, in order) and the
//! summary of the parser that reads every byte through quick-xml. Checked
//! over the whole corpus and over generated documents that mix the lane's
//! shape with everything that leaves it, cut, mutated and read in small
//! pieces.

mod common;

use common::{Chunked, fixtures, gzip};
use proptest::prelude::*;
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser, ScopeMode, Strictness, Summary};

/// Every event and the summary of one parse.
fn run(bytes: &[u8], options: &ParseOptions, chunk: Option<usize>) -> (Vec<Event>, Summary) {
    let input = std::io::Cursor::new(bytes.to_vec());
    let mut parser = match chunk {
        Some(n) => Parser::new(Chunked(input, n), options.clone()),
        None => Parser::new(input, options.clone()),
    };
    let events: Vec<Event> = parser.by_ref().collect();
    (events, parser.summary().clone())
}

/// Parses `bytes` both ways and asserts they agree; returns the entries
/// the fast lane read and the entries yielded.
fn same_both_ways(bytes: &[u8], options: &ParseOptions, chunk: Option<usize>) -> (u64, u64) {
    let mut fast = options.clone();
    fast.fast_lane = true;
    let mut full = options.clone();
    full.fast_lane = false;
    let (fast_events, mut fast_summary) = run(bytes, &fast, chunk);
    let (full_events, full_summary) = run(bytes, &full, chunk);
    assert_eq!(full_summary.fast_lane_entries, 0, "the lane was off");
    let read_fast = std::mem::take(&mut fast_summary.fast_lane_entries);
    if fast_events != full_events {
        let first = fast_events
            .iter()
            .zip(&full_events)
            .position(|(a, b)| a != b)
            .unwrap_or(fast_events.len().min(full_events.len()));
        panic!(
            "the lanes differ at event {first} ({} and {} events)\nfast: {:?}\nfull: {:?}\ninput: {:?}",
            fast_events.len(),
            full_events.len(),
            fast_events.get(first),
            full_events.get(first),
            String::from_utf8_lossy(&bytes[..bytes.len().min(2000)]),
        );
    }
    assert_eq!(fast_summary, full_summary);
    (read_fast, full_summary.entries())
}

#[test]
fn every_corpus_file_reads_the_same_in_both_lanes() {
    let corpus = fixtures().join("corpus");
    let (mut files, mut read_fast, mut sitemap_entries) = (0, 0, 0);
    for kind in ["urlset", "sitemapindex", "gzip", "text", "feed"] {
        let mut paths: Vec<_> = std::fs::read_dir(corpus.join(kind))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        for path in paths {
            let bytes = std::fs::read(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy();
            let url = NormUrl::parse(&format!("https://fixture.invalid/{name}")).unwrap();
            let mut lenient = ParseOptions::for_url(url.clone());
            lenient.scope = ScopeMode::None;
            let (fast, entries) = same_both_ways(&bytes, &lenient, None);
            if matches!(kind, "urlset" | "sitemapindex") {
                read_fast += fast;
                sitemap_entries += entries;
            }
            let mut strict = ParseOptions::for_url(url);
            strict.strictness = Strictness::Strict;
            same_both_ways(&bytes, &strict, None);
            same_both_ways(&bytes, &lenient, Some(4_093));
            files += 1;
        }
    }
    assert!(files > 170, "{files} corpus files");
    eprintln!(
        "the fast lane read {read_fast} of the {sitemap_entries} entries of the corpus's sitemaps"
    );
    // The lane is worth having only if it reads the corpus's sitemaps.
    assert!(
        read_fast * 10 >= sitemap_entries * 9,
        "the fast lane read {read_fast} of {sitemap_entries} entries"
    );
}

/// Pieces of a urlset: the lane's shape, and everything that leaves it.
const PIECES: &[&str] = &[
    "<url><loc>https://example.com/a</loc></url>",
    "<url>\n  <loc>https://example.com/b?x=1&amp;y=2</loc>\n  <lastmod>2024-05-06T07:08:09+00:00</lastmod>\n  <changefreq>daily</changefreq>\n  <priority>0.8</priority>\n</url>",
    "<url><loc> https://example.com/c </loc><lastmod>2024-13-45</lastmod><priority>2</priority><changefreq>Weekly</changefreq></url>",
    "<url><loc>https://example.com/d&#x41;&#66;&lt;&gt;&quot;&apos;</loc></url>",
    "<url><loc>https://example.com/e</loc><loc>https://example.com/e2</loc><lastmod>2024</lastmod><lastmod>2025</lastmod></url>",
    "<url><loc>/relative/f</loc></url>",
    "<url><loc>https://other.example/g</loc></url>",
    "<url><loc>https://example.com/ü h</loc></url>",
    "<url><loc></loc></url>",
    "<url><lastmod>2024-01-01</lastmod></url>",
    "<url>https://example.com/own-text</url>",
    "<url><loc>https://example.com/i</loc><image:image><image:loc>https://example.com/i.png</image:loc><image:caption>c</image:caption></image:image></url>",
    "<url><loc>https://example.com/j</loc><xhtml:link rel=\"alternate\" hreflang=\"de\" href=\"https://example.com/de/j\"/></url>",
    "<url><loc>https://example.com/k</loc><news:news><news:title>t</news:title></news:news></url>",
    "<url><loc>https://example.com/l</loc><video:video><video:title>t</video:title></video:video></url>",
    "<url><loc>https://example.com/m</loc><unknown>skipped</unknown><foo:bar>x</foo:bar></url>",
    "<url><loc><![CDATA[https://example.com/n]]></loc></url>",
    "<url><!-- comment --><loc>https://example.com/o</loc></url>",
    "<url><loc>https://example.com/p&bogus;</loc></url>",
    "<url><loc>https://example.com/q & r</loc></url>",
    "<url><loc>https://example.com/s&#0;</loc></url>",
    "<url a=\"1\"><loc>https://example.com/t</loc></url>",
    "<url><loc a=\"1\">https://example.com/u</loc></url>",
    "<url xmlns=\"urn:other\"><loc>https://example.com/v</loc></url>",
    "<url><loc>https://example.com/w<b>bold</b></loc></url>",
    "<url><loc/></url>",
    "<url/>",
    "<sitemap><loc>https://example.com/x</loc></sitemap>",
    "<url><loc>https://example.com/y</loc></lastmod></url>",
    "<url><loc>https://example.com/z</loc><link>https://example.com/l</link></url>",
    "<url><s:loc>https://example.com/prefixed</s:loc></url>",
    "<url><loc>https://example.com/é/ü</loc><priority>.5</priority></url>",
    "<url ><loc >https://example.com/space</loc ></url >",
    "<?pi x?>",
    "<!-- between -->",
    "stray text",
    "&amp;",
    "<![CDATA[x]]>",
    "<other>x</other>",
    "\n",
    "\r\n  ",
    "\t",
];

/// How a generated urlset opens.
const ROOTS: &[&str] = &[
    "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\" xmlns:xhtml=\"http://www.w3.org/1999/xhtml\" xmlns:news=\"http://www.google.com/schemas/sitemap-news/0.9\" xmlns:video=\"http://www.google.com/schemas/sitemap-video/1.1\">",
    "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">",
    "<urlset>",
    "<urlset xmlns=\"https://www.sitemaps.org/schemas/sitemap/0.9/\" xmlns:image=\"urn:not-images\">",
    "<urlset xmlns=\"urn:unknown\">",
    "<s:urlset xmlns:s=\"urn:unknown\" xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">",
    "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">",
];

const PROLOGS: &[&[u8]] = &[
    b"",
    b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
    b"\xEF\xBB\xBF<?xml version=\"1.0\"?>",
    b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n",
    b"<!DOCTYPE urlset [<!ENTITY e \"x\">]>\n",
    b"junk before <",
];

fn document() -> impl Strategy<Value = Vec<u8>> {
    (
        0..PROLOGS.len(),
        0..ROOTS.len(),
        prop::collection::vec(0..PIECES.len(), 0..24),
        any::<bool>(),
    )
        .prop_map(|(prolog, root, pieces, close)| {
            let mut doc = PROLOGS[prolog].to_vec();
            let root = ROOTS[root];
            doc.extend_from_slice(root.as_bytes());
            let index = root.starts_with("<sitemapindex");
            for p in pieces {
                let piece = if index {
                    PIECES[p].replace("url>", "sitemap>")
                } else {
                    PIECES[p].to_string()
                };
                doc.extend_from_slice(piece.as_bytes());
            }
            if close {
                let name = &root[1..root.find([' ', '>']).unwrap()];
                doc.extend_from_slice(format!("\n</{name}>\n").as_bytes());
            }
            doc
        })
}

fn options() -> impl Strategy<Value = (ParseOptions, Option<usize>)> {
    (
        any::<bool>(),
        0u8..4,
        prop::option::of(1u64..12),
        prop::option::of(64u64..4096),
        prop::option::of(1usize..40),
    )
        .prop_map(|(strict, scope, max_entries, max_bytes, chunk)| {
            let url = NormUrl::parse("https://example.com/sitemap.xml").unwrap();
            let mut o = ParseOptions::for_url(url);
            match scope {
                0 => o.scope = ScopeMode::Directory,
                1 => o.scope = ScopeMode::Host,
                2 => o.scope = ScopeMode::None,
                _ => o.document_url = None,
            }
            if strict {
                o.strictness = Strictness::Strict;
            }
            if let Some(n) = max_entries {
                o.max_entries = n;
            }
            if let Some(n) = max_bytes {
                o.max_bytes = n;
            }
            (o, chunk)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn generated_documents_read_the_same_in_both_lanes(
        doc in document(),
        (options, chunk) in options(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        truncate in prop::option::of(any::<prop::sample::Index>()),
        wrap in any::<bool>(),
    ) {
        let mut doc = doc;
        for (at, byte) in cuts {
            if !doc.is_empty() {
                let i = at.index(doc.len());
                doc[i] = byte;
            }
        }
        if let Some(t) = truncate {
            doc.truncate(t.index(doc.len() + 1));
        }
        let doc = if wrap { gzip(&doc) } else { doc };
        same_both_ways(&doc, &options, chunk);
    }

    #[test]
    fn arbitrary_bytes_after_a_root_read_the_same_in_both_lanes(
        root in 0..ROOTS.len(),
        body in prop::collection::vec(any::<u8>(), 0..512),
        (options, chunk) in options(),
    ) {
        let mut doc = ROOTS[root].as_bytes().to_vec();
        doc.extend_from_slice(&body);
        same_both_ways(&doc, &options, chunk);
    }
}

#[test]
fn a_large_plain_urlset_is_read_by_the_lane_nearly_whole() {
    let mut doc = String::from("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    for i in 0..5_000 {
        doc.push_str(&format!(
            "  <url>\n    <loc>https://example.com/p/{i}?a=1&amp;b=2</loc>\n    <lastmod>2024-01-{:02}</lastmod>\n  </url>\n",
            i % 28 + 1
        ));
    }
    doc.push_str("</urlset>\n");
    let url = NormUrl::parse("https://example.com/sitemap.xml").unwrap();
    let options = ParseOptions::for_url(url);
    // An entry cut by the end of the bytes read ahead goes to quick-xml.
    let (fast, entries) = same_both_ways(doc.as_bytes(), &options, None);
    assert_eq!(entries, 5_000);
    assert!(fast >= 4_950, "{fast} entries in the lane");
    let (fast, _) = same_both_ways(doc.as_bytes(), &options, Some(1_000));
    assert!(fast >= 4_000, "small reads: {fast} entries in the lane");
    let (fast, _) = same_both_ways(&gzip(doc.as_bytes()), &options, None);
    assert!(fast >= 4_950, "through gzip: {fast} entries in the lane");
}

/// `n` one-line entries, numbered from `from`.
fn entries(n: usize, from: usize) -> String {
    (from..from + n)
        .map(|i| format!("<url><loc>https://example.com/p/{i:06}</loc></url>\n"))
        .collect()
}

const URLSET: &str = "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";

#[test]
fn an_invalid_byte_is_flagged_where_the_full_path_flags_it() {
    for chunk in [None, Some(7), Some(4_093)] {
        for n in [1_200, 1_400, 2_000] {
            // Right after the entries that fill the first buffers, and again
            // beyond an entry limit that stops the document before it.
            let mut doc = URLSET.as_bytes().to_vec();
            doc.extend_from_slice(entries(n, 0).as_bytes());
            doc.extend_from_slice(b"\xff\n");
            doc.extend_from_slice(entries(5, n).as_bytes());
            doc.extend_from_slice(b"</urlset>\n");
            let mut options = ParseOptions::default();
            same_both_ways(&doc, &options, chunk);
            options.max_entries = n as u64 - 100;
            same_both_ways(&doc, &options, chunk);
        }
    }
}

#[test]
fn positions_after_long_entries_are_those_of_the_full_path() {
    // An entry the lane leaves to quick-xml (a comment), long enough that the
    // source drops its start while reading it, after entries the lane reads.
    let long = |len: usize, eol: &str| {
        let mut s = format!("<url><!-- c --><loc>/relative/page</loc>{eol}");
        while s.len() < len {
            s.push_str(&format!("<x>filler filler</x>{eol}"));
        }
        s + "</url>" + eol
    };
    let url = NormUrl::parse("https://example.com/sitemap.xml").unwrap();
    let options = ParseOptions::for_url(url);
    for chunk in [None, Some(13), Some(4_093)] {
        for len in [20_000, 40_000, 70_000, 140_000] {
            for n in [0, 500, 1_764, 2_300] {
                for eol in ["\n", "\r\n"] {
                    let mut doc = URLSET.replace('\n', eol);
                    doc.push_str(&entries(n, 0).replace('\n', eol));
                    doc.push_str(&long(len, eol));
                    doc.push_str("<url><loc>/relative/after</loc></url>");
                    doc.push_str(eol);
                    doc.push_str("</urlset>");
                    same_both_ways(doc.as_bytes(), &options, chunk);
                }
            }
        }
    }
}
