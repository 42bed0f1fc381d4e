//! Push notifications (IndexNow-style): a site says "this URL changed now".
//!
//! [`Store::notify`](crate::Store::notify) records the notification on the URL's record
//! (`Notifications`: how many, the first, the latest) and makes the URL
//! due at once with the reason `notified`. A site that pushes is taken to
//! push every change: once a URL has two notifications or more, its change
//! rate is the `complete` estimator's (K + 0.5)/(T + 0.5) over the K
//! notifications and the T seconds since the first, in place of the estimate
//! from fetches (see `Store::url_state`). Notifications in the same second
//! count once.
//!
//! A URL the store does not hold is added (first source 0, no sitemap: no
//! sitemap's absence ever retires it); a retired one is revived (its
//! sitemaps count its absence again from their last reads, `revive.rs`). A leased
//! URL is made due now too: its lease is dropped (the fetch in flight may
//! predate the change).

use std::collections::HashMap;

use crate::error::StoreError;
use crate::keys;
use crate::partition::Partition;
use crate::record::{HostRecord, Notifications, Schedule, StoredReason, UrlRecord};
use crate::revive::Revivals;
use crate::time::Timestamp;
use crate::writes::{Before, UrlWrites};

/// What [`Store::notify`](crate::Store::notify) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notified {
    /// The store held the URL (active or retired: a retired one is revived).
    Known,
    /// The URL was new to the store: added, due now.
    Added,
}

/// `urls` normalised, in order; the first that is not an absolute
/// http(s) URL is [`StoreError::InvalidUrl`].
pub(crate) fn normalised<'u>(
    urls: impl IntoIterator<Item = &'u str>,
) -> Result<Vec<String>, StoreError> {
    urls.into_iter()
        .map(|url| {
            sitemapd_parser::NormUrl::parse_limited(url)
                .map(sitemapd_parser::NormUrl::into_string)
                .map_err(|source| StoreError::InvalidUrl {
                    url: url.to_string(),
                    source,
                })
        })
        .collect()
}

impl Partition {
    /// A push signal that `url` changed at `now`: counted for its change
    /// rate, and the URL due now with the reason `notified` (see the module
    /// docs). `url` is normalised first; one that is not an absolute
    /// http(s) URL, or is longer than a sitemap loc may be (SPEC X4), is
    /// [`StoreError::InvalidUrl`]. One batch under the write lock
    /// ([`Store::notify_all`](crate::Store::notify_all)).
    pub(crate) fn notify(&self, url: &str, now: Timestamp) -> Result<Notified, StoreError> {
        let mut found = self.notify_all([url], now)?;
        Ok(found.pop().unwrap_or(Notified::Known))
    }

