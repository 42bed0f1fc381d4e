//! The simulator's speed: simulated fetches per second (each one a real
//! `lease` share and `complete` on the store: in memory as `sitemapd
//! simulate` runs it, or on sled with `--on-disk`), sitemap entries ingested
//! per second, and wall time per run, one policy after another on one
//! thread, with the simulator's default settings unless flags say
//! otherwise. Prints figures (and each run's headline metrics); asserts
//! nothing. `--lastmod none` leaves the sitemaps unchanged after their
//! first read (304s), which measures the queue alone.
//!
//! `cargo bench -p sitemapd-sim --bench simulate [-- --pages N --hosts H
//! --days D --budget B --host-budget B --policies a,b --seed S
//! --lastmod day|second|none --liar --recall R --delay-hours H
//! --process poisson|periodic|bursty --min-refresh-hours H --urls-per-sitemap N
//! --on-disk]`

use std::time::Instant;

// Like the binary: sled allocates a node copy per write.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use sitemapd_sim::{self as sim, LastmodPrecision, Process, SimConfig};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn num<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    arg(args, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return; // cargo test --benches asks for a list; nothing to do
    }
    let mut cfg = SimConfig::default();
    cfg.world.pages = num(&args, "--pages", 10_000);
    cfg.world.hosts = num(&args, "--hosts", 100);
    cfg.days = num(&args, "--days", 30.0);
    cfg.crawl.budget = num(&args, "--budget", f64::from(cfg.world.pages) / 2.0);
    cfg.crawl.host_budget = arg(&args, "--host-budget").and_then(|v| v.parse().ok());
    cfg.sitemap.recall = num(&args, "--recall", 1.0);
    cfg.sitemap.delay_hours = num(&args, "--delay-hours", 0.0);
    cfg.sitemap.liar = args.iter().any(|a| a == "--liar");
    cfg.sitemap.min_refresh_hours =
        num(&args, "--min-refresh-hours", cfg.sitemap.min_refresh_hours);
    cfg.sitemap.urls_per_sitemap = num(&args, "--urls-per-sitemap", cfg.sitemap.urls_per_sitemap);
    cfg.sitemap.lastmod = match arg(&args, "--lastmod").as_deref() {
        Some("day") => LastmodPrecision::Day,
        Some("none") => LastmodPrecision::None,
        _ => LastmodPrecision::Second,
    };
    cfg.world.process = match arg(&args, "--process").as_deref() {
        Some("periodic") => Process::Periodic,
        Some("bursty") => Process::Bursty,
        _ => Process::Poisson,
    };
    if let Some(e) = arg(&args, "--estimator") {
        cfg.crawl.estimator = sitemapd_scheduler::estimate::Estimator::from_name(&e)
            .unwrap_or_else(|| panic!("--estimator {e:?}: unknown"));
    }
    let seed: u64 = num(&args, "--seed", 1);
    let on_disk = args.iter().any(|a| a == "--on-disk");
    let policies = arg(&args, "--policies").unwrap_or_else(|| "adaptive,lastmod".into());
    println!(
        "simulate: {} pages, {} hosts, {} days, budget {}/day, lastmod {:?}{}, seed {seed}, store {}",
        cfg.world.pages,
        cfg.world.hosts,
        cfg.days,
        cfg.crawl.budget,
        cfg.sitemap.lastmod,
        if cfg.sitemap.liar { " (liar)" } else { "" },
        if on_disk { "sled on disk" } else { "in memory" }
    );
    let (mut fetches, mut entries, mut seconds) = (0u64, 0u64, 0.0f64);
    for policy in policies.split(',') {
        let started = Instant::now();
        let result = if on_disk {
            // The store is thrown away: keep it where there is a tmpfs.
            let shm = std::path::Path::new("/dev/shm");
            let dir = if shm.is_dir() {
                tempfile::tempdir_in(shm)
            } else {
                tempfile::tempdir()
            }
            .expect("a temporary directory");
            sim::run(&cfg, policy, seed, dir.path(), &mut |_| {})
        } else {
            sim::run_in_memory(&cfg, policy, seed, &mut |_| {})
        };
        let report = match result {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{policy}: {e}");
                std::process::exit(1);
            }
        };
        let wall = started.elapsed().as_secs_f64();
        let s = &report.summary;
        let br = s
            .estimators
            .iter()
            .find(|e| e.estimator == cfg.crawl.estimator.name())
            .map_or(f64::NAN, |e| e.relative_bias);
        println!(
            "  {policy:<18} {wall:>7.1} s  {:>9} fetches ({:>7.0}/s)  {:>10} entries ingested  F {:.4} ({:.3}/fetch)  Fw {:.4}  age {:.3} d  H {:.3}  waste {:.3}  recall {:.3}  trusted {:.2}  est. bias {:+.3}",
            s.fetches_total,
            s.fetches_total as f64 / wall,
            s.ingested_entries,
            s.freshness,
            s.freshness_per_fetch,
            s.freshness_weighted,
            s.age_days,
            s.harmonic_staleness,
            s.wasted_share,
            s.change_recall,
            s.trusted_hosts,
            br,
        );
        fetches += s.fetches_total;
        entries += s.ingested_entries;
        seconds += wall;
    }
    println!(
        "total: {fetches} fetches and {entries} sitemap entries in {seconds:.1} s: {:.0} simulated fetches/s ({:.0} entries/s)",
        fetches as f64 / seconds,
        entries as f64 / seconds
    );
}
