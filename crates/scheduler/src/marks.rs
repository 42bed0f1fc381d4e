//! Leases of listed URLs, read back. A lease of a URL in a due list marks
//! its entry ([`Listed::lease`](crate::record::Listed::lease)) and writes
//! no record: the record keeps
//! its due time and its place, and is written with no lease while listed.
//! So whoever reads a listed record and needs its lease (a writer, whose
//! host counts and due entry depend on it; a view) overlays its entry's
//! mark: [`Marks::overlay`].
//!
//! A record written before key layout 7 may carry a lease its entry does
//! not: that one stands until the record is written again (its entry then
//! takes the mark).
//!
//! Reading a mark costs a read of the URL's due list, once per list
//! ([`ListCache`]), and only for hosts that hold a lease at all (their
//! kept counts say so): an ingest of a host nobody leased reads no list.

use crate::due_list::{CACHED_LISTS, Lease, ListCache};
use crate::error::StoreError;
use crate::hash::FastMap;
use crate::keys;
use crate::record::UrlRecord;
use crate::store::Store;

/// Reads the marks of listed records ([`Marks::overlay`]).
#[derive(Default)]
pub(crate) struct Marks {
    lists: ListCache,
    /// Whether each host looked at holds a lease (its kept counts).
    leasing: FastMap<String, bool>,
}

impl Marks {
    /// The mark of `url`'s entry in its due list, if `rec` (its record, as
    /// stored) is listed and its entry holds one.
    pub(crate) fn stored(
        &mut self,
        store: &Store,
        url: &str,
        rec: &UrlRecord,
    ) -> Result<Option<Lease>, StoreError> {
        // A listed record is queued as stored (one that is no longer, in
        // memory, still names its list).
        let Some(n) = rec.listed else {
            return Ok(None);
        };
        let host = keys::host_of(url);
        let leasing = match self.leasing.get(host) {
            Some(&leasing) => leasing,
            None => {
                if self.leasing.len() >= CACHED_LISTS {
                    self.leasing.clear();
                }
                let leasing = store.tally(host)?.leases() > 0;
                self.leasing.insert(host.to_string(), leasing);
                leasing
            }
        };
        if !leasing {
            return Ok(None);
        }
        Ok(self
            .lists
            .entry(&store.kv, &rec.list_key(url, n), url)?
            .flatten())
    }

    /// `rec` (the record of `url` as stored) with its entry's lease, if
    /// its entry holds one; returns that mark.
    pub(crate) fn overlay(
        &mut self,
        store: &Store,
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

/// `rec` as written to disk: a listed record's lease is kept in its entry
/// ([`Listed::of`] takes it from the record in memory), not here.
pub(crate) fn as_stored(rec: &UrlRecord) -> Option<UrlRecord> {
    (rec.listed.is_some() && rec.schedule.lease.is_some()).then(|| {
        let mut stored = rec.clone();
        stored.schedule.lease = None;
        stored
    })
}

impl Store {
    /// Whether `host`'s due lists may hold an entry its record no longer
    /// names ([`keys::SUSPECT`]): a lease reads the records of its listed
    /// URLs then.
    pub(crate) fn suspect(&self, host: &str) -> Result<bool, StoreError> {
        Ok(self.suspects.load(std::sync::atomic::Ordering::Relaxed)
            && self.kv.contains_key(keys::suspect(host))?)
    }

    /// `records` (URL records as stored, with their URLs) with the leases
    /// their due list entries hold ([`Marks::overlay`]).
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
