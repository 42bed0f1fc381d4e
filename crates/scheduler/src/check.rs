//! Integrity check and statistics: what `sitemapd stats [--check]` prints.
//!
//! [`Store::stats`](crate::Store::stats) answers from the counts each host keeps (`Tally`), the
//! first entries of the due index and the sitemap records: its cost grows
//! with the number of hosts and sitemaps, not of URLs. [`Store::full_stats`](crate::Store::full_stats)
//! reads every URL record (and adds the change-rate quartiles);
//! [`Store::check`](crate::Store::check) recounts every host and names those whose kept counts
//! differ.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::StoreError;
use crate::keys;
use crate::partition::Partition;
use crate::record::RefreshState;
use crate::record::SiteRecord;
use crate::record::{HostRecord, Lapse, RobotsRecord, SitemapRecord, UrlRecord, decode};
use crate::tally::{OUTCOMES, Tally};
use crate::time::Timestamp;
use crate::view::{SitemapView, UrlView};

/// Problems found by [`Store::check`](crate::Store::check).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// URL records read.
    pub urls: u64,
    /// Due-index entries read.
    pub due_entries: u64,
    /// Records that do not decode.
    pub corrupt: Vec<String>,
    /// Due entries whose URL has no record, or a record due at another time
    /// (or retired).
    pub dangling_due: Vec<String>,
    /// Active records without their due entry.
    pub missing_due: Vec<String>,
    /// Runs out of the queue order (a run whose entries are not sorted, or
    /// reach into the next run's), and lane heads missing, extra or at
    /// another time than their lane's first entry.
    pub misordered: Vec<String>,
    /// Queue memberships (a URL in a client's queue) missing or naming a
    /// URL not in that queue, URL records in another partition than their
    /// host's, and member keys missing (a sitemap's key for a host other
    /// than its own it lists URLs of: a complete read finds the URLs it
    /// left out there through it).
    pub misfiled: Vec<String>,
    /// Refresh schedules of sitemaps the store has no record of.
    pub orphan_refresh: Vec<String>,
    /// Queues whose kept counts differ from their records, with both.
    pub miscounted: Vec<String>,
}

impl CheckReport {
    /// Adds `other`'s findings (another partition's) to these.
    pub(crate) fn absorb(&mut self, other: CheckReport) {
        self.urls += other.urls;
        self.due_entries += other.due_entries;
        self.corrupt.extend(other.corrupt);
        self.dangling_due.extend(other.dangling_due);
        self.missing_due.extend(other.missing_due);
        self.misordered.extend(other.misordered);
        self.misfiled.extend(other.misfiled);
        self.orphan_refresh.extend(other.orphan_refresh);
        self.miscounted.extend(other.miscounted);
    }

    /// No problem found.
    pub fn is_ok(&self) -> bool {
        self.corrupt.is_empty()
            && self.dangling_due.is_empty()
            && self.missing_due.is_empty()
            && self.misordered.is_empty()
            && self.misfiled.is_empty()
            && self.orphan_refresh.is_empty()
            && self.miscounted.is_empty()
    }
}

/// Counts over the whole store.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    /// URLs in the queue (not the gone and moved ones, which are probed
    /// now and then only: they are counted apart).
    pub active: u64,
    /// URLs retired (absent from their sitemaps).
    pub retired: u64,
    /// URLs their host's robots.txt disallows: out of the queue.
    pub blocked: u64,
    /// URLs gone (410, 404 repeated): probed only.
    pub gone: u64,
    /// URLs moved for good (permanent redirect repeated): probed only.
    pub moved: u64,
    /// URLs a URL frontier client completed: out of the queue for good.
    pub completed: u64,
    /// How the last fetch of each URL ended, by outcome name (`changed`,
    /// `not-modified`, `gone`, `error`, `redirected`; never fetched ones
    /// are `never_fetched`).
    pub last_outcomes: BTreeMap<String, u64>,
    /// When the next URL falls due, when none is due now: the earliest due
    /// time in the queue, the expiry of a running lease included (its URL
    /// falls due again then).
    pub next_due: Option<Timestamp>,
    /// Sitemaps whose last fetch failed.
    pub sitemap_failures: u64,
    /// Active URLs never fetched.
    pub never_fetched: u64,
    /// Active URLs holding a lease (from [`Store::stats`](crate::Store::stats): one that ran out
    /// is counted until the URL is leased again or completed;
    /// [`Store::full_stats`](crate::Store::full_stats) counts the leases running now only).
    pub leased: u64,
    /// Active URLs due now (from [`Store::stats`](crate::Store::stats): at most
    /// [`DUE_COUNT_LIMIT`](crate::queue::DUE_COUNT_LIMIT)).
    pub due_now: u64,
    /// More URLs are due than [`Stats::due_now`] counted.
    pub due_now_capped: bool,
    /// Active URLs with a lastmod.
    pub with_lastmod: u64,
    /// Sitemaps recorded.
    pub sitemaps: u64,
    /// Per host: active URLs, lastmod trusted.
    pub hosts: BTreeMap<String, HostStats>,
    /// Estimated change rate (changes/day) over URLs with one: quartiles,
    /// within 0.3% (read off a fixed-size histogram, so that a count holds
    /// no value per URL; [`Store::full_stats`](crate::Store::full_stats) only).
    pub rate_per_day_quartiles: Option<[f64; 3]>,
    /// Bytes on disk.
    pub disk_bytes: u64,
}

