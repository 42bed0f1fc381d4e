//! Every write of a URL record goes through [`UrlWrites::put`] with what
//! the record was when read ([`Before`], or `None` for a new URL) and the
//! record as it is now: its due entry moves with it, and its host's kept
//! counts ([`Tally`], in its [`HostRecord`]) change by the difference of
//! the two records' contributions, all in one atomic batch. A writer that
//! changes a host record in the same batch (a lease's politeness clock)
//! hands it over ([`UrlWrites::host`]), so that each host's record is
//! written once, with its counts.
//!
//! ## Where records go
//!
//! An ingest's batch ([`UrlWrites::paged`]) puts records into their pages
//! (`p`, [`crate::pages`]): it reads each page it needs once, changes it
//! in memory, and writes it once when the batch is applied, cut in two or
//! more when it grew past [`PAGE_CAP`](crate::page::PAGE_CAP) URLs. Every
//! other writer (a lease, a completion, a notification, a robots.txt
//! change) writes a record under a key of its own (`u`), which stands for
//! the page's copy until an ingest folds it back.
//!
//! ## Due lists: one key for many new URLs
//!
//! A URL new to the store (an ingest's, a notification's, a redirect's
//! target) is filed in a due list ([`keys::list`]): one key per host, due
//! second and class holds up to [`keys::LIST_CAP`] of them, so that an
//! ingest writes no due key of each new URL's own (and, with the record
//! in a page, no key of its own at all). Its
//! record names the list ([`UrlRecord::listed`]). A lease of a listed URL
//! leaves it there and marks its entry ([`UrlWrites::mark`], see
//! [`crate::marks`]); a lease of a URL with a due key of its own files it
//! in a list due when the lease runs out (all of a host's share of one
//! lease together), and so does a URL frontier client's report of a batch
//! with one refetch date (reason `requested`). When its place in the queue
//! changes otherwise (a fetch, a block, a retirement), a URL leaves its
//! list for a due key of its own; a list left empty is removed.
//! A URL's record and its list change in the same batch, so a crash never
//! leaves one without the other.
//!
//! A list entry carries what a lease orders URLs by (the policy's score
//! and the rank, [`Listed`]) and what it hands out (the reason), so a
//! lease reads no record of a listed URL (but one whose record holds a URL
//! frontier client's metadata), and only the records of the URLs with keys
//! of their own that it hands out, not of every candidate it compares. The
//! order is kept within a list (entries sorted by [`Listed::order`]; a
//! score or rank that changes moves the entry) but not quite across them:
//! a list's key ranks ahead of every URL with a key of its own due in the
//! same second, so among URLs of one class due in the same second, the
//! listed ones are read first. A lease reads twice the URLs it hands out
//! and then sorts them; a higher-priority URL with its own key, due in the
//! very second of more listed URLs than that, waits for the next lease. A
//! corrupt list is passed over and named by `stats --check`;
//! `stats --repair` rebuilds the due index from the records and puts its
//! URLs back.

use crate::due_list::Lease;
use crate::error::StoreError;
use crate::hash::{FastMap, FastSet};
use crate::keys;
use crate::kv::Batch;
use crate::marks::Marks;
use crate::pages::{Pages, Placed};
use crate::record::{DueList, HostRecord, Listed, StoredReason, UrlRecord, encode};
use crate::store::Store;
use crate::tally::Tally;

/// Where a record's due entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// Its own due key.
    Key(Vec<u8>),
    /// In due list `n` of its host due `at` in `class` (the key is built
    /// only when the list changes: most writes leave a URL where it is).
    List { class: u8, at: i64, n: u32 },
}

impl Place {
    /// The key of the list `url` is in, for a [`Place::List`].
    fn list_key(url: &str, class: u8, at: i64, n: u32) -> Vec<u8> {
        keys::list(class, at, keys::host_of(url), n)
    }
}

