//! robots.txt: reading one ([`parse`]: `Sitemap:` extraction, SPEC R1-R4,
//! and allow/disallow checks), fetching one with RFC 9309 semantics
//! ([`fetch_robots`], SPEC R7) and keeping the reports for a while
//! ([`ROBOTS_MAX_AGE`]; the walk's cache).
//!
//! The walk uses this module; this module knows nothing of the walk.

mod cache;
mod fetch;
mod parse;

pub use cache::ROBOTS_MAX_AGE;
pub(crate) use cache::RobotsCache;
pub use fetch::{RobotsOutcome, RobotsReport, fetch_robots};
pub use parse::{DeclaredSitemap, LinearMatch, MAX_LINE_BYTES, MAX_ROBOTS_BYTES, RobotsTxt};
