//! `sitemapd discover SITE…`: walk sites and print the sitemap tree (or the
//! walk's events as JSON Lines, or every entry); stores nothing.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use futures_util::StreamExt;
use sitemapd_discovery::WalkEvent;
use tokio::time::Instant;

use crate::cli::{DiagnosticFormat, DiscoverArgs, EntryFormat};
use crate::output::{DiagnosticSink, EntrySink, Tree};
use crate::settings::{Site as _, runtime, seeds};

/// Runs the command.
pub fn run(args: &DiscoverArgs) -> Result<ExitCode> {
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
    runtime()?.block_on(async {
        let mut events = walker.walk(seeds);
        while let Some(event) = events.next().await {
            diagnostics.walk_event(&event)?;
            match &event {
                WalkEvent::Entry { sitemap, entry } => {
                    if args.entries {
                        stdout.write_sourced(sitemap.as_str(), entry)?;
                    }
                    continue;
                }
                WalkEvent::Diagnostic { .. } => continue,
                _ => {}
            }
            if args.json {
                stdout.write_json(&event)?;
                tree.record(&event, &mut io::sink())?;
            } else {
                tree.record(&event, &mut tree_out)?;
            }
        }
        anyhow::Ok(())
    })?;
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
