//! From command-line flags to the libraries' configurations.

use std::collections::HashMap;
use std::time::Duration;

use std::sync::Arc;

use sitemapd_discovery::{FetchConfig, Fetcher, Seed, SitemapMemory, WalkConfig, Walker};
use sitemapd_parser::{NormUrl, ParseOptions, Strictness};

use crate::cli::{FetchArgs, ParseFlags, SiteFlags, WalkArgs};

impl FetchArgs {
    /// The fetcher configuration these flags describe.
    pub fn config(&self) -> FetchConfig {
        let mut resolve: HashMap<String, Vec<_>> = HashMap::new();
        for (host, ip) in &self.resolve {
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
}

impl ParseFlags {
    /// Parser options for a document at `url`.
    pub fn options(&self, url: Option<NormUrl>) -> ParseOptions {
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
            ..ParseOptions::default()
        }
    }
}

impl WalkArgs {
    /// The walk configuration these flags (and the parse flags) describe.
    pub fn config(&self, parse: &ParseFlags) -> WalkConfig {
        WalkConfig {
            max_depth: self.max_depth,
            max_sitemaps_per_site: self.max_sitemaps,
            probe: !self.no_probe,
            site_concurrency: self.parallel_sites.max(1),
            parse: parse.options(None),
            ..WalkConfig::default()
        }
    }
}

impl SiteFlags {
    /// The walker these flags describe, remembering through `memory`.
    pub fn walker(&self, memory: Option<Arc<dyn SitemapMemory>>) -> anyhow::Result<Walker> {
        Ok(Walker::new(
            Fetcher::new(self.fetch.config())?,
            WalkConfig {
                memory,
                ..self.walk.config(&self.parse)
            },
        ))
    }
}

/// The seeds of a walk, each a site or a sitemap URL.
pub fn seeds<S: AsRef<str>>(inputs: &[S]) -> anyhow::Result<Vec<Seed>> {
    use anyhow::Context;
    inputs
        .iter()
        .map(|s| {
            let s = s.as_ref();
            Seed::parse(s).with_context(|| format!("{s:?} is not a site, a sitemap URL or a file"))
        })
        .collect()
}

/// A tokio runtime for the commands that fetch: two workers (the parser
/// runs on the blocking pool beside them).
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Now, in unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl crate::cli::StoreArgs {
    /// Opens an existing store for reading and the queue (a mistyped
    /// `--store` is an error, not a new empty store).
    pub fn open_existing(&self) -> anyhow::Result<sitemapd_scheduler::Store> {
        if !self.store.is_dir() {
            anyhow::bail!(
                "no store at {} (sitemapd ingest creates one)",
                self.store.display()
            );
        }
        self.open(None)
    }

    /// Opens the store (with `policy`, or the one it remembers).
    pub fn open(&self, policy: Option<String>) -> anyhow::Result<sitemapd_scheduler::Store> {
        use anyhow::Context;
        sitemapd_scheduler::Store::open(
            &self.store,
            sitemapd_scheduler::StoreOptions {
                policy,
                ..Default::default()
            },
        )
        .with_context(|| format!("cannot open the store at {}", self.store.display()))
    }
}
