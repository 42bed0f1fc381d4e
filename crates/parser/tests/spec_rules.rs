//! One test (at least) per docs/SPEC.md rule in the parser's scope, named by rule id.

mod common;

use common::*;
use sitemapd_parser::{
    ChangeFreq, Format, NormUrl, OutOfScope, ParseOptions, Precision, Relationship, Rule,
    ScopeMode, Severity,
};

const DOC: &str = "https://example.com/sitemap.xml";

// ---------------------------------------------------------------- container

#[test]
fn c1_utf8_bom_is_skipped_silently() {
    let p = parse_at(
        format!(
            "\u{feff}{}",
            urlset("<url><loc>https://example.com/a</loc></url>")
        ),
        DOC,
    );
    assert_eq!(p.locs(), ["https://example.com/a"]);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
}

#[test]
fn c1_utf16_documents_are_decoded_and_flagged() {
    let xml = urlset("<url><loc>https://example.com/é</loc></url>");
    let le: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(xml.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let p = parse_at(le, DOC);
    assert_eq!(p.locs(), ["https://example.com/%C3%A9"]);
    assert_eq!(p.summary.encoding, "UTF-16LE");
    assert!(p.has(Rule::C1));
}

#[test]
fn c1_declared_legacy_encoding_is_decoded() {
    let mut doc = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>https://example.com/caf".to_vec();
    doc.push(0xE9);
    doc.extend_from_slice(b"</loc></url></urlset>");
    let p = parse_at(doc, DOC);
    assert_eq!(p.locs(), ["https://example.com/caf%C3%A9"]);
    assert!(p.has(Rule::C1));
}

#[test]
fn c1_invalid_utf8_is_replaced_flagged_and_the_rest_kept() {
    let mut doc =
        urlset("<url><loc>https://example.com/a</loc></url><url><loc>https://example.com/bad")
            .into_bytes();
    doc.truncate(doc.len() - "</urlset>".len());
    doc.extend_from_slice(b"\xff</loc></url><url><loc>https://example.com/c</loc></url></urlset>");
    let p = parse_at(doc, DOC);
    assert_eq!(
        p.locs(),
        [
            "https://example.com/a",
            "https://example.com/bad%EF%BF%BD",
            "https://example.com/c"
        ]
    );
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.rule == Rule::C1 && d.message.contains("U+FFFD"))
    );
}

#[test]
fn c2_gzip_is_detected_by_magic_bytes_also_nested() {
    let xml = urlset("<url><loc>https://example.com/a</loc></url>");
    assert_eq!(
        parse_at(gzip(xml.as_bytes()), DOC).locs(),
        ["https://example.com/a"]
    );
    let twice = parse_at(gzip(&gzip(xml.as_bytes())), DOC);
    assert_eq!(
        (twice.locs(), twice.summary.gzip_layers),
        (vec!["https://example.com/a"], 2)
    );
    // A ".gz" URL that is plain XML is read as XML.
    let plain = parse_at(xml.clone(), "https://example.com/sitemap.xml.gz");
    assert_eq!((plain.locs().len(), plain.summary.gzip_layers), (1, 0));
}

#[test]
fn c3_byte_limit_stops_a_gzip_bomb_while_streaming() {
    // 16 MiB of spaces inside an otherwise valid urlset, gzipped to ~16 KiB.
    let mut body = urlset("<url><loc>https://example.com/a</loc></url>").into_bytes();
    let tail = body.split_off(body.len() - "</urlset>".len());
    body.extend(std::iter::repeat_n(b' ', 16 << 20));
    body.extend(tail);
    let bomb = gzip(&body);
    assert!(bomb.len() < 100_000);
    let mut o = ParseOptions::for_url(NormUrl::parse(DOC).unwrap());
    o.max_bytes = 1 << 20;
    let p = parse_with(bomb, o);
    assert_eq!(
        p.locs(),
        ["https://example.com/a"],
        "what came before the limit is kept"
    );
    let c3: Vec<_> = p
        .diagnostics
        .iter()
        .filter(|d| d.rule == Rule::C3)
        .collect();
    assert_eq!(c3.len(), 1);
    assert_eq!(c3[0].severity, Severity::Error);
    assert!(!p.summary.complete);
    assert!(p.summary.bytes <= 1 << 20);
}

#[test]
fn c3_limit_counts_bytes_after_decompression_not_before() {
    let xml = urlset(&"<url><loc>https://example.com/a</loc></url>".repeat(100));
    let mut o = ParseOptions {
        max_bytes: xml.len() as u64,
        ..ParseOptions::default()
    };
    assert!(
        !parse_with(gzip(xml.as_bytes()), o.clone()).has(Rule::C3),
        "exactly at the limit"
    );
    o.max_bytes = xml.len() as u64 - 1;
    assert!(parse_with(gzip(xml.as_bytes()), o).has(Rule::C3));
}

#[test]
fn c4_entry_limit_lenient_keeps_the_first_n_and_strict_rejects() {
    let xml = urlset(
        &(0..10)
            .map(|i| format!("<url><loc>https://example.com/{i}</loc></url>"))
            .collect::<String>(),
    );
    let mut o = ParseOptions::for_url(NormUrl::parse(DOC).unwrap());
    o.max_entries = 4;
    let lenient = parse_with(xml.clone(), o.clone());
    assert_eq!(lenient.urls.len(), 4);
    assert!(
        lenient
            .diagnostics
            .iter()
            .any(|d| d.rule == Rule::C4 && d.severity == Severity::Warning)
    );
    o.strictness = sitemapd_parser::Strictness::Strict;
    let strict = parse_with(xml, o);
    assert!(
        strict
            .diagnostics
            .iter()
            .any(|d| d.rule == Rule::C4 && d.severity == Severity::Error)
    );
    assert!(!strict.summary.complete);
}

#[test]
fn c4_strict_rejection_is_visible_in_the_summary() {
    let xml = urlset(
        &(0..3)
            .map(|i| format!("<url><loc>https://example.com/{i}</loc></url>"))
            .collect::<String>(),
    );
    let mut o = ParseOptions::for_url(NormUrl::parse(DOC).unwrap());
    o.max_entries = 2;
    assert!(
        !parse_with(xml.clone(), o.clone()).summary.rejected,
        "lenient keeps the first 2"
    );
    o.strictness = sitemapd_parser::Strictness::Strict;
    assert!(parse_with(xml, o).summary.rejected);
}

#[test]
fn c1_utf16_without_bom_after_whitespace_and_mislabelled_utf8() {
    let xml = format!(
        "\n  {}",
        urlset("<url><loc>https://example.com/a</loc></url>")
    );
    let le: Vec<u8> = xml.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let p = parse_at(le, DOC);
    assert_eq!(
        (p.locs(), p.summary.encoding),
        (vec!["https://example.com/a"], "UTF-16LE")
    );
    let lying = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>https://example.com/café</loc></url></urlset>";
    let p = parse_at(lying, DOC);
    assert_eq!(p.locs(), ["https://example.com/caf%C3%A9"]);
    assert_eq!(p.summary.encoding, "UTF-8");
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.rule == Rule::C1 && d.message.contains("UTF-8"))
    );
}

#[test]
fn c5_whitespace_comments_stylesheets_and_junk_before_the_root() {
    let xml = format!(
        "This XML file does not appear to have any style information.\n\n<?xml-stylesheet type=\"text/xsl\" href=\"//x/s.xsl\"?>\n<!-- generator -->\n{}",
        urlset("<url><loc>https://example.com/a</loc></url>")
    );
    let p = parse_at(xml, DOC);
    assert_eq!(p.locs(), ["https://example.com/a"]);
    assert!(p.has(Rule::C5));
    let quiet = parse_at(
        format!(
            "\n\n  <!-- c --><?xml-stylesheet href='a'?>{}",
            urlset("<url><loc>https://example.com/a</loc></url>")
        ),
        DOC,
    );
    assert_eq!((quiet.locs().len(), quiet.diagnostics.len()), (1, 0));
}

