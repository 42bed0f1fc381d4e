//! Crawl policies: when is a URL next due, and why
//! (docs/scheduling.md#the-policies).
//!
//! | name | rule | source |
//! |---|---|---|
//! | `fixed` | last fetch + I | Nutch DefaultFetchSchedule, StormCrawler DefaultScheduler |
//! | `sitemap-hints` | I from changefreq, ordered by priority | Nutch SitemapProcessor (NUTCH-2976) |
//! | `lastmod` | due when a trusted lastmod is newer than the last fetch, else a fallback | Google 2023, Bing 2023/2025 guidance |
//! | `adaptive` | changed: I ← I(1 − d), unchanged: I ← I(1 + i) | Nutch AdaptiveFetchSchedule, StormCrawler AdaptiveScheduler |
//! | `uniform` | f = B/N for every page | Cho & Garcia-Molina, ACM TODS 28(4), 2003 |
//! | `proportional` | f_i = λ̂_i·B/Σλ̂ | same paper (the baseline uniform beats) |
//! | `freshness-optimal` | Lagrange-optimal refresh rates for freshness | Cho & Garcia-Molina, "Effective page refresh policies for Web crawlers", ACM TODS 28(4), 2003 |
//! | `lambda-crawl` | Lagrange-optimal rates for harmonic staleness | Kolobov, Peres, Lu, Horvitz, "Staying up to date with online content changes using reinforcement learning for scheduling", NeurIPS 2019 |
//!
//! Every policy is pure: [`Policy::next_due`] maps what the store knows of a
//! URL and its host to a [`Due`] (instant, score, reason).
//!
//! ## Rules every policy shares (checked in this order)
//! 1. The last attempt failed ([`FetchOutcome::Error`]): retry at the last
//!    attempt + `retry_after_error · 2^(errors_in_a_row − 1)`, at most
//!    `max_interval` ([`Reason::Retry`]). The base is
//!    [`UrlState::last_attempt`], else `last_fetch`, else `first_seen`.
//!    A redirect that has not retired the URL ([`FetchOutcome::Redirected`]:
//!    a temporary one, or a permanent one seen once) backs off the same way:
//!    it never makes the URL due at once.
//! 2. The URL is retired by its fetches ([`FetchOutcome::Gone`]: the store
//!    says so after a 410, repeated 404s or repeated permanent redirects):
//!    a revival probe `probe_interval` after the last attempt
//!    ([`Reason::Probe`], score 0).
//! 3. Never fetched: due at `first_seen` ([`Reason::New`]).
//! 4. Otherwise the policy's own rule.
//!
//! ## Discretiser
//! Rate-based policies turn a rate ρ into `next_due = last_fetch + 1/ρ`, the
//! interval clamped to `[min_interval, max_interval]` (ρ = 0 → max). There is
//! no jitter here: the policy sees no URL to derive it from, and
//! `first_seen` is shared by every URL of one sitemap read, so it would not
//! spread anything. The queue, which knows the URL, should add a
//! deterministic ±5% jitter from a hash of it.
//!
//! ## Rate policies (`freshness-optimal`, `lambda-crawl`, `uniform`, `proportional`)
//! They plan with λ̂ = [`UrlState::rate`] when it is a number ≥ 0, else the
//! changefreq prior 1/[`changefreq_interval`], else 1/`initial_interval`,
//! floored at 1/`max_interval` (an estimate of 0 after a few unchanged
//! fetches must not park a page for ever). Without a calibration
//! ([`Calibration::multiplier`] not finite or ≤ 0) they refresh at f = λ̂
//! (`uniform`: every `fixed_interval`).
//!
//! ## Scores (higher = more urgent within a due window)
//! - `sitemap-hints`: the effective priority (absent, NaN or ≤ 0 → 0.5,
//!   above 1 → 1; SPEC X10/X11).
//! - `fixed`, `adaptive`, `lastmod`: the importance.
//! - `freshness-optimal`, `lambda-crawl`, `uniform`, `proportional`:
//!   importance × P(the page changed
//!   since the last fetch) = w(1 − e^{−λ̂·(now − last_fetch)}), the expected
//!   freshness a fetch now buys.
//!
//! Importance that is NaN, infinite or negative is taken as 1.0. Scores are
//! always finite and ≥ 0.