/// What a URL record was when read: its contribution to its host's counts
/// and its due entry, all [`UrlWrites::put`] needs of it
/// ([`UrlWrites::before`]).
#[derive(Debug, Clone)]
pub(crate) struct Before {
    tally: Tally,
    place: Option<Place>,
    /// Its due list entry as stored, if listed.
    entry: Option<Listed>,
}

impl Before {
    /// `rec`, the record of `url` as read, with its lease; `mark`, the
    /// lease its due list entry holds.
    fn of(url: &str, rec: &UrlRecord, mark: Option<Lease>) -> Before {
        Before {
            tally: Tally::of(rec),
            place: place_of(url, rec),
            entry: rec.listed.map(|_| Listed {
                lease: mark,
                ..Listed::of(url, rec)
            }),
        }
    }
}

/// Where the due entry of `rec` (the record of `url`) is, if queued.
fn place_of(url: &str, rec: &UrlRecord) -> Option<Place> {
    if !rec.queued() {
        return None;
    }
    Some(match rec.listed {
        Some(n) => Place::List {
            class: rec.schedule.reason.urgency() as u8,
            at: rec.schedule.due,
            n,
        },
        None => Place::Key(rec.due_key(url)),
    })
}

/// What one batch does to one due list.
#[derive(Default)]
struct ListEdit {
    removed: FastSet<String>,
    added: Vec<Listed>,
    /// Entries a lease marks: their places in the list as read (`read`),
    /// and their leases.
    marked: Vec<(usize, Lease)>,
    /// The list's value as the lease read it (under the same lock), and how
    /// many entries it holds.
    read: Option<(sled::IVec, usize)>,
}

/// URL records written in one batch with their due entries and their
/// hosts' [`Tally`] kept in step (in their host records). Other keys go
/// into [`UrlWrites::batch`]; [`UrlWrites::apply`] writes it all
/// atomically. The caller holds the store's write lock from reading the
/// records to applying.
pub(crate) struct UrlWrites<'s> {
    store: &'s Store,
    /// Records go into their pages ([`UrlWrites::paged`]), not keys of
    /// their own.
    paged: bool,
    pages: Pages,
    /// Reads the leases of listed records.
    marks: Marks,
    batch: Batch,
    changes: FastMap<String, Tally>,
    /// Host records the caller changed ([`UrlWrites::host`]), written with
    /// their counts changed by `changes`.
    hosts: FastMap<String, HostRecord>,
    lists: FastMap<Vec<u8>, ListEdit>,
    /// URLs to file in due lists (new ones, and those a lease hands out),
    /// by list prefix ([`keys::lists_of`]).
    fresh: FastMap<Vec<u8>, Vec<(Listed, UrlRecord)>>,
    /// Hosts a corrupt record of which this batch replaces
    /// ([`keys::SUSPECT`]).
    suspects: FastSet<String>,
}

