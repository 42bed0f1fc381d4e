//! The URLFrontier protocol's own semantics, as crawler-commons'
//! `URLFrontierServiceTest` and the reference service define them, through
//! the real daemon on loopback: a URL is in the queue of the key it was put
//! with (one host's URLs in several queues), and every rpc that takes a key
//! answers for exactly that queue's URLs; GetURLs keeps the per-queue rules
//! (max_urls_per_queue, max_queues, the queue delay, in-transit holds and
//! their release, blocks, crawl limits, SetActive) and a host's
//! Crawl-delay; crawls are namespaces; discovered URLs already known are
//! skipped; ListURLs, CountURLs and PurgeURLs page and filter.
//!
//! The daemon runs without a lease delay here (as the reference service has
//! none), but for the Crawl-delay test, which runs with the default one.

mod common;

use std::time::{Duration, Instant};

use common::clock::TestClock;
use common::daemon::TOKEN;
use common::frontier::*;
use sitemapd_testsite::{Reply, TestSite};
use sitemapd_urlfrontier::proto::{self, ack_message::Status as Ack};

const DISCOVERED: &str = "http://www.mysite.com/discovered";
const COMPLETED: &str = "http://www.mysite.com/completed";
const TO_RETRY: &str = "http://www.mysite.com/knowntofail";
const ANOTHER: &str = "http://www.mysite.com/another";
const MYSITE: &str = "queue_mysite";
const OTHER: &str = "another_queue";

fn now() -> u64 {
    u64::try_from(sitemapd_scheduler::Timestamp::now().unix()).unwrap()
}

fn stats(key: &str, crawl: &str) -> proto::QueueWithinCrawlParams {
    proto::QueueWithinCrawlParams {
        key: key.into(),
        crawl_id: crawl.into(),
        local: false,
    }
}

/// Three URLs of www.mysite.com in `queue_mysite` (one discovered, one
/// completed, one due in an hour) and a fourth in `another_queue`: one
/// host's URLs in two queues.
async fn two_queues_of_one_host(c: &mut Client) {
    let acks = put(
        c,
        vec![
            discovered_in(DISCOVERED, MYSITE, ""),
            known_in(COMPLETED, MYSITE, "", 0),
            known_in(TO_RETRY, MYSITE, "", now() + 3600),
            discovered_in(ANOTHER, OTHER, ""),
        ],
    )
    .await;
    assert!(acks.values().all(|a| *a == Ack::Ok), "{acks:?}");
}

