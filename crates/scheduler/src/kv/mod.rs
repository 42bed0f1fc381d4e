//! The key-value layer under the store: a [`Backend`] (sled on disk,
//! [`Store::open`](crate::Store::open); an ordered map in memory for a
//! throwaway store, [`Store::in_memory`](crate::Store::in_memory)) behind
//! [`Kv`], which every module above it (ingest, queue, policies, refresh,
//! checks) uses alike.
//!
//! [`Kv`] adds what every backend needs the same way:
//! - **one batch per mutation**: [`Kv::apply_batch`] is the only write, and
//!   the ids the store hands out ([`Kv::next_id`]) come from a counter in
//!   the keyspace ([`keys::IDS`]), written in the batch that uses them, so a
//!   batch is the whole of a mutation;
//! - **health**: every backend call goes through [`health::guard`] (sled
//!   panics on some damaged files; such a panic becomes
//!   [`StoreError::Damaged`], with the default panic message kept off the
//!   terminal); corrupt data the backend detects itself becomes the same
//!   error. A failed write becomes [`StoreError::WriteFailed`]; on a backend
//!   that then refuses every later write (sled), this layer refuses reads
//!   too, so that what a failed request left in the backend's memory is
//!   never served. [`Health`] tracks both.

mod backend;
#[cfg(test)]
mod conformance;
mod health;
mod memory;
mod sled_backend;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) use bytes::Bytes;

use crate::error::StoreError;
use crate::keys;
use backend::{Backend, BackendError, Entries, prefix_end};
pub use health::StoreHealth;
use health::{Health, guard, locked};
#[cfg(test)]
pub(crate) use sled_backend::CLOSED_FILE;

/// Writes applied together by [`Kv::apply_batch`]: atomically, in order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Batch {
    ops: backend::Ops,
}

impl Batch {
    /// Sets `key` to `value`.
    pub(crate) fn insert(&mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.ops.push((key.into(), Some(value.into())));
    }

    /// Removes `key`.
    pub(crate) fn remove(&mut self, key: impl Into<Vec<u8>>) {
        self.ops.push((key.into(), None));
    }

    /// Whether it holds no write.
    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// The ids a keyspace hands out: the next one, and the counter its last
/// batch wrote ([`keys::IDS`]).
struct Ids {
    next: AtomicU64,
    persisted: AtomicU64,
    /// Held while a batch that carries the counter is applied, so that the
    /// counter stored never goes back.
    writing: Mutex<()>,
}

/// A store's keyspace: a backend, where it is, and its health.
pub(crate) struct Kv {
    backend: Box<dyn Backend>,
    /// The store's directory (or `memory`), for errors.
    path: String,
    health: Arc<Health>,
    ids: Ids,
    /// Fault injection for the crate's tests: writes left before every
    /// write fails (negative: no limit).
    write_budget: AtomicI64,
}

impl Kv {
    /// An empty keyspace in memory.
    pub(crate) fn memory() -> Kv {
        Kv::new(
            Box::<memory::Memory>::default(),
            "memory".to_string(),
            Arc::default(),
        )
        .expect("an empty map reads")
    }

    /// The store in directory `path` on disk (created if absent), with a
    /// page cache of `cache_bytes`.
    pub(crate) fn open(path: &std::path::Path, cache_bytes: u64) -> Result<Kv, StoreError> {
        let sled = sled_backend::open(path, cache_bytes)?;
        Kv::new(Box::new(sled), path.display().to_string(), Arc::default())
    }

    fn new(backend: Box<dyn Backend>, path: String, health: Arc<Health>) -> Result<Kv, StoreError> {
        let mut kv = Kv {
            backend,
            path,
            health,
            ids: Ids {
                next: AtomicU64::new(0),
                persisted: AtomicU64::new(0),
                writing: Mutex::new(()),
            },
            write_budget: AtomicI64::new(-1),
        };
        let next = match kv.get(keys::IDS)? {
            Some(v) => <[u8; 8]>::try_from(v.as_ref())
                .map(u64::from_be_bytes)
                .map_err(|_| kv.damaged(format!("its id counter is {} bytes, not 8", v.len())))?,
            None => 0,
        };
        kv.ids = Ids {
            next: AtomicU64::new(next),
            persisted: AtomicU64::new(next),
            writing: Mutex::new(()),
        };
        Ok(kv)
    }

