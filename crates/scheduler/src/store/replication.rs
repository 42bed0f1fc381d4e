//! A store's write log ([`crate::write_log`]): appending every batch to it,
//! and applying the entries of another store's.

use std::sync::Arc;

use super::{CRAWL_TREE, Store, StoreError};
use crate::keys;
use crate::kv::LogHook;
use crate::write_log::{LogEntry, WriteLog};

impl Store {
    /// Appends every batch this store (and every crawl it opens from now
    /// on) applies to `log` first, partition by partition, and applies a
    /// batch only once the log took it ([`crate::write_log`]). Set once: a
    /// second call is ignored. What the store wrote before is not logged.
    pub fn log_writes_to(&self, log: Arc<dyn WriteLog>) {
        if self.log.set(log.clone()).is_err() {
            return;
        }
        for (i, part) in self.parts.iter().enumerate() {
            part.kv.log_to(LogHook {
                log: log.clone(),
                partition: i as u16,
            });
        }
    }

    /// Whether leases and peeks hand out the URLs of `partition` (`serving`,
    /// the default) or pass over them: a node of a cluster serves the
    /// partitions it holds only. Views (stats, lists, exports) and the
    /// writes that span partitions (queue deletes, purges, record folding,
    /// calibration) pass over it too; a call on one URL or site does not.
    /// A partition no longer served has no write failure either: a failed
    /// write of its keyspaces no longer makes the store unhealthy.
    pub fn serve_partition(&self, partition: u16, serving: bool) {
        if let Some(part) = self.parts.get(usize::from(partition)) {
            part.set_serving(serving);
            if !serving {
                part.kv
                    .forget_write_failures(|keyspace| partition_of_keyspace(keyspace) == partition);
            }
        }
    }

    /// Whether leases and peeks hand out the URLs of `partition`.
    pub fn serves_partition(&self, partition: u16) -> bool {
        self.parts
            .get(usize::from(partition))
            .is_some_and(|p| p.serving())
    }

    /// The partition the keys of `site` (a followed seed: a host, or a URL)
    /// live in.
    pub fn partition_of_site(&self, site: &str) -> u16 {
        self.routes.of_host(keys::host_of(site)) as u16
    }

    /// The partition the keys of `url` live in (its normal host's; one
    /// that does not parse: partition 0).
    pub fn partition_of_url(&self, url: &str) -> u16 {
        self.route_url(url) as u16
    }

    /// The write log this store appends to, if any.
    pub(crate) fn write_log(&self) -> Option<Arc<dyn WriteLog>> {
        self.log.get().cloned()
    }

    /// The position of the last write log entry applied to `partition`:
    /// the smallest over its keyspaces (this store's, and every crawl's),
    /// so that replaying from the next position misses none of them. 0:
    /// none applied.
    pub fn log_position(&self, partition: u16) -> Result<u64, StoreError> {
        let part = self.parts.get(usize::from(partition)).ok_or_else(|| {
            StoreError::Partitions(format!(
                "partition {partition} of a store of {}",
                self.parts.len()
            ))
        })?;
        let mut lowest = part.kv.log_position()?;
        for name in self.crawl_names() {
            let base = format!("{CRAWL_TREE}{name}");
            let tree = match partition {
                0 => base,
                p => super::partition_tree(&base, usize::from(p)),
            };
            lowest = lowest.min(self.parts[0].kv.sibling(&tree)?.log_position()?);
        }
        Ok(lowest)
    }

    /// Applies a write log entry (its bytes, as appended) at `position` to
    /// the keyspace it names, unless that keyspace applied an entry at or
    /// past `position` already: whether it was applied. Entries of one
    /// partition must come in the log's order. A store applying entries
    /// should not also be written by its own calls: they would interleave.
    pub fn apply_logged(&self, position: u64, entry: &[u8]) -> Result<bool, StoreError> {
        let entry = LogEntry::from_bytes(entry).map_err(|detail| StoreError::Damaged {
            path: "the write log".into(),
            detail,
        })?;
        let touches_memory = entry.ops.iter().any(|(key, _)| {
            key.as_slice() == keys::POLICY
                || key.as_slice() == keys::CALIBRATION
                || key.first() == Some(&keys::SUSPECT)
        });
        if let Some(part) = self
            .parts
            .iter()
            .find(|p| p.kv.keyspace_name() == entry.keyspace)
        {
            // Under the partition's write lock, as every write: a call
            // reading records to merge sees the entry whole or not at all.
            let applied = {
                let _lock = part.lock();
                part.kv.apply_logged(position, entry.ops)?
            };
            if applied && touches_memory {
                part.reread_after_replay()?;
            }
            return Ok(applied);
        }
        if !entry.keyspace.starts_with(CRAWL_TREE) {
            return Err(StoreError::Damaged {
                path: "the write log".into(),
                detail: format!(
                    "an entry of keyspace {:?}, not one of this store",
                    entry.keyspace
                ),
            });
        }
        // A crawl's keyspace. One this store has not opened yet is opened
        // once as a crawl (its keyspaces made, each with its layout), then
        // written as any keyspace.
        let kv = &self.parts[0].kv;
        if !kv.sibling_names(&entry.keyspace).contains(&entry.keyspace) {
            let name = entry.keyspace[CRAWL_TREE.len()..]
                .split(super::PARTITION_TREE)
                .next()
                .unwrap_or_default();
            self.crawl(name)?;
        }
        kv.sibling(&entry.keyspace)?
            .apply_logged(position, entry.ops)
    }
}

/// The partition a keyspace of a store or of its crawls belongs to, from
/// its name (`""` and `crawl:NAME` are partition 0's, `part:N` and
/// `crawl:NAME/part:N` partition N's).
pub(super) fn partition_of_keyspace(keyspace: &str) -> u16 {
    let suffix = keyspace
        .strip_prefix(&super::PARTITION_TREE[1..])
        .or_else(|| {
            keyspace
                .rfind(super::PARTITION_TREE)
                .map(|at| &keyspace[at + super::PARTITION_TREE.len()..])
        });
    suffix.and_then(|n| n.parse().ok()).unwrap_or(0)
}