    /// [`Store::notify`](crate::Store::notify) for many URLs at once, all or nothing: every URL
    /// is normalised first (one that is not an absolute http(s) URL is
    /// [`StoreError::InvalidUrl`] and nothing is written), then every
    /// record is written in one atomic batch under the write lock, so a
    /// failure (a full disk) leaves the store as it was. A URL listed
    /// twice counts once per second, as two calls would. What was found,
    /// in the order given.
    pub(crate) fn notify_all<'u>(
        &self,
        urls: impl IntoIterator<Item = &'u str>,
        now: Timestamp,
    ) -> Result<Vec<Notified>, StoreError> {
        let norms = normalised(urls)?;
        self.notify_normalised(&norms, now)
    }

    /// [`Partition::notify_all`] of URLs already normalised.
    pub(crate) fn notify_normalised(
        &self,
        norms: &[String],
        now: Timestamp,
    ) -> Result<Vec<Notified>, StoreError> {
        let _lock = self.lock();
        let writes = UrlWrites::new(self);
        self.notify_into(writes, norms, now, true)
    }

    /// Notifies `norms` in `writes` (the caller holds the write lock) and
    /// applies them. `urgent`: each URL due now with the reason `notified`;
    /// otherwise the notification is counted and the URL scheduled as the
    /// policy says with it (a push from a host whose pushes found no
    /// change, [`crate::pushes`]).
    pub(crate) fn notify_into(
        &self,
        mut writes: UrlWrites<'_>,
        norms: &[String],
        now: Timestamp,
        urgent: bool,
    ) -> Result<Vec<Notified>, StoreError> {
        let now = now.unix();
        // Records as this batch leaves them, with what each was in the
        // store.
        let mut records: HashMap<String, (UrlRecord, Option<Before>)> = HashMap::new();
        let mut hosts: HashMap<String, HostRecord> = HashMap::new();
        let mut rules = crate::robots::RulesCache::new(self);
        let mut revivals = Revivals::default();
        let mut found = Vec::with_capacity(norms.len());
        for url in norms {
            let (existing, stored) = match records.remove(url) {
                Some((rec, stored)) => (Some(rec), stored),
                None => {
                    let mut rec = writes.read(url)?;
                    let stored = match rec.as_mut() {
                        Some(rec) => Some(writes.before(url, rec)?),
                        None => None,
                    };
                    (rec, stored)
                }
            };
            let added = existing.is_none();
            let mut rec = existing.unwrap_or_else(|| UrlRecord::new(now, &[]));
            let revived = !added && rec.retired;
            rec.notified = Some(match rec.notified {
                None => Notifications {
                    count: 1,
                    first: now,
                    last: now,
                },
                Some(n) if now > n.last => Notifications {
                    count: n.count.saturating_add(1),
                    first: n.first.min(now),
                    last: now,
                },
                Some(n) => n,
            });
            revivals.revive(self, &mut rec)?;
            // A URL its host's robots.txt disallows stays out of the queue.
            rules.mark(url, &mut rec)?;
            let host_name = keys::host_of(url);
            if !hosts.contains_key(host_name) {
                hosts.insert(host_name.to_string(), self.host_record(host_name)?);
            }
            let host = hosts.get_mut(host_name).expect("inserted above");
            let due = self.schedule(url, &rec, host, now);
            rec.schedule = if urgent {
                Schedule {
                    due: now,
                    score: due.score,
                    reason: StoredReason::Notified,
                    lease: None,
                }
            } else {
                due
            };
            tracing::debug!(url, added, revived, "notified");
            found.push(if added {
                Notified::Added
            } else {
                Notified::Known
            });
            records.insert(url.clone(), (rec, stored));
        }
        for (url, (rec, stored)) in &mut records {
            writes.put(url, stored.as_ref(), rec)?;
        }
        revivals.write(writes.batch());
        writes.apply()?;
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Completion, LeaseRequest, Outcome, SitemapFetch, StoreOptions};

    const T0: i64 = 1_700_000_000;
    const DAY: i64 = 86_400;
    const URL: &str = "https://a.example/page";

    fn ts(t: i64) -> Timestamp {
        Timestamp::from_unix(t)
    }

    fn secs(s: i64) -> std::time::Duration {
        std::time::Duration::from_secs(s.unsigned_abs())
    }

    fn store(dir: &tempfile::TempDir) -> Partition {
        Partition::open(dir.path(), StoreOptions::default()).unwrap()
    }

    fn rate(s: &Partition, url: &str, now: i64) -> Option<f64> {
        let rec = s.url_record(url).unwrap().unwrap();
        s.url_state(url, &rec, now).rate
    }

    #[test]
    fn repeated_notifications_give_the_complete_rate() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        let mut ingest = s.ingest(ts(T0));
        let entry = sitemapd_parser::UrlEntry::new(sitemapd_parser::NormUrl::parse(URL).unwrap());
        ingest.entry("https://a.example/s.xml", &entry).unwrap();
        ingest.finish().unwrap();
        // Fetches a day apart that found nothing: the estimators say 0, the
        // store plans with half a change over the 3 days watched.
        for d in 1..=4 {
            s.complete(
                URL,
                &Completion::from(Outcome::NotModified),
                ts(T0 + d * DAY),
            )
            .unwrap();
        }
        let quiet = Some(0.5 / (3 * DAY) as f64);
        assert_eq!(rate(&s, URL, T0 + 4 * DAY), quiet);

        // One notification is no rate yet.
        let n0 = T0 + 5 * DAY;
        assert_eq!(s.notify(URL, ts(n0)).unwrap(), Notified::Known);
        assert_eq!(rate(&s, URL, n0), quiet);
        // Then one an hour: the complete estimator over them.
        let mut rates = Vec::new();
        for k in 1..=5 {
            s.notify(URL, ts(n0 + k * 3600)).unwrap();
            let now = n0 + 6 * 3600;
            let r = rate(&s, URL, now).unwrap();
            let want = crate::estimate::complete(k as u64 + 1, (now - n0) as f64);
            assert!((r - want).abs() < 1e-12, "{k}: {r} vs {want}");
            rates.push(r);
        }
        assert!(rates.windows(2).all(|w| w[1] > w[0]), "{rates:?}");
        // Once a second at most.
        s.notify(URL, ts(n0 + 5 * 3600)).unwrap();
        let n = s.url_record(URL).unwrap().unwrap().notified.unwrap();
        assert_eq!((n.count, n.first, n.last), (6, n0, n0 + 5 * 3600));
        // Silence lowers it again.
        assert!(rate(&s, URL, n0 + 30 * DAY).unwrap() < rates[4]);
    }

    #[test]
    fn a_notified_url_is_due_now_and_stays_so_through_ingest() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        assert_eq!(s.notify(URL, ts(T0)).unwrap(), Notified::Added);
        let leased = s
            .lease(&LeaseRequest::new(1).per_host(1).ttl(secs(300)), ts(T0))
            .unwrap();
        s.complete(URL, &Completion::from(Outcome::Changed), ts(T0 + 10))
            .unwrap();
        assert_eq!(leased[0].reason.as_str(), "notified");
        let later = s.url_record(URL).unwrap().unwrap().schedule.due;
        assert!(later > T0 + 10);
        s.notify(URL, ts(T0 + 100)).unwrap();
        // A sitemap read with new hints does not push it later.
        let mut ingest = s.ingest(ts(T0 + 200));
        let mut entry =
            sitemapd_parser::UrlEntry::new(sitemapd_parser::NormUrl::parse(URL).unwrap());
        entry.changefreq = Some(sitemapd_parser::ChangeFreq::Yearly);
        ingest.entry("https://a.example/s.xml", &entry).unwrap();
        ingest
            .sitemap_fetched(
                "https://a.example/s.xml",
                &SitemapFetch {
                    status: 200,
                    complete: true,
                    ..SitemapFetch::default()
                },
            )
            .unwrap();
        ingest.finish().unwrap();
        let rec = s.url_record(URL).unwrap().unwrap();
        assert_eq!(rec.schedule.due, T0 + 100);
        assert_eq!(rec.schedule.reason, StoredReason::Notified);
        assert!(s.check().unwrap().is_ok());
    }

    /// Everything in the store, key by key.
    fn contents(s: &Partition) -> Vec<(Vec<u8>, Vec<u8>)> {
        s.kv.range(Vec::new()..vec![0xff; 4])
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect()
    }

    /// A notification of many URLs whose write fails (a full disk,
    /// injected) changes nothing; health says so, and turns back when
    /// writes succeed again.
    #[test]
    fn a_failed_notify_changes_nothing() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        s.notify(URL, ts(T0)).unwrap();
        let before = contents(&s);
        let urls: Vec<String> = (0..2_000)
            .map(|i| format!("https://b.example/{i}"))
            .chain([URL.to_string(), "https://b.example/7".to_string()])
            .collect();
        // The store can take 500 more writes.
        s.inject_write_failures(Some(500));
        for _ in 0..500 {
            s.kv.insert(keys::PROBE, &[1u8][..]).unwrap();
        }
        s.kv.remove(keys::PROBE).unwrap_err();
        let err = s
            .notify_all(urls.iter().map(String::as_str), ts(T0 + 10))
            .unwrap_err();
        assert!(err.is_write_failure(), "{err}");
        assert!(s.health().write_failure.is_some());
        assert!(!s.health().is_ok());
        s.inject_write_failures(None);
        // The probe key of the fill-up is the only difference.
        s.kv.remove(keys::PROBE).unwrap();
        assert_eq!(contents(&s), before);
        assert!(s.health().is_ok(), "{:?}", s.health());
        let found = s
            .notify_all(urls.iter().map(String::as_str), ts(T0 + 10))
            .unwrap();
        assert_eq!(
            found.iter().filter(|f| **f == Notified::Added).count(),
            2_000
        );
        assert_eq!(found[2_000], Notified::Known);
        assert_eq!(found[2_001], Notified::Known);
        let host = s
            .host(
                &sitemapd_parser::NormUrl::parse("https://b.example/")
                    .unwrap()
                    .host_key(),
            )
            .unwrap();
        assert_eq!(host.urls, 2_000);
        assert!(s.check().unwrap().is_ok());
    }
}
