//! The followed sites: the seeds a long-running daemon walks again and
//! again, each with when it is next due and what its last walk found
//! (`f` ‖ seed, the store's key layout). The store only keeps the registry;
//! walking is the daemon's.
//!
//! [`Store::retire_host`](crate::Store::retire_host) takes a host's URLs out of the queue when its site
//! is no longer followed.

use sitemapd_parser::HostKey;

use crate::error::StoreError;
use crate::keys;
use crate::kv::Batch;
use crate::partition::Partition;
use crate::record::{SiteRecord, encode};
use crate::time::Timestamp;
use crate::view::SiteView;
use crate::writes::UrlWrites;

/// URL records retired per batch by [`Store::retire_host`](crate::Store::retire_host).
const RETIRE_BATCH: usize = 2_000;

/// One walk of a followed site, for [`Store::site_walked`](crate::Store::site_walked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteWalk {
    /// When it ended.
    pub ended: Timestamp,
    /// When the site is next to be walked.
    pub next_walk: Timestamp,
    /// Sitemaps it read.
    pub sitemaps: u64,
    /// Sitemaps it failed to read.
    pub failed: u64,
    /// URL entries it read.
    pub entries: u64,
}

impl Partition {
    /// Follows the site `seed` from `now`: it is due for a walk at once.
    /// Whether it is new (a site already followed is left as it is).
    pub(crate) fn add_site(&self, seed: &str, now: Timestamp) -> Result<bool, StoreError> {
        let now = now.unix();
        let key = keys::site(seed);
        let site = SiteRecord {
            added_at: now,
            next_walk: now,
            ..SiteRecord::default()
        };
        let _lock = self.lock();
        if self.kv.contains_key(&key)? {
            return Ok(false);
        }
        let mut batch = Batch::default();
        batch.insert(key, encode(&site));
        self.kv.apply_batch(batch)?;
        Ok(true)
    }

    /// Stops following `seed`; whether it was followed. Its URLs stay: see
    /// [`Store::retire_host`](crate::Store::retire_host).
    pub(crate) fn remove_site(&self, seed: &str) -> Result<bool, StoreError> {
        let key = keys::site(seed);
        let _lock = self.lock();
        if !self.kv.contains_key(&key)? {
            return Ok(false);
        }
        let mut batch = Batch::default();
        batch.remove(key);
        self.kv.apply_batch(batch)?;
        Ok(true)
    }

    /// The followed site `seed`, if it is one.
    pub(crate) fn site(&self, seed: &str) -> Result<Option<SiteView>, StoreError> {
        Ok(self
            .get::<SiteRecord>(&keys::site(seed))?
            .map(|r| SiteView::of(seed, &r)))
    }

    /// Records a walk of the followed site `seed` that ended at `walk.ended`;
    /// whether it is still followed (a site removed during its walk is not
    /// added back).
    pub(crate) fn site_walked(&self, seed: &str, walk: &SiteWalk) -> Result<bool, StoreError> {
        let key = keys::site(seed);
        let _lock = self.lock();
        let Some(mut site) = self.get::<SiteRecord>(&key)? else {
            return Ok(false);
        };
        site.next_walk = walk.next_walk.unix();
        site.last_walk = Some(walk.ended.unix());
        site.last_sitemaps = walk.sitemaps;
        site.last_failed = walk.failed;
        site.last_entries = walk.entries;
        let mut batch = Batch::default();
        batch.insert(key, encode(&site));
        self.kv.apply_batch(batch)?;
        Ok(true)
    }

    /// Followed sites in seed order after `after` (a seed as
    /// [`SiteView::site`] gives it; `None`: from the first): a page of
    /// [`Store::sites`](crate::Store::sites) for a client that cannot take them all at once.
    pub(crate) fn sites_after(
        &self,
        after: Option<&str>,
    ) -> impl Iterator<Item = Result<SiteView, StoreError>> + '_ {
        let start = match after {
            Some(seed) => {
                let mut k = keys::site(seed);
                k.push(0);
                k
            }
            None => vec![keys::SITE],
        };
        self.records_in::<SiteRecord>(start..vec![keys::SITE + 1])
            .map(|item| item.map(|(seed, r)| SiteView::of(&seed, &r)))
    }

    /// Retires every active URL of `host`, http and https: out of the
    /// queue, records kept (a sitemap listing one again revives it). In
    /// batches, each under the write lock, with the host's URL count. How
    /// many it retired.
    pub(crate) fn retire_host(&self, host: &HostKey) -> Result<u64, StoreError> {
        let host = host.as_str();
        let mut retired = 0;
        let mut urls = Vec::new();
        for item in self.host_urls(host) {
            let (url, rec) = item?;
            if rec.retired {
                continue;
            }
            urls.push(url);
            if urls.len() >= RETIRE_BATCH {
                retired += self.retire_urls(&mut urls)?;
            }
        }
        retired += self.retire_urls(&mut urls)?;
        if retired > 0 {
            tracing::info!(host, retired, "host retired");
        }
        Ok(retired)
    }

    /// Retires those of `urls` still active: one batch.
    fn retire_urls(&self, urls: &mut Vec<String>) -> Result<u64, StoreError> {
        if urls.is_empty() {
            return Ok(0);
        }
        let _lock = self.lock();
        let mut writes = UrlWrites::new(self);
        let mut retired = 0u64;
        for url in urls.drain(..) {
            let Ok(Some(mut rec)) = self.url_record(&url) else {
                continue;
            };
            if rec.retired {
                continue;
            }
            let before = writes.before(&url, &mut rec)?;
            rec.retired = true;
            writes.put(&url, Some(&before), &mut rec)?;
            retired += 1;
        }
        writes.apply()?;
        Ok(retired)
    }
}
