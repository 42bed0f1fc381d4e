//! Pushes: a site saying "these URLs of my host changed" (IndexNow), and
//! what the fetches they caused found.
//!
//! [`Store::push`](crate::Store::push) notifies the URLs of one host as
//! [`Store::notify_all`](crate::Store::notify_all) does and counts the push
//! on the host's [`PushRecord`], in the same atomic batch. Every completion
//! of a URL a notification made due (`reason` `notified`) counts on that
//! record whether the fetch found a change: a host's pushes earn their
//! urgency as its lastmods earn trust. Once [`MIN_FETCHES`] such fetches are
//! counted and fewer than one in [`MIN_SHARE`] found a change, the host's
//! pushes lose their urgency: a push is still counted for its URLs' change
//! rate, but they are scheduled as the policy says, not due at once. Every
//! [`PROBE_EVERY`]th push of such a host stays urgent, so that what its
//! fetches find can win the urgency back. The counts are halved when they
//! reach [`HALVE_AT`]: recent pushes weigh most.

use serde::Serialize;

use crate::error::StoreError;
use crate::keys;
use crate::partition::Partition;
use crate::queue::Completion;
use crate::record::{PushRecord, StoredOutcome, StoredReason, decode, encode};
use crate::time::Timestamp;
use crate::writes::UrlWrites;

/// Fetches of pushed URLs counted before a host's pushes can lose urgency.
pub const MIN_FETCHES: u32 = 8;
/// Fewer than one in this many of those fetches finding a change: the
/// host's pushes are no longer urgent.
pub const MIN_SHARE: u32 = 4;
/// A host whose pushes are not urgent: every this many pushes one is.
pub const PROBE_EVERY: u64 = 8;
/// The fetch counts are halved when they reach this.
pub const HALVE_AT: u32 = 64;
/// URLs of a push written in one atomic batch.
pub const BATCH: usize = 1_000;

/// What [`Store::push`](crate::Store::push) did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pushed {
    /// What was found of each URL, in the order given.
    pub found: Vec<crate::Notified>,
    /// Whether the URLs were made due at once (the host's pushes are
    /// urgent, or this push is a probe), or scheduled by the policy.
    pub urgent: bool,
}

/// A host's pushes, as [`Store::pushes`](crate::Store::pushes) lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PushView {
    /// The host.
    pub host: String,
    /// Pushes received (one per request).
    pub pushes: u64,
    /// URLs they named.
    pub urls: u64,
    /// When the last came.
    pub last: Timestamp,
    /// Recent fetches of URLs a notification made due (halved now and then).
    pub fetched: u32,
    /// Of those, the ones that found a change.
    pub changed: u32,
    /// Whether its pushes make URLs due at once.
    pub urgent: bool,
    /// When an IndexNow key of the host was last verified; `None` when none
    /// is (never, or its key file stopped naming it).
    pub key_verified: Option<Timestamp>,
}

/// [`PushView`]s summed: what `GET /v1/stats` and `sitemapd stats` show
/// first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PushTotals {
    /// Hosts with a push record.
    pub hosts: u64,
    /// Their pushes.
    pub pushes: u64,
    /// The URLs those named.
    pub urls: u64,
    /// Hosts with an IndexNow key verified.
    pub verified_keys: u64,
}

impl PushTotals {
    /// Adds one host's record.
    pub fn add(&mut self, v: &PushView) {
        self.hosts += 1;
        self.pushes += v.pushes;
        self.urls += v.urls;
        self.verified_keys += u64::from(v.key_verified.is_some());
    }
}

impl PushRecord {
    /// Whether the host's pushes make their URLs due at once.
    pub(crate) fn urgent(&self) -> bool {
        self.fetched < MIN_FETCHES
            || u64::from(self.changed) * u64::from(MIN_SHARE) >= u64::from(self.fetched)
    }

    /// One fetch of a URL a notification made due.
    fn fetch_found(&mut self, changed: bool) {
        self.fetched = self.fetched.saturating_add(1);
        self.changed = self.changed.saturating_add(u32::from(changed));
        if self.fetched >= HALVE_AT {
            self.fetched /= 2;
            self.changed /= 2;
        }
    }

