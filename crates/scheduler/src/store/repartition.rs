//! Bringing a store of one partition into several when it is opened with
//! more ([`StoreOptions::partitions`](crate::StoreOptions)).
//!
//! The store's own keyspace (partition 0) holds everything; each key goes
//! where a store made with that many partitions keeps it: a host's keys
//! (its URL records and pages, its lanes and their heads, its robots rules,
//! politeness and trust, a client's queue memberships of its URLs, its
//! followed sites) to the host's partition, a sitemap's keys (its record,
//! id, schedule, children) to its home, a sitemap's member key for another
//! host (`m`) to that host's. Then each partition counts what it holds:
//! each queue's URLs (in its host record) and each sitemap's members (in
//! its record of the sitemap; a partition holding URLs another partition's
//! sitemap lists gets a record of it of its own, with the same id, as an
//! ingest would have written, for their retirement). Ids are not
//! renumbered: every partition hands out ids past the store's counter.
//!
//! Crash-safe and idempotent, in two phases recorded in partition 0
//! ([`keys::REPARTITION`]): copying (the other partitions are emptied,
//! then written and counted from partition 0, which is not changed; a
//! crash starts the phase over) and then, once the copies are on disk,
//! removing from partition 0 what it no longer holds and counting it (a
//! crash goes on removing). The partition count is recorded last, with
//! the phase marker removed, in one write: until then the store opens as
//! one partition being repartitioned, which the open finishes first.

use std::collections::HashMap;

use crate::error::StoreError;
use crate::keys;
use crate::kv::{Batch, Kv};
use crate::migrate::Batched;
use crate::record::{SitemapRecord, decode, encode};
use crate::routing::{MAX_PARTITIONS, PSL_VERSION, Routes};

/// Bytes of writes held for the other partitions before they are written
/// (all of them: memory stays bounded whatever the number of partitions).
const HELD_BYTES: usize = 16 << 20;

/// Keys read per batch of removals from partition 0.
const REMOVE_BATCH: usize = 10_000;

/// Keys of partition 0's own every other partition gets a copy of.
const SETTINGS: [&[u8]; 4] = [
    keys::LAYOUT,
    keys::POLICY,
    keys::CALIBRATION,
    keys::DATED_FROM,
];

/// The phase a repartition is in, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The other partitions are being written from partition 0.
    Copying = 1,
    /// Partition 0 is losing what the others now hold.
    Removing = 2,
}

/// The partition count of the move partition 0's keyspace `kv` records,
/// if one was cut short.
pub(super) fn pending(kv: &Kv) -> Result<Option<u16>, StoreError> {
    Ok(recorded(kv)?.map(|(count, _)| count))
}

/// The move `kv` records, if one was cut short: its partition count and
/// phase.
fn recorded(kv: &Kv) -> Result<Option<(u16, Phase)>, StoreError> {
    let Some(bytes) = kv.get(keys::REPARTITION)? else {
        return Ok(None);
    };
    match bytes.as_ref() {
        [a, b, phase @ (1 | 2)] if (2..=MAX_PARTITIONS).contains(&u16::from_be_bytes([*a, *b])) => {
            let phase = match phase {
                1 => Phase::Copying,
                _ => Phase::Removing,
            };
            Ok(Some((u16::from_be_bytes([*a, *b]), phase)))
        }
        _ => Err(kv.damaged(format!("its repartition marker is {bytes:?}"))),
    }
}

/// Records that the move into `count` partitions is at `phase`, on disk.
fn record_phase(kv: &Kv, count: u16, phase: Phase) -> Result<(), StoreError> {
    let [a, b] = count.to_be_bytes();
    let mut batch = Batch::default();
    batch.insert(keys::REPARTITION, [a, b, phase as u8]);
    kv.apply_batch(batch)?;
    kv.flush()
}

