//! Helpers shared by the parser's contract tests.
#![allow(dead_code)]

use std::path::PathBuf;

use sitemapd_parser::{
    Diagnostic, Event, NormUrl, ParseOptions, Parser, Rule, SitemapRef, Summary, UrlEntry,
};

/// Everything one parse produced.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub urls: Vec<UrlEntry>,
    pub sitemaps: Vec<SitemapRef>,
    pub diagnostics: Vec<Diagnostic>,
    pub summary: Summary,
}

impl Parsed {
    pub(crate) fn rules(&self) -> Vec<Rule> {
        self.diagnostics.iter().map(|d| d.rule).collect()
    }
    pub(crate) fn has(&self, rule: Rule) -> bool {
        self.diagnostics.iter().any(|d| d.rule == rule)
    }
    pub(crate) fn locs(&self) -> Vec<&str> {
        self.urls.iter().map(|u| u.loc.as_str()).collect()
    }
    pub(crate) fn entries(&self) -> usize {
        self.urls.len() + self.sitemaps.len()
    }
}

/// A reader that hands out at most `.1` bytes per read, as a slow socket does.
pub(crate) struct Chunked(pub std::io::Cursor<Vec<u8>>, pub usize);

impl std::io::Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

pub(crate) fn parse_with(bytes: impl Into<Vec<u8>>, options: ParseOptions) -> Parsed {
    parse_chunked(bytes, options, None)
}

/// Parses in reads of at most `chunk` bytes, if given.
pub(crate) fn parse_chunked(
    bytes: impl Into<Vec<u8>>,
    options: ParseOptions,
    chunk: Option<usize>,
) -> Parsed {
    let input = std::io::Cursor::new(bytes.into());
    let mut parser = match chunk {
        Some(n) => Parser::new(Chunked(input, n), options),
        None => Parser::new(input, options),
    };
    let mut out = Parsed::default();
    for event in parser.by_ref() {
        match event {
            Event::Url(u) => out.urls.push(u),
            Event::Sitemap(s) => out.sitemaps.push(s),
            Event::Diagnostic(d) => out.diagnostics.push(d),
            other => panic!("an event this test does not know: {other:?}"),
        }
    }
    out.summary = parser.summary().clone();
    out
}

/// Parses with no document URL.
pub(crate) fn parse(bytes: impl Into<Vec<u8>>) -> Parsed {
    parse_with(bytes, ParseOptions::default())
}

/// Parses as if fetched from `url` (directory scope).
pub(crate) fn parse_at(bytes: impl Into<Vec<u8>>, url: &str) -> Parsed {
    parse_with(bytes, ParseOptions::for_url(NormUrl::parse(url).unwrap()))
}

/// Parses strictly as if fetched from `url`.
pub(crate) fn parse_strict_at(bytes: impl Into<Vec<u8>>, url: &str) -> Parsed {
    let mut o = ParseOptions::for_url(NormUrl::parse(url).unwrap());
    o.strictness = sitemapd_parser::Strictness::Strict;
    parse_with(bytes, o)
}

pub(crate) fn urlset(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">{body}</urlset>"#
    )
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}
