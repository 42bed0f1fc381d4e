//! `sitemapd export`: every URL record of the store, as CSV or JSON lines.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;
use sitemapd_scheduler::record::UrlRecord;

use crate::cli::{EntryFormat, ExportArgs};

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
pub fn run(args: &ExportArgs) -> Result<ExitCode> {
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
