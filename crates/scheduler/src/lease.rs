//! Handing out due URLs: which are due ([`Store::peek`](crate::Store::peek)) and leasing them
//! ([`Store::lease`](crate::Store::lease), [`Store::lease_admitting`](crate::Store::lease_admitting)), in the queue order
//! (docs/queue.md, [`crate::scan`]).
//!
//! A lease takes due URLs in that order, one after the other, each if its
//! host and queue may be given one more: at most `per_host` per host, no
//! more than the host's politeness delay allows, no URL its robots.txt
//! disallows (marked `blocked`), and a URL frontier client's per-queue
//! rules ([`Store::lease_admitting`](crate::Store::lease_admitting)). Each decision depends only on the
//! URLs before it, so a lease of `k` URLs is the first `k` of a lease of
//! `n ≥ k` under the same limits. Validation samples get their share only:
//! each URL leased earns [`Params::validation_share`](crate::policy::Params::validation_share)
//! of a sample, and the samples that credit pays for come right after the
//! pushed URLs.
//!
//! A lease marks its URLs' due entries with the lease and its expiry, and
//! reads or writes no record ([`crate::marks`]), but those whose record it
//! must read (the entry says it holds a URL frontier client's metadata, or
//! its host lost the trust that made it urgent). A URL keeps its place in
//! the queue while leased, and one whose lease runs out without an outcome
//! is due again there, with the reason `lease-expired`. Each URL carries the
//! earliest time it should be fetched (`not_before`), spaced by its host's
//! delay.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::due_list::{Entries, Lease};
use crate::error::StoreError;
use crate::hash::FastMap;
use crate::keys;
use crate::partition::Credits;
use crate::partition::Partition;
use crate::policy::{Reason, Urgency};
use crate::record::{HostRecord, Listed, StoredReason, UrlRecord};
use crate::robots::RulesCache;
use crate::scan::{Found, Lanes, Scan, Taker, Verdict};
use crate::time::Timestamp;
use crate::writes::UrlWrites;
use std::sync::Mutex;

/// How a lease spaces a host's URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Politeness {
    /// Over the lease's time to live: a host gets one URL per politeness
    /// delay up to the lease's expiry, each with its `not_before` (what a
    /// crawler that honours `not_before` wants: the HTTP API, the CLI).
    #[default]
    Spaced,
    /// Now only: a host gets one URL if its next slot has come, none
    /// otherwise (what a crawler that fetches what it is given at once
    /// wants: URLFrontier's GetURLs). Its next slot moves one delay on from
    /// the end of the second the URL went out in (the store counts whole
    /// seconds: so two of its URLs go out at least the delay apart, in any
    /// part of a second). A host with no delay gets any number.
    Now,
}

/// What a crawler asks of [`Store::lease`](crate::Store::lease): how many URLs, how many of one
/// host and of how many hosts (and queues) at most, for how long, and how
/// a host's URLs are spaced.
///
/// ```
/// use std::time::Duration;
/// use sitemapd_scheduler::{LeaseRequest, Politeness};
///
/// let request = LeaseRequest::new(100).per_host(5).ttl(Duration::from_secs(600));
/// assert_eq!((request.n, request.per_host), (100, 5));
/// assert_eq!(LeaseRequest::new(100).ttl, LeaseRequest::DEFAULT_TTL);
/// assert_eq!(LeaseRequest::new(100).max_hosts(3).max_hosts, 3);
/// assert_eq!(LeaseRequest::new(1).politeness(Politeness::Now).politeness, Politeness::Now);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseRequest {
    /// URLs at most.
    pub n: usize,
    /// URLs of one host at most (0 counts as 1).
    pub per_host: usize,
    /// How long the lease holds (under a second counts as a second); a URL
    /// not completed by then is due again.
    pub ttl: Duration,
    /// Hosts at most that get URLs (`usize::MAX`, the default: any number;
    /// 0 counts as 1): the first this many hosts met in the queue order.
    pub max_hosts: usize,
    /// Queues at most that get URLs (`usize::MAX`, the default; 0 counts
    /// as 1): a URL frontier's `max_queues`.
    pub max_queues: usize,
    /// How a host's URLs are spaced.
    pub politeness: Politeness,
}

impl LeaseRequest {
    /// URLs of one host per lease when a request does not say.
    pub const DEFAULT_PER_HOST: usize = 10;
    /// A lease's time to live when a request does not say.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(300);
    /// The longest time to live a lease may ask for: 7 days (the HTTP
    /// API's `ttl_secs` and the CLI's `--lease` refuse more).
    pub const MAX_TTL: Duration = Duration::from_secs(7 * 86_400);

    /// Up to `n` URLs, [`DEFAULT_PER_HOST`](Self::DEFAULT_PER_HOST) per
    /// host, for [`DEFAULT_TTL`](Self::DEFAULT_TTL), spaced over it.
    pub const fn new(n: usize) -> LeaseRequest {
        LeaseRequest {
            n,
            per_host: Self::DEFAULT_PER_HOST,
            ttl: Self::DEFAULT_TTL,
            max_hosts: usize::MAX,
            max_queues: usize::MAX,
            politeness: Politeness::Spaced,
        }
    }

    /// URLs of at most `max_hosts` hosts.
    pub const fn max_hosts(mut self, max_hosts: usize) -> LeaseRequest {
        self.max_hosts = max_hosts;
        self
    }

