//! The setting groups. Each is one struct that is at once the flags (clap
//! `Args`), a table of the TOML file (serde) and, through the field name,
//! the environment variable (`SITEMAPD_` + the name in capitals). Defaults
//! come from the libraries' `Default`; the doc comment of a field is its
//! `--help` text and its comment in `--print-config`.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::{Deserialize, Serialize};
use sitemapd_discovery::walk::follow_patterns;
use sitemapd_discovery::{FetchConfig, Fetcher, SitemapMemory, WalkConfig, Walker};
use sitemapd_parser::{NormUrl, ParseOptions, ScopeMode, Strictness};
use sitemapd_scheduler::policy::BuiltinPolicy;
use sitemapd_scheduler::refresh::RefreshParams;
use sitemapd_sim::{CrawlConfig, Scenario, SimConfig, SimPolicy, SitemapConfig, WorldConfig};

/// `[fetch]`: how documents (robots.txt, sitemaps) are fetched.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FetchSettings {
    /// User-Agent header (its first word selects the robots.txt group).
    #[arg(long, default_value_t = FetchSettings::default().user_agent)]
    pub user_agent: String,
    /// Allow loopback, private, link-local and other non-public addresses (tests, intranets).
    #[arg(long)]
    pub allow_private: bool,
    /// Minimum seconds between two requests to one host (robots.txt Crawl-delay may raise
    /// it, up to 30). The fetcher's spacing, not the crawl queue's (lease_delay).
    #[arg(long, default_value_t = FetchSettings::default().min_delay, value_parser = parse_seconds)]
    pub min_delay: f64,
    /// Total seconds allowed per document, retries included; time spent waiting for the
    /// network only (a slow consumer does not count).
    #[arg(long, default_value_t = FetchSettings::default().timeout, value_parser = parse_timeout)]
    pub timeout: f64,
    /// Answer HOST with IP instead of DNS (repeatable), like curl's --resolve; the address
    /// guard still applies.
    #[arg(long, value_name = "HOST=IP")]
    pub resolve: Vec<Resolve>,
    /// Send every request through this proxy (the system proxy settings are ignored).
    #[arg(long)]
    pub proxy: Option<String>,
}

impl Default for FetchSettings {
    fn default() -> Self {
        let d = FetchConfig::default();
        Self {
            user_agent: d.user_agent,
            allow_private: d.allow_private,
            min_delay: d.min_delay.as_secs_f64(),
            timeout: d.deadline.as_secs_f64(),
            resolve: Vec::new(),
            proxy: d.proxy,
        }
    }
}

impl FetchSettings {
    /// The fetcher configuration these settings describe.
    pub(crate) fn config(&self) -> FetchConfig {
        let mut resolve: HashMap<String, Vec<_>> = HashMap::new();
        for Resolve(host, ip) in &self.resolve {
            resolve.entry(host.clone()).or_default().push(*ip);
        }
        FetchConfig {
            user_agent: self.user_agent.clone(),
            allow_private: self.allow_private,
            min_delay: Duration::from_secs_f64(self.min_delay),
            deadline: Duration::from_secs_f64(self.timeout),
            proxy: self.proxy.clone(),
            resolve,
            ..FetchConfig::default()
        }
    }

    fn validate(&self) -> Result<()> {
        check(
            "fetch.min_delay",
            parse_seconds(&self.min_delay.to_string()).is_ok(),
            "seconds between 0 and 86400",
        )?;
        check(
            "fetch.timeout",
            parse_timeout(&self.timeout.to_string()).is_ok(),
            "seconds above 0, at most 86400",
        )?;
        check(
            "fetch.user_agent",
            !self.user_agent.trim().is_empty(),
            "must not be empty",
        )
    }
}

/// The most sitemaps per site a walk may be allowed to fetch.
const MAX_SITEMAPS_CAP: usize = 250_000;
/// The deepest index nesting a walk may be allowed to follow.
const MAX_DEPTH_CAP: u32 = 8;

/// `[walk]`: how a site is walked (robots.txt, indexes, sitemaps).
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct WalkSettings {
    /// Do not probe /sitemap.xml and other well-known paths when robots.txt declares none.
    #[arg(long)]
    pub no_probe: bool,
    /// Index nesting followed at most (0 to 8).
    #[arg(long, default_value_t = WalkSettings::default().max_depth)]
    pub max_depth: u32,
    /// Sitemaps fetched per site at most (1 to 250,000).
    #[arg(long, default_value_t = WalkSettings::default().max_sitemaps)]
    pub max_sitemaps: usize,
    /// Follow only the children of an index whose URL this regular expression is found in
    /// (repeatable: any of them; robots.txt's sitemaps are read whatever it says; none: all).
    #[arg(long, value_name = "REGEX", allow_hyphen_values = true)]
    pub follow: Vec<String>,
    /// Sites walked at once.
    #[arg(long, default_value_t = WalkSettings::default().parallel_sites)]
    pub parallel_sites: usize,
}

impl Default for WalkSettings {
    fn default() -> Self {
        let d = WalkConfig::default();
        Self {
            no_probe: !d.probe,
            max_depth: d.max_depth,
            max_sitemaps: d.max_sitemaps_per_site,
            follow: Vec::new(),
            parallel_sites: d.site_concurrency,
        }
    }
}

impl WalkSettings {
    /// The walk configuration these settings (and the parse settings) describe.
    pub(crate) fn config(&self, parse: &ParseSettings) -> Result<WalkConfig> {
        Ok(WalkConfig {
            max_depth: self.max_depth,
            max_sitemaps_per_site: self.max_sitemaps,
            probe: !self.no_probe,
            site_concurrency: self.parallel_sites.max(1),
            parse: parse.options(None),
            follow: match self.follow.is_empty() {
                true => None,
                false => Some(follow_patterns(&self.follow).map_err(|e| follow_error(&e))?),
            },
            ..WalkConfig::default()
        })
    }

