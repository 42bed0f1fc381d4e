//! # sitemapd-discovery
//!
//! The network side of sitemapd: robots.txt `Sitemap:` discovery, a hardened
//! HTTP fetcher and the walk from a site to every sitemap entry. It hands
//! fetched bodies to [`sitemapd_parser`] as streams and knows nothing of
//! storage.

#![warn(missing_docs)]

pub mod fetch;
pub mod guard;
pub mod politeness;
pub mod robots;
pub mod walk;

pub use fetch::{Body, BodyProgress, FetchConfig, FetchError, Fetched, Fetcher, Hop, Validators};
pub use robots::{DeclaredSitemap, RobotsTxt};
pub use walk::{Seed, SitemapMemory, WalkConfig, WalkEvent, WalkStream, Walker};
