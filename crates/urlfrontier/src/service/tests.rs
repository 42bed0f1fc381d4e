//! The service's rpcs on an in-memory store, its time a [`ManualClock`]:
//! holds, queue delays, blocks, crawl limits, purges and the pruning of
//! the rules follow the clock, never a sleep.

use std::sync::Arc;
use std::time::Duration;

use sitemapd_scheduler::{ManualClock, Store, StoreOptions, Timestamp};
use tokio_stream::StreamExt;
use tonic::Request;

use super::*;
use crate::proto::ack_message::Status as Ack;

const START: i64 = 1_700_000_000;

/// The service on an in-memory store with no lease delay (the protocol's
/// own rules space a queue's URLs), and its clock.
fn frontier() -> (Frontier, Arc<ManualClock>) {
    let options = StoreOptions {
        min_delay: 0.0,
        ..StoreOptions::default()
    };
    let store = Arc::new(Store::in_memory(options).unwrap());
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix(START)));
    let frontier = Frontier::with_clock(store, "127.0.0.1:1", None, clock.clone());
    (frontier, clock)
}

fn info(url: &str, key: &str, crawl: &str) -> proto::UrlInfo {
    proto::UrlInfo {
        url: url.into(),
        key: key.into(),
        crawl_id: crawl.into(),
        ..Default::default()
    }
}

fn discovered(url: &str, key: &str) -> proto::UrlItem {
    proto::UrlItem {
        item: Some(proto::url_item::Item::Discovered(
            proto::DiscoveredUrlItem {
                info: Some(info(url, key, "")),
            },
        )),
        id: url.into(),
        creation_date: 0,
    }
}

fn known(url: &str, key: &str, refetch: i64) -> proto::UrlItem {
    proto::UrlItem {
        item: Some(proto::url_item::Item::Known(proto::KnownUrlItem {
            info: Some(info(url, key, "")),
            refetchable_from_date: refetch.unsigned_abs(),
        })),
        id: url.into(),
        creation_date: 0,
    }
}

/// PutURLs of `items`: each id's ack, in order.
async fn put(f: &Frontier, items: Vec<proto::UrlItem>) -> Vec<(String, Ack)> {
    let acks = put::put_urls(
        f.inner.clone(),
        tokio_stream::iter(items.into_iter().map(Ok)),
        false,
    );
    acks.map(|a| {
        let a = a.unwrap();
        (a.id, Ack::try_from(a.status).unwrap())
    })
    .collect()
    .await
}

/// GetURLs of queue `key` (every queue when empty), `per_queue` of each,
/// each held `hold` seconds: the URLs.
async fn get(f: &Frontier, key: &str, per_queue: u32, hold: u32) -> Vec<String> {
    let p = proto::GetParams {
        max_urls_per_queue: per_queue,
        key: key.into(),
        delay_requestable: hold,
        ..Default::default()
    };
    let got = f.get_ur_ls(Request::new(p)).await.unwrap().into_inner();
    got.map(|i| i.unwrap().url).collect().await
}

