//! The crawl queue: which URLs are due ([`Store::peek`]), handing them out
//! ([`Store::lease`]) and taking the fetch outcomes back
//! ([`Store::complete`]).
//!
//! A lease of a URL in a due list (one an ingest found new, or one a lease
//! handed out before) marks its entry there with the lease and its expiry,
//! and reads or writes no record ([`crate::marks`]): the URL keeps its
//! place, which a lease passes over until the lease runs out. A lease of
//! a URL with a due key of its own (one fetched before), or whose record
//! it must read (its entry says it holds a URL frontier client's metadata,
//! or its host lost the trust that made it urgent), writes its record and
//! moves it to a due list at the lease's expiry. Either way a URL whose
//! lease runs out without an outcome is simply due again, with the reason
//! `lease-expired`. Per lease, a host gets at most `per_host` URLs, and no
//! more than its politeness delay allows over the lease's time to live;
//! each URL carries the earliest time it should be fetched (`not_before`),
//! spaced by that delay.

use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::due_list::Lease;
use crate::hash::{FastMap, FastSet};
use crate::keys;
use crate::policy::Reason;
use crate::policy::Urgency;
use crate::policy::{lastmod_is_newer, lastmod_says_changed};
use crate::record::{
    HostRecord, Lapse, Schedule, StoredOutcome, StoredReason, StoredVisit, UrlRecord, VISIT_HISTORY,
};
use crate::robots::RulesCache;
use crate::store::{Store, StoreError};
use crate::time::Timestamp;
use crate::writes::{Before, UrlWrites};

/// What a crawler asks of [`Store::lease`]: how many URLs, how many of one
/// host at most, of how many hosts at most, and for how long.
///
/// ```
/// use std::time::Duration;
/// use sitemapd_scheduler::LeaseRequest;
///
/// let request = LeaseRequest::new(100).per_host(5).ttl(Duration::from_secs(600));
/// assert_eq!((request.n, request.per_host), (100, 5));
/// assert_eq!(LeaseRequest::new(100).ttl, LeaseRequest::DEFAULT_TTL);
/// assert_eq!(LeaseRequest::new(100).max_hosts(3).max_hosts, 3);
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
    /// Hosts at most (`usize::MAX`, the default: any number; 0 counts as
    /// 1): a URL frontier's `max_queues`. The scan of the due index looks
    /// at twice as many hosts (the choice by urgency among twice the URLs a
    /// lease hands out), no more, and ends once they all have their share;
    /// the most urgent URLs of `max_hosts` of them are handed out.
    pub max_hosts: usize,
}

impl LeaseRequest {
    /// URLs of one host per lease when a request does not say.
    pub const DEFAULT_PER_HOST: usize = 10;
    /// A lease's time to live when a request does not say.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

    /// Up to `n` URLs, [`DEFAULT_PER_HOST`](Self::DEFAULT_PER_HOST) per
    /// host, for [`DEFAULT_TTL`](Self::DEFAULT_TTL).
    pub const fn new(n: usize) -> LeaseRequest {
        LeaseRequest {
            n,
            per_host: Self::DEFAULT_PER_HOST,
            ttl: Self::DEFAULT_TTL,
            max_hosts: usize::MAX,
        }
    }

    /// URLs of at most `max_hosts` hosts.
    pub const fn max_hosts(mut self, max_hosts: usize) -> LeaseRequest {
        self.max_hosts = max_hosts;
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
    /// What a URL frontier client stored with it ([`Store::put_known`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<(String, Vec<String>)>,
}

/// What a crawler found when it fetched a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The page changed (a 200 with new content).
    Changed,
    /// The page did not change (a 304, or the same content).
    NotModified,
    /// Not there, with its HTTP status: 410 retires the URL at once, a 404
    /// (or any other status, 0 when not known) after [`GONE_AFTER`] in a
    /// row; until then it backs off as an error does.
    Gone(u16),
    /// Any other failure, with its HTTP status (0: no response): retried
    /// with an exponential back-off per URL, and per host after
    /// [`HOST_FAILURES`] failures of its URLs in a row.
    Error(u16),
    /// A redirect to `to` (absolute, or relative to the URL), with its
    /// HTTP status. The target joins the store as a new URL when it is on
    /// the same host (robots rules applied, its source recorded); a
    /// permanent redirect (301, 308) retires the URL after [`MOVED_AFTER`]
    /// in a row, any other backs it off.
    Redirected {
        /// Where to.
        to: String,
        /// 301, 302, 303, 307, 308 (0: not known, taken as temporary).
        status: u16,
    },
}

/// The longest `ETag` stored, bytes: a longer one is not kept (the next
/// GET is unconditional), so a crawler cannot make the store keep and
/// serve back megabytes per URL.
pub const MAX_ETAG_BYTES: usize = 1024;
/// The longest `Last-Modified` stored, bytes (an HTTP date has 29).
pub const MAX_LAST_MODIFIED_BYTES: usize = 128;

/// 404s in a row that retire a URL as gone.
pub const GONE_AFTER: u32 = 3;
/// Permanent redirects in a row that retire a URL as moved.
pub const MOVED_AFTER: u32 = 2;
/// Failures (errors, 5xx) of one host's URLs in a row after which the
/// whole host backs off.
pub const HOST_FAILURES: u32 = 5;

