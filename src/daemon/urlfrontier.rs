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
//!
//! Its connections hold slots as the HTTP API's do ([`super::conns`]): a
//! cap in all and per address, the oldest connection with no call open
//! closed to make room for a new one, and a connection that has sent no
//! call within the head timeout closed.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use anyhow::{Context, Result};
use sitemapd_scheduler::{Clock, Store};
use sitemapd_urlfrontier::Frontier;
use sitemapd_urlfrontier::service::{ClusterMap, LogLevelHook};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::Connected;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic::{Request, Status};
use tracing::{debug, info, warn};

use super::conns::{ConnSlot, MarkBusyLayer, Slot, Slots};
use super::message_budget::{MAX_PARTIAL_BYTES, MessageBudgetLayer};
use super::metrics::Metrics;
use super::rpc_metrics::RpcMetricsLayer;
use crate::settings::ApiSettings;

/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Streams (calls) one connection may have open at once.
const STREAMS_PER_CONNECTION: u32 = 128;

/// The service's transport, as the settings ask: TLS when a certificate is
/// set, and client certificates required when a client CA is. Built before
/// the daemon listens, so that a file that does not read or parse stops it
/// at start.
pub(super) fn transport(api: &ApiSettings) -> Result<Server> {
    let server = Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(60)))
        .max_concurrent_streams(Some(STREAMS_PER_CONNECTION));
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
/// `stop` turns true, each connection in one of `slots` (none free: closed
/// at once), closed if it sends no call within `first_call`, its time read
/// from `clock`. `token`, when set, is asked of every call. In a cluster,
/// the service is a node of `cluster` ([`Frontier::join_cluster`]).
#[allow(clippy::too_many_arguments)]
pub(super) async fn serve(
    transport: Server,
    listener: tokio::net::TcpListener,
    slots: Slots,
    first_call: Duration,
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    token: Option<String>,
    log_level: LogLevelHook,
    metrics: Arc<Metrics>,
    cluster: Option<Arc<dyn ClusterMap>>,
    mut stop: watch::Receiver<bool>,
) {
    let node = listener
        .local_addr()
        .map_or_else(|_| "localhost:7071".to_string(), |a| a.to_string());
    info!("URLFrontier service listening on {node}");
    let frontier = Frontier::with_clock(store, node, Some(log_level), clock);
    if let Some(map) = cluster {
        // Calls sent on to other nodes carry the token every node asks.
        frontier.join_cluster(map, token.as_deref());
    }
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
    let incoming = incoming.filter_map(move |accepted| match accepted {
        Ok(io) => {
            let peer = io.peer_addr().ok()?;
            let (slot, closing) = slots.admit(peer.ip())?;
            Some(Ok(Held {
                io,
                slot: Arc::new(slot),
                closing,
                first_call: Some(Box::pin(tokio::time::sleep(first_call))),
            }))
        }
        Err(e) => Some(Err(e)),
    });
    let result = transport
        .layer(MarkBusyLayer)
        .layer(RpcMetricsLayer(metrics))
        .layer(MessageBudgetLayer::new(MAX_PARTIAL_BYTES))
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await;
    if let Err(e) = result {
        warn!(error = %e, "the URLFrontier service stopped");
    }
}

/// An accepted connection, holding one of the service's connection slots
/// until it closes. Its reads fail (so the connection ends) once the slot
/// is taken for another connection, or when no call came within the
/// first-call timeout.
struct Held {
    io: TcpStream,
    slot: Arc<Slot>,
    closing: oneshot::Receiver<()>,
    first_call: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        use std::future::Future;
        if Pin::new(&mut self.closing).poll(cx).is_ready() {
            debug!("URLFrontier connection closed for another");
            return Poll::Ready(Err(std::io::ErrorKind::ConnectionAborted.into()));
        }
        // Until its first call, a connection lives by the head timeout.
        if self.first_call.is_some() && self.slot.served() {
            self.first_call = None;
        }
        if let Some(deadline) = &mut self.first_call
            && deadline.as_mut().poll(cx).is_ready()
        {
            debug!("URLFrontier connection closed: no call within the head timeout");
            return Poll::Ready(Err(std::io::ErrorKind::TimedOut.into()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl Connected for Held {
    type ConnectInfo = ConnSlot;

    fn connect_info(&self) -> ConnSlot {
        ConnSlot(self.slot.clone())
    }
}
