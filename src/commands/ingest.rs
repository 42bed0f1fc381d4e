//! `sitemapd ingest SITE…`: the discovery walk into the store.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use futures_util::StreamExt;
use sitemapd_discovery::{Seed, WalkEvent, Walker};
use sitemapd_scheduler::{IngestStats, Store};
use tokio::time::Instant;

use super::{directory_given, is_url};
use crate::cli::{DiagnosticFormat, IngestArgs};
use crate::output::{DiagnosticSink, Progress, Tree, words};
use crate::settings::{Site as _, now, runtime, seeds};
use crate::walk_store::{self, StoreMemory};

/// URLs merged per store batch. A bulk job with nothing waiting on the
/// store's lock between batches, so larger than the library's default: a
/// sitemap that lists its URLs out of URL order, or a few at a time of each
/// of many hosts, touches most of those hosts' record pages and due runs in
/// every batch, and each batch rewrites what it touches. Against 20,000 it
/// takes 0.4 to 0.6 of the time for a 1M-URL site whose URLs are on 1,000
/// hosts, for 120 to 170 MiB more memory at the peak (docs/BENCHMARKS.md,
/// "Discovery").
const BATCH: usize = 100_000;

/// Runs the command.
pub(crate) fn run(args: &IngestArgs) -> Result<ExitCode> {
    let mut files = Vec::new();
    let mut sites = Vec::new();
    for arg in &args.sites {
        let path = std::path::Path::new(arg);
        if is_url(arg) {
            sites.push(arg);
        } else if path.is_file() {
            files.push(arg);
        } else if path.is_dir() {
            return Err(directory_given(arg));
        } else if path.exists() {
            anyhow::bail!("{arg} is not a regular file: give the path of a sitemap file");
        } else if looks_like_a_path(arg) {
            anyhow::bail!("{arg}: no such file");
        } else {
            sites.push(arg);
        }
    }
    let seeds = seeds(&sites)?;
    // Failures are reported as `discover` reports them: the sitemap tree of
    // each site, the diagnostics (with their rule ids) and the totals.
    let mut report = Report {
        tree: Tree::for_seeds(&sites, &seeds),
        diagnostics: DiagnosticSink::new(DiagnosticFormat::Text, args.max_diagnostics_per_rule),
    };
    let settings = &args.settings;
    // A store this run creates and leaves empty (every site unreachable)
    // is removed at the end: a later `queue` or `stats` then says there is
    // no store, rather than reading an empty one as a store with nothing due.
    let creates = !settings.store.store.exists();
    let store = Arc::new(
        settings
            .store
            .open_with(settings.scheduler.store_options())?,
    );
    let started = Instant::now();
    let mut stats = IngestStats::default();
    for file in files {
        stats += ingest_file(&store, file, args)?;
    }
    let walker = settings.walker(Some(Arc::new(StoreMemory::new(store.clone()))))?;
    let progress = Progress::new("URLs stored", true);
    let session_now = now();
    let mut failed_sites = 0u64;
    if !seeds.is_empty() {
        stats += walk_into(
            &store,
            &walker,
            seeds,
            &progress,
            &mut report,
            session_now,
            &mut failed_sites,
        )?;
        report.diagnostics.hidden_note()?;
        report.diagnostics.flush()?;
        let mut totals = Vec::new();
        report.tree.finish(started.elapsed(), &mut totals)?;
        progress.lines(&totals);
    }
    if let Some(m) = store.calibrate()? {
        progress.line(&format!(
            "{} calibrated: multiplier {m:e}",
            store.policy().name()
        ));
    }
    // What the ingest's rewrites left behind in sled's files is given back
    // as the daemon gives it back (`scheduler.compact_growth`). A
    // compaction that fails (no room for the copy) leaves the store as it
    // was: the ingest stands, and says so.
    match store.compact_if_grown() {
        Ok(Some(done)) => progress.line(&format!(
            "store compacted: {} → {} on disk in {:.1} s",
            words::bytes(done.bytes_before),
            words::bytes(done.bytes_after),
            done.took.as_secs_f64()
        )),
        Ok(None) => {}
        Err(e) => progress.line(&format!(
            "warning: the store was not compacted (it is as the ingest left it): {e}"
        )),
    }
    store.flush()?;
    progress.finish();
    let path = &args.settings.store.store;
    let kept = if creates && stats.entries == 0 && stats.sitemaps == 0 {
        drop(walker);
        !remove_new_store(store, path)?
    } else {
        true
    };
    let store_note = if kept {
        format!("store {}", path.display())
    } else {
        format!(
            "nothing read, so no store was left at {} (it was created by this run)",
            path.display()
        )
    };
    eprintln!(
        "ingest: {} entries, {} new, {} updated, {} unchanged, {} duplicate, {} revived, {} retired, {}, {:.1} s; {store_note}",
        stats.entries,
        stats.new,
        stats.updated,
        stats.unchanged,
        stats.duplicates,
        stats.revived,
        stats.retired,
        words::count(stats.sitemaps, "sitemap"),
        started.elapsed().as_secs_f64(),
    );
    Ok(if failed_sites == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Closes `store`, created by this run and holding nothing, and removes
/// its directory `path`. Whether it did: not when another handle on the
/// store is still open, nor when the store holds a URL or a sitemap (some
/// other process made it between this run's look and its open). The
/// directory is moved aside while the store's lock is still held, so a
/// process that opens `path` after the close makes a store of its own.
fn remove_new_store(store: Arc<Store>, path: &std::path::Path) -> Result<bool> {
    let Ok(store) = Arc::try_unwrap(store) else {
        return Ok(false);
    };
    let stats = store.stats(sitemapd_scheduler::Timestamp::now())?;
    if stats.active + stats.retired + stats.blocked + stats.sitemaps > 0 {
        return Ok(false);
    }
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".removing-{}", std::process::id()));
    let aside = std::path::PathBuf::from(aside);
    std::fs::rename(path, &aside).with_context(|| {
        format!(
            "cannot move aside the empty store {} this run created",
            path.display()
        )
    })?;
    drop(store);
    std::fs::remove_dir_all(&aside).with_context(|| {
        format!(
            "cannot remove the empty store {} this run created (moved to {})",
            path.display(),
            aside.display()
        )
    })?;
    Ok(true)
}

