//! Bringing a store written by an older build to the current key layout
//! ([`keys::LAYOUT_VERSION`]) when it is opened.
//!
//! A layout-9 store differs from layout 12 by its id counter, which
//! opening it adds (`kv`), and its member keys; a layout-10 or 11 store by
//! its member keys only (its records are read in their format): each
//! sitemap's member keys, one per URL on another host, become one per such
//! host, then its layout key is rewritten.
//!
//! The due index of layouts 9 to 12 (in lanes of runs, with their heads; a
//! client's queue per URL, counted by queue) is rebuilt from the URL
//! records, whatever the older layout: first the leases the due lists of
//! layouts 7 and 8 held are copied into their records (a record keeps a
//! copy of its lease until it is next written, which stands for its
//! entry's mark), then every due key and head is removed and each queued
//! record's entry written in its lane, in batches (its lease with it, and
//! the queue its host was filed under in layouts 6 to 8), then the filings
//! are removed and each queue's URLs counted into its record, and the
//! layout key is written last. A crash in the middle leaves the layout key
//! unwritten, so the next open starts over: each step is idempotent. A
//! layout-5 record is a record under a key of its own, which layout 6 on
//! reads as such; the rebuild reads pages and such keys alike.

use crate::error::StoreError;
use crate::keys;
use crate::kv::{Batch, Kv};
use crate::record::{HostRecord, Listed, UrlRecord, decode, encode};
use crate::runs::RunEdits;
use crate::tally::Tally;

/// Keys written per batch while rebuilding.
const BATCH: usize = 10_000;

/// Migrates `kv` to the current layout if it is older; refuses a newer one.
pub(crate) fn to_current_layout(kv: &Kv) -> Result<(), StoreError> {
    match kv.get(keys::LAYOUT)?.as_deref() {
        Some([v]) if *v == keys::LAYOUT_VERSION => return Ok(()),
        Some([v]) if *v > keys::LAYOUT_VERSION => return Err(StoreError::NewerLayout(*v)),
        // Its id counter was set when it was opened (`kv`), its records
        // read in their format: only the layout key changes.
        Some([v]) if keys::LAYOUTS_WITHOUT_REBUILD.contains(v) => {
            member_hosts(kv)?;
            let mut batch = Batch::default();
            batch.insert(keys::LAYOUT, [keys::LAYOUT_VERSION]);
            kv.apply_batch(batch)?;
            return kv.flush();
        }
        _ => {}
    }
    let empty = crate::pages::entries(kv, &[], &[0xff]).next().is_none();
    if !empty {
        tracing::info!(
            "rebuilding the due index and each queue's counts for key layout {}",
            keys::LAYOUT_VERSION
        );
        keep_leases(kv, false)?;
        rebuild_due_index(kv)?;
        clear(kv, keys::QUEUE_OF)?;
        clear(kv, keys::QUEUE_HOST)?;
        count_tallies(kv)?;
    }
    clear(kv, keys::TALLY)?;
    member_hosts(kv)?;
    let mut batch = Batch::default();
    batch.insert(keys::LAYOUT, [keys::LAYOUT_VERSION]);
    kv.apply_batch(batch)?;
    kv.flush()?;
    Ok(())
}

/// Turns the member keys of layouts up to 11, one per URL a sitemap lists
/// on another host (`m` ‖ id ‖ URL), into those of layout 12, one per such
/// host ([`keys::member`]), in batches. Idempotent: a key that names a
/// host is left as it is.
fn member_hosts(kv: &Kv) -> Result<(), StoreError> {
    let mut writes = Batched::new(kv);
    let mut last = Vec::new();
    for item in kv.scan_prefix([keys::MEMBER]) {
        let (key, _) = item?;
        let (Some(id), Some(url)) = (key.get(1..9), keys::suffix(&key)) else {
            continue;
        };
        if keys::scheme_end(url).is_none() {
            continue;
        }
        let id = u64::from_be_bytes(id.try_into().expect("eight bytes"));
        let per_host = keys::member(id, keys::host_of(url));
        if per_host != last {
            writes.insert(per_host.clone(), [])?;
            last = per_host;
        }
        writes.remove(key.to_vec())?;
    }
    writes.finish()
}

/// Every URL record that decodes, with its URL, in URL order (pages and
/// keys of their own).
fn records(kv: &Kv) -> impl Iterator<Item = (String, UrlRecord)> + '_ {
    crate::pages::entries(kv, &[], &[0xff]).filter_map(|item| {
        let (url, value) = item.ok()?;
        Some((url, decode::<UrlRecord>(&value).ok()?))
    })
}

/// Before the due index is rebuilt: each due entry that holds a lease
/// gives a copy of it to its record (under a key of its own, which stands
/// for its page's copy), where the rebuild finds it. The due index is read
/// in the layout the store has: due lists (key layouts 7 and 8) or runs
/// (`runs`, key layout 9). Reads the lists or runs that hold leases, and
/// the records of their leased entries only; what does not decode keeps
/// no lease. Idempotent.
pub(crate) fn keep_leases(kv: &Kv, runs: bool) -> Result<(), StoreError> {
    let mut writes = Batched::new(kv);
    for item in kv.scan_prefix([keys::DUE]) {
        let (key, value) = item?;
        // The due time of a legacy list's entries, which they do not hold.
        let list_due = if runs {
            None
        } else {
            let Some(due) = keys::legacy::parse_due(&key) else {
                continue;
            };
            if keys::legacy::as_list(due.url).is_none() {
                continue;
            }
            Some(due.at)
        };
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
            let its_own = match list_due {
                Some(at) => rec.schedule.due == at,
                None => rec.position(&entry.url) == entry.position(),
            };
            if !rec.queued() || !its_own {
                continue;
            }
            rec.schedule.lease = Some(lease);
            writes.insert(keys::url(&entry.url), encode(&rec))?;
        }
    }
    writes.finish()
}

