//! `sitemapd stats` and `sitemapd export`: reading the store.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;
use sitemapd_scheduler::record::UrlRecord;

use crate::cli::{EntryFormat, ExportArgs, StatsArgs};
use crate::settings::now;

/// Runs `stats`.
pub fn run_stats(args: &StatsArgs) -> Result<ExitCode> {
    let store = args.store.open_existing()?;
    let stats = store.stats(now())?;
    let check = if args.check {
        Some(store.check()?)
    } else {
        None
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
            "urls: {} active ({} due now, {} leased, {} never fetched, {} with lastmod), {} retired; {} sitemaps",
            stats.active,
            stats.due_now,
            stats.leased,
            stats.never_fetched,
            stats.with_lastmod,
            stats.retired,
            stats.sitemaps
        )?;
        if let Some([q1, q2, q3]) = stats.rate_per_day_quartiles {
            writeln!(
                out,
                "estimated changes/day: quartiles {q1:.3} {q2:.3} {q3:.3}"
            )?;
        }
        for (host, h) in &stats.hosts {
            writeln!(
                out,
                "  {host}: {} active, {} retired, lastmod {}",
                h.active,
                h.retired,
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
                ("refresh schedule without its sitemap", &c.orphan_refresh),
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

/// The export columns, in [`Row`]'s field order.
const COLUMNS: [&str; 19] = [
    "url",
    "first_seen",
    "last_seen",
    "lastmod",
    "lastmod_precision",
    "lastmod_changes",
    "changefreq",
    "priority",
    "images",
    "videos",
    "news",
    "alternates",
    "fetches",
    "changes",
    "last_fetch",
    "last_change",
    "due",
    "reason",
    "retired",
];

/// One exported row (CSV and JSON Lines share it).
#[derive(Serialize)]
struct Row<'a> {
    url: &'a str,
    first_seen: i64,
    last_seen: i64,
    lastmod: Option<i64>,
    lastmod_precision: Option<&'static str>,
    lastmod_changes: usize,
    changefreq: Option<&'static str>,
    priority: Option<f32>,
    images: u16,
    videos: u16,
    news: bool,
    alternates: u16,
    fetches: u32,
    changes: u32,
    last_fetch: Option<i64>,
    last_change: Option<i64>,
    due: i64,
    reason: &'static str,
    retired: bool,
}

impl<'a> Row<'a> {
    fn of(url: &'a str, r: &UrlRecord) -> Self {
        use sitemapd_parser::ChangeFreq;
        use sitemapd_parser::date::Precision;
        Row {
            url,
            first_seen: r.first_seen,
            last_seen: r.last_seen,
            lastmod: r.lastmod.map(|l| l.at),
            lastmod_precision: r.lastmod.map(|l| Precision::from(l.precision).as_str()),
            lastmod_changes: r.lastmod_history.len(),
            changefreq: r.changefreq.map(|c| ChangeFreq::from(c).as_str()),
            priority: r.priority,
            images: r.extensions.images,
            videos: r.extensions.videos,
            news: r.extensions.news,
            alternates: r.extensions.alternates,
            fetches: r.fetch.fetches,
            changes: r.fetch.changes,
            last_fetch: r.fetch.last_fetch,
            last_change: r.fetch.last_change,
            due: r.schedule.due,
            reason: sitemapd_scheduler::policy::Reason::from(r.schedule.reason).as_str(),
            retired: r.retired,
        }
    }
}

/// Runs `export`.
pub fn run_export(args: &ExportArgs) -> Result<ExitCode> {
    let store = args.store.open_existing()?;
    let stdout = io::stdout().lock();
    match args.format {
        EntryFormat::Jsonl => {
            let mut out = io::BufWriter::new(stdout);
            for item in store.export() {
                let (url, rec) = item?;
                serde_json::to_writer(&mut out, &Row::of(&url, &rec))?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
        }
        EntryFormat::Csv => {
            let mut out = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(stdout);
            // The header even for an empty store (pandas wants one).
            out.write_record(COLUMNS)?;
            for item in store.export() {
                let (url, rec) = item?;
                out.serialize(Row::of(&url, &rec))?;
            }
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