    fn validate(&self) -> Result<()> {
        check(
            "walk.parallel_sites",
            self.parallel_sites >= 1,
            "at least 1",
        )?;
        check(
            "walk.max_sitemaps",
            (1..=MAX_SITEMAPS_CAP).contains(&self.max_sitemaps),
            &format!("between 1 and {MAX_SITEMAPS_CAP} (five full indexes of 50,000)"),
        )?;
        if let Err(e) = follow_patterns(&self.follow) {
            return Err(follow_error(&e));
        }
        check(
            "walk.max_depth",
            self.max_depth <= MAX_DEPTH_CAP,
            &format!(
                "at most {MAX_DEPTH_CAP} (the protocol nests one index level; real sites a few)"
            ),
        )
    }
}

fn follow_error(e: impl fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("walk.follow: expected regular expressions (the regex crate's syntax): {e}")
}

/// `[parse]`: how every fetched document is parsed.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ParseSettings {
    /// Which URLs a sitemap may list: directory (the protocol), host, or none.
    #[arg(long, value_enum, default_value_t = ParseSettings::default().scope)]
    pub scope: ScopeMode,
    /// Drop or reject what the protocol does not allow, instead of repairing it.
    #[arg(long)]
    pub strict: bool,
    /// Byte limit per document after decompression.
    #[arg(long, default_value_t = ParseSettings::default().max_bytes)]
    pub max_bytes: u64,
    /// Entry limit per document.
    #[arg(long, default_value_t = ParseSettings::default().max_entries)]
    pub max_entries: u64,
    /// Read every entry through quick-xml's events instead of the fast lane
    /// (the same results, slower: to rule the lane out when reporting a difference).
    #[arg(long)]
    pub no_fast_lane: bool,
}

impl Default for ParseSettings {
    fn default() -> Self {
        let d = ParseOptions::default();
        Self {
            scope: d.scope,
            strict: d.strictness == Strictness::Strict,
            max_bytes: d.max_bytes,
            max_entries: d.max_entries,
            no_fast_lane: !d.fast_lane,
        }
    }
}

impl ParseSettings {
    /// Parser options for a document at `url`.
    pub(crate) fn options(&self, url: Option<NormUrl>) -> ParseOptions {
        ParseOptions {
            document_url: url,
            scope: self.scope,
            strictness: if self.strict {
                Strictness::Strict
            } else {
                Strictness::Lenient
            },
            max_bytes: self.max_bytes,
            max_entries: self.max_entries,
            fast_lane: !self.no_fast_lane,
            ..ParseOptions::default()
        }
    }
}

/// Settings that walk sites: their walk, parse and fetch groups.
pub(crate) trait Site {
    /// The walk, parse and fetch groups.
    fn site(&self) -> (&WalkSettings, &ParseSettings, &FetchSettings);

    /// The walker these settings describe, remembering through `memory`.
    fn walker(&self, memory: Option<Arc<dyn SitemapMemory>>) -> Result<Walker> {
        let (walk, parse, fetch) = self.site();
        Ok(Walker::new(
            Fetcher::new(fetch.config())?,
            WalkConfig {
                memory,
                ..walk.config(parse)?
            },
        ))
    }

    /// The range checks of the walk and fetch groups.
    fn validate_site(&self) -> Result<()> {
        let (walk, _, fetch) = self.site();
        fetch.validate()?;
        walk.validate()
    }
}

/// The [`Site`] groups of a settings struct with `walk`, `parse` and `fetch` fields.
macro_rules! site {
    ($($t:ty),*) => {$(
        impl Site for $t {
            fn site(&self) -> (&WalkSettings, &ParseSettings, &FetchSettings) {
                (&self.walk, &self.parse, &self.fetch)
            }
        }
    )*};
}
site!(SiteSettings, IngestSettings, DaemonSettings);

/// The store's directory (a top-level key, `store`).
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct StoreArgs {
    /// The store's directory. `ingest` and `daemon` create it if missing; the other commands
    /// need it to exist.
    #[arg(long, default_value_os_t = StoreArgs::default().store)]
    pub store: PathBuf,
}

/// The store's directory when none is given.
pub(crate) const DEFAULT_STORE: &str = "sitemapd-data";

impl Default for StoreArgs {
    fn default() -> Self {
        Self {
            store: PathBuf::from(DEFAULT_STORE),
        }
    }
}

impl StoreArgs {
    /// Opens an existing store for `what` (a mistyped `--store` is an
    /// error, not a new empty store).
    pub(crate) fn open_existing(&self, what: StoreUse) -> Result<sitemapd_scheduler::Store> {
        let options = sitemapd_scheduler::StoreOptions {
            cache_bytes: what.cache_bytes(),
            ..Default::default()
        };
        self.open_existing_with(what, options)
    }

    /// Opens an existing store with `options`, for `what`.
    pub(crate) fn open_existing_with(
        &self,
        what: StoreUse,
        options: sitemapd_scheduler::StoreOptions,
    ) -> Result<sitemapd_scheduler::Store> {
        if !self.store.exists() {
            bail!(
                "no store at {} (sitemapd ingest creates one)",
                self.store.display()
            );
        }
        self.open(what, options)
    }

    /// Opens the store with `options` (created if missing).
    pub(crate) fn open_with(
        &self,
        options: sitemapd_scheduler::StoreOptions,
    ) -> Result<sitemapd_scheduler::Store> {
        self.open(StoreUse::Write, options)
    }

    fn open(
        &self,
        what: StoreUse,
        options: sitemapd_scheduler::StoreOptions,
    ) -> Result<sitemapd_scheduler::Store> {
        let dir = self.store.display();
        if self.store.exists() && !self.store.is_dir() {
            bail!(
                "the store path {dir} is a file, not a store directory: give --store a \
                 directory (sitemapd ingest creates one there)"
            );
        }
        match sitemapd_scheduler::Store::open(&self.store, options) {
            Ok(store) => Ok(store),
            Err(sitemapd_scheduler::StoreError::InUse(_)) => bail!(
                "the store at {dir} is in use by another sitemapd process: a `sitemapd \
                 daemon`, or another command on this store (`ingest`, `queue`, …); a store is \
                 open in one process at a time. If it is a command, run this one again when it \
                 is done. If it is a daemon: {} Or stop the daemon (SIGINT or SIGTERM) and run \
                 the command again.",
                what.instead()
            ),
            Err(e) => Err(e).with_context(|| format!("cannot open the store at {dir}")),
        }
    }
}

