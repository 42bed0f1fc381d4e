//! Bringing a store written by an older build to the current key layout
//! ([`keys::LAYOUT_VERSION`]) when it is opened.
//!
//! Layout 1 kept due entries as `d` ‖ due ‖ URL; layout 2 adds the urgency
//! class and the priority rank; layout 3 widens the rank (lastmod and URL
//! length after the priority); layout 4 keeps each host's counts (`t`).
//! The migration rebuilds the due index from the URL records (from layouts
//! 1 and 2: every `d` key is removed, then each active record's entry is
//! written, in batches; a record taken out of its due list is written
//! again) and counts each host's records (from layouts 1 to 3: one pass
//! over the records, the counts written into the host records), and writes
//! the layout key last. A crash in the middle leaves the layout key
//! unwritten, so the next open starts over: each step is idempotent. Layout 6 (record pages)
//! needs nothing done: a layout-5 record is a record under a key of its
//! own, which layout 6 reads as such, and each ingest moves the ones it
//! writes into their pages ([`crate::pages`]). The rebuild reads both.
//! Layout 7 (leases of listed URLs in their due list entries) needs
//! nothing done either: a layout-6 record's lease stands until the record
//! is written again ([`crate::marks`]). Layout 8 keeps each host's counts
//! in its host record: the migration moves every `t` key into its host's
//! record (written in record format 8), in batches that each remove the
//! keys they move, so a crash midway leaves the rest for the next open.

use crate::error::StoreError;
use crate::keys;
use crate::kv::{Batch, Kv};
use crate::record::{HostRecord, UrlRecord, decode, encode};
use crate::tally::Tally;

/// Keys written per batch while rebuilding.
const BATCH: usize = 10_000;

/// Migrates `kv` to the current layout if it is older; refuses a newer one.
pub(crate) fn to_current_layout(kv: &Kv) -> Result<(), StoreError> {
    match kv.get(keys::LAYOUT)?.as_deref() {
        Some([v]) if *v == keys::LAYOUT_VERSION => return Ok(()),
        Some([v]) if *v > keys::LAYOUT_VERSION => return Err(StoreError::NewerLayout(*v)),
        _ => {}
    }
    let empty = crate::pages::entries(kv, &[], &[0xff]).next().is_none();
    let version = match kv.get(keys::LAYOUT)?.as_deref() {
        Some([v]) => *v,
        _ => 1,
    };
    if !empty && version < 3 {
        tracing::info!(
            "rebuilding the due index for key layout {}",
            keys::LAYOUT_VERSION
        );
        rebuild_due_index(kv)?;
    }
    if !empty && version < 4 {
        tracing::info!("counting each host's URLs for key layout 4");
        count_tallies(kv)?;
    }
    if version < 8 {
        tracing::info!("moving each host's counts into its host record for key layout 8");
        fold_tallies(kv)?;
    }
    kv.insert(keys::LAYOUT, &[keys::LAYOUT_VERSION])?;
    kv.flush()?;
    Ok(())
}

/// Every URL record that decodes, with its URL, in URL order (pages and
/// keys of their own).
fn records(kv: &Kv) -> impl Iterator<Item = (String, UrlRecord)> + '_ {
    crate::pages::entries(kv, &[], &[0xff]).filter_map(|item| {
        let (url, value) = item.ok()?;
        Some((url, decode::<UrlRecord>(&value).ok()?))
    })
}

/// Before the due lists go: each listed URL whose entry holds a lease
/// takes it into its record, out of its list and due when the lease runs
/// out (what its due key, written next, will say), as a lease of a URL
/// with a due key of its own leaves it. Reads the lists that hold leases,
/// and the records of their leased entries only. Idempotent: a record out
/// of its list is left as it is.
fn keep_leases(kv: &Kv) -> Result<(), StoreError> {
    let mut writes = Batched::new(kv);
    for item in kv.scan_prefix([keys::DUE]) {
        let (key, value) = item?;
        let Some(due) = keys::parse_due(&key) else {
            continue;
        };
        let Some((_, list)) = keys::as_list(due.url) else {
            continue;
        };
        // A list without leases, or one that does not decode, has none to
        // keep.
        if crate::due_list::leases(&value).map_or(true, |f| f.leases.is_empty()) {
            continue;
        }
        let Ok(entries) = crate::due_list::decode(&value) else {
            continue;
        };
        for entry in entries.entries {
            let Some(lease) = entry.lease else {
                continue;
            };
            // A record that does not decode keeps no entry; `check` names
            // it.
            let Ok(Some(bytes)) = crate::pages::record(kv, &entry.url) else {
                continue;
            };
            let Ok(mut rec) = decode::<UrlRecord>(&bytes) else {
                continue;
            };
            if !(rec.queued() && rec.in_list(due.class, due.at, list)) {
                continue;
            }
            rec.schedule.lease = Some(lease);
            rec.schedule.due = rec.due_until();
            rec.listed = None;
            writes.insert(keys::url(&entry.url), encode(&rec))?;
        }
    }
    writes.finish()
}

