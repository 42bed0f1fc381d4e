//! What keeps the IndexNow intake from being a lever on the daemon: request
//! and URL quotas per host and per client address ([`Quotas`]), a cap on
//! the hosts it meets for the first time each day ([`NewHosts`]), and the
//! same URL pushed again within a window counted once ([`Recent`]). Every
//! table has a cap: memory is bounded whatever the requests.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

/// Seconds of a minute and of a day, the quota windows.
const MINUTE: i64 = 60;
const DAY: i64 = 86_400;

/// Past its quota: try again in this many seconds (`Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RetryAfter(pub u64);

/// A key's use of its quota in the current windows.
#[derive(Debug, Clone, Copy)]
struct Usage {
    minute: i64,
    requests: u32,
    day: i64,
    urls: u64,
}

impl Usage {
    fn new(now: i64) -> Usage {
        Usage {
            minute: now - now.rem_euclid(MINUTE),
            requests: 0,
            day: now - now.rem_euclid(DAY),
            urls: 0,
        }
    }

    /// The windows moved on to the ones holding `now`.
    fn at(mut self, now: i64) -> Usage {
        let fresh = Usage::new(now);
        if fresh.minute != self.minute {
            self.minute = fresh.minute;
            self.requests = 0;
        }
        if fresh.day != self.day {
            self.day = fresh.day;
            self.urls = 0;
        }
        self
    }

    /// Nothing counted in the windows of `now`: the entry may go.
    fn idle(&self, now: i64) -> bool {
        let u = self.at(now);
        u.requests == 0 && u.urls == 0
    }
}

/// Requests per minute and URLs per day, per key (a host, a client
/// address), at most `cap` keys tracked: when the table is full and no
/// entry is idle, a new key is refused (fail closed) until one is.
pub(super) struct Quotas<K> {
    requests_per_minute: u32,
    urls_per_day: u64,
    cap: usize,
    table: HashMap<K, Usage>,
    /// When the table was last swept for idle entries (one sweep a second
    /// at most: a full table of live keys is not scanned per request).
    swept: i64,
}

impl<K: Hash + Eq + Clone> Quotas<K> {
    pub(super) fn new(requests_per_minute: u32, urls_per_day: u64, cap: usize) -> Self {
        Quotas {
            requests_per_minute,
            urls_per_day,
            cap: cap.max(1),
            table: HashMap::default(),
            swept: i64::MIN,
        }
    }

    /// Keys tracked.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// The usage of `key`, made room for if new.
    fn usage(&mut self, key: &K, now: i64) -> Result<&mut Usage, RetryAfter> {
        if !self.table.contains_key(key) && self.table.len() >= self.cap {
            if self.swept == now {
                return Err(RetryAfter(1));
            }
            self.swept = now;
            self.table.retain(|_, u| !u.idle(now));
            if self.table.len() >= self.cap {
                return Err(RetryAfter(until_next_minute(now)));
            }
        }
        let usage = self.table.entry(key.clone()).or_insert(Usage::new(now));
        *usage = usage.at(now);
        Ok(usage)
    }

    /// Counts `requests` requests of `key` carrying `urls` URLs, or says
    /// when they may come again; what is refused counts nothing.
    pub(super) fn take(
        &mut self,
        key: &K,
        requests: u32,
        urls: u64,
        now: i64,
    ) -> Result<(), RetryAfter> {
        let (per_minute, per_day) = (self.requests_per_minute, self.urls_per_day);
        let usage = self.usage(key, now)?;
        if usage.requests.saturating_add(requests) > per_minute {
            return Err(RetryAfter(until_next_minute(now)));
        }
        if usage.urls.saturating_add(urls) > per_day {
            return Err(RetryAfter((usage.day + DAY - now).max(1) as u64));
        }
        usage.requests += requests;
        usage.urls = usage.urls.saturating_add(urls);
        Ok(())
    }
}

fn until_next_minute(now: i64) -> u64 {
    (MINUTE - now.rem_euclid(MINUTE)) as u64
}

/// Hosts the intake met for the first time today, at most `per_day`.
pub(super) struct NewHosts {
    per_day: u64,
    day: i64,
    taken: u64,
}

impl NewHosts {
    pub(super) fn new(per_day: u64) -> Self {
        NewHosts {
            per_day,
            day: i64::MIN,
            taken: 0,
        }
    }

    /// Counts one new host: the day it counts in; or says when the next
    /// day begins.
    pub(super) fn take(&mut self, now: i64) -> Result<i64, RetryAfter> {
        let day = now - now.rem_euclid(DAY);
        if day != self.day {
            self.day = day;
            self.taken = 0;
        }
        if self.taken >= self.per_day {
            return Err(RetryAfter((day + DAY - now).max(1) as u64));
        }
        self.taken += 1;
        Ok(day)
    }

    /// Gives back a place taken on `day` (a host that did not verify),
    /// if that day is still the current one.
    pub(super) fn give_back(&mut self, day: i64) {
        if day == self.day {
            self.taken = self.taken.saturating_sub(1);
        }
    }
}

/// The URLs pushed within the last window, by hash: two generations, each
/// of at most `cap` URLs, the older dropped when the newer is a window old
/// or full. A URL is recent if either holds it; memory is two sets of
/// `cap` hashes at most.
pub(super) struct Recent {
    window: i64,
    cap: usize,
    started: i64,
    current: HashSet<u64>,
    previous: HashSet<u64>,
    hasher: RandomState,
}

