//! One partition of a store ([`crate::store`]): its keyspace
//! ([`crate::kv`]: sled on disk, or in memory), its write lock, the policy
//! that schedules its URLs, and the reads every other module shares. Every
//! key of a host (its URLs, due lists, robots rules, politeness) and of a
//! sitemap lives in the partition [`crate::routing`] assigns it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::error::StoreError;
use crate::estimate::{self, Visit};
use crate::hash::FastMap;
use crate::keys;
use crate::kv::{Batch, Kv};
use crate::options::{DEFAULT_POLICY, EARLIER_DEFAULT_POLICY, StoreOptions};
use crate::policy::{self, Calibration, FetchOutcome, HostState, PageSummary, Policy, UrlState};
use crate::record::{
    HostRecord, Listing, Record, Schedule, SitemapRecord, StoredReason, UrlRecord, decode,
};
use crate::routing::Routes;
use crate::time::Timestamp;
use crate::view::{HostView, SitemapView};
use sitemapd_parser::{HostKey, NormUrl};

/// The longest a background writer waits for crawler requests to pass
/// before it takes the write lock anyway.
pub(crate) const GIVE_WAY: Duration = Duration::from_millis(100);

/// What the leases so far have earned the URLs served ahead of their turn
/// ([`Store::lease`]): validation samples, and changes a trusted host's
/// lastmod announced (each a number of URLs, whole or not).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Credits {
    pub(crate) validation: f64,
    pub(crate) announced: f64,
}

