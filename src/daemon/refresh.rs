//! The refresh loop: walks each followed site when one of its sitemaps (or
//! its robots.txt) is due, and ingests what changed.
//!
//! Due sites start a *wave*: one walk of those sites, with its own ingest
//! session. Waves run side by side (a large site does not hold up the
//! others); a site is in at most one wave at a time. The walk's memory is
//! the store with the refresh schedule, so sitemaps that are not due are
//! not fetched and unchanged ones cost one conditional GET.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream, SelectAll};
use sitemapd_discovery::walk::RobotsOutcome;
use sitemapd_discovery::{Seed, WalkEvent, Walker};
use sitemapd_scheduler::{Ingest, Store};
use tokio::sync::{Notify, watch};
use tracing::{debug, error, info, warn};

use super::metrics::{Metrics, label};
use crate::walk_store;
use sitemapd_scheduler::{Clock, SiteWalk, Timestamp};

/// URLs merged per ingest batch. Smaller than the store's default: a
/// batch holds the store's write lock, which leases and completions wait
/// for, so it is kept to a few milliseconds (`cargo bench --bench
/// daemon_api` measures the trade: with 2,000 its sites were ingested in
/// 0.87 of the time, but leases and completions made meanwhile ran at a
/// third of the rate; docs/BENCHMARKS.md, "The daemon").
const INGEST_BATCH: usize = 500;

/// What the refresh loop needs.
pub(super) struct Refresher {
    /// The store.
    pub store: Arc<Store>,
    /// The walker (its memory: the store with the schedule).
    pub walker: Walker,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// robots.txt cache lifetime, seconds: a site is walked at least this often.
    pub robots_secs: i64,
    /// When a walk read nothing that has a schedule, the next walk after this.
    pub sitemap_secs: i64,
    /// After a walk that failed outright.
    pub error_backoff_secs: i64,
    /// Wakes the loop (a site was added).
    pub wake: Arc<Notify>,
    /// Where "now" comes from: when sites are due, the ingest's time.
    pub clock: Arc<dyn Clock>,
}

/// One walk of some sites and its ingest session.
struct Wave<'s> {
    ingest: Ingest<'s>,
    /// Per site: the earliest next refresh among its sitemaps.
    next: HashMap<String, i64>,
    started: i64,
    /// The sites it walks.
    sites: Vec<String>,
    /// Sites whose robots.txt the address guard refused: walked again when
    /// robots.txt is next due, not after the error backoff (waiting does
    /// not change a refusal).
    refused: HashSet<String>,
}

type Events = BoxStream<'static, (u64, Option<WalkEvent>)>;

/// The longest the loop sleeps without looking at the sites again.
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// Rate policies are recalibrated at most this often, seconds.
const CALIBRATE_EVERY: i64 = 3_600;

