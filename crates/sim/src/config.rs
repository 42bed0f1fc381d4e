//! What a simulation run is made of: the world, the sitemaps its hosts
//! publish, the crawler's budget, and how long it runs. Every field has a
//! default (`Default`, and `#[serde(default)]` for configuration files);
//! [`SimConfig::validate`] says what is out of range.

use serde::{Deserialize, Serialize};

use sitemapd_scheduler::estimate::Estimator;
use sitemapd_scheduler::policy::BuiltinPolicy;

/// Seconds in a day.
pub(crate) const DAY: f64 = 86_400.0;

/// One simulation: world, sitemaps, crawl, duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Simulated days.
    pub days: f64,
    /// Days at the start left out of the summary's time averages (the first
    /// crawl of every page); default a quarter of the run.
    pub warmup_days: Option<f64>,
    /// Length of one row of the time series, hours.
    pub sample_hours: f64,
    /// The pages, their hosts and how they change.
    pub world: WorldConfig,
    /// What the hosts' sitemaps say.
    pub sitemap: SitemapConfig,
    /// The crawler: budget, politeness, estimator, clock.
    pub crawl: CrawlConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            days: 30.0,
            warmup_days: None,
            sample_hours: 6.0,
            world: WorldConfig::default(),
            sitemap: SitemapConfig::default(),
            crawl: CrawlConfig::default(),
        }
    }
}

/// How pages change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Process {
    /// Poisson changes at rate λ (the estimators' model).
    Poisson,
    /// Exactly every 1/λ, from a random phase (a stress case: no memoryless
    /// gaps).
    Periodic,
    /// Bursts of changes (mean [`WorldConfig::burst_size`], minutes apart)
    /// arriving as a Poisson process; the long-run rate is still λ.
    Bursty,
}

/// The simulated web.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct WorldConfig {
    /// Pages at the start.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().pages))]
    pub pages: u32,
    /// Hosts (at most `pages`); pages per host are heavy-tailed.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().hosts))]
    pub hosts: u32,
    /// Pages that appear during the run, as a share of `pages` (born at
    /// uniformly random times; they measure discovery latency).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().new_pages))]
    pub new_pages: f64,
    /// Median change rate of the log-normal prior, changes per day.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().rate_median_per_day))]
    pub rate_median_per_day: f64,
    /// σ of ln λ (0: every page changes at the median rate).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().rate_sigma))]
    pub rate_sigma: f64,
    /// Change rates are clamped to this range, changes per day.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().rate_min_per_day))]
    pub rate_min_per_day: f64,
    /// See `rate_min_per_day`.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().rate_max_per_day))]
    pub rate_max_per_day: f64,
    /// Zipf exponent of importance over a random ranking of the pages
    /// (0: all equal); importance is normalised to mean 1.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().importance_zipf))]
    pub importance_zipf: f64,
    /// Pareto shape of host sizes (smaller: heavier tail).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().host_size_alpha))]
    pub host_size_alpha: f64,
    /// The change process.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = WorldConfig::default().process))]
    pub process: Process,
    /// Mean changes per burst (`bursty`).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().burst_size))]
    pub burst_size: f64,
    /// Mean gap between the changes of one burst, minutes (`bursty`).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = WorldConfig::default().burst_gap_minutes))]
    pub burst_gap_minutes: f64,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            pages: 10_000,
            hosts: 100,
            new_pages: 0.1,
            rate_median_per_day: 0.1,
            rate_sigma: 1.0,
            rate_min_per_day: 1e-3,
            rate_max_per_day: 24.0,
            importance_zipf: 1.0,
            host_size_alpha: 1.2,
            process: Process::Poisson,
            burst_size: 5.0,
            burst_gap_minutes: 10.0,
        }
    }
}

/// How precisely the sitemaps write lastmod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum LastmodPrecision {
    /// No lastmod at all.
    None,
    /// `YYYY-MM-DD`: the day of the change.
    Day,
    /// To the second.
    Second,
}

