//! `sitemapd stats`: the store's counts, per host, and its consistency
//! check.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::cli::StatsArgs;
use crate::settings::StoreUse;

/// Runs `stats`.
pub fn run(args: &StatsArgs) -> Result<ExitCode> {
    let store = args.store.open_existing(StoreUse::Stats)?;
    let now = sitemapd_scheduler::Timestamp::now();
    if args.repair {
        store.repair()?;
    }
    // The kept counts answer at once; --check reads every record, recounts
    // and checks them.
    let (stats, check) = if args.check {
        (store.full_stats(now)?, Some(store.check()?))
    } else {
        (store.stats(now)?, None)
    };
    let mut out = io::stdout().lock();
    if args.json {
        #[derive(Serialize)]
        struct Both<'a> {
            policy: &'a str,
            #[serde(flatten)]
            stats: &'a sitemapd_scheduler::Stats,
            #[serde(skip_serializing_if = "Option::is_none")]
            check: Option<&'a sitemapd_scheduler::CheckReport>,
        }
        serde_json::to_writer_pretty(
            &mut out,
            &Both {
                policy: store.policy().name(),
                stats: &stats,
                check: check.as_ref(),
            },
        )?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "store: {} ({} bytes on disk), policy {}",
            args.store.store.display(),
            stats.disk_bytes,
            store.policy().name()
        )?;
        writeln!(
            out,
            "urls: {} active ({}{} due now, {} leased, {} never fetched, {} with lastmod), {} retired; {} sitemaps",
            stats.active,
            stats.due_now,
            if stats.due_now_capped { "+" } else { "" },
            stats.leased,
            stats.never_fetched,
            stats.with_lastmod,
            stats.retired,
            stats.sitemaps
        )?;
        writeln!(
            out,
            "standing: {} blocked by robots.txt, {} gone, {} moved (probed only); {} sitemaps failing",
            stats.blocked, stats.gone, stats.moved, stats.sitemap_failures
        )?;
        if !stats.last_outcomes.is_empty() {
            let outcomes: Vec<String> = stats
                .last_outcomes
                .iter()
                .map(|(name, n)| format!("{n} {name}"))
                .collect();
            writeln!(out, "last fetch: {}", outcomes.join(", "))?;
        }
        if let Some(next) = stats.next_due {
            let wait = next.unix() - sitemapd_scheduler::Timestamp::now().unix();
            writeln!(
                out,
                "nothing due now; next due {} (in {wait} s)",
                crate::times::rfc3339(next)
            )?;
        }
        if let Some([q1, q2, q3]) = stats.rate_per_day_quartiles {
            writeln!(
                out,
                "estimated changes/day: quartiles {q1:.3} {q2:.3} {q3:.3}"
            )?;
        }
        for (host, h) in &stats.hosts {
            writeln!(
                out,
                "  {host}: {} active, {} retired, {} blocked, lastmod {}",
                h.active,
                h.retired,
                h.blocked,
                if h.lastmod_trusted {
                    "trusted"
                } else {
                    "not trusted"
                }
            )?;
        }
        if let Some(c) = &check {
            writeln!(
                out,
                "check: {} records, {} due entries: {}",
                c.urls,
                c.due_entries,
                if c.is_ok() { "ok" } else { "PROBLEMS" }
            )?;
            for (what, list) in [
                ("corrupt record", &c.corrupt),
                ("due entry without its record", &c.dangling_due),
                ("record without its due entry", &c.missing_due),
                ("due index out of order", &c.misordered),
                ("queue membership wrong", &c.misfiled),
                ("refresh schedule without its sitemap", &c.orphan_refresh),
                ("counts differ", &c.miscounted),
            ] {
                for item in list.iter().take(20) {
                    writeln!(out, "  {what}: {item}")?;
                }
            }
        }
    }
    Ok(match check {
        Some(c) if !c.is_ok() => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}