/// The store; share it behind an `Arc`. Writes are serialised inside.
pub(crate) struct Partition {
    pub(crate) kv: Kv,
    /// The policy in use; [`Store::calibrate`] replaces it with one that
    /// has the new multiplier.
    pub(crate) policy: RwLock<Arc<dyn Policy>>,
    pub(crate) options: StoreOptions,
    /// One writer at a time: records are read, merged and written back.
    pub(crate) write: Mutex<()>,
    /// Crawler requests waiting for `write` ([`Store::lock_background`]).
    pub(crate) waiting: AtomicUsize,
    /// What the leases so far have earned the URLs served ahead of their
    /// turn ([`Store::lease`]).
    #[cfg(test)]
    pub(crate) credits: Mutex<Credits>,
    /// Lastmod moves recorded before this time are not dated ([`keys::DATED_FROM`]).
    dated_from: i64,
    /// Whether some host is [`keys::SUSPECT`] (none, almost always: then a
    /// lease asks no more).
    pub(crate) suspects: AtomicBool,
    /// Due lists a scan decoded ([`Store::decoded_list`]).
    decoded: Mutex<crate::due_list::Decoded>,
    /// Whether leases and peeks hand out its URLs ([`Store::serve_partition`]);
    /// shared with the same partition of the store's crawls.
    pub(crate) serving: Arc<AtomicBool>,
    /// Its place among the store's partitions, and how the store routes
    /// hosts to them.
    pub(crate) index: usize,
    pub(crate) routes: Routes,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition")
            .field("policy", &self.policy().name())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Partition {
    /// What has gone wrong with the store so far: damage met while
    /// reading, and whether the last write failed (cleared by the next
    /// write that succeeds).
    pub(crate) fn health(&self) -> crate::kv::StoreHealth {
        self.kv.health()
    }

    /// False for a record that does not decode: the scans that count or
    /// retire pass over it, noted in [`Store::health`] (`check` names it).
    pub(crate) fn intact<T>(&self, item: &Result<T, StoreError>) -> bool {
        match item {
            Err(StoreError::Record { key, .. }) => {
                self.kv.passed_over(key);
                false
            }
            _ => true,
        }
    }

    /// Reads one key, to learn whether the store still reads (a failure
    /// is recorded in [`Store::health`]).
    pub(crate) fn probe_read(&self) -> Result<(), StoreError> {
        self.kv.get(keys::LAYOUT).map(|_| ())
    }

    /// Writes one key, to learn whether the partition writes again after a
    /// failed write (the result is recorded in [`Store::health`]); the
    /// caller flushes.
    pub(crate) fn probe_write(&self) -> Result<(), StoreError> {
        let _lock = self.lock();
        let mut batch = Batch::default();
        batch.insert(keys::PROBE, self.options.clock.now().unix().to_be_bytes());
        self.kv.apply_batch(batch)
    }

    /// Reads every key and value of the store, start to end: the damage
    /// sled finds only when it reads a page is found here. A full pass over
    /// the store (about as long as `stats`).
    pub(crate) fn verify_readable(&self) -> Result<u64, StoreError> {
        let mut n = 0u64;
        for item in self.kv.range(Vec::new()..vec![0xff; 16]) {
            item?;
            n += 1;
        }
        Ok(n)
    }

    /// Fault injection for the crate's tests: after `writes` more writes,
    /// every write of this store fails as a full disk would (`None`: writes
    /// succeed again).
    #[cfg(test)]
    pub(crate) fn inject_write_failures(&self, writes: Option<u64>) {
        self.kv.inject_write_failures(writes);
    }

    /// A store of one partition in directory `path` (the crate's tests of
    /// one partition).
    #[cfg(test)]
    pub(crate) fn open(
        path: impl AsRef<std::path::Path>,
        options: StoreOptions,
    ) -> Result<Partition, StoreError> {
        Partition::with_kv(Kv::open(path.as_ref(), options.cache_bytes)?, options)
    }

    /// A store of one partition in memory (the crate's tests of one
    /// partition).
    #[cfg(test)]
    pub(crate) fn in_memory(options: StoreOptions) -> Result<Partition, StoreError> {
        Partition::with_kv(Kv::memory(), options)
    }

    #[cfg(test)]
    pub(crate) fn with_kv(kv: Kv, options: StoreOptions) -> Result<Partition, StoreError> {
        Partition::with_kv_at(kv, options, 0, Routes::new(1))
    }

    /// Partition `index` of a store routed by `routes`, in `kv`.
    pub(crate) fn with_kv_at(
        kv: Kv,
        options: StoreOptions,
        index: usize,
        routes: Routes,
    ) -> Result<Partition, StoreError> {
        crate::migrate::to_current_layout(&kv)?;
        let empty = crate::pages::entries(&kv, &[], &[0xff]).next().is_none();
        let saved = kv
            .get(keys::POLICY)?
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        let name = match (&options.policy, &saved) {
            (Some(name), _) => name.clone(),
            (None, Some(name)) => name.clone(),
            (None, None) if empty => DEFAULT_POLICY.to_string(),
            (None, None) => EARLIER_DEFAULT_POLICY.to_string(),
        };
        // What the first open of a store (or of a store made by an older
        // build) settles: one batch.
        let mut settled = Batch::default();
        let dated_from = match kv.get(keys::DATED_FROM)? {
            Some(v) => <[u8; 8]>::try_from(v.as_ref()).map_or(i64::MAX, i64::from_be_bytes),
            None => {
                // A new store dates every move; one made before dates
                // those recorded from now on.
                let from = if empty {
                    i64::MIN
                } else {
                    options.clock.now().unix()
                };
                settled.insert(keys::DATED_FROM, from.to_be_bytes());
                from
            }
        };
        let mut params = options.params.clone();
        if let Some(bytes) = kv.get(keys::CALIBRATION)?
            && let Some(calibration) = decode_calibration(&bytes)
        {
            params.calibration = calibration;
        }
        let policy = options.policies.build(&name, params)?;
        // Saved from the first open on, so that a later default never
        // changes what a store runs.
        if options.policy.is_some() || saved.is_none() {
            settled.insert(keys::POLICY, name.as_bytes());
        }
        if !settled.is_empty() {
            kv.apply_batch(settled)?;
        }
        let suspects = kv.scan_prefix([keys::SUSPECT]).next().is_some();
        Ok(Partition {
            policy: RwLock::new(Arc::from(policy)),
            options,
            write: Mutex::new(()),
            waiting: AtomicUsize::new(0),
            #[cfg(test)]
            credits: Mutex::new(Credits::default()),
            dated_from,
            suspects: AtomicBool::new(suspects),
            decoded: Mutex::default(),
            serving: Arc::new(AtomicBool::new(true)),
            index,
            routes,
            kv,
        })
    }

    /// Whether this partition is the home of the sitemap at `url` (its
    /// host's partition): the one whose record of it is the sitemap's own.
    /// Another partition holding URLs it lists keeps an account of its own
    /// of the sitemap's reads, for those URLs' retirement.
    pub(crate) fn is_home(&self, url: &str) -> bool {
        self.routes.of_url(url) == self.index
    }

    /// When a read still showed the value `r`'s lastmod replaced
    /// ([`UrlRecord::lastmod_moved_after`]), if this store dated it.
    pub(crate) fn lastmod_moved_after(&self, r: &UrlRecord) -> Option<i64> {
        r.lastmod_moved_after().filter(|&t| t >= self.dated_from)
    }

    /// The policy in use.
    pub(crate) fn policy(&self) -> Arc<dyn Policy> {
        self.policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The options it was opened with.
    pub(crate) fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// Writes everything to disk now.
    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        self.kv.flush()?;
        Ok(())
    }

    /// Bytes the store takes on disk.
    pub(crate) fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.kv.size_on_disk()
    }

