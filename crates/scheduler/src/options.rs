//! How to open a store ([`StoreOptions`]) and the policy a new one gets.

use std::sync::Arc;

use crate::estimate::Estimator;
use crate::policy::{Params, PolicyRegistry};
use crate::refresh::RefreshParams;
use crate::routing::DEFAULT_PARTITIONS;

/// The policy of a new store: crawl on change where a host's lastmods have
/// earned it, `adaptive` behind it (the simulator's scenario table). A store
/// keeps the policy it was opened with; `StoreOptions::policy` (CLI
/// `--policy`) changes it for good.
pub const DEFAULT_POLICY: &str = "lastmod";
/// The policy of a store made before [`DEFAULT_POLICY`] was `lastmod` and
/// never given one: it ran this, and keeps it.
pub const EARLIER_DEFAULT_POLICY: &str = "adaptive";

/// How to open a store. `Default` gives the documented values.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// sled's page cache, bytes; default 32 MiB (sled's own default, 1 GiB,
    /// is what makes it look like it leaks). sled counts a cached page at
    /// its size on disk, and holds it in memory at about 2.4 times that:
    /// the resident memory of the cache is about 2.4 × `cache_bytes`
    /// (RELIABILITY.md, "Memory and store size"). 32 MiB leases and
    /// ingests as fast as 64 on the store bench (1M URLs); 16 is slower.
    pub cache_bytes: u64,
    /// The scheduling policy, by name. `None`: the one the store was last
    /// opened with, or [`DEFAULT_POLICY`] (`lastmod`) for a new store. A name given is
    /// remembered for the next open.
    pub policy: Option<String>,
    /// Its parameters.
    pub params: Params,
    /// The estimator feeding the policies' rate; default `bias-reduced`.
    pub estimator: Estimator,
    /// Complete sitemap reads a URL must be absent from before it is
    /// retired; default 3.
    pub retire_after: u64,
    /// Delay between two URLs of one host handed out by a lease, seconds
    /// (0: none); default 1. It applies to every host, those already in the
    /// store included.
    pub min_delay: f64,
    /// The sitemap refresh schedule ([`crate::refresh`]).
    pub refresh: RefreshParams,
    /// The policies `policy` may name: the built-in ones, plus any the
    /// embedder registers ([`PolicyRegistry::register`]).
    pub policies: PolicyRegistry,
    /// The time for the reads that take none (whether a lease still holds
    /// in [`Store::url`](crate::Store::url) and [`Store::export`](crate::Store::export), the readiness probe's
    /// stamp); default the [`SystemClock`](crate::SystemClock). Every call
    /// that writes or leases takes its `now` as an argument.
    pub clock: Arc<dyn crate::Clock>,
    /// Partitions of the store, each with its own keyspace and write lock
    /// (see [`crate::store`]); default [`DEFAULT_PARTITIONS`] (1). A new
    /// store is made with this many; a store of one partition (a store
    /// made before partitions included) opened with more is moved into
    /// them as it opens (crash-safe: an open after a crash finishes the
    /// move); a store of several keeps its number.
    pub partitions: u16,
    /// [`Store::compact_if_grown`](crate::Store::compact_if_grown) compacts
    /// the store when its files have grown to this many times what the last
    /// compaction left; default 2 (0: never; a factor below 1.2 counts as
    /// 1.2).
    pub compact_growth: f64,
    /// ... and are past this many bytes (a store never compacted, once
    /// past it); default 16 MiB.
    pub compact_floor_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            cache_bytes: 32 << 20,
            policy: None,
            params: Params::default(),
            estimator: Estimator::BiasReduced,
            retire_after: 3,
            min_delay: 1.0,
            refresh: RefreshParams::default(),
            policies: PolicyRegistry::default(),
            clock: Arc::new(crate::SystemClock),
            partitions: DEFAULT_PARTITIONS,
            compact_growth: 2.0,
            compact_floor_bytes: 16 << 20,
        }
    }
}
