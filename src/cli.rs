//! Command-line interface definitions.

use clap::{Args, Parser, Subcommand, ValueEnum};
use sitemapd_parser::NormUrl;

use crate::settings::{
    ConfigArgs, DaemonSettings, IngestSettings, ParseCommandSettings, QueueSettings,
    RobotsCommandSettings, SimulateSettings, SiteSettings, StoreArgs,
};
use crate::times::TimeFormat;

/// Discover, parse, store and schedule sitemaps.
#[derive(Debug, Parser)]
#[command(name = "sitemapd", version, about, long_about = None)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The command line, with an environment variable (`SITEMAPD_<SETTING>`)
/// on every setting.
pub(crate) fn command() -> clap::Command {
    use crate::settings::{with_env, *};
    use clap::CommandFactory as _;
    let mut cmd = Cli::command()
        .mut_subcommand("parse", with_env::<ParseCommandSettings>)
        .mut_subcommand("robots", with_env::<RobotsCommandSettings>)
        .mut_subcommand("discover", with_env::<SiteSettings>)
        .mut_subcommand("ingest", with_env::<IngestSettings>)
        .mut_subcommand("queue", with_env::<QueueSettings>)
        .mut_subcommand("complete", with_env::<StoreArgs>)
        .mut_subcommand("stats", with_env::<StoreArgs>)
        .mut_subcommand("export", with_env::<StoreArgs>)
        .mut_subcommand("daemon", with_env::<DaemonSettings>)
        .mut_subcommand("simulate", with_env::<SimulateSettings>);
    // `--store` says per command whether a missing store is created.
    for (sub, help) in STORE_HELP {
        cmd = cmd.mut_subcommand(sub, |c| {
            c.mut_arg("store", |a| a.help(help).long_help(None::<&str>))
        });
    }
    cmd
}

/// `--store`'s help per command: the commands that write a store create it,
/// the others refuse a missing one (a mistyped path is not a new empty store).
const STORE_HELP: [(&str, &str); 6] = [
    ("ingest", "The store's directory (created if missing)"),
    ("daemon", "The store's directory (created if missing)"),
    ("queue", MUST_EXIST),
    ("complete", MUST_EXIST),
    ("stats", MUST_EXIST),
    ("export", MUST_EXIST),
];

/// `--store`'s help for the commands that need an existing store.
const MUST_EXIST: &str =
    "The store's directory (it must exist: `sitemapd ingest` or `sitemapd daemon` creates it)";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Parse one sitemap, index, feed or text list (a file, `-` or an http(s) URL); entries
    /// as JSON Lines or CSV on stdout, diagnostics on stderr. Exit 0 when it was read (even
    /// partly), 1 when it is not a sitemap or could not be fetched.
    Parse(ParseArgs),
    /// The sitemaps a robots.txt declares (a file, `-` or an http(s) URL), one per line;
    /// diagnostics on stderr. Exit 0 when it was read (or is absent: 4xx), 1 when it could
    /// not be fetched (5xx, network: "try later").
    Robots(RobotsArgs),
    /// Walk sites (robots.txt, sitemaps, indexes) and print the sitemap tree with status,
    /// entries, bytes and time per sitemap; stores nothing. `--entries` streams the entries.
    /// Exit 0 when every site yielded a sitemap, 1 otherwise.
    Discover(DiscoverArgs),
    /// Walk sites and store every URL with its metadata, then schedule it: the main job.
    /// Re-running it re-fetches conditionally and updates the store. Reports as discover
    /// does (the sitemap tree of each site, failures with their reason, diagnostics); exit 1
    /// when a site yielded no sitemap.
    Ingest(IngestArgs),
    /// The due URLs, most urgent first, as JSON Lines (url, due, score, reason, not_before);
    /// with --lease, hand them out (lease id, expiry and due_reason added; reason "leased").
    Queue(QueueArgs),
    /// Report fetch outcomes: JSON Lines on stdin, one per URL:
    /// {"url":…,"outcome":"changed|not-modified|gone|error|redirected","status":…,"to":…,"etag":…,"last_modified":…}
    Complete(CompleteArgs),
    /// Counts per state and host, change-rate summary; --check verifies the store's integrity
    /// (exit 1 on a problem).
    Stats(StatsArgs),
    /// Every URL record, for analysis (pandas, R).
    Export(ExportArgs),
    /// Follow sites' sitemaps continuously and serve the crawl queue over HTTP (lease,
    /// complete, notify, sites, stats, metrics). Settings: defaults < --config FILE <
    /// SITEMAPD_* environment < flags; SIGINT/SIGTERM stop it cleanly.
    Daemon(Box<DaemonArgs>),
    /// Cluster mode (docs/cluster.md): `sitemapd cluster status` prints the cluster's live
    /// members, the partitions each owns and the free ones, read from its NATS servers.
    Cluster(ClusterArgs),
    /// The research simulator: runs the scheduler's policies on a simulated web (pages that
    /// change, sitemaps that say so, a fetch budget) for several seeds, and writes
    /// metrics.csv, summary.csv and chart.svg to the output folder. Settings: defaults <
    /// --config FILE < SITEMAPD_* environment < flags.
    Simulate(SimulateArgs),
}