impl Recent {
    pub(super) fn new(window_secs: u64, cap: usize) -> Self {
        Recent {
            window: window_secs.min(i64::MAX as u64) as i64,
            cap: cap.max(1),
            started: i64::MIN,
            current: HashSet::new(),
            previous: HashSet::new(),
            hasher: RandomState::new(),
        }
    }

    /// Whether `url` was pushed (and [`Recent::insert`]ed) within the
    /// window.
    pub(super) fn holds(&mut self, url: &str, now: i64) -> bool {
        if self.window == 0 {
            return false;
        }
        self.roll(now);
        let h = self.hasher.hash_one(url);
        self.previous.contains(&h) || self.current.contains(&h)
    }

    /// Records `url` as pushed at `now`.
    pub(super) fn insert(&mut self, url: &str, now: i64) {
        if self.window == 0 {
            return;
        }
        self.roll(now);
        let h = self.hasher.hash_one(url);
        self.current.insert(h);
    }

    /// A new generation when the newer is a window old or full; the older
    /// dropped with it.
    fn roll(&mut self, now: i64) {
        if now.saturating_sub(self.started) >= self.window || self.current.len() >= self.cap {
            self.previous = std::mem::take(&mut self.current);
            // A window since the newer started: the older is past it.
            if now.saturating_sub(self.started) >= self.window.saturating_mul(2) {
                self.previous.clear();
            }
            self.started = now;
        }
    }

    /// URL hashes held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_700_000_040;

    #[test]
    fn requests_per_minute_and_urls_per_day() {
        let mut q = Quotas::new(3, 100, 10);
        for _ in 0..3 {
            q.take(&"a", 1, 10, T).unwrap();
        }
        let retry = q.take(&"a", 1, 1, T).unwrap_err();
        assert_eq!(retry, RetryAfter(until_next_minute(T)));
        // URLs alone are not a request.
        q.take(&"a", 0, 1, T).unwrap();
        // Another key has its own quota.
        q.take(&"b", 1, 1, T).unwrap();
        // The next minute: requests again, URLs still counted for the day.
        let next = T + 60;
        q.take(&"a", 1, 69, next).unwrap();
        let day_end = q.take(&"a", 1, 1, next).unwrap_err();
        assert!(day_end.0 > 60 && day_end.0 <= 86_400, "{day_end:?}");
        // A refused request counted nothing.
        q.take(&"a", 1, 0, next).unwrap();
        // The next day: all again.
        q.take(&"a", 1, 100, T + 86_400).unwrap();
    }

    #[test]
    fn a_full_table_makes_room_from_idle_keys_or_refuses() {
        let mut q = Quotas::new(10, 1_000, 4);
        for k in 0..4 {
            q.take(&k, 1, 1, T).unwrap();
        }
        assert!(q.take(&9, 1, 1, T).is_err(), "full of live keys");
        assert!(
            q.take(&9, 1, 1, T).is_err(),
            "no second sweep in the same second"
        );
        // A day later every key is idle: swept.
        q.take(&9, 1, 1, T + 86_400).unwrap();
        assert_eq!(q.len(), 1);
    }

    /// Any number of keys: the table never holds more than its cap.
    #[test]
    fn the_table_stays_within_its_cap() {
        let mut q = Quotas::new(1, 1, 1_000);
        for k in 0..200_000u32 {
            let _ = q.take(&k, 1, 1, T + i64::from(k / 1_000));
            assert!(q.len() <= 1_000);
        }
    }

    #[test]
    fn new_hosts_per_day() {
        let mut n = NewHosts::new(2);
        let day = n.take(T).unwrap();
        n.take(T).unwrap();
        assert!(n.take(T + 5).is_err());
        n.give_back(day);
        n.take(T + 5).unwrap();
        // A place given back a day late leaves the new day's count alone.
        let next = n.take(T + 86_400).unwrap();
        n.take(T + 86_400).unwrap();
        n.give_back(day);
        assert!(n.take(T + 86_401).is_err());
        assert_ne!(day, next);
    }

    /// `holds` then `insert`, as the intake does around a store write.
    fn seen(r: &mut Recent, url: &str, now: i64) -> bool {
        let held = r.holds(url, now);
        r.insert(url, now);
        held
    }

    #[test]
    fn a_url_pushed_again_within_the_window_is_recent() {
        let mut r = Recent::new(600, 1_000);
        assert!(!seen(&mut r, "https://a.example/x", T));
        assert!(seen(&mut r, "https://a.example/x", T + 10));
        assert!(!seen(&mut r, "https://a.example/y", T + 10));
        // Still recent after one rotation (it is in the older generation).
        assert!(seen(&mut r, "https://a.example/y", T + 650));
        // Two windows without it: forgotten.
        assert!(!seen(&mut r, "https://a.example/x", T + 3_000));
        // Asked about but not inserted (a write that failed): not recent.
        assert!(!r.holds("https://a.example/z", T + 3_001));
        assert!(!r.holds("https://a.example/z", T + 3_002));
        // Off: nothing is recent.
        let mut off = Recent::new(0, 10);
        assert!(!seen(&mut off, "u", T) && !seen(&mut off, "u", T));
    }

    #[test]
    fn recent_urls_stay_within_two_generations() {
        let mut r = Recent::new(600, 1_000);
        for i in 0..100_000 {
            seen(&mut r, &format!("https://h{i}.example/"), T);
            assert!(r.len() <= 2_000);
        }
    }
}