    /// URLs of at most `max_queues` queues.
    pub const fn max_queues(mut self, max_queues: usize) -> LeaseRequest {
        self.max_queues = max_queues;
        self
    }

    /// At most `per_host` URLs of one host.
    pub const fn per_host(mut self, per_host: usize) -> LeaseRequest {
        self.per_host = per_host;
        self
    }

    /// Held for `ttl`.
    pub const fn ttl(mut self, ttl: Duration) -> LeaseRequest {
        self.ttl = ttl;
        self
    }

    /// A host's URLs spaced as `politeness` says.
    pub const fn politeness(mut self, politeness: Politeness) -> LeaseRequest {
        self.politeness = politeness;
        self
    }

    /// The time to live in whole seconds, at least 1.
    fn ttl_secs(&self) -> i64 {
        i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX).max(1)
    }
}

/// A URL handed out (or, from `peek`, due).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Leased {
    /// The URL, normalised.
    pub url: String,
    /// The queue it is in: its host (`host[:port]`), or the URL frontier
    /// queue a client put it in.
    pub queue: String,
    /// When it became due.
    pub due: Timestamp,
    /// Urgency (higher first).
    pub score: f32,
    /// Why it is due.
    pub reason: Reason,
    /// The lease id (absent from `peek`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<u64>,
    /// Until when the lease holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<Timestamp>,
    /// Fetch it no earlier than this (host politeness).
    pub not_before: Timestamp,
    /// What a URL frontier client stored with it ([`Store::put_known`](crate::Store::put_known)).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<(String, Vec<String>)>,
}

/// How many due URLs a count reads at most ([`Store::queue_depth`](crate::Store::queue_depth),
/// [`Store::stats`](crate::Store::stats)): a count of keys stops there, so
/// that it costs the same at any store size (about 100,000 entries read).
pub const DUE_COUNT_LIMIT: u64 = 100_000;

/// Validation credit a store may bank: a lease never gives more samples
/// than this at once.
const MAX_VALIDATION_CREDIT: f64 = 16.0;

/// Announcement credit a store may bank: a lease never hands out more
/// announced changes ahead of their turn than this.
const MAX_ANNOUNCED_CREDIT: f64 = 1000.0;

/// Due entries a lease may find out of date and set right (a URL its
/// host's robots.txt now disallows, one whose host lost the trust that made
/// it urgent, an entry no record names) before it passes over the rest of
/// such a lane: what one lease's batch rewrites for them is bounded, and
/// the store's own passes (`Store::set_robots`) reach the others.
const MAX_REPAIRS: usize = 1000;

/// The whole URLs a credit pays for.
fn whole(credit: f64) -> usize {
    credit.max(0.0).floor() as usize
}

/// A due entry a scan took, with its run as read.
struct Chosen {
    partition: usize,
    class: Urgency,
    queue: String,
    host: String,
    run: crate::kv::Bytes,
    value: crate::kv::Bytes,
    entries: Entries,
    index: usize,
    /// A lease it held that ran out.
    lease: Option<Lease>,
    /// Chosen ahead of its turn, paid for by a credit.
    paid: bool,
}

impl Chosen {
    fn of(found: &Found<'_>, paid: bool) -> Chosen {
        Chosen {
            paid,
            partition: found.partition,
            class: found.class,
            queue: found.queue.to_string(),
            host: found.host.to_string(),
            run: found.run.clone(),
            value: found.value.clone(),
            entries: Arc::clone(found.entries),
            index: found.index,
            lease: found.lease,
        }
    }

    fn entry(&self) -> &Listed {
        &self.entries[self.index]
    }

    /// Why it is handed out: a lease that ran out says so.
    fn reason(&self) -> Reason {
        match self.lease {
            Some(_) => Reason::LeaseExpired,
            None => Reason::from(self.entry().reason),
        }
    }

    /// Whether a lease marks its entry without reading its record: not if
    /// it must hand out the record's metadata, nor if its host is `suspect`
    /// (its lanes may hold an entry no record names), nor if its lastmod
    /// made it urgent and its host has lost the trust for that since (the
    /// record is rescheduled).
    fn markable(&self, host: &HostRecord, suspect: bool) -> bool {
        let entry = self.entry();
        !entry.legacy && !suspect && !entry.meta && trusted_enough(entry.reason, host)
    }
}

/// Whether `host` still has the trust that made a URL due for `reason`.
fn trusted_enough(reason: StoredReason, host: &HostRecord) -> bool {
    match reason {
        StoredReason::LastmodTrusted => host.trust.is_trusted(),
        StoredReason::LastmodNewer => host.trust.is_trusted() || host.trust.on_probation(),
        _ => true,
    }
}

/// One host a lease looked at: its record, how many URLs it may be given
/// and was given, whether it is suspect.
struct HostSlot {
    partition: usize,
    record: HostRecord,
    allowance: usize,
    given: usize,
    suspect: bool,
}

/// One queue a lease looked at: how many URLs it may be given and was.
struct QueueSlot {
    allowance: usize,
    given: usize,
}

/// The limits of a lease (none for a peek).
struct Limits<F> {
    ttl: i64,
    per_host: usize,
    politeness: Politeness,
    /// A URL frontier client's rule: URLs a queue may be given at most.
    admit: F,
}