use std::fmt;
use std::sync::Arc;

use crate::time::Timestamp;

use sitemapd_parser::ChangeFreq;
use sitemapd_parser::date::Precision;

mod baseline;
mod basic;
mod closed;
mod lastmod;
mod on_change;
mod optimal;
mod summary;

pub use baseline::{Proportional, Uniform, proportional_multiplier, uniform_multiplier};
pub use basic::{Adaptive, Fixed, SitemapHints, changefreq_interval};
pub use closed::{age_fixed, freshness_fixed, harmonic_cost_poisson};
pub use lastmod::{Lastmod, precision_span};
pub use on_change::{every_change_observed, lastmod_is_newer, lastmod_says_changed};
pub use optimal::{
    FreshnessOptimal, LambdaCrawl, lambda_crawl_multiplier, lambda_crawl_on_change_level,
    lambda_crawl_on_change_probability, lambda_crawl_rate, optimal_multiplier, optimal_rate,
    planning_rate,
};
pub use summary::{PageSummary, SUMMARY_CELLS, Weighted, WeightedPage};

/// One hour in seconds.
pub const HOUR: f64 = 3600.0;
/// One day in seconds.
pub const DAY: f64 = 86_400.0;

/// What a policy may know of a URL (the store builds this view from its record).
#[derive(Debug, Clone, PartialEq)]
pub struct UrlState {
    /// When the URL was first seen in a sitemap.
    pub first_seen: Timestamp,
    /// Last successful fetch.
    pub last_fetch: Option<Timestamp>,
    /// Last fetch attempt, successful or not; `None` = same as
    /// `last_fetch`. Retries and gone URLs count from it (without it, a
    /// failure long after the last success would be retried at once, over
    /// and over).
    pub last_attempt: Option<Timestamp>,
    /// Outcome of the last attempt.
    pub last_outcome: Option<FetchOutcome>,
    /// Newest believable sitemap lastmod (the start of its period).
    pub lastmod: Option<Timestamp>,
    /// Precision the lastmod was written with (`None` = to the second).
    pub lastmod_precision: Option<Precision>,
    /// The lastmod replaced an older value, and a sitemap read at this time
    /// still showed the older one: the change it announces came after it.
    /// This is what dates a coarse lastmod's change past a fetch made in
    /// its period (a day's lastmod that moves to the next day at 10:00,
    /// when a read at 06:00 still showed the day before, is a change after
    /// a fetch at 00:05). `None`: the first value seen, or not known.
    pub lastmod_moved_after: Option<Timestamp>,
    /// Sitemap changefreq.
    pub changefreq: Option<ChangeFreq>,
    /// Sitemap priority, as written (absent stays absent, SPEC X10).
    pub priority: Option<f32>,
    /// Current adaptive interval, seconds (state kept by the store).
    pub interval: Option<f64>,
    /// λ̂ from the chosen estimator, changes/s (the store gives
    /// [`crate::estimate::unchanged_rate`] when no fetch found a change).
    pub rate: Option<f64>,
    /// w_i / μ_i, default 1.0.
    pub importance: f64,
    /// Failed attempts since the last success.
    pub errors_in_a_row: u32,
    /// A number in [0, 1) fixed per URL and fetch (the store hashes the URL
    /// and its last fetch), for policies that sample.
    pub sample: f64,
}

impl Default for UrlState {
    fn default() -> Self {
        UrlState {
            first_seen: Timestamp::EPOCH,
            last_fetch: None,
            last_attempt: None,
            last_outcome: None,
            lastmod: None,
            lastmod_precision: None,
            lastmod_moved_after: None,
            changefreq: None,
            priority: None,
            interval: None,
            rate: None,
            importance: 1.0,
            errors_in_a_row: 0,
            sample: 0.0,
        }
    }
}

