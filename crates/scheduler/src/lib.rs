#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod check;
pub mod estimate;
pub mod ingest;
pub mod keys;
mod kv;
pub mod notify;
pub mod policy;
pub mod queue;
pub mod record;
pub mod refresh;
pub mod sites;
pub mod store;
pub mod trust;

pub use check::{CheckReport, Stats};
pub use ingest::{Ingest, IngestStats, SitemapFetch};
pub use notify::Notified;
pub use queue::{Completion, Leased, Outcome};
pub use refresh::{RefreshParams, RefreshState};
pub use sites::SiteRecord;
pub use store::{Store, StoreError, StoreOptions};
