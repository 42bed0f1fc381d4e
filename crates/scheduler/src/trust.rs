//! Per-host lastmod trust (docs/scheduling.md#lastmod-trust-per-host).
//!
//! Google (2023) and Bing (2023/2025) use a sitemap's `<lastmod>` only where
//! the site's lastmods have proven accurate; Bing found 18% of sitemaps with
//! lastmod setting it wrongly, mostly to the sitemap's generation time (SPEC,
//! "What the engines do with the fields"). So trust is earned per host, by
//! comparing what lastmod predicted with what fetches found, and lost when
//! lastmod lies.
//!
//! ## The rule ([`LastmodTrust::is_trusted`])
//! A host is trusted iff all of:
//! 1. at least [`PROBATION`] fetch observations (agreements + disagreements)
//!    are on record;
//! 2. its lastmods are precise: of the fetches where lastmod had moved
//!    since the last fetch, at least [`MIN_AGREEMENT`] found a change
//!    ([`LastmodTrust::precision`]; a record from before that count was
//!    kept uses the agreement rate);
//! 3. no lie signal is on record: no generation-time sitemap
//!    (`identical_sitemaps == 0`) and no sitemap with future lastmods
//!    (`future_lastmods == 0`).
//!
//! A trusted host is *complete* ([`LastmodTrust::is_complete`]) when its
//! lastmods also announce nearly every change: of the fetches where
//! lastmod had not moved, at most [`MAX_SILENT`] found a change
//! ([`LastmodTrust::silent_rate`]). A complete host is crawled on change; a
//! trusted one that misses changes (lastmod reflects only some, or shows
//! them late) has its moved lastmods fetched first and the rate schedule
//! fills in the rest; an untrusted one's lastmods are ignored.
//!
//! ## Decay
//! Every observation (fetch or sitemap) counts in `observations`; when it
//! exceeds [`DECAY_AFTER`] all counts are halved (rounding down). Old
//! evidence therefore fades: trust earned long ago is lost after a run of
//! disagreements (about a quarter as many as the agreements on record, i.e.
//! 9–17 in a row for a host with a long clean record), and one lie signal is
//! forgiven after the next halving, two after the second, and so on, so a
//! host that mends its sitemap regains trust.
//!
//! ## Signals
//! - A fetch *agrees* when lastmod said "changed since our last fetch"
//!   exactly when the fetch found a change. Both kinds of mismatch count as a
//!   disagreement: a lastmod that moved while the page did not wastes a fetch
//!   (generation-time lastmods), one that stayed while the page changed
//!   loses freshness.
//! - A *generation-time* sitemap has at least [`IDENTICAL_MIN_ENTRIES`]
//!   entries with a lastmod and at least [`IDENTICAL_SHARE`] of them share
//!   the single most common value.
//! - A sitemap *with future lastmods* has at least one lastmod in the future
//!   (SPEC X8) and they are at least [`FUTURE_SHARE`] of its lastmods, so a
//!   single skewed entry in a large sitemap is not fatal. The caller decides
//!   what "in the future" means (allowing for clock skew).
//!
//! The counts saturate instead of overflowing.

use serde::{Deserialize, Serialize};

/// Fetch observations needed before a host can be trusted.
pub const PROBATION: u32 = 5;
/// Minimum agreement rate of a trusted host: the share of its moved
/// lastmods that were real changes (its precision).
pub const MIN_AGREEMENT: f64 = 0.8;
/// Most share of fetches of an unmoved lastmod that may find a change, for
/// a host to be crawled on change ([`LastmodTrust::is_complete`]).
pub const MAX_SILENT: f64 = 0.1;
/// All counts are halved when `observations` exceeds this.
pub const DECAY_AFTER: u32 = 64;
/// A sitemap needs this many entries with a lastmod to be judged
/// generation-time.
pub const IDENTICAL_MIN_ENTRIES: u64 = 10;
/// Share of entries sharing one lastmod that makes a sitemap generation-time.
pub const IDENTICAL_SHARE: f64 = 0.9;
/// Share of future lastmods (with at least one) that makes a sitemap lie.
pub const FUTURE_SHARE: f64 = 0.01;

