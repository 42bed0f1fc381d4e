//! When to read each sitemap again: one schedule per sitemap, kept in its
//! own keyspace (`r` ‖ sitemap URL, the store's key layout) and advanced by
//! every read that [`Ingest::sitemap_fetched`](crate::Ingest::sitemap_fetched)
//! records, in the same batch as the sitemap's record.
//!
//! ## The rule (`next`)
//!
//! - **First read** (no state, or no successful read yet): the interval is
//!   the base, [`RefreshParams::sitemap_secs`] (a day) for a sitemap,
//!   [`RefreshParams::feed_secs`] (an hour) for an RSS/Atom feed.
//! - **Changed** (a 2xx read whose fingerprint differs from the last one):
//!   the interval halves, not below [`RefreshParams::min_secs`].
//! - **Unchanged** (a 304, or a 2xx read with the same fingerprint): the
//!   interval grows by half, not above [`RefreshParams::max_secs`], and for
//!   a feed not above a day ([`FEED_MAX_SECS`]).
//! - **Failed** (any other status, or no response): the interval is kept;
//!   the next try is after `error_backoff_secs × 2^(errors in a row − 1)`,
//!   at most the longest interval.
//!
//! Every interval is kept within `[min_secs, max]` (the bounds or the feed
//! flag may change between reads). The wait to the next read then gets up
//! to ±5 % of jitter from a hash of the sitemap's URL ([`jitter_unit`]),
//! stable for one sitemap, so sitemaps first read together (one site's
//! walk) do not all fall due in the same second again.
//!
//! The first successful read counts as changed (everything in it was new).
//! A cut 2xx read is compared like any other: cut at the same point it is
//! unchanged, cut elsewhere it is changed (and read again sooner).
//!
//! ## The fingerprint
//!
//! Computed by the ingest session over the entries of one read, order
//! independent: each entry's (loc, lastmod seconds, changefreq, priority)
//! is hashed (FNV-1a, then a 64-bit mix), and the hashes are combined with
//! a wrapping sum and a xor, with the entry count, and the children an index
//! lists ([`SitemapFetch::children`](crate::SitemapFetch::children)). The
//! hash is stable across builds and platforms (no `DefaultHasher`).

use crate::record::RefreshState;

use crate::hash::{Fnv1a, fnv1a};

/// The longest interval of a feed, seconds (a day).
pub const FEED_MAX_SECS: u32 = 86_400;

/// The refresh schedule's parameters (seconds). `Default` gives the
/// documented values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshParams {
    /// First interval of a sitemap; default a day.
    pub sitemap_secs: u32,
    /// First interval of an RSS/Atom feed; default an hour.
    pub feed_secs: u32,
    /// The shortest interval; default 15 minutes.
    pub min_secs: u32,
    /// The longest interval (and the longest error backoff); default a week.
    pub max_secs: u32,
    /// The wait after a first failure, doubled at each further one in a
    /// row; default 15 minutes.
    pub error_backoff_secs: u32,
}

impl Default for RefreshParams {
    fn default() -> Self {
        Self {
            sitemap_secs: 86_400,
            feed_secs: 3_600,
            min_secs: 900,
            max_secs: 7 * 86_400,
            error_backoff_secs: 900,
        }
    }
}

/// What one read of a sitemap found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum RefreshOutcome {
    /// A 2xx read with this fingerprint, different from the last one (or
    /// the first).
    Changed {
        /// The read's fingerprint.
        fingerprint: u64,
    },
    /// A 304, or a 2xx read with the last fingerprint.
    Unchanged,
    /// Any other status, or no response.
    Failed,
}

/// One read, for [`next`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RefreshRead {
    /// What it found.
    pub outcome: RefreshOutcome,
    /// The sitemap is an RSS/Atom feed (for a read without a body, what the
    /// last one with a body said: [`RefreshState::feed`]).
    pub feed: bool,
    /// The sitemap's jitter unit in `[-1, 1]` ([`jitter_unit`] of its URL);
    /// out of range is clamped, NaN is 0.
    pub jitter: f64,
}

/// The jitter unit of a sitemap: a number in `[-1, 1]` from a stable hash
/// of its URL (the same spread [`Store`](crate::Store) gives URL due times).
pub fn jitter_unit(url: &str) -> f64 {
    (fnv1a(url.as_bytes()) % 2001) as f64 / 1000.0 - 1.0
}

