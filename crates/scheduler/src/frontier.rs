//! What a URL frontier client (a crawler speaking the URLFrontier
//! protocol to the daemon) does to a store, beside the sitemaps: it puts
//! URLs it discovered ([`Store::discover`](crate::Store::discover)), reports the ones it fetched
//! with the earliest time to fetch them again, or none for "done"
//! ([`Store::put_known`](crate::Store::put_known)), reads and deletes queues
//! ([`Store::queues`](crate::Store::queues), [`Store::delete_queue`](crate::Store::delete_queue)) and URLs
//! ([`Store::queue_urls`](crate::Store::queue_urls), [`Store::delete_urls`](crate::Store::delete_urls)).
//!
//! A URL is in one queue: the one a client put it in (the key it sent, or
//! the host it derived), else its host (`host[:port]`, `keys::host_of`).
//! A queue's counts are the kept ones (`Tally`, in the record of the
//! queue's name), so reading them costs one key per queue; its URLs are
//! its host's that no client put elsewhere and those a client put in it
//! (`keys::queue_member`). Politeness stays per host, whatever queues
//! a host's URLs are in.
//!
//! The rules, from the protocol's reference service:
//! - a discovered URL the store does not hold is added, due now, with the
//!   metadata sent; one it holds in any state is left as it is;
//! - a known URL is always written: with a refetch date it is due then (a
//!   date in the past is due now; a lease holding it is released), with
//!   none it is completed, out of the queue for good; its metadata is
//!   replaced. When the client says how the fetch went (the `outcome` of
//!   [`Store::put_known`](crate::Store::put_known))
//!   the store records it as it records any completion (change-rate
//!   estimate, lastmod trust), and the client's date still decides when
//!   it is due.
//!
//! A URL the sitemaps list is scheduled by the store's policy as any
//! other: a client's date holds until a sitemap read changes what the
//! store knows of the URL (a newer lastmod, a new priority), which
//! schedules it anew.

use std::collections::HashMap;

use crate::error::StoreError;
use crate::hash::FastMap;
use crate::keys;
use crate::marks::Marks;
use crate::partition::Partition;
use crate::queue::Completion;
use crate::record::{HostRecord, Schedule, StoredReason, UrlRecord};
use crate::revive::Revivals;
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

/// URL records removed per batch by [`Store::delete_queue`](crate::Store::delete_queue) and
/// [`Store::delete_urls`](crate::Store::delete_urls): a queue of a million URLs is removed in
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

/// A URL a client fetched (or scheduled), for [`Store::put_known`](crate::Store::put_known).
#[derive(Debug, Clone, PartialEq)]
pub struct KnownUrl {
    /// The URL, as sent.
    pub url: String,
    /// When to fetch it again at the earliest; `None`: never (completed).
    pub refetch: Option<Timestamp>,
    /// What the client stores with it (replaces what was stored).
    pub metadata: Metadata,
    /// The queue it goes in (`None`: its host's). A URL is in one queue
    /// at a time: the last one given.
    pub queue: Option<String>,
}

/// A URL a client discovered, for [`Store::discover`](crate::Store::discover).
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredUrl {
    /// The URL, as sent.
    pub url: String,
    /// What the client stores with it.
    pub metadata: Metadata,
    /// The queue it goes in (`None`: its host's).
    pub queue: Option<String>,
}

impl From<(String, Metadata)> for DiscoveredUrl {
    /// A URL with its metadata, in its host's queue.
    fn from((url, metadata): (String, Metadata)) -> Self {
        DiscoveredUrl {
            url,
            metadata,
            queue: None,
        }
    }
}

impl DiscoveredUrl {
    /// `url` with no metadata, in its host's queue.
    pub fn new(url: impl Into<String>) -> DiscoveredUrl {
        DiscoveredUrl {
            url: url.into(),
            metadata: Vec::new(),
            queue: None,
        }
    }
}

/// The longest queue name the store keeps, in bytes (a URL frontier key
/// has at most 255 characters, of up to 4 bytes each).
pub const MAX_QUEUE_BYTES: usize = 1024;