impl Stats {
    /// Adds `other`'s counts (another partition's) to these: sums, the
    /// earliest next due time, a host's counts summed (a queue's URLs may
    /// be in several partitions).
    pub(crate) fn absorb(&mut self, other: Stats) {
        self.active += other.active;
        self.retired += other.retired;
        self.blocked += other.blocked;
        self.gone += other.gone;
        self.moved += other.moved;
        self.completed += other.completed;
        for (outcome, n) in other.last_outcomes {
            *self.last_outcomes.entry(outcome).or_default() += n;
        }
        self.next_due = match (self.next_due, other.next_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.sitemap_failures += other.sitemap_failures;
        self.never_fetched += other.never_fetched;
        self.leased += other.leased;
        self.due_now += other.due_now;
        self.due_now_capped |= other.due_now_capped;
        self.with_lastmod += other.with_lastmod;
        self.sitemaps += other.sitemaps;
        for (name, host) in other.hosts {
            let mine = self.hosts.entry(name).or_default();
            mine.active += host.active;
            mine.retired += host.retired;
            mine.blocked += host.blocked;
            mine.lastmod_trusted |= host.lastmod_trusted;
        }
    }
}

/// Per-host counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HostStats {
    /// URLs in the queue.
    pub active: u64,
    /// URLs retired.
    pub retired: u64,
    /// URLs robots.txt disallows.
    pub blocked: u64,
    /// Lastmod trusted for this host.
    pub lastmod_trusted: bool,
}

impl Partition {
    /// Checks that every due entry points at an active record due at that
    /// place in its lane, every active record has exactly its due entry,
    /// every run is in the queue order and every lane has its head, every
    /// queue's kept counts are its records', every record decodes, and
    /// every refresh schedule belongs to a sitemap record.
    pub(crate) fn check(&self) -> Result<CheckReport, StoreError> {
        let mut report = CheckReport::default();
        let mut counted: BTreeMap<String, Tally> = BTreeMap::new();
        let mut runs = crate::due_list::ListCache::default();
        let mut members = crate::members::MemberKeys::default();
        for item in crate::pages::entries(&self.kv, &[], &[0xff]) {
            let (url, value) = match item {
                Ok(entry) => entry,
                Err(StoreError::Record { key, .. }) => {
                    report.corrupt.push(key); // a page
                    continue;
                }
                Err(e) => return Err(e),
            };
            report.urls += 1;
            if self.routes.count() > 1 && self.routes.of_url(&url) != self.index {
                // In another partition than its host's: no reader finds it.
                report
                    .misfiled
                    .push(format!("{url}: in partition {}", self.index));
            }
            let Ok(mut rec) = decode::<UrlRecord>(&value) else {
                report.corrupt.push(url);
                continue;
            };
            for (key, sitemap) in members.called_for(self, &url, &rec)? {
                if !self.kv.contains_key(&key)? {
                    report.misfiled.push(format!(
                        "{url}: listed by {sitemap} on another host, which has no member key for {}",
                        keys::host_of(&url)
                    ));
                }
            }
            // Its lease is its entry's (see `marks`).
            rec.schedule.lease = None;
            let placed = if rec.queued() {
                let run = self.run_of(&rec.lane(&url), &rec.position(&url))?;
                match run
                    .map(|run| runs.entry(&self.kv, &run, &url))
                    .transpose()?
                {
                    Some(Some(mark)) => {
                        rec.schedule.lease = mark;
                        true
                    }
                    _ => false,
                }
            } else {
                true
            };
            if let Some(queue) = &rec.queue
                && !self.kv.contains_key(keys::queue_member(queue, &url))?
            {
                report
                    .misfiled
                    .push(format!("{url}: not listed in queue {queue}"));
            }
            counted
                .entry(rec.queue_name(&url).to_string())
                .or_default()
                .add(&Tally::of(&rec), 1);
            if !placed {
                report.missing_due.push(url);
            }
        }
        // A host record that does not decode is named with the other
        // corrupt records below, and its host as counted but not kept.
        for item in self
            .records::<HostRecord>([keys::HOST])
            .filter(|item| self.intact(item))
        {
            let (host, record) = item?;
            let Some(kept) = record.counts else {
                continue;
            };
            let recount = counted.remove(&host).unwrap_or_default();
            if kept != recount {
                report
                    .miscounted
                    .push(format!("{host}: kept {kept:?}, counted {recount:?}"));
            }
        }
        for (host, recount) in counted {
            if !recount.is_zero() {
                report
                    .miscounted
                    .push(format!("{host}: no counts kept, counted {recount:?}"));
            }
        }
        for prefix in [
            keys::HOST,
            keys::SITEMAP,
            keys::SITE,
            keys::ROBOTS,
            keys::PUSHES,
        ] {
            for item in self.kv.scan_prefix([prefix]) {
                let (key, value) = item?;
                let bad = match prefix {
                    keys::HOST => decode::<HostRecord>(&value).is_err(),
                    keys::SITEMAP => decode::<SitemapRecord>(&value).is_err(),
                    keys::ROBOTS => decode::<RobotsRecord>(&value).is_err(),
                    keys::PUSHES => decode::<crate::record::PushRecord>(&value).is_err(),
                    _ => decode::<SiteRecord>(&value).is_err(),
                };
                if bad {
                    report
                        .corrupt
                        .push(String::from_utf8_lossy(&key).into_owned());
                }
            }
        }
        for item in self.kv.scan_prefix([keys::REFRESH]) {
            let (key, value) = item?;
            let sitemap = String::from_utf8_lossy(&key[1..]).into_owned();
            if decode::<RefreshState>(&value).is_err() {
                report
                    .corrupt
                    .push(String::from_utf8_lossy(&key).into_owned());
            } else if !self.kv.contains_key(keys::sitemap(&sitemap))? {
                report.orphan_refresh.push(sitemap);
            }
        }
        self.check_runs(&mut report)?;
        for item in self.kv.scan_prefix([keys::QUEUE_MEMBER]) {
            let (key, _) = item?;
            let member = key[1..].iter().position(|&b| b == 0).and_then(|at| {
                let queue = std::str::from_utf8(&key[1..1 + at]).ok()?;
                let url = std::str::from_utf8(&key[2 + at..]).ok()?;
                Some((queue, url))
            });
            let listed = match member {
                Some((queue, url)) => match self.url_record(url) {
                    Ok(Some(rec)) => rec.queue.as_deref() == Some(queue),
                    _ => false,
                },
                None => false,
            };
            if !listed {
                report
                    .misfiled
                    .push(String::from_utf8_lossy(&key).into_owned());
            }
        }
        Ok(report)
    }

