//! [`Clock`]: where "now" comes from for whoever drives a [`Store`](crate::Store).
//!
//! The store takes the time as an argument to each call that writes or
//! leases (`lease(&request, now)`, `discover(urls, now)`, …). A
//! service built on it (the daemon, the URLFrontier service) reads that
//! `now` from a [`Clock`]: the [`SystemClock`] in production, a
//! [`ManualClock`] in a test or a simulation, which moves only when told,
//! so that nothing has to sleep for time to pass.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::Timestamp;

/// A source of the current time, in the store's whole seconds.
///
/// Shared between threads (`Send + Sync`), usually as an
/// `Arc<dyn Clock>`. An implementation may go backwards (a
/// [`ManualClock`] set to an earlier time, a system clock corrected): its
/// users must not assume that two readings are in order.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sitemapd_scheduler::{Clock, ManualClock, SystemClock, Timestamp};
///
/// let wall: Arc<dyn Clock> = Arc::new(SystemClock);
/// assert!(wall.now() > Timestamp::from_unix(1_700_000_000));
///
/// let manual = Arc::new(ManualClock::new(Timestamp::from_unix(1_000)));
/// let shared: Arc<dyn Clock> = manual.clone();
/// manual.advance(Duration::from_secs(30));
/// assert_eq!(shared.now(), Timestamp::from_unix(1_030));
/// ```
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The time now.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock ([`Timestamp::now`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that stands still until it is moved: [`ManualClock::advance`]
/// and [`ManualClock::set`] take `&self`, so one clock shared through an
/// [`Arc`] is moved by a test while the service under test reads it.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock at `start`.
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock {
            now: AtomicI64::new(start.unix()),
        }
    }

    /// A clock at the system clock's time now, shared.
    pub fn at_system_time() -> Arc<ManualClock> {
        Arc::new(ManualClock::new(Timestamp::now()))
    }

    /// Moves the clock `by` later (whole seconds; saturating).
    pub fn advance(&self, by: Duration) {
        let secs = i64::try_from(by.as_secs()).unwrap_or(i64::MAX);
        // `fetch_update` with a closure that always returns Some never fails.
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(secs))
            });
    }

    /// Sets the clock to `at` (earlier or later).
    pub fn set(&self, at: Timestamp) {
        self.now.store(at.unix(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix(self.now.load(Ordering::SeqCst))
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_unix(100));
        assert_eq!(clock.now(), Timestamp::from_unix(100));
        assert_eq!(clock.now(), Timestamp::from_unix(100));
        clock.advance(Duration::from_secs(5));
        assert_eq!(clock.now(), Timestamp::from_unix(105));
        // Parts of a second are dropped, as the store counts whole seconds.
        clock.advance(Duration::from_millis(1_999));
        assert_eq!(clock.now(), Timestamp::from_unix(106));
        clock.set(Timestamp::from_unix(50));
        assert_eq!(clock.now(), Timestamp::from_unix(50), "set goes back too");
    }

    #[test]
    fn a_manual_clock_saturates() {
        let clock = ManualClock::new(Timestamp::from_unix(i64::MAX - 1));
        clock.advance(Duration::from_secs(10));
        assert_eq!(clock.now(), Timestamp::from_unix(i64::MAX));
        clock.advance(Duration::MAX);
        assert_eq!(clock.now(), Timestamp::from_unix(i64::MAX));
    }

    #[test]
    fn a_shared_manual_clock_is_one_clock() {
        let clock = ManualClock::at_system_time();
        let start = clock.now();
        let reader: Arc<dyn Clock> = clock.clone();
        let moved = std::thread::spawn({
            let clock = clock.clone();
            move || clock.advance(Duration::from_secs(60))
        });
        moved.join().unwrap();
        assert_eq!(reader.now(), start + Duration::from_secs(60));
    }

    #[test]
    fn the_system_clock_is_the_wall_clock() {
        let before = Timestamp::now();
        let read = SystemClock.now();
        let after = Timestamp::now();
        assert!(before <= read && read <= after);
    }
}