/// The queue `url` (normalised) goes in when a client names `queue`:
/// `None` for its host's own; `Err` for a name the store cannot keep
/// (empty, longer than [`MAX_QUEUE_BYTES`], or with a control character).
fn queue_for(queue: Option<String>, url: &str) -> Result<Option<String>, ()> {
    match queue {
        None => Ok(None),
        Some(q) if q.is_empty() || q.len() > MAX_QUEUE_BYTES || q.chars().any(char::is_control) => {
            Err(())
        }
        Some(q) if q == keys::host_of(url) => Ok(None),
        Some(q) => Ok(Some(q)),
    }
}

/// One queue's counts ([`Store::queues`](crate::Store::queues)).
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

    /// Adds `other`'s counts (another partition's part of the queue).
    pub(crate) fn absorb(&mut self, other: &QueueCounts) {
        self.scheduled += other.scheduled;
        self.leased += other.leased;
        self.completed += other.completed;
        self.out += other.out;
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

impl Partition {
    /// URLs a client discovered, each with its metadata and queue: one the
    /// store does not hold is added, due now ([`Put::Stored`]); one it
    /// holds is left as it is, in its queue ([`Put::Known`], a repeat within
    /// `items` too); one that is not an absolute http(s) URL, or whose
    /// queue name the store cannot keep, is [`Put::Invalid`]. One atomic
    /// write; what was found, in the order given.
    pub(crate) fn discover(
        &self,
        items: impl IntoIterator<Item = impl Into<DiscoveredUrl>>,
        now: Timestamp,
    ) -> Result<Vec<Put>, StoreError> {
        let now = now.unix();
        let _lock = self.lock();
        let mut added: HashMap<String, UrlRecord> = HashMap::new();
        let mut hosts: HashMap<String, HostRecord> = HashMap::new();
        let mut rules = crate::robots::RulesCache::new(self);
        let mut found = Vec::new();
        let mut writes = UrlWrites::new(self);
        for item in items {
            let item: DiscoveredUrl = item.into();
            let Ok(norm) = sitemapd_parser::NormUrl::parse_limited(&item.url) else {
                found.push(Put::Invalid);
                continue;
            };
            let url = norm.into_string();
            let Ok(queue) = queue_for(item.queue, &url) else {
                found.push(Put::Invalid);
                continue;
            };
            if added.contains_key(&url) || writes.read(&url)?.is_some() {
                found.push(Put::Known);
                continue;
            }
            let mut rec = UrlRecord::new(now, &[]);
            rec.metadata = bounded_metadata(item.metadata);
            rec.queue = queue;
            rules.mark(&url, &mut rec)?;
            let host_name = keys::host_of(&url);
            if !hosts.contains_key(host_name) {
                hosts.insert(host_name.to_string(), self.host_record(host_name)?);
            }
            let host = &hosts[host_name];
            let due = self.schedule(&url, &rec, host, now);
            rec.schedule = Schedule {
                due: now,
                score: due.score,
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
    pub(crate) fn put_known(
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
        let mut pushes = crate::queue::PushOutcomes::default();
        let mut revivals = Revivals::default();
        for item in items {
            let Ok(norm) = sitemapd_parser::NormUrl::parse_limited(&item.url) else {
                found.push(Put::Invalid);
                continue;
            };
            let url = norm.as_str().to_string();
            let Ok(queue) = queue_for(item.queue.clone(), &url) else {
                found.push(Put::Invalid);
                continue;
            };
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
                pushes.completed(self, &url, rec.schedule.reason, &completion)?;
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
            rec.queue = queue;
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
                    revivals.revive(self, &mut rec)?;
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
        pushes.write(&mut writes);
        revivals.write(writes.batch());
        writes.apply()?;
        Ok(found)
    }

    /// Every queue the store keeps counts for, in name order, with its
    /// counts. A queue stays until [`Store::delete_queue`](crate::Store::delete_queue), its URLs all
    /// deleted or not.
    pub(crate) fn queues(
        &self,
    ) -> impl Iterator<Item = Result<(String, QueueCounts), StoreError>> + '_ {
        self.records::<HostRecord>([keys::HOST])
            .filter(|item| self.intact(item))
            .filter_map(|item| {
                item.map(|(name, host)| Some((name, QueueCounts::of(&host.counts?))))
                    .transpose()
            })
    }

    /// The counts of queue `name`, if the store keeps any.
    pub(crate) fn queue(&self, name: &str) -> Result<Option<QueueCounts>, StoreError> {
        match self.get::<HostRecord>(&keys::host(name)) {
            Ok(record) => Ok(record.and_then(|h| h.counts).map(|t| QueueCounts::of(&t))),
            Err(StoreError::Record { key, .. }) => {
                self.kv.passed_over(&key);
                Ok(Some(QueueCounts::of(&Tally::default())))
            }
            Err(e) => Err(e),
        }
    }

    /// The records of queue `name` (every queue's when `None`), in any
    /// state: its host's URLs that no client put in another queue (http
    /// before https), then those a client put in it, each part in URL
    /// order, from `from` on (a place [`QueueRecords`] gave). Records that
    /// do not decode are passed over.
    fn queue_records<'a>(&'a self, name: Option<&'a str>, from: Resume) -> QueueRecords<'a> {
        QueueRecords {
            store: self,
            name,
            at: from,
            current: None,
        }
    }

    /// The URLs of queue `name` (every queue's when `None`), in any state,
    /// in the order `Store::queue_records` gives: a stable order for
    /// paging.
    #[cfg(test)]
    pub(crate) fn queue_urls<'a>(
        &'a self,
        name: Option<&'a str>,
        now: Timestamp,
    ) -> Box<dyn Iterator<Item = Result<UrlView, StoreError>> + 'a> {
        Box::new(
            self.queue_urls_from(name, QueuePlace::default(), now)
                .map(|item| item.map(|(_, view)| view)),
        )
    }

    /// [`Store::queue_urls`](crate::Store::queue_urls) from a place a walk reached (`QueuePlace::default()`:
    /// the start), each URL with the place just after it: a long walk goes
    /// on in pieces, each its own short read of the store.
    pub(crate) fn queue_urls_from<'a>(
        &'a self,
        name: Option<&'a str>,
        from: QueuePlace,
        now: Timestamp,
    ) -> impl Iterator<Item = Result<(QueuePlace, UrlView), StoreError>> + 'a {
        let mut marks = Marks::default();
        let mut listings = crate::hash::FastMap::default();
        self.queue_records(name, from.0).map(move |item| {
            let (at, url, mut rec) = item?;
            marks.overlay(self, &url, &mut rec)?;
            self.sighted(&mut rec, &mut listings)?;
            Ok((QueuePlace(at.after()), UrlView::of(&url, &rec, now)))
        })
    }

    /// Deletes the URLs of queue `name` (of every queue when `None`) that
    /// the store first held before `cutoff`: [`Store::delete_urls`](crate::Store::delete_urls) a batch
    /// at a time, each pass of the scan going on from where the last one
    /// stopped (not from the first URL again). The number deleted.
    pub(crate) fn purge(&self, name: Option<&str>, cutoff: Timestamp) -> Result<u64, StoreError> {
        self.purge_in_batches(name, cutoff, DELETE_BATCH)
    }

    fn purge_in_batches(
        &self,
        name: Option<&str>,
        cutoff: Timestamp,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let mut deleted = 0;
        let mut from = Resume::default();
        loop {
            let mut old = Vec::new();
            let mut read_to = None;
            for item in self.queue_records(name, from.clone()) {
                let Ok((at, url, rec)) = item else {
                    continue; // a record that does not decode: `check` names it
                };
                if rec.first_seen < cutoff.unix() {
                    old.push(url);
                }
                read_to = Some(at);
                if old.len() >= batch {
                    break;
                }
            }
            let whole = old.len() < batch;
            deleted += self.delete_urls(&old)?;
            match read_to {
                Some(at) if !whole => from = at.after(),
                _ => return Ok(deleted),
            }
        }
    }

    /// Deletes queue `name`: its URLs, their due entries, its counts, and
    /// the host record and robots rules of a host of that name unless some
    /// of its URLs are in other queues (politeness stays per host). The
    /// number of URLs deleted.
    pub(crate) fn delete_queue(&self, name: &str) -> Result<u64, StoreError> {
        let mut deleted = 0;
        loop {
            let urls: Vec<String> = self
                .queue_records(Some(name), Resume::default())
                .filter(|item| self.intact(item))
                .take(DELETE_BATCH)
                .map(|item| item.map(|(_, url, _)| url))
                .collect::<Result<_, _>>()?;
            if urls.is_empty() {
                break;
            }
            deleted += self.delete_urls(&urls)?;
        }
        // The queue goes with its last URL: unless a writer (an ingest)
        // added one since, its counts are zero now.
        let _lock = self.lock();
        if self.tally(name)?.is_zero() {
            let mut batch = crate::kv::Batch::default();
            match self.get::<HostRecord>(&keys::host(name)) {
                Ok(Some(mut host)) if self.host_urls(name).next().is_some() => {
                    // A host some of whose URLs a client put in other
                    // queues: its politeness, trust and rules stay.
                    host.counts = None;
                    batch.insert(keys::host(name), crate::record::encode(&host));
                }
                _ => {
                    batch.remove(keys::host(name));
                    batch.remove(keys::robots(name));
                }
            }
            self.kv.apply_batch(batch)?;
        }
        Ok(deleted)
    }

    /// Deletes the records of `urls` (as the store holds them, normalised)
    /// with their due entries, their hosts' counts kept in step; batches of
    /// `DELETE_BATCH`, each atomic. The number deleted (a URL the store
    /// does not hold counts none).
    pub(crate) fn delete_urls(&self, urls: &[String]) -> Result<u64, StoreError> {
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

/// Where a walk over a queue's records is: which part (its host's URLs
/// over http, over https, then the URLs a client put in it; every record
/// for every queue), and the URL to go on from in it.
#[derive(Debug, Clone, Default)]
struct Resume {
    part: usize,
    from: Vec<u8>,
}

impl Resume {
    /// Just after this place.
    fn after(mut self) -> Resume {
        self.from.push(0);
        self
    }
}

/// Where a walk over a queue's URLs is ([`Store::queue_urls_from`](crate::Store::queue_urls_from)): the
/// same place in every partition (they walk their records in one order).
#[derive(Debug, Clone, Default)]
pub struct QueuePlace(Resume);

impl QueuePlace {
    /// The place in the walk's order: the part, then the URL.
    pub(crate) fn order(&self) -> (usize, &[u8]) {
        (self.0.part, &self.0.from)
    }
}

/// URL records with their URLs, one part of a queue's walk.
type Records<'a> = Box<dyn Iterator<Item = Result<(String, UrlRecord), StoreError>> + 'a>;

/// The records of a queue ([`Store::queue_records`](crate::Store::queue_records)), each with its place.
struct QueueRecords<'a> {
    store: &'a Partition,
    name: Option<&'a str>,
    at: Resume,
    current: Option<Records<'a>>,
}

impl QueueRecords<'_> {
    /// The part `part` of the walk, from `from` (URL bytes); `None` past
    /// the last part.
    fn part<'a>(
        store: &'a Partition,
        name: Option<&'a str>,
        part: usize,
        from: &[u8],
    ) -> Option<Records<'a>> {
        let Some(name) = name else {
            return (part == 0).then(|| {
                let from = from.to_vec();
                Box::new(store.url_records_in(&from, &[0xff])) as Records<'a>
            });
        };
        let ranges = crate::partition::host_ranges(name);
        if let Some((prefix, end)) = ranges.get(part) {
            let start = prefix.as_slice().max(from).to_vec();
            // Its host's URLs that no client put in another queue.
            // A record that does not decode is passed over (and counted).
            let own = store
                .url_records_in(&start, end)
                .filter(move |item| store.intact(item))
                .filter(|item| !matches!(item, Ok((_, rec)) if rec.queue.is_some()));
            return Some(Box::new(own));
        }
        if part > ranges.len() {
            return None;
        }
        // The URLs a client put in it.
        let members = keys::queue_members(name);
        let mut start = members.clone();
        start.extend_from_slice(from);
        let mut end = members.clone();
        end.push(0xff);
        let skip = members.len();
        let urls = store.kv.range(start..end).filter_map(move |item| {
            let url = match item {
                Ok((key, _)) => String::from_utf8_lossy(&key[skip..]).into_owned(),
                Err(e) => return Some(Err(e)),
            };
            match store.url_record(&url) {
                Ok(Some(rec)) if rec.queue.as_deref() == Some(name) => Some(Ok((url, rec))),
                Ok(_) => None,
                Err(StoreError::Record { key, .. }) => {
                    store.kv.passed_over(&key);
                    None
                }
                Err(e) => Some(Err(e)),
            }
        });
        Some(Box::new(urls))
    }
}

