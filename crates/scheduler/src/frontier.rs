//! What a URL frontier client (a crawler speaking the URLFrontier
//! protocol to the daemon) does to a store, beside the sitemaps: it puts
//! URLs it discovered ([`Store::discover`]), reports the ones it fetched
//! with the earliest time to fetch them again, or none for "done"
//! ([`Store::put_known`]), reads and deletes queues
//! ([`Store::queues`], [`Store::delete_queue`]) and URLs
//! ([`Store::queue_urls`], [`Store::delete_urls`]).
//!
//! A queue is a host (`host[:port]`, [`keys::host_of`]): the store's unit
//! of politeness and counts. Its counts are the kept ones ([`Tally`]), so
//! reading them costs one key per queue.
//!
//! The rules, from the protocol's reference service:
//! - a discovered URL the store does not hold is added, due now, with the
//!   metadata sent; one it holds in any state is left as it is;
//! - a known URL is always written: with a refetch date it is due then (a
//!   date in the past is due now; a lease holding it is released), with
//!   none it is completed, out of the queue for good; its metadata is
//!   replaced. When the client says how the fetch went ([`KnownUrl::completion`])
//!   the store records it as it records any completion (change-rate
//!   estimate, lastmod trust), and the client's date still decides when
//!   it is due.
//!
//! A URL the sitemaps list is scheduled by the store's policy as any
//! other: a client's date holds until a sitemap read changes what the
//! store knows of the URL (a newer lastmod, a new priority), which
//! schedules it anew.

use std::collections::HashMap;

use crate::hash::FastMap;
use crate::keys;
use crate::queue::Completion;
use crate::record::{HostRecord, Schedule, StoredReason, UrlRecord};
use crate::store::{Store, StoreError};
use crate::tally::Tally;
use crate::time::Timestamp;
use crate::view::UrlView;
use crate::writes::{Before, UrlWrites};

/// The most metadata bytes (keys and values) stored with one URL: a
/// client that sends more has its metadata cut to the entries that fit,
/// in the order sent.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;

/// Metadata as a frontier client sends it: keys, each with its values.
pub type Metadata = Vec<(String, Vec<String>)>;

/// URL records removed per batch by [`Store::delete_queue`] and
/// [`Store::delete_urls`]: a queue of a million URLs is removed in
/// batches, each one atomic.
const DELETE_BATCH: usize = 10_000;

/// What became of one URL a client put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// Written.
    Stored,
    /// A discovered URL the store already holds: nothing changed.
    Known,
    /// Not an absolute http(s) URL, or too long: not stored.
    Invalid,
}

/// A URL a client fetched (or scheduled), for [`Store::put_known`].
#[derive(Debug, Clone, PartialEq)]
pub struct KnownUrl {
    /// The URL, as sent.
    pub url: String,
    /// When to fetch it again at the earliest; `None`: never (completed).
    pub refetch: Option<Timestamp>,
    /// What the client stores with it (replaces what was stored).
    pub metadata: Metadata,
}

/// The queue of a URL as the store holds it (normalised): its host,
/// `host[:port]`.
pub fn queue_of(url: &str) -> &str {
    keys::host_of(url)
}

/// One queue's counts ([`Store::queues`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueCounts {
    /// URLs scheduled, handed out ones included (neither completed nor
    /// out of the queue).
    pub scheduled: u64,
    /// URLs handed out whose lease was not completed (one that ran out is
    /// counted until the URL is handed out again or reported).
    pub leased: u64,
    /// URLs completed.
    pub completed: u64,
    /// URLs out of the queue otherwise: retired (absent from their
    /// sitemaps) or disallowed by robots.txt.
    pub out: u64,
}

impl QueueCounts {
    fn of(t: &Tally) -> QueueCounts {
        let count = crate::tally::count;
        QueueCounts {
            scheduled: count(t.active),
            leased: count(t.leases),
            completed: count(t.completed),
            out: count(t.retired).saturating_add(count(t.blocked)),
        }
    }

