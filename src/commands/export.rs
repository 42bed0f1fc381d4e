//! `sitemapd export`: every URL record of the store, as CSV or JSON lines.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;
use sitemapd_scheduler::policy::FetchOutcome;
use sitemapd_scheduler::{Timestamp, UrlStatus, UrlView};

use crate::cli::{EntryFormat, ExportArgs};
use crate::settings::StoreUse;
use crate::times::{TimeFormat, TimeValue};

/// The export columns, in [`Row`]'s field order.
const COLUMNS: [&str; 23] = [
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
    "status",
    "last_outcome",
    "last_status",
    "redirected_from",
];

/// One exported row (CSV and JSON Lines share it).
#[derive(Serialize)]
struct Row<'a> {
    url: &'a str,
    first_seen: TimeValue,
    last_seen: TimeValue,
    lastmod: Option<TimeValue>,
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
    last_fetch: Option<TimeValue>,
    last_change: Option<TimeValue>,
    due: TimeValue,
    reason: &'static str,
    retired: bool,
    status: UrlStatus,
    last_outcome: Option<FetchOutcome>,
    last_status: Option<u16>,
    redirected_from: Option<&'a str>,
}

impl<'a> Row<'a> {
    fn of(r: &'a UrlView, time: TimeFormat) -> Self {
        let t = |t: Timestamp| time.value(t);
        Row {
            url: &r.url,
            first_seen: t(r.first_seen),
            last_seen: t(r.last_seen),
            lastmod: r.lastmod.map(t),
            lastmod_precision: r.lastmod_precision.map(|p| p.as_str()),
            lastmod_changes: r.lastmod_changes,
            changefreq: r.changefreq.map(|c| c.as_str()),
            priority: r.priority,
            images: r.images,
            videos: r.videos,
            news: r.news,
            alternates: r.alternates,
            fetches: r.fetches,
            changes: r.changes,
            last_fetch: r.last_fetch.map(t),
            last_change: r.last_change.map(t),
            due: t(r.due),
            reason: r.reason.as_str(),
            retired: r.retired,
            status: r.status,
            last_outcome: r.last_outcome,
            last_status: r.last_status,
            redirected_from: r.redirected_from.as_deref(),
        }
    }
}

/// Runs `export`.
pub(crate) fn run(args: &ExportArgs) -> Result<ExitCode> {
    let store = args.store.open_existing(StoreUse::Export)?;
    let stdout = io::stdout().lock();
    match args.format {
        EntryFormat::Jsonl => {
            let mut out = io::BufWriter::new(stdout);
            for item in store.export() {
                serde_json::to_writer(&mut out, &Row::of(&item?, args.time))?;
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
                out.serialize(Row::of(&item?, args.time))?;
            }
            out.flush()?;
        }
    }
    super::fail_if_records_passed_over(&store, &args.store.store)?;
    Ok(ExitCode::SUCCESS)
}