/// What a command opens the store for: says, when a daemon holds the store,
/// which of the daemon's routes give the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreUse {
    /// `sitemapd stats`.
    Stats,
    /// `sitemapd export`.
    Export,
    /// `sitemapd queue` without `--lease`.
    Peek,
    /// `sitemapd queue --lease`.
    Lease,
    /// `sitemapd complete`.
    Complete,
    /// `ingest`, `daemon`: the commands that create a store.
    Write,
}

impl StoreUse {
    /// sled's page cache for this use, bytes: `stats` and `export` read
    /// every page once, in key order, so a cache only holds pages they
    /// are done with. On a 1M-URL store 4 MiB took `stats` from 205 to
    /// 131 MiB of peak RSS, in the same time; `stats --check` (a lookup
    /// per record) took 19.2 s against 17.8 with 32 MiB, for 58 MiB less.
    /// The others keep the default.
    pub(crate) fn cache_bytes(self) -> u64 {
        match self {
            StoreUse::Stats | StoreUse::Export => 4 << 20,
            _ => sitemapd_scheduler::StoreOptions::default().cache_bytes,
        }
    }

    /// What to do instead while the daemon runs: its HTTP routes (docs/daemon.md).
    pub(crate) fn instead(self) -> &'static str {
        match self {
            StoreUse::Stats => {
                "While it runs, ask the daemon over HTTP: `GET /v1/stats` answers what \
                 `sitemapd stats --json` prints, `GET /v1/sites` the sites it follows."
            }
            StoreUse::Export => {
                "While it runs, ask the daemon over HTTP, one record at a time: \
                 `GET /v1/urls?url=URL` answers a URL's record, `GET /v1/sitemaps?site=SITE` a \
                 site's sitemaps, `GET /v1/stats` the counts (the daemon has no bulk export)."
            }
            StoreUse::Peek => {
                "While it runs, ask the daemon over HTTP: `POST /v1/lease` hands out the due \
                 URLs (leasing them; the daemon has no route that lists them without leasing), \
                 `GET /v1/stats` counts them (`due_now`), `GET /v1/urls?url=URL` shows one."
            }
            StoreUse::Lease => "While it runs, lease from the daemon: `POST /v1/lease`.",
            StoreUse::Complete => {
                "While it runs, report outcomes to the daemon: `POST /v1/complete` (the same \
                 JSON items, as an array)."
            }
            StoreUse::Write => {
                "While it runs, `POST /v1/sites` has the daemon follow (and walk) a site."
            }
        }
    }
}

/// `[scheduler]`: the crawl queue.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SchedulerSettings {
    /// Scheduling policy, remembered by the store [default: the store's, or lastmod].
    #[arg(long, value_enum)]
    pub policy: Option<BuiltinPolicy>,
    /// Complete sitemap reads a URL must be absent from before it is retired (1-8).
    #[arg(long, default_value_t = SchedulerSettings::default().retire_after)]
    pub retire_after: u64,
    /// Lease time to live when a lease request gives none, seconds.
    #[arg(long, value_name = "SECS", default_value_t = SchedulerSettings::default().lease_ttl)]
    pub lease_ttl: i64,
    /// URLs of one host per lease at most (a request may ask for fewer).
    #[arg(long, default_value_t = SchedulerSettings::default().per_host)]
    pub per_host: usize,
    /// Seconds between two URLs of one host that leases hand out (each URL's not_before is
    /// spaced by it, and a lease gives a host at most ttl / delay URLs); 0: no spacing. The
    /// crawler's politeness, not the sitemap fetcher's (min_delay).
    #[arg(long, value_name = "SECS", default_value_t = SchedulerSettings::default().lease_delay)]
    pub lease_delay: f64,
    /// Crawl on change (policy lastmod): a URL of a host whose lastmods announce every
    /// change is refetched after this long at the latest when its lastmod has not moved.
    #[arg(long, value_name = "SECS", default_value_t = SchedulerSettings::default().safety_interval)]
    pub safety_interval: f64,
    /// Crawl on change: the share of fetches that re-validate such hosts' unmoved lastmods
    /// (0 to 1).
    #[arg(long, default_value_t = SchedulerSettings::default().validation_share)]
    pub validation_share: f64,
    /// The share of each lease that changes a trusted host's lastmod announces may take
    /// ahead of new URLs (0 to 1; 1: always first, 0: in turn among them, the longest
    /// waiting first). See docs/queue.md.
    #[arg(long, default_value_t = SchedulerSettings::default().announced_share)]
    pub announced_share: f64,
    /// A URL retired by its fetches (gone: 410 or 404 three times; moved: 301/308 twice) is
    /// probed this long after its last attempt, in case it answers again.
    #[arg(long, value_name = "SECS", default_value_t = SchedulerSettings::default().probe_interval)]
    pub probe_interval: f64,
    /// Partitions of the store (1-1024), each with its own write lock: leases, completions
    /// and ingests of different sites run side by side. A new store is made with this many;
    /// a store of one partition (one made before partitions included) is moved into them as
    /// it opens; a store of several keeps its number.
    #[arg(long, default_value_t = SchedulerSettings::default().partitions)]
    pub partitions: u16,
    /// The store is compacted (the disk space sled keeps of rewritten records given back;
    /// by the daemon as it runs, by `ingest` as it ends) when its files have grown to this
    /// many times what the last compaction left; 0: never (`sitemapd stats --compact` still
    /// does).
    #[arg(long, default_value_t = SchedulerSettings::default().compact_growth)]
    pub compact_growth: f64,
    /// ... and are past this many MiB (a store never compacted: once past it).
    #[arg(long, value_name = "MIB", default_value_t = SchedulerSettings::default().compact_floor_mib)]
    pub compact_floor_mib: u64,
}

