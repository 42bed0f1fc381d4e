//! Ingest: sitemap observations into the store, in atomic batches.
//!
//! Observations are merged in memory per batch and applied under the
//! store's write lock at [`Ingest::commit`](crate::store::Ingest::commit): each URL record is read, merged,
//! rescheduled if what the policy sees changed, and written together with
//! its due-index entry in one sled batch. A crash loses at most the batches
//! not yet flushed, never the pairing of a record and its due entry. A
//! record the merge would change only in its sighting (the same entry, from
//! sitemaps that listed it last time) is not written: its stamps stand for
//! the read (`Listing`), which remembers its URL (a bounded number of them)
//! until it ends (`ReadEnd`). The sitemap's record, its refresh schedule and
//! its host's lastmod trust are written when its read ends
//! ([`Ingest::sitemap_fetched`](crate::store::Ingest::sitemap_fetched));
//! its record also with the read's first batch, which stores the read's
//! sequence as used (`Reading::reserved`).

use std::collections::{HashMap, HashSet};

use sitemapd_parser::UrlEntry;

use crate::error::StoreError;
use crate::hash::{FastMap, FastSet};
use crate::keys;
use crate::partition::Partition;
use crate::record::RefreshState;
use crate::record::{
    Extensions, HostRecord, LASTMOD_HISTORY, Listing, MAX_SOURCES, NOT_DATED, RECENT_READS,
    Schedule, SitemapRecord, StoredChangeFreq, StoredLastmod, StoredReason, UrlRecord, encode,
};
use crate::refresh::{self, Fingerprint, RefreshOutcome, RefreshRead};
use crate::time::Timestamp;
use crate::view::RefreshView;
use crate::writes::UrlWrites;

/// URLs merged in memory before a batch is written (measured: see the
/// store bench in docs/BENCHMARKS.md).
pub const DEFAULT_BATCH: usize = 2_000;

/// Children returned per index (the protocol's limit on an index).
pub const MAX_CHILDREN: usize = 50_000;

/// A lastmod this far past `now` is still believed (clock skew, time zones).
const FUTURE_TOLERANCE: i64 = 86_400;

/// What one session of ingest did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct IngestStats {
    /// Entries observed.
    pub entries: u64,
    /// URLs new to the store.
    pub new: u64,
    /// URLs whose schedule-relevant data changed (lastmod, hints).
    pub updated: u64,
    /// URLs seen again with nothing new.
    pub unchanged: u64,
    /// Entries of a URL this session had seen already (listed twice, in
    /// one sitemap or two): merged with the first (the newest lastmod, the
    /// highest priority), not counted again.
    pub duplicates: u64,
    /// Retired URLs seen again.
    pub revived: u64,
    /// URLs retired (absent from their sitemaps long enough).
    pub retired: u64,
    /// Sitemap reads recorded.
    pub sitemaps: u64,
}

impl std::ops::AddAssign for IngestStats {
    fn add_assign(&mut self, o: Self) {
        self.entries += o.entries;
        self.new += o.new;
        self.updated += o.updated;
        self.unchanged += o.unchanged;
        self.duplicates += o.duplicates;
        self.revived += o.revived;
        self.retired += o.retired;
        self.sitemaps += o.sitemaps;
    }
}

/// How a sitemap fetch ended, for [`Ingest::sitemap_fetched`](crate::store::Ingest::sitemap_fetched).
#[derive(Debug, Clone, Default)]
pub struct SitemapFetch {
    /// HTTP status (304 for not modified), 0 when no response came.
    pub status: u16,
    /// The fetch failed although a response came, maybe a 2xx one: the
    /// body was not a sitemap (an HTML page, a login wall), or it was cut
    /// before its format could be told. Recorded as a failure whatever
    /// `status` says: `status` is kept as the last status, the validators
    /// and the last success are not touched, the error count goes up.
    pub failed: bool,
    /// Every byte read and parsed: absences in it count toward retirement.
    pub complete: bool,
    /// `ETag` of the response.
    pub etag: Option<String>,
    /// `Last-Modified` of the response.
    pub last_modified: Option<String>,
    /// The index that listed it.
    pub parent: Option<String>,
    /// The site whose robots.txt authorised it.
    pub authorised_by: Option<String>,
    /// For a 2xx read of an index: the child sitemaps it lists (URLs as
    /// listed, at most [`MAX_CHILDREN`] are kept). After a complete read
    /// they replace the index's child set; after a cut read (a partial
    /// list) they are only added to it. `None`: the child set is left as
    /// it is (children still join it on their own fetch with `parent`).
    pub children: Option<Vec<String>>,
    /// The read's body was an RSS/Atom feed: refreshed hourly at first, at
    /// least daily ([`crate::refresh`]). For a 304 or a failure (no body)
    /// `false` means "as the last read said".
    pub feed: bool,
}

/// One sitemap being read in this session.
struct Reading {
    record: SitemapRecord,
    /// The sequence stamped on the URLs of this read.
    seq: u64,
    entries: u64,
    /// Distinct URLs stamped by this read.
    distinct: u64,
    /// The sitemap's host: the other hosts it lists URLs of get a member
    /// key ([`keys::member`]).
    host: String,
    /// The other hosts whose member key this read found or wrote.
    member_hosts: FastSet<Box<str>>,
    with_lastmod: u64,
    in_future: u64,
    lastmods: FastMap<i64, u64>,
    /// Of the entries of this read, for the refresh schedule.
    fingerprint: Fingerprint,
    /// The record must be written (new, or its member count grew).
    dirty: bool,
    /// The stored record holds this read's sequence as used: written with
    /// the first batch of its entries, so that a read cut short (the
    /// process killed, the fetch failed) leaves no stamp the next read
    /// would take for its own.
    reserved: bool,
    /// The URLs this read listed with nothing new, whose records it left
    /// as they were: stamped by an earlier read, which they still stand for
    /// ([`Listing`]). At most [`MAX_KEPT`].
    kept: FastSet<Box<str>>,
}

