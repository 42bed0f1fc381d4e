//! Politeness per host: at most N requests in flight and a minimum delay
//! between request starts (the configured delay, or the host's robots.txt
//! `Crawl-delay` up to a cap, whichever is longer).
//!
//! Idle hosts are forgotten ([`Politeness::prune`]), automatically as the
//! map grows, so a long-running process does not keep every host it ever
//! asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sitemapd_parser::HostKey;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Per-host request gate shared by every fetch of a [`crate::Fetcher`].
#[derive(Debug)]
pub struct Politeness {
    in_flight: usize,
    min_delay: Duration,
    crawl_delay_cap: Duration,
    hosts: Mutex<Hosts>,
}

/// How long a host must have been idle to be pruned automatically.
const AUTO_PRUNE_IDLE: Duration = Duration::from_secs(10 * 60);

/// The map is never pruned automatically below this many hosts.
const AUTO_PRUNE_MIN: usize = 1024;

#[derive(Debug)]
struct Hosts {
    map: HashMap<HostKey, Arc<Host>>,
    /// Past this many hosts, `host()` prunes: twice the size after the last
    /// prune, at least [`AUTO_PRUNE_MIN`].
    prune_above: usize,
}

#[derive(Debug)]
struct Host {
    permits: Arc<Semaphore>,
    /// Earliest start of the next request, and the delay after it.
    /// Earliest next start, delay between starts, and the last start.
    schedule: Mutex<(Instant, Duration, Option<Instant>)>,
}

/// Held while a request to a host is in flight (until its body is dropped).
#[derive(Debug)]
pub struct HostPermit {
    _permit: OwnedSemaphorePermit,
}

impl Politeness {
    /// `in_flight` requests per host at most (at least 1), `min_delay`
    /// between starts, robots `Crawl-delay` honoured up to `crawl_delay_cap`.
    pub fn new(in_flight: usize, min_delay: Duration, crawl_delay_cap: Duration) -> Self {
        Self {
            in_flight: in_flight.max(1),
            min_delay,
            crawl_delay_cap,
            hosts: Mutex::new(Hosts {
                map: HashMap::new(),
                prune_above: AUTO_PRUNE_MIN,
            }),
        }
    }

    fn host(&self, key: &HostKey) -> Arc<Host> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        if hosts.map.len() > hosts.prune_above && !hosts.map.contains_key(key) {
            let pruned = prune(
                &mut hosts.map,
                self.in_flight,
                AUTO_PRUNE_IDLE,
                Instant::now(),
            );
            hosts.prune_above = (hosts.map.len() * 2).max(AUTO_PRUNE_MIN);
            tracing::debug!(
                pruned,
                kept = hosts.map.len(),
                "idle hosts pruned from the politeness map"
            );
        }
        hosts
            .map
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(Host {
                    permits: Arc::new(Semaphore::new(self.in_flight)),
                    schedule: Mutex::new((Instant::now(), self.min_delay, None)),
                })
            })
            .clone()
    }

    /// Waits for a free slot on `key` and for its delay,
    /// then returns the permit that keeps the slot taken.
    pub async fn acquire(&self, key: &HostKey) -> HostPermit {
        let host = self.host(key);
        let permit = host
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("host semaphores are never closed");
        let start = {
            let mut schedule = host.schedule.lock().unwrap_or_else(|e| e.into_inner());
            let start = schedule.0.max(Instant::now());
            schedule.0 = after(start, schedule.1);
            schedule.2 = Some(start);
            start
        };
        tokio::time::sleep_until(start).await;
        HostPermit { _permit: permit }
    }

    /// Applies a robots.txt `Crawl-delay` (seconds) to `key`: the delay
    /// between starts becomes the longer of it (capped) and the minimum.
    ///
    /// It lasts as long as the host's entry: once the host is pruned
    /// ([`Politeness::prune`]), the minimum applies again until this is
    /// called anew. The walk does so on every robots.txt it reads, from
    /// the network or from its cache.
    pub fn set_crawl_delay(&self, key: &HostKey, seconds: f64) {
        let requested = Duration::try_from_secs_f64(seconds).unwrap_or(self.crawl_delay_cap);
        let delay = requested.min(self.crawl_delay_cap).max(self.min_delay);
        let host = self.host(key);
        let mut schedule = host.schedule.lock().unwrap_or_else(|e| e.into_inner());
        // A request started under the old delay (the robots.txt fetch that
        // brought this one): the next start is that start plus the new
        // delay, not the old.
        let (next, _, last) = *schedule;
        *schedule = (last.map_or(next, |l| after(l, delay)), delay, last);
    }

    /// Forgets the hosts idle for more than `idle`: no request in flight or
    /// waiting for one, and the earliest start of the next request more
    /// than `idle` in the past (so their delay has long run out). Returns
    /// how many were removed.
    ///
    /// A pruned host's `Crawl-delay` is forgotten with it (see
    /// [`Politeness::set_crawl_delay`]). Called automatically, with 10
    /// minutes, whenever a new host would take the map past twice its size
    /// after the last prune (and past 1,024 hosts).
    pub fn prune(&self, idle: Duration) -> usize {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        prune(&mut hosts.map, self.in_flight, idle, Instant::now())
    }

    /// The delay between request starts on `key` now.
    pub fn delay(&self, key: &HostKey) -> Duration {
        self.host(key)
            .schedule
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
    }
}