impl Default for SchedulerSettings {
    fn default() -> Self {
        let d = sitemapd_scheduler::StoreOptions::default();
        let lease = sitemapd_scheduler::LeaseRequest::new(1);
        Self {
            policy: None,
            retire_after: d.retire_after,
            lease_ttl: i64::try_from(lease.ttl.as_secs()).unwrap_or(i64::MAX),
            per_host: lease.per_host,
            lease_delay: d.min_delay,
            safety_interval: d.params.safety_interval,
            validation_share: d.params.validation_share,
            announced_share: d.params.announced_share,
            probe_interval: d.params.probe_interval,
            partitions: d.partitions,
            compact_growth: d.compact_growth,
            compact_floor_mib: d.compact_floor_bytes >> 20,
        }
    }
}

impl SchedulerSettings {
    /// The store options these settings describe.
    pub(crate) fn store_options(&self) -> sitemapd_scheduler::StoreOptions {
        sitemapd_scheduler::StoreOptions {
            policy: self.policy.map(|p| p.name().to_string()),
            retire_after: self.retire_after,
            min_delay: self.lease_delay,
            params: sitemapd_scheduler::policy::Params {
                safety_interval: self.safety_interval,
                validation_share: self.validation_share,
                announced_share: self.announced_share,
                probe_interval: self.probe_interval,
                ..Default::default()
            },
            partitions: self.partitions,
            compact_growth: self.compact_growth,
            compact_floor_bytes: self.compact_floor_mib.saturating_mul(1 << 20),
            ..Default::default()
        }
    }

    fn validate(&self) -> Result<()> {
        check(
            "scheduler.retire_after",
            (1..=8).contains(&self.retire_after),
            "between 1 and 8",
        )?;
        check(
            "scheduler.partitions",
            (1..=sitemapd_scheduler::MAX_PARTITIONS).contains(&self.partitions),
            "between 1 and 1024",
        )?;
        check(
            "scheduler.compact_growth",
            self.compact_growth == 0.0 || (1.2..=100.0).contains(&self.compact_growth),
            "0 (never) or between 1.2 and 100",
        )?;
        check(
            "scheduler.compact_floor_mib",
            self.compact_floor_mib >= 1,
            "at least 1",
        )?;
        check("scheduler.lease_ttl", self.lease_ttl >= 1, "at least 1")?;
        check("scheduler.per_host", self.per_host >= 1, "at least 1")?;
        check(
            "scheduler.safety_interval",
            self.safety_interval.is_finite() && self.safety_interval >= 3600.0,
            "at least 3600 seconds",
        )?;
        check(
            "scheduler.probe_interval",
            self.probe_interval.is_finite() && self.probe_interval >= 3600.0,
            "at least 3600 seconds",
        )?;
        check(
            "scheduler.validation_share",
            (0.0..=1.0).contains(&self.validation_share),
            "between 0 and 1",
        )?;
        check(
            "scheduler.announced_share",
            (0.0..=1.0).contains(&self.announced_share),
            "between 0 and 1",
        )?;
        check(
            "scheduler.lease_delay",
            parse_seconds(&self.lease_delay.to_string()).is_ok(),
            "between 0 and 86400",
        )
    }
}

/// `[refresh]`: how often the daemon re-reads robots.txt and sitemaps. A sitemap's interval
/// halves when a read finds a change and grows 1.5x when it does not, within
/// [min_refresh_secs, max_refresh_secs]; a failed fetch is retried after
/// error_backoff_secs, doubling per failure in a row.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct RefreshSettings {
    /// Seconds a robots.txt is cached (RFC 9309: 24 hours at most).
    #[arg(long, default_value_t = RefreshSettings::default().robots_secs)]
    pub robots_secs: u32,
    /// Baseline refresh of a sitemap, seconds.
    #[arg(long, default_value_t = RefreshSettings::default().sitemap_secs)]
    pub sitemap_secs: u32,
    /// Baseline refresh of a feed (RSS/Atom), seconds.
    #[arg(long, default_value_t = RefreshSettings::default().feed_secs)]
    pub feed_secs: u32,
    /// Shortest refresh interval, seconds.
    #[arg(long, default_value_t = RefreshSettings::default().min_refresh_secs)]
    pub min_refresh_secs: u32,
    /// Longest refresh interval, seconds.
    #[arg(long, default_value_t = RefreshSettings::default().max_refresh_secs)]
    pub max_refresh_secs: u32,
    /// First retry after a failed fetch, seconds, doubling.
    #[arg(long, default_value_t = RefreshSettings::default().error_backoff_secs)]
    pub error_backoff_secs: u32,
}

/// How long a robots.txt is cached by default: RFC 9309's longest.
pub(crate) const DEFAULT_ROBOTS_SECS: u32 = 86_400;

impl Default for RefreshSettings {
    fn default() -> Self {
        let r = RefreshParams::default();
        Self {
            robots_secs: DEFAULT_ROBOTS_SECS,
            sitemap_secs: r.sitemap_secs,
            feed_secs: r.feed_secs,
            min_refresh_secs: r.min_secs,
            max_refresh_secs: r.max_secs,
            error_backoff_secs: r.error_backoff_secs,
        }
    }
}

impl RefreshSettings {
    /// The scheduler's refresh parameters.
    pub(crate) fn params(&self) -> RefreshParams {
        RefreshParams {
            sitemap_secs: self.sitemap_secs,
            feed_secs: self.feed_secs,
            min_secs: self.min_refresh_secs,
            max_secs: self.max_refresh_secs,
            error_backoff_secs: self.error_backoff_secs,
        }
    }