#[test]
fn c6_no_xxe_and_no_entity_expansion() {
    let xxe = r#"<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd"><!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/&xxe;&lol2;</loc></url><url><loc>https://example.com/ok</loc></url></urlset>"#;
    let p = parse_at(xxe, DOC);
    // Undefined entities are never expanded: a loc holding one names no real
    // URL, so its entry is dropped (flagged), and the rest of the document kept.
    assert_eq!(p.locs(), ["https://example.com/ok"]);
    assert!(!p.diagnostics.iter().any(|d| d.message.contains("root:")));
    let c6: Vec<_> = p
        .diagnostics
        .iter()
        .filter(|d| d.rule == Rule::C6)
        .collect();
    assert_eq!(c6.len(), 2, "DTD ignored, and the entry dropped: {c6:?}");
    assert!(c6[1].message.contains("undefined entity &xxe;"), "{c6:?}");
}

#[test]
fn c7_format_comes_from_the_content() {
    assert_eq!(
        parse_at("https://example.com/a\n", "https://example.com/sitemap.xml")
            .summary
            .format,
        Some(Format::Text)
    );
    assert_eq!(
        parse_at(urlset(""), "https://example.com/list.txt")
            .summary
            .format,
        Some(Format::Urlset)
    );
    let html = parse_at("<!DOCTYPE html><html><body>404</body></html>", DOC);
    assert_eq!(html.summary.format, None);
    assert!(html.has(Rule::C7));
    for nothing in [
        &b""[..],
        b"   \n",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        b"SimpleMvcSitemap.XmlResult`1[Model]",
    ] {
        let p = parse(nothing.to_vec());
        assert_eq!(p.summary.format, None);
        assert!(p.has(Rule::C7));
    }
}

#[test]
fn c8_partial_parse_keeps_entries_before_the_error() {
    let broken = format!(
        "{}<url><loc>https://example.com/c</loc><lastmod>2020-01-01<</lastmod></url></urlset>",
        &urlset(
            "<url><loc>https://example.com/a</loc></url><url><loc>https://example.com/b</loc></url>"
        )
        .trim_end_matches("</urlset>")
    );
    let p = parse_at(broken, DOC);
    // The open entry's loc was complete: it is yielded; its broken lastmod is not.
    assert_eq!(
        p.locs(),
        [
            "https://example.com/a",
            "https://example.com/b",
            "https://example.com/c"
        ]
    );
    assert_eq!(p.urls[2].lastmod, None);
    let c8 = p.diagnostics.iter().find(|d| d.rule == Rule::C8).unwrap();
    assert_eq!(c8.severity, Severity::Error);
    assert!(c8.position.line >= 1);
}

#[test]
fn c8_truncated_documents_and_truncated_gzip() {
    let xml = urlset(
        &(0..200)
            .map(|i| format!("<url><loc>https://example.com/{i}</loc></url>"))
            .collect::<String>(),
    );
    let cut = &xml[..xml.len() / 2];
    let p = parse_at(cut, DOC);
    assert!(p.urls.len() >= 90 && p.urls.len() < 200, "{}", p.urls.len());
    assert!(p.has(Rule::C8));
    let gz = gzip(xml.as_bytes());
    let q = parse_at(gz[..gz.len() - 10].to_vec(), DOC);
    assert_eq!(
        q.urls.len(),
        200,
        "all data is there, only the gzip trailer is missing"
    );
    assert!(q.has(Rule::C8));
    assert!(!q.summary.complete);
}

#[test]
fn c8_corrupt_gzip_keeps_what_inflated_before_the_corruption() {
    use std::io::Write;
    let entries: String = (0..20_000)
        .map(|i| format!("<url><loc>https://example.com/p/{i}</loc></url>"))
        .collect();
    let xml = urlset(&entries);
    let (first, second) = xml.split_at(xml.len() / 2);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(first.as_bytes()).unwrap();
    e.flush().unwrap(); // a sync flush: the next deflate block starts on a byte boundary
    let cut = e.get_ref().len();
    e.write_all(second.as_bytes()).unwrap();
    let mut gz = e.finish().unwrap();
    gz[cut] = 0x07; // BFINAL=1, BTYPE=11: an invalid block, zlib fails right there
    let recoverable = first.matches("</url>").count();
    let p = parse_at(gz, DOC);
    let c8 = p
        .diagnostics
        .iter()
        .find(|d| d.rule == Rule::C8)
        .expect("a C8 error");
    assert!(c8.message.contains("gzip"), "{}", c8.message);
    let lost = recoverable - p.urls.len();
    let entry_len = entries.len() / 20_000;
    assert!(
        lost <= 2048 / entry_len + 1,
        "lost {lost} of {recoverable} entries inflated before the corruption"
    );
}

// ---------------------------------------------------------------- urlset