impl Iterator for QueueRecords<'_> {
    /// A record with its place, its URL and itself.
    type Item = Result<(Resume, String, UrlRecord), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                self.current = Some(QueueRecords::part(
                    self.store,
                    self.name,
                    self.at.part,
                    &self.at.from,
                )?);
            }
            match self.current.as_mut()?.next() {
                Some(Ok((url, rec))) => {
                    let at = Resume {
                        part: self.at.part,
                        from: url.as_bytes().to_vec(),
                    };
                    return Some(Ok((at, url, rec)));
                }
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    self.current = None;
                    self.at = Resume {
                        part: self.at.part + 1,
                        from: Vec::new(),
                    };
                }
            }
        }
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
            queue: None,
        }
    }

    /// No outcome said.
    fn silent(_: &KnownUrl, _: &Metadata) -> Option<Completion> {
        None
    }

    /// A store with two URLs of a.example and one of b.example, discovered.
    fn two_hosts() -> Partition {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
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
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
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
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
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
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
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
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
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
            .lease_admitting(&LeaseRequest::new(10), None, ts(T0), |h| {
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
            .lease_admitting(&LeaseRequest::new(10), None, ts(T0), |host| {
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
    fn a_lease_stops_once_max_hosts_hosts_have_their_share() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let items = ["a", "b", "c"]
            .into_iter()
            .flat_map(|h| (0..3).map(move |i| (format!("https://{h}.example/{i}"), Vec::new())));
        s.discover(items, ts(T0)).unwrap();
        let mut asked = Vec::new();
        let request = LeaseRequest::new(10).per_host(2).max_hosts(1);
        let leased = s
            .lease_admitting(&request, None, ts(T0), |queue: &str| {
                asked.push(queue.to_string());
                usize::MAX
            })
            .unwrap();
        // The first host in the queue order gets its share, and no other
        // queue is asked.
        assert_eq!(asked, ["a.example"]);
        assert_eq!(leased.len(), 2);
        assert!(
            urls(&leased)
                .iter()
                .all(|u| u.starts_with("https://a.example/"))
        );
    }

    #[test]
    fn a_purge_deletes_the_old_urls_pass_after_pass() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        // Old and young URLs interleaved in key order, on two schemes.
        let url = |i: usize| {
            let scheme = if i.is_multiple_of(3) { "http" } else { "https" };
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

    fn keyed(url: &str, queue: &str) -> KnownUrl {
        KnownUrl {
            queue: Some(queue.to_string()),
            ..known(url, Some(T0))
        }
    }

    /// A URL is in the queue it was last put in; a host's URLs may be in
    /// several queues, each counted, listed, leased and deleted alone.
    #[test]
    fn a_url_is_in_the_queue_a_client_put_it_in() {
        let s = two_hosts();
        s.put_known(
            vec![
                keyed("https://a.example/1", "queue_mysite"),
                keyed("https://b.example/1", "queue_mysite"),
            ],
            ts(T0),
            silent,
        )
        .unwrap();
        let names: Vec<String> = s.queues().map(|q| q.unwrap().0).collect();
        assert_eq!(names, ["a.example", "b.example", "queue_mysite"]);
        let count = |q: &str| s.queue(q).unwrap().map(|c| c.scheduled);
        assert_eq!(
            (
                count("a.example"),
                count("b.example"),
                count("queue_mysite")
            ),
            (Some(1), Some(0), Some(2))
        );
        let listed: Vec<String> = s
            .queue_urls(Some("queue_mysite"), ts(T0))
            .map(|v| v.unwrap().url)
            .collect();
        assert_eq!(listed, ["https://a.example/1", "https://b.example/1"]);
        let own: Vec<String> = s
            .queue_urls(Some("a.example"), ts(T0))
            .map(|v| v.unwrap().url)
            .collect();
        assert_eq!(own, ["https://a.example/2"]);
        assert_eq!(
            s.url("https://a.example/1").unwrap().unwrap().queue,
            "queue_mysite"
        );
        // A lease of one queue hands out its URLs only, named by it.
        let request = LeaseRequest::new(10);
        let leased = s
            .lease_admitting(&request, Some("queue_mysite"), ts(T0), |_| usize::MAX)
            .unwrap();
        assert_eq!(
            urls(&leased),
            ["https://a.example/1", "https://b.example/1"]
        );
        assert!(leased.iter().all(|l| l.queue == "queue_mysite"));
        // Put again with the host's own name: back in the host's queue.
        s.put_known(
            vec![keyed("https://a.example/1", "a.example")],
            ts(T0 + 1),
            silent,
        )
        .unwrap();
        assert_eq!(count("queue_mysite"), Some(1));
        assert_eq!(count("a.example"), Some(2));
        assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
        assert_eq!(s.delete_queue("queue_mysite").unwrap(), 1);
        assert_eq!(s.queue("queue_mysite").unwrap(), None);
        assert!(s.url("https://b.example/1").unwrap().is_none());
        assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    }

    /// A queue name the store cannot keep: the item is invalid.
    #[test]
    fn a_queue_name_with_a_control_character_is_refused() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let put = s
            .put_known(vec![keyed("https://a.example/1", "a\0b")], ts(T0), silent)
            .unwrap();
        assert_eq!(put, [Put::Invalid]);
        let mut item = DiscoveredUrl::new("https://a.example/1");
        item.queue = Some(String::new());
        assert_eq!(s.discover([item], ts(T0)).unwrap(), [Put::Invalid]);
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

    /// Politeness stays per host: deleting a host's own queue keeps its
    /// rules and clock while a client's queue holds some of its URLs.
    #[test]
    fn deleting_a_host_queue_keeps_the_host_while_its_urls_are_elsewhere() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let t = ts(T0);
        s.discover([("https://a.example/own".to_string(), Vec::new())], t)
            .unwrap();
        let keyed = KnownUrl {
            url: "https://a.example/keyed".into(),
            refetch: Some(t),
            metadata: Vec::new(),
            queue: Some("K".into()),
        };
        s.put_known(vec![keyed], t, |_, _| None).unwrap();
        let host = sitemapd_parser::NormUrl::parse("https://a.example/")
            .unwrap()
            .host_key();
        let rules =
            sitemapd_parser::RobotsRules::new(vec![(false, "/private/".into())], Some(20.0));
        s.set_robots(&host, &rules, t).unwrap();
        assert_eq!(s.delete_queue("a.example").unwrap(), 1);
        assert!(s.url("https://a.example/keyed").unwrap().is_some());
        let kept = s.robots(&host).unwrap().expect("its rules stay");
        assert_eq!(kept.crawl_delay, Some(20.0));
        assert!(s.queue("a.example").unwrap().is_none(), "the queue is gone");
        assert!(s.check().unwrap().is_ok());
        // Its last URL gone, the host goes too.
        assert_eq!(s.delete_queue("K").unwrap(), 1);
        assert_eq!(s.delete_queue("a.example").unwrap(), 0);
        assert!(s.robots(&host).unwrap().is_none());
    }
}
