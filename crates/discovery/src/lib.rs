//! # sitemapd-discovery
//!
//! The network side of sitemapd: robots.txt `Sitemap:` discovery, a hardened
//! HTTP fetcher and the walk from a site to every sitemap entry. It hands
//! fetched bodies to [`sitemapd_parser`] as streams and knows nothing of
//! storage.
//!
//! This crate is reserved in the workspace layout (see DESIGN.md) and is
//! filled by the discovery issue; it exports nothing yet.

#![warn(missing_docs)]