/// What a fetch attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FetchOutcome {
    /// Content differed from the stored copy.
    Changed,
    /// 304, or the same content.
    NotModified,
    /// Retired by its fetches: gone (410, 404 repeated) or moved for good
    /// (a permanent redirect repeated). A single 404 is an [`Error`](Self::Error).
    Gone,
    /// Network error, 5xx, timeout.
    Error,
    /// Redirected elsewhere (and not retired for it).
    Redirected,
}

impl FetchOutcome {
    /// The name shown to users (`"changed"`, `"not-modified"` …), as
    /// serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            FetchOutcome::Changed => "changed",
            FetchOutcome::NotModified => "not-modified",
            FetchOutcome::Gone => "gone",
            FetchOutcome::Error => "error",
            FetchOutcome::Redirected => "redirected",
        }
    }
}

/// What a policy may know of the URL's host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostState {
    /// The host's lastmods have earned trust: a moved lastmod means a
    /// change ([`crate::trust::LastmodTrust::is_trusted`]).
    pub lastmod_trusted: bool,
    /// Trusted, and its lastmods announce nearly every change: crawl on
    /// change ([`crate::trust::LastmodTrust::is_complete`]).
    pub lastmod_complete: bool,
    /// Not yet judged: too few fetches to earn trust or lose it, no lie
    /// signal ([`crate::trust::LastmodTrust::on_probation`]).
    pub lastmod_probation: bool,
}

/// Why a URL is due: shown to users next to every leased URL (serialised
/// as [`Reason::as_str`] gives it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Reason {
    /// Never fetched.
    New,
    /// A trusted lastmod is newer than the last fetch.
    LastmodNewer,
    /// A fixed interval elapsed.
    Interval,
    /// The changefreq interval elapsed.
    Changefreq,
    /// The adaptive interval elapsed.
    Adaptive,
    /// The optimal refresh interval elapsed.
    Optimal,
    /// The last attempt failed.
    Retry,
    /// A lease ran out without a report (set by the queue, not by policies).
    LeaseExpired,
    /// A push notification said it changed (set by
    /// [`Store::notify`](crate::Store::notify), not by policies).
    Notified,
    /// A sample that re-validates a trusted host's lastmods: its lastmod
    /// has not moved since the last fetch.
    Validation,
    /// A trusted host's URL whose lastmod has not moved, refetched after
    /// the long safety interval.
    Safety,
    /// Handed out by a lease that is still live (shown by views, never a
    /// policy's answer).
    Leased,
    /// A coarse lastmod (a day, say) whose period held the last fetch: the
    /// page may have changed again after it; rechecked when the period is
    /// over.
    LastmodPeriod,
    /// Retired by its fetches (gone, or moved for good): re-checked once
    /// per `probe_interval` in case it answers again.
    Probe,
    /// A URL frontier client put it, due at the date it gave (set by
    /// [`Store::put_known`](crate::Store::put_known), not by policies).
    Requested,
}

/// The urgency classes a lease serves in order; within a class, the URL
/// that has waited longest comes first (the queue order, docs/queue.md).
///
/// New URLs and announced changes are both content the crawler does not
/// have. Served strictly one before the other, a scarce budget spent on the
/// changes of pages already fetched starved the first fetch of new ones
/// (10,000 pages at 500 fetches a day take 20 days to crawl once), and
/// freshness fell below the adaptive schedule's (0.26 against 0.38 in the
/// simulator's truthful world). So a change a trusted host's lastmod
/// announces ([`Urgency::Announced`]) waits its turn among the new URLs,
/// the longest waiting first (its due time is when it changed), unless
/// [`Params::announced_share`] gives such changes a share of each lease
/// ahead of them. A push notification, rare and explicit, comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Urgency {
    /// A push notification said it changed: fetched first.
    Pushed = 0,
    /// A lastmod newer than the last fetch on a host whose lastmods have
    /// earned trust: its share of each lease first, then among
    /// [`Urgency::Changed`].
    Announced = 1,
    /// Content the crawler does not have: a URL never fetched, a newer
    /// lastmod on a host still on probation, a URL frontier client's date.
    Changed = 2,
    /// Refreshed on a schedule: rate-based intervals, retries, the safety
    /// interval, the end of a coarse lastmod's period.
    Refresh = 3,
    /// Samples that keep a trusted host's lastmod trust honest: a lease
    /// gives them their share of the fetches only.
    Validation = 4,
}

