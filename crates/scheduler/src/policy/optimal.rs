//! Budget-optimal refresh rates.
//!
//! **freshness-optimal** (Cho & Garcia-Molina, "Effective page refresh
//! policies for Web crawlers", ACM TODS 28(4), 2003): maximise
//! Σ w_i (f_i/λ_i)(1 − e^{−λ_i/f_i}) subject to Σ f_i = B. The KKT
//! conditions give, with r_i = λ_i/f_i,
//! (w_i/λ_i)[1 − (1 + r_i)e^{−r_i}] = μ, and f_i = 0 iff w_i/λ_i ≤ μ (pages
//! that change too fast for their weight are given up). [`optimal_rate`]
//! solves the first for r_i (safeguarded Newton), [`optimal_multiplier`]
//! finds μ by bisection so that Σ f_i = B.
//!
//! **lambda-crawl** (Kolobov, Peres, Lu, Horvitz, NeurIPS 2019): minimise
//! the harmonic staleness Σ μ_i ln(1 + Δ_i/ρ_i) subject to Σ ρ_i = B, which
//! gives ρ_i = (−Δ_i + √(Δ_i² + 4μ_iΔ_i/λ))/2 ([`lambda_crawl_rate`],
//! computed in the cancellation- and overflow-free form a/(½ + √(a/Δ_i + ¼)),
//! a = μ_i/λ)
//! and λ by bisection ([`lambda_crawl_multiplier`]). Pages whose every
//! change is observed are crawled on change with probability
//! [`lambda_crawl_on_change_probability`], R_c being what the rate
//! allocation gives those pages ([`Calibration`](super::Calibration)); the
//! coin is a hash of the URL's per-fetch sample and the lastmod, so one per
//! change, the same on every build.
//!
//! Both multipliers are computed over the whole store by its owner and
//! passed in [`Calibration`](super::Calibration). Searches are bounded loops
//! (the multipliers by bisection on the f64 bit pattern, at most 64 steps);
//! pages with non-finite or non-positive rate or weight are ignored (they get
//! rate 0), and so, for freshness-optimal, are pages whose w/λ over- or
//! underflows f64.

use super::on_change::{every_change_observed, lastmod_says_changed, not_refreshed};
use super::{
    Due, HostState, Params, Policy, Reason, UrlState, Weighted, WeightedPage, add_secs,
    changefreq_interval, common_due, importance,
};
use crate::hash::{Fnv1a, unit};
use crate::time::Timestamp;

/// Bound on every search loop here.
const MAX_STEPS: u32 = 200;

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// g(r) = 1 − (1 + r)e^{−r}, by its series below 0.1 (no cancellation).
fn g(r: f64) -> f64 {
    if r < 0.1 {
        // Σ_{k≥2} (−1)^k (k − 1) r^k / k!
        let mut pow_over_fact = r * r / 2.0; // r^k/k! at k = 2
        let mut sum = 0.0;
        for k in 2..=14 {
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            sum += sign * f64::from(k - 1) * pow_over_fact;
            pow_over_fact *= r / f64::from(k + 1);
        }
        sum
    } else {
        1.0 - (1.0 + r) * (-r).exp()
    }
}

/// The root of an increasing `h` in [`lo`, `hi`] (`h(lo) ≤ 0 ≤ h(hi)`);
/// `h` returns (value, slope). Newton, falling back to bisection whenever
/// the step leaves the bracket. Bounded.
fn solve_increasing(mut lo: f64, mut hi: f64, h: impl Fn(f64) -> (f64, f64)) -> f64 {
    let mut r = 0.5 * (lo + hi);
    for _ in 0..MAX_STEPS {
        let (v, slope) = h(r);
        if v > 0.0 {
            hi = r;
        } else if v < 0.0 {
            lo = r;
        } else {
            return r;
        }
        let newton = r - v / slope;
        let next = if newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if (next - r).abs() <= 1e-15 * r || hi - lo <= 1e-15 * hi {
            return next;
        }
        r = next;
    }
    r
}