    fn view(&self, host: String) -> PushView {
        PushView {
            host,
            pushes: self.pushes,
            urls: self.urls,
            last: Timestamp::from_unix(self.last),
            fetched: self.fetched,
            changed: self.changed,
            urgent: self.urgent(),
            key_verified: self.key_verified.map(Timestamp::from_unix),
        }
    }
}

/// The push records a batch of completions changes, by host.
#[derive(Default)]
pub(crate) struct PushOutcomes(crate::hash::FastMap<String, PushRecord>);

impl PushOutcomes {
    /// `completion` of `url`, whose schedule's reason was `reason` before:
    /// counted on its host's record when a notification made it due and
    /// the fetch succeeded.
    pub(crate) fn completed(
        &mut self,
        store: &Partition,
        url: &str,
        reason: StoredReason,
        completion: &Completion,
    ) -> Result<(), StoreError> {
        if reason != StoredReason::Notified {
            return Ok(());
        }
        let changed = match completion.outcome.stored() {
            StoredOutcome::Changed => true,
            StoredOutcome::NotModified => false,
            _ => return Ok(()),
        };
        let host = keys::host_of(url);
        if !self.0.contains_key(host) {
            self.0.insert(host.to_string(), store.push_record(host)?);
        }
        self.0
            .get_mut(host)
            .expect("inserted above")
            .fetch_found(changed);
        Ok(())
    }

    /// Their records into `writes`' batch.
    pub(crate) fn write(self, writes: &mut UrlWrites<'_>) {
        for (host, record) in self.0 {
            writes.batch().insert(keys::pushes(&host), encode(&record));
        }
    }
}

impl Partition {
    /// The push record of `host`: a new one when there is none, or when
    /// the one stored does not decode (`stats --check` names it; a push or
    /// a completion is not refused for it).
    pub(crate) fn push_record(&self, host: &str) -> Result<PushRecord, StoreError> {
        match self.kv.get(keys::pushes(host))? {
            None => Ok(PushRecord::default()),
            Some(bytes) => Ok(decode(&bytes).unwrap_or_else(|e| {
                tracing::warn!(host, error = %e, "a push record does not decode: counted anew");
                PushRecord::default()
            })),
        }
    }

    /// [`Store::push`](crate::Store::push) of URLs already normalised, all
    /// on `host`: in atomic batches of [`BATCH`] URLs, the push counted with
    /// the first, each batch giving way to the crawlers' requests waiting
    /// for the write lock (a lease waits for one batch, not a whole push).
    pub(crate) fn push(
        &self,
        host: &str,
        norms: &[String],
        now: Timestamp,
    ) -> Result<Pushed, StoreError> {
        let mut found = Vec::with_capacity(norms.len());
        let mut urgent = true;
        for (i, batch) in norms.chunks(BATCH).enumerate() {
            let _lock = self.lock_background();
            let mut writes = UrlWrites::new(self);
            if i == 0 {
                let mut record = self.push_record(host)?;
                record.pushes = record.pushes.saturating_add(1);
                record.urls = record.urls.saturating_add(norms.len() as u64);
                record.last = now.unix();
                urgent = record.urgent() || record.pushes % PROBE_EVERY == 0;
                writes.batch().insert(keys::pushes(host), encode(&record));
            }
            found.extend(self.notify_into(writes, batch, now, urgent)?);
        }
        Ok(Pushed { found, urgent })
    }

    /// [`Store::key_verified`](crate::Store::key_verified).
    pub(crate) fn key_verified(&self, host: &str, at: Option<Timestamp>) -> Result<(), StoreError> {
        let _lock = self.lock();
        let mut record = self.push_record(host)?;
        record.key_verified = at.map(Timestamp::unix);
        let mut batch = crate::kv::Batch::default();
        batch.insert(keys::pushes(host), encode(&record));
        self.kv.apply_batch(batch)?;
        Ok(())
    }

