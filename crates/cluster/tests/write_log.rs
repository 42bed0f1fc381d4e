//! The replicated write log on real nats-server processes (3, R3): a store
//! that logs its writes, replayed by a second node taking its partitions
//! over, reads the same URL for URL; the first node is then fenced out (its
//! writes fail and change nothing); an entry larger than a NATS message
//! travels in chunks; and a third node, on disk, takes over from the second.

use std::sync::Arc;

use sitemapd_cluster::JetStreamLog;
use sitemapd_parser::{NormUrl, UrlEntry};
use sitemapd_scheduler::{
    Completion, LeaseRequest, Outcome, SitemapFetch, Store, StoreError, StoreOptions, Timestamp,
    UrlView,
};
use sitemapd_testsite::nats::NatsCluster;

const PARTITIONS: u16 = 2;
const T0: i64 = 1_700_000_000;

fn options() -> StoreOptions {
    StoreOptions {
        partitions: PARTITIONS,
        ..StoreOptions::default()
    }
}

/// A node: its store, logging to its own connection to the log.
fn node(nats: &NatsCluster, id: &str, store: Store) -> (Store, Arc<JetStreamLog>) {
    let log = Arc::new(JetStreamLog::open(&nats.urls(), id, PARTITIONS, 3).unwrap());
    store.log_writes_to(log.clone());
    (store, log)
}

fn take_over_all(store: &Store, log: &JetStreamLog) -> u64 {
    (0..PARTITIONS)
        .map(|p| log.take_over(p, store).unwrap().applied)
        .sum()
}

/// One complete read of `sitemap` listing `urls`, at `now`.
fn read(store: &Store, now: i64, sitemap: &str, urls: &[String]) {
    let mut ingest = store.ingest(Timestamp::from_unix(now));
    for url in urls {
        ingest
            .entry(sitemap, &UrlEntry::new(NormUrl::parse(url).unwrap()))
            .unwrap();
    }
    let fetch = SitemapFetch {
        status: 200,
        complete: true,
        ..SitemapFetch::default()
    };
    ingest.sitemap_fetched(sitemap, &fetch).unwrap();
    ingest.finish().unwrap();
}

fn urls(s: &Store) -> Vec<UrlView> {
    let mut all: Vec<UrlView> = s.export().map(Result::unwrap).collect();
    all.sort_by(|a, b| a.url.cmp(&b.url));
    all
}

/// A crawl's worth of writes: reads of two sites, a lease, completions, a
/// notification.
fn crawl(s: &Store, now: i64) {
    for host in ["a.example", "b.example"] {
        let list: Vec<String> = (0..60).map(|i| format!("https://{host}/p{i}")).collect();
        read(s, now, &format!("https://{host}/sitemap.xml"), &list);
    }
    let leased = s
        .lease(
            &LeaseRequest::new(30).per_host(15),
            Timestamp::from_unix(now + 10),
        )
        .unwrap();
    assert!(!leased.is_empty());
    let done = Completion::from(Outcome::NotModified);
    s.complete_all(
        leased.iter().map(|l| (l.url.as_str(), &done)),
        Timestamp::from_unix(now + 20),
    )
    .unwrap();
    s.notify("https://a.example/p7", Timestamp::from_unix(now + 30))
        .unwrap();
}