    /// The runs and heads of [`Store::check`](crate::Store::check): each run sorted, keyed by
    /// its first entry and before the next run of its lane; each entry the
    /// one its record names; each lane's head at its first entry's due
    /// time, and no other head.
    fn check_runs(&self, report: &mut CheckReport) -> Result<(), StoreError> {
        let mut heads: std::collections::HashSet<Vec<u8>> = Default::default();
        // The lane read last, and the place of its last entry.
        let mut last: Option<(Vec<u8>, Vec<u8>)> = None;
        for item in self.kv.scan_prefix([keys::DUE]) {
            let (key, value) = item?;
            let shown = || String::from_utf8_lossy(&key).into_owned();
            let Some(run) = keys::parse_run(&key) else {
                report.due_entries += 1;
                report.dangling_due.push(shown());
                continue;
            };
            let Ok(list) = crate::due_list::decode(&value) else {
                report.due_entries += 1;
                report.corrupt.push(shown());
                continue;
            };
            report.due_entries += list.entries.len() as u64;
            let lane = &key[..run.lane_len];
            let places: Vec<Vec<u8>> = list.entries.iter().map(|e| e.position()).collect();
            let first_here = places.first().is_some_and(|p| *p == key[run.lane_len..]);
            let sorted = places.windows(2).all(|w| w[0] < w[1]);
            let after_last = match &last {
                Some((l, place)) if l == lane => places.first().is_some_and(|p| p > place),
                _ => {
                    let head = keys::head(run.class, run.first.due, run.queue, run.host);
                    heads.insert(head);
                    true
                }
            };
            if !(first_here && sorted && after_last) {
                report.misordered.push(format!(
                    "run {} of lane {} / {} (class {}): entries not in order",
                    run.first.url, run.queue, run.host, run.class
                ));
            }
            last = places.last().map(|p| (lane.to_vec(), p.clone()));
            for entry in &list.entries {
                let owned = match self.url_record(&entry.url) {
                    Ok(Some(rec)) => {
                        rec.queued()
                            && rec.lane(&entry.url) == lane
                            && rec.position(&entry.url) == entry.position()
                            && rec.schedule.reason == entry.reason
                            && rec.metadata.is_empty() != entry.meta
                    }
                    _ => false,
                };
                if !owned {
                    report.dangling_due.push(format!(
                        "{} @ {} (class {}, queue {})",
                        entry.url, entry.due, run.class, run.queue
                    ));
                }
            }
        }
        for item in self.kv.scan_prefix([keys::HEAD]) {
            let (key, _) = item?;
            if !heads.remove(key.as_ref()) {
                let shown = match keys::parse_head(&key) {
                    Some(h) => format!(
                        "a head of lane {} / {} (class {}) at {} that is not its first entry's",
                        h.queue, h.host, h.class, h.due
                    ),
                    None => format!(
                        "a head that does not parse: {}",
                        String::from_utf8_lossy(&key)
                    ),
                };
                report.misordered.push(shown);
            }
        }
        for head in heads {
            let shown = keys::parse_head(&head).map_or_else(String::new, |h| {
                format!("lane {} / {} (class {})", h.queue, h.host, h.class)
            });
            report
                .misordered
                .push(format!("{shown}: its head is missing"));
        }
        Ok(())
    }