/// What each host's sitemaps publish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct SitemapConfig {
    /// lastmod precision (`none` publishes no lastmod).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = SitemapConfig::default().lastmod))]
    pub lastmod: LastmodPrecision,
    /// Share of changes the lastmod reflects (the others leave it as it was).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = SitemapConfig::default().recall))]
    pub recall: f64,
    /// Hours between a change (or a new page) and the sitemap showing it.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = SitemapConfig::default().delay_hours))]
    pub delay_hours: f64,
    /// lastmod is the sitemap's generation time for every entry (Bing: the
    /// commonest wrong lastmod), whatever the pages did.
    #[cfg_attr(feature = "clap", arg(long))]
    pub liar: bool,
    /// Publish changefreq (the category nearest the true rate) and priority
    /// (the importance decile).
    #[cfg_attr(feature = "clap", arg(long, action = clap::ArgAction::Set, default_value_t = SitemapConfig::default().hints))]
    pub hints: bool,
    /// URLs per sitemap file; a host's pages fill its files in order. Every
    /// read of a changed file ingests all of it, so the simulation's cost
    /// grows with this times the change rate.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = SitemapConfig::default().urls_per_sitemap))]
    pub urls_per_sitemap: u32,
    /// The store's shortest sitemap refresh interval, hours (the store's
    /// own default is 15 minutes; an hour keeps the re-reads of busy files
    /// affordable).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = SitemapConfig::default().min_refresh_hours))]
    pub min_refresh_hours: f64,
    /// Share of hosts whose sitemaps are noisy instead: lastmod reflects 70 % of the
    /// changes, 6 hours late.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub noisy_hosts: f64,
    /// Share of hosts whose sitemaps lie instead: every lastmod is the generation time.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub liar_hosts: f64,
    /// Share of hosts whose sitemaps are silent instead: no lastmod at all.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub silent_hosts: f64,
    /// From this day of the run on, every host lies (generation-time lastmods): the
    /// turncoat's switch.
    #[cfg_attr(feature = "clap", arg(long))]
    pub liar_from_day: Option<f64>,
}

/// What one host's sitemaps do with lastmod: [`SitemapConfig`]'s fields, or
/// a kind of its host mix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct HostSitemaps {
    /// lastmod precision.
    pub precision: LastmodPrecision,
    /// Share of changes its lastmod reflects.
    pub recall: f64,
    /// Seconds before a change shows.
    pub delay_secs: i64,
    /// It lies (generation-time lastmods) from this many seconds into the
    /// run on (`Some(0)`: always).
    pub liar_from_secs: Option<i64>,
}

impl SitemapConfig {
    /// What each of `hosts` hosts publishes, by host. The mix's kinds go to
    /// hosts in an order shuffled by `seed` (not by size): noisy first,
    /// then liars, then silent, the rest as the fields say.
    pub(crate) fn hosts(&self, hosts: u32, seed: u64) -> Vec<HostSitemaps> {
        let base = HostSitemaps {
            precision: self.lastmod,
            recall: self.recall,
            delay_secs: (self.delay_hours * 3600.0).round() as i64,
            liar_from_secs: self.liar.then_some(0),
        };
        let mut out = vec![base; hosts as usize];
        // A seeded shuffle of the hosts; a host's place in it picks its kind.
        let mut order: Vec<u32> = (0..hosts).collect();
        order.sort_by_key(|&h| (mix(seed, u64::from(h)), h));
        let noisy = self.noisy_hosts;
        let liar = noisy + self.liar_hosts;
        let silent = liar + self.silent_hosts;
        let turncoat_from = self.liar_from_day.map(|day| (day * DAY).round() as i64);
        for (rank, h) in order.into_iter().enumerate() {
            let Some(kind) = out.get_mut(h as usize) else {
                continue;
            };
            let share = rank as f64 / f64::from(hosts.max(1));
            if share < noisy {
                kind.recall = NOISY_RECALL;
                kind.delay_secs = NOISY_DELAY_SECS;
            } else if share < liar {
                kind.liar_from_secs = Some(0);
            } else if share < silent {
                kind.precision = LastmodPrecision::None;
            }
            if let Some(from) = turncoat_from {
                kind.liar_from_secs = Some(kind.liar_from_secs.map_or(from, |t| t.min(from)));
            }
        }
        out
    }
}

/// A noisy host's lastmod reflects this share of the changes…
pub(crate) const NOISY_RECALL: f64 = 0.7;
/// …this late.
pub(crate) const NOISY_DELAY_SECS: i64 = 6 * 3600;

fn mix(seed: u64, stream: u64) -> u64 {
    crate::seed::mix(seed ^ 0x5ca1_ab1e, stream)
}