impl Reading {
    /// Its record as a batch of this read stores it: as it stood before
    /// the read (what this session reads stamps by), with the read's
    /// sequence once it is [`reserved`](Reading::reserved).
    fn stored(&self) -> SitemapRecord {
        let mut record = self.record.clone();
        if self.reserved {
            record.seq = self.seq;
        }
        record
    }
}

/// URLs a read leaves unwritten, at most: past this many (a sitemap over
/// the protocol's 50,000 URLs, which the parser's default limit stops), it
/// writes the rest as it would write a changed entry, so that its memory
/// stays bounded (about 100 bytes a URL: 6.5 MiB at most).
const MAX_KEPT: usize = 1 << 16;

/// A complete read ending: what tells the URLs it listed from those it
/// left out. It marks [`ABSENT`](crate::record::ABSENT) (since the read before, their last
/// listing) the URLs the read before listed and it did not, retired ones
/// included, and retires those absent from every sitemap that listed them
/// for `retire_after` complete reads.
struct ReadEnd {
    /// The sitemap's id.
    id: u64,
    /// The read's sequence.
    seq: u64,
    /// How the stamps read before it.
    before: Listing,
    /// The URLs it listed and left unwritten ([`Reading::kept`]).
    kept: FastSet<Box<str>>,
}

impl ReadEnd {
    /// The stamp, after this read, of `url` stamped `stamp`: marked absent
    /// since the read before if that read listed it and this one did not.
    fn stamp_after(&self, url: &str, stamp: u64) -> u64 {
        if stamp == self.seq || self.kept.contains(url) {
            stamp
        } else {
            self.before.mark_absent(stamp)
        }
    }
}

/// Observations of one URL merged within a batch.
#[derive(Debug, Clone)]
struct Observation {
    lastmod: Option<StoredLastmod>,
    changefreq: Option<StoredChangeFreq>,
    priority: Option<f32>,
    extensions: Extensions,
    /// (sitemap id, seq) of every sitemap that listed it in this batch.
    sources: Vec<(u64, u64)>,
}

/// An ingest session in one partition ([`crate::Ingest`] splits one
/// over the partitions): feed entries, report sitemap outcomes, commit.
pub(crate) struct PartitionIngest<'s> {
    store: &'s Partition,
    now: i64,
    batch: usize,
    /// URLs a read leaves unwritten, at most ([`MAX_KEPT`]).
    max_kept: usize,
    pending: FastMap<String, Observation>,
    readings: FastMap<String, Reading>,
    stats: IngestStats,
}

/// Whether a URL scheduled for `reason` was scheduled under another trust
/// than its host's now: on a rate schedule although the host is complete
/// (crawled on change), or waiting for the safety interval or a
/// validation sample although it no longer is.
fn schedule_outlived(reason: StoredReason, complete: bool) -> bool {
    match reason {
        StoredReason::Interval
        | StoredReason::Changefreq
        | StoredReason::Adaptive
        | StoredReason::Optimal => complete,
        StoredReason::Safety | StoredReason::Validation | StoredReason::LastmodPeriod => !complete,
        _ => false,
    }
}

impl Partition {
    /// Starts an ingest session at time `now` (unix seconds).
    pub(crate) fn ingest(&self, now: Timestamp) -> PartitionIngest<'_> {
        let now = now.unix();
        PartitionIngest {
            store: self,
            now,
            batch: DEFAULT_BATCH,
            max_kept: MAX_KEPT,
            pending: FastMap::default(),
            readings: FastMap::default(),
            stats: IngestStats::default(),
        }
    }

    /// The child sitemaps of the index at `index` (as listed), at most
    /// [`MAX_CHILDREN`], in URL order: those its last complete read listed
    /// ([`SitemapFetch::children`]), plus any fetched since with it as
    /// `parent`. An index never read with its list keeps every child ever
    /// fetched through it; a sitemap never read has none.
    pub(crate) fn children(&self, index: &str) -> Result<Vec<String>, StoreError> {
        let Some(record) = self.sitemap_record(index)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in self
            .kv
            .scan_prefix(keys::children_of(record.id))
            .take(MAX_CHILDREN)
        {
            let (key, _) = item?;
            if let Some(child) = keys::suffix(&key) {
                out.push(child.to_string());
            }
        }
        Ok(out)
    }
}

/// Whether `rec` is `original` but for its sighting: its last-seen time
/// and the stamps of the sitemaps that listed it (the same sitemaps, in
/// the same order). `original` takes `rec`'s sighting to compare (what a
/// write of it changes, its `Before`, depends on neither).
fn only_stamps_moved(original: &mut UrlRecord, rec: &UrlRecord) -> bool {
    if original.sources.len() != rec.sources.len()
        || original
            .sources
            .iter()
            .zip(&rec.sources)
            .any(|(a, b)| a.0 != b.0)
    {
        return false;
    }
    original.last_seen = rec.last_seen;
    for (a, b) in original.sources.iter_mut().zip(&rec.sources) {
        a.1 = b.1;
    }
    *original == *rec
}

/// The listings of the sitemaps in `ids` missing from `listings`, read.
fn load_listings(
    store: &Partition,
    listings: &mut HashMap<u64, Listing>,
    ids: impl Iterator<Item = u64>,
) -> Result<(), StoreError> {
    for id in ids {
        if let std::collections::hash_map::Entry::Vacant(slot) = listings.entry(id) {
            slot.insert(store.listing(id)?);
        }
    }
    Ok(())
}

impl<'s> PartitionIngest<'s> {
    /// URLs a read leaves unwritten at most (default [`MAX_KEPT`]).
    #[cfg(test)]
    pub(crate) fn with_max_kept(mut self, urls: usize) -> Self {
        self.max_kept = urls;
        self
    }

