//! The URLFrontier gRPC service of the daemon (`api.urlfrontier_listen`):
//! [`sitemapd_urlfrontier::Frontier`] on the daemon's store, until the daemon
//! stops, with its rpcs counted and timed in `/metrics`.
//!
//! A client proves itself with the API token, sent as gRPC metadata
//! `authorization: Bearer <token>`, or, when `api.urlfrontier_client_ca` is
//! set, with a client certificate that CA signed (mutual TLS). The
//! certificate is checked during the TLS handshake, and then stands for the
//! token: StormCrawler's client can present a certificate but cannot send
//! a token.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use sitemapd_scheduler::Store;
use sitemapd_urlfrontier::Frontier;
use sitemapd_urlfrontier::service::LogLevelHook;
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic::{Request, Status};
use tracing::{info, warn};

use super::metrics::Metrics;
use super::rpc_metrics::RpcMetricsLayer;
use crate::settings::ApiSettings;

/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// The service's transport, as the settings ask: TLS when a certificate is
/// set, and client certificates required when a client CA is. Built before
/// the daemon listens, so that a file that does not read or parse stops it
/// at start.
pub fn transport(api: &ApiSettings) -> Result<Server> {
    let server = Server::builder().http2_keepalive_interval(Some(Duration::from_secs(60)));
    let (Some(cert), Some(key)) = (&api.urlfrontier_tls_cert, &api.urlfrontier_tls_key) else {
        // The settings' check refuses this too; the token rule relies on
        // it, so it is refused here again rather than served in plain text.
        anyhow::ensure!(
            api.urlfrontier_client_ca.is_none(),
            "api.urlfrontier_client_ca needs api.urlfrontier_tls_cert and api.urlfrontier_tls_key"
        );
        return Ok(server);
    };
    let mut tls = ServerTlsConfig::new()
        .identity(Identity::from_pem(read(cert)?, read(key)?))
        .timeout(HANDSHAKE);
    if let Some(ca) = &api.urlfrontier_client_ca {
        tls = tls.client_ca_root(Certificate::from_pem(read(ca)?));
    }
    server.tls_config(tls).context(
        "the URLFrontier service's TLS settings (api.urlfrontier_tls_cert, \
         api.urlfrontier_tls_key, api.urlfrontier_client_ca) do not make a TLS configuration",
    )
}

/// A PEM file's bytes.
fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .with_context(|| format!("cannot read {} (URLFrontier TLS settings)", path.display()))
}

/// Serves the URLFrontier protocol on `listener` through `transport` until
/// `stop` turns true. `token`, when set, is asked of every call.
pub async fn serve(
    transport: Server,
    listener: tokio::net::TcpListener,
    store: Arc<Store>,
    token: Option<String>,
    log_level: LogLevelHook,
    metrics: Arc<Metrics>,
    mut stop: watch::Receiver<bool>,
) {
    let node = listener
        .local_addr()
        .map_or_else(|_| "localhost:7071".to_string(), |a| a.to_string());
    info!("URLFrontier service listening on {node}");
    let frontier = Frontier::new(store, node, Some(log_level));
    let check = move |req: Request<()>| -> Result<Request<()>, Status> {
        if let Some(token) = &token {
            let given = req.metadata().get("authorization").map(|v| v.as_bytes());
            if !super::api::bearer_matches(given, token) {
                return Err(Status::unauthenticated("a valid bearer token is required"));
            }
        }
        Ok(req)
    };
    let service = InterceptedService::new(frontier.into_server(), check);
    // Without TCP_NODELAY a streamed answer's last segment waits for the
    // client's delayed ACK: 40 ms per call on Linux.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let result = transport
        .layer(RpcMetricsLayer(metrics))
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await;
    if let Err(e) = result {
        warn!(error = %e, "the URLFrontier service stopped");
    }
}