#[test]
fn x1_namespace_variants_are_accepted_and_flagged_strict_rejects_them() {
    for ns in [
        "https://www.sitemaps.org/schemas/sitemap/0.9",
        "http://www.google.com/schemas/sitemap/0.84",
        "http://www.sitemaps.org/schemas/sitemap/0.9/",
    ] {
        let xml =
            format!(r#"<urlset xmlns="{ns}"><url><loc>https://example.com/a</loc></url></urlset>"#);
        let p = parse_at(xml.clone(), DOC);
        assert_eq!(p.locs().len(), 1, "{ns}");
        assert!(p.has(Rule::X1));
        let s = parse_strict_at(xml, DOC);
        assert_eq!((s.urls.len(), s.summary.rejected), (0, true), "{ns}");
    }
    let none = parse_at(
        "<urlset><url><loc>https://example.com/a</loc></url></urlset>",
        DOC,
    );
    assert_eq!(none.locs().len(), 1);
    assert!(none.has(Rule::X1));
    let exact = parse_at(urlset("<url><loc>https://example.com/a</loc></url>"), DOC);
    assert!(!exact.has(Rule::X1));
}

#[test]
fn x2_missing_and_repeated_loc() {
    let xml = urlset(
        "<url><lastmod>2020-01-01</lastmod></url>\
         <url><loc>https://example.com/first</loc><loc>https://example.com/second</loc></url>\
         <url>https://example.com/bare</url>",
    );
    let p = parse_at(xml.clone(), DOC);
    assert_eq!(
        p.locs(),
        ["https://example.com/first", "https://example.com/bare"]
    );
    assert_eq!(p.rules().iter().filter(|r| **r == Rule::X2).count(), 3);
    let strict = parse_strict_at(xml, DOC);
    assert_eq!(strict.locs(), ["https://example.com/first"]);
}

#[test]
fn x3_trimmed_relative_resolved_lenient_dropped_strict() {
    let xml = urlset(
        "<url><loc>\n      https://example.com/wrapped\n    </loc></url>\
         <url><loc>/relative/page</loc></url>\
         <url><loc>mailto:a@example.com</loc></url>\
         <url><loc>{{ site.url }}/</loc></url>",
    );
    let p = parse_at(xml.clone(), "https://example.com/dir/sitemap.xml");
    let mut o =
        ParseOptions::for_url(NormUrl::parse("https://example.com/dir/sitemap.xml").unwrap());
    o.scope = ScopeMode::Host;
    let p_host = parse_with(xml.clone(), o);
    assert_eq!(
        p_host.locs(),
        [
            "https://example.com/wrapped",
            "https://example.com/relative/page"
        ]
    );
    assert_eq!(p.rules().iter().filter(|r| **r == Rule::X3).count(), 3);
    let strict = parse_strict_at(xml, "https://example.com/sitemap.xml");
    assert_eq!(strict.locs(), ["https://example.com/wrapped"]);
    let no_base = parse(urlset("<url><loc>/relative</loc></url>"));
    assert!(no_base.urls.is_empty());
    assert!(no_base.has(Rule::X3));
}

#[test]
fn x4_overlong_loc_is_dropped() {
    let long = format!("https://example.com/{}", "a".repeat(2_100));
    let ok = format!("https://example.com/{}", "a".repeat(2_000));
    let p = parse_at(
        urlset(&format!(
            "<url><loc>{long}</loc></url><url><loc>{ok}</loc></url>"
        )),
        DOC,
    );
    assert_eq!(p.locs(), [ok.as_str()]);
    assert!(p.has(Rule::X4));
}

#[test]
fn x4_a_loc_too_long_to_buffer_is_one_x4_and_the_entry_is_dropped() {
    let huge = format!("https://example.com/{}", "a".repeat(100_000));
    let p = parse_at(
        urlset(&format!(
            "<url><loc>{huge}</loc><loc>https://example.com/second</loc></url><url><loc>https://example.com/next</loc></url>"
        )),
        DOC,
    );
    assert_eq!(p.locs(), ["https://example.com/next"]);
    assert_eq!(
        p.rules(),
        [Rule::X4, Rule::X2],
        "the second <loc> is a repeat, flagged"
    );
}

#[test]
fn x7_x9_x10_repeated_fields_keep_the_first_and_say_so() {
    let p = parse_at(
        urlset(
            "<url><loc>https://example.com/a</loc><changefreq>daily</changefreq><changefreq>weekly</changefreq>\
             <priority>0.1</priority><priority>0.9</priority><lastmod>2001-01-01</lastmod><lastmod>2002-02-02</lastmod></url>",
        ),
        DOC,
    );
    let u = &p.urls[0];
    assert_eq!(
        (u.changefreq, u.priority),
        (Some(ChangeFreq::Daily), Some(0.1))
    );
    assert_eq!(u.lastmod.unwrap().to_string(), "2001-01-01T00:00:00Z");
    assert_eq!(p.rules(), [Rule::X9, Rule::X10, Rule::X7]);
}

#[test]
fn x5_entities_character_references_and_cdata_are_decoded() {
    let p = parse_at(
        urlset(
            "<url><loc>https://example.com/a?x=1&amp;y=2&#38;z=&#x33;</loc></url>\
             <url><loc><![CDATA[https://example.com/b?x=1&y=2]]></loc></url>\
             <url><loc>https://example.com/c?x=1&y=2</loc></url>",
        ),
        DOC,
    );
    assert_eq!(
        p.locs(),
        [
            "https://example.com/a?x=1&y=2&z=3",
            "https://example.com/b?x=1&y=2",
            "https://example.com/c?x=1&y=2"
        ]
    );
    assert_eq!(p.rules(), [Rule::X5], "only the unescaped & is flagged");
}

#[test]
fn x6_iri_locs_are_percent_encoded() {
    let p = parse_at(
        urlset("<url><loc>https://example.com/کتاب?q=ü</loc></url>"),
        DOC,
    );
    assert_eq!(
        p.locs(),
        ["https://example.com/%DA%A9%D8%AA%D8%A7%D8%A8?q=%C3%BC"]
    );
    assert!(p.has(Rule::X6));
}

#[test]
fn x7_lastmod_levels_precision_and_repairs() {
    let dates = [
        ("2005", Precision::Year, false),
        ("2005-01", Precision::Month, false),
        ("2005-01-01", Precision::Day, false),
        ("2005-01-01T10:20+01:00", Precision::Minute, false),
        ("2005-01-01T10:20:30Z", Precision::Second, false),
        ("2005-01-01T10:20:30.125-05:00", Precision::Fraction, false),
        ("2005-01-01T10:20:30", Precision::Second, true),
        ("2013-05-06T10:20:30+0800", Precision::Second, true),
    ];
    let body: String = dates
        .iter()
        .enumerate()
        .map(|(i, (d, ..))| {
            format!("<url><loc>https://example.com/{i}</loc><lastmod>{d}</lastmod></url>")
        })
        .collect();
    let p = parse_at(
        urlset(&format!(
            "{body}<url><loc>https://example.com/bad</loc><lastmod>next week</lastmod></url>"
        )),
        DOC,
    );
    for (i, (d, precision, _)) in dates.iter().enumerate() {
        assert_eq!(
            p.urls[i].lastmod.map(|l| l.precision),
            Some(*precision),
            "{d}"
        );
    }
    assert_eq!(
        p.urls[5].lastmod.unwrap().to_string(),
        "2005-01-01T15:20:30.125Z"
    );
    assert_eq!(
        p.urls[7].lastmod.unwrap().to_string(),
        "2013-05-06T02:20:30Z"
    );
    assert_eq!(p.urls[8].lastmod, None, "entry kept, field dropped");
    assert_eq!(p.rules().iter().filter(|r| **r == Rule::X7).count(), 3);
    let strict = parse_strict_at(urlset(&body), DOC);
    assert_eq!(strict.urls[6].lastmod, None);
    assert_eq!(strict.urls[7].lastmod, None);
}

#[test]
fn x8_future_lastmod_is_kept_as_written() {
    let p = parse_at(
        urlset("<url><loc>https://example.com/a</loc><lastmod>2999-01-01</lastmod></url>"),
        DOC,
    );
    assert_eq!(
        p.urls[0].lastmod.unwrap().to_string(),
        "2999-01-01T00:00:00Z"
    );
    assert!(p.diagnostics.is_empty());
}

#[test]
fn x9_changefreq() {
    let p = parse_at(
        urlset(
            "<url><loc>https://example.com/a</loc><changefreq> weekly </changefreq></url>\
             <url><loc>https://example.com/b</loc><changefreq>Daily</changefreq></url>\
             <url><loc>https://example.com/c</loc><changefreq>often</changefreq></url>",
        ),
        DOC,
    );
    let got: Vec<_> = p.urls.iter().map(|u| u.changefreq).collect();
    assert_eq!(
        got,
        [Some(ChangeFreq::Weekly), Some(ChangeFreq::Daily), None]
    );
    assert_eq!(p.rules(), [Rule::X9, Rule::X9]);
}

#[test]
fn x10_priority_absent_stays_absent() {
    let p = parse_at(
        urlset(
            "<url><loc>https://example.com/a</loc></url>\
             <url><loc>https://example.com/b</loc><priority>0.5</priority></url>\
             <url><loc>https://example.com/c</loc><priority>1.5</priority></url>\
             <url><loc>https://example.com/d</loc><priority>high</priority></url>",
        ),
        DOC,
    );
    let got: Vec<_> = p.urls.iter().map(|u| u.priority).collect();
    assert_eq!(got, [None, Some(0.5), None, None]);
    assert_eq!(p.rules(), [Rule::X10, Rule::X10]);
}

#[test]
fn x11_priority_zero_is_kept() {
    let p = parse_at(
        urlset("<url><loc>https://example.com/a</loc><priority>0.0</priority></url>"),
        DOC,
    );
    assert_eq!(p.urls[0].priority, Some(0.0));
}

#[test]
fn x12_unknown_namespaces_are_ignored_and_extension_locs_are_never_pages() {
    let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:img="http://www.google.com/schemas/sitemap-image/1.1" xmlns:x="urn:unknown">
      <x:thing><loc>https://example.com/not-a-page</loc></x:thing>
      <url><loc>https://example.com/page</loc><x:loc>https://example.com/nope</x:loc>
        <img:image><img:loc>https://cdn.example.net/i.jpg</img:loc></img:image></url></urlset>"#;
    let p = parse_at(xml, DOC);
    assert_eq!(p.locs(), ["https://example.com/page"]);
    assert_eq!(
        p.urls[0].images[0].loc.as_str(),
        "https://cdn.example.net/i.jpg"
    );
    assert!(p.diagnostics.is_empty());
}

#[test]
fn x13_child_order_is_free() {
    let p = parse_at(
        urlset(
            "<url><priority>0.7</priority><lastmod>2020-02-02</lastmod><changefreq>daily</changefreq><loc>https://example.com/a</loc></url>",
        ),
        DOC,
    );
    let u = &p.urls[0];
    assert_eq!(
        (u.priority, u.changefreq, u.lastmod.is_some()),
        (Some(0.7), Some(ChangeFreq::Daily), true)
    );
}

// ---------------------------------------------------------------- index

#[test]
fn i1_index_children_are_references_with_lastmod() {
    let xml = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>https://example.com/s1.xml.gz</loc><lastmod>2024-05-01T00:00:00Z</lastmod></sitemap>
      <sitemap><loc>https://example.com/feed.rss</loc></sitemap></sitemapindex>"#;
    let p = parse_at(xml, DOC);
    assert_eq!(p.summary.format, Some(Format::SitemapIndex));
    assert!(p.urls.is_empty());
    assert_eq!(p.sitemaps.len(), 2);
    assert_eq!(
        p.sitemaps[0].lastmod.unwrap().to_string(),
        "2024-05-01T00:00:00Z"
    );
    assert_eq!(p.sitemaps[1].lastmod, None);
}

#[test]
fn i4_index_children_obey_the_scope_rule() {
    let xml = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>https://example.com/maps/a.xml</loc></sitemap>
      <sitemap><loc>https://evil.example.net/b.xml</loc></sitemap></sitemapindex>"#;
    let p = parse_at(xml, "https://example.com/maps/index.xml");
    assert_eq!(p.sitemaps.len(), 1);
    assert!(p.has(Rule::I4));
    let mut o =
        ParseOptions::for_url(NormUrl::parse("https://example.com/maps/index.xml").unwrap());
    o.authorized_origins = vec![NormUrl::parse("https://evil.example.net/").unwrap()];
    assert_eq!(
        parse_with(xml, o).sitemaps.len(),
        2,
        "R5/L7 cross-submission"
    );
}

// ---------------------------------------------------------------- scope

#[test]
fn l1_l6_out_of_scope_urls_are_dropped_and_counted_per_reason() {
    let xml = urlset(
        "<url><loc>http://example.com/catalog/in</loc></url>\
         <url><loc>http://example.com/image/out</loc></url>\
         <url><loc>https://example.com/catalog/scheme</loc></url>\
         <url><loc>http://example.com:8080/catalog/port</loc></url>\
         <url><loc>http://sub.example.com/catalog/host</loc></url>",
    );
    let p = parse_at(xml.clone(), "http://example.com/catalog/sitemap.xml");
    assert_eq!(p.locs(), ["http://example.com/catalog/in"]);
    assert_eq!(p.rules(), [Rule::L6; 4]);
    for reason in [
        OutOfScope::Directory,
        OutOfScope::Scheme,
        OutOfScope::Port,
        OutOfScope::Host,
    ] {
        assert_eq!(p.summary.out_of_scope.get(&reason), Some(&1), "{reason}");
    }
    let mut host =
        ParseOptions::for_url(NormUrl::parse("http://example.com/catalog/sitemap.xml").unwrap());
    host.scope = ScopeMode::Host;
    assert_eq!(parse_with(xml.clone(), host.clone()).urls.len(), 2);
    host.scope = ScopeMode::None;
    assert_eq!(parse_with(xml, host).urls.len(), 5);
}

#[test]
fn l8_urls_are_normalised_before_comparison() {
    let p = parse_at(
        urlset("<url><loc>HTTP://Example.COM:80/catalog/x#frag</loc></url>"),
        "http://example.com/catalog/sitemap.xml",
    );
    assert_eq!(p.locs(), ["http://example.com/catalog/x"]);
}

// ---------------------------------------------------------------- text and feeds

#[test]
fn t1_text_sitemaps() {
    let text = "https://example.com/a\r\n\r\n  https://example.com/b  \rhttps://example.com/c\nnot a url at all\n/relative\nftp://example.com/f";
    let p = parse_at(text, "https://example.com/sitemap.txt");
    assert_eq!(p.summary.format, Some(Format::Text));
    assert_eq!(
        p.locs(),
        [
            "https://example.com/a",
            "https://example.com/b",
            "https://example.com/c",
            "https://example.com/relative"
        ]
    );
    assert_eq!(p.rules(), [Rule::T1, Rule::T1, Rule::T1]);
    let strict = parse_strict_at(text, "https://example.com/sitemap.txt");
    assert_eq!(strict.urls.len(), 3);
}

#[test]
fn t1_an_endless_line_costs_bounded_memory() {
    let mut text = b"https://example.com/a\n".to_vec();
    text.extend(std::iter::repeat_n(b'x', 5 << 20));
    text.extend_from_slice(b"\nhttps://example.com/b\n");
    let p = parse_at(text, "https://example.com/sitemap.txt");
    assert_eq!(p.locs(), ["https://example.com/a", "https://example.com/b"]);
    assert!(p.has(Rule::X4));
}

#[test]
fn f1_rss_link_guid_and_pubdate() {
    let rss = r#"<?xml version="1.0"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><link>https://example.com/</link>
      <item><link>https://example.com/a</link><pubDate>Sat, 07 Sep 2002 00:00:01 GMT</pubDate></item>
      <item><guid>https://example.com/b</guid><pubDate>Sun, 19 May 02 15:21 EST</pubDate></item>
      <item><guid isPermaLink="false">tag:example.com,2002:c</guid></item>
      <item><link>https://example.com/d</link><dc:date>2002-09-07</dc:date></item>
    </channel></rss>"#;
    let p = parse_at(rss, "https://example.com/feed.xml");
    assert_eq!(p.summary.format, Some(Format::Rss));
    assert_eq!(
        p.locs(),
        [
            "https://example.com/a",
            "https://example.com/b",
            "https://example.com/d"
        ]
    );
    assert_eq!(
        p.urls[0].lastmod.unwrap().to_string(),
        "2002-09-07T00:00:01Z"
    );
    assert_eq!(
        p.urls[1].lastmod.unwrap().to_string(),
        "2002-05-19T20:21:00Z"
    );
    assert_eq!(p.urls[2].lastmod.unwrap().precision, Precision::Day);
    assert_eq!(
        p.rules(),
        [Rule::F1, Rule::F1],
        "two-digit year repaired; the isPermaLink=false guid is no URL"
    );
}

#[test]
fn f1_rss_1_0_rdf() {
    let rdf = r#"<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
      <channel rdf:about="https://example.com/"><link>https://example.com/</link></channel>
      <item rdf:about="https://example.com/a"><link>https://example.com/a</link><dc:date>2004-01-02T03:04:05+00:00</dc:date></item>
    </rdf:RDF>"#;
    let p = parse_at(rdf, "https://example.com/index.rdf");
    assert_eq!(p.summary.format, Some(Format::Rdf));
    assert_eq!(p.locs(), ["https://example.com/a"]);
    assert!(p.urls[0].lastmod.is_some());
}

#[test]
fn f2_atom_links_dates_and_xml_base() {
    let atom = r#"<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://example.com/blog/">
      <entry><link rel="self" href="https://example.com/api/1"/><link href="posts/1"/><updated>2020-01-01T00:00:00Z</updated><published>2019-01-01T00:00:00Z</published></entry>
      <entry xml:base="/other/"><link rel="alternate" type="text/html" href="2"/><published>2019-02-02T00:00:00Z</published></entry>
      <entry><link rel="enclosure" href="https://example.com/blog/3.mp3"/></entry>
      <entry><title>no link</title></entry>
    </feed>"#;
    let mut o = ParseOptions::for_url(NormUrl::parse("https://example.com/blog/atom.xml").unwrap());
    o.scope = ScopeMode::Host;
    let p = parse_with(atom, o);
    assert_eq!(p.summary.format, Some(Format::Atom));
    assert_eq!(
        p.locs(),
        [
            "https://example.com/blog/posts/1",
            "https://example.com/other/2",
            "https://example.com/blog/3.mp3"
        ]
    );
    assert_eq!(
        p.urls[0].lastmod.unwrap().to_string(),
        "2020-01-01T00:00:00Z",
        "updated before published"
    );
    assert_eq!(
        p.urls[1].lastmod.unwrap().to_string(),
        "2019-02-02T00:00:00Z"
    );
    assert_eq!(
        p.rules(),
        [Rule::F2, Rule::F2],
        "enclosure used as a fallback; entry without link"
    );
}

#[test]
fn f2_atom_0_3_modified() {
    let atom = r#"<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><link rel="alternate" href="https://example.com/a"/><modified>2004-01-01T00:00:00Z</modified><issued>2003-01-01T00:00:00Z</issued></entry></feed>"#;
    let p = parse_at(atom, "https://example.com/atom.xml");
    assert_eq!(
        p.urls[0].lastmod.unwrap().to_string(),
        "2004-01-01T00:00:00Z"
    );
}

#[test]
fn f3_feed_dates_are_optional() {
    let p = parse_at(
        r#"<rss version="2.0"><channel><item><link>https://example.com/a</link></item></channel></rss>"#,
        "https://example.com/rss.xml",
    );
    assert_eq!(
        (p.urls.len(), p.urls[0].lastmod, p.diagnostics.len()),
        (1, None, 0)
    );
}

// ---------------------------------------------------------------- extensions

#[test]
fn e1_images_are_typed_capped_and_deprecated_fields_ignored() {
    let many: String = (0..1_005).map(|i| format!("<image:image><image:loc>https://cdn.example.com/{i}.jpg</image:loc><image:caption>c</image:caption><image:geo_location>x</image:geo_location></image:image>")).collect();
    let p = parse_at(
        urlset(&format!(
            "<url><loc>https://example.com/a</loc>{many}</url>"
        )),
        DOC,
    );
    assert_eq!(p.urls[0].images.len(), 1_000);
    assert_eq!(p.rules(), [Rule::E1]);
}

#[test]
fn e2_video_fields_and_range_checks() {
    let xml = urlset(
        r#"<url><loc>https://example.com/v</loc><video:video>
        <video:thumbnail_loc>https://example.com/t.jpg</video:thumbnail_loc>
        <video:title>Grilling &amp; steaks</video:title>
        <video:description>How to</video:description>
        <video:content_loc>https://example.com/v.mp4</video:content_loc>
        <video:player_loc allow_embed="yes">https://example.com/player?v=1</video:player_loc>
        <video:duration>600</video:duration>
        <video:expiration_date>2030-11-05T19:20:30+08:00</video:expiration_date>
        <video:rating>4.2</video:rating>
        <video:view_count>12345</video:view_count>
        <video:publication_date>2007-11-05T19:20:30+08:00</video:publication_date>
        <video:family_friendly>yes</video:family_friendly>
        <video:restriction relationship="allow">IE GB US CA</video:restriction>
        <video:platform relationship="deny">tv</video:platform>
        <video:requires_subscription>no</video:requires_subscription>
        <video:uploader info="https://example.com/users/grill">GrillyMcGrillerson</video:uploader>
        <video:live>no</video:live>
        <video:tag>steak</video:tag><video:tag>meat</video:tag>
        </video:video><video:video><video:title>bad</video:title><video:duration>99999</video:duration><video:rating>7</video:rating></video:video></url>"#,
    );
    let p = parse_at(xml, DOC);
    let v = &p.urls[0].videos;
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].title.as_deref(), Some("Grilling & steaks"));
    assert_eq!(
        (v[0].duration, v[0].rating, v[0].view_count),
        (Some(600), Some(4.2), Some(12345))
    );
    assert_eq!(
        v[0].restriction.as_ref().unwrap().relationship,
        Relationship::Allow
    );
    assert_eq!(
        v[0].restriction.as_ref().unwrap().values,
        ["IE", "GB", "US", "CA"]
    );
    assert_eq!(v[0].platform.as_ref().unwrap().values, ["tv"]);
    assert_eq!(
        v[0].uploader_info.as_ref().unwrap().as_str(),
        "https://example.com/users/grill"
    );
    assert_eq!(
        (v[0].family_friendly, v[0].live, v[0].tags.len()),
        (Some(true), Some(false), 2)
    );
    assert_eq!((v[1].duration, v[1].rating), (None, None));
    assert_eq!(
        p.rules(),
        [Rule::E2, Rule::E2, Rule::E2],
        "duration, rating, required fields"
    );
}