/// What a host's lastmods have been caught doing (the store saves it per host).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LastmodTrust {
    /// Fetches whose result lastmod predicted.
    pub agreements: u32,
    /// Fetches whose result lastmod got wrong.
    pub disagreements: u32,
    /// Sitemap reads whose lastmods were one generation-time value.
    pub identical_sitemaps: u32,
    /// Sitemap reads with lastmods in the future.
    pub future_lastmods: u32,
    /// Observations (fetches and sitemap reads) since the last halving.
    pub observations: u32,
    /// Fetches that found a change lastmod had announced (it had moved).
    pub announced: u32,
    /// Fetches that found a change lastmod had not announced.
    pub missed: u32,
    /// Fetches that found no change although lastmod had moved.
    pub false_alarms: u32,
}

impl LastmodTrust {
    /// A fetch outcome compared with what lastmod predicted: lastmod said
    /// "changed since last fetch" (or not), the fetch found a change (or not).
    pub fn observe_fetch(&mut self, lastmod_said_changed: bool, fetch_found_change: bool) {
        if lastmod_said_changed == fetch_found_change {
            self.agreements = self.agreements.saturating_add(1);
        } else {
            self.disagreements = self.disagreements.saturating_add(1);
        }
        let count = match (lastmod_said_changed, fetch_found_change) {
            (true, true) => Some(&mut self.announced),
            (false, true) => Some(&mut self.missed),
            (true, false) => Some(&mut self.false_alarms),
            (false, false) => None,
        };
        if let Some(c) = count {
            *c = c.saturating_add(1);
        }
        self.observed();
    }

    /// One sitemap read: how many entries had a lastmod, how many shared the
    /// single most common value, how many were in the future. Inconsistent
    /// counts (more sharing or in the future than have a lastmod) are
    /// clamped to `with_lastmod`.
    pub fn observe_sitemap(&mut self, with_lastmod: u64, most_common_same: u64, in_future: u64) {
        let same = most_common_same.min(with_lastmod);
        let future = in_future.min(with_lastmod);
        let share = |k: u64| k as f64 / with_lastmod as f64;
        if with_lastmod >= IDENTICAL_MIN_ENTRIES && share(same) >= IDENTICAL_SHARE {
            self.identical_sitemaps = self.identical_sitemaps.saturating_add(1);
        }
        if future > 0 && share(future) >= FUTURE_SHARE {
            self.future_lastmods = self.future_lastmods.saturating_add(1);
        }
        self.observed();
    }

    /// Trusted: at least [`PROBATION`] fetch observations, agreement rate at
    /// least [`MIN_AGREEMENT`], no generation-time sitemap and no sitemap with
    /// future lastmods on record (see the module docs for decay).
    pub fn is_trusted(&self) -> bool {
        let precise = match self.precision() {
            Some(p) => p >= MIN_AGREEMENT,
            // No moved lastmod fetched yet: none contradicted, none proved.
            // A record from before the split (every count 0) keeps the old
            // rule: the agreement rate.
            None if self.announced == 0 && self.missed == 0 => {
                self.agreement_rate().is_some_and(|r| r >= MIN_AGREEMENT)
            }
            None => true,
        };
        self.fetches() >= PROBATION
            && precise
            && self.identical_sitemaps == 0
            && self.future_lastmods == 0
    }

    /// Trusted, and its lastmods announce (nearly) every change: of the
    /// fetches where lastmod had not moved, at most [`MAX_SILENT`] found a
    /// change ([`LastmodTrust::silent_rate`]). The queue crawls such a host
    /// on change: a URL whose lastmod has not moved is only re-validated
    /// and refetched after a long safety interval
    /// (docs/scheduling.md#lastmod).
    ///
    /// The test is on unmoved fetches, not on [`LastmodTrust::recall`]: a
    /// change lastmod hid is usually found by the fetch a later, announced
    /// change triggers, and counts as announced there; only a fetch of an
    /// unmoved lastmod (a validation sample, a safety refetch, the rate
    /// schedule) sees it.
    pub fn is_complete(&self) -> bool {
        self.is_trusted() && self.silent_rate().is_none_or(|r| r <= MAX_SILENT)
    }

    /// Of the fetches where lastmod had not moved, the share that found a
    /// change all the same (`None` before the first).
    pub fn silent_rate(&self) -> Option<f64> {
        let quiet = self.agreements.saturating_sub(self.announced);
        share(self.missed, quiet)
    }

