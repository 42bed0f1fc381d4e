//! A store of one partition opened with several is the same store: every
//! view, count and lease order of the repartitioned store equals the
//! original's, before and after more work on both; a repartition cut short
//! at any write finishes on the next open with the same result.

use crate::ingest::SitemapFetch;
use crate::kv::Kv;
use crate::{Completion, KnownUrl, LeaseRequest, Outcome, Store, StoreOptions, Timestamp, keys};
use sitemapd_parser::{NormUrl, RobotsRules, UrlEntry};
use sitemapd_storebench::copy_dir;

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;
const SITES: usize = 12;

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

fn options(partitions: u16) -> StoreOptions {
    StoreOptions {
        partitions,
        ..StoreOptions::default()
    }
}

fn sitemap_of(site: usize) -> String {
    format!("https://www.site{site}.example/sitemap.xml")
}

const INDEX: &str = "https://www.site0.example/index.xml";

/// The URLs site `site`'s sitemap lists at read `read`: its own (on two
/// hosts of its domain), a few on the next site's, and some dropped from
/// the second read on (to be retired).
fn listed(site: usize, read: usize) -> Vec<String> {
    let mut urls = Vec::new();
    for i in 0..24 {
        if read > 0 && i % 7 == 3 {
            continue;
        }
        let host = if i % 4 == 0 { "blog" } else { "www" };
        urls.push(format!("https://{host}.site{site}.example/page-{i}"));
    }
    for i in 0..3 {
        urls.push(format!(
            "https://www.site{}.example/from-{site}-{i}",
            (site + 1) % SITES
        ));
    }
    if site.is_multiple_of(3) {
        urls.push(format!("http://127.0.0.{site}:8080/item"));
    }
    urls
}

/// One read of every site's sitemap (and the index listing the first
/// five) at `now`, complete.
fn read_all(s: &Store, read: usize, now: Timestamp) {
    let mut ingest = s.ingest(now);
    let children: Vec<String> = (0..5).map(sitemap_of).collect();
    ingest
        .sitemap_fetched(
            INDEX,
            &SitemapFetch {
                status: 200,
                complete: true,
                children: Some(children),
                ..SitemapFetch::default()
            },
        )
        .unwrap();
    for site in 0..SITES {
        let sitemap = sitemap_of(site);
        for (i, url) in listed(site, read).iter().enumerate() {
            let mut entry = UrlEntry::new(NormUrl::parse(url).unwrap());
            entry.priority = Some(((i % 10) as f32) / 10.0);
            ingest.entry(&sitemap, &entry).unwrap();
        }
        ingest
            .sitemap_fetched(
                &sitemap,
                &SitemapFetch {
                    status: 200,
                    complete: true,
                    parent: (site < 5).then(|| INDEX.to_string()),
                    ..SitemapFetch::default()
                },
            )
            .unwrap();
    }
    ingest.finish().unwrap();
}

