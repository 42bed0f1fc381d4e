//! The run loop: the world's events and the crawler's clock, in time order,
//! against a real [`Store`].
//!
//! Every `tick` the crawler leases what its budget allows
//! ([`Store::lease`], the store's own politeness spacing each host's URLs),
//! fetches each URL at its `not_before`, and reports what it found
//! ([`Store::complete`]). Between fetches the world moves: pages appear and
//! change, and the crawler reads every sitemap file when the store's
//! refresh schedule says so ([`Store::refresh_state`]), through an ingest
//! session ([`Store::ingest`]) with the file's ETag (a 304 when it did not
//! change). The rate policies are recalibrated every `calibrate_hours`
//! ([`Store::calibrate`]). Nothing of the scheduler is re-implemented
//! here: the policy, the estimators, lastmod trust, the queue and the
//! sitemap schedule are the store's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::time::{Duration, Instant};

use sitemapd_scheduler::ingest::SitemapFetch;
use sitemapd_scheduler::policy::Params;
use sitemapd_scheduler::queue::{Completion, Outcome};
use sitemapd_scheduler::refresh::RefreshParams;
use sitemapd_scheduler::store::{Store, StoreOptions};
use sitemapd_scheduler::{LeaseRequest, Timestamp};

use super::change::Changes;
use super::config::{DAY, SimConfig};
use super::metrics::{Found, Summary, Tracker, estimator_stats};
use super::oracle::{ORACLE, Oracle};
use super::publisher::Publisher;
use super::world::{EPOCH, World, host_key, page_id};
use super::{RunReport, SimError};
use sitemapd_scheduler::StoreError;

/// The store's options for this run and policy.
fn store_options(cfg: &SimConfig, policy: &str) -> StoreOptions {
    let c = &cfg.crawl;
    StoreOptions {
        cache_bytes: 32 << 20,
        policy: Some(policy.to_string()),
        params: Params {
            fixed_interval: c.fixed_interval_days * DAY,
            budget: c.budget / DAY,
            fallback: c.fallback.name().to_string(),
            safety_interval: c.safety_interval,
            validation_share: c.validation_share,
            announced_share: c.announced_share,
            ..Params::default()
        },
        estimator: cfg.estimator(),
        // No day divided by a cap: no politeness delay at all.
        min_delay: c.host_budget.map_or(0.0, |b| DAY / b),
        refresh: RefreshParams {
            min_secs: (cfg.sitemap.min_refresh_hours * 3600.0).round().max(1.0) as u32,
            ..RefreshParams::default()
        },
        ..StoreOptions::default()
    }
}

/// The simulation state of one run.
struct Sim<'a> {
    cfg: &'a SimConfig,
    store: Store,
    world: World,
    publisher: Publisher,
    tracker: Tracker,
    changes: Vec<Changes>,
    /// (time, page) of each page's next change.
    change_queue: BinaryHeap<Reverse<(i64, u32)>>,
    /// (time, file) of each sitemap file's next read.
    read_queue: BinaryHeap<Reverse<(i64, u32)>>,
    /// Pages that appear during the run, by birth.
    births: Vec<(i64, u32)>,
    next_birth: usize,
    sample_secs: i64,
    next_sample: i64,
    end: i64,
    reads: u64,
    not_modified: u64,
    ingested: u64,
    /// The oracle, when it is the policy (it chooses instead of the queue).
    oracle: Option<Oracle>,
}

