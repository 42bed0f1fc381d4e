//! The two baseline allocations of a fetch budget (Cho & Garcia-Molina,
//! "Effective page refresh policies for Web crawlers", ACM TODS 28(4),
//! 2003): **uniform**, every page refreshed at the same rate f = B/N, and
//! **proportional**, f_i = c·λ_i with c = B/Σλ_j. The paper proves uniform
//! never worse than proportional on (unweighted) freshness; the simulator
//! checks that ordering on the real queue.
//!
//! Both are rate policies: the store computes the allocation constant over
//! every active URL ([`Store::calibrate`](crate::Store::calibrate)) and
//! passes it in [`Calibration::multiplier`](super::Calibration::multiplier):
//! B/N for `uniform` ([`uniform_multiplier`]), B/Σλ̂ for `proportional`
//! ([`proportional_multiplier`]). Uncalibrated, `uniform` refreshes every
//! `fixed_interval` (it is then `fixed`) and `proportional` at f = λ̂ (c = 1).
//! The rate becomes a due time through the shared discretiser, and the score
//! is that of the other rate policies (importance × P(changed since the last
//! fetch)).

use super::optimal::{calibrated, rate_due};
use super::{Due, HostState, Params, Policy, UrlState, Weighted, WeightedPage};
use crate::time::Timestamp;

/// `uniform`: due 1/f after the last fetch, f = the calibrated B/N
/// (uncalibrated: 1/`fixed_interval`).
#[derive(Debug, Clone)]
pub struct Uniform {
    params: Params,
}

impl Uniform {
    /// The policy with these parameters.
    pub fn new(params: Params) -> Self {
        Uniform { params }
    }
}

impl Policy for Uniform {
    fn name(&self) -> &'static str {
        "uniform"
    }

    fn allocation_multiplier(&self, pages: &[WeightedPage], params: &Params) -> Option<f64> {
        let n = pages.iter().map(|p| p.count).sum::<u64>();
        Some(uniform_multiplier(
            usize::try_from(n).unwrap_or(usize::MAX),
            params.budget,
        ))
    }

    fn next_due(&self, url: &UrlState, _host: &HostState, now: Timestamp) -> Due {
        let rate = calibrated(&self.params)
            .unwrap_or_else(|| 1.0 / self.params.clamp_interval(self.params.fixed_interval));
        rate_due(url, &self.params, now, |_, _| rate)
    }
}

/// `proportional`: due 1/f after the last fetch, f = c·λ̂ with the
/// calibrated c = B/Σλ̂ (uncalibrated: c = 1).
#[derive(Debug, Clone)]
pub struct Proportional {
    params: Params,
}

impl Proportional {
    /// The policy with these parameters.
    pub fn new(params: Params) -> Self {
        Proportional { params }
    }
}

impl Policy for Proportional {
    fn name(&self) -> &'static str {
        "proportional"
    }

    fn allocation_multiplier(&self, pages: &[WeightedPage], params: &Params) -> Option<f64> {
        Some(proportional_multiplier(pages, params.budget))
    }

    fn next_due(&self, url: &UrlState, _host: &HostState, now: Timestamp) -> Due {
        let c = calibrated(&self.params).unwrap_or(1.0);
        rate_due(url, &self.params, now, |lambda, _| c * lambda)
    }
}

/// `uniform`'s constant: the rate B/N that spends `budget` fetches/s on
/// `pages` pages. 0 without pages or with a budget that is not a positive
/// finite number (uncalibrated).
pub fn uniform_multiplier(pages: usize, budget: f64) -> f64 {
    if pages == 0 || !(budget.is_finite() && budget > 0.0) {
        return 0.0;
    }
    budget / pages as f64
}

/// `proportional`'s constant: c = B/Σλ̂ over the pages' rates (λ, weight:
/// the weight is not used; each [`Weighted`] counted as its pages), so that
/// Σ c·λ̂ = B. Rates that are not positive
/// and finite are ignored; 0 (uncalibrated) when none is left or the budget
/// is not a positive finite number.
pub fn proportional_multiplier<P: Weighted>(pages: &[P], budget: f64) -> f64 {
    let total: f64 = pages
        .iter()
        .filter(|p| {
            let l = p.pair().0;
            l.is_finite() && l > 0.0
        })
        .map(|p| p.pair().0 * p.count())
        .sum();
    if !(budget.is_finite() && budget > 0.0 && total.is_finite() && total > 0.0) {
        return 0.0;
    }
    budget / total
}
