//! Change-rate estimators: how often a page changes, judged from what our
//! fetches of it saw (docs/scheduling.md#change-rate-estimators).
//!
//! Every estimator assumes Poisson changes at an unknown rate λ and returns
//! λ̂ in changes per second.
//!
//! | [`Estimator`] | observation | λ̂ | source |
//! |---|---|---|---|
//! | `naive` | did each visit see a change | X/(nI) | Cho & Garcia-Molina, "Estimating frequency of change", ACM TOIT 3(3), 2003 |
//! | `bias-reduced` | same | −ln((n − X + 0.5)/(n + 0.5))/I | same paper |
//! | `irregular` | same, with irregular intervals t_j | root of Σ_C t_j/(e^{λt_j} − 1) = Σ_U t_j | same paper |
//! | `last-modified` | also the lastmod at changed visits | X/(Σ_U t_j + Σ_C τ_j) | derived from the same paper |
//! | `complete` | every change observed | (K + 0.5)/(T + 0.5) | Kolobov, Peres, Lu, Horvitz, NeurIPS 2019 |
//!
//! n is the number of usable visits, X (= K) the number that found a change,
//! I the mean interval (naive and bias-reduced assume regular visits), C and
//! U the changed and unchanged visits, τ_j the time from the lastmod to the
//! visit.
//!
//! ## Decisions the formulas leave open
//! - Unusable visits are skipped: an interval that is NaN, infinite, below
//!   [`MIN_INTERVAL`] (zero, negative) or above [`MAX_INTERVAL`] says nothing
//!   about the rate. No usable visit → `None`.
//! - No visit found a change → every estimator except `complete` returns
//!   `Some(0.0)` (the MLE). Callers that must not schedule on a zero rate
//!   floor it themselves or use `complete`, which is smoothed; the store
//!   plans with [`unchanged_rate`] then (0.5/Σt_j).
//! - The maximum-likelihood estimators (`irregular`, `last-modified`) are
//!   unbounded when the evidence cannot bound the rate (every visit found a
//!   change and nothing bounds the time since that change). They then return
//!   the *cap* `ln(2n + 1)/I`, which is what `bias-reduced` says when all n
//!   visits saw a change, so the estimators agree at that extreme.
//! - `last-modified`: τ_j is clamped to `[0, t_j]` (a lastmod before the
//!   previous visit while this visit found a change is an inconsistent
//!   lastmod; the change happened within the interval). A changed visit
//!   without τ_j contributes what `irregular` would (a censored observation),
//!   so the estimator is the MLE of the mixed evidence; with τ known at every
//!   changed visit it is exactly the closed form X/T of the table.
//! - `complete` via [`Estimator::estimate`]: K = visits that found a change,
//!   T = Σ t_j. The smoothing constants 0.5 are in the same unit as T
//!   (seconds), as in the source.
//! - Root finding is bisection on a bracket derived in closed form, at most
//!   [`MAX_ITERATIONS`] steps, no recursion.

use std::fmt;

/// The longest interval (seconds, ~31 700 years) an estimator accepts; longer
/// ones are skipped as nonsense (and would overflow sums).
pub const MAX_INTERVAL: f64 = 1e12;

/// The shortest interval (seconds) an estimator accepts; shorter ones
/// (including subnormal numbers, whose reciprocals overflow) are skipped.
pub const MIN_INTERVAL: f64 = 1e-9;

/// Bound on the bisection steps of the `irregular`/`last-modified` solver.
pub const MAX_ITERATIONS: u32 = 200;

/// One fetch of a page, as the store remembers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Visit {
    /// Seconds since the previous fetch (the interval t_j).
    pub interval: f64,
    /// The fetch found a change (content differed / not a 304).
    pub changed: bool,
    /// For a changed visit with a trusted lastmod: visit time − lastmod, seconds (τ_j).
    pub since_lastmod: Option<f64>,
}

