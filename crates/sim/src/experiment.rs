//! An experiment: every (policy, seed) run of one configuration, a few at
//! a time, and its summary, each figure of each policy over the seeds (mean,
//! 95% confidence interval). `sitemapd simulate` and the Python package's
//! `simulate()` both run these, so their tables agree.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::RunReport;
use crate::metrics::Summary;

/// Runs `run` on each of `runs` (policy, seed) with at most `jobs` at once,
/// and returns the results in the order of `runs`.
pub fn run_each<R: Send>(
    runs: &[(String, u64)],
    jobs: usize,
    run: impl Fn(&str, u64) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..runs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, runs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((policy, seed)) = runs.get(i) else {
                        break;
                    };
                    let result = run(policy, *seed);
                    if let Ok(mut slots) = results.lock()
                        && let Some(slot) = slots.get_mut(i)
                    {
                        *slot = Some(result);
                    }
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .into_iter()
        .map(|slot| slot.expect("every run index is taken once and its thread joined"))
        .collect()
}

/// One summary figure of one policy over its seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    /// The policy.
    pub policy: String,
    /// The figure's name (`freshness`, `age_days`, `estimator.naive.mse`…).
    pub metric: String,
    /// Mean over the seeds.
    pub mean: f64,
    /// Half-width of the 95% confidence interval (Student t); None with one seed.
    pub ci95: Option<f64>,
    /// Standard deviation over the seeds (None with one seed).
    pub sd: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Seeds with a value.
    pub seeds: usize,
}

/// The figures of a summary, by name (None: no value in this run).
fn figures(s: &Summary) -> Vec<(String, Option<f64>)> {
    let mut out: Vec<(String, Option<f64>)> = vec![
        ("freshness".into(), Some(s.freshness)),
        ("freshness_weighted".into(), Some(s.freshness_weighted)),
        ("age_days".into(), Some(s.age_days)),
        ("harmonic_staleness".into(), Some(s.harmonic_staleness)),
        ("fetches_per_day".into(), Some(s.fetches_per_day)),
        ("fetches_per_page_day".into(), Some(s.fetches_per_page_day)),
        ("freshness_per_fetch".into(), Some(s.freshness_per_fetch)),
        ("wasted_share".into(), Some(s.wasted_share)),
        ("change_recall".into(), Some(s.change_recall)),
        ("discovery_latency_days".into(), s.discovery_latency_days),
        ("undiscovered".into(), Some(s.undiscovered as f64)),
        ("host_max_per_day".into(), Some(s.host_max_per_day as f64)),
        (
            "host_days_over_cap".into(),
            Some(s.host_days_over_cap as f64),
        ),
        ("trusted_hosts".into(), Some(s.trusted_hosts)),
    ];
    for e in &s.estimators {
        let name = e.estimator;
        out.push((
            format!("estimator.{name}.relative_bias"),
            Some(e.relative_bias),
        ));
        out.push((
            format!("estimator.{name}.bias_per_day"),
            Some(e.bias_per_day),
        ));
        out.push((format!("estimator.{name}.mse"), Some(e.mse)));
    }
    out.extend([
        ("sitemap_reads".into(), Some(s.sitemap_reads as f64)),
        (
            "sitemap_not_modified".into(),
            Some(s.sitemap_not_modified as f64),
        ),
        ("ingested_entries".into(), Some(s.ingested_entries as f64)),
        ("fetches_total".into(), Some(s.fetches_total as f64)),
        ("wall_seconds".into(), Some(s.wall_seconds)),
    ]);
    out
}

/// Student's t quantile 0.975 for `df` degrees of freedom (1.96 past 30).
fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    df.checked_sub(1)
        .and_then(|i| TABLE.get(i))
        .copied()
        .unwrap_or(1.96)
}

/// Mean, CI and spread of `values`.
fn stat(policy: &str, metric: &str, values: &[f64]) -> Stat {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n.max(1) as f64;
    let sd = (n > 1)
        .then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    Stat {
        policy: policy.to_string(),
        metric: metric.to_string(),
        mean,
        ci95: sd.map(|sd| t975(n - 1) * sd / (n as f64).sqrt()),
        sd,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        seeds: n,
    }
}

/// Every figure of every policy, over its seeds, in policy order.
pub fn summarise(policies: &[String], reports: &[RunReport]) -> Vec<Stat> {
    let mut out = Vec::new();
    for policy in policies {
        let runs: Vec<Vec<(String, Option<f64>)>> = reports
            .iter()
            .filter(|r| &r.policy == policy)
            .map(|r| figures(&r.summary))
            .collect();
        let Some(first) = runs.first() else {
            continue;
        };
        for (i, (name, _)) in first.iter().enumerate() {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|f| f.get(i).and_then(|(_, v)| *v))
                .collect();
            if !values.is_empty() {
                out.push(stat(policy, name, &values));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_student_interval() {
        let s = stat("p", "m", &[1.0, 2.0, 3.0]);
        assert_eq!(s.mean, 2.0);
        assert_eq!(s.sd, Some(1.0));
        let ci = s.ci95.unwrap();
        assert!((ci - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max, s.seeds), (1.0, 3.0, 3));
        let one = stat("p", "m", &[5.0]);
        assert_eq!((one.mean, one.ci95, one.sd), (5.0, None, None));
        assert_eq!(t975(100), 1.96);
        assert_eq!(t975(0), 1.96);
    }

    #[test]
    fn runs_come_back_in_order_whatever_the_jobs() {
        let runs: Vec<(String, u64)> = (0..17).map(|i| (format!("p{}", i % 3), i)).collect();
        for jobs in [0, 1, 2, 5, 40] {
            let out = run_each(&runs, jobs, |policy, seed| format!("{policy}/{seed}"));
            let expected: Vec<String> = runs.iter().map(|(p, s)| format!("{p}/{s}")).collect();
            assert_eq!(out, expected);
        }
        assert!(run_each(&[], 4, |_, seed| seed).is_empty());
    }
}
