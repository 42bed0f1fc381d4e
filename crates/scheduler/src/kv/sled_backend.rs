//! The on-disk backend: one sled database in the store's directory (or in
//! the `generation-N` directory a compaction wrote, [`super::generations`]),
//! the store's keyspace in its tree `sitemapd` and each sibling keyspace in
//! a tree of its own. Opening it checks what sled does not: a store whose
//! files lost their data, or their last writes, is refused as damaged.
//!
//! sled 0.34 does not give back the space of what it rewrites: a store
//! being crawled grows without bound. [`Backend::compact`] copies the live
//! data into a fresh database while reads and writes go on (the writes also
//! captured, [`super::capture`]), applies the writes captured during the
//! copy to it while writers still go on (theirs captured apart), then,
//! writers waiting, applies those made during that catch-up and switches to
//! the copy ([`super::generations`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use bytes::Bytes;

use super::backend::{Backend, BackendError, Compacted, Entries, Ops};
use super::capture::{self, Capture};
use super::generations::{self, CLOSED_FILE, Named};
use super::health::{guard, locked};
use super::sled_atomic;
use crate::error::StoreError;
use crate::keys;

/// The tree of the store's own keyspace.
const TREE: &str = "sitemapd";

/// The file in a copy's directory that captures the writes made while the
/// copy is made.
const CAPTURED: &str = "writes-during-copy";
/// The file of the writes made while those of [`CAPTURED`] go into the copy.
const CAPTURED_LATE: &str = "writes-during-catch-up";

/// sled's default tree, which the store does not use.
const DEFAULT_TREE: &[u8] = b"__sled__default";

/// The most bytes of keys and values a compaction copies in one batch:
/// sled writes the smallest copy in batches of about this size (5.7 MB of
/// keys and values took 13.6 MB in batches of 64 KiB, 19.7 MB in batches of
/// 4 MiB, 16.8 MB one insert at a time).
const COPY_BATCH_BYTES: usize = 64 << 10;

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

/// A store's database on disk, shared by every handle on its trees.
struct Database {
    root: PathBuf,
    /// Set when a compaction could not confirm its switch (the file that
    /// names the generation may or may not name the copy): writes are
    /// refused until the store is opened again, which reads what is named.
    unconfirmed: AtomicBool,
    cache_bytes: u64,
    /// The generation in use.
    current: RwLock<Arc<Generation>>,
    /// The trees the handles hold, which a compaction moves to the new
    /// generation.
    handles: Mutex<Vec<Weak<RwLock<OpenTree>>>>,
    /// Held (shared) by every write, taken (alone) by a compaction to start
    /// capturing writes and to switch.
    writes: RwLock<()>,
    /// The writes a compaction's copy is to be given ([`capture`]), while
    /// it copies.
    capture: Mutex<Option<Capture>>,
    capturing: AtomicBool,
    /// Held for the whole of a compaction: one at a time.
    compacting: Mutex<()>,
    /// Numbers the batch records of every tree ([`sled_atomic`]).
    batches: AtomicU64,
    /// The trees whose batch records were replayed in this process: a tree
    /// is replayed when first opened only, never while another handle on it
    /// writes (the record of a batch in flight is not one a crash left).
    replayed: Mutex<HashSet<String>>,
    /// Whether batches go through [`sled_atomic`] (a store of several
    /// partitions: side by side) rather than sled's own `apply_batch` (one
    /// at a time in the process, each written once).
    side_by_side: AtomicBool,
    /// The store's lock ([`generations::lock`]), held while it is open:
    /// the last field, so let go of after the database is closed.
    _lock: std::fs::File,
}

/// One sled database of a store: the one in use, or one a compaction
/// replaced that a reader still holds.
struct Generation {
    /// Taken when it is dropped, before its files are removed.
    db: Option<sled::Db>,
    named: Named,
    root: PathBuf,
    /// Replaced by a newer one: its files go with its last handle.
    retired: AtomicBool,
}

impl Generation {
    fn db(&self) -> &sled::Db {
        self.db
            .as_ref()
            .expect("a generation holds its database until dropped")
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        drop(self.db.take());
        if self.retired.load(Ordering::SeqCst) {
            generations::remove(&self.root, self.named.number);
        }
    }
}

/// A handle's tree, in the generation in use (or, for a tree a
/// compaction did not copy, the one it was opened in).
#[derive(Clone)]
struct OpenTree {
    // Dropped before the generation it belongs to.
    tree: sled::Tree,
    generation: Arc<Generation>,
}

