//! The daemon's URLFrontier service, through the real binary on
//! loopback with the generated tonic client: every rpc and the protocol's
//! edge rules (in-transit URLs, completed URLs, discovered-known, crawl
//! isolation, deletes, SetActive, blocks, paging and filters, the token),
//! and a sitemap site's URLs leased, reported and brought back by a
//! changed lastmod.

mod common;

use std::time::Duration;

use common::clock::TestClock;
use common::daemon::TOKEN;
use common::frontier::*;
use sitemapd_testsite::{Reply, TestSite};
use sitemapd_urlfrontier::proto::url_frontier_client::UrlFrontierClient;
use sitemapd_urlfrontier::proto::{self, ack_message::Status as Ack};
use tonic::transport::Channel;

const A1: &str = "https://a.example/1";
const A2: &str = "https://a.example/2";
const B1: &str = "https://b.example/1";

#[test]
fn every_rpc_through_the_daemon() {
    every_rpc("1");
}

/// The same on a store of sixteen partitions (a.example and b.example in
/// two of them): one answer whatever the partitions.
#[test]
fn every_rpc_through_the_daemon_on_partitions() {
    every_rpc("16");
}

fn every_rpc(partitions: &str) {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at_system_time();
    let args = [&clock.args()[..], &["--partitions", partitions]].concat();
    let (d, addr) = frontier_daemon(&dir, &args);
    runtime().block_on(async {
        // The token: none, or a wrong one, is refused.
        let mut anon = client(&addr, None).await;
        let refused = anon.get_active(proto::Local { local: false }).await;
        assert_eq!(refused.unwrap_err().code(), tonic::Code::Unauthenticated);
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;

        // Discovered: OK once, then SKIPPED; a URL with no host SKIPPED.
        let acks = put(
            &mut c,
            vec![discovered(A1, ""), discovered(A2, ""), discovered(B1, "")],
        )
        .await;
        assert!(acks.values().all(|a| *a == Ack::Ok), "{acks:?}");
        let acks = put(
            &mut c,
            vec![discovered(A1, ""), discovered("https:///x", "")],
        )
        .await;
        assert_eq!(acks[A1], Ack::Skipped);
        assert_eq!(acks["https:///x"], Ack::Skipped);
        // Another crawl holds its own URLs.
        let acks = put(&mut c, vec![discovered(A1, "other")]).await;
        assert_eq!(acks[A1], Ack::Ok);
        // A crawl id over 255 characters makes no crawl: do not resend.
        let acks = put(&mut c, vec![discovered(A2, &"x".repeat(256))]).await;
        assert_eq!(acks[A2], Ack::Skipped);

        // GetURLs: per queue and queue limits, metadata back, in transit
        // not re-sent, crawls apart.
        let got = get_urls(&mut c, get(1, 1, "", Some("DEFAULT"))).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].crawl_id, "DEFAULT");
        assert_eq!(got[0].metadata["depth"].values, ["1"]);
        let rest = get_urls(&mut c, get(0, 0, "", Some("DEFAULT"))).await;
        let mut all: Vec<&str> = urls(&got);
        all.extend(urls(&rest));
        all.sort();
        assert_eq!(all, [A1, A2, B1], "every URL once, none twice");
        assert!(get_urls(&mut c, get(0, 0, "", Some(""))).await.is_empty());
        let other = get_urls(&mut c, get(0, 0, "", Some("other"))).await;
        assert_eq!(
            (urls(&other), other[0].crawl_id.as_str()),
            (vec![A1], "other")
        );

        // Known with a date: due then (the past: now), its hold released.
        // Known with 0: completed, never sent again.
        let acks = put(&mut c, vec![known(A1, "", 1, &[]), known(A2, "", 0, &[])]).await;
        assert!(acks.values().all(|a| *a == Ack::Ok));
        let again = get_urls(&mut c, get(0, 0, "a.example", Some("DEFAULT"))).await;
        assert_eq!(urls(&again), [A1]);
        let stats = c.get_stats(scoped("", "")).await.unwrap().into_inner();
        assert_eq!(stats.crawl_id, "DEFAULT");
        assert_eq!((stats.size, stats.number_of_queues), (2, 2));
        assert_eq!(stats.counts["completed"], 1);
        assert_eq!(stats.in_process, 2, "A1 and B1 in transit");
        let a = c
            .get_stats(scoped("a.example", ""))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((a.size, a.counts["completed"]), (1, 1));

        // GetURLStatus: dates as the protocol shows them.
        let status = |url: &str| proto::UrlStatusRequest {
            url: url.into(),
            key: String::new(),
            crawl_id: String::new(),
        };
        let a2 = c.get_url_status(status(A2)).await.unwrap().into_inner();
        let Some(proto::url_item::Item::Known(k)) = a2.item else {
            panic!("a known item")
        };
        assert_eq!(k.refetchable_from_date, 0);
        assert!(a2.creation_date > 0);
        let missing = c.get_url_status(status("https://a.example/none")).await;
        assert_eq!(missing.unwrap_err().code(), tonic::Code::NotFound);
        let nokey = c.get_url_status(status("https:///")).await;
        assert_eq!(nokey.unwrap_err().code(), tonic::Code::InvalidArgument);

        // ListQueues, ListURLs, CountURLs: paging and filters.
        let page = |start, size, inactive| proto::Pagination {
            start,
            size,
            include_inactive: inactive,
            crawl_id: String::new(),
            local: false,
        };
        let queues = c.list_queues(page(0, 0, true)).await.unwrap().into_inner();
        assert_eq!(queues.values, ["a.example", "b.example"]);
        let second = c.list_queues(page(1, 1, true)).await.unwrap().into_inner();
        assert_eq!(
            (second.values, second.start, second.size),
            (vec!["b.example".to_string()], 1, 1)
        );
        let list = |start, size, filter: Option<&str>, ignore| proto::ListUrlParams {
            start,
            size,
            key: String::new(),
            crawl_id: String::new(),
            local: false,
            filter: filter.map(Into::into),
            ignore_case: Some(ignore),
        };
        let mut s = c
            .list_ur_ls(list(1, 1, None, false))
            .await
            .unwrap()
            .into_inner();
        let mut listed = Vec::new();
        while let Some(item) = s.message().await.unwrap() {
            let Some(proto::url_item::Item::Known(k)) = item.item else {
                panic!("known items")
            };
            listed.push(k.info.unwrap().url);
        }
        assert_eq!(listed, [A2]);
        let count = |filter: Option<&str>, ignore| proto::CountUrlParams {
            key: String::new(),
            crawl_id: String::new(),
            filter: filter.map(Into::into),
            ignore_case: Some(ignore),
            local: Some(false),
        };
        let n = |r: tonic::Response<proto::Long>| r.into_inner().value;
        assert_eq!(n(c.count_ur_ls(count(None, false)).await.unwrap()), 3);
        assert_eq!(
            n(c.count_ur_ls(count(Some("A.EXAMPLE"), false))
                .await
                .unwrap()),
            0
        );
        assert_eq!(
            n(c.count_ur_ls(count(Some("A.EXAMPLE"), true)).await.unwrap()),
            2
        );

        // BlockQueueUntil, SetCrawlLimit, SetActive.
        put(&mut c, vec![known(A1, "", 1, &[]), known(B1, "", 1, &[])]).await;
        let far = u64::try_from(clock.now()).unwrap() + 3600;
        let block = |key: &str, time| proto::BlockQueueParams {
            key: key.into(),
            time,
            crawl_id: String::new(),
            local: false,
        };
        c.block_queue_until(block("b.example", far)).await.unwrap();
        let hidden = c.list_queues(page(0, 0, false)).await.unwrap().into_inner();
        assert_eq!(hidden.values, ["a.example"], "a blocked queue is inactive");
        assert_eq!(urls(&get_urls(&mut c, get(0, 0, "", None)).await), [A1]);
        c.block_queue_until(block("b.example", 0)).await.unwrap();
        assert_eq!(urls(&get_urls(&mut c, get(0, 0, "", None)).await), [B1]);
        let limit = |key: &str, limit| proto::CrawlLimitParams {
            key: key.into(),
            limit,
            crawl_id: String::new(),
            local: false,
        };
        let unknown = c.set_crawl_limit(limit("nowhere.example", 1)).await;
        assert_eq!(unknown.unwrap_err().code(), tonic::Code::Unknown);
        c.set_crawl_limit(limit("a.example", 1)).await.unwrap();
        put(&mut c, vec![known(A1, "", 1, &[])]).await;
        assert!(
            get_urls(&mut c, get(0, 0, "a.example", None))
                .await
                .is_empty(),
            "limit reached"
        );
        c.set_crawl_limit(limit("a.example", 0)).await.unwrap();
        set_active(&mut c, false).await;
        assert!(
            !c.get_active(proto::Local { local: false })
                .await
                .unwrap()
                .into_inner()
                .state
        );
        assert!(
            get_urls(&mut c, get(0, 0, "", None)).await.is_empty(),
            "inactive"
        );
        set_active(&mut c, true).await;
        assert_eq!(
            urls(&get_urls(&mut c, get(0, 0, "a.example", None)).await),
            [A1]
        );

        // SetLogLevel: the scheduler's debug lines show from then on (the
        // one for metadata over the bound, which is cut); a target that is
        // not one is refused.
        let level = |package: &str| proto::LogLevelParams {
            package: package.into(),
            level: proto::log_level_params::Level::Debug as i32,
            local: false,
        };
        c.set_log_level(level("sitemapd_scheduler")).await.unwrap();
        let refused = c.set_log_level(level("a=trace,b")).await;
        assert_eq!(refused.unwrap_err().code(), tonic::Code::InvalidArgument);
        let mut big = discovered("https://d.example/big", "");
        if let Some(proto::url_item::Item::Discovered(d)) = &mut big.item {
            let info = d.info.as_mut().unwrap();
            info.metadata.insert(
                "huge".into(),
                proto::StringList {
                    values: vec!["x".repeat(20_000)],
                },
            );
        }
        assert_eq!(
            put(&mut c, vec![big]).await["https://d.example/big"],
            Ack::Ok
        );
        assert!(
            d.log().contains("metadata over the limit not stored"),
            "{}",
            d.log()
        );
        let big = c
            .get_url_status(status("https://d.example/big"))
            .await
            .unwrap();
        let Some(proto::url_item::Item::Known(k)) = big.into_inner().item else {
            panic!("a known item")
        };
        assert!(
            !k.info.unwrap().metadata.contains_key("huge"),
            "over the bound: cut"
        );
        let nodes = c.list_nodes(proto::Empty {}).await.unwrap().into_inner();
        assert_eq!(nodes.values, [addr.as_str()]);
        let crawls = c
            .list_crawls(proto::Local { local: false })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(crawls.values, ["DEFAULT", "other"]);

        // PutDiscovered: a status per item in order, a repeat SKIPPED, an
        // empty batch acked empty.
        let batch = proto::DiscoveredBatch {
            id: "batch-1".into(),
            items: vec![
                info("https://c.example/1", "", &[]),
                info("https://c.example/1", "", &[]),
                info(A1, "", &[]),
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
        assert_eq!(
            first.statuses,
            [Ack::Ok as i32, Ack::Skipped as i32, Ack::Skipped as i32]
        );
        let second = acks.message().await.unwrap().unwrap();
        assert_eq!((second.id.as_str(), second.statuses.len()), ("batch-2", 0));

        // DeleteQueue, PurgeURLs, DeleteCrawl: counts of what they removed.
        let n = |r: tonic::Response<proto::Long>| r.into_inner().value;
        assert_eq!(n(c.delete_queue(scoped("a.example", "")).await.unwrap()), 2);
        assert_eq!(n(c.delete_queue(scoped("a.example", "")).await.unwrap()), 0);
        // Days 0: every URL first stored before now, a second on.
        clock.advance(1);
        let purge = proto::PurgeUrlParams {
            key: "c.example".into(),
            crawl_id: String::new(),
            days: 0,
        };
        assert_eq!(n(c.purge_ur_ls(purge).await.unwrap()), 1);
        let delete = |crawl: &str| proto::DeleteCrawlMessage {
            value: crawl.into(),
            local: false,
        };
        assert_eq!(n(c.delete_crawl(delete("other")).await.unwrap()), 1);
        let crawls = c
            .list_crawls(proto::Local { local: false })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(crawls.values, ["DEFAULT"]);
    });
    // /metrics counts the rpcs by status and times them; a stream is
    // counted once, when it ends. An rpc is counted when the daemon drops
    // its answer, which may come just after the client read it: the last
    // one is waited for.
    let last = "sitemapd_urlfrontier_rpcs_total{rpc=\"ListCrawls\",code=\"Ok\"} 2\n";
    d.wait_for("the last rpc counted", |d| {
        d.get("/metrics").as_str().is_some_and(|m| m.contains(last))
    });
    let metrics = d.get("/metrics");
    let metrics = metrics.as_str().unwrap();
    let value = |name: &str| -> f64 {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("{name} missing from\n{metrics}"));
        line[name.len()..].trim().parse().unwrap()
    };
    let count = |rpc: &str, code: &str| {
        value(&format!(
            "sitemapd_urlfrontier_rpcs_total{{rpc=\"{rpc}\",code=\"{code}\"}}"
        ))
    };
    assert_eq!(count("GetActive", "Unauthenticated"), 1.0);
    assert_eq!(count("ListCrawls", "Ok"), 2.0);
    assert_eq!(count("PutDiscovered", "Ok"), 1.0);
    assert!(count("PutURLs", "Ok") >= 5.0);
    assert!(count("GetURLs", "Ok") >= 3.0);
    let timed = value("sitemapd_urlfrontier_rpc_seconds_count{rpc=\"GetURLs\"}");
    assert_eq!(timed, count("GetURLs", "Ok"));
    assert!(value("sitemapd_urlfrontier_rpc_seconds_sum{rpc=\"GetURLs\"}") > 0.0);
    // Everything written through the service leaves a consistent store.
    drop(d);
    common::assert_store_checks(&dir.path().join("store"));
}

