//! Diagnostics point at the right line and column: checked against an
//! independent count, across buffer refills, CR/LF/CRLF, BOMs and gzip.

mod common;

use common::{gzip, parse_at, parse_chunked};
use sitemapd_parser::{NormUrl, ParseOptions, Position, Rule, ScopeMode};

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

/// Line and column of each of the ascending `offsets` in `doc` (LF, CRLF and
/// a lone CR end a line), counted in one plain pass.
fn expected_all(doc: &[u8], offsets: &[usize]) -> Vec<Position> {
    let (mut line, mut start, mut i) = (1, 0, 0);
    let mut out = Vec::new();
    for &offset in offsets {
        while i < offset {
            let brk = match doc[i] {
                b'\n' => true,
                b'\r' => doc.get(i + 1) != Some(&b'\n'),
                _ => false,
            };
            if brk {
                line += 1;
                start = i + 1;
            }
            i += 1;
        }
        out.push(Position {
            line,
            column: (offset - start) as u64 + 1,
        });
    }
    out
}

fn expected(doc: &[u8], offset: usize) -> Position {
    expected_all(doc, &[offset])[0]
}

fn at(p: &common::Parsed, rule: Rule) -> Vec<Position> {
    p.diagnostics
        .iter()
        .filter(|d| d.rule == rule)
        .map(|d| d.position)
        .collect()
}

#[test]
fn a_last_line_without_newline_and_a_single_line() {
    let p = parse_at("https://a.com/1\nfoo.html", "https://a.com/s.txt");
    assert_eq!(at(&p, Rule::T1), [Position { line: 2, column: 1 }]);
    let p = parse_at("https://b.com/1", "https://a.com/s.txt");
    assert_eq!(at(&p, Rule::L6), [Position { line: 1, column: 1 }]);
}

#[test]
fn an_entry_open_at_a_truncation() {
    let doc = format!(
        "<urlset xmlns=\"{NS}\">\n<url><loc>https://b.com/x</loc>\n<lastmod>2020</lastmod>\n"
    );
    let p = parse_at(doc, "https://a.com/s.xml");
    assert_eq!(at(&p, Rule::L6), [Position { line: 2, column: 1 }]);
}

#[test]
fn an_entry_longer_than_the_buffer() {
    let doc = format!(
        "<urlset xmlns=\"{NS}\">\n<url>\n{}</url></urlset>",
        "<!-- -->\n".repeat(10_000)
    );
    let p = parse_at(doc, "https://a.com/s.xml");
    assert_eq!(at(&p, Rule::X2), [Position { line: 2, column: 1 }]);
}

#[test]
fn lone_cr_ends_a_line() {
    let p = parse_at("https://a.com/1\rnot a url\r", "https://a.com/s.txt");
    assert_eq!(at(&p, Rule::T1), [Position { line: 2, column: 1 }]);
    let doc = format!(
        "<urlset xmlns=\"{NS}\">\r<url><loc>https://a.com/a</loc>\r<lastmod>bad</lastmod></url></urlset>"
    );
    let p = parse_at(doc, "https://a.com/s.xml");
    assert_eq!(at(&p, Rule::X7), [Position { line: 3, column: 1 }]);
}

#[test]
fn a_bom_is_not_a_column() {
    let doc = format!(
        "\u{feff}<urlset xmlns=\"{NS}\"><url><loc>https://a.com/a</loc><lastmod>bad</lastmod></url></urlset>"
    );
    let p = parse_at(doc.clone(), "https://a.com/s.xml");
    let lastmod = doc.find("<lastmod>").unwrap() - 3;
    assert_eq!(
        at(&p, Rule::X7),
        [Position {
            line: 1,
            column: lastmod as u64 + 1
        }]
    );
}

#[test]
fn invalid_bytes_are_flagged_where_they_are_and_in_order() {
    let mut doc = format!(
        "<urlset xmlns=\"{NS}\">\n<url><loc>https://a.com/1</loc></url>\n<url><loc>https://a.com/"
    )
    .into_bytes();
    let bad = doc.len();
    doc.extend_from_slice(b"\xff</loc></url>\n</urlset>");
    let p = parse_at(doc.clone(), "https://a.com/s.xml");
    assert_eq!(at(&p, Rule::C1), [expected(&doc, bad)]);
    assert_eq!(p.urls.len(), 2);
}

