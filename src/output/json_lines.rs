//! URL entries and child-sitemap references as JSON Lines, written by hand
//! into a reused buffer: the bytes serde_json writes for them (the tests
//! compare both), at a fraction of the cost. Entries with extension data
//! (images, videos, news, alternates) and anything else go through
//! serde_json.

use sitemapd_parser::{Event, Lastmod, UrlEntry};

/// Appends `event` as one JSON line (newline included) to `out`, if it is
/// an entry this writer knows; false leaves `out` as it was.
pub(crate) fn write_entry(out: &mut Vec<u8>, event: &Event) -> bool {
    match event {
        Event::Url(u) if is_plain(u) => {
            out.extend_from_slice(br#"{"type":"url","loc":"#);
            url(out, u.loc.as_str());
            lastmod(out, u.lastmod.as_ref());
            if let Some(c) = u.changefreq {
                out.extend_from_slice(br#","changefreq":""#);
                out.extend_from_slice(c.as_str().as_bytes());
                out.push(b'"');
            }
            if let Some(p) = u.priority {
                out.extend_from_slice(br#","priority":"#);
                // serde_json's own number writer; writing to a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, &p);
            }
        }
        Event::Sitemap(s) => {
            out.extend_from_slice(br#"{"type":"sitemap","loc":"#);
            url(out, s.loc.as_str());
            lastmod(out, s.lastmod.as_ref());
        }
        _ => return false,
    }
    out.extend_from_slice(b"}\n");
    true
}

/// Whether the entry has nothing but what this writer writes (every field
/// named, so that a field added to `UrlEntry` has to be decided on here).
fn is_plain(u: &UrlEntry) -> bool {
    let UrlEntry {
        loc: _,
        lastmod: _,
        changefreq: _,
        priority: _,
        images,
        videos,
        news,
        alternates,
    } = u;
    images.is_empty() && videos.is_empty() && news.is_none() && alternates.is_empty()
}

fn lastmod(out: &mut Vec<u8>, lastmod: Option<&Lastmod>) {
    if let Some(l) = lastmod {
        out.extend_from_slice(br#","lastmod":""#);
        // Writing to a Vec cannot fail.
        let _ = l.write_w3c(out);
        out.extend_from_slice(br#"","lastmod_precision":""#);
        out.extend_from_slice(l.precision.as_str().as_bytes());
        out.push(b'"');
    }
}

/// A normalised URL as a JSON string: it never needs escaping (its quotes,
/// backslashes, controls and non-ASCII bytes are percent-encoded), which
/// the tests check on the URLs they write.
fn url(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use sitemapd_parser::{ParseOptions, Parser};

    /// Every entry of a document, written both ways.
    fn both_ways(xml: &str) -> usize {
        let mut written = 0;
        for event in Parser::new(
            std::io::Cursor::new(xml.as_bytes().to_vec()),
            ParseOptions::default(),
        ) {
            let mut by_hand = Vec::new();
            if write_entry(&mut by_hand, &event) {
                let mut by_serde = serde_json::to_vec(&event).unwrap();
                by_serde.push(b'\n');
                assert_eq!(
                    String::from_utf8(by_hand).unwrap(),
                    String::from_utf8(by_serde).unwrap()
                );
                written += 1;
            }
        }
        written
    }

    #[test]
    fn entries_are_written_as_serde_json_writes_them() {
        let mut xml =
            String::from("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">");
        let dates = [
            "2024",
            "2024-05",
            "2024-05-06",
            "2024-05-06T07:08+02:00",
            "2024-05-06T07:08:09Z",
            "2024-05-06T07:08:09.120Z",
            "2024-05-06T07:08:09.000000001-11:30",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
        ];
        let priorities = [
            "0",
            "0.0",
            "0.1",
            "0.25",
            "0.333",
            "0.5",
            "0.9",
            "1",
            "1.0",
            ".75",
            "0.1234567",
            "0.123456789",
            "0.0000001",
            "0.00001",
        ];
        let freqs = [
            "always", "hourly", "daily", "weekly", "monthly", "yearly", "never",
        ];
        for i in 0..300 {
            xml.push_str(&format!(
                "<url><loc>https://example.com/{i}?q=\"a\"&amp;b=\\ü</loc>"
            ));
            if i % 3 != 0 {
                xml.push_str(&format!("<lastmod>{}</lastmod>", dates[i % dates.len()]));
            }
            if i % 4 != 0 {
                xml.push_str(&format!(
                    "<priority>{}</priority>",
                    priorities[i % priorities.len()]
                ));
            }
            if i % 5 != 0 {
                xml.push_str(&format!(
                    "<changefreq>{}</changefreq>",
                    freqs[i % freqs.len()]
                ));
            }
            xml.push_str("</url>");
        }
        xml.push_str("</urlset>");
        assert_eq!(both_ways(&xml), 300);
        let index = "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><sitemap><loc>https://example.com/a.xml</loc><lastmod>2024-01-02</lastmod></sitemap><sitemap><loc>https://example.com/b.xml</loc></sitemap></sitemapindex>";
        assert_eq!(both_ways(index), 2);
    }

    #[test]
    fn entries_with_extensions_and_other_events_are_left_to_serde() {
        let xml = "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\"><url><loc>https://example.com/a</loc><image:image><image:loc>https://example.com/a.png</image:loc></image:image></url><url><loc>bad</loc></url></urlset>";
        let events: Vec<Event> = Parser::new(
            std::io::Cursor::new(xml.as_bytes().to_vec()),
            ParseOptions::default(),
        )
        .collect();
        assert!(events.len() >= 2, "{events:?}");
        for event in &events {
            let mut out = Vec::new();
            assert!(!write_entry(&mut out, event), "{event:?}");
            assert!(out.is_empty());
        }
    }

    #[test]
    fn normalised_urls_never_need_escaping() {
        for raw in [
            "https://example.com/a\"b",
            "https://example.com/back\\slash",
            "https://example.com/t\tn\u{1}",
            "https://example.com/ü?q=<>{}|^`",
            "https://example.com/%22%5C",
        ] {
            let loc = sitemapd_parser::NormUrl::parse(raw).unwrap();
            let mut out = Vec::new();
            url(&mut out, loc.as_str());
            assert_eq!(out, serde_json::to_vec(loc.as_str()).unwrap(), "{raw}");
        }
    }
}
