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
mod cluster;
mod compaction;
mod conns;
mod indexnow;
mod message_budget;
mod metrics;
mod refresh;
mod routing;
mod rpc_metrics;
mod test_clock;
mod urlfrontier;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use sitemapd_scheduler::{Clock, StoreOptions, SystemClock};
use sitemapd_urlfrontier::service::LogLevelHook;
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

/// Whether a listener on `addr` runs without a token: only on loopback.
/// Off loopback it needs the API token, of [`MIN_TOKEN_BYTES`] at least.
fn runs_open(addr: SocketAddr, token: Option<&str>) -> Result<bool> {
    let loopback = addr.ip().is_loopback();
    match token {
        None if !loopback => bail!(
            "listening on {addr} (not loopback) needs an API token: set SITEMAPD_TOKEN or token_file"
        ),
        Some(t) if !loopback && t.len() < MIN_TOKEN_BYTES => bail!(
            "the API token has {} bytes: listening on {addr} (not loopback) needs one of at least \
             {MIN_TOKEN_BYTES} bytes",
            t.len()
        ),
        None => Ok(true),
        Some(_) => Ok(false),
    }
}

/// Whether the URLFrontier service, when it listens, runs open:
/// [`runs_open`], except that client certificates (mutual TLS) protect it
/// off loopback as the token does.
fn frontier_runs_open(api: &crate::settings::ApiSettings, token: Option<&str>) -> Result<bool> {
    match api.urlfrontier_listen {
        Some(_) if api.urlfrontier_client_ca.is_some() => Ok(false),
        Some(addr) => runs_open(addr, token).context(
            "the URLFrontier service needs the API token or client certificates \
             (api.urlfrontier_client_ca)",
        ),
        None => Ok(false),
    }
}

