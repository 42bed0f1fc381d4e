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
mod capture;
#[cfg(test)]
mod conformance;
mod generations;
mod health;
mod memory;
mod sled_atomic;
mod sled_backend;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) use bytes::Bytes;

use crate::error::StoreError;
use crate::keys;
pub(crate) use backend::Compacted;
use backend::{Backend, BackendError, Entries, prefix_end};
#[cfg(test)]
pub(crate) use generations::CLOSED_FILE;
pub use health::StoreHealth;
use health::{Health, guard, locked};

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
/// batch wrote ([`keys::IDS`]). One per keyspace, shared by every handle
/// on it ([`Registry`]).
#[derive(Debug)]
struct Ids {
    next: AtomicU64,
    persisted: AtomicU64,
    /// Held while a batch that carries the counter is applied, so that the
    /// counter stored never goes back.
    writing: Mutex<()>,
}

/// Ids a store reopened hands out past its stored counter: more than a
/// store hands out between two flushes, so that an id handed out in a
/// batch a crash lost (a lease's, already sent to a client) is not handed
/// out again (sled's own generator skips as far).
const REOPEN_GAP: u64 = 1 << 20;

/// What every keyspace of one store shares: its health, and each
/// keyspace's ids by name (`""`: the store's own).
#[derive(Default)]
struct Registry {
    health: Health,
    ids: Mutex<std::collections::HashMap<String, Arc<Ids>>>,
    /// Fault injection for the crate's tests: writes left, over every
    /// keyspace, before every write fails (negative: no limit).
    write_budget: WriteBudget,
}

/// [`Registry::write_budget`]: no limit by default.
struct WriteBudget(AtomicI64);

impl Default for WriteBudget {
    fn default() -> Self {
        WriteBudget(AtomicI64::new(-1))
    }
}

/// A store's keyspace: a backend, where it is, and what it shares with the
/// store's other keyspaces.
pub(crate) struct Kv {
    backend: Box<dyn Backend>,
    /// The store's directory (or `memory`), for errors.
    path: String,
    shared: Arc<Registry>,
    /// Its name among the store's keyspaces ("" for the store's own).
    keyspace: String,
    ids: Arc<Ids>,
    /// Where its batches are appended before they are applied, if
    /// anywhere ([`crate::write_log`]).
    log: std::sync::OnceLock<LogHook>,
}

/// A keyspace's write log, and the partition it logs as.
#[derive(Debug, Clone)]
pub(crate) struct LogHook {
    pub(crate) log: Arc<dyn crate::WriteLog>,
    pub(crate) partition: u16,
}

impl Kv {
    /// An empty keyspace in memory.
    pub(crate) fn memory() -> Kv {
        Kv::new(Box::<memory::Memory>::default(), "memory".to_string())
            .named("", Arc::default())
            .expect("an empty map reads and writes")
    }

    /// The store in directory `path` on disk (created if absent), with a
    /// page cache of `cache_bytes`.
    pub(crate) fn open(path: &std::path::Path, cache_bytes: u64) -> Result<Kv, StoreError> {
        let sled = sled_backend::open(path, cache_bytes)?;
        Kv::new(Box::new(sled), path.display().to_string()).named("", Arc::default())
    }

    /// A handle on `backend`, which [`Kv::named`] makes a keyspace of a
    /// store.
    fn new(backend: Box<dyn Backend>, path: String) -> Kv {
        Kv {
            backend,
            path,
            shared: Arc::default(),
            keyspace: String::new(),
            ids: Arc::new(Ids {
                next: AtomicU64::new(0),
                persisted: AtomicU64::new(0),
                writing: Mutex::new(()),
            }),
            log: std::sync::OnceLock::new(),
        }
    }