    /// Counts per state and host, from the counts each host keeps; the due
    /// URLs counted up to [`DUE_COUNT_LIMIT`](crate::queue::DUE_COUNT_LIMIT); size on disk. Its cost grows
    /// with the number of hosts and sitemaps, not of URLs.
    #[cfg(test)]
    pub(crate) fn stats(&self, now: Timestamp) -> Result<Stats, StoreError> {
        let mut s = self.stats_within(now, crate::queue::DUE_COUNT_LIMIT)?;
        s.disk_bytes = self.size_on_disk()?;
        Ok(s)
    }

    /// [`Partition::stats`] counting at most `due_budget` due URLs (the
    /// store's budget left by the partitions counted before), without the
    /// size on disk (the store's, counted once).
    pub(crate) fn stats_within(
        &self,
        now: Timestamp,
        due_budget: u64,
    ) -> Result<Stats, StoreError> {
        let now = now.unix();
        let mut s = Stats::default();
        for item in self
            .records::<HostRecord>([keys::HOST])
            .filter(|item| self.intact(item))
        {
            let (name, host) = item?;
            let Some(t) = host.counts else {
                continue;
            };
            let count = crate::tally::count;
            // Gone and moved URLs keep a due entry (their probe), but are
            // counted apart from the queue's.
            let queued = count(t.active.saturating_sub(t.gone).saturating_sub(t.moved));
            s.active += queued;
            s.retired += count(t.retired);
            s.blocked += count(t.blocked);
            s.gone += count(t.gone);
            s.moved += count(t.moved);
            s.completed += count(t.completed);
            s.never_fetched += count(t.never_fetched);
            s.with_lastmod += count(t.with_lastmod);
            s.leased += count(t.leases);
            for (outcome, n) in OUTCOMES.iter().zip(t.outcomes) {
                if n > 0 {
                    *s.last_outcomes
                        .entry(outcome.name().to_string())
                        .or_default() += count(n);
                }
            }
            if t.active > 0 || t.retired > 0 || t.blocked > 0 || t.completed > 0 {
                let lastmod_trusted = host.trust.is_trusted();
                s.hosts.insert(
                    name,
                    HostStats {
                        active: queued,
                        retired: count(t.retired),
                        blocked: count(t.blocked),
                        lastmod_trusted,
                    },
                );
            }
        }
        self.sitemap_counts(&mut s)?;
        let (due, lease_ends) = self.due_and_leased(Timestamp::from_unix(now), due_budget + 1)?;
        s.due_now = due.min(due_budget);
        s.due_now_capped = due > due_budget;
        // The first lease to run out of a URL due before it, or the first
        // URL due after now.
        let next_due = match (lease_ends, self.next_head_after(now)?) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        s.next_due = next_due
            .filter(|_| s.due_now == 0)
            .map(Timestamp::from_unix);
        Ok(s)
    }

    /// Sitemaps recorded, and those failing.
    fn sitemap_counts(&self, s: &mut Stats) -> Result<(), StoreError> {
        for item in self
            .records::<SitemapRecord>([keys::SITEMAP])
            .filter(|item| self.intact(item))
        {
            let (url, sitemap) = item?;
            if !self.is_home(&url) {
                continue; // the partition's own account of a sitemap homed elsewhere
            }
            s.sitemaps += 1;
            s.sitemap_failures += u64::from(sitemap.errors > 0);
        }
        Ok(())
    }

    /// [`Store::stats`](crate::Store::stats) counted over every URL record, with the change-rate
    /// quartiles and the leases running now: what `stats --check` shows.
    #[cfg(test)]
    pub(crate) fn full_stats(&self, now: Timestamp) -> Result<Stats, StoreError> {
        let (mut s, rates) = self.full_stats_sketch(now)?;
        s.rate_per_day_quartiles = rates.quartiles();
        s.disk_bytes = self.size_on_disk()?;
        Ok(s)
    }