    /// URLs merged per batch (default [`DEFAULT_BATCH`]).
    pub(crate) fn with_batch(mut self, urls: usize) -> Self {
        self.batch = urls.max(1);
        self
    }

    /// The fingerprint of this partition's part of the read of `sitemap`
    /// in progress, if one is.
    pub(crate) fn fingerprint_of(&self, sitemap: &str) -> Option<Fingerprint> {
        self.readings.get(sitemap).map(|r| r.fingerprint)
    }

    /// Adds to the read of `sitemap` in progress the fingerprint of the
    /// other partitions' parts of it, so that its home judges the whole
    /// read changed or not.
    pub(crate) fn fingerprint_elsewhere(
        &mut self,
        sitemap: &str,
        elsewhere: &Fingerprint,
    ) -> Result<(), StoreError> {
        self.reading(sitemap)?.fingerprint.merge(elsewhere);
        Ok(())
    }

    /// What the session did so far.
    pub(crate) fn stats(&self) -> IngestStats {
        self.stats
    }

    /// Whether a complete read of this session that has ended (at `now`)
    /// listed the URL whose record is `rec` (and may have left it
    /// unwritten). `listings` holds the reads in progress as they stood
    /// before them: an earlier read of the same sitemap in this session
    /// counts.
    fn read_this_session(
        &self,
        rec: &UrlRecord,
        now: i64,
        listings: &mut HashMap<u64, Listing>,
    ) -> Result<bool, StoreError> {
        for &(id, stamp) in &rec.sources {
            load_listings(self.store, listings, std::iter::once(id))?;
            if listings[&id].sighting(stamp) == Some(now) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn reading(&mut self, sitemap: &str) -> Result<&mut Reading, StoreError> {
        if !self.readings.contains_key(sitemap) {
            let (mut record, dirty) = match self.store.sitemap_record(sitemap)? {
                Some(r) => (r, false),
                None => {
                    let id = self.store.kv.next_id() + 1;
                    (
                        SitemapRecord {
                            id,
                            ..SitemapRecord::default()
                        },
                        true,
                    )
                }
            };
            let seq = record.seq + 1;
            // A record written before stamps could stand for later reads:
            // its stamps from the last read on (that read's) say "listed",
            // as they do in a record that says nothing.
            record.present_from.get_or_insert(record.seq);
            self.readings.insert(
                sitemap.to_string(),
                Reading {
                    record,
                    seq,
                    entries: 0,
                    distinct: 0,
                    host: keys::host_of(sitemap).to_string(),
                    with_lastmod: 0,
                    in_future: 0,
                    lastmods: FastMap::default(),
                    fingerprint: Fingerprint::default(),
                    dirty,
                    reserved: false,
                    member_hosts: FastSet::default(),
                    kept: FastSet::default(),
                },
            );
        }
        Ok(self.readings.get_mut(sitemap).expect("inserted above"))
    }

    /// The robots.txt rules of `host` as a walk read them now
    /// ([`Store::set_robots`](crate::Store::set_robots)): what is pending is written first, so every
    /// URL is checked against the new rules.
    pub(crate) fn robots_read(
        &mut self,
        host: &sitemapd_parser::HostKey,
        rules: &sitemapd_parser::RobotsRules,
    ) -> Result<crate::robots::RobotsUpdate, StoreError> {
        self.commit()?;
        self.store
            .set_robots(host, rules, crate::time::Timestamp::from_unix(self.now))
    }

    /// One URL entry of the sitemap at `sitemap` (its URL as listed).
    pub(crate) fn entry(&mut self, sitemap: &str, entry: &UrlEntry) -> Result<(), StoreError> {
        let now = self.now;
        let believable = now.saturating_add(FUTURE_TOLERANCE);
        let reading = self.reading(sitemap)?;
        reading.entries += 1;
        reading.fingerprint.add_entry(entry);
        let source = (reading.record.id, reading.seq);
        let lastmod = entry.lastmod.map(|l| StoredLastmod {
            at: l.unix_seconds,
            precision: l.precision.into(),
        });
        if let Some(l) = lastmod {
            reading.with_lastmod += 1;
            *reading.lastmods.entry(l.at).or_default() += 1;
            if l.at > believable {
                reading.in_future += 1;
            }
        }
        // X8: a lastmod in the future is kept by the parser but not believed.
        let lastmod = lastmod.filter(|l| l.at <= believable);
        let observed = Observation {
            lastmod,
            changefreq: entry.changefreq.map(Into::into),
            // X10: only a number in [0, 1] is a priority.
            priority: entry
                .priority
                .filter(|p| p.is_finite() && (0.0..=1.0).contains(p)),
            extensions: Extensions {
                images: saturate(entry.images.len()),
                videos: saturate(entry.videos.len()),
                news: entry.news.is_some(),
                alternates: saturate(entry.alternates.len()),
            },
            sources: vec![source],
        };
        self.stats.entries += 1;
        match self.pending.get_mut(entry.loc.as_str()) {
            Some(o) => {
                self.stats.duplicates += 1;
                o.merge(observed);
            }
            None => {
                self.pending
                    .insert(entry.loc.as_str().to_string(), observed);
            }
        }
        if self.pending.len() >= self.batch {
            self.commit()?;
        }
        Ok(())
    }

    /// Records how the fetch of `sitemap` ended. Every 2xx read advances its
    /// sequence, and so does a read whose entries were stored before it
    /// failed; a complete one is remembered as such, and retires the URLs
    /// absent from enough complete reads. The sitemap's refresh schedule
    /// ([`crate::refresh`]) advances in the same batch as its record: a 2xx
    /// read is changed or unchanged by its fingerprint, a 304 unchanged,
    /// anything else failed.
    pub(crate) fn sitemap_fetched(
        &mut self,
        sitemap: &str,
        fetch: &SitemapFetch,
    ) -> Result<(), StoreError> {
        let now = self.now;
        let ok = !fetch.failed && (200..300).contains(&fetch.status);
        // Another partition's sitemap: this partition's account of its
        // reads (for the URLs it holds) has no schedule, children, parent
        // or trust of its own (its home's record has them).
        let home = self.store.is_home(sitemap);
        // An index's children before its schedule (below): after a crash
        // between the two, the index is due again (no schedule written)
        // rather than "not due" with children it never remembered.
        if ok
            && home
            && let Some(children) = &fetch.children
        {
            let id = self.reading(sitemap)?.record.id;
            self.replace_children(id, children, fetch.complete)?;
        }
        // The index that listed it, if known: one in this session's
        // readings may not be stored yet (it is written with this batch).
        let parent_id = match fetch.parent.as_ref().filter(|_| home) {
            Some(parent) => match self.readings.get(parent.as_str()) {
                Some(r) => Some(r.record.id),
                None => self.store.sitemap_record(parent)?.map(|p| p.id),
            },
            None => None,
        };
        // A complete read's URLs are written, and those it left out marked
        // absent (retired when absent long enough), before its record says
        // it was read: after a crash between the two, the read is as if it
        // had not been, and the absences it counted stand.
        let complete = ok && fetch.complete;
        self.commit()?;
        let reading = self.reading(sitemap)?;
        // Fewer distinct URLs than it has members: some are absent.
        if complete && reading.distinct < reading.record.members {
            let members = self.settle_absent(sitemap)?;
            self.reading(sitemap)?.record.members = members;
        } else if !complete {
            self.sight_kept(sitemap)?;
        }
        let reading = self.reading(sitemap)?;
        let mut fingerprint = reading.fingerprint;
        if let Some(children) = fetch.children.as_ref().filter(|_| ok) {
            for child in children {
                fingerprint.add_child(child);
            }
        }
        let fingerprint = fingerprint.value();
        let trust_input = (
            reading.with_lastmod,
            reading.lastmods.values().copied().max().unwrap_or(0),
            reading.in_future,
        );
        let store = self.store;
        let lock = store.lock_background();
        // What can fail is read before the records are staged: an error
        // leaves the read in progress, not half recorded.
        let refresh = match home {
            true => Some(self.refresh_after(sitemap, fetch, fingerprint)?),
            false => None,
        };
        let trust = if home && ok && trust_input.0 > 0 {
            let host = keys::host_of(sitemap);
            let mut h = store.host_record(host)?;
            h.trust
                .observe_sitemap(trust_input.0, trust_input.1, trust_input.2);
            Some((host, h))
        } else {
            None
        };
        // Its record with its refresh schedule and its host's trust, in one
        // batch (what was pending is written above).
        let mut writes = self.stage()?;
        // Its members as the staged URLs left them.
        let reading = self.readings.get(sitemap).expect("read above");
        let mut record = reading.record.clone();
        record.last_fetch = Some(now);
        record.last_status = fetch.status;
        if fetch.parent.is_some() {
            record.parent = fetch.parent.clone();
        }
        if fetch.authorised_by.is_some() {
            record.authorised_by = fetch.authorised_by.clone();
        }
        if ok || (!fetch.failed && fetch.status == 304) {
            record.last_success = Some(now);
            record.errors = 0;
            record.etag = fetch.etag.clone();
            record.last_modified = fetch.last_modified.clone();
        } else {
            record.errors = record.errors.saturating_add(1);
        }
        if reading.reserved {
            // Its entries were stamped with its sequence, whether or not
            // the read ends well: the next read takes the one after.
            record.seq = reading.seq;
        }
        if ok {
            record.entries = reading.entries;
            // Entries of this read were stamped with this sequence, whether
            // or not the read turns out complete.
            record.seq = reading.seq;
            if fetch.complete {
                record.read_completely(reading.seq, now);
            }
        }
        self.readings.remove(sitemap);
        if home {
            self.stats.sitemaps += 1;
        }
        let batch = writes.batch();
        batch.insert(keys::sitemap(sitemap), encode(&record));
        batch.insert(keys::sitemap_id(record.id), sitemap.as_bytes());
        if let Some(refresh) = refresh {
            batch.insert(keys::refresh(sitemap), encode(&refresh));
        }
        if let Some(id) = parent_id {
            // The index remembers its children, one key each.
            batch.insert(keys::child(id, sitemap), []);
        }
        if let Some((host, h)) = trust {
            // Written once, with the counts this batch changes.
            writes.host(host, h);
        }
        writes.apply()?;
        drop(lock);
        Ok(())
    }

    /// The refresh schedule of `sitemap` after this fetch (the caller holds
    /// the write lock). A schedule that does not decode starts over.
    fn refresh_after(
        &self,
        sitemap: &str,
        fetch: &SitemapFetch,
        fingerprint: u64,
    ) -> Result<RefreshState, StoreError> {
        let prev = match self.store.refresh_record(sitemap) {
            Ok(prev) => prev,
            Err(StoreError::Record { key, source }) => {
                tracing::warn!(%key, error = %source, "corrupt refresh schedule: starting over");
                self.store.kv.passed_over(&key);
                None
            }
            Err(e) => return Err(e),
        };
        let outcome = match fetch.status {
            _ if fetch.failed => RefreshOutcome::Failed,
            200..=299 if prev.is_some_and(|p| p.fingerprint == fingerprint) => {
                RefreshOutcome::Unchanged
            }
            200..=299 => RefreshOutcome::Changed { fingerprint },
            304 => RefreshOutcome::Unchanged,
            _ => RefreshOutcome::Failed,
        };
        // A 304 or a failure has no body to tell a feed by: as last time.
        let feed = if !fetch.failed && (200..300).contains(&fetch.status) {
            fetch.feed
        } else {
            fetch.feed || prev.is_some_and(|p| p.feed)
        };
        let read = RefreshRead {
            outcome,
            feed,
            jitter: refresh::jitter_unit(sitemap),
        };
        Ok(refresh::next(
            prev.as_ref(),
            read,
            &self.store.options.refresh,
            self.now,
        ))
    }

    /// Makes `listed` (its first [`MAX_CHILDREN`]) the child set of the
    /// index with this id: child keys it does not list are removed (after
    /// a `complete` read only: a cut read's list is partial), the missing
    /// ones inserted; in batches of at most the session's batch size, each
    /// under the write lock.
    fn replace_children(
        &mut self,
        id: u64,
        listed: &[String],
        complete: bool,
    ) -> Result<(), StoreError> {
        let store = self.store;
        let limit = self.batch;
        let listed: HashSet<&str> = listed
            .iter()
            .take(MAX_CHILDREN)
            .map(String::as_str)
            .collect();
        let flush = |batch: &mut crate::kv::Batch, ops: &mut usize| -> Result<(), StoreError> {
            if *ops > 0 {
                let _lock = store.lock_background();
                store.kv.apply_batch(std::mem::take(batch))?;
                *ops = 0;
            }
            Ok(())
        };
        let mut batch = crate::kv::Batch::default();
        let mut ops = 0usize;
        let (mut removed, mut added) = (0u64, 0u64);
        if complete {
            for item in store.kv.scan_prefix(keys::children_of(id)) {
                let (key, _) = item?;
                if keys::suffix(&key).is_some_and(|u| listed.contains(u)) {
                    continue;
                }
                batch.remove(key);
                ops += 1;
                removed += 1;
                if ops >= limit {
                    flush(&mut batch, &mut ops)?;
                }
            }
        }
        for child in listed {
            let key = keys::child(id, child);
            if store.kv.contains_key(&key)? {
                continue;
            }
            batch.insert(key, []);
            ops += 1;
            added += 1;
            if ops >= limit {
                flush(&mut batch, &mut ops)?;
            }
        }
        flush(&mut batch, &mut ops)?;
        tracing::debug!(index = id, added, removed, "index children updated");
        Ok(())
    }

    /// After a complete read of `url` that saw fewer distinct URLs than it
    /// has members: settles its URLs ([`ReadEnd`]) and counts its members
    /// (not retired) after it. Its URLs are those on its own host and on
    /// the hosts it has a member key for (the other hosts it lists URLs
    /// of): every record of those hosts is read.
    fn settle_absent(&mut self, url: &str) -> Result<u64, StoreError> {
        let k = self
            .store
            .options
            .retire_after
            .clamp(1, RECENT_READS as u64) as usize;
        let now = self.now;
        let reading = self.readings.get_mut(url).expect("a read in progress");
        let read = ReadEnd {
            id: reading.record.id,
            seq: reading.seq,
            before: Listing::of(&reading.record),
            kept: std::mem::take(&mut reading.kept),
        };
        let mut after = reading.record.clone();
        after.read_completely(read.seq, now);
        let mut listings: HashMap<u64, Listing> = HashMap::from([(read.id, Listing::of(&after))]);
        let mut candidates = Vec::new();
        let mut members = 0u64;
        // Whether it is a member (listed, not retired); a candidate if the
        // read marks it or it may retire.
        let consider = |url: &str,
                        rec: &UrlRecord,
                        candidates: &mut Vec<String>,
                        listings: &HashMap<u64, Listing>| {
            let Some(&(_, stamp)) = rec.sources.iter().find(|(id, _)| *id == read.id) else {
                return false;
            };
            let now_stamp = read.stamp_after(url, stamp);
            let retires = !rec.retired && listings[&read.id].absences(now_stamp) >= k;
            if now_stamp != stamp || retires {
                candidates.push(url.to_string());
            }
            !rec.retired
        };
        // Its URLs on its own host.
        for item in self.store.host_urls(keys::host_of(url)) {
            let (u, rec) = item?;
            members += u64::from(consider(&u, &rec, &mut candidates, &listings));
            if candidates.len() >= self.batch {
                members -= self.settle_batch(&mut candidates, &read, &mut listings, k)?;
            }
        }
        // Its URLs on the other hosts it lists URLs of (one member key each:
        // opening a store migrates the older per-URL keys).
        for item in self.store.kv.scan_prefix(keys::members_of(read.id)) {
            let (key, _) = item?;
            let Some(host) = keys::suffix(&key) else {
                continue;
            };
            for item in self.store.host_urls(host) {
                let (u, rec) = item?;
                members += u64::from(consider(&u, &rec, &mut candidates, &listings));
                if candidates.len() >= self.batch {
                    members -= self.settle_batch(&mut candidates, &read, &mut listings, k)?;
                }
            }
        }
        members -= self.settle_batch(&mut candidates, &read, &mut listings, k)?;
        Ok(members)
    }

    /// Marks absent those of `urls` the read left out, and retires those
    /// absent everywhere long enough; how many it retired.
    fn settle_batch(
        &mut self,
        urls: &mut Vec<String>,
        read: &ReadEnd,
        listings: &mut HashMap<u64, Listing>,
        k: usize,
    ) -> Result<u64, StoreError> {
        let mut retired = 0;
        let store = self.store;
        let _lock = store.lock_background();
        let mut writes = UrlWrites::paged(store);
        for url in urls.drain(..) {
            let Ok(Some(mut before)) = writes.read(&url) else {
                continue;
            };
            let mut sources = before.sources.clone();
            // Its last sighting there when the read marks it: the last
            // complete read, which may have left its record as it was.
            let mut seen = None;
            if let Some(source) = sources.iter_mut().find(|(id, _)| *id == read.id) {
                let stamp = read.stamp_after(&url, source.1);
                if stamp != source.1 {
                    seen = Some(read.before.sighting(source.1));
                }
                source.1 = stamp;
            }
            let marked = seen.is_some();
            load_listings(store, listings, sources.iter().map(|(id, _)| *id))?;
            let absent_everywhere = !before.retired
                && sources
                    .iter()
                    .all(|(id, stamp)| listings[id].absences(*stamp) >= k);
            if !marked && !absent_everywhere {
                continue;
            }
            let was = writes.before(&url, &mut before)?;
            let mut rec = before;
            rec.sources = sources;
            if let Some(Some(at)) = seen {
                rec.last_seen = rec.last_seen.max(at);
            }
            if absent_everywhere {
                rec.retired = true;
                self.stats.retired += 1;
                retired += 1;
            }
            writes.put(&url, Some(&was), &mut rec)?;
        }
        writes.apply()?;
        Ok(retired)
    }

    /// After a read of `url` that is not complete (cut, failed, or whose
    /// end was not reported): the URLs it listed and left as they were
    /// were seen now, which only a complete read's time stands for
    /// ([`SitemapRecord::last_read`](crate::record::SitemapRecord::last_read)); their
    /// records take the sighting, in batches.
    fn sight_kept(&mut self, url: &str) -> Result<(), StoreError> {
        let Some(reading) = self.readings.get_mut(url) else {
            return Ok(());
        };
        let mut kept: Vec<Box<str>> = std::mem::take(&mut reading.kept).into_iter().collect();
        // In URL order: each page read once.
        kept.sort_unstable();
        let store = self.store;
        for part in kept.chunks(self.batch) {
            let _lock = store.lock_background();
            let mut writes = UrlWrites::paged(store);
            for url in part {
                let Ok(Some(mut before)) = writes.read(url) else {
                    continue;
                };
                if before.last_seen >= self.now {
                    continue;
                }
                let was = writes.before(url, &mut before)?;
                let mut rec = before;
                rec.last_seen = self.now;
                writes.put(url, Some(&was), &mut rec)?;
            }
            writes.apply()?;
        }
        Ok(())
    }

    /// Writes the merged observations: one atomic batch.
    pub(crate) fn commit(&mut self) -> Result<(), StoreError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let _lock = self.store.lock_background();
        // What each read has counted before the batch.
        let counted: Vec<(String, u64, u64)> = self
            .readings
            .iter()
            .map(|(url, r)| (url.clone(), r.record.members, r.distinct))
            .collect();
        let stats = self.stats;
        let written = self.stage().and_then(UrlWrites::apply);
        if written.is_err() {
            // What this batch was to store of the reads (their records,
            // sequences, member keys) is not taken for stored: the next
            // batch writes it again; what it counted is taken back (its
            // URLs' counts too: they were not stored).
            self.stats = stats;
            for (url, members, distinct) in counted {
                if let Some(reading) = self.readings.get_mut(&url) {
                    reading.record.members = members;
                    reading.distinct = distinct;
                }
            }
            for reading in self.readings.values_mut() {
                reading.dirty = true;
                reading.reserved = false;
                reading.member_hosts.clear();
            }
        }
        written
    }

    /// The merged observations as a batch of writes, not yet applied: the
    /// caller holds the store's write lock until it applies them.
    fn stage(&mut self) -> Result<UrlWrites<'s>, StoreError> {
        let store = self.store;
        let now = self.now;
        let mut writes = UrlWrites::paged(store);
        let mut hosts: FastMap<String, HostRecord> = FastMap::default();
        let mut rules = crate::robots::RulesCache::new(store);
        // Each source's reads: those of this session as they stood before
        // it (what a URL's stamp meant when it was read), others as stored.
        let mut listings: HashMap<u64, Listing> = self
            .readings
            .values()
            .map(|r| (r.record.id, Listing::of(&r.record)))
            .collect();
        // The reads of this session, by (sitemap id, sequence).
        let session: FastSet<(u64, u64)> = self
            .readings
            .values()
            .map(|r| (r.record.id, r.seq))
            .collect();
        // In URL order: each page is read once, and its keys of their own
        // in one scan from its first URL read (see `Pages`).
        let mut pending: Vec<(String, Observation)> = self.pending.drain().collect();
        pending.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (url, seen) in pending {
            let host_name = keys::host_of(&url);
            if !hosts.contains_key(host_name) {
                hosts.insert(host_name.to_string(), store.host_record(host_name)?);
            }
            let host = hosts.get_mut(host_name).expect("inserted above");
            let existing = writes.read(&url)?;
            let new = existing.is_none();
            // Its lease, which a listed record's entry holds, is read only
            // if it may move (below): most of a re-read sitemap's URLs stay
            // where they are, and so does the lease with them.
            // The record as read: what tells an entry that brings nothing
            // new (only its stamps would move), which is not written, and
            // what a write changes (its `Before`, made only for a write).
            let mut original = existing.clone();
            let mut before = None;
            let mut rec = existing.unwrap_or_else(|| UrlRecord::new(now, &seen.sources));
            let revived = !new && rec.retired;
            // A read of this session listed it with nothing new already.
            let kept_before = self
                .readings
                .values()
                .any(|r| r.kept.contains(url.as_str()));
            let same_session = !new
                && (rec.last_seen == now
                    || kept_before
                    || self.read_this_session(&rec, now, &mut listings)?);
            // A read of this session listed it in an earlier batch: this
            // is its entry again (the same sitemap, or another).
            let seen_before = same_session
                && (kept_before || rec.sources.iter().any(|source| session.contains(source)));
            // The last read known to show what the URL's entry showed
            // before: a sitemap of this read whose last body read listed it
            // showed the same in every 304 since. Known only when one
            // sitemap lists the URL (another may lag, or never move it).
            let sole = seen.sources.len() == 1
                && rec.sources.iter().all(|(id, _)| *id == seen.sources[0].0);
            let mut last_read = sole.then_some(rec.last_seen);
            // Whether every sitemap listing it now listed it last time too
            // (then its stamps need not move: they stand for this read).
            let mut listed_last_time = true;
            for &(id, seq) in &seen.sources {
                let stamp = rec.sources.iter().find(|(s, _)| *s == id).map(|s| s.1);
                if let Some(r) = self.readings.values_mut().find(|r| r.record.id == id) {
                    if stamp.is_none() || revived {
                        // A new (or returning) member of this sitemap.
                        r.record.members += 1;
                        r.dirty = true;
                        if stamp.is_none()
                            && host_name != r.host
                            && !r.member_hosts.contains(host_name)
                        {
                            let key = keys::member(id, host_name);
                            if !store.kv.contains_key(&key)? {
                                writes.batch().insert(key, []);
                            }
                            r.member_hosts.insert(host_name.into());
                        }
                    }
                    if stamp != Some(seq) && !r.kept.contains(url.as_str()) {
                        r.distinct += 1;
                    }
                    let listed = stamp.is_some_and(|s| listings[&id].lists(s));
                    if listed {
                        last_read = last_read.max(r.record.last_success.filter(|_| sole));
                    }
                    listed_last_time &= listed && r.kept.len() < self.max_kept;
                } else {
                    listed_last_time = false;
                }
            }
            let hints_changed = rec.apply(&seen, now, same_session, last_read);
            // Eviction (a full source list and a new source) needs each
            // source's recent reads; the common case needs nothing.
            let evicting = rec.sources.len() >= MAX_SOURCES
                && seen
                    .sources
                    .iter()
                    .any(|(id, _)| !rec.sources.iter().any(|(s, _)| s == id));
            if evicting {
                load_listings(store, &mut listings, rec.sources.iter().map(|(id, _)| *id))?;
            }
            rec.add_sources(&seen.sources, &listings);
            rec.retired = false;
            let was_blocked = rec.blocked;
            rules.mark(&url, &mut rec)?;
            // Back from a block its rules lifted meanwhile: scheduled anew.
            let unblocked = was_blocked && !rec.blocked;
            // A push notification's "due now" stands until the URL is
            // fetched: a sitemap's news does not push it later.
            let notified = !revived && rec.schedule.reason == StoredReason::Notified;
            let changed = new || revived || hints_changed || unblocked;
            // A host that became complete (or stopped being) since the URL
            // was scheduled: out of (or back into) the rate schedule now,
            // not at its next fetch, if the policy says so (a policy that
            // does not crawl on change answers with the same reason, and
            // the URL keeps the due time it has).
            let outlived = !changed
                && rec.lastmod.is_some()
                && schedule_outlived(rec.schedule.reason, host.trust.is_complete());
            if let (Some(read), true) = (original.as_ref(), changed || outlived || rec.blocked) {
                let before = before.insert(writes.before_in_place(&url, read));
                writes.with_lease(&url, &mut rec, before)?;
            }
            let leased = crate::record::lease_holds(rec.schedule.lease, now);
            if (changed || outlived) && !leased {
                let due = store.schedule(&url, &rec, host, now);
                let same_mode = outlived && due.reason == rec.schedule.reason;
                let keep = same_mode || (notified && rec.schedule.due <= due.due);
                if !keep {
                    rec.schedule = due;
                }
            }
            // Kept as it is, unless it is under a key of its own (a
            // completion's), which the write folds back into its page.
            let keep = listed_last_time
                && original
                    .as_mut()
                    .is_some_and(|o| only_stamps_moved(o, &rec))
                && !writes.foldable(&url)?;
            if keep {
                // Each reading that listed it keeps it; the last takes the
                // URL itself.
                let mut url: Option<Box<str>> = Some(url.into_boxed_str());
                for (n, &(id, _)) in seen.sources.iter().enumerate() {
                    if let Some(r) = self.readings.values_mut().find(|r| r.record.id == id) {
                        let last = n + 1 == seen.sources.len();
                        let key = if last { url.take() } else { url.clone() };
                        r.kept.extend(key);
                    }
                }
            } else {
                if before.is_none() {
                    before = original.map(|read| writes.before_in_place(&url, &read));
                }
                writes.put(&url, before.as_ref(), &mut rec)?;
            }
            match (new, revived, hints_changed) {
                _ if seen_before => self.stats.duplicates += 1,
                (true, _, _) => self.stats.new += 1,
                (_, true, _) => self.stats.revived += 1,
                (_, _, true) => self.stats.updated += 1,
                _ => self.stats.unchanged += 1,
            }
        }
        for (url, reading) in &mut self.readings {
            let reserve = !reading.reserved && reading.entries > 0;
            if std::mem::take(&mut reading.dirty) || reserve {
                reading.reserved |= reserve;
                let batch = writes.batch();
                batch.insert(keys::sitemap(url), encode(&reading.stored()));
                batch.insert(keys::sitemap_id(reading.record.id), url.as_bytes());
            }
        }
        Ok(writes)
    }