    /// This handle as keyspace `name` of the store `shared` describes, with
    /// the ids every handle on that keyspace shares. The first handle reads
    /// them from the keyspace's counter: [`REOPEN_GAP`] past it (none for a
    /// keyspace without one), written and flushed at once on disk, so that
    /// no id handed out before a crash comes again.
    fn named(mut self, name: &str, shared: Arc<Registry>) -> Result<Kv, StoreError> {
        self.shared = shared;
        self.keyspace = name.to_string();
        let known = locked(&self.shared.ids).get(name).cloned();
        if let Some(ids) = known {
            self.ids = ids;
            return Ok(self);
        }
        let start = match self.get(keys::IDS)? {
            Some(v) => <[u8; 8]>::try_from(v.as_ref())
                .map(|b| u64::from_be_bytes(b).saturating_add(REOPEN_GAP))
                .map_err(|_| self.damaged(format!("its id counter is {} bytes, not 8", v.len())))?,
            None => 0,
        };
        if self.backend.durable() {
            let mut batch = Batch::default();
            batch.insert(keys::IDS, start.to_be_bytes());
            self.apply_batch(batch)?;
            self.flush()?;
        }
        let ids = Arc::new(Ids {
            next: AtomicU64::new(start),
            persisted: AtomicU64::new(start),
            writing: Mutex::new(()),
        });
        self.ids = locked(&self.shared.ids)
            .entry(name.to_string())
            .or_insert(ids)
            .clone();
        Ok(self)
    }

    /// The sibling keyspace `name` (created if absent): on disk a tree of
    /// the same database, in memory a map kept beside this one. It shares
    /// this keyspace's health: they are one database on one disk, and a
    /// write sled failed in any of them wedges them all, so a crawl's
    /// failed write shows in the store's health. Every handle on one
    /// keyspace shares its ids.
    pub(crate) fn sibling(&self, name: &str) -> Result<Kv, StoreError> {
        // Opening it may create it: a write.
        let backend = self.write(|b| b.keyspace(name))?;
        Kv::new(backend, format!("{} ({name})", self.path)).named(name, self.shared.clone())
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
        let dropped = self.write(|b| b.drop_keyspace(name))?;
        // One created again under the name starts from its own counter.
        locked(&self.shared.ids).remove(name);
        Ok(dropped)
    }