/// A named world of sitemaps (`sitemapd simulate --scenario NAME`): what
/// lastmod says, host by host. Budget, size and seeds stay settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Every lastmod true, to the second.
    Truthful,
    /// Every lastmod true, to the day.
    DayPrecision,
    /// lastmod reflects 70 % of the changes, 6 hours late.
    Noisy,
    /// Every lastmod is the sitemap's generation time.
    Liar,
    /// No lastmod at all.
    Silent,
    /// Hosts split: 50 % truthful, 20 % noisy, 15 % liars, 15 % silent.
    Mixed,
    /// Truthful for the first third of the run, liars after.
    Turncoat,
}

impl Scenario {
    /// Every scenario, in documentation order.
    pub const ALL: [Scenario; 7] = [
        Scenario::Truthful,
        Scenario::DayPrecision,
        Scenario::Noisy,
        Scenario::Liar,
        Scenario::Silent,
        Scenario::Mixed,
        Scenario::Turncoat,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Truthful => "truthful",
            Scenario::DayPrecision => "day-precision",
            Scenario::Noisy => "noisy",
            Scenario::Liar => "liar",
            Scenario::Silent => "silent",
            Scenario::Mixed => "mixed",
            Scenario::Turncoat => "turncoat",
        }
    }

    /// Sets what the sitemaps say in `cfg` (lastmod, recall, delay, liar,
    /// the host mix); nothing else.
    pub fn apply(self, cfg: &mut SimConfig) {
        let s = &mut cfg.sitemap;
        s.lastmod = LastmodPrecision::Second;
        s.recall = 1.0;
        s.delay_hours = 0.0;
        s.liar = false;
        s.noisy_hosts = 0.0;
        s.liar_hosts = 0.0;
        s.silent_hosts = 0.0;
        s.liar_from_day = None;
        match self {
            Scenario::Truthful => {}
            Scenario::DayPrecision => s.lastmod = LastmodPrecision::Day,
            Scenario::Noisy => s.noisy_hosts = 1.0,
            Scenario::Liar => s.liar = true,
            Scenario::Silent => s.lastmod = LastmodPrecision::None,
            Scenario::Mixed => {
                s.noisy_hosts = 0.2;
                s.liar_hosts = 0.15;
                s.silent_hosts = 0.15;
            }
            Scenario::Turncoat => s.liar_from_day = Some(cfg.days / 3.0),
        }
    }
}

impl Default for SitemapConfig {
    fn default() -> Self {
        SitemapConfig {
            lastmod: LastmodPrecision::Second,
            recall: 1.0,
            delay_hours: 0.0,
            liar: false,
            hints: true,
            urls_per_sitemap: 50,
            min_refresh_hours: 1.0,
            noisy_hosts: 0.0,
            liar_hosts: 0.0,
            silent_hosts: 0.0,
            liar_from_day: None,
        }
    }
}

/// The crawler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct CrawlConfig {
    /// Fetches per day, all hosts together.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = CrawlConfig::default().budget))]
    pub budget: f64,
    /// Fetches per day one host allows at most (the store's politeness
    /// delay is set to a day divided by it); absent: no limit.
    #[cfg_attr(feature = "clap", arg(long))]
    pub host_budget: Option<f64>,
    /// Seconds between two leases (the crawler's clock tick); a URL due
    /// within a tick waits for the next one.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = CrawlConfig::default().tick_secs))]
    pub tick_secs: u32,
    /// The estimator the store feeds its policies.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = CrawlConfig::default().estimator))]
    pub estimator: Estimator,
    /// `fixed`'s interval (and uncalibrated `uniform`'s), days.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = CrawlConfig::default().fixed_interval_days))]
    pub fixed_interval_days: f64,
    /// `lastmod`'s fallback policy.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = CrawlConfig::default().fallback))]
    pub fallback: BuiltinPolicy,
    /// Hours between two calibrations of the rate policies.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = CrawlConfig::default().calibrate_hours))]
    pub calibrate_hours: f64,
    /// Hours of budget a crawler may carry over when a lease gives fewer URLs than it
    /// could take (nothing due, or hosts at their politeness limit).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = CrawlConfig::default().carry_hours))]
    pub carry_hours: f64,
    /// Crawl on change (policy lastmod): a URL of a complete host whose lastmod has not
    /// moved is refetched after this many seconds at the latest.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SECS", default_value_t = CrawlConfig::default().safety_interval))]
    pub safety_interval: f64,
    /// Crawl on change: the share of fetches that re-validate complete hosts' unmoved
    /// lastmods (0 to 1).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = CrawlConfig::default().validation_share))]
    pub validation_share: f64,
    /// The share of each lease that changes a trusted host's lastmod announces may take
    /// ahead of new URLs (0 to 1).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = CrawlConfig::default().announced_share))]
    pub announced_share: f64,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            budget: 2_000.0,
            host_budget: None,
            tick_secs: 60,
            estimator: Estimator::BiasReduced,
            fixed_interval_days: 1.0,
            fallback: BuiltinPolicy::Adaptive,
            calibrate_hours: 24.0,
            carry_hours: 6.0,
            safety_interval: sitemapd_scheduler::policy::Params::default().safety_interval,
            validation_share: sitemapd_scheduler::policy::Params::default().validation_share,
            announced_share: sitemapd_scheduler::policy::Params::default().announced_share,
        }
    }
}