/// Runs `policy` on the world of `seed` with a fresh store on disk in `dir`
/// (created if absent; it must be empty). `progress` is called with the
/// share of simulated time done, about once per simulated day.
/// [`run_in_memory`] gives the same report, several times faster.
pub fn run(
    cfg: &SimConfig,
    policy: &str,
    seed: u64,
    dir: &Path,
    progress: &mut dyn FnMut(f64),
) -> Result<RunReport, SimError> {
    check(cfg, policy)?;
    let io = |source| SimError::Io {
        path: dir.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    if std::fs::read_dir(dir).map_err(io)?.next().is_some() {
        return Err(SimError::DirNotEmpty(dir.display().to_string()));
    }
    run_on(cfg, policy, seed, |o| Store::open(dir, o), progress)
}

/// [`run`] with the store in memory ([`Store::in_memory`]): the same
/// store code on an ordered map instead of sled, so the same report (the
/// metrics are identical: a test checks it), without sled's cost.
pub fn run_in_memory(
    cfg: &SimConfig,
    policy: &str,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<RunReport, SimError> {
    check(cfg, policy)?;
    run_on(cfg, policy, seed, Store::in_memory, progress)
}

/// The settings are valid and the policy exists.
fn check(cfg: &SimConfig, policy: &str) -> Result<(), SimError> {
    cfg.validate()?;
    if policy != ORACLE {
        sitemapd_scheduler::policy::policy(policy, store_options(cfg, policy).params)
            .map_err(sitemapd_scheduler::store::StoreError::from)?;
    }
    Ok(())
}

fn run_on(
    cfg: &SimConfig,
    policy: &str,
    seed: u64,
    open: impl FnOnce(StoreOptions) -> Result<Store, sitemapd_scheduler::store::StoreError>,
    progress: &mut dyn FnMut(f64),
) -> Result<RunReport, SimError> {
    let started = Instant::now();
    let world = World::generate(cfg, seed)?;
    // The oracle chooses its own fetches; the store behind it still reads
    // the sitemaps and records the fetches, scheduling with the default.
    let store_policy = if policy == ORACLE { "adaptive" } else { policy };
    let store = open(store_options(cfg, store_policy))?;
    let span = tracing::info_span!("simulate", policy, seed);
    let _enter = span.enter();
    let spacing = cfg.crawl.host_budget.map_or(0, |b| (DAY / b).ceil() as i64);
    let oracle = (policy == ORACLE).then(|| Oracle::new(&world, spacing));
    let mut sim = Sim::new(cfg, store, world, seed);
    sim.oracle = oracle;
    let mut summary = sim.run(progress)?;
    summary.wall_seconds = started.elapsed().as_secs_f64();
    tracing::info!(
        fetches = summary.fetches_total,
        seconds = summary.wall_seconds,
        freshness = summary.freshness,
        "run done"
    );
    Ok(RunReport {
        policy: policy.to_string(),
        seed,
        series: sim.tracker.take_rows(),
        summary,
    })
}

impl<'a> Sim<'a> {
    fn new(cfg: &'a SimConfig, store: Store, world: World, seed: u64) -> Self {
        let weights = world.pages.iter().map(|p| p.importance).collect();
        let birth_times: Vec<i64> = world.pages.iter().map(|p| p.birth).collect();
        let warmup = (cfg.warmup() * DAY).round() as i64;
        let tracker = Tracker::new(
            EPOCH,
            warmup,
            weights,
            birth_times,
            world.hosts as usize,
            cfg.crawl.host_budget,
        );
        let publisher = Publisher::new(&world, &cfg.sitemap, seed);
        let changes = (0..world.pages.len() as u32)
            .map(|i| Changes::new(seed, i))
            .collect();
        let mut births: Vec<(i64, u32)> = world
            .pages
            .iter()
            .enumerate()
            .filter(|(_, p)| p.birth > EPOCH)
            .map(|(i, p)| (p.birth, i as u32))
            .collect();
        births.sort_unstable();
        let sample_secs = ((cfg.sample_hours * 3600.0).round() as i64).max(1);
        Sim {
            cfg,
            store,
            world,
            publisher,
            tracker,
            changes,
            change_queue: BinaryHeap::new(),
            read_queue: BinaryHeap::new(),
            births,
            next_birth: 0,
            sample_secs,
            next_sample: EPOCH + sample_secs,
            end: EPOCH + (cfg.days * DAY).round() as i64,
            reads: 0,
            not_modified: 0,
            ingested: 0,
            oracle: None,
        }
    }

    fn run(&mut self, progress: &mut dyn FnMut(f64)) -> Result<Summary, SimError> {
        let cfg = self.cfg;
        // The pages there from the start, with their past.
        let initial: Vec<u32> = self.world.initial().collect();
        for &i in &initial {
            let page = &self.world.pages[i as usize];
            let (lambda, file) = (page.lambda, page.sitemap);
            let recall = self.recall(page.host);
            self.tracker.born(i, EPOCH);
            self.oracle_stale(i, EPOCH);
            let changes = &mut self.changes[i as usize];
            let history = changes.history(lambda, recall);
            let lastmod = history.map(|ago| EPOCH - ago.round() as i64);
            self.publisher.list_initial(file, i, lastmod);
            let first = changes.first(EPOCH, lambda, &cfg.world);
            self.change_queue.push(Reverse((first, i)));
        }
        for f in 0..self.world.sitemaps.len() as u32 {
            self.read_queue.push(Reverse((EPOCH, f)));
        }
        self.advance(EPOCH)?;
        self.store.calibrate()?;
        let calibrate_secs = ((cfg.crawl.calibrate_hours * 3600.0).round() as i64).max(1);
        let mut next_calibration = EPOCH + calibrate_secs;
        let tick = i64::from(cfg.crawl.tick_secs);
        let per_tick = cfg.crawl.budget * tick as f64 / DAY;
        // Tokens a lease could not use carry over, up to `carry_hours` of
        // budget: the crawler spends its budget whenever enough is due.
        let cap = (cfg.crawl.budget * cfg.crawl.carry_hours / 24.0)
            .max(per_tick)
            .max(1.0);
        let mut tokens = 0.0f64;
        let mut t = EPOCH;
        let mut next_report = EPOCH + 86_400;
        let total = (self.end - EPOCH) as f64;
        while t < self.end {
            if t >= next_calibration {
                self.store.calibrate()?;
                next_calibration += calibrate_secs;
            }
            tokens = (tokens + per_tick).min(cap);
            let n = tokens.floor() as usize;
            if n > 0 {
                let mut fetches = match &mut self.oracle {
                    Some(oracle) => oracle.choose(&self.world, n, t, tick),
                    None => {
                        let request = LeaseRequest::new(n)
                            .per_host(n)
                            .ttl(Duration::from_secs(tick.unsigned_abs()));
                        self.store
                            .lease(&request, Timestamp::from_unix(t))?
                            .into_iter()
                            .map(|l| (l.not_before.unix().max(t), l.url))
                            .collect()
                    }
                };
                tokens -= fetches.len() as f64;
                fetches.sort();
                for (at, url) in fetches {
                    if at >= self.end {
                        break;
                    }
                    self.advance(at)?;
                    self.fetch(&url, at)?;
                }
            }
            t = (t + tick).min(self.end);
            self.advance(t)?;
            if t >= next_report {
                progress((t - EPOCH) as f64 / total);
                next_report += 86_400;
            }
        }
        progress(1.0);
        self.finish()
    }

    /// Processes every event up to and including `to`: window ends, then
    /// appearances, changes and sitemap reads, in time order.
    fn advance(&mut self, to: i64) -> Result<(), SimError> {
        loop {
            let birth = self
                .births
                .get(self.next_birth)
                .map(|b| b.0)
                .filter(|&b| b <= to);
            let change = self
                .change_queue
                .peek()
                .map(|Reverse((t, _))| *t)
                .filter(|&c| c <= to);
            let read = self
                .read_queue
                .peek()
                .map(|Reverse((t, _))| *t)
                .filter(|&r| r <= to);
            let next = [birth, change, read].into_iter().flatten().min();
            if self.next_sample <= to.min(self.end) && next.is_none_or(|n| self.next_sample <= n) {
                self.tracker.sample(self.next_sample);
                self.next_sample += self.sample_secs;
                continue;
            }
            let Some(at) = next else {
                break;
            };
            self.tracker.advance(at);
            if birth == Some(at) {
                self.born()?;
            } else if change == Some(at) {
                self.change()?;
            } else {
                self.read_sitemap()?;
            }
        }
        self.tracker.advance(to);
        Ok(())
    }

    fn born(&mut self) -> Result<(), SimError> {
        let Some(&(at, page)) = self.births.get(self.next_birth) else {
            return Ok(());
        };
        self.next_birth += 1;
        let p = &self.world.pages[page as usize];
        let (lambda, file) = (p.lambda, p.sitemap);
        self.tracker.born(page, at);
        self.oracle_stale(page, at);
        self.publisher.born(file, page, at);
        let first = self.changes[page as usize].first(at, lambda, &self.cfg.world);
        self.change_queue.push(Reverse((first, page)));
        Ok(())
    }

    fn change(&mut self) -> Result<(), SimError> {
        let Some(Reverse((at, page))) = self.change_queue.pop() else {
            return Ok(());
        };
        let p = &self.world.pages[page as usize];
        let (lambda, file) = (p.lambda, p.sitemap);
        let recall = self.recall(p.host);
        self.tracker.changed(page, at);
        self.oracle_stale(page, at);
        let stream = &mut self.changes[page as usize];
        if stream.reflected(recall) {
            self.publisher.changed(file, page, at);
        }
        let next = stream.next(at, lambda, &self.cfg.world);
        self.change_queue.push(Reverse((next, page)));
        Ok(())
    }

    /// Reads the sitemap file due first: a conditional GET with the ETag
    /// the store kept, then the next read when the store's schedule says.
    fn read_sitemap(&mut self) -> Result<(), SimError> {
        let Some(Reverse((at, file))) = self.read_queue.pop() else {
            return Ok(());
        };
        let url = self.world.sitemaps[file as usize].url.clone();
        let known = self.store.sitemap(&url)?.and_then(|s| s.etag);
        let etag = self.publisher.generate(file, at);
        let mut session = self.store.ingest(Timestamp::from_unix(at));
        self.reads += 1;
        if known.as_deref() == Some(etag.as_str()) {
            self.not_modified += 1;
            session.sitemap_fetched(
                &url,
                &SitemapFetch {
                    status: 304,
                    etag: Some(etag),
                    ..SitemapFetch::default()
                },
            )?;
        } else {
            let mut n = 0u64;
            self.publisher
                .entries::<SimError>(&mut self.world, file, at, |e| {
                    n += 1;
                    session.entry(&url, e).map_err(SimError::from)
                })?;
            self.ingested += n;
            session.sitemap_fetched(
                &url,
                &SitemapFetch {
                    status: 200,
                    complete: true,
                    etag: Some(etag),
                    ..SitemapFetch::default()
                },
            )?;
        }
        session.finish()?;
        let next = self
            .store
            .refresh_state(&url)?
            .map_or(at + 86_400, |s| s.next_at.unix())
            .max(at + 1);
        if next < self.end {
            self.read_queue.push(Reverse((next, file)));
        }
        Ok(())
    }

    fn fetch(&mut self, url: &str, at: i64) -> Result<(), SimError> {
        let page = page_id(url)
            .filter(|&p| (p as usize) < self.world.pages.len())
            .ok_or_else(|| SimError::UnknownUrl(url.to_string()))?;
        let host = self.world.pages[page as usize].host;
        let outcome = match self.tracker.fetched(page, host, at) {
            Found::First | Found::Changed => Outcome::Changed,
            Found::Unchanged => Outcome::NotModified,
        };
        let done = self
            .store
            .complete(url, &Completion::from(outcome), Timestamp::from_unix(at));
        match (&mut self.oracle, done) {
            // The oracle knows pages before any sitemap lists them.
            (Some(oracle), Err(StoreError::UnknownUrl(_))) => oracle.fetched(page),
            (Some(oracle), Ok(())) => oracle.fetched(page),
            (_, result) => result?,
        }
        Ok(())
    }

    /// Tells the oracle, if it is the policy, that `page`'s copy is stale
    /// from `at` (it appeared or changed).
    fn oracle_stale(&mut self, page: u32, at: i64) {
        if let Some(o) = &mut self.oracle {
            o.stale(page, at);
        }
    }

    /// Share of changes host `host`'s lastmod reflects.
    fn recall(&self, host: u32) -> f64 {
        self.publisher.host(host).map_or(0.0, |h| h.recall)
    }

    fn finish(&mut self) -> Result<Summary, SimError> {
        self.advance(self.end)?;
        let mut summary = self.tracker.summary(self.end);
        let mut histories = Vec::new();
        for item in self.store.export() {
            let view = item?;
            let Some(page) = page_id(&view.url).and_then(|p| self.world.pages.get(p as usize))
            else {
                continue;
            };
            histories.push((page.lambda, view.visits));
        }
        summary.estimators = estimator_stats(&histories);
        let mut trusted = 0u32;
        for h in 0..self.world.hosts {
            trusted += u32::from(self.store.host(&host_key(h))?.lastmod_trusted);
        }
        summary.trusted_hosts = f64::from(trusted) / f64::from(self.world.hosts.max(1));
        summary.sitemap_reads = self.reads;
        summary.sitemap_not_modified = self.not_modified;
        summary.ingested_entries = self.ingested;
        Ok(summary)
    }
}
