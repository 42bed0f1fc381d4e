//! The store: the URLs, sitemaps and hosts sitemapd knows, and the crawl
//! queue over them, in a keyspace on disk (sled) or in memory.
//!
//! A store is made of partitions: each host's keys
//! (its URLs, their due lists, its robots rules and politeness) and each
//! sitemap's live in the partition its registrable domain hashes to, with
//! a keyspace and a write lock of its own. A call about one URL, host or
//! sitemap takes that partition's lock only; a call over many URLs
//! (completions, notifications, URLs put) is split by partition and the
//! parts applied side by side, each part one atomic write; a lease reads
//! the partitions' queues merged in the one queue order; counts and views
//! are summed and merged over the partitions.
//!
//! A crash in the middle of a call over several partitions leaves each
//! partition whole, with the parts applied before the crash written and
//! the others not: calling again with the same input applies the rest
//! (a completion or notification already applied is applied again as a
//! repeat would be).

mod compaction;
mod ingest;
mod lease;
mod repartition;
mod replication;
#[cfg(test)]
mod replication_tests;
mod split;
#[cfg(test)]
mod test_history;
mod views;

pub use crate::options::{DEFAULT_POLICY, EARLIER_DEFAULT_POLICY, StoreOptions};
pub use compaction::Compaction;
pub use ingest::Ingest;

use std::path::Path;
use std::sync::{Arc, Mutex};

pub use crate::error::{DecodeError, StoreError};
use crate::keys;
use crate::kv::{Batch, Kv};
use crate::partition::{Credits, Partition};
use crate::policy::{Calibration, PageSummary, Policy};
use crate::routing::{MAX_PARTITIONS, PSL_VERSION, Routes};
use crate::time::Timestamp;
use crate::view::{HostView, RefreshView, SiteView, SitemapView, UrlView};
use sitemapd_parser::{HostKey, NormUrl, RobotsRules};

/// The keyspace of crawl `name` is named this prefix and the name.
const CRAWL_TREE: &str = "crawl:";

/// The keyspace of partition `i` (from 1; partition 0 is the store's own
/// keyspace) is named the store's keyspace name, this, and `i`.
const PARTITION_TREE: &str = "/part:";

/// The store; share it behind an `Arc`. Calls about different partitions
/// run side by side.
pub struct Store {
    /// Partition `i` at index `i`.
    parts: Vec<Partition>,
    routes: Routes,
    /// What the leases so far have earned the URLs served ahead of their
    /// turn ([`Store::lease`]), over every partition.
    pub(crate) credits: Mutex<Credits>,
    /// The write log its batches are appended to ([`Store::log_writes_to`]).
    log: std::sync::OnceLock<Arc<dyn crate::WriteLog>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("partitions", &self.parts.len())
            .field("policy", &self.policy().name())
            .field("options", self.options())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (or creates) the store in directory `path`.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store, StoreError> {
        let kv = Kv::open(path.as_ref(), options.cache_bytes)?;
        Store::with_kv(kv, String::new(), options)
    }

    /// A store in memory, empty, gone when dropped: for simulations and
    /// tests, where a store is thrown away after one run. The same store in
    /// every respect but durability: every read and write goes through the
    /// same code as on disk, on an ordered map instead of sled.
    pub fn in_memory(options: StoreOptions) -> Result<Store, StoreError> {
        Store::with_kv(Kv::memory(), String::new(), options)
    }