/// Takes due URLs for a lease (or a peek), in the queue order, under its
/// limits.
struct Choice<'s, F> {
    parts: &'s [Partition],
    now: i64,
    limits: Option<Limits<F>>,
    max_hosts: usize,
    max_queues: usize,
    hosts: FastMap<String, HostSlot>,
    queues: FastMap<String, QueueSlot>,
    /// Hosts and queues given a URL, and how many of them have their share.
    hosts_given: usize,
    hosts_full: usize,
    queues_given: usize,
    queues_full: usize,
    /// Each partition's robots rules, as read.
    rules: Vec<RulesCache<'s>>,
    /// Due URLs the rules disallow, passed over (a lease marks them), with
    /// their partitions.
    blocked: Vec<(usize, String)>,
    /// Due entries passed over because their host lost the trust that
    /// made them urgent, or no record names them (a lease sets them right).
    stale: Vec<Chosen>,
    chosen: Vec<Chosen>,
    /// The URLs chosen: a later pass that reads a class again passes them.
    taken: std::collections::HashSet<String>,
    /// How many may be chosen in all, so far in this pass.
    limit: usize,
    /// Whether this pass's URLs are paid for by a credit.
    paid: bool,
}

impl<'s, F: FnMut(&str) -> usize> Choice<'s, F> {
    fn new(
        parts: &'s [Partition],
        now: i64,
        limits: Option<Limits<F>>,
        request: &LeaseRequest,
    ) -> Self {
        Choice {
            parts,
            now,
            limits,
            max_hosts: request.max_hosts.max(1),
            max_queues: request.max_queues.max(1),
            hosts: FastMap::default(),
            queues: FastMap::default(),
            hosts_given: 0,
            hosts_full: 0,
            queues_given: 0,
            queues_full: 0,
            rules: parts.iter().map(RulesCache::new).collect(),
            blocked: Vec::new(),
            stale: Vec::new(),
            chosen: Vec::new(),
            taken: std::collections::HashSet::new(),
            limit: 0,
            paid: false,
        }
    }

    /// Reads the classes in order, choosing up to `limit` URLs in all.
    /// Reads the groups of classes in order (the classes of a group merged
    /// in the queue order), choosing up to `limit` URLs in all; `paid`
    /// marks what this pass chooses as paid for by a credit.
    fn pass(
        &mut self,
        groups: &[&[Urgency]],
        lanes: Lanes<'_>,
        limit: usize,
        paid: bool,
    ) -> Result<(), StoreError> {
        self.limit = limit;
        self.paid = paid;
        for classes in groups {
            if self.done() {
                break;
            }
            Scan::new(self.parts, classes, self.now).run(lanes, self)?;
        }
        Ok(())
    }

    /// The passes of a lease (or a peek) in order: the pushed URLs, the
    /// validation samples `samples` pays for, the announced changes
    /// `announced` pays for, then announced changes and changed (or new)
    /// URLs together, then the refreshes; up to `n` URLs.
    fn passes(
        &mut self,
        lanes: Lanes<'_>,
        n: usize,
        samples: usize,
        announced: usize,
    ) -> Result<(), StoreError> {
        use Urgency::{Announced, Changed, Pushed, Refresh, Validation};
        self.pass(&[&[Pushed]], lanes, n, false)?;
        let paid = self.chosen.len().saturating_add(samples).min(n);
        self.pass(&[&[Validation]], lanes, paid, true)?;
        let paid = self.chosen.len().saturating_add(announced).min(n);
        self.pass(&[&[Announced]], lanes, paid, true)?;
        self.pass(&[&[Announced, Changed], &[Refresh]], lanes, n, false)
    }

    /// Whether nothing more can be chosen: the limit is reached, or as
    /// many hosts (queues) as may be given URLs were, and each has its
    /// share.
    fn done(&self) -> bool {
        self.chosen.len() >= self.limit
            || (self.hosts_given >= self.max_hosts && self.hosts_full >= self.hosts_given)
            || (self.queues_given >= self.max_queues && self.queues_full >= self.queues_given)
    }

    /// The slot of `host` (in partition `partition`), looked at once: its
    /// allowance under the limits.
    fn host(&mut self, partition: usize, host: &str) -> Result<&mut HostSlot, StoreError> {
        if !self.hosts.contains_key(host) {
            let store = &self.parts[partition];
            let slot = match self.limits.as_ref() {
                None => HostSlot {
                    partition,
                    record: HostRecord::default(),
                    allowance: usize::MAX,
                    given: 0,
                    suspect: false,
                },
                Some(limits) => {
                    let delay = self.rules[partition].lease_delay(host)?;
                    let record = store.host_record_with(host, delay)?;
                    let allowance = match limits.politeness {
                        Politeness::Spaced => allowance(&record, self.now, limits.ttl),
                        Politeness::Now => allowance_now(&record, self.now),
                    };
                    HostSlot {
                        partition,
                        allowance: allowance.min(limits.per_host),
                        given: 0,
                        suspect: store.suspect(host)?,
                        record,
                    }
                }
            };
            self.hosts.insert(host.to_string(), slot);
        }
        Ok(self.hosts.get_mut(host).expect("inserted above"))
    }

    /// The slot of `queue`, looked at once: what the client's rule allows.
    fn queue(&mut self, queue: &str) -> &mut QueueSlot {
        if !self.queues.contains_key(queue) {
            let allowance = self
                .limits
                .as_mut()
                .map_or(usize::MAX, |limits| (limits.admit)(queue));
            self.queues.insert(
                queue.to_string(),
                QueueSlot {
                    allowance,
                    given: 0,
                },
            );
        }
        self.queues.get_mut(queue).expect("inserted above")
    }
}

