//! Estimator tests: closed forms on hand-made visits, seeded Monte-Carlo
//! against the sanity values of docs/scheduling.md#change-rate-estimators,
//! robustness.

use super::*;
use proptest::prelude::*;

/// SplitMix64: a tiny, seedable, good-enough generator for Monte-Carlo.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
    /// Exponential with the given rate.
    fn exp(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }
}

/// `n` visits of a page whose changes are Poisson(`lambda`), visit gaps
/// drawn by `gap`; each visit records whether a change happened since the
/// previous one and, if so, the time since the latest change (the truthful
/// lastmod).
fn simulate(rng: &mut Rng, lambda: f64, n: usize, gap: impl Fn(&mut Rng) -> f64) -> Vec<Visit> {
    let mut now = 0.0;
    let mut next_change = rng.exp(lambda);
    let mut visits = Vec::with_capacity(n);
    for _ in 0..n {
        let interval = gap(rng);
        now += interval;
        let mut last = None;
        while next_change <= now {
            last = Some(next_change);
            next_change += rng.exp(lambda);
        }
        visits.push(Visit {
            interval,
            changed: last.is_some(),
            since_lastmod: last.map(|c| now - c),
        });
    }
    visits
}

/// Mean and standard error of `est` over `runs` simulated pages.
fn monte_carlo(
    seed: u64,
    runs: usize,
    est: Estimator,
    mut page: impl FnMut(&mut Rng) -> Vec<Visit>,
) -> (f64, f64) {
    let mut rng = Rng(seed);
    let xs: Vec<f64> = (0..runs)
        .map(|_| est.estimate(&page(&mut rng)).expect("visits were made"))
        .collect();
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

fn regular(n: usize, interval: f64, changed: &[bool]) -> Vec<Visit> {
    (0..n)
        .map(|i| Visit {
            interval,
            changed: changed.get(i).copied().unwrap_or(false),
            since_lastmod: None,
        })
        .collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-300)
}

/// `est` on `visits` is `want` to within `tol` (relative).
#[track_caller]
fn assert_estimate(est: Estimator, visits: &[Visit], want: f64, tol: f64) {
    let got = est.estimate(visits).expect("usable visits");
    assert!(close(got, want, tol), "{est}: {got} vs {want}");
}

#[test]
fn names_round_trip() {
    for e in Estimator::ALL {
        assert_eq!(Estimator::from_name(e.name()), Some(e));
        assert_eq!(e.to_string(), e.name());
    }
    assert_eq!(Estimator::from_name("mle"), None);
    assert_eq!(Estimator::from_name("Naive"), None);
}

#[test]
fn naive_is_changes_over_time() {
    let v = regular(4, 2.0, &[true, false, true, false]);
    assert_estimate(Estimator::Naive, &v, 2.0 / 8.0, 1e-12);
}

#[test]
fn bias_reduced_formula() {
    let v = regular(4, 2.0, &[true, false, true, false]);
    let want = (4.5f64 / 2.5).ln() / 2.0;
    assert_estimate(Estimator::BiasReduced, &v, want, 1e-12);
    // Every visit changed: finite, ln(2n + 1)/I.
    let all = regular(4, 2.0, &[true; 4]);
    let want = 9f64.ln() / 2.0;
    assert_estimate(Estimator::BiasReduced, &all, want, 1e-12);
}

#[test]
fn irregular_matches_closed_form_for_regular_visits() {
    // Equal intervals t, X of n changed: e^{λt} = n/(n − X).
    let v = regular(4, 2.0, &[true, false, false, false]);
    let want = (4.0f64 / 3.0).ln() / 2.0;
    assert_estimate(Estimator::Irregular, &v, want, 1e-9);
    let v = regular(
        10,
        3600.0,
        &[true, true, true, false, true, true, true, true, true],
    );
    let want = 5f64.ln() / 3600.0; // X = 8 of n = 10
    assert_estimate(Estimator::Irregular, &v, want, 1e-9);
}

#[test]
fn irregular_solves_the_equation() {
    let v = [
        Visit {
            interval: 0.5,
            changed: true,
            since_lastmod: None,
        },
        Visit {
            interval: 3.0,
            changed: true,
            since_lastmod: None,
        },
        Visit {
            interval: 1.0,
            changed: false,
            since_lastmod: None,
        },
        Visit {
            interval: 0.2,
            changed: false,
            since_lastmod: None,
        },
    ];
    let l = Estimator::Irregular.estimate(&v).unwrap();
    let lhs = 0.5 / (0.5 * l).exp_m1() + 3.0 / (3.0 * l).exp_m1();
    assert!(close(lhs, 1.2, 1e-9), "λ̂ = {l}, lhs = {lhs}");
}

