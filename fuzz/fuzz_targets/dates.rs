//! W3C Datetime (`<lastmod>`, SPEC X7) and RFC 822/2822 (`pubDate`, SPEC F1)
//! parsing on any string.
//!
//! Checked: what either parser returns prints as W3C Datetime in UTC that
//! `parse_w3c` reads back, with no repair, as the same instant; the period
//! it names ends at or after its start; a date that parses strictly as
//! W3C parses the same through `parse_rfc2822`'s fallback.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::Precision;
use sitemapd_parser::date::{ParsedDate, parse_rfc2822, parse_w3c, precision_span};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let w3c = parse_w3c(&s);
    let rfc = parse_rfc2822(&s);
    for parsed in [w3c, rfc].into_iter().flatten() {
        let v = parsed.value;
        assert!(v.nanos < 1_000_000_000);
        let text = v.to_string();
        let back = parse_w3c(&text).unwrap_or_else(|e| panic!("{s:?} printed as {text:?}: {e}"));
        assert_eq!(back.repair, None, "{text}");
        assert_eq!(back.value.unix_seconds, v.unix_seconds, "{text}");
        if v.precision == Precision::Fraction {
            assert_eq!(back.value.nanos, v.nanos, "{text}");
        }
        assert!(precision_span(v.unix_seconds, v.precision) >= 1);
        assert!(v.latest() >= v.unix_seconds);
    }
    if let Ok(ParsedDate {
        repair: None,
        value,
    }) = w3c
    {
        let via_rfc = parse_rfc2822(&s).expect("the W3C fallback of parse_rfc2822");
        assert_eq!(via_rfc.value, value);
    }
});
