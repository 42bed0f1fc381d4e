//! The URLFrontier service's rpcs in `/metrics`: a tower layer around the
//! gRPC router that counts each rpc by its gRPC status and times it.
//!
//! An rpc is timed from its request to the end of its response body: a
//! streaming rpc (GetURLs, ListURLs, PutURLs …) for its whole stream. Its
//! status is read from the response head (a trailers-only answer, as a
//! refused token gets) or from its trailers. A response that ended without
//! a status (the client went away, the daemon stopped, the body failed)
//! counts as `Cancelled`.
//! Paths that name no rpc of the protocol count as the rpc `other`, so the
//! labels stay a bounded set.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::http::{HeaderMap, Request, Response};
use http_body::{Body, Frame, SizeHint};

use super::metrics::Metrics;

/// Wraps a service in [`Metered`].
#[derive(Clone)]
pub(super) struct RpcMetricsLayer(pub Arc<Metrics>);

impl<S> tower_layer::Layer<S> for RpcMetricsLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Metered<S> {
        Metered {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// A gRPC service whose rpcs are counted and timed.
#[derive(Clone)]
pub(super) struct Metered<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, ReqBody, ResBody> tower_service::Service<Request<ReqBody>> for Metered<S>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<MeteredBody<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let mut call = Call {
            rpc: sitemapd_urlfrontier::rpc_of(request.uri().path()).unwrap_or("other"),
            start: Instant::now(),
            code: None,
            ended: false,
            metrics: self.metrics.clone(),
        };
        let response = self.inner.call(request);
        Box::pin(async move {
            // An error here is the transport's: no status was sent, and
            // the call counts as Cancelled.
            let response = response.await?;
            call.code = status_of(response.headers());
            Ok(response.map(|inner| MeteredBody { inner, call }))
        })
    }
}

/// One rpc in flight: recorded once, when it is dropped.
struct Call {
    rpc: &'static str,
    start: Instant,
    code: Option<tonic::Code>,
    /// The body came to its end (with or without a status).
    ended: bool,
    metrics: Arc<Metrics>,
}

impl Drop for Call {
    fn drop(&mut self) {
        let code = match (self.code, self.ended) {
            (Some(code), _) => format!("{code:?}"),
            (None, true) => "Unknown".to_string(),
            (None, false) => "Cancelled".to_string(),
        };
        self.metrics
            .rpc_ended(self.rpc, code, self.start.elapsed().as_secs_f64());
    }
}

/// The gRPC status a head or trailers carry.
fn status_of(headers: &HeaderMap) -> Option<tonic::Code> {
    headers
        .get("grpc-status")
        .map(|v| tonic::Code::from_bytes(v.as_bytes()))
}

/// A response body that records its rpc when it ends or is dropped.
pub(super) struct MeteredBody<B> {
    inner: B,
    call: Call,
}

impl<B: Body + Unpin> Body for MeteredBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(status_of) {
                    self.call.code = Some(code);
                }
            }
            Poll::Ready(None) => self.call.ended = true,
            Poll::Ready(Some(Err(_))) | Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