impl<F: FnMut(&str) -> usize> Taker for Choice<'_, F> {
    fn lane(&mut self, partition: usize, queue: &str, host: &str) -> Result<bool, StoreError> {
        // A queue (host) not given a URL yet, once as many as may be were:
        // passed over without asking its rule (reading its record).
        let new_queue = self.queues.get(queue).is_none_or(|q| q.given == 0);
        if new_queue && self.queues_given >= self.max_queues {
            return Ok(false);
        }
        let q = self.queue(queue);
        if q.given >= q.allowance {
            return Ok(false);
        }
        let new_host = self.hosts.get(host).is_none_or(|h| h.given == 0);
        if new_host && self.hosts_given >= self.max_hosts {
            return Ok(false);
        }
        let h = self.host(partition, host)?;
        Ok(h.given < h.allowance)
    }

    fn only_queues(&self) -> Option<Vec<String>> {
        (self.queues_given >= self.max_queues).then(|| {
            self.queues
                .iter()
                .filter(|(_, q)| q.given > 0 && q.given < q.allowance)
                .map(|(name, _)| name.clone())
                .collect()
        })
    }

    fn offer(&mut self, found: Found<'_>) -> Result<Verdict, StoreError> {
        let url = &found.entry().url;
        if self.taken.contains(url) {
            return Ok(Verdict::Next);
        }
        // Its lane was opened when its host and queue could still be given
        // URLs: another lane of either may have taken their share since.
        if !self.lane(found.partition, found.queue, found.host)? {
            return Ok(Verdict::CloseLane);
        }
        let repairs = self.blocked.len() + self.stale.len();
        if !self.rules[found.partition].allows(url)? {
            if repairs >= MAX_REPAIRS {
                return Ok(Verdict::CloseLane);
            }
            self.taken.insert(url.clone());
            self.blocked.push((found.partition, url.clone()));
            return Ok(Verdict::Next);
        }
        if self.limits.is_some() {
            let h = &self.hosts[found.host];
            let (suspect, trusted) = (h.suspect, trusted_enough(found.entry().reason, &h.record));
            let c = Chosen::of(&found, false);
            if !trusted || (suspect && self.parts[c.partition].record_of(&c)?.is_none()) {
                // Out of date: set right by the lease, not handed out.
                if repairs >= MAX_REPAIRS {
                    return Ok(Verdict::CloseLane);
                }
                self.taken.insert(url.clone());
                self.stale.push(c);
                return Ok(Verdict::Next);
            }
        }
        let h = self.hosts.get_mut(found.host).expect("looked at by lane");
        h.given += 1;
        let (host_first, host_full) = (h.given == 1, h.given >= h.allowance);
        let q = self.queues.get_mut(found.queue).expect("looked at by lane");
        q.given += 1;
        let (queue_first, queue_full) = (q.given == 1, q.given >= q.allowance);
        self.hosts_given += usize::from(host_first);
        self.hosts_full += usize::from(host_full);
        self.queues_given += usize::from(queue_first);
        self.queues_full += usize::from(queue_full);
        self.taken.insert(url.clone());
        self.chosen.push(Chosen::of(&found, self.paid));
        Ok(if self.done() {
            Verdict::Stop
        } else if host_full || queue_full {
            Verdict::CloseLane
        } else {
            Verdict::Next
        })
    }
}

/// A lease being handed out: its id, its expiry and the earliest time its
/// URL may be fetched.
struct Grant {
    id: u64,
    expires: i64,
    not_before: i64,
}

/// What a due entry's record is.
enum RecordOf {
    Record(Box<UrlRecord>),
    /// No record names the entry: the entry is out of date.
    Stale,
    /// The record does not decode.
    Corrupt,
}

impl Partition {
    /// The record of the due URL `c` if it is active and its entry is the
    /// one `c` was found at: [`RecordOf::Stale`] when no record names the
    /// entry, [`RecordOf::Corrupt`] when its record does not decode
    /// (skipped and logged: one bad record does not stop the queue, and its
    /// entry stays for `stats --check` to name).
    fn find_record(&self, c: &Chosen) -> Result<RecordOf, StoreError> {
        let entry = c.entry();
        let url = entry.url.as_str();
        let lane = keys::lane(&c.queue, &c.host, c.class as u8);
        match self.url_record(url) {
            Ok(Some(mut rec))
                if rec.queued()
                    && rec.lane(url) == lane
                    && rec.position(url) == entry.position() =>
            {
                rec.schedule.lease = c.lease.or(rec.schedule.lease);
                Ok(RecordOf::Record(Box::new(rec)))
            }
            Ok(_) => Ok(RecordOf::Stale),
            Err(StoreError::Record { key, .. }) => {
                self.kv.passed_over(&key);
                Ok(RecordOf::Corrupt)
            }
            Err(e) => Err(e),
        }
    }

    /// [`Store::find_record`](crate::Store::find_record)'s record, if any.
    fn record_of(&self, c: &Chosen) -> Result<Option<UrlRecord>, StoreError> {
        Ok(match self.find_record(c)? {
            RecordOf::Record(rec) => Some(*rec),
            RecordOf::Stale | RecordOf::Corrupt => None,
        })
    }