/// A change-rate estimator (see the module docs for the formulas).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Estimator {
    /// X/(nI): biased low, kept as a baseline.
    Naive,
    /// −ln((n − X + 0.5)/(n + 0.5))/I: nearly unbiased for regular visits.
    BiasReduced,
    /// MLE for irregular visit intervals.
    Irregular,
    /// MLE using the lastmod of changed visits.
    LastModified,
    /// (K + 0.5)/(T + 0.5): every change is observed.
    Complete,
}

impl Estimator {
    /// Every estimator, in documentation order.
    pub const ALL: [Estimator; 5] = [
        Estimator::Naive,
        Estimator::BiasReduced,
        Estimator::Irregular,
        Estimator::LastModified,
        Estimator::Complete,
    ];

    /// The name used in configuration and output.
    pub fn name(self) -> &'static str {
        match self {
            Estimator::Naive => "naive",
            Estimator::BiasReduced => "bias-reduced",
            Estimator::Irregular => "irregular",
            Estimator::LastModified => "last-modified",
            Estimator::Complete => "complete",
        }
    }

    /// The estimator called `s` (exact name as [`Estimator::name`] gives it).
    pub fn from_name(s: &str) -> Option<Self> {
        Estimator::ALL.into_iter().find(|e| e.name() == s)
    }

    /// λ̂ in changes per second, or `None` when there is no evidence (no
    /// usable visits). Never NaN, never negative; `+∞` is impossible (the
    /// unbounded MLE cases return the cap described in the module docs).
    pub fn estimate(self, visits: &[Visit]) -> Option<f64> {
        let s = Summary::of(visits);
        if s.n == 0 {
            return None;
        }
        let rate = match self {
            Estimator::Naive => s.changed as f64 / s.span,
            Estimator::BiasReduced => bias_reduced(s.n, s.changed, s.span),
            Estimator::Complete => complete(s.changed, s.span),
            Estimator::Irregular => {
                let censored = usable(visits).filter(|v| v.changed).map(|v| v.interval);
                mle(0.0, censored, s.span - s.changed_span).unwrap_or_else(|| s.cap())
            }
            Estimator::LastModified => {
                let mut known = 0u64;
                let mut exposure = s.span - s.changed_span;
                for v in usable(visits).filter(|v| v.changed) {
                    if let Some(tau) = v.since_lastmod.filter(|t| !t.is_nan()) {
                        known += 1;
                        exposure += tau.clamp(0.0, v.interval);
                    }
                }
                let censored = usable(visits)
                    .filter(|v| v.changed && v.since_lastmod.is_none_or(f64::is_nan))
                    .map(|v| v.interval);
                mle(known as f64, censored, exposure).unwrap_or_else(|| s.cap())
            }
        };
        Some(if rate.is_nan() || rate <= 0.0 {
            0.0
        } else if rate.is_infinite() {
            // e.g. Σ τ_j subnormal: as unbounded as no exposure at all.
            s.cap()
        } else {
            rate
        })
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The rate to plan with when no usable visit found a change (every
/// estimator but `complete` then says 0): half a change over the time
/// watched, 0.5/Σt_j, the same half-count smoothing as `complete` and
/// `bias-reduced`. A page never seen changing is then revisited after about
/// twice the time it has been watched (a backoff), not parked at the
/// longest interval after a single unchanged visit. `None` when there is no
/// usable visit or a visit found a change.
pub fn unchanged_rate(visits: &[Visit]) -> Option<f64> {
    let s = Summary::of(visits);
    (s.n > 0 && s.changed == 0 && s.span > 0.0).then(|| 0.5 / s.span)
}

/// "complete" observation model helper: K changes observed over span T
/// seconds: (K + 0.5)/(T + 0.5). A span that is negative or NaN counts as 0,
/// an infinite span gives 0.
pub fn complete(changes: u64, span: f64) -> f64 {
    let span = if span.is_nan() { 0.0 } else { span.max(0.0) };
    (changes as f64 + 0.5) / (span + 0.5)
}

/// Counts over the usable visits.
#[derive(Debug, Clone, Copy, Default)]
struct Summary {
    n: u64,
    changed: u64,
    /// Σ t_j over all usable visits.
    span: f64,
    /// Σ t_j over the changed ones.
    changed_span: f64,
}

impl Summary {
    fn of(visits: &[Visit]) -> Self {
        let mut s = Summary::default();
        for v in usable(visits) {
            s.n += 1;
            s.span += v.interval;
            if v.changed {
                s.changed += 1;
                s.changed_span += v.interval;
            }
        }
        s
    }

    /// What the estimators say when the MLE is unbounded: bias-reduced with
    /// every visit changed, ln(2n + 1)/I.
    fn cap(&self) -> f64 {
        bias_reduced(self.n, self.n, self.span)
    }
}

fn usable(visits: &[Visit]) -> impl Iterator<Item = &Visit> + Clone {
    visits
        .iter()
        .filter(|v| (MIN_INTERVAL..=MAX_INTERVAL).contains(&v.interval))
}

/// ln((n + 0.5)/(n − X + 0.5)) / (span/n).
fn bias_reduced(n: u64, changed: u64, span: f64) -> f64 {
    let n = n as f64;
    let x = (changed as f64).min(n);
    let r = ((n + 0.5) / (n - x + 0.5)).ln();
    r * n / span
}

/// t/(e^{λt} − 1), 0 once e^{λt} overflows.
fn censored_term(lambda: f64, t: f64) -> f64 {
    let d = (lambda * t).exp_m1();
    if d.is_finite() && d > 0.0 { t / d } else { 0.0 }
}

/// The MLE of a Poisson rate from `known` changes whose last occurrence was
/// seen (each contributes λe^{−λτ}), the `censored` intervals that held at
/// least one change (each contributes 1 − e^{−λt}) and `exposure` seconds
/// known to be free of changes (e^{−λ·exposure}). It is the root of the
/// strictly decreasing
///
/// h(λ) = known/λ + Σ_censored t/(e^{λt} − 1) − exposure.
///
/// `Some(0.0)` when there is no change at all, `None` when the likelihood
/// grows without bound (no exposure). Bisection: at most [`MAX_ITERATIONS`]
/// evaluations of h.
fn mle(known: f64, censored: impl Iterator<Item = f64> + Clone, exposure: f64) -> Option<f64> {
    let (count, sum) = censored
        .clone()
        .fold((0.0f64, 0.0f64), |(c, s), t| (c + 1.0, s + t));
    let events = known + count;
    if events <= 0.0 {
        return Some(0.0);
    }
    if exposure.is_nan() || exposure <= 0.0 {
        return None;
    }
    if count == 0.0 {
        return Some(known / exposure);
    }
    let h = |lambda: f64| {
        known / lambda
            + censored
                .clone()
                .map(|t| censored_term(lambda, t))
                .sum::<f64>()
            - exposure
    };
    // x/(e^x − 1) ≥ 1 − x/2 gives h(λ) ≥ events/λ − Σt/2 − exposure, so h > 0
    // below `lo`; x/(e^x − 1) ≤ 1 gives h(λ) ≤ events/λ − exposure, so h < 0
    // above `hi`. The bracket is at most a small constant factor wide.
    let mut lo = 0.5 * events / (exposure + 0.5 * sum);
    let mut hi = 2.0 * events / exposure;
    for _ in 0..MAX_ITERATIONS {
        // Geometric steps while the bracket spans orders of magnitude (tiny
        // exposure), arithmetic ones to finish.
        let mid = if hi > 4.0 * lo {
            lo * (hi / lo).sqrt()
        } else {
            0.5 * (lo + hi)
        };
        if !(mid > lo && mid < hi) || hi - lo <= 1e-13 * hi {
            break;
        }
        if h(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

#[cfg(test)]
mod tests;
