//! `simulate`: the research simulator's experiment, every policy on every
//! seed, as the `sitemapd simulate` command runs it, into Arrow tables.

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pythonize::depythonize;
use sitemapd_sim::{self as sim, RunReport, Scenario, SimConfig, SimPolicy};

use crate::errors::SitemapdError;
use crate::table::Table;

/// An experiment's three tables.
#[pyclass(frozen, get_all, module = "sitemapd._native")]
pub(crate) struct Simulation {
    /// Each figure of each policy over the seeds: policy, metric, mean,
    /// ci95, sd, min, max, seeds (the CLI's summary.csv).
    summary: Py<Table>,
    /// Every run's time series: policy, seed, day, pages, freshness, …
    /// (the CLI's metrics.csv).
    series: Py<Table>,
    /// Each estimator's bias and error per run: policy, seed, estimator,
    /// pages, mean_visits, bias_per_day, relative_bias, mse.
    estimators: Py<Table>,
}

#[pymethods]
impl Simulation {
    fn __repr__(&self) -> String {
        format!(
            "<sitemapd.Simulation {} summary rows, {} series rows>",
            self.summary.get().num_rows(),
            self.series.get().num_rows()
        )
    }
}

fn schema(fields: &[(&str, DataType, bool)]) -> SchemaRef {
    Arc::new(Schema::new(
        fields
            .iter()
            .map(|(name, t, nullable)| Field::new(*name, t.clone(), *nullable))
            .collect::<Vec<_>>(),
    ))
}

fn table(fields: &[(&str, DataType, bool)], columns: Vec<ArrayRef>) -> PyResult<Table> {
    let schema = schema(fields);
    let batch = RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| SitemapdError::new_err(e.to_string()))?;
    Ok(Table::new(schema, vec![batch]))
}

fn summary_table(stats: &[sim::Stat]) -> PyResult<Table> {
    let (mut policy, mut metric) = (StringBuilder::new(), StringBuilder::new());
    let [mut mean, mut ci95, mut sd, mut min, mut max] =
        std::array::from_fn(|_| Float64Builder::new());
    let mut seeds = UInt64Builder::new();
    for s in stats {
        policy.append_value(&s.policy);
        metric.append_value(&s.metric);
        mean.append_value(s.mean);
        ci95.append_option(s.ci95);
        sd.append_option(s.sd);
        min.append_value(s.min);
        max.append_value(s.max);
        seeds.append_value(s.seeds as u64);
    }
    use DataType::{Float64, UInt64, Utf8};
    table(
        &[
            ("policy", Utf8, false),
            ("metric", Utf8, false),
            ("mean", Float64, false),
            ("ci95", Float64, true),
            ("sd", Float64, true),
            ("min", Float64, false),
            ("max", Float64, false),
            ("seeds", UInt64, false),
        ],
        vec![
            Arc::new(policy.finish()),
            Arc::new(metric.finish()),
            Arc::new(mean.finish()),
            Arc::new(ci95.finish()),
            Arc::new(sd.finish()),
            Arc::new(min.finish()),
            Arc::new(max.finish()),
            Arc::new(seeds.finish()),
        ],
    )
}

fn series_table(reports: &[RunReport]) -> PyResult<Table> {
    let mut policy = StringBuilder::new();
    let [
        mut seed,
        mut pages,
        mut fetches,
        mut wasted,
        mut changes,
        mut caught,
        mut discovered,
        mut host_max,
    ] = std::array::from_fn(|_| UInt64Builder::new());
    let [
        mut day,
        mut freshness,
        mut weighted,
        mut age,
        mut harmonic,
        mut latency,
    ] = std::array::from_fn(|_| Float64Builder::new());
    for r in reports {
        for row in &r.series {
            policy.append_value(&r.policy);
            seed.append_value(r.seed);
            day.append_value(row.day);
            pages.append_value(row.pages);
            freshness.append_value(row.freshness);
            weighted.append_value(row.freshness_weighted);
            age.append_value(row.age_days);
            harmonic.append_value(row.harmonic_staleness);
            fetches.append_value(row.fetches);
            wasted.append_value(row.wasted);
            changes.append_value(row.changes);
            caught.append_value(row.caught);
            discovered.append_value(row.discovered);
            latency.append_option(row.discovery_latency_days);
            host_max.append_value(row.host_max_fetches);
        }
    }
    use DataType::{Float64, UInt64, Utf8};
    table(
        &[
            ("policy", Utf8, false),
            ("seed", UInt64, false),
            ("day", Float64, false),
            ("pages", UInt64, false),
            ("freshness", Float64, false),
            ("freshness_weighted", Float64, false),
            ("age_days", Float64, false),
            ("harmonic_staleness", Float64, false),
            ("fetches", UInt64, false),
            ("wasted", UInt64, false),
            ("changes", UInt64, false),
            ("caught", UInt64, false),
            ("discovered", UInt64, false),
            ("discovery_latency_days", Float64, true),
            ("host_max_fetches", UInt64, false),
        ],
        vec![
            Arc::new(policy.finish()),
            Arc::new(seed.finish()),
            Arc::new(day.finish()),
            Arc::new(pages.finish()),
            Arc::new(freshness.finish()),
            Arc::new(weighted.finish()),
            Arc::new(age.finish()),
            Arc::new(harmonic.finish()),
            Arc::new(fetches.finish()),
            Arc::new(wasted.finish()),
            Arc::new(changes.finish()),
            Arc::new(caught.finish()),
            Arc::new(discovered.finish()),
            Arc::new(latency.finish()),
            Arc::new(host_max.finish()),
        ],
    )
}

