//! Command-line interface definitions.

use std::net::IpAddr;

use clap::{Args, Parser, Subcommand, ValueEnum};
use sitemapd_parser::options::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES};
use sitemapd_parser::{NormUrl, ScopeMode};

/// Discover, parse, store and schedule sitemaps.
#[derive(Debug, Parser)]
#[command(name = "sitemapd", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
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
    /// Re-running it re-fetches conditionally and updates the store.
    Ingest(IngestArgs),
    /// The due URLs, most urgent first, as JSON Lines (url, due, score, reason, not_before);
    /// with --lease, hand them out (lease id and expiry added).
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
    /// complete, notify, sites, stats, metrics). Settings from --config FILE, overridden by
    /// flags; SIGINT/SIGTERM stop it cleanly.
    Daemon(Box<crate::daemon::config::DaemonArgs>),
    /// The research simulator: runs the scheduler's policies on a simulated web (pages that
    /// change, sitemaps that say so, a fetch budget) for several seeds, and writes
    /// metrics.csv, summary.csv and chart.svg to the output folder. Settings from --config
    /// FILE (TOML), overridden by flags.
    Simulate(SimulateArgs),
}

/// `sitemapd simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Settings file (TOML): `policies`, `seeds`, `first_seed`, `jobs`, `days`, `warmup_days`,
    /// `sample_hours`, and [world], [sitemap], [crawl] tables (see the README).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Output folder (created): metrics.csv, summary.csv, chart.svg.
    #[arg(short, long, default_value = "simulate-out")]
    pub out: std::path::PathBuf,
    /// Policies to compare, comma-separated [default: all eight].
    #[arg(long, value_delimiter = ',')]
    pub policies: Option<Vec<String>>,
    /// Seeds per policy [default: 3].
    #[arg(long)]
    pub seeds: Option<u64>,
    /// The first seed (the others follow it) [default: 1].
    #[arg(long)]
    pub first_seed: Option<u64>,
    /// Pages at the start [default: 10000].
    #[arg(long)]
    pub pages: Option<u32>,
    /// Hosts (pages per host are heavy-tailed) [default: 100].
    #[arg(long)]
    pub hosts: Option<u32>,
    /// Simulated days [default: 30].
    #[arg(long)]
    pub days: Option<f64>,
    /// Fetches per day, all hosts together [default: 2000].
    #[arg(long)]
    pub budget: Option<f64>,
    /// Fetches per day one host allows at most [default: no limit].
    #[arg(long)]
    pub host_budget: Option<f64>,
    /// Pages appearing during the run, as a share of --pages [default: 0.1].
    #[arg(long)]
    pub new_pages: Option<f64>,
    /// Change process: poisson, periodic or bursty [default: poisson].
    #[arg(long)]
    pub process: Option<String>,
    /// lastmod precision in the sitemaps: none, day or second [default: second].
    #[arg(long)]
    pub lastmod: Option<String>,
    /// Share of changes the lastmod reflects [default: 1].
    #[arg(long)]
    pub recall: Option<f64>,
    /// Hours before a change shows in the sitemap [default: 0].
    #[arg(long)]
    pub delay_hours: Option<f64>,
    /// Every lastmod is the sitemap's generation time (a lying site).
    #[arg(long)]
    pub liar: bool,
    /// The estimator the store feeds its policies: naive, bias-reduced, irregular,
    /// last-modified, complete [default: bias-reduced].
    #[arg(long)]
    pub estimator: Option<String>,
    /// Hours per row of metrics.csv [default: 6].
    #[arg(long)]
    pub sample_hours: Option<f64>,
    /// Days left out of the summary's time averages [default: a quarter of the run].
    #[arg(long)]
    pub warmup_days: Option<f64>,
    /// Runs at once [default: the number of cores].
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Keep each run's store on disk in sled (under --work-dir), as the daemon does, instead
    /// of in memory: the same results, several times slower.
    #[arg(long)]
    pub on_disk: bool,
    /// Where the throwaway stores live with --on-disk [default: /dev/shm if present, else the
    /// temp dir].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<std::path::PathBuf>,
}

/// Where the store is (shared by every store command).
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The store's directory (created if missing).
    #[arg(long, default_value = "sitemapd-data")]
    pub store: std::path::PathBuf,
}

/// `sitemapd ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Sites (`example.com`, `https://example.com/`) or sitemap URLs.
    #[arg(required = true)]
    pub sites: Vec<String>,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Scheduling policy: fixed, sitemap-hints, lastmod, adaptive, freshness-optimal,
    /// lambda-crawl, uniform, proportional. Remembered by the store [default: the store's, or adaptive].
    #[arg(long)]
    pub policy: Option<String>,
    /// How sites are walked, documents fetched and parsed.
    #[command(flatten)]
    pub site: SiteFlags,
}