    /// Commits what is pending and ends the reads whose outcome was not
    /// reported ([`PartitionIngest::sitemap_fetched`]) as cut reads: the
    /// URLs they listed were seen now (those they left as they were
    /// included, [`ReadEnd`]), and no absence is counted.
    pub(crate) fn end(&mut self) -> Result<(), StoreError> {
        self.commit()?;
        let open: Vec<String> = self.readings.keys().cloned().collect();
        let mut batch = crate::kv::Batch::default();
        for url in open {
            self.sight_kept(&url)?;
            let reading = self.readings.remove(&url).expect("listed above");
            // Its entries were stamped with its sequence: the next read
            // takes the one after, as after a cut read.
            if reading.reserved {
                let mut record = reading.stored();
                record.entries = reading.entries;
                batch.insert(keys::sitemap(&url), encode(&record));
                batch.insert(keys::sitemap_id(record.id), url.as_bytes());
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        let _lock = self.store.lock_background();
        self.store.kv.apply_batch(batch)
    }

    /// Commits what is pending and ends the session ([`PartitionIngest::end`]).
    #[cfg(test)]
    pub(crate) fn finish(mut self) -> Result<IngestStats, StoreError> {
        self.end()?;
        Ok(self.stats)
    }
}

fn saturate(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

impl Observation {
    /// Two sightings in one batch: newest lastmod, highest priority, most
    /// frequent changefreq, the larger extension counts.
    fn merge(&mut self, other: Observation) {
        self.lastmod = newest(self.lastmod, other.lastmod);
        self.priority = max_priority(self.priority, other.priority);
        self.changefreq = most_frequent(self.changefreq, other.changefreq);
        self.extensions = Extensions {
            images: self.extensions.images.max(other.extensions.images),
            videos: self.extensions.videos.max(other.extensions.videos),
            news: self.extensions.news || other.extensions.news,
            alternates: self.extensions.alternates.max(other.extensions.alternates),
        };
        for s in other.sources {
            if !self.sources.iter().any(|(id, _)| *id == s.0) {
                self.sources.push(s);
            }
        }
    }
}

impl UrlRecord {
    /// A record first seen at `now` in the first of `sources` (0: none,
    /// a URL first known from a push notification).
    #[cfg_attr(not(feature = "internal"), allow(unreachable_pub))]
    pub fn new(now: i64, sources: &[(u64, u64)]) -> Self {
        UrlRecord {
            first_seen: now,
            first_source: sources.first().map_or(0, |s| s.0),
            last_seen: now,
            lastmod: None,
            lastmod_history: Vec::new(),
            changefreq: None,
            priority: None,
            extensions: Extensions::default(),
            fetch: Default::default(),
            visits: Vec::new(),
            interval: None,
            schedule: Schedule {
                due: now,
                score: 0.0,
                reason: StoredReason::New,
                lease: None,
            },
            retired: false,
            sources: Vec::new(),
            notified: None,
            blocked: false,
            lapsed: None,
            repeats: 0,
            last_status: 0,
            redirected_from: None,
            completed: false,
            metadata: Vec::new(),
            queue: None,
        }
    }

    /// Merges a sighting (see the crate docs for the rule); whether what
    /// the policy sees changed. `last_read`: the last read (a 304, say)
    /// known to show what the URL's entry showed before, if one is known.
    fn apply(
        &mut self,
        seen: &Observation,
        now: i64,
        same_session: bool,
        last_read: Option<i64>,
    ) -> bool {
        let before = (self.lastmod, self.changefreq, self.priority);
        self.last_seen = now;
        self.lastmod = newest(self.lastmod, seen.lastmod);
        if let Some(l) = seen.lastmod
            && !self.lastmod_history.iter().any(|(v, _)| *v == l.at)
        {
            let read = match last_read {
                Some(read) if !self.lastmod_history.is_empty() && !same_session && read < now => {
                    read
                }
                _ => NOT_DATED,
            };
            self.lastmod_history.push((l.at, read));
            if self.lastmod_history.len() > LASTMOD_HISTORY {
                self.lastmod_history.remove(0);
            }
        }
        if same_session {
            self.priority = max_priority(self.priority, seen.priority);
            self.changefreq = most_frequent(self.changefreq, seen.changefreq);
        } else {
            self.priority = seen.priority;
            self.changefreq = seen.changefreq;
        }
        self.extensions = seen.extensions;
        before != (self.lastmod, self.changefreq, self.priority)
    }

    /// Stamps the sources; when full, replaces the one that has gone the
    /// most complete reads without listing it (`listings`: each source's
    /// reads).
    fn add_sources(&mut self, seen: &[(u64, u64)], listings: &HashMap<u64, Listing>) {
        for &(id, seq) in seen {
            if let Some(entry) = self.sources.iter_mut().find(|(s, _)| *s == id) {
                entry.1 = seq;
            } else if self.sources.len() < MAX_SOURCES {
                self.sources.push((id, seq));
            } else if let Some(stalest) = self
                .sources
                .iter_mut()
                .max_by_key(|(s, stamp)| listings.get(s).map_or(usize::MAX, |l| l.absences(*stamp)))
            {
                *stalest = (id, seq);
            }
        }
    }
}

fn newest(a: Option<StoredLastmod>, b: Option<StoredLastmod>) -> Option<StoredLastmod> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.at > x.at { y } else { x }),
        (x, y) => x.or(y),
    }
}