/// Removes the hosts of `map` idle for more than `idle` at `now`.
fn prune(
    map: &mut HashMap<HostKey, Arc<Host>>,
    in_flight: usize,
    idle: Duration,
    now: Instant,
) -> usize {
    let before = map.len();
    map.retain(|_, host| {
        // Only the map holds it: no `acquire` is between looking the host up
        // and taking a permit (it would hold a clone), so none can be lost.
        let unused = Arc::strong_count(host) == 1 && host.permits.available_permits() >= in_flight;
        let next = host.schedule.lock().unwrap_or_else(|e| e.into_inner()).0;
        !(unused && now.saturating_duration_since(next) > idle)
    });
    before - map.len()
}

/// `d` after `t`, or a year after it when `t + d` is past what an
/// `Instant` holds: a delay or deadline given as "forever" waits, and
/// never overflows.
pub(crate) fn after(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .unwrap_or_else(|| t + Duration::from_secs(365 * 86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of `http://{host}/`.
    fn k(host: &str) -> HostKey {
        sitemapd_parser::NormUrl::parse(&format!("http://{host}/"))
            .unwrap()
            .host_key()
    }

    #[tokio::test(start_paused = true)]
    async fn spaces_starts_and_limits_in_flight() {
        let gate = Arc::new(Politeness::new(
            2,
            Duration::from_secs(1),
            Duration::from_secs(30),
        ));
        let t0 = Instant::now();
        let a = gate.acquire(&k("h")).await;
        let b = gate.acquire(&k("h")).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(1));
        // A third waits for a permit as well as for the delay.
        let g = gate.clone();
        let third = tokio::spawn(async move {
            let _p = g.acquire(&k("h")).await;
            Instant::now()
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!third.is_finished());
        drop(a);
        let started = third.await.unwrap();
        assert_eq!(
            started - t0,
            Duration::from_secs(6),
            "when the first permit came back"
        );
        drop(b);
        // Another host is not held up.
        let t1 = Instant::now();
        let _c = gate.acquire(&k("other")).await;
        assert_eq!(t1.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn crawl_delay_is_capped_and_never_below_the_minimum() {
        let gate = Politeness::new(2, Duration::from_secs(1), Duration::from_secs(10));
        gate.set_crawl_delay(&k("h"), 3600.0);
        assert_eq!(gate.delay(&k("h")), Duration::from_secs(10));
        gate.set_crawl_delay(&k("h"), 0.1);
        assert_eq!(gate.delay(&k("h")), Duration::from_secs(1));
        gate.set_crawl_delay(&k("h"), f64::NAN);
        assert_eq!(gate.delay(&k("h")), Duration::from_secs(10));
    }

    /// The request after the robots.txt fetch that gave the delay waits
    /// the delay, not the minimum the robots.txt fetch was started under;
    /// a host with no request pending starts at once.
    #[tokio::test(start_paused = true)]
    async fn crawl_delay_spaces_the_request_after_the_robots_fetch() {
        let gate = Politeness::new(1, Duration::from_secs(1), Duration::from_secs(30));
        let t0 = Instant::now();
        drop(gate.acquire(&k("h")).await); // robots.txt
        gate.set_crawl_delay(&k("h"), 5.0);
        drop(gate.acquire(&k("h")).await); // the first sitemap
        assert_eq!(t0.elapsed(), Duration::from_secs(5));
        drop(gate.acquire(&k("h")).await);
        assert_eq!(t0.elapsed(), Duration::from_secs(10));
        let t1 = Instant::now();
        gate.set_crawl_delay(&k("fresh"), 5.0);
        drop(gate.acquire(&k("fresh")).await);
        assert_eq!(t1.elapsed(), Duration::ZERO);
    }

    /// A minimum delay past what an `Instant` holds ("forever") makes the
    /// next start a year away, not an overflow.
    #[tokio::test(start_paused = true)]
    async fn a_delay_of_forever_waits_a_year() {
        let gate = Politeness::new(1, Duration::MAX, Duration::MAX);
        let t0 = Instant::now();
        drop(gate.acquire(&k("h")).await);
        gate.set_crawl_delay(&k("h"), f64::MAX);
        drop(gate.acquire(&k("h")).await);
        assert_eq!(t0.elapsed(), Duration::from_secs(365 * 86_400));
    }

    fn hosts(gate: &Politeness) -> usize {
        gate.hosts.lock().unwrap().map.len()
    }

    #[tokio::test(start_paused = true)]
    async fn prune_forgets_idle_hosts_only() {
        let gate = Politeness::new(2, Duration::from_secs(1), Duration::from_secs(60));
        let t0 = Instant::now();
        drop(gate.acquire(&k("idle")).await);
        // Next start due at t0 + 1 s.
        let busy = gate.acquire(&k("busy")).await;
        gate.set_crawl_delay(&k("slow"), 60.0);
        drop(gate.acquire(&k("slow")).await);
        // Next start due at t0 + 60 s.
        let idle = Duration::from_secs(600);
        tokio::time::advance(idle + Duration::from_secs(1)).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(601));
        // `idle:80` next start exactly 600 s ago: not more than `idle`.
        assert_eq!(gate.prune(idle), 0);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(
            gate.prune(idle),
            1,
            "idle:80 goes; busy:80 has a request in flight"
        );
        assert_eq!(hosts(&gate), 2);
        drop(busy);
        assert_eq!(gate.prune(idle), 1, "busy:80 is idle now");
        tokio::time::advance(Duration::from_secs(59)).await;
        assert_eq!(
            gate.prune(idle),
            1,
            "slow:80, once its crawl delay is 10 min past"
        );
        assert_eq!(hosts(&gate), 0);
        // Its crawl delay went with it.
        assert_eq!(gate.delay(&k("slow")), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_request_keeps_its_host() {
        let gate = Arc::new(Politeness::new(1, Duration::ZERO, Duration::from_secs(60)));
        let held = gate.acquire(&k("h")).await;
        let g = gate.clone();
        let waiter = tokio::spawn(async move { drop(g.acquire(&k("h")).await) });
        tokio::task::yield_now().await;
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(gate.prune(Duration::from_secs(60)), 0);
        drop(held);
        waiter.await.unwrap();
        assert_eq!(gate.prune(Duration::from_secs(60)), 0, "just used");
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(gate.prune(Duration::from_secs(60)), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_map_prunes_itself_as_it_grows() {
        let gate = Politeness::new(2, Duration::ZERO, Duration::from_secs(60));
        for i in 0..AUTO_PRUNE_MIN {
            drop(gate.acquire(&k(&format!("old{i}"))).await);
        }
        tokio::time::advance(AUTO_PRUNE_IDLE + Duration::from_secs(1)).await;
        // Up to the threshold plus one, nothing is pruned.
        drop(gate.acquire(&k("new0")).await);
        assert_eq!(hosts(&gate), AUTO_PRUNE_MIN + 1);
        // The next new host finds the map past it: the idle ones go.
        drop(gate.acquire(&k("new1")).await);
        assert_eq!(hosts(&gate), 2);
        // Known hosts never trigger it.
        drop(gate.acquire(&k("new0")).await);
        assert_eq!(hosts(&gate), 2);
        let threshold = gate.hosts.lock().unwrap().prune_above;
        assert_eq!(threshold, AUTO_PRUNE_MIN);
    }
}
