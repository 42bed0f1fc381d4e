//! URL normalisation, the scope rule and the date parsers on any string.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::date::{parse_rfc2822, parse_w3c};
use sitemapd_parser::{NormUrl, ScopeMode, in_scope};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(url) = NormUrl::parse(s) {
        // Normalisation is idempotent and the accessors cut at char boundaries.
        let again = NormUrl::parse(url.as_str()).expect("a normalised URL parses");
        assert_eq!(again, url);
        let _ = (url.host(), url.path(), url.origin(), url.port_or_default());
        let base = NormUrl::parse("https://example.com/a/sitemap.xml").unwrap();
        for mode in [ScopeMode::Directory, ScopeMode::Host, ScopeMode::None] {
            let _ = in_scope(&base, &url, mode);
        }
        let _ = url.join("../x?y#z");
    }
    for parsed in [parse_w3c(s), parse_rfc2822(s)].into_iter().flatten() {
        let text = parsed.value.to_string();
        // What we print is W3C Datetime again.
        assert!(parse_w3c(&text).is_ok(), "{text}");
    }
});