    /// The write lock, for a crawler's request (lease, complete, notify):
    /// background writers give way while such a request waits.
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// The write lock, for background work (an ingest batch): while a
    /// crawler's request waits for the lock, this waits for it to pass, up
    /// to [`GIVE_WAY`] in all, so that a sitemap being ingested slows
    /// leases and completions by one batch at most, and an ingest under a
    /// constant stream of requests still moves on.
    pub(crate) fn lock_background(&self) -> std::sync::MutexGuard<'_, ()> {
        let start = std::time::Instant::now();
        while self.waiting.load(Ordering::SeqCst) > 0 && start.elapsed() < GIVE_WAY {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        self.write.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves every URL record written under a key of its own since its
    /// page was (by a completion, a notification) back into its page, a
    /// few thousand at a time under the write lock, giving way to crawler
    /// requests between: nothing a reader sees changes, and the store then
    /// holds the fewer, denser keys an ingest leaves (what a compaction
    /// copies). How many moved.
    pub(crate) fn fold_records(&self) -> Result<u64, StoreError> {
        /// Records moved in one batch.
        const FOLD_BATCH: usize = 2000;
        let mut from = Vec::new();
        let mut moved = 0;
        loop {
            let _lock = self.lock_background();
            let (n, next) = crate::pages::fold_own_keys(&self.kv, &from, FOLD_BATCH)?;
            moved += n;
            match next {
                Some(next) => from = next,
                None => return Ok(moved),
            }
        }
    }

    pub(crate) fn get<T: Record>(&self, key: &[u8]) -> Result<Option<T>, StoreError> {
        match self.kv.get(key)? {
            None => Ok(None),
            Some(bytes) => decode(&bytes)
                .map(Some)
                .map_err(|source| StoreError::Record {
                    key: String::from_utf8_lossy(key.get(1..).unwrap_or_default()).into_owned(),
                    source: source.into(),
                }),
        }
    }

    /// The URL records of `host` (`host[:port]`, as [`Store::host`] takes
    /// it), http then https, each in URL order; records that do not decode
    /// are passed over. None for an empty host or one with a path.
    pub(crate) fn host_urls<'a>(
        &'a self,
        host: &'a str,
    ) -> impl Iterator<Item = Result<(String, UrlRecord), StoreError>> + 'a {
        host_ranges(host)
            .into_iter()
            .flat_map(move |(from, to)| self.url_records_in(&from, &to))
            .filter(move |item| self.intact(item))
    }

    /// The URL records from URL `from` (included) to `to` (excluded), in
    /// URL order, wherever each is kept ([`crate::pages`]).
    pub(crate) fn url_records_in<'a>(
        &'a self,
        from: &[u8],
        to: &[u8],
    ) -> impl Iterator<Item = Result<(String, UrlRecord), StoreError>> + use<'a> {
        crate::pages::entries(&self.kv, from, to).map(|item| {
            let (url, bytes) = item?;
            let rec = decode_url_record(&url, &bytes)?;
            Ok((url, rec))
        })
    }

    /// Every URL record, in URL order.
    pub(crate) fn all_url_records(
        &self,
    ) -> impl Iterator<Item = Result<(String, UrlRecord), StoreError>> + '_ {
        self.url_records_in(&[], &[0xff])
    }

    /// The URLs of the sitemaps listing `url` (those its record remembers,
    /// [`UrlView::sources`](crate::UrlView::sources) of them), oldest first; empty for a URL the
    /// store does not hold.
    pub(crate) fn url_sitemaps(&self, url: &str) -> Result<Vec<String>, StoreError> {
        let Ok(norm) = NormUrl::parse(url) else {
            return Ok(Vec::new());
        };
        let Some(record) = self.url_record(norm.as_str())? else {
            return Ok(Vec::new());
        };
        let mut urls = Vec::new();
        for (id, _) in &record.sources {
            if let Some(sitemap) = self.kv.get(keys::sitemap_id(*id))? {
                urls.push(String::from_utf8_lossy(&sitemap).into_owned());
            }
        }
        Ok(urls)
    }

    /// What the store knows of the sitemap at `url` (as listed), if it was
    /// read before.
    pub(crate) fn sitemap(&self, url: &str) -> Result<Option<SitemapView>, StoreError> {
        Ok(self.sitemap_record(url)?.map(|r| SitemapView::of(url, &r)))
    }

    /// What the store knows of `host`; a host it has never seen gets the
    /// defaults.
    pub(crate) fn host(&self, host: &HostKey) -> Result<HostView, StoreError> {
        let tally = self.tally(host.as_str())?;
        let urls = crate::tally::count(tally.active.saturating_add(tally.blocked));
        Ok(HostView::of(host, &self.host_record(host.as_str())?, urls))
    }

    /// The record of `url` (normalised), if the store holds it.
    pub(crate) fn url_record(&self, url: &str) -> Result<Option<UrlRecord>, StoreError> {
        crate::pages::record(&self.kv, url)?
            .map(|bytes| decode_url_record(url, &bytes))
            .transpose()
    }

    /// How the reads of the sitemap with this id stand for its URLs' stamps
    /// (none read: no URL listed, no absence counted). A record that does
    /// not decode reads as none (logged and counted in
    /// [`Store::health`](crate::Store::health)): a view or an ingest of
    /// another sitemap does not fail on it.
    pub(crate) fn listing(&self, id: u64) -> Result<Listing, StoreError> {
        Ok(self
            .sitemap_of_id(id)?
            .map(|(_, record)| Listing::of(&record))
            .unwrap_or_default())
    }

    /// The URL and record of the sitemap with id `id` in this partition, if
    /// it has one; a record that does not decode reads as none (logged and
    /// counted in [`Store::health`](crate::Store::health)).
    pub(crate) fn sitemap_of_id(
        &self,
        id: u64,
    ) -> Result<Option<(String, SitemapRecord)>, StoreError> {
        let Some(url) = self.kv.get(keys::sitemap_id(id))? else {
            return Ok(None);
        };
        let url = String::from_utf8_lossy(&url).into_owned();
        match self.sitemap_record(&url) {
            Ok(record) => Ok(record.map(|r| (url, r))),
            Err(StoreError::Record { key, source }) => {
                tracing::warn!(%key, error = %source, "corrupt sitemap record read as none");
                self.kv.passed_over(&key);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// `rec`'s last sighting brought up to the last read of each sitemap
    /// that listed it then: a read that lists a URL with nothing new leaves
    /// its record as it was ([`Listing`]). `listings`: the sitemaps' reads
    /// as read so far, kept for the next call (at most a few thousand).
    pub(crate) fn sighted(
        &self,
        rec: &mut UrlRecord,
        listings: &mut FastMap<u64, Listing>,
    ) -> Result<(), StoreError> {
        const CACHED: usize = 4_096;
        for &(id, stamp) in &rec.sources {
            if !listings.contains_key(&id) {
                if listings.len() >= CACHED {
                    listings.clear();
                }
                listings.insert(id, self.listing(id)?);
            }
            if let Some(read) = listings[&id].sighting(stamp) {
                rec.last_seen = rec.last_seen.max(read);
            }
        }
        Ok(())
    }

    /// The record of the sitemap at `url`, if fetched before.
    pub(crate) fn sitemap_record(&self, url: &str) -> Result<Option<SitemapRecord>, StoreError> {
        self.get(&keys::sitemap(url))
    }

    /// The entries of the due list `value` at `key` (each without its
    /// lease; `front`: the leases in front of them), decoded once for as
    /// long as the entries' bytes stay the same.
    pub(crate) fn decoded_list(
        &self,
        key: &[u8],
        value: &crate::kv::Bytes,
        front: &crate::due_list::Leases,
    ) -> Result<crate::due_list::Entries, crate::record::RecordError> {
        crate::due_list::decoded(&self.decoded, key, value, front)
    }

    /// The record of `host` (`host[:port]`); a fresh one if absent, or if
    /// its record does not decode (politeness and trust start over).
    pub(crate) fn host_record(&self, host: &str) -> Result<HostRecord, StoreError> {
        let min_delay = self.lease_delay(host)?;
        self.host_record_with(host, min_delay)
    }

    /// [`Store::host_record`], its lease delay `min_delay` (known to the
    /// caller, who read the host's robots record).
    pub(crate) fn host_record_with(
        &self,
        host: &str,
        min_delay: f64,
    ) -> Result<HostRecord, StoreError> {
        Ok(HostRecord {
            min_delay,
            ..self.stored_host_record(host)?
        })
    }

    /// The record of `host` as stored (its `min_delay` as last written); a
    /// fresh one if absent, or if it does not decode (politeness, trust and
    /// counts start over, and `stats --check` names the host).
    pub(crate) fn stored_host_record(&self, host: &str) -> Result<HostRecord, StoreError> {
        let key = keys::host(host);
        let Some(value) = self.kv.get(&key)? else {
            return Ok(HostRecord::default());
        };
        match crate::record::decode::<HostRecord>(&value) {
            Ok(record) => Ok(record),
            Err(_) => {
                self.kv.passed_over(&format!("host {host}"));
                Ok(crate::record::host_record_or_fresh(&key, Some(&value)))
            }
        }
    }

    /// The policy's view of a record at `now`.
    ///
    /// The rate: with two or more push notifications (K) the site is taken
    /// to push every change, which is the `complete` estimator's model:
    /// (K + 0.5)/(T + 0.5), T the time since the first notification; it
    /// replaces the fetch-based estimate, since a fetch that found no change
    /// says less than a push that says one happened. With fewer, the
    /// configured estimator over the fetch history (one notification alone
    /// is no rate: it would be 1.5/T, huge just after it); when no fetch
    /// found a change, [`estimate::unchanged_rate`] instead of the
    /// estimators' 0.
    pub(crate) fn url_state(&self, url: &str, r: &UrlRecord, now: i64) -> UrlState {
        let visits: Vec<Visit> = r.visits.iter().map(|v| Visit::from(*v)).collect();
        let rate = match r.notified {
            Some(n) if n.count >= 2 => Some(estimate::complete(
                u64::from(n.count),
                now.saturating_sub(n.first) as f64,
            )),
            // No change seen yet: half a change over the time watched, not
            // 0 (which the policies would floor to the longest interval).
            _ => self.options.estimator.estimate(&visits).map(|r| {
                match estimate::unchanged_rate(&visits) {
                    Some(smoothed) if r <= 0.0 => smoothed,
                    _ => r,
                }
            }),
        };
        UrlState {
            first_seen: Timestamp::from_unix(r.first_seen),
            last_fetch: r.fetch.last_success.map(Timestamp::from_unix),
            last_attempt: r.fetch.last_fetch.map(Timestamp::from_unix),
            last_outcome: r.fetch.last_outcome.map(|o| match (r.lapsed, o.kind()) {
                // Retired by its fetches: probed only.
                (Some(_), _) => FetchOutcome::Gone,
                // A 404 that has not retired it yet backs off as an error.
                (None, FetchOutcome::Gone) => FetchOutcome::Error,
                (None, kind) => kind,
            }),
            lastmod: r.lastmod.map(|l| Timestamp::from_unix(l.at)),
            lastmod_precision: r.lastmod.map(|l| l.precision.into()),
            lastmod_moved_after: self.lastmod_moved_after(r).map(Timestamp::from_unix),
            changefreq: r.changefreq.map(Into::into),
            priority: r.priority,
            interval: r.interval.map(f64::from),
            rate,
            importance: 1.0,
            errors_in_a_row: r.fetch.errors_in_a_row,
            sample: crate::hash::unit(
                crate::hash::Fnv1a::default()
                    .write(url.as_bytes())
                    .write(&r.fetch.last_fetch.unwrap_or(0).to_be_bytes())
                    .finish(),
            ),
        }
    }

    /// What the policy sees of `url` on `host`: [`Store::url_state`], with
    /// the change rate counted from the lastmods when they announce every
    /// change ([`policy::every_change_observed`],
    /// [`UrlRecord::observed_rate`]): a crawl on change fetches right after
    /// changes, which the estimators, built for visits that do not depend
    /// on the changes, read as a page that changes at every visit.
    fn policy_view(&self, url: &str, r: &UrlRecord, host: &HostState, now: i64) -> UrlState {
        let mut state = self.url_state(url, r, now);
        if policy::every_change_observed(&state, host)
            && let Some(rate) = r.observed_rate(now)
        {
            state.rate = Some(rate);
        }
        state
    }

    /// When the policy says `url` is next due, with up to ±5 % of the wait
    /// as jitter taken from a hash of the URL, so URLs scheduled together
    /// (one sitemap read) do not all fall due in the same second. A newer
    /// lastmod on a host whose lastmods have earned trust is a change a
    /// trusted source announced: [`StoredReason::LastmodTrusted`], in the
    /// announced class.
    pub(crate) fn schedule(
        &self,
        url: &str,
        r: &UrlRecord,
        host: &HostRecord,
        now: i64,
    ) -> Schedule {
        let trusted = host.trust.is_trusted();
        let host = host_state(host);
        let mut due = self.policy().next_due(
            &self.policy_view(url, r, &host, now),
            &host,
            Timestamp::from_unix(now),
        );
        let wait = due.at.unix().saturating_sub(now);
        if wait > 20 {
            let unit = crate::refresh::jitter_unit(url);
            due.at = due.at.plus_secs((unit * 0.05 * wait as f64) as i64);
        }
        let mut schedule = Schedule::of(&due);
        if trusted && due.reason == policy::Reason::LastmodNewer {
            schedule.reason = StoredReason::LastmodTrusted;
        }
        schedule
    }

    /// The (planning rate, importance) of every queued URL of the
    /// partition, summarised in bounded memory, and of those whose every
    /// change is observed ([`Store::calibrate`]).
    pub(crate) fn page_summaries(&self) -> Result<(PageSummary, PageSummary), StoreError> {
        let params = &self.options.params;
        let mut pages = PageSummary::new();
        // Pages whose every change is observed, for crawl on change: on a
        // complete host, lastmods to the second. URL keys come host by
        // host, so one host record at a time.
        let mut complete = PageSummary::new();
        let mut host: Option<(String, HostState)> = None;
        // Its last sighting is its record's or a later read's that still
        // lists it unchanged (`sighted`).
        let mut listings = FastMap::default();
        for item in self.all_url_records().filter(|item| self.intact(item)) {
            let (url, mut r) = item?;
            if r.queued() {
                self.sighted(&mut r, &mut listings)?;
                let name = keys::host_of(&url);
                let state_of_host = match &host {
                    Some((h, state)) if h == name => *state,
                    _ => {
                        let state = host_state(&self.host_record(name)?);
                        host = Some((name.to_string(), state));
                        state
                    }
                };
                let state = self.policy_view(&url, &r, &state_of_host, as_of(&r));
                let rate = policy::planning_rate(&state, params);
                pages.add(rate, state.importance);
                if policy::every_change_observed(&state, &state_of_host) {
                    complete.add(rate, state.importance);
                }
            }
        }
        Ok((pages, complete))
    }

    /// Whether leases and peeks hand out its URLs.
    pub(crate) fn serving(&self) -> bool {
        self.serving.load(Ordering::Relaxed)
    }

    /// Hands its URLs out in leases and peeks, or not.
    pub(crate) fn set_serving(&self, serving: bool) {
        self.serving.store(serving, Ordering::Relaxed);
    }

    /// Reads again what it keeps in memory of its keys, after write log
    /// entries were applied under it ([`crate::write_log`]): whether a
    /// host is suspect, and the policy with its calibration.
    pub(crate) fn reread_after_replay(&self) -> Result<(), StoreError> {
        let suspects = self.kv.scan_prefix([keys::SUSPECT]).next().is_some();
        self.suspects.store(suspects, Ordering::Relaxed);
        let name = match self.kv.get(keys::POLICY)? {
            Some(v) => String::from_utf8_lossy(&v).into_owned(),
            None => self.policy().name().to_string(),
        };
        let mut params = self.options.params.clone();
        if let Some(bytes) = self.kv.get(keys::CALIBRATION)?
            && let Some(calibration) = decode_calibration(&bytes)
        {
            params.calibration = calibration;
        }
        let policy = self.options.policies.build(&name, params)?;
        *self.policy.write().unwrap_or_else(|e| e.into_inner()) = Arc::from(policy);
        Ok(())
    }

    /// Schedules with `calibration` from now on, and saves it.
    pub(crate) fn set_calibration(&self, calibration: Calibration) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.insert(keys::CALIBRATION, encode_calibration(&calibration));
        self.kv.apply_batch(batch)?;
        let mut params = self.options.params.clone();
        params.calibration = calibration;
        let current = self.policy();
        let calibrated = self.options.policies.build(current.name(), params)?;
        *self.policy.write().unwrap_or_else(|e| e.into_inner()) = Arc::from(calibrated);
        Ok(())
    }
}

/// What a policy may know of a host.
fn host_state(host: &HostRecord) -> HostState {
    HostState {
        lastmod_trusted: host.trust.is_trusted(),
        lastmod_complete: host.trust.is_complete(),
        lastmod_probation: host.trust.on_probation(),
    }
}

/// A [`Calibration`] as saved: its two numbers, big-endian.
fn encode_calibration(c: &Calibration) -> Vec<u8> {
    [c.multiplier, c.on_change_level]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect()
}

/// A saved [`Calibration`]; 8 bytes is one saved before crawl on change
/// (the multiplier alone). Any other length: none.
fn decode_calibration(bytes: &[u8]) -> Option<Calibration> {
    let number = |at: usize| {
        let b = bytes.get(at..at + 8)?;
        Some(f64::from_be_bytes(b.try_into().ok()?))
    };
    match bytes.len() {
        8 | 16 => Some(Calibration {
            multiplier: number(0)?,
            on_change_level: number(8).unwrap_or(0.0),
        }),
        _ => None,
    }
}

/// The latest time a record knows of: its last sighting, fetch or push
/// notification (the "now" of a view with no clock).
fn as_of(r: &UrlRecord) -> i64 {
    let mut t = r.last_seen;
    if let Some(f) = r.fetch.last_fetch {
        t = t.max(f);
    }
    if let Some(n) = r.notified {
        t = t.max(n.last);
    }
    t
}

/// The URL record of `url` from its encoded bytes; one that does not
/// decode is [`StoreError::Record`] naming the URL.
pub(crate) fn decode_url_record(url: &str, bytes: &[u8]) -> Result<UrlRecord, StoreError> {
    decode(bytes).map_err(|source| StoreError::Record {
        key: url.to_string(),
        source: source.into(),
    })
}

/// The URL ranges of `host` (`host[:port]`): its http URLs, then its
/// https URLs, each from its prefix (`scheme://host/`) up to the first URL
/// past it; none for a name no URL can have.
pub(crate) fn host_ranges(host: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    if host.is_empty() || host.contains(['/', '?', '#']) {
        return Vec::new();
    }
    ["http", "https"]
        .iter()
        .map(|scheme| {
            let prefix = format!("{scheme}://{host}/").into_bytes();
            let mut end = prefix.clone();
            if let Some(last) = end.last_mut() {
                *last += 1; // a prefix ends in '/': never 0xff
            }
            (prefix, end)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_url(s: &Partition, now: i64) {
        let mut ingest = s.ingest(Timestamp::from_unix(now));
        let url = sitemapd_parser::NormUrl::parse("https://a.example/x").unwrap();
        ingest
            .entry(
                "https://a.example/sitemap.xml",
                &sitemapd_parser::UrlEntry::new(url),
            )
            .unwrap();
        ingest.finish().unwrap();
    }

    #[test]
    fn a_clean_close_leaves_a_mark_that_a_store_cut_short_no_longer_holds() {
        let dir = tempfile::tempdir().unwrap();
        let closed = dir.path().join(crate::kv::CLOSED_FILE);
        {
            let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
            one_url(&s, 1_000);
            let crawl = s.kv.sibling("crawl:other").unwrap();
            drop(s);
            assert!(!closed.exists(), "not while a crawl's store is open");
            drop(crawl);
        }
        assert_eq!(std::fs::read_to_string(&closed).unwrap(), "1");
        // Opened and closed again: the next mark.
        drop(Partition::open(dir.path(), StoreOptions::default()).unwrap());
        assert_eq!(std::fs::read_to_string(&closed).unwrap(), "2");
        // A file behind the database (a crash between the flush and the
        // file's rename), or not a number: no damage.
        for file in ["1", "", "x"] {
            std::fs::write(&closed, file).unwrap();
            drop(Partition::open(dir.path(), StoreOptions::default()).unwrap());
        }
        assert_eq!(std::fs::read_to_string(&closed).unwrap(), "5");
        // A database that ends before its last mark (what a cut leaves).
        std::fs::write(&closed, "6").unwrap();
        let e = Partition::open(dir.path(), StoreOptions::default()).unwrap_err();
        assert!(e.is_damage(), "{e}");
        let said = e.to_string();
        assert!(
            said.contains("closed cleanly with mark 6") && said.contains("(they hold 5)"),
            "{said}"
        );
    }

    #[test]
    fn a_store_keeps_the_policy_it_ran_and_dates_moves_from_its_upgrade() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
            assert_eq!(s.policy().name(), DEFAULT_POLICY);
            assert_eq!(s.dated_from, i64::MIN, "a new store dates every move");
            one_url(&s, 1_000);
        }
        // Saved at its first open: the default stays its policy.
        let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
        assert_eq!(s.policy().name(), DEFAULT_POLICY);
        // A store of an earlier release: URLs, no saved policy, no date.
        s.kv.remove(keys::POLICY).unwrap();
        s.kv.remove(keys::DATED_FROM).unwrap();
        drop(s);
        let before = Timestamp::now().unix();
        let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
        assert_eq!(s.policy().name(), EARLIER_DEFAULT_POLICY);
        assert!(s.dated_from >= before);
        let mut r = s.url_record("https://a.example/x").unwrap().unwrap();
        r.lastmod = Some(crate::record::StoredLastmod {
            at: 5_000,
            precision: crate::record::StoredPrecision::Day,
        });
        r.lastmod_history = vec![(1_000, crate::record::NOT_DATED), (5_000, 4_000)];
        assert_eq!(r.lastmod_moved_after(), Some(4_000));
        assert_eq!(
            s.lastmod_moved_after(&r),
            None,
            "recorded before the upgrade"
        );
        drop(s);
        let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
        assert_eq!(s.policy().name(), EARLIER_DEFAULT_POLICY, "and kept");
        // Naming a policy switches it for good.
        drop(s);
        let lastmod = StoreOptions {
            policy: Some("lastmod".into()),
            ..StoreOptions::default()
        };
        drop(Partition::open(dir.path(), lastmod).unwrap());
        let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
        assert_eq!(s.policy().name(), "lastmod");
    }

    #[test]
    fn calibrations_round_trip_and_old_ones_still_read() {
        let c = Calibration {
            multiplier: 2.5,
            on_change_level: 1e-6,
        };
        assert_eq!(decode_calibration(&encode_calibration(&c)), Some(c));
        // Saved before crawl on change: the multiplier alone.
        let old = decode_calibration(&2.5f64.to_be_bytes()).unwrap();
        assert_eq!((old.multiplier, old.on_change_level), (2.5, 0.0));
        for bad in [&[][..], &[1, 2, 3], &[0; 24]] {
            assert_eq!(decode_calibration(bad), None);
        }
    }
}
