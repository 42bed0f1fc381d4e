//! A retired URL brought back by something other than a sitemap read: a
//! push notification ([`crate::notify`]) or a URL frontier client asking
//! for a refetch ([`crate::frontier`]).
//!
//! Its sitemaps' account of it starts again: for each sitemap whose last
//! read does not list it, its absence counts from that read (its stamp
//! marked absent at the sitemap's current sequence), so that it is retired
//! again only after as many complete reads leave it out as retired it the
//! first time; and it counts among each sitemap's members again, so that
//! the next complete read that leaves it out runs the absence pass that
//! marks it. A sitemap whose last read lists it (a URL retired with its
//! whole host) keeps its stamp: its reads still stand for it.
//!
//! The sitemaps' records change in the batch that revives the URL. An
//! ingest reading one of those sitemaps at the same time holds its own copy
//! of the record and writes it at its end: the member counted here is then
//! lost, and that sitemap's next complete read runs no absence pass for it
//! unless others are absent too (the URL stays active, as before it was
//! counted).

use crate::error::StoreError;
use crate::hash::FastMap;
use crate::keys;
use crate::kv::Batch;
use crate::partition::Partition;
use crate::record::{ABSENT, Listing, SitemapRecord, UrlRecord, encode};

/// The sitemap records one batch's revivals change, by sitemap id.
#[derive(Default)]
pub(crate) struct Revivals {
    /// Each sitemap's URL and its record in this partition (`None`: the
    /// partition has no record of it, or not one that decodes).
    sitemaps: FastMap<u64, Option<(String, SitemapRecord)>>,
}

impl Revivals {
    /// Brings `rec` (a URL record of `part`) back into the queue if it is
    /// retired, its stamps and its sitemaps' member counts as the module
    /// docs say; a record that is not retired is left as it is.
    pub(crate) fn revive(
        &mut self,
        part: &Partition,
        rec: &mut UrlRecord,
    ) -> Result<(), StoreError> {
        if !rec.retired {
            return Ok(());
        }
        rec.retired = false;
        for (id, stamp) in &mut rec.sources {
            if !self.sitemaps.contains_key(id) {
                let found = part.sitemap_of_id(*id)?;
                self.sitemaps.insert(*id, found);
            }
            let Some((_, sitemap)) = self.sitemaps.get_mut(id).and_then(Option::as_mut) else {
                continue;
            };
            if !Listing::of(sitemap).lists(*stamp) {
                *stamp = ABSENT | sitemap.seq;
            }
            sitemap.members += 1;
        }
        Ok(())
    }

    /// Adds the changed sitemap records to `batch`.
    pub(crate) fn write(self, batch: &mut Batch) {
        for (url, record) in self.sitemaps.into_values().flatten() {
            batch.insert(keys::sitemap(&url), encode(&record));
        }
    }
}
