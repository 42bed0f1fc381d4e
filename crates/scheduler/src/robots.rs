//! robots.txt at lease time: each host's rules as its last walk read them
//! ([`Store::set_robots`](crate::Store::set_robots)), the URLs they disallow marked `blocked` and
//! kept out of the queue until the rules change, and the host's
//! `Crawl-delay` spacing its leases.
//!
//! The rules are kept per host (`host[:port]`), as politeness is: the
//! robots.txt of the scheme the walk read stands for both.

use serde::Serialize;
use sitemapd_parser::{HostKey, RobotsRules};

use crate::error::StoreError;
use crate::hash::FastMap;
use crate::keys;
use crate::partition::Partition;
use crate::record::{RobotsRecord, UrlRecord, encode};
use crate::time::Timestamp;
use crate::writes::UrlWrites;

/// The longest `Crawl-delay` honoured, seconds: the sitemap fetcher's cap
/// too (`fetch.min_delay`'s help), so one robots.txt cannot park a host's
/// queue for hours.
pub const MAX_CRAWL_DELAY: f64 = 30.0;

/// What [`Store::set_robots`](crate::Store::set_robots) changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RobotsUpdate {
    /// The rules differ from those stored (or none were): the host's URLs
    /// were checked against them.
    pub changed: bool,
    /// URLs newly blocked (out of the queue).
    pub blocked: u64,
    /// URLs no longer blocked (back in the queue).
    pub unblocked: u64,
}

impl Partition {
    /// Records the robots.txt rules `host`'s URLs are leased under, read at
    /// `now`: a URL they disallow is marked blocked and leaves the queue
    /// (it stays in the store, counted and exported as blocked); a blocked
    /// URL they allow again is scheduled anew. Their `Crawl-delay` (at most
    /// [`MAX_CRAWL_DELAY`]) spaces the host's leases when longer than the
    /// store's lease delay. Rules equal to those stored cost one write.
    ///
    /// Call it with [`RobotsRules::allow_all`] for a robots.txt that is
    /// missing (4xx, RFC 9309 §2.3.1.3); leave the stored rules as they are
    /// when it is unreachable (5xx, network): the last known rules stand.
    pub(crate) fn set_robots(
        &self,
        host: &HostKey,
        rules: &RobotsRules,
        now: Timestamp,
    ) -> Result<RobotsUpdate, StoreError> {
        let name = host.as_str();
        let previous = self.robots_record(name).unwrap_or_else(|e| {
            tracing::warn!(host = name, error = %e, "corrupt robots record replaced");
            None
        });
        let changed = previous.as_ref().map(|p| &p.rules) != Some(rules);
        let record = RobotsRecord {
            rules: rules.clone(),
            read_at: now.unix(),
        };
        {
            let _lock = self.lock_background();
            let mut batch = crate::kv::Batch::default();
            batch.insert(keys::robots(name), encode(&record));
            self.kv.apply_batch(batch)?;
        }
        let mut update = RobotsUpdate {
            changed,
            ..RobotsUpdate::default()
        };
        if changed {
            self.reblock(name, rules, now.unix(), &mut update)?;
            tracing::info!(
                host = name,
                blocked = update.blocked,
                unblocked = update.unblocked,
                "robots rules changed"
            );
        }
        Ok(update)
    }

    /// The robots.txt rules `host`'s URLs are leased under, if a walk read
    /// them.
    pub(crate) fn robots(&self, host: &HostKey) -> Result<Option<RobotsRules>, StoreError> {
        Ok(self.robots_record(host.as_str())?.map(|r| r.rules))
    }

    pub(crate) fn robots_record(&self, host: &str) -> Result<Option<RobotsRecord>, StoreError> {
        self.get(&keys::robots(host))
    }

    /// Seconds between two of `host`'s URLs handed out: the store's lease
    /// delay, or its robots `Crawl-delay` (capped) when longer.
    pub(crate) fn lease_delay(&self, host: &str) -> Result<f64, StoreError> {
        let rules = self.robots_rules(host)?;
        Ok(self.delay_for(rules.and_then(|r| r.crawl_delay)))
    }

