//! The robots.txt reports kept for a while (RFC 9309 §2.4; the walk's
//! [`WalkConfig::robots_ttl`](crate::walk::WalkConfig::robots_ttl)): per
//! robots.txt URL, the last report and when it was fetched, in memory,
//! shared by the clones of the cache (a walker's clones share one).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use sitemapd_parser::NormUrl;
use tokio::time::Instant;
use tracing::{debug, info};

use super::fetch::{RobotsOutcome, RobotsReport, apply_crawl_delay, fetch_robots};
use crate::fetch::Fetcher;

/// How long a robots.txt report is kept at most: 30 days. A parsed report
/// stands in for an unreachable robots.txt (5xx or no response) until then.
pub const ROBOTS_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Reports kept at most; past it, the older half is dropped.
const MAX_ENTRIES: usize = 100_000;

/// How often, at most, an insertion sweeps out the reports older than
/// [`ROBOTS_MAX_AGE`] (a scan of the whole map): `get` checks the age
/// anyway, so a stale entry only lingers in memory that much longer.
const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// The cache: shared by its clones.
#[derive(Clone)]
pub(crate) struct RobotsCache(Arc<Mutex<Inner>>);

struct Inner {
    reports: HashMap<NormUrl, Cached>,
    /// Entries kept at most ([`MAX_ENTRIES`]; smaller in tests).
    cap: usize,
    /// Insertions so far: orders entries fetched at the same instant.
    inserted: u64,
    /// When the last sweep by age ran (none yet: the first insertion).
    swept: Option<Instant>,
}

struct Cached {
    report: RobotsReport,
    /// When it was fetched.
    at: Instant,
    /// Insertion number, breaking ties of `at`.
    seq: u64,
}

impl Default for RobotsCache {
    fn default() -> Self {
        Self::with_cap(MAX_ENTRIES)
    }
}

impl std::fmt::Debug for RobotsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RobotsCache")
            .field("entries", &self.lock().reports.len())
            .finish()
    }
}

