//! `sitemapd daemon`: follows many sites' sitemaps continuously and serves
//! the crawl queue over HTTP.
//!
//! Two halves share the store: the refresh loop ([`refresh`]), on a thread
//! of its own so that sled writes never block the API, and the API
//! ([`api`]) on the tokio runtime. SIGINT/SIGTERM: the API stops leasing and
//! drains, the walks stop, what they read is committed, the store is
//! flushed, exit 0.

mod access;
mod api;
mod conns;
mod metrics;
mod refresh;
mod urlfrontier;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use sitemapd_scheduler::StoreOptions;
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use metrics::Metrics;
use refresh::Refresher;

use crate::cli::DaemonArgs;
use crate::settings::{LogFormat, MIN_TOKEN_BYTES, site_key};
use crate::walk_store::StoreMemory;

/// After the signal, how long in-flight requests may take.
const DRAIN: Duration = Duration::from_secs(5);
/// After the signal, how long the refresh loop may take to commit.
const COMMIT: Duration = Duration::from_secs(3);

/// Runs the daemon until a signal.
pub fn run(args: &DaemonArgs) -> Result<ExitCode> {
    let settings = &args.settings;
    let log_level = init_logs(settings.api.log_format);
    access::check_settings(&settings.api.allowed_origins, &settings.api.allowed_hosts)?;
    let token = settings.api.token()?;
    let loopback = settings.api.listen.ip().is_loopback();
    match &token {
        None if !loopback => bail!(
            "listening on {} (not loopback) needs an API token: set SITEMAPD_TOKEN or token_file",
            settings.api.listen
        ),
        Some(t) if !loopback && t.len() < MIN_TOKEN_BYTES => bail!(
            "the API token has {} bytes: listening on {} (not loopback) needs one of at least \
             {MIN_TOKEN_BYTES} bytes",
            t.len(),
            settings.api.listen
        ),
        None => warn!(
            "the API runs without an API token: every local process can lease, complete and \
             add sites (browser pages are refused: Host, Origin and Content-Type are checked); \
             set SITEMAPD_TOKEN or api.token_file"
        ),
        Some(_) => {}
    }
    if let Some(addr) = settings.api.urlfrontier_listen {
        urlfrontier::check_access(addr, token.as_deref())?;
    }
    let store = Arc::new(settings.store.open_with(StoreOptions {
        refresh: settings.refresh.params(),
        ..settings.scheduler.store_options()
    })?);
    for site in &settings.sites {
        store.add_site(&site_key(site)?, sitemapd_scheduler::Timestamp::now())?;
    }
    let walker = {
        let mut walker_config = settings.walk.config(&settings.parse);
        walker_config.memory = Some(Arc::new(StoreMemory::scheduled(store.clone())));
        walker_config.robots_ttl = Some(Duration::from_secs(settings.refresh.robots_secs.into()));
        sitemapd_discovery::Walker::new(
            sitemapd_discovery::Fetcher::new(settings.fetch.config())?,
            walker_config,
        )
    };
    let runtime = crate::settings::runtime()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(settings.api.listen))
        .with_context(|| format!("cannot listen on {}", settings.api.listen))?;
    let address = listener.local_addr()?;
    let frontier_listener = match settings.api.urlfrontier_listen {
        Some(addr) => Some(
            runtime
                .block_on(tokio::net::TcpListener::bind(addr))
                .with_context(|| format!("cannot listen on {addr} (URLFrontier)"))?,
        ),
        None => None,
    };
    // Before "listening" is announced: from then on a signal must stop the
    // daemon cleanly, not kill it (the default action).
    let signals = {
        let _runtime = runtime.enter();
        Signals::install()
    };

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

    let request_secs = Duration::from_secs(settings.api.request_body_secs);
    let head_secs = Duration::from_secs(settings.api.head_timeout_secs);
    let fd_limit = conns::fd_limit();
    let max_connections = conns::connection_cap(settings.api.max_connections, fd_limit);
    if max_connections < settings.api.max_connections {
        warn!(
            "api.max_connections lowered from {} to {max_connections}: the open-file limit is {} \
             ({} kept for the store and the fetcher; raise it with ulimit -n or LimitNOFILE)",
            settings.api.max_connections,
            fd_limit.unwrap_or_default(),
            conns::FD_RESERVE
        );
    }
    let per_ip = settings.api.max_connections_per_ip.min(max_connections);
    let slots = conns::Slots::new(max_connections, per_ip);
    let access = access::Access::new(
        &settings.api.allowed_origins,
        &settings.api.allowed_hosts,
        address,
    );
    if let Some(listener) = frontier_listener {
        runtime.spawn(urlfrontier::serve(
            listener,
            store.clone(),
            token.clone(),
            log_level,
            stop_rx.clone(),
        ));
    }
    let app = api::router(
        api::ApiState {
            store: store.clone(),
            metrics,
            token,
            wake,
            stopping: stopping.clone(),
            lease_ttl: settings.scheduler.lease_ttl,
            per_host: settings.scheduler.per_host,
            max_lease: settings.api.max_lease,
            body_timeout: request_secs,
        },
        settings.api.max_request_bytes,
        access,
    );
    info!(
        store = %settings.store.store.display(),
        policy = store.policy().name(),
        max_connections,
        max_connections_per_ip = per_ip,
        "listening on http://{address}"
    );
    runtime.block_on(async {
        let mut drained = stop_rx.clone();
        let signal = {
            let stopping = stopping.clone();
            async move {
                signals.recv().await;
                info!("signal received: stopping");
                stopping.store(true, Ordering::Relaxed);
                let _ = stop_tx.send(true);
            }
        };
        let server = conns::serve(listener, app, head_secs, slots, signal);
        tokio::select! {
            () = server => {}
            _ = async { let _ = drained.wait_for(|s| *s).await; tokio::time::sleep(DRAIN).await } => {
                warn!("requests still running after {DRAIN:?}: dropped");
            }
        }
    });
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

