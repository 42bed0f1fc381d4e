//! Leases read back. A lease marks its URLs' due entries
//! ([`Listed::lease`](crate::record::Listed::lease)) and writes no record:
//! the record keeps its due time and its place, and is written with no
//! lease. So whoever reads a queued record and needs its lease (a writer,
//! whose queue counts and due entry depend on it; a view) overlays its
//! entry's mark: [`Marks::overlay`].
//!
//! A record written before key layout 7 may carry a lease of its own: the
//! layout migration copies it into the entry, and the entry's stands.
//!
//! Reading a mark costs a read of the URL's run, once per run
//! ([`ListCache`]), and only for queues that hold a lease at all (their
//! kept counts say so): an ingest of a site nobody leased reads no run.

use crate::due_list::{CACHED_LISTS, Lease, ListCache};
use crate::error::StoreError;
use crate::hash::FastMap;
use crate::keys;
use crate::partition::Partition;
use crate::record::UrlRecord;

/// Reads the marks of queued records ([`Marks::overlay`]).
#[derive(Default)]
pub(crate) struct Marks {
    lists: ListCache,
    /// Whether each queue looked at holds a lease (its kept counts).
    leasing: FastMap<String, bool>,
}

impl Marks {
    /// The mark of `url`'s due entry, if `rec` (its record, as stored) is
    /// queued and its entry holds one.
    pub(crate) fn stored(
        &mut self,
        store: &Partition,
        url: &str,
        rec: &UrlRecord,
    ) -> Result<Option<Lease>, StoreError> {
        if !rec.queued() {
            return Ok(None);
        }
        self.at(
            store,
            url,
            rec.queue_name(url),
            &rec.lane(url),
            &rec.position(url),
        )
    }

    /// The mark of `url`'s due entry in queue `queue`, at `position` in
    /// lane `lane` (where its record, as stored, puts it).
    pub(crate) fn at(
        &mut self,
        store: &Partition,
        url: &str,
        queue: &str,
        lane: &[u8],
        position: &[u8],
    ) -> Result<Option<Lease>, StoreError> {
        let leasing = match self.leasing.get(queue) {
            Some(&leasing) => leasing,
            None => {
                if self.leasing.len() >= CACHED_LISTS {
                    self.leasing.clear();
                }
                let leasing = store.tally(queue)?.leases() > 0;
                self.leasing.insert(queue.to_string(), leasing);
                leasing
            }
        };
        if !leasing {
            return Ok(None);
        }
        let Some(run) = store.run_of(lane, position)? else {
            return Ok(None);
        };
        Ok(self.lists.entry(&store.kv, &run, url)?.flatten())
    }

    /// `rec` (the record of `url` as stored) with its entry's lease, if
    /// its entry holds one; returns that mark.
    pub(crate) fn overlay(
        &mut self,
        store: &Partition,
        url: &str,
        rec: &mut UrlRecord,
    ) -> Result<Option<Lease>, StoreError> {
        let mark = self.stored(store, url, rec)?;
        if mark.is_some() {
            rec.schedule.lease = mark;
        }
        Ok(mark)
    }
}

/// `rec` as written to disk: its lease is kept in its due entry
/// ([`Listed::of`](crate::record::Listed::of) takes it from the record in
/// memory), not here.
pub(crate) fn as_stored(rec: &UrlRecord) -> Option<UrlRecord> {
    rec.schedule.lease.is_some().then(|| {
        let mut stored = rec.clone();
        stored.schedule.lease = None;
        stored
    })
}

impl Partition {
    /// Whether `host`'s lanes may hold an entry its record no longer
    /// names ([`keys::SUSPECT`]): a lease reads the records of its URLs
    /// then.
    pub(crate) fn suspect(&self, host: &str) -> Result<bool, StoreError> {
        Ok(self.suspects.load(std::sync::atomic::Ordering::Relaxed)
            && self.kv.contains_key(keys::suspect(host))?)
    }

    /// `records` (URL records as stored, with their URLs) with the leases
    /// their due entries hold ([`Marks::overlay`]).
    pub(crate) fn with_leases<'a>(
        &'a self,
        records: impl Iterator<Item = Result<(String, UrlRecord), StoreError>> + 'a,
    ) -> impl Iterator<Item = Result<(String, UrlRecord), StoreError>> + 'a {
        let mut marks = Marks::default();
        records.map(move |item| {
            let (url, mut rec) = item?;
            marks.overlay(self, &url, &mut rec)?;
            Ok((url, rec))
        })
    }
}

impl Partition {
    /// The key of the run of `lane` that holds (or would hold) the entry
    /// at `position`: the last run keyed at or before it.
    pub(crate) fn run_of(
        &self,
        lane: &[u8],
        position: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let mut end = keys::run(lane, position);
        end.push(0);
        Ok(self
            .kv
            .last_in(lane.to_vec()..end)?
            .map(|(k, _)| k.to_vec()))
    }
}