impl Outcome {
    /// Its name in reports and metrics: `changed`, `not-modified`, `gone`,
    /// `error`, `redirected`.
    pub fn name(&self) -> &'static str {
        self.stored().name()
    }

    fn stored(&self) -> StoredOutcome {
        match self {
            Outcome::Changed => StoredOutcome::Changed,
            Outcome::NotModified => StoredOutcome::NotModified,
            Outcome::Gone(_) => StoredOutcome::Gone,
            Outcome::Error(s) => StoredOutcome::Error(*s),
            Outcome::Redirected { .. } => StoredOutcome::Redirected,
        }
    }

    /// The HTTP status it carries (0: none).
    fn status(&self) -> u16 {
        match self {
            Outcome::Changed | Outcome::NotModified => 0,
            Outcome::Gone(s) | Outcome::Error(s) | Outcome::Redirected { status: s, .. } => *s,
        }
    }
}

/// What repeats of an outcome count toward: the outcome, and for a 410 or a
/// redirect, how final it is.
fn repeat_class(outcome: StoredOutcome, status: u16) -> (StoredOutcome, bool) {
    match outcome {
        StoredOutcome::Gone => (outcome, status == 410),
        StoredOutcome::Redirected => (outcome, permanent_redirect(status)),
        StoredOutcome::Error(_) => (StoredOutcome::Error(0), false),
        other => (other, false),
    }
}

fn permanent_redirect(status: u16) -> bool {
    matches!(status, 301 | 308)
}

/// A completed fetch: the outcome and the page's validators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// What happened.
    pub outcome: Outcome,
    /// The page's `ETag`, for the crawler's next conditional GET.
    pub etag: Option<String>,
    /// The page's `Last-Modified`.
    pub last_modified: Option<String>,
}

impl From<Outcome> for Completion {
    fn from(outcome: Outcome) -> Self {
        Completion {
            outcome,
            etag: None,
            last_modified: None,
        }
    }
}

/// How many due URLs a count reads at most ([`Store::queue_depth`],
/// [`Store::stats`](crate::Store::stats)): a count of keys stops there, so
/// that it costs the same at any store size (about 100,000 keys read).
pub const DUE_COUNT_LIMIT: u64 = 100_000;

/// Candidates read from the due index per URL asked for.
const OVERSCAN: usize = 2;

/// Validation credit a store may bank: a lease never gives more samples
/// than this at once.
const MAX_VALIDATION_CREDIT: f64 = 16.0;

/// A due URL found by a scan of the due index, with what orders it. The
/// record of a URL with a due key of its own is read when it is found; that
/// of a URL in a due list (whose entry carries its score and rank) only if
/// it is among those handed out ([`Store::with_records`]).
struct Candidate {
    url: String,
    class: Urgency,
    score: f32,
    due: i64,
    rank: keys::Rank,
    /// Boxed: candidates are sorted and moved, and most hold none.
    rec: Option<Box<UrlRecord>>,
    /// The due list it was found in, and what its entry says.
    list: Option<ListSlot>,
}

/// A candidate's due list and entry.
struct ListSlot {
    /// The list's number.
    n: u32,
    /// The list's key and value as the scan read them.
    key: sled::IVec,
    value: sled::IVec,
    /// Its entries as decoded ([`crate::due_list::decoded`]), and the
    /// candidate's place among them.
    entries: crate::due_list::Entries,
    index: usize,
    /// A lease that ran out (the entries' leases are in the value's front).
    lease: Option<Lease>,
}

impl ListSlot {
    /// The candidate's entry.
    fn entry(&self) -> &crate::record::Listed {
        &self.entries[self.index]
    }

    /// Whether a lease marks its entry without reading its record: not if
    /// it must hand out the record's metadata, nor if its entry comes from
    /// a format-6 list, nor if its host is `suspect` (its lists may hold
    /// an entry no record names), nor if its lastmod made it urgent and its
    /// host has lost the trust for that since (the record is rescheduled).
    fn markable(&self, host: &HostRecord, suspect: bool) -> bool {
        let entry = self.entry();
        !entry.legacy
            && !suspect
            && !entry.meta
            && (entry.reason != StoredReason::LastmodNewer
                || host.trust.is_trusted()
                || host.trust.on_probation())
    }
}

impl Candidate {
    /// Most urgent first: class, the policy's score, due time, then (among
    /// equals, as the sitemap suggests) the rank: the higher priority, the
    /// newer lastmod, the shorter URL; and the URL itself.
    fn order(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
        a.class
            .cmp(&b.class)
            .then(b.score.total_cmp(&a.score))
            .then(a.due.cmp(&b.due))
            .then(a.rank.cmp(&b.rank))
            .then(a.url.cmp(&b.url))
    }

    /// `found` in [`Candidate::order`]. A candidate is large (it may hold
    /// its record): the sort moves indices, and each candidate moves once.
    fn sorted(found: Vec<Candidate>) -> Vec<Candidate> {
        let mut order: Vec<usize> = (0..found.len()).collect();
        order.sort_by(|&a, &b| Candidate::order(&found[a], &found[b]));
        let mut slots: Vec<Option<Candidate>> = found.into_iter().map(Some).collect();
        order.into_iter().filter_map(|i| slots[i].take()).collect()
    }
}