impl RobotsCache {
    fn with_cap(cap: usize) -> Self {
        Self(Arc::new(Mutex::new(Inner {
            reports: HashMap::new(),
            cap: cap.max(1),
            inserted: 0,
            swept: None,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The report of `url` fetched less than `max_age` before `now`, if it
    /// is kept and (with `parsed_only`) was parsed.
    fn get(
        &self,
        url: &NormUrl,
        max_age: Duration,
        now: Instant,
        parsed_only: bool,
    ) -> Option<RobotsReport> {
        let inner = self.lock();
        let cached = inner.reports.get(url)?;
        let young = now.saturating_duration_since(cached.at) < max_age;
        let kind = !parsed_only || matches!(cached.report.outcome, RobotsOutcome::Parsed { .. });
        (young && kind).then(|| cached.report.clone())
    }

    /// Keeps `report` of `url`, fetched at `at`. Drops the reports older
    /// than [`ROBOTS_MAX_AGE`] first (at most every [`SWEEP_EVERY`]), and
    /// the older half of them all when there are more than the cap.
    fn insert(&self, url: NormUrl, report: RobotsReport, at: Instant) {
        let mut inner = self.lock();
        if inner
            .swept
            .is_none_or(|t| at.saturating_duration_since(t) >= SWEEP_EVERY)
        {
            inner.swept = Some(at);
            inner
                .reports
                .retain(|_, c| at.saturating_duration_since(c.at) < ROBOTS_MAX_AGE);
        }
        let seq = inner.inserted;
        inner.inserted += 1;
        inner.reports.insert(url, Cached { report, at, seq });
        if inner.reports.len() > inner.cap {
            let mut ages: Vec<(Instant, u64)> =
                inner.reports.values().map(|c| (c.at, c.seq)).collect();
            let half = ages.len() / 2;
            let (_, &mut cutoff, _) = ages.select_nth_unstable(half);
            inner.reports.retain(|_, c| (c.at, c.seq) >= cutoff);
            debug!(kept = inner.reports.len(), "robots.txt cache halved");
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().reports.len()
    }
}

impl RobotsCache {
    /// The robots.txt report at `url`: fetched through `fetcher`, or, with
    /// a `ttl`, taken from the cache while younger than it, and kept. A
    /// parsed report younger than [`ROBOTS_MAX_AGE`] stands in for an
    /// unreachable robots.txt. Without a `ttl`, always fetched and not kept.
    pub(crate) async fn report(
        &self,
        fetcher: &Fetcher,
        ttl: Option<Duration>,
        url: &NormUrl,
    ) -> RobotsReport {
        let Some(ttl) = ttl else {
            return fetch_robots(fetcher, url).await;
        };
        let started = Instant::now();
        if let Some(report) = self.get(url, ttl, started, false) {
            debug!(%url, "robots.txt fresh in the cache: not fetched");
            return reuse(fetcher, report, started);
        }
        let report = fetch_robots(fetcher, url).await;
        if let RobotsOutcome::Unreachable { reason } = &report.outcome {
            // RFC 9309 §2.4: the cached copy may be used while unreachable.
            return match self.get(url, ROBOTS_MAX_AGE, Instant::now(), true) {
                Some(cached) => {
                    info!(%url, %reason, "robots.txt unreachable: using the cached copy");
                    reuse(fetcher, cached, started)
                }
                None => report,
            };
        }
        self.insert(url.clone(), report.clone(), started);
        report
    }
}

/// A cached report for this fetch: marked, timed, its crawl delay applied
/// again (the politeness gate may have forgotten the host since).
fn reuse(fetcher: &Fetcher, mut report: RobotsReport, started: Instant) -> RobotsReport {
    report.from_cache = true;
    report.duration = started.elapsed();
    apply_crawl_delay(fetcher, &report);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(url: &NormUrl) -> RobotsReport {
        RobotsReport {
            status: Some(404),
            ..super::super::fetch::unanswered(url)
        }
    }

    fn url(i: usize) -> NormUrl {
        NormUrl::parse(&format!("https://h{i}.example/robots.txt")).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn expires_and_evicts_old_entries_on_insert() {
        let cache = RobotsCache::default();
        let t0 = Instant::now();
        cache.insert(url(0), report(&url(0)), t0);
        let ttl = Duration::from_secs(60);
        assert!(cache.get(&url(0), ttl, t0 + ttl / 2, false).is_some());
        assert!(cache.get(&url(0), ttl, t0 + ttl, false).is_none());
        // Not parsed: never a stand-in for an unreachable robots.txt.
        assert!(cache.get(&url(0), ROBOTS_MAX_AGE, t0, true).is_none());
        tokio::time::advance(ROBOTS_MAX_AGE).await;
        cache.insert(url(1), report(&url(1)), Instant::now());
        assert_eq!(cache.len(), 1, "the 30-day-old entry is dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn the_sweep_by_age_runs_at_most_every_sweep_interval() {
        let cache = RobotsCache::default();
        let t0 = Instant::now();
        cache.insert(url(0), report(&url(0)), t0);
        let t1 = t0 + ROBOTS_MAX_AGE - SWEEP_EVERY / 2;
        cache.insert(url(1), report(&url(1)), t1);
        // url(0) is past the maximum age now, but the last sweep is recent:
        // it stays in the map, and is never handed out.
        let t2 = t0 + ROBOTS_MAX_AGE;
        cache.insert(url(2), report(&url(2)), t2);
        assert_eq!(cache.len(), 3);
        assert!(cache.get(&url(0), ROBOTS_MAX_AGE, t2, false).is_none());
        // The next sweep drops it.
        cache.insert(url(3), report(&url(3)), t1 + SWEEP_EVERY);
        assert_eq!(cache.len(), 3);
        assert!(cache.get(&url(1), ROBOTS_MAX_AGE, t2, false).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn over_the_cap_the_older_half_goes() {
        let cache = RobotsCache::with_cap(10);
        let t0 = Instant::now();
        for i in 0..10 {
            cache.insert(url(i), report(&url(i)), t0 + Duration::from_secs(i as u64));
        }
        assert_eq!(cache.len(), 10);
        // The same instant for the next one: ties are broken by insertion.
        cache.insert(url(10), report(&url(10)), t0 + Duration::from_secs(9));
        assert_eq!(cache.len(), 6);
        let day = Duration::from_secs(86_400);
        for i in 0..5 {
            assert!(cache.get(&url(i), day, t0, false).is_none(), "{i}");
        }
        for i in 5..=10 {
            assert!(cache.get(&url(i), day, t0, false).is_some(), "{i}");
        }
    }
}