#[test]
fn off_loopback_without_a_token_the_daemon_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::bin()
        .args(["daemon", "--store", dir.path().join("s").to_str().unwrap()])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--urlfrontier-listen",
            "0.0.0.0:0",
        ])
        .env_remove("SITEMAPD_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = common::stderr(&out);
    assert!(
        err.contains("listening on 0.0.0.0:0 (not loopback) needs an API token"),
        "{err}"
    );
}

/// GetActive over `channel`, or why it failed.
async fn get_active(channel: Result<Channel, String>) -> Result<bool, String> {
    let mut c = UrlFrontierClient::new(channel?);
    let active = c.get_active(proto::Local { local: false }).await;
    active
        .map(|r| r.into_inner().state)
        .map_err(|e| format!("call: {e:?}"))
}

/// Mutual TLS: a client certificate the configured CA signed stands for the
/// token (StormCrawler cannot send one); no certificate, one of another CA,
/// or plain text are refused; the HTTP API still asks its token.
#[test]
fn a_client_certificate_stands_for_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let (d, addr) = frontier_daemon(
        &dir,
        &[
            "--urlfrontier-tls-cert",
            &pki("server.pem"),
            "--urlfrontier-tls-key",
            &pki("server.key"),
            "--urlfrontier-client-ca",
            &pki("ca.pem"),
        ],
    );
    runtime().block_on(async {
        assert_eq!(
            get_active(tls_channel(&addr, Some("client")).await).await,
            Ok(true)
        );
        for identity in [None, Some("stranger")] {
            let refused = get_active(tls_channel(&addr, identity).await).await;
            assert!(refused.is_err(), "{identity:?}: {refused:?}");
        }
        // Plain text is not a TLS handshake.
        let plain = Channel::from_shared(format!("http://{addr}")).unwrap();
        let refused = get_active(plain.connect().await.map_err(|e| e.to_string())).await;
        assert!(refused.is_err(), "{refused:?}");
        // The client's certificate serves every rpc: a URL in, and out.
        let channel = tls_channel(&addr, Some("client")).await.unwrap();
        let auth: Auth = Box::new(Ok);
        let mut c = UrlFrontierClient::with_interceptor(channel, auth);
        no_delay(&mut c).await;
        let acks = put(&mut c, vec![discovered(A1, "")]).await;
        assert_eq!(acks[A1], Ack::Ok);
        assert_eq!(urls(&get_urls(&mut c, get(0, 0, "", None)).await), [A1]);
    });
    let (status, _) = common::http(d.addr, "GET", "/v1/stats", None, None);
    assert_eq!(status, 401);
}

