//! The protocol's per-queue rules, in memory as in the reference service:
//! blocks (BlockQueueUntil), delays between servings (SetDelay), crawl
//! limits (SetCrawlLimit) and the URLs in transit, with what GetURLs may
//! take of a queue under them. A restart forgets them (the URLs and their
//! leases stay).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use tonic::Status;

use super::{Inner, lock};
use crate::crawl_id;
use crate::status::store_status;

/// Seconds between two servings of one queue unless SetDelay said
/// otherwise, as the reference service does.
pub const DEFAULT_QUEUE_DELAY: u32 = 1;
/// Seconds between two prunings of the per-queue rules.
const PRUNE_EVERY: i64 = 60;

/// The rules of every queue, by crawl and queue key.
pub(super) type Rules = HashMap<(String, String), QueueRules>;

/// The per-queue rules of the protocol, in memory.
#[derive(Debug, Default, Clone)]
pub(super) struct QueueRules {
    /// Not served while now < this (unix seconds).
    pub(super) blocked_until: i64,
    /// Seconds between two servings (SetDelay); `None`: the default.
    pub(super) delay: Option<u32>,
    /// No more serving once this many URLs are completed; 0: no limit.
    pub(super) limit: u32,
    /// The last time a GetURLs call sent it a URL.
    pub(super) last_served: i64,
    /// URLs handed out and not reported, with the end of their hold.
    pub(super) in_transit: HashMap<String, i64>,
}

impl QueueRules {
    /// URLs in transit at `now` (those whose hold is over are dropped).
    pub(super) fn in_transit(&mut self, now: i64) -> usize {
        self.in_transit.retain(|_, until| *until > now);
        self.in_transit.len()
    }

    /// How many URLs GetURLs may take of the queue at `now`, asked for
    /// `per_queue` at most: none while it is blocked, waits out its delay
    /// since it was last served (`default_delay` unless SetDelay set one),
    /// has reached its crawl limit (`completed`: the URLs of the queue
    /// completed, asked only when a limit is set) or holds `per_queue` in
    /// transit; else what `per_queue` leaves beside those in transit.
    pub(super) fn admits(
        &mut self,
        now: i64,
        default_delay: u32,
        per_queue: usize,
        completed: impl FnOnce() -> Option<u64>,
    ) -> usize {
        let delay = i64::from(self.delay.unwrap_or(default_delay));
        let limited =
            self.limit > 0 && completed().is_some_and(|done| done >= u64::from(self.limit));
        let waiting = self.last_served > 0 && now < self.last_served.saturating_add(delay);
        let in_transit = self.in_transit(now);
        if self.blocked_until > now || limited || waiting || in_transit >= per_queue {
            return 0;
        }
        per_queue.saturating_sub(in_transit)
    }

    /// Whether the rules still hold anything at `now`: a block, delay or
    /// limit set, a URL in transit, or a delay since the last serving not
    /// over.
    fn holds_anything(&mut self, now: i64, default_delay: i64) -> bool {
        self.in_transit(now) > 0
            || self.delay.is_some()
            || self.limit > 0
            || self.blocked_until > now
            || now < self.last_served.saturating_add(default_delay)
    }
}

impl Inner {
    /// Drops, once a minute, the rules of queues that no longer hold
    /// anything (no block, delay or limit set, nothing in transit, their
    /// delay since the last serving over), so that what the service
    /// remembers follows what clients set and hold, not every host ever
    /// served.
    pub(super) fn prune(&self, rules: &mut Rules, now: i64) {
        if now
            < self
                .pruned
                .load(Ordering::Relaxed)
                .saturating_add(PRUNE_EVERY)
        {
            return;
        }
        self.pruned.store(now, Ordering::Relaxed);
        let default_delay = i64::from(self.default_delay.load(Ordering::SeqCst));
        rules.retain(|_, r| r.holds_anything(now, default_delay));
    }

    /// The queue `key` of `crawl`, if it exists, with its rules to change.
    pub(super) fn with_rules<T>(
        &self,
        crawl: &str,
        key: &str,
        f: impl FnOnce(&mut QueueRules) -> T,
    ) -> Result<Option<T>, Status> {
        let crawl = crawl_id(crawl).to_string();
        let Some(store) = self.existing(&crawl)? else {
            return Ok(None);
        };
        if store.queue(key).map_err(store_status)?.is_none() {
            return Ok(None);
        }
        let mut rules = lock(&self.rules);
        Ok(Some(f(rules.entry((crawl, key.to_string())).or_default())))
    }

