//! Giving back the space sled keeps: sled 0.34 never reclaims most of what
//! a record rewritten leaves behind, so a store being crawled grows by
//! about a hundred bytes per completion, without bound. A compaction
//! first moves the URL records crawlers wrote under keys of their own
//! back into their pages (online, a batch at a time), then copies the live
//! data of the whole database (every keyspace: the store's partitions and
//! its crawls) into fresh files and switches to them, crash-safe: a kill
//! at any point leaves the old files in use or the new ones, never
//! neither. Reads and writes go on while it copies (the writes also
//! captured into a file beside the copy); writes wait while the captured
//! writes go into the copy and it is switched to. It needs disk for one
//! more copy of the live data meanwhile.

use std::time::{Duration, Instant};

use super::Store;
use crate::error::StoreError;

/// The least growth [`Store::compact_if_grown`] waits for (a
/// [`StoreOptions::compact_growth`](crate::StoreOptions::compact_growth) below it counts as it): a compaction
/// that would leave about what it found is work for nothing.
const MIN_GROWTH: f64 = 1.2;

/// What a compaction did ([`Store::compact`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compaction {
    /// Bytes the store's files took before.
    pub bytes_before: u64,
    /// Bytes they take after: a fresh copy of the live data (sled's files
    /// take a few times the bytes of the keys and values they hold).
    pub bytes_after: u64,
    /// URL records a crawler's writes had left under keys of their own,
    /// moved back into their pages first.
    pub records_folded: u64,
    /// How long crawler writes waited for it: while it began, and while
    /// the writes made during the copy went into the copy and it was
    /// switched to.
    pub writes_waited: Duration,
    /// How long it took, the records moved into their pages and the copy
    /// included (reads and writes went on meanwhile).
    pub took: Duration,
}

impl Store {
    /// Rewrites the store's files to hold its live data only, and switches
    /// to them (every crawl of the store too: they share its files); one
    /// compaction at a time. Reads and writes go on while it copies; writes wait for the writes
    /// made meanwhile to go into the copy, and for the switch. `None` for a
    /// store in memory.
    ///
    /// ```
    /// # fn main() -> Result<(), sitemapd_scheduler::StoreError> {
    /// let dir = tempfile::tempdir().expect("a temporary directory");
    /// let store = sitemapd_scheduler::Store::open(dir.path(), Default::default())?;
    /// let done = store.compact()?.expect("a store on disk");
    /// assert!(done.bytes_after > 0);
    /// # Ok(()) }
    /// ```
    pub fn compact(&self) -> Result<Option<Compaction>, StoreError> {
        // First the records crawlers wrote under keys of their own go back
        // into their pages (online, partition by partition): a key per URL
        // costs sled several times its bytes.
        tracing::info!("compacting the store");
        let start = Instant::now();
        let mut folded = self.fold_records()?;
        for name in self.crawl_names() {
            folded += self.crawl(&name)?.fold_records()?;
        }
        let done = self.parts()[0].kv.compact()?;
        let took = start.elapsed();
        Ok(done.map(|c| {
            tracing::info!(
                before = c.before,
                after = c.after,
                folded,
                took_ms = took.as_millis() as u64,
                writes_waited_ms = c.writes_waited.as_millis() as u64,
                writes_during_copy = c.captured,
                "store compacted"
            );
            Compaction {
                bytes_before: c.before,
                bytes_after: c.after,
                records_folded: folded,
                writes_waited: c.writes_waited,
                took,
            }
        }))
    }

    /// Moves the URL records crawlers wrote under keys of their own back
    /// into their pages ([`Partition::fold_records`](crate::partition::Partition::fold_records)), in every partition it serves, side by side.
    fn fold_records(&self) -> Result<u64, StoreError> {
        let moved = self.each_served_partition(|part| part.fold_records())?;
        Ok(moved.into_iter().sum())
    }

    /// Compacts the store ([`Store::compact`]) when its files have grown
    /// to [`StoreOptions::compact_growth`](crate::StoreOptions::compact_growth) times what the last compaction
    /// left (2 by default), and past [`StoreOptions::compact_floor_bytes`](crate::StoreOptions::compact_floor_bytes)
    /// (16 MiB); a daemon calls it now and then. A store never compacted is
    /// compacted once past the floor. With the defaults its files so stay
    /// within about twice what a compaction leaves, and three times while
    /// one copies.
    pub fn compact_if_grown(&self) -> Result<Option<Compaction>, StoreError> {
        let options = self.options();
        if options.compact_growth <= 0.0 || options.compact_growth.is_nan() {
            return Ok(None);
        }
        let growth = options.compact_growth.max(MIN_GROWTH);
        let kv = &self.parts()[0].kv;
        let size = kv.size_on_disk()?;
        let due = size > options.compact_floor_bytes
            && kv
                .compacted_size()
                .is_none_or(|left| size as f64 > left as f64 * growth);
        if due { self.compact() } else { Ok(None) }
    }
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