/// Keeps the candidates of the first `max_hosts` hosts met, in order.
fn keep_hosts(found: &mut Vec<Candidate>, max_hosts: usize) {
    if max_hosts == usize::MAX {
        return;
    }
    let mut hosts: FastSet<String> = FastSet::default();
    found.retain(|c| {
        let host = keys::host_of(&c.url);
        hosts.contains(host) || (hosts.len() < max_hosts && hosts.insert(host.to_string()))
    });
}

/// One pass over the due index at `now`: per host, how many URLs it may be
/// given (asked once per host) and how many were taken.
struct DueScan<'s, F> {
    store: &'s Store,
    now: i64,
    allowance: F,
    per: FastMap<String, (usize, usize)>,
    /// Hosts that may be given URLs at most; then the others are passed.
    max_hosts: usize,
    /// Hosts found that may be given URLs, and how many of them have their
    /// share.
    open_hosts: usize,
    full_hosts: usize,
    /// Each host's robots rules.
    rules: RulesCache<'s>,
    /// Due URLs the rules disallow, passed over (a lease marks them).
    blocked: Vec<String>,
}

impl<'s, F: FnMut(&str, &mut RulesCache<'s>) -> Result<usize, StoreError>> DueScan<'s, F> {
    /// Adds up to `limit` due records of `class` to `found`, in due-index
    /// order. Once a host has its allowance the scan seeks past its other
    /// URLs due in the same second (and rank), so one busy host neither
    /// fills the window nor costs a read per URL. Records that do not
    /// decode are skipped (and logged): one bad record does not stop the
    /// queue.
    fn scan(
        &mut self,
        class: Urgency,
        limit: usize,
        found: &mut Vec<Candidate>,
    ) -> Result<(), StoreError> {
        let mut taken_here = 0;
        let end = keys::due_after(class as u8, self.now);
        let mut from = keys::due_class(class as u8);
        'scan: loop {
            for item in self.store.kv.range(from.clone()..end.clone()) {
                if taken_here >= limit || self.exhausted() {
                    break 'scan;
                }
                let (key, value) = item?;
                let Some(due) = keys::parse_due(&key) else {
                    continue;
                };
                if let Some((host, n)) = keys::as_list(due.url) {
                    // Past every list of this host in this second once it
                    // has its allowance (before decoding this one).
                    let past = || {
                        let mut past = keys::lists_of(due.class, due.at, host);
                        past.push(0xff);
                        past
                    };
                    if self.full(host) {
                        from = past();
                        continue 'scan;
                    }
                    let decoded = crate::due_list::leases(&value).and_then(|front| {
                        if front.all_leased(self.now) {
                            return Ok(None);
                        }
                        let entries = self.store.decoded_list(&key, &value, &front)?;
                        Ok(Some((entries, front)))
                    });
                    let (entries, front) = match decoded {
                        Ok(Some(list)) => list,
                        Ok(None) => continue,
                        Err(error) => {
                            tracing::warn!(%error, "corrupt due list skipped (stats --check names its URLs)");
                            continue;
                        }
                    };
                    for (index, entry) in entries.iter().enumerate() {
                        if taken_here >= limit {
                            break 'scan;
                        }
                        let lease = front.of(index);
                        if crate::record::lease_holds(lease, self.now) {
                            continue;
                        }
                        match self.admit(&entry.url, host)? {
                            Taken::Yes => {
                                self.take(host);
                                taken_here += 1;
                                found.push(Candidate {
                                    class,
                                    score: entry.score,
                                    due: due.at,
                                    rank: entry.rank,
                                    rec: None,
                                    list: Some(ListSlot {
                                        n,
                                        key: key.clone(),
                                        value: value.clone(),
                                        entries: Arc::clone(&entries),
                                        index,
                                        lease,
                                    }),
                                    url: entry.url.clone(),
                                });
                            }
                            Taken::HostFull => {
                                from = past();
                                continue 'scan;
                            }
                            Taken::No => {}
                        }
                    }
                    continue;
                }
                let (url, host) = (due.url, keys::host_of(due.url));
                match self.consider(url, host, |rec| rec.owns(&due), class, found)? {
                    Taken::Yes => taken_here += 1,
                    Taken::No => {}
                    Taken::HostFull => {
                        // Seek past this host's URLs due in this second.
                        let scheme_end = keys::scheme_end(url).unwrap_or(0);
                        let mut next = keys::due(due.class, due.at, due.rank, &url[..scheme_end]);
                        next.extend_from_slice(host.as_bytes());
                        next.extend_from_slice(b"/\xff");
                        if next <= key.to_vec() {
                            continue;
                        }
                        from = next;
                        continue 'scan;
                    }
                }
            }
            break;
        }
        Ok(())
    }

    /// Whether `host` was looked at and has its allowance.
    fn full(&self, host: &str) -> bool {
        self.per.get(host).is_some_and(|(taken, cap)| taken >= cap)
    }

    /// Whether nothing more can be taken: as many hosts as may be given
    /// URLs were found, and each has its share.
    fn exhausted(&self) -> bool {
        self.open_hosts >= self.max_hosts && self.full_hosts >= self.open_hosts
    }

    /// Whether a due URL of `host` may be taken: not if its host has its
    /// allowance (or comes after `max_hosts` others), nor if the rules
    /// disallow it (noted in `blocked`).
    fn admit(&mut self, url: &str, host: &str) -> Result<Taken, StoreError> {
        if !self.per.contains_key(host) {
            let cap = if self.open_hosts >= self.max_hosts {
                0
            } else {
                (self.allowance)(host, &mut self.rules)?
            };
            self.open_hosts += usize::from(cap > 0);
            self.per.insert(host.to_string(), (0, cap));
        }
        if self.full(host) {
            return Ok(Taken::HostFull);
        }
        if !self.rules.allows(url)? {
            self.blocked.push(url.to_string());
            return Ok(Taken::No);
        }
        Ok(Taken::Yes)
    }

    /// One more URL taken for `host`.
    fn take(&mut self, host: &str) {
        if let Some((taken, cap)) = self.per.get_mut(host) {
            *taken += 1;
            self.full_hosts += usize::from(*taken == *cap);
        }
    }

    /// A due URL with a due key of its own: taken (its record read and
    /// added to `found`) if [`DueScan::admit`] lets it and its record is
    /// active and the one the key stands for (`owns`: not an entry left by
    /// a replaced corrupt record, which `check` names).
    fn consider(
        &mut self,
        url: &str,
        host: &str,
        owns: impl Fn(&UrlRecord) -> bool,
        class: Urgency,
        found: &mut Vec<Candidate>,
    ) -> Result<Taken, StoreError> {
        match self.admit(url, host)? {
            Taken::Yes => {}
            other => return Ok(other),
        }
        let Some(rec) = self.store.live_record(url, owns)? else {
            return Ok(Taken::No);
        };
        self.take(host);
        found.push(Candidate {
            url: url.to_string(),
            class,
            score: rec.schedule.score,
            due: rec.schedule.due,
            rank: rec.rank(url),
            rec: Some(Box::new(rec)),
            list: None,
        });
        Ok(Taken::Yes)
    }
}

