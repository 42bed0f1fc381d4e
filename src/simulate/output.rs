//! metrics.csv (the time series of every run) and summary.csv (each
//! summary figure per policy: mean and 95% confidence interval over the
//! seeds).

use std::path::Path;

use anyhow::{Context, Result};
use sitemapd_sim::{RunReport, Summary};

/// The columns of metrics.csv.
pub(super) const METRICS_COLUMNS: [&str; 15] = [
    "policy",
    "seed",
    "day",
    "pages",
    "freshness",
    "freshness_weighted",
    "age_days",
    "harmonic_staleness",
    "fetches",
    "wasted",
    "changes",
    "caught",
    "discovered",
    "discovery_latency_days",
    "host_max_fetches",
];

/// The columns of summary.csv.
pub(super) const SUMMARY_COLUMNS: [&str; 8] = [
    "policy", "metric", "mean", "ci95", "sd", "min", "max", "seeds",
];

fn csv_writer(path: &Path) -> Result<csv::Writer<std::fs::File>> {
    csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))
}

/// Writes every run's rows, in run order (policy, then seed).
pub(super) fn write_metrics(path: &Path, reports: &[RunReport]) -> Result<()> {
    let mut w = csv_writer(path)?;
    w.write_record(METRICS_COLUMNS)?;
    for r in reports {
        for row in &r.series {
            w.write_record([
                r.policy.clone(),
                r.seed.to_string(),
                row.day.to_string(),
                row.pages.to_string(),
                row.freshness.to_string(),
                row.freshness_weighted.to_string(),
                row.age_days.to_string(),
                row.harmonic_staleness.to_string(),
                row.fetches.to_string(),
                row.wasted.to_string(),
                row.changes.to_string(),
                row.caught.to_string(),
                row.discovered.to_string(),
                row.discovery_latency_days
                    .map_or_else(String::new, |d| d.to_string()),
                row.host_max_fetches.to_string(),
            ])?;
        }
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// One summary figure of one policy over its seeds.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Stat {
    /// The policy.
    pub policy: String,
    /// The figure's name.
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
pub(super) fn summarise(policies: &[String], reports: &[RunReport]) -> Vec<Stat> {
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

/// Writes summary.csv.
pub(super) fn write_summary(path: &Path, stats: &[Stat]) -> Result<()> {
    let mut w = csv_writer(path)?;
    w.write_record(SUMMARY_COLUMNS)?;
    let opt = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    for s in stats {
        w.write_record([
            s.policy.clone(),
            s.metric.clone(),
            s.mean.to_string(),
            opt(s.ci95),
            opt(s.sd),
            s.min.to_string(),
            s.max.to_string(),
            s.seeds.to_string(),
        ])?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// One line per policy for the terminal: freshness, age, waste.
pub(super) fn headline(stats: &[Stat]) -> Vec<String> {
    let get = |policy: &str, metric: &str| {
        stats
            .iter()
            .find(|s| s.policy == policy && s.metric == metric)
    };
    let show = |s: Option<&Stat>, digits: usize| match s {
        Some(s) => match s.ci95 {
            Some(ci) => format!("{:.digits$} ± {ci:.digits$}", s.mean),
            None => format!("{:.digits$}", s.mean),
        },
        None => "-".to_string(),
    };
    let mut policies: Vec<&str> = Vec::new();
    for s in stats {
        if !policies.contains(&s.policy.as_str()) {
            policies.push(&s.policy);
        }
    }
    policies
        .into_iter()
        .map(|p| {
            format!(
                "{p:<18} freshness {}  weighted {}  age {} d  wasted {}",
                show(get(p, "freshness"), 4),
                show(get(p, "freshness_weighted"), 4),
                show(get(p, "age_days"), 3),
                show(get(p, "wasted_share"), 3),
            )
        })
        .collect()
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
}