impl Urgency {
    /// Every class, in the order of their bytes in the due index.
    pub const ALL: [Urgency; 5] = [
        Urgency::Pushed,
        Urgency::Announced,
        Urgency::Changed,
        Urgency::Refresh,
        Urgency::Validation,
    ];
}

impl Reason {
    /// The name shown to users (`"new"`, `"lastmod-newer"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::New => "new",
            Reason::LastmodNewer => "lastmod-newer",
            Reason::Interval => "interval",
            Reason::Changefreq => "changefreq",
            Reason::Adaptive => "adaptive",
            Reason::Optimal => "optimal",
            Reason::Retry => "retry",
            Reason::LeaseExpired => "lease-expired",
            Reason::Notified => "notified",
            Reason::Validation => "validation",
            Reason::Safety => "safety",
            Reason::Leased => "leased",
            Reason::LastmodPeriod => "lastmod-period",
            Reason::Probe => "probe",
            Reason::Requested => "requested",
        }
    }

    /// The urgency class of a URL due for this reason. A lease that ran
    /// out keeps the class it was leased in (the store keeps that reason);
    /// [`Reason::LeaseExpired`] itself counts as a refresh. A newer lastmod
    /// is [`Urgency::Changed`] here; the store puts it in
    /// [`Urgency::Announced`] when its host's lastmods have earned trust.
    pub fn urgency(self) -> Urgency {
        match self {
            Reason::Notified => Urgency::Pushed,
            Reason::LastmodNewer | Reason::New | Reason::Requested => Urgency::Changed,
            Reason::Validation => Urgency::Validation,
            _ => Urgency::Refresh,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a URL is due, how urgent it is among URLs due then, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Due {
    /// Unix seconds.
    pub at: Timestamp,
    /// Higher = more urgent; finite, ≥ 0.
    pub score: f64,
    /// Why.
    pub reason: Reason,
}

/// Allocation constants computed over the whole store (for the rate
/// policies: freshness-optimal, lambda-crawl, uniform, proportional).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Calibration {
    /// The Lagrange multiplier: μ of [`optimal_multiplier`] for
    /// `freshness-optimal`, λ of [`lambda_crawl_multiplier`] for
    /// `lambda-crawl`; the rate B/N of [`uniform_multiplier`] for `uniform`;
    /// c = B/Σλ̂ of [`proportional_multiplier`] for `proportional`. Not finite
    /// or ≤ 0 = not calibrated (the policies then refresh each page at its
    /// own change rate; `uniform` every `fixed_interval`).
    pub multiplier: f64,
    /// Crawl on change (`lambda-crawl`): the level c of
    /// [`lambda_crawl_on_change_level`] for the pages whose every change is
    /// observed (a complete host, lastmods to the second): each change of
    /// page i is crawled with probability min(1, c μ_i/Δ_i); `f64::MAX`:
    /// every change. Not finite or ≤ 0: not calibrated (each change is
    /// crawled with probability ρ_i/Δ_i, the rate its allocation gives it).
    pub on_change_level: f64,
}

/// Policy parameters (seconds for intervals).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// `fixed` interval (1 day).
    pub fixed_interval: f64,
    /// Shortest interval any policy schedules (1 hour).
    pub min_interval: f64,
    /// Longest interval any policy schedules (365 days).
    pub max_interval: f64,
    /// Adaptive increase factor i on an unchanged fetch (0.4, Nutch).
    pub adaptive_inc: f64,
    /// Adaptive decrease factor d on a changed fetch (0.2, Nutch).
    pub adaptive_dec: f64,
    /// Adaptive interval before any fetch (1 day); also the prior change
    /// interval of rate policies without a λ̂ or changefreq.
    pub initial_interval: f64,
    /// First retry delay after an error (1 hour), doubling per error in a
    /// row, capped at `max_interval`.
    pub retry_after_error: f64,
    /// Fetches per second for the whole store (the rate policies calibrate
    /// against it; 1.0).
    pub budget: f64,
    /// `lastmod`'s fallback policy name (`"adaptive"`).
    pub fallback: String,
    /// Crawl on change: a URL of a complete host whose lastmod has not
    /// moved is refetched after this long at the latest (30 days).
    pub safety_interval: f64,
    /// Crawl on change: the share of fetches that re-validate complete
    /// hosts' unmoved lastmods (0.03); the share of such URLs the policy
    /// makes validation samples, and what a lease gives them.
    pub validation_share: f64,
    /// The share of fetches that changes a trusted host's lastmod
    /// announces get ahead of new URLs ([`Urgency::Announced`]); beyond
    /// it they wait their turn among them. 1: always first; 0 (the
    /// default): never ahead of an older new URL. On a scarce budget a
    /// share costs freshness (the simulator's truthful world at 500
    /// fetches a day: 0.385 with none, 0.378 with a quarter): it is for a
    /// crawler that values seeing announced changes soon over covering
    /// new pages.
    pub announced_share: f64,
    /// A URL retired by its fetches (gone, moved) is probed this long after
    /// its last attempt, in case it answers again (30 days).
    pub probe_interval: f64,
    /// Store-wide allocation constants.
    pub calibration: Calibration,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            fixed_interval: DAY,
            min_interval: HOUR,
            max_interval: 365.0 * DAY,
            adaptive_inc: 0.4,
            adaptive_dec: 0.2,
            initial_interval: DAY,
            retry_after_error: HOUR,
            budget: 1.0,
            fallback: "adaptive".to_owned(),
            safety_interval: 30.0 * DAY,
            validation_share: 0.03,
            announced_share: 0.0,
            probe_interval: 30.0 * DAY,
            calibration: Calibration::default(),
        }
    }
}

