//! The metrics of docs/scheduling.md#metrics, kept exactly as the run goes.
//!
//! Freshness, age and harmonic staleness are piecewise constant (age
//! piecewise linear) between events, so their time integrals are computed
//! exactly at every event, not sampled:
//!
//! - **freshness** F(t): share of the pages that exist whose copy equals
//!   the live page (a page never fetched is not fresh); **weighted**: the
//!   same with each page counted by its importance.
//! - **age** A(t): mean over pages of the time since the first change the
//!   copy has not picked up (0 when fresh; since its appearance for a page
//!   never fetched), days.
//! - **harmonic staleness**: Σ w_i H(N_i) / Σ w_i, N_i the changes missed
//!   since the copy (a page never fetched has missed its creation, N ≥ 1),
//!   H(N) = 1 + 1/2 + … + 1/N.
//! - **wasted** fetches found no change; **change recall** = changes
//!   caught / changes made, a change being caught when the next fetch comes
//!   before the page's next change (so a fetch that finds a change catches
//!   exactly one).
//! - **discovery latency**: from a page's appearance (during the run) to
//!   its first fetch.
//! - **politeness**: fetches per host per window, and per UTC day against
//!   the host's cap.
//! - **estimators**: bias and MSE of the store's rate estimates (read back
//!   from its records) against the true λ.

use serde::Serialize;

use sitemapd_scheduler::estimate::{Estimator, Visit};

use super::config::DAY;

/// One row of the time series: the window `(day − sample, day]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesRow {
    /// End of the window, days since the start.
    pub day: f64,
    /// Pages that exist at the end of the window.
    pub pages: u64,
    /// Time-averaged freshness over the window.
    pub freshness: f64,
    /// Time-averaged importance-weighted freshness.
    pub freshness_weighted: f64,
    /// Time-averaged age, days.
    pub age_days: f64,
    /// Time-averaged harmonic staleness (importance-weighted mean H(N)).
    pub harmonic_staleness: f64,
    /// Fetches in the window.
    pub fetches: u64,
    /// Of which found no change.
    pub wasted: u64,
    /// Changes the pages made.
    pub changes: u64,
    /// Changes caught (fetches that found a change, first fetches aside).
    pub caught: u64,
    /// First fetches of pages that appeared during the run.
    pub discovered: u64,
    /// Their mean latency from appearance to first fetch, days.
    pub discovery_latency_days: Option<f64>,
    /// The most fetches one host got in the window.
    pub host_max_fetches: u64,
}

/// Bias and MSE of one estimator against the true rates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EstimatorStats {
    /// The estimator's name.
    pub estimator: &'static str,
    /// Pages with an estimate.
    pub pages: u64,
    /// Mean usable visits per page.
    pub mean_visits: f64,
    /// mean(λ̂ − λ), changes per day.
    pub bias_per_day: f64,
    /// mean(λ̂/λ) − 1.
    pub relative_bias: f64,
    /// mean((λ̂ − λ)²), (changes per day)².
    pub mse: f64,
}

/// A run's figures after the warm-up (time averages and counts) and over
/// the whole run (discovery, politeness, estimators, cost).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Time-averaged freshness.
    pub freshness: f64,
    /// Time-averaged importance-weighted freshness.
    pub freshness_weighted: f64,
    /// Time-averaged age, days.
    pub age_days: f64,
    /// Time-averaged harmonic staleness.
    pub harmonic_staleness: f64,
    /// Fetches after the warm-up.
    pub fetches: u64,
    /// Fetches per day after the warm-up.
    pub fetches_per_day: f64,
    /// Fetches per page per day after the warm-up.
    pub fetches_per_page_day: f64,
    /// Freshness bought per fetch: freshness / fetches per page per day.
    pub freshness_per_fetch: f64,
    /// Share of fetches (after the warm-up) that found no change.
    pub wasted_share: f64,
    /// Changes made after the warm-up.
    pub changes: u64,
    /// Changes caught / changes made, after the warm-up.
    pub change_recall: f64,
    /// Pages that appeared during the run and were fetched.
    pub discovered: u64,
    /// Pages that appeared during the run and were never fetched.
    pub undiscovered: u64,
    /// Mean time from appearance to first fetch, days.
    pub discovery_latency_days: Option<f64>,
    /// Most fetches one host got in one UTC day.
    pub host_max_per_day: u64,
    /// The per-host cap, fetches per day.
    pub host_cap_per_day: Option<f64>,
    /// (host, day) pairs over the cap.
    pub host_days_over_cap: u64,
    /// Share of hosts whose lastmod the store trusts at the end.
    pub trusted_hosts: f64,
    /// Every estimator on the store's visit histories at the end.
    pub estimators: Vec<EstimatorStats>,
    /// Sitemap reads (200 and 304).
    pub sitemap_reads: u64,
    /// Of which answered 304.
    pub sitemap_not_modified: u64,
    /// Sitemap entries ingested.
    pub ingested_entries: u64,
    /// Fetches over the whole run.
    pub fetches_total: u64,
    /// Wall time of the run, seconds.
    pub wall_seconds: f64,
}

