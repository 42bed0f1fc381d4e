//! Crawl on change on small seeded worlds: the oracle bounds
//! every policy, truthful lastmods buy near-oracle freshness with little
//! waste, the trust gate costs nothing where lastmods lie or are absent, a
//! host that turns liar is back on its fallback within days, and the
//! crawler spends its budget. The full-size table (10,000 pages, 5 seeds)
//! is a benchmark: docs/BENCHMARKS.md.

use sitemapd_sim::{ORACLE, RunReport, Scenario, SimConfig, run_in_memory};

/// 1,500 pages on 30 hosts, 300 fetches a day: the full-size table's
/// proportions (about as many changes a day as the budget; the first crawl
/// of every page takes five days, left out of the averages).
fn world(scenario: Scenario) -> SimConfig {
    let mut cfg = SimConfig {
        days: 16.0,
        warmup_days: Some(6.0),
        ..SimConfig::default()
    };
    cfg.world.pages = 1_500;
    cfg.world.hosts = 30;
    cfg.crawl.budget = 300.0;
    scenario.apply(&mut cfg);
    cfg
}

fn run(cfg: &SimConfig, policy: &str) -> RunReport {
    run_in_memory(cfg, policy, 1, &mut |_| {}).unwrap()
}

#[test]
fn truthful_lastmods_come_near_the_oracle_with_little_waste() {
    let cfg = world(Scenario::Truthful);
    let (lastmod, adaptive, oracle) = (
        run(&cfg, "lastmod").summary,
        run(&cfg, "adaptive").summary,
        run(&cfg, ORACLE).summary,
    );
    println!(
        "truthful: lastmod F {:.4} wasted {:.3}, adaptive F {:.4}, oracle F {:.4}",
        lastmod.freshness, lastmod.wasted_share, adaptive.freshness, oracle.freshness
    );
    assert!(
        oracle.freshness >= lastmod.freshness,
        "the oracle is a bound"
    );
    assert!(
        oracle.freshness >= adaptive.freshness,
        "the oracle is a bound"
    );
    // 0.9 of the oracle on this small, short world (trust is still being
    // earned in its first days); the full-size table reaches 0.97.
    assert!(
        lastmod.freshness >= 0.9 * oracle.freshness,
        "{} vs oracle {}",
        lastmod.freshness,
        oracle.freshness
    );
    assert!(lastmod.wasted_share <= 0.10, "{}", lastmod.wasted_share);
    assert!(lastmod.freshness > adaptive.freshness + 0.1);
}

#[test]
fn the_trust_gate_costs_nothing_where_lastmods_lie_or_are_absent() {
    for scenario in [Scenario::Liar, Scenario::Silent] {
        let cfg = world(scenario);
        let (lastmod, adaptive) = (run(&cfg, "lastmod").summary, run(&cfg, "adaptive").summary);
        println!(
            "{}: lastmod F {:.4}, adaptive F {:.4}",
            scenario.name(),
            lastmod.freshness,
            adaptive.freshness
        );
        assert!(
            (lastmod.freshness - adaptive.freshness).abs() <= 0.01,
            "{}: {} vs {}",
            scenario.name(),
            lastmod.freshness,
            adaptive.freshness
        );
    }
}

#[test]
fn a_turncoat_is_back_on_the_fallback_within_two_days() {
    let cfg = world(Scenario::Turncoat);
    let (lastmod, adaptive) = (run(&cfg, "lastmod"), run(&cfg, "adaptive"));
    let switch = cfg.days / 3.0;
    let settled = switch + 2.0;
    // Freshness per 6-hour window, averaged from two days after the switch.
    let mean_after = |r: &RunReport| {
        let rows: Vec<f64> = r
            .series
            .iter()
            .filter(|row| row.day >= settled)
            .map(|row| row.freshness)
            .collect();
        rows.iter().sum::<f64>() / rows.len() as f64
    };
    let (l, a) = (mean_after(&lastmod), mean_after(&adaptive));
    println!("turncoat after day {settled}: lastmod F {l:.4}, adaptive F {a:.4}");
    assert!((l - a).abs() <= 0.02, "{l} vs {a}");
}

#[test]
fn the_crawler_spends_its_budget_when_enough_is_due() {
    // Every policy that has more due than it can fetch uses the budget.
    let cfg = world(Scenario::Silent);
    let s = run(&cfg, "adaptive").summary;
    assert!(
        (s.fetches_per_day - cfg.crawl.budget).abs() <= 0.01 * cfg.crawl.budget,
        "{} fetches a day on a budget of {}",
        s.fetches_per_day,
        cfg.crawl.budget
    );
}

#[test]
fn a_mixed_world_is_led_by_lastmod() {
    let cfg = world(Scenario::Mixed);
    let lastmod = run(&cfg, "lastmod").summary.freshness;
    for other in ["adaptive", "fixed", "freshness-optimal"] {
        let f = run(&cfg, other).summary.freshness;
        println!("mixed: lastmod {lastmod:.4}, {other} {f:.4}");
        assert!(lastmod > f, "{other}: {f} vs lastmod {lastmod}");
    }
}

#[test]
fn lastmod_is_never_below_adaptive_on_a_scarce_budget() {
    // Half the budget: fewer fetches a day than changes, and the first
    // crawl of every page takes ten of the sixteen days, so known changes
    // and new pages compete for it. (With new URLs served after known
    // changes, tried by moving them to the refresh class, lastmod fell to
    // 0.446 here against adaptive's 0.532: this test fails on that order.)
    for scenario in [Scenario::Truthful, Scenario::Mixed] {
        let mut cfg = world(scenario);
        cfg.crawl.budget /= 2.0;
        let (lastmod, adaptive) = (run(&cfg, "lastmod").summary, run(&cfg, "adaptive").summary);
        println!(
            "{} at {} a day: lastmod F {:.4}, adaptive F {:.4}",
            scenario.name(),
            cfg.crawl.budget,
            lastmod.freshness,
            adaptive.freshness
        );
        assert!(
            lastmod.freshness >= adaptive.freshness,
            "{}: {} vs {}",
            scenario.name(),
            lastmod.freshness,
            adaptive.freshness
        );
    }
}

#[test]
fn lambda_crawl_crawls_on_change_where_every_change_is_observed() {
    // Kolobov et al.'s crawl on change: on truthful hosts lambda-crawl
    // spends its fetches on announced changes (near lastmod, little
    // waste); with no lastmod it has only its rates.
    let truthful = world(Scenario::Truthful);
    let silent = world(Scenario::Silent);
    let (on_change, lastmod, rates) = (
        run(&truthful, "lambda-crawl").summary,
        run(&truthful, "lastmod").summary,
        run(&silent, "lambda-crawl").summary,
    );
    println!(
        "lambda-crawl: truthful F {:.4} wasted {:.3}, lastmod F {:.4}, silent F {:.4}",
        on_change.freshness, on_change.wasted_share, lastmod.freshness, rates.freshness
    );
    assert!(on_change.freshness > rates.freshness + 0.1);
    assert!(on_change.freshness >= lastmod.freshness - 0.03);
    assert!(on_change.wasted_share <= 0.10, "{}", on_change.wasted_share);
}