/// A store's life at one partition: reads (URLs retired), robots rules,
/// leases completed and held, notifications, a client's queues, sites.
fn history(s: &Store) {
    for read in 0..4 {
        read_all(s, read, ts(T0 + read as i64 * DAY));
    }
    let rules = RobotsRules::new(vec![(false, "/page-1".to_string())], Some(2.0));
    s.set_robots(
        &NormUrl::parse("https://www.site2.example/")
            .unwrap()
            .host_key(),
        &rules,
        ts(T0 + 4 * DAY),
    )
    .unwrap();
    let now = ts(T0 + 5 * DAY);
    let leased = s.lease(&LeaseRequest::new(60).per_host(4), now).unwrap();
    let outcomes = [
        Outcome::Changed,
        Outcome::NotModified,
        Outcome::Gone(404),
        Outcome::Error(503),
    ];
    let completions: Vec<(String, Completion)> = leased
        .iter()
        .step_by(2)
        .enumerate()
        .map(|(i, l)| (l.url.clone(), Completion::from(outcomes[i % 4].clone())))
        .collect();
    s.complete_all(completions.iter().map(|(u, c)| (u.as_str(), c)), now)
        .unwrap();
    let notified: Vec<String> = (0..SITES)
        .map(|site| format!("https://www.site{site}.example/page-5"))
        .collect();
    s.notify_all(notified.iter().map(String::as_str), now)
        .unwrap();
    let known: Vec<KnownUrl> = (0..SITES)
        .map(|site| KnownUrl {
            url: format!("https://www.site{site}.example/page-6"),
            refetch: Some(ts(T0 + 6 * DAY)),
            metadata: vec![("k".to_string(), vec![site.to_string()])],
            queue: Some(format!("shard-{}", site % 3)),
        })
        .collect();
    s.put_known(known, now, |_, _| None).unwrap();
    s.discover(
        (0..SITES).map(|site| (format!("https://new.site{site}.example/found"), Vec::new())),
        now,
    )
    .unwrap();
    for site in 0..SITES / 2 {
        s.add_site(&format!("https://www.site{site}.example/"), now)
            .unwrap();
    }
    s.flush().unwrap();
}

/// Everything a user can read of a store, in a stable order.
fn views(s: &Store, now: Timestamp) -> Vec<String> {
    let mut out = Vec::new();
    let mut urls: Vec<_> = s.export().map(Result::unwrap).collect();
    urls.sort_by(|a, b| a.url.cmp(&b.url));
    out.extend(urls.iter().map(|u| format!("{u:?}")));
    let mut sitemaps: Vec<_> = s.sitemaps().map(Result::unwrap).collect();
    sitemaps.sort_by(|a, b| a.url.cmp(&b.url));
    for sitemap in &sitemaps {
        out.push(format!("{sitemap:?}"));
        out.push(format!("{:?}", s.sitemap(&sitemap.url).unwrap()));
        out.push(format!("{:?}", s.refresh_state(&sitemap.url).unwrap()));
    }
    out.push(format!("{:?}", s.children(INDEX).unwrap()));
    out.extend(s.sites().map(|v| format!("{:?}", v.unwrap())));
    out.extend(s.queues().map(|v| format!("{:?}", v.unwrap())));
    for site in 0..SITES {
        let url = NormUrl::parse(&format!("https://www.site{site}.example/")).unwrap();
        out.push(format!("{:?}", s.host(&url.host_key()).unwrap()));
    }
    let mut stats = s.full_stats(now).unwrap();
    // The files differ: several trees.
    stats.disk_bytes = 0;
    out.push(format!("{stats:?}"));
    out
}

/// Asserts `a` and `b` are the same views, naming the first that differs.
fn assert_same(a: &[String], b: &[String], what: &str) {
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x, y, "{what}");
    }
    assert_eq!(a.len(), b.len(), "{what}");
}

/// Leases everything due at `now` in small leases: the URLs in order.
fn lease_order(s: &Store, now: Timestamp) -> Vec<Vec<String>> {
    let mut order = Vec::new();
    loop {
        let leased = s.lease(&LeaseRequest::new(7).per_host(2), now).unwrap();
        if leased.is_empty() {
            return order;
        }
        order.push(leased.into_iter().map(|l| l.url).collect());
    }
}

/// A store of one partition with [`history`], closed, in a directory.
fn one_partition() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path(), options(1)).unwrap();
    history(&s);
    assert_eq!(s.partitions(), 1);
    dir
}

