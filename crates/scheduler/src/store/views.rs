//! What the store holds, over every partition it serves: counts summed,
//! lists merged in their order.

use std::iter::Peekable;

use super::Store;
use crate::check::{CheckReport, Stats};
use crate::error::StoreError;
use crate::frontier::{QueueCounts, QueuePlace};
use crate::partition::Partition;
use crate::queue::DUE_COUNT_LIMIT;
use crate::time::Timestamp;
use crate::view::{SiteView, SitemapView, UrlView};

/// Lists that come in key order from each partition, merged into one in
/// that order (`key` of each item; an error comes at once).
struct Merged<I: Iterator, F> {
    sources: Vec<Peekable<I>>,
    key: F,
}

impl<T, I, F, K> Iterator for Merged<I, F>
where
    I: Iterator<Item = Result<T, StoreError>>,
    F: Fn(&T) -> K,
    K: Ord,
{
    type Item = Result<T, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut best: Option<(usize, K)> = None;
        for (i, source) in self.sources.iter_mut().enumerate() {
            match source.peek() {
                None => continue,
                Some(Err(_)) => return source.next(),
                Some(Ok(item)) => {
                    let k = (self.key)(item);
                    if best.as_ref().is_none_or(|(_, b)| k < *b) {
                        best = Some((i, k));
                    }
                }
            }
        }
        best.and_then(|(i, _)| self.sources[i].next())
    }
}

/// The lists `list` gives for every partition, merged by `key`.
fn merged<'s, T, I, K>(
    store: &'s Store,
    list: impl Fn(&'s Partition) -> I,
    key: impl Fn(&T) -> K + 's,
) -> impl Iterator<Item = Result<T, StoreError>> + 's
where
    I: Iterator<Item = Result<T, StoreError>> + 's,
    T: 's,
    K: Ord + 's,
{
    Merged {
        sources: store.parts_in_view().map(|p| list(p).peekable()).collect(),
        key,
    }
}

/// The lists `list` gives for every partition, merged by `key`, the items
/// of one key together.
fn grouped<'s, T, I, K>(
    store: &'s Store,
    list: impl Fn(&'s Partition) -> I,
    key: impl Fn(&T) -> K + Copy + 's,
) -> impl Iterator<Item = Result<Vec<T>, StoreError>> + 's
where
    I: Iterator<Item = Result<T, StoreError>> + 's,
    T: 's,
    K: Ord + 's,
{
    let mut all = merged(store, list, key).peekable();
    std::iter::from_fn(move || {
        let first = match all.next()? {
            Ok(first) => first,
            Err(e) => return Some(Err(e)),
        };
        let k = key(&first);
        let mut group = vec![first];
        while let Some(Ok(next)) = all.peek() {
            if key(next) != k {
                break;
            }
            group.extend(all.next().and_then(Result::ok));
        }
        Some(Ok(group))
    })
}

impl Store {
    /// Counts of URLs by state, of the due queue, sitemaps and hosts, from
    /// the counts each host keeps: its cost grows with the number of hosts
    /// and sitemaps, not of URLs ([`crate::check`]). The due URLs are
    /// counted up to [`DUE_COUNT_LIMIT`] over the partitions it serves
    /// (`due_now_capped` past it).
    pub fn stats(&self, now: Timestamp) -> Result<Stats, StoreError> {
        let mut budget = DUE_COUNT_LIMIT;
        let mut parts = Vec::with_capacity(self.parts().len());
        for part in self.parts_in_view() {
            let s = part.stats_within(now, budget)?;
            budget -= s.due_now;
            parts.push(s);
        }
        self.summed(parts)
    }

    /// [`Store::stats`] counted over every URL record, with the change-rate
    /// quartiles and the leases running now: what `stats --check` shows.
    pub fn full_stats(&self, now: Timestamp) -> Result<Stats, StoreError> {
        let parts = self.each_partition(|p| p.full_stats_sketch(now))?;
        let mut sketch = crate::check::RateSketch::default();
        let mut stats = Vec::with_capacity(parts.len());
        for (s, r) in parts {
            sketch.merge(&r);
            stats.push(s);
        }
        let mut s = self.summed(stats)?;
        s.rate_per_day_quartiles = sketch.quartiles();
        Ok(s)
    }

    /// The partitions' counts as one: sums, the earliest next due time
    /// (only when nothing is due: each partition's is then its own), the
    /// store's size on disk once.
    fn summed(&self, parts: Vec<Stats>) -> Result<Stats, StoreError> {
        let mut s = Stats::default();
        for part in parts {
            s.absorb(part);
        }
        if s.due_now > 0 {
            s.next_due = None;
        }
        s.disk_bytes = self.size_on_disk()?;
        Ok(s)
    }

    /// Reads every record and due entry of every partition and reports
    /// what is out of step (`stats --check`): nothing when the store is
    /// whole. A URL record in another partition than its host's is
    /// `misfiled`.
    pub fn check(&self) -> Result<CheckReport, StoreError> {
        let parts = self.each_partition(Partition::check)?;
        let mut report = CheckReport::default();
        for part in parts {
            report.absorb(part);
        }
        Ok(report)
    }

