//! The walk (sitemapd-discovery) and the store (sitemapd-scheduler) wired
//! together: the store as the walk's memory, and walk events recorded into
//! the store. The two libraries never know each other; this module is the
//! glue every embedder of both writes. The `walk_into_store` example runs
//! it, and the `sitemapd` binary includes this very file for `ingest` and
//! the daemon.

use std::sync::Arc;
use std::time::SystemTime;

use sitemapd_discovery::walk::{
    Remembered, RobotsOutcome, RobotsReport, SitemapFailure, SitemapReport, Via,
};
use sitemapd_discovery::{SitemapMemory, Validators, WalkEvent};
use sitemapd_parser::{Format, NormUrl, RobotsRules};
use sitemapd_scheduler::{Clock, Ingest, SitemapFetch, Store, StoreError};

/// The store as the walk's memory: validators for conditional GET, the last
/// fetch time for I3, an index's children, and (for the daemon) whether the
/// sitemap's refresh schedule makes it due.
pub(crate) struct StoreMemory {
    store: Arc<Store>,
    /// Whether a sitemap not due by its refresh schedule is passed over,
    /// and the clock that says what is due.
    scheduled: Option<Arc<dyn Clock>>,
}

impl StoreMemory {
    /// Every sitemap is fetched (conditionally): `sitemapd ingest`.
    pub(crate) fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            scheduled: None,
        }
    }

    /// Sitemaps not due by their refresh schedule at `clock`'s time are not
    /// fetched: the daemon.
    pub(crate) fn scheduled(store: Arc<Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            scheduled: Some(clock),
        }
    }
}

impl SitemapMemory for StoreMemory {
    fn recall(&self, url: &NormUrl) -> Option<Remembered> {
        let record = self.store.sitemap(url.as_str()).ok().flatten()?;
        let children = self.store.children(url.as_str()).unwrap_or_default();
        let not_due = self.scheduled.as_ref().is_some_and(|clock| {
            !self
                .store
                .sitemap_due(url.as_str(), clock.now())
                .unwrap_or(true)
        });
        Some(Remembered {
            validators: Validators {
                etag: record.etag,
                last_modified: record.last_modified,
            },
            fetched_at: record
                .last_success
                .filter(|t| t.unix() >= 0)
                .map(SystemTime::from),
            children: children
                .iter()
                .filter_map(|c| NormUrl::parse(c).ok())
                .collect(),
            not_due,
        })
    }
}

/// Records what a walk event tells the store: entries, and how each
/// sitemap fetch ended. Other events are the caller's to report.
pub(crate) fn record(ingest: &mut Ingest<'_>, event: &WalkEvent) -> Result<(), StoreError> {
    match event {
        WalkEvent::Entry { sitemap, entry } => ingest.entry(sitemap.as_str(), entry),
        WalkEvent::SitemapFetched(r) => ingest.sitemap_fetched(r.url.as_str(), &fetched(r)),
        WalkEvent::SitemapFailed(f) => ingest.sitemap_fetched(f.url.as_str(), &failed(f)),
        WalkEvent::Robots(r) => robots(ingest, r),
        _ => Ok(()),
    }
}

/// A robots.txt read: its rules for our agent become the ones the site's
/// URLs are leased under; a missing one (4xx) allows everything; an
/// unreachable one leaves the last known rules in force (RFC 9309 §2.4).
fn robots(ingest: &mut Ingest<'_>, r: &RobotsReport) -> Result<(), StoreError> {
    let rules = match &r.outcome {
        RobotsOutcome::Parsed { robots } => robots.rules(),
        RobotsOutcome::Unavailable => RobotsRules::allow_all(),
        RobotsOutcome::Unreachable { .. } => return Ok(()),
    };
    ingest.robots_read(&r.site.host_key(), &rules).map(|_| ())
}

/// A sitemap read (or 304), as the store records it.
fn fetched(r: &SitemapReport) -> SitemapFetch {
    let format = r.summary.as_ref().and_then(|s| s.format);
    SitemapFetch {
        status: r.status,
        failed: false,
        complete: r.complete(),
        etag: r.validators.etag.clone(),
        last_modified: r.validators.last_modified.clone(),
        parent: r.parent.as_ref().map(|p| p.to_string()),
        authorised_by: matches!(r.via, Via::Robots | Via::Index).then(|| r.site.to_string()),
        feed: is_feed(format),
        // A complete read of an index replaces the children remembered.
        children: (format == Some(Format::SitemapIndex) && r.complete())
            .then(|| r.children.iter().map(|c| c.to_string()).collect()),
    }
}

/// RSS, RDF and Atom are feeds: refreshed more often than sitemaps.
fn is_feed(format: Option<Format>) -> bool {
    matches!(format, Some(Format::Rss | Format::Rdf | Format::Atom))
}

/// A sitemap read whole from a file or from memory (no HTTP): read if its
/// format was recognised, and complete if read to its end.
pub(crate) fn read_whole(summary: &sitemapd_parser::Summary) -> SitemapFetch {
    SitemapFetch {
        status: if summary.format.is_some() { 200 } else { 0 },
        complete: summary.complete,
        feed: is_feed(summary.format),
        ..SitemapFetch::default()
    }
}

/// A failed sitemap fetch, as the store records it: a failure even when a
/// 2xx response came (not a sitemap, or cut before its format was known).
fn failed(f: &SitemapFailure) -> SitemapFetch {
    SitemapFetch {
        status: f.status.unwrap_or(0),
        failed: true,
        parent: f.parent.as_ref().map(|p| p.to_string()),
        ..SitemapFetch::default()
    }
}
