//! GetURLs: a lease of the store with the protocol's per-queue rules as
//! its admit rule, each URL handed out held in transit.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sitemapd_scheduler::{LeaseRequest, Politeness, Timestamp};
use tonic::Status;

use super::convert::{check_delay, metadata_map};
use super::{Inner, lock};
use crate::crawl_id;
use crate::proto;
use crate::status::store_status;

/// How long a URL handed out stays in transit when the client asks for
/// no time (`delay_requestable` 0), as the reference service does.
pub const DEFAULT_IN_TRANSIT: Duration = Duration::from_secs(30);
/// URLs one GetURLs call sends at most, whatever it asks.
pub const MAX_URLS_PER_CALL: usize = 10_000;

/// What one GetURLs call asks, within the service's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Asked {
    /// URLs of one queue at most (`max_urls_per_queue`; 0: any number).
    pub(super) per_queue: usize,
    /// Queues at most (`max_queues`; 0: any number).
    pub(super) max_queues: usize,
    /// URLs in all at most: the product, [`MAX_URLS_PER_CALL`] at most.
    pub(super) n: usize,
    /// How long each URL handed out is held in transit
    /// (`delay_requestable`; 0: [`DEFAULT_IN_TRANSIT`]).
    pub(super) hold: Duration,
}

impl Asked {
    /// What `p` asks; INVALID_ARGUMENT for a hold over
    /// [`super::MAX_DELAY_SECS`].
    pub(super) fn of(p: &proto::GetParams) -> Result<Asked, Status> {
        let per_queue = if p.max_urls_per_queue == 0 {
            usize::MAX
        } else {
            p.max_urls_per_queue as usize
        };
        let max_queues = if p.max_queues == 0 {
            usize::MAX
        } else {
            p.max_queues as usize
        };
        let n = per_queue.saturating_mul(max_queues).min(MAX_URLS_PER_CALL);
        check_delay(p.delay_requestable)?;
        let hold = if p.delay_requestable == 0 {
            DEFAULT_IN_TRANSIT
        } else {
            Duration::from_secs(u64::from(p.delay_requestable))
        };
        Ok(Asked {
            per_queue,
            max_queues,
            n,
            hold,
        })
    }
}

impl Inner {
    /// One GetURLs call.
    pub(super) fn get_urls(&self, p: proto::GetParams) -> Result<Vec<proto::UrlInfo>, Status> {
        if !self.active.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        let crawls = match &p.item {
            Some(proto::get_params::Item::CrawlId(c)) => vec![crawl_id(c).to_string()],
            _ => self.all_crawls(),
        };
        let Asked {
            per_queue,
            max_queues,
            n,
            hold,
        } = Asked::of(&p)?;
        let now = self.now();
        let default_delay = self.default_delay.load(Ordering::SeqCst);
        let mut out = Vec::new();
        let mut queues_served = 0usize;
        // Check and reservation under one lock: two calls never serve a
        // queue twice in one window.
        let mut rules = lock(&self.rules);
        self.prune(&mut rules, now);
        for crawl in crawls {
            let Some(store) = self.existing(&crawl)? else {
                continue;
            };
            let left = n.saturating_sub(out.len());
            if left == 0 || queues_served >= max_queues {
                break;
            }
            // Each host no faster than a crawler may fetch from it at once
            // (its Crawl-delay, the store's lease delay).
            let request = LeaseRequest::new(left)
                .per_host(left)
                .max_queues(max_queues - queues_served)
                .ttl(hold)
                .politeness(Politeness::Now);
            let queue = (!p.key.is_empty()).then_some(p.key.as_str());
            let leased = store
                .lease_admitting(&request, queue, Timestamp::from_unix(now), |name| {
                    // A queue with no rules yet (none set, never served)
                    // is served.
                    let Some(r) = rules.get_mut(&(crawl.clone(), name.to_string())) else {
                        return per_queue;
                    };
                    r.admits(now, default_delay, per_queue, || {
                        Some(store.queue(name).ok().flatten()?.completed)
                    })
                })
                .map_err(store_status)?;
            let until = now.saturating_add(i64::try_from(hold.as_secs()).unwrap_or(i64::MAX));
            let mut served = HashSet::new();
            for l in leased {
                let r = rules.entry((crawl.clone(), l.queue.clone())).or_default();
                r.last_served = now;
                r.in_transit.insert(l.url.clone(), until);
                served.insert(l.queue.clone());
                out.push(proto::UrlInfo {
                    metadata: metadata_map(&l.metadata),
                    url: l.url,
                    key: l.queue,
                    crawl_id: crawl.clone(),
                });
            }
            queues_served += served.len();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(per_queue: u32, max_queues: u32, delay: u32) -> proto::GetParams {
        proto::GetParams {
            max_urls_per_queue: per_queue,
            max_queues,
            delay_requestable: delay,
            ..Default::default()
        }
    }

    #[test]
    fn zero_asks_for_any_number_within_the_call_s_bound() {
        let any = Asked::of(&params(0, 0, 0)).unwrap();
        assert_eq!((any.per_queue, any.max_queues), (usize::MAX, usize::MAX));
        assert_eq!(any.n, MAX_URLS_PER_CALL);
        assert_eq!(any.hold, DEFAULT_IN_TRANSIT);
        let some = Asked::of(&params(3, 4, 60)).unwrap();
        assert_eq!(
            some,
            Asked {
                per_queue: 3,
                max_queues: 4,
                n: 12,
                hold: Duration::from_secs(60),
            }
        );
        let many = Asked::of(&params(u32::MAX, u32::MAX, 0)).unwrap();
        assert_eq!(many.n, MAX_URLS_PER_CALL);
        assert_eq!(Asked::of(&params(0, 2, 0)).unwrap().n, MAX_URLS_PER_CALL);
    }

    #[test]
    fn a_hold_over_seven_days_is_refused() {
        let limit = super::super::MAX_DELAY_SECS;
        assert!(Asked::of(&params(1, 1, limit)).is_ok());
        let refused = Asked::of(&params(1, 1, limit + 1)).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    }
}
