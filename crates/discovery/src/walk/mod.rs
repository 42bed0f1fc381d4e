//! The walk: from seeds (sites or sitemap URLs) to a stream of every
//! sitemap entry, with robots.txt discovery, probing, nested indexes,
//! scope and cross-submission, and a report per sitemap.
//!
//! Sites are walked in parallel; the sitemaps of one site concurrently
//! within the fetcher's per-host limit. Events flow through a bounded
//! channel: a slow consumer slows the walk instead of growing a buffer, and
//! dropping the [`WalkStream`] stops it.

mod event;
mod follow;
mod site;
mod sitemap;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use futures_core::Stream;
use sitemapd_parser::{NormUrl, ParseOptions, UrlError};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

pub use event::{
    MAX_REPORTED_CHILDREN, SiteTotals, SitemapFailure, SitemapReport, SkipReason, Via, WalkEvent,
};
pub use follow::follow_patterns;

use crate::fetch::{Fetcher, Validators};
use crate::robots::RobotsCache;
// What a walk reports of robots.txt ([`WalkEvent::Robots`]), also here for
// the walk's users.
pub use crate::robots::{ROBOTS_MAX_AGE, RobotsOutcome, RobotsReport};

/// The well-known paths probed when robots.txt declares no sitemap (R6).
pub const DEFAULT_PROBE_PATHS: [&str; 8] = [
    "/sitemap.xml",
    "/sitemap_index.xml",
    "/sitemap.xml.gz",
    "/sitemap.txt",
    "/wp-sitemap.xml",
    "/feed",
    "/rss.xml",
    "/atom.xml",
];

/// Which children of an index a walk fetches ([`WalkConfig::follow`]).
pub type FollowRule = Arc<dyn Fn(&NormUrl) -> bool + Send + Sync>;

/// Walk settings. `Default` gives the values documented on each field.
#[derive(Clone)]
pub struct WalkConfig {
    /// Index nesting followed at most (I6); default 3: a robots sitemap is
    /// depth 0, and sitemaps down to depth 3 are read.
    pub max_depth: u32,
    /// Sitemaps fetched per site at most; default 5,000.
    pub max_sitemaps_per_site: usize,
    /// Probe well-known paths when robots.txt declares nothing (R6);
    /// default true.
    pub probe: bool,
    /// The paths probed; default [`DEFAULT_PROBE_PATHS`].
    pub probe_paths: Vec<String>,
    /// Which children of an index are fetched: those whose URL it returns
    /// true for ([`follow_patterns`] makes one of regular expressions);
    /// default `None`, every child. The sitemaps robots.txt lists, and the
    /// walk's seeds, are fetched whatever it says.
    pub follow: Option<FollowRule>,
    /// Sitemaps of one site fetched at once; default 2 (the per-host limit).
    pub sitemap_concurrency: usize,
    /// Sites walked at once; default 16.
    pub site_concurrency: usize,
    /// Parser options for every sitemap (scope mode, strictness, limits);
    /// the document URL and authorised origins are set per sitemap.
    pub parse: ParseOptions,
    /// What the caller remembers of earlier fetches (validators for
    /// conditional GET, last fetch time for I3); default none.
    pub memory: Option<Arc<dyn SitemapMemory>>,
    /// How long a robots.txt report is reused (RFC 9309 §2.4); default
    /// `None`: robots.txt is fetched on every walk of a site.
    ///
    /// With `Some(ttl)`, the [`Walker`] (and its clones) keeps the last
    /// report of each robots.txt in memory. A walk within `ttl` of the
    /// fetch uses it without a request, with
    /// [`RobotsReport::from_cache`] set and its `Crawl-delay` applied
    /// again. When a later fetch finds robots.txt unreachable (5xx or no
    /// response), a parsed report younger than [`ROBOTS_MAX_AGE`] is used
    /// instead. And when a report from the cache declares no sitemap, only
    /// the probe paths the [`memory`](Self::memory) recalls are probed:
    /// the others were found missing before.
    pub robots_ttl: Option<Duration>,
}