/// The schedule after a read at `now`, given the one before (see the module
/// docs for the rule). Pure: the same input gives the same state.
pub(crate) fn next(
    prev: Option<&RefreshState>,
    read: RefreshRead,
    params: &RefreshParams,
    now: i64,
) -> RefreshState {
    let lo = params.min_secs.max(1);
    let mut hi = params.max_secs.max(lo);
    if read.feed {
        hi = hi.min(FEED_MAX_SECS).max(lo);
    }
    let base = if read.feed {
        params.feed_secs
    } else {
        params.sitemap_secs
    }
    .clamp(lo, hi);
    let first = prev.is_none_or(|p| p.changed == 0 && p.unchanged == 0);
    let mut s = prev.copied().unwrap_or(RefreshState {
        interval: base,
        ..RefreshState::default()
    });
    s.feed = read.feed;
    if first {
        s.interval = base;
    }
    let wait = match read.outcome {
        RefreshOutcome::Changed { fingerprint } => {
            if !first {
                s.interval /= 2;
            }
            s.interval = s.interval.clamp(lo, hi);
            s.fingerprint = fingerprint;
            s.changed = s.changed.saturating_add(1);
            s.errors_in_a_row = 0;
            u64::from(s.interval)
        }
        RefreshOutcome::Unchanged => {
            if !first {
                s.interval = s.interval.saturating_add(s.interval / 2);
            }
            s.interval = s.interval.clamp(lo, hi);
            s.unchanged = s.unchanged.saturating_add(1);
            s.errors_in_a_row = 0;
            u64::from(s.interval)
        }
        RefreshOutcome::Failed => {
            s.interval = s.interval.clamp(lo, hi);
            s.errors_in_a_row = s.errors_in_a_row.saturating_add(1);
            let doublings = s.errors_in_a_row.saturating_sub(1);
            let factor = 1u64.checked_shl(doublings).unwrap_or(u64::MAX);
            u64::from(params.error_backoff_secs.max(1))
                .saturating_mul(factor)
                .min(u64::from(hi))
        }
    };
    let unit = if read.jitter.is_nan() {
        0.0
    } else {
        read.jitter.clamp(-1.0, 1.0)
    };
    let wait = wait as i64; // at most u32::MAX
    let jittered = wait.saturating_add((unit * 0.05 * wait as f64) as i64);
    s.next_at = now.saturating_add(jittered.max(1));
    s
}

/// An order-independent fingerprint of one read, built entry by entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    sum: u64,
    xor: u64,
    count: u64,
}

impl Fingerprint {
    /// Adds the items of `other` (a fingerprint of another part of the
    /// same read).
    pub(crate) fn merge(&mut self, other: &Fingerprint) {
        self.sum = self.sum.wrapping_add(other.sum);
        self.xor ^= other.xor;
        self.count = self.count.wrapping_add(other.count);
    }

    /// Adds one item, given as its hash.
    fn add(&mut self, hash: Fnv1a) {
        let h = mix(hash.finish());
        self.sum = self.sum.wrapping_add(h);
        self.xor ^= h;
        self.count = self.count.wrapping_add(1);
    }

    /// Adds a URL entry: loc, lastmod seconds, changefreq, priority bits
    /// (hashed as they stream in: no per-entry buffer on the ingest path).
    pub(crate) fn add_entry(&mut self, entry: &sitemapd_parser::UrlEntry) {
        let mut h = Fnv1a::default()
            .write(b"u")
            .write(entry.loc.as_str().as_bytes())
            .write(&[0]);
        h = match entry.lastmod {
            Some(l) => h.write(&[1]).write(&l.unix_seconds.to_le_bytes()),
            None => h.write(&[0]),
        };
        h = h.write(&[entry
            .changefreq
            .map_or(0xff, |c| crate::record::StoredChangeFreq::from(c).rank())]);
        h = match entry.priority {
            Some(p) => h.write(&[1]).write(&p.to_bits().to_le_bytes()),
            None => h.write(&[0]),
        };
        self.add(h);
    }

    /// Adds a child sitemap an index lists.
    pub(crate) fn add_child(&mut self, url: &str) {
        self.add(Fnv1a::default().write(b"c").write(url.as_bytes()));
    }