/// A configuration value out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid simulation setting `{field}`: {why}")]
pub struct ConfigError {
    /// The setting, as written in a configuration file.
    pub field: &'static str,
    /// What it must be.
    pub why: String,
}

fn check(ok: bool, field: &'static str, why: &str) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError {
            field,
            why: why.to_string(),
        })
    }
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn non_negative(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// Longest run: 100 years (simulated seconds stay far from overflow).
const MAX_DAYS: f64 = 36_500.0;

impl SimConfig {
    /// Checks every setting; the first one out of range is the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let w = &self.world;
        let s = &self.sitemap;
        let c = &self.crawl;
        check(
            positive(self.days) && self.days <= MAX_DAYS,
            "days",
            "a number of days above 0 and at most 36500",
        )?;
        if let Some(warm) = self.warmup_days {
            check(
                non_negative(warm) && warm < self.days,
                "warmup_days",
                "at least 0 and less than `days`",
            )?;
        }
        check(
            positive(self.sample_hours) && self.sample_hours * 3600.0 >= f64::from(c.tick_secs),
            "sample_hours",
            "above 0, and at least one tick long",
        )?;
        check(w.pages >= 1, "pages", "at least 1")?;
        check(
            w.hosts >= 1 && w.hosts <= w.pages,
            "hosts",
            "at least 1 and at most `pages`",
        )?;
        check(
            non_negative(w.new_pages) && w.new_pages <= 10.0,
            "new_pages",
            "a share between 0 and 10",
        )?;
        let total = f64::from(w.pages) * (1.0 + w.new_pages);
        check(
            total <= f64::from(u32::MAX / 2),
            "new_pages",
            "pages × (1 + new_pages) must fit in 2^31",
        )?;
        check(
            positive(w.rate_min_per_day)
                && positive(w.rate_max_per_day)
                && w.rate_min_per_day <= w.rate_max_per_day
                && w.rate_max_per_day <= 86_400.0,
            "rate_min_per_day",
            "0 < rate_min_per_day ≤ rate_max_per_day ≤ 86400",
        )?;
        check(
            positive(w.rate_median_per_day),
            "rate_median_per_day",
            "above 0",
        )?;
        check(
            non_negative(w.rate_sigma) && w.rate_sigma <= 10.0,
            "rate_sigma",
            "between 0 and 10",
        )?;
        check(
            non_negative(w.importance_zipf) && w.importance_zipf <= 10.0,
            "importance_zipf",
            "between 0 and 10",
        )?;
        check(
            positive(w.host_size_alpha) && w.host_size_alpha <= 100.0,
            "host_size_alpha",
            "above 0 (and at most 100)",
        )?;
        check(
            w.burst_size.is_finite() && w.burst_size >= 1.0 && w.burst_size <= 1e6,
            "burst_size",
            "at least 1",
        )?;
        check(
            positive(w.burst_gap_minutes) && w.burst_gap_minutes <= 1e6,
            "burst_gap_minutes",
            "above 0",
        )?;
        check(
            non_negative(s.recall) && s.recall <= 1.0,
            "recall",
            "a share between 0 and 1",
        )?;
        check(
            non_negative(s.delay_hours) && s.delay_hours <= MAX_DAYS * 24.0,
            "delay_hours",
            "at least 0",
        )?;
        check(s.urls_per_sitemap >= 1, "urls_per_sitemap", "at least 1")?;
        for (share, field) in [
            (s.noisy_hosts, "noisy_hosts"),
            (s.liar_hosts, "liar_hosts"),
            (s.silent_hosts, "silent_hosts"),
        ] {
            check(
                non_negative(share) && share <= 1.0,
                field,
                "a share between 0 and 1",
            )?;
        }
        check(
            s.noisy_hosts + s.liar_hosts + s.silent_hosts <= 1.0 + 1e-9,
            "silent_hosts",
            "noisy_hosts + liar_hosts + silent_hosts at most 1",
        )?;
        if let Some(day) = s.liar_from_day {
            check(non_negative(day), "liar_from_day", "at least 0")?;
        }
        check(
            positive(s.min_refresh_hours) && s.min_refresh_hours <= 24.0 * 7.0,
            "min_refresh_hours",
            "above 0 and at most a week (168)",
        )?;
        check(
            positive(c.budget) && c.budget <= 1e9,
            "budget",
            "above 0 (and at most 1e9)",
        )?;
        if let Some(h) = c.host_budget {
            check(
                positive(h) && h <= 86_400.0,
                "host_budget",
                "above 0 and at most 86400 (one a second)",
            )?;
        }
        check(
            c.tick_secs >= 1 && c.tick_secs <= 86_400,
            "tick_secs",
            "between 1 and 86400",
        )?;
        check(
            positive(c.fixed_interval_days) && c.fixed_interval_days <= 3650.0,
            "fixed_interval_days",
            "above 0",
        )?;
        check(
            positive(c.calibrate_hours) && c.calibrate_hours <= MAX_DAYS * 24.0,
            "calibrate_hours",
            "above 0",
        )?;
        check(
            non_negative(c.carry_hours) && c.carry_hours <= 24.0 * 30.0,
            "carry_hours",
            "between 0 and 720",
        )?;
        check(
            positive(c.safety_interval) && c.safety_interval <= MAX_DAYS * DAY,
            "safety_interval",
            "seconds above 0",
        )?;
        check(
            non_negative(c.validation_share) && c.validation_share <= 1.0,
            "validation_share",
            "a share between 0 and 1",
        )?;
        check(
            non_negative(c.announced_share) && c.announced_share <= 1.0,
            "announced_share",
            "a share between 0 and 1",
        )?;
        Ok(())
    }

    /// The warm-up in days: `warmup_days`, or a quarter of the run.
    pub fn warmup(&self) -> f64 {
        self.warmup_days.unwrap_or(self.days / 4.0)
    }

    /// The estimator of [`CrawlConfig::estimator`].
    pub fn estimator(&self) -> Estimator {
        self.crawl.estimator
    }
}