    /// The record of `c` to hand out, or `None` when the lease sets its
    /// entry right instead: an entry no record names is dropped, and a URL
    /// whose host lost the trust that made it urgent (a generation-time
    /// sitemap is caught once read whole) is rescheduled without its
    /// lastmod.
    fn record_to_hand_out(
        &self,
        writes: &mut UrlWrites<'_>,
        c: &Chosen,
        host: &HostRecord,
        now: i64,
    ) -> Result<Option<UrlRecord>, StoreError> {
        let url = c.entry().url.as_str();
        let mut rec = match self.find_record(c)? {
            RecordOf::Record(rec) => *rec,
            RecordOf::Stale => {
                let lane = keys::lane(&c.queue, &c.host, c.class as u8);
                writes.drop_entry(url, &c.queue, &lane, c.entry().position());
                return Ok(None);
            }
            RecordOf::Corrupt => return Ok(None),
        };
        if !trusted_enough(rec.schedule.reason, host) {
            let before = writes.before(url, &mut rec)?;
            rec.schedule = self.schedule(url, &rec, host, now);
            writes.put(url, Some(&before), &mut rec)?;
            return Ok(None);
        }
        Ok(Some(rec))
    }

    /// URLs due at `now` (due time at or before it, leases run out
    /// included), every class, counted up to [`DUE_COUNT_LIMIT`] (the
    /// number the daemon's `queue_depth` gauge shows).
    pub(crate) fn queue_depth(&self, now: Timestamp) -> Result<u64, StoreError> {
        self.due_count(now, DUE_COUNT_LIMIT)
    }

    /// URLs due at `now`, counted up to `at_most` (a run's URLs all count:
    /// the count may pass `at_most` by a run's length).
    pub(crate) fn due_count(&self, now: Timestamp, at_most: u64) -> Result<u64, StoreError> {
        Ok(self.due_and_leased(now, at_most)?.0)
    }

    /// [`Store::due_count`](crate::Store::due_count), and when the first lease of a URL whose entry
    /// is due at `now` runs out, if the count stopped short of `at_most`
    /// (a leased URL keeps its place, see [`crate::marks`]).
    pub(crate) fn due_and_leased(
        &self,
        now: Timestamp,
        at_most: u64,
    ) -> Result<(u64, Option<i64>), StoreError> {
        let now = now.unix();
        let mut n = 0u64;
        let mut ends: Option<i64> = None;
        for class in Urgency::ALL {
            let heads = keys::heads_of(class as u8)..keys::heads_due(class as u8, now);
            for item in self.kv.range(heads) {
                let (key, _) = item?;
                let Some(head) = keys::parse_head(&key) else {
                    continue;
                };
                let lane = keys::lane(head.queue, head.host, class as u8);
                for item in self.kv.range(lane.clone()..keys::lane_due(&lane, now)) {
                    let (_, value) = item?;
                    if n >= at_most {
                        return Ok((n, None));
                    }
                    // A run every entry of which a lease holds counts none:
                    // its leases are read, not its entries.
                    if let Ok(front) = crate::due_list::leases(&value)
                        && front.all_leased(now)
                    {
                        let first = front.leases.iter().map(|(_, (_, until))| *until).min();
                        ends = match (ends, first) {
                            (Some(e), Some(f)) => Some(e.min(f)),
                            (e, f) => e.or(f),
                        };
                        continue;
                    }
                    let Ok(list) = crate::due_list::decode(&value) else {
                        continue;
                    };
                    for entry in list.entries.iter().filter(|e| e.due <= now) {
                        match entry.lease.filter(|_| entry.leased_at(now)) {
                            Some((_, until)) => ends = Some(ends.map_or(until, |e| e.min(until))),
                            None => n += 1,
                        }
                    }
                }
            }
        }
        Ok((n, ends))
    }

    /// When the first URL not due at `now` falls due: the earliest head
    /// after it, in any class.
    pub(crate) fn next_head_after(&self, now: i64) -> Result<Option<i64>, StoreError> {
        let mut next: Option<i64> = None;
        for class in Urgency::ALL {
            let class = class as u8;
            let later = keys::heads_due(class, now)..keys::heads_of(class + 1);
            if let Some(item) = self.kv.range(later).next() {
                let (key, _) = item?;
                if let Some(head) = keys::parse_head(&key) {
                    next = Some(next.map_or(head.due, |n| n.min(head.due)));
                }
            }
        }
        Ok(next)
    }
}

/// A lease id of partition `partition`: its keyspace's next id, spread so
/// that no two partitions hand out the same one.
fn lease_id(parts: &[Partition], partition: usize) -> u64 {
    let raw = parts[partition].kv.next_id();
    raw.wrapping_mul(parts.len() as u64)
        .wrapping_add(partition as u64)
}

