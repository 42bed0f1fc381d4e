//! # sitemapd-scheduler
//!
//! The memory of sitemapd: a sled store of every URL its sitemaps declare,
//! change-rate estimators, crawl policies and the crawl queue. It consumes
//! [`sitemapd_parser`] entries and knows nothing of HTTP.
//!
//! This crate is reserved in the workspace layout (see DESIGN.md) and is
//! filled by the scheduler issue; it exports nothing yet.

#![warn(missing_docs)]