#[test]
fn irregular_extremes() {
    let none = regular(5, 10.0, &[]);
    assert_eq!(Estimator::Irregular.estimate(&none), Some(0.0));
    // All changed: the MLE is unbounded; the cap is bias-reduced's value.
    let all = regular(5, 10.0, &[true; 5]);
    let cap = 11f64.ln() / 10.0;
    assert_estimate(Estimator::Irregular, &all, cap, 1e-12);
    assert_eq!(
        Estimator::Irregular.estimate(&all),
        Estimator::BiasReduced.estimate(&all)
    );
    // Tiny unchanged exposure against huge changed intervals: still finite.
    let mut v = regular(3, 1e9, &[true; 3]);
    v.push(Visit {
        interval: 1e-6,
        changed: false,
        since_lastmod: None,
    });
    // Finite and not the cap: the root of 3·1e9/(e^{1e9·λ} − 1) = exposure,
    // the unchanged time as the f64 sums leave it (3e9 + 1e-6 rounds to a
    // multiple of 2^-21, ≈ 9.5e-7).
    let exposure = (3e9f64 + 1e-6) - 3e9;
    let l = Estimator::Irregular.estimate(&v).unwrap();
    let lhs = 3.0 * 1e9 / (1e9 * l).exp_m1();
    assert!(close(lhs, exposure, 1e-6), "λ̂ = {l}, lhs = {lhs}");
}

#[test]
fn last_modified_closed_form() {
    let v = [
        Visit {
            interval: 10.0,
            changed: false,
            since_lastmod: None,
        },
        Visit {
            interval: 20.0,
            changed: false,
            since_lastmod: None,
        },
        Visit {
            interval: 10.0,
            changed: true,
            since_lastmod: Some(3.0),
        },
        Visit {
            interval: 10.0,
            changed: true,
            since_lastmod: Some(5.0),
        },
    ];
    let want = 2.0 / (30.0 + 8.0);
    assert_estimate(Estimator::LastModified, &v, want, 1e-12);
    // τ beyond the interval is clamped to it, negative τ to 0.
    let v = [
        Visit {
            interval: 10.0,
            changed: false,
            since_lastmod: None,
        },
        Visit {
            interval: 10.0,
            changed: true,
            since_lastmod: Some(1e9),
        },
        Visit {
            interval: 10.0,
            changed: true,
            since_lastmod: Some(-4.0),
        },
    ];
    assert_estimate(Estimator::LastModified, &v, 2.0 / 20.0, 1e-12);
}

#[test]
fn last_modified_without_lastmods_is_irregular() {
    let v = regular(6, 5.0, &[true, false, true, false, false, false]);
    let a = Estimator::LastModified.estimate(&v).unwrap();
    let b = Estimator::Irregular.estimate(&v).unwrap();
    assert!(close(a, b, 1e-9), "{a} vs {b}");
    // Mixed: one changed visit with τ = 1, one censored (t = 5); exposure
    // 20 s unchanged + τ. The MLE solves 1/λ + 5/(e^{5λ} − 1) = 21.
    let mut m = v.clone();
    m[0].since_lastmod = Some(1.0);
    let c = Estimator::LastModified.estimate(&m).unwrap();
    let lhs = 1.0 / c + 5.0 / (5.0 * c).exp_m1();
    assert!(close(lhs, 21.0, 1e-9), "λ̂ = {c}, lhs = {lhs}");
}

#[test]
fn last_modified_unbounded_uses_the_cap() {
    // Every visit changed, each change at the very instant of the visit.
    let v: Vec<Visit> = (0..4)
        .map(|_| Visit {
            interval: 2.0,
            changed: true,
            since_lastmod: Some(0.0),
        })
        .collect();
    let cap = 9f64.ln() / 2.0;
    assert_estimate(Estimator::LastModified, &v, cap, 1e-12);
}

#[test]
fn subnormal_lastmod_distance_is_capped_not_infinite() {
    let v = [
        Visit {
            interval: 1.0,
            changed: true,
            since_lastmod: Some(5e-324),
        },
        Visit {
            interval: 1.0,
            changed: true,
            since_lastmod: Some(0.0),
        },
    ];
    let cap = 5f64.ln() / 1.0;
    assert_estimate(Estimator::LastModified, &v, cap, 1e-12);
}

