//! `sitemapd`: discover, parse, store and schedule sitemaps.

mod cli;
mod commands;
mod daemon;
mod outcome_report;
mod output;
mod settings;
mod simulate;
mod walk_store;

use std::process::ExitCode;

use clap::Parser as _;

// jemalloc: sled allocates a copy of a tree node per write, and under the
// daemon's constant re-ingest mimalloc's RSS grew +168 MiB/h over a flat
// live heap, jemalloc's +44 (RELIABILITY.md, "Soak"). Off with
// `--no-default-features`, for heap profilers that hook malloc.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // The daemon sets up its own logs (format, level info).
    if !matches!(cli.command, cli::Command::Daemon(_)) {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_env("SITEMAPD_LOG")
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .init();
    }
    let result = match cli.command {
        cli::Command::Parse(args) => commands::parse::run(&args),
        cli::Command::Robots(args) => commands::robots::run(&args),
        cli::Command::Discover(args) => commands::discover::run(&args),
        cli::Command::Ingest(args) => commands::ingest::run(&args),
        cli::Command::Queue(args) => commands::queue::run(&args),
        cli::Command::Complete(args) => commands::complete::run(&args),
        cli::Command::Stats(args) => commands::stats::run(&args),
        cli::Command::Export(args) => commands::export::run(&args),
        cli::Command::Daemon(args) => daemon::run(&args),
        cli::Command::Simulate(args) => simulate::run(&args),
    };
    exit(result)
}

/// The exit code of a command's result; errors on stderr.
fn exit(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
