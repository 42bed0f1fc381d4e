//! Every write of a URL record goes through [`UrlWrites::put`] with what
//! the record was when read ([`Before`], or `None` for a new URL) and the
//! record as it is now: its due entry moves with it, and its host's kept
//! counts ([`Tally`]) change by the difference of the two records'
//! contributions, all in one atomic batch.

use std::collections::HashMap;

use crate::error::StoreError;
use crate::keys;
use crate::kv::Batch;
use crate::record::{UrlRecord, encode};
use crate::store::Store;
use crate::tally::Tally;

/// What a URL record was when read: its contribution to its host's counts
/// and its due entry, all [`UrlWrites::put`] needs of it.
#[derive(Debug, Clone)]
pub(crate) struct Before {
    tally: Tally,
    due: Option<Vec<u8>>,
}

impl Before {
    /// `rec`, the record of `url` as read.
    pub(crate) fn of(url: &str, rec: &UrlRecord) -> Before {
        Before {
            tally: Tally::of(rec),
            due: rec.queued().then(|| rec.due_key(url)),
        }
    }
}

/// URL records written in one batch with their due entries and their
/// hosts' [`Tally`] kept in step. Other keys go into [`UrlWrites::batch`];
/// [`UrlWrites::apply`] writes it all atomically. The caller holds the
/// store's write lock from reading the records to applying.
#[derive(Default)]
pub(crate) struct UrlWrites {
    batch: Batch,
    changes: HashMap<String, Tally>,
}

impl UrlWrites {
    /// Writes `after` as the record of `url`, which was `before` when read
    /// (`None`: a new URL). Its due entry moves if its place in the queue
    /// changed, and its host's counts by the difference.
    pub(crate) fn put(&mut self, url: &str, before: Option<&Before>, after: &UrlRecord) {
        let old_key = before.and_then(|b| b.due.as_ref());
        let new_key = after.queued().then(|| after.due_key(url));
        if old_key != new_key.as_ref() {
            if let Some(old) = old_key {
                self.batch.remove(old.clone());
            }
            if let Some(new) = new_key {
                self.batch.insert(new, &[]);
            }
        }
        self.batch.insert(keys::url(url), encode(after));
        let mut change = Tally::of(after);
        if let Some(before) = before {
            change.add(&before.tally, -1);
        }
        if !change.is_zero() {
            self.changes
                .entry(keys::host_of(url).to_string())
                .or_default()
                .add(&change, 1);
        }
    }

    /// The batch the records go into, for the other keys written with them.
    pub(crate) fn batch(&mut self) -> &mut Batch {
        &mut self.batch
    }

    /// Adds the hosts' changed counts to the batch and applies it.
    pub(crate) fn apply(mut self, store: &Store) -> Result<(), StoreError> {
        for (host, change) in self.changes.drain() {
            if change.is_zero() {
                continue;
            }
            let mut tally = store.tally(&host)?;
            tally.add(&change, 1);
            self.batch.insert(keys::tally(&host), encode(&tally));
        }
        store.kv.apply_batch(self.batch)
    }
}

impl Store {
    /// Counts every host's URL records again from the records and keeps
    /// those counts: what to run when [`Store::check`] names hosts whose
    /// counts differ (a record that did not decode was replaced, or the
    /// store was changed behind its back). Holds the write lock throughout.
    pub fn recount(&self) -> Result<(), StoreError> {
        let _lock = self.lock();
        crate::migrate::count_tallies(&self.kv)
    }

    /// The kept counts of `host`'s URL records (zero for a host never
    /// seen; a record that does not decode counts as zero, and
    /// `stats --check` names the host).
    pub(crate) fn tally(&self, host: &str) -> Result<Tally, StoreError> {
        match self.get::<Tally>(&keys::tally(host)) {
            Ok(t) => Ok(t.unwrap_or_default()),
            Err(StoreError::Record { key, source }) => {
                tracing::warn!(%key, error = %source, "corrupt host counts: starting over");
                Ok(Tally::default())
            }
            Err(e) => Err(e),
        }
    }
}