#[test]
fn a_url_is_in_the_queue_of_the_key_it_was_put_with() {
    let dir = tempfile::tempdir().unwrap();
    let (d, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        two_queues_of_one_host(&mut c).await;

        // ListQueues: both queues, by their keys (not the host).
        assert_eq!(list_queues(&mut c, "", true).await, [OTHER, MYSITE]);
        assert_eq!(list_queues(&mut c, "", false).await, [OTHER, MYSITE]);
        // CountURLs and ListURLs answer for each queue's URLs alone.
        assert_eq!(count_urls(&mut c, MYSITE, "", None, false).await, 3);
        assert_eq!(count_urls(&mut c, OTHER, "", None, false).await, 1);
        assert_eq!(count_urls(&mut c, "", "", None, false).await, 4);
        assert_eq!(
            count_urls(&mut c, "www.mysite.com", "", None, false).await,
            0
        );
        let other = list_urls(&mut c, list_params(OTHER, "", 0, 0)).await;
        assert_eq!(other.len(), 1);
        assert_eq!((other[0].0.as_str(), other[0].1.as_str()), (ANOTHER, OTHER));
        let mine = list_urls(&mut c, list_params(MYSITE, "", 0, 0)).await;
        let mut listed: Vec<&str> = mine.iter().map(|(u, _, _)| u.as_str()).collect();
        listed.sort();
        assert_eq!(listed, [COMPLETED, DISCOVERED, TO_RETRY]);
        assert!(mine.iter().all(|(_, key, _)| key == MYSITE));
        let completed = mine.iter().find(|(u, _, _)| u == COMPLETED).unwrap();
        assert_eq!(completed.2, 0, "completed: no date");

        // GetURLStatus: found in its own queue only.
        let found = url_status(&mut c, DISCOVERED, MYSITE, "").await.unwrap();
        assert_eq!(found.0, MYSITE);
        assert!(found.1 > 0, "a discovered URL is scheduled");
        assert_eq!(
            url_status(&mut c, DISCOVERED, OTHER, "").await,
            Err(tonic::Code::NotFound)
        );
        assert_eq!(
            url_status(&mut c, COMPLETED, MYSITE, "").await,
            Ok((MYSITE.into(), 0))
        );
        assert_eq!(
            url_status(&mut c, "http://www.mysite.com/nowhere", MYSITE, "").await,
            Err(tonic::Code::NotFound)
        );
        assert_eq!(
            url_status(&mut c, DISCOVERED, MYSITE, "nocrawl").await,
            Err(tonic::Code::NotFound)
        );

        // GetStats: per queue and for the crawl.
        let mine = c.get_stats(stats(MYSITE, "")).await.unwrap().into_inner();
        assert_eq!(
            (
                mine.size,
                mine.number_of_queues,
                mine.counts["completed"],
                mine.in_process
            ),
            (2, 1, 1, 0)
        );
        let all = c.get_stats(stats("", "")).await.unwrap().into_inner();
        assert_eq!(
            (
                all.size,
                all.number_of_queues,
                all.counts["completed"],
                all.counts["active_queues"]
            ),
            (3, 2, 1, 2)
        );
        assert_eq!(all.crawl_id, "DEFAULT");
        let none = c
            .get_stats(stats("no_such_queue", ""))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((none.size, none.number_of_queues), (0, 0));

        // GetURLs of one queue: its URLs due now, named by it.
        let got = get_urls(&mut c, get(10, 0, MYSITE, None)).await;
        assert_eq!(urls(&got), [DISCOVERED]);
        assert_eq!(got[0].key, MYSITE);
        let got = get_urls(&mut c, get(10, 0, OTHER, None)).await;
        assert_eq!(urls(&got), [ANOTHER]);
        assert_eq!(got[0].key, OTHER);
        let held = c.get_stats(stats(MYSITE, "")).await.unwrap().into_inner();
        assert_eq!(held.in_process, 1);

        // A known put with another key moves the URL to that queue; the
        // queue it left stays, inactive, until deleted.
        let acks = put(&mut c, vec![known_in(ANOTHER, MYSITE, "", now())]).await;
        assert_eq!(acks[ANOTHER], Ack::Ok);
        assert_eq!(count_urls(&mut c, OTHER, "", None, false).await, 0);
        assert_eq!(count_urls(&mut c, MYSITE, "", None, false).await, 4);
        assert_eq!(list_queues(&mut c, "", false).await, [MYSITE]);
        assert_eq!(list_queues(&mut c, "", true).await, [OTHER, MYSITE]);
        // Its hold was released: due now, in its new queue.
        let got = get_urls(&mut c, get(10, 0, MYSITE, None)).await;
        assert_eq!(urls(&got), [ANOTHER]);

        // A discovered put of a known URL, with any key: skipped, nothing
        // moves.
        let acks = put(&mut c, vec![discovered_in(DISCOVERED, OTHER, "")]).await;
        assert_eq!(acks[DISCOVERED], Ack::Skipped);
        assert_eq!(
            url_status(&mut c, DISCOVERED, MYSITE, "").await.unwrap().0,
            MYSITE
        );

        // DeleteQueue: the queue's URLs, all of them, and nothing else.
        let n = c
            .delete_queue(stats(MYSITE, ""))
            .await
            .unwrap()
            .into_inner()
            .value;
        assert_eq!(n, 4);
        assert_eq!(count_urls(&mut c, "", "", None, false).await, 0);
        assert_eq!(list_queues(&mut c, "", true).await, [OTHER]);
        let n = c
            .delete_queue(stats(OTHER, ""))
            .await
            .unwrap()
            .into_inner()
            .value;
        assert_eq!(n, 0);
        assert!(list_queues(&mut c, "", true).await.is_empty());
    });
    drop(d);
    common::assert_store_checks(&dir.path().join("store"));
}

/// A queue without a key is the host as the reference cuts it: the text
/// after `://`, up to the first `:`, `/`, `?` or `&`, case kept.
#[test]
fn a_url_put_without_a_key_is_in_its_host_s_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        let acks = put(
            &mut c,
            vec![
                discovered_in("http://www.example.com/a", "", ""),
                discovered_in("http://www.example.com:8080/b", "", ""),
                discovered_in("http://WWW.Example.org/c", "", ""),
            ],
        )
        .await;
        assert!(acks.values().all(|a| *a == Ack::Ok));
        assert_eq!(
            list_queues(&mut c, "", true).await,
            ["WWW.Example.org", "www.example.com"]
        );
        assert_eq!(
            count_urls(&mut c, "www.example.com", "", None, false).await,
            2
        );
        // GetURLStatus with no key finds a URL in its host's queue.
        let (queue, _) = url_status(&mut c, "http://www.example.com:8080/b", "", "")
            .await
            .unwrap();
        assert_eq!(queue, "www.example.com");
        let got = get_urls(&mut c, get(1, 1, "", None)).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].key, "WWW.Example.org");
    });
}