/// Time integrals over a span.
#[derive(Debug, Clone, Copy, Default)]
struct Integrals {
    freshness: f64,
    weighted: f64,
    /// ∫ mean age dt, seconds².
    age: f64,
    harmonic: f64,
    span: f64,
    /// ∫ pages dt.
    pages: f64,
}

/// Event counts over a span.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    fetches: u64,
    wasted: u64,
    changes: u64,
    caught: u64,
    discovered: u64,
    latency: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct PageState {
    exists: bool,
    fetched: bool,
    /// Changes missed since the copy (creation counts for a page never
    /// fetched).
    missed: u32,
    /// Since when it is stale, seconds since the start.
    stale_since: i64,
    /// Its term w·H(missed) in the harmonic sum.
    harmonic: f64,
}

/// What a fetch found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The first fetch of the page.
    First,
    /// The page changed since the last fetch.
    Changed,
    /// It did not.
    Unchanged,
}

/// The metrics of one run.
#[derive(Debug, Clone)]
pub(crate) struct Tracker {
    epoch: i64,
    /// Seconds since the start of the last integration.
    last: i64,
    warmup: i64,
    weights: Vec<f64>,
    births: Vec<i64>,
    pages: Vec<PageState>,
    existing: i64,
    existing_w: f64,
    fresh: i64,
    fresh_w: f64,
    stale: i64,
    stale_sum: i64,
    harmonic: f64,
    window: Integrals,
    after_warmup: Integrals,
    window_counts: Counts,
    warm_counts: Counts,
    all_counts: Counts,
    host_window: Vec<u64>,
    host_day: Vec<u64>,
    day: i64,
    host_cap: Option<f64>,
    host_max_per_day: u64,
    host_days_over_cap: u64,
    fetches_total: u64,
    rows: Vec<SeriesRow>,
}

impl Tracker {
    /// Pages with these importances and birth times (unix s), on `hosts`
    /// hosts; time averages start `warmup` seconds after `epoch`.
    pub(crate) fn new(
        epoch: i64,
        warmup: i64,
        weights: Vec<f64>,
        births: Vec<i64>,
        hosts: usize,
        host_cap: Option<f64>,
    ) -> Self {
        let n = weights.len();
        Tracker {
            epoch,
            last: 0,
            warmup,
            weights,
            births,
            pages: vec![PageState::default(); n],
            existing: 0,
            existing_w: 0.0,
            fresh: 0,
            fresh_w: 0.0,
            stale: 0,
            stale_sum: 0,
            harmonic: 0.0,
            window: Integrals::default(),
            after_warmup: Integrals::default(),
            window_counts: Counts::default(),
            warm_counts: Counts::default(),
            all_counts: Counts::default(),
            host_window: vec![0; hosts],
            host_day: vec![0; hosts],
            day: 0,
            host_cap,
            host_max_per_day: 0,
            host_days_over_cap: 0,
            fetches_total: 0,
            rows: Vec::new(),
        }
    }

    /// Integrates the state from the last event up to `t` (unix s).
    pub(crate) fn advance(&mut self, t: i64) {
        let t = t - self.epoch;
        if t <= self.last {
            return;
        }
        if self.last < self.warmup && self.warmup < t {
            self.integrate(self.warmup);
        }
        self.integrate(t);
    }

