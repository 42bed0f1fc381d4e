//! What a walk reports: the stream of [`WalkEvent`]s.

use std::sync::Arc;
use std::time::Duration;

use serde::{Serialize, Serializer};
use sitemapd_parser::{Diagnostic, NormUrl, Summary, UrlEntry};

use crate::fetch::{FetchError, Hop, Validators};
use crate::robots::RobotsReport;

/// One item of a walk.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WalkEvent {
    /// A site's robots.txt was fetched (or could not be).
    Robots(RobotsReport),
    /// A page URL from a sitemap.
    Entry {
        /// The sitemap (as listed, before redirects) it came from.
        #[serde(serialize_with = "url_str")]
        sitemap: Arc<NormUrl>,
        /// The entry.
        entry: UrlEntry,
    },
    /// A parse diagnostic of a sitemap.
    Diagnostic {
        /// The sitemap concerned.
        #[serde(serialize_with = "url_str")]
        sitemap: Arc<NormUrl>,
        /// What the parser found.
        diagnostic: Diagnostic,
    },
    /// A sitemap was fetched (2xx or 304) and read; its entries came before.
    SitemapFetched(Box<SitemapReport>),
    /// A sitemap could not be fetched; the walk goes on.
    SitemapFailed(SitemapFailure),
    /// A well-known path probed (SPEC R6) was not a sitemap.
    ProbeMissed {
        /// The site (seed).
        #[serde(serialize_with = "url_str")]
        site: Arc<NormUrl>,
        /// The path probed.
        url: NormUrl,
        /// Why: an HTTP status, an error, or "not a sitemap".
        reason: String,
    },
    /// Children of an index not followed, counted per reason.
    ChildrenSkipped {
        /// The site (seed).
        #[serde(serialize_with = "url_str")]
        site: Arc<NormUrl>,
        /// The index (or robots.txt) that listed them.
        parent: NormUrl,
        /// Why.
        reason: SkipReason,
        /// How many.
        count: u64,
        /// The first one skipped.
        example: NormUrl,
    },
    /// A sitemap the caller's memory marks not due
    /// ([`Remembered::not_due`](super::Remembered::not_due)): it was not
    /// fetched. An index is walked on through the children the memory
    /// remembers for it.
    NotDue {
        /// The site (seed).
        #[serde(serialize_with = "url_str")]
        site: Arc<NormUrl>,
        /// The sitemap.
        url: NormUrl,
        /// The index that listed it, if any.
        parent: Option<NormUrl>,
        /// Depth, as in [`SitemapReport::depth`].
        depth: u32,
    },
    /// A site is finished.
    SiteDone(SiteTotals),
}

/// How a sitemap was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Via {
    /// Given as a seed.
    Seed,
    /// Declared in robots.txt.
    Robots,
    /// A well-known path probed because robots.txt declared none (R6).
    Probe,
    /// Listed by a sitemap index.
    Index,
}

/// Why children were not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// Deeper than the nesting limit (I6).
    Depth,
    /// Already walked (a cycle or a duplicate, redirects included; I6).
    Seen,
    /// The per-site sitemap cap was reached.
    Cap,
    /// Its index lastmod is not newer than our last fetch (I3).
    NotChanged,
    /// The walk's follow rule ([`WalkConfig::follow`](super::WalkConfig::follow))
    /// does not take it.
    NotFollowed,
}

impl SkipReason {
    /// The reason in words.
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::Depth => "deeper than the index nesting limit (I6)",
            SkipReason::Seen => "already walked: cycle or duplicate (I6)",
            SkipReason::Cap => "over the per-site sitemap cap",
            SkipReason::NotChanged => "index lastmod not newer than the last fetch (I3)",
            SkipReason::NotFollowed => "not taken by the follow rule",
        }
    }
}

/// At most this many children are listed in [`SitemapReport::children`]:
/// the protocol's limit of sitemaps per index.
pub const MAX_REPORTED_CHILDREN: usize = 50_000;