    /// The damage error for `detail`, recorded.
    pub(crate) fn damaged(&self, detail: String) -> StoreError {
        *locked(&self.shared.health.damaged) = Some(detail.clone());
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
        self.shared.health.wedged.load(Ordering::SeqCst)
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
            let why = locked(&self.shared.health.write_failures)
                .values()
                .next()
                .cloned()
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
        // Negative: no limit; 0: this write fails; else one write fewer.
        let spent =
            self.shared
                .write_budget
                .0
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| {
                    (b > 0).then(|| b - 1)
                });
        if spent == Err(0) {
            return Err(
                self.write_failed("injected fault: no space left on device".to_string(), false)
            );
        }
        match guard(self.backend.name(), || f(self.backend.as_ref())) {
            Ok(Ok(v)) => {
                let mut failures = locked(&self.shared.health.write_failures);
                if !failures.is_empty() {
                    failures.remove(&self.keyspace);
                }
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
        locked(&self.shared.health.write_failures).insert(self.keyspace.clone(), detail.clone());
        if wedged {
            self.shared.health.wedged.store(true, Ordering::SeqCst);
            return self.wedged_error(detail);
        }
        StoreError::WriteFailed {
            path: self.path.clone(),
            detail,
        }
    }

    /// What has gone wrong so far.
    pub(crate) fn health(&self) -> StoreHealth {
        let (unreadable_records, first_unreadable) = locked(&self.shared.health.unreadable).clone();
        StoreHealth {
            damaged: locked(&self.shared.health.damaged).clone(),
            write_failure: locked(&self.shared.health.write_failures)
                .values()
                .next()
                .cloned(),
            needs_reopen: self.wedged(),
            unreadable_records,
            first_unreadable,
        }
    }

    /// Notes a record passed over because it does not decode (the first
    /// logged).
    pub(crate) fn passed_over(&self, key: &str) {
        let mut seen = locked(&self.shared.health.unreadable);
        seen.0 += 1;
        if seen.1.is_none() {
            tracing::warn!(%key, "a record that does not decode passed over (stats --check names them)");
            seen.1 = Some(key.to_string());
        }
    }

    /// Forgets the write failures of the keyspaces `which` names: their
    /// data is no longer this store's to write (a partition another node
    /// now holds), so a failure of theirs says nothing of the store's
    /// health.
    pub(crate) fn forget_write_failures(&self, which: impl Fn(&str) -> bool) {
        locked(&self.shared.health.write_failures).retain(|keyspace, _| !which(keyspace));
    }

    /// Fault injection for the crate's tests: after `writes` more writes to
    /// any keyspace of the store, every write fails (`None`: no limit
    /// again).
    #[cfg(test)]
    pub(crate) fn inject_write_failures(&self, writes: Option<u64>) {
        self.shared.write_budget.0.store(
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

    /// Asks the backend to apply the batches of different keyspaces side
    /// by side ([`Backend::batches_side_by_side`]).
    pub(crate) fn batches_side_by_side(&self) {
        self.backend.batches_side_by_side();
    }

    /// Appends every batch to `hook`'s log before applying it, from now on
    /// (set once: a second call is ignored).
    pub(crate) fn log_to(&self, hook: LogHook) {
        let _ = self.log.set(hook);
    }

    /// Applies `batch` atomically (all of it or, on an error, none of it),
    /// with the id counter when an id was handed out since the last batch
    /// that wrote it. With a write log, the batch is appended first and
    /// applied only once the log took it, with the position it took.
    pub(crate) fn apply_batch(&self, mut batch: Batch) -> Result<(), StoreError> {
        if let Some(hook) = self.log.get() {
            return self.apply_logging(batch, hook);
        }
        if self.ids.next.load(Ordering::SeqCst) <= self.ids.persisted.load(Ordering::SeqCst) {
            if batch.is_empty() {
                // Nothing to write (a lease's partition it took nothing
                // from): the backend is not asked (sled would take its
                // batch lock for it).
                return Ok(());
            }
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

    /// [`Kv::apply_batch`] with a write log: appended and applied under the
    /// keyspace's `writing` lock, so that the log's order is the order the
    /// keyspace changes in.
    fn apply_logging(&self, mut batch: Batch, hook: &LogHook) -> Result<(), StoreError> {
        let _writing = locked(&self.ids.writing);
        let next = self.ids.next.load(Ordering::SeqCst);
        let new_ids = next > self.ids.persisted.load(Ordering::SeqCst);
        if new_ids {
            batch.insert(keys::IDS, next.to_be_bytes());
        }
        if batch.is_empty() {
            return Ok(());
        }
        let entry = crate::LogEntry {
            keyspace: self.keyspace.clone(),
            ops: batch.ops,
        };
        let position = hook
            .log
            .append(hook.partition, &entry.to_bytes())
            .map_err(|detail| StoreError::LogRefused {
                partition: hook.partition,
                detail,
            })?;
        let mut ops = entry.ops;
        ops.push((
            keys::LOG_POSITION.to_vec(),
            Some(position.to_be_bytes().to_vec()),
        ));
        if let Err(e) = self.write(|b| b.apply(ops)) {
            // The log has it and the store has not: no later entry may
            // land before the store has replayed this one.
            hook.log.unapplied(hook.partition);
            return Err(e);
        }
        if new_ids {
            self.ids.persisted.fetch_max(next, Ordering::SeqCst);
        }
        Ok(())
    }

    /// The position of the last write log entry applied to this keyspace
    /// (0: none).
    pub(crate) fn log_position(&self) -> Result<u64, StoreError> {
        match self.get(keys::LOG_POSITION)? {
            None => Ok(0),
            Some(v) => <[u8; 8]>::try_from(v.as_ref())
                .map(u64::from_be_bytes)
                .map_err(|_| self.damaged(format!("its log position is {} bytes, not 8", v.len()))),
        }
    }

    /// Applies the writes of a log entry at `position`, unless an entry at
    /// or past it was applied already: whether it was applied. Its id
    /// counter, if it holds one, is this keyspace's from now on.
    pub(crate) fn apply_logged(
        &self,
        position: u64,
        ops: backend::Ops,
    ) -> Result<bool, StoreError> {
        let _writing = locked(&self.ids.writing);
        if position <= self.log_position()? {
            return Ok(false);
        }
        let ids = ops
            .iter()
            .rev()
            .find(|(key, _)| key.as_slice() == keys::IDS)
            .and_then(|(_, value)| <[u8; 8]>::try_from(value.as_deref()?).ok())
            .map(u64::from_be_bytes);
        let mut ops = ops;
        ops.push((
            keys::LOG_POSITION.to_vec(),
            Some(position.to_be_bytes().to_vec()),
        ));
        self.write(|b| b.apply(ops))?;
        if let Some(counter) = ids {
            self.ids.next.fetch_max(counter, Ordering::SeqCst);
            self.ids.persisted.fetch_max(counter, Ordering::SeqCst);
        }
        Ok(true)
    }

    /// Its name among the store's keyspaces.
    pub(crate) fn keyspace_name(&self) -> &str {
        &self.keyspace
    }

    /// A new id, never handed out before by this keyspace, as long as the
    /// batch that records what it names is applied ([`Kv::apply_batch`]
    /// writes the counter with it). An id handed out and never written is
    /// skipped.
    pub(crate) fn next_id(&self) -> u64 {
        self.ids.next.fetch_add(1, Ordering::SeqCst)
    }

    /// Hands out no id below `at_least` from now on (a keyspace given keys
    /// that name ids another keyspace handed out).
    pub(crate) fn hand_out_from(&self, at_least: u64) {
        self.ids.next.fetch_max(at_least, Ordering::SeqCst);
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

    /// Rewrites the database (every keyspace of the store) into files that
    /// hold its live data only, and switches to them; writes wait meanwhile
    /// ([`Backend::compact`]). `None` in memory.
    pub(crate) fn compact(&self) -> Result<Option<Compacted>, StoreError> {
        // Not a `write`: a copy that fails (a full disk) leaves the files in
        // use as they were, so it must not wedge the store as a failed
        // write does. Its errors are those of a read.
        self.read(|b| b.compact())
    }

    /// The bytes on disk the last compaction left (`None`: never
    /// compacted, or in memory).
    pub(crate) fn compacted_size(&self) -> Option<u64> {
        self.backend.compacted_size()
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
    /// uses them; a store reopened goes on past every id it handed out,
    /// written or not.
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
        // Handed out, never written (its batch lost, say).
        assert_eq!(kv.next_id(), 2);
        drop(kv);
        let kv = Kv::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(kv.next_id(), 2 + REOPEN_GAP);
        let memory = Kv::memory();
        assert_eq!((memory.next_id(), memory.next_id()), (0, 1));
    }

    /// Every handle on one keyspace hands out from one counter: two
    /// handles on a crawl never give the same id.
    #[test]
    fn handles_on_one_keyspace_share_its_ids() {
        let dir = tempfile::tempdir().unwrap();
        let kv = Kv::open(dir.path(), 1 << 20).unwrap();
        let (a, b) = (
            kv.sibling("crawl:x").unwrap(),
            kv.sibling("crawl:x").unwrap(),
        );
        let ids = [a.next_id(), b.next_id(), a.next_id()];
        assert_eq!(ids, [0, 1, 2]);
        let other = kv.sibling("crawl:y").unwrap();
        assert_eq!(other.next_id(), 0);
    }

    /// A crash: the directory as it is on disk while the store is open
    /// (copied, as a power cut would leave it), opened. What it holds is
    /// the batches up to some point, in order, at least those flushed; and
    /// it hands out no id a batch it holds, or one it lost, had.
    #[test]
    fn a_crash_keeps_a_prefix_of_the_batches_and_no_id_comes_again() {
        let dir = tempfile::tempdir().unwrap();
        let kv = Kv::open(dir.path(), 1 << 20).unwrap();
        let mut given = Vec::new();
        for round in 0u32..200 {
            let id = kv.next_id();
            given.push(id);
            let mut batch = Batch::default();
            batch.insert(b"\x80round".to_vec(), round.to_be_bytes());
            batch.insert(
                [b"\x81".as_slice(), &round.to_be_bytes()].concat(),
                id.to_be_bytes(),
            );
            kv.apply_batch(batch).unwrap();
            if round == 99 {
                kv.flush().unwrap();
            }
        }
        let copy = tempfile::tempdir().unwrap();
        for file in walk(dir.path()) {
            let to = copy.path().join(file.strip_prefix(dir.path()).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&file, &to).unwrap();
        }
        let crashed = Kv::open(copy.path(), 1 << 20).unwrap();
        let last = crashed.get(b"\x80round").unwrap().unwrap();
        let last = u32::from_be_bytes(<[u8; 4]>::try_from(last.as_ref()).unwrap());
        assert!(last >= 99, "the flushed batches are kept (last {last})");
        for round in 0..200u32 {
            let held = crashed
                .get([b"\x81".as_slice(), &round.to_be_bytes()].concat())
                .unwrap();
            assert_eq!(
                held.is_some(),
                round <= last,
                "batch {round} of a prefix up to {last}"
            );
        }
        let next = crashed.next_id();
        assert!(given.iter().all(|id| *id < next), "{next} after {given:?}");
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else {
                files.push(path);
            }
        }
        files
    }

    /// Ids handed out on many threads, each written by a batch of its own:
    /// the counter stored is past every one.
    #[test]
    fn the_counter_stored_is_past_every_id_written_from_many_threads() {
        let kv = Kv::memory();
        let written: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..500)
                            .map(|_| {
                                let id = kv.next_id();
                                let mut batch = Batch::default();
                                batch.insert(b"\x80".to_vec(), id.to_be_bytes());
                                kv.apply_batch(batch).unwrap();
                                id
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let stored = kv.get(keys::IDS).unwrap().unwrap();
        let stored = u64::from_be_bytes(<[u8; 8]>::try_from(stored.as_ref()).unwrap());
        assert!(written.iter().all(|id| *id < stored));
        let mut unique = written.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), written.len());
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

    /// A compaction whose copy cannot be written (here a file stands where
    /// its directory goes; a full disk alike) fails, and the store goes on
    /// as it was: readable, writable, not waiting for a reopen.
    #[test]
    fn a_compaction_that_fails_leaves_the_store_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let kv = Kv::open(dir.path(), 1 << 20).unwrap();
        kv.insert(b"\x80a".to_vec(), b"1".to_vec()).unwrap();
        let in_the_way = dir.path().join("generation-1");
        std::fs::write(&in_the_way, b"in the way").unwrap();
        let err = kv.compact().unwrap_err();
        assert!(
            matches!(err, StoreError::Io { .. }) && err.to_string().contains("as it was"),
            "{err}"
        );
        kv.insert(b"\x80b".to_vec(), b"2".to_vec()).unwrap();
        assert!(!kv.health().needs_reopen);
        std::fs::remove_file(&in_the_way).unwrap();
        kv.compact().unwrap().expect("on disk");
        assert_eq!(kv.get(b"\x80a").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(kv.get(b"\x80b").unwrap().as_deref(), Some(&b"2"[..]));
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
