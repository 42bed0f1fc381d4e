//! The same parser over tokio's async readers, as a [`Stream`] of the same
//! [`Event`]s. The parse runs on tokio's blocking pool (the parser is
//! synchronous and CPU-bound); events come back in batches over a bounded
//! channel, so a slow consumer slows the parser instead of growing a buffer.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tokio_util::io::SyncIoBridge;

use crate::event::Event;
use crate::options::ParseOptions;
use crate::parser::Parser;
use crate::summary::Summary;

/// Events per batch sent from the parsing thread.
const BATCH: usize = 256;
/// Batches in flight at most.
const CHANNEL: usize = 8;

enum Msg {
    Events(Vec<Event>),
    Done(Summary),
}

/// A [`Stream`] of parse [`Event`]s; see [`parse_async`].
pub struct ParseStream {
    rx: mpsc::Receiver<Msg>,
    current: std::vec::IntoIter<Event>,
    summary: Option<Summary>,
}

/// Parses an async byte stream (an HTTP body, a file) without blocking the
/// runtime. Must be called inside a tokio runtime.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use futures_util::StreamExt;
/// use sitemapd_parser::{Event, ParseOptions, parse_async};
/// let body: &'static [u8] = b"https://example.com/a\nhttps://example.com/b\n";
/// let mut stream = parse_async(body, ParseOptions::default());
/// let mut urls = 0;
/// while let Some(event) = stream.next().await {
///     if let Event::Url(_) = event { urls += 1 }
/// }
/// assert_eq!(urls, 2);
/// assert_eq!(stream.summary().unwrap().urls, 2);
/// # }
/// ```
pub fn parse_async<R>(reader: R, options: ParseOptions) -> ParseStream
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let (tx, rx) = mpsc::channel(CHANNEL);
    let bridge = SyncIoBridge::new(reader);
    tokio::task::spawn_blocking(move || {
        let mut parser = Parser::new(bridge, options);
        let mut batch = Vec::with_capacity(BATCH);
        for event in parser.by_ref() {
            batch.push(event);
            if batch.len() == BATCH
                && tx
                    .blocking_send(Msg::Events(std::mem::take(&mut batch)))
                    .is_err()
            {
                return; // the consumer is gone
            }
        }
        if !batch.is_empty() && tx.blocking_send(Msg::Events(batch)).is_err() {
            return;
        }
        let _ = tx.blocking_send(Msg::Done(parser.summary().clone()));
    });
    ParseStream {
        rx,
        current: Vec::new().into_iter(),
        summary: None,
    }
}

impl ParseStream {
    /// The parse's totals, once the stream has ended.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }
}

impl Stream for ParseStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        loop {
            if let Some(e) = self.current.next() {
                return Poll::Ready(Some(e));
            }
            match self.rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Msg::Events(batch))) => self.current = batch.into_iter(),
                Poll::Ready(Some(Msg::Done(summary))) => self.summary = Some(summary),
                Poll::Ready(None) => return Poll::Ready(None),
            }
        }
    }
}