impl Default for WalkConfig {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_sitemaps_per_site: 5_000,
            probe: true,
            probe_paths: DEFAULT_PROBE_PATHS.iter().map(|p| p.to_string()).collect(),
            follow: None,
            sitemap_concurrency: 2,
            site_concurrency: 16,
            parse: ParseOptions::default(),
            memory: None,
            robots_ttl: None,
        }
    }
}

impl std::fmt::Debug for WalkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkConfig")
            .field("max_depth", &self.max_depth)
            .field("max_sitemaps_per_site", &self.max_sitemaps_per_site)
            .field("probe", &self.probe)
            .field("follow", &self.follow.is_some())
            .field("sitemap_concurrency", &self.sitemap_concurrency)
            .field("site_concurrency", &self.site_concurrency)
            .field("memory", &self.memory.is_some())
            .field("robots_ttl", &self.robots_ttl)
            .finish_non_exhaustive()
    }
}

/// What a caller (the scheduler's store, say) remembers of a sitemap.
#[derive(Debug, Clone, Default)]
pub struct Remembered {
    /// Validators of the last response, sent as `If-None-Match` /
    /// `If-Modified-Since`.
    pub validators: Validators,
    /// When it was last fetched successfully.
    pub fetched_at: Option<SystemTime>,
    /// The children it listed when last read, if it is an index: walked on
    /// when it answers 304, since an unchanged index says nothing about
    /// whether its children changed.
    pub children: Vec<NormUrl>,
    /// The caller's own refresh schedule says this sitemap need not be read
    /// now: it is not fetched; the walker emits [`WalkEvent::NotDue`] and,
    /// for an index, walks on through [`Remembered::children`], each child
    /// recalled and checked the same way. Counted in
    /// [`SiteTotals::not_due`], not in [`SiteTotals::sitemaps`]. A child
    /// not due is descended through whatever its index's lastmod says (I3
    /// does not apply); the depth, cycle and cap limits still do.
    pub not_due: bool,
}

/// Lookup of earlier fetches, supplied by the caller.
///
/// With validators remembered, an unchanged sitemap costs one 304. An
/// unchanged *index* is descended through the children the caller
/// remembers for it ([`Remembered::children`]); each child then gets its own
/// conditional GET.
pub trait SitemapMemory: Send + Sync {
    /// What is known of `url`, if anything.
    fn recall(&self, url: &NormUrl) -> Option<Remembered>;
}

/// Where a walk starts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seed {
    /// A site: robots.txt first, then its sitemaps (or the probes).
    Site(NormUrl),
    /// One sitemap (or index, or feed), without robots.txt.
    Sitemap(NormUrl),
}

impl Seed {
    /// Reads a seed: `example.com` or `https://example.com/` (an origin or
    /// homepage) is a site, any other path a sitemap. Without a scheme,
    /// `https://` is assumed.
    ///
    /// ```
    /// use sitemapd_discovery::walk::Seed;
    /// assert!(matches!(Seed::parse("example.com").unwrap(), Seed::Site(_)));
    /// assert!(matches!(Seed::parse("http://example.com/").unwrap(), Seed::Site(_)));
    /// assert!(matches!(Seed::parse("https://example.com/sitemap.xml").unwrap(), Seed::Sitemap(_)));
    /// assert_eq!(Seed::parse("localhost:8080").unwrap().url().as_str(), "https://localhost:8080/");
    /// assert_eq!(
    ///     Seed::parse("example.com/s.xml?from=http://x").unwrap().url().as_str(),
    ///     "https://example.com/s.xml?from=http://x"
    /// );
    /// ```
    pub fn parse(input: &str) -> Result<Seed, UrlError> {
        let input = input.trim();
        // A scheme is what comes before the first `://`, if that is one
        // (RFC 3986 §3.1): not `://` inside a query.
        let has_scheme = input.split_once("://").is_some_and(|(scheme, _)| {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        });
        let url = if has_scheme {
            NormUrl::parse(input)?
        } else {
            // `example.com`, `localhost:8080/sitemap.xml`
            NormUrl::parse(&format!("https://{input}"))?
        }
        .limited()?;
        Ok(if url.path_and_query() == "/" {
            Seed::Site(url)
        } else {
            Seed::Sitemap(url)
        })
    }