    /// The sibling keyspace `name` (created if absent): on disk a tree of
    /// the same database, in memory a map kept beside this one. It shares
    /// this keyspace's health: they are one database on one disk, and a
    /// write sled failed in any of them wedges them all, so a crawl's
    /// failed write shows in the store's health.
    pub(crate) fn sibling(&self, name: &str) -> Result<Kv, StoreError> {
        let backend = self.read(|b| b.keyspace(name))?;
        Kv::new(
            backend,
            format!("{} ({name})", self.path),
            self.health.clone(),
        )
    }

    /// The names of the sibling keyspaces that start with `prefix`.
    pub(crate) fn sibling_names(&self, prefix: &str) -> Vec<String> {
        guard(self.backend.name(), || self.backend.keyspace_names())
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.starts_with(prefix))
            .collect()
    }

    /// Drops the sibling keyspace `name`, every key in it; whether it was
    /// there.
    pub(crate) fn drop_sibling(&self, name: &str) -> Result<bool, StoreError> {
        self.write(|b| b.drop_keyspace(name))
    }

    /// The damage error for `detail`, recorded.
    pub(crate) fn damaged(&self, detail: String) -> StoreError {
        *locked(&self.health.damaged) = Some(detail.clone());
        StoreError::Damaged {
            path: self.path.clone(),
            detail,
        }
    }

    /// A backend error met while reading.
    fn read_error(&self, e: BackendError) -> StoreError {
        match e {
            BackendError::Corrupt(detail) => self.damaged(detail),
            BackendError::Io(detail) if self.wedged() => self.wedged_error(detail),
            BackendError::Io(detail) => StoreError::Io {
                path: self.path.clone(),
                detail,
            },
        }
    }

    fn wedged(&self) -> bool {
        self.health.wedged.load(Ordering::SeqCst)
    }

    fn wedged_error(&self, detail: String) -> StoreError {
        StoreError::WriteFailed {
            path: self.path.clone(),
            detail: format!("{detail}; the store refuses reads and writes until it is reopened"),
        }
    }

    /// Refused while wedged (see [`Health`]).
    fn refuse_if_wedged(&self) -> Result<(), StoreError> {
        if self.wedged() {
            let why = locked(&self.health.write_failure)
                .clone()
                .unwrap_or_default();
            return Err(self.wedged_error(why));
        }
        Ok(())
    }