    /// The store whose own keyspace (partition 0) is `kv`, named `base`.
    fn with_kv(kv: Kv, base: String, options: StoreOptions) -> Result<Store, StoreError> {
        let mut count = partition_count(&kv, &options)?;
        // A store of one partition opened with more is brought into them
        // (and one whose repartition was cut short finishes it).
        let wanted = options.partitions.clamp(1, MAX_PARTITIONS);
        let repartition = match count {
            1 => repartition::pending(&kv)?.or((wanted > 1).then_some(wanted)),
            _ => None,
        };
        if count > 1 || repartition.is_some() {
            // Partitions whose batches ran one at a time would share one
            // writer after all.
            kv.batches_side_by_side();
        }
        if let Some(to) = repartition {
            repartition::run(&kv, to, &|i| kv.sibling(&partition_tree(&base, i)), &|i| {
                kv.drop_sibling(&partition_tree(&base, i)).map(|_| ())
            })?;
            count = to;
        }
        let routes = Routes::new(count);
        let mut kvs = Vec::with_capacity(routes.count());
        for i in 1..routes.count() {
            kvs.push(kv.sibling(&partition_tree(&base, i))?);
        }
        let mut parts = Vec::with_capacity(routes.count());
        parts.push(Partition::with_kv_at(kv, options.clone(), 0, routes)?);
        for (i, kv) in kvs.into_iter().enumerate() {
            parts.push(Partition::with_kv_at(kv, options.clone(), i + 1, routes)?);
        }
        Ok(Store {
            parts,
            routes,
            credits: Mutex::new(Credits::default()),
            log: std::sync::OnceLock::new(),
        })
    }

    /// The store of crawl `name` (see [`crate::frontier`]): a store of its
    /// own in keyspaces of its own beside this store's (on disk, trees of
    /// the same database), with this store's options, so that no key of
    /// one crawl is ever another's. Created when first opened, with as
    /// many partitions as this store.
    pub fn crawl(&self, name: &str) -> Result<Store, StoreError> {
        let base = format!("{CRAWL_TREE}{name}");
        let kv = self.parts[0].kv.sibling(&base)?;
        let options = StoreOptions {
            partitions: self.routes.count() as u16,
            ..self.options().clone()
        };
        let mut crawl = Store::with_kv(kv, base, options)?;
        // A partition this store does not serve, its crawls do not either.
        for (part, ours) in crawl.parts.iter_mut().zip(&self.parts) {
            part.serving = ours.serving.clone();
        }
        if let Some(log) = self.write_log() {
            crawl.log_writes_to(log);
        }
        Ok(crawl)
    }