impl Params {
    /// `(min_interval, max_interval)` made usable: min positive and finite
    /// (else 1 s), max ≥ min and finite (else 365 days, or min if larger).
    pub fn bounds(&self) -> (f64, f64) {
        let min = if self.min_interval.is_finite() && self.min_interval > 0.0 {
            self.min_interval
        } else {
            1.0
        };
        let max = if self.max_interval.is_finite() && self.max_interval > 0.0 {
            self.max_interval
        } else {
            365.0 * DAY
        };
        (min, max.max(min))
    }

    /// `probe_interval` made usable: positive and finite, else 30 days.
    pub fn probe_interval(&self) -> f64 {
        if self.probe_interval.is_finite() && self.probe_interval > 0.0 {
            self.probe_interval
        } else {
            30.0 * DAY
        }
    }

    /// `secs` clamped to the bounds; NaN → the max (no evidence, wait long).
    pub fn clamp_interval(&self, secs: f64) -> f64 {
        let (min, max) = self.bounds();
        if secs.is_nan() {
            max
        } else {
            secs.clamp(min, max)
        }
    }

    /// `1/rate` clamped to the bounds (the discretiser); rate 0, negative or
    /// NaN → the max.
    pub fn interval_for_rate(&self, rate: f64) -> f64 {
        if rate.is_nan() || rate <= 0.0 {
            return self.bounds().1;
        }
        self.clamp_interval(1.0 / rate)
    }
}