    /// A read: the backend's panics and corruption are
    /// [`StoreError::Damaged`].
    fn read<T>(
        &self,
        f: impl FnOnce(&dyn Backend) -> Result<T, BackendError>,
    ) -> Result<T, StoreError> {
        self.refuse_if_wedged()?;
        match guard(self.backend.name(), || f(self.backend.as_ref())) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.read_error(e)),
            Err(panic) => Err(self.damaged(panic)),
        }
    }

    /// A write: its result is the last write's (see [`Health`]).
    fn write<T>(
        &self,
        f: impl FnOnce(&dyn Backend) -> Result<T, BackendError>,
    ) -> Result<T, StoreError> {
        self.refuse_if_wedged()?;
        let budget = self.write_budget.load(Ordering::SeqCst);
        if budget == 0 {
            return Err(
                self.write_failed("injected fault: no space left on device".to_string(), false)
            );
        }
        if budget > 0 {
            self.write_budget.fetch_sub(1, Ordering::SeqCst);
        }
        match guard(self.backend.name(), || f(self.backend.as_ref())) {
            Ok(Ok(v)) => {
                *locked(&self.health.write_failure) = None;
                Ok(v)
            }
            Ok(Err(BackendError::Corrupt(detail))) => Err(self.damaged(detail)),
            Ok(Err(BackendError::Io(detail))) => {
                let wedges = self.backend.wedges_on_write_failure();
                Err(self.write_failed(detail, wedges))
            }
            Err(panic) => Err(self.damaged(panic)),
        }
    }

    fn write_failed(&self, detail: String, wedged: bool) -> StoreError {
        *locked(&self.health.write_failure) = Some(detail.clone());
        if wedged {
            self.health.wedged.store(true, Ordering::SeqCst);
            return self.wedged_error(detail);
        }
        StoreError::WriteFailed {
            path: self.path.clone(),
            detail,
        }
    }

    /// What has gone wrong so far.
    pub(crate) fn health(&self) -> StoreHealth {
        let (unreadable_records, first_unreadable) = locked(&self.health.unreadable).clone();
        StoreHealth {
            damaged: locked(&self.health.damaged).clone(),
            write_failure: locked(&self.health.write_failure).clone(),
            needs_reopen: self.wedged(),
            unreadable_records,
            first_unreadable,
        }
    }

    /// Notes a record passed over because it does not decode (the first
    /// logged).
    pub(crate) fn passed_over(&self, key: &str) {
        let mut seen = locked(&self.health.unreadable);
        seen.0 += 1;
        if seen.1.is_none() {
            tracing::warn!(%key, "a record that does not decode passed over (stats --check names them)");
            seen.1 = Some(key.to_string());
        }
    }

    /// Fault injection for the crate's tests: after `writes` more writes,
    /// every write fails (`None`: no limit again).
    #[cfg(test)]
    pub(crate) fn inject_write_failures(&self, writes: Option<u64>) {
        self.write_budget.store(
            writes.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)),
            Ordering::SeqCst,
        );
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>, StoreError> {
        self.read(|b| b.get(key.as_ref()))
    }

    /// Whether `key` is present.
    pub(crate) fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool, StoreError> {
        Ok(self.get(key)?.is_some())
    }

    /// Applies `batch` atomically (all of it or, on an error, none of it),
    /// with the id counter when an id was handed out since the last batch
    /// that wrote it.
    pub(crate) fn apply_batch(&self, mut batch: Batch) -> Result<(), StoreError> {
        if self.ids.next.load(Ordering::SeqCst) <= self.ids.persisted.load(Ordering::SeqCst) {
            return self.write(|b| b.apply(batch.ops));
        }
        // Every id this batch holds was handed out before this point, so
        // the counter read here is past it; applied under `writing`, the
        // counters stored only grow.
        let _writing = locked(&self.ids.writing);
        let next = self.ids.next.load(Ordering::SeqCst);
        batch.insert(keys::IDS, next.to_be_bytes());
        self.write(|b| b.apply(batch.ops))?;
        self.ids.persisted.fetch_max(next, Ordering::SeqCst);
        Ok(())
    }

    /// A new id, never handed out before by this keyspace, as long as the
    /// batch that records what it names is applied ([`Kv::apply_batch`]
    /// writes the counter with it). An id handed out and never written is
    /// skipped.
    pub(crate) fn next_id(&self) -> u64 {
        self.ids.next.fetch_add(1, Ordering::SeqCst)
    }

    /// The keys from `range.start` (included) to `range.end` (excluded), in
    /// order.
    pub(crate) fn range(&self, range: std::ops::Range<Vec<u8>>) -> Iter<'_> {
        self.iter(|b| b.range(range.start, Some(range.end)))
    }

    /// The last key (and its value) from `range.start` (included) to
    /// `range.end` (excluded).
    pub(crate) fn last_in(
        &self,
        range: std::ops::Range<Vec<u8>>,
    ) -> Result<Option<(Bytes, Bytes)>, StoreError> {
        self.read(|b| b.last_in(&range.start, &range.end))
    }

    /// The keys starting with `prefix`, in order.
    pub(crate) fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> Iter<'_> {
        let prefix = prefix.as_ref();
        self.iter(|b| b.range(prefix.to_vec(), prefix_end(prefix)))
    }

    fn iter<'a>(&'a self, make: impl FnOnce(&'a dyn Backend) -> Entries<'a>) -> Iter<'a> {
        let inner = self.refuse_if_wedged().and_then(|()| {
            guard(self.backend.name(), || make(self.backend.as_ref()))
                .map_err(|panic| self.damaged(panic))
        });
        match inner {
            Ok(it) => Iter {
                it: Some(it),
                kv: self,
                failed: None,
            },
            Err(e) => Iter {
                it: None,
                kv: self,
                failed: Some(e),
            },
        }
    }

    /// Makes every applied batch durable now (in memory: nothing to do).
    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        self.write(|b| b.flush())
    }

    /// Bytes on disk (in memory: the keys and values held).
    pub(crate) fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.read(|b| b.size())
    }
}