/// `./map.xml`, `data/sitemap.xml`, `sitemap.xml.gz`: meant as a file, not
/// a site (a site is `example.com` or a URL).
fn looks_like_a_path(arg: &str) -> bool {
    let lower = arg.to_ascii_lowercase();
    arg.starts_with('.')
        || arg.starts_with('/')
        || arg.starts_with('~')
        || [".xml", ".gz", ".txt", ".rss", ".atom"]
            .iter()
            .any(|ext| lower.ends_with(ext) && !lower.contains('/'))
        || lower
            .split_once('/')
            .is_some_and(|(first, _)| !first.contains('.'))
}

/// A sitemap file on disk, ingested under its `file://` path (no scope
/// rule: there is no location to apply it to).
fn ingest_file(store: &Store, file: &str, args: &IngestArgs) -> Result<IngestStats> {
    let path = std::fs::canonicalize(file).with_context(|| format!("cannot open {file}"))?;
    let key = format!("file://{}", path.display());
    let input = std::fs::File::open(&path).with_context(|| format!("cannot open {file}"))?;
    let mut parser = sitemapd_parser::Parser::new(input, args.settings.parse.options(None));
    let mut ingest = store
        .ingest(sitemapd_scheduler::Timestamp::now())
        .with_batch(BATCH);
    for event in parser.by_ref() {
        if let sitemapd_parser::Event::Url(entry) = event {
            ingest.entry(&key, &entry)?;
        }
    }
    let summary = parser.summary();
    ingest.sitemap_fetched(&key, &walk_store::read_whole(summary))?;
    eprintln!("{key}: {} urls", summary.urls);
    Ok(ingest.finish()?)
}

/// The walk, event by event, into the store.
fn walk_into(
    store: &Store,
    walker: &Walker,
    seeds: Vec<Seed>,
    progress: &Progress,
    report: &mut Report,
    session_now: i64,
    failed_sites: &mut u64,
) -> Result<IngestStats> {
    runtime()?.block_on(async {
        let mut ingest = store
            .ingest(sitemapd_scheduler::Timestamp::from_unix(session_now))
            .with_batch(BATCH);
        let mut events = walker.walk(seeds);
        while let Some(event) = events.next().await {
            walk_store::record(&mut ingest, &event)?;
            report.event(&event, progress)?;
            match event {
                WalkEvent::Entry { .. } => progress.url(),
                WalkEvent::SitemapFetched(r) => {
                    progress.sitemap();
                    let what = match (&r.summary, r.not_modified) {
                        (_, true) => "not modified".to_string(),
                        (Some(s), _) => words::count(s.urls, "url"),
                        (None, _) => String::new(),
                    };
                    progress.log(&format!("{} {} {what}", r.url, r.status));
                }
                WalkEvent::SitemapFailed(f) => {
                    progress.sitemap();
                    progress.log(&format!("{} FAILED: {}", f.url, f.error));
                }
                WalkEvent::SiteDone(t) if t.sitemaps == 0 => *failed_sites += 1,
                WalkEvent::SiteDone(_) => {}
                // A site's start: its robots rules are in the store by now.
                WalkEvent::Robots(r) => progress.log(&format!(
                    "{}: {} declared",
                    r.url,
                    words::count(r.sitemaps.len() as u64, "sitemap")
                )),
                WalkEvent::Diagnostic { .. }
                | WalkEvent::ProbeMissed { .. }
                | WalkEvent::ChildrenSkipped { .. }
                | WalkEvent::NotDue { .. } => {}
                _ => {}
            }
        }
        anyhow::Ok(ingest.finish()?)
    })
}

/// What the walk reports, as `discover` shows it: each site's sitemap tree
/// when the site is done (failures with their reason: a guard refusal,
/// an HTTP status, a cut read), and the diagnostics with their rule ids.
struct Report {
    tree: Tree,
    diagnostics: DiagnosticSink,
}

impl Report {
    fn event(&mut self, event: &WalkEvent, progress: &Progress) -> Result<()> {
        self.diagnostics.walk_event(event)?;
        let mut out = Vec::new();
        self.tree.record(event, &mut out)?;
        if !out.is_empty() {
            self.diagnostics.flush()?;
            progress.lines(&out);
        }
        Ok(())
    }
}
