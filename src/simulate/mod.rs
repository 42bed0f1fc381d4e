//! `sitemapd simulate`: runs the research simulator
//! ([`sitemapd_sim`]) for every (policy, seed) pair, a few at a
//! time, and writes metrics.csv, summary.csv and chart.svg.

mod chart;
mod output;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use sitemapd_sim::{self as sim, RunReport, SimConfig};

use crate::cli::SimulateArgs;

/// The experiment: the simulation settings and the runs to make of them.
#[derive(Debug, Clone)]
pub(crate) struct Experiment {
    /// The simulation settings.
    pub sim: SimConfig,
    /// Policies, in the order the outputs list them.
    pub policies: Vec<String>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Runs at once.
    pub jobs: usize,
}

impl Experiment {
    /// The experiment the (layered and validated) settings describe.
    pub(crate) fn from_args(args: &SimulateArgs) -> Result<Experiment> {
        let s = &args.settings;
        let sim = s.sim();
        let policies: Vec<String> = s.policies.iter().map(|p| p.name().to_string()).collect();
        let seeds = (0..s.seeds).map(|i| s.first_seed.wrapping_add(i)).collect();
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        let jobs = s.jobs.unwrap_or(available).max(1);
        Ok(Experiment {
            sim,
            policies,
            seeds,
            jobs,
        })
    }

    /// (policy, seed) pairs, policy-major.
    fn runs(&self) -> Vec<(String, u64)> {
        self.policies
            .iter()
            .flat_map(|p| self.seeds.iter().map(move |s| (p.clone(), *s)))
            .collect()
    }
}

/// Where the throwaway stores go: `--work-dir`, else /dev/shm when it is
/// there (a tmpfs: the stores never touch the disk), else the system's
/// temporary directory.
fn work_dir(args: &SimulateArgs) -> PathBuf {
    if let Some(dir) = &args.work_dir {
        return dir.clone();
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Runs `simulate`.
pub(crate) fn run(args: &SimulateArgs) -> Result<ExitCode> {
    let experiment = Experiment::from_args(args)?;
    let runs = experiment.runs();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    // With --on-disk, where the stores go.
    let work = if args.on_disk {
        let work = work_dir(args);
        std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
        Some(work)
    } else {
        None
    };
    let days = experiment.sim.days.ceil().max(1.0) as u64;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(days * runs.len() as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} simulated days, {elapsed} elapsed, ~{eta} left  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    });
    eprintln!(
        "simulate: {} runs ({} policies x {} seeds), {} pages on {} hosts, {} days, {} at a time -> {}",
        runs.len(),
        experiment.policies.len(),
        experiment.seeds.len(),
        experiment.sim.world.pages,
        experiment.sim.world.hosts,
        experiment.sim.days,
        experiment.jobs.min(runs.len()),
        args.out.display()
    );
    let started = Instant::now();
    let results = sim::run_each(&runs, experiment.jobs, |policy, seed| {
        let result = one_run(
            &experiment.sim,
            policy,
            seed,
            work.as_deref(),
            bar.as_ref(),
            days,
        );
        let line = match &result {
            Ok(r) => format!(
                "{policy} seed {seed}: freshness {:.4}, {} fetches in {:.1} s",
                r.summary.freshness, r.summary.fetches_total, r.summary.wall_seconds
            ),
            Err(e) => format!("{policy} seed {seed}: failed: {e:#}"),
        };
        match &bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
        result
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut reports = Vec::with_capacity(results.len());
    for (result, (policy, seed)) in results.into_iter().zip(&runs) {
        reports.push(result.with_context(|| format!("{policy}, seed {seed}"))?);
    }
    let out = &args.out;
    output::write_metrics(&out.join("metrics.csv"), &reports)?;
    let summary = sim::summarise(&experiment.policies, &reports);
    output::write_summary(&out.join("summary.csv"), &summary)?;
    chart::freshness_chart(&out.join("chart.svg"), &experiment, &reports)?;
    let fetches: u64 = reports.iter().map(|r| r.summary.fetches_total).sum();
    let wall = started.elapsed().as_secs_f64();
    eprintln!(
        "simulate: {} runs, {fetches} simulated fetches in {wall:.1} s ({:.0} fetches/s); wrote metrics.csv, summary.csv, chart.svg to {}",
        reports.len(),
        fetches as f64 / wall.max(1e-9),
        out.display()
    );
    for line in output::headline(&summary) {
        eprintln!("  {line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// One run in a fresh store, in memory or (`work`) on disk under `work`,
/// reporting whole simulated days to the bar.
fn one_run(
    cfg: &SimConfig,
    policy: &str,
    seed: u64,
    work: Option<&Path>,
    bar: Option<&ProgressBar>,
    days: u64,
) -> Result<RunReport> {
    let mut reported = 0u64;
    let mut progress = |share: f64| {
        let done = ((share * days as f64).floor() as u64).min(days);
        if let Some(b) = bar {
            b.inc(done.saturating_sub(reported));
        }
        reported = reported.max(done);
    };
    let report = match work {
        Some(work) => {
            let dir = tempfile::Builder::new()
                .prefix("sitemapd-sim-")
                .tempdir_in(work)
                .with_context(|| format!("a store directory in {}", work.display()))?;
            sim::run(cfg, policy, seed, dir.path(), &mut progress)
        }
        None => sim::run_in_memory(cfg, policy, seed, &mut progress),
    }
    .with_context(|| format!("simulating {policy} with seed {seed}"))?;
    if let Some(b) = bar {
        b.inc(days.saturating_sub(reported));
    }
    Ok(report)
}