#[test]
fn e3_news() {
    let p = parse_at(
        urlset(
            "<url><loc>https://example.com/n</loc><news:news><news:publication><news:name>The Example Times</news:name>\
             <news:language>en</news:language></news:publication><news:publication_date>2008-12-23</news:publication_date>\
             <news:title>Companies A, B in Merger Talks</news:title><news:keywords>x</news:keywords></news:news></url>",
        ),
        DOC,
    );
    let n = p.urls[0].news.as_ref().unwrap();
    assert_eq!(n.publication_name.as_deref(), Some("The Example Times"));
    assert_eq!(n.publication_language.as_deref(), Some("en"));
    assert_eq!(n.publication_date.unwrap().precision, Precision::Day);
    assert_eq!(n.title.as_deref(), Some("Companies A, B in Merger Talks"));
    assert!(p.diagnostics.is_empty());
}

#[test]
fn e4_hreflang_alternates() {
    let p = parse_at(
        urlset(
            r#"<url><loc>https://example.com/en</loc>
            <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de"/>
            <xhtml:link rel="alternate" hreflang="x-default" href="/"/>
            <xhtml:link rel="canonical" href="https://example.com/en"/></url>"#,
        ),
        DOC,
    );
    let alts: Vec<_> = p.urls[0]
        .alternates
        .iter()
        .map(|a| (a.hreflang.as_str(), a.href.as_str()))
        .collect();
    assert_eq!(
        alts,
        [
            ("de", "https://example.com/de"),
            ("x-default", "https://example.com/")
        ]
    );
    // The relative x-default href is resolved (flagged), the canonical link ignored (flagged).
    assert_eq!(p.rules(), [Rule::E4, Rule::E4]);
    assert!(p.diagnostics[0].message.contains("resolved"));
    assert!(p.diagnostics[1].message.contains("rel=\"alternate\""));
}

