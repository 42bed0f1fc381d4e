//! Pushes: a site saying "these URLs of my host changed" (IndexNow), and
//! what the fetches they caused found.
//!
//! [`Store::push`](crate::Store::push) notifies the URLs of one host as
//! [`Store::notify_all`](crate::Store::notify_all) does and counts the push
//! on the host's `PushRecord`, in the same atomic batch. Every completion
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
use crate::record::{PushRecord, decode, encode};
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
    pub(crate) fn fetch_found(&mut self, changed: bool) {
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
