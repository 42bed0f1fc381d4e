//! Every sitemap, index, text list, feed and gzip file of the real-world
//! corpus (fixtures/corpus, copied from the shared corpus with its MANIFEST)
//! is parsed: no panic, well-formed files yield exactly the manifest's
//! url_count, and image/video URLs never appear as page URLs.

mod common;

use std::collections::HashSet;

use common::{Parsed, fixtures, parse_with};
use sitemapd_parser::{Format, NormUrl, ParseOptions, Rule, ScopeMode};

struct Row {
    kind: String,
    file: String,
    url_count: usize,
}

fn manifest() -> Vec<Row> {
    let text = std::fs::read_to_string(fixtures().join("corpus/MANIFEST.tsv")).unwrap();
    text.lines()
        .skip(1)
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            Row {
                kind: cols[0].to_string(),
                file: cols[1].to_string(),
                url_count: cols[6].parse().unwrap(),
            }
        })
        .filter(|r| r.kind != "robots")
        .collect()
}

fn parse_file(row: &Row) -> Parsed {
    let bytes = std::fs::read(fixtures().join("corpus").join(&row.kind).join(&row.file)).unwrap();
    let mut options = ParseOptions::for_url(
        NormUrl::parse(&format!("https://fixture.invalid/{}", row.file)).unwrap(),
    );
    options.scope = ScopeMode::None;
    parse_with(bytes, options)
}

/// Files whose yield legitimately differs from the manifest's count of
/// `<loc>`s/lines/items: (file, expected entries, rule that explains it).
/// `None` as the rule means the document is not a sitemap at all.
const EXCEPTIONS: &[(&str, usize, Option<Rule>)] = &[
    // Not well-formed: `<changefreq>always<</changefreq>`; its only loc has the host `example.com&><'"`.
    (
        "ekalinin__sitemap.js__tests__mocks__unescaped-lt.xml",
        0,
        Some(Rule::C8),
    ),
    // One line is `roots/… # lightweight student--….html`: a comment with spaces, not a URL.
    (
        "0xSero__hf-model-benchmarks__sitemap.txt",
        38_541,
        Some(Rule::T1),
    ),
    // An unrendered Jekyll template: its only item's guid is `{{ site.url }}…`, it has no link.
    ("101camp__fm__podcast.xml", 0, Some(Rule::F1)),
    // Unrendered Liquid: every loc is `{{ site.url }}/…`, not a URL.
    ("8html__8html.com-jan-2013__Sitemap.xml", 0, Some(Rule::X3)),
    // Empty files, a .NET type name, an XSLT stylesheet: not sitemaps.
    (
        "aafeher__go-sitemap-parser__test__sitemap-empty.xml",
        0,
        None,
    ),
    ("Baraka254art__Daily-buz-News__Public_sitemap.xml", 0, None),
    (
        "Ced59__Ranch-de-Nivelle-Website__wwwroot__sitemap.xml",
        0,
        None,
    ),
    (
        "ProfessorDutch__lff-sitemap-approved__public__sitemap.xml",
        0,
        None,
    ),
    // Corrupt gzip: nothing can be read (the second one's payload is an empty
    // deflate block followed by a wrong CRC).
    ("aafeher__go-sitemap-parser__test__corrupted.gz", 0, None),
    (
        "aafeher__go-sitemap-parser__test__sitemapindex-empty-corrupted.xml.gz",
        0,
        None,
    ),
    // An ESI template with an undeclared prefix and an unclosed element.
    ("adobe__theblog__feed.xml", 0, Some(Rule::C8)),
];

/// Files that are not well-formed but whose entries before the break all count (C8).
const PARTIAL: &[(&str, Rule)] = &[
    ("adobe__theblog__sitemap.fr.xml", Rule::C8),
    (
        "ekalinin__sitemap.js__tests__mocks__index-unescaped-lt.xml",
        Rule::C8,
    ),
];