    fn integrate(&mut self, to: i64) {
        let (a, b) = (self.last, to);
        let dt = (b - a) as f64;
        let mut piece = Integrals {
            span: dt,
            pages: self.existing as f64 * dt,
            ..Integrals::default()
        };
        if self.existing > 0 {
            let n = self.existing as f64;
            piece.freshness = self.fresh as f64 / n * dt;
            // Σ over stale pages of ∫ (t − s_i) dt = dt·(stale·(a + b)/2 − Σ s_i).
            let mid_sum = self.stale as f64 * (a + b) as f64 / 2.0 - self.stale_sum as f64;
            piece.age = dt * mid_sum / n;
        }
        if self.existing_w > 0.0 {
            piece.weighted = (self.fresh_w / self.existing_w).clamp(0.0, 1.0) * dt;
            piece.harmonic = (self.harmonic / self.existing_w).max(0.0) * dt;
        }
        add(&mut self.window, &piece);
        if a >= self.warmup {
            add(&mut self.after_warmup, &piece);
        }
        self.last = to;
    }

    fn counts(&mut self, t: i64, f: impl Fn(&mut Counts)) {
        f(&mut self.window_counts);
        f(&mut self.all_counts);
        if t - self.epoch >= self.warmup {
            f(&mut self.warm_counts);
        }
    }

    /// Page `page` appears at `t` (call `advance(t)` first).
    pub(crate) fn born(&mut self, page: u32, t: i64) {
        let w = self.weight(page);
        let rel = t - self.epoch;
        let Some(p) = self.pages.get_mut(page as usize) else {
            return;
        };
        if p.exists {
            return;
        }
        *p = PageState {
            exists: true,
            fetched: false,
            missed: 1,
            stale_since: rel,
            harmonic: w,
        };
        self.existing += 1;
        self.existing_w += w;
        self.stale += 1;
        self.stale_sum += rel;
        self.harmonic += w;
    }

    fn weight(&self, page: u32) -> f64 {
        self.weights.get(page as usize).copied().unwrap_or(1.0)
    }

    /// Page `page` changes at `t` (call `advance(t)` first).
    pub(crate) fn changed(&mut self, page: u32, t: i64) {
        let w = self.weight(page);
        let rel = t - self.epoch;
        let Some(p) = self.pages.get_mut(page as usize) else {
            return;
        };
        if !p.exists {
            return;
        }
        if p.missed == 0 {
            self.fresh -= 1;
            self.fresh_w -= w;
            self.stale += 1;
            self.stale_sum += rel;
            p.stale_since = rel;
        }
        p.missed = p.missed.saturating_add(1);
        let term = w / f64::from(p.missed);
        p.harmonic += term;
        self.harmonic += term;
        self.counts(t, |c| c.changes += 1);
    }

    /// Page `page` of host `host` is fetched at `t` (call `advance(t)`
    /// first): what the fetch found.
    pub(crate) fn fetched(&mut self, page: u32, host: u32, t: i64) -> Found {
        let w = self.weight(page);
        let birth = self
            .births
            .get(page as usize)
            .copied()
            .unwrap_or(self.epoch);
        self.roll_day(t);
        let Some(p) = self.pages.get_mut(page as usize) else {
            return Found::Unchanged;
        };
        let found = if !p.fetched {
            Found::First
        } else if p.missed > 0 {
            Found::Changed
        } else {
            Found::Unchanged
        };
        if p.missed > 0 {
            self.fresh += 1;
            self.fresh_w += w;
            self.stale -= 1;
            self.stale_sum -= p.stale_since;
            self.harmonic -= p.harmonic;
            p.harmonic = 0.0;
            p.missed = 0;
        }
        p.fetched = true;
        self.fetches_total += 1;
        for counts in [&mut self.host_window, &mut self.host_day] {
            if let Some(c) = counts.get_mut(host as usize) {
                *c += 1;
            }
        }
        let epoch = self.epoch;
        match found {
            Found::First if birth > epoch => {
                let latency = (t - birth) as f64;
                self.counts(t, |c| {
                    c.fetches += 1;
                    c.discovered += 1;
                    c.latency += latency;
                });
            }
            Found::First => self.counts(t, |c| c.fetches += 1),
            Found::Changed => self.counts(t, |c| {
                c.fetches += 1;
                c.caught += 1;
            }),
            Found::Unchanged => self.counts(t, |c| {
                c.fetches += 1;
                c.wasted += 1;
            }),
        }
        found
    }