/// Writes applied in batches of [`BATCH`]: a rebuild's, each step of which
/// is idempotent (a crash between two batches leaves what the next run
/// finishes).
struct Batched<'k> {
    kv: &'k Kv,
    batch: Batch,
    n: usize,
}

impl<'k> Batched<'k> {
    fn new(kv: &'k Kv) -> Batched<'k> {
        Batched {
            kv,
            batch: Batch::default(),
            n: 0,
        }
    }

    /// Inserts `key`, applying the batch when it is full.
    fn insert(
        &mut self,
        key: impl Into<sled::IVec>,
        value: impl Into<sled::IVec>,
    ) -> Result<(), StoreError> {
        self.batch.insert(key, value);
        self.n += 1;
        if self.n == BATCH {
            self.n = 0;
            self.kv.apply_batch(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }

    /// Applies what is left.
    fn finish(self) -> Result<(), StoreError> {
        self.kv.apply_batch(self.batch)
    }
}

/// Removes every key of the keyspace `prefix`, in batches.
pub(crate) fn clear(kv: &Kv, prefix: u8) -> Result<(), StoreError> {
    drain(kv, prefix, |_, _, _| Ok(()))
}

/// Removes every key of the keyspace `prefix`, in batches; `each` adds
/// what it makes of a key and its value to the batch that removes it, so a
/// crash midway leaves the keys not yet drained for the next run.
fn drain(
    kv: &Kv,
    prefix: u8,
    mut each: impl FnMut(&[u8], &[u8], &mut Batch) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    loop {
        let mut batch = Batch::default();
        let mut n = 0;
        for item in kv.scan_prefix([prefix]).take(BATCH) {
            let (key, value) = item?;
            each(&key, &value, &mut batch)?;
            batch.remove(key);
            n += 1;
        }
        if n == 0 {
            return Ok(());
        }
        kv.apply_batch(batch)?;
    }
}

/// Each host's counts from one pass over the URL records (in key order, so
/// one host's records are together but for the scheme: the counts are
/// summed in memory, one entry per host), written into the host records:
/// a host record that does not decode is replaced (its politeness and trust
/// start over, as they do when it is read), and a host with no URL left
/// keeps no counts (it is no longer a queue).
pub(crate) fn count_tallies(kv: &Kv) -> Result<(), StoreError> {
    clear(kv, keys::TALLY)?;
    let mut tallies: std::collections::HashMap<String, Tally> = Default::default();
    // A record or page that does not decode is not counted; `check`
    // names it.
    for (url, rec) in records(kv) {
        tallies
            .entry(keys::host_of(&url).to_string())
            .or_default()
            .add(&Tally::of(&rec), 1);
    }
    let mut writes = Batched::new(kv);
    for item in kv.scan_prefix([keys::HOST]) {
        let (key, value) = item?;
        let host = String::from_utf8_lossy(&key[1..]).into_owned();
        let mut record = crate::record::host_record_or_fresh(&key, Some(&value));
        record.counts = tallies.remove(&host);
        writes.insert(key.to_vec(), encode(&record))?;
    }
    for (host, tally) in tallies {
        let record = HostRecord {
            counts: Some(tally),
            ..HostRecord::default()
        };
        writes.insert(keys::host(&host), encode(&record))?;
    }
    writes.finish()
}

/// Key layout 8: each host's counts (`t` ‖ host, layouts 4 to 7) go into
/// its host record, in batches that each remove the `t` keys they move (so
/// that a crash midway leaves the rest for the next open). A count that
/// does not decode is dropped: `stats --check` names its host as counted
/// but not kept, and `stats --repair` counts it again.
fn fold_tallies(kv: &Kv) -> Result<(), StoreError> {
    drain(kv, keys::TALLY, |key, value, batch| {
        let Ok(tally) = decode::<Tally>(value) else {
            return Ok(());
        };
        let mut host_key = key.to_vec();
        host_key[0] = keys::HOST;
        let mut record =
            crate::record::host_record_or_fresh(&host_key, kv.get(&host_key)?.as_deref());
        record.counts = Some(tally);
        batch.insert(host_key, encode(&record));
        Ok(())
    })
}

pub(crate) fn rebuild_due_index(kv: &Kv) -> Result<(), StoreError> {
    keep_leases(kv)?;
    clear(kv, keys::DUE)?;
    let mut writes = Batched::new(kv);
    // A record or page that does not decode keeps no entry; `check`
    // names it.
    for (url, mut rec) in records(kv) {
        if rec.queued() {
            // Out of its due list (the lists were cleared with the rest).
            // (Written under a key of its own, which stands for its page's
            // copy.)
            if rec.listed.take().is_some() {
                writes.insert(keys::url(&url), encode(&rec))?;
            }
            writes.insert(rec.due_key(&url), &[])?;
        }
    }
    writes.finish()
}