fn estimator_table(reports: &[RunReport]) -> PyResult<Table> {
    let (mut policy, mut estimator) = (StringBuilder::new(), StringBuilder::new());
    let (mut seed, mut pages) = (UInt64Builder::new(), UInt64Builder::new());
    let [mut visits, mut bias, mut relative, mut mse] =
        std::array::from_fn(|_| Float64Builder::new());
    for r in reports {
        for e in &r.summary.estimators {
            policy.append_value(&r.policy);
            seed.append_value(r.seed);
            estimator.append_value(e.estimator);
            pages.append_value(e.pages);
            visits.append_value(e.mean_visits);
            bias.append_value(e.bias_per_day);
            relative.append_value(e.relative_bias);
            mse.append_value(e.mse);
        }
    }
    use DataType::{Float64, UInt64, Utf8};
    table(
        &[
            ("policy", Utf8, false),
            ("seed", UInt64, false),
            ("estimator", Utf8, false),
            ("pages", UInt64, false),
            ("mean_visits", Float64, false),
            ("bias_per_day", Float64, false),
            ("relative_bias", Float64, false),
            ("mse", Float64, false),
        ],
        vec![
            Arc::new(policy.finish()),
            Arc::new(seed.finish()),
            Arc::new(estimator.finish()),
            Arc::new(pages.finish()),
            Arc::new(visits.finish()),
            Arc::new(bias.finish()),
            Arc::new(relative.finish()),
            Arc::new(mse.finish()),
        ],
    )
}

/// Runs every policy in `policies` on the world of every seed in `seeds`
/// (stores in memory, `jobs` runs at once: default one per core). `config`
/// is a dict of the simulation settings, the keys of `sitemapd simulate`'s
/// TOML (`days`, `world`, `sitemap`, `crawl`…); `scenario` (`truthful`,
/// `liar`, `mixed`…) sets what the sitemaps say, as `--scenario` does.
#[pyfunction]
#[pyo3(signature = (config = None, *, policies = None, seeds = None, scenario = None, jobs = None))]
pub(crate) fn simulate(
    py: Python<'_>,
    config: Option<&Bound<'_, PyAny>>,
    policies: Option<Vec<String>>,
    seeds: Option<Vec<u64>>,
    scenario: Option<&Bound<'_, PyAny>>,
    jobs: Option<usize>,
) -> PyResult<Simulation> {
    let mut cfg: SimConfig = match config {
        Some(c) => depythonize(c).map_err(|e| PyValueError::new_err(format!("config: {e}")))?,
        None => SimConfig::default(),
    };
    if let Some(s) = scenario {
        let scenario: Scenario =
            depythonize(s).map_err(|e| PyValueError::new_err(format!("scenario: {e}")))?;
        scenario.apply(&mut cfg);
    }
    cfg.validate()
        .map_err(|e| PyValueError::new_err(format!("config: {e}")))?;
    let policies = match policies {
        Some(names) => names,
        None => SimPolicy::all()
            .iter()
            .map(|p| p.name().to_owned())
            .collect(),
    };
    if policies.is_empty() {
        return Err(PyValueError::new_err("no policy to simulate"));
    }
    for p in &policies {
        if SimPolicy::from_name(p).is_none() {
            return Err(PyValueError::new_err(format!("unknown policy {p:?}")));
        }
    }
    let seeds = seeds.unwrap_or_else(|| vec![1, 2, 3]);
    if seeds.is_empty() {
        return Err(PyValueError::new_err("no seed to simulate"));
    }
    let runs: Vec<(String, u64)> = policies
        .iter()
        .flat_map(|p| seeds.iter().map(move |s| (p.clone(), *s)))
        .collect();
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let results = py.detach(|| {
        sim::run_each(&runs, jobs, |policy, seed| {
            sim::run_in_memory(&cfg, policy, seed, &mut |_| {})
        })
    });
    let reports = results
        .into_iter()
        .zip(&runs)
        .map(|(r, (policy, seed))| {
            r.map_err(|e| SitemapdError::new_err(format!("{policy}, seed {seed}: {e}")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let stats = sim::summarise(&policies, &reports);
    Ok(Simulation {
        summary: Py::new(py, summary_table(&stats)?)?,
        series: Py::new(py, series_table(&reports)?)?,
        estimators: Py::new(py, estimator_table(&reports)?)?,
    })
}