    /// Closes the UTC days before the one of `t`.
    fn roll_day(&mut self, t: i64) {
        let day = (t - self.epoch).div_euclid(86_400);
        if day > self.day {
            self.close_day();
            self.day = day;
        }
    }

    fn close_day(&mut self) {
        for c in &mut self.host_day {
            self.host_max_per_day = self.host_max_per_day.max(*c);
            if self.host_cap.is_some_and(|cap| *c as f64 > cap + 1e-9) {
                self.host_days_over_cap += 1;
            }
            *c = 0;
        }
    }

    /// Ends the window at `t` (after `advance(t)`): one row.
    pub(crate) fn sample(&mut self, t: i64) {
        self.advance(t);
        let w = std::mem::take(&mut self.window);
        let c = std::mem::take(&mut self.window_counts);
        let per = |x: f64| if w.span > 0.0 { x / w.span } else { 0.0 };
        let host_max = self.host_window.iter().copied().max().unwrap_or(0);
        self.host_window.iter_mut().for_each(|c| *c = 0);
        self.rows.push(SeriesRow {
            day: (t - self.epoch) as f64 / DAY,
            pages: self.existing.max(0) as u64,
            freshness: per(w.freshness),
            freshness_weighted: per(w.weighted),
            age_days: per(w.age) / DAY,
            harmonic_staleness: per(w.harmonic),
            fetches: c.fetches,
            wasted: c.wasted,
            changes: c.changes,
            caught: c.caught,
            discovered: c.discovered,
            discovery_latency_days: (c.discovered > 0)
                .then(|| c.latency / c.discovered as f64 / DAY),
            host_max_fetches: host_max,
        });
    }

    /// The rows so far.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> &[SeriesRow] {
        &self.rows
    }

    /// Takes the rows.
    pub(crate) fn take_rows(&mut self) -> Vec<SeriesRow> {
        std::mem::take(&mut self.rows)
    }

    /// The summary at `end` (unix s); the store's figures are filled in by
    /// the caller.
    pub(crate) fn summary(&mut self, end: i64) -> Summary {
        self.advance(end);
        self.close_day();
        let a = self.after_warmup;
        let c = self.warm_counts;
        let per = |x: f64| if a.span > 0.0 { x / a.span } else { 0.0 };
        let freshness = per(a.freshness);
        let days = a.span / DAY;
        let page_days = a.pages / DAY;
        let fetches_per_page_day = if page_days > 0.0 {
            c.fetches as f64 / page_days
        } else {
            0.0
        };
        let undiscovered = self
            .pages
            .iter()
            .zip(&self.births)
            .filter(|(p, b)| **b > self.epoch && !p.fetched)
            .count() as u64;
        let all = self.all_counts;
        Summary {
            freshness,
            freshness_weighted: per(a.weighted),
            age_days: per(a.age) / DAY,
            harmonic_staleness: per(a.harmonic),
            fetches: c.fetches,
            fetches_per_day: if days > 0.0 {
                c.fetches as f64 / days
            } else {
                0.0
            },
            fetches_per_page_day,
            freshness_per_fetch: if fetches_per_page_day > 0.0 {
                freshness / fetches_per_page_day
            } else {
                0.0
            },
            wasted_share: ratio(c.wasted, c.fetches),
            changes: c.changes,
            change_recall: ratio(c.caught, c.changes),
            discovered: all.discovered,
            undiscovered,
            discovery_latency_days: (all.discovered > 0)
                .then(|| all.latency / all.discovered as f64 / DAY),
            host_max_per_day: self.host_max_per_day,
            host_cap_per_day: self.host_cap,
            host_days_over_cap: self.host_days_over_cap,
            trusted_hosts: 0.0,
            estimators: Vec::new(),
            sitemap_reads: 0,
            sitemap_not_modified: 0,
            ingested_entries: 0,
            fetches_total: self.fetches_total,
            wall_seconds: 0.0,
        }
    }
}