#[test]
fn e5_unknown_extension_elements_are_ignored() {
    let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:mobile="http://www.google.com/schemas/sitemap-mobile/1.0" xmlns:geo="http://www.google.com/geo/schemas/sitemap/1.0">
      <url><loc>https://example.com/a</loc><mobile:mobile/><geo:geo><geo:format>kml</geo:format></geo:geo></url></urlset>"#;
    let p = parse_at(xml, DOC);
    assert_eq!((p.urls.len(), p.diagnostics.len()), (1, 0));
}

#[test]
fn diagnostics_carry_line_and_column() {
    let xml = "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n  <url>\n    <loc>https://example.com/a</loc>\n    <lastmod>soon</lastmod>\n  </url>\n</urlset>";
    let p = parse_at(xml, DOC);
    let d = &p.diagnostics[0];
    assert_eq!(
        (d.rule, d.position.line, d.position.column),
        (Rule::X7, 4, 5)
    );
}

// ---------------------------------------------------------------- regressions from review and hunting

#[test]
fn x2_x3_empty_and_fragment_only_locs_never_become_the_document_url() {
    let xml = urlset(
        "<url><loc></loc></url><url><loc/></url><url><loc>  </loc></url><url><loc>#top</loc></url><url><loc>https://example.com/ok</loc></url>",
    );
    let p = parse_at(xml, "https://example.com/sitemap.xml");
    assert_eq!(p.locs(), ["https://example.com/ok"]);
    assert_eq!(p.diagnostics.len(), 4);
    let index = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc></loc></sitemap></sitemapindex>"#;
    assert!(
        parse_at(index, "https://example.com/index.xml")
            .sitemaps
            .is_empty()
    );
}