/// A sled tree of the store's database.
pub(crate) struct Sled {
    shared: Arc<Database>,
    open: Arc<RwLock<OpenTree>>,
}

fn io_error(e: std::io::Error) -> BackendError {
    BackendError::Io(e.to_string())
}

fn error(e: sled::Error) -> BackendError {
    match e {
        sled::Error::Corruption { .. } => BackendError::Corrupt(e.to_string()),
        e => BackendError::Io(e.to_string()),
    }
}

fn config(dir: &Path, cache_bytes: u64) -> sled::Config {
    sled::Config::new()
        .path(dir)
        .cache_capacity(cache_bytes)
        .flush_every_ms(Some(1000))
}

/// Opens (or creates) the database in directory `path` with a page cache
/// of `cache_bytes`.
pub(crate) fn open(path: &Path, cache_bytes: u64) -> Result<Sled, StoreError> {
    let shown = path.display().to_string();
    let damaged = |detail: String| StoreError::Damaged {
        path: shown.clone(),
        detail,
    };
    // Held before the generation is read: no other process switches it.
    let lock = generations::lock(path).map_err(|e| match e {
        generations::LockError::InUse => StoreError::InUse(shown.clone()),
        generations::LockError::Io(e) => StoreError::Io {
            path: shown.clone(),
            detail: e.to_string(),
        },
    })?;
    let named = generations::named(path).map_err(&damaged)?;
    let db = open_generation(path, generations::dir(path, named.number), cache_bytes)?;
    generations::remove_all_but(path, named.number);
    let tree = guard("sled", || db.open_tree(TREE))
        .map_err(&damaged)?
        .map_err(|e| failed(&shown, e))?;
    // Batches a crash cut short, whole again before anything reads.
    let next_batch = guard("sled", || sled_atomic::replay(&tree))
        .map_err(&damaged)?
        .map_err(|e| failed(&shown, e))?;
    guard("sled", || seed_ids(&db, &tree))
        .map_err(&damaged)?
        .map_err(|e| failed(&shown, e))?;
    let generation = Arc::new(Generation {
        db: Some(db),
        named,
        root: path.to_path_buf(),
        retired: AtomicBool::new(false),
    });
    let shared = Arc::new(Database {
        root: path.to_path_buf(),
        _lock: lock,
        unconfirmed: AtomicBool::new(false),
        cache_bytes,
        current: RwLock::new(generation.clone()),
        handles: Mutex::default(),
        writes: RwLock::new(()),
        capture: Mutex::default(),
        capturing: AtomicBool::new(false),
        compacting: Mutex::new(()),
        batches: AtomicU64::new(next_batch),
        replayed: Mutex::default(),
        side_by_side: AtomicBool::new(false),
    });
    Ok(Sled::handle(&shared, OpenTree { tree, generation }))
}

fn failed(shown: &str, e: sled::Error) -> StoreError {
    match e {
        e @ sled::Error::Corruption { .. } => StoreError::Damaged {
            path: shown.to_string(),
            detail: e.to_string(),
        },
        e => StoreError::Io {
            path: shown.to_string(),
            detail: e.to_string(),
        },
    }
}