    /// Every URL of the queue, in any state.
    pub fn total(&self) -> u64 {
        self.scheduled
            .saturating_add(self.completed)
            .saturating_add(self.out)
    }
}

/// `metadata` cut to [`MAX_METADATA_BYTES`]: whole entries, in order (what
/// the store keeps of a client's metadata).
pub fn bounded_metadata(metadata: Metadata) -> Metadata {
    let mut used = 0usize;
    let mut out = Vec::new();
    for (key, values) in metadata {
        let size = key.len() + values.iter().map(|v| v.len() + 1).sum::<usize>() + 1;
        if used + size > MAX_METADATA_BYTES {
            tracing::debug!(key, "metadata over the limit not stored");
            break;
        }
        used += size;
        out.push((key, values));
    }
    out
}

impl Store {
    /// URLs a client discovered, each with its metadata: one the store
    /// does not hold is added, due now ([`Put::Stored`]); one it holds is
    /// left as it is ([`Put::Known`], a repeat within `items` too); one
    /// that is not an absolute http(s) URL is [`Put::Invalid`]. One atomic
    /// write; what was found, in the order given.
    pub fn discover(
        &self,
        items: impl IntoIterator<Item = (String, Metadata)>,
        now: Timestamp,
    ) -> Result<Vec<Put>, StoreError> {
        let now = now.unix();
        let _lock = self.lock();
        let mut added: HashMap<String, UrlRecord> = HashMap::new();
        let mut hosts: HashMap<String, HostRecord> = HashMap::new();
        let mut rules = crate::robots::RulesCache::new(self);
        let mut found = Vec::new();
        let mut writes = UrlWrites::new(self);
        for (url, metadata) in items {
            let Ok(norm) = sitemapd_parser::NormUrl::parse_limited(&url) else {
                found.push(Put::Invalid);
                continue;
            };
            let url = norm.into_string();
            if added.contains_key(&url) || writes.read(&url)?.is_some() {
                found.push(Put::Known);
                continue;
            }
            let mut rec = UrlRecord::new(now, &[]);
            rec.metadata = bounded_metadata(metadata);
            rules.mark(&url, &mut rec)?;
            let host_name = keys::host_of(&url);
            if !hosts.contains_key(host_name) {
                hosts.insert(host_name.to_string(), self.host_record(host_name)?);
            }
            let host = &hosts[host_name];
            let due = self.schedule(&url, &rec, host, now);
            rec.schedule = Schedule {
                due: now,
                score: due.score as f32,
                reason: StoredReason::New,
                lease: None,
            };
            added.insert(url, rec);
            found.push(Put::Stored);
        }
        for (url, rec) in &mut added {
            writes.put(url, None, rec)?;
        }
        writes.apply()?;
        Ok(found)
    }