    /// The names of the crawls [`Store::crawl`] created, in name order.
    pub fn crawl_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.parts[0]
            .kv
            .sibling_names(CRAWL_TREE)
            .into_iter()
            .filter(|n| !n.contains(PARTITION_TREE))
            .map(|n| n[CRAWL_TREE.len()..].to_string())
            .collect();
        names.sort();
        names
    }

    /// Deletes crawl `name` with everything in it; whether it was there.
    /// A [`Store`] still open on it must not be used after. Refused
    /// ([`StoreError::LogRefused`]) for a store with a write log.
    pub fn drop_crawl(&self, name: &str) -> Result<bool, StoreError> {
        if self.write_log().is_some() {
            // Dropping keyspaces is no batch: it would not reach the log.
            return Err(StoreError::LogRefused {
                partition: 0,
                detail:
                    "deleting a crawl is not replicated: a store with a write log keeps its crawls"
                        .into(),
            });
        }
        let base = format!("{CRAWL_TREE}{name}");
        let _locks = self.lock_all();
        let kv = &self.parts[0].kv;
        for part in kv.sibling_names(&format!("{base}{PARTITION_TREE}")) {
            kv.drop_sibling(&part)?;
        }
        kv.drop_sibling(&base)
    }

    /// Every partition's write lock, in partition order (the one order
    /// every caller that holds several takes them in).
    pub(crate) fn lock_all(&self) -> Vec<std::sync::MutexGuard<'_, ()>> {
        self.parts.iter().map(Partition::lock).collect()
    }

    /// The partitions, partition `i` at index `i`.
    pub(crate) fn parts(&self) -> &[Partition] {
        &self.parts
    }

    /// The partitions whose keys views read ([`Store::stats`], lists,
    /// exports): those the store serves ([`Store::serve_partition`]; every
    /// one but in a cluster, where a node's copy of a partition it no
    /// longer holds is out of date).
    pub(crate) fn parts_in_view(&self) -> impl Iterator<Item = &Partition> {
        self.parts.iter().filter(|p| p.serving())
    }

    /// The partition of `url` as given (normalised first: the partition is
    /// its normal host's; one that does not parse goes to partition 0,
    /// which answers for it as any partition would).
    pub(crate) fn part_of_url(&self, url: &str) -> &Partition {
        &self.parts[self.route_url(url)]
    }

    /// The partition index of `url` as given ([`Store::part_of_url`]).
    pub(crate) fn route_url(&self, url: &str) -> usize {
        if self.parts.len() == 1 {
            return 0;
        }
        match NormUrl::parse(url) {
            Ok(norm) => self.routes.of_url(norm.as_str()),
            Err(_) => 0,
        }
    }

    /// The partition of `host` (`host[:port]` as keys hold it).
    pub(crate) fn part_of_host(&self, host: &str) -> &Partition {
        &self.parts[self.routes.of_host(host)]
    }

    /// How many partitions the store has (fixed when it was created).
    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// What has gone wrong with the store so far (every partition's
    /// keyspace shares one account): damage met while reading, and whether
    /// the last write failed (cleared by the next write that succeeds).
    pub fn health(&self) -> crate::kv::StoreHealth {
        self.parts[0].health()
    }

    /// Reads one key of every partition, to learn whether the store still
    /// reads (a failure is recorded in [`Store::health`]).
    pub fn probe_read(&self) -> Result<(), StoreError> {
        self.parts.iter().try_for_each(Partition::probe_read)
    }

    /// Writes and flushes one key of every partition it serves, to learn whether the
    /// store writes again after a failed write (the result is recorded in
    /// [`Store::health`]).
    pub fn probe_write(&self) -> Result<(), StoreError> {
        // A partition not served is another node's to write (cluster mode).
        self.parts
            .iter()
            .filter(|p| p.serving())
            .try_for_each(Partition::probe_write)?;
        // One database: one flush writes every partition's probe.
        self.flush()
    }

    /// Reads every key and value of the store, start to end: the damage
    /// sled finds only when it reads a page is found here. A full pass over
    /// the store (about as long as `stats`). The number of keys read.
    pub fn verify_readable(&self) -> Result<u64, StoreError> {
        self.parts
            .iter()
            .try_fold(0, |n, p| Ok(n + p.verify_readable()?))
    }

    /// The policy in use.
    pub fn policy(&self) -> Arc<dyn Policy> {
        self.parts[0].policy()
    }

    /// The options it was opened with.
    pub fn options(&self) -> &StoreOptions {
        self.parts[0].options()
    }

    /// Writes everything to disk now.
    pub fn flush(&self) -> Result<(), StoreError> {
        // One database: a flush of one keyspace writes them all.
        self.parts[0].flush()
    }

    /// Bytes the store takes on disk.
    pub fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.parts[0].size_on_disk()
    }

    /// The sitemaps whose last reads listed `url` (as the store holds it,
    /// normalised), by URL.
    pub fn url_sitemaps(&self, url: &str) -> Result<Vec<String>, StoreError> {
        self.part_of_url(url).url_sitemaps(url)
    }

    /// What the store knows of the sitemap at `url` (as listed), if it
    /// read it: its own record, with the URLs it lists and the entries of
    /// its last read counted over every partition.
    pub fn sitemap(&self, url: &str) -> Result<Option<SitemapView>, StoreError> {
        let Some(mut view) = self.parts[self.routes.of_url(url)].sitemap(url)? else {
            return Ok(None);
        };
        self.count_elsewhere(&mut view)?;
        Ok(Some(view))
    }

    /// Adds to `view`, its home partition's view of a sitemap, the URLs it
    /// lists and the entries its last read had that the other partitions
    /// hold.
    fn count_elsewhere(&self, view: &mut SitemapView) -> Result<(), StoreError> {
        let home = self.routes.of_url(&view.url);
        for (i, part) in self.parts.iter().enumerate() {
            if i != home
                && let Some(record) = part.sitemap_record(&view.url)?
            {
                view.members += record.members;
                view.entries += record.entries;
            }
        }
        Ok(())
    }

    /// The queue `url` (as given: normalised first) is in, with its normal
    /// form, if the store holds it: what [`Store::url`] says of it at the
    /// cost of one record read (no view built, no lease looked up).
    pub fn url_queue(&self, url: &str) -> Result<Option<(String, String)>, StoreError> {
        let Ok(norm) = NormUrl::parse(url) else {
            return Ok(None);
        };
        let url = norm.as_str();
        let part = &self.parts[self.routes.of_url(url)];
        Ok(part
            .url_record(url)?
            .map(|rec| (rec.queue_name(url).to_string(), url.to_string())))
    }

    /// What the store knows of `host`: its politeness, lastmod trust and
    /// URL counts.
    pub fn host(&self, host: &HostKey) -> Result<HostView, StoreError> {
        self.part_of_host(host.as_str()).host(host)
    }

    /// What the store knows of `url` (normalised on the way in: a URL that
    /// does not parse is not in the store), if it holds it. Its `reason`
    /// tells a live lease from one that ran out by the store's clock
    /// ([`StoreOptions::clock`]).
    pub fn url(&self, url: &str) -> Result<Option<UrlView>, StoreError> {
        self.part_of_url(url).url(url)
    }

    /// The robots.txt rules of `host` as a walk last read them
    /// ([`Store::set_robots`]), if any.
    pub fn robots(&self, host: &HostKey) -> Result<Option<RobotsRules>, StoreError> {
        self.part_of_host(host.as_str()).robots(host)
    }

    /// Records the robots.txt rules a walk read for `host` at `now` and
    /// applies them to its URLs: those they now disallow are blocked (out
    /// of the queue), those they allow again are scheduled anew. The URLs
    /// whose state changed, by direction.
    pub fn set_robots(
        &self,
        host: &HostKey,
        rules: &RobotsRules,
        now: Timestamp,
    ) -> Result<crate::RobotsUpdate, StoreError> {
        self.part_of_host(host.as_str())
            .set_robots(host, rules, now)
    }

    /// Follows the site `seed` from `now`: it is due for a walk at once.
    /// Whether it is new (a site already followed is left as it is).
    pub fn add_site(&self, seed: &str, now: Timestamp) -> Result<bool, StoreError> {
        self.part_of_host(keys::host_of(seed)).add_site(seed, now)
    }

    /// Stops following `seed`; whether it was followed. Its URLs stay: see
    /// [`Store::retire_host`].
    pub fn remove_site(&self, seed: &str) -> Result<bool, StoreError> {
        self.part_of_host(keys::host_of(seed)).remove_site(seed)
    }

    /// The followed site `seed`, if it is followed.
    pub fn site(&self, seed: &str) -> Result<Option<SiteView>, StoreError> {
        self.part_of_host(keys::host_of(seed)).site(seed)
    }

    /// Records a walk of the followed site `seed`; whether it is still
    /// followed (a walk of a site removed meanwhile records nothing).
    pub fn site_walked(&self, seed: &str, walk: &crate::SiteWalk) -> Result<bool, StoreError> {
        self.part_of_host(keys::host_of(seed))
            .site_walked(seed, walk)
    }

    /// Retires every active URL of `host`, http and https: out of the
    /// queue, records kept (a sitemap listing one again revives it). In
    /// batches, each under the write lock, with the host's URL count. How
    /// many it retired.
    pub fn retire_host(&self, host: &HostKey) -> Result<u64, StoreError> {
        self.part_of_host(host.as_str()).retire_host(host)
    }

    /// The child sitemaps of the index at `index` (as listed), at most
    /// [`MAX_CHILDREN`](crate::ingest::MAX_CHILDREN), in URL order: those
    /// its last complete read listed
    /// ([`SitemapFetch::children`](crate::SitemapFetch::children)), plus
    /// any fetched since with it as `parent`. An index never read with its
    /// list keeps every child ever fetched through it; a sitemap never read
    /// has none.
    pub fn children(&self, index: &str) -> Result<Vec<String>, StoreError> {
        self.parts[self.routes.of_url(index)].children(index)
    }

    /// When the sitemap at `sitemap` is next to be read, and what its reads
    /// found so far ([`crate::refresh`]), if it was read.
    pub fn refresh_state(&self, sitemap: &str) -> Result<Option<RefreshView>, StoreError> {
        self.parts[self.routes.of_url(sitemap)].refresh_state(sitemap)
    }

    /// Whether the sitemap at `sitemap` is due for a read at `now`: never
    /// read, or its next read has come.
    pub fn sitemap_due(&self, sitemap: &str, now: Timestamp) -> Result<bool, StoreError> {
        self.parts[self.routes.of_url(sitemap)].sitemap_due(sitemap, now)
    }

    /// Reads every record and sets right what is out of step: due entries
    /// no record names, counts that differ from the records, suspect hosts,
    /// member keys missing (`stats --check` names what it would do).
    pub fn repair(&self) -> Result<(), StoreError> {
        self.parts.iter().try_for_each(Partition::repair)
    }

    /// Computes the allocation multiplier of the rate policies
    /// (`freshness-optimal`, `lambda-crawl`, `uniform`, `proportional`)
    /// over every active URL for the policy's budget, saves it (the next
    /// open starts with it) and schedules with it from now on: URLs keep
    /// the due times they have until they are next rescheduled (a fetch, or
    /// a sitemap read that changes what the policy sees). A no-op for the
    /// other policies; returns the multiplier. Each URL's rate is taken as
    /// of the latest time its record knows (sighting, fetch or
    /// notification). The partitions are summarised side by side, in
    /// bounded memory each, and their summaries merged. Only the partitions
    /// the store serves are summarised and calibrated (in a cluster, each
    /// node calibrates its own).
    pub fn calibrate(&self) -> Result<Option<f64>, StoreError> {
        let current = self.policy();
        let params = &self.options().params;
        // An empty store first: a policy with nothing to calibrate costs no scan.
        if current.allocation_multiplier(&[], params).is_none() {
            return Ok(None);
        }
        let summaries = self.each_served_partition(Partition::page_summaries)?;
        let (mut pages, mut complete) = (PageSummary::new(), PageSummary::new());
        for (p, c) in summaries {
            pages.merge(&p);
            complete.merge(&c);
        }
        let Some(multiplier) = current.allocation_multiplier(&pages.pages(), params) else {
            return Ok(None);
        };
        let mut calibration = Calibration {
            multiplier,
            ..Calibration::default()
        };
        if let Some(level) = current.on_change_level(&complete.pages(), multiplier) {
            calibration.on_change_level = level;
        }
        for part in self.parts_in_view() {
            part.set_calibration(calibration)?;
        }
        Ok(Some(multiplier))
    }

    /// `f` over every partition, side by side (one thread each, at most as
    /// many at once as the machine has cores), in partition order.
    pub(crate) fn each_partition<T: Send>(
        &self,
        f: impl Fn(&Partition) -> Result<T, StoreError> + Sync,
    ) -> Result<Vec<T>, StoreError> {
        split::in_parallel(self.parts.iter().collect(), |_, part| f(part))
    }

    /// [`Store::each_partition`] over the partitions the store serves
    /// ([`Store::parts_in_view`]): what a node of a cluster may write.
    pub(crate) fn each_served_partition<T: Send>(
        &self,
        f: impl Fn(&Partition) -> Result<T, StoreError> + Sync,
    ) -> Result<Vec<T>, StoreError> {
        split::in_parallel(self.parts_in_view().collect(), |_, part| f(part))
    }
}