    /// Still earning trust: fewer than [`PROBATION`] fetch observations,
    /// no lie signal. Its moved lastmods are fetched as if trusted, so that
    /// a host can earn trust even when the budget goes to others first.
    pub fn on_probation(&self) -> bool {
        self.fetches() < PROBATION && self.identical_sitemaps == 0 && self.future_lastmods == 0
    }

    /// Of the fetches where lastmod had moved, the share that found a
    /// change (`None` before the first).
    pub fn precision(&self) -> Option<f64> {
        share(self.announced, self.false_alarms)
    }

    /// Of the changes fetches found, the share lastmod had announced
    /// (`None` before the first).
    pub fn recall(&self) -> Option<f64> {
        share(self.announced, self.missed)
    }

    /// Agreements over fetch observations, `None` before the first one.
    pub fn agreement_rate(&self) -> Option<f64> {
        let n = self.fetches();
        (n > 0).then(|| f64::from(self.agreements) / f64::from(n))
    }

    /// Fetch observations on record (agreements + disagreements).
    pub fn fetches(&self) -> u32 {
        self.agreements.saturating_add(self.disagreements)
    }

    fn observed(&mut self) {
        self.observations = self.observations.saturating_add(1);
        if self.observations > DECAY_AFTER {
            for c in [
                &mut self.agreements,
                &mut self.disagreements,
                &mut self.identical_sitemaps,
                &mut self.future_lastmods,
                &mut self.observations,
                &mut self.announced,
                &mut self.missed,
                &mut self.false_alarms,
            ] {
                *c /= 2;
            }
        }
    }
}