/// A crawl policy.
pub trait Policy: Send + Sync + fmt::Debug {
    /// Its name (one of [`POLICY_NAMES`]).
    fn name(&self) -> &'static str;
    /// When `url` is next due, at `now`. Pure.
    fn next_due(&self, url: &UrlState, host: &HostState, now: Timestamp) -> Due;
    /// The adaptive interval after a fetch outcome (only `adaptive`, also as
    /// `lastmod`'s fallback, changes it; default: unchanged).
    fn next_interval(&self, url: &UrlState, _outcome: FetchOutcome) -> Option<f64> {
        url.interval
    }
    /// The adaptive interval after a fetch that found a change the host's
    /// trusted lastmod had announced (default: [`Policy::next_interval`]).
    /// `lastmod` keeps the interval: its fallback's schedule is there for
    /// the changes lastmod does not announce, and learning from the ones
    /// it does would refetch those pages soon after for nothing.
    fn next_interval_announced(&self, url: &UrlState, outcome: FetchOutcome) -> Option<f64> {
        self.next_interval(url, outcome)
    }
    /// For a policy that allocates a budget over the whole store: its
    /// allocation multiplier for `pages` (planning rate, importance, and
    /// how many pages have them: a [`PageSummary`] of every active URL)
    /// and the budget `params.budget`, which
    /// [`Store::calibrate`](crate::Store::calibrate) saves and hands back to
    /// the policy's builder as [`Calibration::multiplier`]. `None` (the
    /// default): the policy has nothing to calibrate. The store asks with no
    /// pages first, so a policy that calibrates answers `Some` for those too.
    fn allocation_multiplier(&self, _pages: &[WeightedPage], _params: &Params) -> Option<f64> {
        None
    }
    /// For a policy that crawls pages whose every change is observed on
    /// change, with a probability from its allocation: the
    /// [`Calibration::on_change_level`] for `complete` (planning rate,
    /// importance, count) of those pages at the store-wide `multiplier`. `None`
    /// (the default): it does not.
    fn on_change_level(&self, _complete: &[WeightedPage], _multiplier: f64) -> Option<f64> {
        None
    }
}

/// The policies this crate ships, each selectable by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum BuiltinPolicy {
    /// A fixed interval.
    Fixed,
    /// The sitemap's changefreq, ordered by priority.
    SitemapHints,
    /// Trusted lastmods first, a fallback policy otherwise.
    Lastmod,
    /// The interval shrinks on change and grows without one.
    Adaptive,
    /// Cho & Garcia-Molina's freshness-optimal allocation.
    FreshnessOptimal,
    /// Kolobov et al.'s harmonic-staleness allocation.
    LambdaCrawl,
    /// The budget spread evenly.
    Uniform,
    /// The budget in proportion to the change rate.
    Proportional,
}

impl BuiltinPolicy {
    /// Every built-in policy, in documentation order.
    pub const ALL: [BuiltinPolicy; 8] = [
        BuiltinPolicy::Fixed,
        BuiltinPolicy::SitemapHints,
        BuiltinPolicy::Lastmod,
        BuiltinPolicy::Adaptive,
        BuiltinPolicy::FreshnessOptimal,
        BuiltinPolicy::LambdaCrawl,
        BuiltinPolicy::Uniform,
        BuiltinPolicy::Proportional,
    ];