fn add(to: &mut Integrals, piece: &Integrals) {
    to.freshness += piece.freshness;
    to.weighted += piece.weighted;
    to.age += piece.age;
    to.harmonic += piece.harmonic;
    to.span += piece.span;
    to.pages += piece.pages;
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Bias and MSE of every estimator over `(true λ per second, visits)`.
pub(crate) fn estimator_stats(pages: &[(f64, Vec<Visit>)]) -> Vec<EstimatorStats> {
    Estimator::ALL
        .iter()
        .map(|&e| {
            let (mut n, mut visits, mut err, mut rel, mut sq) = (0u64, 0usize, 0.0, 0.0, 0.0);
            for (lambda, v) in pages {
                let Some(est) = e.estimate(v) else { continue };
                if !(lambda.is_finite() && *lambda > 0.0) {
                    continue;
                }
                n += 1;
                visits += v.len();
                let d = (est - lambda) * DAY;
                err += d;
                sq += d * d;
                rel += est / lambda - 1.0;
            }
            let mean = |x: f64| if n > 0 { x / n as f64 } else { 0.0 };
            EstimatorStats {
                estimator: e.name(),
                pages: n,
                mean_visits: mean(visits as f64),
                bias_per_day: mean(err),
                relative_bias: mean(rel),
                mse: mean(sq),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: i64 = 1_000_000;

    #[test]
    fn exact_integrals_of_one_page() {
        // One page, born at 0, changes at 0.5 d, fetched at 0 and 1 d, over 2 d.
        let mut t = Tracker::new(E, 0, vec![2.0], vec![E], 1, Some(1.0));
        t.born(0, E);
        assert_eq!(t.fetched(0, 0, E), Found::First);
        t.advance(E + 43_200);
        t.changed(0, E + 43_200);
        t.advance(E + 86_400);
        assert_eq!(t.fetched(0, 0, E + 86_400), Found::Changed);
        t.advance(E + 86_400 + 100);
        assert_eq!(t.fetched(0, 0, E + 86_400 + 100), Found::Unchanged);
        t.sample(E + 2 * 86_400);
        let r = &t.rows()[0];
        // Fresh 1.5 of 2 days; stale for half a day with age growing to 0.5 d.
        assert!((r.freshness - 0.75).abs() < 1e-12, "{}", r.freshness);
        assert!((r.freshness_weighted - 0.75).abs() < 1e-12);
        assert!((r.age_days - 0.125 / 2.0).abs() < 1e-12, "{}", r.age_days);
        // H(1) = 1 for half a day of two.
        assert!((r.harmonic_staleness - 0.25).abs() < 1e-12);
        assert_eq!((r.fetches, r.wasted, r.changes, r.caught), (3, 1, 1, 1));
        let s = t.summary(E + 2 * 86_400);
        assert_eq!(s.change_recall, 1.0);
        assert_eq!(s.host_max_per_day, 2);
        assert_eq!(s.host_days_over_cap, 1);
    }

    #[test]
    fn warmup_and_discovery() {
        let mut t = Tracker::new(E, 86_400, vec![1.0, 1.0], vec![E, E + 1000], 1, None);
        t.born(0, E);
        t.advance(E + 1000);
        t.born(1, E + 1000);
        t.advance(E + 4600);
        assert_eq!(t.fetched(1, 0, E + 4600), Found::First);
        t.changed(0, E + 5000); // before the first fetch: still one missed
        t.advance(E + 3 * 86_400);
        let s = t.summary(E + 3 * 86_400);
        assert_eq!(s.discovered, 1);
        assert_eq!(s.undiscovered, 0);
        assert!((s.discovery_latency_days.unwrap() - 3600.0 / DAY).abs() < 1e-12);
        // After the warm-up page 1 is fresh, page 0 never fetched: F = 1/2.
        assert!((s.freshness - 0.5).abs() < 1e-12);
        assert_eq!(s.changes, 0, "the change fell in the warm-up");
    }

    #[test]
    fn estimator_stats_on_known_visits() {
        let v = |changed| Visit {
            interval: 86_400.0,
            changed,
            since_lastmod: None,
        };
        // 2 changes in 4 daily visits: naive 0.5/day.
        let pages = vec![(0.5 / DAY, vec![v(true), v(false), v(true), v(false)])];
        let s = estimator_stats(&pages);
        let naive = s.iter().find(|e| e.estimator == "naive").unwrap();
        assert_eq!(naive.pages, 1);
        assert!(naive.bias_per_day.abs() < 1e-12 && naive.mse < 1e-20);
        assert_eq!(naive.mean_visits, 4.0);
        let br = s.iter().find(|e| e.estimator == "bias-reduced").unwrap();
        assert!(br.bias_per_day > 0.0);
    }
}
