//! The async Stream yields exactly what the sync Iterator yields, also when
//! the bytes arrive slowly in small pieces.

mod common;

use common::{fixtures, gzip};
use futures_util::StreamExt;
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser, parse_async};
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

#[tokio::test(flavor = "current_thread")]
async fn dropping_the_stream_early_stops_the_parser() {
    let bytes =
        std::fs::read(fixtures().join("corpus/urlset/adobe__theblog__sitemap.xml")).unwrap();
    let mut stream = parse_async(std::io::Cursor::new(bytes), options());
    let first = stream.next().await;
    assert!(matches!(first, Some(Event::Url(_))));
    drop(stream); // the parsing thread sees the closed channel and returns
}
