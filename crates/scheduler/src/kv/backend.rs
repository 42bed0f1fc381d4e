//! The storage trait: what the store needs of an ordered key-value
//! engine, in owned bytes. [`super::sled_backend`] (on disk) and
//! [`super::memory`] (in memory) implement it; the conformance suite
//! (`kv/conformance.rs`) holds every implementation to one model.

use bytes::Bytes;

/// What a backend failed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BackendError {
    /// Data the backend found corrupt (a checksum, a file cut short): the
    /// store is damaged.
    Corrupt(String),
    /// Any other failure (I/O, a full disk).
    Io(String),
}

/// What a compaction did: the bytes the backend's files took before it and
/// after, and how long writes waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compacted {
    pub(crate) before: u64,
    pub(crate) after: u64,
    /// How long writes waited for it.
    pub(crate) writes_waited: std::time::Duration,
    /// The writes made while it copied, applied to the copy after.
    pub(crate) captured: u64,
}

/// The writes of one batch, in order: a key and its new value, or `None`
/// to remove it.
pub(crate) type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Keys and values in key order. An error ends it.
pub(crate) type Entries<'a> =
    Box<dyn Iterator<Item = Result<(Bytes, Bytes), BackendError>> + Send + 'a>;

/// An ordered key-value engine: one keyspace, with named sibling
/// keyspaces beside it (a crawl's store is one).
///
/// The store relies on these semantics, which every backend keeps:
/// - [`Backend::apply`] is atomic: after a crash, all of a batch or none
///   of it is there, and batches applied one after the other are found in
///   that order (a later batch is never there without an earlier one);
/// - keys are ordered bytewise;
/// - an iterator sees a write made while it runs once it reaches the key
///   (it never holds a lock between two items, so the store may write
///   during a scan);
/// - a value read is owned: it stays valid whatever is written after.
pub(crate) trait Backend: Send + Sync {
    /// Its name in messages (`sled`, `memory`).
    fn name(&self) -> &'static str;

    /// The value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Bytes>, BackendError>;

    /// Applies `ops` atomically, in order.
    fn apply(&self, ops: Ops) -> Result<(), BackendError>;

    /// The keys from `start` (included) to `end` (excluded; `None`: to the
    /// last key), in order.
    fn range(&self, start: Vec<u8>, end: Option<Vec<u8>>) -> Entries<'_>;

    /// The last key (and its value) from `start` (included) to `end`
    /// (excluded).
    fn last_in(&self, start: &[u8], end: &[u8]) -> Result<Option<(Bytes, Bytes)>, BackendError>;

    /// Makes every applied batch durable now (nothing to do in memory).
    fn flush(&self) -> Result<(), BackendError>;

    /// Bytes the backend takes (on disk: its files).
    fn size(&self) -> Result<u64, BackendError>;

    /// The sibling keyspace `name`, created empty if absent.
    fn keyspace(&self, name: &str) -> Result<Box<dyn Backend>, BackendError>;

    /// The names of the sibling keyspaces.
    fn keyspace_names(&self) -> Vec<String>;

    /// Deletes the sibling keyspace `name` with every key in it; whether
    /// it was there.
    fn drop_keyspace(&self, name: &str) -> Result<bool, BackendError>;

    /// Whether a failed write leaves the backend refusing every later
    /// write until it is reopened (sled's behaviour after an I/O error).
    fn wedges_on_write_failure(&self) -> bool;

    /// Whether what it holds outlives the process (on disk).
    fn durable(&self) -> bool;

    /// Asks that batches of different keyspaces (of every handle on this
    /// database) be applied side by side from now on, where the backend
    /// would otherwise apply one at a time (sled: see `sled_atomic`). A
    /// store of several partitions asks it; a backend whose batches already
    /// run side by side does nothing.
    fn batches_side_by_side(&self) {}

    /// Rewrites what it holds into files that hold nothing else, for a
    /// backend that does not give back the space of what it rewrote
    /// (sled); `None` for one with nothing to give back (in memory).
    /// Atomic: after a crash, the data as before or as after, the same.
    fn compact(&self) -> Result<Option<Compacted>, BackendError> {
        Ok(None)
    }

    /// The bytes its files took when the last compaction wrote them
    /// (`None`: never compacted, or nothing to compact).
    fn compacted_size(&self) -> Option<u64> {
        None
    }
}

/// The first key after every key that starts with `prefix` (`None`: no
/// such key, the prefix is all `0xff`).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_is_the_first_key_past_the_prefix() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[b'a', 0xff]), Some(b"b".to_vec()));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
        assert_eq!(prefix_end(&[]), None);
    }
}
