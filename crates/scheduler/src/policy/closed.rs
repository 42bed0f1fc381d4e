//! Closed forms for crawling a Poisson page (docs/scheduling.md#closed-forms;
//! Cho & Garcia-Molina, ACM TODS 2003; Kolobov et al., NeurIPS 2019).
//!
//! Inputs that are NaN or negative count as 0. Small r = λI uses series
//! expansions, so there is no cancellation near 0.

/// `x` if it is a non-negative number, else 0.
fn nonneg(x: f64) -> f64 {
    if x >= 0.0 { x } else { 0.0 }
}

/// Time-averaged freshness of a page changing at rate `lambda`, fetched every
/// `interval`: (1 − e^{−r})/r with r = λI (1 at r = 0, 0 at r = ∞).
pub fn freshness_fixed(lambda: f64, interval: f64) -> f64 {
    let r = nonneg(lambda) * nonneg(interval);
    if r.is_nan() {
        // 0 · ∞: a page that never changes, or one fetched continuously.
        return 1.0;
    }
    if r == 0.0 {
        return 1.0;
    }
    if r.is_infinite() {
        return 0.0;
    }
    -(-r).exp_m1() / r
}

/// Time-averaged age: I(1/2 − 1/r + (1 − e^{−r})/r²), r = λI (0 at r = 0,
/// I/2 as r → ∞).
pub fn age_fixed(lambda: f64, interval: f64) -> f64 {
    let lambda = nonneg(lambda);
    let interval = nonneg(interval);
    let r = lambda * interval;
    if r.is_nan() || r == 0.0 {
        return 0.0;
    }
    if r.is_infinite() {
        return if interval.is_infinite() {
            f64::INFINITY
        } else {
            interval / 2.0
        };
    }
    let shape = if r < 0.1 {
        // Σ_{k≥1} (−1)^{k+1} r^k/(k + 2)!
        let mut term = r / 6.0;
        let mut sum = 0.0;
        for k in 1..=12 {
            sum += term;
            term *= -r / f64::from(k + 3);
        }
        sum
    } else {
        0.5 - 1.0 / r - (-r).exp_m1() / (r * r)
    };
    interval * shape
}

/// Expected harmonic staleness cost per unit time of a page with importance
/// μ changing at rate Δ, crawled as a Poisson process of rate ρ:
/// μ ln(1 + Δ/ρ) (Kolobov et al. 2019). ρ = 0 with Δ > 0 costs +∞; Δ = 0
/// costs 0; never NaN.
pub fn harmonic_cost_poisson(importance: f64, delta: f64, rho: f64) -> f64 {
    let (mu, delta, rho) = (nonneg(importance), nonneg(delta), nonneg(rho));
    if mu == 0.0 || delta == 0.0 {
        return 0.0;
    }
    let cost = mu * (delta / rho).ln_1p();
    // ∞/∞ or ∞·0: no meaningful cost.
    if cost.is_nan() { 0.0 } else { cost }
}