/// The name of the keyspace of partition `i` (from 1) of the store whose
/// own keyspace is named `base` ("" for the main store).
fn partition_tree(base: &str, i: usize) -> String {
    match base {
        "" => format!("{}{i}", &PARTITION_TREE[1..]),
        _ => format!("{base}{PARTITION_TREE}{i}"),
    }
}

/// The number of partitions of the store whose own keyspace is `kv`: the
/// one it records, or for a new store the one `options` asks for (then
/// recorded, with the list that routes hosts to them); a store made before
/// partitions has one.
fn partition_count(kv: &Kv, options: &StoreOptions) -> Result<u16, StoreError> {
    if let Some(bytes) = kv.get(keys::PARTITIONS)? {
        let count = <[u8; 2]>::try_from(bytes.as_ref())
            .map(u16::from_be_bytes)
            .ok()
            .filter(|c| (1..=MAX_PARTITIONS).contains(c))
            .ok_or_else(|| {
                StoreError::Partitions(format!("the recorded count {bytes:?} is not one"))
            })?;
        if count > 1 {
            let list = kv.get(keys::PSL)?.unwrap_or_default();
            if list.as_ref() != PSL_VERSION.as_bytes() {
                return Err(StoreError::Partitions(format!(
                    "its hosts were routed with the public suffix list of psl {}, this build has {PSL_VERSION}",
                    String::from_utf8_lossy(&list)
                )));
            }
        }
        return Ok(count);
    }
    // A store an earlier build made (a layout key, or keys of its own
    // below `~`) has one partition.
    let made_before =
        kv.get(keys::LAYOUT)?.is_some() || kv.range(Vec::new()..vec![b'~']).next().is_some();
    let count = if made_before {
        1
    } else {
        options.partitions.clamp(1, MAX_PARTITIONS)
    };
    let mut batch = Batch::default();
    batch.insert(keys::PARTITIONS, count.to_be_bytes());
    if count > 1 {
        batch.insert(keys::PSL, PSL_VERSION.as_bytes());
    }
    kv.apply_batch(batch)?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A URL record copied into another partition than its host's is named
    /// by `check`; the store as written is whole.
    #[test]
    fn check_names_a_record_in_another_partition() {
        let options = StoreOptions {
            partitions: 4,
            ..StoreOptions::default()
        };
        let s = Store::in_memory(options).unwrap();
        let url = "https://a.example/x";
        s.discover(
            [(url.to_string(), Vec::new())],
            Timestamp::from_unix(1_700_000_000),
        )
        .unwrap();
        assert!(s.check().unwrap().is_ok());
        let home = s.route_url(url);
        let record = s.parts()[home].kv.get(keys::url(url)).unwrap().unwrap();
        let other = (home + 1) % s.partitions();
        s.parts()[other]
            .kv
            .insert(keys::url(url), record.to_vec())
            .unwrap();
        let report = s.check().unwrap();
        assert!(
            report.misfiled.iter().any(|m| m.starts_with(url)),
            "{report:?}"
        );
    }

    #[test]
    fn crawls_never_share_a_url_and_drop_whole() {
        let dir = tempfile::tempdir().unwrap();
        let on_disk = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let in_memory = Store::in_memory(StoreOptions::default()).unwrap();
        for s in [on_disk, in_memory] {
            crawls_of(&s);
        }
    }

    fn crawls_of(s: &Store) {
        let c = s.crawl("news").unwrap();
        c.discover(
            [("https://a.example/1".to_string(), Vec::new())],
            Timestamp::from_unix(1_700_000_000),
        )
        .unwrap();
        assert!(s.url("https://a.example/1").unwrap().is_none());
        assert_eq!(s.crawl("news").unwrap().queues().count(), 1);
        assert_eq!(s.crawl_names(), ["news"]);
        assert!(s.drop_crawl("news").unwrap());
        assert!(s.crawl_names().is_empty());
        assert_eq!(s.crawl("news").unwrap().queues().count(), 0);
    }
}