/// [`Store::peek`](crate::Store::peek) over `parts`, with the lease credits `credits`.
pub(crate) fn peek_in(
    parts: &[Partition],
    credits: &Mutex<Credits>,
    n: usize,
    now: Timestamp,
) -> Result<Vec<Leased>, StoreError> {
    let now = now.unix();
    let (samples, announced) = {
        let c = *credits.lock().unwrap_or_else(|e| e.into_inner());
        (whole(c.validation), whole(c.announced))
    };
    let request = LeaseRequest::new(n);
    let mut choice = Choice::<fn(&str) -> usize>::new(parts, now, None, &request);
    choice.passes(Lanes::All, n, samples, announced)?;
    choice.pass(&[&[Urgency::Validation]], Lanes::All, n, false)?;
    let mut out = Vec::with_capacity(choice.chosen.len());
    for c in choice.chosen {
        // What a lease would pass over, a peek passes over: an entry no
        // record names, a record that does not decode.
        let Some(rec) = parts[c.partition].record_of(&c)? else {
            continue;
        };
        let entry = c.entry();
        let metadata = if entry.meta { rec.metadata } else { Vec::new() };
        out.push(Leased {
            url: entry.url.clone(),
            queue: c.queue.clone(),
            due: Timestamp::from_unix(entry.due),
            score: entry.score,
            reason: c.reason(),
            lease: None,
            expires: None,
            not_before: Timestamp::from_unix(now),
            metadata,
        });
    }
    Ok(out)
}

/// [`Store::lease_admitting`](crate::Store::lease_admitting) over `parts`, with the lease credits `credits`.
pub(crate) fn lease_in(
    parts: &[Partition],
    credits: &Mutex<Credits>,
    request: &LeaseRequest,
    queue: Option<&str>,
    now: Timestamp,
    admit: impl FnMut(&str) -> usize,
) -> Result<Vec<Leased>, StoreError> {
    let now = now.unix();
    let n = request.n;
    let ttl = request.ttl_secs();
    let horizon = now.saturating_add(ttl);
    // Every partition's lock, in partition order: the lease reads their
    // queues merged and writes to each.
    let _locks: Vec<_> = parts.iter().map(Partition::lock).collect();
    let mut credits = credits.lock().unwrap_or_else(|e| e.into_inner());
    let limits = Limits {
        ttl,
        per_host: request.per_host.max(1),
        politeness: request.politeness,
        admit,
    };
    let lanes = queue.map_or(Lanes::All, Lanes::Queue);
    let mut choice = Choice::new(parts, now, Some(limits), request);
    let (samples, announced) = (whole(credits.validation), whole(credits.announced));
    choice.passes(lanes, n, samples, announced)?;
    let mut writes: Vec<UrlWrites<'_>> = parts.iter().map(UrlWrites::new).collect();
    // Due URLs whose host's rules changed since they were scheduled
    // (and no `set_robots` pass reached them yet): out of the queue.
    for (partition, url) in std::mem::take(&mut choice.blocked) {
        let writes = &mut writes[partition];
        if let Ok(Some(mut rec)) = parts[partition].url_record(&url)
            && rec.queued()
        {
            let before = writes.before(&url, &mut rec)?;
            rec.blocked = true;
            writes.put(&url, Some(&before), &mut rec)?;
        }
    }
    let Choice {
        mut hosts,
        chosen,
        stale,
        ..
    } = choice;
    for c in &stale {
        if let Some(slot) = hosts.get(&c.host) {
            parts[c.partition].record_to_hand_out(
                &mut writes[c.partition],
                c,
                &slot.record,
                now,
            )?;
        }
    }
    let mut out = Vec::new();
    let (mut sampled, mut ahead) = (0usize, 0usize);
    let mut given: FastMap<String, usize> = FastMap::default();
    for c in chosen {
        let Some(slot) = hosts.get_mut(&c.host) else {
            continue; // every chosen URL's host was looked at
        };
        let host = &mut slot.record;
        let url = c.entry().url.clone();
        let mut metadata = Vec::new();
        if !c.markable(host, slot.suspect) {
            // (Its entry was checked when chosen; its record is read
            // for its metadata, or because its host is suspect.)
            let Some(mut rec) =
                parts[c.partition].record_to_hand_out(&mut writes[c.partition], &c, host, now)?
            else {
                continue;
            };
            metadata = std::mem::take(&mut rec.metadata);
        }
        let not_before = host.next_allowed.max(now);
        host.next_allowed = not_before.saturating_add(step(host));
        if request.politeness == Politeness::Now && step(host) > 0 {
            host.next_allowed = host.next_allowed.saturating_add(1);
        }
        *given.entry(c.host.clone()).or_default() += 1;
        sampled += usize::from(c.paid && c.class == Urgency::Validation);
        ahead += usize::from(c.paid && c.class == Urgency::Announced);
        let grant = Grant {
            id: lease_id(parts, c.partition),
            expires: horizon,
            not_before,
        };
        let read = (c.value.clone(), c.entries.len());
        writes[c.partition].mark(
            &c.queue,
            (&c.run, c.index, read),
            (grant.id, grant.expires),
            c.lease.is_some(),
        );
        let entry = c.entry();
        out.push(Leased {
            url,
            queue: c.queue.clone(),
            due: Timestamp::from_unix(entry.due),
            score: entry.score,
            reason: c.reason(),
            lease: Some(grant.id),
            expires: Some(Timestamp::from_unix(grant.expires)),
            not_before: Timestamp::from_unix(grant.not_before),
            metadata,
        });
    }
    for (name, slot) in hosts {
        if given.contains_key(&name) {
            writes[slot.partition].host(&name, slot.record);
        }
    }
    for part in writes {
        part.apply()?;
    }
    let params = &parts[0].options.params;
    let earned = |share: f64| share.clamp(0.0, 1.0) * out.len() as f64;
    credits.validation = (credits.validation - sampled as f64 + earned(params.validation_share))
        .clamp(0.0, MAX_VALIDATION_CREDIT);
    credits.announced = (credits.announced - ahead as f64 + earned(params.announced_share))
        .clamp(0.0, MAX_ANNOUNCED_CREDIT);
    Ok(out)
}

