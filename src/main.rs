//! `sitemapd`: discover, parse, store and schedule sitemaps.

mod cli;
mod commands;
mod daemon;
mod outcome_report;
mod output;
mod settings;
mod simulate;
mod times;
// The walk-to-store glue is the scheduler crate's `walk_into_store`
// example, so that what embedders copy is what the binary runs.
#[path = "../crates/scheduler/examples/walk_into_store/glue.rs"]
mod walk_store;

use std::process::ExitCode;

use clap::{ArgMatches, FromArgMatches as _};

// jemalloc: sled allocates a copy of a tree node per write, and under the
// daemon's constant re-ingest mimalloc's RSS grew +168 MiB/h over a flat
// live heap, jemalloc's +44 (RELIABILITY.md, "Soak"). Off with
// `--no-default-features`, for heap profilers that hook malloc.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let matches = cli::command().get_matches();
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let Some((_, sub)) = matches.subcommand() else {
        return ExitCode::FAILURE;
    };
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
    exit(run(cli.command, sub))
}

/// Runs a command, its settings layered first (defaults < file <
/// environment < flags); `--print-config` prints them instead.
fn run(command: cli::Command, sub: &ArgMatches) -> anyhow::Result<ExitCode> {
    /// Layers `$args.$settings`, then runs `$run` unless they were printed.
    macro_rules! layered {
        ($args:ident . $settings:ident, $run:path) => {{
            let mut args = $args;
            if settings::resolve(&args.config, &mut args.$settings, sub)? {
                Ok(ExitCode::SUCCESS)
            } else {
                $run(&args)
            }
        }};
    }
    match command {
        cli::Command::Parse(args) => layered!(args.settings, commands::parse::run),
        cli::Command::Robots(args) => layered!(args.settings, commands::robots::run),
        cli::Command::Discover(args) => layered!(args.site, commands::discover::run),
        cli::Command::Ingest(args) => layered!(args.settings, commands::ingest::run),
        cli::Command::Queue(args) => layered!(args.settings, commands::queue::run),
        cli::Command::Complete(args) => commands::complete::run(&args),
        cli::Command::Stats(args) => commands::stats::run(&args),
        cli::Command::Export(args) => commands::export::run(&args),
        cli::Command::Daemon(mut args) => {
            // SITE arguments add to the layered settings' sites.
            let mut layered = settings::layer(&args.config, &args.settings, sub)?;
            layered.sites.append(&mut args.sites);
            settings::Settings::validate(&layered)?;
            args.settings = layered;
            if args.config.print_config {
                print!("{}", settings::to_toml(&args.settings)?);
                return Ok(ExitCode::SUCCESS);
            }
            daemon::run(&args)
        }
        cli::Command::Cluster(args) => commands::cluster::run(&args),
        cli::Command::Simulate(args) => layered!(args.settings, simulate::run),
    }
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