/// The r = λ/f > 0 with g(r) = c = μ/q, for 0 < μ < q (q = w/λ), so
/// 0 ≤ c < 1 in f64 (μ < q keeps the rounded quotient below 1).
///
/// Three regimes, none of which loses the root to rounding:
/// - c < 1e-30 (possibly underflowed to 0): r = s(1 + s/3 + O(s²)) with
///   s = √(2c) computed as √(2μ)/√q;
/// - c ≤ 1/2: Newton on g(r) = c (g by its series for small r);
/// - c > 1/2: Newton on r − ln(1 + r) = −ln(1 − c), i.e. (1 + r)e^{−r} =
///   1 − c, with 1 − c exact (Sterbenz); g(r) itself rounds to 1 from
///   r ≈ 37 on, this form does not.
fn solve_r(mu: f64, q: f64) -> f64 {
    let c = mu / q;
    if c < 1e-30 {
        // μ < 1e-30·q, so 2μ does not overflow; s ≥ ~1e-316 > 0.
        let s = (2.0 * mu).sqrt() / q.sqrt();
        return s * (1.0 + s / 3.0);
    }
    if c <= 0.5 {
        // g(r) ≤ r²/2, so the root is ≥ √(2c); double up to an upper end.
        let lo = (2.0 * c).sqrt();
        let mut hi = 2.0 * lo;
        for _ in 0..MAX_STEPS {
            if g(hi) >= c {
                break;
            }
            hi *= 2.0;
        }
        return solve_increasing(lo, hi, |r| (g(r) - c, r * (-r).exp()));
    }
    // r − ln(1 + r) increases (slope r/(1 + r)); at r = 1.6 it is 0.64 <
    // ln 2 ≤ L, at 2L + 3 it is L + 3 − ln(2L + 4) > L.
    let tail = -(1.0 - c).ln();
    solve_increasing(1.6, 2.0 * tail + 3.0, |r| {
        (r - r.ln_1p() - tail, r / (1.0 + r))
    })
}

/// w/λ of a page the allocation can use: λ and w positive and finite and
/// w/λ a positive finite f64 (it is what μ is compared with), else None.
fn value_per_change(lambda: f64, weight: f64) -> Option<f64> {
    if !positive(lambda) || !positive(weight) {
        return None;
    }
    Some(weight / lambda).filter(|q| positive(*q))
}

/// Freshness-optimal refresh rate f (fetches/s) of a page changing at rate
/// `lambda` with weight `weight`, at multiplier `mu`: 0 when w/λ ≤ μ, else
/// λ/r with (w/λ)(1 − (1 + r)e^{−r}) = μ. A page that never changes (λ ≤ 0)
/// or has no weight, or whose w/λ is not a positive finite f64, gets 0;
/// μ ≤ 0 (no budget constraint) gives +∞; NaN anywhere gives 0.
///
/// The give-up test is `w / λ <= μ` exactly as written, the same quotient
/// [`optimal_multiplier`] takes its upper bracket from, so at that μ every
/// rate is 0.
pub fn optimal_rate(lambda: f64, weight: f64, mu: f64) -> f64 {
    let Some(q) = value_per_change(lambda, weight) else {
        return 0.0;
    };
    if mu.is_nan() || mu >= q {
        return 0.0;
    }
    if mu <= 0.0 {
        return f64::INFINITY;
    }
    let f = lambda / solve_r(mu, q);
    if f.is_nan() { 0.0 } else { f }
}

/// The multiplier μ at which the freshness-optimal rates of `pages`
/// (λ_i, w_i; each [`Weighted`] counted as its pages) sum to `budget`
/// fetches/s. 0 when no page is usable (see
/// [`optimal_rate`]) or the budget is infinite; max w/λ (every rate 0) when
/// the budget is ≤ 0 or NaN.
///
/// The sum never exceeds the budget. It meets it (to ~1e-12 relative) unless
/// the budget is so small that the marginal page would be refreshed less than
/// about once per 40 of its changes: there r = λ/f needs
/// (1 + r)e^{−r} < 2^{−52}, i.e. μ closer to w/λ than one f64 ulp, and that
/// page's rate drops from ≈ λ/40 to 0 between adjacent μ. The sum then falls
/// short by at most that λ/39.
///
/// Cost: O(pages) per step, at most 64 steps (bisection on the f64 bit
/// pattern of μ over (0, max w/λ]; each page's rate is a safeguarded Newton
/// solve of a few iterations).
pub fn optimal_multiplier<P: Weighted>(pages: &[P], budget: f64) -> f64 {
    let usable = || {
        pages.iter().filter_map(|p| {
            let (l, w) = p.pair();
            Some((l, w, value_per_change(l, w)?, p.count()))
        })
    };
    let Some(mu_max) = usable().map(|(_, _, q, _)| q).reduce(f64::max) else {
        return 0.0;
    };
    if budget.is_nan() || budget <= 0.0 {
        return mu_max;
    }
    if budget.is_infinite() {
        return 0.0;
    }
    let total = |mu: f64| {
        usable()
            .map(|(l, w, _, n)| optimal_rate(l, w, mu) * n)
            .sum::<f64>()
    };
    // Every page gives up at μ = max w/λ (total 0), so it brackets the root.
    bisect_decreasing(total, budget, mu_max)
}

