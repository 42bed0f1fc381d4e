//! The daemon's settings: a TOML file, overridden by flags, validated
//! before anything starts.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Deserialize;
use sitemapd_parser::options::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES};

use crate::cli::{FetchArgs, ParseFlags, SiteFlags, WalkArgs};

/// `sitemapd daemon`: every setting of the file, as a flag that overrides it.
#[derive(Debug, Default, Args)]
pub struct DaemonArgs {
    /// Sites to follow (`example.com`, `https://example.com/`, or a sitemap URL), added to
    /// the file's `sites` and to those the store already follows.
    pub sites: Vec<String>,
    /// The TOML configuration file (`--print-config` shows every key with its default).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print a commented default configuration and exit.
    #[arg(long)]
    pub print_config: bool,
    /// The store's directory [file: store; default sitemapd-data].
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Address of the HTTP API [file: listen; default 127.0.0.1:8710]. Off loopback an API
    /// token is required.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// A file whose first line is the API token [file: token_file]. The token may also come
    /// from the SITEMAPD_TOKEN environment variable; never from the command line.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Log format on stderr: pretty or json [file: log_format; default pretty]. The level
    /// comes from SITEMAPD_LOG (default info).
    #[arg(long)]
    pub log_format: Option<LogFormat>,
    /// User-Agent header [file: fetch.user_agent].
    #[arg(long)]
    pub user_agent: Option<String>,
    /// Allow loopback, private and other non-public addresses [file: fetch.allow_private].
    #[arg(long)]
    pub allow_private: bool,
    /// Minimum seconds between two requests to one host [file: fetch.min_delay; default 1].
    #[arg(long)]
    pub min_delay: Option<f64>,
    /// Seconds allowed per document [file: fetch.timeout; default 300].
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Proxy for every request [file: fetch.proxy].
    #[arg(long)]
    pub proxy: Option<String>,
    /// Answer HOST with IP instead of DNS, repeatable [file: fetch.resolve].
    #[arg(long, value_name = "HOST=IP")]
    pub resolve: Vec<String>,
    /// Do not probe well-known sitemap paths [file: walk.probe = false].
    #[arg(long)]
    pub no_probe: bool,
    /// Index nesting followed at most [file: walk.max_depth; default 3].
    #[arg(long)]
    pub max_depth: Option<u32>,
    /// Sitemaps per site at most [file: walk.max_sitemaps; default 5000].
    #[arg(long)]
    pub max_sitemaps: Option<usize>,
    /// Sites walked at once [file: walk.parallel_sites; default 16].
    #[arg(long)]
    pub parallel_sites: Option<usize>,
    /// Scope rule: directory, host or none [file: parse.scope; default directory].
    #[arg(long)]
    pub scope: Option<String>,
    /// Strict parsing [file: parse.strict].
    #[arg(long)]
    pub strict: bool,
    /// Byte limit per document after decompression [file: parse.max_bytes].
    #[arg(long)]
    pub max_bytes: Option<u64>,
    /// Entry limit per document [file: parse.max_entries].
    #[arg(long)]
    pub max_entries: Option<u64>,
    /// Seconds a robots.txt is cached [file: refresh.robots_secs; default 86400].
    #[arg(long)]
    pub robots_secs: Option<u32>,
    /// Baseline refresh of a sitemap, seconds [file: refresh.sitemap_secs; default 86400].
    #[arg(long)]
    pub sitemap_secs: Option<u32>,
    /// Baseline refresh of a feed, seconds [file: refresh.feed_secs; default 3600].
    #[arg(long)]
    pub feed_secs: Option<u32>,
    /// Shortest refresh interval, seconds [file: refresh.min_secs; default 900].
    #[arg(long)]
    pub min_refresh_secs: Option<u32>,
    /// Longest refresh interval, seconds [file: refresh.max_secs; default 604800].
    #[arg(long)]
    pub max_refresh_secs: Option<u32>,
    /// First retry after a failed fetch, seconds, doubling [file: refresh.error_backoff_secs;
    /// default 900].
    #[arg(long)]
    pub error_backoff_secs: Option<u32>,
    /// Scheduling policy [file: scheduler.policy; default the store's, or adaptive].
    #[arg(long)]
    pub policy: Option<String>,
    /// Complete sitemap reads a URL must be absent from before it is retired
    /// [file: scheduler.retire_after; default 3].
    #[arg(long)]
    pub retire_after: Option<u64>,
    /// Default lease time to live, seconds [file: scheduler.lease_ttl_secs; default 300].
    #[arg(long)]
    pub lease_ttl: Option<i64>,
    /// URLs per host per lease at most [file: scheduler.per_host; default 10].
    #[arg(long)]
    pub per_host: Option<usize>,
    /// Seconds between two URLs of one host handed out by leases; 0: no
    /// spacing [file: scheduler.lease_delay_secs; default 1].
    #[arg(long)]
    pub lease_delay: Option<f64>,
    /// URLs per lease request at most [file: limits.max_lease; default 10000].
    #[arg(long)]
    pub max_lease: Option<usize>,
    /// Largest API request body, bytes [file: limits.max_request_bytes; default 4194304].
    #[arg(long)]
    pub max_request_bytes: Option<usize>,
    /// Seconds a client may take to send a request head, and again its body (also the
    /// longest idle wait for the next request on a connection) [file:
    /// limits.request_body_secs; default 30].
    #[arg(long)]
    pub request_body_secs: Option<u64>,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// Every setting, as read from the file (defaults for what it omits).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub store: PathBuf,
    pub listen: SocketAddr,
    pub token_file: Option<PathBuf>,
    pub log_format: LogFormat,
    pub sites: Vec<String>,
    pub fetch: FetchSettings,
    pub walk: WalkSettings,
    pub parse: ParseSettings,
    pub refresh: RefreshSettings,
    pub scheduler: SchedulerSettings,
    pub limits: LimitSettings,
}