/// `sitemapd simulate`.
#[derive(Debug, Args)]
pub(crate) struct SimulateArgs {
    /// Output folder (created): metrics.csv, summary.csv, chart.svg.
    #[arg(short, long, default_value = "simulate-out")]
    pub out: std::path::PathBuf,
    /// Keep each run's store on disk in sled (under --work-dir), as the daemon does, instead
    /// of in memory: the same results, several times slower.
    #[arg(long)]
    pub on_disk: bool,
    /// Where the throwaway stores live with --on-disk [default: /dev/shm if present, else the
    /// temp dir].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<std::path::PathBuf>,
    /// The settings file.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The simulation's settings.
    #[command(flatten)]
    pub settings: SimulateSettings,
}

/// `sitemapd cluster`.
#[derive(Debug, Args)]
pub(crate) struct ClusterArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClusterCommand,
}

/// The `cluster` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ClusterCommand {
    /// The live members (id, advertised address, partitions owned), the free partitions and the write
    /// log's stream (size, leader, replicas' lag).
    /// Exit 1 when the servers cannot be reached or hold no cluster.
    Status(ClusterStatusArgs),
}

/// `sitemapd cluster status`.
#[derive(Debug, Args)]
pub(crate) struct ClusterStatusArgs {
    /// NATS servers of the cluster (`nats://host:port`, comma-separated), as the daemons'
    /// `cluster` setting.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NATS_URL",
        required = true,
        env = "SITEMAPD_CLUSTER"
    )]
    pub cluster: Vec<String>,
    /// One JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `sitemapd daemon`.
#[derive(Debug, Args)]
pub(crate) struct DaemonArgs {
    /// Sites to follow (`example.com`, `https://example.com/`, or a sitemap URL), added to
    /// the settings' `sites` and to those the store already follows.
    #[arg(id = "site", value_name = "SITE")]
    pub sites: Vec<String>,
    /// The settings file.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Every setting of the daemon.
    #[command(flatten)]
    pub settings: DaemonSettings,
    /// A testing aid, hidden from --help: the daemon's time is the Unix seconds written in
    /// FILE (read again at each use), not the wall clock, so that a test moves it by
    /// rewriting the file instead of sleeping (docs/daemon.md, "A clock for tests").
    #[arg(long, value_name = "FILE", hide = true)]
    pub test_clock_file: Option<std::path::PathBuf>,
}

/// `sitemapd ingest`.
#[derive(Debug, Args)]
pub(crate) struct IngestArgs {
    /// Sites (`example.com`, `https://example.com/`) or sitemap URLs.
    #[arg(required_unless_present = "print_config")]
    pub sites: Vec<String>,
    /// Print at most this many diagnostics per rule (0: all).
    #[arg(long, default_value_t = 100)]
    pub max_diagnostics_per_rule: u64,
    /// The settings file.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The store, its scheduler, how sites are walked, documents fetched and parsed.
    #[command(flatten)]
    pub settings: IngestSettings,
}

/// `sitemapd queue`.
#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    /// How many URLs (at least 1). `--count` is taken for it too.
    #[arg(short = 'n', value_name = "N", aliases = ["count", "n"], default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub n: u64,
    /// Lease them for this many seconds, 1 to 604800 (7 days), as the daemon's API allows
    /// (without it, only list).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=LEASE_TTL_MAX_SECS))]
    pub lease: Option<u64>,
    /// How times print: Unix seconds (numbers) or RFC 3339 in UTC (strings).
    #[arg(long, value_enum, default_value = "unix")]
    pub time: TimeFormat,
    /// The settings file.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The store and its scheduler.
    #[command(flatten)]
    pub settings: QueueSettings,
}

/// The longest lease `queue --lease` takes, seconds: the scheduler's
/// bound, as the daemon's API has it.
const LEASE_TTL_MAX_SECS: u64 = sitemapd_scheduler::LeaseRequest::MAX_TTL.as_secs();