/// A partition's own queue, alone (the crate's tests of one partition).
#[cfg(test)]
impl Partition {
    pub(crate) fn peek(&self, n: usize, now: Timestamp) -> Result<Vec<Leased>, StoreError> {
        peek_in(std::slice::from_ref(self), &self.credits, n, now)
    }

    pub(crate) fn lease(
        &self,
        request: &LeaseRequest,
        now: Timestamp,
    ) -> Result<Vec<Leased>, StoreError> {
        self.lease_admitting(request, None, now, |_| usize::MAX)
    }

    pub(crate) fn lease_admitting(
        &self,
        request: &LeaseRequest,
        queue: Option<&str>,
        now: Timestamp,
        admit: impl FnMut(&str) -> usize,
    ) -> Result<Vec<Leased>, StoreError> {
        lease_in(
            std::slice::from_ref(self),
            &self.credits,
            request,
            queue,
            now,
            admit,
        )
    }
}

pub(crate) fn step(host: &HostRecord) -> i64 {
    host.min_delay.max(0.0).ceil() as i64
}

/// How many URLs `host` may be handed out in a lease of `ttl` seconds from
/// `now`: one every [`step`] seconds from when it is next allowed up to the
/// lease's expiry, and at most `ttl / min_delay` (at least one) in all.
fn allowance(host: &HostRecord, now: i64, ttl: i64) -> usize {
    let horizon = now.saturating_add(ttl);
    if host.next_allowed > horizon {
        return 0;
    }
    let delay = host.min_delay.max(0.0);
    let step = step(host);
    if step == 0 {
        return usize::MAX;
    }
    let in_ttl = ((ttl as f64 / delay).floor() as usize).max(1);
    // horizon - first is at most ttl: no overflow.
    let first = host.next_allowed.max(now);
    let until_expiry = usize::try_from((horizon - first) / step)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    in_ttl.min(until_expiry)
}