#[cfg(test)]
mod mix_tests {
    use super::*;

    #[test]
    fn a_scenario_splits_the_hosts_as_it_says() {
        let mut cfg = SimConfig::default();
        Scenario::Mixed.apply(&mut cfg);
        let hosts = cfg.sitemap.hosts(100, 7);
        let count = |f: &dyn Fn(&HostSitemaps) -> bool| hosts.iter().filter(|h| f(h)).count();
        assert_eq!(count(&|h| h.recall == NOISY_RECALL), 20);
        assert_eq!(count(&|h| h.liar_from_secs == Some(0)), 15);
        assert_eq!(count(&|h| h.precision == LastmodPrecision::None), 15);
        assert_eq!(
            count(&|h| h.recall == 1.0
                && h.liar_from_secs.is_none()
                && h.precision == LastmodPrecision::Second),
            50
        );
        // Not by host size: the kinds are spread over the host numbers.
        assert!(hosts[..50].iter().any(|h| h.recall == NOISY_RECALL));
        assert!(hosts[50..].iter().any(|h| h.recall == NOISY_RECALL));
        // Another seed, another split; the same seed, the same one.
        assert_eq!(hosts, cfg.sitemap.hosts(100, 7));
        assert_ne!(hosts, cfg.sitemap.hosts(100, 8));

        Scenario::Turncoat.apply(&mut cfg);
        let switch = (cfg.days / 3.0 * DAY).round() as i64;
        assert!(
            cfg.sitemap
                .hosts(100, 7)
                .iter()
                .all(|h| h.liar_from_secs == Some(switch) && h.recall == 1.0)
        );
    }
}