/// A client's key that is not the host (StormCrawler partitioning by
/// domain) names one queue of several hosts: listed, counted, served,
/// limited and deleted as one.
#[test]
fn a_client_key_is_one_queue_of_its_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        let keyed = |url: &str| {
            let mut item = discovered(url, "");
            if let Some(proto::url_item::Item::Discovered(d)) = &mut item.item {
                d.info.as_mut().unwrap().key = "example".into();
            }
            item
        };
        let acks = put(
            &mut c,
            vec![keyed(A1), keyed(B1), keyed("https://b.example/2")],
        )
        .await;
        assert!(acks.values().all(|a| *a == Ack::Ok), "{acks:?}");
        let page = proto::Pagination {
            start: 0,
            size: 0,
            include_inactive: true,
            crawl_id: String::new(),
            local: false,
        };
        let queues = c.list_queues(page.clone()).await.unwrap().into_inner();
        assert_eq!(queues.values, ["example"]);
        let stats = c
            .get_stats(scoped("example", ""))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((stats.size, stats.number_of_queues), (3, 1));
        // Two URLs per queue, across its hosts: a call gives the first
        // host the queue's share (a.example has one URL due), the next
        // what is left; then the queue has its two in transit.
        let mut got = get_urls(&mut c, get(2, 0, "", None)).await;
        got.extend(get_urls(&mut c, get(2, 0, "", None)).await);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|i| i.key == "example"), "{got:?}");
        assert!(get_urls(&mut c, get(2, 0, "", None)).await.is_empty());
        let n = |r: tonic::Response<proto::Long>| r.into_inner().value;
        assert_eq!(n(c.delete_queue(scoped("example", "")).await.unwrap()), 3);
        // One stream of more items than a chunk holds: every one acked.
        let many = (0..1_500).map(|i| discovered(&format!("https://c.example/{i}"), ""));
        let acks = put(&mut c, many.collect()).await;
        assert!(acks.values().all(|a| *a == Ack::Ok), "{acks:?}");
        assert_eq!(
            n(c.delete_queue(scoped("c.example", "")).await.unwrap()),
            1_500
        );
        assert!(
            c.list_queues(page)
                .await
                .unwrap()
                .into_inner()
                .values
                .is_empty()
        );
    });
}

