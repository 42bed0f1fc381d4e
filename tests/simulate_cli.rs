//! `sitemapd simulate` end to end: a small run writes metrics.csv,
//! summary.csv and chart.svg with the documented columns and every policy,
//! the same seed gives the same metrics.csv byte for byte, and bad settings
//! are errors.

mod common;

use std::path::Path;

use common::{run, stderr};

const POLICIES: &str = "uniform,lastmod,freshness-optimal";

fn simulate(out: &Path, extra: &[&str]) -> std::process::Output {
    let out = out.to_str().unwrap();
    let mut args = vec![
        "simulate",
        "--out",
        out,
        "--pages",
        "150",
        "--hosts",
        "5",
        "--days",
        "2",
        "--budget",
        "150",
        "--policies",
        POLICIES,
        "--seeds",
        "2",
        "--sample-hours",
        "4",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

#[test]
fn a_small_run_writes_three_files_and_is_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let o = simulate(&a, &["--jobs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // metrics.csv: every policy and seed, 12 windows of 4 hours each.
    let (header, rows) = read_csv(&a.join("metrics.csv"));
    assert_eq!(
        header,
        [
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
            "host_max_fetches"
        ]
    );
    assert_eq!(rows.len(), 3 * 2 * 12);
    for policy in POLICIES.split(',') {
        for seed in ["1", "2"] {
            let n = rows
                .iter()
                .filter(|r| r[0] == policy && r[1] == seed)
                .count();
            assert_eq!(n, 12, "{policy} {seed}");
        }
    }
    for r in &rows {
        let f: f64 = r[4].parse().unwrap();
        assert!((0.0..=1.0).contains(&f), "{r:?}");
    }
    assert_eq!(rows[11][2], "2", "the last window ends on day 2");
    let fetched: u64 = rows.iter().map(|r| r[8].parse::<u64>().unwrap()).sum();
    assert!(fetched > 0);

    // summary.csv: mean and 95% CI of each figure, per policy.
    let (header, rows) = read_csv(&a.join("summary.csv"));
    assert_eq!(
        header,
        [
            "policy", "metric", "mean", "ci95", "sd", "min", "max", "seeds"
        ]
    );
    for policy in POLICIES.split(',') {
        for metric in [
            "freshness",
            "freshness_weighted",
            "age_days",
            "harmonic_staleness",
            "wasted_share",
            "change_recall",
            "host_max_per_day",
            "estimator.bias-reduced.relative_bias",
            "estimator.naive.mse",
        ] {
            let row = rows
                .iter()
                .find(|r| r[0] == policy && r[1] == metric)
                .unwrap_or_else(|| panic!("{policy} {metric}"));
            assert_eq!(row[7], "2");
            let mean: f64 = row[2].parse().unwrap();
            let ci: f64 = row[3].parse().unwrap();
            assert!(mean.is_finite() && ci >= 0.0, "{row:?}");
        }
    }

    // chart.svg: an SVG with a line per policy run, each named twice (in
    // the legend and at the line's end), and no other policy named.
    let svg = std::fs::read_to_string(a.join("chart.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    let run: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert!(run.len() >= 3, "{run:?}");
    for policy in [
        "fixed",
        "sitemap-hints",
        "lastmod",
        "adaptive",
        "freshness-optimal",
        "lambda-crawl",
        "uniform",
        "proportional",
        "oracle",
    ] {
        let named = svg.lines().filter(|l| l.trim() == policy).count();
        let expected = if run.contains(policy) { 2 } else { 0 };
        assert_eq!(
            named, expected,
            "{policy} named {named} times; run: {run:?}"
        );
    }
    assert_eq!(
        svg.lines()
            .filter(|l| l.trim().starts_with("end of warm-up"))
            .count(),
        1
    );
    assert!(svg.matches("<polyline").count() >= run.len());

    // The same seeds again: the same metrics.csv, byte for byte (runs go
    // in parallel, in whatever order they finish).
    let b = dir.path().join("b");
    let o = simulate(&b, &["--jobs", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ma = std::fs::read(a.join("metrics.csv")).unwrap();
    let mb = std::fs::read(b.join("metrics.csv")).unwrap();
    assert!(ma == mb, "same seeds, different metrics.csv");
    // Another first seed: other numbers.
    let c = dir.path().join("c");
    let o = simulate(&c, &["--first-seed", "7", "--jobs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(ma, std::fs::read(c.join("metrics.csv")).unwrap());
}

#[test]
fn settings_come_from_a_file_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sim.toml");
    std::fs::write(
        &file,
        "policies = [\"fixed\", \"adaptive\"]\nseeds = 1\ndays = 1\nsample_hours = 12\n\
         [world]\npages = 60\nhosts = 3\nnew_pages = 0\n[sitemap]\nlastmod = \"day\"\n[crawl]\nbudget = 60\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = run(&[
        "simulate",
        "--config",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--policies",
        "adaptive",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (_, rows) = read_csv(&out.join("metrics.csv"));
    assert_eq!(
        rows.len(),
        2,
        "one policy (the flag's), one seed, two windows"
    );
    assert!(rows.iter().all(|r| r[0] == "adaptive" && r[3] == "60"));
}

#[test]
fn bad_settings_fail_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    // Out of range: exit 1, naming the setting. Not one of the choices
    // (policies, lastmod are enums): a usage error, exit 2, listing them.
    for (args, code, says) in [
        (
            vec!["--hosts", "2", "--policies", "nope"],
            2,
            "possible values",
        ),
        (vec!["--hosts", "50"], 1, "hosts"),
        (vec!["--hosts", "2", "--recall", "2"], 1, "recall"),
        (vec!["--hosts", "2", "--lastmod", "hour"], 2, "--lastmod"),
        (vec!["--hosts", "2", "--seeds", "0"], 1, "--seeds"),
        (
            vec!["--hosts", "2", "--policies", "uniform,uniform"],
            1,
            "twice",
        ),
    ] {
        let mut all = vec!["simulate", "--out", out, "--days", "1", "--pages", "20"];
        all.extend(args);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(code), "{all:?}");
        assert!(stderr(&o).contains(says), "{all:?}: {}", stderr(&o));
    }
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[world]\npagez = 3\n").unwrap();
    let o = run(&["simulate", "--config", file.to_str().unwrap(), "--out", out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("pagez"), "{}", stderr(&o));
}