    /// The push records of the partition, by host.
    pub(crate) fn pushes(&self) -> impl Iterator<Item = Result<PushView, StoreError>> + '_ {
        self.kv.scan_prefix([keys::PUSHES]).map(|item| {
            let (key, value) = item?;
            let host = String::from_utf8_lossy(&key[1..]).into_owned();
            let record: PushRecord = decode(&value).map_err(|source| StoreError::Record {
                key: host.clone(),
                source: source.into(),
            })?;
            Ok(record.view(host))
        })
    }
}

#[cfg(test)]
mod tests {
    use sitemapd_parser::{HostKey, NormUrl, UrlEntry};

    use crate::{Completion, LeaseRequest, Notified, Outcome, Store, StoreError, StoreOptions};

    use super::*;

    const T0: i64 = 1_700_000_000;
    const DAY: i64 = 86_400;

    fn ts(t: i64) -> Timestamp {
        Timestamp::from_unix(t)
    }

    fn host(name: &str) -> HostKey {
        NormUrl::parse(&format!("https://{name}/"))
            .unwrap()
            .host_key()
    }

    /// A store whose sitemap lists `n` URLs of a.example, all due now.
    fn backlog(dir: &tempfile::TempDir, n: usize) -> Store {
        let s = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let mut ingest = s.ingest(ts(T0));
        for i in 0..n {
            let url = NormUrl::parse(&format!("https://a.example/old/{i}")).unwrap();
            ingest
                .entry("https://a.example/sitemap.xml", &UrlEntry::new(url))
                .unwrap();
        }
        ingest.finish().unwrap();
        s
    }

    fn leased(s: &Store, n: usize, now: i64) -> Vec<String> {
        s.lease(&LeaseRequest::new(n).per_host(n), ts(now))
            .unwrap()
            .into_iter()
            .map(|l| l.url)
            .collect()
    }

    #[test]
    fn a_push_is_leased_ahead_of_the_backlog_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let s = backlog(&dir, 50);
        let now = T0 + DAY;
        let pushed = s
            .push(
                &host("a.example"),
                ["https://a.example/new", "https://a.example/old/7"],
                ts(now),
            )
            .unwrap();
        assert_eq!(pushed.found, [Notified::Added, Notified::Known]);
        assert!(pushed.urgent);
        let mut first = leased(&s, 2, now);
        first.sort();
        assert_eq!(first, ["https://a.example/new", "https://a.example/old/7"]);
        let views: Vec<PushView> = s.pushes().map(Result::unwrap).collect();
        assert_eq!(views.len(), 1);
        let v = &views[0];
        assert_eq!((v.host.as_str(), v.pushes, v.urls), ("a.example", 1, 2));
        assert_eq!((v.last, v.fetched, v.key_verified), (ts(now), 0, None));
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn a_push_of_many_batches_counts_once_and_stores_every_url() {
        let dir = tempfile::tempdir().unwrap();
        let s = backlog(&dir, 0);
        let urls: Vec<String> = (0..2 * BATCH + 5)
            .map(|i| format!("https://a.example/n/{i}"))
            .collect();
        let pushed = s
            .push(&host("a.example"), urls.iter().map(String::as_str), ts(T0))
            .unwrap();
        assert_eq!(pushed.found.len(), urls.len());
        assert!(pushed.found.iter().all(|f| *f == Notified::Added));
        let v = s.pushes().next().unwrap().unwrap();
        assert_eq!((v.pushes, v.urls), (1, urls.len() as u64));
        assert_eq!(s.stats(ts(T0)).unwrap().due_now, urls.len() as u64);
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn a_push_naming_a_url_of_another_host_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = backlog(&dir, 3);
        let e = s
            .push(
                &host("a.example"),
                ["https://a.example/x", "https://b.example/y"],
                ts(T0),
            )
            .unwrap_err();
        assert!(matches!(e, StoreError::OffHost { .. }), "{e}");
        let e = s
            .push(&host("a.example"), ["mailto:x@a.example"], ts(T0))
            .unwrap_err();
        assert!(matches!(e, StoreError::InvalidUrl { .. }), "{e}");
        assert!(s.url("https://a.example/x").unwrap().is_none());
        assert_eq!(s.pushes().count(), 0);
    }

