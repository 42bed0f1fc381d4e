//! `sitemapd stats`: the store's counts, per host, and its consistency
//! check (of every URLFrontier crawl in it too).

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::cli::StatsArgs;
use crate::output::words;
use crate::settings::StoreUse;

/// Runs `stats`.
pub(crate) fn run(args: &StatsArgs) -> Result<ExitCode> {
    let store = args.store.open_existing(StoreUse::Stats)?;
    let now = sitemapd_scheduler::Timestamp::now();
    if args.repair {
        store.repair()?;
    }
    let compacted = if args.compact { store.compact()? } else { None };
    if let Some(done) = compacted {
        eprintln!(
            "compacted: {} → {} on disk ({} records moved into their pages; writes waited {} ms)",
            words::bytes(done.bytes_before),
            words::bytes(done.bytes_after),
            done.records_folded,
            done.writes_waited.as_millis()
        );
    }
    // The kept counts answer at once; --check reads every record, recounts
    // and checks them.
    let (stats, check) = if args.check {
        (store.full_stats(now)?, Some(store.check()?))
    } else {
        (store.stats(now)?, None)
    };
    // The URLFrontier crawls other than DEFAULT, each a store of its own in
    // the same database: repaired and checked with it.
    let mut crawls = Vec::new();
    if args.check || args.repair {
        for name in store.crawl_names() {
            let crawl = store.crawl(&name)?;
            if args.repair {
                crawl.repair()?;
            }
            if args.check {
                crawls.push(CrawlCheck {
                    check: crawl.check()?,
                    name,
                });
            }
        }
    }
    // Hosts that pushed (IndexNow, notifications); one that does not decode
    // is named by --check.
    let pushes: Vec<sitemapd_scheduler::PushView> = store.pushes().filter_map(Result::ok).collect();
    let mut out = io::stdout().lock();
    if args.json {
        #[derive(Serialize)]
        struct Both<'a> {
            policy: &'a str,
            #[serde(flatten)]
            stats: &'a sitemapd_scheduler::Stats,
            #[serde(skip_serializing_if = "Option::is_none")]
            check: Option<&'a sitemapd_scheduler::CheckReport>,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            crawls: &'a [CrawlCheck],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            pushes: &'a [sitemapd_scheduler::PushView],
        }
        serde_json::to_writer_pretty(
            &mut out,
            &Both {
                policy: store.policy().name(),
                stats: &stats,
                check: check.as_ref(),
                crawls: &crawls,
                pushes: &pushes,
            },
        )?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "store: {} ({} on disk), policy {}",
            args.store.store.display(),
            words::bytes(stats.disk_bytes),
            store.policy().name()
        )?;
        writeln!(
            out,
            "urls: {} active ({}{} due now, {} leased, {} never fetched, {} with lastmod), {} retired; {}",
            stats.active,
            stats.due_now,
            if stats.due_now_capped { "+" } else { "" },
            stats.leased,
            stats.never_fetched,
            stats.with_lastmod,
            stats.retired,
            words::count(stats.sitemaps, "sitemap")
        )?;
        writeln!(
            out,
            "standing: {} blocked by robots.txt, {} gone, {} moved (probed only); {} failing",
            stats.blocked,
            stats.gone,
            stats.moved,
            words::count(stats.sitemap_failures, "sitemap")
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
        write_pushes(&mut out, &pushes)?;
        if let Some(c) = &check {
            write_check(&mut out, "check", c)?;
        }
        for c in &crawls {
            write_check(&mut out, &format!("crawl {:?}: check", c.name), &c.check)?;
        }
    }
    if check.is_none() {
        super::fail_if_records_passed_over(&store, &args.store.store)?;
    }
    let ok = check.as_ref().is_none_or(|c| c.is_ok()) && crawls.iter().all(|c| c.check.is_ok());
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The hosts that pushed: a summary line, then one line per host.
fn write_pushes(out: &mut impl Write, pushes: &[sitemapd_scheduler::PushView]) -> io::Result<()> {
    if pushes.is_empty() {
        return Ok(());
    }
    let mut totals = sitemapd_scheduler::PushTotals::default();
    for p in pushes {
        totals.add(p);
    }
    writeln!(
        out,
        "pushes: {}, {} with an IndexNow key verified",
        words::count(totals.hosts, "host"),
        totals.verified_keys
    )?;
    for p in pushes {
        let key = match p.key_verified {
            Some(at) => format!("key verified {}", crate::times::rfc3339(at)),
            None => "no key verified".into(),
        };
        writeln!(
            out,
            "  {}: {}, {} URLs, last {}; {} of {} fetches found a change ({}); {key}",
            p.host,
            match p.pushes {
                1 => "1 push".to_string(),
                n => format!("{n} pushes"),
            },
            p.urls,
            crate::times::rfc3339(p.last),
            p.changed,
            p.fetched,
            if p.urgent { "urgent" } else { "not urgent" },
        )?;
    }
    Ok(())
}

/// The check of one URLFrontier crawl.
#[derive(Serialize)]
struct CrawlCheck {
    name: String,
    check: sitemapd_scheduler::CheckReport,
}

/// A check's summary line, `label: N records, M due entries: ok`, and its
/// first 20 problems of each kind.
fn write_check(
    out: &mut impl Write,
    label: &str,
    c: &sitemapd_scheduler::CheckReport,
) -> io::Result<()> {
    writeln!(
        out,
        "{label}: {} records, {} due entries: {}",
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
    Ok(())
}
