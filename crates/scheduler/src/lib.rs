//! # sitemapd-scheduler
//!
//! The memory of sitemapd: a sled store of every URL its sitemaps declare,
//! change-rate estimators, crawl policies and the crawl queue. It consumes
//! [`sitemapd_parser`] entries and knows nothing of HTTP.
//!
//! ```
//! use sitemapd_parser::{NormUrl, UrlEntry};
//! use sitemapd_scheduler::{Completion, Outcome, Store, StoreOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
//! let now = 1_700_000_000;
//!
//! // A sitemap read: entries, then how the fetch ended.
//! let mut ingest = store.ingest(now);
//! let page = UrlEntry::new(NormUrl::parse("https://example.com/a").unwrap());
//! ingest.entry("https://example.com/sitemap.xml", &page).unwrap();
//! ingest.finish().unwrap();
//!
//! // The crawler asks what to fetch, fetches it, reports back.
//! let due = store.lease(10, now, 300, 10).unwrap();
//! assert_eq!(due[0].url, "https://example.com/a");
//! assert_eq!(due[0].reason, "new");
//! store.complete(&due[0].url, &Completion::from(Outcome::Changed), now + 5).unwrap();
//! assert!(store.check().unwrap().is_ok());
//! ```
//!
//! ## The merge rule (one URL, several sitemaps or several reads)
//!
//! - **lastmod**: the newest *believable* value wins and never goes back: a
//!   lastmod more than a day in the future is not believed (SPEC X8), and
//!   an older value from another sitemap does not replace a newer one. The
//!   distinct values are kept, with when each was first seen (the last 8).
//! - **priority and changefreq**: within one ingest session (one `now`),
//!   the highest priority and the most frequent changefreq any sitemap gave;
//!   a later session's values replace them, so a site can lower its hints.
//!   Absent stays absent (SPEC X10).
//! - **extensions**: the counts from the latest sighting.
//! - **first seen** and its sitemap never change; **last seen** is the
//!   latest sighting.
//!
//! ## Retirement
//!
//! A URL is retired (out of the queue, record kept) once it has been absent
//! from every sitemap that listed it for `retire_after` (default 3, at most
//! 8) complete reads of each; a failed, cut or 304 read counts for nothing.
//! A retired URL listed again is revived. A sitemap's URLs are found on its
//! own host, and through member keys for those it lists on other hosts (R5
//! cross-submission, sitemap files). [`Store::retire_host`] retires a whole
//! host's URLs at once.
//!
//! ## Push notifications
//!
//! [`Store::notify`] takes an IndexNow-style "this URL changed now": the URL
//! is due at once (reason `notified`; added if unknown, revived if
//! retired), and a URL with two notifications or more gets its change rate
//! from them with the `complete` estimator ([`notify`]).
//!
//! ## Sitemap refresh
//!
//! Each sitemap has its own schedule ([`refresh`]): read daily at first
//! (feeds hourly), the interval halved after a read that changed and made
//! half again as long after one that did not (within 15 minutes and a week,
//! a day for feeds), backing off after errors. [`Ingest::sitemap_fetched`]
//! advances it; [`Store::sitemap_due`] says whether a sitemap is due. An
//! index read with its child list ([`SitemapFetch::children`]) replaces the
//! index's children.
//!
//! ## Followed sites
//!
//! A long-running daemon keeps the sites it follows in the store
//! ([`sites`]): [`Store::add_site`], [`Store::sites`], [`Store::put_site`]
//! after each walk, [`Store::remove_site`]; [`Store::retire_host`] takes a
//! host's URLs out of the queue when its site is dropped;
//! [`Store::queue_depth`] counts the URLs due.
//!
//! ## Research simulator
//!
//! The `sitemapd-sim` crate runs the store against a simulated web (pages
//! that change, sitemaps that say so more or less truthfully, a fetch
//! budget) on fake time, through this crate's public API only.
//!
//! ## Crash safety
//!
//! All keyspaces live in one sled tree, so a URL record and its due entry
//! change in one atomic batch. After `kill -9` at any point the store opens
//! and [`Store::check`] passes; what was lost is at most the last second of
//! batches, which a repeated ingest restores.

#![warn(missing_docs)]

pub mod check;
pub mod estimate;
pub mod ingest;
pub mod keys;
mod kv;
pub mod notify;
pub mod policy;
pub mod queue;
pub mod record;
pub mod refresh;
pub mod sites;
pub mod store;
pub mod trust;

pub use check::{CheckReport, Stats};
pub use ingest::{Ingest, IngestStats, SitemapFetch};
pub use notify::Notified;
pub use queue::{Completion, Leased, Outcome};
pub use refresh::{RefreshParams, RefreshState};
pub use sites::SiteRecord;
pub use store::{Store, StoreError, StoreOptions};