/// `sitemapd queue`.
#[derive(Debug, Args)]
pub struct QueueArgs {
    /// How many URLs.
    #[arg(short = 'n', long, default_value_t = 100)]
    pub n: usize,
    /// Lease them for this many seconds (without it, only list).
    #[arg(long, value_name = "SECS")]
    pub lease: Option<i64>,
    /// At most this many URLs of one host per lease.
    #[arg(long, default_value_t = 10)]
    pub per_host: usize,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `sitemapd complete`.
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `sitemapd stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Verify that every due entry points at a record and every record has its due entry.
    #[arg(long)]
    pub check: bool,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `sitemapd export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: EntryFormat,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// How documents are fetched (shared by every command that fetches).
#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// User-Agent header (its first word selects the robots.txt group).
    #[arg(long, default_value = concat!("sitemapd/", env!("CARGO_PKG_VERSION")))]
    pub user_agent: String,
    /// Allow loopback, private, link-local and other non-public addresses (tests, intranets).
    #[arg(long)]
    pub allow_private: bool,
    /// Minimum seconds between two requests to one host (robots.txt Crawl-delay may raise it).
    #[arg(long, default_value_t = 1.0, value_parser = parse_seconds)]
    pub min_delay: f64,
    /// Total seconds allowed per document, retries included; time spent waiting for the
    /// network only (a slow consumer does not count).
    #[arg(long, default_value_t = 300.0, value_parser = parse_timeout)]
    pub timeout: f64,
    /// Answer HOST with IP instead of DNS (repeatable), like curl's --resolve; the address
    /// guard still applies.
    #[arg(long, value_name = "HOST=IP", value_parser = parse_resolve)]
    pub resolve: Vec<(String, IpAddr)>,
    /// Send every request through this proxy (the system proxy settings are ignored).
    #[arg(long)]
    pub proxy: Option<String>,
}

/// How every fetched document is parsed (shared by `parse`, `discover` and `ingest`).
#[derive(Debug, Clone, Args)]
pub struct ParseFlags {
    /// Which URLs a sitemap may list: directory (the protocol), host, or none.
    #[arg(long, default_value = "directory", value_parser = parse_scope)]
    pub scope: ScopeMode,
    /// Drop or reject what the protocol does not allow, instead of repairing it.
    #[arg(long)]
    pub strict: bool,
    /// Byte limit per document after decompression.
    #[arg(long, default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
    /// Entry limit per document.
    #[arg(long, default_value_t = DEFAULT_MAX_ENTRIES)]
    pub max_entries: u64,
}

/// How a site is walked (shared by `discover` and `ingest`).
#[derive(Debug, Clone, Args)]
pub struct WalkArgs {
    /// Do not probe /sitemap.xml and other well-known paths when robots.txt declares none.
    #[arg(long)]
    pub no_probe: bool,
    /// Index nesting followed at most.
    #[arg(long, default_value_t = 3)]
    pub max_depth: u32,
    /// Sitemaps fetched per site at most.
    #[arg(long, default_value_t = 5_000)]
    pub max_sitemaps: usize,
    /// Sites walked at once.
    #[arg(long, default_value_t = 16)]
    pub parallel_sites: usize,
}

/// Everything a walk of sites takes (shared by `discover` and `ingest`).
#[derive(Debug, Clone, Args)]
pub struct SiteFlags {
    /// Walk settings.
    #[command(flatten)]
    pub walk: WalkArgs,
    /// Parse settings.
    #[command(flatten)]
    pub parse: ParseFlags,
    /// Fetch settings.
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// `sitemapd robots`.
#[derive(Debug, Args)]
pub struct RobotsArgs {
    /// The robots.txt: a file path, `-` for stdin, or an http(s) URL (fetched per RFC 9309).
    pub input: String,
    /// The robots.txt's own URL, to resolve relative Sitemap: values (a file or stdin).
    #[arg(long, value_parser = parse_url)]
    pub url: Option<NormUrl>,
    /// JSON Lines: one object per sitemap on stdout, diagnostics as JSON on stderr.
    #[arg(long)]
    pub json: bool,
    /// Fetch settings (for a URL input).
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// `sitemapd discover`.
#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// Sites (`example.com`, `https://example.com/`) or sitemap URLs.
    #[arg(required = true)]
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
    /// How sites are walked, documents fetched and parsed.
    #[command(flatten)]
    pub site: SiteFlags,
}

/// Entry output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EntryFormat {
    /// One JSON object per line.
    Jsonl,
    /// CSV with a header row.
    Csv,
}

/// Diagnostic output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiagnosticFormat {
    /// `warning[X7] INPUT:LINE:COL: message`
    Text,
    /// One JSON object per line.
    Json,
}

/// `sitemapd parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// The document: a file path, `-` for stdin, or an http(s) URL.
    pub input: String,
    /// The document's own URL (base for relative locs, and the scope rule); for a fetched
    /// document, the URL it came from after redirects.
    #[arg(long, value_parser = parse_url)]
    pub url: Option<NormUrl>,
    /// Entry output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: EntryFormat,
    /// Parse settings.
    #[command(flatten)]
    pub parse: ParseFlags,
    /// Fetch settings (for a URL input).
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// Diagnostic output format (stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub diagnostics: DiagnosticFormat,
    /// Print at most this many diagnostics per rule (0: all); the summary counts them all.
    #[arg(long, default_value_t = 100)]
    pub max_diagnostics_per_rule: u64,
}

fn parse_scope(s: &str) -> Result<ScopeMode, String> {
    s.parse()
}

fn parse_url(s: &str) -> Result<NormUrl, String> {
    NormUrl::parse(s).map_err(|e| format!("not an http(s) URL: {e}"))
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err("expected seconds between 0 and 86400".into()),
    }
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match parse_seconds(s)? {
        0.0 => Err("the timeout must be more than 0 seconds".into()),
        v => Ok(v),
    }
}

/// `HOST=IP`, as `--resolve` takes it.
pub fn parse_resolve(s: &str) -> Result<(String, IpAddr), String> {
    let (host, ip) = s.split_once('=').ok_or("expected HOST=IP")?;
    let valid = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
    if !valid {
        return Err(format!(
            "{host:?} is not a host name (no port, no brackets)"
        ));
    }
    let literal = ip.trim_start_matches('[').trim_end_matches(']');
    let ip = literal.parse().map_err(|e| format!("{ip:?}: {e}"))?;
    Ok((host.to_ascii_lowercase(), ip))
}
