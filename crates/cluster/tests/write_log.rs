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
    assert!(!log_a.holds(0) || !log_a.holds(1));

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