/// Runs the daemon until a signal.
pub(crate) fn run(args: &DaemonArgs) -> Result<ExitCode> {
    let settings = &args.settings;
    let log_level = init_logs(settings.api.log_format);
    let clock = clock(args)?;
    access::check_settings(&settings.api.allowed_origins, &settings.api.allowed_hosts)?;
    let token = settings.api.token()?;
    if runs_open(settings.api.listen, token.as_deref())? {
        warn!(
            "the API runs without an API token: every local process can lease, complete and \
             add sites (browser pages are refused: Host, Origin and Content-Type are checked); \
             set SITEMAPD_TOKEN or api.token_file"
        );
    }
    if frontier_runs_open(&settings.api, token.as_deref())? {
        warn!(
            "the URLFrontier service runs without an API token: every local process can lease \
             and put URLs; set SITEMAPD_TOKEN or api.token_file"
        );
    }
    // With client certificates asked for, the certificate is the credential.
    let client_certs = settings.api.urlfrontier_client_ca.is_some();
    let frontier_transport = match settings.api.urlfrontier_listen {
        Some(_) => Some(urlfrontier::transport(&settings.api)?),
        None => None,
    };
    let store = Arc::new(settings.store.open_with(StoreOptions {
        refresh: settings.refresh.params(),
        clock: clock.clone(),
        ..settings.scheduler.store_options()
    })?);
    let seeds = settings
        .sites
        .iter()
        .map(|site| site_key(site))
        .collect::<Result<Vec<String>>>()?;
    // One fetcher (its address guard and per-host politeness) for the walks
    // and the IndexNow key files.
    let fetcher = sitemapd_discovery::Fetcher::new(settings.fetch.config())?;
    let walker = {
        let mut walker_config = settings.walk.config(&settings.parse)?;
        walker_config.memory = Some(Arc::new(StoreMemory::scheduled(
            store.clone(),
            clock.clone(),
        )));
        walker_config.robots_ttl = Some(Duration::from_secs(settings.refresh.robots_secs.into()));
        sitemapd_discovery::Walker::new(fetcher.clone(), walker_config)
    };
    let runtime = crate::settings::runtime()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(settings.api.listen))
        .with_context(|| format!("cannot listen on {}", settings.api.listen))?;
    let address = listener.local_addr()?;
    let frontier_listener = match (settings.api.urlfrontier_listen, frontier_transport) {
        (Some(addr), Some(transport)) => Some((
            transport,
            runtime
                .block_on(tokio::net::TcpListener::bind(addr))
                .with_context(|| format!("cannot listen on {addr} (URLFrontier)"))?,
        )),
        _ => None,
    };
    // The address the cluster advertises by default: the URLFrontier
    // service's, as bound (its port known when it asked for port 0).
    let frontier_address = match &frontier_listener {
        Some((_, listener)) => Some(listener.local_addr()?),
        None => None,
    };
    let cluster = cluster::Cluster::start(
        &runtime,
        &settings.cluster,
        frontier_address,
        address,
        &store,
    )?;
    // In a cluster, a site is added by the owner of its partition, once it
    // has taken the partition over (`Cluster::follow`).
    if cluster.is_none() {
        for seed in &seeds {
            store.add_site(seed, clock.now())?;
        }
    }
    let indexnow_listener = match settings.indexnow.indexnow_listen {
        Some(addr) => Some(
            runtime
                .block_on(tokio::net::TcpListener::bind(addr))
                .with_context(|| format!("cannot listen on {addr} (IndexNow)"))?,
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
        clock: clock.clone(),
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
    let slots = conns::Slots::new(
        "api",
        max_connections,
        per_ip,
        metrics.connections_shed.clone(),
    );
    let access = access::Access::new(
        &settings.api.allowed_origins,
        &settings.api.allowed_hosts,
        address,
    );
    if let Some((transport, listener)) = frontier_listener {
        // Its connections come out of what the HTTP API leaves of the
        // open-file limit.
        let frontier_connections = conns::connection_cap(
            settings.api.max_connections,
            fd_limit.map(|l| l.saturating_sub(max_connections as u64)),
        );
        let frontier_slots = conns::Slots::new(
            "urlfrontier",
            frontier_connections,
            per_ip.min(frontier_connections),
            metrics.connections_shed.clone(),
        );
        runtime.spawn(urlfrontier::serve(
            transport,
            listener,
            frontier_slots,
            head_secs,
            store.clone(),
            clock.clone(),
            token.clone().filter(|_| !client_certs),
            log_level,
            metrics.clone(),
            cluster.as_ref().map(cluster::Cluster::map),
            stop_rx.clone(),
        ));
    }
    if let Some(listener) = indexnow_listener {
        // Its connections come out of what the HTTP API and the URLFrontier
        // service leave of the open-file limit.
        let connections = conns::connection_cap(
            settings.api.max_connections,
            fd_limit.map(|l| l.saturating_sub(2 * max_connections as u64)),
        );
        let slots = conns::Slots::new(
            "indexnow",
            connections,
            per_ip.min(connections),
            metrics.connections_shed.clone(),
        );
        let intake = Arc::new(indexnow::Intake::new(
            &settings.indexnow,
            store.clone(),
            fetcher,
            clock.clone(),
            metrics.clone(),
            request_secs,
        )?);
        let app = indexnow::router(intake, settings.api.max_request_bytes);
        info!(
            hosts = settings.indexnow.indexnow_hosts.join(","),
            "IndexNow intake on http://{}/indexnow",
            listener.local_addr()?
        );
        let mut stop = stop_rx.clone();
        runtime.spawn(conns::serve(listener, app, head_secs, slots, async move {
            let _ = stop.wait_for(|s| *s).await;
        }));
    }
    runtime.spawn(compaction::run(store.clone(), stop_rx.clone()));
    if let Some(cluster) = &cluster {
        runtime.spawn(cluster.follow(
            store.clone(),
            seeds,
            clock.clone(),
            wake.clone(),
            metrics.clone(),
            stop_rx.clone(),
        ));
    }
    let app = api::router(
        api::ApiState {
            store: store.clone(),
            clock,
            metrics,
            token,
            wake,
            stopping: stopping.clone(),
            lease_ttl: settings.scheduler.lease_ttl,
            per_host: settings.scheduler.per_host,
            max_lease: settings.api.max_lease,
            body_timeout: request_secs,
            cluster: cluster
                .as_ref()
                .map(|c| routing::Peers::new(c.view()))
                .transpose()
                .context("the HTTP client to the cluster's other nodes")?,
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
    if store.sites().next().is_none() {
        info!(
            "following no site yet: add one with `POST /v1/sites` (body {{\"sites\": [\"example.com\"]}}), \
             or name sites as arguments (`sitemapd daemon example.com`) or in the settings file \
             (`sites = [\"example.com\"]`)"
        );
    }
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
    if let Some(cluster) = cluster {
        cluster.leave(&runtime, &store);
    }
    store.flush().context("cannot flush the store")?;
    runtime.shutdown_timeout(Duration::from_millis(500));
    info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The daemon's clock: the wall clock, or with `--test-clock-file` the
/// file's ([`test_clock`]), said loudly since it is for tests only.
fn clock(args: &DaemonArgs) -> Result<Arc<dyn Clock>> {
    let Some(path) = &args.test_clock_file else {
        return Ok(Arc::new(SystemClock));
    };
    let clock = test_clock::FileClock::open(path)?;
    warn!(
        now = %clock.now(),
        "TESTING CLOCK: the daemon's time is read from {} (--test-clock-file), not the wall \
         clock; leases, due dates and refreshes follow that file. Never run a real crawl so.",
        path.display()
    );
    Ok(Arc::new(clock))
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
fn init_logs(format: LogFormat) -> LogLevelHook {
    use tracing_subscriber::prelude::*;
    // A SITEMAPD_LOG that does not parse is "info", for SetLogLevel too.
    let (base, filter) = std::env::var("SITEMAPD_LOG")
        .ok()
        .and_then(|b| Some((b.clone(), tracing_subscriber::EnvFilter::try_new(b).ok()?)))
        .unwrap_or_else(|| ("info".into(), tracing_subscriber::EnvFilter::new("info")));
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let lines = match format {
        LogFormat::Pretty => lines.boxed(),
        LogFormat::Json => lines.json().boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        .init();
    log_level_hook(base, handle)
}

/// Targets URLFrontier's SetLogLevel may set a level for, at most.
const MAX_LOG_TARGETS: usize = 256;

/// URLFrontier's SetLogLevel on the daemon's log filter: a level per
/// target (a Java package's dots read as `::`; no target: the default
/// level) over the filter the daemon started with (`base`). A target set
/// again replaces its level; a filter that does not parse changes nothing.
fn log_level_hook<S: 'static>(
    base: String,
    handle: tracing_subscriber::reload::Handle<tracing_subscriber::EnvFilter, S>,
) -> LogLevelHook {
    let levels = std::sync::Mutex::new(std::collections::BTreeMap::<String, String>::new());
    Arc::new(move |target: &str, level: &str| {
        if !target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.'))
        {
            return Err(format!("not a log target: {target:?}"));
        }
        let mut levels = levels.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = levels.clone();
        next.insert(target.replace('.', "::"), level.to_string());
        if next.len() > MAX_LOG_TARGETS {
            return Err(format!("at most {MAX_LOG_TARGETS} log targets"));
        }
        let directives = next.iter().map(|(target, level)| match target.as_str() {
            "" => level.clone(),
            _ => format!("{target}={level}"),
        });
        let all: Vec<String> = std::iter::once(base.clone()).chain(directives).collect();
        let filter =
            tracing_subscriber::EnvFilter::try_new(all.join(",")).map_err(|e| e.to_string())?;
        handle.reload(filter).map_err(|e| e.to_string())?;
        *levels = next;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::ApiSettings;

    #[test]
    fn off_loopback_the_frontier_takes_a_token_or_client_certificates() {
        let api = |listen: &str, client_ca: bool| ApiSettings {
            urlfrontier_listen: Some(listen.parse().unwrap()),
            urlfrontier_client_ca: client_ca.then(|| "ca.pem".into()),
            ..ApiSettings::default()
        };
        let long = "0123456789abcdef";
        // Loopback: open without a token.
        assert!(frontier_runs_open(&api("127.0.0.1:7071", false), None).unwrap());
        // Off loopback: a token of 16 bytes, or client certificates.
        let e = frontier_runs_open(&api("0.0.0.0:7071", false), None).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("api.urlfrontier_client_ca") && e.contains("needs an API token"));
        assert!(frontier_runs_open(&api("0.0.0.0:7071", false), Some("short")).is_err());
        assert!(!frontier_runs_open(&api("0.0.0.0:7071", false), Some(long)).unwrap());
        assert!(!frontier_runs_open(&api("0.0.0.0:7071", true), None).unwrap());
        // Not listening: nothing to protect.
        let off = ApiSettings::default();
        assert!(!frontier_runs_open(&off, None).unwrap());
    }
}