#[test]
fn every_corpus_document_parses_to_its_manifest_count() {
    let rows = manifest();
    assert_eq!(
        rows.len(),
        176,
        "urlset + sitemapindex + text + feed + gzip files"
    );
    let mut failures = Vec::new();
    for row in &rows {
        let parsed = parse_file(row);
        let got = parsed.entries();
        if let Some((_, expected, rule)) = EXCEPTIONS.iter().find(|(f, ..)| *f == row.file) {
            match rule {
                Some(rule) => {
                    if got != *expected || !parsed.has(*rule) || parsed.summary.format.is_none() {
                        failures.push(format!(
                            "{}: expected {expected} with {rule}, got {got} {:?}",
                            row.file,
                            parsed.rules()
                        ));
                    }
                }
                None => {
                    if got != 0 || parsed.summary.format.is_some() {
                        failures.push(format!(
                            "{}: expected not-a-sitemap, got {got} {:?}",
                            row.file, parsed.summary.format
                        ));
                    }
                }
            }
            continue;
        }
        if got != row.url_count {
            failures.push(format!(
                "{}: manifest {} != parsed {got}",
                row.file, row.url_count
            ));
        }
        if parsed.summary.format.is_none() {
            failures.push(format!("{}: not recognised", row.file));
        }
        match PARTIAL.iter().find(|(f, _)| *f == row.file) {
            Some((_, rule)) => {
                if !parsed.has(*rule) || parsed.summary.complete {
                    failures.push(format!(
                        "{}: expected a partial parse with {rule}",
                        row.file
                    ));
                }
            }
            None => {
                if parsed.has(Rule::C8) || !parsed.summary.complete {
                    failures.push(format!(
                        "{}: well-formed but {:?}",
                        row.file,
                        parsed.rules()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn x12_image_and_video_urls_never_become_page_urls() {
    let mut with_media = 0;
    for row in manifest() {
        let parsed = parse_file(&row);
        let pages: HashSet<&str> = parsed.locs().into_iter().collect();
        for u in &parsed.urls {
            let media = u.images.iter().map(|i| &i.loc).chain(
                u.videos
                    .iter()
                    .flat_map(|v| [&v.thumbnail_loc, &v.content_loc, &v.player_loc])
                    .flatten(),
            );
            for m in media {
                with_media += 1;
                assert!(
                    !pages.contains(m.as_str()),
                    "{}: media URL {m} listed as a page",
                    row.file
                );
            }
        }
    }
    assert!(
        with_media > 1_000,
        "the corpus has many image/video URLs, saw {with_media}"
    );
}

#[test]
fn c2_gzip_fixtures_equal_their_plain_twins() {
    let pairs = [
        (
            "gzip",
            "1ForeverHD__TopbarPlus__site__sitemap.xml.gz",
            "urlset",
            "1ForeverHD__TopbarPlus__site__sitemap.xml",
        ),
        (
            "gzip",
            "adbar__trafilatura__tests__resources__sitemap.xml.gz",
            "urlset",
            "adbar__trafilatura__tests__resources__sitemap.xml",
        ),
    ];
    for (gk, gz, pk, plain) in pairs {
        let a = parse_file(&Row {
            kind: gk.into(),
            file: gz.into(),
            url_count: 0,
        });
        let b = parse_file(&Row {
            kind: pk.into(),
            file: plain.into(),
            url_count: 0,
        });
        assert_eq!(a.summary.gzip_layers, 1);
        assert_eq!(a.locs(), b.locs(), "{gz}");
        assert!(!a.locs().is_empty());
    }
}

#[test]
fn c1_legacy_encoded_feeds_are_decoded() {
    let row = Row {
        kind: "feed".into(),
        file: "KDE__kdev-www__dynamic__kdevelop_news_ru.rss".into(),
        url_count: 23,
    };
    let parsed = parse_file(&row);
    assert_eq!(parsed.summary.encoding, "KOI8-R");
    assert_eq!(parsed.summary.format, Some(Format::Rss));
    assert_eq!(parsed.urls.len(), 23);
    assert!(parsed.has(Rule::C1));
    assert!(
        !parsed
            .diagnostics
            .iter()
            .any(|d| d.message.contains("U+FFFD"))
    );
}