/// `[fetch]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FetchSettings {
    pub user_agent: String,
    pub allow_private: bool,
    pub min_delay: f64,
    pub timeout: f64,
    pub proxy: Option<String>,
    pub resolve: Vec<String>,
}

/// `[walk]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WalkSettings {
    pub probe: bool,
    pub max_depth: u32,
    pub max_sitemaps: usize,
    pub parallel_sites: usize,
}

/// `[parse]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParseSettings {
    pub scope: String,
    pub strict: bool,
    pub max_bytes: u64,
    pub max_entries: u64,
}

/// `[refresh]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RefreshSettings {
    pub robots_secs: u32,
    pub sitemap_secs: u32,
    pub feed_secs: u32,
    pub min_secs: u32,
    pub max_secs: u32,
    pub error_backoff_secs: u32,
}

/// `[scheduler]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerSettings {
    pub policy: Option<String>,
    pub retire_after: u64,
    pub lease_ttl_secs: i64,
    pub per_host: usize,
    pub lease_delay_secs: f64,
}

/// `[limits]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitSettings {
    pub max_lease: usize,
    pub max_request_bytes: usize,
    pub request_body_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            store: PathBuf::from("sitemapd-data"),
            listen: SocketAddr::from(([127, 0, 0, 1], 8710)),
            token_file: None,
            log_format: LogFormat::Pretty,
            sites: Vec::new(),
            fetch: FetchSettings::default(),
            walk: WalkSettings::default(),
            parse: ParseSettings::default(),
            refresh: RefreshSettings::default(),
            scheduler: SchedulerSettings::default(),
            limits: LimitSettings::default(),
        }
    }
}

impl Default for FetchSettings {
    fn default() -> Self {
        Self {
            user_agent: concat!("sitemapd/", env!("CARGO_PKG_VERSION")).to_string(),
            allow_private: false,
            min_delay: 1.0,
            timeout: 300.0,
            proxy: None,
            resolve: Vec::new(),
        }
    }
}

impl Default for WalkSettings {
    fn default() -> Self {
        Self {
            probe: true,
            max_depth: 3,
            max_sitemaps: 5_000,
            parallel_sites: 16,
        }
    }
}

impl Default for ParseSettings {
    fn default() -> Self {
        Self {
            scope: "directory".into(),
            strict: false,
            max_bytes: DEFAULT_MAX_BYTES,
            max_entries: DEFAULT_MAX_ENTRIES,
        }
    }
}

impl Default for RefreshSettings {
    fn default() -> Self {
        let r = sitemapd_scheduler::refresh::RefreshParams::default();
        Self {
            robots_secs: 86_400,
            sitemap_secs: r.sitemap_secs,
            feed_secs: r.feed_secs,
            min_secs: r.min_secs,
            max_secs: r.max_secs,
            error_backoff_secs: r.error_backoff_secs,
        }
    }
}

impl Default for SchedulerSettings {
    fn default() -> Self {
        Self {
            policy: None,
            retire_after: 3,
            lease_ttl_secs: 300,
            per_host: 10,
            lease_delay_secs: 1.0,
        }
    }
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            max_lease: 10_000,
            max_request_bytes: 4 << 20,
            request_body_secs: 30,
        }
    }
}

/// The commented default file `--print-config` prints.
pub const DEFAULT_FILE: &str = include_str!("default.toml");

/// Sets `$target` from `$flag` when the flag was given.
macro_rules! overlay {
    ($($target:expr => $flag:expr),* $(,)?) => {
        $(if let Some(v) = $flag.clone() { $target = v.into(); })*
    };
}