    /// The name used in configuration, the store and output.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinPolicy::Fixed => "fixed",
            BuiltinPolicy::SitemapHints => "sitemap-hints",
            BuiltinPolicy::Lastmod => "lastmod",
            BuiltinPolicy::Adaptive => "adaptive",
            BuiltinPolicy::FreshnessOptimal => "freshness-optimal",
            BuiltinPolicy::LambdaCrawl => "lambda-crawl",
            BuiltinPolicy::Uniform => "uniform",
            BuiltinPolicy::Proportional => "proportional",
        }
    }

    /// The policy called `name` (exactly as [`BuiltinPolicy::name`] gives it).
    pub fn from_name(name: &str) -> Option<BuiltinPolicy> {
        BuiltinPolicy::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for BuiltinPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every policy name [`policy`] accepts (the names of [`BuiltinPolicy::ALL`]).
pub const POLICY_NAMES: [&str; 8] = [
    "fixed",
    "sitemap-hints",
    "lastmod",
    "adaptive",
    "freshness-optimal",
    "lambda-crawl",
    "uniform",
    "proportional",
];

/// A policy name [`policy`] cannot build.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnknownPolicy {
    /// No policy has this name.
    Name(String),
    /// `lastmod` was told to fall back to this (itself, or an unknown name).
    Fallback(String),
}

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownPolicy::Name(n) => write!(
                f,
                "unknown policy `{n}` (known: {})",
                POLICY_NAMES.join(", ")
            ),
            UnknownPolicy::Fallback(n) => write!(
                f,
                "`lastmod` cannot fall back to `{n}` (use one of: {})",
                POLICY_NAMES
                    .iter()
                    .filter(|p| **p != "lastmod")
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl std::error::Error for UnknownPolicy {}

/// Builds a policy from its parameters (for [`PolicyRegistry::register`]).
pub type PolicyBuilder = Arc<dyn Fn(Params) -> Box<dyn Policy> + Send + Sync>;

/// The policies a store can schedule with, by name: the built-in ones
/// ([`BuiltinPolicy`]) and any an embedder registers. A store is opened
/// with one ([`StoreOptions::policies`](crate::StoreOptions::policies)) and
/// builds its policy from it by name, at open and after
/// [`Store::calibrate`](crate::Store::calibrate).
///
/// ```
/// use std::sync::Arc;
/// use sitemapd_scheduler::Timestamp;
/// use sitemapd_scheduler::policy::{Due, Fixed, HostState, Params, Policy, PolicyRegistry, UrlState};
///
/// /// Everything due an hour after it was last fetched, at twice the
/// /// built-in `fixed` score.
/// #[derive(Debug)]
/// struct Hourly(Fixed);
///
/// impl Policy for Hourly {
///     fn name(&self) -> &'static str {
///         "hourly"
///     }
///     fn next_due(&self, url: &UrlState, host: &HostState, now: Timestamp) -> Due {
///         let mut due = self.0.next_due(url, host, now);
///         due.score *= 2.0;
///         due
///     }
/// }
///
/// let mut policies = PolicyRegistry::default();
/// policies.register("hourly", |mut params: Params| {
///     params.fixed_interval = 3600.0;
///     Box::new(Hourly(Fixed::new(params))) as Box<dyn Policy>
/// });
/// assert_eq!(policies.build("hourly", Params::default()).unwrap().name(), "hourly");
/// assert!(policies.build("adaptive", Params::default()).is_ok());
/// assert!(policies.build("nope", Params::default()).is_err());
/// ```
#[derive(Clone, Default)]
pub struct PolicyRegistry {
    custom: Vec<(String, PolicyBuilder)>,
}

impl fmt::Debug for PolicyRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl PolicyRegistry {
    /// Adds (or replaces) the policy called `name`. A built-in name cannot
    /// be replaced: the built-in one is always what it names.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        build: impl Fn(Params) -> Box<dyn Policy> + Send + Sync + 'static,
    ) {
        let name = name.into();
        self.custom.retain(|(n, _)| *n != name);
        self.custom.push((name, Arc::new(build)));
    }

    /// Every name it can build: the built-in ones, then the registered ones.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        POLICY_NAMES
            .iter()
            .copied()
            .chain(self.custom.iter().map(|(n, _)| n.as_str()))
    }

    /// The policy called `name`, with `params`. `lastmod` builds its
    /// fallback (`params.fallback`, any other name this registry knows) the
    /// same way.
    pub fn build(&self, name: &str, params: Params) -> Result<Box<dyn Policy>, UnknownPolicy> {
        if name == "lastmod" {
            let fallback_name = params.fallback.clone();
            if fallback_name == "lastmod" {
                return Err(UnknownPolicy::Fallback(fallback_name));
            }
            let fallback = self
                .build(&fallback_name, params.clone())
                .map_err(|_| UnknownPolicy::Fallback(fallback_name))?;
            return Ok(Box::new(Lastmod::new(params, fallback)));
        }
        if BuiltinPolicy::from_name(name).is_some() {
            return policy(name, params);
        }
        match self.custom.iter().find(|(n, _)| n == name) {
            Some((_, build)) => Ok(build(params)),
            None => Err(UnknownPolicy::Name(name.to_owned())),
        }
    }
}