#[test]
fn unchanged_rate_is_half_a_change_over_the_span() {
    let quiet = regular(4, 86_400.0, &[false, false, false, false]);
    assert_eq!(unchanged_rate(&quiet), Some(0.5 / (4.0 * 86_400.0)));
    // Only when nothing changed, and only with usable visits.
    assert_eq!(unchanged_rate(&regular(2, 10.0, &[false, true])), None);
    assert_eq!(unchanged_rate(&[]), None);
    let unusable = [Visit {
        interval: f64::NAN,
        changed: false,
        since_lastmod: None,
    }];
    assert_eq!(unchanged_rate(&unusable), None);
    // Every estimator but complete says 0 there.
    for e in Estimator::ALL {
        let r = e.estimate(&quiet).unwrap();
        assert_eq!(r == 0.0, e != Estimator::Complete, "{e}");
    }
}

#[test]
fn complete_formula() {
    assert!(close(complete(3, 10.0), 3.5 / 10.5, 1e-15));
    assert!(close(complete(0, 0.0), 1.0, 1e-15));
    assert!(close(complete(0, -5.0), 1.0, 1e-15));
    assert!(close(complete(0, f64::NAN), 1.0, 1e-15));
    assert_eq!(complete(7, f64::INFINITY), 0.0);
    let v = regular(4, 2.5, &[true, false, true, true]);
    assert_estimate(Estimator::Complete, &v, 3.5 / 10.5, 1e-12);
}

#[test]
fn no_evidence_is_none() {
    let junk = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -1.0,
        -0.0,
        1e300,
        5e-324,
        1e-12,
    ];
    let visits: Vec<Visit> = junk
        .iter()
        .map(|&interval| Visit {
            interval,
            changed: true,
            since_lastmod: Some(1.0),
        })
        .collect();
    for e in Estimator::ALL {
        assert_eq!(e.estimate(&[]), None, "{e}");
        assert_eq!(e.estimate(&visits), None, "{e}");
    }
}

#[test]
fn unusable_visits_are_skipped() {
    let clean = regular(4, 2.0, &[true, false, true, false]);
    let mut dirty = clean.clone();
    for interval in [f64::NAN, -3.0, 0.0, f64::INFINITY] {
        dirty.insert(
            1,
            Visit {
                interval,
                changed: true,
                since_lastmod: Some(f64::NAN),
            },
        );
    }
    for e in Estimator::ALL {
        assert_eq!(e.estimate(&clean), e.estimate(&dirty), "{e}");
    }
}

#[test]
fn huge_counts_stay_finite() {
    let n = 200_000;
    let all = regular(n, 1.0, &vec![true; n]);
    let half: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
    let half = regular(n, 1.0, &half);
    for e in Estimator::ALL {
        for v in [&all, &half] {
            let l = e.estimate(v).unwrap();
            assert!(l.is_finite() && l > 0.0, "{e}: {l}");
        }
    }
    let l = Estimator::Irregular.estimate(&half).unwrap();
    assert!(close(l, 2f64.ln(), 1e-9));
}

// ---- Monte-Carlo (the sanity values of docs/scheduling.md#change-rate-estimators:
// λ = 1, n = 20, I = 1) ----
//
// Tolerances: with R runs the standard error of a mean is σ/√R. For n = 20
// and p = 1 − e^{−1}, σ(naive) ≈ √(p(1 − p)/20) ≈ 0.108 and σ(bias-reduced)
// ≈ σ(naive)/(1 − p) ≈ 0.29. R = 4000 gives SE ≈ 0.0017 and 0.0046; the
// exact expectations (binomial sums: 0.6321, 1.0008, MLE 1.0488) must lie
// within 4.5 SE of the simulated means, and the means within 0.02 of the
// rounded values docs/scheduling.md quotes.

const RUNS: usize = 4000;

fn sanity_page(rng: &mut Rng) -> Vec<Visit> {
    simulate(rng, 1.0, 20, |_| 1.0)
}

/// E[f(X)] for X ~ Binomial(20, 1 − e^{−1}).
fn binomial_expectation(f: impl Fn(f64) -> f64) -> f64 {
    let n = 20u32;
    let p = 1.0 - (-1.0f64).exp();
    let mut c = 1.0f64; // C(n, x)
    let mut e = 0.0;
    for x in 0..=n {
        if x > 0 {
            c = c * f64::from(n - x + 1) / f64::from(x);
        }
        e += c * p.powi(x as i32) * (1.0 - p).powi((n - x) as i32) * f(f64::from(x));
    }
    e
}

#[test]
fn monte_carlo_naive_is_biased_low() {
    let (mean, se) = monte_carlo(1, RUNS, Estimator::Naive, sanity_page);
    let exact = binomial_expectation(|x| x / 20.0);
    assert!((mean - exact).abs() < 4.5 * se, "{mean} ± {se} vs {exact}");
    assert!((mean - 0.63).abs() < 0.02, "{mean}");
}

