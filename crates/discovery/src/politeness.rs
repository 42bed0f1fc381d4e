//! Politeness per host: at most N requests in flight and a minimum delay
//! between request starts (the configured delay, or the host's robots.txt
//! `Crawl-delay` up to a cap, whichever is longer).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Per-host request gate shared by every fetch of a [`crate::Fetcher`].
#[derive(Debug)]
pub struct Politeness {
    in_flight: usize,
    min_delay: Duration,
    crawl_delay_cap: Duration,
    hosts: Mutex<HashMap<String, Arc<Host>>>,
}

#[derive(Debug)]
struct Host {
    permits: Arc<Semaphore>,
    /// Earliest start of the next request, and the delay after it.
    schedule: Mutex<(Instant, Duration)>,
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
            hosts: Mutex::new(HashMap::new()),
        }
    }

    fn host(&self, key: &str) -> Arc<Host> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts
            .entry(key.to_string())
            .or_insert_with(|| {
                Arc::new(Host {
                    permits: Arc::new(Semaphore::new(self.in_flight)),
                    schedule: Mutex::new((Instant::now(), self.min_delay)),
                })
            })
            .clone()
    }

    /// Waits for a free slot on `key` (a `host:port`) and for its delay,
    /// then returns the permit that keeps the slot taken.
    pub async fn acquire(&self, key: &str) -> HostPermit {
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
            schedule.0 = start + schedule.1;
            start
        };
        tokio::time::sleep_until(start).await;
        HostPermit { _permit: permit }
    }

    /// Applies a robots.txt `Crawl-delay` (seconds) to `key`: the delay
    /// between starts becomes the longer of it (capped) and the minimum.
    pub fn set_crawl_delay(&self, key: &str, seconds: f64) {
        let requested = Duration::try_from_secs_f64(seconds).unwrap_or(self.crawl_delay_cap);
        let delay = requested.min(self.crawl_delay_cap).max(self.min_delay);
        let host = self.host(key);
        host.schedule.lock().unwrap_or_else(|e| e.into_inner()).1 = delay;
    }

    /// The delay between request starts on `key` now.
    pub fn delay(&self, key: &str) -> Duration {
        self.host(key)
            .schedule
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn spaces_starts_and_limits_in_flight() {
        let gate = Arc::new(Politeness::new(
            2,
            Duration::from_secs(1),
            Duration::from_secs(30),
        ));
        let t0 = Instant::now();
        let a = gate.acquire("h:80").await;
        let b = gate.acquire("h:80").await;
        assert_eq!(t0.elapsed(), Duration::from_secs(1));
        // A third waits for a permit as well as for the delay.
        let g = gate.clone();
        let third = tokio::spawn(async move {
            let _p = g.acquire("h:80").await;
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
        let _c = gate.acquire("other:80").await;
        assert_eq!(t1.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn crawl_delay_is_capped_and_never_below_the_minimum() {
        let gate = Politeness::new(2, Duration::from_secs(1), Duration::from_secs(10));
        gate.set_crawl_delay("h:80", 3600.0);
        assert_eq!(gate.delay("h:80"), Duration::from_secs(10));
        gate.set_crawl_delay("h:80", 0.1);
        assert_eq!(gate.delay("h:80"), Duration::from_secs(1));
        gate.set_crawl_delay("h:80", f64::NAN);
        assert_eq!(gate.delay("h:80"), Duration::from_secs(10));
    }
}