/// The built-in policy called `name`. `lastmod` builds its fallback from
/// `params.fallback`, which must name another built-in policy
/// ([`PolicyRegistry::build`] also knows registered ones).
pub fn policy(name: &str, params: Params) -> Result<Box<dyn Policy>, UnknownPolicy> {
    Ok(match name {
        "fixed" => Box::new(Fixed::new(params)),
        "sitemap-hints" => Box::new(SitemapHints::new(params)),
        "adaptive" => Box::new(Adaptive::new(params)),
        "freshness-optimal" => Box::new(FreshnessOptimal::new(params)),
        "lambda-crawl" => Box::new(LambdaCrawl::new(params)),
        "uniform" => Box::new(Uniform::new(params)),
        "proportional" => Box::new(Proportional::new(params)),
        "lastmod" => {
            let fallback_name = params.fallback.clone();
            if fallback_name == "lastmod" {
                return Err(UnknownPolicy::Fallback(fallback_name));
            }
            let fallback = policy(&fallback_name, params.clone())
                .map_err(|_| UnknownPolicy::Fallback(fallback_name))?;
            Box::new(Lastmod::new(params, fallback))
        }
        _ => return Err(UnknownPolicy::Name(name.to_owned())),
    })
}

/// `t + secs`, rounded, saturating (NaN counts as 0).
pub(crate) fn add_secs(t: Timestamp, secs: f64) -> Timestamp {
    let s = if secs.is_nan() { 0.0 } else { secs.round() };
    // `as` saturates at the i64 bounds.
    t.plus_secs(s as i64)
}

/// Importance made usable: NaN, infinite or negative → 1.0.
pub(crate) fn importance(url: &UrlState) -> f64 {
    let w = url.importance;
    if w.is_finite() && w >= 0.0 { w } else { 1.0 }
}

/// Effective sitemap priority: absent, NaN or ≤ 0 → 0.5 (SPEC X10/X11),
/// above 1 → 1.
pub fn effective_priority(priority: Option<f32>) -> f64 {
    match priority {
        Some(p) if p > 0.0 => f64::from(p.min(1.0)),
        _ => 0.5,
    }
}

/// The shared rules 1–3 of the module docs: `Err(due)` when one of them
/// decides, `Ok(last_fetch)` when the policy's own rule must.
pub(crate) fn common_due(url: &UrlState, params: &Params, score: f64) -> Result<Timestamp, Due> {
    let base = url
        .last_attempt
        .or(url.last_fetch)
        .unwrap_or(url.first_seen);
    match url.last_outcome {
        Some(FetchOutcome::Error | FetchOutcome::Redirected) => {
            let n = url.errors_in_a_row.clamp(1, 1024);
            let first = if params.retry_after_error.is_finite() && params.retry_after_error > 0.0 {
                params.retry_after_error
            } else {
                HOUR
            };
            let delay = (first * 2f64.powi(n as i32 - 1)).min(params.bounds().1);
            Err(Due {
                at: add_secs(base, delay),
                score,
                reason: Reason::Retry,
            })
        }
        Some(FetchOutcome::Gone) => Err(Due {
            at: add_secs(base, params.probe_interval()),
            score: 0.0,
            reason: Reason::Probe,
        }),
        _ => match url.last_fetch {
            None => Err(Due {
                at: url.first_seen,
                score,
                reason: Reason::New,
            }),
            Some(t) => Ok(t),
        },
    }
}

#[cfg(test)]
mod tests;