impl Settings {
    /// The file (if any), then the flags over it, validated.
    pub fn load(args: &DaemonArgs) -> Result<Settings> {
        let mut s = match &args.config {
            Some(path) => Self::read(path)?,
            None => Settings::default(),
        };
        overlay! {
            s.store => args.store,
            s.listen => args.listen,
            s.log_format => args.log_format,
            s.fetch.user_agent => args.user_agent,
            s.fetch.min_delay => args.min_delay,
            s.fetch.timeout => args.timeout,
            s.walk.max_depth => args.max_depth,
            s.walk.max_sitemaps => args.max_sitemaps,
            s.walk.parallel_sites => args.parallel_sites,
            s.parse.scope => args.scope,
            s.parse.max_bytes => args.max_bytes,
            s.parse.max_entries => args.max_entries,
            s.refresh.robots_secs => args.robots_secs,
            s.refresh.sitemap_secs => args.sitemap_secs,
            s.refresh.feed_secs => args.feed_secs,
            s.refresh.min_secs => args.min_refresh_secs,
            s.refresh.max_secs => args.max_refresh_secs,
            s.refresh.error_backoff_secs => args.error_backoff_secs,
            s.scheduler.retire_after => args.retire_after,
            s.scheduler.lease_ttl_secs => args.lease_ttl,
            s.scheduler.per_host => args.per_host,
            s.scheduler.lease_delay_secs => args.lease_delay,
            s.limits.max_lease => args.max_lease,
            s.limits.max_request_bytes => args.max_request_bytes,
            s.limits.request_body_secs => args.request_body_secs,
        }
        if args.token_file.is_some() {
            s.token_file = args.token_file.clone();
        }
        if args.proxy.is_some() {
            s.fetch.proxy = args.proxy.clone();
        }
        if args.policy.is_some() {
            s.scheduler.policy = args.policy.clone();
        }
        s.fetch.allow_private |= args.allow_private;
        s.walk.probe &= !args.no_probe;
        s.parse.strict |= args.strict;
        s.fetch.resolve.extend(args.resolve.iter().cloned());
        s.sites.extend(args.sites.iter().cloned());
        s.validate().with_context(|| match &args.config {
            Some(path) => format!("bad setting (file {}, or its flag)", path.display()),
            None => "bad setting".to_string(),
        })?;
        Ok(s)
    }

    /// Reads a TOML file; unknown keys and bad types are errors naming the
    /// file, line and key.
    fn read(path: &Path) -> Result<Settings> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Range checks, and the walker settings built once to catch their
    /// errors (scope, resolve entries) before anything starts.
    fn validate(&self) -> Result<()> {
        let f = &self.fetch;
        check(
            "fetch.min_delay",
            f.min_delay.is_finite() && (0.0..=86_400.0).contains(&f.min_delay),
            "seconds between 0 and 86400",
        )?;
        check(
            "fetch.timeout",
            f.timeout.is_finite() && f.timeout > 0.0 && f.timeout <= 86_400.0,
            "seconds above 0, at most 86400",
        )?;
        check(
            "fetch.user_agent",
            !f.user_agent.trim().is_empty(),
            "must not be empty",
        )?;
        check(
            "walk.parallel_sites",
            self.walk.parallel_sites >= 1,
            "at least 1",
        )?;
        check(
            "walk.max_sitemaps",
            self.walk.max_sitemaps >= 1,
            "at least 1",
        )?;
        let r = &self.refresh;
        check("refresh.min_secs", r.min_secs >= 1, "at least 1")?;
        check(
            "refresh.max_secs",
            r.max_secs >= r.min_secs,
            "at least refresh.min_secs",
        )?;
        for (key, v) in [
            ("refresh.robots_secs", r.robots_secs),
            ("refresh.sitemap_secs", r.sitemap_secs),
            ("refresh.feed_secs", r.feed_secs),
            ("refresh.error_backoff_secs", r.error_backoff_secs),
        ] {
            check(key, v >= 1, "at least 1 second")?;
        }
        check(
            "refresh.robots_secs",
            r.robots_secs <= 86_400,
            "at most 86400: RFC 9309 caches robots.txt for 24 hours at most",
        )?;
        let sc = &self.scheduler;
        check(
            "scheduler.retire_after",
            (1..=8).contains(&sc.retire_after),
            "between 1 and 8",
        )?;
        check(
            "scheduler.lease_ttl_secs",
            sc.lease_ttl_secs >= 1,
            "at least 1",
        )?;
        check("scheduler.per_host", sc.per_host >= 1, "at least 1")?;
        check(
            "scheduler.lease_delay_secs",
            sc.lease_delay_secs.is_finite() && (0.0..=86_400.0).contains(&sc.lease_delay_secs),
            "between 0 and 86400",
        )?;
        if let Some(p) = &sc.policy {
            sitemapd_scheduler::policy::policy(p, Default::default())
                .map_err(|e| anyhow::anyhow!("scheduler.policy: {e}"))?;
        }
        check("limits.max_lease", self.limits.max_lease >= 1, "at least 1")?;
        check(
            "limits.max_request_bytes",
            self.limits.max_request_bytes >= 1024,
            "at least 1024",
        )?;
        check(
            "limits.request_body_secs",
            (1..=3_600).contains(&self.limits.request_body_secs),
            "between 1 and 3600",
        )?;
        for site in &self.sites {
            super::site_key(site).with_context(|| format!("sites: {site:?}"))?;
        }
        self.site_flags()?;
        Ok(())
    }