/// The x in (0, `hi`] with `total(x) = target` for a decreasing `total`
/// with `total(hi) ≤ target`: bisection on the bit patterns of positive f64
/// (ordered like their values), so at most 64 steps however many binades
/// the bracket spans, ending on adjacent floats. Returns the upper end of the
/// final bracket, so the total never exceeds the target; the smallest
/// positive f64 if even its total does not reach the target; `hi` itself if
/// its total already exceeds the target (the root lies above `f64::MAX`).
fn bisect_decreasing(total: impl Fn(f64) -> f64, target: f64, hi: f64) -> f64 {
    if hi.is_nan() || hi <= 0.0 {
        return 0.0;
    }
    let hi = hi.min(f64::MAX);
    if total(hi) > target {
        return hi;
    }
    let mut lo = f64::from_bits(1).to_bits(); // smallest positive subnormal
    let mut hi = hi.to_bits();
    if total(f64::from_bits(lo)) <= target {
        return f64::from_bits(lo);
    }
    // Invariant: total(lo) > target ≥ total(hi) (NaN counts as "not above").
    for _ in 0..64 {
        if hi - lo <= 1 {
            break;
        }
        let mid = lo + (hi - lo) / 2;
        if total(f64::from_bits(mid)) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    f64::from_bits(hi)
}

/// The pages with Δ and importance positive and finite, as (Δ, μ, count).
fn usable_pages<P: Weighted>(pages: &[P]) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
    pages
        .iter()
        .map(|p| (p.pair(), p.count()))
        .filter(|((d, m), _)| positive(*d) && positive(*m))
        .map(|((d, m), n)| (d, m, n))
}

/// Lambda-crawl rate ρ (fetches/s) of a page with change rate `delta` and
/// importance μ_i at Lagrange multiplier `lagrange`:
/// (−Δ + √(Δ² + 4μ_iΔ/λ))/2. Δ or importance not positive and finite → 0
/// (as [`lambda_crawl_multiplier`] ignores such pages); λ ≤ 0 → +∞ (no
/// budget constraint); λ NaN or +∞ → 0.
pub fn lambda_crawl_rate(delta: f64, importance: f64, lagrange: f64) -> f64 {
    if !positive(delta) || !positive(importance) || lagrange.is_nan() {
        return 0.0;
    }
    if lagrange <= 0.0 {
        return f64::INFINITY;
    }
    // With a = μ_i/λ and t = a/Δ: ρ = 2a/(1 + √(1 + 4t)) = a/(½ + √(t + ¼)),
    // which neither cancels nor overflows in 2a or 4t (importance near
    // f64::MAX used to make 4μ_i infinite and take the t ≫ 1 branch).
    let a = importance / lagrange;
    let t = a / delta;
    let rho = if t.is_finite() {
        a / (0.5 + (t + 0.25).sqrt())
    } else {
        // t > f64::MAX: ρ = √(aΔ) to within 1/√t.
        (importance.sqrt() / lagrange.sqrt()) * delta.sqrt()
    };
    if rho.is_nan() { 0.0 } else { rho }
}

/// The Lagrange multiplier λ at which the lambda-crawl rates of `pages`
/// (Δ_i, μ_i; each [`Weighted`] counted as its pages) sum to `budget`
/// fetches/s. 0 when no page is usable or the
/// budget is infinite; `f64::MAX` (every rate ≈ 0) when the budget is ≤ 0 or
/// NaN. The sum never exceeds the budget unless the exact λ is above
/// `f64::MAX` (Σμ/B overflows): then `f64::MAX`, the closest there is.
pub fn lambda_crawl_multiplier<P: Weighted>(pages: &[P], budget: f64) -> f64 {
    let usable = || usable_pages(pages);
    if usable().next().is_none() {
        return 0.0;
    }
    if budget.is_nan() || budget <= 0.0 {
        return f64::MAX;
    }
    if budget.is_infinite() {
        return 0.0;
    }
    let total = |l: f64| {
        usable()
            .map(|(d, m, n)| lambda_crawl_rate(d, m, l) * n)
            .sum::<f64>()
    };
    // ρ_i ≤ μ_i/λ, so Σ ρ ≤ B at λ = Σμ/B (unless that exceeds f64::MAX).
    let hi = usable().map(|(_, m, n)| m * n).sum::<f64>() / budget;
    bisect_decreasing(total, budget, hi.min(f64::MAX))
}

