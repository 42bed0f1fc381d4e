//! The URLFrontier gRPC service of the daemon (`api.urlfrontier_listen`):
//! [`sitemapd_urlfrontier::Frontier`] on the daemon's store, behind the API
//! token when one is set (gRPC metadata `authorization: Bearer <token>`),
//! until the daemon stops.

use std::sync::Arc;

use sitemapd_scheduler::Store;
use sitemapd_urlfrontier::Frontier;
use sitemapd_urlfrontier::service::LogLevelHook;
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Status};
use tracing::{info, warn};

/// Serves the URLFrontier protocol on `listener` until `stop` turns true.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Arc<Store>,
    token: Option<String>,
    log_level: LogLevelHook,
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
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let result = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(std::time::Duration::from_secs(60)))
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await;
    if let Err(e) = result {
        warn!(error = %e, "the URLFrontier service stopped");
    }
}
