//! [`Timestamp`]: the one type for a point in time in the store's API.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A point in time, in whole seconds since the Unix epoch (UTC). Spans of
/// time are [`Duration`]s: `Timestamp + Duration` is a `Timestamp`, and
/// the arithmetic saturates instead of overflowing. Serialises as the
/// number of seconds.
///
/// ```
/// use std::time::Duration;
/// use sitemapd_scheduler::Timestamp;
///
/// let t = Timestamp::from_unix(1_700_000_000);
/// assert_eq!((t + Duration::from_secs(60)).unix(), 1_700_000_060);
/// assert_eq!(t.plus_secs(-60).unix(), 1_699_999_940);
/// assert_eq!(t.plus_secs(60).secs_since(t), 60);
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// The time `secs` seconds after the Unix epoch (before it if negative).
    pub const fn from_unix(secs: i64) -> Timestamp {
        Timestamp(secs)
    }

    /// Seconds since the Unix epoch.
    pub const fn unix(self) -> i64 {
        self.0
    }

    /// The system clock now (the epoch if the clock is before it).
    pub fn now() -> Timestamp {
        Timestamp::from(SystemTime::now())
    }

    /// `secs` seconds later (earlier if negative), saturating.
    pub const fn plus_secs(self, secs: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(secs))
    }

    /// Seconds from `earlier` to `self` (negative if `earlier` is later).
    pub const fn secs_since(self, earlier: Timestamp) -> i64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl From<SystemTime> for Timestamp {
    fn from(t: SystemTime) -> Timestamp {
        Timestamp(
            t.duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        )
    }
}

impl From<Timestamp> for SystemTime {
    /// Saturates at what `SystemTime` can hold.
    fn from(t: Timestamp) -> SystemTime {
        let d = Duration::from_secs(t.0.unsigned_abs());
        let at = if t.0 >= 0 {
            UNIX_EPOCH.checked_add(d)
        } else {
            UNIX_EPOCH.checked_sub(d)
        };
        at.unwrap_or(UNIX_EPOCH)
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, d: Duration) -> Timestamp {
        self.plus_secs(i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    }
}

impl Sub<Duration> for Timestamp {
    type Output = Timestamp;
    fn sub(self, d: Duration) -> Timestamp {
        Timestamp(
            self.0
                .saturating_sub(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        )
    }
}

impl fmt::Display for Timestamp {
    /// The Unix seconds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let max = Timestamp::from_unix(i64::MAX);
        assert_eq!(max + Duration::from_secs(5), max);
        assert_eq!(max.plus_secs(1), max);
        let min = Timestamp::from_unix(i64::MIN);
        assert_eq!(min - Duration::from_secs(5), min);
        assert_eq!(Timestamp::EPOCH + Duration::MAX, max);
        assert_eq!(min.secs_since(max), i64::MIN);
    }

    #[test]
    fn serialises_as_seconds() {
        let t = Timestamp::from_unix(42);
        assert_eq!(serde_json::to_string(&t).unwrap(), "42");
        assert_eq!(serde_json::from_str::<Timestamp>("42").unwrap(), t);
    }
}