/// Moves the store of one partition whose keyspace is `kv` into `count`
/// partitions, `kv` staying partition 0: `open(i)` opens partition `i`'s
/// keyspace (created if absent), `drop(i)` deletes it with every key in it.
pub(super) fn run(
    kv: &Kv,
    count: u16,
    open: &dyn Fn(usize) -> Result<Kv, StoreError>,
    drop: &dyn Fn(usize) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let routes = Routes::new(count);
    let started = std::time::Instant::now();
    let phase = match recorded(kv)? {
        Some((_, phase)) => phase,
        None => {
            // Partition 0 in the current layout first, so that every key
            // moved is one this build knows.
            crate::migrate::to_current_layout(kv)?;
            record_phase(kv, count, Phase::Copying)?;
            Phase::Copying
        }
    };
    tracing::info!(
        partitions = count,
        ?phase,
        "moving the store's hosts into their partitions"
    );
    if phase == Phase::Copying {
        // Whatever a copy cut short left goes first.
        for i in 1..routes.count() {
            drop(i)?;
        }
        let others = (1..routes.count())
            .map(open)
            .collect::<Result<Vec<Kv>, _>>()?;
        copy(kv, &others, routes)?;
        for (i, other) in others.iter().enumerate() {
            count_held(other, i + 1, routes, kv)?;
            other.flush()?;
        }
        record_phase(kv, count, Phase::Removing)?;
    }
    remove_moved(kv, routes)?;
    count_held(kv, 0, routes, kv)?;
    let mut batch = Batch::default();
    batch.insert(keys::PARTITIONS, count.to_be_bytes());
    batch.insert(keys::PSL, PSL_VERSION.as_bytes());
    batch.remove(keys::REPARTITION);
    kv.apply_batch(batch)?;
    kv.flush()?;
    tracing::info!(
        partitions = count,
        seconds = started.elapsed().as_secs_f64(),
        "the store's hosts are in their partitions"
    );
    Ok(())
}

/// Where a key of partition 0 goes.
#[derive(Debug, PartialEq, Eq)]
enum Home {
    /// Partition `0`'s own (a setting; anything this build does not know).
    Stays,
    /// Partition `i`.
    Partition(usize),
}

/// The partition key `key` (of a store of one partition, in the current
/// layout) belongs in; `kv` is that store's keyspace (an index's children
/// go to its home, found from its id).
fn home_of(key: &[u8], routes: Routes, kv: &Kv) -> Result<Home, StoreError> {
    let Some((&prefix, rest)) = key.split_first() else {
        return Ok(Home::Stays);
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let host = match prefix {
        keys::URL | keys::PAGE | keys::SITEMAP | keys::REFRESH => {
            keys::host_of(&text(rest)).to_string()
        }
        keys::HOST | keys::ROBOTS | keys::SUSPECT | keys::PUSHES => text(rest),
        keys::SITE => keys::host_of(&text(rest)).to_string(),
        keys::DUE => match keys::parse_run(key) {
            Some(run) => run.host.to_string(),
            None => return Ok(Home::Stays),
        },
        keys::HEAD => match keys::parse_head(key) {
            Some(head) => head.host.to_string(),
            None => return Ok(Home::Stays),
        },
        keys::QUEUE_MEMBER => match rest.iter().position(|&b| b == 0) {
            Some(at) => keys::host_of(&text(&rest[at + 1..])).to_string(),
            None => return Ok(Home::Stays),
        },
        // A host, or the URL of a member key an older layout wrote (a
        // move an older build began, which opening goes on with).
        keys::MEMBER => match keys::suffix(key) {
            Some(suffix) => keys::host_of(suffix).to_string(),
            None => return Ok(Home::Stays),
        },
        keys::SITEMAP_ID | keys::CHILD => {
            let Some(id) = rest.get(..8) else {
                return Ok(Home::Stays);
            };
            match kv.get([&[keys::SITEMAP_ID][..], id].concat())? {
                Some(url) => keys::host_of(&text(&url)).to_string(),
                None => return Ok(Home::Stays),
            }
        }
        _ => return Ok(Home::Stays),
    };
    Ok(match routes.of_host(&host) {
        0 => Home::Stays,
        i => Home::Partition(i),
    })
}

/// Writes held for the other partitions, written when they pass
/// [`HELD_BYTES`].
struct Held<'k> {
    others: &'k [Kv],
    batches: Vec<Batch>,
    bytes: usize,
}

impl Held<'_> {
    fn insert(&mut self, i: usize, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.batches[i - 1].insert(key, value);
        // A write's own memory beside its bytes (two vectors).
        self.bytes += key.len() + value.len() + 2 * std::mem::size_of::<Vec<u8>>();
        if self.bytes >= HELD_BYTES {
            self.write()?;
        }
        Ok(())
    }

    fn write(&mut self) -> Result<(), StoreError> {
        for (kv, batch) in self.others.iter().zip(&mut self.batches) {
            kv.apply_batch(std::mem::take(batch))?;
        }
        self.bytes = 0;
        Ok(())
    }
}

