//! `sitemapd discover SITE…`: walk sites and print the sitemap tree (or the
//! walk's events as JSON Lines, or every entry); stores nothing.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Result;
use futures_util::StreamExt;
use sitemapd_discovery::WalkEvent;
use tokio::time::Instant;

use crate::cli::{DiagnosticFormat, DiscoverArgs, EntryFormat};
use crate::output::{DiagnosticSink, EntrySink, Progress, Tree};
use crate::settings::{Site as _, runtime, seeds};

/// Runs the command.
pub(crate) fn run(args: &DiscoverArgs) -> Result<ExitCode> {
    let seeds = seeds(&args.sites)?;
    let walker = args.site.walker(None)?;
    let format = if args.json {
        DiagnosticFormat::Json
    } else {
        DiagnosticFormat::Text
    };
    let mut diagnostics = DiagnosticSink::new(format, args.max_diagnostics_per_rule);
    let mut stdout = EntrySink::new(io::stdout().lock(), EntryFormat::Jsonl)?;
    let mut tree = Tree::for_seeds(&args.sites, &seeds);
    // The tree goes where the entries are not.
    let mut tree_out: Box<dyn Write> = if args.entries {
        Box::new(io::stderr())
    } else {
        Box::new(io::BufWriter::new(io::stdout()))
    };
    let started = Instant::now();
    // A spinner on stderr, hidden while a site's tree is written. Not when
    // a stream of entries or events goes to the same terminal.
    let streaming = (args.entries || args.json) && io::stdout().is_terminal();
    let progress = Progress::new("URLs", !streaming);
    runtime()?.block_on(async {
        let mut events = walker.walk(seeds);
        while let Some(event) = events.next().await {
            diagnostics.walk_event(&event)?;
            match &event {
                WalkEvent::Entry { sitemap, entry } => {
                    progress.url();
                    if args.entries {
                        stdout.write_sourced(sitemap.as_str(), entry)?;
                    }
                    continue;
                }
                WalkEvent::Diagnostic { .. } => continue,
                WalkEvent::SitemapFetched(_) | WalkEvent::SitemapFailed(_) => progress.sitemap(),
                _ => {}
            }
            if args.json {
                stdout.write_json(&event)?;
                tree.record(&event, &mut io::sink())?;
            } else {
                let mut out = Vec::new();
                tree.record(&event, &mut out)?;
                if !out.is_empty() {
                    progress.suspend(|| {
                        diagnostics.flush()?;
                        tree_out.write_all(&out)?;
                        anyhow::Ok(tree_out.flush()?)
                    })?;
                }
            }
        }
        anyhow::Ok(())
    })?;
    progress.finish();
    stdout.finish()?;
    diagnostics.hidden_note()?;
    diagnostics.flush()?;
    if !args.json {
        tree.finish(started.elapsed(), &mut tree_out)?;
        tree_out.flush()?;
    }
    Ok(if tree.sites_without_sitemap() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
