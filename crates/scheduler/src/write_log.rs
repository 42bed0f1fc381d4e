//! The write log: every batch a store applies, appended first to a log the
//! embedder supplies, so that another store can replay it and hold the same
//! data (a replica, or the next owner of a partition in a cluster).
//!
//! A store given a log ([`crate::Store::log_writes_to`]) appends each batch
//! of a partition before applying it, and applies it only once the log took
//! it; a batch the log refuses fails with [`crate::StoreError::LogRefused`]
//! and changes nothing. The entry names its keyspace and holds the batch's
//! writes as bytes ([`LogEntry`]). A store fed the entries
//! ([`crate::Store::apply_logged`]) applies each once, in the order of its
//! position, recording in each keyspace the position it has applied
//! ([`crate::Store::log_position`]).
//!
//! What a store writes as it opens is not logged: its layout and id
//! counter, the policy its options name, and for a store made by an older
//! build the date its lastmod moves are dated from. Nodes sharing a log
//! open their stores with the same settings. Deleting a URLFrontier crawl
//! drops keyspaces, which no batch does: a store with a write log refuses
//! it.

use serde::{Deserialize, Serialize};

/// Where a store's batches are appended before they are applied. Appends
/// of one partition come one at a time, in the order the partition's data
/// changes; an implementation may block (it is called from the store's
/// writing threads, never from an async task).
pub trait WriteLog: Send + Sync + std::fmt::Debug {
    /// Appends `entry` to the log of `partition`: the position it took,
    /// greater than every earlier position of that partition. An error
    /// (the log unreachable, or this store no longer allowed to write the
    /// partition): the batch is not applied, and the error is the write's.
    fn append(&self, partition: u16, entry: &[u8]) -> Result<u64, String>;

    /// The entry the last append of `partition` took could not be applied
    /// to the store (its write failed after the log took it): the store is
    /// behind its log. An implementation should refuse the partition's
    /// appends until the store has replayed that entry.
    fn unapplied(&self, partition: u16) {
        let _ = partition;
    }
}

/// The first byte of an entry: its format.
const FORMAT: u8 = 1;

/// One logged batch: the keyspace it writes and its writes in order (a
/// key and its new value, or none to remove it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The keyspace's name in the store ("" for the store's own).
    pub keyspace: String,
    pub(crate) ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl LogEntry {
    /// The entry's bytes, as appended.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![FORMAT];
        out.extend(postcard::to_stdvec(self).expect("an entry serialises"));
        out
    }

    /// The entry of `bytes`; an error names what is wrong (an unknown
    /// format, bytes that do not decode).
    pub fn from_bytes(bytes: &[u8]) -> Result<LogEntry, String> {
        match bytes.split_first() {
            Some((&FORMAT, body)) => postcard::from_bytes(body)
                .map_err(|e| format!("a write log entry does not decode: {e}")),
            Some((other, _)) => Err(format!(
                "a write log entry of format {other}, which this build does not read"
            )),
            None => Err("an empty write log entry".into()),
        }
    }

    /// How many writes it holds.
    pub fn writes(&self) -> usize {
        self.ops.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_and_bad_bytes_are_named() {
        let entry = LogEntry {
            keyspace: "part:3".into(),
            ops: vec![(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), None)],
        };
        assert_eq!(LogEntry::from_bytes(&entry.to_bytes()), Ok(entry));
        assert!(LogEntry::from_bytes(&[]).unwrap_err().contains("empty"));
        assert!(
            LogEntry::from_bytes(&[9, 1])
                .unwrap_err()
                .contains("format 9")
        );
        assert!(
            LogEntry::from_bytes(&[FORMAT, 0xff])
                .unwrap_err()
                .contains("decode")
        );
    }
}