/// Writes applied in batches of [`BATCH`]: a rebuild's, each step of which
/// is idempotent (a crash between two batches leaves what the next run
/// finishes).
pub(crate) struct Batched<'k> {
    kv: &'k Kv,
    batch: Batch,
    n: usize,
}

impl<'k> Batched<'k> {
    pub(crate) fn new(kv: &'k Kv) -> Batched<'k> {
        Batched {
            kv,
            batch: Batch::default(),
            n: 0,
        }
    }

    /// Inserts `key`, applying the batch when it is full.
    pub(crate) fn insert(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Result<(), StoreError> {
        self.batch.insert(key, value);
        self.counted()
    }

    /// Removes `key`, applying the batch when it is full.
    pub(crate) fn remove(&mut self, key: impl Into<Vec<u8>>) -> Result<(), StoreError> {
        self.batch.remove(key);
        self.counted()
    }

    /// Counts the write just added, applying the batch when it is full.
    fn counted(&mut self) -> Result<(), StoreError> {
        self.n += 1;
        if self.n == BATCH {
            self.n = 0;
            self.kv.apply_batch(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }

    /// Applies what is left.
    pub(crate) fn finish(self) -> Result<(), StoreError> {
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

/// Each queue's counts from one pass over the URL records (in key order,
/// so one host's records are together but for the scheme: the counts are
/// summed in memory, one entry per queue) and one over the runs (the
/// leases their entries hold), written into the records of the queues'
/// names: a host record that does not decode is replaced (its politeness
/// and trust start over, as they do when it is read), and a name with no
/// URL left keeps no counts (it is no longer a queue).
pub(crate) fn count_tallies(kv: &Kv) -> Result<(), StoreError> {
    count_tallies_seeing(kv, |_| {})
}

/// [`count_tallies`], showing `each` every URL record of its pass.
pub(crate) fn count_tallies_seeing(
    kv: &Kv,
    mut each: impl FnMut(&UrlRecord),
) -> Result<(), StoreError> {
    let mut tallies: std::collections::HashMap<String, Tally> = Default::default();
    // A record or page that does not decode is not counted; `check`
    // names it.
    for (url, mut rec) in records(kv) {
        each(&rec);
        // Its lease is its entry's, counted below.
        rec.schedule.lease = None;
        tallies
            .entry(rec.queue_name(&url).to_string())
            .or_default()
            .add(&Tally::of(&rec), 1);
    }
    for item in kv.scan_prefix([keys::DUE]) {
        let (key, value) = item?;
        let (Some(run), Ok(front)) = (keys::parse_run(&key), crate::due_list::leases(&value))
        else {
            continue;
        };
        if !front.leases.is_empty() {
            let tally = tallies.entry(run.queue.to_string()).or_default();
            for _ in &front.leases {
                tally.add_lease();
            }
        }
    }
    let mut writes = Batched::new(kv);
    for item in kv.scan_prefix([keys::HOST]) {
        let (key, value) = item?;
        let name = String::from_utf8_lossy(&key[1..]).into_owned();
        let mut record = crate::record::host_record_or_fresh(&key, Some(&value));
        record.counts = tallies.remove(&name);
        writes.insert(key.to_vec(), encode(&record))?;
    }
    for (name, tally) in tallies {
        let record = HostRecord {
            counts: Some(tally),
            ..HostRecord::default()
        };
        writes.insert(keys::host(&name), encode(&record))?;
    }
    writes.finish()
}

/// Rebuilds the due index from the URL records: every due key, head and
/// queue membership removed, then each queued record's entry written in
/// its lane (with the lease its record holds), in batches. A record whose
/// host key layouts 6 to 8 filed under a client's key (`q`) takes that key
/// as its queue. Idempotent.
pub(crate) fn rebuild_due_index(kv: &Kv) -> Result<(), StoreError> {
    clear(kv, keys::DUE)?;
    clear(kv, keys::HEAD)?;
    clear(kv, keys::QUEUE_MEMBER)?;
    let mut runs = RunEdits::default();
    let mut batch = Batch::default();
    let mut held = 0;
    // The last host's filing (records come host by host, but for the
    // scheme).
    let mut filed: Option<(String, Option<String>)> = None;
    // A record or page that does not decode keeps no entry; `check`
    // names it.
    for (url, mut rec) in records(kv) {
        let host = keys::host_of(&url);
        if rec.queue.is_none() {
            let key = match &filed {
                Some((h, key)) if h == host => key.clone(),
                _ => {
                    let key = kv
                        .get(keys::queue_of(host))?
                        .and_then(|k| String::from_utf8(k.to_vec()).ok())
                        .filter(|k| k != host);
                    filed = Some((host.to_string(), key.clone()));
                    key
                }
            };
            if key.is_some() {
                rec.queue = key;
                batch.insert(keys::url(&url), encode(&rec));
            }
        }
        if let Some(queue) = &rec.queue {
            batch.insert(keys::queue_member(queue, &url), []);
        }
        if rec.queued() {
            let lane = rec.lane(&url);
            let parts = (lane.as_slice(), rec.queue_name(&url), host, rec.class());
            runs.add(parts, Listed::of(&url, &rec));
            held += 1;
        }
        if held >= BATCH {
            std::mem::take(&mut runs).apply(kv, &mut batch)?;
            kv.apply_batch(std::mem::take(&mut batch))?;
            held = 0;
        }
    }
    runs.apply(kv, &mut batch)?;
    kv.apply_batch(batch)
}
