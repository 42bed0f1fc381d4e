//! Every write of a URL record goes through [`UrlWrites::put`] with what
//! the record was when read ([`Before`], or `None` for a new URL) and the
//! record as it is now: its due entry moves with it, and its queue's kept
//! counts ([`Tally`], in the [`HostRecord`] of the queue's name) change by
//! the difference of the two records' contributions, all in one atomic
//! batch. A writer that changes a host record in the same batch (a lease's
//! politeness clock) hands it over ([`UrlWrites::host`]), so that each
//! host's record is written once, with its counts.
//!
//! ## Where records go
//!
//! An ingest's batch ([`UrlWrites::paged`]) puts records into their pages
//! (`p`, [`crate::pages`]): it reads each page it needs once, changes it
//! in memory, and writes it once when the batch is applied, cut in two or
//! more when it grew past [`PAGE_CAP`](crate::page::PAGE_CAP) URLs. Every
//! other writer (a completion, a notification, a robots.txt change) writes
//! a record under a key of its own (`u`), which stands for the page's copy
//! until an ingest folds it back.
//!
//! ## Due entries: runs in lanes
//!
//! A queued URL's due entry is in a run of its lane (its queue, host and
//! urgency class, [`crate::runs`]), at its place in the queue order
//! ([`UrlRecord::position`]). A run holds up to [`RUN_CAP`](keys::RUN_CAP)
//! entries, so an ingest writes about one due key per 32 new URLs. The
//! entry carries what a lease orders URLs by and what it hands out (the
//! reason, whether the record holds a client's metadata), so a lease reads
//! no record (but a URL frontier client's metadata), and the lease itself:
//! a lease marks its entries ([`UrlWrites::mark`]) and writes no record
//! ([`crate::marks`]). A URL whose place changes (a fetch, a block, a new
//! priority) leaves its run and joins the one that holds its new place; a
//! run left empty is removed, one grown past its cap is cut. A URL's record
//! and its run change in the same batch, so a crash never leaves one
//! without the other. A corrupt run is passed over and named by
//! `stats --check`; `stats --repair` rebuilds the due index from the
//! records and puts its URLs back.

use crate::due_list::Lease;
use crate::error::StoreError;
use crate::hash::{FastMap, FastSet};
use crate::keys;
use crate::kv::Batch;
use crate::marks::Marks;
use crate::pages::{Pages, Placed};
use crate::partition::Partition;
use crate::record::{HostRecord, Listed, UrlRecord, encode};
use crate::runs::RunEdits;
use crate::tally::Tally;

/// Where a record's due entry is: its lane and its place there.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    lane: Vec<u8>,
    position: Vec<u8>,
}

/// What a URL record was when read: its contribution to its queue's
/// counts, its queue, and its due entry, all [`UrlWrites::put`] needs of
/// it ([`UrlWrites::before`]).
#[derive(Debug, Clone)]
pub(crate) struct Before {
    tally: Tally,
    /// The queue it was counted under, and the one a client put it in
    /// (`None`: its host's).
    queue: String,
    stored_queue: Option<String>,
    place: Option<Place>,
    /// Its due entry as stored, if queued.
    entry: Option<Listed>,
}

impl Before {
    /// `rec`, the record of `url` as read, with its lease; `mark`, the
    /// lease its due entry holds.
    fn of(url: &str, rec: &UrlRecord, mark: Option<Lease>) -> Before {
        let place = place_of(url, rec);
        Before {
            tally: Tally::of(rec),
            queue: rec.queue_name(url).to_string(),
            stored_queue: rec.queue.clone(),
            // The entry holds the lease (a record the layout migration read
            // with a lease of its own holds it too, until written again).
            entry: place.as_ref().map(|_| Listed {
                lease: mark.or(rec.schedule.lease),
                ..Listed::of(url, rec)
            }),
            place,
        }
    }
}

/// Where the due entry of `rec` (the record of `url`) is, if queued.
fn place_of(url: &str, rec: &UrlRecord) -> Option<Place> {
    rec.queued().then(|| Place {
        lane: rec.lane(url),
        position: rec.position(url),
    })
}

/// A lane's key with its parts, as [`RunEdits`] takes it.
fn lane_parts<'a>(
    lane: &'a [u8],
    url: &'a str,
    queue: &'a str,
) -> (&'a [u8], &'a str, &'a str, u8) {
    let class = lane.last().copied().unwrap_or_default();
    (lane, queue, keys::host_of(url), class)
}