/// A sitemap fetched and read.
#[derive(Debug, Clone, Serialize)]
pub struct SitemapReport {
    /// The site (seed) whose walk found it.
    #[serde(serialize_with = "url_str")]
    pub site: Arc<NormUrl>,
    /// The URL as listed.
    pub url: NormUrl,
    /// The URL it was read from, after redirects.
    pub final_url: NormUrl,
    /// The index that listed it.
    pub parent: Option<NormUrl>,
    /// 0 for a seed, robots or probe sitemap; +1 per index level.
    pub depth: u32,
    /// How it was found.
    pub via: Via,
    /// HTTP status (2xx, or 304).
    pub status: u16,
    /// 304 to our conditional GET: nothing was read.
    pub not_modified: bool,
    /// The response's validators, for the next conditional GET.
    pub validators: Validators,
    /// Redirect hops followed.
    pub redirects: Vec<Hop>,
    /// Attempts made.
    pub attempts: u32,
    /// Bytes received (before decompression).
    pub bytes: u64,
    /// What the parser read (absent on 304).
    pub summary: Option<Summary>,
    /// The transfer error that cut the body short, if any: what came
    /// before it was kept.
    pub cut: Option<FetchError>,
    /// The children an index listed, in document order, without
    /// duplicates, at most [`MAX_REPORTED_CHILDREN`]; empty for any other
    /// format and for a 304. Everything an index lists is here, including
    /// children the walk did not follow (depth, cap, I3, already seen).
    /// An index read only in part (see [`SitemapReport::complete`]) lists
    /// only the children before the cut.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<NormUrl>,
    /// Wall time, fetch and parse, without [`SitemapReport::waited`].
    #[serde(serialize_with = "millis")]
    pub duration: Duration,
    /// Time spent waiting for the host's politeness gate before the
    /// request went out (the minimum delay, a robots.txt `Crawl-delay`).
    #[serde(serialize_with = "millis")]
    pub waited: Duration,
}

impl SitemapReport {
    /// Every byte was read and parsed to the end (not cut by a transfer
    /// error, a limit or a well-formedness break).
    pub fn complete(&self) -> bool {
        self.cut.is_none() && self.summary.as_ref().is_some_and(|s| s.complete)
    }
}

/// A sitemap that could not be fetched.
#[derive(Debug, Clone, Serialize)]
pub struct SitemapFailure {
    /// The site (seed) whose walk found it.
    #[serde(serialize_with = "url_str")]
    pub site: Arc<NormUrl>,
    /// The URL as listed.
    pub url: NormUrl,
    /// The index that listed it.
    pub parent: Option<NormUrl>,
    /// Depth, as in [`SitemapReport::depth`].
    pub depth: u32,
    /// How it was found.
    pub via: Via,
    /// HTTP status, when a response came.
    pub status: Option<u16>,
    /// Why.
    pub error: String,
    /// Wall time, without [`SitemapFailure::waited`].
    #[serde(serialize_with = "millis")]
    pub duration: Duration,
    /// Time spent waiting for the host's politeness gate, as in
    /// [`SitemapReport::waited`].
    #[serde(serialize_with = "millis")]
    pub waited: Duration,
}

/// Totals of one site.
#[derive(Debug, Clone, Serialize)]
pub struct SiteTotals {
    /// The site (or seed sitemap).
    pub site: NormUrl,
    /// Sitemaps fetched and read (304s included).
    pub sitemaps: u64,
    /// Sitemaps that failed.
    pub failed: u64,
    /// Sitemaps not fetched because the caller's memory marks them not due
    /// ([`WalkEvent::NotDue`]); not counted in `sitemaps`.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_due: u64,
    /// URL entries yielded.
    pub entries: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Wall time.
    #[serde(serialize_with = "millis")]
    pub duration: Duration,
    /// Why the site's walk stopped early (an internal error), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
}

impl SiteTotals {
    /// Zero totals for `site`.
    pub fn new(site: NormUrl) -> Self {
        Self {
            site,
            sitemaps: 0,
            failed: 0,
            not_due: 0,
            entries: 0,
            bytes: 0,
            duration: Duration::ZERO,
            aborted: None,
        }
    }

    /// Totals of a site whose walk stopped on an internal error.
    pub fn aborted(site: NormUrl, why: String) -> Self {
        Self {
            aborted: Some(why),
            ..Self::new(site)
        }
    }
}

fn url_str<S: Serializer>(url: &Arc<NormUrl>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(url.as_str())
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}
