//! The member keys ([`keys::member`]) a partition's URL records call for:
//! one for each sitemap that lists a URL on another host than its own, and
//! that host. A complete read's absence pass reads the URLs of those hosts
//! ([`crate::ingest`]); a URL whose key is missing is never found absent.
//! `stats --check` names a missing key, `stats --repair` writes it.

use crate::error::StoreError;
use crate::hash::{FastMap, FastSet};
use crate::keys;
use crate::kv::Batch;
use crate::partition::Partition;
use crate::record::{UrlRecord, decode};

/// Member keys written per batch by [`restore`].
const BATCH: u64 = 10_000;

/// The member keys met so far in a scan of URL records, and the host of
/// each sitemap (by its id in the partition) they name.
#[derive(Default)]
pub(crate) struct MemberKeys {
    /// A sitemap's host; `None` for an id the partition has no record of
    /// (its keys cannot be told).
    hosts: FastMap<u64, Option<String>>,
    met: FastSet<Vec<u8>>,
}

impl MemberKeys {
    /// The member keys the record `rec` of `url` calls for that no earlier
    /// record did, each with the sitemap's URL.
    pub(crate) fn called_for(
        &mut self,
        part: &Partition,
        url: &str,
        rec: &UrlRecord,
    ) -> Result<Vec<(Vec<u8>, String)>, StoreError> {
        let host = keys::host_of(url);
        let mut called = Vec::new();
        for &(id, _) in &rec.sources {
            let sitemap = match self.hosts.entry(id) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(new) => {
                    new.insert(part.sitemap_of_id(id)?.map(|(url, _)| url))
                }
            };
            let Some(sitemap) = sitemap else {
                continue;
            };
            if keys::host_of(sitemap) == host {
                continue;
            }
            let key = keys::member(id, host);
            if self.met.insert(key.clone()) {
                called.push((key, sitemap.clone()));
            }
        }
        Ok(called)
    }
}

/// Writes every member key the partition's URL records call for and it
/// lacks; how many. Records that do not decode are passed over (`stats
/// --check` names them). The caller holds the partition's write lock.
pub(crate) fn restore(part: &Partition) -> Result<u64, StoreError> {
    let mut members = MemberKeys::default();
    let mut batch = Batch::default();
    let (mut pending, mut written) = (0, 0);
    for item in crate::pages::entries(&part.kv, &[], &[0xff]) {
        let Ok((url, value)) = item else {
            continue;
        };
        let Ok(rec) = decode::<UrlRecord>(&value) else {
            continue;
        };
        for (key, _) in members.called_for(part, &url, &rec)? {
            if !part.kv.contains_key(&key)? {
                batch.insert(key, []);
                pending += 1;
            }
        }
        if pending >= BATCH {
            part.kv.apply_batch(std::mem::take(&mut batch))?;
            written += pending;
            pending = 0;
        }
    }
    part.kv.apply_batch(batch)?;
    let written = written + pending;
    if written > 0 {
        tracing::info!(written, "missing member keys written");
    }
    Ok(written)
}