fn max_priority(a: Option<f32>, b: Option<f32>) -> Option<f32> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn most_frequent(
    a: Option<StoredChangeFreq>,
    b: Option<StoredChangeFreq>,
) -> Option<StoredChangeFreq> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.rank() < x.rank() { y } else { x }),
        (x, y) => x.or(y),
    }
}

impl Partition {
    /// The refresh schedule of the sitemap at `sitemap` (its URL as
    /// listed), if it was ever fetched through an ingest session.
    pub(crate) fn refresh_state(&self, sitemap: &str) -> Result<Option<RefreshView>, StoreError> {
        Ok(self.refresh_record(sitemap)?.as_ref().map(RefreshView::of))
    }

    /// The stored refresh schedule of `sitemap`.
    pub(crate) fn refresh_record(&self, sitemap: &str) -> Result<Option<RefreshState>, StoreError> {
        self.get(&keys::refresh(sitemap))
    }

    /// Whether the sitemap at `sitemap` is due for a read at `now`: true
    /// when it has no schedule yet.
    pub(crate) fn sitemap_due(&self, sitemap: &str, now: Timestamp) -> Result<bool, StoreError> {
        let now = now.unix();
        Ok(self
            .refresh_record(sitemap)?
            .is_none_or(|s| s.next_at <= now))
    }
}
