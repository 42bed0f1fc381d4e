//! An ingest session over the partitions: each URL entry goes to its
//! host's partition; a sitemap's outcome to its home partition and to
//! every partition holding URLs it lists (each keeps its own account of
//! the sitemap's reads, for the retirement of those URLs).

use super::Store;
use crate::error::StoreError;
use crate::ingest::{DEFAULT_BATCH, IngestStats, PartitionIngest, SitemapFetch};
use crate::refresh::Fingerprint;
use crate::robots::RobotsUpdate;
use crate::time::Timestamp;
use sitemapd_parser::{HostKey, RobotsRules, UrlEntry};

/// An ingest session: feed entries, report sitemap outcomes, commit
/// ([`Store::ingest`]). Entries are merged and written in batches, each
/// one atomic write to one partition.
pub struct Ingest<'s> {
    store: &'s Store,
    now: Timestamp,
    batch: usize,
    /// The session's part in partition `i`, once it has one.
    parts: Vec<Option<PartitionIngest<'s>>>,
    /// The host of the last entry and its partition: a sitemap's entries
    /// come host by host, and routing one costs a look-up in the Public
    /// Suffix List.
    last_host: Option<(String, usize)>,
    /// Entries routed since every part last committed: at the batch size
    /// every part commits, so that the session holds one batch of entries,
    /// not one per partition.
    routed: usize,
}

impl Store {
    /// Starts an ingest session at time `now`.
    pub fn ingest(&self, now: Timestamp) -> Ingest<'_> {
        Ingest {
            store: self,
            now,
            batch: DEFAULT_BATCH,
            parts: (0..self.parts().len()).map(|_| None).collect(),
            last_host: None,
            routed: 0,
        }
    }
}

impl<'s> Ingest<'s> {
    /// URL entries the session holds at most before it writes them, one
    /// atomic batch per partition they go to (default [`DEFAULT_BATCH`]).
    pub fn with_batch(mut self, urls: usize) -> Self {
        self.batch = urls.max(1);
        self
    }

    /// The session's part in partition `i`.
    fn part(&mut self, i: usize) -> &mut PartitionIngest<'s> {
        let (store, now, batch) = (self.store, self.now, self.batch);
        self.parts[i].get_or_insert_with(|| store.parts()[i].ingest(now).with_batch(batch))
    }

    /// What the session did so far.
    pub fn stats(&self) -> IngestStats {
        let mut stats = IngestStats::default();
        for part in self.parts.iter().flatten() {
            stats += part.stats();
        }
        stats
    }

    /// The robots.txt rules of `host` as a walk read them now
    /// ([`Store::set_robots`]): what is pending for its partition is
    /// written first, so every URL is checked against the new rules.
    pub fn robots_read(
        &mut self,
        host: &HostKey,
        rules: &RobotsRules,
    ) -> Result<RobotsUpdate, StoreError> {
        let i = self.store.routes.of_host(host.as_str());
        self.part(i).robots_read(host, rules)
    }

    /// One URL entry of the sitemap at `sitemap` (its URL as listed).
    pub fn entry(&mut self, sitemap: &str, entry: &UrlEntry) -> Result<(), StoreError> {
        let host = crate::keys::host_of(entry.loc.as_str());
        let i = match &self.last_host {
            Some((last, i)) if last == host => *i,
            _ => {
                let i = self.store.routes.of_host(host);
                self.last_host = Some((host.to_string(), i));
                i
            }
        };
        self.part(i).entry(sitemap, entry)?;
        self.routed += 1;
        if self.routed >= self.batch {
            self.routed = 0;
            self.commit()?;
        }
        Ok(())
    }

    /// Records how the fetch of `sitemap` ended (see
    /// [`SitemapFetch`]): every 2xx read advances its sequence, and so does a
    /// read that stored URLs before it failed; a complete
    /// one is remembered as such, and retires the URLs absent from enough
    /// complete reads. The partitions holding URLs it lists are told first,
    /// its home last (its home writes when it is next to be read: after a
    /// crash in between, it is read again).
    pub fn sitemap_fetched(
        &mut self,
        sitemap: &str,
        fetch: &SitemapFetch,
    ) -> Result<(), StoreError> {
        let home = self.store.routes.of_url(sitemap);
        let mut elsewhere = Fingerprint::default();
        for i in (0..self.parts.len()).filter(|&i| i != home) {
            let reading = self.parts[i]
                .as_ref()
                .and_then(|p| p.fingerprint_of(sitemap));
            if let Some(fingerprint) = &reading {
                elsewhere.merge(fingerprint);
            }
            if reading.is_some() || self.store.parts()[i].sitemap_record(sitemap)?.is_some() {
                self.part(i).sitemap_fetched(sitemap, fetch)?;
            }
        }
        let part = self.part(home);
        part.fingerprint_elsewhere(sitemap, &elsewhere)?;
        part.sitemap_fetched(sitemap, fetch)
    }

    /// Writes the merged observations: one atomic batch per partition.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        self.parts
            .iter_mut()
            .flatten()
            .try_for_each(PartitionIngest::commit)
    }

    /// Commits what is pending and ends the session. A sitemap whose
    /// outcome was not reported ([`Ingest::sitemap_fetched`]) counts as
    /// read in part (a cut 2xx read): the URLs it listed were seen now, and
    /// no absence is counted.
    pub fn finish(mut self) -> Result<IngestStats, StoreError> {
        self.parts
            .iter_mut()
            .flatten()
            .try_for_each(PartitionIngest::end)?;
        Ok(self.stats())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Store, StoreOptions, Timestamp};
    use sitemapd_parser::{NormUrl, UrlEntry};

    /// Entries spread over many partitions are written once the session
    /// holds a batch of them, not once each partition does.
    #[test]
    fn a_session_holds_one_batch_over_every_partition() {
        let s = Store::in_memory(StoreOptions {
            partitions: 16,
            ..StoreOptions::default()
        })
        .unwrap();
        let urls: Vec<String> = (0..10)
            .map(|i| format!("https://site{i}.example/page"))
            .collect();
        let parts: std::collections::BTreeSet<usize> =
            urls.iter().map(|u| s.route_url(u)).collect();
        assert!(parts.len() > 5, "spread over {parts:?}");
        let mut ingest = s.ingest(Timestamp::from_unix(1_700_000_000)).with_batch(10);
        for url in &urls[..9] {
            let entry = UrlEntry::new(NormUrl::parse(url).unwrap());
            ingest
                .entry("https://site0.example/sitemap.xml", &entry)
                .unwrap();
        }
        assert!(s.url(&urls[0]).unwrap().is_none(), "held below the batch");
        let entry = UrlEntry::new(NormUrl::parse(&urls[9]).unwrap());
        ingest
            .entry("https://site0.example/sitemap.xml", &entry)
            .unwrap();
        for url in &urls {
            assert!(s.url(url).unwrap().is_some(), "{url} written at the batch");
        }
        drop(ingest);
    }
}
