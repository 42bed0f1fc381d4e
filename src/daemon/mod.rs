//! `sitemapd daemon`: follows many sites' sitemaps continuously and serves
//! the crawl queue over HTTP.
//!
//! Two halves share the store: the refresh loop ([`refresh`]), on a thread
//! of its own so that sled writes never block the API, and the API
//! ([`api`]) on the tokio runtime. SIGINT/SIGTERM: the API stops leasing and
//! drains, the walks stop, what they read is committed, the store is
//! flushed, exit 0.

mod api;
pub mod config;
mod metrics;
mod refresh;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sitemapd_discovery::Seed;
use sitemapd_scheduler::{Store, StoreOptions};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use config::{DaemonArgs, LogFormat, Settings};
use metrics::Metrics;
use refresh::Refresher;

use crate::settings::now;
use crate::walk_store::StoreMemory;

/// After the signal, how long in-flight requests may take.
const DRAIN: Duration = Duration::from_secs(5);
/// After the signal, how long the refresh loop may take to commit.
const COMMIT: Duration = Duration::from_secs(3);

/// The store key of a site: its seed, normalised.
pub fn site_key(input: &str) -> Result<String> {
    Ok(Seed::parse(input)
        .with_context(|| format!("{input:?} is not a site or a sitemap URL"))?
        .url()
        .to_string())
}

/// Runs the daemon until a signal.
pub fn run(args: &DaemonArgs) -> Result<ExitCode> {
    if args.print_config {
        print!("{}", config::DEFAULT_FILE);
        return Ok(ExitCode::SUCCESS);
    }
    let settings = Settings::load(args)?;
    init_logs(settings.log_format);
    let token = settings.token()?;
    if token.is_none() && !settings.listen.ip().is_loopback() {
        bail!(
            "listening on {} (not loopback) needs an API token: set SITEMAPD_TOKEN or token_file",
            settings.listen
        );
    }
    let store = Arc::new(
        Store::open(
            &settings.store,
            StoreOptions {
                policy: settings.scheduler.policy.clone(),
                retire_after: settings.scheduler.retire_after,
                min_delay: settings.scheduler.lease_delay_secs,
                refresh: settings.refresh_params(),
                ..StoreOptions::default()
            },
        )
        .with_context(|| format!("cannot open the store at {}", settings.store.display()))?,
    );
    for site in &settings.sites {
        store.add_site(&site_key(site)?, now())?;
    }
    let walker = {
        let flags = settings.site_flags()?;
        let mut walker_config = flags.walk.config(&flags.parse);
        walker_config.memory = Some(Arc::new(StoreMemory::scheduled(store.clone())));
        walker_config.robots_ttl = Some(Duration::from_secs(settings.refresh.robots_secs.into()));
        sitemapd_discovery::Walker::new(
            sitemapd_discovery::Fetcher::new(flags.fetch.config())?,
            walker_config,
        )
    };
    let runtime = crate::settings::runtime()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(settings.listen))
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    let address = listener.local_addr()?;

    let metrics = Arc::new(Metrics::new());
    let wake = Arc::new(Notify::new());
    let stopping = Arc::new(AtomicBool::new(false));
    let (stop_tx, stop_rx) = watch::channel(false);

    let refresher = Refresher {
        store: store.clone(),
        walker,
        metrics: metrics.clone(),
        robots_secs: settings.refresh.robots_secs.into(),
        sitemap_secs: settings.refresh.sitemap_secs.into(),
        error_backoff_secs: settings.refresh.error_backoff_secs.into(),
        wake: wake.clone(),
    };
    let handle = runtime.handle().clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let refresh_stop = stop_rx.clone();
    std::thread::Builder::new()
        .name("refresh".into())
        .spawn(move || {
            let result = handle.block_on(refresher.run(refresh_stop));
            let _ = done_tx.send(result);
        })
        .context("cannot start the refresh thread")?;

    let app = api::router(
        api::ApiState {
            store: store.clone(),
            metrics,
            token,
            wake,
            stopping: stopping.clone(),
            lease_ttl: settings.scheduler.lease_ttl_secs,
            per_host: settings.scheduler.per_host,
            max_lease: settings.limits.max_lease,
            body_timeout: Duration::from_secs(settings.limits.request_body_secs),
        },
        settings.limits.max_request_bytes,
    );
    info!(
        store = %settings.store.display(),
        policy = store.policy().name(),
        "listening on http://{address}"
    );
    runtime.block_on(async {
        let mut drained = stop_rx.clone();
        let signal = {
            let stopping = stopping.clone();
            async move {
                shutdown_signal().await;
                info!("signal received: stopping");
                stopping.store(true, Ordering::Relaxed);
                let _ = stop_tx.send(true);
            }
        };
        let server = axum::serve(listener, app).with_graceful_shutdown(signal);
        tokio::select! {
            result = server => result.context("the API server failed"),
            _ = async { let _ = drained.wait_for(|s| *s).await; tokio::time::sleep(DRAIN).await } => {
                warn!("requests still running after {DRAIN:?}: dropped");
                Ok(())
            }
        }
    })?;
    match done_rx.recv_timeout(COMMIT) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => warn!(error = %e, "the refresh loop failed"),
        Err(_) => warn!("the refresh loop did not stop within {COMMIT:?}"),
    }
    store.flush().context("cannot flush the store")?;
    runtime.shutdown_timeout(Duration::from_millis(500));
    info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            warn!("cannot install signal handlers; Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The log subscriber: SITEMAPD_LOG level (default info), pretty or JSON.
fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SITEMAPD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter);
    match format {
        LogFormat::Pretty => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
