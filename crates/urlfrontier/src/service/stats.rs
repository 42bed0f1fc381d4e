//! What the service reports: a crawl's or a queue's counts (GetStats) and
//! one URL's state (GetURLStatus).

use sitemapd_scheduler::QueueCounts;
use tonic::Status;

use super::convert::url_item;
use super::{Inner, lock};
use crate::proto;
use crate::status::store_status;
use crate::{crawl_id, queue_key};

impl Inner {
    /// The counts of one crawl (one queue of it with `key`).
    pub(super) fn stats(&self, key: &str, crawl: &str) -> Result<proto::Stats, Status> {
        let crawl = crawl_id(crawl).to_string();
        let mut stats = proto::Stats {
            crawl_id: crawl.clone(),
            ..Default::default()
        };
        let Some(store) = self.existing(&crawl)? else {
            return Ok(stats);
        };
        // In transit: what this service handed out (the lock held for
        // that only, not while the store is read).
        let now = self.now();
        let held: usize = lock(&self.rules)
            .iter_mut()
            .filter(|((c, host), _)| *c == crawl && (key.is_empty() || host == key))
            .map(|(_, r)| r.in_transit(now))
            .sum();
        stats.in_process = u32::try_from(held).unwrap_or(u32::MAX);
        let (mut completed, mut active_queues) = (0u64, 0u64);
        let mut count = |q: QueueCounts| {
            stats.size += q.scheduled;
            completed += q.completed;
            stats.number_of_queues += 1;
            active_queues += u64::from(q.scheduled > 0);
        };
        if key.is_empty() {
            for q in store.queues() {
                count(q.map_err(store_status)?.1);
            }
        } else if let Some(q) = store.queue(key).map_err(store_status)? {
            count(q);
        }
        stats.counts.insert("completed".into(), completed);
        stats.counts.insert("active_queues".into(), active_queues);
        Ok(stats)
    }

    /// GetURLStatus: the URL `p` names, in the queue it names (its host's
    /// when it names none), as the protocol shows it.
    pub(super) fn url_status(&self, p: &proto::UrlStatusRequest) -> Result<proto::UrlItem, Status> {
        let crawl = crawl_id(&p.crawl_id).to_string();
        let Some(store) = self.existing(&crawl)? else {
            return Err(Status::not_found(format!("no crawl {crawl}")));
        };
        let Some(view) = store.url(&p.url).map_err(store_status)? else {
            return Err(Status::not_found("unknown URL"));
        };
        // The queue asked (the URL's host, cut as the reference does,
        // when none is named), and the queue the URL is in: its host
        // (`host[:port]`) for a URL no client put in a queue.
        let asked = queue_key(&p.url, &p.key).unwrap_or_default();
        let in_its_host = sitemapd_parser::NormUrl::parse(&view.url)
            .is_ok_and(|u| u.host_key().as_str() == view.queue);
        if view.queue != asked && !(p.key.is_empty() && in_its_host) {
            return Err(Status::not_found(format!(
                "not in queue {asked} (it is in queue {})",
                view.queue
            )));
        }
        Ok(url_item(&view, &crawl))
    }
}

/// Adds the counts of `more` (another node's) to `stats`.
pub(super) fn add(stats: &mut proto::Stats, more: proto::Stats) {
    stats.size = stats.size.saturating_add(more.size);
    stats.in_process = stats.in_process.saturating_add(more.in_process);
    stats.number_of_queues = stats.number_of_queues.saturating_add(more.number_of_queues);
    for (name, n) in more.counts {
        let sum = stats.counts.entry(name).or_default();
        *sum = sum.saturating_add(n);
    }
}