    /// [`Store::full_stats`](crate::Store::full_stats) with the change rates in a sketch (which
    /// merges), not yet as quartiles.
    pub(crate) fn full_stats_sketch(
        &self,
        now: Timestamp,
    ) -> Result<(Stats, RateSketch), StoreError> {
        let now = now.unix();
        let mut s = Stats::default();
        let mut rates = RateSketch::default();
        let mut next_due: Option<i64> = None;
        for item in self.with_leases(self.all_url_records().filter(|item| self.intact(item))) {
            let (url, rec) = item?;
            let host = s.hosts.entry(rec.queue_name(&url).to_string()).or_default();
            if let Some(outcome) = rec.fetch.last_outcome {
                *s.last_outcomes
                    .entry(outcome.name().to_string())
                    .or_default() += 1;
            }
            if rec.completed {
                s.completed += 1;
                continue;
            }
            if rec.retired {
                s.retired += 1;
                host.retired += 1;
                continue;
            }
            if rec.blocked {
                s.blocked += 1;
                host.blocked += 1;
                continue;
            }
            match rec.lapsed {
                Some(Lapse::Gone) => s.gone += 1,
                Some(Lapse::Moved) => s.moved += 1,
                None => {
                    s.active += 1;
                    host.active += 1;
                }
            }
            // A running lease's URL falls due again when it runs out.
            let due = rec.due_until();
            next_due = Some(next_due.map_or(due, |n| n.min(due)));
            s.never_fetched += u64::from(rec.fetch.last_fetch.is_none());
            s.leased += u64::from(crate::record::lease_holds(rec.schedule.lease, now));
            s.due_now += u64::from(due <= now);
            s.with_lastmod += u64::from(rec.lastmod.is_some());
            if let Some(rate) = self.url_state(&url, &rec, now).rate {
                rates.add(rate * 86_400.0);
            }
        }
        for item in self
            .records::<HostRecord>([keys::HOST])
            .filter(|item| self.intact(item))
        {
            let (name, h) = item?;
            if let Some(stats) = s.hosts.get_mut(&name) {
                stats.lastmod_trusted = h.trust.is_trusted();
            }
        }
        self.sitemap_counts(&mut s)?;
        s.next_due = next_due
            .filter(|_| s.due_now == 0)
            .map(Timestamp::from_unix);
        Ok((s, rates))
    }

    /// What the store knows of `url` (normalised on the way in: a URL that
    /// does not parse is not in the store), if it holds it. Its `reason`
    /// tells a live lease from one that ran out by the store's clock
    /// ([`StoreOptions::clock`](crate::StoreOptions::clock)).
    pub(crate) fn url(&self, url: &str) -> Result<Option<UrlView>, StoreError> {
        let Ok(norm) = sitemapd_parser::NormUrl::parse(url) else {
            return Ok(None);
        };
        let url = norm.as_str();
        let Some(mut rec) = self.url_record(url)? else {
            return Ok(None);
        };
        crate::marks::Marks::default().overlay(self, url, &mut rec)?;
        self.sighted(&mut rec, &mut Default::default())?;
        Ok(Some(UrlView::of(url, &rec, self.options.clock.now())))
    }

    /// Every URL the store holds, retired ones included, in URL order
    /// (for `sitemapd export`); leases judged by the store's clock
    /// ([`StoreOptions::clock`](crate::StoreOptions::clock)), as [`Store::url`](crate::Store::url) does. A record that does not decode is passed over
    /// and counted in [`Store::health`](crate::Store::health) (`unreadable_records`).
    pub(crate) fn export(&self) -> impl Iterator<Item = Result<UrlView, StoreError>> + '_ {
        let mut listings = crate::hash::FastMap::default();
        self.with_leases(self.all_url_records().filter(|item| self.intact(item)))
            .map(move |item| {
                let (url, mut r) = item?;
                self.sighted(&mut r, &mut listings)?;
                Ok(UrlView::of(&url, &r, self.options.clock.now()))
            })
    }

    /// Every sitemap the partition keeps a record of, by URL, with whether
    /// it is the sitemap's home (another partition's record is this
    /// partition's account of the URLs it holds).
    pub(crate) fn sitemaps(
        &self,
    ) -> impl Iterator<Item = Result<(SitemapView, bool), StoreError>> + '_ {
        self.records::<SitemapRecord>([keys::SITEMAP])
            .map(|item| item.map(|(url, r)| (SitemapView::of(&url, &r), self.is_home(&url))))
    }

    /// Every record whose key starts with `prefix` (its first byte the
    /// keyspace's), with its key less that byte.
    pub(crate) fn records<T: crate::record::Record + 'static>(
        &self,
        prefix: impl AsRef<[u8]>,
    ) -> impl Iterator<Item = Result<(String, T), StoreError>> + '_ {
        self.kv.scan_prefix(prefix).map(decode_entry::<T>)
    }

    /// [`Store::records`](crate::Store::records) over a range of keys.
    pub(crate) fn records_in<T: crate::record::Record + 'static>(
        &self,
        range: std::ops::Range<Vec<u8>>,
    ) -> impl Iterator<Item = Result<(String, T), StoreError>> + '_ {
        self.kv.range(range).map(decode_entry::<T>)
    }
}