    /// Every URL the store holds, retired ones included, in URL order
    /// within a partition, partition by partition (for `sitemapd export`);
    /// leases judged by the store's clock
    /// ([`StoreOptions::clock`](crate::StoreOptions::clock)), as
    /// [`Store::url`] does. A record that does not decode is passed over
    /// and counted in [`Store::health`] (`unreadable_records`).
    pub fn export(&self) -> impl Iterator<Item = Result<UrlView, StoreError>> + '_ {
        self.parts_in_view().flat_map(Partition::export)
    }

    /// Every sitemap the store has read, by URL, as [`Store::sitemap`]
    /// gives it.
    pub fn sitemaps(&self) -> impl Iterator<Item = Result<SitemapView, StoreError>> + '_ {
        let key = |(v, _): &(SitemapView, bool)| v.url.clone();
        grouped(self, Partition::sitemaps, key).filter_map(|group| {
            let accounts = match group {
                Ok(accounts) => accounts,
                Err(e) => return Some(Err(e)),
            };
            // A sitemap with no record at its home (its home not written
            // yet when a read was cut short) is not one the store read.
            let (mut view, _) = accounts.iter().find(|(_, home)| *home)?.clone();
            for (other, _) in accounts.iter().filter(|(_, home)| !home) {
                view.members += other.members;
                view.entries += other.entries;
            }
            Some(Ok(view))
        })
    }

    /// Every host's pushes ([`crate::pushes`]), partition by partition,
    /// each in host order.
    pub fn pushes(&self) -> impl Iterator<Item = Result<crate::PushView, StoreError>> + '_ {
        self.parts_in_view().flat_map(|p| p.pushes())
    }

    /// Every followed site, in seed order.
    pub fn sites(&self) -> impl Iterator<Item = Result<SiteView, StoreError>> + '_ {
        self.sites_after(None)
    }

    /// Followed sites in seed order after `after` (a seed as
    /// [`SiteView::site`] gives it; `None`: from the first): a page of
    /// [`Store::sites`] for a client that cannot take them all at once.
    pub fn sites_after<'a>(
        &'a self,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = Result<SiteView, StoreError>> + 'a {
        merged(
            self,
            move |p| p.sites_after(after),
            |v: &SiteView| v.site.clone(),
        )
    }

    /// Every queue the store keeps counts for, in name order, with its
    /// counts (summed over the partitions holding its URLs). A queue stays
    /// until [`Store::delete_queue`], its URLs all deleted or not.
    pub fn queues(&self) -> impl Iterator<Item = Result<(String, QueueCounts), StoreError>> + '_ {
        let key = |(name, _): &(String, QueueCounts)| name.clone();
        grouped(self, Partition::queues, key).filter_map(|group| match group {
            Ok(parts) => parts
                .into_iter()
                .reduce(|(name, mut counts), (_, more)| {
                    counts.absorb(&more);
                    (name, counts)
                })
                .map(Ok),
            Err(e) => Some(Err(e)),
        })
    }

    /// The counts of queue `name`, if the store keeps any.
    pub fn queue(&self, name: &str) -> Result<Option<QueueCounts>, StoreError> {
        let mut found: Option<QueueCounts> = None;
        for part in self.parts_in_view() {
            if let Some(counts) = part.queue(name)? {
                found
                    .get_or_insert_with(QueueCounts::default)
                    .absorb(&counts);
            }
        }
        Ok(found)
    }

    /// The URLs of queue `name` (every queue's when `None`), in any state,
    /// in a stable order for paging ([`Store::queue_urls_from`]).
    pub fn queue_urls<'a>(
        &'a self,
        name: Option<&'a str>,
        now: Timestamp,
    ) -> Box<dyn Iterator<Item = Result<UrlView, StoreError>> + 'a> {
        Box::new(
            self.queue_urls_from(name, QueuePlace::default(), now)
                .map(|item| item.map(|(_, view)| view)),
        )
    }

    /// [`Store::queue_urls`] from a place a walk reached (`QueuePlace::default()`:
    /// the start), each URL with the place just after it: a long walk goes
    /// on in pieces, each its own short read of the store. The partitions'
    /// walks are merged in their one order (the queue's own host's URLs,
    /// then those a client put in it; by URL in each).
    pub fn queue_urls_from<'a>(
        &'a self,
        name: Option<&'a str>,
        from: QueuePlace,
        now: Timestamp,
    ) -> impl Iterator<Item = Result<(QueuePlace, UrlView), StoreError>> + 'a {
        merged(
            self,
            move |p| p.queue_urls_from(name, from.clone(), now),
            |(place, _): &(QueuePlace, UrlView)| {
                let (part, url) = place.order();
                (part, url.to_vec())
            },
        )
    }

    /// Deletes the URLs of queue `name` (of every queue when `None`) that
    /// the store first held before `cutoff`, in batches, each atomic. The
    /// number deleted.
    pub fn purge(&self, name: Option<&str>, cutoff: Timestamp) -> Result<u64, StoreError> {
        Ok(self
            .each_served_partition(|p| p.purge(name, cutoff))?
            .into_iter()
            .sum())
    }

    /// Deletes queue `name`: its URLs, their due entries, its counts, and
    /// the host record and robots rules of a host of that name unless some
    /// of its URLs are in other queues (politeness stays per host). The
    /// number of URLs deleted.
    pub fn delete_queue(&self, name: &str) -> Result<u64, StoreError> {
        Ok(self
            .each_served_partition(|p| p.delete_queue(name))?
            .into_iter()
            .sum())
    }

    /// How many URLs are due at `now` and not leased, counted up to
    /// [`DUE_COUNT_LIMIT`] in each
    /// partition.
    pub fn queue_depth(&self, now: Timestamp) -> Result<u64, StoreError> {
        Ok(self
            .each_served_partition(|p| p.queue_depth(now))?
            .into_iter()
            .sum())
    }
}