    fn validate(&self) -> Result<()> {
        check(
            "refresh.min_refresh_secs",
            self.min_refresh_secs >= 1,
            "at least 1",
        )?;
        check(
            "refresh.max_refresh_secs",
            self.max_refresh_secs >= self.min_refresh_secs,
            "at least refresh.min_refresh_secs",
        )?;
        for (key, v) in [
            ("refresh.robots_secs", self.robots_secs),
            ("refresh.sitemap_secs", self.sitemap_secs),
            ("refresh.feed_secs", self.feed_secs),
            ("refresh.error_backoff_secs", self.error_backoff_secs),
        ] {
            check(key, v >= 1, "at least 1 second")?;
        }
        check(
            "refresh.robots_secs",
            self.robots_secs <= DEFAULT_ROBOTS_SECS,
            "at most 86400: RFC 9309 caches robots.txt for 24 hours at most",
        )
    }
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// Human-readable.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// `[api]`: the daemon's HTTP API and its logs.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ApiSettings {
    /// Address of the HTTP API. Off loopback an API token is required.
    #[arg(long, default_value_t = ApiSettings::default().listen)]
    pub listen: SocketAddr,
    /// A file whose first line is the API token. The token may also come from the
    /// SITEMAPD_TOKEN environment variable; never from the command line.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Log format on stderr (the level comes from SITEMAPD_LOG, default info).
    #[arg(long, value_enum, default_value_t = ApiSettings::default().log_format)]
    pub log_format: LogFormat,
    /// URLs one lease request may ask for at most.
    #[arg(long, default_value_t = ApiSettings::default().max_lease)]
    pub max_lease: usize,
    /// Largest API request body, bytes.
    #[arg(long, default_value_t = ApiSettings::default().max_request_bytes)]
    pub max_request_bytes: usize,
    /// Seconds a client may take to send a request body once its head has arrived (then 408).
    #[arg(long, value_name = "SECS", default_value_t = ApiSettings::default().request_body_secs)]
    pub request_body_secs: u64,
    /// Seconds a client may take to send a request head, from connecting, or from the end of
    /// the previous answer on a kept-alive connection; then the connection is closed.
    #[arg(long, value_name = "SECS", default_value_t = ApiSettings::default().head_timeout_secs)]
    pub head_timeout_secs: u64,
    /// Connections the API holds at most; lowered at start to stay below the open-file limit
    /// (RLIMIT_NOFILE, less 256 for the store and the fetcher). When all are taken, a new
    /// connection takes the slot of the oldest idle one (no request in flight) of the address
    /// holding the most, which is closed; with none idle it is answered 503. The URLFrontier
    /// service holds as many in a pool of its own (within what the open-file limit leaves), and
    /// closes one more as soon as it is accepted.
    #[arg(long, default_value_t = ApiSettings::default().max_connections)]
    pub max_connections: usize,
    /// Connections one client address (an IPv4 address, an IPv6 /64) holds at most; its next
    /// one takes the slot of its own oldest idle connection, or is answered 503.
    #[arg(long, default_value_t = ApiSettings::default().max_connections_per_ip)]
    pub max_connections_per_ip: usize,
    /// Origins (`https://host[:port]`) whose browser pages may call the API; a request with
    /// any other Origin header is refused (403). Default none: every request from a page is
    /// refused. The API sends no CORS headers: an origin here is for pages served from the
    /// same origin as the API (behind a reverse proxy).
    #[arg(long, value_delimiter = ',', value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Names the API answers to in the Host header (`name` for any port, `name:port`), besides
    /// IP addresses and, listening on loopback, localhost; any other Host is refused (421),
    /// against DNS rebinding.
    #[arg(long, value_delimiter = ',', value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Address of the URLFrontier gRPC service (crawler-commons' frontier protocol; 7071 is
    /// its usual port), on the same store and queue as the HTTP API. Default off. Off loopback
    /// it requires the API token, sent as gRPC metadata `authorization: Bearer <token>`, or
    /// client certificates (`urlfrontier_client_ca`).
    #[arg(long, value_name = "ADDR")]
    pub urlfrontier_listen: Option<SocketAddr>,
    /// The URLFrontier service's TLS certificate chain (PEM). With `urlfrontier_tls_key`, the
    /// service speaks gRPC over TLS only.
    #[arg(long, value_name = "FILE")]
    pub urlfrontier_tls_cert: Option<PathBuf>,
    /// The private key of `urlfrontier_tls_cert` (PEM).
    #[arg(long, value_name = "FILE")]
    pub urlfrontier_tls_key: Option<PathBuf>,
    /// Mutual TLS: the CA certificates (PEM) that sign the clients' certificates. A client
    /// without a certificate signed by one of them is refused during the TLS handshake, and a
    /// verified certificate stands for the API token (StormCrawler's client can present a
    /// certificate but cannot send a token). Needs `urlfrontier_tls_cert`.
    #[arg(long, value_name = "FILE")]
    pub urlfrontier_client_ca: Option<PathBuf>,
}

/// The shortest API token accepted off loopback, bytes.
pub(crate) const MIN_TOKEN_BYTES: usize = 16;

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8710)),
            token_file: None,
            log_format: LogFormat::Pretty,
            max_lease: 10_000,
            max_request_bytes: 4 << 20,
            request_body_secs: 30,
            head_timeout_secs: 5,
            max_connections: 512,
            max_connections_per_ip: 128,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            urlfrontier_listen: None,
            urlfrontier_tls_cert: None,
            urlfrontier_tls_key: None,
            urlfrontier_client_ca: None,
        }
    }
}