#[test]
fn c8_content_after_the_root_is_flagged() {
    let one = urlset("<url><loc>https://example.com/a</loc></url>");
    let p = parse_at(
        format!(
            "{one}\n{}",
            urlset("<url><loc>https://example.com/b</loc></url>")
        ),
        DOC,
    );
    assert_eq!(p.locs(), ["https://example.com/a"]);
    assert!(p.has(Rule::C8));
    assert!(!p.summary.complete);
    let trailing_comment = parse_at(format!("{one}\n<!-- generated -->\n"), DOC);
    assert!(trailing_comment.summary.complete && trailing_comment.diagnostics.is_empty());
}

#[test]
fn c6_undefined_entities_in_attributes_keep_the_rest_decoded() {
    // In an attribute that is not a URL, an undefined entity is kept as written (flagged).
    let xml = urlset(
        r#"<url><loc>https://example.com/en</loc><xhtml:link rel="alternate" hreflang="de&foo;" href="https://example.com/de?a=1&amp;b=2"/></url>"#,
    );
    let p = parse_at(xml, DOC);
    assert_eq!(p.urls[0].alternates[0].hreflang, "de&foo;");
    assert_eq!(
        p.urls[0].alternates[0].href.as_str(),
        "https://example.com/de?a=1&b=2"
    );
    assert_eq!(p.rules(), [Rule::C6]);
    assert!(p.diagnostics[0].message.contains("kept as written"));
}

#[test]
fn x12_unknown_root_namespace_does_not_adopt_other_unknown_namespaces() {
    let xml = r#"<urlset xmlns="http://www.sitemap.org/schemas/sitemap/0.9"><url><x:loc xmlns:x="urn:x">https://example.com/evil</x:loc><loc>https://example.com/good</loc></url></urlset>"#;
    let p = parse_at(xml, DOC);
    assert_eq!(p.locs(), ["https://example.com/good"]);
    assert_eq!(p.rules(), [Rule::X1]);
}

#[test]
fn c3_the_raw_input_is_bounded_too() {
    // 60,000 empty gzip members inflate to nothing: only a raw limit stops them.
    let member = gzip(b"");
    let endless: Vec<u8> = member
        .iter()
        .copied()
        .cycle()
        .take(member.len() * 60_000)
        .collect();
    let o = ParseOptions {
        max_bytes: 1_000,
        ..ParseOptions::default()
    };
    let p = parse_with(endless, o);
    assert!(p.has(Rule::C3), "{:?}", p.rules());
}

#[test]
fn c2_bytes_after_the_gzip_stream_are_flagged_not_fatal() {
    let xml = urlset("<url><loc>https://example.com/a</loc></url>");
    let padded = [gzip(xml.as_bytes()), vec![0u8; 100]].concat();
    let p = parse_at(padded, DOC);
    assert_eq!(p.locs(), ["https://example.com/a"]);
    assert_eq!(p.rules(), [Rule::C2]);
    assert!(p.summary.complete);
}

#[test]
fn c8_feed_items_open_at_a_break_are_kept_when_their_link_is_complete() {
    let rss = r#"<rss version="2.0"><channel><item><link>https://example.com/a</link></item><item><link>https://example.com/b</link><title>cut he"#;
    let p = parse_at(rss, "https://example.com/rss.xml");
    assert_eq!(p.locs(), ["https://example.com/a", "https://example.com/b"]);
    let atom = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="https://example.com/a"/><title>cut"#;
    assert_eq!(
        parse_at(atom, "https://example.com/atom.xml").locs(),
        ["https://example.com/a"]
    );
}

#[test]
fn f1_strict_falls_back_from_a_relative_link_to_the_guid() {
    let rss = r#"<rss version="2.0"><channel>
      <item><guid isPermaLink="false">https://example.com/not-a-permalink</guid></item>
      <item><link>/relative</link><guid>https://example.com/absolute</guid></item>
    </channel></rss>"#;
    let lenient = parse_at(rss, "https://example.com/rss.xml");
    assert_eq!(
        lenient.locs(),
        [
            "https://example.com/not-a-permalink",
            "https://example.com/relative"
        ]
    );
    let strict = parse_strict_at(rss, "https://example.com/rss.xml");
    assert_eq!(
        strict.locs(),
        [
            "https://example.com/not-a-permalink",
            "https://example.com/absolute"
        ]
    );
}

#[test]
fn x4_is_checked_after_normalisation_too() {
    let relative = "a".repeat(2_040);
    let p = parse_at(
        urlset(&format!("<url><loc>{relative}</loc></url>")),
        "https://example.com/sitemap.xml",
    );
    assert!(p.urls.is_empty());
    assert!(p.has(Rule::X4));
}

#[test]
fn c5_markup_before_the_root_is_junk_but_an_html_page_is_not_a_sitemap() {
    let body = urlset("<url><loc>https://example.com/a</loc></url>");
    let php = format!(
        "<br />\n<b>Notice</b>:  Undefined index: id in <b>/var/www/sitemap.php</b> on line <b>3</b><br />\n{body}"
    );
    let p = parse_at(php, DOC);
    assert_eq!(p.locs(), ["https://example.com/a"]);
    assert_eq!(p.rules(), [Rule::C5]);
    assert!(p.summary.complete);
    let unclosed = parse_at(format!("<br><p>warning{body}"), DOC);
    assert_eq!(unclosed.locs(), ["https://example.com/a"]);
    let html = parse_at(
        "<html><body><urlset><url><loc>https://example.com/a</loc></url></urlset></body></html>",
        DOC,
    );
    assert_eq!((html.urls.len(), html.summary.format), (0, None));
    let spaces = parse_at(format!("{}{body}", " ".repeat(100_000)), DOC);
    assert_eq!(spaces.locs(), ["https://example.com/a"]);
}

#[test]
fn i1_extensions_in_an_index_entry_are_flagged() {
    let xml = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"><sitemap><loc>https://example.com/s.xml</loc><image:image><image:loc>https://example.com/i.jpg</image:loc></image:image></sitemap></sitemapindex>"#;
    let p = parse_at(xml, DOC);
    assert_eq!(p.sitemaps.len(), 1);
    assert_eq!(p.rules(), [Rule::I1]);
}

