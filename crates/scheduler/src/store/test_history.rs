//! A store's life for the differential tests of operations that must not
//! change what a user reads of it (a move into partitions, a compaction):
//! reads of many sites (URLs retired), robots rules, leases completed and
//! held, notifications, a client's queues, sites; and everything a user
//! can read of a store, in a stable order.

use crate::ingest::SitemapFetch;
use crate::{Completion, KnownUrl, LeaseRequest, Outcome, Store, StoreOptions, Timestamp};
use sitemapd_parser::{NormUrl, RobotsRules, UrlEntry};

pub(super) const T0: i64 = 1_700_000_000;
pub(super) const DAY: i64 = 86_400;
pub(super) const SITES: usize = 12;

pub(super) fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

pub(super) fn options(partitions: u16) -> StoreOptions {
    StoreOptions {
        partitions,
        ..StoreOptions::default()
    }
}

pub(super) fn sitemap_of(site: usize) -> String {
    format!("https://www.site{site}.example/sitemap.xml")
}

pub(super) const INDEX: &str = "https://www.site0.example/index.xml";

/// The URLs site `site`'s sitemap lists at read `read`: its own (on two
/// hosts of its domain), a few on the next site's, and some dropped from
/// the second read on (to be retired).
pub(super) fn listed(site: usize, read: usize) -> Vec<String> {
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
pub(super) fn read_all(s: &Store, read: usize, now: Timestamp) {
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
pub(super) fn history(s: &Store) {
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
pub(super) fn views(s: &Store, now: Timestamp) -> Vec<String> {
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
pub(super) fn assert_same(a: &[String], b: &[String], what: &str) {
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x, y, "{what}");
    }
    assert_eq!(a.len(), b.len(), "{what}");
}

/// Leases everything due at `now` in small leases: the URLs in order.
pub(super) fn lease_order(s: &Store, now: Timestamp) -> Vec<Vec<String>> {
    let mut order = Vec::new();
    loop {
        let leased = s.lease(&LeaseRequest::new(7).per_host(2), now).unwrap();
        if leased.is_empty() {
            return order;
        }
        order.push(leased.into_iter().map(|l| l.url).collect());
    }
}

/// Completes (not modified), on each of `stores`, the leases the first
/// holds at `now`: more than 10 of them.
pub(super) fn complete_leases_held(stores: [&Store; 2], now: Timestamp) {
    let held: Vec<String> = stores[0]
        .export()
        .map(Result::unwrap)
        .filter(|v| v.leased_until.is_some_and(|t| t > now))
        .map(|v| v.url)
        .collect();
    assert!(held.len() > 10, "{} URLs leased", held.len());
    let done = Completion::from(Outcome::NotModified);
    for s in stores {
        let unknown = s
            .complete_all(held.iter().map(|u| (u.as_str(), &done)), now)
            .unwrap();
        assert!(unknown.is_empty(), "{unknown:?}");
    }
}