    /// The queues of `crawl` (normalised) blocked at `now`.
    pub(super) fn blocked(&self, crawl: &str, now: i64) -> HashSet<String> {
        lock(&self.rules)
            .iter()
            .filter(|((c, _), r)| *c == crawl && r.blocked_until > now)
            .map(|((_, name), _)| name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000;

    /// `admits` of `r` at NOW, 10 per queue asked, a default delay of 1 s
    /// and `completed` URLs in the queue.
    fn admits(r: &mut QueueRules, completed: u64) -> usize {
        r.admits(NOW, 1, 10, || Some(completed))
    }

    #[test]
    fn a_queue_with_no_rule_set_takes_what_is_asked() {
        let mut r = QueueRules::default();
        assert_eq!(admits(&mut r, 0), 10);
        // The crawl limit is not looked up when none is set.
        assert_eq!(r.admits(NOW, 1, 10, || unreachable!()), 10);
    }

    #[test]
    fn a_block_holds_until_its_time() {
        let mut r = QueueRules {
            blocked_until: NOW + 1,
            ..QueueRules::default()
        };
        assert_eq!(admits(&mut r, 0), 0);
        r.blocked_until = NOW;
        assert_eq!(admits(&mut r, 0), 10, "over at its second");
    }

    #[test]
    fn a_queue_waits_out_its_delay_since_it_was_last_served() {
        let mut r = QueueRules {
            last_served: NOW - 1,
            ..QueueRules::default()
        };
        // The default delay (1 s) is over; one of 5 s set is not.
        assert_eq!(admits(&mut r, 0), 10);
        r.delay = Some(5);
        assert_eq!(admits(&mut r, 0), 0);
        r.last_served = NOW - 5;
        assert_eq!(admits(&mut r, 0), 10);
        // Never served (0): no wait, whatever the delay.
        r.last_served = 0;
        r.delay = Some(u32::MAX);
        assert_eq!(admits(&mut r, 0), 10);
    }

    #[test]
    fn a_crawl_limit_stops_the_queue_once_reached() {
        let mut r = QueueRules {
            limit: 3,
            ..QueueRules::default()
        };
        assert_eq!(admits(&mut r, 2), 10);
        assert_eq!(admits(&mut r, 3), 0);
        // A queue the store no longer has is not limited.
        assert_eq!(r.admits(NOW, 1, 10, || None), 10);
    }

    #[test]
    fn urls_in_transit_count_against_the_queue_until_their_hold_ends() {
        let mut r = QueueRules::default();
        for (i, until) in [NOW + 1, NOW + 1, NOW].into_iter().enumerate() {
            r.in_transit.insert(format!("u{i}"), until);
        }
        // The hold ending now is over.
        assert_eq!(r.in_transit(NOW), 2);
        assert_eq!(r.admits(NOW, 1, 3, || None), 1);
        assert_eq!(r.admits(NOW, 1, 2, || None), 0);
        assert_eq!(r.admits(NOW + 1, 1, 2, || None), 2);
        assert!(r.in_transit.is_empty());
    }

    #[test]
    fn rules_that_hold_nothing_can_be_forgotten() {
        let mut idle = QueueRules {
            last_served: NOW - 2,
            ..QueueRules::default()
        };
        assert!(!idle.holds_anything(NOW, 1));
        assert!(idle.holds_anything(NOW, 3), "within the default delay");
        for mut set in [
            QueueRules {
                delay: Some(0),
                ..QueueRules::default()
            },
            QueueRules {
                limit: 1,
                ..QueueRules::default()
            },
            QueueRules {
                blocked_until: NOW + 1,
                ..QueueRules::default()
            },
            QueueRules {
                in_transit: HashMap::from([("u".to_string(), NOW + 1)]),
                ..QueueRules::default()
            },
        ] {
            assert!(set.holds_anything(NOW, 0), "{set:?}");
        }
    }
}
