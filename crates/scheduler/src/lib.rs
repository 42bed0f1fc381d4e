#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod check;
pub mod clock;
mod error;
pub mod estimate;
pub mod frontier;
mod hash;
pub mod ingest;
#[cfg(test)]
mod ingest_tests;
mod kv;
mod lease;
mod marks;
#[cfg(test)]
mod marks_tests;
mod members;
mod migrate;
#[cfg(test)]
mod migrate_tests;
pub mod notify;
mod options;
mod pages;
#[cfg(test)]
mod pages_tests;
mod parallel;
#[cfg(test)]
mod parallel_tests;
mod partition;
pub mod policy;
pub mod pushes;
#[cfg(test)]
mod pushes_tests;
pub mod queue;
pub mod refresh;
mod revive;
pub mod robots;
mod routing;
mod runs;
mod scan;
pub mod sites;
pub mod store;
mod tally;
mod time;
pub mod trust;
mod view;
pub mod write_log;
mod writes;

#[cfg(feature = "internal")]
#[doc(hidden)]
pub mod internal;
#[cfg(not(feature = "internal"))]
#[allow(dead_code, unreachable_pub)]
mod internal;
use internal::{due_list, keys, page, record, squeeze};

pub use check::{CheckReport, Stats};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{DecodeError, StoreError};
pub use frontier::{
    DiscoveredUrl, KnownUrl, Metadata, Put, QueueCounts, QueuePlace, bounded_metadata,
};
pub use ingest::{IngestStats, SitemapFetch};
pub use kv::StoreHealth;
pub use notify::Notified;
pub use options::StoreOptions;
pub use pushes::{PushTotals, PushView, Pushed};
pub use queue::{Completion, LeaseRequest, Leased, Outcome, Politeness};
pub use refresh::RefreshParams;
pub use robots::RobotsUpdate;
pub use routing::{DEFAULT_PARTITIONS, MAX_PARTITIONS};
pub use sites::SiteWalk;
pub use store::{Compaction, Ingest, Store};
pub use time::Timestamp;
pub use view::{HostView, RefreshView, SiteView, SitemapView, UrlStatus, UrlView};
pub use write_log::{LogEntry, WriteLog};