/// Quantiles of positive values in fixed memory: a histogram of
/// `SUB` bins per octave between `2^MIN_EXP` and `2^MAX_EXP` (values
/// outside are clamped to its ends, 0 has a bin of its own). A quantile is
/// the geometric middle of its bin: within `2^(1/(2 SUB)) - 1` (0.27%) of
/// the value at that rank. `stats` over 10M URLs kept every rate in a Vec
/// (80 MB, 128 MB of capacity); this is 80 KB at any size.
pub(crate) struct RateSketch {
    zero: u64,
    bins: Vec<u64>,
    n: u64,
}

impl RateSketch {
    const SUB: i32 = 128;
    const MIN_EXP: i32 = -40;
    const MAX_EXP: i32 = 40;

    fn add(&mut self, v: f64) {
        self.n += 1;
        if v.is_nan() || v <= 0.0 {
            self.zero += 1;
            return;
        }
        let last = self.bins.len() - 1;
        let i = ((v.log2() - f64::from(Self::MIN_EXP)) * f64::from(Self::SUB)).floor();
        self.bins[(i.max(0.0) as usize).min(last)] += 1;
    }

    /// The value of rank `round((n - 1) p)`, as the sorted Vec gave it.
    fn quantile(&self, p: f64) -> f64 {
        let rank = ((self.n - 1) as f64 * p).round() as u64;
        if rank < self.zero {
            return 0.0;
        }
        let mut seen = self.zero;
        for (i, &count) in self.bins.iter().enumerate() {
            seen += count;
            if rank < seen {
                let exp = f64::from(Self::MIN_EXP) + (i as f64 + 0.5) / f64::from(Self::SUB);
                return exp.exp2();
            }
        }
        unreachable!("rank {rank} < n {}", self.n)
    }

    /// Adds `other`'s values to these.
    pub(crate) fn merge(&mut self, other: &RateSketch) {
        self.zero += other.zero;
        self.n += other.n;
        for (mine, theirs) in self.bins.iter_mut().zip(&other.bins) {
            *mine += theirs;
        }
    }

    pub(crate) fn quartiles(&self) -> Option<[f64; 3]> {
        (self.n > 0).then(|| [self.quantile(0.25), self.quantile(0.5), self.quantile(0.75)])
    }
}

impl Default for RateSketch {
    fn default() -> Self {
        RateSketch {
            zero: 0,
            bins: vec![0; ((Self::MAX_EXP - Self::MIN_EXP) * Self::SUB) as usize],
            n: 0,
        }
    }
}

/// A key-value entry as (name, record): the key without its one-byte
/// prefix, the value decoded.
fn decode_entry<T: crate::record::Record>(
    item: Result<(crate::kv::Bytes, crate::kv::Bytes), StoreError>,
) -> Result<(String, T), StoreError> {
    let (key, value) = item?;
    let name = String::from_utf8_lossy(&key[1..]).into_owned();
    let rec = decode(&value).map_err(|source| StoreError::Record {
        key: name.clone(),
        source: source.into(),
    })?;
    Ok((name, rec))
}

/// The check seen failing: a store corrupted through the key-value layer in
/// each way [`Store::check`](crate::Store::check) detects, and the check naming each problem
/// (and nothing else).
#[cfg(test)]
mod tests {
    use sitemapd_parser::{NormUrl, UrlEntry};

    /// The sketch's quartiles against the sorted values': within 0.3%,
    /// zeros and values off its range included.
    #[test]
    fn rate_sketch_quartiles_within_bound() {
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        for n in [1usize, 2, 3, 7, 100, 10_001] {
            let mut sketch = RateSketch::default();
            let mut values = Vec::new();
            for i in 0..n {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let v = match i % 10 {
                    0 => 0.0,
                    _ => ((rng % 20_000) as f64 / 1000.0 - 10.0).exp2() * 3.0,
                };
                sketch.add(v);
                values.push(v);
            }
            values.sort_by(f64::total_cmp);
            let exact = |p: f64| values[((values.len() - 1) as f64 * p).round() as usize];
            let got = sketch.quartiles().unwrap();
            for (g, p) in got.iter().zip([0.25, 0.5, 0.75]) {
                let want = exact(p);
                assert!(
                    (g - want).abs() <= want * 0.003,
                    "n {n}, p {p}: {g} against {want}"
                );
            }
        }
        assert_eq!(RateSketch::default().quartiles(), None);
        let mut big = RateSketch::default();
        big.add(1e300);
        assert_eq!(big.quartiles().unwrap()[1], (40.0f64 - 1.0 / 256.0).exp2());
    }

    use super::*;
    use crate::{SitemapFetch, StoreOptions};

    const T0: i64 = 1_700_000_000;
    const SM: &str = "https://a.example/sitemap.xml";
    const A: &str = "https://a.example/a";
    const B: &str = "https://a.example/b";
    const C: &str = "https://a.example/c";