/// SIGINT and SIGTERM, listened for from [`Signals::install`] on.
struct Signals(Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>);

impl Signals {
    /// Installs the handlers (inside the runtime).
    fn install() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Self(Some((term, int))),
            _ => {
                warn!("cannot install signal handlers; Ctrl-C only");
                Self(None)
            }
        }
    }

    /// The first SIGINT or SIGTERM.
    async fn recv(self) {
        match self.0 {
            Some((mut term, mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// The log subscriber: SITEMAPD_LOG level (default info), pretty or JSON.
fn init_logs(format: LogFormat) -> sitemapd_urlfrontier::service::LogLevelHook {
    let base = std::env::var("SITEMAPD_LOG").unwrap_or_else(|_| "info".to_string());
    let filter = tracing_subscriber::EnvFilter::try_new(&base)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // URLFrontier's SetLogLevel: one more `target=level` directive over the
    // filter the daemon started with.
    let directives = Arc::new(std::sync::Mutex::new(vec![base]));
    macro_rules! hook {
        ($handle:expr) => {{
            let handle = $handle;
            Arc::new(move |target: &str, level: &str| {
                let directive = if target.is_empty() {
                    level.to_string()
                } else {
                    format!("{target}={level}")
                };
                let mut all = directives.lock().unwrap_or_else(|e| e.into_inner());
                all.push(directive);
                let filter = tracing_subscriber::EnvFilter::try_new(all.join(","))
                    .map_err(|e| e.to_string())?;
                handle.reload(filter).map_err(|e| e.to_string())
            }) as sitemapd_urlfrontier::service::LogLevelHook
        }};
    }
    match format {
        LogFormat::Pretty => {
            let builder = builder.with_env_filter(filter).with_filter_reloading();
            let hook = hook!(builder.reload_handle());
            builder.init();
            hook
        }
        LogFormat::Json => {
            let builder = builder
                .json()
                .with_env_filter(filter)
                .with_filter_reloading();
            let hook = hook!(builder.reload_handle());
            builder.init();
            hook
        }
    }
}
