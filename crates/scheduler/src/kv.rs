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

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use sled::IVec;

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

/// The store's key space.
pub(crate) enum Kv {
    /// On disk.
    Sled {
        /// The database (ids, flush, size).
        db: sled::Db,
        /// The one tree every keyspace lives in.
        tree: sled::Tree,
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
        Kv::Memory {
            map: RwLock::new(Map::default()),
            ids: AtomicU64::new(0),
        }
    }

    fn read(map: &RwLock<Map>) -> std::sync::RwLockReadGuard<'_, Map> {
        map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(map: &RwLock<Map>) -> std::sync::RwLockWriteGuard<'_, Map> {
        map.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `key`.
    pub(crate) fn get<K: AsRef<[u8]>>(&self, key: K) -> sled::Result<Option<IVec>> {
        match self {
            Kv::Sled { tree, .. } => tree.get(key),
            Kv::Memory { map, .. } => Ok(Self::read(map).get(key.as_ref()).cloned()),
        }
    }

    /// Whether `key` is present.
    pub(crate) fn contains_key<K: AsRef<[u8]>>(&self, key: K) -> sled::Result<bool> {
        match self {
            Kv::Sled { tree, .. } => tree.contains_key(key),
            Kv::Memory { map, .. } => Ok(Self::read(map).get(key.as_ref()).is_some()),
        }
    }

    /// Sets `key` to `value`; the value it had.
    pub(crate) fn insert<K: AsRef<[u8]> + Into<IVec>, V: Into<IVec>>(
        &self,
        key: K,
        value: V,
    ) -> sled::Result<Option<IVec>> {
        match self {
            Kv::Sled { tree, .. } => tree.insert(key, value),
            Kv::Memory { map, .. } => Ok(Self::write(map).insert(key.into(), value.into())),
        }
    }

    /// Sets `key` to `value` if it is absent (atomically); whether it was.
    pub(crate) fn insert_if_absent<V: Into<IVec>>(
        &self,
        key: Vec<u8>,
        value: V,
    ) -> Result<bool, crate::error::StoreError> {
        match self {
            Kv::Sled { tree, .. } => {
                let swapped = tree.compare_and_swap(&key, None::<&[u8]>, Some(value))?;
                Ok(swapped.is_ok())
            }
            Kv::Memory { map, .. } => {
                let mut map = Self::write(map);
                if map.get(key.as_slice()).is_some() {
                    return Ok(false);
                }
                map.insert(key.into(), value.into());
                Ok(true)
            }
        }
    }

    /// Removes `key`; the value it had.
    pub(crate) fn remove<K: AsRef<[u8]>>(&self, key: K) -> sled::Result<Option<IVec>> {
        match self {
            Kv::Sled { tree, .. } => tree.remove(key),
            Kv::Memory { map, .. } => Ok(Self::write(map).remove(key.as_ref())),
        }
    }

    /// Applies `batch` atomically.
    pub(crate) fn apply_batch(&self, batch: Batch) -> sled::Result<()> {
        match self {
            Kv::Sled { tree, .. } => {
                let mut b = sled::Batch::default();
                for (k, v) in batch.ops {
                    match v {
                        Some(v) => b.insert(k, v),
                        None => b.remove(k),
                    }
                }
                tree.apply_batch(b)
            }
            Kv::Memory { map, .. } => {
                let mut map = Self::write(map);
                for (k, v) in batch.ops {
                    match v {
                        Some(v) => map.insert(k, v),
                        None => map.remove(&k),
                    };
                }
                Ok(())
            }
        }
    }

    /// The keys from `range.start` (included) to `range.end` (excluded), in
    /// order.
    pub(crate) fn range(&self, range: std::ops::Range<Vec<u8>>) -> Iter<'_> {
        match self {
            Kv::Sled { tree, .. } => Iter::Sled(tree.range(range)),
            Kv::Memory { map, .. } => Iter::Memory(Chunks {
                map,
                from: Bound::Included(range.start),
                end: Bound::Excluded(range.end),
                prefix: None,
                buf: VecDeque::new(),
                done: false,
            }),
        }
    }

    /// The keys starting with `prefix`, in order.
    pub(crate) fn scan_prefix<P: AsRef<[u8]>>(&self, prefix: P) -> Iter<'_> {
        match self {
            Kv::Sled { tree, .. } => Iter::Sled(tree.scan_prefix(prefix)),
            Kv::Memory { map, .. } => Iter::Memory(Chunks {
                map,
                from: Bound::Included(prefix.as_ref().to_vec()),
                end: Bound::Unbounded,
                prefix: Some(prefix.as_ref().to_vec()),
                buf: VecDeque::new(),
                done: false,
            }),
        }
    }

    /// A new id, never handed out before by this store.
    pub(crate) fn generate_id(&self) -> sled::Result<u64> {
        match self {
            Kv::Sled { db, .. } => db.generate_id(),
            Kv::Memory { ids, .. } => Ok(ids.fetch_add(1, Ordering::SeqCst)),
        }
    }

    /// Writes everything to disk now (in memory: nothing to do).
    pub(crate) fn flush(&self) -> sled::Result<()> {
        match self {
            Kv::Sled { db, .. } => db.flush().map(|_| ()),
            Kv::Memory { .. } => Ok(()),
        }
    }

    /// Bytes on disk (in memory: the keys and values held).
    pub(crate) fn size_on_disk(&self) -> sled::Result<u64> {
        match self {
            Kv::Sled { db, .. } => db.size_on_disk(),
            Kv::Memory { map, .. } => Ok(Self::read(map)
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
        let map = Kv::read(self.map);
        let bounds: (Bound<&[u8]>, Bound<&[u8]>) =
            (as_slice_bound(&self.from), as_slice_bound(&self.end));
        // An empty range (start past end) yields nothing, as on sled.
        if let (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e)) = bounds {
            if s >= e {
                self.done = true;
                return;
            }
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
    type Item = sled::Result<(IVec, IVec)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() && !self.done {
            self.fill();
        }
        self.buf.pop_front().map(Ok)
    }
}

/// An iterator over keys and values, in key order.
pub(crate) enum Iter<'a> {
    /// sled's.
    Sled(sled::Iter),
    /// The memory map's.
    Memory(Chunks<'a>),
}

impl Iterator for Iter<'_> {
    type Item = sled::Result<(IVec, IVec)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Sled(it) => it.next(),
            Iter::Memory(it) => it.next(),
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
        let both = [Kv::Sled { db, tree }, Kv::memory()];
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