/// URL records written in one batch with their due entries and their
/// queues' [`Tally`] kept in step (in their host records). Other keys go
/// into [`UrlWrites::batch`]; [`UrlWrites::apply`] writes it all
/// atomically. The caller holds the store's write lock from reading the
/// records to applying.
pub(crate) struct UrlWrites<'s> {
    store: &'s Partition,
    /// Records go into their pages ([`UrlWrites::paged`]), not keys of
    /// their own.
    paged: bool,
    pages: Pages,
    /// Reads the leases of queued records.
    marks: Marks,
    batch: Batch,
    /// Count changes by queue.
    changes: FastMap<String, Tally>,
    /// Host records the caller changed ([`UrlWrites::host`]), written with
    /// their counts changed by `changes`.
    hosts: FastMap<String, HostRecord>,
    runs: RunEdits,
    /// Hosts a corrupt record of which this batch replaces
    /// ([`keys::SUSPECT`]).
    suspects: FastSet<String>,
}

impl<'s> UrlWrites<'s> {
    /// Writes to `store`.
    pub(crate) fn new(store: &'s Partition) -> UrlWrites<'s> {
        UrlWrites {
            store,
            paged: false,
            pages: Pages::default(),
            marks: Marks::default(),
            batch: Batch::default(),
            changes: FastMap::default(),
            hosts: FastMap::default(),
            runs: RunEdits::default(),
            suspects: FastSet::default(),
        }
    }

    /// Writes to `store` that put records into their pages: an ingest's,
    /// which reads them through [`UrlWrites::read`] (each page read once
    /// per batch) and writes many URLs of each page. Records with keys of
    /// their own that it writes go back into their pages.
    pub(crate) fn paged(store: &'s Partition) -> UrlWrites<'s> {
        UrlWrites {
            paged: true,
            ..UrlWrites::new(store)
        }
    }

    /// The record of `url` (normalised), to be replaced: one that does not
    /// decode reads as none (logged), and its host becomes
    /// [`keys::SUSPECT`] (its entry, which the new record will not name,
    /// cannot be found). Through this batch's pages when it writes pages.
    pub(crate) fn read(&mut self, url: &str) -> Result<Option<UrlRecord>, StoreError> {
        let read = if self.paged {
            let read = self.pages.read(&self.store.kv, url)?;
            read.map(|bytes| crate::partition::decode_url_record(url, &bytes))
                .transpose()
        } else {
            self.store.url_record(url)
        };
        match read {
            Err(e @ StoreError::Record { .. }) => {
                tracing::warn!(%url, error = %e, "corrupt URL record replaced");
                self.store.kv.passed_over(url);
                self.suspects.insert(keys::host_of(url).to_string());
                Ok(None)
            }
            other => other,
        }
    }

    /// Whether the record of `url` is under a key of its own that an
    /// ingest's write would fold back into its page.
    pub(crate) fn foldable(&mut self, url: &str) -> Result<bool, StoreError> {
        match self.paged {
            true => self.pages.under_own_key(&self.store.kv, url),
            false => Ok(false),
        }
    }

    /// What `rec` (the record of `url`, as just read) is before this batch
    /// changes it ([`UrlWrites::put`], [`UrlWrites::remove`]), with the
    /// lease its due entry holds put into `rec` ([`Marks::overlay`]).
    pub(crate) fn before(&mut self, url: &str, rec: &mut UrlRecord) -> Result<Before, StoreError> {
        let mark = self.marks.overlay(self.store, url, rec)?;
        Ok(Before::of(url, rec, mark))
    }

    /// [`UrlWrites::before`] without reading the lease its due entry may
    /// hold: for a record that stays in its place (its entry, and the mark
    /// in it, stay as they are), unless [`UrlWrites::with_lease`] reads it
    /// after all.
    pub(crate) fn before_in_place(&self, url: &str, rec: &UrlRecord) -> Before {
        Before::of(url, rec, None)
    }

    /// `rec` (the record of `url`) and `before` (what it was when read,
    /// from [`UrlWrites::before_in_place`]) with the lease its entry holds.
    pub(crate) fn with_lease(
        &mut self,
        url: &str,
        rec: &mut UrlRecord,
        before: &mut Before,
    ) -> Result<(), StoreError> {
        let had = rec.schedule.lease.is_some();
        // Where its entry is as stored (`rec` may have changed since it
        // was read).
        let Some(place) = before.place.as_ref() else {
            return Ok(());
        };
        let mark = self
            .marks
            .at(self.store, url, &before.queue, &place.lane, &place.position)?;
        if let Some(mark) = mark {
            rec.schedule.lease = Some(mark);
            if !had {
                before.tally.add_lease();
            }
            if let Some(entry) = before.entry.as_mut() {
                entry.lease = Some(mark);
            }
        }
        Ok(())
    }

    /// Writes the record of `url` (`None`: deletes it) where this batch
    /// writes records, without its lease (its due entry holds it).
    fn write_record(&mut self, url: &str, record: Option<&UrlRecord>) -> Result<(), StoreError> {
        let stored = record.and_then(crate::marks::as_stored);
        let record = stored.as_ref().or(record);
        let kv = &self.store.kv;
        if !self.paged {
            match record {
                Some(rec) => self.batch.insert(keys::url(url), encode(rec)),
                None => {
                    self.batch.remove(keys::url(url));
                    self.pages.set(kv, url, None)?;
                }
            }
            return Ok(());
        }
        match self.pages.set(kv, url, record.map(encode))? {
            Placed::Page { own: true } | Placed::OwnKey(None) => self.batch.remove(keys::url(url)),
            Placed::Page { own: false } => {}
            Placed::OwnKey(Some(bytes)) => self.batch.insert(keys::url(url), bytes),
        }
        Ok(())
    }

    /// Writes `after` as the record of `url` (once per URL in a batch: the
    /// callers merge what they do to one URL first), which was `before` when read
    /// (`None`: a new URL). Its due entry moves if its place in the queue
    /// changed, and is written again if what it holds changed (its reason,
    /// metadata or lease); its queue's counts change by the difference.
    pub(crate) fn put(
        &mut self,
        url: &str,
        before: Option<&Before>,
        after: &mut UrlRecord,
    ) -> Result<(), StoreError> {
        let old = before.and_then(|b| b.place.clone());
        let new = place_of(url, after);
        let entry = new.as_ref().map(|_| Listed::of(url, after));
        let same_entry = before.and_then(|b| b.entry.as_ref()) == entry.as_ref();
        if old != new || !same_entry {
            if let (Some(place), Some(before)) = (old, before) {
                let lane = lane_parts(&place.lane, url, &before.queue);
                self.runs.remove(lane, place.position, url);
            }
            if let (Some(place), Some(entry)) = (new, entry) {
                let lane = lane_parts(&place.lane, url, after.queue_name(url));
                self.runs.add(lane, entry);
            }
        }
        let stored_queue = before.and_then(|b| b.stored_queue.clone());
        if stored_queue != after.queue {
            if let Some(queue) = &stored_queue {
                self.batch.remove(keys::queue_member(queue, url));
            }
            if let Some(queue) = &after.queue {
                self.batch.insert(keys::queue_member(queue, url), []);
            }
        }
        self.write_record(url, Some(after))?;
        self.count(url, before, after);
        Ok(())
    }

    /// Deletes the record of `url`, which was `before` when read: out of
    /// its place in the queue, and out of its queue's counts.
    pub(crate) fn remove(&mut self, url: &str, before: &Before) -> Result<(), StoreError> {
        if let Some(place) = before.place.clone() {
            let lane = lane_parts(&place.lane, url, &before.queue);
            self.runs.remove(lane, place.position, url);
        }
        if let Some(queue) = &before.stored_queue {
            self.batch.remove(keys::queue_member(queue, url));
        }
        self.write_record(url, None)?;
        let mut change = Tally::default();
        change.add(&before.tally, -1);
        self.tally_change(&before.queue, &change);
        Ok(())
    }

    /// A lease of `url` (in queue `queue`), whose entry is at `index` of
    /// the run under `run` (`value`: the run as read, and how many entries
    /// it holds), and whose record this batch does not write: its entry
    /// takes the mark, and its queue counts one more lease unless the
    /// entry held one (`was_marked`: a lease that ran out, counted still).
    pub(crate) fn mark(
        &mut self,
        queue: &str,
        (run, index, value): (&[u8], usize, (crate::kv::Bytes, usize)),
        lease: Lease,
        was_marked: bool,
    ) {
        self.runs.mark(run, index, value, lease);
        if !was_marked {
            let mut change = Tally::default();
            change.add_lease();
            self.tally_change(queue, &change);
        }
    }

    /// Removes `url`'s entry from lane `lane` at `position`: one its
    /// record does not name (left by a replaced corrupt record).
    pub(crate) fn drop_entry(&mut self, url: &str, queue: &str, lane: &[u8], position: Vec<u8>) {
        self.runs
            .remove(lane_parts(lane, url, queue), position, url);
    }

    /// Its queue's counts change by `after`'s contribution less `before`'s
    /// (each under the queue it is in).
    fn count(&mut self, url: &str, before: Option<&Before>, after: &UrlRecord) {
        let after_queue = after.queue_name(url);
        match before {
            Some(before) if before.queue != after_queue => {
                let mut gone = Tally::default();
                gone.add(&before.tally, -1);
                self.tally_change(&before.queue, &gone);
                self.tally_change(after_queue, &Tally::of(after));
            }
            _ => {
                let mut change = Tally::of(after);
                if let Some(before) = before {
                    change.add(&before.tally, -1);
                }
                self.tally_change(after_queue, &change);
            }
        }
    }

    /// The counts of queue `queue` change by `change`.
    fn tally_change(&mut self, queue: &str, change: &Tally) {
        if change.is_zero() {
            return;
        }
        match self.changes.get_mut(queue) {
            Some(tally) => tally.add(change, 1),
            None => {
                self.changes.insert(queue.to_string(), *change);
            }
        }
    }

    /// The batch the records go into, for the other keys written with them
    /// (host records go through [`UrlWrites::host`]).
    pub(crate) fn batch(&mut self) -> &mut Batch {
        &mut self.batch
    }

    /// Writes `record` as the record of host `name`, read under the same
    /// lock as this batch's URL records ([`Store::host_record`]): its
    /// counts change by what this batch changes, and it is written once.
    pub(crate) fn host(&mut self, name: &str, record: HostRecord) {
        self.hosts.insert(name.to_string(), record);
    }

    /// Adds the changed runs and heads and the queues' counts to the batch
    /// and applies it.
    pub(crate) fn apply(mut self) -> Result<(), StoreError> {
        let store = self.store;
        std::mem::take(&mut self.runs).apply(&store.kv, &mut self.batch)?;
        let changes = std::mem::take(&mut self.changes);
        for (queue, change) in changes.into_iter().filter(|(_, c)| !c.is_zero()) {
            let mut record = match self.hosts.remove(&queue) {
                Some(record) => record,
                None => store.stored_host_record(&queue)?,
            };
            record.counts.get_or_insert_default().add(&change, 1);
            self.batch.insert(keys::host(&queue), encode(&record));
        }
        for (host, record) in self.hosts.drain() {
            self.batch.insert(keys::host(&host), encode(&record));
        }
        std::mem::take(&mut self.pages).write(&mut self.batch);
        for host in &self.suspects {
            self.batch.insert(keys::suspect(host), []);
        }
        store.kv.apply_batch(self.batch)?;
        if !self.suspects.is_empty() {
            store
                .suspects
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Partition {
    /// Rebuilds what [`Store::check`] verifies from the URL records: the
    /// due index (every queued URL's entry in its lane, with the lease its
    /// entry held, if its run could be read; what a corrupt run held is
    /// back in the queue), the member keys of the sitemaps listing URLs of
    /// other hosts ([`crate::members`]) and each queue's counts, after
    /// removing the
    /// pages that do not decode
    /// (their records are lost: they could not be read). What to run when
    /// the check names problems (a record that did not decode was replaced,
    /// or the store was changed behind its back). Holds the write lock
    /// throughout; a crash midway leaves what a second run puts right.
    pub(crate) fn repair(&self) -> Result<(), StoreError> {
        let _lock = self.lock();
        crate::pages::remove_corrupt(&self.kv)?;
        crate::migrate::keep_leases(&self.kv, true)?;
        crate::migrate::rebuild_due_index(&self.kv)?;
        crate::migrate::clear(&self.kv, keys::SUSPECT)?;
        crate::members::restore(self)?;
        self.suspects
            .store(false, std::sync::atomic::Ordering::Relaxed);
        crate::migrate::count_tallies(&self.kv)
    }

    /// The kept counts of queue `queue`'s URL records (zero for a queue
    /// never seen; a record that does not decode counts as zero, and
    /// `stats --check` names it).
    pub(crate) fn tally(&self, queue: &str) -> Result<Tally, StoreError> {
        Ok(self.stored_host_record(queue)?.counts.unwrap_or_default())
    }
}
