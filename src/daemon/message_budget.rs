//! The URLFrontier service's bound on request bytes held in messages not
//! yet complete: a tower layer that reads the gRPC framing of every
//! request body as it arrives.
//!
//! tonic buffers a request message until its last byte has come, up to
//! the decoding bound (4 MiB). A client that declares a message of 4 MiB
//! and sends all of it but one byte, on each of 128 streams of each of its
//! connections, made the daemon hold 4 MiB a stream. Here:
//!
//! - a message longer than its rpc needs is refused as its 5-byte prefix
//!   arrives: a PutDiscovered batch may take the protocol's 4 MiB, a
//!   PutURLs item 1 MiB, any other request 64 KiB;
//! - the bytes of messages begun and not complete, over every stream of
//!   every connection, stay under [`MAX_PARTIAL_BYTES`]: the stream whose
//!   bytes would pass it fails with RESOURCE_EXHAUSTED, and its bytes are
//!   freed.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::http::Request;
use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use tonic::Status;

/// Bytes of request messages begun and not yet complete, over every
/// stream of the service, at most.
pub(super) const MAX_PARTIAL_BYTES: usize = 64 << 20;

/// The longest request message of an rpc (by its path), bytes.
pub(super) fn max_message(path: &str) -> usize {
    match sitemapd_urlfrontier::rpc_of(path) {
        Some("PutDiscovered") => sitemapd_urlfrontier::service::MAX_MESSAGE_BYTES,
        Some("PutURLs") => 1 << 20,
        _ => 64 << 10,
    }
}

/// Wraps each request body of a service in [`Budgeted`], against one
/// budget shared by all.
#[derive(Clone)]
pub(super) struct MessageBudgetLayer {
    partial: Arc<AtomicUsize>,
    max_partial: usize,
}

impl MessageBudgetLayer {
    /// A budget of `max_partial` bytes.
    pub(super) fn new(max_partial: usize) -> Self {
        Self {
            partial: Arc::default(),
            max_partial,
        }
    }
}

impl<S> tower_layer::Layer<S> for MessageBudgetLayer {
    type Service = MessageBudget<S>;

    fn layer(&self, inner: S) -> MessageBudget<S> {
        MessageBudget {
            inner,
            layer: self.clone(),
        }
    }
}

/// See [`MessageBudgetLayer`].
#[derive(Clone)]
pub(super) struct MessageBudget<S> {
    inner: S,
    layer: MessageBudgetLayer,
}

impl<S> tower_service::Service<Request<tonic::body::Body>> for MessageBudget<S>
where
    S: tower_service::Service<Request<tonic::body::Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<tonic::body::Body>) -> S::Future {
        let max_message = max_message(request.uri().path());
        let layer = self.layer.clone();
        self.inner.call(request.map(|inner| {
            tonic::body::Body::new(Budgeted {
                inner,
                framing: Framing::new(max_message),
                partial: layer.partial,
                max_partial: layer.max_partial,
            })
        }))
    }
}

/// Where a request body is in its gRPC framing: each message is a flag
/// byte, a 4-byte big-endian length, then that many bytes.
#[derive(Debug)]
struct Framing {
    max_message: usize,
    /// The prefix of the message being read, while incomplete.
    prefix: [u8; 5],
    prefix_len: usize,
    /// Bytes of the current message still to come (0: in a prefix).
    remaining: usize,
    /// Bytes of the current message received so far.
    held: usize,
}

impl Framing {
    fn new(max_message: usize) -> Self {
        Self {
            max_message,
            prefix: [0; 5],
            prefix_len: 0,
            remaining: 0,
            held: 0,
        }
    }

