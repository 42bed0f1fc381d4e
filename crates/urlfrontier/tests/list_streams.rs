//! ListURLs streams under clients that do not read: no stream holds a
//! thread of the blocking pool, one whose client takes too little is cut,
//! and the streams open are capped per connection and in all.

use std::sync::Arc;
use std::time::Duration;

use sitemapd_scheduler::{DiscoveredUrl, Store, StoreOptions, Timestamp};
use sitemapd_urlfrontier::proto::url_frontier_server::UrlFrontier;
use sitemapd_urlfrontier::proto::{self, ListUrlParams};
use sitemapd_urlfrontier::service::{
    LIST_PAGE, MAX_LIST_STREAMS, MAX_LIST_STREAMS_PER_CONNECTION, STALLED_LIST,
};
use sitemapd_urlfrontier::{ConnectionId, Frontier};
use tokio_stream::StreamExt;

const URLS: usize = 1_000;

/// A service on a store of [`URLS`] URLs over 10 hosts.
fn frontier(dir: &tempfile::TempDir) -> Frontier {
    let store = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let urls = (0..URLS).map(|i| DiscoveredUrl::new(format!("https://h{}.example/{i}", i % 10)));
    store.discover(urls, Timestamp::now()).unwrap();
    Frontier::new(Arc::new(store), "127.0.0.1:1", None)
}

fn list(size: u32, connection: Option<u64>) -> tonic::Request<ListUrlParams> {
    let mut req = tonic::Request::new(ListUrlParams {
        size,
        ..Default::default()
    });
    if let Some(id) = connection {
        req.extensions_mut().insert(ConnectionId(id));
    }
    req
}

/// A ListURLs stream, once a place is free: a stream whose client went
/// away gives its place back when its task sees it.
async fn list_when_free(
    frontier: &Frontier,
    size: u32,
    connection: Option<u64>,
) -> tonic::Response<<Frontier as UrlFrontier>::ListURLsStream> {
    for _ in 0..250 {
        match frontier.list_ur_ls(list(size, connection)).await {
            Ok(stream) => return stream,
            Err(e) => assert_eq!(e.code(), tonic::Code::ResourceExhausted),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no place given back in 5 s");
}

async fn count(frontier: &Frontier) -> u64 {
    let params = proto::CountUrlParams::default();
    let n = frontier.count_ur_ls(tonic::Request::new(params)).await;
    n.unwrap().into_inner().value
}

/// With a blocking pool of one thread, streams nobody reads leave it free:
/// a CountURLs (which reads the store on that pool) is answered. A stream
/// read to its end has every URL once, across pages.
#[test]
fn unread_streams_hold_no_thread() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let frontier = frontier(&dir);
    runtime.block_on(async {
        let mut unread = Vec::new();
        let counted = tokio::time::timeout(Duration::from_secs(10), async {
            for _ in 0..MAX_LIST_STREAMS {
                let mut stream = frontier.list_ur_ls(list(u32::MAX, None)).await.unwrap();
                // Its first page is read: it now waits on its client.
                stream.get_mut().next().await.unwrap().unwrap();
                unread.push(stream);
            }
            count(&frontier).await
        })
        .await;
        assert_eq!(counted, Ok(URLS as u64));
        drop(unread);

        let mut urls = Vec::new();
        let mut whole = list_when_free(&frontier, u32::MAX, None).await;
        while let Some(item) = whole.get_mut().next().await {
            let info = match item.unwrap().item {
                Some(proto::url_item::Item::Discovered(d)) => d.info,
                Some(proto::url_item::Item::Known(k)) => k.info,
                None => None,
            };
            urls.push(info.unwrap().url);
        }
        const { assert!(URLS > 3 * LIST_PAGE, "several pages") };
        let listed = urls.len();
        urls.sort();
        urls.dedup();
        assert_eq!((listed, urls.len()), (URLS, URLS));
    });
}

/// A client that takes less than a page within STALLED_LIST is cut: its
/// stream gives what it had buffered, then DEADLINE_EXCEEDED, so that the
/// client cannot take it for the whole list (time is paused, so the test
/// does not wait).
#[tokio::test(start_paused = true)]
async fn a_stream_its_client_barely_reads_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let frontier = frontier(&dir);
    let mut stream = frontier.list_ur_ls(list(u32::MAX, None)).await.unwrap();
    let mut read = 0;
    let end = loop {
        let item = tokio::time::timeout(STALLED_LIST * 2, stream.get_mut().next()).await;
        match item {
            Ok(Some(_)) if read > LIST_PAGE => break Err("read past a page".to_string()),
            Ok(Some(Ok(_))) => {
                read += 1;
                // One URL now and then: far less than a page per STALLED_LIST.
                tokio::time::sleep(STALLED_LIST / 8).await;
            }
            // The end says it was cut: not the end of the list.
            Ok(Some(Err(status))) => break Ok(status),
            Ok(None) => break Err("ended as if whole".to_string()),
            Err(_) => break Err("no end".to_string()),
        }
    };
    let status = end.unwrap();
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    assert!(stream.get_mut().next().await.is_none(), "the end");
    assert!(read < LIST_PAGE, "{read} URLs read before the cut");
    assert_eq!(count(&frontier).await, URLS as u64, "nothing lost");
}

/// At most MAX_LIST_STREAMS_PER_CONNECTION streams per connection and
/// MAX_LIST_STREAMS in all; a stream's end gives its place back.
#[tokio::test]
async fn streams_are_capped_per_connection_and_in_all() {
    let dir = tempfile::tempdir().unwrap();
    let frontier = frontier(&dir);
    let exhausted = |r: Result<_, tonic::Status>| match r {
        Err(e) => e.code() == tonic::Code::ResourceExhausted,
        Ok(_) => false,
    };
    let mut open = Vec::new();
    for _ in 0..MAX_LIST_STREAMS_PER_CONNECTION {
        open.push(frontier.list_ur_ls(list(u32::MAX, Some(1))).await.unwrap());
    }
    assert!(exhausted(
        frontier.list_ur_ls(list(u32::MAX, Some(1))).await
    ));
    // Other connections fill the rest.
    let mut id = 2;
    while open.len() < MAX_LIST_STREAMS {
        for _ in 0..MAX_LIST_STREAMS_PER_CONNECTION.min(MAX_LIST_STREAMS - open.len()) {
            open.push(frontier.list_ur_ls(list(u32::MAX, Some(id))).await.unwrap());
        }
        id += 1;
    }
    assert!(exhausted(
        frontier.list_ur_ls(list(u32::MAX, Some(id))).await
    ));
    assert!(exhausted(frontier.list_ur_ls(list(u32::MAX, None)).await));
    // The client of connection 1's first stream goes away: connection 1
    // has a place again once the stream has ended.
    drop(open.remove(0));
    let mut again = list_when_free(&frontier, 2, Some(1)).await;
    let mut n = 0;
    while let Some(item) = again.get_mut().next().await {
        item.unwrap();
        n += 1;
    }
    assert_eq!(n, 2, "the size asked");
}