impl ApiSettings {
    /// The API token: `SITEMAPD_TOKEN`, else the token file's first line.
    /// Set but empty, either is an error (it used to mean "no token").
    pub(crate) fn token(&self) -> Result<Option<String>> {
        if let Some(t) = std::env::var_os("SITEMAPD_TOKEN") {
            let Some(t) = t.to_str() else {
                bail!("SITEMAPD_TOKEN is not UTF-8");
            };
            if t.trim().is_empty() {
                bail!(
                    "SITEMAPD_TOKEN is set but empty: give a token, or unset the variable to run \
                     without one (on loopback only)"
                );
            }
            return Ok(Some(t.trim().to_string()));
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

    fn validate(&self) -> Result<()> {
        check("api.max_lease", self.max_lease >= 1, "at least 1")?;
        check(
            "api.max_request_bytes",
            self.max_request_bytes >= 1024,
            "at least 1024",
        )?;
        check(
            "api.request_body_secs",
            (1..=3_600).contains(&self.request_body_secs),
            "between 1 and 3600",
        )?;
        check(
            "api.head_timeout_secs",
            (1..=3_600).contains(&self.head_timeout_secs),
            "between 1 and 3600",
        )?;
        check(
            "api.max_connections",
            (1..=1_000_000).contains(&self.max_connections),
            "between 1 and 1000000",
        )?;
        check(
            "api.max_connections_per_ip",
            (1..=self.max_connections).contains(&self.max_connections_per_ip),
            "between 1 and api.max_connections",
        )?;
        check(
            "api.urlfrontier_tls_key",
            self.urlfrontier_tls_cert.is_some() == self.urlfrontier_tls_key.is_some(),
            "set with api.urlfrontier_tls_cert: a certificate and its key go together",
        )?;
        check(
            "api.urlfrontier_client_ca",
            self.urlfrontier_client_ca.is_none() || self.urlfrontier_tls_cert.is_some(),
            "set only with api.urlfrontier_tls_cert and api.urlfrontier_tls_key: client \
             certificates are asked for during a TLS handshake",
        )?;
        Ok(())
    }
}

/// `[cluster]`: cluster mode (docs/cluster.md). Off unless `cluster` names NATS servers: then
/// the daemon joins the cluster on them as `node_id`, appends every write to the partitions'
/// replicated log there, serves the partitions it owns, and ListNodes answers every live node's
/// `advertise` address.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ClusterSettings {
    /// NATS servers of the cluster (`nats://host:port`, comma-separated; any one reachable is
    /// enough). Default none: a single node, no NATS.
    #[arg(long, value_delimiter = ',', value_name = "NATS_URL")]
    pub cluster: Vec<String>,
    /// This node's name in the cluster: unique, the same across its restarts; ASCII letters,
    /// digits, '-' and '_', at most 64.
    #[arg(long, value_name = "NAME")]
    pub node_id: Option<String>,
    /// The address (HOST:PORT) crawlers and other nodes reach this node's URLFrontier service
    /// at. Default: api.urlfrontier_listen, unless it is a wildcard address (0.0.0.0, ::). Other
    /// nodes reach its HTTP API at the same host, on api.listen's port.
    #[arg(long, value_name = "HOST:PORT")]
    pub advertise: Option<String>,
    /// Replicas of the cluster's JetStream buckets: 3 (or 5) in production, at most the
    /// number of NATS servers.
    #[arg(long, default_value_t = ClusterSettings::default().cluster_replicas)]
    pub cluster_replicas: usize,
    /// Seconds a node's membership and partitions outlive its last heartbeat (it heartbeats
    /// every third of it): a dead node's partitions are claimed about this long after it
    /// died. Keep it above a NATS server's failover (4 to 9 s).
    #[arg(long, value_name = "SECS", default_value_t = ClusterSettings::default().cluster_lease_secs)]
    pub cluster_lease_secs: u64,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            cluster: Vec::new(),
            node_id: None,
            advertise: None,
            cluster_replicas: 3,
            cluster_lease_secs: sitemapd_cluster::DEFAULT_LEASE.as_secs(),
        }
    }
}

impl ClusterSettings {
    fn validate(&self) -> Result<()> {
        check(
            "cluster.cluster_replicas",
            (1..=5).contains(&self.cluster_replicas),
            "between 1 and 5",
        )?;
        check(
            "cluster.cluster_lease_secs",
            (1..=3_600).contains(&self.cluster_lease_secs),
            "between 1 and 3600",
        )?;
        if self.cluster.is_empty() {
            return Ok(());
        }
        check(
            "cluster.node_id",
            self.node_id
                .as_deref()
                .is_some_and(sitemapd_cluster::valid_node_id),
            "set in cluster mode: 1 to 64 ASCII letters, digits, '-' and '_'",
        )
    }

    /// The node's cluster config, when cluster mode is on: its partitions are
    /// the store's, its address `advertise` or else `frontier`, the address
    /// the URLFrontier service listens on.
    pub(crate) fn config(
        &self,
        frontier: Option<SocketAddr>,
        partitions: u16,
    ) -> Result<Option<sitemapd_cluster::ClusterConfig>> {
        if self.cluster.is_empty() {
            return Ok(None);
        }
        let advertise = match (&self.advertise, frontier) {
            (Some(a), _) => a.clone(),
            (None, Some(listen)) if !listen.ip().is_unspecified() => listen.to_string(),
            _ => bail!(
                "cluster.advertise: set it to the HOST:PORT other nodes and crawlers reach this \
                 node's URLFrontier service at (api.urlfrontier_listen is not set, or is a \
                 wildcard address)"
            ),
        };
        let config = sitemapd_cluster::ClusterConfig {
            replicas: self.cluster_replicas,
            lease: Duration::from_secs(self.cluster_lease_secs),
            ..sitemapd_cluster::ClusterConfig::new(
                self.cluster.clone(),
                self.node_id.clone().unwrap_or_default(),
                advertise,
                partitions,
            )
        };
        config.validate()?;
        Ok(Some(config))
    }
}