/// Opens the database of one generation, in directory `dir` of the store
/// in `path`, refusing one that lost its data or its last writes.
fn open_generation(path: &Path, dir: PathBuf, cache_bytes: u64) -> Result<sled::Db, StoreError> {
    // A store opened before holds at least its layout key (written and
    // flushed at the first open). A `db` file with data behind an empty
    // tree is a store that lost its contents: sled opens a `db` cut short
    // as an empty tree, without an error.
    let had_data = std::fs::metadata(dir.join("db")).is_ok_and(|m| m.len() > 0)
        && std::fs::metadata(dir.join("conf")).is_ok();
    let config = config(&dir, cache_bytes);
    let shown = path.display().to_string();
    let damaged = |detail: String| StoreError::Damaged {
        path: shown.clone(),
        detail,
    };
    // A store closed a moment ago keeps its lock until sled's flusher
    // thread ends (up to its 1 s tick): wait that long before calling it
    // in use.
    let mut tries = 0;
    let db = loop {
        // sled panics on some damaged files (a `db` cut short): caught.
        match guard("sled", || config.open()).map_err(&damaged)? {
            Ok(db) => break db,
            Err(sled::Error::Io(io)) if io.to_string().contains("could not acquire lock") => {
                tries += 1;
                if tries > 30 {
                    return Err(StoreError::InUse(shown));
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => return Err(failed(&shown, e)),
        }
    };
    let tree = guard("sled", || db.open_tree(TREE))
        .map_err(&damaged)?
        .map_err(|e| failed(&shown, e))?;
    let layout = guard("sled", || tree.get(keys::LAYOUT)).map_err(&damaged)?;
    if had_data && matches!(layout, Ok(None)) && tree.is_empty() {
        return Err(damaged(
            "its files are there but hold no data: the db file was cut short or emptied".into(),
        ));
    }
    let mark = std::fs::read_to_string(dir.join(CLOSED_FILE))
        .ok()
        .and_then(|m| m.trim().parse::<u64>().ok());
    if let Some(mark) = mark {
        let held = guard("sled", || tree.get(keys::CLOSED))
            .map_err(&damaged)?
            .ok()
            .flatten()
            .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
            .map(u64::from_be_bytes);
        if held.is_none_or(|n| n < mark) {
            return Err(damaged(format!(
                "it was closed cleanly with mark {mark}, but its files end before that mark \
                 (they hold {}): the db file was cut short or lost its last writes",
                held.map_or("none".to_string(), |n| n.to_string())
            )));
        }
    }
    Ok(db)
}

#[cfg(test)]
impl Sled {
    /// The database, for tests that write behind the backend's back.
    pub(crate) fn db_for_tests(&self) -> sled::Db {
        read(&self.shared.current).db().clone()
    }
}

/// Gives a tree written by an older build its id counter ([`keys::IDS`]):
/// its ids came from sled's database-wide generator, whose next id is
/// past every one it handed out. A new or empty tree starts at 0.
fn seed_ids(db: &sled::Db, tree: &sled::Tree) -> Result<(), sled::Error> {
    if tree.is_empty() || tree.contains_key(keys::IDS)? {
        return Ok(());
    }
    let next = db.generate_id()?;
    tree.insert(keys::IDS, &next.to_be_bytes())?;
    Ok(())
}

impl Sled {
    /// A handle on `tree`, which compactions move along.
    fn handle(shared: &Arc<Database>, tree: OpenTree) -> Sled {
        let open = Arc::new(RwLock::new(tree));
        let mut handles = locked(&shared.handles);
        handles.retain(|h| h.strong_count() > 0);
        handles.push(Arc::downgrade(&open));
        Sled {
            shared: shared.clone(),
            open,
        }
    }

    /// The tree, held (no copy of the handle per call) while one read or
    /// write uses it; a compaction moving the handle waits for that. A scan
    /// takes a copy instead: one that began before a switch goes on over the
    /// old files, not seeing writes made after it.
    fn open(&self) -> RwLockReadGuard<'_, OpenTree> {
        read(&self.open)
    }

    /// Refused after a compaction whose switch could not be confirmed.
    fn writable(&self) -> Result<(), BackendError> {
        if self.shared.unconfirmed.load(Ordering::SeqCst) {
            return Err(BackendError::Io(
                "a compaction could not confirm its switch to the copy: writes are refused until \
                 the store is opened again"
                    .into(),
            ));
        }
        Ok(())
    }

    fn current(&self) -> Arc<Generation> {
        read(&self.shared.current).clone()
    }
}

/// A compaction begun: writes are being captured for its copy.
struct Started {
    /// The generation in use, the one copied.
    old: Arc<Generation>,
    /// The copy's number, and its directory.
    number: u64,
    dir: PathBuf,
    /// The bytes the store's files took.
    before: u64,
    /// How long writers waited for it to begin.
    waited: std::time::Duration,
}

impl Database {
    /// Copies every tree of the generation in use into a fresh one while
    /// reads and writes go on (the writes captured), catches it up with
    /// them while writers go on, then, writers waiting, with the writes made
    /// during the catch-up, and switches to it.
    fn compact(&self) -> Result<Compacted, BackendError> {
        let _one = locked(&self.compacting);
        let Started {
            old,
            number,
            dir,
            before,
            mut waited,
        } = self.start_capture()?;
        // The copy, while reads and writes go on (the writes captured).
        let copied = self.copy_into(old.db(), &dir);
        // The writes captured during the copy go into it while writers go
        // on, theirs captured apart: what writers wait for below is the
        // writes of this catch-up only, not of the whole copy.
        let caught_up = copied.and_then(|db| {
            let swapping = std::time::Instant::now();
            let during_copy = self.capture_apart(&dir.join(CAPTURED_LATE))?;
            waited += swapping.elapsed();
            let replayed = replay_and_remove(&during_copy, &db)?;
            // The copy on disk now: what is flushed while writers wait is
            // the catch-up's writes only.
            db.flush().map_err(|e| BackendError::Io(e.to_string()))?;
            Ok((db, replayed))
        });
        // Writers wait from here: the writes captured since go into the
        // copy, then the switch.
        let alone = write(&self.writes);
        let switching = std::time::Instant::now();
        self.capturing.store(false, Ordering::SeqCst);
        let capture = locked(&self.capture).take();
        let caught_up = caught_up.and_then(|(db, replayed)| {
            let captured = capture
                .ok_or_else(|| BackendError::Io("the capture was lost".into()))?
                .finish()
                .map_err(io_error)?;
            let replayed = replayed + replay_and_remove(&captured, &db)?;
            db.flush().map_err(|e| BackendError::Io(e.to_string()))?;
            generations::sync_all(&dir).map_err(io_error)?;
            let written = db
                .size_on_disk()
                .map_err(|e| BackendError::Io(e.to_string()))?;
            Ok((db, written, replayed))
        });
        let (db, written, captured) = match caught_up {
            Ok(done) => done,
            Err(e) => {
                generations::remove(&self.root, number);
                return Err(e);
            }
        };
        let named = Named {
            number,
            written: Some(written),
        };
        let mut confirmed = true;
        if let Err(e) = generations::name(&self.root, named) {
            // The rename may have happened and only a sync failed: what the
            // directory names is what a reopen uses.
            match generations::named(&self.root) {
                Ok(now) if now == named => {
                    tracing::error!(error = %e, "the switch to a compacted copy may not be durable: writes are refused until the store is opened again");
                    confirmed = false;
                }
                Ok(_) => {
                    drop(db);
                    generations::remove(&self.root, number);
                    return Err(BackendError::Io(format!(
                        "the compacted copy was not switched to: {e}"
                    )));
                }
                Err(unread) => {
                    // Both kept: the next open reads whichever is named.
                    self.unconfirmed.store(true, Ordering::SeqCst);
                    return Err(BackendError::Io(format!(
                        "the switch to a compacted copy cannot be confirmed ({e}; {unread}): writes \
                         are refused until the store is opened again"
                    )));
                }
            }
        }
        let generation = Arc::new(Generation {
            db: Some(db),
            named,
            root: self.root.clone(),
            retired: AtomicBool::new(false),
        });
        *write(&self.current) = generation.clone();
        if confirmed {
            old.retired.store(true, Ordering::SeqCst);
        } else {
            // Both files kept, for whichever the next open finds named.
            self.unconfirmed.store(true, Ordering::SeqCst);
        }
        // Every handle to its tree in the copy (one made while the copy was
        // made is created there). A tree dropped while a handle on it stayed
        // keeps its handle on the old files until the handle goes, rather
        // than come back in the new ones.
        let live: HashSet<sled::IVec> = old.db().tree_names().into_iter().collect();
        for handle in locked(&self.handles).iter().filter_map(Weak::upgrade) {
            let mut open = write(&handle);
            let name = open.tree.name();
            if !live.contains(&name) {
                continue;
            }
            match generation.db().open_tree(&name) {
                Ok(tree) => {
                    *open = OpenTree {
                        tree,
                        generation: generation.clone(),
                    }
                }
                // Its writes are refused (see `apply`) until it is opened
                // again: none goes to the old files.
                Err(e) => tracing::error!(error = %e, "a tree was not moved to the compacted copy"),
            }
        }
        // Writers go on now, not after the old database is closed and its
        // files removed (when its last reader is done, maybe this `old`).
        waited += switching.elapsed();
        drop(alone);
        drop(old);
        Ok(Compacted {
            before,
            after: written,
            writes_waited: waited,
            captured,
        })
    }

    /// Writers waiting a moment: checks that a copy may be made, and starts
    /// capturing the writes for it.
    fn start_capture(&self) -> Result<Started, BackendError> {
        // The generation in use: only a compaction changes it, and they run
        // one at a time.
        let old = read(&self.current).clone();
        // What sled holds unwritten goes to disk before the copy takes
        // space (a write failing for room later would stop the store);
        // before writers wait, as the copy reads what is unwritten too.
        old.db().flush().map_err(error)?;
        let alone = write(&self.writes);
        let waiting = std::time::Instant::now();
        if self.unconfirmed.load(Ordering::SeqCst) {
            return Err(BackendError::Io(
                "a compaction's switch is unconfirmed".into(),
            ));
        }
        let before = old.db().size_on_disk().map_err(error)?;
        let free = generations::available(&self.root).map_err(io_error)?;
        if free < before.saturating_add(before / 4) {
            return Err(BackendError::Io(format!(
                "{free} bytes free, and a copy of the {before} bytes of the store's files may need \
                 as much and a quarter more"
            )));
        }
        let number = old.named.number + 1;
        let dir = generations::dir(&self.root, number);
        // Left by a compaction a failure cut short in this process.
        generations::remove(&self.root, number);
        let capture = std::fs::create_dir_all(&dir)
            .and_then(|()| Capture::create(&dir.join(CAPTURED)))
            .map_err(|e| {
                generations::remove(&self.root, number);
                io_error(e)
            })?;
        *locked(&self.capture) = Some(capture);
        self.capturing.store(true, Ordering::SeqCst);
        let waited = waiting.elapsed();
        drop(alone);
        Ok(Started {
            old,
            number,
            dir,
            before,
            waited,
        })
    }

    /// Writers waiting a moment: the writes from now on are captured in a
    /// new file at `path`; the file of those captured so far, complete.
    fn capture_apart(&self, path: &Path) -> Result<PathBuf, BackendError> {
        let _alone = write(&self.writes);
        let next = Capture::create(path).map_err(io_error)?;
        locked(&self.capture)
            .replace(next)
            .ok_or_else(|| BackendError::Io("the capture was lost".into()))?
            .finish()
            .map_err(io_error)
    }

    /// A fresh database in `dir` holding every tree of `from` as the copy
    /// reads it (the writes made meanwhile are captured).
    fn copy_into(&self, from: &sled::Db, dir: &Path) -> Result<sled::Db, BackendError> {
        // The copy's own failures (room, I/O) say nothing of the store's
        // files: an I/O error whatever sled calls it.
        let to_io = |e: sled::Error| BackendError::Io(e.to_string());
        // sled's batches turn on its lock for the whole process (see
        // `sled_atomic`): a store whose batches run side by side copies with
        // single inserts (a copy about a fifth larger).
        let batches = !self.side_by_side.load(Ordering::Relaxed);
        let db = config(dir, self.cache_bytes).open().map_err(to_io)?;
        for name in from.tree_names() {
            if name == DEFAULT_TREE {
                continue;
            }
            let source = from.open_tree(&name).map_err(error)?;
            // Its counter, before the copy leaves sled's generator behind.
            seed_ids(from, &source).map_err(error)?;
            let target = db.open_tree(&name).map_err(to_io)?;
            let mut batch = sled::Batch::default();
            let mut bytes = 0;
            for item in source.iter() {
                let (k, v) = item.map_err(error)?;
                // The record of a batch being applied: its writes are
                // captured, and a record left in the copy would be
                // applied again, over later writes, at the next open.
                if k.starts_with(sled_atomic::PREFIX) {
                    continue;
                }
                if !batches {
                    target.insert(k, v).map_err(to_io)?;
                    continue;
                }
                bytes += k.len() + v.len();
                batch.insert(k, v);
                if bytes >= COPY_BATCH_BYTES {
                    target
                        .apply_batch(std::mem::take(&mut batch))
                        .map_err(to_io)?;
                    bytes = 0;
                }
            }
            if batches {
                target.apply_batch(batch).map_err(to_io)?;
            }
        }
        Ok(db)
    }
}

/// Applies the writes captured in `path` to `db`, then removes the file:
/// how many there were.
fn replay_and_remove(path: &Path, db: &sled::Db) -> Result<u64, BackendError> {
    let replayed = capture::replay(path, db).map_err(BackendError::Io)?;
    std::fs::remove_file(path).map_err(io_error)?;
    Ok(replayed)
}

impl Backend for Sled {
    fn name(&self) -> &'static str {
        "sled"
    }

    fn get(&self, key: &[u8]) -> Result<Option<Bytes>, BackendError> {
        Ok(self
            .open()
            .tree
            .get(key)
            .map_err(error)?
            .map(Bytes::from_owner))
    }

    fn apply(&self, ops: Ops) -> Result<(), BackendError> {
        let _writing = read(&self.shared.writes);
        self.writable()?;
        let open = self.open();
        if open.generation.retired.load(Ordering::SeqCst) {
            return Err(BackendError::Io(
                "its tree is in a database a compaction replaced (dropped, or not moved)".into(),
            ));
        }
        let captured = self
            .shared
            .capturing
            .load(Ordering::SeqCst)
            .then(|| sled_atomic::encode(&ops));
        if self.shared.side_by_side.load(Ordering::Relaxed) {
            sled_atomic::apply(&open.tree, &self.shared.batches, ops).map_err(error)?;
        } else {
            let mut batch = sled::Batch::default();
            for (k, v) in ops {
                match v {
                    Some(v) => batch.insert(k, v),
                    None => batch.remove(k),
                }
            }
            open.tree.apply_batch(batch).map_err(error)?;
        }
        if let Some(encoded) = captured
            && let Some(capture) = locked(&self.shared.capture).as_mut()
        {
            capture.batch(&open.tree.name(), &encoded);
        }
        Ok(())
    }

    fn range(&self, start: Vec<u8>, end: Option<Vec<u8>>) -> Entries<'_> {
        // Owned: the iterator outlives this call.
        let open = self.open().clone();
        let it = match end {
            Some(end) => open.tree.range(start..end),
            None => open.tree.range(start..),
        };
        // The iterator keeps its generation's files until it ends.
        let generation = open.generation;
        Box::new(it.map(move |item| {
            let _files = &generation;
            item.map(|(k, v)| (Bytes::from_owner(k), Bytes::from_owner(v)))
                .map_err(error)
        }))
    }

    fn last_in(&self, start: &[u8], end: &[u8]) -> Result<Option<(Bytes, Bytes)>, BackendError> {
        if start >= end {
            return Ok(None);
        }
        Ok(self
            .open()
            .tree
            .range(start..end)
            .next_back()
            .transpose()
            .map_err(error)?
            .map(|(k, v)| (Bytes::from_owner(k), Bytes::from_owner(v))))
    }

    fn flush(&self) -> Result<(), BackendError> {
        self.current().db().flush().map(|_| ()).map_err(error)
    }

    fn size(&self) -> Result<u64, BackendError> {
        self.current().db().size_on_disk().map_err(error)
    }

    fn keyspace(&self, name: &str) -> Result<Box<dyn Backend>, BackendError> {
        // Creating a tree is a write.
        let _writing = read(&self.shared.writes);
        self.writable()?;
        let generation = self.current();
        let tree = generation.db().open_tree(name).map_err(error)?;
        if locked(&self.shared.replayed).insert(name.to_string()) {
            let next = sled_atomic::replay(&tree).map_err(error)?;
            self.shared.batches.fetch_max(next, Ordering::Relaxed);
        }
        seed_ids(generation.db(), &tree).map_err(error)?;
        Ok(Box::new(Sled::handle(
            &self.shared,
            OpenTree { tree, generation },
        )))
    }

    fn keyspace_names(&self) -> Vec<String> {
        self.current()
            .db()
            .tree_names()
            .into_iter()
            .filter_map(|n| String::from_utf8(n.to_vec()).ok())
            .filter(|n| n != TREE && n.as_bytes() != DEFAULT_TREE)
            .collect()
    }

    fn drop_keyspace(&self, name: &str) -> Result<bool, BackendError> {
        let _writing = read(&self.shared.writes);
        self.writable()?;
        let dropped = self.current().db().drop_tree(name).map_err(error)?;
        if let Some(capture) = locked(&self.shared.capture).as_mut() {
            capture.dropped(name.as_bytes());
        }
        Ok(dropped)
    }

    fn durable(&self) -> bool {
        true
    }

    fn batches_side_by_side(&self) {
        self.shared.side_by_side.store(true, Ordering::Relaxed);
    }

    fn wedges_on_write_failure(&self) -> bool {
        true
    }

    fn compact(&self) -> Result<Option<Compacted>, BackendError> {
        self.shared.compact().map(Some).map_err(|e| match e {
            // The files in use are as they were: the copy failed.
            BackendError::Io(detail) => BackendError::Io(format!(
                "the compaction failed, the store is as it was: {detail}"
            )),
            corrupt => corrupt,
        })
    }

    fn compacted_size(&self) -> Option<u64> {
        self.current().named.written
    }
}

