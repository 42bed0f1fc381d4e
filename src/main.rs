//! `sitemapd`: discover, parse, store and schedule sitemaps.

mod cli;
mod commands;
mod completion;
mod daemon;
mod output;
mod settings;
mod simulate;
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
    use settings::resolve;
    let printed = Ok(ExitCode::SUCCESS);
    match command {
        cli::Command::Parse(mut args) => match resolve(&args.config, &mut args.settings, sub)? {
            true => printed,
            false => commands::parse::run(&args),
        },
        cli::Command::Robots(mut args) => match resolve(&args.config, &mut args.settings, sub)? {
            true => printed,
            false => commands::robots::run(&args),
        },
        cli::Command::Discover(mut args) => match resolve(&args.config, &mut args.site, sub)? {
            true => printed,
            false => commands::discover::run(&args),
        },
        cli::Command::Ingest(mut args) => match resolve(&args.config, &mut args.settings, sub)? {
            true => printed,
            false => commands::ingest::run(&args),
        },
        cli::Command::Queue(mut args) => match resolve(&args.config, &mut args.settings, sub)? {
            true => printed,
            false => commands::queue::run_queue(&args),
        },
        cli::Command::Complete(args) => commands::queue::run_complete(&args),
        cli::Command::Stats(args) => commands::stats::run_stats(&args),
        cli::Command::Export(args) => commands::stats::run_export(&args),
        cli::Command::Daemon(mut args) => {
            let args = &mut *args;
            let sites = std::mem::take(&mut args.sites);
            // SITE arguments add to the settings' sites (layered like any other key first).
            args.settings.sites.clear();
            let printing = args.config.print_config;
            args.config.print_config = false;
            resolve(&args.config, &mut args.settings, sub)?;
            args.settings.sites.extend(sites);
            settings::Settings::validate(&args.settings)?;
            if printing {
                print!("{}", settings::to_toml(&args.settings)?);
                return printed;
            }
            daemon::run(args)
        }
        cli::Command::Simulate(mut args) => match resolve(&args.config, &mut args.settings, sub)? {
            true => printed,
            false => simulate::run(&args),
        },
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
