//! Crawls and queues as things that exist: a crawl's store (opened on
//! first use, [`MAX_CRAWLS`] at most), which crawls there are, and what
//! removes URLs (DeleteCrawl, DeleteQueue, PurgeURLs).

use std::sync::Arc;

use sitemapd_scheduler::{Store, Timestamp};
use tonic::Status;

use super::{Inner, lock};
use crate::status::store_status;
use crate::{DEFAULT_CRAWL, MAX_KEY_CHARS, crawl_id, too_long};

/// Crawls other than `DEFAULT` the service holds at most: each is a sled
/// tree, and a client naming a new crawl per item must not make a tree
/// per item.
pub const MAX_CRAWLS: usize = 1000;

impl Inner {
    /// The store of `crawl` (normalised), opened (created) if need be.
    pub(super) fn store(&self, crawl: &str) -> Result<Arc<Store>, Status> {
        let crawl = crawl_id(crawl);
        if crawl == DEFAULT_CRAWL {
            return Ok(self.store.clone());
        }
        let mut crawls = lock(&self.crawls);
        if let Some(s) = crawls.get(crawl) {
            return Ok(s.clone());
        }
        if too_long(crawl) {
            return Err(Status::invalid_argument(format!(
                "a crawl id has at most {MAX_KEY_CHARS} characters"
            )));
        }
        let names = self.store.crawl_names();
        if !names.iter().any(|n| n == crawl) && names.len() >= MAX_CRAWLS {
            return Err(Status::resource_exhausted(format!(
                "this service holds {MAX_CRAWLS} crawls at most: delete one first"
            )));
        }
        let s = Arc::new(self.store.crawl(crawl).map_err(store_status)?);
        crawls.insert(crawl.to_string(), s.clone());
        Ok(s)
    }

    /// The store of `crawl` if it exists (a read never creates one).
    pub(super) fn existing(&self, crawl: &str) -> Result<Option<Arc<Store>>, Status> {
        let crawl = crawl_id(crawl);
        if crawl == DEFAULT_CRAWL
            || lock(&self.crawls).contains_key(crawl)
            || self.store.crawl_names().iter().any(|n| n == crawl)
        {
            return self.store(crawl).map(Some);
        }
        Ok(None)
    }

    /// Every crawl: DEFAULT, then the others by name.
    pub(super) fn all_crawls(&self) -> Vec<String> {
        let mut names: Vec<String> = self.store.crawl_names();
        names.extend(lock(&self.crawls).keys().cloned());
        names.sort();
        names.dedup();
        names.retain(|n| n != DEFAULT_CRAWL);
        names.insert(0, DEFAULT_CRAWL.to_string());
        names
    }

    /// The crawls that hold a queue (ListCrawls).
    pub(super) fn crawls_in_use(&self) -> Result<Vec<String>, Status> {
        let mut values = Vec::new();
        for crawl in self.all_crawls() {
            let store = self.existing(&crawl)?;
            if store.is_some_and(|s| s.queues().next().is_some()) {
                values.push(crawl);
            }
        }
        Ok(values)
    }

    /// Deletes `crawl` (normalised) and its rules: the URLs it held.
    /// `DEFAULT` is emptied, not dropped, and so is every crawl of a node of
    /// a cluster (its own partitions' queues deleted through the write log,
    /// which carries no dropped keyspace): a crawl with no queue is not
    /// listed.
    pub(super) fn delete_crawl(&self, crawl: &str) -> Result<u64, Status> {
        let crawl = crawl_id(crawl);
        let Some(store) = self.existing(crawl)? else {
            return Ok(0);
        };
        let mut removed = 0;
        if crawl == DEFAULT_CRAWL || self.peers.get().is_some() {
            // Named first: each deletion changes the keys read.
            let names: Vec<String> = store
                .queues()
                .map(|q| q.map(|(name, _)| name))
                .collect::<Result<_, _>>()
                .map_err(store_status)?;
            for name in &names {
                removed += store.delete_queue(name).map_err(store_status)?;
            }
        } else {
            for q in store.queues() {
                removed += q.map_err(store_status)?.1.total();
            }
            drop(store);
            // The crawl leaves the service once its keyspaces are gone: a
            // store with a write log keeps them (cluster mode), for good.
            self.store.drop_crawl(crawl).map_err(|e| {
                if e.is_log_refusal() {
                    Status::failed_precondition(format!("{e}: delete its queues instead"))
                } else {
                    store_status(e)
                }
            })?;
            lock(&self.crawls).remove(crawl);
        }
        lock(&self.rules).retain(|(c, _), _| c != crawl);
        Ok(removed)
    }

    /// Deletes the queue `key` of `crawl` and its rules: the URLs it held.
    pub(super) fn delete_queue(&self, crawl: &str, key: &str) -> Result<u64, Status> {
        let crawl = crawl_id(crawl).to_string();
        let Some(store) = self.existing(&crawl)? else {
            return Ok(0);
        };
        if key.is_empty() {
            return Ok(0);
        }
        let removed = store.delete_queue(key).map_err(store_status)?;
        lock(&self.rules).remove(&(crawl, key.to_string()));
        Ok(removed)
    }

    /// Purges the URLs of `crawl` (one queue of it with `key`) first
    /// stored more than `days` days ago: how many.
    pub(super) fn purge(&self, crawl: &str, key: &str, days: u32) -> Result<u64, Status> {
        let Some(store) = self.existing(crawl)? else {
            return Ok(0);
        };
        let cutoff = self.now().saturating_sub(i64::from(days) * 86_400);
        let cutoff = Timestamp::from_unix(cutoff);
        let queue = (!key.is_empty()).then_some(key);
        store.purge(queue, cutoff).map_err(store_status)
    }
}