    /// A, B and C read from one complete sitemap at T0: every record, due
    /// entry, sitemap record and refresh schedule in place.
    fn store() -> Partition {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let mut ingest = s.ingest(Timestamp::from_unix(T0));
        for url in [A, B, C] {
            let mut entry = UrlEntry::new(NormUrl::parse(url).unwrap());
            // A lastmod, so that the host gets a record (its trust).
            entry.lastmod = Some(sitemapd_parser::Lastmod {
                unix_seconds: T0 - 86_400,
                nanos: 0,
                precision: sitemapd_parser::date::Precision::Second,
            });
            ingest.entry(SM, &entry).unwrap();
        }
        let fetch = SitemapFetch {
            status: 200,
            complete: true,
            ..SitemapFetch::default()
        };
        ingest.sitemap_fetched(SM, &fetch).unwrap();
        ingest.finish().unwrap();
        let clean = s.check().unwrap();
        assert!(clean.is_ok(), "{clean:?}");
        assert_eq!((clean.urls, clean.due_entries), (3, 3));
        assert!(s.kv.contains_key(keys::refresh(SM)).unwrap());
        s
    }

    /// The key of the run that holds `url`'s entry, and its entries.
    fn run_of(s: &Partition, url: &str) -> (Vec<u8>, Vec<crate::record::Listed>) {
        let rec = s.url_record(url).unwrap().unwrap();
        let key = s
            .run_of(&rec.lane(url), &rec.position(url))
            .unwrap()
            .unwrap();
        let list = crate::due_list::decode(&s.kv.get(&key).unwrap().unwrap()).unwrap();
        (key, list.entries)
    }

    /// Writes `entries` as the run under `key`.
    fn set_run(s: &Partition, key: &[u8], entries: Vec<crate::record::Listed>) {
        let value = crate::due_list::encode(&crate::record::DueList { entries });
        s.kv.insert(key.to_vec(), value).unwrap();
    }

    /// The ingest put A, B and C in one run; a URL missing from it, and
    /// one it names at a place its record does not, are named.
    #[test]
    fn runs_are_checked_both_ways() {
        let s = store();
        let (key, entries) = run_of(&s, B);
        assert_eq!(entries.len(), 3);
        // B is left out of its run.
        let without_b = entries.iter().filter(|e| e.url != B).cloned().collect();
        set_run(&s, &key, without_b);
        let r = s.check().unwrap();
        assert_eq!(r.due_entries, 2);
        assert_eq!(lists(&r), [vec![], vec![], strings(&[B]), vec![]]);
        // C's record says it is due later, its entry stays where it was.
        let s = store();
        let mut rec = s.url_record(C).unwrap().unwrap();
        rec.schedule.due += 3_600;
        s.kv.insert(keys::url(C), crate::record::encode(&rec))
            .unwrap();
        let r = s.check().unwrap();
        assert_eq!(
            lists(&r),
            [
                vec![],
                vec![format!("{C} @ {T0} (class 2, queue a.example)")],
                vec![],
                vec![]
            ]
        );
    }