    /// A host whose pushed URLs keep being found unchanged loses the
    /// urgency, save a probe every few pushes, and wins it back when the
    /// fetches find changes again.
    #[test]
    fn pushes_that_find_no_change_lose_their_urgency_and_changes_win_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let s = backlog(&dir, 40);
        // Each fetched once: the policy has them due later.
        let first = leased(&s, 40, T0);
        assert_eq!(first.len(), 40);
        let done = Completion::from(Outcome::NotModified);
        s.complete_all(first.iter().map(|u| (u.as_str(), &done)), ts(T0))
            .unwrap();
        let a = host("a.example");
        let mut now = T0;
        let mut n = 0;
        let mut push_and_fetch = |outcome: Outcome| {
            now += 3_600;
            n += 1;
            let url = format!("https://a.example/old/{}", n % 40);
            let pushed = s.push(&a, [url.as_str()], ts(now)).unwrap();
            let due_now = s.url(&url).unwrap().unwrap().due <= ts(now);
            if pushed.urgent {
                assert_eq!(leased(&s, 10, now), std::slice::from_ref(&url));
            }
            s.complete(&url, &Completion::from(outcome.clone()), ts(now + 60))
                .unwrap();
            (pushed.urgent, due_now)
        };
        let urgent: Vec<(bool, bool)> = (0..MIN_FETCHES)
            .map(|_| push_and_fetch(Outcome::NotModified))
            .collect();
        assert!(urgent.iter().all(|u| *u == (true, true)), "{urgent:?}");
        // Eight fetches that found nothing: the next pushes are scheduled
        // by the policy (not due now: the URLs were fetched an hour ago and
        // found unchanged), but for a probe.
        let later: Vec<(bool, bool)> = (0..PROBE_EVERY)
            .map(|_| push_and_fetch(Outcome::NotModified))
            .collect();
        assert!(later.iter().all(|(urgent, due)| urgent == due), "{later:?}");
        assert_eq!(later.iter().filter(|u| u.0).count(), 1, "{later:?}");
        let v = s.pushes().next().unwrap().unwrap();
        assert!(!v.urgent && v.fetched == MIN_FETCHES + 1 && v.changed == 0);
        // Probes that find changes bring it back.
        let mut back = false;
        for _ in 0..4 * PROBE_EVERY {
            back = push_and_fetch(Outcome::Changed).0 && s.pushes().next().unwrap().unwrap().urgent;
            if back {
                break;
            }
        }
        assert!(back, "{:?}", s.pushes().next());
        assert!(s.check().unwrap().is_ok());
    }

    #[test]
    fn counts_are_halved_and_a_verified_key_is_kept() {
        let mut r = PushRecord::default();
        for i in 0..HALVE_AT + 10 {
            r.fetch_found(i % 2 == 0);
        }
        assert!(r.fetched < HALVE_AT && r.changed <= r.fetched, "{r:?}");
        let dir = tempfile::tempdir().unwrap();
        let s = backlog(&dir, 0);
        let b = host("b.example:8443");
        s.key_verified(&b, Some(ts(T0))).unwrap();
        let v = s.pushes().next().unwrap().unwrap();
        assert_eq!(
            (v.host.as_str(), v.key_verified),
            ("b.example:8443", Some(ts(T0)))
        );
        s.key_verified(&b, None).unwrap();
        assert_eq!(s.pushes().next().unwrap().unwrap().key_verified, None);
    }

    #[test]
    fn a_push_record_that_does_not_decode_is_named_by_check_and_counted_anew() {
        let dir = tempfile::tempdir().unwrap();
        let s = backlog(&dir, 0);
        let a = host("a.example");
        let part = s.part_of_host("a.example");
        let mut batch = crate::kv::Batch::default();
        batch.insert(keys::pushes("a.example"), vec![0xffu8, 1, 2]);
        part.kv.apply_batch(batch).unwrap();
        assert!(!s.check().unwrap().is_ok());
        s.push(&a, ["https://a.example/x"], ts(T0)).unwrap();
        let v = s.pushes().next().unwrap().unwrap();
        assert_eq!((v.pushes, v.urls), (1, 1));
        assert!(s.check().unwrap().is_ok());
    }
}
