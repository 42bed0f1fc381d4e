//! The key-value layer under the store: a sled tree on disk
//! ([`Store::open`](crate::Store::open)), or an ordered map in memory for a
//! throwaway store ([`Store::in_memory`](crate::Store::in_memory)). Every
//! module above it (ingest, queue, policies, refresh, checks) is the same
//! code on either.
//!
//! The memory map keeps sled's semantics where the store relies on them: a
//! [`Batch`] is applied atomically (under the map's write lock), keys are
//! ordered bytewise, ids come from one counter starting at 0, and an
//! iterator sees writes made while it runs (it reads the map in chunks, so
//! it never holds the lock between two items: the store may write during a
//! scan, as it does on sled). What it does not have is durability: it is
//! gone when the store is dropped.
//!
//! Every call into sled goes through [`guard`]: sled panics on some damaged
//! files (an index out of bounds in its segment code when the `db` file is
//! cut short), and such a panic is caught here and becomes
//! [`StoreError::Damaged`], with the default panic message kept off the
//! terminal. Corrupt data sled detects itself (a checksum) becomes the same
//! error. A failed write becomes [`StoreError::WriteFailed`]; on sled, the
//! first failed write also wedges the store (sled refuses every later write
//! until it is reopened), and this layer then refuses reads too, so that
//! what a failed request left in sled's memory is never served.
//!
//! [`Health`] tracks both: damage seen, and the result of the last write.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, RwLock};

use sled::IVec;

use crate::error::StoreError;