    /// The report's four lists, for comparing whole.
    fn lists(r: &CheckReport) -> [Vec<String>; 4] {
        [
            r.corrupt.clone(),
            r.dangling_due.clone(),
            r.missing_due.clone(),
            r.orphan_refresh.clone(),
        ]
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_missing_due_entry_is_named() {
        let s = store();
        let (key, entries) = run_of(&s, B);
        s.kv.remove(key.clone()).unwrap();
        // The run gone: its lane's head names nothing.
        let r = s.check().unwrap();
        assert!(!r.is_ok());
        assert_eq!(r.due_entries, 0);
        assert_eq!(lists(&r), [vec![], vec![], strings(&[A, B, C]), vec![]]);
        assert_eq!(r.misordered.len(), 1, "{:?}", r.misordered);
        set_run(&s, &key, entries);
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn a_dangling_due_entry_is_named() {
        // A due entry for a URL the store has no record of.
        let s = store();
        let (key, mut entries) = run_of(&s, B);
        let ghost = "https://a.example/zz-ghost";
        let mut entry = entries[0].clone();
        entry.url = ghost.to_string();
        entries.push(entry);
        set_run(&s, &key, entries);
        let r = s.check().unwrap();
        assert_eq!(r.due_entries, 4);
        assert_eq!(
            lists(&r),
            [
                vec![],
                vec![format!("{ghost} @ {T0} (class 2, queue a.example)")],
                vec![],
                vec![]
            ]
        );

        // A run key too short to parse: named by its bytes.
        let s = store();
        s.kv.insert(&b"d\x00short"[..], &[][..]).unwrap();
        let r = s.check().unwrap();
        assert_eq!(
            lists(&r),
            [vec![], strings(&["d\u{0}short"]), vec![], vec![]]
        );
    }

    /// Entries out of order within a run, and heads missing or extra.
    #[test]
    fn runs_out_of_order_and_wrong_heads_are_named() {
        let s = store();
        let (key, mut entries) = run_of(&s, B);
        entries.swap(1, 2);
        set_run(&s, &key, entries);
        let r = s.check().unwrap();
        assert_eq!(r.misordered.len(), 1, "{:?}", r.misordered);
        assert!(r.dangling_due.is_empty() && r.missing_due.is_empty());

        let s = store();
        let heads: Vec<Vec<u8>> =
            s.kv.scan_prefix([keys::HEAD])
                .map(|i| i.unwrap().0.to_vec())
                .collect();
        assert_eq!(heads.len(), 1);
        s.kv.remove(heads[0].clone()).unwrap();
        let r = s.check().unwrap();
        assert_eq!(
            r.misordered,
            ["lane a.example / a.example (class 2): its head is missing"]
        );
        s.kv.insert(keys::head(2, T0 + 5, "a.example", "a.example"), &[][..])
            .unwrap();
        let r = s.check().unwrap();
        assert_eq!(r.misordered.len(), 2, "{:?}", r.misordered);
    }

    /// A URL in a client's queue needs its membership key, and a
    /// membership key its URL in that queue.
    #[test]
    fn queue_memberships_are_checked_both_ways() {
        let s = store();
        s.put_known(
            vec![crate::KnownUrl {
                url: B.to_string(),
                refetch: Some(Timestamp::from_unix(T0)),
                metadata: Vec::new(),
                queue: Some("shard-1".to_string()),
            }],
            Timestamp::from_unix(T0),
            |_, _| None,
        )
        .unwrap();
        assert!(s.check().unwrap().is_ok());
        s.kv.remove(keys::queue_member("shard-1", B)).unwrap();
        s.kv.insert(keys::queue_member("shard-2", A), &[][..])
            .unwrap();
        let r = s.check().unwrap();
        assert_eq!(r.misfiled.len(), 2, "{:?}", r.misfiled);
        assert!(r.misfiled[0].starts_with(B), "{:?}", r.misfiled);
    }

    /// A sitemap listing URLs of another host keeps one member key for it;
    /// the check names the key missing once (not per URL), and a repair
    /// writes it back.
    #[test]
    fn a_missing_member_key_is_named_and_repaired() {
        let s = store();
        let mut ingest = s.ingest(Timestamp::from_unix(T0));
        for url in ["https://b.example/1", "https://b.example/2"] {
            let entry = UrlEntry::new(NormUrl::parse(url).unwrap());
            ingest.entry(SM, &entry).unwrap();
        }
        ingest.finish().unwrap();
        assert!(s.check().unwrap().is_ok());
        let id = s.sitemap_record(SM).unwrap().unwrap().id;
        let key = keys::member(id, "b.example");
        assert!(s.kv.contains_key(&key).unwrap());
        s.kv.remove(key.clone()).unwrap();
        let r = s.check().unwrap();
        assert_eq!(r.misfiled.len(), 1, "{:?}", r.misfiled);
        assert!(
            r.misfiled[0]
                .starts_with("https://b.example/1: listed by https://a.example/sitemap.xml"),
            "{:?}",
            r.misfiled
        );
        s.repair().unwrap();
        assert!(s.kv.contains_key(&key).unwrap());
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn an_orphan_refresh_record_is_named() {
        // The sitemap's record gone, its refresh schedule left.
        let s = store();
        s.kv.remove(keys::sitemap(SM)).unwrap();
        let r = s.check().unwrap();
        assert_eq!(lists(&r), [vec![], vec![], vec![], strings(&[SM])]);

        // A schedule for a sitemap the store never read.
        let s = store();
        let other = "https://a.example/other.xml";
        let schedule = s.kv.get(keys::refresh(SM)).unwrap().unwrap();
        s.kv.insert(keys::refresh(other), schedule).unwrap();
        let r = s.check().unwrap();
        assert_eq!(lists(&r), [vec![], vec![], vec![], strings(&[other])]);
    }

    #[test]
    fn a_corrupt_record_is_named() {
        let garbage = &b"\x01\xff\xff\xff"[..];
        // A URL record: named as corrupt, and its due entry, whose record
        // cannot be read, as dangling.
        let s = store();
        s.kv.insert(keys::url(B), garbage).unwrap();
        let r = s.check().unwrap();
        assert_eq!(r.urls, 3);
        let entry = format!("{B} @ {T0} (class 2, queue a.example)");
        assert_eq!(lists(&r), [strings(&[B]), vec![entry], vec![], vec![]]);

        // A sitemap, host and refresh record: each named by its key.
        for key in [
            keys::sitemap(SM),
            keys::host("a.example"),
            keys::refresh(SM),
        ] {
            let s = store();
            assert!(s.kv.contains_key(&key).unwrap(), "{key:?}");
            s.kv.insert(key.clone(), garbage).unwrap();
            let r = s.check().unwrap();
            let name = String::from_utf8_lossy(&key).into_owned();
            assert_eq!(lists(&r), [vec![name], vec![], vec![], vec![]]);
        }
    }
}
