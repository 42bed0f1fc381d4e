//! # sitemapd-parser
//!
//! A streaming, hardened parser for every sitemap format real sites publish:
//! XML `urlset` and `sitemapindex`, plain-text lists, RSS 0.9x/1.0/2.0 and
//! Atom 0.3/1.0 feeds, gzip-compressed or not, in any encoding, with the
//! image, video, news and hreflang extensions as typed fields.
//!
//! ```
//! use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser, Rule};
//!
//! let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
//! <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
//!   <url>
//!     <loc>https://example.com/catalog/item?id=1&amp;lang=en</loc>
//!     <lastmod>2004-12-23T18:00:15+00:00</lastmod>
//!     <changefreq>weekly</changefreq>
//!   </url>
//!   <url><loc>https://example.com/catalog/a</loc><lastmod>yesterday</lastmod></url>
//!   <url><loc>https://other.example/x</loc></url>
//! </urlset>"#;
//!
//! let doc = NormUrl::parse("https://example.com/catalog/sitemap.xml").unwrap();
//! let mut parser = Parser::new(xml.as_bytes(), ParseOptions::for_url(doc));
//! let mut urls = Vec::new();
//! let mut rules = Vec::new();
//! for event in parser.by_ref() {
//!     match event {
//!         Event::Url(u) => urls.push(u),
//!         Event::Sitemap(child) => println!("child sitemap {}", child.loc),
//!         Event::Diagnostic(d) => rules.push(d.rule),
//!     }
//! }
//! assert_eq!(urls.len(), 2);
//! assert_eq!(urls[0].loc.as_str(), "https://example.com/catalog/item?id=1&lang=en");
//! assert_eq!(urls[0].lastmod.unwrap().to_string(), "2004-12-23T18:00:15Z");
//! assert_eq!(urls[1].lastmod, None); // unparseable: dropped, entry kept
//! assert_eq!(rules, [Rule::X7, Rule::L6]); // the bad date; the other host
//! assert_eq!(parser.summary().urls, 2);
//! ```
//!
//! ## What it promises
//!
//! - **Streaming**: events come out as the bytes go in; memory stays flat
//!   (the largest buffer is one token, at most [`MAX_TOKEN_BYTES`]).
//! - **Never loses good data for bad**: an unparseable field drops that field,
//!   a bad entry drops that entry, a broken document yields everything before
//!   the break (SPEC C8). Every drop or repair is a [`Diagnostic`] naming its
//!   SPEC rule, line and column.
//! - **Hostile input**: no panic on any byte sequence, no DTD processing and no
//!   entity expansion, a byte limit counted after decompression (a gzip bomb
//!   stops at the limit), an entry limit.
//! - **The location rule and URL normalisation** ([`in_scope`], [`NormUrl`])
//!   are public so that the rest of sitemapd uses one implementation.
//!
//! Over tokio's async readers, [`parse_async`] yields the same events as a
//! [`futures_core::Stream`].

#![warn(missing_docs)]

mod ctx;
pub mod date;
pub mod diagnostic;
pub mod event;
mod input;
pub mod options;
mod parser;
pub mod scope;
mod sniff;
mod stream;
pub mod summary;
mod text;
pub mod url;
mod xml;

pub use date::{Lastmod, Precision};
pub use diagnostic::{Diagnostic, Position, Rule, Severity};
pub use event::{
    Alternate, ChangeFreq, Event, Image, Listed, News, Relationship, SitemapRef, UrlEntry, Video,
};
pub use options::{ParseOptions, ScopeMode, Strictness};
pub use parser::{MAX_TOKEN_BYTES, Parser};
pub use scope::{OutOfScope, Scope, in_scope, in_scope_with, scope_directory};
pub use stream::{ParseStream, parse_async};
pub use summary::{Format, Summary};
pub use url::{HostKey, NormUrl, UrlError};