impl Refresher {
    /// Runs until `stop` turns true, then stops the walks, commits what was
    /// read and returns.
    pub(super) async fn run(&self, mut stop: watch::Receiver<bool>) -> Result<()> {
        let mut events: SelectAll<Events> = SelectAll::new();
        let mut waves: HashMap<u64, Wave<'_>> = HashMap::new();
        let mut running: HashSet<String> = HashSet::new();
        let mut next_wave = 0u64;
        let mut look = true;
        // When to look at the sites again: a deadline, not a sleep re-armed
        // per event, so a busy wave does not hold up sites falling due.
        let mut deadline = tokio::time::Instant::now();
        let mut calibrated = self.now();
        loop {
            if *stop.borrow() {
                break;
            }
            if look {
                let now = self.now();
                let (due, next) = self.due_sites(now, &running)?;
                let sleep = next.map_or(MAX_SLEEP, |t| {
                    Duration::from_secs(t.saturating_sub(now).clamp(1, 60) as u64)
                });
                deadline = tokio::time::Instant::now() + sleep;
                if !due.is_empty() {
                    next_wave += 1;
                    info!(wave = next_wave, sites = due.len(), "refresh starts");
                    let seeds = due
                        .iter()
                        .filter_map(|s| Seed::parse(s).ok())
                        .collect::<Vec<_>>();
                    running.extend(due.iter().cloned());
                    let id = next_wave;
                    let walk = self.walker.walk(seeds);
                    let stream = walk
                        .map(move |e| (id, Some(e)))
                        .chain(stream::once(async move { (id, None) }));
                    events.push(stream.boxed());
                    waves.insert(
                        id,
                        Wave {
                            ingest: self
                                .store
                                .ingest(sitemapd_scheduler::Timestamp::from_unix(now))
                                .with_batch(INGEST_BATCH),
                            next: HashMap::new(),
                            started: now,
                            sites: due,
                            refused: HashSet::new(),
                        },
                    );
                }
                look = false;
            }
            tokio::select! {
                biased;
                _ = stop.changed() => break,
                item = events.next(), if !events.is_empty() => {
                    let Some((id, event)) = item else { continue };
                    match event {
                        Some(event) => {
                            if let Some(wave) = waves.get_mut(&id) {
                                self.handle(wave, event, &mut running);
                            }
                        }
                        None => {
                            if let Some(wave) = waves.remove(&id) {
                                // Every site of the wave is free again, even
                                // one whose walk ended without a report.
                                for site in &wave.sites {
                                    running.remove(site);
                                }
                                self.finish(id, wave);
                            }
                            look = true;
                        }
                    }
                }
                _ = self.wake.notified() => look = true,
                _ = tokio::time::sleep_until(deadline) => look = true,
            }
            if self.now() - calibrated >= CALIBRATE_EVERY && waves.is_empty() {
                calibrated = self.now();
                if let Err(e) = self.store.calibrate() {
                    warn!(error = %e, "calibration failed");
                }
            }
        }
        // Stop the walks, then commit what they read.
        drop(events);
        for (id, wave) in waves {
            self.finish(id, wave);
        }
        Ok(())
    }

    /// The clock now, in unix seconds.
    fn now(&self) -> i64 {
        self.clock.now().unix()
    }

    /// Sites due now and not being walked, and when the next one is due.
    fn due_sites(&self, now: i64, running: &HashSet<String>) -> Result<(Vec<String>, Option<i64>)> {
        let mut due = Vec::new();
        let mut next: Option<i64> = None;
        for item in self.store.sites() {
            let site = match item {
                Ok(site) => site,
                Err(e) => {
                    warn!(error = %e, "unreadable site record skipped");
                    continue;
                }
            };
            // In a cluster, the sites of partitions another node owns are
            // that node's to walk.
            if running.contains(&site.site)
                || !self
                    .store
                    .serves_partition(self.store.partition_of_site(&site.site))
            {
                continue;
            }
            let next_walk = site.next_walk.unix();
            if next_walk <= now {
                due.push(site.site);
            } else {
                next = Some(next.map_or(next_walk, |n| n.min(next_walk)));
            }
        }
        Ok((due, next))
    }

