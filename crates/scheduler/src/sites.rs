//! The followed sites: the seeds a long-running daemon walks again and
//! again, each with when it is next due and what its last walk found
//! (`f` ‖ seed, see [`crate::keys`]). The store only keeps the registry;
//! walking is the daemon's.
//!
//! [`Store::retire_host`] takes a host's URLs out of the queue when its site
//! is no longer followed.

use serde::{Deserialize, Serialize};

use crate::keys;
use crate::record::encode;
use crate::store::{Store, StoreError};
use crate::time::Timestamp;

/// URL records retired per batch by [`Store::retire_host`].
const RETIRE_BATCH: usize = 2_000;

/// A followed site, keyed by its seed as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteRecord {
    /// When it was added (unix seconds).
    pub added_at: i64,
    /// When it is next to be walked.
    pub next_walk: i64,
    /// When its last walk ended, if it was walked.
    pub last_walk: Option<i64>,
    /// Sitemaps its last walk read.
    pub last_sitemaps: u64,
    /// Sitemaps its last walk failed to read.
    pub last_failed: u64,
    /// URL entries its last walk read.
    pub last_entries: u64,
}

impl crate::record::Record for SiteRecord {}

impl Store {
    /// Follows the site `seed` from `now`: it is due for a walk at once.
    /// Whether it is new (a site already followed is left as it is).
    pub fn add_site(&self, seed: &str, now: Timestamp) -> Result<bool, StoreError> {
        let now = now.unix();
        let key = keys::site(seed);
        let site = SiteRecord {
            added_at: now,
            next_walk: now,
            ..SiteRecord::default()
        };
        self.kv.insert_if_absent(key, encode(&site))
    }

    /// Stops following `seed`; whether it was followed. Its URLs stay: see
    /// [`Store::retire_host`].
    pub fn remove_site(&self, seed: &str) -> Result<bool, StoreError> {
        Ok(self.kv.remove(keys::site(seed))?.is_some())
    }

    /// The followed site `seed`, if it is one.
    pub fn site(&self, seed: &str) -> Result<Option<SiteRecord>, StoreError> {
        self.get(&keys::site(seed))
    }

    /// Writes the record of `seed` (adding it if it was not followed).
    pub fn put_site(&self, seed: &str, site: &SiteRecord) -> Result<(), StoreError> {
        self.kv.insert(keys::site(seed), encode(site))?;
        Ok(())
    }

    /// Every followed site, in seed order.
    pub fn sites(&self) -> impl Iterator<Item = Result<(String, SiteRecord), StoreError>> + '_ {
        self.records([keys::SITE])
    }

    /// Retires every active URL of `host` (`host[:port]`, as
    /// [`Store::host`] takes it), http and https: out of the queue, records
    /// kept (a sitemap listing one again revives it). In batches, each under
    /// the write lock, with the host's URL count. How many it retired.
    pub fn retire_host(&self, host: &str) -> Result<u64, StoreError> {
        let mut retired = 0;
        let mut urls = Vec::new();
        for item in self.host_urls(host) {
            let (url, rec) = item?;
            if rec.retired {
                continue;
            }
            urls.push(url);
            if urls.len() >= RETIRE_BATCH {
                retired += self.retire_urls(host, &mut urls)?;
            }
        }
        retired += self.retire_urls(host, &mut urls)?;
        if retired > 0 {
            tracing::info!(host, retired, "host retired");
        }
        Ok(retired)
    }

    /// Retires those of `urls` (all of `host`) still active: one batch.
    fn retire_urls(&self, host: &str, urls: &mut Vec<String>) -> Result<u64, StoreError> {
        if urls.is_empty() {
            return Ok(0);
        }
        let _lock = self.lock();
        let mut batch = crate::kv::Batch::default();
        let mut retired = 0u64;
        for url in urls.drain(..) {
            let Ok(Some(mut rec)) = self.url_record(&url) else {
                continue;
            };
            if rec.retired {
                continue;
            }
            batch.remove(keys::due(rec.schedule.due, &url));
            rec.retired = true;
            batch.insert(keys::url(&url), encode(&rec));
            retired += 1;
        }
        if retired > 0 {
            let mut h = self.host_record(host)?;
            h.urls = h.urls.saturating_sub(retired);
            batch.insert(keys::host(host), encode(&h));
        }
        self.kv.apply_batch(batch)?;
        Ok(retired)
    }
}