/// A lease being handed out: its id, its expiry and the earliest time its
/// URL may be fetched.
struct Grant {
    id: u64,
    expires: i64,
    not_before: i64,
}

impl Grant {
    /// What is handed out for `c`, a listed URL whose entry (`slot`) takes
    /// the lease: its record is neither read nor written.
    fn of_entry(&self, writes: &mut UrlWrites, c: Candidate, slot: ListSlot) -> Leased {
        let lease = (self.id, self.expires);
        let read = (slot.value.clone(), slot.entries.len());
        writes.mark(
            &c.url,
            (&slot.key, slot.index, read),
            lease,
            slot.lease.is_some(),
        );
        Leased {
            due: Timestamp::from_unix(c.due),
            score: c.score,
            reason: match slot.lease {
                Some(_) => Reason::LeaseExpired,
                None => Reason::from(slot.entry().reason),
            },
            lease: Some(self.id),
            expires: Some(Timestamp::from_unix(self.expires)),
            not_before: Timestamp::from_unix(self.not_before),
            metadata: Vec::new(),
            url: c.url,
        }
    }

    /// What is handed out for `c`, whose record `rec` (read) is written
    /// with the lease and filed in a due list at its expiry.
    fn of_record(
        &self,
        writes: &mut UrlWrites,
        c: Candidate,
        mut rec: UrlRecord,
        now: i64,
    ) -> Result<Leased, StoreError> {
        let reason = reason_of(&rec, now);
        let due = rec.schedule.due;
        let before = writes.before(&c.url, &mut rec)?;
        // The reason it was leased for stays: a lease that runs out is
        // due again in the same class.
        rec.schedule = Schedule {
            due: self.expires,
            score: rec.schedule.score,
            reason: rec.schedule.reason,
            lease: Some((self.id, self.expires)),
        };
        writes.put(&c.url, Some(&before), &mut rec)?;
        Ok(Leased {
            due: Timestamp::from_unix(due),
            score: rec.schedule.score,
            reason,
            lease: Some(self.id),
            expires: Some(Timestamp::from_unix(self.expires)),
            not_before: Timestamp::from_unix(self.not_before),
            metadata: std::mem::take(&mut rec.metadata),
            url: c.url,
        })
    }
}

/// What [`DueScan::consider`] did with a due URL.
enum Taken {
    /// Added to the candidates.
    Yes,
    /// Passed over.
    No,
    /// Passed over: its host has its allowance.
    HostFull,
}