thread_local! {
    /// Set while [`guard`] runs sled code on this thread: the panic hook
    /// stays quiet and keeps the message here instead.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that is silent on a thread inside
/// [`guard`] and the previous hook everywhere else.
fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{message}{at}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f` (sled code), a panic caught: `Err` with what it said.
pub(crate) fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_quiet_hook();
    let was = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|_| {
        let said = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| "a panic".to_string());
        format!("sled panicked: {said}")
    })
}

/// What the store's key-value layer has seen go wrong.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Damage seen (a panic or corrupt data while reading).
    damaged: Mutex<Option<String>>,
    /// Why the last write failed; `None` when it succeeded.
    write_failure: Mutex<Option<String>>,
    /// sled failed a write: it refuses every write until reopened.
    wedged: AtomicBool,
    /// Records passed over because they do not decode: how many, and the
    /// key of the first.
    unreadable: Mutex<(u64, Option<String>)>,
}

/// What [`Store::health`](crate::Store::health) reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreHealth {
    /// Damage seen while reading (it does not heal: rebuild the store).
    pub damaged: Option<String>,
    /// Why the last write failed (`None`: it succeeded, or none was made).
    pub write_failure: Option<String>,
    /// A write failed on disk and the store refuses every read and write
    /// until it is reopened (sled's behaviour after an I/O error).
    pub needs_reopen: bool,
    /// Records read and passed over because they do not decode (each read
    /// counts: one record read twice counts twice). The store works
    /// without them; `stats --check` names them all.
    pub unreadable_records: u64,
    /// The key of the first record passed over.
    pub first_unreadable: Option<String>,
}

impl StoreHealth {
    /// Reads and writes work, as far as the store has seen.
    pub fn is_ok(&self) -> bool {
        self.damaged.is_none() && self.write_failure.is_none() && !self.needs_reopen
    }

    /// What is wrong, in a sentence (`None` when all is well).
    pub fn reason(&self) -> Option<String> {
        if let Some(d) = &self.damaged {
            Some(format!("the store is damaged: {d}"))
        } else {
            self.write_failure.as_ref().map(|w| {
                if self.needs_reopen {
                    format!("a write to the store failed ({w}); it refuses writes until reopened")
                } else {
                    format!("the last write to the store failed: {w}")
                }
            })
        }
    }
}

/// The file in a store's directory that says it was closed cleanly: the
/// number its last close wrote under [`keys::CLOSED`](crate::keys::CLOSED).
pub(crate) const CLOSED_FILE: &str = "closed";

/// Marks a clean close of a store on disk, when the last handle of its
/// database is dropped: a number written under `~closed` and flushed, then
/// the same number in the file [`CLOSED_FILE`] beside the database. A store
/// opened again whose database does not hold that number lost writes that
/// were on disk when it was closed: its `db` file was cut short (sled
/// reads a log cut at a message boundary as an older state, with no
/// error). The number is flushed before the file is written (to a
/// temporary name, synced, then renamed), so a crash or a failed write can
/// only leave a file behind the database, never ahead: the open refuses a
/// database that holds less than the file says, and takes a missing or
/// unreadable file for no mark.
pub(crate) struct CloseWitness {
    pub(crate) db: sled::Db,
    pub(crate) tree: sled::Tree,
    pub(crate) dir: std::path::PathBuf,
}

impl Drop for CloseWitness {
    fn drop(&mut self) {
        let mark = || -> Result<u64, sled::Error> {
            let n = self
                .tree
                .get(crate::keys::CLOSED)?
                .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
                .map_or(1, |b| u64::from_be_bytes(b).wrapping_add(1));
            self.tree.insert(crate::keys::CLOSED, &n.to_be_bytes())?;
            self.db.flush()?;
            Ok(n)
        };
        // A store that cannot write (damaged, failing) leaves no mark.
        if let Ok(Ok(n)) = guard(mark) {
            let file = self.dir.join(CLOSED_FILE);
            let temp = self.dir.join(format!("{CLOSED_FILE}.tmp"));
            let written = std::fs::File::create(&temp).and_then(|mut f| {
                std::io::Write::write_all(&mut f, n.to_string().as_bytes())?;
                f.sync_all()
            });
            if written
                .and_then(|()| std::fs::rename(&temp, &file))
                .is_err()
            {
                let _ = std::fs::remove_file(&temp);
            }
        }
    }
}

/// Writes applied together by [`Kv::apply_batch`]: atomically, in order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Batch {
    ops: Vec<(IVec, Option<IVec>)>,
}

impl Batch {
    /// Sets `key` to `value`.
    pub(crate) fn insert<K: Into<IVec>, V: Into<IVec>>(&mut self, key: K, value: V) {
        self.ops.push((key.into(), Some(value.into())));
    }

    /// Removes `key`.
    pub(crate) fn remove<K: Into<IVec>>(&mut self, key: K) {
        self.ops.push((key.into(), None));
    }
}

/// The memory map: values by key (point reads and writes cost a hash, not
/// a walk down a tree of keys that share long prefixes), and the keys in
/// order for scans.
#[derive(Default)]
pub(crate) struct Map {
    values: HashMap<IVec, IVec, rustc_hash::FxBuildHasher>,
    keys: BTreeSet<IVec>,
}

impl Map {
    fn get(&self, key: &[u8]) -> Option<&IVec> {
        self.values.get(key)
    }

    fn insert(&mut self, key: IVec, value: IVec) -> Option<IVec> {
        match self.values.get_mut(key.as_ref()) {
            Some(slot) => Some(std::mem::replace(slot, value)),
            None => {
                self.keys.insert(key.clone());
                self.values.insert(key, value)
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<IVec> {
        let old = self.values.remove(key);
        if old.is_some() {
            self.keys.remove(key);
        }
        old
    }
}

/// The store's key space: a backend, where it is, and its health.
pub(crate) struct Kv {
    backend: Backend,
    /// The store's directory (or `memory`), for errors.
    path: String,
    health: Arc<Health>,
    /// Test-only fault injection: writes left before every write fails
    /// (negative: no limit). See [`Store::inject_write_failures`](crate::Store::inject_write_failures).
    write_budget: AtomicI64,
}

/// Where the keys live.
pub(crate) enum Backend {
    /// On disk.
    Sled {
        /// The database (ids, flush, size).
        db: sled::Db,
        /// The one tree every keyspace lives in.
        tree: sled::Tree,
        /// Marks a clean close when the last handle of the database goes.
        witness: Arc<CloseWitness>,
    },
    /// In memory, gone when dropped.
    Memory {
        /// The keys and values.
        map: RwLock<Map>,
        /// The next id [`Kv::generate_id`] hands out.
        ids: AtomicU64,
    },
}

impl Kv {
    /// An empty map in memory.
    pub(crate) fn memory() -> Kv {
        Kv::new(
            Backend::Memory {
                map: RwLock::new(Map::default()),
                ids: AtomicU64::new(0),
            },
            "memory".to_string(),
        )
    }

    /// A sled tree, of the store at `path`, which `witness` marks closed.
    pub(crate) fn sled(
        db: sled::Db,
        tree: sled::Tree,
        path: String,
        witness: Arc<CloseWitness>,
    ) -> Kv {
        Kv::new(Backend::Sled { db, tree, witness }, path)
    }

    /// Tree `name` of the same database on disk (created if absent), with
    /// a keyspace of its own; in memory, a new empty map (the caller keeps
    /// it).
    /// The sibling shares this key space's health: the trees are one
    /// database on one disk, and a write sled failed in any of them wedges
    /// them all, so a crawl's failed write shows in the store's health.
    pub(crate) fn sibling(&self, name: &str) -> Result<Kv, StoreError> {
        match &self.backend {
            Backend::Sled { db, witness, .. } => {
                let tree = self.read(|| db.open_tree(name))?;
                let mut kv = Kv::sled(
                    db.clone(),
                    tree,
                    format!("{} ({name})", self.path),
                    witness.clone(),
                );
                kv.health = self.health.clone();
                Ok(kv)
            }
            Backend::Memory { .. } => Ok(Kv::memory()),
        }
    }

    /// The names of the database's trees that start with `prefix` (none in
    /// memory).
    pub(crate) fn sibling_names(&self, prefix: &str) -> Vec<String> {
        match &self.backend {
            Backend::Sled { db, .. } => db
                .tree_names()
                .into_iter()
                .filter_map(|n| String::from_utf8(n.to_vec()).ok())
                .filter(|n| n.starts_with(prefix))
                .collect(),
            Backend::Memory { .. } => Vec::new(),
        }
    }

    /// Drops tree `name` of the database, every key in it; whether it was
    /// there (in memory: nothing to drop).
    pub(crate) fn drop_sibling(&self, name: &str) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sled { db, .. } => self.write(|| db.drop_tree(name)),
            Backend::Memory { .. } => Ok(false),
        }
    }

    fn new(backend: Backend, path: String) -> Kv {
        Kv {
            backend,
            path,
            health: Arc::default(),
            write_budget: AtomicI64::new(-1),
        }
    }

    /// The damage error for `detail`, recorded.
    pub(crate) fn damaged(&self, detail: String) -> StoreError {
        *self
            .health
            .damaged
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(detail.clone());
        StoreError::Damaged {
            path: self.path.clone(),
            detail,
        }
    }

    /// A sled error met while reading.
    fn read_error(&self, e: sled::Error) -> StoreError {
        match e {
            sled::Error::Corruption { .. } => self.damaged(e.to_string()),
            e if self.health.wedged.load(Ordering::SeqCst) => self.wedged_error(e.to_string()),
            e => StoreError::Sled(e),
        }
    }

    fn wedged_error(&self, detail: String) -> StoreError {
        StoreError::WriteFailed {
            path: self.path.clone(),
            detail: format!("{detail}; the store refuses reads and writes until it is reopened"),
        }
    }

    /// A read: sled's panics and corruption are [`StoreError::Damaged`].
    fn read<T>(&self, f: impl FnOnce() -> sled::Result<T>) -> Result<T, StoreError> {
        if self.health.wedged.load(Ordering::SeqCst) {
            let why = self.health().write_failure.unwrap_or_default();
            return Err(self.wedged_error(why));
        }
        match guard(f) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.read_error(e)),
            Err(panic) => Err(self.damaged(panic)),
        }
    }

    /// A write: its result is the last write's (see [`Health`]).
    fn write<T>(&self, f: impl FnOnce() -> sled::Result<T>) -> Result<T, StoreError> {
        if self.health.wedged.load(Ordering::SeqCst) {
            let why = self.health().write_failure.unwrap_or_default();
            return Err(self.wedged_error(why));
        }
        let budget = self.write_budget.load(Ordering::SeqCst);
        if budget == 0 {
            return Err(
                self.write_failed("injected fault: no space left on device".to_string(), false)
            );
        }
        if budget > 0 {
            self.write_budget.fetch_sub(1, Ordering::SeqCst);
        }
        match guard(f) {
            Ok(Ok(v)) => {
                *self
                    .health
                    .write_failure
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = None;
                Ok(v)
            }
            Ok(Err(e @ sled::Error::Corruption { .. })) => Err(self.damaged(e.to_string())),
            Ok(Err(e)) => {
                // sled keeps the error and fails every later write with it.
                let wedged = matches!(self.backend, Backend::Sled { .. });
                Err(self.write_failed(e.to_string(), wedged))
            }
            Err(panic) => Err(self.damaged(panic)),
        }
    }

    fn write_failed(&self, detail: String, wedged: bool) -> StoreError {
        *self
            .health
            .write_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(detail.clone());
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
        let (unreadable_records, first_unreadable) = self
            .health
            .unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        StoreHealth {
            damaged: self
                .health
                .damaged
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            write_failure: self
                .health
                .write_failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            needs_reopen: self.health.wedged.load(Ordering::SeqCst),
            unreadable_records,
            first_unreadable,
        }
    }

    /// Notes a record passed over because it does not decode (the first
    /// logged).
    pub(crate) fn passed_over(&self, key: &str) {
        let mut seen = self
            .health
            .unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        seen.0 += 1;
        if seen.1.is_none() {
            tracing::warn!(%key, "a record that does not decode passed over (stats --check names them)");
            seen.1 = Some(key.to_string());
        }
    }

    /// Test-only fault injection: after `writes` more writes, every write
    /// fails (`None`: no limit again).
    pub(crate) fn inject_write_failures(&self, writes: Option<u64>) {
        self.write_budget.store(
            writes.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)),
            Ordering::SeqCst,
        );
    }

    fn lock_read(map: &RwLock<Map>) -> std::sync::RwLockReadGuard<'_, Map> {
        map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_write(map: &RwLock<Map>) -> std::sync::RwLockWriteGuard<'_, Map> {
        map.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `key`.
    pub(crate) fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<IVec>, StoreError> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.read(|| tree.get(key)),
            Backend::Memory { map, .. } => Ok(Self::lock_read(map).get(key.as_ref()).cloned()),
        }
    }

    /// Whether `key` is present.
    pub(crate) fn contains_key<K: AsRef<[u8]>>(&self, key: K) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.read(|| tree.contains_key(key)),
            Backend::Memory { map, .. } => Ok(Self::lock_read(map).get(key.as_ref()).is_some()),
        }
    }

    /// Sets `key` to `value`; the value it had.
    pub(crate) fn insert<K: AsRef<[u8]> + Into<IVec>, V: Into<IVec>>(
        &self,
        key: K,
        value: V,
    ) -> Result<Option<IVec>, StoreError> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.write(|| tree.insert(key, value)),
            Backend::Memory { map, .. } => {
                self.write(|| Ok(Self::lock_write(map).insert(key.into(), value.into())))
            }
        }
    }

    /// Sets `key` to `value` if it is absent (atomically); whether it was.
    pub(crate) fn insert_if_absent<V: Into<IVec>>(
        &self,
        key: Vec<u8>,
        value: V,
    ) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.write(|| {
                let swapped = tree.compare_and_swap(&key, None::<&[u8]>, Some(value))?;
                Ok(swapped.is_ok())
            }),
            Backend::Memory { map, .. } => self.write(|| {
                let mut map = Self::lock_write(map);
                if map.get(key.as_slice()).is_some() {
                    return Ok(false);
                }
                map.insert(key.into(), value.into());
                Ok(true)
            }),
        }
    }

    /// Removes `key`; the value it had.
    pub(crate) fn remove<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<IVec>, StoreError> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.write(|| tree.remove(key)),
            Backend::Memory { map, .. } => {
                self.write(|| Ok(Self::lock_write(map).remove(key.as_ref())))
            }
        }
    }

    /// Applies `batch` atomically (all of it or, on an error, none of it).
    pub(crate) fn apply_batch(&self, batch: Batch) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.write(|| {
                let mut b = sled::Batch::default();
                for (k, v) in batch.ops {
                    match v {
                        Some(v) => b.insert(k, v),
                        None => b.remove(k),
                    }
                }
                tree.apply_batch(b)
            }),
            Backend::Memory { map, .. } => self.write(|| {
                let mut map = Self::lock_write(map);
                for (k, v) in batch.ops {
                    match v {
                        Some(v) => map.insert(k, v),
                        None => map.remove(&k),
                    };
                }
                Ok(())
            }),
        }
    }

    /// The keys from `range.start` (included) to `range.end` (excluded), in
    /// order.
    pub(crate) fn range(&self, range: std::ops::Range<Vec<u8>>) -> Iter<'_> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.sled_iter(|| tree.range(range)),
            Backend::Memory { map, .. } => Iter::Memory(Chunks {
                map,
                from: Bound::Included(range.start),
                end: Bound::Excluded(range.end),
                prefix: None,
                buf: VecDeque::new(),
                done: false,
            }),
        }
    }

    /// The last key (and its value) from `range.start` (included) to
    /// `range.end` (excluded).
    pub(crate) fn last_in(
        &self,
        range: std::ops::Range<Vec<u8>>,
    ) -> Result<Option<(IVec, IVec)>, StoreError> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.read(|| tree.range(range).next_back().transpose()),
            Backend::Memory { map, .. } => {
                let map = Self::lock_read(map);
                let last = map
                    .keys
                    .range::<[u8], _>((
                        Bound::Included(range.start.as_slice()),
                        Bound::Excluded(range.end.as_slice()),
                    ))
                    .next_back()
                    .cloned();
                Ok(last.and_then(|k| map.get(&k).cloned().map(|v| (k, v))))
            }
        }
    }

    /// The keys starting with `prefix`, in order.
    pub(crate) fn scan_prefix<P: AsRef<[u8]>>(&self, prefix: P) -> Iter<'_> {
        match &self.backend {
            Backend::Sled { tree, .. } => self.sled_iter(|| tree.scan_prefix(prefix)),
            Backend::Memory { map, .. } => Iter::Memory(Chunks {
                map,
                from: Bound::Included(prefix.as_ref().to_vec()),
                end: Bound::Unbounded,
                prefix: Some(prefix.as_ref().to_vec()),
                buf: VecDeque::new(),
                done: false,
            }),
        }
    }

    fn sled_iter(&self, make: impl FnOnce() -> sled::Iter) -> Iter<'_> {
        if self.health.wedged.load(Ordering::SeqCst) {
            let why = self.health().write_failure.unwrap_or_default();
            return Iter::Failed(Some(self.wedged_error(why)));
        }
        match guard(make) {
            Ok(it) => Iter::Sled { it, kv: self },
            Err(panic) => Iter::Failed(Some(self.damaged(panic))),
        }
    }

    /// A new id, never handed out before by this store.
    pub(crate) fn generate_id(&self) -> Result<u64, StoreError> {
        match &self.backend {
            Backend::Sled { db, .. } => self.write(|| db.generate_id()),
            Backend::Memory { ids, .. } => Ok(ids.fetch_add(1, Ordering::SeqCst)),
        }
    }

    /// Writes everything to disk now (in memory: nothing to do).
    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sled { db, .. } => self.write(|| db.flush().map(|_| ())),
            Backend::Memory { .. } => self.write(|| Ok(())),
        }
    }

    /// Bytes on disk (in memory: the keys and values held).
    pub(crate) fn size_on_disk(&self) -> Result<u64, StoreError> {
        match &self.backend {
            Backend::Sled { db, .. } => self.read(|| db.size_on_disk()),
            Backend::Memory { map, .. } => Ok(Self::lock_read(map)
                .values
                .iter()
                .map(|(k, v)| (k.len() + v.len()) as u64)
                .sum()),
        }
    }
}

/// Items read from the map per lock.
const CHUNK: usize = 64;

/// An iterator over part of the memory map, read [`CHUNK`] items at a time.
pub(crate) struct Chunks<'a> {
    map: &'a RwLock<Map>,
    /// Where the next chunk starts.
    from: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    /// Keys must start with this (a prefix scan).
    prefix: Option<Vec<u8>>,
    buf: VecDeque<(IVec, IVec)>,
    done: bool,
}

impl Chunks<'_> {
    fn fill(&mut self) {
        let map = Kv::lock_read(self.map);
        let bounds: (Bound<&[u8]>, Bound<&[u8]>) =
            (as_slice_bound(&self.from), as_slice_bound(&self.end));
        // An empty range (start past end) yields nothing, as on sled.
        if let (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e)) = bounds
            && s >= e
        {
            self.done = true;
            return;
        }
        for k in map.keys.range::<[u8], _>(bounds) {
            if self
                .prefix
                .as_ref()
                .is_some_and(|p| !k.starts_with(p.as_slice()))
            {
                self.done = true;
                break;
            }
            if let Some(v) = map.get(k) {
                self.buf.push_back((k.clone(), v.clone()));
            }
            if self.buf.len() >= CHUNK {
                break;
            }
        }
        match self.buf.back() {
            Some((k, _)) if self.buf.len() >= CHUNK => self.from = Bound::Excluded(k.to_vec()),
            _ => self.done = true,
        }
    }
}

fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Iterator for Chunks<'_> {
    type Item = Result<(IVec, IVec), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() && !self.done {
            self.fill();
        }
        self.buf.pop_front().map(Ok)
    }
}

/// An iterator over keys and values, in key order. An error (damage met
/// on the way) ends it.
pub(crate) enum Iter<'a> {
    /// sled's, each step guarded.
    Sled {
        /// The iterator.
        it: sled::Iter,
        /// Its store, for errors and health.
        kv: &'a Kv,
    },
    /// The memory map's.
    Memory(Chunks<'a>),
    /// An error to report, then nothing.
    Failed(Option<StoreError>),
}

impl Iterator for Iter<'_> {
    type Item = Result<(IVec, IVec), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Sled { it, kv } => {
                let kv: &Kv = kv;
                match kv.read(|| it.next().transpose()) {
                    Ok(item) => item.map(Ok),
                    Err(e) => {
                        *self = Iter::Failed(None);
                        Some(Err(e))
                    }
                }
            }
            Iter::Memory(it) => it.next(),
            Iter::Failed(e) => e.take().map(Err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(it: Iter<'_>) -> Vec<Vec<u8>> {
        it.map(|r| r.unwrap().0.to_vec()).collect()
    }

    /// The memory map answers as sled does: point reads, batches, ordered
    /// range and prefix scans across chunk boundaries, ids.
    #[test]
    fn memory_behaves_like_sled() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        let tree = db.open_tree("t").unwrap();
        let witness = Arc::new(CloseWitness {
            db: db.clone(),
            tree: tree.clone(),
            dir: dir.path().to_path_buf(),
        });
        let both = [Kv::sled(db, tree, "t".into(), witness), Kv::memory()];
        for kv in &both {
            for i in 0..300u32 {
                let prefix = if i % 3 == 0 { b'a' } else { b'b' };
                let mut k = vec![prefix];
                k.extend_from_slice(&i.to_be_bytes());
                kv.insert(k, i.to_string().as_bytes()).unwrap();
            }
            let mut batch = Batch::default();
            batch.insert(b"c1".to_vec(), b"x".to_vec());
            batch.remove(b"c1".to_vec());
            batch.insert(b"c2".to_vec(), b"y".to_vec());
            batch.remove(vec![b'a', 0, 0, 0, 3]);
            kv.apply_batch(batch).unwrap();
            assert_eq!(kv.get(b"c1").unwrap(), None);
            assert_eq!(kv.get(b"c2").unwrap().unwrap().as_ref(), b"y");
            assert!(!kv.contains_key([b'a', 0, 0, 0, 3]).unwrap());
            assert!(kv.insert_if_absent(b"c3".to_vec(), b"z".to_vec()).unwrap());
            assert!(!kv.insert_if_absent(b"c3".to_vec(), b"w".to_vec()).unwrap());
            assert_eq!(kv.get(b"c3").unwrap().unwrap().as_ref(), b"z");
            assert_eq!(kv.remove(b"c3").unwrap().unwrap().as_ref(), b"z");
            assert_eq!(kv.generate_id().unwrap(), 0);
            assert_eq!(kv.generate_id().unwrap(), 1);
        }
        let [sled, memory] = &both;
        assert_eq!(
            keys(sled.scan_prefix([b'a'])),
            keys(memory.scan_prefix([b'a']))
        );
        assert_eq!(keys(memory.scan_prefix([b'a'])).len(), 99);
        let range = vec![b'a', 0, 0, 0, 30]..vec![b'b', 0, 0, 0, 200];
        assert_eq!(keys(sled.range(range.clone())), keys(memory.range(range)));
        assert!(keys(memory.range(b"c".to_vec()..b"a".to_vec())).is_empty());
        assert!(keys(memory.range(b"c".to_vec()..b"c".to_vec())).is_empty());
        // Writes while a scan runs (it holds no lock between items): keys
        // removed ahead of it are not returned once their chunk is read.
        let mut seen = 0;
        for item in memory.scan_prefix([b'b']) {
            let (k, _) = item.unwrap();
            memory.remove(&k).unwrap();
            seen += 1;
        }
        assert_eq!(seen, 200);
        assert!(keys(memory.scan_prefix([b'b'])).is_empty());
    }
}