/// Lambda-crawl's crawl-on-change probability for a page whose every change
/// is observed: min(1, R_c μ_i/(Δ_i Σμ)), R_c the budget for such pages.
/// A page that never changes gets 1 (there is nothing to crawl); invalid
/// inputs give 0.
pub fn lambda_crawl_on_change_probability(
    importance: f64,
    delta: f64,
    total_importance: f64,
    change_budget: f64,
) -> f64 {
    if !positive(importance) || !positive(total_importance) || change_budget.is_nan() {
        return 0.0;
    }
    if delta.is_nan() || delta <= 0.0 {
        return 1.0;
    }
    let p = change_budget * importance / (delta * total_importance);
    if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) }
}

/// The level c at which crawling each change of page i with probability
/// min(1, c μ_i/Δ_i) costs `budget` fetches per second over `pages` (Δ_i,
/// μ_i; each [`Weighted`] counted as its pages): Σ min(Δ_i, c μ_i) = R_c, by bisection (water-filling: the slowest
/// pages for their importance get every change, the rest a share). When
/// every change fits in the budget: `f64::MAX` (every change crawled);
/// otherwise at most `f64::MAX / 2`.
/// Pages with Δ or μ not positive and finite are ignored; no usable page,
/// or a budget that is NaN or ≤ 0: 0.
pub fn lambda_crawl_on_change_level<P: Weighted>(pages: &[P], budget: f64) -> f64 {
    let usable = || usable_pages(pages);
    if usable().next().is_none() || budget.is_nan() || budget <= 0.0 {
        return 0.0;
    }
    if usable().map(|(d, _, n)| d * n).sum::<f64>() <= budget {
        return f64::MAX;
    }
    // In x = 1/c the cost Σ min(Δ_i, μ_i/x) decreases; at x = Σμ/R_c it is
    // at most R_c.
    let cost = |x: f64| usable().map(|(d, m, n)| d.min(m / x) * n).sum::<f64>();
    let hi = usable().map(|(_, m, n)| m * n).sum::<f64>() / budget;
    let x = bisect_decreasing(cost, budget, hi.min(f64::MAX));
    // A level beyond f64 (importances near the smallest floats): the
    // largest short of "every change".
    let level = 1.0 / x;
    if level.is_finite() {
        level.min(f64::MAX / 2.0)
    } else {
        f64::MAX / 2.0
    }
}

/// λ̂ a rate policy plans with: the URL's rate if it is a number ≥ 0, else
/// the prior 1/(changefreq interval, or `initial_interval`); floored at
/// 1/`max_interval` so a page never seen changing is still revisited (and
/// its estimate can move); finite (a prior interval that rounds to 0
/// would otherwise make it infinite).
pub fn planning_rate(url: &UrlState, params: &Params) -> f64 {
    let (_, max) = params.bounds();
    let rate = match url.rate.filter(|r| r.is_finite() && *r >= 0.0) {
        Some(r) => r,
        None => {
            let prior = match url.changefreq {
                Some(cf) => changefreq_interval(cf, params),
                None => params.clamp_interval(params.initial_interval),
            };
            1.0 / prior
        }
    };
    rate.max(1.0 / max).min(f64::MAX)
}

/// Rate policies share the discretiser and the score.
pub(super) fn rate_due(
    url: &UrlState,
    params: &Params,
    now: Timestamp,
    rate: impl Fn(f64, f64) -> f64,
) -> Due {
    let w = importance(url);
    let last = match common_due(url, params, w) {
        Err(due) => return due,
        Ok(last) => last,
    };
    let lambda = planning_rate(url, params);
    let elapsed = now.secs_since(last).max(0) as f64;
    Due {
        at: add_secs(last, params.interval_for_rate(rate(lambda, w))),
        // λ̂ and the elapsed time are finite and ≥ 0, so the probability is
        // in [0, 1] (never NaN) and the score in [0, w].
        score: w * -(-lambda * elapsed).exp_m1(),
        reason: Reason::Optimal,
    }
}

/// The calibration multiplier, if it is usable (positive and finite).
pub(super) fn calibrated(params: &Params) -> Option<f64> {
    Some(params.calibration.multiplier).filter(|m| positive(*m))
}

/// `freshness-optimal`: due 1/f after the last fetch, f from
/// [`optimal_rate`] at the calibrated μ (uncalibrated: f = λ̂).
#[derive(Debug, Clone)]
pub struct FreshnessOptimal {
    params: Params,
}