/// GetURLs under the protocol's rules: `max_urls_per_queue` per queue and
/// call, `max_queues` queues that send URLs, a URL held for
/// `delay_requestable` and served again after, released at once by a known
/// update, never again once completed; the queue delay between two
/// servings; a blocked queue and one at its crawl limit not served;
/// SetActive false: nothing.
#[test]
fn get_urls_keeps_the_per_queue_rules() {
    let dir = tempfile::tempdir().unwrap();
    // The daemon's time, moved by the test: holds and queue delays run out
    // without waiting.
    let clock = TestClock::at_system_time();
    let now = || u64::try_from(clock.now()).unwrap();
    let (_d, addr) = frontier_daemon(&dir, &clock.args());
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        let mut items = Vec::new();
        for q in ["q1", "q2", "q3"] {
            for i in 0..3 {
                items.push(discovered_in(&format!("https://{q}.example/{i}"), q, ""));
            }
        }
        put(&mut c, items).await;

        // Two per queue, of two queues.
        let got = get_urls(&mut c, get(2, 2, "", None)).await;
        assert_eq!(got.len(), 4, "{got:?}");
        let mut queues: Vec<&str> = got.iter().map(|i| i.key.as_str()).collect();
        queues.dedup();
        assert_eq!(queues, ["q1", "q2"]);
        // In transit: not sent again; the rest are.
        let rest = get_urls(&mut c, get(0, 0, "", None)).await;
        assert_eq!(rest.len(), 5, "{rest:?}");
        assert!(get_urls(&mut c, get(0, 0, "", None)).await.is_empty());
        // A known update releases a hold at once; date 0 completes.
        let acks = put(
            &mut c,
            vec![
                known_in("https://q1.example/0", "q1", "", now()),
                known_in("https://q1.example/1", "q1", "", 0),
            ],
        )
        .await;
        assert!(acks.values().all(|a| *a == Ack::Ok));
        let again = get_urls(&mut c, get(0, 0, "", None)).await;
        assert_eq!(urls(&again), ["https://q1.example/0"]);

        // Held for delay_requestable: a second, then served again.
        put(
            &mut c,
            vec![known_in("https://q2.example/0", "q2", "", now())],
        )
        .await;
        let mut short = get(0, 0, "q2", None);
        short.delay_requestable = 1;
        assert_eq!(
            urls(&get_urls(&mut c, short.clone()).await),
            ["https://q2.example/0"]
        );
        assert!(get_urls(&mut c, short.clone()).await.is_empty());
        clock.advance(1);
        assert_eq!(
            urls(&get_urls(&mut c, short).await),
            ["https://q2.example/0"]
        );

        // The queue delay: a queue served is not served again before it.
        c.set_delay(proto::QueueDelayParams {
            key: "q3".into(),
            delay_requestable: 3,
            crawl_id: String::new(),
            local: false,
        })
        .await
        .unwrap();
        let all_q3: Vec<proto::UrlItem> = (0..3)
            .map(|i| known_in(&format!("https://q3.example/{i}"), "q3", "", now()))
            .collect();
        put(&mut c, all_q3).await;
        // Served (above, a second ago) and within its delay: not served;
        // served once its delay since the last serving is over, then not
        // again within it.
        assert!(
            get_urls(&mut c, get(1, 0, "q3", None)).await.is_empty(),
            "within the queue's delay"
        );
        clock.advance(3);
        assert_eq!(get_urls(&mut c, get(1, 0, "q3", None)).await.len(), 1);
        assert!(
            get_urls(&mut c, get(1, 0, "q3", None)).await.is_empty(),
            "within the queue's delay"
        );

        // Blocked until a time: not served, not active; 0 unblocks. (The
        // URL held for a second above is completed: one URL is due.)
        put(
            &mut c,
            vec![
                known_in("https://q2.example/1", "q2", "", now()),
                known_in("https://q2.example/0", "q2", "", 0),
            ],
        )
        .await;
        let block = |time| proto::BlockQueueParams {
            key: "q2".into(),
            time,
            crawl_id: String::new(),
            local: false,
        };
        c.block_queue_until(block(now() + 3600)).await.unwrap();
        assert!(get_urls(&mut c, get(0, 0, "q2", None)).await.is_empty());
        assert!(
            !list_queues(&mut c, "", false)
                .await
                .contains(&"q2".to_string())
        );
        c.block_queue_until(block(0)).await.unwrap();
        assert_eq!(get_urls(&mut c, get(0, 0, "q2", None)).await.len(), 1);

        // A crawl limit: served no more once that many are completed.
        let limit = |limit| proto::CrawlLimitParams {
            key: "q1".into(),
            limit,
            crawl_id: String::new(),
            local: false,
        };
        c.set_crawl_limit(limit(1)).await.unwrap();
        put(
            &mut c,
            vec![known_in("https://q1.example/2", "q1", "", now())],
        )
        .await;
        assert!(
            get_urls(&mut c, get(0, 0, "q1", None)).await.is_empty(),
            "one completed"
        );
        c.set_crawl_limit(limit(0)).await.unwrap();
        assert!(!get_urls(&mut c, get(0, 0, "q1", None)).await.is_empty());

        // Inactive: nothing, puts still accepted.
        set_active(&mut c, false).await;
        let acks = put(
            &mut c,
            vec![discovered_in("https://q1.example/new", "q1", "")],
        )
        .await;
        assert_eq!(acks["https://q1.example/new"], Ack::Ok);
        assert!(get_urls(&mut c, get(0, 0, "", None)).await.is_empty());
        set_active(&mut c, true).await;
        assert_eq!(
            urls(&get_urls(&mut c, get(0, 0, "q1", None)).await),
            ["https://q1.example/new"]
        );
    });
}

