//! Queues as the protocol names them: a host, or a client's key that hosts
//! are filed under ([`Store::file_under`]: StormCrawler partitioning by
//! domain or IP sends one key for several hosts).
//!
//! The store keeps URLs, counts and politeness per host; a queue's counts
//! are its hosts' summed, and its rules (blocks, delays, limits, URLs in
//! transit) are the service's, by queue name.

use sitemapd_scheduler::{QueueCounts, Store, StoreError};
use tonic::Status;

use crate::status::store_status;

/// The queue `host` is in: the client's key it is filed under, or itself.
pub(crate) fn name_of(store: &Store, host: &str) -> Result<String, Status> {
    Ok(store
        .queue_key(host)
        .map_err(store_status)?
        .unwrap_or_else(|| host.to_string()))
}

/// The hosts of queue `name`: those filed under it, or else the host of
/// that name.
pub(crate) fn hosts_of(store: &Store, name: &str) -> Result<Vec<String>, Status> {
    let filed = store.hosts_under(name).map_err(store_status)?;
    Ok(if filed.is_empty() {
        vec![name.to_string()]
    } else {
        filed
    })
}

/// The counts of queue `name`, its hosts' summed; `None` when none of them
/// has any.
pub(crate) fn counts_of(store: &Store, name: &str) -> Result<Option<QueueCounts>, Status> {
    let mut sum: Option<QueueCounts> = None;
    for host in hosts_of(store, name)? {
        if let Some(q) = store.queue(&host).map_err(store_status)? {
            sum = Some(match sum {
                None => q,
                Some(s) => add(s, q),
            });
        }
    }
    Ok(sum)
}

fn add(a: QueueCounts, b: QueueCounts) -> QueueCounts {
    let mut sum = a;
    sum.scheduled += b.scheduled;
    sum.leased += b.leased;
    sum.completed += b.completed;
    sum.out += b.out;
    sum
}

/// Every queue of the store once, with its counts, in the order of the
/// store's hosts (a filed queue where its first host is): a stable order
/// for paging, read one host at a time.
pub(crate) fn all(
    store: &Store,
) -> impl Iterator<Item = Result<(String, QueueCounts), Status>> + '_ {
    store.queues().filter_map(move |item| {
        let (host, counts) = match item {
            Ok(q) => q,
            Err(e) => return Some(Err(store_status(e))),
        };
        let named = || -> Result<Option<(String, QueueCounts)>, StoreError> {
            let Some(key) = store.queue_key(&host)? else {
                return Ok(Some((host.clone(), counts)));
            };
            let hosts = store.hosts_under(&key)?;
            if hosts.first() != Some(&host) {
                return Ok(None); // listed at its first host
            }
            let mut sum = counts;
            for other in &hosts[1..] {
                if let Some(q) = store.queue(other)? {
                    sum = add(sum, q);
                }
            }
            Ok(Some((key, sum)))
        };
        named().map_err(store_status).transpose()
    })
}
