//! # sitemapd-discovery
//!
//! The network side of sitemapd: robots.txt `Sitemap:` discovery, a hardened
//! HTTP fetcher and the walk from a site to every sitemap entry. Fetched
//! bodies are handed to [`sitemapd_parser`] as streams; nothing is stored.
//!
//! ```
//! use sitemapd_discovery::RobotsTxt;
//! use sitemapd_parser::NormUrl;
//!
//! let url = NormUrl::parse("https://example.com/robots.txt").unwrap();
//! let robots = RobotsTxt::parse(
//!     b"User-agent: *\nSitemap: /sitemap_index.xml\nDisallow: /cart\n",
//!     Some(&url),
//!     "sitemapd/0.1",
//! );
//! assert_eq!(robots.sitemaps[0].url.as_str(), "https://example.com/sitemap_index.xml");
//! // The relative value was resolved, and flagged (SPEC R3).
//! assert_eq!(robots.diagnostics[0].rule.id(), "R3");
//! assert!(!robots.is_allowed(&NormUrl::parse("https://example.com/cart").unwrap()));
//! ```
//!
//! Walking sites (this one needs the network):
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use futures_util::StreamExt;
//! use sitemapd_discovery::{FetchConfig, Fetcher, Seed, WalkConfig, WalkEvent, Walker};
//!
//! let walker = Walker::new(Fetcher::new(FetchConfig::default())?, WalkConfig::default());
//! let mut events = walker.walk(vec![Seed::parse("example.com")?]);
//! while let Some(event) = events.next().await {
//!     match event {
//!         WalkEvent::Entry { sitemap, entry } => println!("{} (from {sitemap})", entry.loc),
//!         WalkEvent::SitemapFetched(r) => eprintln!("{} {} {:?}", r.url, r.status, r.summary),
//!         WalkEvent::SitemapFailed(f) => eprintln!("{} failed: {}", f.url, f.error),
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! - [`robots`]: `Sitemap:` extraction (SPEC R1-R4) and allow/disallow checks
//!   through the `robotstxt` crate, with two of its defects worked around;
//!   the RFC 9309 fetch (R7) and the cache of reports the walk keeps.
//! - [`fetch`]: one reqwest client; redirects hop by hop, retries with
//!   backoff and `Retry-After`, conditional GET, body streamed to the parser.
//! - [`guard`]: the address guard against requests into private networks.
//! - [`politeness`]: per-host in-flight limit and delay (`Crawl-delay`),
//!   keyed by [`HostKey`](sitemapd_parser::HostKey); idle hosts are pruned.
//! - [`walk`]: seeds to a stream of [`WalkEvent`]s, with depth, cycle, cap,
//!   scope, cross-submission (R5), probing (R6) and I3 checks, the caller's
//!   refresh schedule (not-due sitemaps) and an optional robots.txt cache.

#![warn(missing_docs)]

pub mod fetch;
pub mod guard;
pub mod politeness;
pub mod robots;
pub mod walk;

pub use fetch::{Body, BodyProgress, FetchConfig, FetchError, Fetched, Fetcher, Hop, Validators};
pub use robots::{DeclaredSitemap, RobotsTxt};
pub use walk::{Seed, SitemapMemory, WalkConfig, WalkEvent, WalkStream, Walker};