    /// The walk, parse and fetch settings as the CLI's flags (one place
    /// builds the walker from them).
    pub fn site_flags(&self) -> Result<SiteFlags> {
        let resolve = self
            .fetch
            .resolve
            .iter()
            .map(|r| {
                crate::cli::parse_resolve(r)
                    .map_err(|e| anyhow::anyhow!("fetch.resolve: {r:?}: {e}"))
            })
            .collect::<Result<Vec<(String, IpAddr)>>>()?;
        let scope = self
            .parse
            .scope
            .parse()
            .map_err(|e| anyhow::anyhow!("parse.scope: {e}"))?;
        Ok(SiteFlags {
            walk: WalkArgs {
                no_probe: !self.walk.probe,
                max_depth: self.walk.max_depth,
                max_sitemaps: self.walk.max_sitemaps,
                parallel_sites: self.walk.parallel_sites,
            },
            parse: ParseFlags {
                scope,
                strict: self.parse.strict,
                max_bytes: self.parse.max_bytes,
                max_entries: self.parse.max_entries,
            },
            fetch: FetchArgs {
                user_agent: self.fetch.user_agent.clone(),
                allow_private: self.fetch.allow_private,
                min_delay: self.fetch.min_delay,
                timeout: self.fetch.timeout,
                resolve,
                proxy: self.fetch.proxy.clone(),
            },
        })
    }

    /// The API token: `SITEMAPD_TOKEN`, else the token file's first line.
    pub fn token(&self) -> Result<Option<String>> {
        if let Ok(t) = std::env::var("SITEMAPD_TOKEN") {
            if !t.trim().is_empty() {
                return Ok(Some(t.trim().to_string()));
            }
        }
        let Some(path) = &self.token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim().to_string();
        if token.is_empty() {
            bail!("the token file {} is empty", path.display());
        }
        Ok(Some(token))
    }

    /// The scheduler's refresh parameters.
    pub fn refresh_params(&self) -> sitemapd_scheduler::refresh::RefreshParams {
        let r = &self.refresh;
        sitemapd_scheduler::refresh::RefreshParams {
            sitemap_secs: r.sitemap_secs,
            feed_secs: r.feed_secs,
            min_secs: r.min_secs,
            max_secs: r.max_secs,
            error_backoff_secs: r.error_backoff_secs,
        }
    }
}

fn check(key: &str, ok: bool, expected: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        bail!("{key}: expected {expected}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_default_is_the_default() {
        let s: Settings = toml::from_str(DEFAULT_FILE).unwrap();
        let d = Settings::default();
        assert_eq!(format!("{s:?}"), format!("{d:?}"));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        let e = toml::from_str::<Settings>("[fetch]\nuser_agnet = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("user_agnet"), "{e}");
        let e = toml::from_str::<Settings>("listen = \"nowhere\"\n").unwrap_err();
        assert!(e.to_string().contains("listen"), "{e}");
        let s: Settings = toml::from_str("[refresh]\nmin_secs = 10\nmax_secs = 5\n").unwrap();
        let e = s.validate().unwrap_err();
        assert!(e.to_string().contains("refresh.max_secs"), "{e}");
    }

    #[test]
    fn flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("d.toml");
        std::fs::write(&file, "store = \"a\"\n[fetch]\nmin_delay = 5.0\n").unwrap();
        let args = DaemonArgs {
            config: Some(file),
            store: Some("b".into()),
            allow_private: true,
            sites: vec!["example.com".into()],
            ..DaemonArgs::default()
        };
        let s = Settings::load(&args).unwrap();
        assert_eq!(s.store, PathBuf::from("b"));
        assert_eq!(s.fetch.min_delay, 5.0);
        assert!(s.fetch.allow_private);
        assert_eq!(s.sites, ["example.com"]);
    }
}