    /// One event of a wave: into the store, the metrics and the site's
    /// next refresh time.
    fn handle(&self, wave: &mut Wave<'_>, event: WalkEvent, running: &mut HashSet<String>) {
        if let Err(e) = walk_store::record(&mut wave.ingest, &event) {
            error!(error = %e, "the store refused a walk event");
        }
        let m = &self.metrics;
        let scheduled = |url: &str| {
            self.store
                .refresh_state(url)
                .ok()
                .flatten()
                .map(|s| s.next_at.unix())
        };
        let (site, next) = match &event {
            WalkEvent::Entry { .. } => {
                m.urls_ingested.inc();
                return;
            }
            WalkEvent::SitemapFetched(r) => {
                m.sitemap_fetches
                    .get_or_create(&label(r.status.to_string()))
                    .inc();
                m.bytes.inc_by(r.bytes);
                m.fetch_seconds.observe(r.duration.as_secs_f64());
                debug!(url = %r.url, status = r.status, not_modified = r.not_modified, "sitemap read");
                (r.site.to_string(), scheduled(r.url.as_str()))
            }
            WalkEvent::SitemapFailed(f) => {
                let status = f.status.map_or("none".to_string(), |s| s.to_string());
                m.sitemap_fetches.get_or_create(&label(status)).inc();
                warn!(url = %f.url, error = %f.error, "sitemap fetch failed");
                (f.site.to_string(), scheduled(f.url.as_str()))
            }
            WalkEvent::NotDue { site, url, .. } => (site.to_string(), scheduled(url.as_str())),
            WalkEvent::Robots(r) => {
                let outcome = match (&r.outcome, r.from_cache) {
                    (_, true) => "cached",
                    (RobotsOutcome::Parsed { .. }, _) => "parsed",
                    (RobotsOutcome::Unavailable, _) => "unavailable",
                    // The address guard's refusal is no outage: nothing to wait for.
                    (RobotsOutcome::Unreachable { reason }, _)
                        if sitemapd_discovery::fetch::is_refusal(reason) =>
                    {
                        "refused"
                    }
                    (RobotsOutcome::Unreachable { .. }, _) => "unreachable",
                };
                m.robots_fetches.get_or_create(&label(outcome)).inc();
                // Why a site's robots.txt could not be read, per site: a
                // refusal by the address guard is not an outage.
                if let (RobotsOutcome::Unreachable { reason }, false) = (&r.outcome, r.from_cache) {
                    if outcome == "refused" {
                        wave.refused.insert(r.site.to_string());
                        warn!(site = %r.site, url = %r.url, error = %reason, "robots.txt not fetched: refused by the address guard; the site is walked again when its robots.txt is next due (refresh.robots_secs)");
                    } else {
                        warn!(site = %r.site, url = %r.url, error = %reason, "robots.txt unreachable");
                    }
                }
                return;
            }
            WalkEvent::SiteDone(t) => {
                let site = t.site.to_string();
                running.remove(&site);
                m.walks.inc();
                let now = self.now();
                let next = match wave.next.remove(&site) {
                    Some(at) => at,
                    // Nothing read because the guard refused robots.txt:
                    // waiting does not change that, so no error backoff.
                    None if t.sitemaps == 0 && wave.refused.contains(&site) => {
                        wave.started + self.robots_secs
                    }
                    None if t.failed > 0 || t.sitemaps == 0 => now + self.error_backoff_secs,
                    None => now + self.sitemap_secs,
                };
                // The robots.txt cache expires: walk again by then.
                let next = next.min(wave.started + self.robots_secs).max(now + 1);
                info!(%site, sitemaps = t.sitemaps, failed = t.failed, not_due = t.not_due, urls = t.entries, next_in_secs = next - now, "site refreshed");
                let walk = SiteWalk {
                    ended: Timestamp::from_unix(now),
                    next_walk: Timestamp::from_unix(next),
                    sitemaps: t.sitemaps,
                    failed: t.failed,
                    entries: t.entries,
                };
                match self.store.site_walked(&site, &walk) {
                    Ok(true) => {}
                    Ok(false) => debug!(%site, "site removed during its walk"),
                    Err(e) => error!(%site, error = %e, "cannot save the site's schedule"),
                }
                return;
            }
            _ => return,
        };
        if let Some(at) = next {
            let slot = wave.next.entry(site).or_insert(at);
            *slot = (*slot).min(at);
        }
    }

    /// Commits a wave's ingest session.
    fn finish(&self, id: u64, wave: Wave<'_>) {
        match wave.ingest.finish() {
            Ok(stats) => {
                self.metrics.ingested(&stats);
                info!(
                    wave = id,
                    entries = stats.entries,
                    new = stats.new,
                    updated = stats.updated,
                    retired = stats.retired,
                    sitemaps = stats.sitemaps,
                    "refresh done"
                );
            }
            Err(e) => error!(wave = id, error = %e, "commit failed"),
        }
    }
}