/// Marks a clean close of a store on disk, when the last handle of its
/// database is dropped: a number written under [`keys::CLOSED`] and
/// flushed, then the same number in the file [`CLOSED_FILE`] beside the
/// database. A store opened again whose database does not hold that
/// number lost writes that were on disk when it was closed: its `db` file
/// was cut short (sled reads a log cut at a message boundary as an older
/// state, with no error). The number is flushed before the file is
/// written (to a temporary name, synced, then renamed), so a crash or a
/// failed write can only leave a file behind the database, never ahead:
/// the open refuses a database that holds less than the file says, and
/// takes a missing or unreadable file for no mark.
impl Drop for Database {
    fn drop(&mut self) {
        let generation = read(&self.current).clone();
        let mark = || -> Result<u64, sled::Error> {
            let tree = generation.db().open_tree(TREE)?;
            let n = tree
                .get(keys::CLOSED)?
                .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
                .map_or(1, |b| u64::from_be_bytes(b).wrapping_add(1));
            tree.insert(keys::CLOSED, &n.to_be_bytes())?;
            generation.db().flush()?;
            Ok(n)
        };
        // A store that cannot write (damaged, failing) leaves no mark.
        if let Ok(Ok(n)) = guard("sled", mark) {
            let dir = generations::dir(&self.root, generation.named.number);
            let file = dir.join(CLOSED_FILE);
            let temp = dir.join(format!("{CLOSED_FILE}.tmp"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// A record found when a keyspace is opened again in the same process
    /// belongs to a batch another handle is writing: it is left to that
    /// writer (replaying it could undo the writer's next batch). Here a
    /// record that does not decode, which a replay would call damage.
    #[test]
    fn a_tree_is_replayed_on_its_first_open_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 1 << 20).unwrap();
        let first = store.keyspace("t").unwrap();
        first
            .apply(vec![(b"a".to_vec(), Some(b"1".to_vec()))])
            .unwrap();
        let db = store.db_for_tests().clone();
        db.open_tree("t")
            .unwrap()
            .insert(
                [sled_atomic::PREFIX, &3u64.to_be_bytes()[..]].concat(),
                &[9u8][..],
            )
            .unwrap();
        assert!(store.keyspace("t").is_ok(), "not replayed again");
        drop((first, store, db));
        let reopened = open(dir.path(), 1 << 20).unwrap();
        assert!(
            reopened.keyspace("t").is_err(),
            "replayed when the database is opened again: the record does not decode"
        );
    }

    /// Every key and value but the id counter (which the copy gives a
    /// tree written without one, as an open does) and the close mark.
    fn all(b: &dyn Backend) -> Vec<(Bytes, Bytes)> {
        b.range(Vec::new(), None)
            .map(Result::unwrap)
            .filter(|(k, _)| k.as_ref() != keys::IDS && k.as_ref() != keys::CLOSED)
            .collect()
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    /// A compaction keeps every key of every tree, the handles open on
    /// them go on reading and writing the new files, the old files go,
    /// and a reopen reads the new ones.
    #[test]
    fn a_compaction_keeps_every_tree_and_moves_every_handle() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 1 << 20).unwrap();
        let crawl = store.keyspace("crawl").unwrap();
        // Churn: every key written many times over.
        for round in 0..20u32 {
            let ops = (0..500u32)
                .map(|i| (i.to_be_bytes().to_vec(), Some(vec![round as u8; 100])))
                .collect();
            store.apply(ops).unwrap();
            crawl
                .apply(vec![(b"c".to_vec(), Some(round.to_be_bytes().to_vec()))])
                .unwrap();
        }
        store.flush().unwrap();
        let (mine, theirs) = (all(&store), all(crawl.as_ref()));
        let done = store.compact().unwrap().unwrap();
        assert!(done.after < done.before, "{done:?}");
        assert_eq!(store.compacted_size(), Some(done.after));
        let (mine_now, theirs_now) = (all(&store), all(crawl.as_ref()));
        assert_eq!(
            (mine_now.len(), theirs_now.len()),
            (mine.len(), theirs.len())
        );
        assert!(
            mine_now == mine && theirs_now == theirs,
            "the same keys and values"
        );
        assert_eq!(listing(dir.path()), ["generation", "generation-1", "lock"]);
        crawl
            .apply(vec![(b"after".to_vec(), Some(b"1".to_vec()))])
            .unwrap();
        store.compact().unwrap().unwrap();
        assert_eq!(listing(dir.path()), ["generation", "generation-2", "lock"]);
        drop((store, crawl));
        let reopened = open(dir.path(), 1 << 20).unwrap();
        assert!(
            all(&reopened) == mine,
            "the same keys and values after a reopen"
        );
        let crawl = reopened.keyspace("crawl").unwrap();
        assert_eq!(crawl.get(b"after").unwrap().as_deref(), Some(&b"1"[..]));
        assert!(reopened.compacted_size().is_some());
        drop((crawl, reopened));
        assert!(
            listing(&dir.path().join("generation-2")).contains(&CLOSED_FILE.to_string()),
            "the clean close is marked beside the database in use"
        );
    }

    /// A reader that started before a compaction reads on from the old
    /// files, which stay until it ends; a write waits for the compaction.
    #[test]
    fn a_scan_outlives_the_files_it_started_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 1 << 20).unwrap();
        let ops = (0..300u32)
            .map(|i| (i.to_be_bytes().to_vec(), Some(b"v".to_vec())))
            .collect();
        store.apply(ops).unwrap();
        let mut scan = store.range(Vec::new(), None);
        let first = scan.next().unwrap().unwrap();
        store.compact().unwrap().unwrap();
        assert!(
            listing(dir.path()).contains(&"db".to_string()),
            "old files kept while read"
        );
        let rest: Vec<_> = scan
            .map(Result::unwrap)
            .filter(|(k, _)| k.as_ref() != keys::IDS)
            .collect();
        assert_eq!(rest.len() + 1, 300, "{first:?}");
        assert!(
            !listing(dir.path()).contains(&"db".to_string()),
            "old files gone with the scan"
        );
    }

    /// The switch is the rename of the file that names the generation: a
    /// copy a crash cut short before it is removed at the next open, the
    /// old files kept; after it, the old files are removed.
    #[test]
    fn a_copy_cut_short_is_removed_and_the_old_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path(), 1 << 20).unwrap();
            store
                .apply(vec![(b"k".to_vec(), Some(b"old".to_vec()))])
                .unwrap();
        }
        // A copy under way: a database in generation-1, not named.
        {
            let partial = sled::open(dir.path().join("generation-1")).unwrap();
            partial
                .open_tree(TREE)
                .unwrap()
                .insert(b"k", b"partial")
                .unwrap();
            partial.flush().unwrap();
        }
        let store = open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"old"[..]));
        assert!(!dir.path().join("generation-1").exists());
        // Named, with the old files still there (a crash right after the
        // switch): the named one is read, the old files removed.
        store.compact().unwrap().unwrap();
        drop(store);
        std::fs::write(dir.path().join("db"), b"stale").unwrap();
        std::fs::write(dir.path().join("conf"), b"stale").unwrap();
        let store = open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"old"[..]));
        assert_eq!(listing(dir.path()), ["generation", "generation-1", "lock"]);
    }

    /// Writes made while the copy is made are captured and go into the
    /// copy: a writer that never stops loses none of them.
    #[test]
    fn writes_made_during_the_copy_are_in_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 1 << 20).unwrap();
        for chunk in 0..40u32 {
            let ops = (0..500u32)
                .map(|i| {
                    (
                        (chunk * 500 + i).to_be_bytes().to_vec(),
                        Some(vec![7u8; 200]),
                    )
                })
                .collect();
            store.apply(ops).unwrap();
        }
        let stop = AtomicBool::new(false);
        let progress = AtomicU32::new(0);
        let (done, written) = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut n = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    let key = [b"w".as_slice(), &n.to_be_bytes()].concat();
                    store
                        .apply(vec![(key, Some(n.to_be_bytes().to_vec()))])
                        .unwrap();
                    // Every third key removes the one before it.
                    if n % 3 == 2 {
                        let gone = [b"w".as_slice(), &(n - 1).to_be_bytes()].concat();
                        store.apply(vec![(gone, None)]).unwrap();
                    }
                    n += 1;
                    progress.store(n, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
                n
            });
            // The copy starts once the writer is under way (a writer that
            // stopped, a failed write, ends the wait too).
            while progress.load(Ordering::SeqCst) < 16 && !writer.is_finished() {
                std::thread::yield_now();
            }
            let done = store.compact().unwrap().unwrap();
            stop.store(true, Ordering::SeqCst);
            (done, writer.join().unwrap())
        });
        assert!(
            done.captured > 0,
            "no write landed during the copy: {done:?}"
        );
        drop(store);
        let reopened = open(dir.path(), 1 << 20).unwrap();
        for n in 0..written {
            let key = [b"w".as_slice(), &n.to_be_bytes()].concat();
            let removed = n % 3 == 1 && n + 1 < written;
            let got = reopened.get(&key).unwrap();
            assert_eq!(got.is_none(), removed, "key {n} of {written}");
        }
    }

    /// Compactions asked for at once run one after the other, a writer
    /// beside them: every write is kept, and one database is left.
    #[test]
    fn compactions_asked_for_at_once_run_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 1 << 20).unwrap();
        let written = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                for n in 0..3_000u32 {
                    store
                        .apply(vec![(n.to_be_bytes().to_vec(), Some(vec![1u8; 100]))])
                        .unwrap();
                }
                3_000u32
            });
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..2 {
                        store.compact().unwrap().unwrap();
                    }
                });
            }
            writer.join().unwrap()
        });
        for n in 0..written {
            assert!(store.get(&n.to_be_bytes()).unwrap().is_some(), "key {n}");
        }
        assert_eq!(listing(dir.path()), ["generation", "generation-6", "lock"]);
    }
}
