//! The on-disk backend: one sled database in the store's directory, the
//! store's keyspace in its tree `sitemapd` and each sibling keyspace in a
//! tree of its own. Opening it checks what sled does not: a store whose
//! files lost their data, or their last writes, is refused as damaged.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;

use super::backend::{Backend, BackendError, Entries, Ops};
use super::health::guard;
use super::sled_atomic;
use crate::error::StoreError;
use crate::keys;

/// The file in a store's directory that says it was closed cleanly: the
/// number its last close wrote under [`keys::CLOSED`].
pub(crate) const CLOSED_FILE: &str = "closed";

/// The tree of the store's own keyspace.
const TREE: &str = "sitemapd";

/// A sled tree of the store's database.
pub(crate) struct Sled {
    db: sled::Db,
    tree: sled::Tree,
    /// Numbers the batch records of every tree of the database
    /// ([`sled_atomic`]).
    batches: Arc<AtomicU64>,
    /// The trees whose batch records were replayed in this process: a tree
    /// is replayed when first opened only, never while another handle on it
    /// writes (the record of a batch in flight is not one a crash left).
    replayed: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// Whether batches go through [`sled_atomic`] (a store of several
    /// partitions: side by side) rather than sled's own `apply_batch` (one
    /// at a time in the process, each written once).
    side_by_side: Arc<AtomicBool>,
    /// Marks a clean close when the last handle of the database goes.
    witness: Arc<CloseWitness>,
}

fn error(e: sled::Error) -> BackendError {
    match e {
        sled::Error::Corruption { .. } => BackendError::Corrupt(e.to_string()),
        e => BackendError::Io(e.to_string()),
    }
}

/// Opens (or creates) the database in directory `path` with a page cache
/// of `cache_bytes`.
pub(crate) fn open(path: &Path, cache_bytes: u64) -> Result<Sled, StoreError> {
    // A store opened before holds at least its layout key (written and
    // flushed at the first open). A `db` file with data behind an empty
    // tree is a store that lost its contents: sled opens a `db` cut short
    // as an empty tree, without an error.
    let had_data = std::fs::metadata(path.join("db")).is_ok_and(|m| m.len() > 0)
        && std::fs::metadata(path.join("conf")).is_ok();
    let config = sled::Config::new()
        .path(path)
        .cache_capacity(cache_bytes)
        .flush_every_ms(Some(1000));
    let shown = path.display().to_string();
    let damaged = |detail: String| StoreError::Damaged {
        path: shown.clone(),
        detail,
    };
    let failed = |e: sled::Error| match e {
        e @ sled::Error::Corruption { .. } => damaged(e.to_string()),
        e => StoreError::Io {
            path: shown.clone(),
            detail: e.to_string(),
        },
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
            Err(e) => return Err(failed(e)),
        }
    };
    let tree = guard("sled", || db.open_tree(TREE))
        .map_err(&damaged)?
        .map_err(failed)?;
    // Batches a crash cut short, whole again before anything reads.
    let next_batch = guard("sled", || sled_atomic::replay(&tree))
        .map_err(&damaged)?
        .map_err(failed)?;
    let layout = guard("sled", || tree.get(keys::LAYOUT)).map_err(&damaged)?;
    if had_data && matches!(layout, Ok(None)) && tree.is_empty() {
        return Err(damaged(
            "its files are there but hold no data: the db file was cut short or emptied".into(),
        ));
    }
    let mark = std::fs::read_to_string(path.join(CLOSED_FILE))
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
    guard("sled", || seed_ids(&db, &tree))
        .map_err(&damaged)?
        .map_err(failed)?;
    let witness = Arc::new(CloseWitness {
        db: db.clone(),
        tree: tree.clone(),
        dir: path.to_path_buf(),
    });
    Ok(Sled {
        db,
        tree,
        batches: Arc::new(AtomicU64::new(next_batch)),
        replayed: Arc::default(),
        side_by_side: Arc::default(),
        witness,
    })
}