#[test]
fn partitions_move_with_their_log_and_the_old_owner_is_fenced_out() {
    let nats = NatsCluster::start(3);
    let (a, log_a) = node(&nats, "a", Store::in_memory(options()).unwrap());
    assert_eq!(take_over_all(&a, &log_a), 0);
    crawl(&a, T0);

    // b takes both partitions over: the same URLs, each as a has it.
    let (b, log_b) = node(&nats, "b", Store::in_memory(options()).unwrap());
    assert!(take_over_all(&b, &log_b) > 0);
    assert_eq!(urls(&b), urls(&a));
    assert!(b.check().unwrap().is_ok());

    // a no longer writes: fenced out by b's takeover, nothing changed.
    let before = urls(&a);
    match a.notify("https://b.example/p3", Timestamp::from_unix(T0 + 100)) {
        Err(StoreError::LogRefused { detail, .. }) => {
            assert!(detail.contains("fenced out"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(urls(&a), before);
    assert!(!log_a.holds(a.partition_of_site("b.example")));

    // b writes on, including an entry larger than a NATS message: URLs
    // whose paths do not compress.
    crawl(&b, T0 + 1_000);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let big: Vec<String> = (0..12_000)
        .map(|i| {
            let mut path = String::new();
            for _ in 0..14 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                path.push_str(&format!("{state:016x}"));
            }
            format!("https://a.example/big/{i}/{path}")
        })
        .collect();
    read(&b, T0 + 2_000, "https://a.example/big.xml", &big);
    assert!(log_b.chunked_entries() > 0, "no entry needed chunks");

    // c, on disk, takes over from b and reads the same.
    let dir = tempfile::tempdir().unwrap();
    let (c, log_c) = node(&nats, "c", Store::open(dir.path(), options()).unwrap());
    take_over_all(&c, &log_c);
    assert_eq!(urls(&c).len(), urls(&b).len());
    assert_eq!(urls(&c), urls(&b));
    assert!(c.check().unwrap().is_ok());
    for p in 0..PARTITIONS {
        assert_eq!(c.log_position(p).unwrap(), b.log_position(p).unwrap());
    }
}

/// A node replaying a long log of one partition while a crawler leases from
/// another: the lease holds every partition's write lock while its append
/// is on its way, and the replay needs the first partition's lock for each
/// entry. Both finish (appends never wait behind a replay).
#[test]
fn a_long_replay_and_leases_of_another_partition_both_finish() {
    let nats = NatsCluster::start(1);
    let open = |id: &str| {
        let log = Arc::new(JetStreamLog::open(&nats.urls(), id, PARTITIONS, 1).unwrap());
        let store = Store::in_memory(options()).unwrap();
        store.log_writes_to(log.clone());
        (store, log)
    };
    let (a, log_a) = open("a");
    take_over_all(&a, &log_a);
    // Two hosts in different partitions.
    let hosts: Vec<String> = (0..20).map(|i| format!("h{i}.example")).collect();
    let replayed = hosts[0].clone();
    let leased = hosts
        .iter()
        .find(|h| a.partition_of_site(h) != a.partition_of_site(&replayed))
        .unwrap()
        .clone();
    let (q, p) = (a.partition_of_site(&replayed), a.partition_of_site(&leased));
    for host in [&replayed, &leased] {
        let list: Vec<String> = (0..200).map(|i| format!("https://{host}/p{i}")).collect();
        read(&a, T0, &format!("https://{host}/sitemap.xml"), &list);
    }
    // Many entries in q's log: one per notification.
    for i in 0..300 {
        a.notify(
            &format!("https://{replayed}/p{}", i % 200),
            Timestamp::from_unix(T0 + i),
        )
        .unwrap();
    }

    // b serves p, and takes q over while it leases p's URLs (as the
    // daemon does: a partition is served once taken over).
    let (b, log_b) = open("b");
    b.serve_partition(q, false);
    log_b.take_over(p, &b).unwrap();
    let b = Arc::new(b);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let leasing = {
        let (b, stop) = (b.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut leases = 0;
            let mut now = T0 + 10_000;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                now += 1;
                let request = LeaseRequest::new(1)
                    .per_host(1)
                    .ttl(std::time::Duration::from_secs(1));
                b.lease(&request, Timestamp::from_unix(now)).unwrap();
                leases += 1;
            }
            leases
        })
    };
    let (done, finished) = std::sync::mpsc::channel();
    {
        let (b, log_b) = (b.clone(), log_b.clone());
        std::thread::spawn(move || {
            let _ = done.send(log_b.take_over(q, &b).map(|t| t.applied));
        });
    }
    let applied = finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the replay finishes")
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(leasing.join().unwrap() > 0);
    assert!(applied >= 300, "{applied}");
    // Taken over, q is served (and read by views) as the daemon then does.
    b.serve_partition(q, true);
    let replayed_urls = |s: &Store| {
        urls(s)
            .into_iter()
            .filter(|u| u.url.contains(&replayed))
            .collect::<Vec<_>>()
    };
    assert_eq!(replayed_urls(&b), replayed_urls(&a));
}