    /// The rules of `host`'s robots record (none if it has none, or if its
    /// record does not decode).
    fn robots_rules(&self, host: &str) -> Result<Option<RobotsRules>, StoreError> {
        match self.robots_record(host) {
            Ok(record) => Ok(record.map(|r| r.rules)),
            Err(StoreError::Record { key, .. }) => {
                self.kv.passed_over(&key);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The store's lease delay, or `crawl_delay` (capped) when longer.
    fn delay_for(&self, crawl_delay: Option<f64>) -> f64 {
        let configured = self.options.min_delay;
        match crawl_delay {
            Some(d) if d.is_finite() && d > configured => d.min(MAX_CRAWL_DELAY).max(configured),
            _ => configured,
        }
    }

    /// Checks every URL of `host` against `rules`, in batches: the ones
    /// whose standing changes are rewritten (due entry removed or added).
    fn reblock(
        &self,
        host: &str,
        rules: &RobotsRules,
        now: i64,
        update: &mut RobotsUpdate,
    ) -> Result<(), StoreError> {
        const BATCH: usize = 1000;
        let mut flips: Vec<String> = Vec::new();
        let flush = |flips: &mut Vec<String>, update: &mut RobotsUpdate| {
            if flips.is_empty() {
                return Ok::<(), StoreError>(());
            }
            let _lock = self.lock_background();
            let host_record = self.host_record(host)?;
            let mut writes = UrlWrites::new(self);
            for url in flips.drain(..) {
                // Read again under the lock: a lease or a completion may
                // have moved it since the scan.
                let Ok(Some(mut rec)) = self.url_record(&url) else {
                    continue;
                };
                let blocked = !allowed(rules, &url);
                if blocked == rec.blocked {
                    continue;
                }
                let before = writes.before(&url, &mut rec)?;
                rec.blocked = blocked;
                if blocked {
                    update.blocked += 1;
                } else {
                    update.unblocked += 1;
                    if rec.queued() {
                        rec.schedule = self.schedule(&url, &rec, &host_record, now);
                    }
                }
                writes.put(&url, Some(&before), &mut rec)?;
            }
            writes.apply()
        };
        for item in self.host_urls(host) {
            let (url, rec) = item?;
            if rec.blocked != allowed(rules, &url) {
                continue;
            }
            flips.push(url);
            if flips.len() >= BATCH {
                flush(&mut flips, update)?;
            }
        }
        flush(&mut flips, update)
    }
}

/// Whether `rules` allow `url`, a stored URL: normalised, so its path and
/// query ([`NormUrl::path_and_query`](sitemapd_parser::NormUrl::path_and_query)) are what follows its host, and the
/// lease's hot path need not parse it again.
pub(crate) fn allowed(rules: &RobotsRules, url: &str) -> bool {
    let rest = keys::scheme_end(url).map_or(url, |at| &url[at..]);
    let path = &rest[keys::host_of(url).len()..];
    rules.allows_path(if path.is_empty() { "/" } else { path })
}

/// Each host's rules, read once per operation (a lease, an ingest batch).
pub(crate) struct RulesCache<'s> {
    store: &'s Partition,
    hosts: FastMap<String, Option<RobotsRules>>,
}

impl<'s> RulesCache<'s> {
    pub(crate) fn new(store: &'s Partition) -> Self {
        RulesCache {
            store,
            hosts: FastMap::default(),
        }
    }

    /// Whether the rules of `url`'s host allow it (no rules: allowed; a
    /// rules record that does not decode counts as none).
    pub(crate) fn allows(&mut self, url: &str) -> Result<bool, StoreError> {
        Ok(match self.rules(keys::host_of(url))? {
            Some(rules) => allowed(rules, url),
            None => true,
        })
    }

    /// [`Store::lease_delay`](crate::Store::lease_delay) of `host`, from its rules read once.
    pub(crate) fn lease_delay(&mut self, host: &str) -> Result<f64, StoreError> {
        let crawl_delay = self.rules(host)?.and_then(|r| r.crawl_delay);
        Ok(self.store.delay_for(crawl_delay))
    }

    /// `host`'s rules, read at the first call.
    fn rules(&mut self, host: &str) -> Result<Option<&RobotsRules>, StoreError> {
        if !self.hosts.contains_key(host) {
            let rules = self.store.robots_rules(host)?;
            self.hosts.insert(host.to_string(), rules);
        }
        Ok(self.hosts.get(host).and_then(Option::as_ref))
    }

    /// Marks `rec` blocked or not by its host's rules; whether it is.
    pub(crate) fn mark(&mut self, url: &str, rec: &mut UrlRecord) -> Result<bool, StoreError> {
        rec.blocked = !self.allows(url)?;
        Ok(rec.blocked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sitemapd_parser::NormUrl;

    /// The stored URL's path, read off the string, is the one `NormUrl`
    /// gives: the same answer as the rules on the parsed URL.
    #[test]
    fn allowed_reads_the_path_as_norm_url_does() {
        let rules = RobotsRules::new(
            vec![
                (false, "/p".into()),
                (true, "/p/ok$".into()),
                (false, "/*?q=".into()),
            ],
            None,
        );
        for input in [
            "https://a.example/p/x",
            "https://a.example/p/ok",
            "http://a.example:8080/p",
            "https://a.example/",
            "https://a.example?q=1",
            "https://a.example/x?q=1",
            "https://[::1]:81/p/ok",
            "https://a.example/%70",
        ] {
            let url = NormUrl::parse(input).unwrap();
            assert_eq!(allowed(&rules, url.as_str()), rules.allows(&url), "{url}");
        }
    }
}
