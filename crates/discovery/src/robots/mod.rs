//! robots.txt: reading one ([`RobotsTxt`]), fetching one with RFC 9309
//! semantics ([`fetch_robots`], SPEC R7) and keeping the reports for a while
//! ([`ROBOTS_MAX_AGE`]; the walk's cache). The walk uses this module; this
//! module knows nothing of the walk.
//!
//! Reading: `Sitemap:` extraction (SPEC R1-R4) and allow/disallow checks,
//! both through the `robotstxt` crate (a port of Google's parser and
//! matcher), with two of its defects worked around.
//!
//! **R1 defect.** `robotstxt` 0.3.0 ends a `User-agent` group at any
//! `Sitemap:` or unknown line (`Crawl-delay:`, `Host:` …), so in
//!
//! ```text
//! User-agent: FooBot
//! Sitemap: https://example.com/sitemap.xml
//! User-agent: BarBot
//! Disallow: /
//! ```
//!
//! it gives FooBot no rules, where Google (since 2021) and RFC 9309 give both
//! agents `Disallow: /`. The workaround: the matcher is handed a copy of the
//! body in which those lines are blank, so only `User-agent`, `Allow` and
//! `Disallow` lines shape the groups.
//!
//! **Long-line defect.** The crate counts the overflow of a line longer than
//! 16,664 bytes in characters but uses it as a byte offset, so such a line
//! with multi-byte characters makes it slice inside a character and panic.
//! Lines are cut (at a character boundary) to [`MAX_LINE_BYTES`] before the
//! crate sees them.
//!
//! **Matching-cost defect.** The crate's pattern matcher inserts into a
//! growing vector and indexes characters with `chars().nth()`: about
//! O(n⁴), so `Disallow: /*aaaa…` (800 `a`s) against an 800-byte path takes
//! 30 s; and the in-place inserts shift positions it still reads, so some
//! wildcard patterns give wrong answers (`/*/b*` does not match `////b/`).
//! The matcher is given [`LinearMatch`], through the crate's own extension
//! point for match strategies: Google's algorithm in O(pattern × path).

mod cache;
mod fetch;
mod parse;

pub use cache::ROBOTS_MAX_AGE;
pub(crate) use cache::RobotsCache;
pub use fetch::{RobotsOutcome, RobotsReport, fetch_robots};
pub use parse::{DeclaredSitemap, LinearMatch, MAX_LINE_BYTES, MAX_ROBOTS_BYTES, RobotsTxt};