#[test]
fn monte_carlo_bias_reduced_is_unbiased() {
    let (mean, se) = monte_carlo(2, RUNS, Estimator::BiasReduced, sanity_page);
    let exact = binomial_expectation(|x| (20.5 / (20.0 - x + 0.5)).ln());
    assert!((exact - 1.0).abs() < 0.002, "{exact}");
    assert!((mean - exact).abs() < 4.5 * se, "{mean} ± {se} vs {exact}");
    assert!((mean - 1.00).abs() < 0.02, "{mean}");
}

#[test]
fn monte_carlo_mle_on_regular_visits() {
    // The irregular MLE on regular visits: 1.05 in docs/scheduling.md.
    let (mean, se) = monte_carlo(3, RUNS, Estimator::Irregular, sanity_page);
    let cap = 41f64.ln();
    let exact = binomial_expectation(|x| {
        if x < 20.0 {
            -(1.0 - x / 20.0).ln()
        } else {
            cap
        }
    });
    assert!((mean - exact).abs() < 4.5 * se, "{mean} ± {se} vs {exact}");
    assert!((mean - 1.05).abs() < 0.02, "{mean}");
}

/// Pooled over `runs` pages of `n` visits with exponential gaps (mean 1/f),
/// the mean estimate is within `tol` (relative) of λ.
fn recovers(est: Estimator, seed: u64, lambda: f64, f: f64, n: usize, tol: f64) {
    let (mean, se) = monte_carlo(seed, 200, est, |rng| simulate(rng, lambda, n, |r| r.exp(f)));
    assert!(
        (mean - lambda).abs() < tol * lambda,
        "{est} λ={lambda} f={f}: {mean} ± {se}"
    );
}

#[test]
fn monte_carlo_irregular_recovers_lambda() {
    // 200 pages × 200 visits: per-page SE ≈ 10%, pooled ≈ 0.7%; small-sample
    // MLE bias is O(1/n). 5% tolerance.
    recovers(Estimator::Irregular, 4, 1.0, 1.0, 200, 0.05);
    recovers(Estimator::Irregular, 5, 0.2, 1.0, 200, 0.05);
    recovers(Estimator::Irregular, 6, 3.0, 1.0, 200, 0.05);
    // The regular-interval estimators are wrong on irregular visits at high r:
    // irregular must beat naive there.
    let mut rng = Rng(7);
    let v = simulate(&mut rng, 3.0, 2000, |r| r.exp(1.0));
    let irr = Estimator::Irregular.estimate(&v).unwrap();
    let naive = Estimator::Naive.estimate(&v).unwrap();
    assert!((irr - 3.0).abs() < (naive - 3.0).abs(), "{irr} vs {naive}");
}

#[test]
fn monte_carlo_last_modified_recovers_lambda() {
    // Knowing the lastmod removes the censoring: unbiased up to O(1/X).
    recovers(Estimator::LastModified, 8, 1.0, 1.0, 200, 0.03);
    recovers(Estimator::LastModified, 9, 5.0, 1.0, 200, 0.03);
}

#[test]
fn monte_carlo_complete_recovers_lambda() {
    // Polled 100× faster than it changes, every change is (nearly) seen:
    // 20 pages × 10 000 visits ≈ 2000 changes, SE ≈ 2.2%.
    let (mean, se) = monte_carlo(10, 20, Estimator::Complete, |rng| {
        simulate(rng, 1.0, 10_000, |_| 0.01)
    });
    assert!((mean - 1.0).abs() < 0.05, "{mean} ± {se}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn estimates_are_none_or_finite(
        visits in proptest::collection::vec(
            (
                prop_oneof![
                    any::<f64>(),
                    0.0f64..1e7,
                    Just(f64::NAN),
                    Just(f64::INFINITY),
                    Just(0.0),
                    Just(f64::MIN_POSITIVE),
                ],
                any::<bool>(),
                proptest::option::of(prop_oneof![any::<f64>(), 0.0f64..1e7]),
            ),
            0..40,
        )
    ) {
        let visits: Vec<Visit> = visits
            .into_iter()
            .map(|(interval, changed, since_lastmod)| Visit { interval, changed, since_lastmod })
            .collect();
        for e in Estimator::ALL {
            if let Some(l) = e.estimate(&visits) {
                prop_assert!(l.is_finite() && l >= 0.0, "{} gave {}", e, l);
            }
        }
    }
}