/// How many URLs `host` may be handed out to be fetched at once at `now`:
/// one when its next slot has come (any number with no delay), else none.
fn allowance_now(host: &HostRecord, now: i64) -> usize {
    if host.next_allowed > now {
        0
    } else if step(host) == 0 {
        usize::MAX
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::StoreOptions;
    use crate::record::{RobotsRecord, encode};
    use crate::view::UrlStatus;
    use sitemapd_parser::{NormUrl, RobotsRules};

    /// Rules written without the pass over the host's URLs (as a crash
    /// between the two would leave them): the lease checks every URL
    /// itself, passes the disallowed one over and marks it.
    #[test]
    fn a_lease_passes_over_and_marks_what_the_rules_disallow() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let now = Timestamp::from_unix(1_700_000_000);
        let mut ingest = s.ingest(now);
        for u in ["https://a.example/private/x", "https://a.example/b"] {
            let entry = sitemapd_parser::UrlEntry::new(NormUrl::parse(u).unwrap());
            ingest
                .entry("https://a.example/sitemap.xml", &entry)
                .unwrap();
        }
        ingest.finish().unwrap();
        let record = RobotsRecord {
            rules: RobotsRules::new(vec![(false, "/private/".into())], None),
            read_at: now.unix(),
        };
        s.kv.insert(keys::robots("a.example"), encode(&record))
            .unwrap();
        assert_eq!(s.peek(10, now).unwrap().len(), 1);
        let leased = s.lease(&LeaseRequest::new(10), now).unwrap();
        assert_eq!(leased.len(), 1);
        assert_eq!(leased[0].url, "https://a.example/b");
        let private = s.url("https://a.example/private/x").unwrap().unwrap();
        assert_eq!(private.status, UrlStatus::Blocked);
        assert!(s.check().unwrap().is_ok());
    }

    const T0: i64 = 1_700_000_000;

    /// Gives the record of `url` the reason `reason` (its entry moves to
    /// that reason's class), as a sitemap read or a fetch would.
    fn set_reason(s: &Partition, url: &str, reason: StoredReason) {
        let _lock = s.lock();
        let mut writes = UrlWrites::new(s);
        let mut rec = s.url_record(url).unwrap().unwrap();
        let before = writes.before(url, &mut rec).unwrap();
        rec.schedule.reason = reason;
        writes.put(url, Some(&before), &mut rec).unwrap();
        writes.apply().unwrap();
    }

    /// `rules` stored for `host` without the pass over its URLs.
    fn disallow(s: &Partition, host: &str, path: &str) {
        let record = RobotsRecord {
            rules: RobotsRules::new(vec![(false, path.into())], None),
            read_at: T0,
        };
        s.kv.insert(keys::robots(host), encode(&record)).unwrap();
    }

    #[test]
    fn a_push_goes_before_the_validation_samples_the_credit_pays_for() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let now = Timestamp::from_unix(T0);
        s.discover([("https://v.example/s".to_string(), Vec::new())], now)
            .unwrap();
        set_reason(&s, "https://v.example/s", StoredReason::Validation);
        s.notify("https://p.example/pushed", now).unwrap();
        s.credits.lock().unwrap().validation = 1.0;
        let leased = s.lease(&LeaseRequest::new(1), now).unwrap();
        assert_eq!(leased[0].url, "https://p.example/pushed");
        let leased = s.lease(&LeaseRequest::new(1), now).unwrap();
        assert_eq!(
            leased[0].url, "https://v.example/s",
            "then the sample paid for"
        );
    }

    /// An announced URL is read twice (the pass its credit pays for, then
    /// with the changed URLs): one its rules now disallow is marked once.
    #[test]
    fn a_disallowed_announced_url_is_blocked_once() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let now = Timestamp::from_unix(T0);
        let urls = ["https://a.example/private/x", "https://a.example/ok"];
        s.discover(urls.map(|u| (u.to_string(), Vec::new())), now)
            .unwrap();
        set_reason(&s, urls[0], StoredReason::LastmodTrusted);
        disallow(&s, "a.example", "/private/");
        s.credits.lock().unwrap().announced = 5.0;
        assert_eq!(s.lease(&LeaseRequest::new(10), now).unwrap().len(), 1);
        let report = s.check().unwrap();
        assert!(report.is_ok(), "{report:?}");
    }

    /// A due URL whose record does not decode (read for its metadata) is
    /// skipped by a lease, and its entry kept for `stats --check` to name:
    /// it is damage, not an entry out of date.
    #[test]
    fn a_corrupt_record_keeps_its_entry() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let now = Timestamp::from_unix(T0);
        let urls = ["https://a.example/bad", "https://a.example/ok"];
        let meta = vec![("depth".to_string(), vec!["1".to_string()])];
        s.discover(urls.map(|u| (u.to_string(), meta.clone())), now)
            .unwrap();
        s.kv.insert(keys::url(urls[0]), &b"\x01\xff\xff\xff"[..])
            .unwrap();
        assert_eq!(s.health().unreadable_records, 0);
        // A peek shows what a lease would hand out.
        let peeked = s.peek(10, now).unwrap();
        let peeked: Vec<&str> = peeked.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(peeked, [urls[1]]);
        let leased = s.lease(&LeaseRequest::new(10), now).unwrap();
        let leased: Vec<&str> = leased.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(leased, [urls[1]]);
        let health = s.health();
        assert_eq!(
            health.unreadable_records, 2,
            "read by the peek and the lease"
        );
        assert_eq!(health.first_unreadable.as_deref(), Some(urls[0]));
        assert!(health.is_ok(), "the store works without it");
        let report = s.check().unwrap();
        assert_eq!(report.corrupt, [urls[0]]);
        assert_eq!(report.dangling_due.len(), 1, "{report:?}");
    }

    /// A lease with `max_queues` asks the rule of the queues it serves, and
    /// reads no other lane once it has its queues.
    #[test]
    fn a_lease_of_few_queues_reads_only_their_lanes() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let now = Timestamp::from_unix(T0);
        s.discover(
            (0..200).map(|i| (format!("https://h{i:03}.example/"), Vec::new())),
            now,
        )
        .unwrap();
        let mut asked = Vec::new();
        let request = LeaseRequest::new(10).per_host(10).max_queues(2);
        let leased = s
            .lease_admitting(&request, None, now, |q| {
                asked.push(q.to_string());
                10
            })
            .unwrap();
        assert_eq!(leased.len(), 2);
        assert_eq!(asked, ["h000.example", "h001.example"]);
    }

    /// After its host's rules changed, a lease marks a bounded number of
    /// its disallowed URLs, and still hands out what is allowed.
    #[test]
    fn a_lease_sets_right_a_bounded_number_of_out_of_date_entries() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let now = Timestamp::from_unix(T0);
        let many = MAX_REPAIRS * 2 + 10;
        s.discover(
            (0..many).map(|i| (format!("https://a.example/p/{i}"), Vec::new())),
            now,
        )
        .unwrap();
        s.discover([("https://b.example/".to_string(), Vec::new())], now)
            .unwrap();
        disallow(&s, "a.example", "/p/");
        let blocked = |s: &Partition| {
            s.export()
                .filter(|v| v.as_ref().unwrap().status == UrlStatus::Blocked)
                .count()
        };
        let leased = s.lease(&LeaseRequest::new(1), now).unwrap();
        assert_eq!(leased[0].url, "https://b.example/");
        assert_eq!(blocked(&s), MAX_REPAIRS);
        assert!(s.lease(&LeaseRequest::new(1), now).unwrap().is_empty());
        assert!(s.lease(&LeaseRequest::new(1), now).unwrap().is_empty());
        assert_eq!(blocked(&s), many);
        assert!(s.check().unwrap().is_ok());
    }

    /// A URL whose host lost the trust that made it urgent is rescheduled,
    /// and uses no slot of the lease: a lease of one still hands one out.
    #[test]
    fn a_url_out_of_date_takes_no_slot() {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let now = Timestamp::from_unix(T0);
        let urls = ["https://a.example/announced", "https://a.example/new"];
        s.discover(urls.map(|u| (u.to_string(), Vec::new())), now)
            .unwrap();
        // Announced, on a host that has no trust (any more).
        set_reason(&s, urls[0], StoredReason::LastmodTrusted);
        let leased = s.lease(&LeaseRequest::new(1), now).unwrap();
        assert_eq!(leased.len(), 1);
        assert_eq!(leased[0].url, urls[1]);
        let view = s.url(urls[0]).unwrap().unwrap();
        assert_ne!(view.urgency, Urgency::Announced, "rescheduled");
        assert!(s.check().unwrap().is_ok());
    }
}