fn in_queue(key: &str) -> proto::QueueWithinCrawlParams {
    proto::QueueWithinCrawlParams {
        key: key.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn each_put_item_is_acked_once() {
    let (f, _) = frontier();
    let long_crawl = proto::UrlItem {
        item: Some(proto::url_item::Item::Discovered(
            proto::DiscoveredUrlItem {
                info: Some(info("https://a.example/c", "", &"c".repeat(256))),
            },
        )),
        id: "long-crawl".into(),
        creation_date: 0,
    };
    let acks = put(
        &f,
        vec![
            discovered("https://a.example/1", ""),
            discovered("https://a.example/1", ""),
            discovered("https:///no-host", ""),
            long_crawl,
            known("https://a.example/2", "", START),
        ],
    )
    .await;
    let want = [
        ("https://a.example/1", Ack::Ok),
        ("https://a.example/1", Ack::Skipped),
        ("https:///no-host", Ack::Skipped),
        ("long-crawl", Ack::Skipped),
        ("https://a.example/2", Ack::Ok),
    ];
    // Those skipped as read are acked first in their chunk.
    let mut acks: Vec<(&str, Ack)> = acks.iter().map(|(id, a)| (id.as_str(), *a)).collect();
    acks.sort_by_key(|(id, a)| (*id, *a as i32));
    let mut want = want.to_vec();
    want.sort_by_key(|(id, a)| (*id, *a as i32));
    assert_eq!(acks, want);
}

#[tokio::test]
async fn a_hold_ends_when_the_clock_passes_it() {
    let (f, clock) = frontier();
    put(&f, vec![discovered("https://a.example/1", "")]).await;
    assert_eq!(get(&f, "", 0, 5).await, ["https://a.example/1"]);
    let in_process = |f: &Frontier| {
        let inner = f.inner.clone();
        async move { inner.stats("", "").unwrap().in_process }
    };
    assert_eq!(in_process(&f).await, 1);
    clock.advance(Duration::from_secs(4));
    assert!(get(&f, "", 0, 5).await.is_empty(), "held 5 s");
    clock.advance(Duration::from_secs(1));
    assert_eq!(in_process(&f).await, 0);
    assert_eq!(get(&f, "", 0, 5).await, ["https://a.example/1"]);
}

#[tokio::test]
async fn a_known_put_releases_a_hold_at_once() {
    let (f, _) = frontier();
    put(&f, vec![discovered("https://a.example/1", "q")]).await;
    assert_eq!(get(&f, "q", 0, 60).await.len(), 1);
    put(&f, vec![known("https://a.example/1", "q", START)]).await;
    // The default queue delay (1 s) first.
    f.set_delay(Request::new(proto::QueueDelayParams::default()))
        .await
        .unwrap();
    assert_eq!(get(&f, "q", 0, 60).await, ["https://a.example/1"]);
}

/// A known put releases the hold whatever queue it names: the one the URL
/// was handed out in, its host's, or another (the URL moves there).
#[tokio::test]
async fn a_known_put_releases_the_hold_of_the_queue_it_was_handed_out_in() {
    let (f, _) = frontier();
    let urls = [
        "https://a.example/1",
        "https://a.example/2",
        "https://a.example/3",
    ];
    put(
        &f,
        vec![
            discovered(urls[0], "q"),
            discovered(urls[1], ""),
            discovered(urls[2], "q"),
        ],
    )
    .await;
    assert_eq!(get(&f, "", 0, 60).await.len(), 3);
    let in_process = |f: &Frontier| f.inner.stats("", "").unwrap().in_process;
    assert_eq!(in_process(&f), 3);
    // As handed out: in "q", in its host's.
    put(
        &f,
        vec![known(urls[0], "q", START), known(urls[1], "", START)],
    )
    .await;
    assert_eq!(in_process(&f), 1);
    // Handed out in "q", put in its host's queue.
    put(&f, vec![known(urls[2], "", START)]).await;
    assert_eq!(in_process(&f), 0);
}

#[tokio::test]
async fn a_queue_is_served_again_once_its_delay_is_over() {
    let (f, clock) = frontier();
    let urls = ["https://a.example/1", "https://a.example/2"];
    put(&f, urls.iter().map(|u| discovered(u, "q")).collect()).await;
    let delay = proto::QueueDelayParams {
        key: "q".into(),
        delay_requestable: 10,
        ..Default::default()
    };
    f.set_delay(Request::new(delay)).await.unwrap();
    // Held a second: the delay, not the hold, keeps the queue waiting.
    assert_eq!(get(&f, "q", 1, 1).await, [urls[0]]);
    clock.advance(Duration::from_secs(9));
    assert!(get(&f, "q", 1, 1).await.is_empty(), "within its delay");
    clock.advance(Duration::from_secs(1));
    // The first again (its hold expired), ahead of the second.
    assert_eq!(get(&f, "q", 1, 1).await, [urls[0]]);
    // Over the bound: refused.
    let too_long = proto::QueueDelayParams {
        key: "q".into(),
        delay_requestable: MAX_DELAY_SECS + 1,
        ..Default::default()
    };
    let refused = f.set_delay(Request::new(too_long)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn a_blocked_queue_is_inactive_until_its_time() {
    let (f, clock) = frontier();
    put(&f, vec![discovered("https://a.example/1", "q")]).await;
    let block = proto::BlockQueueParams {
        key: "q".into(),
        time: u64::try_from(START + 10).unwrap(),
        ..Default::default()
    };
    f.block_queue_until(Request::new(block)).await.unwrap();
    let active = |f: &Frontier| {
        let f = f.clone();
        async move {
            let page = proto::Pagination::default();
            f.list_queues(Request::new(page))
                .await
                .unwrap()
                .into_inner()
                .values
        }
    };
    assert!(active(&f).await.is_empty());
    assert!(get(&f, "", 0, 0).await.is_empty());
    clock.advance(Duration::from_secs(10));
    assert_eq!(active(&f).await, ["q"]);
    assert_eq!(get(&f, "", 0, 0).await.len(), 1);
}

#[tokio::test]
async fn a_crawl_limit_stops_a_queue_with_that_many_completed() {
    let (f, _) = frontier();
    put(
        &f,
        vec![
            known("https://a.example/done", "q", 0),
            discovered("https://a.example/new", "q"),
        ],
    )
    .await;
    let limit = |limit| proto::CrawlLimitParams {
        key: "q".into(),
        limit,
        ..Default::default()
    };
    f.set_crawl_limit(Request::new(limit(1))).await.unwrap();
    assert!(get(&f, "q", 0, 0).await.is_empty());
    f.set_crawl_limit(Request::new(limit(2))).await.unwrap();
    assert_eq!(get(&f, "q", 0, 0).await, ["https://a.example/new"]);
    let unknown = proto::CrawlLimitParams {
        key: "nowhere".into(),
        ..Default::default()
    };
    let refused = f.set_crawl_limit(Request::new(unknown)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unknown);
}

#[tokio::test]
async fn a_purge_takes_what_was_first_stored_before_its_cutoff() {
    let (f, clock) = frontier();
    put(&f, vec![discovered("https://a.example/1", "q")]).await;
    let purge = |days| proto::PurgeUrlParams {
        key: "q".into(),
        days,
        ..Default::default()
    };
    let purged = |f: &Frontier, days| {
        let f = f.clone();
        async move {
            let n = f.purge_ur_ls(Request::new(purge(days))).await.unwrap();
            n.into_inner().value
        }
    };
    assert_eq!(purged(&f, 0).await, 0, "stored this second");
    clock.advance(Duration::from_secs(1));
    assert_eq!(purged(&f, 1).await, 0, "stored less than a day ago");
    assert_eq!(purged(&f, 0).await, 1);
}

#[tokio::test]
async fn rules_that_hold_nothing_are_forgotten_a_minute_on() {
    let (f, clock) = frontier();
    put(&f, vec![discovered("https://a.example/1", "q")]).await;
    // Served (the rules are pruned then, for the first time), then
    // completed: its rules hold nothing once the queue delay is over.
    assert_eq!(get(&f, "", 0, 0).await.len(), 1);
    put(&f, vec![known("https://a.example/1", "q", 0)]).await;
    let remembered = |f: &Frontier| lock(&f.inner.rules).len();
    assert_eq!(remembered(&f), 1);
    clock.advance(Duration::from_secs(59));
    assert!(get(&f, "", 0, 0).await.is_empty());
    assert_eq!(remembered(&f), 1, "pruned once a minute");
    clock.advance(Duration::from_secs(1));
    assert!(get(&f, "", 0, 0).await.is_empty());
    assert_eq!(remembered(&f), 0);
}

#[tokio::test]
async fn list_urls_pages_and_count_urls_counts() {
    let (f, _) = frontier();
    let n = LIST_PAGE + 44;
    let urls: Vec<String> = (0..n)
        .map(|i| format!("https://a.example/{i:04}"))
        .collect();
    put(&f, urls.iter().map(|u| discovered(u, "q")).collect()).await;
    put(&f, vec![discovered("https://b.example/X", "other")]).await;
    let list = |start, size, filter: Option<&str>| proto::ListUrlParams {
        start,
        size,
        key: "q".into(),
        filter: filter.map(Into::into),
        ..Default::default()
    };
    let listed = |f: &Frontier, p| {
        let f = f.clone();
        async move {
            let items = f.list_ur_ls(Request::new(p)).await.unwrap().into_inner();
            let items: Vec<proto::UrlItem> = items.map(Result::unwrap).collect().await;
            items
                .into_iter()
                .map(|i| match i.item {
                    Some(proto::url_item::Item::Known(k)) => k.info.unwrap().url,
                    other => panic!("{other:?}"),
                })
                .collect::<Vec<String>>()
        }
    };
    assert_eq!(listed(&f, list(0, 0, None)).await, urls[..DEFAULT_PAGE]);
    let all = u32::try_from(n + 10).unwrap();
    assert_eq!(listed(&f, list(0, all, None)).await, urls);
    let tail = u32::try_from(n - 5).unwrap();
    assert_eq!(listed(&f, list(tail, 100, None)).await, urls[n - 5..]);
    assert_eq!(
        listed(&f, list(1, 2, Some("/01"))).await,
        urls[101..103],
        "start counts matching URLs only"
    );
    let count = |key: &str, filter: &str, ignore_case| proto::CountUrlParams {
        key: key.into(),
        filter: Some(filter.into()),
        ignore_case: Some(ignore_case),
        ..Default::default()
    };
    let counted = |f: &Frontier, p| {
        let f = f.clone();
        async move {
            f.count_ur_ls(Request::new(p))
                .await
                .unwrap()
                .into_inner()
                .value
        }
    };
    assert_eq!(counted(&f, count("", "", false)).await, n as u64 + 1);
    assert_eq!(counted(&f, count("", "b.example/x", false)).await, 0);
    assert_eq!(counted(&f, count("", "b.example/x", true)).await, 1);
    assert_eq!(counted(&f, count("q", "b.example", true)).await, 0);
}

#[tokio::test]
async fn stats_and_deletes_count_a_crawl_s_queues() {
    let (f, _) = frontier();
    put(
        &f,
        vec![
            discovered("https://a.example/1", "q1"),
            discovered("https://a.example/2", "q1"),
            known("https://a.example/3", "q2", 0),
        ],
    )
    .await;
    let stats = f.get_stats(Request::new(in_queue(""))).await.unwrap();
    let stats = stats.into_inner();
    assert_eq!((stats.size, stats.number_of_queues), (2, 2));
    assert_eq!(stats.counts["completed"], 1);
    assert_eq!(stats.counts["active_queues"], 1);
    assert_eq!(stats.crawl_id, "DEFAULT");
    let deleted = f.delete_queue(Request::new(in_queue("q1"))).await.unwrap();
    assert_eq!(deleted.into_inner().value, 2);
    let dropped = proto::DeleteCrawlMessage::default();
    let deleted = f.delete_crawl(Request::new(dropped)).await.unwrap();
    assert_eq!(deleted.into_inner().value, 1);
    let crawls = f.list_crawls(Request::new(proto::Local::default())).await;
    assert!(crawls.unwrap().into_inner().values.is_empty());
}

/// A log that takes every batch (cluster mode's, in memory).
#[derive(Debug, Default)]
struct TakingLog(std::sync::atomic::AtomicU64);

impl sitemapd_scheduler::WriteLog for TakingLog {
    fn append(&self, _: u16, _: &[u8]) -> Result<u64, String> {
        Ok(self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1)
    }
}

/// With a write log, deleting a crawl (not DEFAULT) is refused before
/// anything is touched: the crawl and its URLs stay, and the service goes
/// on serving it from the store it holds.
#[tokio::test]
async fn deleting_a_crawl_is_refused_with_a_write_log() {
    let (f, _) = frontier();
    f.inner.store.log_writes_to(Arc::new(TakingLog::default()));
    let item = proto::UrlItem {
        item: Some(proto::url_item::Item::Discovered(
            proto::DiscoveredUrlItem {
                info: Some(info("https://a.example/1", "q1", "other")),
            },
        )),
        id: "1".into(),
        creation_date: 0,
    };
    put(&f, vec![item]).await;
    let dropped = proto::DeleteCrawlMessage {
        value: "other".into(),
        local: false,
    };
    let refused = f.delete_crawl(Request::new(dropped)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    let crawls = f.list_crawls(Request::new(proto::Local::default())).await;
    assert_eq!(crawls.unwrap().into_inner().values, ["other"]);
}