/// `sitemapd complete`.
#[derive(Debug, Args)]
pub(crate) struct CompleteArgs {
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `sitemapd stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// Read every record: verify that every due entry points at a record, every record has
    /// its due entry and each host's kept counts are right (the counts come from those reads).
    #[arg(long)]
    pub check: bool,
    /// Rebuild the due index and each host's counts from the URL records (after --check
    /// named problems); then report.
    #[arg(long)]
    pub repair: bool,
    /// First give back the disk space sled keeps of rewritten records: move the records
    /// crawlers wrote back into their pages and copy the live data into fresh files (a
    /// daemon does it by itself when the store's files have doubled).
    #[arg(long)]
    pub compact: bool,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `sitemapd export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: EntryFormat,
    /// How times print: Unix seconds (numbers) or RFC 3339 in UTC (strings).
    #[arg(long, value_enum, default_value = "unix")]
    pub time: TimeFormat,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `sitemapd robots`.
#[derive(Debug, Args)]
pub(crate) struct RobotsArgs {
    /// The robots.txt: a file path, `-` for stdin, or an http(s) URL (fetched per RFC 9309).
    #[arg(required_unless_present = "print_config", default_value = "")]
    pub input: String,
    /// The robots.txt's own URL, to resolve relative Sitemap: values (a file or stdin).
    #[arg(long, value_parser = parse_url)]
    pub url: Option<NormUrl>,
    /// JSON Lines: one object per sitemap on stdout, diagnostics as JSON on stderr.
    #[arg(long)]
    pub json: bool,
    /// The settings file.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Fetch settings (for a URL input).
    #[command(flatten)]
    pub settings: RobotsCommandSettings,
}

/// `sitemapd discover`.
#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// Sites (`example.com`, `https://example.com/`) or sitemap URLs.
    #[arg(required_unless_present = "print_config")]
    pub sites: Vec<String>,
    /// JSON Lines of the walk's events on stdout instead of the tree (the exit code is the same).
    #[arg(long)]
    pub json: bool,
    /// Stream every entry on stdout (the `parse` JSON Lines contract plus "source"); the
    /// tree goes to stderr.
    #[arg(long)]
    pub entries: bool,
    /// Print at most this many diagnostics per rule (0: all).
    #[arg(long, default_value_t = 100)]
    pub max_diagnostics_per_rule: u64,
    /// The settings file.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// How sites are walked, documents fetched and parsed.
    #[command(flatten)]
    pub site: SiteSettings,
}

/// Entry output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EntryFormat {
    /// One JSON object per line.
    Jsonl,
    /// CSV with a header row.
    Csv,
}

/// Diagnostic output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DiagnosticFormat {
    /// `warning[X7] INPUT:LINE:COL: message`
    Text,
    /// One JSON object per line.
    Json,
}

/// `sitemapd parse`.
#[derive(Debug, Args)]
pub(crate) struct ParseArgs {
    /// The document: a file path, `-` for stdin, or an http(s) URL.
    #[arg(required_unless_present = "print_config", default_value = "")]
    pub input: String,
    /// The document's own URL (base for relative locs, and the scope rule); for a fetched
    /// document, the URL it came from after redirects.
    #[arg(long, value_parser = parse_url)]
    pub url: Option<NormUrl>,
    /// Entry output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: EntryFormat,
    /// Diagnostic output format (stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub diagnostics: DiagnosticFormat,
    /// Print at most this many diagnostics per rule (0: all); the summary counts them all.
    #[arg(long, default_value_t = 100)]
    pub max_diagnostics_per_rule: u64,
    /// The settings file.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Parse and fetch settings (fetch: for a URL input).
    #[command(flatten)]
    pub settings: ParseCommandSettings,
}

fn parse_url(s: &str) -> Result<NormUrl, String> {
    NormUrl::parse(s).map_err(|e| format!("not an http(s) URL: {e}"))
}

#[cfg(test)]
mod tests {
    use figment::value::{Dict, Value};

    use crate::settings::{DaemonSettings, IngestSettings, Settings, SimulateSettings};

    /// Every setting has one name: its arg id is the TOML key, its flag the key
    /// with `-`, its environment variable `SITEMAPD_` + the key in capitals.
    #[test]
    fn one_name_per_setting() {
        let cmd = super::command();
        cmd.clone().debug_assert();
        for (sub, keys) in [
            ("daemon", keys::<DaemonSettings>()),
            ("simulate", keys::<SimulateSettings>()),
            ("ingest", keys::<IngestSettings>()),
        ] {
            let sub = cmd.find_subcommand(sub).unwrap();
            for key in keys {
                if key == "sites" {
                    continue; // SITE arguments add to the file's; no flag
                }
                let arg = sub
                    .get_arguments()
                    .find(|a| a.get_id() == key.as_str())
                    .unwrap_or_else(|| panic!("{key}: no flag"));
                assert_eq!(arg.get_long(), Some(key.replace('_', "-").as_str()));
                let env = arg.get_env().and_then(|e| e.to_str()).unwrap();
                assert_eq!(env, format!("SITEMAPD_{}", key.to_uppercase()));
            }
        }
    }

    /// The leaf keys of `T`'s TOML form.
    fn keys<T: Settings>() -> Vec<String> {
        fn walk(dict: &Dict, out: &mut Vec<String>) {
            for (k, v) in dict {
                match v {
                    Value::Dict(_, inner) => walk(inner, out),
                    _ => out.push(k.clone()),
                }
            }
        }
        let Value::Dict(_, dict) = Value::serialize(T::default()).unwrap() else {
            panic!("not a table");
        };
        let mut out = Vec::new();
        walk(&dict, &mut out);
        out
    }
}
