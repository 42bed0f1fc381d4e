//! A compaction changes nothing a user reads of a store: every view, count
//! and lease order of a compacted store equals its copy's left as it was,
//! before and after more work on both and a reopen; and crawlers working
//! on the store while it compacts lose nothing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::store::test_history::{
    DAY, T0, assert_same, complete_leases_held, history, lease_order, read_all, ts, views,
};
use crate::{Completion, LeaseRequest, Outcome, Store, StoreOptions, keys};
use sitemapd_storebench::copy_dir;

fn options(partitions: u16) -> StoreOptions {
    StoreOptions {
        partitions,
        ..StoreOptions::default()
    }
}

/// Keys of their own (`u`) the store's partitions hold.
fn own_keys(s: &Store) -> usize {
    s.parts()
        .iter()
        .map(|p| p.kv.scan_prefix([keys::URL]).count())
        .sum()
}

#[test]
fn a_compacted_store_is_the_same_store() {
    for partitions in [1u16, 4] {
        let source = tempfile::tempdir().unwrap();
        {
            let s = Store::open(source.path(), options(partitions)).unwrap();
            history(&s);
            // A crawl of the store, with records of its own.
            let crawl = s.crawl("other").unwrap();
            read_all(&crawl, 0, ts(T0));
            let leased = crawl.lease(&LeaseRequest::new(20), ts(T0 + DAY)).unwrap();
            let done = Completion::from(Outcome::Changed);
            crawl
                .complete_all(leased.iter().map(|l| (l.url.as_str(), &done)), ts(T0 + DAY))
                .unwrap();
        }
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        copy_dir(source.path(), a.path());
        copy_dir(source.path(), b.path());
        let original = Store::open(a.path(), options(partitions)).unwrap();
        let compacted = Store::open(b.path(), options(partitions)).unwrap();
        let own_before = own_keys(&compacted);
        assert!(own_before > 10, "{own_before} records of their own");
        let done = compacted.compact().unwrap().expect("on disk");
        let what = format!("{partitions} partitions");
        assert!(done.records_folded >= own_before as u64, "{what}: {done:?}");
        assert_eq!(own_keys(&compacted), 0, "{what}: every record in its page");
        assert_eq!(compacted.size_on_disk().unwrap(), done.bytes_after);
        let now = ts(T0 + 5 * DAY + 1);
        assert_same(&views(&original, now), &views(&compacted, now), &what);
        let (crawl_a, crawl_b) = (
            original.crawl("other").unwrap(),
            compacted.crawl("other").unwrap(),
        );
        assert_same(
            &views(&crawl_a, now),
            &views(&crawl_b, now),
            &format!("{what}, crawl"),
        );
        assert!(compacted.check().unwrap().is_ok(), "{what}");
        assert!(crawl_b.check().unwrap().is_ok(), "{what}, crawl");
        drop((crawl_a, crawl_b));
        // The leases held before complete as they would have; a later read
        // retires the same URLs; the queue hands out the same order.
        complete_leases_held([&original, &compacted], now);
        for s in [&original, &compacted] {
            read_all(s, 1, ts(T0 + 6 * DAY));
        }
        let later = ts(T0 + 30 * DAY);
        assert_same(&views(&original, later), &views(&compacted, later), &what);
        // Reopened: the compacted files.
        drop(compacted);
        let compacted = Store::open(b.path(), options(partitions)).unwrap();
        assert_same(&views(&original, later), &views(&compacted, later), &what);
        assert_eq!(
            lease_order(&original, later),
            lease_order(&compacted, later),
            "{what}"
        );
        assert!(compacted.check().unwrap().is_ok(), "{what}");
    }
}

/// Crawlers lease and complete on every thread while the store compacts
/// again and again (each compaction after the crawlers have completed
/// more): every completion acknowledged is in the store, and it checks
/// clean, before and after a reopen.
#[test]
fn crawlers_lose_nothing_while_the_store_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path(), options(4)).unwrap();
    history(&s);
    let fetches = |s: &Store| -> BTreeMap<String, u32> {
        s.export()
            .map(Result::unwrap)
            .map(|v| (v.url, v.fetches))
            .collect()
    };
    let before = fetches(&s);
    let now = ts(T0 + 40 * DAY);
    let stop = AtomicBool::new(false);
    let rounds = AtomicUsize::new(0);
    let completed: Vec<Vec<String>> = std::thread::scope(|scope| {
        let crawlers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    let done = Completion::from(Outcome::Changed);
                    while !stop.load(Ordering::Relaxed) {
                        let leased = s.lease(&LeaseRequest::new(5).per_host(1), now).unwrap();
                        let urls: Vec<String> = leased.into_iter().map(|l| l.url).collect();
                        let unknown = s
                            .complete_all(urls.iter().map(|u| (u.as_str(), &done)), now)
                            .unwrap();
                        assert!(unknown.is_empty(), "{unknown:?}");
                        mine.extend(urls);
                        rounds.fetch_add(1, Ordering::Relaxed);
                    }
                    mine
                })
            })
            .collect();
        for i in 1..=5 {
            // A crawler that stopped (a failed assertion) ends the wait.
            while rounds.load(Ordering::Relaxed) < i * 20
                && !crawlers.iter().any(|c| c.is_finished())
            {
                std::thread::yield_now();
            }
            s.compact().unwrap().expect("on disk");
        }
        stop.store(true, Ordering::Relaxed);
        crawlers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let completed: Vec<String> = completed.into_iter().flatten().collect();
    assert!(completed.len() > 100, "{} completions", completed.len());
    let mut want = before.clone();
    for url in &completed {
        *want.get_mut(url).expect("a URL the store held") += 1;
    }
    assert!(fetches(&s) == want, "every completion recorded, once");
    assert!(s.check().unwrap().is_ok());
    drop(s);
    let s = Store::open(dir.path(), options(4)).unwrap();
    assert!(fetches(&s) == want, "the same after a reopen");
    assert!(s.check().unwrap().is_ok());
}
