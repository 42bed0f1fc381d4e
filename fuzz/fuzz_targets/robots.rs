//! robots.txt: `Sitemap:` extraction (SPEC R1-R4) and the allow/disallow
//! check (through the `robotstxt` crate and sitemapd's workarounds) on any
//! bytes. The last line of the input, if any, is also the path checked.
//! An input that starts with a NUL byte and a count `k` is the rest repeated
//! to `k` x 4 KiB: long lines (over the 16 KiB cut) and bodies over the
//! 500 KiB cap (R4) are reached that way.
//!
//! Checked: the sitemaps are de-duplicated (R2), normalised, numbered with
//! lines in file order, at most one per record; a crawl delay is finite and
//! not negative; the check gives the same answer through `is_allowed` and
//! `allows` with the agent's product token.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use sitemapd_discovery::RobotsTxt;
use sitemapd_parser::NormUrl;

fuzz_target!(|data: &[u8]| {
    let grown;
    let data = match data {
        [0, k, rest @ ..] if !rest.is_empty() => {
            let size = usize::from(*k) * 4096;
            grown = rest
                .iter()
                .copied()
                .cycle()
                .take(size.max(rest.len()))
                .collect::<Vec<u8>>();
            &grown[..]
        }
        _ => data,
    };
    let base = NormUrl::parse("https://example.com/robots.txt").unwrap();
    let robots = RobotsTxt::parse(data, Some(&base), "sitemapd/0.1");
    assert!(robots.sitemaps.len() as u64 <= robots.sitemap_records);
    let mut seen = HashSet::new();
    let mut last_line = 0;
    for s in &robots.sitemaps {
        assert!(seen.insert(s.url.as_str()), "duplicate {}", s.url);
        assert_eq!(NormUrl::parse(s.url.as_str()).as_ref(), Ok(&s.url));
        assert!(s.line > last_line, "sitemaps out of file order");
        last_line = s.line;
    }
    assert!(robots.crawl_delay.is_none_or(|d| d.is_finite() && d >= 0.0));
    let text = String::from_utf8_lossy(data);
    let path = text.lines().last().unwrap_or("/");
    if let Ok(url) = base.join(path) {
        assert_eq!(robots.is_allowed(&url), robots.allows("sitemapd", &url));
        robots.allows("Googlebot", &url);
    }
});