/// Copies every key of partition 0 (`kv`) that belongs in another into it
/// (`others[i - 1]` is partition `i`), with partition 0's settings in every
/// one, each handing out ids past partition 0's.
fn copy(kv: &Kv, others: &[Kv], routes: Routes) -> Result<(), StoreError> {
    let past = kv.next_id();
    let mut held = Held {
        others,
        batches: others.iter().map(|_| Batch::default()).collect(),
        bytes: 0,
    };
    for (i, other) in others.iter().enumerate() {
        other.hand_out_from(past);
        for key in SETTINGS {
            if let Some(value) = kv.get(key)? {
                held.insert(i + 1, key, &value)?;
            }
        }
    }
    let mut moved = 0u64;
    for item in kv.range(Vec::new()..vec![b'~']) {
        let (key, value) = item?;
        if let Home::Partition(i) = home_of(&key, routes, kv)? {
            held.insert(i, &key, &value)?;
            moved += 1;
        }
    }
    held.write()?;
    tracing::info!(keys = moved, "copied into the other partitions");
    Ok(())
}

/// Removes from partition 0 (`kv`) every key another partition holds now
/// (but sitemap records and ids, which [`settle_sitemaps`] keeps where
/// their URLs are), in batches: a crash between two leaves the rest for
/// the next run.
fn remove_moved(kv: &Kv, routes: Routes) -> Result<(), StoreError> {
    let mut from = Vec::new();
    loop {
        let mut batch = Batch::default();
        let mut read = 0;
        for item in kv.range(from.clone()..vec![b'~']).take(REMOVE_BATCH) {
            let (key, _) = item?;
            read += 1;
            from = [key.as_ref(), &[0]].concat();
            if matches!(key.first(), Some(&keys::SITEMAP | &keys::SITEMAP_ID)) {
                continue;
            }
            if let Home::Partition(_) = home_of(&key, routes, kv)? {
                batch.remove(key.to_vec());
            }
        }
        kv.apply_batch(batch)?;
        if read < REMOVE_BATCH {
            return Ok(());
        }
    }
}

/// Counts what partition `index` (`kv`) holds, in one pass over its URL
/// records: each queue's URLs into its host record
/// ([`crate::migrate::count_tallies`]), each sitemap's members into the
/// partition's record of it ([`settle_sitemaps`]).
fn count_held(kv: &Kv, index: usize, routes: Routes, source: &Kv) -> Result<(), StoreError> {
    // Each sitemap's URLs here (not retired), by id. A record or page
    // that does not decode counts nowhere; `check` names it.
    let mut members: HashMap<u64, u64> = HashMap::new();
    crate::migrate::count_tallies_seeing(kv, |rec| {
        for &(id, _) in &rec.sources {
            *members.entry(id).or_default() += u64::from(!rec.retired);
        }
    })?;
    settle_sitemaps(kv, index, routes, source, members)
}

/// Gives partition `index` (`kv`) a record of every sitemap listing URLs
/// it holds (`members`: their number, by sitemap id), with those URLs
/// counted (the record and id copied from `source`, partition 0, when it
/// has none), and removes its records of sitemaps neither at home here nor
/// listing any URL it holds. A sitemap's entries stay its home's: the other
/// partitions' shares of its last read start at none (a view sums them),
/// and each read writes its own. In batches: a crash between two leaves
/// what the next run counts again.
fn settle_sitemaps(
    kv: &Kv,
    index: usize,
    routes: Routes,
    source: &Kv,
    mut members: HashMap<u64, u64>,
) -> Result<(), StoreError> {
    let mut writes = Batched::new(kv);
    for item in kv.scan_prefix([keys::SITEMAP]) {
        let (key, value) = item?;
        let url = String::from_utf8_lossy(&key[1..]).into_owned();
        let Ok(mut record) = decode::<SitemapRecord>(&value) else {
            continue;
        };
        let home = routes.of_url(&url) == index;
        match members.remove(&record.id) {
            Some(n) => record.members = n,
            None if home => record.members = 0,
            None => {
                writes.remove(key.to_vec())?;
                writes.remove(keys::sitemap_id(record.id))?;
                continue;
            }
        }
        if !home {
            record.entries = 0;
        }
        writes.insert(key.to_vec(), encode(&record))?;
    }
    for (id, n) in members {
        let Some(url) = source.get(keys::sitemap_id(id))? else {
            continue;
        };
        let url = String::from_utf8_lossy(&url).into_owned();
        let Some(Ok(mut record)) = source
            .get(keys::sitemap(&url))?
            .map(|v| decode::<SitemapRecord>(&v))
        else {
            continue;
        };
        record.members = n;
        record.entries = 0;
        writes.insert(keys::sitemap(&url), encode(&record))?;
        writes.insert(keys::sitemap_id(id), url.as_bytes())?;
    }
    writes.finish()
}

#[cfg(test)]
#[path = "repartition_tests.rs"]
mod tests;