/// Crawls are namespaces: `""` and `DEFAULT` are one; GetURLs of any crawl
/// serves every crawl, of one crawl that crawl only; DeleteCrawl drops it.
#[test]
fn crawls_are_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        for (url, crawl) in [(DISCOVERED, ""), (DISCOVERED, "news"), (ANOTHER, "DEFAULT")] {
            let acks = put(&mut c, vec![discovered_in(url, MYSITE, crawl)]).await;
            assert_eq!(acks[url], Ack::Ok, "{crawl}");
        }
        assert_eq!(count_urls(&mut c, MYSITE, "", None, false).await, 2);
        assert_eq!(count_urls(&mut c, MYSITE, "DEFAULT", None, false).await, 2);
        assert_eq!(count_urls(&mut c, MYSITE, "news", None, false).await, 1);
        let crawls = c
            .list_crawls(proto::Local { local: false })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(crawls.values, ["DEFAULT", "news"]);
        let news = get_urls(&mut c, get(0, 0, "", Some("news"))).await;
        assert_eq!((news.len(), news[0].crawl_id.as_str()), (1, "news"));
        let any = get_urls(&mut c, get(0, 0, "", None)).await;
        assert_eq!(any.len(), 2, "DEFAULT's two; news's is in transit");
        assert!(any.iter().all(|i| i.crawl_id == "DEFAULT"));
        let deleted = c
            .delete_crawl(proto::DeleteCrawlMessage {
                value: "news".into(),
                local: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(deleted.value, 1);
        let crawls = c
            .list_crawls(proto::Local { local: false })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(crawls.values, ["DEFAULT"]);
    });
}