#[cfg(test)]
impl Sled {
    /// The database, for tests that write behind the backend's back.
    pub(crate) fn db_for_tests(&self) -> &sled::Db {
        &self.db
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

impl Backend for Sled {
    fn name(&self) -> &'static str {
        "sled"
    }

    fn get(&self, key: &[u8]) -> Result<Option<Bytes>, BackendError> {
        Ok(self.tree.get(key).map_err(error)?.map(Bytes::from_owner))
    }

    fn apply(&self, ops: Ops) -> Result<(), BackendError> {
        if self.side_by_side.load(Ordering::Relaxed) {
            return sled_atomic::apply(&self.tree, &self.batches, ops).map_err(error);
        }
        let mut batch = sled::Batch::default();
        for (k, v) in ops {
            match v {
                Some(v) => batch.insert(k, v),
                None => batch.remove(k),
            }
        }
        self.tree.apply_batch(batch).map_err(error)
    }

    fn range(&self, start: Vec<u8>, end: Option<Vec<u8>>) -> Entries<'_> {
        let it = match end {
            Some(end) => self.tree.range(start..end),
            None => self.tree.range(start..),
        };
        Box::new(it.map(|item| {
            item.map(|(k, v)| (Bytes::from_owner(k), Bytes::from_owner(v)))
                .map_err(error)
        }))
    }

    fn last_in(&self, start: &[u8], end: &[u8]) -> Result<Option<(Bytes, Bytes)>, BackendError> {
        if start >= end {
            return Ok(None);
        }
        Ok(self
            .tree
            .range(start..end)
            .next_back()
            .transpose()
            .map_err(error)?
            .map(|(k, v)| (Bytes::from_owner(k), Bytes::from_owner(v))))
    }

    fn flush(&self) -> Result<(), BackendError> {
        self.db.flush().map(|_| ()).map_err(error)
    }

    fn size(&self) -> Result<u64, BackendError> {
        self.db.size_on_disk().map_err(error)
    }

    fn keyspace(&self, name: &str) -> Result<Box<dyn Backend>, BackendError> {
        let tree = self.db.open_tree(name).map_err(error)?;
        if super::health::locked(&self.replayed).insert(name.to_string()) {
            let next = sled_atomic::replay(&tree).map_err(error)?;
            self.batches.fetch_max(next, Ordering::Relaxed);
        }
        seed_ids(&self.db, &tree).map_err(error)?;
        Ok(Box::new(Sled {
            db: self.db.clone(),
            tree,
            batches: self.batches.clone(),
            replayed: self.replayed.clone(),
            side_by_side: self.side_by_side.clone(),
            witness: self.witness.clone(),
        }))
    }

    fn keyspace_names(&self) -> Vec<String> {
        self.db
            .tree_names()
            .into_iter()
            .filter_map(|n| String::from_utf8(n.to_vec()).ok())
            .filter(|n| n != TREE && n != "__sled__default")
            .collect()
    }

    fn drop_keyspace(&self, name: &str) -> Result<bool, BackendError> {
        self.db.drop_tree(name).map_err(error)
    }

    fn durable(&self) -> bool {
        true
    }

    fn batches_side_by_side(&self) {
        self.side_by_side.store(true, Ordering::Relaxed);
    }

    fn wedges_on_write_failure(&self) -> bool {
        true
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
struct CloseWitness {
    db: sled::Db,
    tree: sled::Tree,
    dir: PathBuf,
}

impl Drop for CloseWitness {
    fn drop(&mut self) {
        let mark = || -> Result<u64, sled::Error> {
            let n = self
                .tree
                .get(keys::CLOSED)?
                .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
                .map_or(1, |b| u64::from_be_bytes(b).wrapping_add(1));
            self.tree.insert(keys::CLOSED, &n.to_be_bytes())?;
            self.db.flush()?;
            Ok(n)
        };
        // A store that cannot write (damaged, failing) leaves no mark.
        if let Ok(Ok(n)) = guard("sled", mark) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
