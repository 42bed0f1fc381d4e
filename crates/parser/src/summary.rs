//! What was read, in numbers: the format, the counts, the diagnostics per rule.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::diagnostic::Rule;
use crate::scope::OutOfScope;

/// The document's format, decided from its content (SPEC C7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Format {
    /// `<urlset>`
    Urlset,
    /// `<sitemapindex>`
    SitemapIndex,
    /// RSS 0.9x / 2.0 (`<rss>`)
    Rss,
    /// RSS 1.0 / RDF (`<rdf:RDF>`)
    Rdf,
    /// Atom 1.0 / 0.3 (`<feed>`)
    Atom,
    /// One URL per line
    Text,
}

impl Format {
    /// Lowercase name (`"urlset"`, `"sitemapindex"`, `"rss"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Urlset => "urlset",
            Format::SitemapIndex => "sitemapindex",
            Format::Rss => "rss",
            Format::Rdf => "rdf",
            Format::Atom => "atom",
            Format::Text => "text",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Totals of one parse, available from [`crate::Parser::summary`] at any time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// The format, once recognised; `None` means the input is not a sitemap,
    /// index, feed or text list (or could not be read at all).
    pub format: Option<Format>,
    /// URL entries yielded.
    pub urls: u64,
    /// Child-sitemap references yielded.
    pub sitemaps: u64,
    /// Bytes of decoded (UTF-8) text read. The C3 limit counts the bytes after
    /// decompression and before decoding; the two differ for documents in
    /// other encodings, or when invalid bytes were replaced with U+FFFD.
    pub bytes: u64,
    /// gzip layers removed (SPEC C2).
    pub gzip_layers: u8,
    /// The character encoding the document was decoded from (SPEC C1).
    pub encoding: &'static str,
    /// Whether the document was read to its end without an error or limit.
    pub complete: bool,
    /// Strict mode rejected the document (over the entry limit): discard
    /// whatever it yielded.
    pub rejected: bool,
    /// Diagnostics per rule.
    pub diagnostics: BTreeMap<Rule, u64>,
    /// Entries dropped by the scope rule, per reason (SPEC L6).
    pub out_of_scope: BTreeMap<OutOfScope, u64>,
    /// Entries read by the fast lane ([`crate::ParseOptions::fast_lane`]),
    /// yielded or not; the others went through quick-xml's events. Not
    /// serialised: the summary a user sees is the same in both lanes.
    #[serde(skip)]
    pub fast_lane_entries: u64,
}

impl Summary {
    /// URL entries plus child-sitemap references.
    pub fn entries(&self) -> u64 {
        self.urls + self.sitemaps
    }
}

impl Serialize for OutOfScope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
