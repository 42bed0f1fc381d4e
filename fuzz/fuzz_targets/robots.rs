//! robots.txt: `Sitemap:` extraction and the allow/disallow matcher (through
//! the `robotstxt` crate and sitemapd's workarounds) on arbitrary bytes. The
//! last line of the input, if any, is also used as the URL path checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemapd_discovery::RobotsTxt;
use sitemapd_parser::NormUrl;

fuzz_target!(|data: &[u8]| {
    let base = NormUrl::parse("https://example.com/robots.txt").unwrap();
    let robots = RobotsTxt::parse(data, Some(&base), "sitemapd/0.1");
    assert!(robots.sitemaps.len() as u64 <= robots.sitemap_records);
    let text = String::from_utf8_lossy(data);
    let path = text.lines().last().unwrap_or("/");
    if let Ok(url) = base.join(path) {
        robots.is_allowed(&url);
        robots.allows("Googlebot", &url);
    }
});
