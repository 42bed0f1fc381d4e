//! The async Stream yields exactly what the sync Iterator yields, also when
//! the bytes arrive slowly in small pieces.

mod common;

use common::{fixtures, gzip};
use futures_util::StreamExt;
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser, parse_async};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::AsyncWriteExt;

fn options() -> ParseOptions {
    let mut o = ParseOptions::for_url(NormUrl::parse("https://adobe.example/sitemap.xml").unwrap());
    o.scope = sitemapd_parser::ScopeMode::None;
    o
}

fn sync_events(bytes: Vec<u8>) -> Vec<Event> {
    Parser::new(std::io::Cursor::new(bytes), options()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_matches_iterator_on_a_large_real_sitemap_fed_in_small_chunks() {
    let bytes =
        std::fs::read(fixtures().join("corpus/urlset/adobe__theblog__sitemap.xml")).unwrap();
    let expected = sync_events(bytes.clone());
    assert_eq!(
        expected
            .iter()
            .filter(|e| matches!(e, Event::Url(_)))
            .count(),
        12_964
    );

    let gz = gzip(&bytes);
    let (mut writer, reader) = tokio::io::duplex(1024);
    let feeder = tokio::spawn(async move {
        for chunk in gz.chunks(997) {
            writer.write_all(chunk).await.unwrap();
            tokio::task::yield_now().await;
        }
    });
    let mut stream = parse_async(reader, options());
    let mut got = Vec::new();
    while let Some(event) = stream.next().await {
        got.push(event);
    }
    feeder.await.unwrap();
    assert_eq!(got, expected);
    let summary = stream.summary().expect("summary after the end");
    assert_eq!(
        (summary.urls, summary.gzip_layers, summary.complete),
        (12_964, 1, true)
    );
}

/// An endless urlset that records how much it served and when it is dropped.
struct Endless {
    served: Arc<AtomicU64>,
    dropped: Arc<AtomicBool>,
    pending: Vec<u8>,
}

impl tokio::io::AsyncRead for Endless {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.pending.is_empty() {
            this.pending
                .extend_from_slice(b"<url><loc>https://example.com/x</loc></url>");
        }
        let n = this.pending.len().min(buf.remaining());
        buf.put_slice(&this.pending[..n]);
        this.pending.drain(..n);
        this.served.fetch_add(n as u64, Ordering::Relaxed);
        std::task::Poll::Ready(Ok(()))
    }
}

impl Drop for Endless {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_stops_the_parser_and_releases_the_reader() {
    let served = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let reader = Endless {
        served: served.clone(),
        dropped: dropped.clone(),
        pending: b"<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">".to_vec(),
    };
    let options = ParseOptions {
        max_bytes: u64::MAX,
        max_entries: u64::MAX,
        ..ParseOptions::default()
    };
    let mut stream = parse_async(reader, options);
    let first = stream.next().await;
    assert!(matches!(first, Some(Event::Url(_))), "{first:?}");
    // Back-pressure: with nobody reading, the parser stops at a full
    // channel. Waited for as it happens (what was served stops growing),
    // not for a fixed time: on a loaded machine the parsing thread may take
    // long to fill the channel, and a parser that never stops fails here,
    // at the bound or at the time limit, whichever comes first.
    let bound = 10 << 20;
    let started = std::time::Instant::now();
    let mut early = served.load(Ordering::Relaxed);
    loop {
        assert!(
            early < bound,
            "served {early} bytes to a consumer that took one event"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = served.load(Ordering::Relaxed);
        if now == early {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "a stalled consumer stalls the parser: still reading after {:?} ({now} bytes)",
            started.elapsed()
        );
        early = now;
    }
    drop(stream);
    // The parsing thread notices at its next send; waited for as it happens.
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(60) {
        if dropped.load(Ordering::Relaxed) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the parsing thread did not stop after the stream was dropped");
}