    /// URLs a client fetched or scheduled ([`KnownUrl`]), written whatever
    /// the store held (see the module docs); one that is not an absolute
    /// http(s) URL is [`Put::Invalid`]. `outcome` tells from an item and
    /// the metadata stored before (empty for a URL new to the store) how
    /// the fetch went, when the client said: it is recorded as any
    /// completion is. A URL put twice takes the last. One atomic write;
    /// what was done, in the order given.
    pub fn put_known(
        &self,
        items: Vec<KnownUrl>,
        now: Timestamp,
        outcome: impl Fn(&KnownUrl, &Metadata) -> Option<Completion>,
    ) -> Result<Vec<Put>, StoreError> {
        let now = now.unix();
        let _lock = self.lock();
        let mut records: FastMap<String, (UrlRecord, Option<Before>)> = FastMap::default();
        let mut hosts: FastMap<String, (HostRecord, bool)> = FastMap::default();
        let mut rules = crate::robots::RulesCache::new(self);
        let mut found = Vec::with_capacity(items.len());
        let mut writes = UrlWrites::new(self);
        for item in items {
            let Ok(norm) = sitemapd_parser::NormUrl::parse_limited(&item.url) else {
                found.push(Put::Invalid);
                continue;
            };
            let url = norm.as_str().to_string();
            let (mut rec, before) = match records.remove(&url) {
                Some(known) => known,
                None => match writes.read(&url)? {
                    Some(mut rec) => {
                        let before = writes.before(&url, &mut rec)?;
                        (rec, Some(before))
                    }
                    None => {
                        let mut rec = UrlRecord::new(now, &[]);
                        rules.mark(&url, &mut rec)?;
                        (rec, None)
                    }
                },
            };
            let host_name = keys::host_of(&url);
            if !hosts.contains_key(host_name) {
                hosts.insert(host_name.to_string(), (self.host_record(host_name)?, false));
            }
            let (host, host_changed) = hosts.get_mut(host_name).expect("inserted above");
            if let Some(completion) = outcome(&item, &rec.metadata) {
                rec = self.apply_completion(&url, rec, &completion, host, host_changed, now);
                self.add_redirect_target(
                    &norm,
                    &rec,
                    &completion,
                    host,
                    &mut rules,
                    &mut records,
                    now,
                )?;
            }
            rec.metadata = bounded_metadata(item.metadata);
            match item.refetch {
                None => {
                    rec.completed = true;
                    rec.schedule.lease = None;
                }
                Some(at) => {
                    // Scheduled, whatever took it out of the queue before
                    // (a completion, the absence from its sitemaps; not
                    // its host's robots.txt, which still holds).
                    rec.completed = false;
                    rec.retired = false;
                    let score = rec.schedule.score;
                    rec.schedule = Schedule {
                        due: at.unix(),
                        score,
                        reason: StoredReason::Requested,
                        lease: None,
                    };
                }
            }
            records.insert(url, (rec, before));
            found.push(Put::Stored);
        }
        for (url, (rec, before)) in &mut records {
            writes.put(url, before.as_ref(), rec)?;
        }
        for (name, (host, changed)) in hosts {
            if changed {
                writes.host(&name, host);
            }
        }
        writes.apply()?;
        Ok(found)
    }

