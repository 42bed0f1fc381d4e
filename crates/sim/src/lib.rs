#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod change;
pub mod config;
pub mod experiment;
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
pub use experiment::{Stat, run_each, summarise};
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