/// The store of one partition and its copy opened with `partitions`
/// agree on every view, lease order and later read.
fn same_store(original: &Store, moved: &Store, partitions: usize) {
    assert_eq!(moved.partitions(), partitions);
    let report = moved.check().unwrap();
    assert!(report.is_ok(), "{partitions}: {report:?}");
    let now = ts(T0 + 5 * DAY + 1);
    assert_same(
        &views(original, now),
        &views(moved, now),
        &partitions.to_string(),
    );
    // The leases handed out before the move complete as they would have.
    let held: Vec<String> = original
        .export()
        .map(Result::unwrap)
        .filter(|v| v.leased_until.is_some_and(|t| t > now))
        .map(|v| v.url)
        .collect();
    assert!(held.len() > 10, "{} URLs leased", held.len());
    let done = Completion::from(Outcome::NotModified);
    for s in [original, moved] {
        let unknown = s
            .complete_all(held.iter().map(|u| (u.as_str(), &done)), now)
            .unwrap();
        assert!(unknown.is_empty(), "{unknown:?}");
    }
    assert_same(
        &views(original, now),
        &views(moved, now),
        &format!("{partitions}, leases completed"),
    );
    // A read on both: the URLs each partition holds retire as they would.
    read_all(original, 1, ts(T0 + 6 * DAY));
    read_all(moved, 1, ts(T0 + 6 * DAY));
    let later = ts(T0 + 30 * DAY);
    assert_same(
        &views(original, later),
        &views(moved, later),
        &partitions.to_string(),
    );
    assert_eq!(lease_order(original, later), lease_order(moved, later));
    let report = moved.check().unwrap();
    assert!(report.is_ok(), "{partitions}: {report:?}");
}

#[test]
fn a_store_of_one_partition_opens_as_the_same_store_in_several() {
    let source = one_partition();
    for partitions in [4u16, 16] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        copy_dir(source.path(), a.path());
        copy_dir(source.path(), b.path());
        let original = Store::open(a.path(), options(1)).unwrap();
        let moved = Store::open(b.path(), options(partitions)).unwrap();
        // Partition 0 keeps only its own hosts' URLs.
        let routes = crate::routing::Routes::new(partitions);
        for item in moved.parts()[0].kv.scan_prefix([keys::URL]) {
            let (key, _) = item.unwrap();
            let url = std::str::from_utf8(&key[1..]).unwrap();
            assert_eq!(routes.of_url(url), 0, "{url}");
        }
        same_store(&original, &moved, usize::from(partitions));
        drop(moved);
        // Opened again, with any count: it has its partitions.
        let again = Store::open(b.path(), options(1)).unwrap();
        assert_eq!(again.partitions(), usize::from(partitions));
    }
}

/// Every write failing from some point on (a crash there), for every
/// point from the first write to the last: the next open finishes the
/// repartition, and the store is the one an uncut repartition makes.
#[test]
fn a_repartition_cut_short_finishes_on_the_next_open() {
    let source = one_partition();
    let reference = tempfile::tempdir().unwrap();
    copy_dir(source.path(), reference.path());
    let reference = Store::open(reference.path(), options(4)).unwrap();
    let mut writes = 1;
    loop {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(source.path(), dir.path());
        let kv = Kv::open(dir.path(), StoreOptions::default().cache_bytes).unwrap();
        kv.inject_write_failures(Some(writes));
        let cut = Store::with_kv(kv, String::new(), options(4));
        let finished = cut.is_ok();
        drop(cut);
        let s = Store::open(dir.path(), options(4)).unwrap();
        assert_eq!(s.partitions(), 4, "cut after {writes} writes");
        let now = ts(T0 + 5 * DAY + 1);
        let what = format!("cut after {writes} writes");
        assert_same(&views(&reference, now), &views(&s, now), &what);
        let report = s.check().unwrap();
        assert!(report.is_ok(), "cut after {writes} writes: {report:?}");
        if finished {
            // Cut at every write of a move through both phases.
            assert!(writes > 20, "a move of {writes} writes");
            return;
        }
        writes += 1;
    }
}

/// An empty store made with one partition takes the count it is opened
/// with.
#[test]
fn an_empty_store_of_one_partition_takes_the_count() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path(), options(1)).unwrap());
    let s = Store::open(dir.path(), options(8)).unwrap();
    assert_eq!(s.partitions(), 8);
    assert!(s.check().unwrap().is_ok());
}