/// `[indexnow]`: the IndexNow intake, the protocol sites use to push the URLs
/// that changed (docs/indexnow.md).
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct IndexNowSettings {
    /// Address of the IndexNow intake (`GET /indexnow?url=&key=`, `POST /indexnow`). Default
    /// off. Public by nature: no API token on it; a push is applied once its host's key file
    /// holds its key.
    #[arg(long, value_name = "ADDR")]
    pub indexnow_listen: Option<SocketAddr>,
    /// Which hosts' pushes are accepted: `followed` (hosts the store holds URLs of, and the
    /// hosts of followed sites), `any` (an open intake: new hosts are added, at most
    /// indexnow_new_hosts_per_day a day), or a list of hosts (`host` or `host:port`).
    #[arg(long, value_delimiter = ',', value_name = "HOSTS", default_values_t = IndexNowSettings::default().indexnow_hosts)]
    pub indexnow_hosts: Vec<String>,
    /// Requests one host's pushes may make per minute (then 429 with Retry-After).
    #[arg(long, default_value_t = IndexNowSettings::default().indexnow_host_requests_per_minute)]
    pub indexnow_host_requests_per_minute: u32,
    /// URLs one host's pushes may name per day (UTC).
    #[arg(long, default_value_t = IndexNowSettings::default().indexnow_host_urls_per_day)]
    pub indexnow_host_urls_per_day: u64,
    /// Requests one client address (an IPv4 address, an IPv6 /64) may make per minute.
    #[arg(long, default_value_t = IndexNowSettings::default().indexnow_client_requests_per_minute)]
    pub indexnow_client_requests_per_minute: u32,
    /// URLs one client address may push per day (UTC).
    #[arg(long, default_value_t = IndexNowSettings::default().indexnow_client_urls_per_day)]
    pub indexnow_client_urls_per_day: u64,
    /// With `indexnow_hosts = ["any"]`: hosts the store holds no URL of that pushes may add
    /// per day (UTC).
    #[arg(long, default_value_t = IndexNowSettings::default().indexnow_new_hosts_per_day)]
    pub indexnow_new_hosts_per_day: u64,
    /// A URL pushed again within this many seconds is counted once (0: every push counts).
    #[arg(long, value_name = "SECS", default_value_t = IndexNowSettings::default().indexnow_dedup_secs)]
    pub indexnow_dedup_secs: u64,
    /// Seconds after which a verified key file is fetched again (a file that no longer holds
    /// the key revokes it).
    #[arg(long, value_name = "SECS", default_value_t = IndexNowSettings::default().indexnow_recheck_secs)]
    pub indexnow_recheck_secs: u64,
    /// Seconds during which a key whose file did not hold it is refused (403) without
    /// fetching the file again.
    #[arg(long, value_name = "SECS", default_value_t = IndexNowSettings::default().indexnow_refused_secs)]
    pub indexnow_refused_secs: u64,
    /// Reverse proxies in front of the intake: for a connection from one of these addresses
    /// the client is the last address of its X-Forwarded-For header.
    #[arg(long, value_delimiter = ',', value_name = "IP")]
    pub indexnow_trusted_proxies: Vec<IpAddr>,
}

impl Default for IndexNowSettings {
    fn default() -> Self {
        Self {
            indexnow_listen: None,
            indexnow_hosts: vec!["followed".into()],
            indexnow_host_requests_per_minute: 60,
            indexnow_host_urls_per_day: 100_000,
            indexnow_client_requests_per_minute: 120,
            indexnow_client_urls_per_day: 200_000,
            indexnow_new_hosts_per_day: 1_000,
            indexnow_dedup_secs: 600,
            indexnow_recheck_secs: 86_400,
            indexnow_refused_secs: 3_600,
            indexnow_trusted_proxies: Vec::new(),
        }
    }
}

impl IndexNowSettings {
    fn validate(&self) -> Result<()> {
        let hosts = &self.indexnow_hosts;
        let special = |h: &String| h == "any" || h == "followed";
        check(
            "indexnow.indexnow_hosts",
            !hosts.is_empty() && (hosts.len() == 1 || !hosts.iter().any(special)),
            "`followed`, `any`, or a list of hosts",
        )?;
        for host in hosts.iter().filter(|h| !special(h)) {
            super::host_key(host)
                .with_context(|| format!("indexnow.indexnow_hosts: {host:?} is not a host"))?;
        }
        for (key, value) in [
            (
                "indexnow.indexnow_host_requests_per_minute",
                u64::from(self.indexnow_host_requests_per_minute),
            ),
            (
                "indexnow.indexnow_client_requests_per_minute",
                u64::from(self.indexnow_client_requests_per_minute),
            ),
            (
                "indexnow.indexnow_host_urls_per_day",
                self.indexnow_host_urls_per_day,
            ),
            (
                "indexnow.indexnow_client_urls_per_day",
                self.indexnow_client_urls_per_day,
            ),
        ] {
            check(key, value >= 1, "at least 1")?;
        }
        check(
            "indexnow.indexnow_recheck_secs",
            self.indexnow_recheck_secs >= 60,
            "at least 60",
        )?;
        Ok(())
    }
}

/// The simulator's settings: the run matrix (policies × seeds), the run's
/// length, and the `[world]`, `[sitemap]` and `[crawl]` tables of
/// [`sitemapd_sim::SimConfig`].
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SimulateSettings {
    /// Policies to compare, comma-separated (`oracle`: the upper bound, which knows the true
    /// change times).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = SimPolicy::all())]
    pub policies: Vec<SimPolicy>,
    /// A named world of sitemaps: sets lastmod, recall, delay_hours, liar and the host mix
    /// (budget, size and seeds stay as set).
    #[arg(long, value_enum)]
    pub scenario: Option<Scenario>,
    /// Seeds per policy (1 to 1000).
    #[arg(long, default_value_t = SimulateSettings::default().seeds)]
    pub seeds: u64,
    /// The first seed (the others follow it).
    #[arg(long, default_value_t = SimulateSettings::default().first_seed)]
    pub first_seed: u64,
    /// Runs at once [default: the number of cores].
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Simulated days.
    #[arg(long, default_value_t = SimConfig::default().days)]
    pub days: f64,
    /// Days left out of the summary's time averages [default: a quarter of the run].
    #[arg(long)]
    pub warmup_days: Option<f64>,
    /// Hours per row of metrics.csv.
    #[arg(long, default_value_t = SimConfig::default().sample_hours)]
    pub sample_hours: f64,
    // The simulated web, what the hosts' sitemaps say, the crawler.
    #[command(flatten, next_help_heading = "World")]
    pub world: WorldConfig,
    #[command(flatten, next_help_heading = "Sitemap")]
    pub sitemap: SitemapConfig,
    #[command(flatten, next_help_heading = "Crawl")]
    pub crawl: CrawlConfig,
}

impl Default for SimulateSettings {
    fn default() -> Self {
        let d = SimConfig::default();
        Self {
            policies: SimPolicy::all(),
            scenario: None,
            seeds: 3,
            first_seed: 1,
            jobs: None,
            days: d.days,
            warmup_days: d.warmup_days,
            sample_hours: d.sample_hours,
            world: d.world,
            sitemap: d.sitemap,
            crawl: d.crawl,
        }
    }
}