impl<'s> UrlWrites<'s> {
    /// Writes to `store`.
    pub(crate) fn new(store: &'s Store) -> UrlWrites<'s> {
        UrlWrites {
            store,
            paged: false,
            pages: Pages::default(),
            marks: Marks::default(),
            batch: Batch::default(),
            changes: FastMap::default(),
            hosts: FastMap::default(),
            lists: FastMap::default(),
            fresh: FastMap::default(),
            suspects: FastSet::default(),
        }
    }

    /// Writes to `store` that put records into their pages: an ingest's,
    /// which reads them through [`UrlWrites::read`] (each page read once
    /// per batch) and writes many URLs of each page. Records with keys of
    /// their own that it writes go back into their pages.
    pub(crate) fn paged(store: &'s Store) -> UrlWrites<'s> {
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
            read.map(|bytes| crate::store::decode_url_record(url, &bytes))
                .transpose()
        } else {
            self.store.url_record(url)
        };
        match read {
            Err(e @ StoreError::Record { .. }) => {
                tracing::warn!(%url, error = %e, "corrupt URL record replaced");
                self.suspects.insert(keys::host_of(url).to_string());
                Ok(None)
            }
            other => other,
        }
    }

    /// What `rec` (the record of `url`, as just read) is before this batch
    /// changes it ([`UrlWrites::put`], [`UrlWrites::remove`]), with the
    /// lease its due list entry holds put into `rec` ([`Marks::overlay`]).
    pub(crate) fn before(&mut self, url: &str, rec: &mut UrlRecord) -> Result<Before, StoreError> {
        let mark = self.marks.overlay(self.store, url, rec)?;
        Ok(Before::of(url, rec, mark))
    }

    /// [`UrlWrites::before`] without reading the lease its due list entry
    /// may hold: for a record that stays in its place (its entry, and the
    /// mark in it, stay as they are), unless [`UrlWrites::with_lease`]
    /// reads it after all.
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
        if let Some(mark) = self.marks.overlay(self.store, url, rec)? {
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
    /// writes records; a listed record without its lease, which its entry
    /// holds.
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
    /// changed (a new queued URL is filed in a due list when the batch is
    /// applied), and its host's counts by the difference.
    pub(crate) fn put(
        &mut self,
        url: &str,
        before: Option<&Before>,
        after: &mut UrlRecord,
    ) -> Result<(), StoreError> {
        let old = before.and_then(|b| b.place.clone());
        let new = if !after.queued() {
            after.listed = None;
            None
        } else if after.listed.is_some() && place_of(url, after) == old {
            // Still due as its list says; its entry is written again if
            // what it holds changed (what orders it: its score, a new
            // priority or lastmod; its reason, metadata or lease).
            if let (Some(Place::List { class, at, n }), Some(before)) = (&old, before) {
                if before.entry.as_ref() != Some(&Listed::of(url, after)) {
                    let key = Place::list_key(url, *class, *at, *n);
                    let edit = self.lists.entry(key).or_default();
                    edit.removed.insert(url.to_string());
                    edit.added.push(Listed::of(url, after));
                }
            }
            old.clone()
        } else if listable(before, after) {
            // Filed in a due list when the batch is applied, in rank order.
            let prefix = keys::lists_of(
                after.schedule.reason.urgency() as u8,
                after.schedule.due,
                keys::host_of(url),
            );
            let entry = (Listed::of(url, after), after.clone());
            self.fresh.entry(prefix).or_default().push(entry);
            self.leave(url, old);
            self.count(url, before, after);
            return Ok(());
        } else {
            after.listed = None;
            Some(Place::Key(after.due_key(url)))
        };
        if old != new {
            self.leave(url, old);
            match new {
                Some(Place::Key(key)) => self.batch.insert(key, &[]),
                Some(Place::List { class, at, n }) => {
                    let key = Place::list_key(url, class, at, n);
                    let edit = self.lists.entry(key).or_default();
                    edit.added.push(Listed::of(url, after));
                }
                None => {}
            }
        }
        self.write_record(url, Some(after))?;
        self.count(url, before, after);
        Ok(())
    }

    /// Deletes the record of `url`, which was `before` when read: out of
    /// its place in the queue, and out of its host's counts.
    pub(crate) fn remove(&mut self, url: &str, before: &Before) -> Result<(), StoreError> {
        self.leave(url, before.place.clone());
        self.write_record(url, None)?;
        let mut change = Tally::default();
        change.add(&before.tally, -1);
        self.tally_change(url, &change);
        Ok(())
    }

    /// A lease of `url`, listed in the due list under `key` at `index`
    /// (`value`: the list as read, and how many entries it holds), whose
    /// record this batch does not write: its entry takes the mark, and its
    /// host counts one more lease unless the entry held one (`was_marked`:
    /// a lease that ran out, counted still).
    pub(crate) fn mark(
        &mut self,
        url: &str,
        (key, index, value): (&[u8], usize, (sled::IVec, usize)),
        lease: Lease,
        was_marked: bool,
    ) {
        let edit = match self.lists.get_mut(key) {
            Some(edit) => edit,
            None => self.lists.entry(key.to_vec()).or_default(),
        };
        edit.marked.push((index, lease));
        edit.read = Some(value);
        if !was_marked {
            let mut change = Tally::default();
            change.add_lease();
            self.tally_change(url, &change);
        }
    }

    /// Removes `url`'s entry from due list `n` of its host due `at` in
    /// `class`: one its record does not name (left by a replaced corrupt
    /// record).
    pub(crate) fn drop_entry(&mut self, url: &str, (class, at, n): (u8, i64, u32)) {
        self.leave(url, Some(Place::List { class, at, n }));
    }

    /// `url` leaves its place in the queue.
    fn leave(&mut self, url: &str, place: Option<Place>) {
        match place {
            Some(Place::Key(key)) => self.batch.remove(key),
            Some(Place::List { class, at, n }) => {
                let key = Place::list_key(url, class, at, n);
                let edit = self.lists.entry(key).or_default();
                edit.removed.insert(url.to_string());
            }
            None => {}
        }
    }

    /// Its host's counts change by `after`'s contribution less `before`'s.
    fn count(&mut self, url: &str, before: Option<&Before>, after: &UrlRecord) {
        let mut change = Tally::of(after);
        if let Some(before) = before {
            change.add(&before.tally, -1);
        }
        self.tally_change(url, &change);
    }

    /// The counts of `url`'s host change by `change`.
    fn tally_change(&mut self, url: &str, change: &Tally) {
        if change.is_zero() {
            return;
        }
        let host = keys::host_of(url);
        match self.changes.get_mut(host) {
            Some(tally) => tally.add(change, 1),
            None => {
                self.changes.insert(host.to_string(), *change);
            }
        }
    }

    /// Files the new URLs of one host, second and class (`prefix`,
    /// [`keys::lists_of`]) in due lists, best rank first: the last list
    /// while it has room, then new ones of [`keys::LIST_CAP`] each.
    fn file(&mut self, prefix: &[u8], fresh: Vec<(Listed, UrlRecord)>) -> Result<(), StoreError> {
        // Sorted by index: the records are large to move.
        let mut order: Vec<usize> = (0..fresh.len()).collect();
        order.sort_unstable_by(|&a, &b| fresh[a].0.order(&fresh[b].0));
        let mut fresh: Vec<Option<(Listed, UrlRecord)>> = fresh.into_iter().map(Some).collect();
        let (mut n, mut held) = self.last_list(prefix)?;
        for (entry, mut rec) in order.into_iter().filter_map(|i| fresh[i].take()) {
            if held >= keys::LIST_CAP {
                n = n.saturating_add(1);
                held = 0;
            }
            held += 1;
            rec.listed = Some(n);
            self.write_record(&entry.url, Some(&rec))?;
            let edit = self.lists.entry(rec.list_key(&entry.url, n)).or_default();
            edit.added.push(entry);
        }
        Ok(())
    }

    /// The last due list under `prefix` and how many it holds; (0, 0) if
    /// there is none.
    fn last_list(&self, prefix: &[u8]) -> Result<(u32, usize), StoreError> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        let Some((key, value)) = self.store.kv.last_in(prefix.to_vec()..end)? else {
            return Ok((0, 0));
        };
        let n = keys::parse_due(&key)
            .and_then(|d| keys::as_list(d.url))
            .map_or(0, |(_, n)| n);
        let held = crate::due_list::decode(&value).map_or(keys::LIST_CAP, |l| l.entries.len());
        Ok((n, held))
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

    /// Adds the changed due lists and hosts' counts to the batch and
    /// applies it.
    pub(crate) fn apply(mut self) -> Result<(), StoreError> {
        let store = self.store;
        for (prefix, fresh) in std::mem::take(&mut self.fresh) {
            self.file(&prefix, fresh)?;
        }
        for (key, edit) in self.lists.drain() {
            let (value, len) = match edit.read {
                Some((ref value, len)) => (Some(value.clone()), Some(len)),
                None => (store.kv.get(&key)?, None),
            };
            if let (Some(value), true) = (&value, edit.removed.is_empty() && edit.added.is_empty())
            {
                // Leases only: the entries' bytes stay as they are.
                if let Ok(marked) = crate::due_list::remark(value, len, &edit.marked) {
                    self.batch.insert(key, marked);
                    continue;
                }
            }
            let mut list = match value {
                Some(value) => crate::due_list::decode(&value).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "corrupt due list replaced (stats --check names its URLs)");
                    DueList::default()
                }),
                None => DueList::default(),
            };
            // The marks first: their places are in the list as read.
            for (index, lease) in &edit.marked {
                if let Some(entry) = list.entries.get_mut(*index) {
                    entry.lease = Some(*lease);
                }
            }
            list.entries.retain(|e| !edit.removed.contains(&e.url));
            if !edit.added.is_empty() {
                list.entries.extend(edit.added);
                list.entries.sort_by(Listed::order);
                // One entry per URL, whatever its order (`put` is called
                // once per URL and batch, so this is only a guard).
                let mut once = FastSet::default();
                list.entries.retain(|e| once.insert(e.url.clone()));
            }
            if list.entries.is_empty() {
                self.batch.remove(key);
            } else {
                self.batch.insert(key, crate::due_list::encode(&list));
            }
        }
        let changes = std::mem::take(&mut self.changes);
        for (host, change) in changes.into_iter().filter(|(_, c)| !c.is_zero()) {
            let mut record = match self.hosts.remove(&host) {
                Some(record) => record,
                None => store.stored_host_record(&host)?,
            };
            record.counts.get_or_insert_default().add(&change, 1);
            self.batch.insert(keys::host(&host), encode(&record));
        }
        for (host, record) in self.hosts.drain() {
            self.batch.insert(keys::host(&host), encode(&record));
        }
        std::mem::take(&mut self.pages).write(&mut self.batch);
        for host in &self.suspects {
            self.batch.insert(keys::suspect(host), &[]);
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

/// Whether a record moving in the queue goes into a due list rather than a
/// key of its own: a URL new to the store (due when it was found), a URL
/// just leased (due again when the lease runs out, with every other URL of
/// its host in that lease), and a URL a frontier client put with a date
/// (a crawler reports a batch with one refetch date). Others are due at
/// times of their own.
fn listable(before: Option<&Before>, after: &UrlRecord) -> bool {
    after.schedule.lease.is_some()
        || after.schedule.reason == StoredReason::Requested
        || (before.is_none()
            && matches!(
                after.schedule.reason,
                StoredReason::New | StoredReason::Notified
            ))
}

impl Store {
    /// Rebuilds what [`Store::check`] verifies from the URL records: the
    /// due index (every queued URL gets a due key of its own, out of any
    /// due list, a lease its entry held kept in its record; what a corrupt
    /// due list held is back in the queue) and
    /// each host's counts, after removing the pages that do not decode
    /// (their records are lost: they could not be read). What to run when
    /// the check names problems (a record that did not decode was replaced,
    /// or the store was changed behind its back). Holds the write lock
    /// throughout; a crash midway leaves what a second run puts right.
    pub fn repair(&self) -> Result<(), StoreError> {
        let _lock = self.lock();
        crate::pages::remove_corrupt(&self.kv)?;
        crate::migrate::rebuild_due_index(&self.kv)?;
        crate::migrate::clear(&self.kv, keys::SUSPECT)?;
        self.suspects
            .store(false, std::sync::atomic::Ordering::Relaxed);
        crate::migrate::count_tallies(&self.kv)
    }

    /// The kept counts of `host`'s URL records (zero for a host never
    /// seen; a host record that does not decode counts as zero, and
    /// `stats --check` names the host).
    pub(crate) fn tally(&self, host: &str) -> Result<Tally, StoreError> {
        Ok(self.stored_host_record(host)?.counts.unwrap_or_default())
    }
}