/// Test-only writes of one key (each its own batch), to put a store in a
/// state a test needs (a damaged record, a key removed).
#[cfg(test)]
impl Kv {
    pub(crate) fn insert(
        &self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.insert(key, value);
        self.apply_batch(batch)
    }

    pub(crate) fn remove(&self, key: impl Into<Vec<u8>>) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.remove(key);
        self.apply_batch(batch)
    }
}

/// An iterator over keys and values, in key order, each step guarded. An
/// error (damage met on the way) ends it.
pub(crate) struct Iter<'a> {
    it: Option<Entries<'a>>,
    kv: &'a Kv,
    /// An error to report, then nothing.
    failed: Option<StoreError>,
}

impl Iterator for Iter<'_> {
    type Item = Result<(Bytes, Bytes), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let Some(it) = self.it.as_mut() else {
            return self.failed.take().map(Err);
        };
        let kv = self.kv;
        let step = kv
            .refuse_if_wedged()
            .and_then(|()| guard(kv.backend.name(), || it.next()).map_err(|p| kv.damaged(p)));
        match step {
            Ok(Some(Ok(item))) => Some(Ok(item)),
            Ok(None) => {
                self.it = None;
                None
            }
            Ok(Some(Err(e))) => {
                self.it = None;
                Some(Err(kv.read_error(e)))
            }
            Err(e) => {
                self.it = None;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids come from the keyspace's counter, written with the batch that
    /// uses them: a store reopened goes on past every id it wrote.
    #[test]
    fn ids_go_on_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let kv = Kv::open(dir.path(), 1 << 20).unwrap();
        assert_eq!((kv.next_id(), kv.next_id()), (0, 1));
        kv.apply_batch(Batch::default()).unwrap();
        assert_eq!(
            kv.get(keys::IDS).unwrap().unwrap().as_ref(),
            2u64.to_be_bytes()
        );
        // Handed out, never written: it may come again.
        assert_eq!(kv.next_id(), 2);
        drop(kv);
        let kv = Kv::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(kv.next_id(), 2);
        let memory = Kv::memory();
        assert_eq!((memory.next_id(), memory.next_id()), (0, 1));
    }

    /// A tree an older build wrote, its ids from sled's generator: it is
    /// given a counter past them.
    #[test]
    fn a_tree_of_an_older_build_is_given_a_counter_past_sled_ids() {
        let dir = tempfile::tempdir().unwrap();
        let handed_out = {
            let db = sled::open(dir.path()).unwrap();
            let tree = db.open_tree("sitemapd").unwrap();
            tree.insert(b"u-some-url", &b"x"[..]).unwrap();
            let last = (0..5).map(|_| db.generate_id().unwrap()).max().unwrap();
            db.flush().unwrap();
            last
        };
        let kv = Kv::open(dir.path(), 1 << 20).unwrap();
        assert!(kv.next_id() > handed_out);
    }

    /// A scan holds no lock between two items: writes made while it runs
    /// are seen once it reaches them.
    #[test]
    fn a_scan_lets_writes_through() {
        let memory = Kv::memory();
        for i in 0..200u32 {
            memory
                .insert(
                    [b'b']
                        .iter()
                        .chain(&i.to_be_bytes())
                        .copied()
                        .collect::<Vec<u8>>(),
                    b"v".to_vec(),
                )
                .unwrap();
        }
        let mut seen = 0;
        for item in memory.scan_prefix([b'b']) {
            let (k, _) = item.unwrap();
            memory.remove(k.to_vec()).unwrap();
            seen += 1;
        }
        assert_eq!(seen, 200);
        assert!(memory.scan_prefix([b'b']).next().is_none());
    }
}