    /// The seed URL.
    pub fn url(&self) -> &NormUrl {
        match self {
            Seed::Site(u) | Seed::Sitemap(u) => u,
        }
    }
}

/// Walks seeds to events; see the module docs.
#[derive(Debug, Clone)]
pub struct Walker {
    fetcher: Fetcher,
    config: Arc<WalkConfig>,
    /// Reports of robots.txt kept for [`WalkConfig::robots_ttl`].
    robots: RobotsCache,
}

/// Events buffered between the walk and its consumer.
const CHANNEL: usize = 1024;

impl Walker {
    /// A walker fetching through `fetcher`.
    pub fn new(fetcher: Fetcher, config: WalkConfig) -> Self {
        Self {
            fetcher,
            config: Arc::new(config),
            robots: RobotsCache::default(),
        }
    }

    /// The fetcher.
    pub fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// What the caller's memory says of `url`, if it knows it.
    fn remembers(&self, url: &NormUrl) -> Option<Remembered> {
        self.config.memory.as_ref().and_then(|m| m.recall(url))
    }

    /// What the caller's memory says of `url` (nothing without a memory).
    fn recall(&self, url: &NormUrl) -> Remembered {
        self.remembers(url).unwrap_or_default()
    }

    /// Starts walking `seeds` (duplicates walked once) on the current tokio
    /// runtime. Each site runs as its own task: a defect that panics while
    /// walking one site ends that site with [`SiteTotals::aborted`] set,
    /// and the others carry on.
    pub fn walk(&self, seeds: Vec<Seed>) -> WalkStream {
        let (tx, rx) = mpsc::channel(CHANNEL);
        let this = self.clone();
        let driver = tokio::spawn(async move {
            let limit = this.config.site_concurrency.max(1);
            let mut seen = std::collections::HashSet::new();
            let mut seeds = seeds.into_iter().filter(|s| seen.insert(s.clone()));
            let mut running = JoinSet::new();
            let mut sites = std::collections::HashMap::new();
            loop {
                while running.len() < limit {
                    let Some(seed) = seeds.next() else { break };
                    let url = seed.url().clone();
                    let task = running.spawn(site::walk_site(this.clone(), seed, Emit(tx.clone())));
                    sites.insert(task.id(), url);
                }
                let Some(done) = running.join_next_with_id().await else {
                    break;
                };
                // Every finished site leaves the map, not only the aborted ones.
                let id = match &done {
                    Ok((id, ())) => *id,
                    Err(e) => e.id(),
                };
                let (Some(site), Err(e)) = (sites.remove(&id), done) else {
                    continue;
                };
                tracing::error!(%site, error = %e, "site walk aborted");
                let totals = SiteTotals::aborted(site, format!("internal error: {e}"));
                if tx.send(WalkEvent::SiteDone(totals)).await.is_err() {
                    break;
                }
            }
        });
        WalkStream { rx, driver }
    }
}

/// The consumer went away: stop walking.
#[derive(Debug)]
pub(crate) struct Closed;

/// The sending side of the walk's channel.
#[derive(Clone)]
pub(crate) struct Emit(mpsc::Sender<WalkEvent>);

impl Emit {
    pub(crate) async fn send(&self, event: WalkEvent) -> Result<(), Closed> {
        self.0.send(event).await.map_err(|_| Closed)
    }
}

/// The events of a walk; dropping it stops the walk.
pub struct WalkStream {
    rx: mpsc::Receiver<WalkEvent>,
    driver: JoinHandle<()>,
}

impl Stream for WalkStream {
    type Item = WalkEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WalkEvent>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for WalkStream {
    fn drop(&mut self) {
        self.driver.abort();
    }
}