#[test]
fn many_diagnostics_across_many_buffers_crlf_and_gzip() {
    let mut doc = format!("<?xml version=\"1.0\"?>\r\n<urlset xmlns=\"{NS}\">\r\n");
    let mut offsets = Vec::new();
    for i in 0..20_000 {
        doc.push_str(&format!("  <url>\r\n    <loc>https://a.com/{i}</loc>\r\n"));
        if i % 7 == 0 {
            offsets.push(doc.len() + 4);
            doc.push_str("    <lastmod>soon</lastmod>\r\n");
        }
        doc.push_str("  </url>\r\n");
    }
    doc.push_str("</urlset>\r\n");
    let want = expected_all(doc.as_bytes(), &offsets);
    assert!(doc.len() > 1 << 20);
    for input in [doc.clone().into_bytes(), gzip(doc.as_bytes())] {
        let p = parse_at(input, "https://a.com/s.xml");
        assert_eq!(p.urls.len(), 20_000);
        assert_eq!(at(&p, Rule::X7), want);
    }
}

#[test]
fn entry_positions_asked_after_field_positions_across_crlf_and_cr() {
    // Each entry yields a field diagnostic (X7, later in the text) and then an
    // entry diagnostic (L6, at its start): positions are asked for backwards.
    let mut doc = format!("<urlset xmlns=\"{NS}\">\r\n");
    let (mut entries, mut fields) = (Vec::new(), Vec::new());
    for i in 0..5_000 {
        let eol = if i % 2 == 0 { "\r\n" } else { "\r" };
        entries.push(doc.len());
        doc.push_str(&format!(
            "<url>{eol}  <loc>https://other.example/{i}</loc>{eol}  "
        ));
        fields.push(doc.len());
        doc.push_str(&format!("<lastmod>never</lastmod>{eol}</url>{eol}"));
    }
    doc.push_str("</urlset>");
    let p = parse_at(doc.clone(), "https://a.com/s.xml");
    assert_eq!(at(&p, Rule::X7), expected_all(doc.as_bytes(), &fields));
    assert_eq!(at(&p, Rule::L6), expected_all(doc.as_bytes(), &entries));
}

/// A CR read as the last byte of a refill, its LF not read yet, is counted
/// once: CRLF documents read in small pieces, with entries long enough that
/// the source drops their start while reading them.
#[test]
fn a_crlf_split_by_a_read_is_one_line_end() {
    let long = |len: usize| {
        let mut s = String::from("<url><!-- c --><loc>https://example.com/long</loc>\r\n");
        while s.len() < len {
            s.push_str("<x>filler</x>\r\n");
        }
        s + "</url>\r\n"
    };
    let url = "https://example.com/sitemap.xml";
    for chunk in [Some(7), Some(13), Some(64), Some(1_000), Some(4_093), None] {
        for (n, len) in [
            (0, 40_000),
            (10, 40_000),
            (1_300, 40_000),
            (3, 70_000),
            (3, 99_000),
        ] {
            let mut doc = format!("<urlset xmlns=\"{NS}\">\r\n");
            for i in 0..n {
                doc.push_str(&format!(
                    "<url><loc>https://example.com/p/{i}</loc></url>\r\n"
                ));
            }
            doc.push_str(&long(len));
            doc.push_str(&long(len / 2 + 7));
            let offset = doc.len() + "<url><loc>".len();
            doc.push_str("<url><loc>/relative/after</loc></url>\r\n</urlset>\r\n");
            let mut options = ParseOptions::for_url(NormUrl::parse(url).unwrap());
            options.scope = ScopeMode::None;
            let p = parse_chunked(doc.clone(), options, chunk);
            let want = expected(doc.as_bytes(), offset - "<loc>".len());
            assert_eq!(
                at(&p, Rule::X3),
                [want],
                "reads of {chunk:?}, n {n}, len {len}"
            );
        }
    }
}

/// An entry longer than a buffer and a half is placed where it starts, however
/// many refills it takes to read it.
#[test]
fn the_start_of_an_entry_is_kept_across_many_refills() {
    for chunk in [None, Some(13), Some(4_093)] {
        for len in [40_000, 100_000, 140_000, 300_000] {
            for n in [0, 131, 1_700] {
                let mut doc = format!("<urlset xmlns=\"{NS}\">\n");
                for i in 0..n {
                    doc.push_str(&format!(
                        "<url><loc>https://example.com/p/{i}</loc></url>\n"
                    ));
                }
                let start = doc.len();
                doc.push_str("<url><!-- c --><loc>https://other.example/x</loc>\n");
                while doc.len() - start < len {
                    doc.push_str("<x>filler filler filler</x>\n");
                }
                doc.push_str("</url>\n</urlset>\n");
                let url = NormUrl::parse("https://example.com/sitemap.xml").unwrap();
                let p = parse_chunked(doc.clone(), ParseOptions::for_url(url), chunk);
                let want = expected(doc.as_bytes(), start);
                assert_eq!(
                    at(&p, Rule::L6),
                    [want],
                    "reads of {chunk:?}, len {len}, n {n}"
                );
            }
        }
    }
}