/// ListURLs and CountURLs page and filter across a queue's (or every
/// queue's) URLs; PurgeURLs deletes a queue's URLs older than its days.
#[test]
fn list_count_and_purge_page_and_filter() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at_system_time();
    let (_d, addr) = frontier_daemon(&dir, &clock.args());
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        let items = (0..7)
            .map(|i| discovered_in(&format!("https://a.example/Page-{i}"), "pages", ""))
            .chain([discovered_in("https://b.example/page-x", "other", "")])
            .collect();
        put(&mut c, items).await;
        let page = list_urls(&mut c, list_params("pages", "", 2, 3)).await;
        assert_eq!(page.len(), 3);
        let whole = list_urls(&mut c, list_params("pages", "", 0, 0)).await;
        assert_eq!(whole.len(), 7);
        assert_eq!(page, whole[2..5]);
        assert_eq!(count_urls(&mut c, "", "", Some("page-"), false).await, 1);
        assert_eq!(count_urls(&mut c, "", "", Some("page-"), true).await, 8);
        assert_eq!(
            count_urls(&mut c, "pages", "", Some("page-"), true).await,
            7
        );
        let mut filtered = list_params("", "", 0, 0);
        filtered.filter = Some("PAGE-X".into());
        filtered.ignore_case = Some(true);
        let one = list_urls(&mut c, filtered).await;
        assert_eq!(one.len(), 1);
        assert_eq!(
            (one[0].0.as_str(), one[0].1.as_str()),
            ("https://b.example/page-x", "other")
        );
        // Days 0: every URL first stored before now, a second on.
        clock.advance(1);
        let purge = |key: &str, days| proto::PurgeUrlParams {
            key: key.into(),
            crawl_id: String::new(),
            days,
        };
        assert_eq!(
            c.purge_ur_ls(purge("pages", 1))
                .await
                .unwrap()
                .into_inner()
                .value,
            0
        );
        assert_eq!(
            c.purge_ur_ls(purge("pages", 0))
                .await
                .unwrap()
                .into_inner()
                .value,
            7
        );
        assert_eq!(count_urls(&mut c, "", "", None, false).await, 1);
        assert_eq!(
            list_queues(&mut c, "", true).await,
            ["other", "pages"],
            "queues stay"
        );
    });
}

/// PutDiscovered: one status per item in order, a URL known (or repeated
/// in the batch) skipped, an item with no queue skipped, an empty batch
/// acked with no statuses.
#[test]
fn put_discovered_acks_each_item_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        put(&mut c, vec![discovered_in(DISCOVERED, MYSITE, "")]).await;
        let batch = proto::DiscoveredBatch {
            id: "batch-1".into(),
            items: vec![
                info_in(ANOTHER, OTHER, ""),
                info_in(ANOTHER, OTHER, ""),
                info_in(DISCOVERED, OTHER, ""),
                info_in("http:///nohost", "", ""),
                info_in(COMPLETED, &"k".repeat(256), ""),
            ],
        };
        let empty = proto::DiscoveredBatch {
            id: "batch-2".into(),
            items: Vec::new(),
        };
        let mut acks = c
            .put_discovered(tokio_stream::iter(vec![batch, empty]))
            .await
            .unwrap()
            .into_inner();
        let first = acks.message().await.unwrap().unwrap();
        assert_eq!(first.id, "batch-1");
        let (ok, skipped) = (Ack::Ok as i32, Ack::Skipped as i32);
        assert_eq!(first.statuses, [ok, skipped, skipped, skipped, skipped]);
        let second = acks.message().await.unwrap().unwrap();
        assert_eq!((second.id.as_str(), second.statuses.len()), ("batch-2", 0));
        assert_eq!(
            url_status(&mut c, ANOTHER, OTHER, "").await.unwrap().0,
            OTHER
        );
        assert_eq!(
            url_status(&mut c, DISCOVERED, MYSITE, "").await.unwrap().0,
            MYSITE
        );
    });
}

/// A site whose robots.txt says `Crawl-delay: 3`: GetURLs asked every
/// quarter of a second for three URLs of its queue hands them out no
/// faster than one every three seconds, across calls.
#[test]
fn get_urls_spaces_a_host_by_its_crawl_delay() {
    let site = TestSite::start();
    let urls_of_site: Vec<String> = (0..4).map(|i| site.url(&format!("/p{i}"))).collect();
    let sitemap: String = urls_of_site
        .iter()
        .map(|u| format!("<url><loc>{u}</loc></url>"))
        .collect();
    site.route(
        "/robots.txt",
        Reply::ok(format!(
            "User-agent: *\nCrawl-delay: 3\nSitemap: {}\n",
            site.url("/sitemap.xml")
        )),
    );
    site.route(
        "/sitemap.xml",
        Reply::ok(format!(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{sitemap}</urlset>"#
        )),
    );
    let dir = tempfile::tempdir().unwrap();
    let (d, addr) = frontier_daemon(&dir, &["--lease-delay", "1", &site.url("/")]);
    d.wait_for("the sitemap's URLs", |d| d.active() == 4);
    let received = runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        let started = Instant::now();
        let mut received = Vec::new();
        while received.len() < 3 && started.elapsed() < Duration::from_secs(20) {
            for info in get_urls(&mut c, get(3, 0, "", None)).await {
                received.push((started.elapsed(), info.url));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        received
    });
    assert_eq!(received.len(), 3, "{received:?}");
    for pair in received.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap >= Duration::from_millis(2_900), "{received:?}");
    }
}