    /// Reads `chunk`; the change in bytes held by messages not complete
    /// (positive: more held), or the status that refuses the stream.
    fn read(&mut self, mut chunk: &[u8]) -> Result<isize, Status> {
        let before = self.held as isize;
        while !chunk.is_empty() {
            if self.remaining == 0 {
                let take = (5 - self.prefix_len).min(chunk.len());
                self.prefix[self.prefix_len..self.prefix_len + take]
                    .copy_from_slice(&chunk[..take]);
                self.prefix_len += take;
                chunk = &chunk[take..];
                if self.prefix_len < 5 {
                    break;
                }
                self.prefix_len = 0;
                let len = u32::from_be_bytes(self.prefix[1..5].try_into().unwrap()) as usize;
                if len > self.max_message {
                    return Err(Status::resource_exhausted(format!(
                        "a request message of {len} bytes: this rpc takes at most {}",
                        self.max_message
                    )));
                }
                self.remaining = len;
                self.held = 0;
                continue;
            }
            let take = self.remaining.min(chunk.len());
            self.remaining -= take;
            self.held += take;
            chunk = &chunk[take..];
            if self.remaining == 0 {
                self.held = 0;
            }
        }
        Ok(self.held as isize - before)
    }
}

/// A request body whose messages not yet complete count against the
/// shared budget.
struct Budgeted<B> {
    inner: B,
    framing: Framing,
    partial: Arc<AtomicUsize>,
    max_partial: usize,
}

impl<B> Budgeted<B> {
    /// Gives back what this body holds of the budget.
    fn release(&mut self) {
        self.partial.fetch_sub(self.framing.held, Ordering::SeqCst);
        self.framing.held = 0;
    }
}

impl<B> Drop for Budgeted<B> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<B> Body for Budgeted<B>
where
    B: Body<Data = Bytes, Error = Status> + Unpin,
{
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let Poll::Ready(Some(Ok(frame))) = &polled else {
            return polled;
        };
        let Some(data) = frame.data_ref() else {
            return polled;
        };
        let change = match self.framing.read(data.chunk()) {
            Ok(change) => change,
            Err(refused) => {
                self.release();
                return Poll::Ready(Some(Err(refused)));
            }
        };
        if change >= 0 {
            let added = change as usize;
            let now = self.partial.fetch_add(added, Ordering::SeqCst) + added;
            if now > self.max_partial {
                self.partial.fetch_sub(added, Ordering::SeqCst);
                self.framing.held -= added;
                self.release();
                return Poll::Ready(Some(Err(Status::resource_exhausted(format!(
                    "the service holds {} bytes of request messages not yet complete at most: \
                     send each message whole, or try again",
                    self.max_partial
                )))));
            }
        } else {
            self.partial
                .fetch_sub(change.unsigned_abs(), Ordering::SeqCst);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: u32) -> Vec<u8> {
        let mut m = vec![0];
        m.extend(len.to_be_bytes());
        m.extend(std::iter::repeat_n(7u8, len as usize));
        m
    }

    #[test]
    fn whole_messages_hold_nothing_and_parts_hold_their_bytes() {
        let mut f = Framing::new(100);
        assert_eq!(f.read(&message(50)).unwrap(), 0);
        let m = message(80);
        assert_eq!(f.read(&m[..3]).unwrap(), 0, "a prefix in part");
        assert_eq!(f.read(&m[3..30]).unwrap(), 25);
        assert_eq!(f.read(&m[30..]).unwrap(), -25, "complete: released");
        let two = [message(10), message(20)].concat();
        assert_eq!(
            f.read(&two[..25]).unwrap(),
            5,
            "the first whole, 5 of the second"
        );
        assert_eq!(f.read(&two[25..]).unwrap(), -5);
    }

    #[test]
    fn a_message_over_its_bound_is_refused_at_its_prefix() {
        let mut f = Framing::new(100);
        let refused = f.read(&message(101)[..5]).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert_eq!(max_message("/urlfrontier.URLFrontier/PutURLs"), 1 << 20);
        assert_eq!(max_message("/urlfrontier.URLFrontier/GetStats"), 64 << 10);
    }
}