impl Store {
    /// The record of a due `url` if it is active and `owns` its due entry.
    /// A record that does not decode is skipped and logged: one bad record
    /// does not stop the queue.
    fn live_record(
        &self,
        url: &str,
        owns: impl Fn(&UrlRecord) -> bool,
    ) -> Result<Option<UrlRecord>, StoreError> {
        match self.url_record(url) {
            Ok(Some(rec)) if !rec.retired && owns(&rec) => Ok(Some(rec)),
            Ok(_) => Ok(None),
            Err(StoreError::Record { key, .. }) => {
                tracing::warn!(%key, "corrupt URL record skipped (stats --check names it)");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The record of candidate `c`: read now if it was found in a due list
    /// (with its entry's lease), none if it no longer names that list.
    fn record_of(&self, c: &mut Candidate) -> Result<Option<UrlRecord>, StoreError> {
        if let Some(rec) = c.rec.take() {
            return Ok(Some(*rec));
        }
        let Some(slot) = &c.list else {
            return Ok(None);
        };
        let owns = |rec: &UrlRecord| rec.in_list(c.class as u8, c.due, slot.n);
        Ok(self.live_record(&c.url, owns)?.map(|mut rec| {
            rec.schedule.lease = slot.lease.or(rec.schedule.lease);
            rec
        }))
    }

    /// URLs due at `now` (due time at or before it, leases run out
    /// included), every class, counted up to [`DUE_COUNT_LIMIT`]: a scan
    /// of that part of the due index, keys only, that stops there (the
    /// number the daemon's `queue_depth` gauge shows).
    pub fn queue_depth(&self, now: Timestamp) -> Result<u64, StoreError> {
        self.due_count(now, DUE_COUNT_LIMIT)
    }

    /// URLs due at `now`, counted up to `at_most` (a due list's URLs all
    /// count: the count may pass `at_most` by a list's length).
    pub(crate) fn due_count(&self, now: Timestamp, at_most: u64) -> Result<u64, StoreError> {
        Ok(self.due_and_leased(now, at_most)?.0)
    }

    /// [`Store::due_count`], and when the first lease of a URL whose entry
    /// is due at `now` runs out, if the count stopped short of `at_most`
    /// (a listed URL keeps its place while leased, see [`crate::marks`]).
    pub(crate) fn due_and_leased(
        &self,
        now: Timestamp,
        at_most: u64,
    ) -> Result<(u64, Option<i64>), StoreError> {
        let now = now.unix();
        let mut n = 0u64;
        let mut ends: Option<i64> = None;
        for class in Urgency::ALL {
            let range = keys::due_class(class as u8)..keys::due_after(class as u8, now);
            for item in self.kv.range(range) {
                let (key, value) = item?;
                if n >= at_most {
                    return Ok((n, None));
                }
                let listed = keys::parse_due(&key).is_some_and(|d| keys::as_list(d.url).is_some());
                if !listed {
                    n += 1;
                    continue;
                }
                if let Some(front) = crate::due_list::leases(&value)
                    .ok()
                    .filter(|f| f.all_leased(now))
                {
                    for (_, (_, until)) in front.leases {
                        ends = Some(ends.map_or(until, |e| e.min(until)));
                    }
                    continue;
                }
                let Ok(list) = crate::due_list::decode(&value) else {
                    continue;
                };
                for entry in &list.entries {
                    match entry.lease.filter(|_| entry.leased_at(now)) {
                        Some((_, until)) => ends = Some(ends.map_or(until, |e| e.min(until))),
                        None => n += 1,
                    }
                }
            }
        }
        Ok((n, ends))
    }

    /// Up to `n` URLs due at `now`, most urgent first, without leasing
    /// them: every urgency class in order (validation samples last, all of
    /// them: only a lease limits them to their share), within a class by
    /// the policy's score (see [`Store::lease`]).
    pub fn peek(&self, n: usize, now: Timestamp) -> Result<Vec<Leased>, StoreError> {
        let now = now.unix();
        let want = n.saturating_mul(OVERSCAN).max(n);
        let mut scan = DueScan {
            store: self,
            now,
            allowance: |_: &str, _: &mut RulesCache| Ok(usize::MAX),
            per: FastMap::default(),
            max_hosts: usize::MAX,
            open_hosts: 0,
            full_hosts: 0,
            rules: RulesCache::new(self),
            blocked: Vec::new(),
        };
        let mut found = Vec::new();
        for class in Urgency::ALL {
            let left = want.saturating_sub(found.len());
            if left == 0 {
                break;
            }
            scan.scan(class, left, &mut found)?;
        }
        let mut found = Candidate::sorted(found);
        found.truncate(n);
        let mut out = Vec::with_capacity(found.len());
        for mut c in found {
            let Some(rec) = self.record_of(&mut c)? else {
                continue;
            };
            out.push(Leased {
                due: Timestamp::from_unix(rec.schedule.due),
                score: rec.schedule.score,
                reason: reason_of(&rec, now),
                lease: None,
                expires: None,
                not_before: Timestamp::from_unix(now),
                metadata: rec.metadata,
                url: c.url,
            });
        }
        Ok(out)
    }

    /// Leases up to `request.n` due URLs for `request.ttl`: at most
    /// `request.per_host` per host, and no host faster than its politeness
    /// delay.
    ///
    /// The urgency classes are served in order (changed or new, refresh):
    /// a class is read only as far as the classes before it leave room,
    /// and within one the policy's score decides, then the due time, then
    /// the sitemap's priority, the newest lastmod and the shortest URL.
    /// Validation samples get their share of the fetches only
    /// ([`Params::validation_share`](crate::policy::Params::validation_share)):
    /// each URL leased earns that share of a sample, and the samples a
    /// lease's credit pays for come first, ahead of the other classes.
    pub fn lease(&self, request: &LeaseRequest, now: Timestamp) -> Result<Vec<Leased>, StoreError> {
        self.lease_admitting(request, now, |_| usize::MAX)
    }

    /// [`Store::lease`], where `admit` says how many URLs each host (by
    /// name, `host[:port]`) may be given at most (0: none), on top of the
    /// request's `per_host` and the host's politeness. It is asked once per
    /// host the scan of the due index looks at (not past the request's
    /// `max_hosts`), under the store's write lock: what a URL frontier
    /// client's per-queue rules decide ([`crate::frontier`]).
    pub fn lease_admitting(
        &self,
        request: &LeaseRequest,
        now: Timestamp,
        mut admit: impl FnMut(&str) -> usize,
    ) -> Result<Vec<Leased>, StoreError> {
        let now = now.unix();
        let n = request.n;
        let ttl = request.ttl_secs();
        let horizon = now.saturating_add(ttl);
        let per_host = request.per_host.max(1);
        let max_hosts = request.max_hosts.max(1);
        let _lock = self.lock();
        let mut credit = self
            .validation_credit
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Each host's record (read once), how many URLs it was given, and
        // whether it is suspect.
        let mut hosts: FastMap<String, (HostRecord, usize, bool)> = FastMap::default();
        let mut scan = DueScan {
            store: self,
            now,
            // The scan reads no more of a host's URLs than it can be given.
            allowance: |host: &str, rules: &mut RulesCache| {
                let record = self.host_record_with(host, rules.lease_delay(host)?)?;
                let allowed = allowance(&record, now, ttl).min(per_host).min(admit(host));
                hosts.insert(host.to_string(), (record, 0, self.suspect(host)?));
                Ok(allowed)
            },
            per: FastMap::default(),
            // Twice the hosts, as twice the URLs: a choice by urgency.
            max_hosts: max_hosts.saturating_mul(OVERSCAN),
            open_hosts: 0,
            full_hosts: 0,
            rules: RulesCache::new(self),
            blocked: Vec::new(),
        };
        let mut samples = Vec::new();
        let paid = (credit.max(0.0).floor() as usize).min(n);
        scan.scan(Urgency::Validation, paid, &mut samples)?;
        let want = n.saturating_mul(OVERSCAN).max(n);
        let mut found = Vec::new();
        for class in [Urgency::Changed, Urgency::Refresh] {
            let left = want.saturating_sub(found.len());
            if left == 0 {
                break;
            }
            scan.scan(class, left, &mut found)?;
        }
        let blocked = std::mem::take(&mut scan.blocked);
        drop(scan);
        let found = Candidate::sorted(found);
        // The samples first, so that a limit on hosts keeps them (their
        // credit is spent), then the most urgent; handed out after them.
        let mut chosen = samples;
        chosen.extend(found);
        keep_hosts(&mut chosen, max_hosts);
        chosen.truncate(n);
        chosen.sort_by_key(|c| c.class == Urgency::Validation);
        let mut writes = UrlWrites::new(self);
        // Due URLs whose host's rules changed since they were scheduled
        // (and no `set_robots` pass reached them yet): out of the queue.
        for url in blocked {
            if let Ok(Some(mut rec)) = self.url_record(&url) {
                if rec.queued() {
                    let before = writes.before(&url, &mut rec)?;
                    rec.blocked = true;
                    writes.put(&url, Some(&before), &mut rec)?;
                }
            }
        }
        let mut out = Vec::new();
        let mut sampled = 0usize;
        for mut c in chosen {
            let Some((host, given, suspect)) = hosts.get_mut(keys::host_of(&c.url)) else {
                continue; // every candidate's host was looked at by the scan
            };
            // A listed URL whose entry says all the lease needs: marked.
            let marked = c.list.take_if(|slot| slot.markable(host, *suspect));
            let mut rec = match marked {
                Some(_) => None,
                None => match self.record_of(&mut c)? {
                    Some(rec) => Some(rec),
                    None => {
                        if let Some(slot) = &c.list {
                            // An entry its record does not name: out.
                            writes.drop_entry(&c.url, (c.class as u8, c.due, slot.n));
                        }
                        continue;
                    }
                },
            };
            if let Some(rec) = rec.as_mut().filter(|rec| {
                rec.schedule.reason == StoredReason::LastmodNewer
                    && !(host.trust.is_trusted() || host.trust.on_probation())
            }) {
                // Its host lost its trust since the sitemap read that made
                // it urgent (a generation-time sitemap is caught once read
                // whole): rescheduled without its lastmod, not handed out.
                let before = writes.before(&c.url, rec)?;
                let due = self.schedule(&c.url, rec, host, now);
                rec.schedule = Schedule::of(&due);
                writes.put(&c.url, Some(&before), rec)?;
                continue;
            }
            let not_before = host.next_allowed.max(now);
            host.next_allowed = not_before.saturating_add(step(host));
            *given += 1;
            sampled += usize::from(c.class == Urgency::Validation);
            let lease = Grant {
                id: self.kv.generate_id()?,
                expires: horizon,
                not_before,
            };
            out.push(match (marked, rec) {
                (Some(slot), _) => lease.of_entry(&mut writes, c, slot),
                (None, Some(rec)) => lease.of_record(&mut writes, c, rec, now)?,
                (None, None) => continue,
            });
        }
        for (name, (host, given, _)) in hosts {
            if given > 0 {
                writes.host(&name, host);
            }
        }
        writes.apply()?;
        *credit = (*credit - sampled as f64
            + self.options.params.validation_share.clamp(0.0, 1.0) * out.len() as f64)
            .clamp(0.0, MAX_VALIDATION_CREDIT);
        Ok(out)
    }

    /// Records what a fetch of `url` found at `now`, updates the host's
    /// lastmod trust and the URL's estimator history, and reschedules it.
    /// `url` is normalised on the way in ([`NormUrl`](sitemapd_parser::NormUrl)):
    /// a URL the store does not hold, or that is not an http(s) URL, is
    /// [`StoreError::UnknownUrl`].
    pub fn complete(
        &self,
        url: &str,
        completion: &Completion,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        match self.complete_all([(url, completion)], now)?.pop() {
            Some(unknown) => Err(StoreError::UnknownUrl(unknown)),
            None => Ok(()),
        }
    }

    /// [`Store::complete`] for many fetches at once, in order, as one
    /// atomic write (a crawler reporting a batch pays for one, not one per
    /// URL). Returns the URLs the store does not hold; the others are
    /// recorded. A URL reported twice is completed twice, in order. Each
    /// URL is normalised on the way in; one that does not parse is returned
    /// as unknown, as given.
    pub fn complete_all<'a>(
        &self,
        completions: impl IntoIterator<Item = (&'a str, &'a Completion)>,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let now = now.unix();
        let _lock = self.lock();
        // Records as this call leaves them, with what each was in the store
        // (`None`: a redirect target it adds).
        let mut records: FastMap<String, (UrlRecord, Option<Before>)> = FastMap::default();
        // Each host's record, and whether a completion changed it.
        let mut hosts: FastMap<String, (HostRecord, bool)> = FastMap::default();
        let mut unknown = Vec::new();
        let mut rules = RulesCache::new(self);
        let mut writes = UrlWrites::new(self);
        for (given, completion) in completions {
            let Ok(norm) = sitemapd_parser::NormUrl::parse(given) else {
                unknown.push(given.to_string());
                continue;
            };
            let url = norm.as_str();
            let (rec, before) = match records.remove(url) {
                Some(known) => known,
                None => match self.url_record(url)? {
                    Some(mut rec) => {
                        let before = writes.before(url, &mut rec)?;
                        (rec, Some(before))
                    }
                    None => {
                        unknown.push(given.to_string());
                        continue;
                    }
                },
            };
            let host_name = keys::host_of(url);
            let (host, host_changed) = match hosts.entry(host_name.to_string()) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert((self.host_record(host_name)?, false)),
            };
            let rec = self.apply_completion(url, rec, completion, host, host_changed, now);
            self.add_redirect_target(&norm, &rec, completion, host, &mut rules, &mut records, now)?;
            records.insert(url.to_string(), (rec, before));
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
        Ok(unknown)
    }

    /// After `completion` of `from` (recorded as `rec`): when it is a
    /// redirect to a URL of the same host that neither the store nor
    /// `records` holds, the target goes into `records` as a new URL, due
    /// as the scheduler says, with the source's priority and first source.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_redirect_target(
        &self,
        from: &sitemapd_parser::NormUrl,
        rec: &UrlRecord,
        completion: &Completion,
        host: &HostRecord,
        rules: &mut RulesCache,
        records: &mut FastMap<String, (UrlRecord, Option<Before>)>,
        now: i64,
    ) -> Result<(), StoreError> {
        let Outcome::Redirected { to, .. } = &completion.outcome else {
            return Ok(());
        };
        let Some(target) = redirect_target(from, to) else {
            return Ok(());
        };
        let target = target.as_str();
        if records.contains_key(target) || !matches!(self.url_record(target), Ok(None)) {
            return Ok(());
        }
        let mut new = UrlRecord::new(now, &[]);
        new.first_source = rec.first_source;
        new.priority = rec.priority;
        new.redirected_from = Some(from.as_str().to_string());
        rules.mark(target, &mut new)?;
        let due = self.schedule(target, &new, host, now);
        new.schedule = Schedule::of(&due);
        tracing::debug!(from = from.as_str(), to = target, "redirect target added");
        records.insert(target.to_string(), (new, None));
        Ok(())
    }

    /// One completion applied to `rec` (returned) and `host`; the records
    /// are the caller's to write.
    pub(crate) fn apply_completion(
        &self,
        url: &str,
        mut rec: UrlRecord,
        completion: &Completion,
        host: &mut HostRecord,
        host_changed: &mut bool,
        now: i64,
    ) -> UrlRecord {
        let outcome = completion.outcome.stored();
        let status = completion.outcome.status();
        let success = matches!(outcome, StoredOutcome::Changed | StoredOutcome::NotModified);
        let changed = outcome == StoredOutcome::Changed;
        let class = repeat_class(outcome, status);
        let previous = rec
            .fetch
            .last_outcome
            .map(|o| repeat_class(o, rec.last_status));
        rec.repeats = if previous == Some(class) {
            rec.repeats.saturating_add(1)
        } else {
            1
        };
        rec.last_status = status;
        let moved_after = self.lastmod_moved_after(&rec).map(Timestamp::from_unix);
        let mut announced = false;
        let f = &mut rec.fetch;
        if success {
            // The estimators see successful fetches only.
            if let Some(previous) = f.last_success {
                let since_lastmod = rec
                    .lastmod
                    .filter(|l| changed && l.at <= now)
                    .map(|l| clamp_u32(now.saturating_sub(l.at)));
                rec.visits.push(StoredVisit {
                    interval: clamp_u32(now.saturating_sub(previous)),
                    changed,
                    since_lastmod,
                });
                if rec.visits.len() > VISIT_HISTORY {
                    rec.visits.remove(0);
                }
                // Lastmod trust: did the sitemap's lastmod predict this? A
                // coarse lastmod whose period holds the last fetch said
                // neither (a day that changed before or after the fetch):
                // no evidence either way.
                if let Some(l) = rec.lastmod {
                    let (at, since) = (Timestamp::from_unix(l.at), Timestamp::from_unix(previous));
                    let precision = Some(l.precision.into());
                    let said = lastmod_says_changed(at, precision, moved_after, since);
                    // A change the host's trusted lastmod announced.
                    announced = said && changed && host.trust.is_trusted();
                    if said || !lastmod_is_newer(at, Some(l.precision.into()), since) {
                        host.trust.observe_fetch(said, changed);
                        *host_changed = true;
                    }
                }
            }
            f.last_success = Some(now);
            f.errors_in_a_row = 0;
            if changed {
                f.last_change = Some(now);
                f.changes = f.changes.saturating_add(1);
            }
            // The page answers: whatever retired it is over.
            rec.lapsed = None;
        } else {
            f.errors_in_a_row = f.errors_in_a_row.saturating_add(1);
        }
        f.last_fetch = Some(now);
        f.last_outcome = Some(outcome);
        f.fetches = f.fetches.saturating_add(1);
        if completion.etag.is_some() || completion.last_modified.is_some() {
            f.etag = bounded(&completion.etag, MAX_ETAG_BYTES);
            f.last_modified = bounded(&completion.last_modified, MAX_LAST_MODIFIED_BYTES);
        }
        if let Outcome::Redirected { to, .. } = &completion.outcome {
            f.redirected_to = bounded(&Some(to.clone()), sitemapd_parser::options::MAX_LOC_CHARS);
        }
        match class {
            (StoredOutcome::Gone, true) => rec.lapsed = Some(Lapse::Gone),
            (StoredOutcome::Gone, false) if rec.repeats >= GONE_AFTER => {
                rec.lapsed = Some(Lapse::Gone);
            }
            (StoredOutcome::Redirected, true) if rec.repeats >= MOVED_AFTER => {
                rec.lapsed = Some(Lapse::Moved);
            }
            _ => {}
        }
        // Host back-off: failures of its URLs in a row (a 5xx, no answer).
        if matches!(outcome, StoredOutcome::Error(_)) {
            host.errors_in_a_row = host.errors_in_a_row.saturating_add(1);
            if host.errors_in_a_row >= HOST_FAILURES {
                let n = host.errors_in_a_row - HOST_FAILURES;
                let wait = self.host_backoff(n);
                host.next_allowed = host.next_allowed.max(now.saturating_add(wait));
            }
            *host_changed = true;
        } else if host.errors_in_a_row > 0 {
            host.errors_in_a_row = 0;
            *host_changed = true;
        }
        let state = self.url_state(url, &rec, now);
        let policy = self.policy();
        rec.interval = if announced {
            policy.next_interval_announced(&state, outcome.kind())
        } else {
            policy.next_interval(&state, outcome.kind())
        }
        .map(|i| i as f32);
        let due = self.schedule(url, &rec, host, now);
        rec.schedule = Schedule::of(&due);
        rec
    }

    /// How long a host backs off after `n` failures beyond
    /// [`HOST_FAILURES`]: the first retry delay, doubling, at most a day.
    fn host_backoff(&self, n: u32) -> i64 {
        let first = self.options.params.retry_after_error;
        let first = if first.is_finite() && first > 0.0 {
            first
        } else {
            3600.0
        };
        (first * 2f64.powi(n.min(32) as i32)).min(86_400.0) as i64
    }
}

/// The URL a redirect of `from` to `to` (absolute, or relative to `from`)
/// adds to the store: normalised, on `from`'s host (`host[:port]`, either
/// scheme: a move to https stays), else none (a sitemap vouches for its
/// own host only; another host's URLs come from that host's sitemaps).
fn redirect_target(from: &sitemapd_parser::NormUrl, to: &str) -> Option<sitemapd_parser::NormUrl> {
    let target = from.join(to.trim()).ok()?.limited().ok()?;
    if target.host_key() != from.host_key() {
        tracing::debug!(
            from = from.as_str(),
            to,
            "redirect to another host not stored"
        );
        return None;
    }
    (target != *from).then_some(target)
}

/// Seconds between two URLs of `host` handed out: its delay, rounded up
/// (0: no delay; a delay that is not a number counts as none).
fn step(host: &HostRecord) -> i64 {
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

/// Why a due record is due now: an expired lease says so, else the
/// policy's reason.
fn reason_of(rec: &UrlRecord, now: i64) -> Reason {
    match rec.schedule.lease {
        Some((_, until)) if until <= now => Reason::LeaseExpired,
        _ => Reason::from(rec.schedule.reason),
    }
}

/// `value` if it is at most `max` bytes long, else none (logged).
fn bounded(value: &Option<String>, max: usize) -> Option<String> {
    match value {
        Some(v) if v.len() > max => {
            tracing::debug!(bytes = v.len(), max, "over-long value not stored");
            None
        }
        other => other.clone(),
    }
}

fn clamp_u32(seconds: i64) -> u32 {
    u32::try_from(seconds.max(0)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RobotsRecord, encode};
    use crate::store::StoreOptions;
    use sitemapd_parser::{NormUrl, RobotsRules};

    /// Rules written without the pass over the host's URLs (as a crash
    /// between the two would leave them): the lease checks every URL
    /// itself, passes the disallowed one over and marks it.
    #[test]
    fn a_lease_passes_over_and_marks_what_the_rules_disallow() {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
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
        assert_eq!(private.status, crate::view::UrlStatus::Blocked);
        assert!(s.check().unwrap().is_ok());
    }
}