    /// The fingerprint.
    pub(crate) fn value(&self) -> u64 {
        mix(self.sum.wrapping_add(self.xor.rotate_left(29))
            ^ self.count.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ 0x5bd1_e995_2f6a_9d31)
    }
}

/// A 64-bit finaliser (splitmix64's): spreads FNV-1a's bits before they are
/// summed.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_fnv_is_the_hash_of_the_concatenation() {
        let whole = fnv1a(b"uhttps://example.com/a\0\x01xyz");
        let streamed = Fnv1a::default()
            .write(b"u")
            .write(b"https://example.com/a")
            .write(&[0])
            .write(&[1])
            .write(b"xyz")
            .finish();
        assert_eq!(whole, streamed);
    }

    const T0: i64 = 1_700_000_000;

    fn read(outcome: RefreshOutcome, feed: bool) -> RefreshRead {
        RefreshRead {
            outcome,
            feed,
            jitter: 0.0,
        }
    }

    fn changed(fingerprint: u64) -> RefreshOutcome {
        RefreshOutcome::Changed { fingerprint }
    }

    #[test]
    fn first_read_takes_the_base() {
        let p = RefreshParams::default();
        let s = next(None, read(changed(7), false), &p, T0);
        assert_eq!((s.interval, s.next_at), (86_400, T0 + 86_400));
        assert_eq!((s.fingerprint, s.changed, s.unchanged), (7, 1, 0));
        let f = next(None, read(changed(7), true), &p, T0);
        assert_eq!((f.interval, f.next_at), (3_600, T0 + 3_600));
        // A 304 with no state (a store older than the schedule): the base.
        let u = next(None, read(RefreshOutcome::Unchanged, false), &p, T0);
        assert_eq!((u.interval, u.unchanged), (86_400, 1));
    }

    #[test]
    fn changes_halve_down_to_the_floor() {
        let p = RefreshParams::default();
        let mut s = next(None, read(changed(1), false), &p, T0);
        let mut intervals = Vec::new();
        for i in 0..10 {
            s = next(Some(&s), read(changed(2 + i), false), &p, T0);
            intervals.push(s.interval);
        }
        assert_eq!(intervals[..3], [43_200, 21_600, 10_800]);
        assert_eq!(*intervals.last().unwrap(), 900, "{intervals:?}");
        assert_eq!(s.changed, 11);
        assert_eq!(s.next_at, T0 + 900);
    }

    #[test]
    fn no_change_grows_by_half_up_to_the_ceiling() {
        let p = RefreshParams::default();
        let mut s = next(None, read(changed(1), false), &p, T0);
        s = next(Some(&s), read(RefreshOutcome::Unchanged, false), &p, T0);
        assert_eq!(s.interval, 129_600);
        for _ in 0..20 {
            s = next(Some(&s), read(RefreshOutcome::Unchanged, false), &p, T0);
        }
        assert_eq!(s.interval, 7 * 86_400);
        assert_eq!((s.changed, s.unchanged, s.fingerprint), (1, 21, 1));
        // A feed is read at least daily.
        let mut f = next(None, read(changed(1), true), &p, T0);
        for _ in 0..20 {
            f = next(Some(&f), read(RefreshOutcome::Unchanged, true), &p, T0);
        }
        assert_eq!(f.interval, FEED_MAX_SECS);
    }

    #[test]
    fn failures_back_off_and_keep_the_interval() {
        let p = RefreshParams::default();
        let ok = next(None, read(changed(1), false), &p, T0);
        let mut s = ok;
        let mut waits = Vec::new();
        for _ in 0..12 {
            s = next(Some(&s), read(RefreshOutcome::Failed, false), &p, T0);
            waits.push(s.next_at - T0);
            assert_eq!(s.interval, ok.interval);
            assert_eq!(s.fingerprint, 1);
        }
        assert_eq!(waits[..4], [900, 1_800, 3_600, 7_200]);
        assert_eq!(*waits.last().unwrap(), 7 * 86_400, "capped: {waits:?}");
        assert_eq!(s.errors_in_a_row, 12);
        // Success resets the count; an unchanged read grows the interval.
        s = next(Some(&s), read(RefreshOutcome::Unchanged, false), &p, T0);
        assert_eq!((s.errors_in_a_row, s.interval), (0, 129_600));
        // Errors in a row beyond 64 doublings do not overflow.
        s.errors_in_a_row = u32::MAX - 1;
        s = next(Some(&s), read(RefreshOutcome::Failed, false), &p, T0);
        assert_eq!(s.next_at - T0, 7 * 86_400);
    }

    #[test]
    fn failure_before_any_success_then_first_read() {
        let p = RefreshParams::default();
        let s = next(None, read(RefreshOutcome::Failed, true), &p, T0);
        assert_eq!(
            (s.next_at, s.interval, s.errors_in_a_row),
            (T0 + 900, 3_600, 1)
        );
        // The first successful read is still a first read: the base.
        let s = next(Some(&s), read(changed(5), true), &p, T0 + 900);
        assert_eq!((s.interval, s.errors_in_a_row, s.changed), (3_600, 0, 1));
    }

    #[test]
    fn jitter_is_five_percent_at_most_and_stable_per_url() {
        let p = RefreshParams::default();
        for j in [-1.0, -0.3, 0.0, 0.8, 1.0, 7.0, f64::NAN] {
            let s = next(
                None,
                RefreshRead {
                    outcome: changed(1),
                    feed: false,
                    jitter: j,
                },
                &p,
                T0,
            );
            let wait = s.next_at - T0;
            assert!((82_080..=90_720).contains(&wait), "{j}: {wait}");
        }
        let a = jitter_unit("https://a.example/sitemap.xml");
        assert_eq!(a, jitter_unit("https://a.example/sitemap.xml"));
        assert!((-1.0..=1.0).contains(&a));
        let units: std::collections::HashSet<u64> = (0..50)
            .map(|i| jitter_unit(&format!("https://a.example/s{i}.xml")).to_bits())
            .collect();
        assert!(units.len() > 40, "spread: {}", units.len());
    }

    #[test]
    fn odd_params_stay_in_bounds() {
        let p = RefreshParams {
            sitemap_secs: 10,
            feed_secs: u32::MAX,
            min_secs: 0,
            max_secs: 0,
            error_backoff_secs: 0,
        };
        let s = next(None, read(changed(1), false), &p, T0);
        assert_eq!(s.interval, 1);
        let f = next(None, read(changed(1), true), &p, T0);
        assert_eq!(f.interval, 1);
        let e = next(Some(&f), read(RefreshOutcome::Failed, true), &p, T0);
        assert!(e.next_at > T0);
        // The feed flag flipping clamps a sitemap interval to a day.
        let long = RefreshState {
            interval: 7 * 86_400,
            changed: 1,
            ..RefreshState::default()
        };
        let s = next(
            Some(&long),
            read(RefreshOutcome::Unchanged, true),
            &RefreshParams::default(),
            T0,
        );
        assert_eq!(s.interval, FEED_MAX_SECS);
    }

    #[test]
    fn fingerprints_ignore_order_and_see_changes() {
        let entry = |url: &str, lastmod: Option<i64>| {
            let mut e =
                sitemapd_parser::UrlEntry::new(sitemapd_parser::NormUrl::parse(url).unwrap());
            e.lastmod = lastmod.map(|s| sitemapd_parser::Lastmod {
                unix_seconds: s,
                nanos: 0,
                precision: sitemapd_parser::Precision::Second,
            });
            e
        };
        let of = |entries: &[&sitemapd_parser::UrlEntry]| {
            let mut f = Fingerprint::default();
            for e in entries {
                f.add_entry(e);
            }
            f.value()
        };
        let a = entry("https://a.example/a", Some(T0));
        let b = entry("https://a.example/b", None);
        assert_eq!(of(&[&a, &b]), of(&[&b, &a]));
        assert_ne!(of(&[&a, &b]), of(&[&a]));
        assert_ne!(of(&[&a, &a]), of(&[&a]));
        let a2 = entry("https://a.example/a", Some(T0 + 1));
        assert_ne!(of(&[&a, &b]), of(&[&a2, &b]));
        let mut b2 = b.clone();
        b2.priority = Some(0.5);
        assert_ne!(of(&[&a, &b]), of(&[&a, &b2]));
        assert_ne!(of(&[]), 0);
        let mut with_child = Fingerprint::default();
        with_child.add_child("https://a.example/s.xml");
        assert_ne!(with_child.value(), of(&[]));
    }
}