impl FreshnessOptimal {
    /// The policy with these parameters.
    pub fn new(params: Params) -> Self {
        FreshnessOptimal { params }
    }
}

impl Policy for FreshnessOptimal {
    fn name(&self) -> &'static str {
        "freshness-optimal"
    }

    fn allocation_multiplier(&self, pages: &[WeightedPage], params: &Params) -> Option<f64> {
        Some(optimal_multiplier(pages, params.budget))
    }

    fn next_due(&self, url: &UrlState, _host: &HostState, now: Timestamp) -> Due {
        let mu = calibrated(&self.params);
        rate_due(url, &self.params, now, |lambda, w| match mu {
            Some(mu) => optimal_rate(lambda, w, mu),
            None => lambda,
        })
    }
}

/// `lambda-crawl`: due 1/ρ after the last fetch, ρ from
/// [`lambda_crawl_rate`] at the calibrated λ (uncalibrated: ρ = Δ̂).
#[derive(Debug, Clone)]
pub struct LambdaCrawl {
    params: Params,
}

impl LambdaCrawl {
    /// The policy with these parameters.
    pub fn new(params: Params) -> Self {
        LambdaCrawl { params }
    }
}

impl Policy for LambdaCrawl {
    fn name(&self) -> &'static str {
        "lambda-crawl"
    }

    fn allocation_multiplier(&self, pages: &[WeightedPage], params: &Params) -> Option<f64> {
        Some(lambda_crawl_multiplier(pages, params.budget))
    }

    fn on_change_level(&self, complete: &[WeightedPage], multiplier: f64) -> Option<f64> {
        // R_c: what the rate allocation gives these pages, spent on their
        // changes instead.
        let budget = complete
            .iter()
            .map(|p| {
                let rate = if positive(multiplier) {
                    lambda_crawl_rate(p.rate, p.importance, multiplier)
                } else {
                    p.rate
                };
                rate * p.count as f64
            })
            .filter(|r| r.is_finite())
            .sum::<f64>();
        Some(lambda_crawl_on_change_level(complete, budget))
    }

    /// A page whose every change is observed (a complete host, lastmods to
    /// the second, fetched before) is crawled on change: a change its
    /// lastmod announces is due at once with probability
    /// [`lambda_crawl_on_change_probability`] (a coin drawn per change),
    /// else skipped; while its lastmod has not moved it is only validated
    /// or refetched after the safety interval, as `lastmod` does
    /// ([`Reason::LastmodNewer`], [`Reason::Validation`],
    /// [`Reason::Safety`]). Every other page: its rate ρ.
    fn next_due(&self, url: &UrlState, host: &HostState, now: Timestamp) -> Due {
        let lagrange = calibrated(&self.params);
        let rated = rate_due(url, &self.params, now, |delta, w| match lagrange {
            Some(l) => lambda_crawl_rate(delta, w, l),
            None => delta,
        });
        let (Some(lm), Some(last), true) = (
            url.lastmod.filter(|&lm| lm <= now),
            url.last_fetch,
            every_change_observed(url, host),
        ) else {
            return rated;
        };
        if rated.reason != Reason::Optimal {
            // A retry, or a page retired by its fetches: as scheduled.
            return rated;
        }
        let score = importance(url);
        if !lastmod_says_changed(lm, url.lastmod_precision, url.lastmod_moved_after, last) {
            return not_refreshed(url, &self.params, last, rated.at, score);
        }
        let level = self.params.calibration.on_change_level;
        let delta = planning_rate(url, &self.params);
        let p = if level == f64::MAX {
            // Every change fits in the budget.
            1.0
        } else if positive(level) {
            // min(1, R_c μ_i/(Δ_i Σμ)) with R_c/Σμ = c.
            lambda_crawl_on_change_probability(score, delta, 1.0, level)
        } else {
            // Not calibrated for crawl on change (no complete host at the
            // last calibration, or one saved by an older build): the rate
            // its allocation gives the page, spent on its changes.
            match lagrange {
                Some(l) => (lambda_crawl_rate(delta, score, l) / delta).clamp(0.0, 1.0),
                None => 1.0,
            }
        };
        let coin = unit(
            Fnv1a::default()
                .write(&url.sample.to_bits().to_be_bytes())
                .write(&lm.unix().to_be_bytes())
                .finish(),
        );
        if coin < p {
            Due {
                at: lm.min(rated.at),
                score,
                reason: Reason::LastmodNewer,
            }
        } else {
            // Skipped: the next change, a validation or the safety interval.
            not_refreshed(url, &self.params, last, rated.at, score)
        }
    }
}