#[test]
fn i5_index_children_of_any_format_are_references_the_parser_never_fetches() {
    let xml = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>https://example.com/a.xml.gz</loc></sitemap>
      <sitemap><loc>https://example.com/feed.rss</loc></sitemap>
      <sitemap><loc>https://example.com/atom.xml</loc></sitemap>
      <sitemap><loc>https://example.com/list.txt</loc></sitemap></sitemapindex>"#;
    let p = parse_at(xml, DOC);
    let locs: Vec<&str> = p.sitemaps.iter().map(|s| s.loc.as_str()).collect();
    assert_eq!(
        locs,
        [
            "https://example.com/a.xml.gz",
            "https://example.com/feed.rss",
            "https://example.com/atom.xml",
            "https://example.com/list.txt"
        ]
    );
    assert!(p.diagnostics.is_empty());
}

#[test]
fn x5_invalid_character_references_in_attributes_drop_the_attribute() {
    for bad in [
        "&#0;",
        "&#x110000;",
        "&#xD800;",
        "&#+65;",
        "&#x+41;",
        "&#-1;",
        "&#99999999999;",
        "&#1;",
    ] {
        let xml = urlset(&format!(
            r#"<url><loc>https://example.com/en</loc><xhtml:link rel="alternate" hreflang="de" href="https://example.com/x{bad}y"/></url>"#
        ));
        let p = parse_at(xml, DOC);
        assert!(p.urls[0].alternates.is_empty(), "{bad}");
        assert!(p.has(Rule::X5), "{bad}: {:?}", p.rules());
    }
    let ok = parse_at(
        urlset(
            r#"<url><loc>https://example.com/en</loc><xhtml:link rel="alternate" hreflang="de" href="https://example.com/&#x41;&#66;"/></url>"#,
        ),
        DOC,
    );
    assert_eq!(
        ok.urls[0].alternates[0].href.as_str(),
        "https://example.com/AB"
    );
}

#[test]
fn one_entry_cannot_hold_unbounded_extension_data() {
    let link = format!(
        r#"<xhtml:link rel="alternate" hreflang="de" href="https://example.com/{}"/>"#,
        "d".repeat(2_000)
    );
    let p = parse_at(
        urlset(&format!(
            "<url><loc>https://example.com/a</loc>{}</url>",
            link.repeat(500)
        )),
        DOC,
    );
    let kept: usize = p.urls[0]
        .alternates
        .iter()
        .map(|a| a.href.as_str().len())
        .sum();
    assert!(
        kept <= 256 * 1024 && p.urls[0].alternates.len() > 100,
        "{kept}"
    );
    assert_eq!(p.rules(), [Rule::E4]);
    let videos = "<video:video><video:title>t</video:title></video:video>".repeat(5_000);
    let p = parse_at(
        urlset(&format!(
            "<url><loc>https://example.com/a</loc>{videos}</url>"
        )),
        DOC,
    );
    assert!(p.urls[0].videos.len() < 5_000);
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.message.contains("bytes of extension data"))
    );
}

/// Serves `data`, then fails with `kind`.
struct FailsAfter(std::io::Cursor<Vec<u8>>, std::io::ErrorKind);

impl std::io::Read for FailsAfter {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 => Err(std::io::Error::new(self.1, "connection reset by peer")),
            n => Ok(n),
        }
    }
}

#[test]
fn c8_read_errors_are_reported_as_read_errors() {
    let parse_failing = |data: Vec<u8>| {
        let mut parser = sitemapd_parser::Parser::new(
            FailsAfter(
                std::io::Cursor::new(data),
                std::io::ErrorKind::ConnectionReset,
            ),
            ParseOptions::default(),
        );
        let diags: Vec<_> = parser
            .by_ref()
            .filter_map(|e| match e {
                sitemapd_parser::Event::Diagnostic(d) => Some(d),
                _ => None,
            })
            .collect();
        diags
    };
    // Failing right after a gzip magic byte: a read error, not "not a sitemap".
    let d = parse_failing(vec![0x1f]);
    assert!(d.iter().any(|d| d.message.contains("reset")), "{d:?}");
    assert!(!d.iter().any(|d| d.rule == Rule::C7), "{d:?}");
    // Failing inside a gzip stream: not a corrupt gzip.
    let xml = urlset(&"<url><loc>https://example.com/a</loc></url>".repeat(2_000));
    let gz = gzip(xml.as_bytes());
    let d = parse_failing(gz[..gz.len() / 2].to_vec());
    let c8 = d.iter().find(|d| d.rule == Rule::C8).expect("C8");
    assert!(
        c8.message.contains("reset") && !c8.message.contains("gzip"),
        "{}",
        c8.message
    );
}

// ------------------------------------------------------------- guid, entities

#[test]
fn f1_a_guid_marked_not_permalink_is_the_fallback_url_and_flagged() {
    let rss = r#"<rss version="2.0"><channel>
      <item><guid isPermaLink="false">https://example.com/a</guid></item>
      <item><link>https://example.com/b</link><guid isPermaLink="false">https://example.com/b-id</guid></item>
      <item><link>javascript:void(0)</link><guid isPermaLink="false"> https://example.com/c </guid></item>
      <item><guid isPermaLink="false">tag:example.com,2002:d</guid></item>
      <item><guid isPermaLink="false">/e</guid></item>
      <item><guid isPermaLink="false">ftp://example.com/f</guid></item>
      <item><link>https://example.com/g</link></item>
    </channel></rss>"#;
    let p = parse_at(rss, "https://example.com/rss.xml");
    assert_eq!(
        p.locs(),
        [
            "https://example.com/a",
            "https://example.com/b",
            "https://example.com/c",
            "https://example.com/g"
        ]
    );
    let found: Vec<_> = p
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.severity, d.position.line, d.message.as_str()))
        .collect();
    let flagged = |url: &str| {
        format!(
            "item URL {url} taken from a <guid> marked isPermaLink=\"false\": the item has no usable <link>"
        )
    };
    let (a, c) = (
        flagged("https://example.com/a"),
        flagged("https://example.com/c"),
    );
    let skipped = "item without a link or permalink guid skipped";
    assert_eq!(
        found,
        [
            (Rule::F1, Severity::Warning, 2, a.as_str()),
            (
                Rule::F1,
                Severity::Warning,
                4,
                "item link \"javascript:void(0)\" dropped: unsupported scheme \"javascript\" (only http and https)"
            ),
            (Rule::F1, Severity::Warning, 4, c.as_str()),
            (Rule::F1, Severity::Warning, 5, skipped),
            (Rule::F1, Severity::Warning, 6, skipped),
            (Rule::F1, Severity::Warning, 7, skipped),
        ]
    );
}

#[test]
fn f2_an_atom_id_is_never_the_entry_url() {
    // F2 names no fallback: an entry whose only URL is its <id> is skipped.
    let atom = r#"<feed xmlns="http://www.w3.org/2005/Atom">
      <entry><id>https://example.com/a</id></entry>
      <entry><id>https://example.com/b-id</id><link href="https://example.com/b"/></entry>
    </feed>"#;
    let p = parse_at(atom, "https://example.com/atom.xml");
    assert_eq!(p.locs(), ["https://example.com/b"]);
    assert_eq!(p.rules(), [Rule::F2]);
    assert_eq!(p.diagnostics[0].message, "entry without a link skipped");
}