    /// Every queue (host) the store keeps counts for, in name order, with
    /// its counts. A queue stays until [`Store::delete_queue`], its URLs
    /// all deleted or not.
    pub fn queues(&self) -> impl Iterator<Item = Result<(String, QueueCounts), StoreError>> + '_ {
        self.records::<HostRecord>([keys::HOST])
            .filter(crate::error::intact)
            .filter_map(|item| {
                item.map(|(name, host)| Some((name, QueueCounts::of(&host.counts?))))
                    .transpose()
            })
    }

    /// The counts of queue `host`, if the store keeps any.
    pub fn queue(&self, host: &str) -> Result<Option<QueueCounts>, StoreError> {
        match self.get::<HostRecord>(&keys::host(host)) {
            Ok(record) => Ok(record.and_then(|h| h.counts).map(|t| QueueCounts::of(&t))),
            Err(StoreError::Record { .. }) => Ok(Some(QueueCounts::of(&Tally::default()))),
            Err(e) => Err(e),
        }
    }

    /// The URLs of queue `host` (every queue's when `None`), in any state,
    /// in URL order (http before https within a host). Records that do not
    /// decode are passed over.
    pub fn queue_urls<'a>(
        &'a self,
        host: Option<&'a str>,
        now: Timestamp,
    ) -> Box<dyn Iterator<Item = Result<UrlView, StoreError>> + 'a> {
        let view = move |item: Result<(String, UrlRecord), StoreError>| {
            item.map(|(url, r)| UrlView::of(&url, &r, now))
        };
        match host {
            Some(host) => Box::new(self.with_leases(self.host_urls(host)).map(view)),
            None => Box::new(
                self.with_leases(self.all_url_records().filter(crate::error::intact))
                    .map(view),
            ),
        }
    }

    /// Deletes the URLs of queue `host` (of every queue when `None`) that
    /// the store first held before `cutoff`: [`Store::delete_urls`] a batch
    /// at a time, each pass of the scan going on from where the last one
    /// stopped (not from the first URL again). The number deleted.
    pub fn purge(&self, host: Option<&str>, cutoff: Timestamp) -> Result<u64, StoreError> {
        self.purge_in_batches(host, cutoff, DELETE_BATCH)
    }

    fn purge_in_batches(
        &self,
        host: Option<&str>,
        cutoff: Timestamp,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let prefixes = match host {
            Some(host) => crate::store::host_prefixes(host),
            None => vec![Vec::new()],
        };
        let mut deleted = 0;
        for prefix in prefixes {
            let mut end = prefix.clone();
            match end.last_mut() {
                Some(last) => *last += 1, // a host's prefix ends in '/': never 0xff
                None => end.push(0xff),
            }
            let mut from = prefix;
            loop {
                let mut old = Vec::new();
                let mut read_to = None;
                let mut whole = true;
                for item in self.url_records_in(&from, &end) {
                    let Ok((url, rec)) = item else {
                        continue; // a record that does not decode: `check` names it
                    };
                    if rec.first_seen < cutoff.unix() {
                        old.push(url.clone());
                    }
                    read_to = Some(url);
                    if old.len() >= batch {
                        whole = false;
                        break;
                    }
                }
                deleted += self.delete_urls(&old)?;
                match read_to {
                    Some(url) if !whole => {
                        from = url.into_bytes();
                        from.push(0);
                    }
                    _ => break,
                }
            }
        }
        Ok(deleted)
    }

    /// Deletes queue `host`: its URLs, their due entries, its counts, its
    /// host record and robots rules. The number of URLs deleted.
    pub fn delete_queue(&self, host: &str) -> Result<u64, StoreError> {
        let mut deleted = 0;
        loop {
            let urls: Vec<String> = self
                .host_urls(host)
                .take(DELETE_BATCH)
                .map(|item| item.map(|(url, _)| url))
                .collect::<Result<_, _>>()?;
            if urls.is_empty() {
                break;
            }
            deleted += self.delete_urls(&urls)?;
        }
        // The queue goes with its last URL: unless a writer (an ingest)
        // added one since, its counts are zero now.
        let _lock = self.lock();
        if self.tally(host)?.is_zero() {
            let mut batch = crate::kv::Batch::default();
            for key in [keys::host(host), keys::robots(host)] {
                batch.remove(key);
            }
            self.unfile(host, &mut batch)?;
            self.kv.apply_batch(batch)?;
        }
        Ok(deleted)
    }

    /// Files each host under a client's queue `key` (a URL frontier key
    /// that is not the host: a domain, an IP address …): the queue holds
    /// the URLs of every host filed under it. A host is under one key at a
    /// time, the last one given; its own name as the key files it back
    /// under itself.
    pub fn file_under<'a>(
        &self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), StoreError> {
        let _lock = self.lock();
        let mut batch = crate::kv::Batch::default();
        let mut filed: HashMap<&str, &str> = HashMap::new();
        for (host, key) in pairs {
            filed.insert(host, key);
        }
        for (host, key) in filed {
            if self.queue_key(host)?.as_deref() == Some(key) {
                continue;
            }
            self.unfile(host, &mut batch)?;
            if key != host {
                batch.insert(keys::queue_of(host), key.as_bytes());
                batch.insert(keys::queue_host(key, host), &[]);
            }
        }
        self.kv.apply_batch(batch)
    }

    /// Takes `host` out of the queue it is filed under, if any (in `batch`).
    fn unfile(&self, host: &str, batch: &mut crate::kv::Batch) -> Result<(), StoreError> {
        if let Some(old) = self.queue_key(host)? {
            batch.remove(keys::queue_of(host));
            batch.remove(keys::queue_host(&old, host));
        }
        Ok(())
    }

    /// The client's queue `host` is filed under ([`Store::file_under`]),
    /// if any.
    pub fn queue_key(&self, host: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .kv
            .get(keys::queue_of(host))?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// The hosts filed under the client's queue `key`, in name order.
    pub fn hosts_under(&self, key: &str) -> Result<Vec<String>, StoreError> {
        let prefix = keys::queue_hosts(key);
        self.kv
            .scan_prefix(&prefix)
            .map(|item| item.map(|(k, _)| String::from_utf8_lossy(&k[prefix.len()..]).into_owned()))
            .collect()
    }

    /// Deletes the records of `urls` (as the store holds them, normalised)
    /// with their due entries, their hosts' counts kept in step; batches of
    /// [`DELETE_BATCH`], each atomic. The number deleted (a URL the store
    /// does not hold counts none).
    pub fn delete_urls(&self, urls: &[String]) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for chunk in urls.chunks(DELETE_BATCH) {
            let _lock = self.lock();
            let mut writes = UrlWrites::new(self);
            let mut seen = std::collections::HashSet::new();
            for url in chunk {
                if !seen.insert(url) {
                    continue;
                }
                if let Some(mut rec) = self.url_record(url)? {
                    let before = writes.before(url, &mut rec)?;
                    writes.remove(url, &before)?;
                    deleted += 1;
                }
            }
            writes.apply()?;
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Completion, LeaseRequest, Outcome, StoreOptions};

    const T0: i64 = 1_700_000_000;

    fn ts(t: i64) -> Timestamp {
        Timestamp::from_unix(t)
    }

    fn known(url: &str, refetch: Option<i64>) -> KnownUrl {
        KnownUrl {
            url: url.into(),
            refetch: refetch.map(ts),
            metadata: vec![("depth".into(), vec!["1".into()])],
        }
    }

    /// No outcome said.
    fn silent(_: &KnownUrl, _: &Metadata) -> Option<Completion> {
        None
    }

    /// A store with two URLs of a.example and one of b.example, discovered.
    fn two_hosts() -> Store {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        let items = [
            "https://a.example/1",
            "https://a.example/2",
            "https://b.example/1",
        ]
        .map(|u| (u.to_string(), Vec::new()));
        s.discover(items, ts(T0)).unwrap();
        s
    }

    fn host_key(name: &str) -> sitemapd_parser::HostKey {
        let home = format!("https://{name}/");
        sitemapd_parser::NormUrl::parse(&home).unwrap().host_key()
    }

    fn urls(leased: &[crate::Leased]) -> Vec<&str> {
        leased.iter().map(|l| l.url.as_str()).collect()
    }

    #[test]
    fn discovered_urls_are_added_once_and_known_ones_left_alone() {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        let meta = vec![("k".to_string(), vec!["v".to_string()])];
        let put = s
            .discover(
                [
                    ("https://a.example/1".to_string(), meta.clone()),
                    ("https://a.example/1".to_string(), Vec::new()),
                    ("not a url".to_string(), Vec::new()),
                ],
                ts(T0),
            )
            .unwrap();
        assert_eq!(put, [Put::Stored, Put::Known, Put::Invalid]);
        let again = s
            .discover(
                [("https://a.example/1".to_string(), Vec::new())],
                ts(T0 + 5),
            )
            .unwrap();
        assert_eq!(again, [Put::Known]);
        let view = s.url("https://a.example/1").unwrap().unwrap();
        assert_eq!((view.metadata, view.due), (meta, ts(T0)));
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn a_known_url_is_due_at_its_date_and_completed_without_one() {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        let a = "https://a.example/a";
        let b = "https://a.example/b";
        s.put_known(
            vec![known(a, Some(T0 + 100)), known(b, None)],
            ts(T0),
            silent,
        )
        .unwrap();
        assert!(
            s.lease(&LeaseRequest::new(10), ts(T0 + 99))
                .unwrap()
                .is_empty()
        );
        let leased = s.lease(&LeaseRequest::new(10), ts(T0 + 100)).unwrap();
        assert_eq!(urls(&leased), [a]);
        assert_eq!(leased[0].metadata, known(a, None).metadata);
        // A known update releases the lease at once: due at its new date.
        s.put_known(vec![known(a, Some(T0))], ts(T0 + 101), silent)
            .unwrap();
        assert_eq!(
            urls(&s.lease(&LeaseRequest::new(10), ts(T0 + 101)).unwrap()),
            [a]
        );
        let q = s.queue("a.example").unwrap().unwrap();
        assert_eq!((q.scheduled, q.completed, q.total()), (1, 1, 2));
        let stats = s.stats(ts(T0)).unwrap();
        assert_eq!(stats.completed, 1);
        assert_eq!(stats.completed, s.full_stats(ts(T0)).unwrap().completed);
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn a_reported_fetch_is_recorded_and_the_date_still_holds() {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        let a = "https://a.example/a";
        s.discover([(a.to_string(), Vec::new())], ts(T0)).unwrap();
        s.lease(&LeaseRequest::new(1), ts(T0)).unwrap();
        let stored = vec![("depth".to_string(), vec!["0".to_string()])];
        s.put_known(vec![known(a, Some(T0))], ts(T0 + 1), silent)
            .unwrap();
        let mut item = known(a, Some(T0 + 3600));
        item.metadata = stored.clone();
        // The outcome is told from the item and what was stored before.
        s.put_known(vec![item], ts(T0 + 10), |k, before| {
            assert_eq!((k.url.as_str(), before), (a, &known(a, None).metadata));
            Some(Completion::from(Outcome::NotModified))
        })
        .unwrap();
        let view = s.url(a).unwrap().unwrap();
        assert_eq!((view.fetches, view.due), (1, ts(T0 + 3600)));
        assert_eq!(view.reason, crate::policy::Reason::Requested);
        assert_eq!(view.metadata, stored);
    }

    #[test]
    fn a_reported_redirect_adds_its_target_as_a_completion_does() {
        let s = two_hosts();
        let from = "https://a.example/1";
        let redirect = |to: &str| {
            let to = to.to_string();
            move |_: &KnownUrl, _: &Metadata| {
                Some(Completion::from(Outcome::Redirected {
                    status: 301,
                    to: to.clone(),
                }))
            }
        };
        s.put_known(
            vec![known(from, Some(T0 + 3600))],
            ts(T0 + 1),
            redirect("/1/"),
        )
        .unwrap();
        let target = s
            .url("https://a.example/1/")
            .unwrap()
            .expect("target added");
        assert_eq!(target.redirected_from.as_deref(), Some(from));
        assert_eq!(s.url(from).unwrap().unwrap().due, ts(T0 + 3600));
        // Another host's target is not followed.
        s.put_known(
            vec![known("https://a.example/2", Some(T0 + 3600))],
            ts(T0 + 2),
            redirect("https://c.example/"),
        )
        .unwrap();
        assert!(s.url("https://c.example/").unwrap().is_none());
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn a_batch_put_with_one_date_is_filed_in_due_lists() {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        let urls: Vec<String> = (0..40).map(|i| format!("https://a.example/{i}")).collect();
        s.discover(urls.iter().map(|u| (u.clone(), Vec::new())), ts(T0))
            .unwrap();
        s.lease(&LeaseRequest::new(40).per_host(40), ts(T0))
            .unwrap();
        let items = urls.iter().map(|u| known(u, Some(T0 + 3600))).collect();
        s.put_known(items, ts(T0 + 1), silent).unwrap();
        // One key per list of 32 (not one per URL), all due at the date.
        let report = s.check().unwrap();
        assert!(report.is_ok(), "{report:?}");
        assert_eq!(report.due_entries, 40);
        assert_eq!(s.kv.scan_prefix([keys::DUE]).count(), 2);
        let leased = s.lease(&LeaseRequest::new(100).per_host(100), ts(T0 + 3600));
        assert_eq!(leased.unwrap().len(), 40);
    }

    /// A date puts back in the queue a URL its sitemaps' absence retired.
    #[test]
    fn a_date_schedules_a_retired_url() {
        let s = two_hosts();
        let host = host_key("b.example");
        assert_eq!(s.retire_host(&host).unwrap(), 1);
        let b = "https://b.example/1";
        assert_eq!(s.url(b).unwrap().unwrap().status, crate::UrlStatus::Retired);
        s.put_known(vec![known(b, Some(T0))], ts(T0), silent)
            .unwrap();
        let leased = s
            .lease_admitting(&LeaseRequest::new(10), ts(T0), |h| {
                usize::from(h == "b.example")
            })
            .unwrap();
        assert_eq!(urls(&leased), [b]);
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn an_admit_rule_limits_a_lease_per_host() {
        let s = two_hosts();
        let leased = s
            .lease_admitting(&LeaseRequest::new(10), ts(T0), |host| {
                usize::from(host == "a.example")
            })
            .unwrap();
        assert_eq!(leased.len(), 1);
        assert!(leased[0].url.starts_with("https://a.example/"));
    }

    #[test]
    fn a_lease_takes_the_urls_of_max_hosts_hosts_at_most() {
        let s = two_hosts();
        let request = LeaseRequest::new(10).per_host(10).max_hosts(1);
        let leased = s.lease(&request, ts(T0)).unwrap();
        assert_eq!(
            urls(&leased),
            ["https://a.example/1", "https://a.example/2"]
        );
        // The other host is left for the next lease.
        let leased = s.lease(&request, ts(T0)).unwrap();
        assert_eq!(urls(&leased), ["https://b.example/1"]);
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn a_lease_looks_at_twice_max_hosts_hosts_and_serves_max_hosts() {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        let items = ["a", "b", "c"]
            .into_iter()
            .flat_map(|h| (0..3).map(move |i| (format!("https://{h}.example/{i}"), Vec::new())));
        s.discover(items, ts(T0)).unwrap();
        let mut asked = Vec::new();
        let request = LeaseRequest::new(10).per_host(2).max_hosts(1);
        let leased = s
            .lease_admitting(&request, ts(T0), |host| {
                asked.push(host.to_string());
                usize::MAX
            })
            .unwrap();
        // Twice max_hosts hosts are looked at (a choice by urgency): c is
        // never asked; the URLs of one host are handed out.
        assert_eq!(asked, ["a.example", "b.example"]);
        assert_eq!(leased.len(), 2);
        assert!(
            urls(&leased)
                .iter()
                .all(|u| u.starts_with("https://a.example/"))
        );
    }

    #[test]
    fn a_purge_deletes_the_old_urls_pass_after_pass() {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        // Old and young URLs interleaved in key order, on two schemes.
        let url = |i: usize| {
            let scheme = if i % 3 == 0 { "http" } else { "https" };
            format!("{scheme}://a.example/{i:02}")
        };
        let (old, young): (Vec<usize>, Vec<usize>) = (0..12).partition(|i| i % 2 == 0);
        s.discover(old.iter().map(|&i| (url(i), Vec::new())), ts(T0))
            .unwrap();
        s.discover(young.iter().map(|&i| (url(i), Vec::new())), ts(T0 + 100))
            .unwrap();
        s.discover([("https://b.example/1".to_string(), Vec::new())], ts(T0))
            .unwrap();
        // Batches of 2: six passes over a.example, each going on from the
        // last.
        let purged = s.purge_in_batches(Some("a.example"), ts(T0 + 50), 2);
        assert_eq!(purged.unwrap(), 6);
        for i in 0..12 {
            assert_eq!(s.url(&url(i)).unwrap().is_some(), i % 2 == 1, "{}", url(i));
        }
        assert!(s.url("https://b.example/1").unwrap().is_some());
        // Every queue: b.example's old URL goes too.
        assert_eq!(s.purge(None, ts(T0 + 50)).unwrap(), 1);
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn hosts_are_filed_under_a_client_key_one_at_a_time() {
        let s = two_hosts();
        s.file_under([("a.example", "example"), ("b.example", "example")])
            .unwrap();
        assert_eq!(
            s.hosts_under("example").unwrap(),
            ["a.example", "b.example"]
        );
        assert_eq!(
            s.queue_key("a.example").unwrap().as_deref(),
            Some("example")
        );
        // The last key given holds; the host's own name files it back.
        s.file_under([("a.example", "other"), ("b.example", "b.example")])
            .unwrap();
        assert_eq!(s.hosts_under("other").unwrap(), ["a.example"]);
        assert!(s.hosts_under("example").unwrap().is_empty());
        assert_eq!(s.queue_key("b.example").unwrap(), None);
        // A deleted queue leaves no filing behind.
        s.delete_queue("a.example").unwrap();
        assert!(s.hosts_under("other").unwrap().is_empty());
        assert_eq!(s.queue_key("a.example").unwrap(), None);
    }

    #[test]
    fn a_deleted_queue_takes_its_urls_and_counts() {
        let s = two_hosts();
        s.lease(&LeaseRequest::new(1), ts(T0)).unwrap();
        assert_eq!(s.delete_queue("a.example").unwrap(), 2);
        assert_eq!(s.delete_queue("a.example").unwrap(), 0);
        let names: Vec<String> = s.queues().map(|q| q.unwrap().0).collect();
        assert_eq!(names, ["b.example"]);
        assert_eq!(s.queue_urls(None, ts(T0)).count(), 1);
        assert!(s.check().unwrap().is_ok());
        assert_eq!(s.stats(ts(T0)).unwrap().active, 1);
    }

    /// The queue's robots rules go with it: a URL put in the queue again
    /// is not blocked by the rules the deleted queue was leased under.
    #[test]
    fn a_deleted_queue_takes_its_robots_rules() {
        let s = two_hosts();
        let host = host_key("a.example");
        let rules = sitemapd_parser::RobotsRules::new(vec![(false, "/".into())], None);
        s.set_robots(&host, &rules, ts(T0)).unwrap();
        // A lease reads the rules.
        assert_eq!(
            urls(&s.lease(&LeaseRequest::new(10), ts(T0)).unwrap()),
            ["https://b.example/1"]
        );
        s.delete_queue("a.example").unwrap();
        s.discover([("https://a.example/3".to_string(), Vec::new())], ts(T0))
            .unwrap();
        let view = s.url("https://a.example/3").unwrap().unwrap();
        assert_eq!(view.status, crate::view::UrlStatus::Queued);
        assert_eq!(
            urls(&s.lease(&LeaseRequest::new(10), ts(T0 + 10)).unwrap()),
            ["https://a.example/3"]
        );
    }

    #[test]
    fn crawls_never_share_a_url_and_drop_whole() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let c = s.crawl("news").unwrap();
        c.discover([("https://a.example/1".to_string(), Vec::new())], ts(T0))
            .unwrap();
        assert!(s.url("https://a.example/1").unwrap().is_none());
        assert_eq!(s.crawl("news").unwrap().queues().count(), 1);
        assert_eq!(s.crawl_names(), ["news"]);
        assert!(s.drop_crawl("news").unwrap());
        assert!(s.crawl_names().is_empty());
        assert_eq!(s.crawl("news").unwrap().queues().count(), 0);
    }
}