impl SimulateSettings {
    /// The simulation these settings describe.
    pub(crate) fn sim(&self) -> SimConfig {
        let mut sim = SimConfig {
            days: self.days,
            warmup_days: self.warmup_days,
            sample_hours: self.sample_hours,
            world: self.world.clone(),
            sitemap: self.sitemap.clone(),
            crawl: self.crawl.clone(),
        };
        if let Some(scenario) = self.scenario {
            scenario.apply(&mut sim);
        }
        sim
    }

    fn validate(&self) -> Result<()> {
        self.sim().validate().context("simulation settings")?;
        if self.policies.is_empty() {
            bail!("no policy to simulate");
        }
        let mut unique = self.policies.clone();
        unique.sort_by_key(|p| p.name());
        unique.dedup();
        if unique.len() != self.policies.len() {
            bail!("a policy is named twice");
        }
        if self.seeds == 0 || self.seeds > 1_000 {
            bail!("--seeds {}: expected 1 to 1000", self.seeds);
        }
        Ok(())
    }
}

/// One `--resolve` entry, `HOST=IP`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolve(pub String, pub IpAddr);

impl FromStr for Resolve {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
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
        Ok(Resolve(host.to_ascii_lowercase(), ip))
    }
}

impl fmt::Display for Resolve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.0, self.1)
    }
}

impl Serialize for Resolve {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Resolve {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Seconds between 0 and a day.
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

fn check(key: &str, ok: bool, expected: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        bail!("{key}: expected {expected}")
    }
}

// The settings of each command: the groups it takes, validated together.

/// A command's settings: groups of [`Args`] that are also TOML tables.
pub(crate) trait Settings:
    Args + Serialize + serde::de::DeserializeOwned + Default + Clone + fmt::Debug
{
    /// Range checks the types do not make (the first key out of range is the error).
    fn validate(&self) -> Result<()>;
}

/// `parse`: how the document is fetched and parsed.
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ParseCommandSettings {
    #[command(flatten, next_help_heading = "Parse")]
    pub parse: ParseSettings,
    #[command(flatten, next_help_heading = "Fetch")]
    pub fetch: FetchSettings,
}

impl Settings for ParseCommandSettings {
    fn validate(&self) -> Result<()> {
        self.fetch.validate()
    }
}

/// `robots`: how the robots.txt is fetched.
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct RobotsCommandSettings {
    #[command(flatten, next_help_heading = "Fetch")]
    pub fetch: FetchSettings,
}

impl Settings for RobotsCommandSettings {
    fn validate(&self) -> Result<()> {
        self.fetch.validate()
    }
}

/// `discover`: how sites are walked, documents fetched and parsed.
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SiteSettings {
    #[command(flatten, next_help_heading = "Walk")]
    pub walk: WalkSettings,
    #[command(flatten, next_help_heading = "Parse")]
    pub parse: ParseSettings,
    #[command(flatten, next_help_heading = "Fetch")]
    pub fetch: FetchSettings,
}

impl Settings for SiteSettings {
    fn validate(&self) -> Result<()> {
        self.validate_site()
    }
}

/// `ingest`: the store, its scheduler, and the walk.
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct IngestSettings {
    #[command(flatten, next_help_heading = "Store")]
    pub store: StoreArgs,
    #[command(flatten, next_help_heading = "Scheduler")]
    pub scheduler: SchedulerSettings,
    #[command(flatten, next_help_heading = "Walk")]
    pub walk: WalkSettings,
    #[command(flatten, next_help_heading = "Parse")]
    pub parse: ParseSettings,
    #[command(flatten, next_help_heading = "Fetch")]
    pub fetch: FetchSettings,
}

impl Settings for IngestSettings {
    fn validate(&self) -> Result<()> {
        self.scheduler.validate()?;
        self.validate_site()
    }
}

/// `queue`: the store and its scheduler.
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct QueueSettings {
    #[command(flatten, next_help_heading = "Store")]
    pub store: StoreArgs,
    #[command(flatten, next_help_heading = "Scheduler")]
    pub scheduler: SchedulerSettings,
}

impl Settings for QueueSettings {
    fn validate(&self) -> Result<()> {
        self.scheduler.validate()
    }
}

/// `daemon`: everything but the simulator.
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct DaemonSettings {
    #[command(flatten, next_help_heading = "Store")]
    pub store: StoreArgs,
    /// Sites to follow: `example.com`, `https://example.com/`, or a sitemap URL. The API
    /// (POST /v1/sites) adds more; the store remembers them all. SITE arguments add to them.
    #[arg(skip)]
    pub sites: Vec<String>,
    #[command(flatten, next_help_heading = "API")]
    pub api: ApiSettings,
    #[command(flatten, next_help_heading = "IndexNow")]
    pub indexnow: IndexNowSettings,
    #[command(flatten, next_help_heading = "Cluster")]
    pub cluster: ClusterSettings,
    #[command(flatten, next_help_heading = "Scheduler")]
    pub scheduler: SchedulerSettings,
    #[command(flatten, next_help_heading = "Refresh")]
    pub refresh: RefreshSettings,
    #[command(flatten, next_help_heading = "Walk")]
    pub walk: WalkSettings,
    #[command(flatten, next_help_heading = "Parse")]
    pub parse: ParseSettings,
    #[command(flatten, next_help_heading = "Fetch")]
    pub fetch: FetchSettings,
}

impl Settings for DaemonSettings {
    fn validate(&self) -> Result<()> {
        self.validate_site()?;
        self.refresh.validate()?;
        self.scheduler.validate()?;
        self.api.validate()?;
        self.indexnow.validate()?;
        self.cluster.validate()?;
        for site in &self.sites {
            super::site_key(site).with_context(|| format!("sites: {site:?}"))?;
        }
        Ok(())
    }
}

impl Settings for SimulateSettings {
    fn validate(&self) -> Result<()> {
        SimulateSettings::validate(self)
    }
}