#[test]
fn c6_an_undefined_entity_in_a_loc_drops_that_entry_only() {
    let xml = "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">
<url><loc>https://example.com/a</loc></url>
<url><loc>https://example.com/a&nbsp;b</loc></url>
<url><loc>https://example.com/c?x=1&amp;y=&#50;&#x33;&apos;</loc></url>
<url><loc>https://example.com/&foo;</loc><lastmod>2020-01-01</lastmod></url>
<url><loc>https://example.com/d</loc></url>
</urlset>";
    for p in [parse_at(xml, DOC), parse_strict_at(xml, DOC)] {
        assert_eq!(
            p.locs(),
            [
                "https://example.com/a",
                "https://example.com/c?x=1&y=23'",
                "https://example.com/d"
            ]
        );
        let found: Vec<_> = p
            .diagnostics
            .iter()
            .map(|d| {
                (
                    d.rule,
                    d.severity,
                    (d.position.line, d.position.column),
                    d.message.as_str(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                (
                    Rule::C6,
                    Severity::Warning,
                    (3, 32),
                    "loc \"https://example.com/a&nbsp;b\" dropped: undefined entity &nbsp; (entities are never expanded)"
                ),
                (
                    Rule::C6,
                    Severity::Warning,
                    (5, 31),
                    "loc \"https://example.com/&foo;\" dropped: undefined entity &foo; (entities are never expanded)"
                ),
            ]
        );
        assert!(p.summary.complete);
    }
}

#[test]
fn c6_an_undefined_entity_drops_only_the_url_value_it_is_in() {
    let xml = urlset(
        r#"<url><loc>https://example.com/p</loc>
  <image:image><image:loc>https://example.com/i&x;.jpg</image:loc></image:image>
  <image:image><image:loc>https://example.com/ok.jpg</image:loc></image:image>
  <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de&foo;"/>
  <xhtml:link rel="alternate" hreflang="fr" href="https://example.com/fr?a=1&amp;b=2"/>
  <news:news><news:publication><news:name>N</news:name><news:language>en</news:language></news:publication>
    <news:publication_date>2020-01-01</news:publication_date><news:title>A&nbsp;B</news:title></news:news>
</url>
<url>https://example.com/own&x;</url>
<url>https://example.com/own</url>
<url><loc>https://example.com/q</loc><loc>https://example.com/q2&x;</loc></url>"#,
    );
    let p = parse_at(xml, DOC);
    assert_eq!(
        p.locs(),
        [
            "https://example.com/p",
            "https://example.com/own",
            "https://example.com/q"
        ]
    );
    let u = &p.urls[0];
    let images: Vec<_> = u.images.iter().map(|i| i.loc.as_str()).collect();
    assert_eq!(images, ["https://example.com/ok.jpg"]);
    let hrefs: Vec<_> = u.alternates.iter().map(|a| a.href.as_str()).collect();
    assert_eq!(hrefs, ["https://example.com/fr?a=1&b=2"]);
    // Not a URL: kept as written, flagged.
    assert_eq!(u.news.as_ref().unwrap().title.as_deref(), Some("A&nbsp;B"));
    let found: Vec<_> = p
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Rule::C6,
                "image loc \"https://example.com/i&x;.jpg\" dropped: undefined entity &x; (entities are never expanded)"
            ),
            (
                Rule::C6,
                "hreflang href \"https://example.com/de&foo;\" dropped: undefined entity &foo; (entities are never expanded)"
            ),
            (
                Rule::C6,
                "undefined entity &nbsp; kept as written (entities are never expanded)"
            ),
            (
                Rule::C6,
                "entry text \"https://example.com/own&x;\" dropped: undefined entity &x; (entities are never expanded)"
            ),
            (
                Rule::X2,
                "entry without <loc>: its text \"https://example.com/own\" used as the loc"
            ),
            (
                Rule::X2,
                "second <loc> \"https://example.com/q2&x;\" ignored: the first is kept"
            ),
        ]
    );
}

#[test]
fn c6_an_undefined_entity_in_an_index_child_drops_that_child() {
    let xml = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://example.com/s&x;.xml</loc></sitemap><sitemap><loc>https://example.com/s2.xml</loc></sitemap></sitemapindex>"#;
    let p = parse_at(xml, DOC);
    let children: Vec<_> = p.sitemaps.iter().map(|s| s.loc.as_str()).collect();
    assert_eq!(children, ["https://example.com/s2.xml"]);
    assert_eq!(p.rules(), [Rule::C6]);
}

#[test]
fn c6_an_undefined_entity_in_a_feed_link_or_guid_makes_it_unusable() {
    let rss = r#"<rss version="2.0"><channel>
      <item><link>https://example.com/a&nbsp;</link></item>
      <item><link>https://example.com/b&x;</link><guid>https://example.com/b-guid</guid></item>
      <item><link>https://example.com/c</link></item>
      <item><guid>https://example.com/d&x;</guid></item>
      <item><link>https://example.com/e?a=1&amp;b=&#50;</link></item>
    </channel></rss>"#;
    let p = parse_at(rss, "https://example.com/rss.xml");
    assert_eq!(
        p.locs(),
        [
            "https://example.com/b-guid",
            "https://example.com/c",
            "https://example.com/e?a=1&b=2"
        ]
    );
    let found: Vec<_> = p
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.position.line, d.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Rule::C6,
                2,
                "item link \"https://example.com/a&nbsp;\" dropped: undefined entity &nbsp; (entities are never expanded)"
            ),
            (
                Rule::C6,
                3,
                "item link \"https://example.com/b&x;\" dropped: undefined entity &x; (entities are never expanded)"
            ),
            (
                Rule::C6,
                5,
                "item guid \"https://example.com/d&x;\" dropped: undefined entity &x; (entities are never expanded)"
            ),
        ]
    );

    let atom = r#"<feed xmlns="http://www.w3.org/2005/Atom">
      <entry><link href="https://example.com/a&x;"/></entry>
      <entry xml:base="https://example.com/dir&x;/"><link href="c"/></entry>
      <entry><link href="https://example.com/d"/></entry>
    </feed>"#;
    let p = parse_at(atom, "https://example.com/atom.xml");
    assert_eq!(p.locs(), ["https://example.com/c", "https://example.com/d"]);
    let found: Vec<_> = p
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Rule::C6,
                "entry link \"https://example.com/a&x;\" dropped: undefined entity &x; (entities are never expanded)"
            ),
            (
                Rule::C6,
                "xml:base \"https://example.com/dir&x;/\" dropped: undefined entity &x; (entities are never expanded)"
            ),
        ]
    );
}

#[test]
fn c6_an_undefined_entity_in_a_video_url_drops_that_field() {
    let xml = urlset(
        r#"<url><loc>https://example.com/v</loc><video:video>
  <video:thumbnail_loc>https://example.com/t&x;.jpg</video:thumbnail_loc>
  <video:title>T</video:title><video:description>D</video:description>
  <video:content_loc>https://example.com/v.mp4</video:content_loc>
  <video:uploader info="https://example.com/u&x;">U</video:uploader>
</video:video></url>"#,
    );
    let p = parse_at(xml, DOC);
    assert_eq!(p.locs(), ["https://example.com/v"]);
    let v = &p.urls[0].videos[0];
    assert_eq!(v.thumbnail_loc, None);
    assert_eq!(v.uploader_info, None);
    assert_eq!(
        v.content_loc.as_ref().map(|u| u.as_str()),
        Some("https://example.com/v.mp4")
    );
    let found: Vec<_> = p
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Rule::C6,
                "video thumbnail_loc \"https://example.com/t&x;.jpg\" dropped: undefined entity &x; (entities are never expanded)"
            ),
            (
                Rule::C6,
                "video uploader info \"https://example.com/u&x;\" dropped: undefined entity &x; (entities are never expanded)"
            ),
            (Rule::E2, "video without thumbnail_loc"),
        ]
    );
}