/// The service holds `api.max_connections` connections at most. A new
/// connection takes the slot of the oldest one with no call open; when
/// every connection has a call open (a PutURLs stream, as StormCrawler
/// keeps one), the new one is closed, and a slot frees when a client goes
/// away.
#[test]
fn connections_beyond_the_cap_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, addr) = frontier_daemon(
        &dir,
        &["--max-connections", "2", "--max-connections-per-ip", "2"],
    );
    let call = |addr: String| async move {
        let mut c = try_client(&addr, Some(TOKEN)).await?;
        c.get_active(proto::Local { local: false })
            .await
            .map(|r| r.into_inner().state)
            .map_err(|e| e.to_string())
    };
    runtime().block_on(async {
        // Two idle connections: a third takes the oldest's slot.
        let idle = [
            client(&addr, Some(TOKEN)).await,
            client(&addr, Some(TOKEN)).await,
        ];
        assert_eq!(call(addr.clone()).await, Ok(true));
        drop(idle);
        // Two connections with a stream open each: a third is closed
        // before its call.
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut c = client(&addr, Some(TOKEN)).await;
            let (tx, rx) = tokio::sync::mpsc::channel::<proto::UrlItem>(1);
            let acks = c
                .put_ur_ls(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
                .unwrap();
            held.push((c, tx, acks));
        }
        assert!(call(addr.clone()).await.is_err());
        drop(held.pop());
        // The closed connection's slot comes back.
        let mut served = false;
        for _ in 0..50 {
            if call(addr.clone()).await.is_ok() {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(served, "no slot came back after a client left");
    });
}

/// A sitemap site's URLs through the frontier: leased, reported (a 304 for
/// one, a changed signature for the other, each with a refetch date a
/// day away), and the one whose lastmod the next sitemap read moves comes
/// back through GetURLs first.
#[test]
fn a_changed_lastmod_brings_a_reported_url_back_first() {
    let site = TestSite::start();
    let sitemap = |lastmod_b: &str| {
        format!(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{}</loc><lastmod>2026-01-01T00:00:00Z</lastmod></url><url><loc>{}</loc><lastmod>{lastmod_b}</lastmod></url></urlset>"#,
            site.url("/a"),
            site.url("/b")
        )
    };
    site.route(
        "/robots.txt",
        Reply::ok(format!(
            "User-agent: *\nSitemap: {}\n",
            site.url("/sitemap.xml")
        )),
    );
    site.route("/sitemap.xml", Reply::ok(sitemap("2026-01-01T00:00:00Z")));
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at_system_time();
    let (d, addr) = frontier_daemon(
        &dir,
        &[
            &clock.args()[..],
            &[
                "--sitemap-secs",
                "1",
                "--min-refresh-secs",
                "1",
                "--policy",
                "lastmod",
                &site.url("/"),
            ],
        ]
        .concat(),
    );
    d.wait_for("the sitemap's URLs", |d| d.active() == 2);
    let (a, b) = (site.url("/a"), site.url("/b"));
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        no_delay(&mut c).await;
        let got = get_urls(&mut c, get(10, 10, "", None)).await;
        assert_eq!(urls(&got), [a.as_str(), b.as_str()]);
        let tomorrow = u64::try_from(clock.now()).unwrap() + 86_400;
        let acks = put(
            &mut c,
            vec![
                known(&a, "", tomorrow, &[("fetch.statusCode", "304")]),
                known(
                    &b,
                    "",
                    tomorrow,
                    &[("fetch.statusCode", "200"), ("signature", "s1")],
                ),
            ],
        )
        .await;
        assert!(acks.values().all(|s| *s == Ack::Ok));
        assert!(
            get_urls(&mut c, get(10, 10, "", None)).await.is_empty(),
            "due tomorrow"
        );
    });
    let record = |url: &str| d.get(&format!("/v1/urls?url={url}"))["record"].clone();
    assert_eq!(record(&a)["last_outcome"], "not-modified");
    assert_eq!(record(&b)["last_outcome"], "changed");
    // The next read of the sitemap moves b's lastmod: to after the fetch,
    // a second on, when the site is due again (--sitemap-secs 1).
    clock.advance(1);
    site.route(
        "/sitemap.xml",
        Reply::ok(sitemap(&sitemapd_testsite::w3c(clock.now()))),
    );
    d.wait_for("b's new lastmod", |_| {
        record(&b)["reason"] == "lastmod-newer"
    });
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        let got = get_urls(&mut c, get(10, 10, "", None)).await;
        assert_eq!(
            urls(&got),
            [b.as_str()],
            "the changed URL first, the other tomorrow"
        );
    });
}

/// `stats --check` checks every crawl the service made, not only
/// `DEFAULT`, and reports each: a crawl's URLs are all read.
#[test]
fn stats_check_reads_every_crawl() {
    let dir = tempfile::tempdir().unwrap();
    let (d, addr) = frontier_daemon(&dir, &[]);
    runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        let items = (0..300)
            .map(|i| discovered(&format!("https://h{}.example/{i}", i % 7), "c2"))
            .collect();
        let acks = put(&mut c, items).await;
        assert!(acks.values().all(|a| *a == Ack::Ok), "{acks:?}");
        put(&mut c, vec![discovered(A1, "")]).await;
    });
    drop(d);
    let store = dir.path().join("store");
    let o = common::run(&[
        "stats",
        "--check",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["check"]["urls"], 1, "{report}");
    assert_eq!(report["crawls"][0]["name"], "c2", "{report}");
    assert_eq!(report["crawls"][0]["check"]["urls"], 300, "{report}");
    let o = common::run(&["stats", "--check", "--store", store.to_str().unwrap()]);
    let text = common::stdout(&o);
    assert!(
        text.contains("crawl \"c2\": check: 300 records, 300 due entries: ok"),
        "{text}"
    );
}
