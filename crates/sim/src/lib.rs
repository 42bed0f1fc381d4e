//! The research simulator: a seeded, discrete-event simulation of a web of
//! pages that change, the sitemaps their hosts publish, and a crawler with
//! a fetch budget, driving the real scheduler ([`Store`](sitemapd_scheduler::Store):
//! ingest, lease, complete, the policies, the estimators, lastmod trust
//! and the sitemap refresh schedule) on simulated time. It measures the
//! metrics of SCHEDULING.md against the truth only a simulation knows.
//!
//! ```
//! use sitemapd_sim::{self as sim, SimConfig};
//!
//! let mut cfg = SimConfig::default();
//! cfg.days = 2.0;
//! cfg.world.pages = 100;
//! cfg.world.hosts = 4;
//! cfg.crawl.budget = 100.0;
//! let report = sim::run_in_memory(&cfg, "adaptive", 1, &mut |_| {}).unwrap();
//! assert_eq!(report.series.len(), 8); // 6-hour windows
//! assert!(report.summary.freshness > 0.0 && report.summary.freshness <= 1.0);
//! // The same run on a sled store on disk: the same metrics.
//! let dir = tempfile::tempdir().unwrap();
//! let on_disk = sim::run(&cfg, "adaptive", 1, dir.path(), &mut |_| {}).unwrap();
//! assert_eq!(on_disk.series, report.series);
//! ```
//!
//! ## In memory or on disk
//! [`run_in_memory()`] keeps the store in memory ([`Store::in_memory`](sitemapd_scheduler::Store::in_memory)):
//! the store's code (ingest, queue, policies, estimators, trust, refresh) is
//! the same, only the key-value map under it is an ordered map instead of
//! sled. [`run()`] uses sled on disk, as the daemon does; the reports are
//! the same, several times slower.
//!
//! ## Deterministic
//! A run is a function of its configuration, policy and seed: the world
//! (hosts, pages, rates, importance, births) and every page's change stream
//! come from seeded PCG streams, and the store is driven in one thread in
//! event order. Every policy of one seed sees the same pages and the same
//! changes (common random numbers), so differences between policies are
//! the policies'.
//!
//! ## Modules
//! - [`config`]: the settings ([`SimConfig`]).
//! - `world`: pages on hosts, rates, importance, sitemap files.
//! - `change`: Poisson, periodic and bursty change processes.
//! - `publisher`: what the sitemaps say (lastmod precision, recall, delay,
//!   liar mode; ETags for conditional reads).
//! - [`metrics`]: freshness, age, harmonic staleness, waste, recall,
//!   discovery, politeness, estimator bias.
//! - `run`: the event loop against the store ([`run()`], [`run_in_memory()`]).

mod change;
pub mod config;
pub mod metrics;
mod oracle;
mod policy;
mod publisher;
mod run;
mod seed;
mod world;

pub use config::{
    ConfigError, CrawlConfig, LastmodPrecision, Process, Scenario, SimConfig, SitemapConfig,
    WorldConfig,
};
pub use metrics::{EstimatorStats, SeriesRow, Summary};
pub use oracle::ORACLE;
pub use policy::SimPolicy;
pub use run::{run, run_in_memory};
pub use world::EPOCH;

use sitemapd_scheduler::store::StoreError;

/// A simulation failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store failed (or the policy name is unknown).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The world could not be drawn with these settings.
    #[error("world generation: {0}")]
    World(String),
    /// The store's directory could not be made or read.
    #[error("store directory {path}: {source}")]
    Io {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The store's directory already holds something.
    #[error("store directory {0} is not empty (a run needs a fresh store)")]
    DirNotEmpty(String),
    /// The store handed out a URL that is no simulated page.
    #[error("the store leased {0:?}, which is no simulated page")]
    UnknownUrl(String),
}

/// What one run (a policy on the world of a seed) produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The policy.
    pub policy: String,
    /// The seed.
    pub seed: u64,
    /// The time series, one row per window.
    pub series: Vec<SeriesRow>,
    /// The time averages and totals.
    pub summary: Summary,
}
