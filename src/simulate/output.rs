//! metrics.csv (the time series of every run) and summary.csv (each
//! summary figure per policy: mean and 95% confidence interval over the
//! seeds).

use std::path::Path;

use anyhow::{Context, Result};
use sitemapd_sim::{RunReport, Stat};

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
