//! Calls over many URLs, split by partition: each partition's part is one
//! atomic write under that partition's lock, and the parts run side by
//! side; what each URL found comes back in the order given.

use super::Store;
use crate::error::StoreError;
use crate::frontier::{DiscoveredUrl, KnownUrl, Metadata, Put};
use crate::keys;
use crate::notify::Notified;
use crate::partition::Partition;
use crate::queue::Completion;
use crate::time::Timestamp;
use sitemapd_parser::HostKey;

/// `f(i, item)` for every item, side by side: one thread per item when
/// there are several (the items are partitions' parts of a call: a few, on
/// as many cores as there are), in place when there is one. The results
/// in the items' order; the first error, if any.
pub(crate) fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(usize, T) -> Result<R, StoreError> + Sync,
) -> Result<Vec<R>, StoreError> {
    if items.len() <= 1 {
        return items
            .into_iter()
            .enumerate()
            .map(|(i, item)| f(i, item))
            .collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let running: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| scope.spawn(move || f(i, item)))
            .collect();
        running
            .into_iter()
            .map(|handle| match handle.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// The items of one partition, each with its place in the call.
struct Part<'s, T> {
    partition: &'s Partition,
    items: Vec<(usize, T)>,
}

impl Store {
    /// `items` grouped by the partition `route` gives each, in the order
    /// given within a group; only partitions with items.
    fn group<T>(
        &self,
        items: impl IntoIterator<Item = T>,
        route: impl Fn(&T) -> usize,
    ) -> Vec<Part<'_, T>> {
        let mut by: Vec<Vec<(usize, T)>> = (0..self.parts().len()).map(|_| Vec::new()).collect();
        for (at, item) in items.into_iter().enumerate() {
            by[route(&item)].push((at, item));
        }
        by.into_iter()
            .zip(self.parts())
            .filter(|(items, _)| !items.is_empty())
            .map(|(items, partition)| Part { partition, items })
            .collect()
    }

    /// `apply` to each partition's part of `items`, side by side; each
    /// part's answers (one per item, in its order) put back in the order of
    /// `items`.
    fn scatter<T: Send, R: Send>(
        &self,
        items: impl IntoIterator<Item = T>,
        route: impl Fn(&T) -> usize,
        apply: impl Fn(&Partition, Vec<T>) -> Result<Vec<R>, StoreError> + Sync,
    ) -> Result<Vec<R>, StoreError> {
        let parts = self.group(items, route);
        let total: usize = parts.iter().map(|p| p.items.len()).sum();
        let answered = in_parallel(parts, |_, part| {
            let (places, items): (Vec<usize>, Vec<T>) = part.items.into_iter().unzip();
            let answers = apply(part.partition, items)?;
            debug_assert_eq!(answers.len(), places.len());
            Ok(places.into_iter().zip(answers).collect::<Vec<_>>())
        })?;
        let mut out: Vec<Option<R>> = (0..total).map(|_| None).collect();
        for (at, answer) in answered.into_iter().flatten() {
            out[at] = Some(answer);
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// URLs a client discovered, each with its metadata and queue: one the
    /// store does not hold is added, due now ([`Put::Stored`]); one it
    /// holds is left as it is, in its queue ([`Put::Known`], a repeat within
    /// `items` too); one that is not an absolute http(s) URL, or whose
    /// queue name the store cannot keep, is [`Put::Invalid`]. One atomic
    /// write per partition; what was found, in the order given.
    pub fn discover(
        &self,
        items: impl IntoIterator<Item = impl Into<DiscoveredUrl>>,
        now: Timestamp,
    ) -> Result<Vec<Put>, StoreError> {
        let items = items.into_iter().map(Into::<DiscoveredUrl>::into);
        self.scatter(
            items,
            |item| self.route_url(&item.url),
            |part, items| part.discover(items, now),
        )
    }

    /// URLs a client fetched or scheduled ([`KnownUrl`]), written whatever
    /// the store held (see [`crate::frontier`]); one that is not an
    /// absolute http(s) URL is [`Put::Invalid`]. `outcome` tells from an
    /// item and the metadata stored before (empty for a URL new to the
    /// store) how the fetch went, when the client said: it is recorded as
    /// any completion is. A URL put twice takes the last. One atomic write
    /// per partition; what was done, in the order given.
    pub fn put_known(
        &self,
        items: Vec<KnownUrl>,
        now: Timestamp,
        outcome: impl Fn(&KnownUrl, &Metadata) -> Option<Completion> + Sync,
    ) -> Result<Vec<Put>, StoreError> {
        self.scatter(
            items,
            |item| self.route_url(&item.url),
            |part, items| part.put_known(items, now, &outcome),
        )
    }

    /// A push signal that `url` changed at `now`: counted for its change
    /// rate, and the URL due now with the reason `notified` (see
    /// [`crate::notify`]). `url` is normalised first; one that is not an
    /// absolute http(s) URL is [`StoreError::InvalidUrl`].
    pub fn notify(&self, url: &str, now: Timestamp) -> Result<Notified, StoreError> {
        self.part_of_url(url).notify(url, now)
    }

    /// [`Store::notify`] for many URLs at once: every URL is normalised
    /// first (one that is not an absolute http(s) URL is
    /// [`StoreError::InvalidUrl`] and nothing is written), then each
    /// partition's records are written in one atomic batch under its write
    /// lock, so a failure (a full disk) leaves a partition as it was. A URL
    /// listed twice counts once per second, as two calls would. What was
    /// found, in the order given.
    pub fn notify_all<'u>(
        &self,
        urls: impl IntoIterator<Item = &'u str>,
        now: Timestamp,
    ) -> Result<Vec<Notified>, StoreError> {
        let norms = crate::notify::normalised(urls)?;
        let routes = self.routes;
        self.scatter(
            norms,
            |url| routes.of_url(url),
            |part, urls| part.notify_normalised(&urls, now),
        )
    }

    /// A push from a site (IndexNow): `urls`, all on `host`, changed at
    /// `now`. They are notified as by [`Store::notify_all`] (due at once,
    /// unless the host's pushes lost their urgency: see [`crate::pushes`])
    /// and the push is counted on the host's record. Every URL is
    /// normalised first; one that is not an absolute http(s) URL is
    /// [`StoreError::InvalidUrl`], one on another host
    /// [`StoreError::OffHost`], and nothing is written. They are written in
    /// atomic batches of [`crate::pushes::BATCH`] URLs (the push counted with
    /// the first), each giving way to the leases and completions waiting:
    /// a failed write leaves the batches before it written (sending the
    /// push again completes it).
    pub fn push<'u>(
        &self,
        host: &HostKey,
        urls: impl IntoIterator<Item = &'u str>,
        now: Timestamp,
    ) -> Result<crate::pushes::Pushed, StoreError> {
        let norms = crate::notify::normalised(urls)?;
        if let Some(off) = norms.iter().find(|u| keys::host_of(u) != host.as_str()) {
            return Err(StoreError::OffHost {
                url: off.clone(),
                host: host.to_string(),
            });
        }
        self.part_of_host(host.as_str())
            .push(host.as_str(), &norms, now)
    }

    /// Records that an IndexNow key of `host` was verified at `at`, or
    /// (`None`) that none is any more: what [`Store::pushes`] shows.
    pub fn key_verified(&self, host: &HostKey, at: Option<Timestamp>) -> Result<(), StoreError> {
        self.part_of_host(host.as_str())
            .key_verified(host.as_str(), at)
    }

    /// Records what a fetch of `url` found at `now`, updates the host's
    /// lastmod trust and the URL's estimator history, and reschedules it
    /// ([`crate::queue`]). `url` is normalised on the way in: a URL the
    /// store does not hold, or that is not an http(s) URL, is
    /// [`StoreError::UnknownUrl`].
    pub fn complete(
        &self,
        url: &str,
        completion: &Completion,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.part_of_url(url).complete(url, completion, now)
    }

    /// [`Store::complete`] for many fetches at once, in order, as one
    /// atomic write per partition, the partitions side by side (a crawler
    /// reporting a batch pays for one write per partition, not one per
    /// URL). Returns the URLs the store does not hold, partition by
    /// partition; the others are recorded. A URL reported twice is
    /// completed twice, in order. Each URL is normalised on the way in; one
    /// that does not parse is returned as unknown, as given.
    pub fn complete_all<'a>(
        &self,
        completions: impl IntoIterator<Item = (&'a str, &'a Completion)>,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let parts = self.group(completions, |(url, _)| self.route_url(url));
        let unknown = in_parallel(parts, |_, part| {
            part.partition
                .complete_all(part.items.into_iter().map(|(_, c)| c), now)
        })?;
        Ok(unknown.into_iter().flatten().collect())
    }

    /// Deletes the records of `urls` (as the store holds them, normalised)
    /// with their due entries, their hosts' counts kept in step; in
    /// batches, each atomic. The number deleted (a URL the store does not
    /// hold counts none).
    pub fn delete_urls(&self, urls: &[String]) -> Result<u64, StoreError> {
        let parts = self.group(urls.iter(), |url| self.route_url(url));
        let deleted = in_parallel(parts, |_, part| {
            let urls: Vec<String> = part.items.into_iter().map(|(_, u)| u.clone()).collect();
            part.partition.delete_urls(&urls)
        })?;
        Ok(deleted.into_iter().sum())
    }
}
