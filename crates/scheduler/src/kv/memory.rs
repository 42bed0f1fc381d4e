//! The in-memory backend: an ordered map per keyspace, gone when the last
//! handle is dropped. It keeps the semantics the store relies on
//! ([`Backend`]): a batch is applied under the map's write lock, keys are
//! ordered bytewise, and an iterator reads the map in chunks, so it never
//! holds the lock between two items.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;

use super::backend::{Backend, BackendError, Entries, Ops};
use super::health::locked;

/// Values by key (a point read costs a hash, not a walk down a tree of
/// keys that share long prefixes), and the keys in order for scans.
#[derive(Default)]
struct Map {
    values: HashMap<Bytes, Bytes, rustc_hash::FxBuildHasher>,
    keys: BTreeSet<Bytes>,
}

impl Map {
    fn insert(&mut self, key: Bytes, value: Bytes) {
        match self.values.get_mut(key.as_ref()) {
            Some(slot) => *slot = value,
            None => {
                self.keys.insert(key.clone());
                self.values.insert(key, value);
            }
        }
    }

    fn remove(&mut self, key: &[u8]) {
        if self.values.remove(key).is_some() {
            self.keys.remove(key);
        }
    }
}

type Shared = Arc<RwLock<Map>>;

/// One keyspace in memory, and the registry of its siblings (shared by
/// all of them).
#[derive(Default)]
pub(crate) struct Memory {
    map: Shared,
    siblings: Arc<Mutex<BTreeMap<String, Shared>>>,
}

impl Memory {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Map> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl Backend for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn get(&self, key: &[u8]) -> Result<Option<Bytes>, BackendError> {
        Ok(self.read().values.get(key).cloned())
    }

    fn apply(&self, ops: Ops) -> Result<(), BackendError> {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        for (k, v) in ops {
            match v {
                Some(v) => map.insert(Bytes::from(k), Bytes::from(v)),
                None => map.remove(&k),
            }
        }
        Ok(())
    }

    fn range(&self, start: Vec<u8>, end: Option<Vec<u8>>) -> Entries<'_> {
        Box::new(Chunks {
            map: &self.map,
            from: Bound::Included(start),
            end: end.map_or(Bound::Unbounded, Bound::Excluded),
            buf: VecDeque::new(),
            done: false,
        })
    }

    fn last_in(&self, start: &[u8], end: &[u8]) -> Result<Option<(Bytes, Bytes)>, BackendError> {
        if start >= end {
            return Ok(None);
        }
        let map = self.read();
        let last = map
            .keys
            .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)))
            .next_back();
        Ok(last.and_then(|k| map.values.get(k).map(|v| (k.clone(), v.clone()))))
    }

    fn flush(&self) -> Result<(), BackendError> {
        Ok(())
    }

    fn size(&self) -> Result<u64, BackendError> {
        Ok(self
            .read()
            .values
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum())
    }

    fn keyspace(&self, name: &str) -> Result<Box<dyn Backend>, BackendError> {
        let map = locked(&self.siblings)
            .entry(name.to_string())
            .or_default()
            .clone();
        Ok(Box::new(Memory {
            map,
            siblings: self.siblings.clone(),
        }))
    }

    fn keyspace_names(&self) -> Vec<String> {
        locked(&self.siblings).keys().cloned().collect()
    }

    fn drop_keyspace(&self, name: &str) -> Result<bool, BackendError> {
        let Some(map) = locked(&self.siblings).remove(name) else {
            return Ok(false);
        };
        // A handle still open on it sees it empty, as on disk.
        *map.write().unwrap_or_else(|e| e.into_inner()) = Map::default();
        Ok(true)
    }

    fn durable(&self) -> bool {
        false
    }

    fn wedges_on_write_failure(&self) -> bool {
        false
    }
}

/// Items read from the map per lock.
const CHUNK: usize = 64;

/// An iterator over part of a map, read [`CHUNK`] items at a time.
struct Chunks<'a> {
    map: &'a RwLock<Map>,
    /// Where the next chunk starts.
    from: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    buf: VecDeque<(Bytes, Bytes)>,
    done: bool,
}

fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Chunks<'_> {
    fn fill(&mut self) {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        let bounds = (as_slice_bound(&self.from), as_slice_bound(&self.end));
        // An empty range (start at or past end) yields nothing, as on sled
        // (a BTreeSet would panic on start > end).
        if let (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e)) = bounds
            && s >= e
        {
            self.done = true;
            return;
        }
        for k in map.keys.range::<[u8], _>(bounds) {
            if let Some(v) = map.values.get(k) {
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

impl Iterator for Chunks<'_> {
    type Item = Result<(Bytes, Bytes), BackendError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() && !self.done {
            self.fill();
        }
        self.buf.pop_front().map(Ok)
    }
}