/// `hits / (hits + misses)`, `None` when both are 0.
fn share(hits: u32, misses: u32) -> Option<f64> {
    let n = u64::from(hits) + u64::from(misses);
    (n > 0).then(|| hits as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agree(t: &mut LastmodTrust, n: u32) {
        for i in 0..n {
            let changed = i % 3 == 0;
            t.observe_fetch(changed, changed);
        }
    }

    #[test]
    fn earned_after_probation() {
        let mut t = LastmodTrust::default();
        assert!(!t.is_trusted());
        assert_eq!(t.agreement_rate(), None);
        agree(&mut t, PROBATION - 1);
        assert!(!t.is_trusted(), "still on probation");
        agree(&mut t, 1);
        assert!(t.is_trusted());
        assert_eq!(t.agreement_rate(), Some(1.0));
    }

    #[test]
    fn precision_threshold_is_inclusive() {
        let mut t = LastmodTrust::default();
        for _ in 0..4 {
            t.observe_fetch(true, true);
        }
        t.observe_fetch(true, false);
        assert_eq!(t.precision(), Some(0.8));
        assert!(t.is_trusted());
        t.observe_fetch(true, false);
        assert!(!t.is_trusted(), "precision 4/6");
    }

    #[test]
    fn a_change_an_unmoved_lastmod_hid_costs_completeness_not_trust() {
        let mut t = LastmodTrust::default();
        for _ in 0..5 {
            t.observe_fetch(true, true);
        }
        for _ in 0..9 {
            t.observe_fetch(false, false);
        }
        assert!(t.is_complete());
        t.observe_fetch(false, true);
        assert_eq!(t.silent_rate(), Some(0.1));
        assert!(
            t.is_complete(),
            "1 silent change in 10 unmoved fetches: inclusive"
        );
        t.observe_fetch(false, true);
        assert!(t.is_trusted() && !t.is_complete(), "2 in 11");
        // Quiet unmoved fetches win completeness back.
        for _ in 0..9 {
            t.observe_fetch(false, false);
        }
        assert!(t.is_complete(), "2 in 20");
    }

    #[test]
    fn a_host_that_stops_announcing_changes_is_no_longer_complete_within_a_few_fetches() {
        let mut t = LastmodTrust::default();
        for i in 0..200 {
            t.observe_fetch(i % 4 == 0, i % 4 == 0);
        }
        assert!(t.is_complete());
        let mut missed = 0;
        while t.is_complete() {
            t.observe_fetch(false, true);
            missed += 1;
        }
        assert!(
            missed <= 6,
            "{missed} hidden changes before it lost completeness"
        );
    }

    #[test]
    fn lost_after_a_run_of_disagreements_even_with_a_long_record() {
        let mut t = LastmodTrust::default();
        agree(&mut t, 500);
        assert!(t.is_trusted());
        let mut lost_after = None;
        for i in 1..=40 {
            t.observe_fetch(true, false);
            if !t.is_trusted() {
                lost_after = Some(i);
                break;
            }
        }
        let n = lost_after.expect("trust is lost");
        assert!(n <= 17, "lost only after {n} lies");
    }

    #[test]
    fn generation_time_sitemap_blocks_and_revokes() {
        let mut t = LastmodTrust::default();
        t.observe_sitemap(100, 95, 0);
        agree(&mut t, 20);
        assert!(!t.is_trusted(), "a generation-time sitemap blocks trust");

        let mut t = LastmodTrust::default();
        agree(&mut t, 20);
        assert!(t.is_trusted());
        t.observe_sitemap(10, 9, 0);
        assert!(!t.is_trusted(), "and revokes it");
    }

    #[test]
    fn small_or_varied_sitemaps_are_no_signal() {
        let mut t = LastmodTrust::default();
        agree(&mut t, 10);
        t.observe_sitemap(9, 9, 0); // too few entries to judge
        t.observe_sitemap(100, 89, 0); // below 90%
        t.observe_sitemap(0, 0, 0);
        t.observe_sitemap(1000, 5, 1); // 0.1% future: clock skew, tolerated
        assert!(t.is_trusted());
        assert_eq!(t.identical_sitemaps, 0);
        assert_eq!(t.future_lastmods, 0);
    }

    #[test]
    fn future_lastmods_block_and_revoke() {
        let mut t = LastmodTrust::default();
        agree(&mut t, 20);
        t.observe_sitemap(3, 1, 1);
        assert!(!t.is_trusted());
        assert_eq!(t.future_lastmods, 1);
        // Inconsistent counts are clamped, not trusted.
        let mut u = LastmodTrust::default();
        agree(&mut u, 20);
        u.observe_sitemap(0, 7, 7);
        assert!(u.is_trusted());
    }

    #[test]
    fn regained_after_decay() {
        let mut t = LastmodTrust::default();
        agree(&mut t, 30);
        t.observe_sitemap(50, 50, 0);
        for _ in 0..10 {
            t.observe_fetch(true, false);
        }
        assert!(!t.is_trusted());
        // The host mends its ways: agreements and decay restore trust.
        let mut regained = None;
        for i in 1..=200 {
            agree(&mut t, 1);
            if t.is_trusted() {
                regained = Some(i);
                break;
            }
        }
        let n = regained.expect("trust is regained");
        assert!(n <= 2 * DECAY_AFTER, "regained only after {n}");
        assert!(t.observations <= DECAY_AFTER);
    }

    #[test]
    fn counts_stay_bounded() {
        let mut t = LastmodTrust::default();
        for i in 0..10_000u32 {
            t.observe_fetch(i % 2 == 0, i % 3 == 0);
            t.observe_sitemap(u64::MAX, u64::MAX, u64::MAX);
        }
        assert!(t.observations <= DECAY_AFTER);
        assert!(t.agreements + t.disagreements <= DECAY_AFTER);
        let max = LastmodTrust {
            agreements: u32::MAX,
            disagreements: u32::MAX,
            identical_sitemaps: 0,
            future_lastmods: 0,
            observations: u32::MAX,
            announced: u32::MAX,
            missed: u32::MAX,
            false_alarms: u32::MAX,
        };
        let mut m = max;
        m.observe_fetch(true, true);
        assert!(m.agreement_rate().is_some_and(|r| (0.0..=1.0).contains(&r)));
    }

    #[test]
    fn serde_round_trip_and_defaults() {
        let mut t = LastmodTrust::default();
        agree(&mut t, 7);
        t.observe_sitemap(20, 20, 0);
        let json = serde_json::to_string(&t).unwrap();
        let back: LastmodTrust = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        let partial: LastmodTrust = serde_json::from_str(r#"{"agreements":3}"#).unwrap();
        assert_eq!(partial.agreements, 3);
        assert_eq!(partial.observations, 0);
    }
}
